# Karpenter for GPU nodes: a NodePool of GPU instance families, spot and on-demand, tainted
# so that only pods that tolerate nvidia.com/gpu land there, empty nodes consolidated after
# `consolidate_after`, and an EC2NodeClass with the EKS-optimized AL2023 AMI. Needs Karpenter
# v1 installed in the cluster (its CRDs).

resource "kubernetes_manifest" "node_class" {
  manifest = {
    apiVersion = "karpenter.k8s.aws/v1"
    kind       = "EC2NodeClass"
    metadata   = { name = var.name }
    spec = {
      role                       = var.node_role
      amiSelectorTerms           = [{ alias = var.ami_alias }]
      subnetSelectorTerms        = [{ tags = { "karpenter.sh/discovery" = var.cluster_name } }]
      securityGroupSelectorTerms = [{ tags = { "karpenter.sh/discovery" = var.cluster_name } }]
      # GPU AMIs and container images are large.
      blockDeviceMappings = [{
        deviceName = "/dev/xvda"
        ebs        = { volumeSize = "100Gi", volumeType = "gp3", encrypted = true }
      }]
    }
  }
}

resource "kubernetes_manifest" "node_pool" {
  manifest = {
    apiVersion = "karpenter.sh/v1"
    kind       = "NodePool"
    metadata   = { name = var.name }
    spec = {
      template = {
        metadata = { labels = { "nvidia.com/gpu.present" = "true" } }
        spec = {
          nodeClassRef = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = var.name }
          requirements = [
            { key = "karpenter.k8s.aws/instance-family", operator = "In", values = var.instance_families },
            { key = "karpenter.sh/capacity-type", operator = "In", values = var.capacity_types },
            { key = "karpenter.k8s.aws/instance-gpu-count", operator = "Gt", values = ["0"] },
          ]
          taints      = [{ key = "nvidia.com/gpu", effect = "NoSchedule" }]
          expireAfter = var.expire_after
        }
      }
      limits = { "nvidia.com/gpu" = tostring(var.gpu_limit) }
      disruption = {
        consolidationPolicy = "WhenEmpty"
        consolidateAfter    = var.consolidate_after
      }
    }
  }
  depends_on = [kubernetes_manifest.node_class]
}
