variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path for installing the Jobs; empty: $KUBECONFIG or ~/.kube/config."
}

variable "namespace" {
  type        = string
  default     = "gpustack-system"
  description = "Where the Jobs run; also the fleet's state namespace (every stack's kubernetes backend)."
}

variable "stacks" {
  type = map(object({
    state_suffix = string
    files        = map(string)
  }))
  default     = null
  description = "The fleet, by name: each stack's backend secret_suffix and its files; default: the stacks in fleet/."
}

variable "watched_resources" {
  type = list(object({
    api_groups = list(string)
    resources  = list(string)
  }))
  default = [
    { api_groups = [""], resources = ["configmaps", "nodes"] },
    { api_groups = ["nvidia.com"], resources = ["clusterpolicies"] },
  ]
  description = "The kinds the fleet manages: the Jobs may get, list and watch them, nothing more."
}

variable "image" {
  type    = string
  default = "ghcr.io/gpustack-dev/gpustack:0.1.0"
}

variable "schedule" {
  type        = string
  default     = "*/30 * * * *"
  description = "When every stack's Job runs; each stack is checked by a Job of its own, in parallel."
}
