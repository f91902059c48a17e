output "config_name" {
  value = kubernetes_manifest.config.manifest.metadata.name
}

output "replicas" {
  value       = var.replicas
  description = "The per-GPU sharing factor."
}

output "resource_name" {
  value = var.rename_by_default ? "${var.resource_name}.shared" : var.resource_name
}

output "sharing_strategy" {
  value = "time-slicing"
}
