output "service_account" {
  value       = var.name
  description = "The service account drift Jobs run as; it exists, with its roles bound, once this module is applied."
  depends_on  = [kubernetes_manifest.state_binding, kubernetes_manifest.read_binding, kubernetes_manifest.cluster_read_binding, kubernetes_manifest.record]
}

output "namespace" {
  value      = var.namespace
  depends_on = [kubernetes_manifest.namespace]
}
