output "config_name" {
  value = kubernetes_manifest.config.manifest.metadata.name
}

output "config_key" {
  value       = var.config_key
  description = "The key of the sharing config in the ConfigMap, and the nvidia.com/device-plugin.config label of the nodes in node_names."
}

output "config_hash" {
  value       = local.config_hash
  description = "SHA-256 of the ConfigMap's data; changes whenever the plugin must reload it (use it in smoke-test triggers)."
}

output "replicas" {
  value       = var.replicas
  description = "The per-GPU sharing factor."
}

output "resource_name" {
  value = var.rename_by_default ? "${var.resource_name}.shared" : var.resource_name
}

output "sharing_strategy" {
  value = var.strategy == "mps" ? "mps" : "time-slicing"
}

output "node_names" {
  value       = var.node_names
  description = "The nodes labelled for this config; empty when every GPU node uses it."
}
