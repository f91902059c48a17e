# GPUs through Dynamic Resource Allocation: NVIDIA's DRA driver (modules/dra-gpu) on the nodes
# that opt out of the device plugin, a ResourceClaimTemplate for one A100 per pod, and a smoke test whose four
# pods get their GPUs through claims made from it. Every selector is checked at plan against
# the devices the nodes publish; the smoke test's result names the devices the scheduler gave
# each pod. Runs on the local test cluster with --var kubeconfig=PATH
# --var chart=PATH/dra-driver-nvidia-gpu.

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

module "dra" {
  source        = "../../modules/dra-gpu"
  chart         = var.chart
  namespace     = var.driver_namespace
  pool_selector = var.pool_selector
  claim_templates = {
    one-gpu = {
      namespace = var.namespace
      selectors = [
        "device.attributes['gpu.nvidia.com'].productName.startsWith('${var.product}') && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('${var.min_memory}')) >= 0",
      ]
    }
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "namespace" {
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name = var.namespace
    }
  }
}

resource "gpu_smoke_test" "claims" {
  namespace               = var.namespace
  node_selector           = var.pool_selector
  resource_claim_template = module.dra.claim_templates["one-gpu"]
  pods                    = var.pods
  depends_on              = [module.dra]
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null
}
