# A fleet of GPU pools from one map: a Karpenter GPU NodePool per workload class, the
# karpenter-gpu module stamped once per entry with for_each. Adding an entry plans one new
# pool; removing one destroys only that pool. Karpenter (its controller and CRDs) must be
# installed in the cluster.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Kubeconfig path; empty: $KUBECONFIG or ~/.kube/config."
}

variable "cluster_name" {
  type        = string
  default     = "ml-eks"
  description = "The EKS cluster, as its subnets and security groups are tagged (karpenter.sh/discovery)."
}

variable "node_role" {
  type        = string
  default     = "KarpenterNodeRole-ml-eks"
  description = "The IAM role of the nodes Karpenter launches."
}

variable "pools" {
  type = map(object({
    instance_families = list(string)
    capacity_types    = list(string)
    gpu_limit         = number
  }))
  description = "GPU pools by name: the instance families they launch, spot or on-demand, and their GPU ceiling."
  default = {
    training = {
      instance_families = ["p5", "p4d"]
      capacity_types    = ["on-demand"]
      gpu_limit         = 64
    }
    inference = {
      instance_families = ["g5", "g6"]
      capacity_types    = ["spot", "on-demand"]
      gpu_limit         = 16
    }
  }
}

module "pool" {
  source   = "../../modules/karpenter-gpu"
  for_each = var.pools

  name              = "gpu-${each.key}"
  cluster_name      = var.cluster_name
  node_role         = var.node_role
  instance_families = each.value.instance_families
  capacity_types    = each.value.capacity_types
  gpu_limit         = each.value.gpu_limit
}

output "node_selectors" {
  value       = { for name, pool in module.pool : name => pool.node_selector }
  description = "Selects each pool's nodes, e.g. for a smoke test."
}
