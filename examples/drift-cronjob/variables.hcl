variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path for installing the cron; empty: $KUBECONFIG or ~/.kube/config."
}

variable "namespace" {
  type        = string
  default     = "gpustack-system"
  description = "Where the cron runs; also the watched stack's state namespace (its kubernetes backend), which should hold nothing but gpustack state."
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

variable "watched_resources" {
  type = list(object({
    api_groups = list(string)
    resources  = list(string)
  }))
  default = [
    { api_groups = [""], resources = ["configmaps", "nodes"] },
    { api_groups = ["nvidia.com"], resources = ["clusterpolicies"] },
  ]
  description = "The kinds the watched stack manages: the cron may get, list and watch them, nothing more."
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
