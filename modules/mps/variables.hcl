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
  description = "How many pods may share one GPU through MPS; the node advertises GPUs × replicas."

  validation {
    condition     = var.replicas >= 2 && floor(var.replicas) == var.replicas
    error_message = "MPS replicas must be a whole number of at least 2 (the device plugin rejects fewer)."
  }
}

variable "config_name" {
  type    = string
  default = "mps-config"
}

variable "config_key" {
  type        = string
  default     = "any"
  description = "Key in the ConfigMap; the ClusterPolicy default, or the value of a node's nvidia.com/device-plugin.config label."
}

variable "resource_name" {
  type        = string
  default     = "nvidia.com/gpu"
  description = "The resource to share. MPS shares full GPUs only."

  validation {
    condition     = var.resource_name == "nvidia.com/gpu"
    error_message = "MPS shares full GPUs only: resource_name must be nvidia.com/gpu (MPS cannot share MIG instances such as nvidia.com/mig-1g.10gb; time-slice those instead)."
  }
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
  type        = string
  default     = "none"
  description = "flags.migStrategy of the sharing config; MPS never runs with MIG, so only none."

  validation {
    condition     = var.mig_strategy == "none"
    error_message = "MPS never runs with MIG: mig_strategy must be \"none\"."
  }
}

variable "node_names" {
  type        = list(string)
  default     = []
  description = "Nodes to share with MPS, by name. Empty: every GPU node (the ClusterPolicy default). Otherwise only these nodes are labelled with config_key, and the others fall back to unshared_config_key."
}

variable "unshared_config_key" {
  type        = string
  default     = "unshared"
  description = "Key of the config without sharing that nodes outside node_names use; only written when node_names is set."

  validation {
    condition     = var.unshared_config_key != var.config_key
    error_message = "unshared_config_key must differ from config_key."
  }
}

variable "rollout" {
  type = object({
    max_unavailable = optional(string, "1")
    drain           = optional(string, "wait")
    drain_timeout   = optional(string, "30m")
    settle_timeout  = optional(string, "15m")
  })
  default     = {}
  description = "With node_names: how a change of the config restarts the device plugin node by node (see the device-plugin-sharing module)."

  validation {
    condition     = contains(["wait", "evict", "fail"], var.rollout.drain)
    error_message = "rollout.drain must be wait, evict or fail."
  }
}
