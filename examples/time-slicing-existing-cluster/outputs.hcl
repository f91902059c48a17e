output "advertised_gpus_per_node" {
  value       = { (module.time_slicing.resource_name) = var.gpus_per_node * module.time_slicing.replicas }
  description = "What each node of the pool advertises after time-slicing."
}

output "config_hash" {
  value = module.time_slicing.config_hash
}

output "smoke_test_passed" {
  value = gpu_smoke_test.vector_add.passed
}
