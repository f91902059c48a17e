# An EKS managed node group of g5.xlarge (1× A10G 24 GB each) for GPU workloads: the NVIDIA
# AL2023 AMI (driver included), the GPU taint, and labels the GPU Operator and the smoke test
# select on. Labels, taints and sizes change in place (UpdateNodegroupConfig); an instance
# type, AMI type or capacity type change replaces the node group, and the plan says so.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "aws" {
  region   = var.region
  endpoint = var.endpoint
}

resource "eks_nodegroup" "a10g" {
  cluster_name   = var.cluster_name
  nodegroup_name = var.nodegroup_name
  node_role      = var.node_role
  subnets        = var.subnets
  instance_types = [var.instance_type]
  ami_type       = "AL2023_x86_64_NVIDIA"
  capacity_type  = var.spot ? "SPOT" : "ON_DEMAND"
  min_size       = 0
  max_size       = var.max_size
  desired_size   = var.desired_size
  labels         = var.labels
  taints = [
    {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    },
  ]

  # desired_size is where the pool starts; afterwards the cluster autoscaler owns it, and an
  # apply (say, of a new label) must not scale GPU nodes back. Scaling outside gpustack still
  # shows in gpustack drift.
  lifecycle {
    ignore_changes = [desired_size]
  }
}

# The GPUs of the instance type, as EC2 describes them.
data "aws_instance_types" "pool" {
  instance_types = [var.instance_type]
}
