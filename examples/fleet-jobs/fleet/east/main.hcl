# One stack of the fleet: the GPU sharing configuration of the east cluster's pool. Its state
# is in the kubernetes backend, where its drift Job finds it.

gpustack {
  backend "kubernetes" {
    namespace     = "gpustack-system"
    secret_suffix = "east"
  }
}

provider "kubernetes" {}

resource "kubernetes_manifest" "sharing" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "time-slicing-config-east"
      namespace = "gpu-operator"
    }
    data = {
      any = yamlencode({
        version = "v1"
        sharing = {
          timeSlicing = {
            resources = [{ name = "nvidia.com/gpu", replicas = 4 }]
          }
        }
      })
    }
  }
}
