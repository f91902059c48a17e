//! Applying a planned state: one server-side apply of the object, and the waits it asks for.

use super::object_id::ObjectId;
use super::server::{conflict_detail, error};
use super::state::{
    conceal_secret, desired, effective_wait, field_manager, force, live_attribute, live_view,
    recorded_uid,
};
use crate::cluster::{api_error, apply_params};
use crate::connection::Connected;
use crate::types::ObjectType;
use crate::wait::Wait;
use gpustack_protocol::{ApplyResourceChangeRequest, Diagnostic, Value};
use gpustack_provider_sdk::check::set;
use serde_json::Value as Json;
use std::time::Duration;

/// Merges `patch` into `base` (objects member by member, everything else replaced).
fn merge(base: &mut Json, patch: &Json) {
    match (base, patch) {
        (Json::Object(b), Json::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Json::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

impl Connected {
    // Long by design: one server-side apply in order (the existence check of a create, the
    // stack's mark, the patch, conflicts, the waits, the state from the answer), each step
    // reading the object the one before produced.
    pub(super) async fn apply(
        &self,
        ty: ObjectType,
        request: ApplyResourceChangeRequest,
    ) -> Result<(Option<Value>, Vec<Diagnostic>), Vec<Diagnostic>> {
        let prior_present = request.prior_state.is_some();
        let Some(planned) = request.planned_state else {
            let Some(prior) = request.prior_state else {
                return Ok((None, vec![]));
            };
            return Ok((
                None,
                self.delete(ty, &prior, request.collateral.as_ref(), &request.owner)
                    .await?,
            ));
        };
        let id = ObjectId::of(ty, &planned).ok_or_else(|| {
            error(
                "Incomplete object",
                "The object has no apiVersion, kind or name.",
            )
        })?;
        if let Some(before) = request
            .prior_state
            .as_ref()
            .and_then(|p| ObjectId::of(ty, p))
            && !before.same_object(&id)
        {
            return Err(error(
                "Refusing to move an object in place",
                format!(
                    "{} would become {}; that is a replacement, which the plan did not say.",
                    before.describe(),
                    id.describe()
                ),
            ));
        }
        let kind = self
            .cluster
            .kind_eventually(&id.api_version, &id.kind, Duration::from_secs(30))
            .await
            .map_err(|e| error("Cannot reach the Kubernetes API", api_error(&e)))?
            .ok_or_else(|| {
                error(
                    &format!("The API server does not serve {} {}", id.api_version, id.kind),
                    "Is its CustomResourceDefinition applied? If this stack creates it, make this resource depend on it (depends_on).",
                )
            })?;
        let namespace = id.namespace_for(&kind);
        let api = self.cluster.api(&kind, namespace.as_deref());
        let desired = desired(ty, &planned).unwrap_or(Json::Null);
        let mut body = id.skeleton(&kind);
        if ty == ObjectType::Manifest {
            body = desired.clone();
            if let Some(ns) = &namespace {
                body["metadata"]["namespace"] = ns.clone().into();
            }
            // This stack's mark, owned by its field manager: a later run that finds the object
            // without a record of it (a crash before the state write) knows it as its own.
            if !request.owner.is_empty() {
                body["metadata"]["annotations"][gpustack_protocol::OWNER_KEY] =
                    request.owner.clone().into();
            }
            if let Some(uid) = request.prior_state.as_ref().and_then(recorded_uid) {
                body["metadata"]["uid"] = uid.into();
            }
        } else {
            // Partial management never creates what someone else owns.
            match api.get_opt(&id.name).await {
                Ok(Some(object)) => {
                    if let Some(uid) = object.metadata.uid {
                        body["metadata"]["uid"] = uid.into();
                    }
                }
                Ok(None) => {
                    return Err(error(
                        &format!("{} does not exist", id.describe()),
                        format!(
                            "{} manages fields of an object that someone else creates; create it first (or depend on what does).",
                            ty.type_name()
                        ),
                    ));
                }
                Err(e) => return Err(error("Cannot reach the Kubernetes API", api_error(&e))),
            }
            merge(&mut body, &desired);
        }
        let params = apply_params(&field_manager(ty, &planned), force(&planned));
        let object = match self
            .cluster
            .apply_json(&api, &id.name, &params, &body)
            .await
        {
            Ok(object) => object,
            Err(e) => {
                let named = body.pointer("/metadata/uid").and_then(Json::as_str);
                let gone = self.not_there(&api, &id.name, named, &e).await;
                return Err(match (gone, conflict_detail(&e)) {
                    (Some(why), _) => error(
                        &format!("Cannot apply {}", id.describe()),
                        format!(
                            "{} {why} since it was read, and gpustack changes only the object it read. Plan again.",
                            id.describe()
                        ),
                    ),
                    (None, Some(detail)) => {
                        error(&format!("Conflict applying {}", id.describe()), detail)
                    }
                    (None, None) => {
                        error(&format!("Cannot apply {}", id.describe()), api_error(&e))
                    }
                });
            }
        };
        let wait = Wait::from_config(
            effective_wait(&planned, if prior_present { "update" } else { "create" }).as_ref(),
            &id.kind,
        )
        .map_err(|e| error("Invalid wait timeout", e))?;
        wait.until_done(&self.cluster, &kind, namespace.as_deref(), &id.name)
            .await
            .map_err(|e| error(&format!("{} did not become ready", id.describe()), e))?;
        let object = match wait.is_empty() {
            true => object,
            false => self
                .cluster
                .get_json(&api, &id.name)
                .await
                .map_err(|e| error("Cannot read back the object", api_error(&e)))?
                .ok_or_else(|| {
                    error(
                        "Cannot read back the object",
                        format!("{} was deleted while it was awaited", id.describe()),
                    )
                })?,
        };
        let mut state = planned.clone();
        set(
            &mut state,
            live_attribute(ty),
            live_view(ty, &desired, &object),
        );
        if ty == ObjectType::Manifest
            && let Some(uid) = object.pointer("/metadata/uid").and_then(Json::as_str)
        {
            set(&mut state, "uid", Value::string(uid));
        }
        conceal_secret(ty, &mut state);
        Ok((Some(state), vec![]))
    }
}
