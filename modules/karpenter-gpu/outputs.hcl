output "node_selector" {
  value       = { "karpenter.sh/nodepool" = var.name }
  description = "Selects the nodes of this NodePool, e.g. for a smoke test."
}

output "tolerations" {
  value       = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  description = "What a pod needs to run on these nodes."
}
