# The EKS reference flow with Karpenter: GPU nodes appear when GPU pods are pending (p3, p4d,
# p5, g4dn, g5; spot first, on-demand otherwise), tainted nvidia.com/gpu, and go away 30 s
# after their last GPU pod; the GPU Operator runs on them with the driver and toolkit of the
# EKS-optimized AL2023 NVIDIA AMI. Karpenter itself (its controller and CRDs) must be
# installed in the cluster.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

provider "helm" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

module "karpenter" {
  source            = "../../modules/karpenter-gpu"
  cluster_name      = var.cluster_name
  node_role         = var.node_role
  capacity_types    = var.capacity_types
  gpu_limit         = var.gpu_limit
  consolidate_after = "30s"
}

module "gpu_operator" {
  source          = "../../modules/gpu-operator"
  chart           = var.chart
  driver_enabled  = false
  toolkit_enabled = false
}
