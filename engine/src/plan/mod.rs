//! Plans: what will change, why, and everything apply needs to carry it out exactly.
//!
//! A saved plan holds everything apply evaluates — the configuration snapshot, the root
//! variable values, the files the evaluation read and the data sources' results — and the
//! lineage and serial of the state it read, so that `apply PLANFILE` evaluates exactly what
//! was reviewed and refuses to run over a state that moved on.
//!
//! **Invariant:** a plan holds no sensitive value: each is a salted digest (see
//! [`crate::sensitive`]), and what apply needs of it (a sensitive variable, a sensitive data
//! source's answer, a file any part of which went into a secret — see
//! [`crate::evaluate::Flows`]) is supplied or read again at apply and checked against that
//! digest, every file before anything is changed.

pub mod generate;
pub(crate) mod gpu;
mod ownership;
mod planner;
mod run;

pub use crate::evaluate::FileRecord;
pub use crate::sensitive::{mark_schema, sensitive_attributes};
pub(crate) use ownership::apply_moves;
pub(crate) use planner::{
    Ownership, Secrets, make_plan, output_value, resource_dependencies, state_value,
};
pub use planner::{PlanMode, PlanOptions};
pub use run::{needs_digest_key, plan, with_digest_key};

use gpustack_protocol::Value;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: &str = "1.0";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    NoOp,
    Create,
    Read,
    Update,
    Delete,
    /// Dropped from the state, the object left as it is (a `removed` block).
    Forget,
}

/// One change to one resource instance. `before`/`after` are JSON with unknown values left
/// out (null) and marked in `after_unknown`, sensitive ones marked in `*_sensitive`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: String,
    /// The resource's address without instance key: `module.a.local_file.b`.
    pub config_address: String,
    pub mode: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub provider: String,
    pub actions: Vec<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_reason: Option<String>,
    /// Shared with `after` where the object does not change (most of a large no-change
    /// plan), so that it is held once.
    pub before: std::sync::Arc<serde_json::Value>,
    pub after: std::sync::Arc<serde_json::Value>,
    pub after_unknown: serde_json::Value,
    #[serde(default)]
    pub before_sensitive: serde_json::Value,
    #[serde(default)]
    pub after_sensitive: serde_json::Value,
    /// Multi-line sensitive strings that may be shown with their secret lines masked, as a
    /// tree in the shape of `*_sensitive` holding the masked text.
    #[serde(default, skip_serializing_if = "is_false")]
    pub before_masked: serde_json::Value,
    #[serde(default, skip_serializing_if = "is_false")]
    pub after_masked: serde_json::Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replace_paths: Vec<String>,
    /// Config addresses of the resources this one depends on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// The object is taken into the state by this change (an `import` block, or an object
    /// this stack created that a crashed run did not record), as Terraform's `importing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importing: Option<Importing>,
    /// The address the object had in the state before a `moved` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_address: Option<String>,
    /// What deleting the object takes with it (a namespace's objects), as its provider
    /// found it: shown with the plan, and what apply holds the deletion to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collateral: Option<gpustack_protocol::Collateral>,
    /// The commands apply runs on this machine for the change (provisioners), in order:
    /// `local-exec: COMMAND`, a secret masked, what only apply will know written as the
    /// configuration writes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
}

/// How an object is imported: the provider's id of it, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Importing {
    pub id: String,
    /// True when this stack created the object (its mark is on it) and a run that died
    /// before recording it left it behind: it is adopted, not imported by request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
}

/// A state address renamed by a `moved` block, applied to the state before anything else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub from: String,
    pub to: String,
}

impl ResourceChange {
    pub fn is_no_op(&self) -> bool {
        self.actions == [Action::NoOp]
    }

    pub fn is_replace(&self) -> bool {
        self.actions.len() == 2
    }

