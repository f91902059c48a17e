use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, GetSchemaRequest, GetSchemaResponse, ObjectAttr, Provider, ProviderSchema, Schema,
    Type, ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// GPU smoke tests and capacity assertions on a cluster.
pub(crate) struct Gpu;

fn toleration_type() -> Type {
    Type::object([
        ("key", ObjectAttr::optional(Type::String)),
        ("operator", ObjectAttr::optional(Type::String)),
        ("value", ObjectAttr::optional(Type::String)),
        ("effect", ObjectAttr::optional(Type::String)),
    ])
}

impl Provider for Gpu {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let config = provider_config("GPU validation on a Kubernetes cluster.")
            .attr("config_path", Attribute::optional(Type::String))
            .attr("context", Attribute::optional(Type::String));
        let smoke = Schema::new(
            "Runs vectorAdd as a Job of N pods × M GPUs and checks where and how it ran.",
        )
        .attr(
            "node_selector",
            Attribute::optional(Type::map(Type::String)),
        )
        .attr(
            "tolerations",
            Attribute::optional_computed(Type::list(toleration_type()))
                .describe("Default: tolerate nvidia.com/gpu."),
        )
        .attr(
            "expect_allocatable",
            Attribute::optional(Type::map(Type::Number))
                .describe("Resource → allocatable each selected node must advertise."),
        )
        .attr("pods", Attribute::optional_computed(Type::Number))
        .attr("gpus_per_pod", Attribute::optional_computed(Type::Number))
        .attr(
            "resource_name",
            Attribute::optional_computed(Type::String).describe("Default nvidia.com/gpu."),
        )
        .attr("same_node", Attribute::optional(Type::Bool))
        .attr("image", Attribute::optional_computed(Type::String))
        .attr("namespace", Attribute::optional_computed(Type::String))
        .attr("timeout", Attribute::optional(Type::String))
        .attr("passed", Attribute::computed(Type::Bool))
        .attr("result", Attribute::computed(Type::Any));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "gpu".into(),
                config,
                resources: [("gpu_smoke_test".to_owned(), smoke)].into(),
                data_sources: Default::default(),
            },
            diagnostics: vec![],
        }
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest,
    ) -> ValidateResourceConfigResponse {
        let mut check = Checker::new(&request.config);
        check.range("pods", 1.0, 1000.0);
        check.range("gpus_per_pod", 1.0, 64.0);
        if let Some(tolerations) = check.get("tolerations").and_then(|t| t.as_list()) {
            for (i, t) in tolerations.iter().enumerate() {
                if let Some(op) = t
                    .as_object()
                    .and_then(|o| o.get("operator"))
                    .and_then(|v| v.as_str())
                    && op != "Exists"
                    && op != "Equal"
                {
                    check.error(
                        &format!("tolerations[{i}].operator"),
                        "Invalid toleration",
                        format!("operator \"{op}\" must be Exists or Equal."),
                    );
                }
            }
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}
