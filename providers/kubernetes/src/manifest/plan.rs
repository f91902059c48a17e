//! Planning a change: the planned state, a server-side dry run where the plan is read, the GPU
//! facts of the object, and the object a planned create would meet.

use super::object_id::ObjectId;
use super::server::{conflict_detail, error};
use super::state::{
    conceal_secret, desired, field_manager, force, live_attribute, live_view, recorded_uid,
};
use crate::cluster::{api_error, apply_params};
use crate::connection::Connected;
use crate::types::ObjectType;
use gpustack_protocol::{Diagnostic, PlanResourceChangeRequest, PlanResourceChangeResponse, Value};
use gpustack_provider_sdk::check::{attribute, set};
use gpustack_provider_sdk::objects::strip_nulls;
use kube::api::ListParams;
use serde_json::Value as Json;

impl Connected {
    // Long by design: a plan's steps in the order each needs the one before (the recorded
    // identity, the planned object, the dry-run apply or why none, the diff, what forces a
    // replacement, the collateral of a deletion), all on the same request and object.
    pub(super) async fn plan(
        &self,
        ty: ObjectType,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let config = &request.config;
        let prior = request.prior_state.as_ref();
        // The stack's, also when the plan did not refresh it.
        if let Some(uid) = prior.and_then(recorded_uid) {
            self.mark_known(uid);
        }
        let mut planned = config.clone();
        // Terraform's field_manager block stays as written; a name or none becomes the name.
        if attribute(config, "field_manager").is_none_or(|f| f.as_str().is_some()) {
            set(
                &mut planned,
                "field_manager",
                Value::string(field_manager(ty, config)),
            );
        }
        let live_name = live_attribute(ty);
        let mut diagnostics = Vec::new();
        let mut requires_replace = Vec::new();
        let id = ObjectId::of(ty, config);
        let before = prior.and_then(|p| ObjectId::of(ty, p));
        // An identity that is not known yet (a name from another resource) may change.
        let moved = match (&before, &id) {
            (Some(before), Some(id)) => !before.same_object(id),
            (Some(_), None) => !config.is_wholly_known(),
            _ => false,
        };
        if moved {
            requires_replace.push(if ty == ObjectType::Manifest {
                "manifest (apiVersion, kind, metadata.name or metadata.namespace)".to_owned()
            } else {
                "api_version, kind, name or namespace".to_owned()
            });
        }
        if ty == ObjectType::Manifest {
            set(
                &mut planned,
                "manifest",
                match attribute(config, "manifest") {
                    Some(m) if m.is_wholly_known() => Value::from_json(&strip_nulls(&m.to_json())),
                    Some(m) => m.clone(),
                    None => Value::Null,
                },
            );
            let uid = match prior {
                Some(p) if requires_replace.is_empty() => {
                    attribute(p, "uid").cloned().unwrap_or(Value::Unknown)
                }
                _ => Value::Unknown,
            };
            set(&mut planned, "uid", uid);
        }
        let desired = desired(ty, &planned);
        let live = match (&desired, &id) {
            (Some(desired), Some(id)) => {
                let expected = || live_view(ty, desired, desired);
                let prior_live = prior
                    .filter(|_| requires_replace.is_empty())
                    .and_then(|p| attribute(p, live_name));
                if let Some(same) = prior_live.filter(|live| **live == expected()) {
                    same.clone()
                } else if request.for_apply || !request.preview {
                    // Apply reports the real object; a preview now would be one more request,
                    // for a plan that is final (for_apply) or that no one reads (preview).
                    Value::Unknown
                } else if ty == ObjectType::Manifest {
                    let manager = field_manager(ty, &planned);
                    match self.dry_run(id, desired, &manager, force(config)).await {
                        Ok(Some(object)) => live_view(ty, desired, &object),
                        Ok(None) => Value::Unknown,
                        Err(diags) => {
                            let failed = diags.iter().any(Diagnostic::is_error);
                            diagnostics.extend(diags);
                            if failed { Value::Unknown } else { expected() }
                        }
                    }
                } else {
                    expected()
                }
            }
            _ => Value::Unknown,
        };
        let gpu_facts = match (&desired, &id) {
            (Some(desired), Some(id)) if !request.for_apply => {
                let before = prior.and_then(|p| self::desired(ty, p));
                let mut facts = crate::capacity::object_facts(
                    ty,
                    &id.api_version,
                    &id.kind,
                    &id.name,
                    id.namespace.as_deref(),
                    desired,
                    before.as_ref(),
                );
                if crate::capacity::needs_cluster(&facts) {
                    let mut cluster = Vec::new();
                    self.push_cluster(&mut cluster, 0, &mut diagnostics).await;
                    facts.extend(cluster.into_iter().map(|(_, f)| f));
                }
                facts
            }
            _ => Vec::new(),
        };
        set(&mut planned, live_name, live);
        conceal_secret(ty, &mut planned);
        let existing = match (&id, prior) {
            (Some(id), None) if ty == ObjectType::Manifest => {
                match self.existing(id, &request.owner).await {
                    Ok(existing) => existing,
                    Err(diags) => {
                        diagnostics.extend(diags);
                        None
                    }
                }
            }
            _ => None,
        };
        // A create, or a replacement: each makes its object anew.
        let order = match &id {
            Some(id) if !request.for_apply && (prior.is_none() || !requires_replace.is_empty()) => {
                self.order(id, &mut diagnostics).await
            }
            _ => Default::default(),
        };
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace,
            gpu_facts,
            existing,
            diagnostics,
            order,
        }
    }

    /// What a create needs and makes: a namespace it goes into that the cluster does not have,
    /// a namespace it is. Nothing, and a warning (once), when the cluster's namespaces cannot
    /// be read.
    async fn order(
        &self,
        id: &ObjectId,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> gpustack_protocol::Order {
        let mut order = gpustack_protocol::Order::default();
        let read = self
            .namespaces
            .get_or_init(|| async {
                self.cluster
                    .namespaces()
                    .await
                    .map_err(|e| crate::cluster::api_error(&e))
            })
            .await;
        let namespaces = match read {
            Ok(namespaces) => namespaces,
            Err(why) => {
                gpustack_cluster::warn_namespaces_not_read_once(
                    &self.namespaces_warned,
                    why,
                    diagnostics,
                );
                return order;
            }
        };
        if id.kind == "Namespace" && id.api_version == "v1" {
            order.makes.push(namespaces.key(&id.name));
            return order;
        }
        // A kind not served yet (its CRD is in the same plan) is namespaced when it names one.
        let namespace = match self.kind_of(id).await {
            Ok(Some(kind)) => id.namespace_for(&kind),
            _ => id.namespace.clone(),
        };
        if let Some(namespace) = namespace.filter(|n| !namespaces.names.contains(n)) {
            order.needs.push(gpustack_protocol::Prerequisite {
                key: namespaces.key(&namespace),
                describe: format!("the namespace {namespace}"),
            });
        }
        order
    }

    /// Server-side dry-run of the apply: the object as the server would store it, with its
    /// defaults and webhooks. `Ok(None)` when the server cannot tell yet (its kind or
    /// namespace is created in the same run).
    async fn dry_run(
        &self,
        id: &ObjectId,
        body: &Json,
        manager: &str,
        force: bool,
    ) -> Result<Option<Json>, Vec<Diagnostic>> {
        let Some(kind) = self.kind_of(id).await? else {
            return Ok(None);
        };
        let api = self.cluster.api(&kind, id.namespace_for(&kind).as_deref());
        let mut params = apply_params(manager, force);
        params.dry_run = true;
        match self.cluster.apply_json(&api, &id.name, &params, body).await {
            Ok(object) => Ok(Some(object)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => match conflict_detail(&e) {
                Some(detail) => Err(vec![Diagnostic::warning(
                    format!("Apply of {} will conflict", id.describe()),
                    detail,
                )]),
                None => {
                    let mut diagnostics = error(
                        &format!("The API server rejects {}", id.describe()),
                        api_error(&e),
                    );
                    // An invalid object names the field it refuses: the diagnostic points there.
                    if let Some(field) = invalid_field(&e) {
                        for diagnostic in &mut diagnostics {
                            diagnostic.attribute = Some(format!("manifest.{field}"));
                        }
                    }
                    Err(diagnostics)
                }
            },
        }
    }

    /// The object a planned create would make, if it is already there: someone else's, or
    /// this stack's from a run that died before it recorded it (it has this stack's mark).
    async fn existing(
        &self,
        id: &ObjectId,
        owner: &str,
    ) -> Result<Option<gpustack_protocol::Existing>, Vec<Diagnostic>> {
        let Some(kind) = self.kind_of(id).await? else {
            return Ok(None);
        };
        let namespace = id.namespace_for(&kind);
        let group = self.present((id.api_version.clone(), id.kind.clone(), namespace.clone()));
        let names = group
            .get_or_init(|| async {
                let api = self.cluster.api(&kind, namespace.as_deref());
                let list = api
                    .list_metadata(&ListParams::default())
                    .await
                    .map_err(|e| api_error(&e))?;
                Ok(list
                    .items
                    .into_iter()
                    .filter_map(|o| {
                        let mark = o
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(gpustack_protocol::OWNER_KEY))
                            .cloned();
                        Some((o.metadata.name?, mark))
                    })
                    .collect())
            })
            .await
            .as_ref()
            .map_err(|e| error("Cannot reach the Kubernetes API", e.clone()))?;
        Ok(names.get(&id.name).map(|mark| gpustack_protocol::Existing {
            import_id: id.import_id(&kind),
            describe: id.describe(),
            owned: !owner.is_empty() && mark.as_deref() == Some(owner),
        }))
    }
}

/// The field an Invalid (422) answer names first (`spec.template.spec.containers[0].image`).
fn invalid_field(e: &kube::Error) -> Option<String> {
    let kube::Error::Api(status) = e else {
        return None;
    };
    status
        .details
        .as_ref()?
        .causes
        .iter()
        .map(|c| c.field.trim())
        .find(|f| !f.is_empty() && !f.starts_with('<'))
        .map(str::to_owned)
}
