# The reference flow on any cluster that already has GPU nodes with a driver: the GPU Operator
# without its driver and toolkit, time-slicing with 10 replicas, and a smoke test that runs
# four vectorAdd pods on one node. Nothing cloud-specific, so it also runs on the local test
# cluster: gpustack apply --var kubeconfig=PATH --var chart=PATH/gpu-operator.tgz.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
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

module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
  runtime_class   = "nvidia-container-runtime"
}

module "time_slicing" {
  source     = "../../modules/time-slicing"
  operator   = module.gpu_operator
  replicas   = var.replicas
  node_names = var.node_names
}

resource "gpu_smoke_test" "vector_add" {
  node_selector = local.smoke_test_selector
  tolerations = [
    {
      key      = "nvidia.com/gpu"
      operator = "Exists"
      effect   = "NoSchedule"
    },
  ]
  expect_allocatable = {
    (module.time_slicing.resource_name) = var.gpus_per_node * module.time_slicing.replicas
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
