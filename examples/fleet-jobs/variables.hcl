variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path for installing the Jobs; empty: $KUBECONFIG or ~/.kube/config."
}

variable "namespace" {
  type        = string
  default     = "gpustack-fleet-drift"
  description = "Where the Jobs run: created by this stack, holding only the Jobs."
}

variable "state_namespace" {
  type        = string
  default     = "gpustack-system"
  description = "The fleet's state namespace (every stack's kubernetes backend). Not created here."
}

variable "stacks" {
  type = map(object({
    state_suffix = string
    files        = map(string)
  }))
  default     = null
  description = "The fleet, by name: each stack's backend secret_suffix and its files; default: the stacks in fleet/."
}

variable "watched_namespaces" {
  type = map(list(object({
    api_groups = list(string)
    resources  = list(string)
  })))
  default = {
    "gpu-operator" = [{ api_groups = [""], resources = ["configmaps"] }]
  }
  description = "The namespaced kinds the fleet manages, by namespace: the Jobs may get and list them there, nothing more."
}

variable "watched_cluster_resources" {
  type = list(object({
    api_groups = list(string)
    resources  = list(string)
  }))
  default = [
    { api_groups = [""], resources = ["nodes"] },
    { api_groups = ["nvidia.com"], resources = ["clusterpolicies"] },
  ]
  description = "The cluster-scoped kinds the fleet manages or the GPU model reads: the Jobs may get and list them."
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
