variable "strategy" {
  type        = string
  description = "The key under sharing: timeSlicing or mps."

  validation {
    condition     = contains(["timeSlicing", "mps"], var.strategy)
    error_message = "strategy must be timeSlicing or mps."
  }
}

variable "manager" {
  type        = string
  description = "Names the field managers (gpustack-<manager>, gpustack-<manager>-restart): one per calling module, so that modules patching the same objects keep each other's fields."
}

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
  type        = string
  default     = "nvidia.com/gpu"
  description = "The resource to share: nvidia.com/gpu, or a MIG resource such as nvidia.com/mig-1g.10gb (mixed strategy only)."

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

}

variable "node_names" {
  type        = list(string)
  default     = []
  description = "Nodes to time-slice, by name. Empty: every GPU node (the ClusterPolicy default). Otherwise only these nodes are labelled with config_key, and the others fall back to unshared_config_key."
}

variable "unshared_config_key" {
  type        = string
  default     = "unshared"
  description = "Key of the config without sharing that nodes outside node_names use; only written when node_names is set."

}

variable "rollout" {
  type = object({
    max_unavailable = optional(string, "1")
    drain           = optional(string, "wait")
    drain_timeout   = optional(string, "30m")
    settle_timeout  = optional(string, "15m")
  })
  default     = {}
  description = "With node_names: how a config change restarts the device plugin node by node — max_unavailable nodes at once (a count or a percentage), their GPU pods waited for (wait), evicted (evict) or refused (fail) within drain_timeout, the plugin given settle_timeout."
}
