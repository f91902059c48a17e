output "device_classes" {
  value = {
    gpu  = "gpu.nvidia.com"
    mig  = "mig.nvidia.com"
    vfio = "vfio.gpu.nvidia.com"
  }
  description = "The DeviceClasses the driver creates; gpu.nvidia.com also answers pods that ask for nvidia.com/gpu."
}

output "extended_resource_name" {
  value       = "nvidia.com/gpu"
  description = "What gpu.nvidia.com's extendedResourceName maps to a DRA device."
}

output "namespace" {
  value = var.namespace
}

output "pool_selector" {
  value = var.pool_selector
}

output "claim_templates" {
  value       = { for name, t in kubernetes_manifest.claim_template : name => t.manifest.metadata.name }
  description = "The ResourceClaimTemplates' names, for a pod's resourceClaims (or gpu_smoke_test's resource_claim_template)."
}
