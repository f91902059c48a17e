//! What providers know about GPUs, as facts for the engine's GPU model (the `gpustack-gpu`
//! crate), and the capacity lines the model computes from them (DESIGN §1). Providers report
//! what they see — a pool's machines, a ConfigMap's text, a ClusterPolicy's fields, a chart's
//! values, a cluster's nodes — and never decide what it means for GPUs: the model does.

use crate::value::{Path, PathStep};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a planned change does to the GPU resources a node or pool advertises
/// (`nvidia.com/gpu 10 → 4`): one line of the plan's GPU capacity section.
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
    /// The physical GPUs behind `after`, before any sharing: set for a new pool, and for a
    /// node that advertises no GPUs yet (no device plugin runs there before the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<f64>,
}

impl CapacityChange {
    /// `node tw-t4 (1× Tesla-T4): nvidia.com/gpu 10 → 4 (time-slicing ×4)`; with physical
    /// GPUs (a pool, or a node that advertises none yet), those and what they will advertise:
    /// `nodepool gpupool: 1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 10 (…)`.
    pub fn text(&self) -> String {
        let number = |n: f64| crate::format_number(n);
        let amount = |n: Option<f64>| n.map_or_else(|| "0".to_owned(), number);
        if let Some(physical) = self.physical {
            return format!(
                "{} → {} {} → {} ({})",
                self.scope,
                self.resource,
                number(physical),
                amount(self.after),
                self.detail
            );
        }
        format!(
            "{}: {} {} → {} ({})",
            self.scope,
            self.resource,
            amount(self.before),
            amount(self.after),
            self.detail
        )
    }
}

/// Builds a path from keys: `path(["manifest", "data"])`.
pub fn path<'a>(keys: impl IntoIterator<Item = &'a str>) -> Path {
    keys.into_iter()
        .map(|k| PathStep::Key(k.to_owned()))
        .collect()
}

/// A fact about GPUs that one resource knows and the GPU model gives meaning to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuFact {
    /// A cloud pool of GPU machines.
    Pool(PoolFact),
    /// A ConfigMap the stack plans whose data may be read by the device plugin or the MIG
    /// manager: its text per key as planned (`None`: deleted) and before (`None`: new).
    ConfigMap(ConfigMapFact),
    /// GPU Operator settings the stack plans: a ClusterPolicy object or patch, or the values of
    /// a Helm release of the GPU Operator chart.
    Operator(OperatorFact),
    /// Labels a resource sets on a node (`nvidia.com/device-plugin.config`,
    /// `nvidia.com/mig.config`), as planned and before.
    NodeLabels(NodeLabelsFact),
    /// A GPU ceiling: a Karpenter NodePool's `spec.limits`, a GKE node auto-provisioning limit.
    Ceiling(CeilingFact),
    /// Nodes whose GPU changes a resource rolls out node by node, and how.
    Rollout(RolloutFact),
    /// The live cluster as the GPU components see it: its GPU nodes, the live ClusterPolicy
    /// and the ConfigMaps it points at.
    Cluster(ClusterFact),
    /// A DRA object the stack plans whose device selectors the scheduler will evaluate: a
    /// DeviceClass, a ResourceClaim or a ResourceClaimTemplate.
    DeviceRequest(DeviceRequestFact),
    /// A release of NVIDIA's DRA driver chart (`dra-driver-nvidia-gpu`), as planned and before.
    DraDriver(DraDriverFact),
}

