use crate::cluster::{Cluster, Kind, api_error, apply_params};
use crate::types::ObjectType;
use crate::wait::Wait;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    ImportResourceResponse, PlanResourceChangeRequest, PlanResourceChangeResponse, Provider,
    ProviderSchema, ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, Schema,
    Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, set, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::objects::{project, strip_nulls};
use gpustack_provider_sdk::resource::{DataSource, Resource, Resources};
use indexmap::IndexMap;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, Preconditions, PropagationPolicy};
use kube::runtime::wait::await_condition;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Any Kubernetes object by server-side apply, and partial management of objects owned by others.
pub(crate) struct Kubernetes;

/// The object someone else owns that labels, annotations or a patch are about: named by
/// `name`/`namespace` (gpustack's form) or by a `metadata {}` block (Terraform's).
fn object_ref(schema: Schema) -> Schema {
    let metadata = Schema::new("The object's name and namespace (Terraform's form).")
        .attr("name", Attribute::required(Type::String).force_new())
        .attr("namespace", Attribute::optional(Type::String).force_new());
    let mut schema = schema
        .attr("api_version", Attribute::required(Type::String).force_new())
        .attr("kind", Attribute::required(Type::String).force_new())
        .attr("name", Attribute::optional(Type::String).force_new())
        .attr("namespace", Attribute::optional(Type::String).force_new());
    schema.blocks.insert(
        "metadata".to_owned(),
        gpustack_protocol::NestedBlock {
            nesting: BlockNesting::List,
            min_items: 0,
            max_items: Some(1),
            block: metadata,
            also_argument: false,
        },
    );
    schema
        .attr(
            "force",
            Attribute::optional(Type::Bool).describe("Terraform's name of force_conflicts."),
        )
        .attr(
            "field_manager",
            Attribute::optional_computed(Type::String).describe(
                "Server-side apply field manager, default \"gpustack\". Two resources that manage fields of one object need different managers, or each apply would drop the other's fields.",
            ),
        )
        .attr("force_conflicts", Attribute::optional(Type::Bool))
        .block("wait", BlockNesting::Single, wait_block())
}

fn wait_block() -> Schema {
    Schema::new("What to wait for after apply.")
        .attr(
            "rollout",
            Attribute::optional(Type::Bool)
                .describe("Wait until a Deployment, DaemonSet or StatefulSet has rolled out."),
        )
        .attr(
            "fields",
            Attribute::optional(Type::map(Type::String)).describe("JSONPath → expected value."),
        )
        .attr(
            "timeout",
            Attribute::optional(Type::String).describe("Duration such as \"5m\"."),
        )
        .block(
            "condition",
            BlockNesting::List,
            Schema::new("A status condition to wait for.")
                .attr("type", Attribute::required(Type::String))
                .attr("status", Attribute::optional(Type::String)),
        )
}

/// Terraform's kubernetes provider configuration, beside gpustack's own arguments (shared by
/// the kubectl provider, whose configuration is the same).
pub(crate) fn terraform_config(config: Schema) -> Schema {
    let text = || Attribute::optional(Type::String);
    config
        .attr("config_paths", Attribute::optional(Type::list(Type::String)))
        .attr("config_context", text().describe("Terraform's name of context."))
        .attr("config_context_auth_info", text())
        .attr("config_context_cluster", text())
        .attr("client_certificate", text())
        .attr("client_key", text().sensitive())
        .attr("username", text())
        .attr("password", text().sensitive())
        .attr("insecure", Attribute::optional(Type::Bool))
        .attr("tls_server_name", text())
        .attr("proxy_url", text())
        .attr(
            "ignore_annotations",
            Attribute::optional(Type::list(Type::String)).describe(
                "Accepted: gpustack compares only the fields a resource sets, so annotations it does not set never show as changes.",
            ),
        )
        .attr(
            "ignore_labels",
            Attribute::optional(Type::list(Type::String)).describe(
                "Accepted: gpustack compares only the fields a resource sets, so labels it does not set never show as changes.",
            ),
        )
        .block(
            "experiments",
            BlockNesting::Single,
            Schema::new("Terraform's experiments: kubernetes_manifest is always served.")
                .attr("manifest_resource", Attribute::optional(Type::Bool)),
        )
        .block(
            "exec",
            BlockNesting::Single,
            Schema::new("A credential plugin, as a kubeconfig's exec.")
                .attr("api_version", Attribute::required(Type::String))
                .attr("command", Attribute::required(Type::String))
                .attr("args", Attribute::optional(Type::list(Type::String)))
                .attr("env", Attribute::optional(Type::map(Type::String))),
        )
}

