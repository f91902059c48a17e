variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path for installing the cron; empty: $KUBECONFIG or ~/.kube/config."
}

variable "namespace" {
  type        = string
  default     = "gpustack-drift"
  description = "Where the cron runs: created by this stack, holding only the cron."
}

variable "state_namespace" {
  type        = string
  default     = "gpustack-system"
  description = "The watched stack's state namespace (its kubernetes backend). Not created here: create it before the watched stack's first run."
}

variable "state_suffix" {
  type        = string
  default     = "gpu"
  description = "The watched stack's backend secret_suffix: its state is Secret gpustack-state-SUFFIX, its lock Lease gpustack-lock-SUFFIX."
}

variable "stack_files" {
  type        = map(string)
  default     = null
  description = "The watched stack's files by name; default: the stack in watched/. Modules must be inside it or remote."
}

variable "watched_namespaces" {
  type = map(list(object({
    api_groups = list(string)
    resources  = list(string)
  })))
  default = {
    "gpu-operator" = [{ api_groups = [""], resources = ["configmaps"] }]
  }
  description = "The namespaced kinds the watched stack manages, by namespace: the cron may get and list them there, nothing more."
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
  description = "The cluster-scoped kinds the watched stack manages or the GPU model reads: the cron may get and list them."
}

variable "image" {
  type        = string
  default     = "ghcr.io/gpustack-dev/gpustack:0.1.0"
  description = "The gpustack container image (see the Dockerfile at the repository root)."
}

variable "schedule" {
  type    = string
  default = "*/15 * * * *"
}

variable "webhook_url" {
  type        = string
  default     = ""
  sensitive   = true
  description = "Where to POST the drift report when drift appears, changes or goes away; empty: no webhook. Kept in a Secret."
}

variable "textfile_dir" {
  type        = string
  default     = ""
  description = "A node directory read by node-exporter's textfile collector for the Prometheus metrics; empty: metrics stay in the pod."
}