impl GpuFact {
    /// What this fact of a live object becomes when the plan deletes the object: its
    /// ConfigMap gone, its labels removed, its pool or ceiling gone. `None` where deleting
    /// says nothing certain (a patch's fields stay as the last apply left them) and for the
    /// cluster itself.
    pub fn removed(&self) -> Option<GpuFact> {
        Some(match self.clone() {
            GpuFact::Pool(mut pool) => {
                pool.before = pool.after.take().or(pool.before);
                pool.new = false;
                GpuFact::Pool(pool)
            }
            GpuFact::ConfigMap(mut map) => {
                map.data_before = map.data.take().or(map.data_before);
                GpuFact::ConfigMap(map)
            }
            GpuFact::Operator(mut operator)
                if operator.source != OperatorSource::ClusterPolicyPatch =>
            {
                operator.settings_before = operator.settings.take().or(operator.settings_before);
                GpuFact::Operator(operator)
            }
            GpuFact::NodeLabels(mut labels) => {
                labels.labels_before = std::mem::take(&mut labels.labels);
                GpuFact::NodeLabels(labels)
            }
            GpuFact::Ceiling(mut ceiling) => {
                ceiling.before = ceiling.after.take().or(ceiling.before);
                GpuFact::Ceiling(ceiling)
            }
            GpuFact::DeviceRequest(mut request) => {
                request.spec = None;
                GpuFact::DeviceRequest(request)
            }
            GpuFact::DraDriver(mut driver) => {
                driver.values_before = driver.values.take().or(driver.values_before);
                GpuFact::DraDriver(driver)
            }
            GpuFact::Operator(_) | GpuFact::Cluster(_) | GpuFact::Rollout(_) => return None,
        })
    }
}

/// The kinds of DRA object whose selectors a plan checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DeviceRequestKind {
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
}

impl DeviceRequestKind {
    /// The kind as `resource.k8s.io/v1` names it.
    pub fn from_kind(kind: &str) -> Option<Self> {
        Some(match kind {
            "DeviceClass" => Self::DeviceClass,
            "ResourceClaim" => Self::ResourceClaim,
            "ResourceClaimTemplate" => Self::ResourceClaimTemplate,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::DeviceClass => "DeviceClass",
            Self::ResourceClaim => "ResourceClaim",
            Self::ResourceClaimTemplate => "ResourceClaimTemplate",
        }
    }
}

/// A DeviceClass, ResourceClaim or ResourceClaimTemplate as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRequestFact {
    pub kind: DeviceRequestKind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A DeviceClass's `spec`, or the claim's spec (a template's `spec.spec`); `None`: deleted.
    pub spec: Option<serde_json::Value>,
    /// Where `spec` is in the resource's configuration (`manifest.spec`, `manifest.spec.spec`).
    pub attribute: Path,
}

/// What runs NVIDIA's DRA driver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DraDriverSource {
    /// A release of its own chart.
    #[default]
    Chart,
    /// GPU Operator's `GPUCluster` (from the operator chart's values or a manifest).
    GpuCluster,
}

/// NVIDIA's DRA driver as the stack plans it: a release of its chart, or a GPUCluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraDriverFact {
    #[serde(default)]
    pub source: DraDriverSource,
    /// `namespace/name` of the release, or `GPUCluster gpu-cluster`.
    pub release: String,
    /// The driver's settings in the chart's shape (`featureGates`, `kubeletPlugin`): the
    /// chart's values, a GPUCluster's `draDriver`; as planned (`None`: removed) and before
    /// (`None`: new).
    pub values: Option<serde_json::Value>,
    pub values_before: Option<serde_json::Value>,
    /// Where `values` is in the resource's configuration.
    pub attribute: Path,
}

/// A cloud pool (AKS node pool, EKS node group, GKE node pool), before and after the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolFact {
    /// `nodepool`, `nodegroup`.
    pub kind: String,
    pub name: String,
    /// Labels every node of the pool carries (the cloud's pool label and the configured ones).
    pub node_labels: BTreeMap<String, String>,
    /// Where the configured labels are in the resource's configuration (`node_labels`).
    #[serde(default)]
    pub labels_attribute: Path,
    pub before: Option<PoolShape>,
    pub after: Option<PoolShape>,
    /// Whether the pool is created or replaced by this plan.
    pub new: bool,
    /// GPU software the cloud itself runs on the pool's nodes (GKE's device plugin, AKS
    /// managed GPU mode), and the attribute that turns it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_gpu_software: Option<ManagedSoftware>,
    /// Live nodes the change removes (the old pool of a replacement), and how they are
    /// emptied first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removes: Option<NodeRemoval>,
}