/// Refuses what of Terraform's kubernetes provider configuration gpustack does not honour.
pub(crate) fn check_config(check: &mut Checker<'_>) {
    for (name, reason) in [
        (
            "config_context_auth_info",
            "gpustack chooses a context of the kubeconfig, not a user of one; name a context with config_context",
        ),
        (
            "config_context_cluster",
            "gpustack chooses a context of the kubeconfig, not a cluster of one; name a context with config_context",
        ),
    ] {
        if check.get(name).is_some() {
            check.error(
                name,
                "Unsupported argument",
                format!("gpustack does not honour {name}: {reason}."),
            );
        }
    }
    if check
        .get("config_paths")
        .and_then(Value::as_list)
        .is_some_and(|l| l.len() > 1)
    {
        check.error(
            "config_paths",
            "Unsupported argument value",
            "gpustack reads one kubeconfig file: give it as config_path (or config_paths with one path), or merge the files into one (KUBECONFIG=a:b kubectl config view --flatten).".into(),
        );
    }
    if check.get("context").is_some() && check.get("config_context").is_some() {
        check.error(
            "config_context",
            "Conflicting arguments",
            "context and config_context name the same thing: set one.".into(),
        );
    }
}

#[async_trait::async_trait]
impl Family for Kubernetes {
    fn schema(&self) -> ProviderSchema {
        let config = provider_config(
            "A Kubernetes cluster: from a kubeconfig, in-cluster, or explicit credentials.",
        )
        .attr(
            "config_path",
            Attribute::optional(Type::String)
                .describe("Kubeconfig path; default $KUBECONFIG or ~/.kube/config."),
        )
        .attr("context", Attribute::optional(Type::String))
        .attr("in_cluster", Attribute::optional(Type::Bool))
        .attr("host", Attribute::optional(Type::String))
        .attr("token", Attribute::optional(Type::String).sensitive())
        .attr("cluster_ca_certificate", Attribute::optional(Type::String));
        let config = terraform_config(config);
        let manifest = Schema::new("Any Kubernetes object, applied server-side.")
            .attr(
                "manifest",
                Attribute::required(Type::Any).describe("The object, as HCL."),
            )
            .attr(
                "field_manager",
                Attribute::optional_computed(Type::Any).describe(
                    "The server-side apply field manager: a name (default \"gpustack\"), or Terraform's field_manager { name, force_conflicts } block.",
                ),
            )
            .attr("force_conflicts", Attribute::optional(Type::Bool))
            .attr(
                "computed_fields",
                Attribute::optional(Type::list(Type::String)).describe(
                    "Accepted: gpustack compares only the fields the manifest sets with the live object, so fields the API server sets never show as changes.",
                ),
            )
            .attr(
                "wait_for",
                Attribute::optional(Type::Any)
                    .describe("Terraform's deprecated { fields = { PATH = VALUE } }: as wait { fields }."),
            )
            .block(
                "timeouts",
                BlockNesting::Single,
                Schema::new("How long apply waits (create, update) and delete waits (delete).")
                    .attr("create", Attribute::optional(Type::String))
                    .attr("update", Attribute::optional(Type::String))
                    .attr("delete", Attribute::optional(Type::String)),
            )
            .attr("delete_propagation", Attribute::optional(Type::String))
            .attr(
                "force_destroy",
                Attribute::optional(Type::Bool).describe(
                    "Delete a Namespace or CustomResourceDefinition even when it holds objects this stack does not manage (they go with it). Read from the state: apply it before the deletion.",
                ),
            )
            .attr(
                "object",
                Attribute::computed(Type::Any)
                    .describe("The object as the API server returned it."),
            )
            .attr("uid", Attribute::computed(Type::String))
            .block("wait", BlockNesting::Single, wait_block());
        let labels = object_ref(Schema::new(
            "Labels on an object owned by someone else (such as a node).",
        ))
        .attr("labels", Attribute::required(Type::map(Type::String)))
        .attr(
            "live",
            Attribute::computed(Type::map(Type::String))
                .describe("The live values of the managed labels."),
        );
        let annotations = object_ref(Schema::new(
            "Annotations on an object owned by someone else, and on its pod template.",
        ))
        .attr("annotations", Attribute::optional(Type::map(Type::String)))
        .attr(
            "template_annotations",
            Attribute::optional(Type::map(Type::String)).describe(
                "Annotations of the pod template of a Deployment, DaemonSet, StatefulSet or Job.",
            ),
        )
        .attr(
            "live",
            Attribute::computed(Type::Any).describe("The live values of the managed annotations."),
        );
        let patch = object_ref(Schema::new(
            "Fields of an object owned by someone else (such as the ClusterPolicy).",
        ))
        .attr(
            "patch",
            Attribute::required(Type::Any).describe("The fields gpustack manages, as HCL."),
        )
        .attr(
            "live",
            Attribute::computed(Type::Any).describe("The live values of the patched fields."),
        );
        let nodes = Schema::new("The nodes of the cluster, optionally by label selector.")
            .attr("label_selector", Attribute::optional(Type::String))
            .attr("nodes", Attribute::computed(Type::list(Type::Any)));
        let mut resources: IndexMap<String, Schema> = [
            ("kubernetes_manifest".to_owned(), manifest),
            ("kubernetes_labels".to_owned(), labels),
            ("kubernetes_annotations".to_owned(), annotations),
            ("kubernetes_patch".to_owned(), patch),
        ]
        .into();
        for kind in crate::typed::KINDS {
            for name in kind.names {
                resources.insert((*name).to_owned(), crate::typed::schema(kind));
            }
        }
        resources.insert(crate::taint::TYPE.to_owned(), crate::taint::schema());
        resources.insert(crate::rollout::TYPE.to_owned(), crate::rollout::schema());
        let mut data_sources: IndexMap<String, Schema> = [
            ("kubernetes_nodes".to_owned(), nodes),
            (
                "kubernetes_resource".to_owned(),
                crate::data::resource_schema(),
            ),
            (
                "kubernetes_resources".to_owned(),
                crate::data::resources_schema(),
            ),
        ]
        .into();
        for name in crate::data::TYPED_DATA_SOURCES {
            if let Some(kind) = crate::typed::kind_of(name) {
                data_sources.insert((*name).to_owned(), crate::typed::data_schema(kind));
            }
        }
        ProviderSchema {
            name: "kubernetes".into(),
            config,
            resources,
            data_sources,
        }
    }

