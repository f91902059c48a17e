//! The GPU model of gpustack (DESIGN §1): what providers report about GPUs — cloud pools,
//! ConfigMaps, ClusterPolicy fields, the operator chart's values, node labels, the live
//! cluster's GPU nodes and DRA devices — combined into one model per node and pool, on which
//! the checks of GPU-FACTS run, the plan's capacity section is computed and capacity drift is
//! found. Pure: no I/O; the engine asks, the providers feed it through facts.
//!
//! **Invariant:** every finding names the resource instance and the path in its configuration
//! that causes it; whatever comes from the built-in table says so in its line.

pub mod capacity;
pub mod catalog;
mod checks;
pub mod mig;
mod model;
pub mod sharing;

pub use model::{Model, Sourced};

use gpustack_protocol::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

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
}

impl NodeDrift {
    pub fn text(&self) -> String {
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

impl Model {
    /// The checks of GPU-FACTS on this model.
    pub fn findings(&self) -> Vec<Finding> {
        checks::run(self)
    }

    /// The plan's capacity lines.
    pub fn capacity(&self) -> Vec<capacity::Line> {
        capacity::lines(self)
    }

    /// Nodes whose live allocatable fell below what the live configuration gives them.
    pub fn drift(&self) -> Vec<NodeDrift> {
        let mut out = Vec::new();
        for node in &self.nodes {
            let Some(physical) = &node.physical else {
                continue;
            };
            let Some(expected) = self.before.predict(&node.live.labels, physical) else {
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
                    out.push(NodeDrift {
                        node: node.live.name.clone(),
                        resource: resource.clone(),
                        allocatable: have,
                        expected: *want,
                        detail: detail.join("; "),
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
