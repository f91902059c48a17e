use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, GetSchemaRequest, GetSchemaResponse, Provider, ProviderSchema, Schema, Type,
    ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// Helm releases through the `helm` CLI.
pub(crate) struct Helm;

impl Provider for Helm {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let config = provider_config("Helm releases through the helm CLI (3.x or 4.x).")
            .attr(
                "helm_binary",
                Attribute::optional(Type::String).describe("Path of helm; default: helm on PATH."),
            )
            .attr("config_path", Attribute::optional(Type::String))
            .attr("context", Attribute::optional(Type::String));
        let release = Schema::new("A Helm release.")
            .attr("name", Attribute::required(Type::String).force_new())
            .attr(
                "chart",
                Attribute::required(Type::String).describe(
                    "Chart name in the repository, an OCI reference, or a local path or .tgz.",
                ),
            )
            .attr("repository", Attribute::optional(Type::String))
            .attr("version", Attribute::optional(Type::String))
            .attr(
                "namespace",
                Attribute::optional_computed(Type::String).force_new(),
            )
            .attr("create_namespace", Attribute::optional(Type::Bool))
            .attr(
                "values",
                Attribute::optional(Type::Any).describe("Chart values, as HCL."),
            )
            .attr("atomic", Attribute::optional(Type::Bool))
            .attr("wait", Attribute::optional(Type::Bool))
            .attr("timeout", Attribute::optional(Type::String))
            .attr("revision", Attribute::computed(Type::Number))
            .attr("status", Attribute::computed(Type::String))
            .attr("app_version", Attribute::computed(Type::String));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "helm".into(),
                config,
                resources: [("helm_release".to_owned(), release)].into(),
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
        if let Some(name) = check.str("name")
            && (name.is_empty() || name.len() > 53 || !crate::check::is_dns_label(name))
        {
            check.error(
                "name",
                "Invalid release name",
                format!("\"{name}\" must be a DNS label of at most 53 characters."),
            );
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}
