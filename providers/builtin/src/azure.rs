use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, GetSchemaRequest, GetSchemaResponse, Provider, ProviderSchema, Schema, Type,
    ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// AKS node pools through Azure Resource Manager.
pub(crate) struct Azure;

impl Provider for Azure {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let config = provider_config("Azure Resource Manager, with the standard credential chain.")
            .attr("subscription_id", Attribute::required(Type::String))
            .attr("tenant_id", Attribute::optional(Type::String))
            .attr("client_id", Attribute::optional(Type::String))
            .attr(
                "endpoint",
                Attribute::optional(Type::String)
                    .describe("ARM endpoint; default https://management.azure.com."),
            )
            .attr(
                "api_version",
                Attribute::optional(Type::String).describe("Default 2026-08-01."),
            );
        let pool = Schema::new("An AKS agent pool.")
            .attr(
                "resource_group",
                Attribute::required(Type::String).force_new(),
            )
            .attr("cluster", Attribute::required(Type::String).force_new())
            .attr("name", Attribute::required(Type::String).force_new())
            .attr("vm_size", Attribute::required(Type::String).force_new())
            .attr("node_count", Attribute::optional_computed(Type::Number))
            .attr("auto_scaling", Attribute::optional(Type::Bool))
            .attr("min_count", Attribute::optional(Type::Number))
            .attr("max_count", Attribute::optional(Type::Number))
            .attr("mode", Attribute::optional_computed(Type::String))
            .attr("node_labels", Attribute::optional(Type::map(Type::String)))
            .attr("node_taints", Attribute::optional(Type::list(Type::String)))
            .attr("spot", Attribute::optional(Type::Bool).force_new())
            .attr(
                "spot_eviction_policy",
                Attribute::optional(Type::String).force_new(),
            )
            .attr(
                "gpu_instance_profile",
                Attribute::optional(Type::String).force_new(),
            )
            .attr("gpu_driver", Attribute::optional(Type::String).force_new())
            .attr(
                "os_disk_size_gb",
                Attribute::optional_computed(Type::Number).force_new(),
            )
            .attr(
                "zones",
                Attribute::optional(Type::list(Type::String)).force_new(),
            )
            .attr(
                "orchestrator_version",
                Attribute::optional_computed(Type::String),
            )
            .attr("id", Attribute::computed(Type::String))
            .attr("provisioning_state", Attribute::computed(Type::String));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "azure".into(),
                config,
                resources: [("aks_nodepool".to_owned(), pool)].into(),
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
        if let Some(name) = check.str("name") {
            let mut chars = name.chars();
            let valid = name.len() <= 12
                && chars.next().is_some_and(|c| c.is_ascii_lowercase())
                && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !valid {
                check.error(
                    "name",
                    "Invalid node pool name",
                    format!("\"{name}\" must match ^[a-z][a-z0-9]{{0,11}}$ (AKS)."),
                );
            }
        }
        check.range("node_count", 0.0, 1000.0);
        check.range("min_count", 0.0, 1000.0);
        check.range("max_count", 0.0, 1000.0);
        if let (Some(min), Some(max)) = (check.number("min_count"), check.number("max_count"))
            && min > max
        {
            check.error(
                "min_count",
                "Invalid autoscaling range",
                format!("min_count {min} is greater than max_count {max}."),
            );
        }
        check.one_of("mode", &["System", "User"]);
        check.one_of(
            "gpu_instance_profile",
            &["MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"],
        );
        check.one_of("gpu_driver", &["Install", "None"]);
        if check.str("gpu_instance_profile").is_some()
            && let Some(size) = check.str("vm_size")
            && let Some(gpus) = crate::catalog::gpus(size)
            && !gpus.has_mig()
        {
            check.error(
                "gpu_instance_profile",
                "MIG on a GPU without MIG",
                format!(
                    "{size} has {} GPUs, which cannot be partitioned with MIG; MIG needs an A100, A30, H100 or H200 size such as Standard_NC24ads_A100_v4.",
                    gpus.model
                ),
            );
        }
        check.one_of("spot_eviction_policy", &["Delete", "Deallocate"]);
        if let Some(taints) = check.get("node_taints").and_then(|t| t.as_list()) {
            for (i, taint) in taints.iter().enumerate() {
                if let Some(t) = taint.as_str()
                    && !is_taint(t)
                {
                    check.error(
                        &format!("node_taints[{i}]"),
                        "Invalid taint",
                        format!("\"{t}\" is not of the form key=value:Effect."),
                    );
                }
            }
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}

fn is_taint(s: &str) -> bool {
    let Some((kv, effect)) = s.rsplit_once(':') else {
        return false;
    };
    !kv.is_empty() && ["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
}
