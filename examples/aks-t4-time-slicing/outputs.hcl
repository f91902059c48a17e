output "nodepool" {
  value = aks_nodepool.t4.name
}

output "advertised_gpus_per_node" {
  value       = local.gpus_per_node * module.time_slicing.replicas
  description = "nvidia.com/gpu each node of the pool advertises after time-slicing."
}

output "smoke_test_passed" {
  value = gpu_smoke_test.vector_add.passed
}
