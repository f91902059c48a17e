variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "cluster_name" {
  type = string
}

variable "node_role" {
  type        = string
  description = "The IAM role name of Karpenter's GPU nodes."
}

variable "capacity_types" {
  type    = list(string)
  default = ["spot", "on-demand"]
}

variable "gpu_limit" {
  type    = number
  default = 32
}

variable "chart" {
  type        = string
  default     = "gpu-operator"
  description = "The GPU Operator chart: its name in NVIDIA's repository, or a local path or .tgz."
}
