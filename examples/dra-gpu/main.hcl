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

resource "kubernetes_manifest" "one_gpu" {
  manifest = {
    apiVersion = "resource.k8s.io/v1"
    kind       = "ResourceClaimTemplate"
    metadata = {
      name      = "one-gpu"
      namespace = var.namespace
    }
    spec = {
      spec = {
        devices = {
          requests = [{
            name = "gpu"
            exactly = {
              deviceClassName = module.dra.device_classes.gpu
              selectors = [{
                cel = {
                  expression = "device.attributes['gpu.nvidia.com'].productName.startsWith('${var.product}') && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('${var.min_memory}')) >= 0"
                }
              }]
            }
          }]
        }
      }
    }
  }
  depends_on = [module.dra, kubernetes_manifest.namespace]
}

resource "gpu_smoke_test" "claims" {
  namespace               = var.namespace
  node_selector           = var.pool_selector
  resource_claim_template = kubernetes_manifest.one_gpu.manifest.metadata.name
  pods                    = var.pods
  depends_on              = [kubernetes_manifest.one_gpu]
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null
}
