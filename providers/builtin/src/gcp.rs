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
            if let Some(partition) = check.str("accelerator.gpu_partition_size") {
                let accelerator = check.str("accelerator.type").unwrap_or_default();
                match mig_partitions(accelerator) {
                    None => check.error(
                        "accelerator.gpu_partition_size",
                        "MIG on a GPU without MIG",
                        format!(
                            "{accelerator} cannot be partitioned with MIG; MIG needs nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb or nvidia-h200-141gb."
                        ),
                    ),
                    Some(sizes) if !sizes.contains(&partition) => check.error(
                        "accelerator.gpu_partition_size",
                        "Unknown MIG partition",
                        format!(
                            "{accelerator} has the partition sizes {}, not {partition}.",
                            sizes.join(", ")
                        ),
                    ),
                    Some(_) => {}
                }
                if check.str("accelerator.sharing_strategy") == Some("MPS") {
                    check.error(
                        "accelerator.sharing_strategy",
                        "MPS on MIG partitions",
                        "GKE does not run MPS on MIG partitions: use TIME_SHARING, or drop gpu_partition_size.".into(),
                    );
                }
            }
            let own_plugin = check
                .get("labels")
                .and_then(|l| l.as_object())
                .and_then(|l| l.get("gke-no-default-nvidia-gpu-device-plugin"))
                .and_then(|v| v.as_str())
                == Some("true");
            if own_plugin && check.get("accelerator.sharing_strategy").is_some() {
                check.error(
                    "accelerator.sharing_strategy",
                    "GKE GPU sharing without GKE's device plugin",
                    "sharing_strategy is carried out by GKE's device plugin, which the label gke-no-default-nvidia-gpu-device-plugin=true turns off for NVIDIA's; share GPUs with NVIDIA's plugin instead (modules/time-slicing or modules/mps), or remove the label.".into(),
                );
            }
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}

/// The MIG partition sizes GKE offers per accelerator; `None` for GPUs without MIG.
fn mig_partitions(accelerator: &str) -> Option<&'static [&'static str]> {
    match accelerator {
        "nvidia-tesla-a100" => Some(&["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"]),
        "nvidia-a100-80gb" => Some(&["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"]),
        "nvidia-h100-80gb" | "nvidia-h100-mega-80gb" => {
            Some(&["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"])
        }
        "nvidia-h200-141gb" => Some(&[
            "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb",
        ]),
        _ => None,
    }
}
