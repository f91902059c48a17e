//! The `azure` provider: AKS agent pools through Azure Resource Manager.
//!
//! Split by kind: this file is the family (the schema, the checks, connecting); `arm.rs`
//! the ARM client; `model.rs` the agent pool as ARM writes it; `pool.rs` the agent pool as a
//! [`CloudPool`](gpustack_provider_sdk::pool::CloudPool): its state, the body of a PUT, and
//! create, update and delete.

mod arm;
pub mod azurerm;
mod model;
mod pool;
mod terraform;

use arm::{Arm, AzureSettings};
use gpustack_protocol::{Attribute, Diagnostic, Provider, ProviderSchema, Schema, Type, Value};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::pool::{CloudPool, NodeDrainer, Pools};
use gpustack_provider_sdk::resource::Resources;
use std::collections::BTreeMap;
use std::sync::Arc;

/// AKS node pools through Azure Resource Manager.
#[derive(Default)]
pub(crate) struct Azure {
    drainer: Option<Arc<dyn NodeDrainer>>,
}

gpustack_provider_sdk::cloud_entry_points!(Azure { drainer });

#[async_trait::async_trait]
impl Family for Azure {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("azure", &["aks_nodepool"], &[])
    }

    /// A pool is its name in its cluster and resource group.
    fn identity(&self, _: &str, state: &Value) -> Option<String> {
        Connected::key(state).map(|key| format!("aks:{key}"))
    }

    fn schema(&self) -> ProviderSchema {
        let config = provider_config("Azure Resource Manager, with the standard credential chain.")
            .attr("subscription_id", Attribute::required(Type::String))
            .attr("tenant_id", Attribute::optional(Type::String))
            .attr("client_id", Attribute::optional(Type::String))
            .attr(
                "use_msi",
                Attribute::optional(Type::Bool)
                    .describe("Authenticate with the machine's managed identity."),
            )
            .attr(
                "endpoint",
                Attribute::optional(Type::String)
                    .describe("ARM endpoint; default https://management.azure.com."),
            )
            .attr(
                "api_version",
                Attribute::optional(Type::String).describe("Default 2026-08-01."),
            );
        let pool = gpustack_provider_sdk::pool::pool_schema(Schema::new("An AKS agent pool.")
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
                "gpu_management_mode",
                Attribute::optional(Type::String)
                    .force_new()
                    .describe("Managed: AKS installs the driver, the device plugin and a DCGM exporter itself (gpuProfile.nvidia.managementMode)."),
            )
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
            .attr("tags", Attribute::optional(Type::map(Type::String)))
            .attr("id", Attribute::computed(Type::String))
            .attr("node_image_version", Attribute::computed(Type::String))
            .attr("provisioning_state", Attribute::computed(Type::String))
            );
        ProviderSchema {
            name: "azure".into(),
            config,
            resources: [("aks_nodepool".to_owned(), pool)].into(),
            data_sources: Default::default(),
        }
    }

    fn check(&self, _: &str, check: &mut Checker<'_>) {
        gpustack_provider_sdk::pool::check_rollout(check);
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
        check.min_not_above_max("min_count", "max_count", "Invalid autoscaling range");
        check.one_of("mode", &["System", "User"]);
        check.one_of(
            "gpu_instance_profile",
            &["MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"],
        );
        check.one_of("gpu_driver", &["Install", "None"]);
        check.one_of("gpu_management_mode", &["Managed", "Unmanaged"]);
        if check.str("gpu_instance_profile").is_some()
            && let Some(size) = check.str("vm_size")
            && let Some(gpus) = gpustack_provider_sdk::catalog::gpus(size)
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
    }

    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        terraform::review(self, change)
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let settings = AzureSettings {
            subscription_id: text(config, "subscription_id")
                .unwrap_or_default()
                .to_owned(),
            tenant_id: text(config, "tenant_id").map(str::to_owned),
            client_id: text(config, "client_id").map(str::to_owned),
            use_msi: attribute(config, "use_msi").and_then(Value::as_bool) == Some(true),
            client_secret: None,
            endpoint: text(config, "endpoint").map(str::to_owned),
            api_version: text(config, "api_version").map(str::to_owned),
        };
        let arm = Arm::new(&settings).map_err(|e| {
            vec![Diagnostic::error(
                "Cannot set up the Azure client",
                gpustack_protocol::error_chain(&e),
            )]
        })?;
        Ok(Arc::new(Resources::new().resource(
            "aks_nodepool",
            Pools(Arc::new(Connected::new(arm)), self.drainer.clone()),
        )))
    }
}

fn is_taint(s: &str) -> bool {
    let Some((kv, effect)) = s.rsplit_once(':') else {
        return false;
    };
    !kv.is_empty() && ["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
}

/// An `azure` provider block, connected.
impl Connected {
    pub(crate) fn new(arm: Arm) -> Self {
        Self {
            arm,
            skus: Default::default(),
            locations: Default::default(),
        }
    }
}

pub(crate) struct Connected {
    arm: Arm,
    /// Resource SKUs' GPU counts per VM size, by location (failed lookups are not kept), and
    /// each cluster's location.
    skus: tokio::sync::Mutex<BTreeMap<String, BTreeMap<String, u32>>>,
    locations: tokio::sync::Mutex<BTreeMap<(String, String), String>>,
}
