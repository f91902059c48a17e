# The stack the drift cron watches. Here a small one, the time-slicing configuration of the
# GPU Operator; in practice your GPU stack, as long as it keeps its state in the kubernetes
# backend (the cron Job has no disk that outlives it) and its provider blocks name no
# kubeconfig (in the pod, gpustack uses the Job's service account, as kubectl does). Its state
# namespace is made once, before its first run (kubectl create namespace gpustack-system), and
# belongs to no stack: destroying the cron leaves the state where it is.

gpustack {
  backend "kubernetes" {
    namespace     = "gpustack-system"
    secret_suffix = "gpu"
    lock_ttl      = "2m"
  }
}

provider "kubernetes" {}

variable "replicas" {
  type    = number
  default = 4
}

resource "kubernetes_manifest" "sharing" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "time-slicing-config"
      namespace = "gpu-operator"
    }
    data = {
      any = yamlencode({
        version = "v1"
        sharing = {
          timeSlicing = {
            resources = [{ name = "nvidia.com/gpu", replicas = var.replicas }]
          }
        }
      })
    }
  }
}
