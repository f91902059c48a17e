variable "operator" {
  type = object({
    namespace               = string
    cluster_policy_name     = string
    device_plugin_daemonset = string
  })
  description = "The gpu-operator module (pass module.gpu_operator)."
}

variable "replicas" {
  type        = number
  description = "How many pods may share one GPU; the node advertises GPUs × replicas."

  validation {
    condition     = var.replicas >= 2 && floor(var.replicas) == var.replicas
    error_message = "Time-slicing replicas must be a whole number of at least 2 (the device plugin rejects fewer)."
  }
}

variable "config_name" {
  type    = string
  default = "time-slicing-config"
}

variable "config_key" {
  type        = string
  default     = "any"
  description = "Key in the ConfigMap; the ClusterPolicy default, or the value of a node's nvidia.com/device-plugin.config label."
}

variable "resource_name" {
  type    = string
  default = "nvidia.com/gpu"
}

variable "rename_by_default" {
  type        = bool
  default     = false
  description = "Advertise nvidia.com/gpu.shared instead of nvidia.com/gpu."
}

variable "fail_requests_greater_than_one" {
  type    = bool
  default = false
}

variable "mig_strategy" {
  type    = string
  default = "none"

  validation {
    condition     = contains(["none", "single", "mixed"], var.mig_strategy)
    error_message = "mig_strategy must be none, single or mixed."
  }
}
