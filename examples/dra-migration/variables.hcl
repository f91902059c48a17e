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
  description = "The DRA Driver for NVIDIA GPUs chart (kubernetes-sigs/dra-driver-nvidia-gpu): a local path or .tgz, or its name in a repository you add."
}

variable "driver_namespace" {
  type        = string
  default     = "nvidia-dra-driver-gpu"
  description = "Where the driver runs (the chart refuses `default`)."
}

variable "pool_label" {
  type        = string
  description = "The node label that names a node's pool: eks.amazonaws.com/nodegroup, cloud.google.com/gke-nodepool, kubernetes.azure.com/agentpool, karpenter.sh/nodepool."
}

variable "dra_pools" {
  type        = list(string)
  default     = []
  description = "The pools moved to DRA so far (values of pool_label), in the order they were moved; the others keep the device plugin."

  validation {
    condition     = alltrue([for pool in var.dra_pools : can(regex("^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", pool))])
    error_message = "Each pool must be a label value."
  }
}

variable "drain" {
  type        = string
  default     = "evict"
  description = "How each node is emptied of its GPU pods before it moves: evict (PodDisruptionBudgets respected), wait (for them to finish), fail."
}

variable "drain_timeout" {
  type    = string
  default = "30m"
}

variable "max_unavailable" {
  type        = string
  default     = "1"
  description = "How many nodes move at once: a count, or a percentage of the moving nodes."
}
