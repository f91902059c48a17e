//! The AzureRM provider's `azurerm_kubernetes_cluster_node_pool`, read as an AKS node pool of
//! gpustack's own schema for `gpustack review`: the same shape, checks and GPU fact as
//! `aks_nodepool`.

use crate::{Azure, Connected};
use gpustack_protocol::{ForeignChange, Reviewed};
use gpustack_provider_sdk::check::Checker;
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
    ],
    own_import_id,
    terraform_import_id,
    tags: None,
    import_formats: "/subscriptions/SUBSCRIPTION/resourceGroups/GROUP/providers/Microsoft.ContainerService/managedClusters/CLUSTER/agentPools/NAME",
};

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
