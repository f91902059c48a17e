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
  type        = string
  default     = "nvidia.com/gpu"
  description = "The resource to share: nvidia.com/gpu, or a MIG resource such as nvidia.com/mig-1g.10gb (mixed strategy only)."

  validation {
    condition     = var.resource_name == "nvidia.com/gpu" || startswith(var.resource_name, "nvidia.com/mig-")
    error_message = "resource_name must be nvidia.com/gpu or a MIG resource nvidia.com/mig-<profile>."
  }

  validation {
    condition     = !startswith(var.resource_name, "nvidia.com/mig-") || var.mig_strategy == "mixed"
    error_message = "Time-slicing a MIG resource needs mig_strategy = \"mixed\": only the mixed strategy advertises nvidia.com/mig-<profile>."
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
  type    = string
  default = "none"

  validation {
    condition     = contains(["none", "single", "mixed"], var.mig_strategy)
    error_message = "mig_strategy must be none, single or mixed."
  }
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
