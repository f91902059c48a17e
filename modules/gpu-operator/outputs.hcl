output "namespace" {
  value = helm_release.operator.namespace
}

output "release_name" {
  value = helm_release.operator.name
}

output "cluster_policy_name" {
  value       = "cluster-policy"
  description = "The operator's single ClusterPolicy, named by the chart."
}

output "device_plugin_daemonset" {
  value = "nvidia-device-plugin-daemonset"
}

output "revision" {
  value = helm_release.operator.revision
}

output "mig_strategy" {
  value       = var.mig_strategy
  description = "The chart's mig.strategy; the mig module checks that it asks for the same."
}

output "dcgm_exporter_enabled" {
  value = var.dcgm_exporter_enabled
}

output "service_monitor_enabled" {
  value       = var.service_monitor_enabled
  description = "Whether the chart makes its own ServiceMonitor for dcgm-exporter."
}
