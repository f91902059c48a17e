//! The AzureRM provider's `azurerm_kubernetes_cluster_node_pool`, read as an AKS node pool of
//! gpustack's own schema for `gpustack review`: the same shape, checks and GPU fact as
//! `aks_nodepool`.

use crate::{Azure, Connected};
use gpustack_protocol::{ForeignChange, Reviewed, Value};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::terraform_pool::TerraformPool;

/// AzureRM 4 names autoscaling `auto_scaling_enabled`, 3 `enable_auto_scaling`.
pub(crate) static NODE_POOL: TerraformPool = TerraformPool {
    type_name: "azurerm_kubernetes_cluster_node_pool",
    renames: &[
        ("name", "name"),
        ("vm_size", "vm_size"),
        ("node_count", "node_count"),
        ("auto_scaling", "auto_scaling_enabled"),
        ("auto_scaling", "enable_auto_scaling"),
        ("min_count", "min_count"),
        ("max_count", "max_count"),
        ("mode", "mode"),
        ("node_labels", "node_labels"),
        ("node_taints", "node_taints"),
        ("gpu_instance_profile", "gpu_instance"),
        ("gpu_driver", "gpu_driver"),
        ("zones", "zones"),
        ("tags", "tags"),
        ("spot_eviction_policy", "eviction_policy"),
        ("os_disk_size_gb", "os_disk_size_gb"),
        ("orchestrator_version", "orchestrator_version"),
        ("node_image_version", "node_image_version"),
    ],
    own_import_id,
    terraform_import_id,
    tags: None,
    derived: Some((read_derived, write_derived)),
    import_formats: "/subscriptions/SUBSCRIPTION/resourceGroups/GROUP/providers/Microsoft.ContainerService/managedClusters/CLUSTER/agentPools/NAME",
};

/// The data source: its pool named by cluster name and resource group, not by cluster ID.
pub(crate) static NODE_POOL_DATA: TerraformPool = TerraformPool {
    type_name: "azurerm_kubernetes_cluster_node_pool",
    renames: &[
        ("name", "name"),
        ("resource_group", "resource_group_name"),
        ("cluster", "kubernetes_cluster_name"),
        ("vm_size", "vm_size"),
        ("node_count", "node_count"),
        ("auto_scaling", "auto_scaling_enabled"),
        ("auto_scaling", "enable_auto_scaling"),
        ("min_count", "min_count"),
        ("max_count", "max_count"),
        ("mode", "mode"),
        ("node_labels", "node_labels"),
        ("node_taints", "node_taints"),
        ("gpu_instance_profile", "gpu_instance"),
        ("gpu_driver", "gpu_driver"),
        ("zones", "zones"),
        ("tags", "tags"),
        ("spot_eviction_policy", "eviction_policy"),
        ("os_disk_size_gb", "os_disk_size_gb"),
        ("orchestrator_version", "orchestrator_version"),
        ("node_image_version", "node_image_version"),
    ],
    own_import_id,
    terraform_import_id,
    tags: None,
    derived: Some((|_, _| {}, write_derived)),
    import_formats: "/subscriptions/SUBSCRIPTION/resourceGroups/GROUP/providers/Microsoft.ContainerService/managedClusters/CLUSTER/agentPools/NAME",
};

/// The resource group and cluster that `kubernetes_cluster_id` names, and `priority = "Spot"`
/// as the own `spot`.
fn read_derived(terraform: &Value, own: &mut Value) {
    if let Some(id) = text(terraform, "kubernetes_cluster_id") {
        let parts: Vec<&str> = id.trim_start_matches('/').split('/').collect();
        if let [
            "subscriptions",
            _,
            groups,
            group,
            "providers",
            "Microsoft.ContainerService",
            "managedClusters",
            cluster,
        ] = parts[..]
            && groups.eq_ignore_ascii_case("resourceGroups")
        {
            set(own, "resource_group", Value::string(group));
            set(own, "cluster", Value::string(cluster));
        }
    } else if attribute(terraform, "kubernetes_cluster_id").is_some_and(Value::is_unknown) {
        set(own, "resource_group", Value::Unknown);
        set(own, "cluster", Value::Unknown);
    }
    match attribute(terraform, "priority") {
        Some(Value::Unknown) => set(own, "spot", Value::Unknown),
        Some(p) if p.as_str() == Some("Spot") => set(own, "spot", Value::Bool(true)),
        _ => {}
    }
}

/// The own `spot` as `priority` (Regular where the configuration leaves it out), and the
/// pool's ARM ID.
fn write_derived(own: &Value, terraform: &mut Value) {
    if attribute(own, "spot").and_then(Value::as_bool) == Some(true) {
        set(terraform, "priority", Value::string("Spot"));
    }
}

/// `RESOURCE_GROUP/CLUSTER/POOL` of the AzureRM provider's import ID of a node pool: the
/// agent pool's ARM resource ID.
fn own_import_id(id: &str) -> Option<String> {
    let parts: Vec<&str> = id.trim_start_matches('/').split('/').collect();
    match parts[..] {
        [
            "subscriptions",
            _,
            groups,
            group,
            "providers",
            "Microsoft.ContainerService",
            "managedClusters",
            cluster,
            "agentPools",
            pool,
        ] if groups.eq_ignore_ascii_case("resourceGroups") => {
            Some(format!("{group}/{cluster}/{pool}"))
        }
        _ => None,
    }
}

/// The ARM resource ID of an agent pool, its subscription left for the provider to fill.
fn terraform_import_id(own: &str) -> String {
    match own.split('/').collect::<Vec<_>>()[..] {
        [group, cluster, pool] => format!(
            "/subscriptions/SUBSCRIPTION_ID/resourceGroups/{group}/providers/Microsoft.ContainerService/managedClusters/{cluster}/agentPools/{pool}"
        ),
        _ => own.to_owned(),
    }
}

pub(crate) fn review(azure: &Azure, change: &ForeignChange<'_>) -> Option<Reviewed> {
    NODE_POOL.review::<Connected>(change, crate::pool::shape, |own| {
        let mut check = Checker::new(own);
        azure.check("aks_nodepool", &mut check);
        check.diagnostics
    })
}
