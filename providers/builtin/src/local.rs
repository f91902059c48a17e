use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, GetSchemaRequest, GetSchemaResponse, Provider, ProviderSchema, Schema, Type,
    ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// Files on the machine that runs gpustack: rendered manifests for GitOps repositories, and
/// the offline provider that exercises the whole engine without a cloud.
pub(crate) struct Local;

impl Provider for Local {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let file = Schema::new("A file on the local disk, written atomically.")
            .attr(
                "filename",
                Attribute::required(Type::String)
                    .force_new()
                    .describe("Path of the file, relative to the stack."),
            )
            .attr(
                "content",
                Attribute::optional(Type::String).describe("Content of the file."),
            )
            .attr(
                "sensitive_content",
                Attribute::optional(Type::String)
                    .sensitive()
                    .describe("Content that never appears in plans, logs or output."),
            )
            .attr(
                "file_permission",
                Attribute::optional_computed(Type::String)
                    .force_new()
                    .describe("Octal mode, default \"0644\"."),
            )
            .attr(
                "id",
                Attribute::computed(Type::String).describe("SHA-256 of the content."),
            );
        let data_file = Schema::new("Reads a file from the local disk.")
            .attr("filename", Attribute::required(Type::String))
            .attr("content", Attribute::computed(Type::String));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "local".into(),
                config: provider_config("Local files; needs no configuration."),
                resources: [("local_file".to_owned(), file)].into(),
                data_sources: [("local_file".to_owned(), data_file)].into(),
            },
            diagnostics: vec![],
        }
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest,
    ) -> ValidateResourceConfigResponse {
        let mut check = Checker::new(&request.config);
        if request.type_name == "local_file" {
            if check.get("content").is_some() && check.get("sensitive_content").is_some() {
                check.error(
                    "sensitive_content",
                    "Conflicting attributes",
                    "Set either content or sensitive_content, not both.".into(),
                );
            }
            if let Some(mode) = check.str("file_permission")
                && (mode.len() > 4 || u32::from_str_radix(mode, 8).is_err())
            {
                check.error(
                    "file_permission",
                    "Invalid file permission",
                    format!("\"{mode}\" is not an octal mode such as \"0644\"."),
                );
            }
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}
