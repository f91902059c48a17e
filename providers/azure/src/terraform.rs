//! The AzureRM provider's `azurerm_kubernetes_cluster_node_pool`, read as an AKS node pool of
//! gpustack's own schema for `gpustack review`: the same shape, checks and GPU fact as
//! `aks_nodepool`.

use crate::{Azure, Connected};
use gpustack_protocol::{ForeignChange, Reviewed};
use gpustack_provider_sdk::check::Checker;
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::pool::TerraformPool;

/// AzureRM 4 names autoscaling `auto_scaling_enabled`, 3 `enable_auto_scaling`.
const NODE_POOL: TerraformPool = TerraformPool {
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
    ],
};

pub(crate) fn review(azure: &Azure, change: &ForeignChange<'_>) -> Option<Reviewed> {
    NODE_POOL.review::<Connected>(change, crate::pool::shape, |own| {
        let mut check = Checker::new(own);
        azure.check("aks_nodepool", &mut check);
        check.diagnostics
    })
}
