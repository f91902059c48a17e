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