    /// A manifest's object; labels and patches own no object of their own.
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        if let Some(kind) = crate::typed::kind_of(type_name) {
            let manifest = crate::typed::manifest(kind, state)?;
            let state = Value::Object(
                [("manifest".to_owned(), Value::from_json(&manifest))]
                    .into_iter()
                    .collect(),
            );
            return ObjectId::of(ObjectType::Manifest, &state).map(|id| id.identity());
        }
        (ObjectType::of(type_name) == Some(ObjectType::Manifest))
            .then(|| ObjectId::of(ObjectType::Manifest, state))
            .flatten()
            .map(|id| id.identity())
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            check_config(check);
            return;
        }
        if let Some(kind) = crate::typed::kind_of(type_name) {
            crate::typed::check(kind, check);
            return;
        }
        if type_name == crate::rollout::TYPE {
            crate::rollout::check(check);
            return;
        }
        if type_name == crate::taint::TYPE {
            crate::taint::check(check);
            return;
        }
        if ObjectType::of(type_name) == Some(ObjectType::Manifest) {
            for field in ["apiVersion", "kind", "metadata.name"] {
                if check.get("manifest").is_some()
                    && check.get(&format!("manifest.{field}")).is_none()
                    && !is_unknown_below(check.config(), "manifest", field)
                {
                    check.error(
                        "manifest",
                        "Incomplete manifest",
                        format!("The manifest has no {field}."),
                    );
                }
            }
        }
        if ObjectType::of(type_name).is_some_and(|t| t != ObjectType::Manifest)
            && check.get("name").is_none()
            && check.get("metadata[0].name").is_none()
            && !check.config().as_object().is_some_and(|o| {
                ["name", "metadata"]
                    .iter()
                    .any(|k| o.get(*k).is_some_and(|v| !v.is_wholly_known()))
            })
        {
            check.error(
                "name",
                "Missing required argument",
                "Name the object: name = \"...\" (and namespace), or a metadata { name = \"...\" } block as Terraform writes it.".into(),
            );
        }
        check.one_of(
            "delete_propagation",
            &["Foreground", "Background", "Orphan"],
        );
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let cluster = Cluster::connect(config).await.map_err(|d| vec![d])?;
        let connected = Connected::new(Arc::new(cluster));
        let resources = ObjectType::ALL
            .into_iter()
            .fold(Resources::new(), |resources, ty| {
                resources.resource(
                    ty.type_name(),
                    Objects {
                        connected: connected.clone(),
                        ty,
                    },
                )
            });
        let resources = crate::typed::KINDS
            .iter()
            .fold(resources, |resources, kind| {
                kind.names.iter().fold(resources, |resources, name| {
                    resources.resource(
                        name,
                        crate::typed::TypedObjects {
                            inner: Box::new(Objects {
                                connected: connected.clone(),
                                ty: ObjectType::Manifest,
                            }),
                            kind,
                        },
                    )
                })
            });
        let resources = resources.resource(
            crate::taint::TYPE,
            crate::taint::NodeTaints {
                inner: Objects {
                    connected: connected.clone(),
                    ty: ObjectType::Patch,
                },
            },
        );
        let resources = resources.resource(
            crate::rollout::TYPE,
            crate::rollout::Rollouts(connected.clone()),
        );
        let resources = crate::data::TYPED_DATA_SOURCES
            .iter()
            .filter_map(|name| Some((*name, crate::typed::kind_of(name)?)))
            .fold(resources, |resources, (name, kind)| {
                resources.data_source(
                    name,
                    crate::data::TypedData {
                        cluster: connected.cluster.clone(),
                        kind,
                    },
                )
            })
            .data_source(
                "kubernetes_resource",
                crate::data::ResourceData(connected.cluster.clone()),
            )
            .data_source(
                "kubernetes_resources",
                crate::data::ResourcesData(connected.cluster.clone()),
            );
        Ok(Arc::new(
            resources.data_source("kubernetes_nodes", Nodes(connected)),
        ))
    }
}

