//! The devices NVIDIA's DRA driver publishes, as a selector sees them: those of the live
//! nodes' ResourceSlices, whole, and those a planned DRA pool's nodes will publish, from the
//! built-in table, with what only the node can tell (UUIDs, PCI addresses, the driver's
//! version) left unknown rather than guessed.
//!
//! The driver's code defines them (`cmd/gpu-kubelet-plugin/deviceinfo.go` of
//! kubernetes-sigs/dra-driver-nvidia-gpu): attributes without a domain are the driver's
//! (`gpu.nvidia.com`), `cudaComputeCapability`, `driverVersion` and `cudaDriverVersion` are
//! versions, `memory` is a capacity in bytes.

use super::selector::{Environment, Reference, map};
use crate::model::Model;
use gpustack_catalog as catalog;
use gpustack_protocol::nvidia::DRA_DRIVER;
use gpustack_protocol::{DraAttribute, DraDevice, PoolFact};
use kube_cel::cel::objects::Value;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// A node, live or planned, with its devices.
pub(crate) struct DraNode {
    pub name: String,
    /// The planned pool it stands for (one node of it), or `None` for a live node.
    pub pool: Option<String>,
    pub devices: Vec<Device>,
    /// The pool's shared counters (partitionable devices): set → counter → amount, in
    /// billionths of the counter's unit.
    pub counters: HashMap<String, HashMap<String, u128>>,
    /// Its devices are partitions whose shared counters the plan cannot know (a planned
    /// pool under DynamicMIG): which of them fit together is known at apply.
    pub counters_unknown: bool,
}

impl DraNode {
    pub(crate) fn describe(&self) -> String {
        match &self.pool {
            Some(pool) => format!("each node of planned pool {pool}"),
            None => format!("node {}", self.name),
        }
    }
}

/// Whether the plan knows every attribute of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Known {
    All,
    /// Those of these names (`gpu.nvidia.com/uuid`) are unknown until the node publishes it.
    Without(BTreeSet<String>),
}

pub(crate) struct Device {
    pub name: String,
    pub driver: String,
    /// (domain, name) → value.
    pub attributes: BTreeMap<(String, String), DraAttribute>,
    pub capacity: BTreeMap<(String, String), String>,
    pub known: Known,
    /// What allocating it takes from the pool's shared counters: (set, [(counter, amount)]).
    pub consumes: Vec<(String, Vec<(String, u128)>)>,
}

/// Counters as written to amounts; one that is not a quantity counts as more than any
/// counter holds, as the scheduler cannot allocate from it.
fn amounts(counters: &BTreeMap<String, String>) -> Vec<(String, u128)> {
    counters
        .iter()
        .map(|(name, q)| (name.clone(), quantity_nanos(q).unwrap_or(u128::MAX)))
        .collect()
}

/// `resource.kubernetes.io/pciBusID` → (`resource.kubernetes.io`, `pciBusID`); an unqualified
/// name is the driver's.
fn qualified(name: &str, driver: &str) -> (String, String) {
    match name.split_once('/') {
        Some((domain, id)) => (domain.to_owned(), id.to_owned()),
        None => (driver.to_owned(), name.to_owned()),
    }
}

impl Device {
    pub(crate) fn from_live(device: &DraDevice) -> Self {
        let mut attributes: BTreeMap<(String, String), DraAttribute> = device
            .attributes
            .iter()
            .map(|(k, v)| (qualified(k, DRA_DRIVER), v.clone()))
            .collect();
        let mut capacity: BTreeMap<(String, String), String> = device
            .capacity
            .iter()
            .map(|(k, v)| (qualified(k, DRA_DRIVER), v.clone()))
            .collect();
        // Facts recorded before attributes were kept carry the three the model reads.
        if attributes.is_empty() {
            attributes.insert(
                (DRA_DRIVER.into(), "type".into()),
                DraAttribute::String(device.kind.clone()),
            );
            attributes.insert(
                (DRA_DRIVER.into(), "productName".into()),
                DraAttribute::String(device.product.clone()),
            );
            if let Some(mib) = device.memory_mib {
                capacity.insert((DRA_DRIVER.into(), "memory".into()), format!("{mib}Mi"));
            }
        }
        Self {
            name: device.name.clone(),
            driver: DRA_DRIVER.into(),
            attributes,
            capacity,
            known: Known::All,
            consumes: device
                .consumes
                .iter()
                .map(|(set, counters)| (set.clone(), amounts(counters)))
                .collect(),
        }
    }

    pub(crate) fn knows(&self, reference: &Reference) -> bool {
        match (&self.known, reference) {
            (Known::All, _) | (_, Reference::Driver) => true,
            (Known::Without(unknown), Reference::Attribute(domain, id)) => {
                !unknown.contains(&format!("{domain}/{id}"))
            }
            (Known::Without(unknown), Reference::Capacity(domain, id)) => {
                !unknown.contains(&format!("capacity {domain}/{id}"))
            }
        }
    }

