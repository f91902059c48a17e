variable "operator" {
  type = object({
    namespace               = string
    dcgm_exporter_enabled   = optional(bool)
    service_monitor_enabled = optional(bool)
  })
  description = "The gpu-operator module (pass module.gpu_operator); the exporter runs in its namespace."

  validation {
    condition     = var.operator.dcgm_exporter_enabled != false
    error_message = "The gpu-operator module runs without dcgm-exporter (dcgm_exporter_enabled = false): there is nothing to scrape."
  }
}

variable "mode" {
  type        = string
  default     = "service-monitor"
  description = "service-monitor: a ServiceMonitor for the Prometheus Operator. scrape-config: a Secret holding an additional scrape config (job gpu-metrics)."

  validation {
    condition     = contains(["service-monitor", "scrape-config"], var.mode)
    error_message = "mode must be service-monitor or scrape-config."
  }

  # Two ServiceMonitors on one exporter would scrape every GPU twice.
  validation {
    condition     = var.mode != "service-monitor" || var.operator.service_monitor_enabled != true
    error_message = "The gpu-operator module already makes a ServiceMonitor (service_monitor_enabled = true); turn one of the two off."
  }
}

variable "namespace" {
  type        = string
  default     = null
  description = "Namespace of the ServiceMonitor or Secret; default: the operator's. A scrape-config Secret must be in Prometheus's namespace."

  validation {
    condition     = var.namespace != null || var.mode != "scrape-config"
    error_message = "scrape-config mode needs namespace: the Prometheus Operator reads additionalScrapeConfigs only from a Secret in Prometheus's own namespace."
  }
}

variable "name" {
  type        = string
  default     = "nvidia-dcgm-exporter"
  description = "Name of the ServiceMonitor or Secret."
}

variable "interval" {
  type        = string
  default     = "15s"
  description = "Scrape interval: a whole number with ms, s, m or h."

  validation {
    condition = anytrue([
      for unit in ["ms", "s", "m", "h"] :
      endswith(var.interval, unit) && try(tonumber(trimsuffix(var.interval, unit)) >= 1 && floor(tonumber(trimsuffix(var.interval, unit))) == tonumber(trimsuffix(var.interval, unit)), false)
    ])
    error_message = "interval must be a whole number followed by ms, s, m or h, such as 15s."
  }
}

variable "additional_labels" {
  type        = map(string)
  default     = {}
  description = "Labels on the ServiceMonitor or Secret; kube-prometheus-stack selects ServiceMonitors by its release label."
}

variable "scrape_config_key" {
  type    = string
  default = "gpu-metrics.yaml"
}
