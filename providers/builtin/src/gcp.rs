use crate::aws::taint_type;
use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, BlockNesting, GetSchemaRequest, GetSchemaResponse, ObjectAttr, Provider,
    ProviderSchema, Schema, Type, ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// GKE node pools and node auto-provisioning.
pub(crate) struct Gcp;

impl Provider for Gcp {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let config = provider_config("Google Cloud, with Application Default Credentials.")
            .attr("project", Attribute::required(Type::String))
            .attr(
                "endpoint",
                Attribute::optional(Type::String).describe("Endpoint override for tests."),
            );
        let accelerator = Schema::new("The GPUs of each node.")
            .attr("type", Attribute::required(Type::String).force_new())
            .attr("count", Attribute::required(Type::Number).force_new())
            .attr(
                "gpu_partition_size",
                Attribute::optional(Type::String)
                    .force_new()
                    .describe("MIG profile, e.g. 1g.5gb."),
            )
            .attr(
                "sharing_strategy",
                Attribute::optional(Type::String).force_new(),
            )
            .attr(
                "max_shared_clients_per_gpu",
                Attribute::optional(Type::Number).force_new(),
            )
            .attr(
                "driver_version",
                Attribute::optional(Type::String).force_new(),
            );
        let pool = Schema::new("A GKE node pool.")
            .attr("location", Attribute::required(Type::String).force_new())
            .attr("cluster", Attribute::required(Type::String).force_new())
            .attr("name", Attribute::required(Type::String).force_new())
            .attr(
                "machine_type",
                Attribute::required(Type::String).force_new(),
            )
            .attr("node_count", Attribute::optional_computed(Type::Number))
            .attr("min_node_count", Attribute::optional(Type::Number))
            .attr("max_node_count", Attribute::optional(Type::Number))
            .attr("spot", Attribute::optional(Type::Bool).force_new())
            .attr("labels", Attribute::optional(Type::map(Type::String)))
            .attr("taints", Attribute::optional(Type::list(taint_type())))
            .attr("id", Attribute::computed(Type::String))
            .block("accelerator", BlockNesting::Single, accelerator);
        let limit = Type::object([
            ("resource_type", ObjectAttr::required(Type::String)),
            ("minimum", ObjectAttr::optional(Type::Number)),
            ("maximum", ObjectAttr::required(Type::Number)),
        ]);
        let nap = Schema::new("Cluster-wide node auto-provisioning with per-accelerator limits.")
            .attr("location", Attribute::required(Type::String).force_new())
            .attr("cluster", Attribute::required(Type::String).force_new())
            .attr("enabled", Attribute::optional_computed(Type::Bool))
            .attr("resource_limits", Attribute::required(Type::list(limit)))
            .attr("locations", Attribute::optional(Type::list(Type::String)));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "gcp".into(),
                config,
                resources: [
                    ("gke_nodepool".to_owned(), pool),
                    ("gke_node_autoprovisioning".to_owned(), nap),
                ]
                .into(),
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
        if request.type_name == "gke_nodepool" {
            check.one_of("accelerator.sharing_strategy", &["TIME_SHARING", "MPS"]);
            check.range("accelerator.max_shared_clients_per_gpu", 2.0, 48.0);
            check.one_of(
                "accelerator.driver_version",
                &["INSTALLATION_DISABLED", "DEFAULT", "LATEST"],
            );
            if check.get("accelerator.sharing_strategy").is_some()
                && check
                    .get("accelerator.max_shared_clients_per_gpu")
                    .is_none()
            {
                check.error(
                    "accelerator.max_shared_clients_per_gpu",
                    "Missing attribute",
                    "GPU sharing needs max_shared_clients_per_gpu.".into(),
                );
            }
            check.cloud_taint_effects("taints", "GKE");
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}
