resource "aws_eks_node_group" "g5" {
  cluster_name    = "ml"
  node_group_name = "g5"
  node_role_arn   = "arn:aws:iam::123456789012:role/eks-node"
  subnet_ids      = ["subnet-0a1b2c3d"]
  instance_types  = ["g5.xlarge"]
  ami_type        = "AL2023_x86_64_NVIDIA"

  scaling_config {
    desired_size = 2
    min_size     = 1
    max_size     = 4
  }

  labels = {
    "nvidia.com/device-plugin.config" = "shared"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

resource "kubernetes_config_map_v1" "time_slicing" {
  metadata {
    name      = "time-slicing-config"
    namespace = "gpu-operator"
  }

  data = {
    shared = yamlencode({
      version = "v1"
      sharing = {
        timeSlicing = {
          resources = [{ name = "nvidia.com/gpu", replicas = 4 }]
        }
      }
    })
  }
}

resource "helm_release" "gpu_operator" {
  name             = "gpu-operator"
  namespace        = "gpu-operator"
  create_namespace = true
  repository       = "https://helm.ngc.nvidia.com/nvidia"
  chart            = "gpu-operator"
  version          = "v25.10.0"

  values = [yamlencode({
    devicePlugin = {
      config = { name = "time-slicing-config" }
    }
  })]
}
