//! Terraform's Google provider (`provider "google"` and `"google-beta"`, hashicorp/google) as
//! far as GPU node pools go: its configuration in the provider's schema and its
//! `google_container_node_pool`, served on the same GKE flow as `gke_nodepool` (through
//! [`TerraformPools`]). Every argument of the pool is honoured or refused by name with the
//! reason; the provider's other types stay Terraform's.

use crate::{Connected, Gcp};
use gpustack_protocol::{
    Attribute, BlockNesting, Diagnostic, Provider, ProviderSchema, ProviderTypes, Schema, Type,
    Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::pool::{NodeDrainer, Pools};
use gpustack_provider_sdk::resource::Resources;
use gpustack_provider_sdk::terraform_pool::{
    TerraformPools, own_checks, refuse_unserved, refused_block, single_block as one,
};
use std::sync::Arc;

pub(crate) const NODE_POOL: &str = "google_container_node_pool";

/// Terraform's Google provider, under one of its names.
pub struct Google {
    name: &'static str,
    drainer: Option<Arc<dyn NodeDrainer>>,
}

/// `provider "google"` (`name` "google") or `provider "google-beta"`, draining a pool's nodes
/// before the pool goes with `drainer` (the binary's Kubernetes client).
pub fn provider_with(
    name: &'static str,
    drainer: Option<Arc<dyn NodeDrainer>>,
) -> Arc<dyn gpustack_provider_sdk::family::ProviderFactory> {
    Arc::new(gpustack_provider_sdk::family::Factory(Google {
        name,
        drainer,
    }))
}

fn optional(ty: Type) -> Attribute {
    Attribute::optional(ty)
}

/// The node pool's arguments gpustack does not serve, and why: each is refused where it is
/// written. The rest of the schema is honoured.
pub(crate) const REFUSED: &[(&str, &str)] = &[
    (
        "name_prefix",
        "gpustack names a pool by name, which its GPU facts and rollouts key on",
    ),
    (
        "project",
        "a node pool is in its provider block's project: set project there",
    ),
    (
        "initial_node_count",
        "write node_count (the size gpustack keeps) or autoscaling; GKE uses initial_node_count only at creation",
    ),
    ("node_locations", "the pool takes its cluster's zones"),
    (
        "max_pods_per_node",
        "gpustack does not set a pool's pod range",
    ),
    ("version", "the pool follows its cluster's version"),
    (
        "management",
        "GKE's defaults (auto-repair and auto-upgrade on) stand",
    ),
    ("network_config", "the pool takes its cluster's networking"),
    ("placement_policy", "compact placement is not served"),
    ("queued_provisioning", "queued provisioning is not served"),
    (
        "upgrade_settings",
        "GKE's default surge upgrade stands; a replacement's nodes are moved by gpustack's rollout block",
    ),
    (
        "node_config[0].disk_size_gb",
        "the node disks are GKE's default",
    ),
    (
        "node_config[0].disk_type",
        "the node disks are GKE's default",
    ),
    (
        "node_config[0].image_type",
        "the node image is GKE's default (Container-Optimized OS with containerd)",
    ),
    (
        "node_config[0].local_ssd_count",
        "local SSDs are not served",
    ),
    ("node_config[0].metadata", "instance metadata is not served"),
    (
        "node_config[0].min_cpu_platform",
        "the CPU platform is the machine type's",
    ),
    (
        "node_config[0].oauth_scopes",
        "the nodes run with GKE's default scopes",
    ),
    (
        "node_config[0].preemptible",
        "write spot = true: GKE's Spot VMs replace preemptible ones",
    ),
    (
        "node_config[0].service_account",
        "the nodes run as the project's default compute service account",
    ),
    ("node_config[0].tags", "network tags are not served"),
    (
        "node_config[0].resource_labels",
        "gpustack sets the pool's resource labels itself (its creation mark)",
    ),
    (
        "node_config[0].resource_manager_tags",
        "resource manager tags are not served",
    ),
    (
        "node_config[0].boot_disk_kms_key",
        "the node disks are GKE's default",
    ),
    (
        "node_config[0].node_group",
        "sole-tenant nodes are not served",
    ),
    (
        "node_config[0].logging_variant",
        "the cluster's logging variant stands",
    ),
    (
        "node_config[0].enable_confidential_storage",
        "confidential storage is not served",
    ),
    (
        "node_config[0].local_ssd_encryption_mode",
        "local SSDs are not served",
    ),
    (
        "node_config[0].max_run_duration",
        "the nodes run until the pool is changed",
    ),
    (
        "node_config[0].flex_start",
        "flex-start provisioning is not served",
    ),
    (
        "node_config[0].storage_pools",
        "the node disks are GKE's default",
    ),
    (
        "node_config[0].workload_metadata_config",
        "the cluster's workload metadata mode stands",
    ),
    (
        "node_config[0].shielded_instance_config",
        "GKE's default shielded nodes stand",
    ),
    (
        "node_config[0].gcfs_config",
        "image streaming is not served",
    ),
    ("node_config[0].gvnic", "gVNIC is not served"),
    (
        "node_config[0].reservation_affinity",
        "reservations are not served",
    ),
    (
        "node_config[0].kubelet_config",
        "the kubelet's defaults stand",
    ),
    (
        "node_config[0].linux_node_config",
        "the nodes' sysctls and cgroup mode are GKE's defaults",
    ),
    (
        "node_config[0].advanced_machine_features",
        "the machine type's defaults stand",
    ),
    (
        "node_config[0].confidential_nodes",
        "confidential nodes are not served",
    ),
    (
        "node_config[0].fast_socket",
        "NCCL Fast Socket is not served",
    ),
    (
        "node_config[0].sole_tenant_config",
        "sole-tenant nodes are not served",
    ),
    (
        "node_config[0].ephemeral_storage_local_ssd_config",
        "local SSDs are not served",
    ),
    (
        "node_config[0].local_nvme_ssd_block_config",
        "local SSDs are not served",
    ),
    (
        "node_config[0].secondary_boot_disks",
        "secondary boot disks are not served",
    ),
    (
        "node_config[0].host_maintenance_policy",
        "the host maintenance policy is GKE's default",
    ),
    (
        "node_config[0].containerd_config",
        "containerd's defaults stand",
    ),
    ("node_config[0].windows_node_config", "GPU nodes run Linux"),
    (
        "autoscaling[0].location_policy",
        "GKE's default location policy (BALANCED) stands",
    ),
    (
        "autoscaling[0].total_min_node_count",
        "write min_node_count: the pool takes its cluster's zones",
    ),
    (
        "autoscaling[0].total_max_node_count",
        "write max_node_count: the pool takes its cluster's zones",
    ),
];

/// The provider block's arguments gpustack does not serve, and why.
const PROVIDER_REFUSED: &[(&str, &str)] = &[
    (
        "credentials",
        "gpustack reads Application Default Credentials: point GOOGLE_APPLICATION_CREDENTIALS at the key file",
    ),
    (
        "access_token",
        "gpustack reads Application Default Credentials: point GOOGLE_APPLICATION_CREDENTIALS at a credentials file",
    ),
    (
        "impersonate_service_account",
        "impersonation chains are not served: give the impersonated account's credentials through Application Default Credentials",
    ),
    (
        "impersonate_service_account_delegates",
        "impersonation chains are not served",
    ),
    ("scopes", "gpustack asks for the cloud-platform scope"),
    (
        "universe_domain",
        "only the googleapis.com universe is served",
    ),
    (
        "user_project_override",
        "quota is billed to the pool's project",
    ),
    ("billing_project", "quota is billed to the pool's project"),
    ("batching", "gpustack does not batch requests"),
];

fn node_config() -> Schema {
    let taint = Schema::new(
        "A taint of every node (effect NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE).",
    )
    .attr("key", Attribute::required(Type::String))
    .attr("value", Attribute::required(Type::String))
    .attr("effect", Attribute::required(Type::String));
    let sharing = Schema::new("GKE's GPU sharing: time-sharing or MPS clients per GPU.")
        .attr("gpu_sharing_strategy", Attribute::required(Type::String))
        .attr(
            "max_shared_clients_per_gpu",
            Attribute::required(Type::Number),
        );
    let driver = Schema::new("Whether GKE installs NVIDIA's driver.")
        .attr("gpu_driver_version", Attribute::required(Type::String));
    let accelerator = one(
        one(
            Schema::new("The GPUs of each node.")
                .attr("type", Attribute::required(Type::String))
                .attr("count", Attribute::required(Type::Number))
                .attr("gpu_partition_size", optional(Type::String)),
            "gpu_sharing_config",
            sharing,
        ),
        "gpu_driver_installation_config",
        driver,
    );
    let mut schema = Schema::new("The nodes' machines.")
        .attr("machine_type", optional(Type::String))
        .attr("labels", optional(Type::map(Type::String)))
        .attr("spot", optional(Type::Bool))
        .block("taint", BlockNesting::List, taint)
        .block_or_argument("guest_accelerator", BlockNesting::List, accelerator);
    for (name, block) in [
        ("workload_metadata_config", &["mode"][..]),
        (
            "shielded_instance_config",
            &["enable_secure_boot", "enable_integrity_monitoring"],
        ),
        ("gcfs_config", &["enabled"]),
        ("gvnic", &["enabled"]),
        (
            "reservation_affinity",
            &["consume_reservation_type", "key", "values"],
        ),
        (
            "kubelet_config",
            &[
                "cpu_manager_policy",
                "cpu_cfs_quota",
                "cpu_cfs_quota_period",
                "pod_pids_limit",
                "insecure_kubelet_readonly_port_enabled",
                "container_log_max_size",
                "container_log_max_files",
                "image_gc_low_threshold_percent",
                "image_gc_high_threshold_percent",
                "image_minimum_gc_age",
                "image_maximum_gc_age",
                "allowed_unsafe_sysctls",
            ],
        ),
        ("linux_node_config", &["sysctls", "cgroup_mode"]),
        (
            "advanced_machine_features",
            &["threads_per_core", "enable_nested_virtualization"],
        ),
        ("confidential_nodes", &["enabled"]),
        ("fast_socket", &["enabled"]),
        ("sole_tenant_config", &[]),
        ("ephemeral_storage_local_ssd_config", &["local_ssd_count"]),
        ("local_nvme_ssd_block_config", &["local_ssd_count"]),
        ("host_maintenance_policy", &["maintenance_interval"]),
        ("containerd_config", &[]),
        ("windows_node_config", &["osversion"]),
    ] {
        schema = one(schema, name, refused_block(block));
    }
    schema = schema.block(
        "secondary_boot_disks",
        BlockNesting::List,
        refused_block(&["disk_image", "mode"]),
    );
    for (name, ty) in [
        ("disk_size_gb", Type::Number),
        ("disk_type", Type::String),
        ("image_type", Type::String),
        ("local_ssd_count", Type::Number),
        ("metadata", Type::map(Type::String)),
        ("min_cpu_platform", Type::String),
        ("oauth_scopes", Type::set(Type::String)),
        ("preemptible", Type::Bool),
        ("service_account", Type::String),
        ("tags", Type::list(Type::String)),
        ("resource_labels", Type::map(Type::String)),
        ("resource_manager_tags", Type::map(Type::String)),
        ("boot_disk_kms_key", Type::String),
        ("node_group", Type::String),
        ("logging_variant", Type::String),
        ("enable_confidential_storage", Type::Bool),
        ("local_ssd_encryption_mode", Type::String),
        ("max_run_duration", Type::String),
        ("flex_start", Type::Bool),
        ("storage_pools", Type::list(Type::String)),
    ] {
        schema = schema.attr(name, optional(ty));
    }
    schema
}

fn node_pool() -> Schema {
    let autoscaling = Schema::new("The pool's size range, per zone or in total.")
        .attr("min_node_count", optional(Type::Number))
        .attr("max_node_count", optional(Type::Number))
        .attr("total_min_node_count", optional(Type::Number))
        .attr("total_max_node_count", optional(Type::Number))
        .attr("location_policy", optional(Type::String));
    let mut schema = gpustack_provider_sdk::pool::pool_schema(
        Schema::new("A GKE node pool in the Google provider's schema, served on gpustack's GKE flow.")
            .attr("cluster", Attribute::required(Type::String).force_new())
            .attr("location", Attribute::required(Type::String).force_new().describe(
                "The cluster's location (a zone or a region); gpustack does not take it from the provider's region or zone.",
            ))
            .attr("name", Attribute::required(Type::String).force_new())
            .attr("node_count", Attribute::optional_computed(Type::Number))
            .attr("id", Attribute::computed(Type::String)),
    );
    schema = one(schema, "autoscaling", autoscaling);
    schema = one(schema, "node_config", node_config());
    for (name, ty) in [
        ("name_prefix", Type::String),
        ("project", Type::String),
        ("initial_node_count", Type::Number),
        ("node_locations", Type::set(Type::String)),
        ("max_pods_per_node", Type::Number),
        ("version", Type::String),
    ] {
        schema = schema.attr(name, optional(ty));
    }
    for (name, block) in [
        ("management", &["auto_repair", "auto_upgrade"][..]),
        (
            "network_config",
            &[
                "create_pod_range",
                "enable_private_nodes",
                "pod_ipv4_cidr_block",
                "pod_range",
            ],
        ),
        ("placement_policy", &["type", "policy_name", "tpu_topology"]),
        ("queued_provisioning", &["enabled"]),
        (
            "upgrade_settings",
            &["max_surge", "max_unavailable", "strategy"],
        ),
    ] {
        schema = one(schema, name, refused_block(block));
    }
    schema.block(
        "timeouts",
        BlockNesting::Single,
        Schema::new("Accepted: gpustack waits for each GKE operation for as long as it runs.")
            .attr("create", optional(Type::String))
            .attr("update", optional(Type::String))
            .attr("delete", optional(Type::String)),
    )
}

/// The provider block's schema, Terraform's google provider's.
fn config() -> Schema {
    provider_config(
        "Google Cloud, in the Google provider's schema, with Application Default Credentials.",
    )
    .attr("project", optional(Type::String))
    .attr(
        "region",
        optional(Type::String).describe("Accepted: a node pool names its location."),
    )
    .attr(
        "zone",
        optional(Type::String).describe("Accepted: a node pool names its location."),
    )
    .attr(
        "container_custom_endpoint",
        optional(Type::String).describe("GKE's API endpoint."),
    )
    .attr(
        "compute_custom_endpoint",
        optional(Type::String).describe("Compute Engine's API endpoint."),
    )
    .attr(
        "default_labels",
        optional(Type::map(Type::String))
            .describe("Accepted: gpustack's node pools carry no resource labels of the stack's."),
    )
    .attr(
        "add_terraform_attribution_label",
        optional(Type::Bool)
            .describe("Accepted: gpustack's node pools carry no resource labels of the stack's."),
    )
    .attr(
        "terraform_attribution_label_addition_strategy",
        optional(Type::String),
    )
    .attr(
        "request_timeout",
        optional(Type::String)
            .describe("Accepted: gpustack's GKE client retries and waits on its own."),
    )
    .attr("request_reason", optional(Type::String))
    .attr("user_project_override", optional(Type::Bool))
    .attr("billing_project", optional(Type::String))
    .attr("universe_domain", optional(Type::String))
    .attr("credentials", optional(Type::String).sensitive())
    .attr("access_token", optional(Type::String).sensitive())
    .attr("impersonate_service_account", optional(Type::String))
    .attr(
        "impersonate_service_account_delegates",
        optional(Type::list(Type::String)),
    )
    .attr("scopes", optional(Type::list(Type::String)))
    .block(
        "batching",
        BlockNesting::Single,
        refused_block(&["send_after", "enable_batching"]),
    )
}

#[async_trait::async_trait]
impl Family for Google {
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        (type_name == NODE_POOL).then_some(())?;
        Gcp::default().identity(
            "gke_nodepool",
            &crate::terraform::NODE_POOL.own_state(state),
        )
    }

    fn types(&self) -> ProviderTypes {
        ProviderTypes {
            name: self.name.into(),
            resources: vec![NODE_POOL.into()],
            data_sources: Vec::new(),
        }
    }

    fn config(&self) -> Schema {
        config()
    }

    fn schema(&self) -> ProviderSchema {
        let config = config();
        ProviderSchema {
            name: self.name.into(),
            config,
            resources: [(NODE_POOL.to_owned(), node_pool())].into(),
            data_sources: Default::default(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            gpustack_provider_sdk::terraform_pool::refuse_provider_arguments(
                check,
                PROVIDER_REFUSED,
                "gpustack's google provider",
            );
            if check.get("project").is_none()
                && check
                    .config()
                    .as_object()
                    .is_some_and(|o| !o.get("project").is_some_and(Value::is_unknown))
            {
                check.error(
                    "project",
                    "Missing project",
                    "Set project in the provider block: gpustack does not read GOOGLE_PROJECT or gcloud's configuration.".into(),
                );
            }
            return;
        }
        if type_name != NODE_POOL {
            return;
        }
        refuse_unserved(check, REFUSED, "gpustack's GKE node pools");
        own_checks(check, &crate::terraform::NODE_POOL, |own| {
            Gcp::default().check("gke_nodepool", own);
        });
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let connected = Arc::new(
            Connected::new(
                text(config, "project").unwrap_or_default(),
                text(config, "container_custom_endpoint"),
                text(config, "compute_custom_endpoint"),
            )
            .await?,
        );
        Ok(Arc::new(Resources::new().resource(
            NODE_POOL,
            TerraformPools {
                pool: &crate::terraform::NODE_POOL,
                inner: Pools(connected, self.drainer.clone()),
                default_tags: Default::default(),
            },
        )))
    }
}
