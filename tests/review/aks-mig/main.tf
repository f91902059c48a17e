resource "azurerm_kubernetes_cluster_node_pool" "a100" {
  name                  = "a100"
  kubernetes_cluster_id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ml/providers/Microsoft.ContainerService/managedClusters/ml"
  vm_size               = "Standard_NC24ads_A100_v4"
  auto_scaling_enabled  = true
  min_count             = 1
  max_count             = 3
  gpu_instance          = "MIG1g"

  node_taints = ["sku=gpu:NoSchedule"]
}

resource "azurerm_kubernetes_cluster_node_pool" "t4" {
  name                  = "t4"
  kubernetes_cluster_id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ml/providers/Microsoft.ContainerService/managedClusters/ml"
  vm_size               = "Standard_NC4as_T4_v3"
  node_count            = 2
  gpu_instance          = "MIG1g"
}