/// Nodes a change removes: those carrying every label of `selector`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRemoval {
    pub selector: BTreeMap<String, String>,
    /// `replaced by nodepool h100`, `deleted`.
    pub change: String,
    /// How the nodes are emptied before they go, in words: the pool's rollout, or what the
    /// cloud does without one.
    pub how: String,
    /// The nodes and their running GPU pods (`namespace/name`), where the pool's rollout read
    /// them itself; else the model finds them among the cluster's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<(String, Vec<String>)>>,
}

/// GPU software a cloud installs on a pool by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManagedSoftware {
    /// `GKE's NVIDIA device plugin`, `AKS managed GPU mode`.
    pub what: String,
    /// The pool attribute that selects it.
    pub attribute: Path,
    /// Whether it includes a device plugin (both do today).
    pub device_plugin: bool,
}

/// The machines of a pool: how many (a range when it autoscales) and their GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolShape {
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub machine: String,
    /// `None`: the machine type has no GPUs anyone could name (not in the cloud's answer nor
    /// the built-in table).
    pub gpus: Option<GpuShape>,
    /// Sharing the cloud itself sets up on the pool (GKE's MIG partitions and time-sharing);
    /// it takes the place of any device-plugin config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<CloudSharing>,
}

/// The GPUs of one machine, and where that came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuShape {
    pub count: u32,
    pub model: String,
    pub memory_gb: u32,
    /// `EC2 DescribeInstanceTypes`, or `built-in table` when no cloud API answered (with why).
    pub source: String,
}

/// Sharing a cloud sets up on a pool (GKE `gpuPartitionSize`, `gpuSharingConfig`; AKS
/// `gpuInstanceProfile`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudSharing {
    /// A MIG profile, e.g. `1g.20gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_profile: Option<String>,
    /// `time-sharing` or `MPS`, with the clients per GPU (or per partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<(String, f64)>,
}

/// A ConfigMap as planned and before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigMapFact {
    pub namespace: String,
    pub name: String,
    pub data: Option<BTreeMap<String, String>>,
    pub data_before: Option<BTreeMap<String, String>>,
    /// Where `data` is in the resource's configuration (`manifest.data`).
    pub attribute: Path,
}

/// Where operator settings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorSource {
    /// A whole ClusterPolicy object.
    ClusterPolicy,
    /// A patch of some of the ClusterPolicy's fields.
    ClusterPolicyPatch,
    /// The GPU Operator chart's values (the chart renders the ClusterPolicy from them).
    HelmValues,
}

/// GPU Operator settings as planned and before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorFact {
    pub source: OperatorSource,
    /// The release's namespace (Helm), where the operator's ConfigMaps live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The ClusterPolicy's `spec`, or the chart's values: the fields the operator reads
    /// (`devicePlugin.config`, `mig.strategy`, `migManager.config`, `devicePlugin.enabled`) in the
    /// same shape in both. `None` after: removed.
    pub settings: Option<serde_json::Value>,
    pub settings_before: Option<serde_json::Value>,
    /// Where `settings` is in the resource's configuration (`patch.spec`, `values[0]`).
    pub attribute: Path,
}

/// A node-by-node rollout: the nodes it takes in turn and how it takes them, in words
/// (`node by node, at most 1 unavailable, GPU pods waited for (up to 30m)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutFact {
    pub nodes: Vec<String>,
    pub how: String,
    /// Nodes an earlier apply left part-way (killed, or stopped at a failure), with the step
    /// each is at: they are cordoned by the rollout until the next apply finishes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unfinished: BTreeMap<String, String>,
    /// What each of its GPUs is to advertise once a node is done (`expect_per_gpu`), which
    /// drift holds a node to where the GPU model cannot predict it from the labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expect_per_gpu: BTreeMap<String, f64>,
}

/// Labels one resource sets on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeLabelsFact {
    pub node: String,
    pub labels: BTreeMap<String, String>,
    pub labels_before: BTreeMap<String, String>,
    pub attribute: Path,
}