    /// What the device shows a reference, as a key of the verdict memo.
    pub(crate) fn show(&self, reference: &Reference) -> String {
        match reference {
            Reference::Driver => self.driver.clone(),
            Reference::Attribute(domain, id) => self
                .attributes
                .get(&(domain.clone(), id.clone()))
                .map_or_else(|| "-".to_owned(), |a| format!("{a:?}")),
            Reference::Capacity(domain, id) => self
                .capacity
                .get(&(domain.clone(), id.clone()))
                .map_or_else(|| "-".to_owned(), |c| format!("={c}")),
        }
    }

    /// `gpu NVIDIA A100-SXM4-80GB`, `mig 1g.10gb of NVIDIA H100 80GB HBM3`.
    pub(crate) fn summary(&self) -> String {
        let string = |id: &str| match self.attributes.get(&(DRA_DRIVER.to_owned(), id.to_owned())) {
            Some(DraAttribute::String(s)) => Some(s.as_str()),
            _ => None,
        };
        let product = string("productName").unwrap_or("unknown product");
        match (string("type"), string("profile")) {
            (Some("mig"), Some(profile)) => format!("mig {profile} of {product}"),
            (Some(kind), _) => format!("{kind} {product}"),
            (None, _) => product.to_owned(),
        }
    }
}

/// The CEL value of `device`: its driver, its attributes and capacities by domain — those a
/// selector reads, or all (`None`) — and an empty map for every other domain a selector names.
pub(crate) fn cel_value(
    env: &Environment,
    device: &Device,
    reads: Option<&BTreeSet<Reference>>,
    domains: &BTreeSet<String>,
) -> Value {
    let attribute_value = |value: &DraAttribute| match value {
        DraAttribute::Int(i) => Value::Int(*i),
        DraAttribute::Bool(b) => Value::Bool(*b),
        DraAttribute::String(s) => Value::String(Arc::new(s.clone())),
        DraAttribute::Version(v) => env.version(v),
    };
    let mut attributes: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    let mut capacity: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    let add = |into: &mut BTreeMap<String, Vec<(String, Value)>>,
               (domain, id): &(String, String),
               value: Value| {
        into.entry(domain.clone())
            .or_default()
            .push((id.clone(), value));
    };
    match reads {
        // Only what the selector reads: the value is built once per evaluation.
        Some(refs) => {
            for r in refs {
                match r {
                    Reference::Attribute(domain, id) => {
                        let key = (domain.clone(), id.clone());
                        if let Some(value) = device.attributes.get(&key) {
                            add(&mut attributes, &key, attribute_value(value));
                        }
                    }
                    Reference::Capacity(domain, id) => {
                        let key = (domain.clone(), id.clone());
                        if let Some(value) = device.capacity.get(&key).and_then(|q| env.quantity(q))
                        {
                            add(&mut capacity, &key, value);
                        }
                    }
                    Reference::Driver => {}
                }
            }
        }
        None => {
            for (key, value) in &device.attributes {
                add(&mut attributes, key, attribute_value(value));
            }
            for (key, quantity) in &device.capacity {
                if let Some(value) = env.quantity(quantity) {
                    add(&mut capacity, key, value);
                }
            }
        }
    }
    for domain in domains {
        attributes.entry(domain.clone()).or_default();
        capacity.entry(domain.clone()).or_default();
    }
    let nested = |m: BTreeMap<String, Vec<(String, Value)>>| {
        map(m
            .into_iter()
            .map(|(domain, entries)| (domain, map(entries))))
    };
    map([
        (
            "driver".to_owned(),
            Value::String(Arc::new(device.driver.clone())),
        ),
        ("attributes".to_owned(), nested(attributes)),
        ("capacity".to_owned(), nested(capacity)),
    ])
}

/// What a planned full GPU's node cannot be known to publish before it exists.
const UNKNOWN_UNTIL_PUBLISHED: [&str; 8] = [
    "gpu.nvidia.com/uuid",
    "gpu.nvidia.com/brand",
    "gpu.nvidia.com/driverVersion",
    "gpu.nvidia.com/cudaDriverVersion",
    "gpu.nvidia.com/addressingMode",
    "resource.kubernetes.io/pciBusID",
    "resource.kubernetes.io/pcieRoot",
    "resource.kubernetes.io/numaNode",
];

