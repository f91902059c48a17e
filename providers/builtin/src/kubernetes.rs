use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, BlockNesting, GetSchemaRequest, GetSchemaResponse, Provider, ProviderSchema, Schema,
    Type, ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// Any Kubernetes object by server-side apply, and partial management of objects owned by others.
pub(crate) struct Kubernetes;

fn object_ref(schema: Schema) -> Schema {
    schema
        .attr("api_version", Attribute::required(Type::String).force_new())
        .attr("kind", Attribute::required(Type::String).force_new())
        .attr("name", Attribute::required(Type::String).force_new())
        .attr("namespace", Attribute::optional(Type::String).force_new())
        .attr(
            "field_manager",
            Attribute::optional_computed(Type::String)
                .describe("Server-side apply field manager, default \"gpustack\"."),
        )
        .attr("force_conflicts", Attribute::optional(Type::Bool))
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

impl Provider for Kubernetes {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
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
        let manifest = Schema::new("Any Kubernetes object, applied server-side.")
            .attr(
                "manifest",
                Attribute::required(Type::Any).describe("The object, as HCL."),
            )
            .attr("field_manager", Attribute::optional_computed(Type::String))
            .attr("force_conflicts", Attribute::optional(Type::Bool))
            .attr("delete_propagation", Attribute::optional(Type::String))
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
        .attr("labels", Attribute::required(Type::map(Type::String)));
        let patch = object_ref(Schema::new(
            "Fields of an object owned by someone else (such as the ClusterPolicy).",
        ))
        .attr(
            "patch",
            Attribute::required(Type::Any).describe("The fields gpustack manages, as HCL."),
        )
        .block("wait", BlockNesting::Single, wait_block());
        let nodes = Schema::new("The nodes of the cluster, optionally by label selector.")
            .attr("label_selector", Attribute::optional(Type::String))
            .attr("nodes", Attribute::computed(Type::list(Type::Any)));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "kubernetes".into(),
                config,
                resources: [
                    ("kubernetes_manifest".to_owned(), manifest),
                    ("kubernetes_labels".to_owned(), labels),
                    ("kubernetes_patch".to_owned(), patch),
                ]
                .into(),
                data_sources: [("kubernetes_nodes".to_owned(), nodes)].into(),
            },
            diagnostics: vec![],
        }
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest,
    ) -> ValidateResourceConfigResponse {
        let mut check = Checker::new(&request.config);
        if request.type_name == "kubernetes_manifest" {
            for field in ["apiVersion", "kind", "metadata.name"] {
                if check.get("manifest").is_some()
                    && check.get(&format!("manifest.{field}")).is_none()
                    && !is_unknown_below(&request.config, "manifest", field)
                {
                    check.error(
                        "manifest",
                        "Incomplete manifest",
                        format!("The manifest has no {field}."),
                    );
                }
            }
        }
        check.one_of(
            "delete_propagation",
            &["Foreground", "Background", "Orphan"],
        );
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
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
