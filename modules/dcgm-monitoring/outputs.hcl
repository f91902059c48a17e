output "mode" {
  value = var.mode
}

output "service_monitor" {
  value       = local.service_monitor ? { name = kubernetes_manifest.service_monitor[0].manifest.metadata.name, namespace = local.namespace } : null
  description = "The ServiceMonitor made in service-monitor mode, else null."
}

output "scrape_config_secret" {
  value       = local.service_monitor ? null : { name = kubernetes_manifest.scrape_config[0].manifest.metadata.name, namespace = local.namespace, key = var.scrape_config_key }
  description = "In scrape-config mode, the Secret and key to name in the Prometheus resource's additionalScrapeConfigs; else null."
}

output "scrape_config" {
  value       = yamlencode([local.scrape_config])
  description = "The scrape config as YAML, for a Prometheus whose configuration is kept elsewhere."
}

output "job_name" {
  value = local.scrape_config.job_name
}