/// What a MIG device of a planned node cannot be known to publish before it exists: its
/// parent's identity and the capacities NVML reports for its profile.
const MIG_UNKNOWN: [&str; 8] = [
    "gpu.nvidia.com/parentUUID",
    "capacity gpu.nvidia.com/memory",
    "capacity gpu.nvidia.com/multiprocessors",
    "capacity gpu.nvidia.com/copyEngines",
    "capacity gpu.nvidia.com/decoders",
    "capacity gpu.nvidia.com/encoders",
    "capacity gpu.nvidia.com/jpegEngines",
    "capacity gpu.nvidia.com/ofaEngines",
];

/// What one node of a planned DRA pool will publish, from the built-in table.
pub(crate) struct Planned {
    pub devices: Vec<Device>,
    /// Per node, in the plan's words (`8 × gpu NVIDIA H100 80GB HBM3 (81559 MiB)`).
    pub describe: String,
    /// Partitions whose shared counters the plan cannot know (DynamicMIG).
    pub counters_unknown: bool,
}

fn device(gpu: &catalog::DraGpu, name: String, kind: &str, profile: Option<&str>) -> Device {
    let attribute = |id: &str, value: DraAttribute| ((DRA_DRIVER.to_owned(), id.to_owned()), value);
    let mut attributes: BTreeMap<(String, String), DraAttribute> = [
        attribute("type", DraAttribute::String(kind.into())),
        attribute("productName", DraAttribute::String(gpu.product.into())),
        attribute(
            "architecture",
            DraAttribute::String(gpu.architecture.into()),
        ),
        attribute(
            "cudaComputeCapability",
            DraAttribute::Version(gpu.compute_capability.into()),
        ),
    ]
    .into();
    let mut unknown: BTreeSet<String> = UNKNOWN_UNTIL_PUBLISHED
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut capacity = BTreeMap::new();
    match profile {
        Some(profile) => {
            attributes.extend([attribute("profile", DraAttribute::String(profile.into()))]);
            unknown.extend(MIG_UNKNOWN.iter().map(|s| (*s).to_owned()));
            for slice in 0..8 {
                unknown.insert(format!("capacity gpu.nvidia.com/memorySlice{slice}"));
            }
        }
        None => {
            capacity.insert(
                (DRA_DRIVER.to_owned(), "memory".to_owned()),
                format!("{}Mi", gpu.memory_mib),
            );
        }
    }
    Device {
        name,
        driver: DRA_DRIVER.into(),
        attributes,
        capacity,
        known: Known::Without(unknown),
        consumes: Vec::new(),
    }
}

