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

/// The spec of a node's ResourceSlice.
pub fn slice_spec(node: &str, devices: Vec<Json>, generation: i64) -> Json {
    json!({
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
        "devices": devices,
    })
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
}