    /// The object before the change, its sensitive parts marked digests.
    pub fn before_value(&self) -> Option<Value> {
        (!self.before.is_null()).then(|| {
            crate::sensitive::decode(
                &self.before,
                &serde_json::Value::Bool(false),
                &self.before_sensitive,
            )
        })
    }

    /// The object after the change, unknowns as unknown and sensitive parts marked digests.
    pub fn after_value(&self) -> Option<Value> {
        (!self.after.is_null() || self.after_unknown == serde_json::Value::Bool(true)).then(|| {
            crate::sensitive::decode(&self.after, &self.after_unknown, &self.after_sensitive)
        })
    }
}

fn is_false(v: &serde_json::Value) -> bool {
    matches!(v, serde_json::Value::Bool(false) | serde_json::Value::Null)
}

/// An output's planned value; a sensitive one is only its digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputChange {
    pub actions: Vec<Action>,
    pub after: serde_json::Value,
    pub after_unknown: bool,
    pub sensitive: bool,
}

/// Everything a plan was made from, so that apply evaluates the same thing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// The stack directory as given at plan time.
    pub stack_dir: String,
    /// Every file loaded, by path relative to `stack_dir`.
    pub files: std::collections::BTreeMap<String, String>,
    /// Root variable values, as evaluated; sensitive ones are in `sensitive_variables`.
    pub variables: IndexMap<String, serde_json::Value>,
    /// The digests of the sensitive root variables' values: apply is given them again.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub sensitive_variables: IndexMap<String, String>,
    /// The ephemeral root variables: the plan holds nothing of their values, not even a
    /// digest; apply is given them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_variables: Vec<String>,
    /// Every file `file()`, `templatefile()` and `fileexists()` read, by the path they were
    /// given (relative to the working directory where it was under it), and the values of
    /// impure calls; those that went into a secret only as digests.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub inputs: std::collections::BTreeMap<String, FileRecord>,
    /// What each data source instance answered at plan time, by address.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub data: IndexMap<String, DataRecord>,
}

/// A data source's answer at plan time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataRecord {
    pub value: serde_json::Value,
    /// Its sensitive parts, which are digests in `value`: apply reads the data source again
    /// and checks the answer against them.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sensitive: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format_version: String,
    pub gpustack_version: String,
    pub mode: PlanMode,
    /// The state this plan was made from: `None` when there was none.
    pub lineage: Option<String>,
    pub serial: u64,
    /// When the plan was made (RFC 3339), as Terraform's plan records it: `timestamp()` and
    /// what providers take as "now" (`time_static`) in the plan and when it is applied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timestamp: String,
    /// The workspace whose state it was made from: apply refuses it in another, as
    /// Terraform does.
    #[serde(
        default = "default_workspace",
        skip_serializing_if = "is_default_workspace"
    )]
    pub workspace: String,
    /// SHA-256 of the snapshot: what apply checks before it evaluates anything.
    pub config_hash: String,
    /// The digest key of the state this plan creates, when there is no state (or it has no
    /// key yet): apply gives it to the new state, so that the plan's digests stay valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_key: Option<String>,
    /// The lineage of the state this plan creates, when there is none yet: objects are
    /// created with this stack's mark, which derives from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_lineage: Option<String>,
    /// `moved` blocks as they apply to the state's addresses, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<Move>,
    /// Configuration written for imports into undeclared resources (`--generate-config-out`);
    /// never part of a saved plan.
    #[serde(skip)]
    pub generated: Vec<generate::Generated>,
    pub resource_changes: Vec<ResourceChange>,
    /// Changes found by refresh: objects that differ from what the state recorded.
    pub resource_drift: Vec<ResourceChange>,
    pub output_changes: IndexMap<String, OutputChange>,
    /// What the changes do to the GPU resources nodes advertise (DESIGN §1).
    #[serde(default)]
    pub gpu_capacity: Vec<CapacityLine>,
    /// GPU nodes advertising less than the GPU model expects from the live configuration
    /// (refresh-only plans: `gpustack drift`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_drift: Vec<gpustack_gpu::NodeDrift>,
    /// The planned changes that stop the GPU software of live nodes, with the GPU pods
    /// running there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_disruption: Vec<gpustack_gpu::Disruption>,
    pub snapshot: Snapshot,
}