/// The identity of a `kubernetes_manifest` state's object (for the types that translate into
/// one).
pub(crate) fn identity_of_manifest(state: &Value) -> Option<String> {
    ObjectId::of(ObjectType::Manifest, state).map(|id| id.identity())
}

impl Connected {
    pub(crate) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    pub(crate) fn new(cluster: Arc<Cluster>) -> Arc<Self> {
        Arc::new(Self {
            cluster,
            present: std::sync::Mutex::default(),
            known: std::sync::Mutex::default(),
            gpu_cluster: tokio::sync::OnceCell::new(),
        })
    }
}

/// A field counts as present when any step on the way to it is still unknown.
fn is_unknown_below(config: &gpustack_protocol::Value, root: &str, path: &str) -> bool {
    let mut current = match config.as_object().and_then(|o| o.get(root)) {
        Some(v) => v,
        None => return false,
    };
    for step in path.split('.') {
        if current.is_unknown() {
            return true;
        }
        match current.as_object().and_then(|o| o.get(step)) {
            Some(v) => current = v,
            None => return false,
        }
    }
    current.is_unknown()
}

/// The provider configured for one cluster.
pub(crate) struct Connected {
    pub(crate) cluster: Arc<Cluster>,
    /// The objects of each (apiVersion, kind, namespace) that planned creates look for: one
    /// metadata LIST per group for a whole plan, not a GET per object.
    present: std::sync::Mutex<std::collections::HashMap<Group, Arc<Present>>>,
    /// The uids of the objects whose states this provider refreshed: the stack's, when a
    /// deletion's reach is judged.
    known: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The live cluster as the GPU model needs it: read once per plan, by the first object
    /// that bears on GPUs.
    gpu_cluster: tokio::sync::OnceCell<Result<gpustack_protocol::ClusterFact, String>>,
}

/// (apiVersion, kind, namespace).
type Group = (String, String, Option<String>);

/// Names in one group, each with the stack mark it carries.
type Present =
    tokio::sync::OnceCell<Result<std::collections::HashMap<String, Option<String>>, String>>;

const DEFAULT_FIELD_MANAGER: &str = "gpustack";

fn error(summary: &str, detail: impl Into<String>) -> Vec<Diagnostic> {
    vec![Diagnostic::error(summary, detail)]
}

