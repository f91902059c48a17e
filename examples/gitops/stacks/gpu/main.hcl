# The stack the pipelines plan and apply: the device plugin's time-slicing config, in a
# cluster whose GPU Operator reads it (devicePlugin.config.name = time-slicing-config,
# default key any). The state lives in the cluster, because every CI runner starts from a
# fresh clone.

gpustack {
  backend "kubernetes" {
    namespace     = "gpustack-system"
    secret_suffix = "gpu"
    lock_ttl      = "2m"
  }
}

# The kubeconfig the pipeline writes to ~/.kube/config.
provider "kubernetes" {}

variable "replicas" {
  type        = number
  default     = 4
  description = "Time-slicing replicas per GPU."

  validation {
    condition     = var.replicas >= 2 && floor(var.replicas) == var.replicas
    error_message = "Time-slicing replicas must be a whole number of at least 2 (the device plugin rejects fewer)."
  }
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
            resources = [
              {
                name     = "nvidia.com/gpu"
                replicas = var.replicas
              },
            ]
          }
        }
      })
    }
  }
}
