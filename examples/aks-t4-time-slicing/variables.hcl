variable "subscription_id" {
  type        = string
  description = "Azure subscription of the cluster."
}

variable "resource_group" {
  type    = string
  default = "ml-rg"
}

variable "cluster" {
  type    = string
  default = "ml-aks"
}

variable "kube_context" {
  type        = string
  default     = null
  description = "Context in the kubeconfig (az aks get-credentials makes one named after the cluster); default: its current context."
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "azure_endpoint" {
  type        = string
  default     = null
  description = "Azure Resource Manager endpoint; default https://management.azure.com."
}

variable "chart" {
  type        = string
  default     = "gpu-operator"
  description = "The GPU Operator chart: its name in NVIDIA's repository, or a local path or .tgz."
}

variable "pool_name" {
  type    = string
  default = "gpupool"

  validation {
    condition     = length(var.pool_name) <= 12
    error_message = "AKS node pool names have at most 12 characters."
  }
}

variable "node_count" {
  type    = number
  default = 1
}

variable "replicas" {
  type        = number
  default     = 10
  description = "Time-slicing replicas per GPU."
}

locals {
  # Standard_NC4as_T4_v3 carries one T4.
  gpus_per_node = 1
  kubeconfig    = var.kubeconfig != "" ? var.kubeconfig : null
}
