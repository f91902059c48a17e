output "config_name" {
  value = module.sharing.config_name
}

output "config_key" {
  value       = module.sharing.config_key
  description = "The key of the sharing config in the ConfigMap, and the nvidia.com/device-plugin.config label of the nodes in node_names."
}

output "config_hash" {
  value       = module.sharing.config_hash
  description = "SHA-256 of the ConfigMap's data; changes whenever the plugin must reload it (use it in smoke-test triggers)."
}

output "replicas" {
  value       = module.sharing.replicas
  description = "The per-GPU sharing factor."
}

output "resource_name" {
  value = module.sharing.resource_name
}

output "sharing_strategy" {
  value = module.sharing.sharing_strategy
}

output "node_names" {
  value       = module.sharing.node_names
  description = "The nodes labelled for this config; empty when every GPU node uses it."
}
