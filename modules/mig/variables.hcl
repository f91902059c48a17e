variable "operator" {
  type = object({
    namespace               = string
    cluster_policy_name     = string
    device_plugin_daemonset = string
    mig_strategy            = optional(string)
  })
  description = "The gpu-operator module (pass module.gpu_operator)."
}

variable "gpu_model" {
  type        = string
  description = "The GPU of the nodes: A100-40GB, A100-80GB, H100-80GB, H200-141GB or A30-24GB."

  validation {
    condition     = contains(["A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "A30-24GB"], var.gpu_model)
    error_message = "gpu_model must be one of A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB. T4, A10G, L4 and V100 have no MIG: share those with time-slicing or MPS."
  }
}

variable "geometry" {
  type        = string
  description = "The mig-parted config to apply, such as all-1g.10gb, all-balanced or all-disabled."

  validation {
    condition     = var.geometry != "" && length(split(" ", var.geometry)) == 1 && length(var.geometry) <= 63
    error_message = "geometry is a mig-parted config name, used as a node label value: no spaces, at most 63 characters."
  }

  # A profile the GPU does not have makes the MIG manager fail on the node at apply time.
  validation {
    condition = (
      !contains(keys(local.mig_profiles), var.gpu_model) ||
      !startswith(var.geometry, "all-") ||
      contains(["all-disabled", "all-enabled", "all-balanced"], var.geometry) ||
      contains(keys(lookup(local.mig_profiles, var.gpu_model, {})), trimprefix(var.geometry, "all-"))
    )
    error_message = "${var.gpu_model} has no MIG profile ${trimprefix(var.geometry, "all-")}. Its geometries are ${join(", ", [for p, n in lookup(local.mig_profiles, var.gpu_model, {}) : "all-${p} (${n} per GPU)"])}, and all-balanced, all-enabled, all-disabled."
  }

  validation {
    condition     = var.config_name != "default-mig-parted-config" || startswith(var.geometry, "all-")
    error_message = "NVIDIA's default-mig-parted-config only has all-* geometries (all-<profile>, all-balanced, all-enabled, all-disabled); a custom geometry needs its own config set in config_name."
  }
}

variable "strategy" {
  type        = string
  default     = "mixed"
  description = "single: every GPU of a node has one profile, advertised as nvidia.com/gpu. mixed: each profile is its own resource, nvidia.com/mig-<profile>."

  validation {
    condition     = contains(["single", "mixed"], var.strategy)
    error_message = "strategy must be single or mixed."
  }

  validation {
    condition     = var.strategy == "mixed" || var.geometry != "all-balanced"
    error_message = "all-balanced makes several profiles per GPU, which only the mixed strategy can advertise."
  }

  # The chart's mig.strategy value would otherwise differ from the live ClusterPolicy, and the
  # next helm upgrade that renders it would silently switch the strategy back.
  validation {
    condition     = var.operator.mig_strategy == null || var.operator.mig_strategy == var.strategy
    error_message = "The gpu-operator module is installed with mig_strategy = \"${coalesce(var.operator.mig_strategy, "")}\"; set it to \"${var.strategy}\" there too."
  }
}

variable "node_names" {
  type        = list(string)
  description = "The nodes to partition, by name. A geometry change drains their GPUs."

  validation {
    condition     = length(var.node_names) == length(distinct(var.node_names))
    error_message = "node_names lists a node twice."
  }
}

variable "config_name" {
  type        = string
  default     = "default-mig-parted-config"
  description = "ConfigMap with the mig-parted config set, in the operator's namespace; default: NVIDIA's, created by the operator."
}

variable "rollout" {
  type = object({
    max_unavailable   = optional(string, "1")
    drain             = optional(string, "wait")
    drain_timeout     = optional(string, "30m")
    settle_timeout    = optional(string, "15m")
    check_allocatable = optional(bool, true)
  })
  default     = {}
  description = "How a geometry change reaches the nodes: max_unavailable nodes at once (a count or a percentage), their GPU pods waited for (wait), evicted (evict) or refused (fail) within drain_timeout, MIG Manager given settle_timeout. check_allocatable = false skips the check of what each GPU advertises (when another module shares the MIG devices)."

  validation {
    condition     = contains(["wait", "evict", "fail"], var.rollout.drain)
    error_message = "rollout.drain must be wait, evict or fail."
  }
}
