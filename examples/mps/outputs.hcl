output "advertised_gpus_per_node" {
  value       = { (module.mps.resource_name) = var.gpus_per_node * module.mps.replicas }
  description = "What each node of the pool advertises once MPS shares its GPUs."
}

output "config_hash" {
  value = module.mps.config_hash
}

output "smoke_test_passed" {
  value = gpu_smoke_test.vector_add.passed
}
