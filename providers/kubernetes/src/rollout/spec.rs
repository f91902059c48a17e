//! What a `kubernetes_node_rollout` asks for, read from its state, and the per-node record of
//! how far it got, kept in an annotation on the node itself so that a run killed at any
//! point resumes at the step it recorded.

use gpustack_protocol::Value;
use gpustack_provider_sdk::check::attribute;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) use gpustack_cluster::drain::{CORDONED_BY, Drain};
/// The domain of each rollout's per-node record (`rollout.gpustack.dev/<name>`).
pub(crate) const RECORD_PREFIX: &str = "rollout.gpustack.dev/";
pub(crate) const MIG_CONFIG: &str = "nvidia.com/mig.config";
pub(crate) const MIG_STATE: &str = "nvidia.com/mig.config.state";
pub(crate) const DEPLOY_PREFIX: &str = "nvidia.com/gpu.deploy.";
pub(crate) const PAUSED: &str = "paused-for-mig-change";
pub(crate) const GPU_COUNT: &str = "nvidia.com/gpu.count";

/// A node's step, in order; `Failed` keeps the step it failed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Step {
    Pending,
    Cordoned,
    Draining,
    Reconfiguring,
    Validating,
    Done,
    Failed,
}

impl Step {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Cordoned => "cordoned",
            Self::Draining => "draining",
            Self::Reconfiguring => "reconfiguring",
            Self::Validating => "validating",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// What the node's annotation says about this rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) step: Step,
    /// The change this record is about ([`Spec::target`]).
    pub(crate) target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed_at: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    /// The pods a restart deleted, so that their replacements can be told apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) replaced: Vec<String>,
    /// The stack whose apply wrote it (its owner mark), and the rollout's arguments as that
    /// apply had them: an apply killed before its state was written leaves the rollout
    /// recorded here, so that the next plan adopts it with the progress the nodes show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<serde_json::Value>,
}

impl Record {
    pub(crate) fn read(annotations: Option<&BTreeMap<String, String>>, name: &str) -> Option<Self> {
        let text = annotations?.get(&format!("{RECORD_PREFIX}{name}"))?;
        serde_json::from_str(text).ok()
    }

    pub(crate) fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// `nvidia.com/mig.config.state` reaches `success`.
    Mig,
    /// The restarted pods are replaced and ready.
    Restart,
    /// Nothing beyond the node's allocatable.
    Allocatable,
    /// NVIDIA's DRA driver publishes the node's GPUs (`nvidia.com/gpu.count` of them) in its
    /// ResourceSlices, and the device plugin advertises none: a move to DRA.
    Dra,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Restart {
    pub(crate) namespace: String,
    pub(crate) label_selector: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) nodes: Vec<String>,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) restart: Option<Restart>,
    pub(crate) triggers: BTreeMap<String, String>,
    pub(crate) settle: Settle,
    pub(crate) expect_per_gpu: BTreeMap<String, f64>,
    pub(crate) max_unavailable: String,
    pub(crate) drain: Drain,
    pub(crate) drain_timeout: Duration,
    pub(crate) settle_timeout: Duration,
}

pub(crate) use gpustack_cluster::drain::DEFAULT_DRAIN_TIMEOUT;
pub(crate) const DEFAULT_SETTLE_TIMEOUT: &str = "15m";

fn strings(state: &Value, name: &str) -> BTreeMap<String, String> {
    attribute(state, name)
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn text<'a>(state: &'a Value, name: &str) -> Option<&'a str> {
    attribute(state, name).and_then(Value::as_str)
}

pub(crate) use gpustack_provider_sdk::pool::budget;

