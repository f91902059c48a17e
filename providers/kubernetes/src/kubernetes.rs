//! The `kubernetes` provider: its schema (every resource type and data source it serves, the
//! translated ones with the rest), its checks of a configuration, and the connection that
//! hands each type its cluster.

use crate::cluster::Cluster;
use crate::connection::{Connected, check_config, terraform_config};
use crate::manifest::{Objects, identity_of_manifest};
use crate::types::ObjectType;
use gpustack_protocol::{
    Attribute, BlockNesting, Diagnostic, Provider, ProviderSchema, ProviderTypes, ResourceMode,
    Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::resource::Resources;
use indexmap::IndexMap;
use std::sync::Arc;

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

#[async_trait::async_trait]
impl Family for Kubernetes {
    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<gpustack_protocol::TerraformTakeover, &'static str>> {
        crate::takeover::kubernetes(type_name, attributes)
    }

    fn import_id_of_identity(
        &self,
        type_name: &str,
        identity: &gpustack_protocol::Value,
    ) -> Option<Result<String, gpustack_protocol::ImportIdError>> {
        crate::takeover::import_id_of_identity(type_name, identity)
    }

    /// A typed kind's change is reviewed as the object it stands for.
    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        let (type_name, before, after) = (change.type_name, change.before, change.after);
        let facts = if let Some(kind) = crate::typed::kind_of(type_name) {
            let object = |typed: &Value| {
                crate::typed::manifest(kind, &crate::typed::object_part(kind, typed))
                    .map(|m| Value::Object([("manifest".to_owned(), Value::from_json(&m))].into()))
            };
            crate::manifest::reviewed_facts(
                ObjectType::Manifest,
                before.and_then(object).as_ref(),
                after.and_then(object).as_ref(),
            )
            .into_iter()
            .map(|f| crate::typed::typed_fact(kind, f))
            .collect()
        } else {
            crate::manifest::reviewed_facts(ObjectType::of(type_name)?, before, after)
        };
        Some(gpustack_protocol::Reviewed {
            facts,
            diagnostics: Vec::new(),
        })
    }

    fn schema(&self) -> ProviderSchema {
        let mut schema = untyped_schema();
        for name in typed_resources() {
            if let Some(built) = typed_schema(ResourceMode::Managed, name) {
                schema.resources.insert(name.to_owned(), built);
            }
        }
        for name in crate::data::TYPED_DATA_SOURCES {
            if let Some(built) = typed_schema(ResourceMode::Data, name) {
                schema.data_sources.insert((*name).to_owned(), built);
            }
        }
        schema
    }

    /// The typed kinds' names without their schemas, which are most of the provider's and
    /// built only for the types a stack uses.
    fn types(&self) -> ProviderTypes {
        let mut types = ProviderTypes::of(untyped());
        types.resources.extend(typed_resources().map(str::to_owned));
        types.data_sources.extend(
            crate::data::TYPED_DATA_SOURCES
                .iter()
                .filter(|name| crate::typed::kind_of(name).is_some())
                .map(|name| (*name).to_owned()),
        );
        types
    }

    fn config(&self) -> Schema {
        untyped().config.clone()
    }

    fn type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        if let Some(schema) = typed_schema(mode, type_name) {
            return Some(schema);
        }
        let untyped = untyped();
        match mode {
            ResourceMode::Managed => untyped.resources.get(type_name).cloned(),
            ResourceMode::Data => untyped.data_sources.get(type_name).cloned(),
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
            return identity_of_manifest(&state);
        }
        (ObjectType::of(type_name) == Some(ObjectType::Manifest))
            .then(|| identity_of_manifest(state))
            .flatten()
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
        if let Some(owned) = crate::owned_fields::Owned::of(type_name) {
            crate::owned_fields::check(owned, check);
            return;
        }
        if let Some(one_shot) = crate::one_shot::OneShot::of(type_name) {
            crate::one_shot::check(one_shot, check);
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
                            write_only: (kind.kind == "Secret").then(|| {
                                Box::new(Objects {
                                    connected: connected.clone(),
                                    ty: ObjectType::Patch,
                                })
                                    as Box<dyn gpustack_provider_sdk::resource::Resource>
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
        let resources =
            crate::owned_fields::TYPES
                .into_iter()
                .fold(resources, |resources, (name, owned)| {
                    resources.resource(
                        name,
                        crate::owned_fields::OwnedFields {
                            inner: Objects {
                                connected: connected.clone(),
                                ty: ObjectType::Patch,
                            },
                            owned,
                        },
                    )
                });
        let resources = crate::one_shot::CSR_TYPES
            .into_iter()
            .chain([crate::one_shot::TOKEN_REQUEST])
            .fold(resources, |resources, name| {
                resources.resource(
                    name,
                    crate::one_shot::OneShots {
                        connected: connected.clone(),
                        one_shot: crate::one_shot::OneShot::of(name)
                            .expect("a one-shot type's name"),
                    },
                )
            });
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
                crate::cluster_info::ALL_NAMESPACES,
                crate::cluster_info::AllNamespaces(connected.cluster.clone()),
            )
            .data_source(
                crate::cluster_info::SERVER_VERSION,
                crate::cluster_info::ServerVersion {
                    cluster: connected.cluster.clone(),
                    kubectl: false,
                },
            )
            .data_source(
                "kubernetes_resources",
                crate::data::ResourcesData(connected.cluster.clone()),
            );
        Ok(Arc::new(resources.data_source(
            "kubernetes_nodes",
            crate::data::Nodes(connected.cluster.clone()),
        )))
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

/// The resource types built from tables rather than written out: the workload kinds, the
/// node taint, the node rollout and the types that own fields of someone else's object.
fn typed_resources() -> impl Iterator<Item = &'static str> {
    crate::typed::KINDS
        .iter()
        .flat_map(|kind| kind.names.iter().copied())
        .chain([crate::taint::TYPE, crate::rollout::TYPE])
        .chain(crate::owned_fields::TYPES.map(|(name, _)| name))
        .chain(crate::one_shot::CSR_TYPES)
        .chain([crate::one_shot::TOKEN_REQUEST])
}

/// The schema of one of [`typed_resources`] or of the typed data sources.
fn typed_schema(mode: ResourceMode, type_name: &str) -> Option<Schema> {
    match mode {
        ResourceMode::Managed if type_name == crate::taint::TYPE => Some(crate::taint::schema()),
        ResourceMode::Managed if type_name == crate::rollout::TYPE => {
            Some(crate::rollout::schema())
        }
        ResourceMode::Managed => {
            if let Some(owned) = crate::owned_fields::Owned::of(type_name) {
                Some(crate::owned_fields::schema(owned))
            } else if let Some(one_shot) = crate::one_shot::OneShot::of(type_name) {
                Some(crate::one_shot::schema(one_shot))
            } else {
                crate::typed::kind_of(type_name).map(crate::typed::schema)
            }
        }
        ResourceMode::Data => crate::data::TYPED_DATA_SOURCES
            .contains(&type_name)
            .then(|| crate::typed::kind_of(type_name))
            .flatten()
            .map(crate::data::typed_schema),
    }
}

/// [`untyped_schema`], built once for a run's registry and each type it asks for.
fn untyped() -> &'static ProviderSchema {
    static UNTYPED: std::sync::OnceLock<ProviderSchema> = std::sync::OnceLock::new();
    UNTYPED.get_or_init(untyped_schema)
}

