//! NVIDIA's DRA driver's GPU kubelet plugin, as the simulator plays it: the devices it
//! publishes for a node in one ResourceSlice (DynamicMIG off, its default), written from the
//! driver's code (kubernetes-sigs/dra-driver-nvidia-gpu, `cmd/gpu-kubelet-plugin/`
//! `deviceinfo.go`, `mig.go`, `driver.go`):
//!
//! - a GPU without MIG is the device `gpu-<minor>` with the string attributes `type` (`gpu`),
//!   `uuid`, `productName` (NVML's name), `brand`, `architecture`, the version attributes
//!   `cudaComputeCapability`, `driverVersion`, `cudaDriverVersion`, the standard
//!   `resource.kubernetes.io/pciBusID` and `pcieRoot`, and the capacity `memory` in bytes;
//! - a GPU with MIG on publishes its MIG devices instead, never itself:
//!   `gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>`, with
//!   `type` `mig`, `profile`, `parentUUID`, the parent's other attributes and the capacities
//!   `multiprocessors`, `copyEngines`, `decoders`, `encoders`, `jpegEngines`, `ofaEngines`,
//!   `memory` and one `memorySlice<i>` per memory slice it occupies;
//! - one pool per node, named after it, in a slice named `00000-gpu.nvidia.com-<node>-…`.
//!
//! With the driver's `DynamicMIG` feature gate on (Kubernetes ≥ 1.35: partitionable devices,
//! `partitions.go`, `driver.go`'s `generateSplitResourceSlices`, `nvlib.go`), a MIG-capable GPU
//! is published as every MIG partition it could be cut into — each profile whose compute
//! and GPU slices agree, at each of its placements, without a `uuid` since none exists yet —
//! beside the full GPU (left out on an Ampere GPU whose MIG mode is on, as MIG cannot be
//! turned off there without a reset). All of them consume from the GPU's counter set
//! `gpu-<minor>-counter-set`: one counter per MIG capacity (its name in DNS form:
//! `copy-engines`) holding the most any profile has, and one `memory-slice-<i>` per memory
//! slice. The full GPU consumes every counter and announces those maxima as its capacity (its
//! `memory` is the largest profile's, not the card's); a partition consumes its own capacities
//! and the memory slices of its placement. The pool has one slice with every counter set, then
//! one slice of devices per GPU. A GPU that cannot do MIG is published as without the gate.
//!
//! The MIG profiles' numbers are those NVIDIA's MIG user guide lists per GPU (`nvidia-smi mig
//! -lgip`); the placements are the hardware's (a 1g instance starts at any of slices 0–6, a
//! 3g at 0 or 4, a 7g at 0).

use super::catalog::GpuModel;
use super::mig::MigLayout;
use serde_json::{Value as Json, json};

pub const DRIVER: &str = "gpu.nvidia.com";
/// The pod label of the driver chart's kubelet plugin (`<chart>-component: kubelet-plugin`).
pub const PLUGIN_LABEL: (&str, &str) = ("dra-driver-nvidia-gpu-component", "kubelet-plugin");
/// The label node-feature-discovery gives a node with an NVIDIA PCI device, which the chart's
/// kubelet plugin requires (one of its default node-affinity terms).
pub const NFD_NVIDIA_LABEL: &str = "feature.node.kubernetes.io/pci-10de.present";
pub const DRIVER_VERSION: &str = "580.65.6";
pub const CUDA_DRIVER_VERSION: &str = "13.0.0";

/// One GPU instance profile: (profile, GI profile id, SMs, copy engines, decoders, encoders,
/// JPEG engines, OFA engines, memory MiB, memory slices, placement starts).
type Profile = (
    &'static str,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u64,
    u32,
    &'static [u32],
);

