# The first reference flow: an AKS nodepool with one T4 per node, the GPU Operator with the
# driver and toolkit left to AKS, time-slicing with 10 replicas, and a smoke test that runs
# four vectorAdd pods on the one node.
#
# Against Azure: gpustack apply --var subscription_id=SUB (credentials from the environment,
# a workload identity, a managed identity or `az login`). The test suite runs it against its
# AKS fake and local cluster with --var azure_endpoint=... --var kubeconfig=... --var chart=....

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "azure" {
  subscription_id = var.subscription_id
  endpoint        = var.azure_endpoint
}

provider "kubernetes" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

provider "helm" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

provider "gpu" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

resource "aks_nodepool" "t4" {
  resource_group = var.resource_group
  cluster        = var.cluster
  name           = var.pool_name
  vm_size        = "Standard_NC4as_T4_v3"
  node_count     = var.node_count
  mode           = "User"
  node_taints    = ["nvidia.com/gpu=present:NoSchedule"]
  gpu_driver     = "Install"
}

module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  chart_version   = "v26.7.0"
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
  depends_on      = [aks_nodepool.t4]
}

module "time_slicing" {
  source   = "../../modules/time-slicing"
  operator = module.gpu_operator
  replicas = var.replicas
}

resource "gpu_smoke_test" "vector_add" {
  node_selector = {
    "kubernetes.azure.com/agentpool" = aks_nodepool.t4.name
  }
  tolerations = [
    {
      key      = "nvidia.com/gpu"
      operator = "Exists"
      effect   = "NoSchedule"
    },
  ]
  expect_allocatable = {
    (module.time_slicing.resource_name) = local.gpus_per_node * module.time_slicing.replicas
  }
  pods         = 4
  gpus_per_pod = 1
  same_node    = true
  # A new sharing config is a new GPU setup: test it again.
  triggers = {
    config = module.time_slicing.config_hash
  }
  depends_on = [module.time_slicing]
}