/// The devices a node of a planned DRA pool will publish: its full GPUs; with MIG on, the
/// geometry's MIG devices instead (MIG Manager cuts them, the driver publishes them); with
/// the driver's DynamicMIG, each GPU whole and as every partition it could be cut into (as
/// many of a profile as fit on the GPU), their shared counters unknown.
pub(crate) fn planned(model: &Model, pool: &PoolFact, gpu: &catalog::DraGpu) -> Planned {
    let Some(shape) = pool.after.as_ref().and_then(|s| s.gpus.as_ref()) else {
        return Planned {
            devices: Vec::new(),
            describe: String::new(),
            counters_unknown: false,
        };
    };
    let whole = format!("gpu {} ({} MiB)", gpu.product, gpu.memory_mib);
    let full = |minor: u32| device(gpu, format!("gpu-{minor}"), "gpu", None);
    let partition = |minor: u32, profile: &str, k: u32| {
        device(
            gpu,
            format!(
                "gpu-{minor}-mig-{}-{k}",
                profile.replace('.', "").replace('+', "-")
            ),
            "mig",
            Some(profile),
        )
    };
    if super::checks::dynamic_mig(model, &pool.node_labels)
        && let Some(profiles) = catalog::mig_profiles(&shape.model, shape.memory_gb)
    {
        let mut devices = Vec::new();
        for minor in 0..shape.count {
            devices.push(full(minor));
            for (profile, most) in profiles {
                devices.extend((0..*most).map(|k| partition(minor, profile, k)));
            }
        }
        return Planned {
            devices,
            describe: format!(
                "{} × {whole}, each also as every MIG partition it could be cut into (DynamicMIG: {})",
                shape.count,
                profiles
                    .iter()
                    .map(|(p, n)| format!("{n} × {p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            counters_unknown: true,
        };
    }
    let physical = crate::model::Physical {
        count: shape.count,
        model: shape.model.clone(),
        memory_gb: shape.memory_gb,
        product: shape.model.clone(),
        source: shape.source.clone(),
    };
    match model.after.mig(&pool.node_labels, &physical) {
        Some((geometry, Some(crate::mig::Layout::Enabled(layout)), _)) if !layout.is_empty() => {
            let mut devices = Vec::new();
            for minor in 0..shape.count {
                for (profile, n) in &layout {
                    devices.extend((0..*n).map(|k| partition(minor, profile, k)));
                }
            }
            Planned {
                devices,
                describe: format!(
                    "{} × {whole} in MIG {geometry}, each published as {}",
                    shape.count,
                    layout
                        .iter()
                        .map(|(p, n)| format!("{n} × mig {p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                counters_unknown: false,
            }
        }
        _ => Planned {
            devices: (0..shape.count).map(full).collect(),
            describe: format!("{} × {whole}", shape.count),
            counters_unknown: false,
        },
    }
}

/// Whether NVIDIA's DRA driver runs, or will: a release of its chart planned, or devices live.
pub(crate) fn driver_runs(model: &Model) -> bool {
    model.dra.drivers.iter().any(|(_, d)| d.values.is_some())
        || model
            .dra
            .chart_gpu_clusters
            .iter()
            .any(|c| !c.cluster_policy_too)
        || model.nodes.iter().any(|n| !n.live.dra_devices.is_empty())
}

/// The planned DRA pools — pools whose nodes the DRA driver serves and the device plugin does
/// not — with the model the built-in table gives their GPUs: (address, pool, GPU).
pub(crate) fn dra_pools(model: &Model) -> Vec<(&str, &PoolFact, catalog::DraGpu)> {
    if !driver_runs(model) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (address, pool) in &model.pools {
        let Some(shape) = &pool.after else { continue };
        let Some(gpus) = &shape.gpus else { continue };
        if pool
            .managed_gpu_software
            .as_ref()
            .is_some_and(|m| m.device_plugin)
        {
            continue;
        }
        if model.after.plugin_runs(&pool.node_labels) {
            continue;
        }
        if let Some(gpu) = catalog::dra_gpu(&gpus.model, gpus.memory_gb, &shape.machine) {
            out.push((address.as_str(), pool, gpu));
        }
    }
    out
}

/// Every node with DRA devices: the live ones from their slices, then one node per planned
/// DRA pool (a pool whose nodes the DRA driver serves and the device plugin does not).
pub(crate) fn nodes(model: &Model) -> Vec<DraNode> {
    let mut nodes: Vec<DraNode> = model
        .nodes
        .iter()
        .filter(|n| !n.live.dra_devices.is_empty())
        .map(|n| DraNode {
            name: n.live.name.clone(),
            pool: None,
            devices: n.live.dra_devices.iter().map(Device::from_live).collect(),
            counters: n
                .live
                .dra_counters
                .iter()
                .map(|(set, counters)| (set.clone(), amounts(counters).into_iter().collect()))
                .collect(),
            counters_unknown: false,
        })
        .collect();
    for (address, pool, gpu) in dra_pools(model) {
        let planned = planned(model, pool, &gpu);
        nodes.push(DraNode {
            name: format!("{} {}", pool.kind, pool.name),
            pool: Some(address.to_owned()),
            devices: planned.devices,
            counters: HashMap::new(),
            counters_unknown: planned.counters_unknown,
        });
    }
    nodes
}

/// The DeviceClasses a release of the driver's chart creates with these values, and their
/// selectors (the chart's `deviceclass-gpu.yaml`, `deviceclass-mig.yaml`,
/// `deviceclass-vfio-gpu.yaml`).
pub(crate) fn chart_classes(values: &Json) -> Vec<(&'static str, &'static str)> {
    let gpus = values
        .pointer("/resources/gpus/enabled")
        .and_then(Json::as_bool)
        .unwrap_or(true);
    if !gpus {
        return Vec::new();
    }
    vec![
        (
            "gpu.nvidia.com",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        ),
        (
            "mig.nvidia.com",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
        ),
        (
            "vfio.gpu.nvidia.com",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
        ),
    ]
}

/// A quantity (`80640Mi`, `1`, `1.5G`, `2e3`) exactly, in billionths of its unit, as the
/// counters are summed and compared; `None` when it is not a quantity or is negative.
pub(crate) fn quantity_nanos(text: &str) -> Option<u128> {
    let text = text.trim();
    let text = text.strip_prefix('+').unwrap_or(text);
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mantissa: u128 = digits.parse().ok()?;
    let (binary, decimal): (u32, i32) = match suffix {
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "" => (0, 0),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        exponent => (
            0,
            exponent
                .strip_prefix(['e', 'E'])?
                .parse::<i32>()
                .ok()
                .filter(|e| e.abs() <= 18)?,
        ),
    };
    let scale = 9 + decimal - fraction.len() as i32;
    let value = mantissa.checked_mul(1u128.checked_shl(binary)?)?;
    if scale >= 0 {
        value.checked_mul(10u128.checked_pow(scale as u32)?)
    } else {
        // Below a billionth Kubernetes rounds up.
        let divisor = 10u128.checked_pow(scale.unsigned_abs())?;
        Some(value.div_ceil(divisor))
    }
}
