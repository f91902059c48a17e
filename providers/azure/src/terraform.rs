//! The AzureRM provider's `azurerm_kubernetes_cluster_node_pool` read as an AKS node pool of
//! gpustack's own schema: served on `aks_nodepool`'s flow (`azurerm.rs`), its data source, and
//! `gpustack review` of a change to it, with the same shape, checks and GPU fact.

use crate::{Azure, Connected};
use gpustack_protocol::{ForeignChange, Reviewed, Value};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::terraform_pool::TerraformPool;

/// The node pool's attributes in the own schema. AzureRM 4 names autoscaling
/// `auto_scaling_enabled`, 3 `enable_auto_scaling`.
const RENAMES: &[(&str, &str)] = &[
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
];

pub(crate) static NODE_POOL: TerraformPool = TerraformPool {
    type_name: "azurerm_kubernetes_cluster_node_pool",
    renames: RENAMES,
    own_import_id,
    terraform_import_id,
    tags: None,
    derived: Some((read_derived, write_derived)),
    import_formats: "/subscriptions/SUBSCRIPTION/resourceGroups/GROUP/providers/Microsoft.ContainerService/managedClusters/CLUSTER/agentPools/NAME",
};

/// The data source: its pool named by cluster name and resource group, not by cluster ID.
pub(crate) static NODE_POOL_DATA: TerraformPool = TerraformPool {
    type_name: "azurerm_kubernetes_cluster_node_pool",
    renames: RENAMES,
    own_import_id,
    terraform_import_id,
    tags: None,
    derived: Some((read_data_derived, write_derived)),
    import_formats: "(a data source is read by name, cluster name and resource group)",
};

/// The resource group and cluster that `kubernetes_cluster_id` names, and `priority = "Spot"`
/// as the own `spot`.
fn read_derived(terraform: &Value, own: &mut Value) {
    if let Some((group, cluster, mut rest)) =
        text(terraform, "kubernetes_cluster_id").and_then(cluster_of_id)
        && rest.next().is_none()
    {
        set(own, "resource_group", Value::string(group));
        set(own, "cluster", Value::string(cluster));
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

/// The data source's resource group and cluster, named by their names.
fn read_data_derived(terraform: &Value, own: &mut Value) {
    for (own_name, name) in [
        ("resource_group", "resource_group_name"),
        ("cluster", "kubernetes_cluster_name"),
    ] {
        if let Some(v) = attribute(terraform, name) {
            set(own, own_name, v.clone());
        }
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
    let (group, cluster, mut rest) = cluster_of_id(id)?;
    match (rest.next(), rest.next(), rest.next()) {
        (Some("agentPools"), Some(pool), None) if !pool.is_empty() => {
            Some(format!("{group}/{cluster}/{pool}"))
        }
        _ => None,
    }
}

/// The resource group and name of the managed cluster an ARM ID starts with, and the parts
/// that follow them.
fn cluster_of_id(id: &str) -> Option<(&str, &str, std::str::Split<'_, char>)> {
    let mut parts = id.trim_start_matches('/').split('/');
    let mut next = |expected: Option<&str>| {
        let part = parts.next()?;
        match expected {
            Some(e) if !part.eq_ignore_ascii_case(e) => None,
            _ => Some(part),
        }
    };
    next(Some("subscriptions"))?;
    next(None)?;
    next(Some("resourceGroups"))?;
    let group = next(None)?;
    next(Some("providers"))?;
    next(Some("Microsoft.ContainerService"))?;
    next(Some("managedClusters"))?;
    let cluster = next(None)?;
    Some((group, cluster, parts))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_pools_arm_id_is_its_import_id_and_a_clusters_id_names_its_group() {
        let cluster = "/subscriptions/s/resourcegroups/ml-rg/providers/Microsoft.ContainerService/managedClusters/ml";
        assert_eq!(
            own_import_id(&format!("{cluster}/agentPools/gpu")).as_deref(),
            Some("ml-rg/ml/gpu")
        );
        assert_eq!(own_import_id(cluster), None);
        assert_eq!(own_import_id("ml-rg/ml/gpu"), None);
        let mut own = Value::Object(Default::default());
        read_derived(
            &Value::from_json(
                &serde_json::json!({"kubernetes_cluster_id": cluster, "priority": "Spot"}),
            ),
            &mut own,
        );
        assert_eq!(
            own.to_json(),
            serde_json::json!({"resource_group": "ml-rg", "cluster": "ml", "spot": true})
        );
        assert_eq!(
            terraform_import_id("ml-rg/ml/gpu"),
            "/subscriptions/SUBSCRIPTION_ID/resourceGroups/ml-rg/providers/Microsoft.ContainerService/managedClusters/ml/agentPools/gpu"
        );
    }
}
