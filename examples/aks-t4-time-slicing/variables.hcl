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
  type    = string
  default = "ml-aks"
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
}