/// A ceiling on the GPUs an autoscaler may bring, before and after the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingFact {
    /// `karpenter nodepool gpu`, `gke node auto-provisioning nvidia-tesla-t4`.
    pub scope: String,
    pub resource: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// Labels the nodes it makes carry, for the sharing config they will pick.
    pub node_labels: BTreeMap<String, String>,
}

/// The live cluster as the GPU components see it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterFact {
    /// The nodes with GPUs, or that could have them (GFD, DRA or instance-type facts).
    pub nodes: Vec<NodeFact>,
    /// The live ClusterPolicy's `spec`, if the operator is installed.
    pub policy: Option<serde_json::Value>,
    /// The operator's namespace (the ClusterPolicy's `status.namespace`).
    pub operator_namespace: Option<String>,
    /// Who installed the live ClusterPolicy: the Helm release (`namespace/name`) its
    /// `meta.helm.sh` annotations name, or None when it has none (installed otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_release: Option<String>,
    /// The live ConfigMaps of the operator's namespace that the device plugin or the MIG
    /// manager may read, by name.
    pub config_maps: BTreeMap<String, BTreeMap<String, String>>,
    /// The live GPUCluster's name, if GPU Operator runs the DRA stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_cluster: Option<String>,
    /// The live DeviceClasses, by name: their `spec`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub device_classes: BTreeMap<String, serde_json::Value>,
    /// Who installed the live DeviceClass `gpu.nvidia.com` (NVIDIA's DRA driver): the Helm
    /// release (`namespace/name`) its `meta.helm.sh` annotations name, or `""` when none do
    /// (a GPUCluster's operator, or kubectl); `None` when the class is not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dra_driver_release: Option<String>,
    /// The DaemonSets of NVIDIA's standalone device plugin chart (`nvidia-device-plugin`,
    /// label `app.kubernetes.io/name`), each as the Helm release (`namespace/name`) that made
    /// it, or `namespace/daemonset` when no release did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_plugin_releases: Vec<String>,
    /// What could not be read, and why (`DRA ResourceSlices (403 Forbidden)`): the model says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

/// One live node: its labels, what it advertises, and its devices as DRA publishes them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeFact {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `nvidia.com/*` extended resources in `status.allocatable`.
    pub allocatable: BTreeMap<String, f64>,
    /// Devices of NVIDIA's DRA driver (`gpu.nvidia.com`) in the node's ResourceSlices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dra_devices: Vec<DraDevice>,
    /// The shared counter sets of the node's DRA pool (partitionable devices, DynamicMIG):
    /// set name → counter → quantity as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dra_counters: BTreeMap<String, BTreeMap<String, String>>,
    /// The running pods that hold GPUs of the node (`namespace/name`): an `nvidia.com/*`
    /// request or a DRA claim. What a change that stops the node's GPU software disrupts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_pods: Vec<String>,
    /// The node's `Ready` condition is not True (`None`: not read).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_ready: bool,
}

/// A device a DRA driver publishes in a ResourceSlice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraDevice {
    pub name: String,
    /// The `type` attribute: `gpu`, `mig`.
    pub kind: String,
    /// The `productName` attribute.
    pub product: String,
    /// The `memory` capacity, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Every attribute as the slice names it (`productName`,
    /// `resource.kubernetes.io/pcieRoot`): what a selector sees.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, DraAttribute>,
    /// Every capacity as the slice names it, its quantity as written (`81920Mi`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, String>,
    /// What allocating the device takes from the pool's shared counters (a partition of a
    /// GPU): counter set → counter → quantity as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub consumes: BTreeMap<String, BTreeMap<String, String>>,
}

/// A device attribute, typed as `resource.k8s.io/v1`'s `DeviceAttribute` (one of four).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DraAttribute {
    Int(i64),
    Bool(bool),
    String(String),
    /// A semantic version, without a leading `v`.
    Version(String),
}
