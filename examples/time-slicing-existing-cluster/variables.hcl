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

variable "replicas" {
  type        = number
  default     = 10
  description = "Time-slicing replicas per GPU."
}

variable "node_names" {
  type        = list(string)
  default     = []
  description = "Time-slice only these nodes; empty: every GPU node."
}

variable "pool_selector" {
  type = map(string)
  default = {
    "nvidia.com/gpu.present" = "true"
  }
  description = "Labels of the nodes the smoke test runs on and checks."
}

variable "gpus_per_node" {
  type        = number
  default     = 1
  description = "Physical GPUs on each node of the pool."

  validation {
    condition     = var.gpus_per_node >= 1 && floor(var.gpus_per_node) == var.gpus_per_node
    error_message = "gpus_per_node must be a whole number of at least 1."
  }
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null

  # With node_names the pool is also the nodes that carry the sharing config's label.
  smoke_test_selector = length(var.node_names) > 0 ? merge(var.pool_selector, {
    "nvidia.com/device-plugin.config" = module.time_slicing.config_key
  }) : var.pool_selector
}
