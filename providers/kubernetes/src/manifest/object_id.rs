//! Which object a resource is about, and the names it goes by: in requests, in `gpustack
//! import`, in messages, and as the identity the engine tells objects apart by.

use crate::cluster::Kind;
use crate::types::ObjectType;
use gpustack_protocol::Value;
use gpustack_provider_sdk::check::{attribute, text};
use serde_json::Value as Json;

/// Which object a resource is about: from the manifest, or from the api_version/kind/name/
/// namespace attributes of kubernetes_labels and kubernetes_patch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct ObjectId {
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
}

impl ObjectId {
    pub(super) fn of(ty: ObjectType, state: &Value) -> Option<Self> {
        if ty == ObjectType::Manifest {
            let manifest = attribute(state, "manifest")?;
            let get = |path: &[&str]| {
                path.iter()
                    .try_fold(manifest, |v, step| attribute(v, step))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            Some(Self {
                api_version: get(&["apiVersion"])?,
                kind: get(&["kind"])?,
                namespace: get(&["metadata", "namespace"]),
                name: get(&["metadata", "name"])?,
            })
        } else {
            let metadata = attribute(state, "metadata")
                .and_then(Value::as_list)
                .and_then(<[Value]>::first);
            let named = |key: &str| {
                text(state, key)
                    .or_else(|| metadata.and_then(|m| text(m, key)))
                    .map(str::to_owned)
            };
            Some(Self {
                api_version: text(state, "api_version")?.to_owned(),
                kind: text(state, "kind")?.to_owned(),
                namespace: named("namespace"),
                name: named("name")?,
            })
        }
    }

    /// Whether two identities name the same object: an unset namespace is "default".
    pub(super) fn same_object(&self, other: &Self) -> bool {
        let ns = |id: &Self| id.namespace.clone().unwrap_or_else(|| "default".to_owned());
        self.api_version == other.api_version
            && self.kind == other.kind
            && self.name == other.name
            && ns(self) == ns(other)
    }

    /// The namespace requests use: namespaced kinds default to "default"; cluster-scoped
    /// kinds have none.
    pub(super) fn namespace_for(&self, kind: &Kind) -> Option<String> {
        kind.namespaced.then(|| {
            self.namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned())
        })
    }

    /// The id `gpustack import` takes: `v1/ConfigMap/ns/name`, `v1/Namespace/name`.
    pub(super) fn import_id(&self, kind: &Kind) -> String {
        match self.namespace_for(kind) {
            Some(ns) => format!("{}/{}/{ns}/{}", self.api_version, self.kind, self.name),
            None => format!("{}/{}/{}", self.api_version, self.kind, self.name),
        }
    }

    /// One string per object whatever the version it is read in (`apps/Deployment/ns/n`);
    /// an unset namespace is "default", as for requests.
    fn identity(&self) -> String {
        let group = self.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        format!(
            "kubernetes:{group}/{}/{}/{}",
            self.kind,
            self.namespace.as_deref().unwrap_or("default"),
            self.name
        )
    }

    pub(super) fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {}/{}", self.kind, ns, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// The smallest apply body that names this object.
    pub(super) fn skeleton(&self, kind: &Kind) -> Json {
        let mut metadata = serde_json::json!({ "name": self.name });
        if let Some(ns) = self.namespace_for(kind) {
            metadata["namespace"] = ns.into();
        }
        serde_json::json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": metadata,
        })
    }
}

/// The identity of a `kubernetes_manifest` state's object (for the types that translate into
/// one).
pub(crate) fn identity_of_manifest(state: &Value) -> Option<String> {
    ObjectId::of(ObjectType::Manifest, state).map(|id| id.identity())
}
