//! What every provider crate shares: configuration checks (`check`), the GPUs of the usual
//! cloud machine sizes (`catalog`), JSON projection of API objects (`objects`), the taint
//! shape the clouds share, and the flow of a cloud object's change (`apply_change`).
//!
//! **Invariant:** this crate depends on no cloud or Kubernetes SDK: a provider that needs none
//! compiles none.

/// The built-in GPU tables, which live with the GPU model.
pub use gpustack_catalog as catalog;
pub mod check;
pub mod family;
pub mod normalize;
pub mod objects;
pub mod pool;
pub mod resource;
pub mod terraform_pool;

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, ObjectAttr, Type, Value,
};

/// A recorded object that is no longer there, in the words of its kind: what an update or a
/// delete of it answers (see [`NotThere::answer`]).
pub struct NotThere<'a> {
    /// `AKS node pool rg/cluster/name`, `Helm release ns/name`.
    pub what: String,
    /// `pool`, `release`.
    pub noun: &'a str,
    /// `deleted`, `uninstalled`.
    pub removed: &'a str,
    /// `deleted and made again by someone else`.
    pub replaced: &'a str,
    /// How the state knows it: `mark gs-…`, `first deployed …`.
    pub recorded: String,
}

impl NotThere<'_> {
    /// An update (`updating`) fails: it would make, or change, another object. A delete is
    /// done: of an object gone, silently; of another's object that holds the name now
    /// (`another`), with a warning, leaving it. The state keeps the object while an update
    /// fails, and drops it once a delete is done.
    pub fn answer(
        &self,
        prior: &Value,
        updating: bool,
        another: bool,
    ) -> ApplyResourceChangeResponse {
        let diagnostics = match (updating, another) {
            (false, false) => vec![],
            (false, true) => vec![Diagnostic::warning(
                format!("{} was not {}", self.what, self.removed),
                format!(
                    "The {} this stack recorded ({}) is gone; the one of that name now is another, not made by this stack, and is left as it is.",
                    self.noun, self.recorded
                ),
            )],
            (true, _) => vec![Diagnostic::error(
                format!("Cannot update {}", self.what),
                format!(
                    "The {noun} this stack recorded was {} since it was read, and gpustack changes only the {noun} it read. Plan again.",
                    if another { self.replaced } else { self.removed },
                    noun = self.noun,
                ),
            )],
        };
        ApplyResourceChangeResponse {
            new_state: updating.then(|| prior.clone()),
            diagnostics,
        }
    }
}

/// Carries out one change of a cloud object: create (which on failure may still report the
/// object it made, so that the state keeps it), update or delete (on failure the prior
/// object stays in the state).
pub async fn apply_change(
    request: &ApplyResourceChangeRequest,
    create: impl AsyncFnOnce(&Value) -> Result<Value, (Option<Value>, Diagnostic)>,
    update: impl AsyncFnOnce(&Value, &Value) -> Result<Value, Diagnostic>,
    delete: impl AsyncFnOnce(&Value) -> Result<(), Diagnostic>,
) -> ApplyResourceChangeResponse {
    let kept = |d| (request.prior_state.clone(), d);
    let result = match (&request.prior_state, &request.planned_state) {
        (None, Some(planned)) => create(planned).await.map(Some),
        (Some(prior), Some(planned)) => update(prior, planned).await.map(Some).map_err(kept),
        (Some(prior), None) => delete(prior).await.map(|()| None).map_err(kept),
        (None, None) => Ok(None),
    };
    ApplyResourceChangeResponse::from_result(result)
}

/// A taint as the clouds take it: `{key, value, effect}` with the cloud's effect names.
pub fn taint_type() -> Type {
    Type::object([
        ("key", ObjectAttr::required(Type::String)),
        ("value", ObjectAttr::optional(Type::String)),
        ("effect", ObjectAttr::required(Type::String)),
    ])
}
