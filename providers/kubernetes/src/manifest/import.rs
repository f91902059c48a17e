//! Importing an object that exists into a `kubernetes_manifest` state.

use super::object_id::ObjectId;
use super::server::error;
use super::state::{DEFAULT_FIELD_MANAGER, conceal_secret, live_view};
use crate::cluster::api_error;
use crate::connection::Connected;
use crate::types::ObjectType;
use gpustack_protocol::{ImportResourceResponse, Value};
use indexmap::IndexMap;
use serde_json::Value as Json;

impl Connected {
    /// Takes in a whole object by `apiVersion/Kind/[namespace/]name`.
    // Long by design: read the object, prove it is the one asked for, and record it as a plan
    // would (the mark, the fields the stack may set), answering every failure by name.
    pub(super) async fn import(&self, ty: ObjectType, id: &str) -> ImportResourceResponse {
        // "apiVersion/Kind/namespace/name" or "apiVersion/Kind/name" (core kinds: "v1/ConfigMap/ns/name").
        let parts: Vec<&str> = id.split('/').collect();
        let core_version = |v: &str| {
            v.strip_prefix('v')
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && !r.contains('.'))
        };
        if ty != ObjectType::Manifest {
            return ImportResourceResponse {
                state: None,
                diagnostics: error(
                    "Import not supported",
                    format!(
                        "{} manages fields of an object someone else owns; declare it and apply instead of importing.",
                        ty.type_name()
                    ),
                ),
            };
        }
        let (api_version, rest) = match parts.as_slice() {
            [v, rest @ ..] if core_version(v) => (v.to_string(), rest),
            [g, v, rest @ ..] => (format!("{g}/{v}"), rest),
            _ => (String::new(), &[][..]),
        };
        let (kind, namespace, name) = match rest {
            [k, ns, n] => (*k, Some(*ns), *n),
            [k, n] => (*k, None, *n),
            _ => {
                return ImportResourceResponse {
                    state: None,
                    diagnostics: error(
                        "Invalid import id",
                        format!(
                            "\"{}\" is not API_VERSION/KIND/[NAMESPACE/]NAME, e.g. v1/ConfigMap/gpu-operator/time-slicing-config.",
                            id
                        ),
                    ),
                };
            }
        };
        let id = ObjectId {
            api_version,
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        let found = match self.kind_of(&id).await {
            Ok(Some(k)) => k,
            Ok(None) => {
                return ImportResourceResponse {
                    state: None,
                    diagnostics: error(
                        "Unknown kind",
                        format!(
                            "The API server does not serve {} {}.",
                            id.api_version, id.kind
                        ),
                    ),
                };
            }
            Err(diagnostics) => {
                return ImportResourceResponse {
                    state: None,
                    diagnostics,
                };
            }
        };
        let api = self
            .cluster
            .api(&found, id.namespace_for(&found).as_deref());
        match api.get_opt(&id.name).await {
            Ok(Some(object)) => {
                let uid = object.metadata.uid.clone();
                let live = match serde_json::to_value(&object) {
                    Ok(live) => live,
                    Err(e) => {
                        return ImportResourceResponse {
                            state: None,
                            diagnostics: error("Cannot read the object", e.to_string()),
                        };
                    }
                };
                // The manifest is what a stack would declare: what the server adds (its own
                // metadata, status, kubectl's and this stack's annotations) is left out.
                let mut object = live.clone();
                if let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) {
                    for noise in [
                        "uid",
                        "resourceVersion",
                        "generation",
                        "creationTimestamp",
                        "managedFields",
                        "selfLink",
                    ] {
                        meta.remove(noise);
                    }
                    if let Some(annotations) =
                        meta.get_mut("annotations").and_then(Json::as_object_mut)
                    {
                        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
                        annotations.remove(gpustack_protocol::OWNER_KEY);
                        if annotations.is_empty() {
                            meta.remove("annotations");
                        }
                    }
                }
                if let Some(o) = object.as_object_mut() {
                    o.remove("status");
                }
                let state = Value::Object(IndexMap::from([
                    ("manifest".to_owned(), Value::from_json(&object)),
                    (
                        "field_manager".to_owned(),
                        Value::string(DEFAULT_FIELD_MANAGER),
                    ),
                    ("force_conflicts".to_owned(), Value::Null),
                    ("delete_propagation".to_owned(), Value::Null),
                    ("force_destroy".to_owned(), Value::Null),
                    (
                        "object".to_owned(),
                        live_view(ObjectType::Manifest, &object, &live),
                    ),
                    ("uid".to_owned(), uid.map_or(Value::Null, Value::string)),
                    ("wait".to_owned(), Value::Null),
                ]));
                let mut state = state;
                conceal_secret(ObjectType::Manifest, &mut state);
                ImportResourceResponse {
                    state: Some(state),
                    diagnostics: vec![],
                }
            }
            Ok(None) => ImportResourceResponse {
                state: None,
                diagnostics: error(
                    "Object not found",
                    format!("{} does not exist.", id.describe()),
                ),
            },
            Err(e) => ImportResourceResponse {
                state: None,
                diagnostics: error("Cannot reach the Kubernetes API", api_error(&e)),
            },
        }
    }
}
