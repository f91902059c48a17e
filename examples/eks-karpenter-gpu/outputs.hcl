output "gpu_pod_placement" {
  value = {
    node_selector = module.karpenter.node_selector
    tolerations   = module.karpenter.tolerations
  }
  description = "What a GPU workload sets to run on these nodes (plus a nvidia.com/gpu limit)."
}