/// Which object a resource is about: from the manifest, or from the api_version/kind/name/
/// namespace attributes of kubernetes_labels and kubernetes_patch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ObjectId {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl ObjectId {
    fn of(ty: ObjectType, state: &Value) -> Option<Self> {
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
    fn same_object(&self, other: &Self) -> bool {
        let ns = |id: &Self| id.namespace.clone().unwrap_or_else(|| "default".to_owned());
        self.api_version == other.api_version
            && self.kind == other.kind
            && self.name == other.name
            && ns(self) == ns(other)
    }

    /// The namespace requests use: namespaced kinds default to "default"; cluster-scoped
    /// kinds have none.
    fn namespace_for(&self, kind: &Kind) -> Option<String> {
        kind.namespaced.then(|| {
            self.namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned())
        })
    }

    /// The id `gpustack import` takes: `v1/ConfigMap/ns/name`, `v1/Namespace/name`.
    fn import_id(&self, kind: &Kind) -> String {
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

    fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {}/{}", self.kind, ns, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// The smallest apply body that names this object.
    fn skeleton(&self, kind: &Kind) -> Json {
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

/// What a resource type sends with server-side apply, and which part of the live object it
/// compares with (its `object` or `live` attribute).
/// `None` while the configured fields are not all known yet.
fn desired(ty: ObjectType, state: &Value) -> Option<Json> {
    let (name, wrap): (&str, fn(Json) -> Json) = match ty {
        ObjectType::Manifest => ("manifest", |m| m),
        ObjectType::Labels => (
            "labels",
            |l| serde_json::json!({ "metadata": { "labels": l } }),
        ),
        ObjectType::Patch => ("patch", |p| p),
        ObjectType::Annotations => {
            let known = |name| attribute(state, name).is_none_or(Value::is_wholly_known);
            if !known("annotations") || !known("template_annotations") {
                return None;
            }
            let mut object = serde_json::json!({});
            if let Some(a) = attribute(state, "annotations") {
                object["metadata"] =
                    serde_json::json!({ "annotations": strip_nulls(&a.to_json()) });
            }
            if let Some(t) = attribute(state, "template_annotations") {
                object["spec"] = serde_json::json!({
                    "template": { "metadata": { "annotations": strip_nulls(&t.to_json()) } }
                });
            }
            return Some(object);
        }
    };
    attribute(state, name)
        .filter(|v| v.is_wholly_known())
        .map(|v| wrap(strip_nulls(&v.to_json())))
}

/// A Secret's `data` and `stringData` are marked sensitive wherever they appear (the manifest
/// and the live view), whatever the configuration marked: the engine then shows and stores
/// them only as digests.
fn conceal_secret(ty: ObjectType, state: &mut Value) {
    if ty != ObjectType::Manifest {
        return;
    }
    let is_secret = attribute(state, "manifest")
        .and_then(|m| attribute(m, "kind"))
        .and_then(Value::as_str)
        == Some("Secret");
    if !is_secret {
        return;
    }
    let Value::Object(attributes) = state else {
        return;
    };
    for name in ["manifest", "object"] {
        let Some(Value::Object(object)) = attributes.get_mut(name) else {
            continue;
        };
        for field in ["data", "stringData"] {
            if let Some(Value::Object(values)) = object.get_mut(field) {
                for value in values.values_mut() {
                    if !value.is_null() {
                        *value = Value::sensitive(std::mem::take(value));
                    }
                }
            }
        }
    }
}

/// The attribute that records what the cluster holds of the managed fields.
fn live_attribute(ty: ObjectType) -> &'static str {
    if ty == ObjectType::Manifest {
        "object"
    } else {
        "live"
    }
}

/// The managed part of a live object, as the `object`/`live` attribute holds it.
fn live_view(ty: ObjectType, desired: &Json, object: &Json) -> Value {
    let projected = project(desired, object);
    if ty == ObjectType::Labels {
        Value::from_json(
            projected
                .pointer("/metadata/labels")
                .unwrap_or(&Json::Object(Default::default())),
        )
    } else {
        Value::from_json(&projected)
    }
}

/// The uid of the object a state records (a `kubernetes_manifest` made or imported); `None`
/// for the types that manage fields of someone else's object, and for states written before
/// uids were recorded.
fn recorded_uid(state: &Value) -> Option<&str> {
    attribute(state, "uid").and_then(Value::as_str)
}

/// A resource's state refreshed from its live object: the live view of what it manages, the
/// object's uid, secrets concealed.
fn live_state(ty: ObjectType, mut state: Value, object: &Json) -> Value {
    if let Some(desired) = desired(ty, &state) {
        set(
            &mut state,
            live_attribute(ty),
            live_view(ty, &desired, object),
        );
    }
    if ty == ObjectType::Manifest
        && let Some(uid) = object.pointer("/metadata/uid").and_then(Json::as_str)
    {
        set(&mut state, "uid", Value::string(uid));
    }
    conceal_secret(ty, &mut state);
    state
}

/// Objects per page of a refresh LIST: the API server's answer, and what this process holds of
/// it at once, stay bounded however many objects a namespace has.
const LIST_PAGE: u32 = 500;

/// The configured field manager; by default one per resource type, so that labels and a
/// patch on the same object never remove each other's fields.
fn field_manager(ty: ObjectType, state: &Value) -> String {
    text(state, "field_manager")
        .or_else(|| attribute(state, "field_manager").and_then(|f| text(f, "name")))
        .map(str::to_owned)
        .unwrap_or_else(|| match ty {
            ObjectType::Labels => format!("{DEFAULT_FIELD_MANAGER}-labels"),
            ObjectType::Annotations => format!("{DEFAULT_FIELD_MANAGER}-annotations"),
            ObjectType::Patch => format!("{DEFAULT_FIELD_MANAGER}-patch"),
            ObjectType::Manifest => DEFAULT_FIELD_MANAGER.to_owned(),
        })
}

fn force(state: &Value) -> bool {
    ["force_conflicts", "force"]
        .iter()
        .any(|k| attribute(state, k).and_then(Value::as_bool) == Some(true))
        || attribute(state, "field_manager")
            .and_then(|f| attribute(f, "force_conflicts"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// The `wait` block with what Terraform's forms add to it: `wait_for { fields }`, and the
/// `timeouts` of the operation (`create`, `update`, `delete`) where `wait` names no timeout.
fn effective_wait(state: &Value, operation: &str) -> Option<Value> {
    let mut wait = attribute(state, "wait").cloned();
    if let Some(fields) = attribute(state, "wait_for")
        .and_then(|w| attribute(w, "fields"))
        .filter(|f| f.as_object().is_some())
    {
        let mut block = wait.unwrap_or_else(|| Value::Object(Default::default()));
        let mut merged = attribute(&block, "fields")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in fields.as_object().into_iter().flatten() {
            merged.insert(k.clone(), v.clone());
        }
        set(&mut block, "fields", Value::Object(merged));
        wait = Some(block);
    }
    if let Some(timeout) = attribute(state, "timeouts").and_then(|t| attribute(t, operation)) {
        let mut block = wait.unwrap_or_else(|| Value::Object(Default::default()));
        if attribute(&block, "timeout").is_none() {
            set(&mut block, "timeout", timeout.clone());
        }
        wait = Some(block);
    }
    wait
}

/// The state says its deletion may take objects this stack does not manage with it.
fn force_destroy(state: &Value) -> bool {
    attribute(state, "force_destroy").and_then(Value::as_bool) == Some(true)
}

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

/// What holds an object's name now, against the uid a request named.
enum Holder {
    Gone,
    Another,
    Same { deleting: bool },
}

fn api_status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// What a conflict on a resourceVersion precondition says: the object changed since it was
/// read, and nothing was applied.
pub(crate) const CHANGED_SINCE_READ: &str =
    "The object changed since gpustack read it; nothing was changed. Apply again.";

fn conflict_detail(e: &kube::Error) -> Option<String> {
    match e {
        // An object changed since it was read, under a resourceVersion precondition.
        kube::Error::Api(status)
            if status.is_conflict() && status.message.contains("has been modified") =>
        {
            Some(format!("{}\n{CHANGED_SINCE_READ}", status.message))
        }
        kube::Error::Api(status) if status.is_conflict() => Some(format!(
            "{}\nAnother field manager owns these fields. Set force_conflicts = true to take them over, or stop managing them here.",
            status.message
        )),
        _ => None,
    }
}

impl Connected {
    /// The live cluster's GPU facts, or why they cannot be read (the plan then goes on
    /// without node lines, and says so).
    async fn cluster_fact(&self) -> Result<gpustack_protocol::ClusterFact, String> {
        self.gpu_cluster
            .get_or_init(|| async {
                gpustack_cluster::facts::cluster_fact(&self.cluster)
                    .await
                    .map_err(|e| api_error(&e))
            })
            .await
            .clone()
    }

    /// What holds `name` now, against the uid a request named (an apply's body, a delete's
    /// precondition). `None` when it cannot be read.
    async fn holder(
        &self,
        api: &kube::Api<DynamicObject>,
        name: &str,
        named: &str,
    ) -> Option<Holder> {
        match api.get_opt(name).await {
            Ok(None) => Some(Holder::Gone),
            Ok(Some(object)) if object.metadata.uid.as_deref() != Some(named) => {
                Some(Holder::Another)
            }
            Ok(Some(object)) => Some(Holder::Same {
                deleting: object.metadata.deletion_timestamp.is_some(),
            }),
            Err(_) => None,
        }
    }

    /// Why an apply that named the uid of the object it read was refused, when that object is
    /// no longer there: gone, or another of the same name. The API server refuses such an
    /// apply and changes nothing (409 where it would otherwise create the object, 422 where
    /// the uid would change), but a field-manager conflict can be what it reports first; the
    /// object as it is now tells them apart.
    async fn not_there(
        &self,
        api: &kube::Api<DynamicObject>,
        name: &str,
        named: Option<&str>,
        e: &kube::Error,
    ) -> Option<&'static str> {
        let named = named?;
        if !matches!(e, kube::Error::Api(status) if status.code == 409 || status.code == 422) {
            return None;
        }
        match self.holder(api, name, named).await? {
            Holder::Gone => Some("was deleted"),
            Holder::Another => Some("was replaced by another object of the same name"),
            Holder::Same { .. } => None,
        }
    }

    async fn kind_of(&self, id: &ObjectId) -> Result<Option<Kind>, Vec<Diagnostic>> {
        self.cluster
            .kind(&id.api_version, &id.kind)
            .await
            .map_err(|e| error("Cannot reach the Kubernetes API", api_error(&e)))
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
                None => Err(error(
                    &format!("The API server rejects {}", id.describe()),
                    api_error(&e),
                )),
            },
        }
    }

    // Long by design: a plan's steps in the order each needs the one before (the recorded
    // identity, the planned object, the dry-run apply or why none, the diff, what forces a
    // replacement, the collateral of a deletion), all on the same request and object.
    async fn plan(
        &self,
        ty: ObjectType,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let config = &request.config;
        let prior = request.prior_state.as_ref();
        // The stack's, also when the plan did not refresh it.
        if let Some(uid) = prior.and_then(recorded_uid) {
            self.known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(uid.to_owned());
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
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace,
            gpu_facts,
            existing,
            diagnostics,
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
        let group = {
            let mut present = self.present.lock().unwrap_or_else(|e| e.into_inner());
            present
                .entry((id.api_version.clone(), id.kind.clone(), namespace.clone()))
                .or_default()
                .clone()
        };
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

    /// One paginated LIST per (kind, namespace); every state of that group is answered from
    /// it. Each page is projected onto the states it answers as it arrives, so that what
    /// this process holds of the cluster is the states, not the namespace's objects. Each
    /// group owns its states and refreshes them in place: this process holds one copy of a
    /// state, however many objects a refresh reads.
    async fn read(&self, ty: ObjectType, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let mut groups: IndexMap<ListGroup, Vec<(usize, String)>> = IndexMap::new();
        let mut states: Vec<Option<Value>> = Vec::with_capacity(request.states.len());
        for (i, state) in request.states.into_iter().enumerate() {
            if let Some(id) = ObjectId::of(ty, &state) {
                groups
                    .entry((id.api_version, id.kind, id.namespace))
                    .or_default()
                    .push((i, id.name));
            }
            states.push(Some(state));
        }
        // A state belongs to one group at most: each group takes its own.
        let owned: Vec<_> = groups
            .into_iter()
            .map(|(key, members)| {
                let states: Vec<(usize, String, Value)> = members
                    .into_iter()
                    .filter_map(|(i, name)| Some((i, name, states[i].take()?)))
                    .collect();
                (key, states)
            })
            .collect();
        let lists = owned
            .into_iter()
            .map(|((api_version, kind, namespace), group)| async move {
                self.list_group(ty, &api_version, &kind, namespace, group)
                    .await
            });
        let mut diagnostics = Vec::new();
        for (answered, error) in futures::future::join_all(lists).await {
            if let Some(e) = error {
                diagnostics.push(Diagnostic::error("Cannot read from the Kubernetes API", e));
            }
            for (i, state) in answered {
                states[i] = state;
            }
        }
        let gpu_facts = self.read_facts(ty, &states, &mut diagnostics).await;
        ReadResourcesResponse {
            states,
            diagnostics,
            gpu_facts,
        }
    }

    /// The states of one (kind, namespace) group, refreshed from a paginated LIST: the live
    /// state of each whose object is listed, `None` for each whose object is gone. When a
    /// request fails, the states not yet read stay as they came, with the error.
    async fn list_group(
        &self,
        ty: ObjectType,
        api_version: &str,
        kind: &str,
        namespace: Option<String>,
        owned: Vec<(usize, String, Value)>,
    ) -> (Vec<(usize, Option<Value>)>, Option<String>) {
        let mut wanted: HashMap<String, Vec<(usize, Value)>> = HashMap::new();
        for (i, name, state) in owned {
            wanted.entry(name).or_default().push((i, state));
        }
        let mut answered = Vec::with_capacity(wanted.len());
        let unread = |mut answered: Vec<(usize, Option<Value>)>,
                      wanted: HashMap<String, Vec<(usize, Value)>>,
                      error: String| {
            let kept = wanted.into_values().flatten();
            answered.extend(kept.map(|(i, state)| (i, Some(state))));
            (answered, Some(error))
        };
        let found = match self.cluster.kind(api_version, kind).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                // The kind is gone from the cluster, and with it every object of the group.
                let gone = wanted.into_values().flatten().map(|(i, _)| (i, None));
                return (gone.collect(), None);
            }
            Err(e) => return unread(answered, wanted, api_error(&e)),
        };
        let namespace = found
            .namespaced
            .then(|| namespace.unwrap_or_else(|| "default".to_owned()));
        let api = self.cluster.api(&found, namespace.as_deref());
        let mut params = ListParams::default().limit(LIST_PAGE);
        loop {
            let page = match self.cluster.list_json(&api, &params).await {
                Ok(page) => page,
                Err(e) => return unread(answered, wanted, api_error(&e)),
            };
            let next = page.next().map(str::to_owned);
            for mut json in page.items {
                let Some((_, members)) = json
                    .pointer("/metadata/name")
                    .and_then(Json::as_str)
                    .and_then(|n| wanted.remove_entry(n))
                else {
                    continue;
                };
                // Items of a LIST carry no apiVersion and kind of their own.
                json["apiVersion"] = api_version.into();
                json["kind"] = kind.into();
                let uid = json.pointer("/metadata/uid").and_then(Json::as_str);
                if ty == ObjectType::Manifest
                    && let Some(uid) = uid
                {
                    self.known
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(uid.to_owned());
                }
                for (i, state) in members {
                    // An object of the recorded name but another uid is not the one this
                    // stack made or imported: that one is gone.
                    let replaced =
                        recorded_uid(&state).is_some_and(|recorded| Some(recorded) != uid);
                    answered.push((i, (!replaced).then(|| live_state(ty, state, &json))));
                }
            }
            match next {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        // A state the LIST did not answer is of an object that is gone.
        answered.extend(wanted.into_values().flatten().map(|(i, _)| (i, None)));
        (answered, None)
    }

    /// What the live objects say about GPUs, for drift; the cluster once, with the first.
    async fn read_facts(
        &self,
        ty: ObjectType,
        states: &[Option<Value>],
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<(usize, gpustack_protocol::GpuFact)> {
        let mut facts = Vec::new();
        for (i, state) in states.iter().enumerate() {
            let Some(state) = state else {
                continue;
            };
            let (Some(id), Some(object)) = (ObjectId::of(ty, state), self::desired(ty, state))
            else {
                continue;
            };
            let found = crate::capacity::object_facts(
                ty,
                &id.api_version,
                &id.kind,
                &id.name,
                id.namespace.as_deref(),
                &object,
                Some(&object),
            );
            if crate::capacity::needs_cluster(&found) && facts.is_empty() {
                self.push_cluster(&mut facts, i, diagnostics).await;
            }
            facts.extend(found.into_iter().map(|f| (i, f)));
        }
        facts
    }

    pub(crate) async fn push_cluster(
        &self,
        facts: &mut Vec<(usize, gpustack_protocol::GpuFact)>,
        index: usize,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        match self.cluster_fact().await {
            Ok(cluster) => facts.push((index, gpustack_protocol::GpuFact::Cluster(cluster))),
            Err(why) => diagnostics.push(gpustack_cluster::gpu_nodes_not_read(&why)),
        }
    }

    // Long by design: one server-side apply in order (the existence check of a create, the
    // stack's mark, the patch, conflicts, the waits, the state from the answer), each step
    // reading the object the one before produced.
    async fn apply(
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

    /// Deletes a managed object (waiting until it is gone), or gives back the fields a
    /// partial resource managed: server-side apply of nothing under the same field manager.
    /// Its warnings when it leaves something as it is.
    // Long by design: a deletion in order (the look again for collateral, the DELETE with its
    // propagation, the wait for a finalizer, or the give-back of a partial resource's fields).
    async fn delete(
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
    async fn plan_delete(
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
        let known = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
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
        seen.extend(
            self.known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .cloned(),
        );
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

    async fn nodes(&self, config: &Value) -> Result<Value, Vec<Diagnostic>> {
        let api: kube::Api<k8s_openapi::api::core::v1::Node> =
            kube::Api::all(self.cluster.client.clone());
        let mut params = ListParams::default();
        if let Some(selector) = text(config, "label_selector") {
            params = params.labels(selector);
        }
        let list = api
            .list(&params)
            .await
            .map_err(|e| error("Cannot list nodes", api_error(&e)))?;
        let quantities = |q: Option<
            &std::collections::BTreeMap<
                String,
                k8s_openapi::apimachinery::pkg::api::resource::Quantity,
            >,
        >| {
            Value::Object(
                q.into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), Value::string(v.0.clone())))
                    .collect(),
            )
        };
        let nodes = list
            .items
            .iter()
            .map(|n| {
                let status = n.status.as_ref();
                Value::Object(IndexMap::from([
                    (
                        "name".to_owned(),
                        Value::string(n.metadata.name.clone().unwrap_or_default()),
                    ),
                    (
                        "labels".to_owned(),
                        Value::Object(
                            n.metadata
                                .labels
                                .iter()
                                .flatten()
                                .map(|(k, v)| (k.clone(), Value::string(v.clone())))
                                .collect(),
                        ),
                    ),
                    (
                        "allocatable".to_owned(),
                        quantities(status.and_then(|s| s.allocatable.as_ref())),
                    ),
                    (
                        "capacity".to_owned(),
                        quantities(status.and_then(|s| s.capacity.as_ref())),
                    ),
                ]))
            })
            .collect();
        let mut state = config.clone();
        set(&mut state, "nodes", Value::List(nodes));
        Ok(state)
    }
}

impl Connected {
    /// Takes in a whole object by `apiVersion/Kind/[namespace/]name`.
    // Long by design: read the object, prove it is the one asked for, and record it as a plan
    // would (the mark, the fields the stack may set), answering every failure by name.
    async fn import(&self, ty: ObjectType, id: &str) -> ImportResourceResponse {
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

/// What one paginated LIST of a refresh reads: API version, kind, namespace.
type ListGroup = (String, String, Option<String>);

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

/// `data "kubernetes_nodes"`.
pub(crate) struct Nodes(pub(crate) Arc<Connected>);

#[async_trait::async_trait]
impl DataSource for Nodes {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        match self.0.nodes(&config).await {
            Ok(state) => ReadDataSourceResponse {
                state,
                diagnostics: vec![],
            },
            Err(diagnostics) => ReadDataSourceResponse {
                state: Value::Null,
                diagnostics,
            },
        }
    }
}
