//! The GPU model of gpustack (DESIGN §1): what providers report about GPUs — cloud pools,
//! ConfigMaps, ClusterPolicy fields, the operator chart's values, node labels, the live
//! cluster's GPU nodes and DRA devices — combined into one model per node and pool, on which
//! the checks of GPU-FACTS run, the plan's capacity section is computed and capacity drift is
//! found. Pure: no I/O; the engine asks, the providers feed it through facts.
//!
//! **Invariant:** every finding names the resource instance and the path in its configuration
//! that causes it; whatever comes from the built-in table says so in its line.

pub mod capacity;
/// The built-in tables, in a crate of their own for the providers that read them alone.
pub use gpustack_catalog as catalog;
mod checks;
pub mod dra;
pub mod mig;
mod model;
pub mod sharing;

pub use model::{Model, Sourced};

use gpustack_protocol::Path;

pub use gpustack_protocol::Severity;

/// The summary of the warning that no one read the cluster's nodes for the model.
pub const NODES_NOT_READ: &str = "GPU nodes not read";

/// A problem of the GPU setup, at the resource and configuration path that causes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub address: String,
    pub path: Path,
    pub severity: Severity,
    pub summary: String,
    pub detail: String,
}

/// A node advertising less than the model predicts from what is live.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeDrift {
    pub node: String,
    pub resource: String,
    pub allocatable: f64,
    pub expected: f64,
    /// Why the model expects it (`time-slicing ×10; 1× T4 from GFD labels`), and any state
    /// that explains it (`nvidia.com/mig.config.state=failed`).
    pub detail: String,
    /// For a node a rollout left part-way (cordoned until an apply finishes it): the
    /// rollout's address and the step the node is at; `resource` is then what it is to
    /// advertise, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<UnfinishedStep>,
}

/// Where a rollout left a node.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UnfinishedStep {
    pub rollout: String,
    pub step: String,
}

impl NodeDrift {
    pub fn text(&self) -> String {
        if let Some(UnfinishedStep { rollout, step }) = &self.unfinished {
            return format!(
                "node {} was left at step {step} by {rollout} and stays cordoned until an apply finishes it ({})",
                self.node, self.detail
            );
        }
        format!(
            "node {} advertises {} {}, the GPU model expects {} ({})",
            self.node,
            self.resource,
            gpustack_protocol::format_number(self.allocatable),
            gpustack_protocol::format_number(self.expected),
            self.detail
        )
    }
}

/// A planned change that stops the GPU software of a live node, and the GPU pods running
/// there: what the plan's disruption section lists before anyone approves it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Disruption {
    /// The resource instance that causes it.
    pub address: String,
    pub node: String,
    /// `reconfigures MIG all-disabled → all-1g.10gb`, `restarts the device plugin`.
    pub change: String,
    /// Why it disrupts: which GPU operands stop, whether the node may reboot.
    pub effect: String,
    /// The running pods holding the node's GPUs (`namespace/name`).
    pub pods: Vec<String>,
    /// Whether `pods` was read: false where the cluster was not, so that none listed says
    /// nothing.
    #[serde(default = "known", skip_serializing_if = "is_known")]
    pub pods_known: bool,
    /// How the change reaches the nodes.
    pub rollout: String,
}

