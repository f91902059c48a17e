# GPU sharing with MPS on any cluster with GPU nodes: the GPU Operator without its driver and
# toolkit, every GPU shared by 4 pods through MPS, and a smoke test that runs four vectorAdd
# pods on one node. Where time-slicing takes turns on the whole GPU, MPS runs the clients
# side by side, each with its own share of memory. Runs on the local test cluster with
# --var kubeconfig=PATH --var chart=PATH/gpu-operator.tgz.

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
  # MPS shares whole GPUs only.
  mig_strategy = "none"
}

module "mps" {
  source     = "../../modules/mps"
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
    (module.mps.resource_name) = var.gpus_per_node * module.mps.replicas
  }
  pods         = 4
  gpus_per_pod = 1
  same_node    = true
  # A new sharing config is a new GPU setup: test it again.
  triggers = {
    config = module.mps.config_hash
  }
  depends_on = [module.mps]
}
