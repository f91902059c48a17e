//! What a plan does to GPU capacity: lines a provider computes itself, and facts the engine
//! combines across providers (a cloud pool's machines with the sharing config its nodes will
//! use, DESIGN §1).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a planned change does to the GPU resources a node or pool advertises
/// (`nvidia.com/gpu 10 → 4`): the plan's GPU capacity section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityChange {
    /// The node or pool, e.g. `node tw-t4 (1× Tesla-T4)`.
    pub scope: String,
    /// The extended resource, e.g. `nvidia.com/gpu`.
    pub resource: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// Why, e.g. `time-slicing ×4`.
    pub detail: String,
    /// For a pool: the physical GPUs behind `after`, before any sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<f64>,
}

/// A fact about GPUs that one resource knows and another layer gives meaning to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuFact {
    /// A cloud pool of GPU machines.
    Pool(PoolFact),
    /// A device-plugin config (a ConfigMap) and the sharing each of its keys sets up, as
    /// planned and as it was (`None`: the config is new). `live_default` is the key the live
    /// ClusterPolicy makes the default, if it points here.
    SharingConfig {
        name: String,
        keys: BTreeMap<String, SharingKey>,
        keys_before: Option<BTreeMap<String, SharingKey>>,
        live_default: Option<String>,
    },
    /// The ClusterPolicy as planned: the config the device plugin reads and its default key.
    DevicePluginConfig {
        name: String,
        default_key: Option<String>,
    },
}

/// A cloud pool (AKS node pool, EKS node group, GKE node pool), before and after the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolFact {
    /// `nodepool`, `nodegroup`.
    pub kind: String,
    pub name: String,
    /// Labels every node of the pool carries (the cloud's pool label and the configured ones).
    pub node_labels: BTreeMap<String, String>,
    pub before: Option<PoolShape>,
    pub after: Option<PoolShape>,
    /// Whether the pool is created or replaced by this plan.
    pub new: bool,
}

/// The machines of a pool: how many (a range when it autoscales) and their GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolShape {
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub machine: String,
    pub gpus: GpuShape,
    /// Sharing the cloud itself sets up on the pool (GKE's MIG partitions and time-sharing);
    /// it takes the place of any device-plugin config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingKey>,
}

/// The GPUs of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuShape {
    pub count: u32,
    pub model: String,
    pub memory_gb: u32,
}

/// One key of a device-plugin config: how each physical GPU is advertised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingKey {
    /// `time-slicing`, `MPS`, or `no sharing`.
    pub strategy: String,
    pub replicas: f64,
    /// Advertised as `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`.
    pub rename: bool,
}
