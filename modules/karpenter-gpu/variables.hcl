variable "name" {
  type        = string
  default     = "gpu"
  description = "The NodePool's and EC2NodeClass's name."
}

variable "cluster_name" {
  type        = string
  description = "The EKS cluster: subnets and security groups are found by its karpenter.sh/discovery tag."
}

variable "node_role" {
  type        = string
  description = "The IAM role of the nodes Karpenter launches (its name, not its ARN)."
}

variable "instance_families" {
  type        = list(string)
  default     = ["p3", "p4d", "p5", "g4dn", "g5"]
  description = "EC2 GPU instance families Karpenter may choose from."
}

variable "capacity_types" {
  type        = list(string)
  default     = ["spot", "on-demand"]
  description = "Spot first when both are allowed: Karpenter prefers the cheaper capacity."

  validation {
    condition     = length(var.capacity_types) > 0 && alltrue([for c in var.capacity_types : contains(["spot", "on-demand", "reserved"], c)])
    error_message = "capacity_types are spot, on-demand or reserved."
  }
}

variable "gpu_limit" {
  type        = number
  default     = 32
  description = "At most this many GPUs (nvidia.com/gpu) across the nodes of this NodePool."
}

variable "consolidate_after" {
  type        = string
  default     = "30s"
  description = "How long an empty GPU node lives before Karpenter removes it."
}

variable "ami_alias" {
  type        = string
  default     = "al2023@latest"
  description = "The EKS-optimized AMI: AL2023 selects its NVIDIA variant on GPU instances. @latest replaces nodes on every AMI release; pin a version (al2023@v20250101) in production."
}

variable "expire_after" {
  type        = string
  default     = "Never"
  description = "How long a GPU node may live before Karpenter replaces it (Karpenter's default, 720h, would interrupt long training runs); e.g. \"720h\" or \"Never\"."
}
