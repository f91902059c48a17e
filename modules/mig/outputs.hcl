# Read from the rollout, so that what uses them waits until every node is done.
output "geometry" {
  value       = kubernetes_node_rollout.geometry.labels["nvidia.com/mig.config"]
  description = "The nvidia.com/mig.config label value of the nodes."
}

output "node_names" {
  value = kubernetes_node_rollout.geometry.nodes
}

output "strategy" {
  value = var.strategy
}

output "resources_per_gpu" {
  value       = local.resources_per_gpu
  description = "Resource name → devices each GPU advertises (null for a custom geometry)."
}

output "resource_name" {
  value       = local.resources_per_gpu == null ? null : length(local.resources_per_gpu) == 1 ? one(keys(local.resources_per_gpu)) : null
  description = "The one resource the nodes advertise (nvidia.com/mig-1g.10gb when mixed, nvidia.com/gpu when single); null when the geometry makes several or none."
}

output "devices_per_gpu" {
  value       = local.resources_per_gpu == null ? null : sum(concat([0], values(local.resources_per_gpu)))
  description = "MIG devices (or whole GPUs, with MIG disabled) each GPU advertises."
}