const ONE_SLICE: &[u32] = &[0, 1, 2, 3, 4, 5, 6];
const TWO_SLICES: &[u32] = &[0, 2, 4, 6];
const A100_40GB: &[Profile] = &[
    ("1g.5gb", 19, 14, 1, 0, 0, 0, 0, 4864, 1, ONE_SLICE),
    ("1g.5gb+me", 20, 14, 1, 1, 0, 1, 1, 4864, 1, ONE_SLICE),
    ("1g.10gb", 15, 14, 1, 1, 0, 0, 0, 9856, 2, TWO_SLICES),
    ("2g.10gb", 14, 28, 2, 1, 0, 0, 0, 9856, 2, &[0, 2, 4]),
    ("3g.20gb", 9, 42, 3, 2, 0, 0, 0, 19968, 4, &[0, 4]),
    ("4g.20gb", 5, 56, 4, 2, 0, 0, 0, 19968, 4, &[0]),
    ("7g.40gb", 0, 98, 7, 5, 0, 1, 1, 40192, 8, &[0]),
];
const A100_80GB: &[Profile] = &[
    ("1g.10gb", 19, 14, 1, 0, 0, 0, 0, 9856, 1, ONE_SLICE),
    ("1g.10gb+me", 20, 14, 1, 1, 0, 1, 1, 9856, 1, ONE_SLICE),
    ("1g.20gb", 15, 14, 1, 1, 0, 0, 0, 19968, 2, TWO_SLICES),
    ("2g.20gb", 14, 28, 2, 1, 0, 0, 0, 19968, 2, &[0, 2, 4]),
    ("3g.40gb", 9, 42, 3, 2, 0, 0, 0, 40192, 4, &[0, 4]),
    ("4g.40gb", 5, 56, 4, 2, 0, 0, 0, 40192, 4, &[0]),
    ("7g.80gb", 0, 98, 7, 5, 0, 1, 1, 80384, 8, &[0]),
];
const H100_80GB: &[Profile] = &[
    ("1g.10gb", 19, 16, 1, 1, 0, 1, 0, 9984, 1, ONE_SLICE),
    ("1g.10gb+me", 20, 16, 1, 1, 0, 1, 1, 9984, 1, ONE_SLICE),
    ("1g.20gb", 15, 26, 1, 1, 0, 1, 0, 20096, 2, TWO_SLICES),
    ("2g.20gb", 14, 32, 2, 2, 0, 2, 0, 20096, 2, &[0, 2, 4]),
    ("3g.40gb", 9, 60, 3, 3, 0, 3, 0, 40320, 4, &[0, 4]),
    ("4g.40gb", 5, 64, 4, 4, 0, 4, 0, 40320, 4, &[0]),
    ("7g.80gb", 0, 132, 8, 7, 0, 7, 1, 80640, 8, &[0]),
];

fn profiles(model: &GpuModel) -> &'static [Profile] {
    match model.product {
        "NVIDIA-A100-SXM4-40GB" => A100_40GB,
        "NVIDIA-A100-SXM4-80GB" => A100_80GB,
        "NVIDIA-H100-80GB-HBM3" => H100_80GB,
        _ => &[],
    }
}

fn uuid(node: &str, minor: u32) -> String {
    // Stable per node and GPU, shaped as NVML's.
    let digest: u32 = node.bytes().fold(2_166_136_261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16_777_619)
    });
    format!(
        "GPU-{digest:08x}-{minor:04x}-4000-8000-{:012x}",
        u64::from(digest) ^ 0xa100
    )
}

