resource "helm_release" "dra_driver" {
  name             = "nvidia-dra-driver-gpu"
  namespace        = "nvidia-dra-driver-gpu"
  create_namespace = true
  repository       = "oci://registry.k8s.io/dra-driver-nvidia/charts"
  chart            = "dra-driver-nvidia-gpu"

  values = [yamlencode({
    gpuResourcesEnabledOverride = true
    featureGates = {
      DynamicMIG = true
      MPSSupport = true
    }
    kubeletPlugin = {
      nodeSelector = { "nvidia.com/gpu.deploy.device-plugin" = "false" }
    }
  })]
}

resource "kubernetes_manifest" "big_gpu" {
  manifest = {
    apiVersion = "resource.k8s.io/v1"
    kind       = "ResourceClaimTemplate"
    metadata = {
      name      = "big-gpu"
      namespace = "ml"
    }
    spec = {
      spec = {
        devices = {
          requests = [{
            name = "gpu"
            exactly = {
              deviceClassName = "gpu.nvidia.com"
              selectors = [{
                cel = {
                  expression = "device.capacity['gpu.nvidia.com'].memory >= quantity('40Gi')"
                }
              }]
            }
          }]
        }
      }
    }
  }
}

resource "kubernetes_manifest" "any_mig" {
  manifest = {
    apiVersion = "resource.k8s.io/v1"
    kind       = "ResourceClaimTemplate"
    metadata = {
      name      = "any-mig"
      namespace = "ml"
    }
    spec = {
      spec = {
        devices = {
          requests = [{
            name = "mig"
            exactly = {
              deviceClassName = "mig.nvidia.com"
            }
          }]
        }
      }
    }
  }
}
