output "dra_nodes" {
  value       = length(var.dra_pools) > 0 ? kubernetes_node_rollout.to_dra[0].nodes : []
  description = "The nodes served by NVIDIA's DRA driver instead of the device plugin."
}

output "progress" {
  value       = length(var.dra_pools) > 0 ? kubernetes_node_rollout.to_dra[0].progress : {}
  description = "Each moving node's step (done once the driver publishes its GPUs)."
}

output "device_classes" {
  value = module.dra.device_classes
}
