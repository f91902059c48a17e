//! What every provider crate shares: configuration checks (`check`), the GPUs of the usual
//! cloud machine sizes (`catalog`), JSON projection of API objects (`objects`), the taint
//! shape the clouds share, and the flow of a cloud object's change (`apply_change`).
//!
//! **Invariant:** this crate depends on no cloud or Kubernetes SDK: a provider that needs none
//! compiles none.

/// The built-in GPU tables, which live with the GPU model.
pub use gpustack_gpu::catalog;
pub mod check;
pub mod family;
pub mod normalize;
pub mod objects;
pub mod pool;
pub mod resource;

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, ObjectAttr, Type, Value,
};

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
