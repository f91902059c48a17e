output "advertised_per_node" {
  value       = local.advertised_per_node
  description = "The MIG devices each partitioned node advertises."
}

output "partitioned_nodes" {
  value = module.mig.node_names
}

output "smoke_test_passed" {
  value = gpu_smoke_test.vector_add.passed
}
