//! Deleting an object, or giving back the fields a partial resource managed; and what a
//! deletion takes with it, judged at plan time and looked at again just before it.

use super::object_id::ObjectId;
use super::server::{Holder, api_status, error};
use super::state::{desired, effective_wait, field_manager, force_destroy, recorded_uid};
use crate::cluster::{api_error, apply_params};
use crate::connection::Connected;
use crate::types::ObjectType;
use crate::wait::Wait;
use gpustack_protocol::{Diagnostic, Value};
use gpustack_provider_sdk::check::text;
use kube::api::{DeleteParams, DynamicObject, Patch, Preconditions, PropagationPolicy};
use kube::runtime::wait::await_condition;
use serde_json::Value as Json;

/// How to go on when a deletion would take what is not the stack's.
const FORCE_HINT: &str = "to delete what it holds with it, set force_destroy = true on the resource and apply that before the deletion.";

/// How many objects a message names; the rest are counted.
const NAMED: usize = 10;

/// Objects in a message: the first few by name, the rest counted.
fn named(objects: &[String]) -> String {
    let mut text = objects
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if objects.len() > NAMED {
        text.push_str(&format!(" and {} more", objects.len() - NAMED));
    }
    text
}

impl Connected {
    /// Deletes a managed object (waiting until it is gone), or gives back the fields a
    /// partial resource managed: server-side apply of nothing under the same field manager.
    /// Its warnings when it leaves something as it is.
    // Long by design: a deletion in order (the look again for collateral, the DELETE with its
    // propagation, the wait for a finalizer, or the give-back of a partial resource's fields).
    pub(super) async fn delete(
        &self,
        ty: ObjectType,
        prior: &Value,
        collateral: Option<&gpustack_protocol::Collateral>,
        owner: &str,
    ) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
        let Some(id) = ObjectId::of(ty, prior) else {
            return Ok(vec![]);
        };
        let Some(kind) = self.kind_of(&id).await? else {
            return Ok(vec![]);
        };
        let namespace = id.namespace_for(&kind);
        let api = self.cluster.api(&kind, namespace.as_deref());
        if ty != ObjectType::Manifest {
            let mut body = id.skeleton(&kind);
            if ty == ObjectType::Labels {
                body["metadata"]["labels"] = serde_json::json!({});
            }
            let params = apply_params(&field_manager(ty, prior), true);
            // The apply names the uid read, so that it never creates the object if it is
            // deleted meanwhile; the fields went with it then.
            return match api.get_opt(&id.name).await {
                Ok(None) => Ok(vec![]),
                Ok(Some(object)) => {
                    let named = object.metadata.uid.as_deref();
                    if let Some(uid) = named {
                        body["metadata"]["uid"] = uid.into();
                    }
                    match api.patch(&id.name, &params, &Patch::Apply(&body)).await {
                        Ok(_) => Ok(vec![]),
                        Err(e) if self.not_there(&api, &id.name, named, &e).await.is_some() => {
                            Ok(vec![])
                        }
                        Err(e) => Err(error(
                            &format!("Cannot release fields of {}", id.describe()),
                            api_error(&e),
                        )),
                    }
                }
                Err(e) => Err(error("Cannot reach the Kubernetes API", api_error(&e))),
            };
        }
        self.hold_to_plan(&id, prior, collateral, owner).await?;
        let propagation = match text(prior, "delete_propagation") {
            Some("Foreground") => PropagationPolicy::Foreground,
            Some("Orphan") => PropagationPolicy::Orphan,
            _ => PropagationPolicy::Background,
        };
        // Only the object this stack made or imported: another of the same name (the one
        // recorded was deleted and someone made a new one) fails the uid precondition.
        let recorded = recorded_uid(prior);
        let params = DeleteParams {
            propagation_policy: Some(propagation),
            preconditions: recorded.map(|uid| Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..Default::default()
        };
        // The API server answers a deletion it finished with a Status, or (for the kinds that
        // return the deleted object, such as custom resources) with the object as it was,
        // without a deletionTimestamp: one request, nothing to wait for. A deletion still
        // going (graceful deletion, finalizers, a namespace being emptied) is answered with
        // the object marked for deletion, or a 202 Status: that one is watched until it is
        // gone (a LIST and a WATCH, where polling would cost a GET every interval).
        let marked_uid = match api.delete(&id.name, &params).await {
            Ok(answer) => {
                let still_going = answer.either(
                    |object| {
                        object
                            .metadata
                            .deletion_timestamp
                            .is_some()
                            .then_some(object.metadata.uid)
                    },
                    |status| (status.code == 202).then_some(None),
                );
                match still_going {
                    Some(uid) => uid,
                    None => return Ok(vec![]),
                }
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(vec![]),
            // A failed uid precondition, or the object still being deleted (a namespace
            // being emptied answers a second DELETE with 409 too): the object tells which.
            Err(e @ kube::Error::Api(_)) if recorded.is_some() && api_status(&e) == Some(409) => {
                let recorded = recorded.unwrap_or_default();
                match self.holder(&api, &id.name, recorded).await {
                    Some(Holder::Gone) => return Ok(vec![]),
                    Some(Holder::Another) => {
                        return Ok(vec![Diagnostic::warning(
                            format!("{} was not deleted", id.describe()),
                            format!(
                                "The object this stack recorded (uid {recorded}) is gone; the one of that name now is another, not made by this stack, and is left as it is."
                            ),
                        )]);
                    }
                    Some(Holder::Same { deleting: true }) => Some(recorded.to_owned()),
                    _ => {
                        return Err(error(
                            &format!("Cannot delete {}", id.describe()),
                            api_error(&e),
                        ));
                    }
                }
            }
            Err(e) => {
                return Err(error(
                    &format!("Cannot delete {}", id.describe()),
                    api_error(&e),
                ));
            }
        };
        let timeout = Wait::from_config(effective_wait(prior, "delete").as_ref(), "")
            .map(|w| w.timeout)
            .unwrap_or(crate::wait::DEFAULT_TIMEOUT);
        // Gone, or replaced by a new object of the same name (another uid).
        let gone = move |object: Option<&DynamicObject>| {
            object.is_none_or(|object| {
                marked_uid
                    .as_deref()
                    .is_some_and(|uid| object.metadata.uid.as_deref() != Some(uid))
            })
        };
        match tokio::time::timeout(timeout, await_condition(api, &id.name, gone)).await {
            Ok(Ok(_)) => Ok(vec![]),
            Ok(Err(e)) => Err(error("Cannot reach the Kubernetes API", e.to_string())),
            Err(_) => Err(error(
                &format!("{} is still being deleted", id.describe()),
                format!(
                    "It still exists after {} (finalizers?).",
                    humantime::format_duration(timeout)
                ),
            )),
        }
    }

    /// Where deleting the object of `prior` reaches beyond it, if anywhere.
    fn reach(id: &ObjectId, prior: &Value) -> Option<crate::collateral::Reach> {
        let manifest = desired(ObjectType::Manifest, prior).unwrap_or(Json::Null);
        crate::collateral::Reach::of(&id.api_version, &id.kind, &id.name, &manifest)
    }

    /// What deleting a manifest's object takes with it: each object this stack does not
    /// manage is named, and is an error unless the resource says `force_destroy = true`.
    pub(super) async fn plan_delete(
        &self,
        ty: ObjectType,
        request: gpustack_protocol::PlanDeleteRequest,
    ) -> gpustack_protocol::PlanDeleteResponse {
        let prior = &request.prior_state;
        let reach = (ty == ObjectType::Manifest)
            .then(|| ObjectId::of(ty, prior))
            .flatten()
            .and_then(|id| Some((Self::reach(&id, prior)?, id)));
        let Some((reach, id)) = reach else {
            return Default::default();
        };
        let forced = force_destroy(prior);
        let sight =
            match crate::collateral::look(&self.cluster, &reach, &request.owner, &request.managed)
                .await
            {
                Ok(sight) => sight,
                Err(why) => {
                    let summary =
                        format!("Cannot tell what deleting {} takes with it", id.describe());
                    let detail = format!("Listing what it holds failed: {why}");
                    return gpustack_protocol::PlanDeleteResponse {
                        collateral: None,
                        diagnostics: vec![if forced {
                            Diagnostic::warning(summary, detail)
                        } else {
                            Diagnostic::error(summary, format!("{detail}; {FORCE_HINT}"))
                        }],
                        gpu_facts: Vec::new(),
                    };
                }
            };
        let known = self.known_uids();
        let judged = sight.judge(&known);
        let collateral = gpustack_protocol::Collateral {
            describe: id.describe(),
            objects: judged.collateral,
            unread: sight.unread,
            seen: judged.seen,
        };
        let mut diagnostics = Vec::new();
        if !forced && !collateral.objects.is_empty() {
            let count = collateral.objects.len();
            diagnostics.push(Diagnostic::error(
                format!(
                    "Deleting {} would delete objects this stack does not manage",
                    id.describe()
                ),
                format!(
                    "deleting {} also deletes {count} {} that {} not in this stack's state and {} not carry its mark: {}. Move {} elsewhere or import {}; {}",
                    id.describe(),
                    if count == 1 { "object" } else { "objects" },
                    if count == 1 { "is" } else { "are" },
                    if count == 1 { "does" } else { "do" },
                    named(&collateral.objects),
                    if count == 1 { "it" } else { "them" },
                    if count == 1 { "it" } else { "them" },
                    FORCE_HINT
                ),
            ));
        }
        if !forced && !collateral.unread.is_empty() {
            diagnostics.push(Diagnostic::error(
                format!("Cannot tell what deleting {} takes with it", id.describe()),
                format!(
                    "these could not be listed: {}; {FORCE_HINT}",
                    collateral.unread.join(", ")
                ),
            ));
        }
        gpustack_protocol::PlanDeleteResponse {
            collateral: Some(collateral),
            diagnostics,
            gpu_facts: Vec::new(),
        }
    }

    /// Just before a deletion whose reach is wider than its object: looks again, and stops
    /// when it would now take an object that is not this stack's and that the plan did not
    /// see (made since), or what cannot be listed without `force_destroy`.
    async fn hold_to_plan(
        &self,
        id: &ObjectId,
        prior: &Value,
        collateral: Option<&gpustack_protocol::Collateral>,
        owner: &str,
    ) -> Result<(), Vec<Diagnostic>> {
        let Some(reach) = Self::reach(id, prior) else {
            return Ok(());
        };
        let refused = |detail: String| {
            error(
                &format!("Refusing to delete {}", id.describe()),
                format!("{detail} Nothing was deleted."),
            )
        };
        let forced = force_destroy(prior);
        let sight = match crate::collateral::look(&self.cluster, &reach, owner, &[]).await {
            Ok(sight) => sight,
            Err(why) if !forced => {
                return Err(refused(format!(
                    "What it holds cannot be listed ({why}), so its deletion could take what the plan did not show."
                )));
            }
            Err(_) => return Ok(()),
        };
        let mut seen: std::collections::HashSet<String> = collateral
            .map(|c| c.seen.iter().cloned().collect())
            .unwrap_or_default();
        seen.extend(self.known_uids());
        let unforeseen = sight.unforeseen(&seen);
        if !unforeseen.is_empty() {
            return Err(refused(format!(
                "It now holds {} that {} not there when the plan was made, and that this stack does not manage: {}. Deleting it would delete {} too. Plan again.",
                if unforeseen.len() == 1 {
                    "an object"
                } else {
                    "objects"
                },
                if unforeseen.len() == 1 { "was" } else { "were" },
                named(&unforeseen),
                if unforeseen.len() == 1 { "it" } else { "them" },
            )));
        }
        if !forced && !sight.unread.is_empty() {
            return Err(refused(format!(
                "These could not be listed: {}; its deletion could take what the plan did not show.",
                sight.unread.join(", ")
            )));
        }
        Ok(())
    }
}