impl Spec {
    pub(crate) fn of(state: &Value) -> Result<Self, String> {
        let restart = attribute(state, "restart")
            .filter(|r| !r.is_null())
            .map(|r| Restart {
                namespace: text(r, "namespace").unwrap_or("default").to_owned(),
                label_selector: text(r, "label_selector").unwrap_or_default().to_owned(),
            });
        let settle = match text(state, "settle") {
            Some("mig") => Settle::Mig,
            Some("restart") => Settle::Restart,
            Some("allocatable") | None => Settle::Allocatable,
            Some("dra") => Settle::Dra,
            Some(other) => {
                return Err(format!(
                    "settle = \"{other}\" is not one of mig, restart, allocatable, dra"
                ));
            }
        };
        let drain = Drain::parse(text(state, "drain")).map_err(|e| e.to_string())?;
        let duration = |name: &str, default: &str| {
            gpustack_cluster::duration(Some(text(state, name).unwrap_or(default)), Duration::ZERO)
                .map_err(|e| format!("{name}: {}", gpustack_protocol::error_chain(&e)))
        };
        Ok(Self {
            name: text(state, "name").unwrap_or_default().to_owned(),
            nodes: attribute(state, "nodes")
                .and_then(Value::as_list)
                .map(|l| {
                    l.iter()
                        .filter_map(|v| Some(v.as_str()?.to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
            labels: strings(state, "labels"),
            restart,
            triggers: strings(state, "triggers"),
            settle,
            expect_per_gpu: attribute(state, "expect_per_gpu")
                .and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_number()?)))
                        .collect()
                })
                .unwrap_or_default(),
            max_unavailable: text(state, "max_unavailable").unwrap_or("1").to_owned(),
            drain,
            drain_timeout: duration("drain_timeout", DEFAULT_DRAIN_TIMEOUT)?,
            settle_timeout: duration("settle_timeout", DEFAULT_SETTLE_TIMEOUT)?,
        })
    }

    /// What a node must be brought to: its digest names the change in each node's record,
    /// so that a record of an earlier change is never taken for this one.
    pub(crate) fn target(&self) -> String {
        let what = serde_json::json!({
            "labels": self.labels,
            "restart": self.restart.as_ref().map(|r| (&r.namespace, &r.label_selector)),
            "triggers": self.triggers,
        });
        let digest = Sha256::digest(what.to_string().as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn record_key(&self) -> String {
        format!("{RECORD_PREFIX}{}", self.name)
    }

    /// Whether the node's labels are the ones this rollout sets.
    pub(crate) fn labels_match(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.labels
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    }

    /// The rollout in the plan's words.
    pub(crate) fn describe(&self) -> String {
        let allowed = budget(&self.max_unavailable, self.nodes.len())
            .map_or_else(|_| self.max_unavailable.clone(), |n| n.to_string());
        let drain = match self.drain {
            Drain::Wait => format!(
                "waits up to {} for its GPU pods to finish",
                humantime::format_duration(self.drain_timeout)
            ),
            Drain::Evict => format!(
                "evicts its GPU pods (PodDisruptionBudgets respected, up to {})",
                humantime::format_duration(self.drain_timeout)
            ),
            Drain::Fail => "stops if GPU pods run there".to_owned(),
        };
        let settle = match self.settle {
            Settle::Mig => "waits for MIG Manager's success",
            Settle::Restart => "restarts the pods and waits for them",
            Settle::Allocatable => "waits for the device plugin",
            Settle::Dra => {
                "waits for NVIDIA's DRA driver to publish its GPUs and the device plugin to advertise none"
            }
        };
        // Without expect_per_gpu what the node advertises is not checked, and the plan says so.
        let check = if self.expect_per_gpu.is_empty() {
            "checks it is Ready with no operand left paused (not what it advertises: no expect_per_gpu)"
        } else {
            "checks what it advertises"
        };
        format!(
            "node by node by {name} (at most {allowed} of {total} at once): cordons the node, {drain}, {settle}, {check}, uncordons",
            name = self.name,
            total = self.nodes.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_a_count_or_a_percentage_rounded_up() {
        assert_eq!(budget("1", 3), Ok(1));
        assert_eq!(budget("4", 20), Ok(4));
        assert_eq!(budget("25%", 20), Ok(5));
        assert_eq!(budget("10%", 3), Ok(1));
        assert_eq!(budget("50%", 3), Ok(2));
        assert_eq!(budget("9", 3), Ok(3));
        let error = |text: &str| budget(text, 3).unwrap_err().to_string();
        assert!(error("0").contains("never start"));
        assert!(error("0%").contains("never start"));
        assert!(error("120%").contains("more than 100%"));
        assert!(error("one").contains("neither a count"));
    }

    #[test]
    fn the_plan_says_when_what_a_node_advertises_is_not_checked() {
        let mut spec = Spec::of(&Value::from_json(&serde_json::json!({
            "name": "mig-geometry",
            "nodes": ["a", "b"],
            "labels": {MIG_CONFIG: "all-1g.10gb"},
            "settle": "mig",
        })))
        .unwrap();
        assert!(
            spec.describe()
                .contains("not what it advertises: no expect_per_gpu")
        );
        spec.expect_per_gpu
            .insert("nvidia.com/mig-1g.10gb".into(), 7.0);
        assert!(
            spec.describe()
                .contains(", checks what it advertises, uncordons")
        );
        assert!(spec.describe().contains("at most 1 of 2 at once"));
    }

    #[test]
    fn a_record_survives_its_annotation() {
        let record = Record {
            step: Step::Failed,
            target: "ab".into(),
            failed_at: Some(Step::Validating),
            message: Some("wedged".into()),
            replaced: vec![],
            owner: Some("stack".into()),
            arguments: Some(serde_json::json!({"name": "mig"})),
        };
        let annotations: BTreeMap<String, String> =
            [(format!("{RECORD_PREFIX}mig"), record.text())].into();
        assert_eq!(Record::read(Some(&annotations), "mig"), Some(record));
        assert_eq!(Record::read(Some(&annotations), "other"), None);
    }
}
