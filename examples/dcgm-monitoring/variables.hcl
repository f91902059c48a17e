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

variable "prometheus_namespace" {
  type        = string
  default     = null
  description = "Namespace of the ServiceMonitor; default: the operator's (a Prometheus that selects ServiceMonitors in every namespace finds it there)."
}

variable "interval" {
  type    = string
  default = "15s"
}

variable "service_monitor_labels" {
  type = map(string)
  default = {
    release = "kube-prometheus-stack"
  }
  description = "Labels the Prometheus resource's serviceMonitorSelector matches; kube-prometheus-stack's is its release name."
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null
}