/// The attributes every device of GPU `minor` carries (a MIG device its parent's).
fn common(model: &GpuModel, minor: u32) -> serde_json::Map<String, Json> {
    let string = |v: &str| json!({ "string": v });
    let version = |v: &str| json!({ "version": v });
    let bus = 0x10 + minor * 0x10;
    [
        ("productName", string(model.dra_product)),
        ("brand", string("Nvidia")),
        ("architecture", string(model.architecture)),
        ("cudaComputeCapability", version(model.compute_capability)),
        ("driverVersion", version(DRIVER_VERSION)),
        ("cudaDriverVersion", version(CUDA_DRIVER_VERSION)),
        (
            "resource.kubernetes.io/pciBusID",
            string(&format!("0000:{bus:02x}:00.0")),
        ),
        (
            "resource.kubernetes.io/pcieRoot",
            string(&format!("pci0000:{:02x}", bus - 1)),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Where each MIG instance of `layout` sits on one GPU: (profile, placement start), larger
/// profiles first, each at the first start where its slices are free, as mig-parted creates
/// them; `None` when they do not fit.
fn placements(
    layout: &MigLayout,
    table: &'static [Profile],
) -> Option<Vec<(&'static Profile, u32)>> {
    let mut wanted: Vec<&Profile> = Vec::new();
    for (profile, count) in &layout.devices {
        let entry = table.iter().find(|p| p.0 == profile.as_str())?;
        wanted.extend(std::iter::repeat_n(entry, *count as usize));
    }
    wanted.sort_by_key(|p| std::cmp::Reverse(p.9));
    fn place(
        wanted: &[&'static Profile],
        used: &mut [bool; 8],
        out: &mut Vec<(&'static Profile, u32)>,
    ) -> bool {
        let Some((first, rest)) = wanted.split_first() else {
            return true;
        };
        for &start in first.10 {
            let range = start as usize..(start + first.9) as usize;
            if range.end > 8 || used[range.clone()].iter().any(|u| *u) {
                continue;
            }
            used[range.clone()].iter_mut().for_each(|u| *u = true);
            out.push((*first, start));
            if place(rest, used, out) {
                return true;
            }
            out.pop();
            used[range].iter_mut().for_each(|u| *u = false);
        }
        false
    }
    let mut out = Vec::new();
    place(&wanted, &mut [false; 8], &mut out).then_some(out)
}

/// The devices the kubelet plugin publishes for a node of `count` GPUs of `model`, with MIG
/// `layout` on every GPU when MIG is on.
pub fn devices(node: &str, model: &GpuModel, count: u32, layout: Option<&MigLayout>) -> Vec<Json> {
    let mut devices = Vec::new();
    for minor in 0..count {
        let parent = uuid(node, minor);
        let mig = layout.filter(|l| !l.devices.is_empty());
        match mig.and_then(|l| placements(l, profiles(model))) {
            Some(instances) => {
                for (p, start) in instances {
                    let mut attributes = common(model, minor);
                    attributes.insert("type".into(), json!({"string": "mig"}));
                    attributes.insert("profile".into(), json!({"string": p.0}));
                    attributes.insert("parentUUID".into(), json!({"string": parent}));
                    attributes.insert(
                        "uuid".into(),
                        json!({"string": format!("MIG-{}-{}-{start}", &parent[4..], p.1)}),
                    );
                    let mut capacity = serde_json::Map::new();
                    for (name, value) in [
                        ("multiprocessors", u64::from(p.2)),
                        ("copyEngines", u64::from(p.3)),
                        ("decoders", u64::from(p.4)),
                        ("encoders", u64::from(p.5)),
                        ("jpegEngines", u64::from(p.6)),
                        ("ofaEngines", u64::from(p.7)),
                    ] {
                        capacity.insert(name.into(), json!({"value": value.to_string()}));
                    }
                    capacity.insert("memory".into(), json!({"value": format!("{}Mi", p.8)}));
                    for slice in start..start + p.9 {
                        capacity.insert(format!("memorySlice{slice}"), json!({"value": "1"}));
                    }
                    let name = format!(
                        "gpu-{minor}-mig-{}-{}-{start}",
                        p.0.replace('.', "").replace('+', "-"),
                        p.1
                    );
                    devices.push(
                        json!({"name": name, "attributes": attributes, "capacity": capacity}),
                    );
                }
            }
            // MIG on with a layout the GPU cannot hold publishes nothing of the GPU, as the
            // driver publishes nothing of a MIG-enabled GPU without MIG devices.
            None if mig.is_some() => {}
            None => {
                let mut attributes = common(model, minor);
                attributes.insert("type".into(), json!({"string": "gpu"}));
                attributes.insert("uuid".into(), json!({"string": parent}));
                devices.push(json!({
                    "name": format!("gpu-{minor}"),
                    "attributes": attributes,
                    "capacity": {"memory": {"value": format!("{}Mi", model.memory_mib)}},
                }));
            }
        }
    }
    devices
}

/// One MIG placement's capacities, as a partition announces them.
fn mig_capacity(p: &Profile) -> Vec<(&'static str, u64, bool)> {
    vec![
        ("multiprocessors", u64::from(p.2), false),
        ("copyEngines", u64::from(p.3), false),
        ("decoders", u64::from(p.4), false),
        ("encoders", u64::from(p.5), false),
        ("jpegEngines", u64::from(p.6), false),
        ("ofaEngines", u64::from(p.7), false),
        ("memory", p.8, true),
    ]
}

fn quantity(value: u64, mib: bool) -> Json {
    if mib {
        json!({"value": format!("{value}Mi")})
    } else {
        json!({"value": value.to_string()})
    }
}

/// `copyEngines` → `copy-engines`, as the driver names a capacity's counter.
fn counter_name(capacity: &str) -> String {
    let mut out = String::new();
    for c in capacity.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A consumption or counter map: the capacities as counters, plus memory slices `slices`.
fn counters(capacity: &[(&str, u64, bool)], slices: std::ops::Range<u32>) -> Json {
    let mut out = serde_json::Map::new();
    for (name, value, mib) in capacity {
        out.insert(counter_name(name), quantity(*value, *mib));
    }
    for slice in slices {
        out.insert(format!("memory-slice-{slice}"), json!({"value": "1"}));
    }
    Json::Object(out)
}

/// The contents of the slices of a node's pool (without driver, node and pool, which
/// [`slice_spec`] adds): one slice of every device, or, with DynamicMIG, the counter sets'
/// slice and one slice per GPU.
pub fn pool(
    node: &str,
    model: &GpuModel,
    count: u32,
    layout: Option<&MigLayout>,
    dynamic_mig: bool,
) -> Vec<Json> {
    let table = profiles(model);
    if !dynamic_mig || table.is_empty() {
        return vec![json!({"devices": devices(node, model, count, layout)})];
    }
    let mig_on = layout.is_some_and(|l| !l.devices.is_empty());
    let most: Vec<(&str, u64, bool)> = mig_capacity(&table[0])
        .into_iter()
        .map(|(name, _, mib)| {
            let max = table
                .iter()
                .flat_map(mig_capacity)
                .filter(|(n, _, _)| *n == name)
                .map(|(_, v, _)| v)
                .max()
                .unwrap_or(0);
            (name, max, mib)
        })
        .collect();
    let memory_slices = table.iter().map(|p| p.9).max().unwrap_or(0);
    let mut sets = Vec::new();
    let mut slices = Vec::new();
    for minor in 0..count {
        let set = format!("gpu-{minor}-counter-set");
        sets.push(json!({"name": set, "counters": counters(&most, 0..memory_slices)}));
        let parent = uuid(node, minor);
        let mut gpu_devices = Vec::new();
        if !(mig_on && model.architecture == "Ampere") {
            let mut attributes = common(model, minor);
            attributes.insert("type".into(), json!({"string": "gpu"}));
            attributes.insert("uuid".into(), json!({"string": parent}));
            let capacity: serde_json::Map<String, Json> = most
                .iter()
                .map(|(name, value, mib)| ((*name).to_owned(), quantity(*value, *mib)))
                .collect();
            gpu_devices.push(json!({
                "name": format!("gpu-{minor}"),
                "attributes": attributes,
                "capacity": capacity,
                "consumesCounters": [{"counterSet": set, "counters": counters(&most, 0..memory_slices)}],
            }));
        }
        for p in table {
            for &start in p.10 {
                let mut attributes = common(model, minor);
                attributes.insert("type".into(), json!({"string": "mig"}));
                attributes.insert("profile".into(), json!({"string": p.0}));
                attributes.insert("parentUUID".into(), json!({"string": parent}));
                let own = mig_capacity(p);
                let capacity: serde_json::Map<String, Json> = own
                    .iter()
                    .map(|(name, value, mib)| ((*name).to_owned(), quantity(*value, *mib)))
                    .collect();
                gpu_devices.push(json!({
                    "name": format!(
                        "gpu-{minor}-mig-{}-{}-{start}",
                        p.0.replace('.', "").replace('+', "-"),
                        p.1
                    ),
                    "attributes": attributes,
                    "capacity": capacity,
                    "consumesCounters": [{"counterSet": set, "counters": counters(&own, start..start + p.9)}],
                }));
            }
        }
        gpu_devices.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        slices.push(json!({"devices": gpu_devices}));
    }
    let mut pool = vec![json!({"sharedCounters": sets})];
    pool.extend(slices);
    pool
}

/// The spec of one ResourceSlice of a node's pool of `count` slices.
pub fn slice_spec(node: &str, contents: &Json, generation: i64, count: usize) -> Json {
    let mut spec = json!({
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
    });
    if let (Some(spec), Some(contents)) = (spec.as_object_mut(), contents.as_object()) {
        spec.extend(contents.clone());
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpusim::catalog::model;
    use crate::gpusim::mig::{MigConfigs, tests::default_config_path};

    #[test]
    fn full_gpus_and_mig_devices_are_named_and_described_as_the_driver_does() {
        let a100 = model("NVIDIA-A100-SXM4-80GB").unwrap();
        let full = devices("n", a100, 2, None);
        assert_eq!(full.len(), 2);
        assert_eq!(full[1]["name"], "gpu-1");
        assert_eq!(
            full[0]["attributes"]["productName"]["string"],
            "NVIDIA A100-SXM4-80GB"
        );
        assert_eq!(
            full[0]["attributes"]["cudaComputeCapability"]["version"],
            "8.0.0"
        );
        assert_eq!(full[0]["capacity"]["memory"]["value"], "81920Mi");
        let configs =
            MigConfigs::parse(&std::fs::read_to_string(default_config_path()).unwrap()).unwrap();
        let balanced = configs.layout_for("all-balanced", a100).unwrap();
        let mig = devices("n", a100, 1, Some(&balanced));
        let mut profiles: Vec<&str> = mig
            .iter()
            .map(|d| d["attributes"]["profile"]["string"].as_str().unwrap())
            .collect();
        profiles.sort_unstable();
        assert_eq!(profiles, ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]);
        // No two instances share a memory slice.
        let mut slices: Vec<&String> = mig
            .iter()
            .flat_map(|d| d["capacity"].as_object().unwrap().keys())
            .filter(|k| k.starts_with("memorySlice"))
            .collect();
        let all = slices.len();
        slices.sort();
        slices.dedup();
        assert_eq!(slices.len(), all);
        assert!(mig.iter().any(|d| d["name"] == "gpu-0-mig-3g40gb-9-4"));
        assert!(
            mig.iter()
                .all(|d| d["attributes"]["type"]["string"] == "mig")
        );
        let seven = configs.layout_for("all-1g.10gb", a100).unwrap();
        assert_eq!(devices("n", a100, 1, Some(&seven)).len(), 7);
    }

    #[test]
    fn under_dynamic_mig_a_gpu_is_every_partition_it_could_be_cut_into() {
        let h100 = model("NVIDIA-H100-80GB-HBM3").unwrap();
        let slices = pool("n", h100, 2, None, true);
        assert_eq!(slices.len(), 3, "the counters' slice, then one per GPU");
        let sets = slices[0]["sharedCounters"].as_array().unwrap();
        assert_eq!(sets[1]["name"], "gpu-1-counter-set");
        assert_eq!(sets[0]["counters"]["multiprocessors"]["value"], "132");
        assert_eq!(sets[0]["counters"]["copy-engines"]["value"], "8");
        assert_eq!(sets[0]["counters"]["memory-slice-7"]["value"], "1");
        let gpu0 = slices[1]["devices"].as_array().unwrap();
        // The full GPU and 7 + 7 + 4 + 3 + 2 + 1 + 1 placements.
        assert_eq!(gpu0.len(), 26);
        let full = gpu0.iter().find(|d| d["name"] == "gpu-0").unwrap();
        assert_eq!(full["capacity"]["memory"]["value"], "80640Mi");
        let three = gpu0
            .iter()
            .find(|d| d["name"] == "gpu-0-mig-3g40gb-9-4")
            .unwrap();
        let uses = &three["consumesCounters"][0]["counters"];
        assert_eq!(uses["memory-slice-4"]["value"], "1");
        assert!(uses.get("memory-slice-3").is_none());
        assert!(three["attributes"].get("uuid").is_none());
        // Without the gate, or on a GPU without MIG, one slice as before.
        assert_eq!(pool("n", h100, 2, None, false).len(), 1);
        let l4 = model("NVIDIA-L4").unwrap();
        assert_eq!(pool("n", l4, 1, None, true).len(), 1);
    }
}
