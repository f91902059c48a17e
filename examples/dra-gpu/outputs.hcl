output "smoke_test_passed" {
  value = gpu_smoke_test.claims.passed
}

output "allocated_devices" {
  value       = gpu_smoke_test.claims.result.devices
  description = "The devices the scheduler allocated to each smoke-test pod (pool/device)."
}
