//! Terraform's AzureRM provider (`provider "azurerm"`, hashicorp/azurerm) as far as GPU node
//! pools go: its configuration in the provider's schema and its
//! `azurerm_kubernetes_cluster_node_pool`, served on the same ARM flow as `aks_nodepool`
//! (through [`TerraformPools`]). Every argument of the pool is honoured or refused by name
//! with the reason; the provider's other types stay Terraform's.

use crate::arm::{Arm, AzureSettings, DEFAULT_ENDPOINT};
use crate::terraform::NODE_POOL;
use crate::{Azure, Connected};
use gpustack_protocol::{
    Attribute, BlockNesting, Diagnostic, Provider, ProviderSchema, ProviderTypes, Schema, Type,
    Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::pool::{NodeDrainer, Pools};
use gpustack_provider_sdk::resource::Resources;
use gpustack_provider_sdk::terraform_pool::{
    TerraformPools, own_checks, refuse_unserved, refused_block, single_block as one,
};
use std::sync::Arc;

/// Terraform's AzureRM provider.
pub struct AzureRm {
    drainer: Option<Arc<dyn NodeDrainer>>,
}

/// `provider "azurerm"`, draining a pool's nodes before the pool goes with `drainer`.
pub fn provider_with(
    drainer: Option<Arc<dyn NodeDrainer>>,
) -> Arc<dyn gpustack_provider_sdk::family::ProviderFactory> {
    Arc::new(gpustack_provider_sdk::family::Factory(AzureRm { drainer }))
}

/// The node pool's arguments gpustack does not serve, and why.
const REFUSED: &[(&str, &str)] = &[
    (
        "spot_max_price",
        "a Spot pool pays up to the on-demand price",
    ),
    ("os_disk_type", "the OS disk is AKS's default for the size"),
    ("os_sku", "the node image is AKS's default (Ubuntu)"),
    ("os_type", "GPU pools run Linux"),
    ("max_pods", "the cluster's default pods per node stand"),
    ("vnet_subnet_id", "the pool takes its cluster's subnet"),
    (
        "pod_subnet_id",
        "the pool takes its cluster's pod networking",
    ),
    ("node_public_ip_enabled", "nodes get no public IPs"),
    ("node_public_ip_prefix_id", "nodes get no public IPs"),
    ("host_encryption_enabled", "host encryption is not served"),
    ("fips_enabled", "FIPS node images are not served"),
    ("ultra_ssd_enabled", "Ultra disks are not served"),
    ("kubelet_disk_type", "the kubelet's disk is the OS disk"),
    (
        "scale_down_mode",
        "autoscaled nodes are deleted when scaled down (AKS's default)",
    ),
    ("workload_runtime", "GPU pools run OCI containers"),
    (
        "capacity_reservation_group_id",
        "capacity reservations are not served",
    ),
    ("host_group_id", "dedicated hosts are not served"),
    (
        "proximity_placement_group_id",
        "proximity placement groups are not served",
    ),
    ("snapshot_id", "pools are not made from snapshots"),
    (
        "temporary_name_for_rotation",
        "a change AKS cannot make in place replaces the pool, its nodes moved by gpustack's rollout block",
    ),
    ("upgrade_settings", "AKS's default surge upgrade stands"),
    ("kubelet_config", "the kubelet's defaults stand"),
    (
        "linux_os_config",
        "the nodes' sysctls and swap are AKS's defaults",
    ),
    (
        "node_network_profile",
        "the pool takes its cluster's networking",
    ),
    ("windows_profile", "GPU pools run Linux"),
];

/// The provider block's arguments gpustack does not serve, and why.
const PROVIDER_REFUSED: &[(&str, &str)] = &[
    (
        "client_certificate",
        "give a client secret, a federated token or a managed identity",
    ),
    (
        "client_certificate_path",
        "give a client secret, a federated token or a managed identity",
    ),
    (
        "client_certificate_password",
        "give a client secret, a federated token or a managed identity",
    ),
    (
        "client_id_file_path",
        "write client_id, or set AZURE_CLIENT_ID",
    ),
    (
        "client_secret_file_path",
        "write client_secret, or set AZURE_CLIENT_SECRET",
    ),
    (
        "oidc_token",
        "set AZURE_FEDERATED_TOKEN_FILE, which gpustack's Azure SDK reads",
    ),
    (
        "oidc_token_file_path",
        "set AZURE_FEDERATED_TOKEN_FILE, which gpustack's Azure SDK reads",
    ),
    (
        "oidc_request_token",
        "set AZURE_FEDERATED_TOKEN_FILE, which gpustack's Azure SDK reads",
    ),
    (
        "oidc_request_url",
        "set AZURE_FEDERATED_TOKEN_FILE, which gpustack's Azure SDK reads",
    ),
    (
        "ado_pipeline_service_connection_id",
        "set AZURE_FEDERATED_TOKEN_FILE, which gpustack's Azure SDK reads",
    ),
    (
        "msi_endpoint",
        "the managed identity endpoint is found where the Azure SDK finds it",
    ),
    (
        "auxiliary_tenant_ids",
        "requests are made in the subscription's tenant only",
    ),
    (
        "msi_api_version",
        "the managed identity endpoint is found where the Azure SDK finds it",
    ),
];

/// Provider arguments accepted for what they are: each changes nothing gpustack does.
const PROVIDER_ACCEPTED: &[(&str, &str)] = &[
    (
        "skip_provider_registration",
        "gpustack never registers resource providers",
    ),
    (
        "resource_provider_registrations",
        "gpustack never registers resource providers",
    ),
    (
        "resource_providers_to_register",
        "gpustack never registers resource providers",
    ),
    ("storage_use_azuread", "gpustack makes no storage requests"),
    ("partner_id", "gpustack sends no partner ID"),
    (
        "disable_terraform_partner_id",
        "gpustack sends no partner ID",
    ),
    (
        "disable_correlation_request_id",
        "gpustack sends no correlation ID of its own",
    ),
    (
        "use_cli",
        "the Azure CLI's login is the last of the credentials gpustack tries",
    ),
    (
        "use_oidc",
        "a federated token is read from AZURE_FEDERATED_TOKEN_FILE when it is set",
    ),
    (
        "use_aks_workload_identity",
        "a federated token is read from AZURE_FEDERATED_TOKEN_FILE when it is set",
    ),
];

/// The `features` block's blocks: each configures other resource types; none applies to a
/// node pool.
const FEATURE_BLOCKS: &[(&str, &[&str])] = &[
    (
        "resource_group",
        &["prevent_deletion_if_contains_resources"],
    ),
    (
        "key_vault",
        &[
            "purge_soft_delete_on_destroy",
            "recover_soft_deleted_key_vaults",
            "purge_soft_deleted_keys_on_destroy",
            "purge_soft_deleted_secrets_on_destroy",
            "purge_soft_deleted_certificates_on_destroy",
            "recover_soft_deleted_keys",
            "recover_soft_deleted_secrets",
            "recover_soft_deleted_certificates",
        ],
    ),
    (
        "virtual_machine",
        &[
            "delete_os_disk_on_deletion",
            "graceful_shutdown",
            "skip_shutdown_and_force_delete",
            "detach_implicit_data_disk_on_deletion",
        ],
    ),
    (
        "virtual_machine_scale_set",
        &[
            "force_delete",
            "roll_instances_when_required",
            "scale_to_zero_before_deletion",
            "reimage_on_manual_upgrade",
        ],
    ),
    (
        "log_analytics_workspace",
        &["permanently_delete_on_destroy"],
    ),
    ("cognitive_account", &["purge_soft_delete_on_destroy"]),
    (
        "api_management",
        &["purge_soft_delete_on_destroy", "recover_soft_deleted"],
    ),
    (
        "app_configuration",
        &["purge_soft_delete_on_destroy", "recover_soft_deleted"],
    ),
    ("application_insights", &["disable_generated_rule"]),
    (
        "machine_learning",
        &["purge_soft_deleted_workspace_on_destroy"],
    ),
    ("managed_disk", &["expand_without_downtime"]),
    (
        "postgresql_flexible_server",
        &["restart_server_on_configuration_value_change"],
    ),
    (
        "recovery_service",
        &[
            "vm_backup_stop_protection_and_retain_data_on_destroy",
            "purge_protected_items_from_vault_on_destroy",
            "vm_backup_suspend_protection_and_retain_data_on_destroy",
        ],
    ),
    (
        "recovery_services_vaults",
        &["recover_soft_deleted_backup_protected_vm"],
    ),
    ("subscription", &["prevent_cancellation_on_destroy"]),
    (
        "template_deployment",
        &["delete_nested_items_during_deletion"],
    ),
    (
        "netapp",
        &[
            "delete_backups_on_backup_vault_destroy",
            "prevent_volume_destruction",
        ],
    ),
    ("storage", &["data_plane_available"]),
    ("databricks_workspace", &["force_delete"]),
];

fn node_pool() -> Schema {
    let optional = Attribute::optional;
    let mut schema = gpustack_provider_sdk::pool::pool_schema(
        Schema::new(
            "An AKS node pool in the AzureRM provider's schema, served on gpustack's AKS flow.",
        )
        .attr("name", Attribute::required(Type::String).force_new())
        .attr(
            "kubernetes_cluster_id",
            Attribute::required(Type::String).force_new(),
        )
        .attr("vm_size", Attribute::required(Type::String).force_new())
        .attr("node_count", Attribute::optional_computed(Type::Number))
        .attr("auto_scaling_enabled", optional(Type::Bool))
        .attr("min_count", optional(Type::Number))
        .attr("max_count", optional(Type::Number))
        .attr("mode", Attribute::optional_computed(Type::String))
        .attr("node_labels", optional(Type::map(Type::String)))
        .attr("node_taints", optional(Type::list(Type::String)))
        .attr("gpu_instance", optional(Type::String).force_new())
        .attr("gpu_driver", optional(Type::String).force_new())
        .attr("zones", optional(Type::set(Type::String)).force_new())
        .attr("tags", optional(Type::map(Type::String)))
        .attr("priority", optional(Type::String).force_new())
        .attr("eviction_policy", optional(Type::String).force_new())
        .attr(
            "os_disk_size_gb",
            Attribute::optional_computed(Type::Number).force_new(),
        )
        .attr(
            "orchestrator_version",
            Attribute::optional_computed(Type::String),
        )
        .attr("node_image_version", Attribute::computed(Type::String))
        .attr("id", Attribute::computed(Type::String)),
    );
    for (name, ty) in [
        ("spot_max_price", Type::Number),
        ("os_disk_type", Type::String),
        ("os_sku", Type::String),
        ("os_type", Type::String),
        ("max_pods", Type::Number),
        ("vnet_subnet_id", Type::String),
        ("pod_subnet_id", Type::String),
        ("node_public_ip_enabled", Type::Bool),
        ("node_public_ip_prefix_id", Type::String),
        ("host_encryption_enabled", Type::Bool),
        ("fips_enabled", Type::Bool),
        ("ultra_ssd_enabled", Type::Bool),
        ("kubelet_disk_type", Type::String),
        ("scale_down_mode", Type::String),
        ("workload_runtime", Type::String),
        ("capacity_reservation_group_id", Type::String),
        ("host_group_id", Type::String),
        ("proximity_placement_group_id", Type::String),
        ("snapshot_id", Type::String),
        ("temporary_name_for_rotation", Type::String),
    ] {
        schema = schema.attr(name, optional(ty));
    }
    for (name, block) in [
        (
            "upgrade_settings",
            &[
                "max_surge",
                "drain_timeout_in_minutes",
                "node_soak_duration_in_minutes",
            ][..],
        ),
        (
            "kubelet_config",
            &[
                "cpu_manager_policy",
                "cpu_cfs_quota_enabled",
                "cpu_cfs_quota_period",
                "image_gc_high_threshold",
                "image_gc_low_threshold",
                "topology_manager_policy",
                "allowed_unsafe_sysctls",
                "container_log_max_size_mb",
                "container_log_max_line",
                "pod_max_pid",
            ],
        ),
        (
            "linux_os_config",
            &[
                "swap_file_size_mb",
                "transparent_huge_page_enabled",
                "transparent_huge_page_defrag",
            ],
        ),
        (
            "node_network_profile",
            &["application_security_group_ids", "node_public_ip_tags"],
        ),
        ("windows_profile", &["outbound_nat_enabled"]),
    ] {
        schema = one(schema, name, refused_block(block));
    }
    schema.block(
        "timeouts",
        BlockNesting::Single,
        Schema::new("Accepted: gpustack waits for each ARM operation for as long as it runs.")
            .attr("create", optional(Type::String))
            .attr("read", optional(Type::String))
            .attr("update", optional(Type::String))
            .attr("delete", optional(Type::String)),
    )
}

fn config_schema() -> Schema {
    let optional = Attribute::optional;
    let mut features = Schema::new(
        "Accepted: the features configure other resource types' behaviour; none applies to a node pool.",
    );
    for (name, attrs) in FEATURE_BLOCKS {
        features = one(features, name, refused_block(attrs));
    }
    let mut config = provider_config("Azure Resource Manager, in the AzureRM provider's schema, with the standard credential chain.")
        .attr("subscription_id", optional(Type::String))
        .attr("tenant_id", optional(Type::String))
        .attr("client_id", optional(Type::String))
        .attr("client_secret", optional(Type::String).sensitive())
        .attr("use_msi", optional(Type::Bool))
        .attr("environment", optional(Type::String).describe("public only: gpustack reaches Azure's public cloud, or the one metadata_host describes."))
        .attr("metadata_host", optional(Type::String).describe("The host whose /metadata/endpoints names the Resource Manager endpoint (Azure Stack Hub, a test double)."));
    config = one(config, "features", features);
    for (name, _) in PROVIDER_REFUSED {
        config = config.attr(name, optional(Type::Any));
    }
    for (name, why) in PROVIDER_ACCEPTED {
        config = config.attr(
            name,
            optional(Type::Any).describe(format!("Accepted: {why}.")),
        );
    }
    config
}

/// The Resource Manager endpoint a metadata host names (as AzureRM reads it: the host's
/// `/metadata/endpoints`).
async fn resource_manager(host: &str) -> Result<String, String> {
    let url = format!("https://{host}/metadata/endpoints?api-version=2022-09-01");
    // One TLS implementation in the binary: ring, as for the ARM client.
    gpustack_connect::install_ring();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let body = http
        .get(&url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("GET {url}: {}", gpustack_protocol::error_chain(&e)))?
        .bytes()
        .await
        .map_err(|e| format!("GET {url}: {}", gpustack_protocol::error_chain(&e)))?;
    let answer: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: {e}"))?;
    answer["resourceManager"]
        .as_str()
        .map(|r| r.trim_end_matches('/').to_owned())
        .ok_or_else(|| format!("GET {url} names no resourceManager"))
}

#[async_trait::async_trait]
impl Family for AzureRm {
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        (type_name == NODE_POOL.type_name).then_some(())?;
        Azure::default().identity("aks_nodepool", &NODE_POOL.own_state(state))
    }

    fn types(&self) -> ProviderTypes {
        ProviderTypes {
            name: "azurerm".into(),
            resources: vec![NODE_POOL.type_name.into()],
            data_sources: vec![NODE_POOL.type_name.into()],
        }
    }

    fn config(&self) -> Schema {
        config_schema()
    }

    fn schema(&self) -> ProviderSchema {
        ProviderSchema {
            name: "azurerm".into(),
            config: config_schema(),
            resources: [(NODE_POOL.type_name.to_owned(), node_pool())].into(),
            data_sources: [(
                NODE_POOL.type_name.to_owned(),
                gpustack_provider_sdk::terraform_pool::data_schema(
                    &node_pool(),
                    &["name", "kubernetes_cluster_name", "resource_group_name"],
                ),
            )]
            .into(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            gpustack_provider_sdk::terraform_pool::refuse_provider_arguments(
                check,
                PROVIDER_REFUSED,
                "gpustack's azurerm provider",
            );
            check.one_of("environment", &["public"]);
            if check.get("subscription_id").is_none()
                && !attribute(check.config(), "subscription_id").is_some_and(Value::is_unknown)
                && std::env::var_os("ARM_SUBSCRIPTION_ID").is_none()
            {
                check.error(
                    "subscription_id",
                    "Missing subscription_id",
                    "Set subscription_id in the provider block, or ARM_SUBSCRIPTION_ID, as AzureRM 4 requires.".into(),
                );
            }
            return;
        }
        if type_name != NODE_POOL.type_name {
            return;
        }
        refuse_unserved(check, REFUSED, "gpustack's AKS node pools");
        check.one_of("priority", &["Regular", "Spot"]);
        if check.str("eviction_policy").is_some() && check.str("priority") != Some("Spot") {
            check.error(
                "eviction_policy",
                "Eviction policy without Spot",
                "eviction_policy applies to priority = \"Spot\" pools only.".into(),
            );
        }
        own_checks(check, &NODE_POOL, |own| {
            Azure::default().check("aks_nodepool", own)
        });
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let endpoint = match text(config, "metadata_host")
            .map(str::to_owned)
            .or_else(|| env("ARM_METADATA_HOSTNAME"))
        {
            Some(host) => Some(resource_manager(&host).await.map_err(|why| {
                vec![Diagnostic::error(
                    "Cannot read the metadata host's endpoints",
                    why,
                )]
            })?),
            None => Some(DEFAULT_ENDPOINT.to_owned()),
        };
        let settings = AzureSettings {
            subscription_id: text(config, "subscription_id")
                .map(str::to_owned)
                .or_else(|| env("ARM_SUBSCRIPTION_ID"))
                .unwrap_or_default(),
            tenant_id: text(config, "tenant_id")
                .map(str::to_owned)
                .or_else(|| env("ARM_TENANT_ID")),
            client_id: text(config, "client_id")
                .map(str::to_owned)
                .or_else(|| env("ARM_CLIENT_ID")),
            client_secret: text(config, "client_secret")
                .map(str::to_owned)
                .or_else(|| env("ARM_CLIENT_SECRET")),
            use_msi: attribute(config, "use_msi").and_then(Value::as_bool) == Some(true)
                || env("ARM_USE_MSI").as_deref() == Some("true"),
            endpoint,
            api_version: None,
        };
        let arm = Arm::new(&settings).map_err(|e| {
            vec![Diagnostic::error(
                "Cannot set up the Azure client",
                gpustack_protocol::error_chain(&e),
            )]
        })?;
        let connected = Arc::new(Connected::new(arm));
        Ok(Arc::new(
            Resources::new()
                .resource(
                    NODE_POOL.type_name,
                    TerraformPools {
                        pool: &NODE_POOL,
                        inner: Pools(connected.clone(), self.drainer.clone()),
                        default_tags: Default::default(),
                    },
                )
                .data_source(
                    NODE_POOL.type_name,
                    gpustack_provider_sdk::terraform_pool::TerraformPoolData {
                        pool: &crate::terraform::NODE_POOL_DATA,
                        cloud: connected,
                    },
                ),
        ))
    }
}
