# Renders the GPU sharing configuration of a cluster as files, for a GitOps repository that
# Argo CD or Flux applies: the device-plugin time-slicing ConfigMap, the ClusterPolicy patch
# that points at it, and the GPU Operator's Helm values. Runs anywhere, with no cluster.

variable "replicas" {
  type        = number
  default     = 10
  description = "Time-slicing replicas per GPU."

  validation {
    condition     = var.replicas >= 2 && floor(var.replicas) == var.replicas
    error_message = "Time-slicing replicas must be a whole number of at least 2 (the device plugin rejects fewer)."
  }
}

variable "gpus_per_node" {
  type    = number
  default = 1
}

variable "out_dir" {
  type        = string
  default     = ""
  description = "Where to write the files; default: rendered/ next to this stack."
}

locals {
  namespace = "gpu-operator"
  out_dir   = var.out_dir != "" ? var.out_dir : "${path.module}/rendered"

  sharing = {
    version = "v1"
    flags = {
      migStrategy = "none"
    }
    sharing = {
      timeSlicing = {
        renameByDefault            = false
        failRequestsGreaterThanOne = false
        resources = [
          {
            name     = "nvidia.com/gpu"
            replicas = var.replicas
          },
        ]
      }
    }
  }

  config_map = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "time-slicing-config"
      namespace = local.namespace
    }
    data = {
      any = yamlencode(local.sharing)
    }
  }
}

resource "local_file" "time_slicing" {
  filename = "${local.out_dir}/time-slicing-config.yaml"
  content  = yamlencode(local.config_map)
}

resource "local_file" "cluster_policy_patch" {
  filename = "${local.out_dir}/cluster-policy-patch.yaml"
  content = yamlencode({
    spec = {
      devicePlugin = {
        config = {
          name    = local.config_map.metadata.name
          default = "any"
        }
      }
    }
  })
}

resource "local_file" "operator_values" {
  filename = "${local.out_dir}/gpu-operator-values.yaml"
  content = yamlencode({
    driver   = { enabled = false }
    toolkit  = { enabled = false }
    operator = { runtimeClass = "nvidia-container-runtime" }
  })
}

output "advertised_gpus_per_node" {
  value       = var.gpus_per_node * var.replicas
  description = "nvidia.com/gpu each node advertises once the ConfigMap is applied."
}

output "files" {
  value = [for f in [local_file.time_slicing, local_file.cluster_policy_patch, local_file.operator_values] : f.filename]
}