/// The provider's configuration and the types written out by hand.
fn untyped_schema() -> ProviderSchema {
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
    let resources: IndexMap<String, Schema> = [
        ("kubernetes_manifest".to_owned(), manifest),
        ("kubernetes_labels".to_owned(), labels),
        ("kubernetes_annotations".to_owned(), annotations),
        ("kubernetes_patch".to_owned(), patch),
    ]
    .into();
    let data_sources: IndexMap<String, Schema> = [
        ("kubernetes_nodes".to_owned(), nodes),
        (
            crate::cluster_info::ALL_NAMESPACES.to_owned(),
            crate::cluster_info::all_namespaces_schema(),
        ),
        (
            crate::cluster_info::SERVER_VERSION.to_owned(),
            crate::cluster_info::server_version_schema(false),
        ),
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
    ProviderSchema {
        name: "kubernetes".into(),
        config,
        resources,
        data_sources,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the family answers without schemas are the whole schema's, and each type's
    /// schema built alone is the one in the whole.
    #[test]
    fn the_types_answered_lazily_are_the_whole_schemas() {
        let whole = Kubernetes.schema();
        assert_eq!(Kubernetes.types(), ProviderTypes::of(&whole));
        for (name, schema) in &whole.resources {
            assert_eq!(
                Kubernetes.type_schema(ResourceMode::Managed, name).as_ref(),
                Some(schema),
                "{name}"
            );
        }
        for (name, schema) in &whole.data_sources {
            assert_eq!(
                Kubernetes.type_schema(ResourceMode::Data, name).as_ref(),
                Some(schema),
                "{name}"
            );
        }
        assert!(whole.resources.len() > 40, "{}", whole.resources.len());
    }
}
