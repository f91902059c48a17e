//! The untyped resource types (`kubernetes_manifest`, `kubernetes_labels`,
//! `kubernetes_annotations`, `kubernetes_patch`): server-side apply, refresh, deletion and
//! import of one object each. A typed resource, a `kubectl_manifest` and a
//! `kubernetes_node_taint` are translated into one of these and back, so that the rules of
//! identity (uid), ownership and deletion are kept here alone.

mod apply;
mod delete;
mod import;
mod object_id;
mod plan;
mod refresh;
mod server;
mod state;

pub(crate) use object_id::identity_of_manifest;
pub(crate) use server::CHANGED_SINCE_READ;

/// The GPU facts of a change another tool planned to one object of type `ty`, from its
/// values alone (`gpustack review`): the facts of the object as it will be, or, for a
/// deletion, what it takes away.
pub(crate) fn reviewed_facts(
    ty: ObjectType,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Vec<gpustack_protocol::GpuFact> {
    let Some(id) = after
        .or(before)
        .and_then(|v| object_id::ObjectId::of(ty, v))
    else {
        return Vec::new();
    };
    let prior = before.and_then(|b| state::desired(ty, b));
    // A deletion's facts are those of the object as it was, then taken away.
    let (desired, before, removed) = match after {
        Some(after) => (state::desired(ty, after), prior.as_ref(), false),
        None => (prior.clone(), prior.as_ref(), true),
    };
    let Some(desired) = desired else {
        return Vec::new();
    };
    let facts = crate::capacity::object_facts(
        ty,
        &id.api_version,
        &id.kind,
        &id.name,
        id.namespace.as_deref(),
        &desired,
        before,
    );
    if removed {
        facts
            .iter()
            .filter_map(gpustack_protocol::GpuFact::removed)
            .collect()
    } else {
        facts
    }
}

/// The plan of a type translated into a `kubernetes_patch` (a node's taints, a ConfigMap's
/// keys): its own planned state, the patch's diagnostics, and a replacement the patch plans
/// said in the type's own words. A patch's GPU facts are its translator's to give.
pub(crate) fn patch_plan(
    planned: Value,
    patch: PlanResourceChangeResponse,
    replaced_when: &str,
) -> PlanResourceChangeResponse {
    PlanResourceChangeResponse {
        planned_state: planned,
        requires_replace: if patch.requires_replace.is_empty() {
            Vec::new()
        } else {
            vec![replaced_when.to_owned()]
        },
        gpu_facts: Vec::new(),
        existing: None,
        diagnostics: patch.diagnostics,
        order: Default::default(),
    }
}

/// The refresh of a type translated into a `kubernetes_patch`: each state as the patch it
/// stands for (`to_patch`), read, and back in the type's own terms (`back`, from the state and
/// the patch's refreshed state). A patch's GPU facts are its translator's to give.
pub(crate) async fn patch_read(
    patches: &Objects,
    request: ReadResourcesRequest,
    to_patch: impl Fn(&Value) -> Value,
    back: impl Fn(Value, &Value) -> Value,
) -> ReadResourcesResponse {
    let typed = request.states;
    let inner = ReadResourcesRequest {
        type_name: ObjectType::Patch.type_name().into(),
        states: typed.iter().map(&to_patch).collect(),
        sensitive_paths: vec![Vec::new(); typed.len()],
        seeds: vec![],
    };
    let mut response = patches.read(inner).await;
    response.states = response
        .states
        .into_iter()
        .zip(typed)
        .map(|(state, typed)| state.map(|s| back(typed, &s)))
        .collect();
    response.gpu_facts.clear();
    response
}

use crate::connection::Connected;
use crate::types::ObjectType;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, PlanResourceChangeRequest,
    PlanResourceChangeResponse, ReadResourcesRequest, ReadResourcesResponse, Value,
};
use gpustack_provider_sdk::resource::Resource;
use std::sync::Arc;

/// One of the provider's resource types on a connected cluster.
pub(crate) struct Objects {
    pub(crate) connected: Arc<Connected>,
    pub(crate) ty: ObjectType,
}

#[async_trait::async_trait]
impl Resource for Objects {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        self.connected.read(self.ty, request).await
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        self.connected.plan(self.ty, request).await
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        match self.connected.apply(self.ty, request).await {
            Ok((new_state, diagnostics)) => ApplyResourceChangeResponse {
                new_state,
                diagnostics,
            },
            Err(diagnostics) => ApplyResourceChangeResponse {
                new_state: None,
                diagnostics,
            },
        }
    }

    async fn plan_delete(
        &self,
        request: gpustack_protocol::PlanDeleteRequest,
    ) -> gpustack_protocol::PlanDeleteResponse {
        self.connected.plan_delete(self.ty, request).await
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let response = self.connected.import(self.ty, id).await;
        response.state.ok_or(response.diagnostics)
    }
}
