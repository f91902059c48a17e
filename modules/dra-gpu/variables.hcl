variable "via" {
  type        = string
  default     = "helm"
  description = "How the driver is installed: \"helm\" (its own chart, dra-driver-nvidia-gpu) or \"gpu-cluster\" (the GPU Operator chart's GPUCluster; experimental in 26.7)."

  validation {
    condition     = contains(["helm", "gpu-cluster"], var.via)
    error_message = "via must be \"helm\" or \"gpu-cluster\"."
  }
}

variable "chart" {
  type        = string
  description = "The chart: dra-driver-nvidia-gpu (via = \"helm\") or gpu-operator (via = \"gpu-cluster\"), by name in the repository, an OCI reference, or a local path or .tgz."
}

variable "repository" {
  type        = string
  default     = null
  description = "The repository to look the chart's name up in."
}

variable "chart_version" {
  type    = string
  default = null
}

variable "release_name" {
  type    = string
  default = "nvidia-dra-driver-gpu"
}

variable "namespace" {
  type        = string
  default     = "nvidia-dra-driver-gpu"
  description = "Where the driver runs; the chart refuses `default`."

  validation {
    condition     = var.namespace != "default"
    error_message = "The DRA driver chart refuses the default namespace."
  }
}

variable "pool_selector" {
  type = map(string)
  default = {
    "nvidia.com/gpu.deploy.device-plugin" = "false"
  }
  description = "Labels of the nodes the driver serves (via = \"helm\"; the GPUCluster schedules the driver on every GPU node itself)."
}

variable "feature_gates" {
  type        = map(bool)
  default     = {}
  description = "The driver's feature gates (DynamicMIG, MPSSupport, ...); those it refuses together are refused at plan."
}

variable "compute_domains" {
  type        = bool
  default     = false
  description = "Multi-node NVLink ComputeDomains (GB200/GB300 systems)."
}

variable "driver_enabled" {
  type        = bool
  default     = true
  description = "via = \"gpu-cluster\": whether the operator installs the GPU driver (false where the cloud does)."
}

variable "extra_values" {
  type        = any
  default     = {}
  description = "More chart values, merged over the module's."
}

variable "claim_templates" {
  type = map(object({
    namespace = string
    # The DeviceClass: gpu.nvidia.com (full GPUs), mig.nvidia.com (MIG devices).
    device_class = optional(string, "gpu.nvidia.com")
    count        = optional(number, 1)
    # CEL selectors over `device`, all of which a device must pass; checked at plan against
    # the devices the nodes publish.
    selectors = optional(list(string), [])
    # Devices of one claim agree on these attributes (gpu.nvidia.com/parentUUID: MIG devices
    # of one GPU).
    match_attributes = optional(list(string), [])
  }))
  default     = {}
  description = "ResourceClaimTemplates by name, for pods to ask for GPUs through claims."

  validation {
    condition     = alltrue([for t in values(var.claim_templates) : t.count >= 1])
    error_message = "A claim template asks for at least one device."
  }
}
