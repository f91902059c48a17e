variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "kube_context" {
  type        = string
  default     = null
  description = "Context in the kubeconfig; default: its current context."
}

variable "chart" {
  type        = string
  description = "The DRA Driver for NVIDIA GPUs chart (kubernetes-sigs/dra-driver-nvidia-gpu): a local path or .tgz, or its name in a repository you add."
}

variable "driver_namespace" {
  type        = string
  default     = "nvidia-dra-driver-gpu"
  description = "Where the driver runs (the chart refuses `default`)."
}

variable "namespace" {
  type        = string
  default     = "dra-gpu"
  description = "Where the claim template and the smoke test live."
}

variable "pool_selector" {
  type = map(string)
  default = {
    "nvidia.com/gpu.deploy.device-plugin" = "false"
  }
  description = "Labels of the nodes the DRA driver serves (and the device plugin does not)."
}

variable "product" {
  type        = string
  default     = "NVIDIA A100"
  description = "The start of the GPUs' productName a claim accepts."
}

variable "min_memory" {
  type        = string
  default     = "40Gi"
  description = "The least GPU memory a claim accepts, a Kubernetes quantity."
}

variable "pods" {
  type        = number
  default     = 4
  description = "Smoke-test pods, one claim and one GPU each."
}