/// One line of the GPU capacity section, with the change that causes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityLine {
    pub address: String,
    #[serde(flatten)]
    pub change: gpustack_protocol::CapacityChange,
}

impl CapacityLine {
    /// See [`gpustack_protocol::CapacityChange::text`].
    pub fn text(&self) -> String {
        self.change.text()
    }
}

/// A resource's state or planned state with its write-only attributes null: what a plan and
/// the state hold of them (Terraform 1.11's write-only arguments).
pub(crate) fn without_write_only(
    value: gpustack_protocol::Value,
    write_only: &[String],
) -> gpustack_protocol::Value {
    if write_only.is_empty() {
        return value;
    }
    match value {
        gpustack_protocol::Value::Object(mut map) => {
            for name in write_only {
                if let Some(v) = map.get_mut(name) {
                    *v = gpustack_protocol::Value::Null;
                }
            }
            gpustack_protocol::Value::Object(map)
        }
        other => other,
    }
}

fn default_workspace() -> String {
    gpustack_state::DEFAULT_WORKSPACE.to_owned()
}

fn is_default_workspace(workspace: &str) -> bool {
    workspace == gpustack_state::DEFAULT_WORKSPACE
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.resource_changes
            .iter()
            .any(|c| !c.is_no_op() || c.importing.is_some())
            || !self.moved.is_empty()
            || (self.mode == PlanMode::RefreshOnly && !self.resource_drift.is_empty())
            || self
                .output_changes
                .values()
                .any(|o| o.actions != [Action::NoOp])
    }

    /// Objects the refresh found gone that no change of this plan touches (a destroy of what
    /// is already gone, a resource left out of the configuration whose object went too): an
    /// apply of the plan only takes them out of the state.
    pub fn vanished(&self) -> impl Iterator<Item = &str> {
        self.resource_drift
            .iter()
            .filter(|d| d.after.is_null() && d.after_unknown != serde_json::Value::Bool(true))
            .map(|d| d.address.as_str())
            .filter(|address| {
                !self
                    .resource_changes
                    .iter()
                    .any(|c| c.address == *address && !c.is_no_op())
            })
    }

    /// (add, change, destroy) as the summary line counts them; a replace counts as one add
    /// and one destroy.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for change in &self.resource_changes {
            for action in &change.actions {
                match action {
                    Action::Create => counts.0 += 1,
                    Action::Update => counts.1 += 1,
                    Action::Delete => counts.2 += 1,
                    Action::NoOp | Action::Read | Action::Forget => {}
                }
            }
        }
        counts
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodePlanError> {
        let plan: Plan = serde_json::from_slice(bytes)?;
        if plan.format_version != FORMAT_VERSION {
            return Err(DecodePlanError::UnsupportedFormat {
                found: plan.format_version,
            });
        }
        Ok(plan)
    }
}

/// Why a saved plan cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodePlanError {
    #[error("not a gpustack plan file")]
    Malformed(#[from] serde_json::Error),
    #[error("plan format {found} is not supported by this gpustack (it reads {FORMAT_VERSION})")]
    UnsupportedFormat { found: String },
}

/// A stack's mark on the objects it creates, from its state's lineage: short and plain enough
/// for every place a mark goes (a GKE label value, an Azure tag, an annotation).
pub fn owner_mark(lineage: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(lineage.as_bytes());
    let hex: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    format!("gs-{hex}")
}

pub fn config_hash(snapshot: &Snapshot) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (path, text) in &snapshot.files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    hasher.update(serde_json::to_vec(&snapshot.variables).unwrap_or_default());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(&snapshot.sensitive_variables).unwrap_or_default());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(&snapshot.inputs).unwrap_or_default());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(&snapshot.data).unwrap_or_default());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