fn known() -> bool {
    true
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_known(known: &bool) -> bool {
    *known
}

impl Disruption {
    pub fn text(&self) -> String {
        let pods = if !self.pods_known {
            "GPU pods not known".to_owned()
        } else if self.pods.is_empty() {
            "no GPU pods running".to_owned()
        } else {
            format!("GPU pods running: {}", self.pods.join(", "))
        };
        format!(
            "node {}: {} ({}); {}; rollout: {}",
            self.node, self.change, self.effect, pods, self.rollout
        )
    }
}

impl Model {
    /// The plan's disruption lines: per live node, the planned change that stops its GPU
    /// operands.
    pub fn disruptions(&self) -> Vec<Disruption> {
        capacity::disruptions(self)
    }

    /// The DRA checks alone, with how much work they did: for the benchmark.
    pub fn dra_findings(&self) -> (Vec<Finding>, dra::Stats) {
        let mut findings = Vec::new();
        let stats = dra::findings(self, &mut findings, true);
        (findings, stats)
    }

    /// The DRA checks evaluating every selector on every device, without the memo of what a
    /// selector reads: the benchmark's peer.
    pub fn dra_findings_without_memo(&self) -> (Vec<Finding>, dra::Stats) {
        let mut findings = Vec::new();
        let stats = dra::findings(self, &mut findings, false);
        (findings, stats)
    }

    /// The checks of GPU-FACTS on this model.
    pub fn findings(&self) -> Vec<Finding> {
        checks::run(self)
    }

    /// The plan's capacity lines.
    pub fn capacity(&self) -> Vec<capacity::Line> {
        capacity::lines(self)
    }

    /// Nodes whose live allocatable fell below what the live configuration gives them, or
    /// below what a rollout done with them promised (`expect_per_gpu`), and nodes a rollout
    /// left part-way.
    pub fn drift(&self) -> Vec<NodeDrift> {
        let mut out = Vec::new();
        for (name, (rollout, step)) in &self.unfinished {
            let live = self.nodes.iter().find(|n| &n.live.name == name);
            let advertised: Vec<String> = live
                .map(|n| {
                    n.live
                        .allocatable
                        .iter()
                        .filter(|(r, _)| r.starts_with("nvidia.com/"))
                        .map(|(r, v)| format!("{r} {}", gpustack_protocol::format_number(*v)))
                        .collect()
                })
                .unwrap_or_default();
            let mut detail = vec![self.rollouts.get(name).cloned().unwrap_or_default()];
            detail.push(if advertised.is_empty() {
                "it advertises no GPU".to_owned()
            } else {
                format!("it advertises {}", advertised.join(", "))
            });
            if let Some(state) = live.and_then(|n| n.live.labels.get(model::MIG_STATE_LABEL)) {
                detail.push(format!("{}={state}", model::MIG_STATE_LABEL));
            }
            detail.retain(|d| !d.is_empty());
            out.push(NodeDrift {
                node: name.clone(),
                resource: String::new(),
                allocatable: 0.0,
                expected: 0.0,
                detail: detail.join("; "),
                unfinished: Some(UnfinishedStep {
                    rollout: rollout.clone(),
                    step: step.clone(),
                }),
            });
        }
        for node in &self.nodes {
            out.extend(dra_drift(node));
            let Some(physical) = &node.physical else {
                continue;
            };
            let Some(expected) = self.before.predict(&node.live.labels, physical) else {
                if !self.unfinished.contains_key(&node.live.name) {
                    out.extend(self.short_of_the_rollout(node, physical));
                }
                continue;
            };
            for (resource, want) in &expected.resources {
                let have = node.live.allocatable.get(resource).copied().unwrap_or(0.0);
                if have < *want {
                    let mut detail = expected.how.clone();
                    detail.push(format!(
                        "{}× {} from {}",
                        physical.count, physical.product, physical.source
                    ));
                    if let Some(state) = node.live.labels.get(model::MIG_STATE_LABEL) {
                        detail.push(format!("{}={state}", model::MIG_STATE_LABEL));
                    }
                    if let Some(cause) = mig_wedge(&node.live) {
                        detail.push(cause);
                    }
                    out.push(NodeDrift {
                        node: node.live.name.clone(),
                        resource: resource.clone(),
                        allocatable: have,
                        expected: *want,
                        detail: detail.join("; "),
                        unfinished: None,
                    });
                }
            }
        }
        out
    }
}

impl Model {
    /// A node a rollout is done with that advertises less than its `expect_per_gpu` promised,
    /// where the labels give the model no prediction of their own (a custom geometry).
    fn short_of_the_rollout(
        &self,
        node: &model::Node,
        physical: &model::Physical,
    ) -> Vec<NodeDrift> {
        let Some((rollout, per_gpu)) = self.rollout_expectations.get(&node.live.name) else {
            return Vec::new();
        };
        per_gpu
            .iter()
            .filter_map(|(resource, each)| {
                let want = each * f64::from(physical.count);
                let have = node.live.allocatable.get(resource).copied().unwrap_or(0.0);
                (have < want).then(|| NodeDrift {
                    node: node.live.name.clone(),
                    resource: resource.clone(),
                    allocatable: have,
                    expected: want,
                    detail: format!(
                        "{} per GPU as expect_per_gpu of {rollout} says; {}× {} from {}",
                        gpustack_protocol::format_number(*each),
                        physical.count,
                        physical.product,
                        physical.source
                    ),
                    unfinished: None,
                })
            })
            .collect()
    }
}

/// The signs that MIG Manager wedged on a node (GPU-FACTS "MIG"; gpu-operator#2833,
/// mig-parted#485), as the cause of the node's missing capacity.
fn mig_wedge(node: &gpustack_protocol::NodeFact) -> Option<String> {
    const PAUSED: &str = "paused-for-mig-change";
    let state = node.labels.get(model::MIG_STATE_LABEL).map(String::as_str);
    let paused: Vec<&str> = node
        .labels
        .iter()
        .filter(|(k, v)| k.starts_with("nvidia.com/gpu.deploy.") && v.as_str() == PAUSED)
        .map(|(k, _)| k.as_str())
        .collect();
    if !paused.is_empty() && state != Some("pending") && state != Some("rebooting") {
        return Some(format!(
            "wedged: MIG Manager left {} at {PAUSED} after state {}, so those GPU operands stay stopped (gpu-operator#2833); set the labels back to true once the GPUs hold the geometry",
            paused.join(", "),
            state.unwrap_or("unset")
        ));
    }
    if node.not_ready && state.is_some() {
        return Some(format!(
            "the node is NotReady with {}={}: a kubelet restart during the MIG reconfiguration that did not come back (gpu-operator#2415); restart the kubelet or reboot the node",
            model::MIG_STATE_LABEL,
            state.unwrap_or("unset")
        ));
    }
    let nothing = node.allocatable.values().all(|v| *v == 0.0);
    match state {
        Some("success") if nothing => Some(
            "wedged: MIG Manager reported success but the device plugin advertises nothing (gpu-operator#2833); restart the device plugin's pod on the node".to_owned(),
        ),
        Some("pending") if nothing => Some(format!(
            "MIG reconfiguration pending with nothing advertised{}: wedged if it stays so (gpu-operator#2833, mig-parted#485)",
            if paused.is_empty() {
                String::new()
            } else {
                format!(", {} paused", paused.join(", "))
            }
        )),
        _ => None,
    }
}

/// What NVIDIA's DRA driver publishes for a node: without MIG, one `gpu` device per GPU. A
/// node whose ResourceSlices list fewer full GPUs than its GFD labels (or its instance type)
/// say it has lost devices, as a device plugin's node loses allocatable.
fn dra_drift(node: &model::Node) -> Option<NodeDrift> {
    let devices = &node.live.dra_devices;
    if devices.is_empty() || devices.iter().any(|d| d.kind == "mig") {
        return None;
    }
    let (expected, from) = match &node.physical {
        Some(p) if p.source != model::DRA_SOURCE => (
            p.count,
            format!("{}× {} from {}", p.count, p.product, p.source),
        ),
        _ => {
            let instance_type = node.live.labels.get(model::INSTANCE_TYPE_LABEL)?;
            let gpus = catalog::gpus(instance_type)?;
            (
                gpus.count,
                format!(
                    "{}× {} from instance type {instance_type}, {}",
                    gpus.count,
                    gpus.model,
                    catalog::BUILT_IN
                ),
            )
        }
    };
    let published = devices.iter().filter(|d| d.kind == "gpu").count();
    let published = u32::try_from(published).unwrap_or(u32::MAX);
    (published < expected).then(|| NodeDrift {
        node: node.live.name.clone(),
        resource: format!("{} devices (DRA)", gpustack_protocol::nvidia::DRA_DRIVER),
        allocatable: f64::from(published),
        expected: f64::from(expected),
        detail: format!("full GPUs in the node's ResourceSlices; {from}"),
        unfinished: None,
    })
}

#[cfg(test)]
mod tests;
