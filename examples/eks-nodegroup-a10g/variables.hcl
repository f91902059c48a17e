variable "region" {
  type    = string
  default = "us-east-1"
}

variable "endpoint" {
  type        = string
  default     = null
  description = "An endpoint for every AWS API, e.g. a local moto server; default: AWS."
}

variable "cluster_name" {
  type = string
}

variable "nodegroup_name" {
  type    = string
  default = "gpu-a10g"
}

variable "node_role" {
  type        = string
  description = "The node IAM role ARN (AmazonEKSWorkerNodePolicy, AmazonEC2ContainerRegistryReadOnly, AmazonEKS_CNI_Policy)."
}

variable "subnets" {
  type = set(string)
}

variable "instance_type" {
  type    = string
  default = "g5.xlarge"
}

variable "spot" {
  type    = bool
  default = false
}

variable "max_size" {
  type    = number
  default = 4
}

variable "desired_size" {
  type    = number
  default = 2
}

variable "labels" {
  type = map(string)
  default = {
    "gpustack.dev/pool" = "a10g"
  }
}
