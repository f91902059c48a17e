variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "kube_context" {
  type        = string
  default     = null
  description = "Context in the kubeconfig; default: its current context."
}

variable "chart" {
  type        = string
  default     = "gpu-operator"
  description = "The GPU Operator chart: its name in NVIDIA's repository, or a local path or .tgz."
}

variable "node_names" {
  type        = list(string)
  description = "The A100 80GB nodes to partition. Their GPU workloads are drained while the geometry changes."

  validation {
    condition     = length(var.node_names) > 0
    error_message = "Name at least one node to partition."
  }
}

variable "geometry" {
  type        = string
  default     = "all-1g.10gb"
  description = "A geometry of NVIDIA's default set with a single profile, such as all-1g.10gb (7 per GPU) or all-3g.40gb (2 per GPU)."

  # The smoke test asks for one resource; the mig module checks the profile against the GPU.
  validation {
    condition     = !contains(["all-balanced", "all-enabled", "all-disabled"], var.geometry)
    error_message = "This example tests one MIG profile per GPU: use an all-<profile> geometry such as all-1g.10gb."
  }
}

variable "pool_selector" {
  type        = map(string)
  default     = {}
  description = "Further labels that narrow the nodes the smoke test runs on and checks."
}

variable "gpus_per_node" {
  type        = number
  default     = 1
  description = "Physical GPUs on each node (Standard_NC24ads_A100_v4 and a2-ultragpu-1g: 1)."

  validation {
    condition     = var.gpus_per_node >= 1 && floor(var.gpus_per_node) == var.gpus_per_node
    error_message = "gpus_per_node must be a whole number of at least 1."
  }
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null

  advertised_per_node = module.mig.resources_per_gpu == null ? {} : {
    for name, n in module.mig.resources_per_gpu : name => n * var.gpus_per_node
  }
}
