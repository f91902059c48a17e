# MIG on A100 80GB nodes: the GPU Operator with the mixed strategy, every GPU of the named
# nodes split into seven isolated 1g.10gb instances, and a smoke test that runs one vectorAdd
# pod on each instance of one node. Unlike time-slicing, each pod gets its own memory and
# compute slice and a fault in one does not reach the others. Runs on the local test cluster
# with --var kubeconfig=PATH --var chart=PATH/gpu-operator.tgz --var 'node_names=["NODE"]'.

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
  mig_strategy    = "mixed"
}

module "mig" {
  source     = "../../modules/mig"
  operator   = module.gpu_operator
  gpu_model  = "A100-80GB"
  geometry   = var.geometry
  strategy   = "mixed"
  node_names = var.node_names
}

resource "gpu_smoke_test" "vector_add" {
  # The label the mig module set, so only the partitioned nodes are checked.
  node_selector = merge(var.pool_selector, {
    "nvidia.com/mig.config" = module.mig.geometry
  })
  tolerations = [
    {
      key      = "nvidia.com/gpu"
      operator = "Exists"
      effect   = "NoSchedule"
    },
  ]
  expect_allocatable = local.advertised_per_node
  resource_name      = module.mig.resource_name
  pods               = module.mig.devices_per_gpu
  gpus_per_pod       = 1
  same_node          = true
  triggers = {
    geometry = module.mig.geometry
  }
  depends_on = [module.mig]
}
