variable "namespace" {
  type        = string
  default     = "gpu-operator"
  description = "Namespace of the release; created when missing."
}

variable "chart_version" {
  type        = string
  default     = "v26.7.0"
  description = "Version of the nvidia/gpu-operator chart."
}

variable "chart" {
  type        = string
  default     = "gpu-operator"
  description = "Chart name in the repository, an OCI reference, or a local path or .tgz."
}

variable "repository" {
  type    = string
  default = "https://helm.ngc.nvidia.com/nvidia"
}

variable "driver_enabled" {
  type        = bool
  default     = true
  description = "false where the cloud installs the driver (AKS with gpu_driver = \"Install\", GKE with Google's driver)."
}

variable "toolkit_enabled" {
  type    = bool
  default = true
}

variable "runtime_class" {
  type    = string
  default = "nvidia"
}

variable "mig_strategy" {
  type    = string
  default = "single"

  validation {
    condition     = contains(["none", "single", "mixed"], var.mig_strategy)
    error_message = "mig_strategy must be none, single or mixed."
  }
}

variable "dcgm_exporter_enabled" {
  type    = bool
  default = true
}

variable "service_monitor_enabled" {
  type        = bool
  default     = false
  description = "Create a ServiceMonitor for dcgm-exporter (needs the Prometheus Operator CRDs)."
}

variable "extra_values" {
  type        = any
  default     = {}
  description = "Further chart values, merged over the ones above."
}
