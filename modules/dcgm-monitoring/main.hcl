# Prometheus scraping of the dcgm-exporter the GPU Operator deploys (GPU-FACTS reference
# flow, step 7), either as a ServiceMonitor for the Prometheus Operator or as an additional
# scrape config for a Prometheus configured by hand. Either way the node name becomes the
# kubernetes_node label, since under time-slicing the exporter cannot say which pod used a GPU.

locals {
  exporter_namespace = var.operator.namespace
  namespace          = coalesce(var.namespace, local.exporter_namespace)
  service_monitor    = var.mode == "service-monitor"

  scrape_config = {
    job_name        = "gpu-metrics"
    scrape_interval = var.interval
    metrics_path    = "/metrics"
    scheme          = "http"
    kubernetes_sd_configs = [
      {
        role = "endpoints"
        namespaces = {
          names = [local.exporter_namespace]
        }
      },
    ]
    relabel_configs = [
      # Endpoints discovery sees every Service of the namespace; keep the exporter's port only.
      {
        source_labels = ["__meta_kubernetes_service_label_app", "__meta_kubernetes_endpoint_port_name"]
        regex         = "nvidia-dcgm-exporter;gpu-metrics"
        action        = "keep"
      },
      {
        source_labels = ["__meta_kubernetes_pod_node_name"]
        target_label  = "kubernetes_node"
        action        = "replace"
      },
    ]
  }
}

resource "kubernetes_manifest" "service_monitor" {
  count = local.service_monitor ? 1 : 0

  manifest = {
    apiVersion = "monitoring.coreos.com/v1"
    kind       = "ServiceMonitor"
    metadata = {
      name      = var.name
      namespace = local.namespace
      labels    = var.additional_labels
    }
    spec = {
      namespaceSelector = {
        matchNames = [local.exporter_namespace]
      }
      selector = {
        matchLabels = {
          app = "nvidia-dcgm-exporter"
        }
      }
      endpoints = [
        {
          port     = "gpu-metrics"
          path     = "/metrics"
          interval = var.interval
          relabelings = [
            {
              sourceLabels = ["__meta_kubernetes_pod_node_name"]
              targetLabel  = "kubernetes_node"
              action       = "replace"
            },
          ]
        },
      ]
    }
  }
}

# A Secret because the Prometheus Operator's additionalScrapeConfigs reads one; a Prometheus
# configured by hand mounts it the same way. data rather than stringData, which the API server
# folds into data and would show as drift on every plan.
resource "kubernetes_manifest" "scrape_config" {
  count = local.service_monitor ? 0 : 1

  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    type       = "Opaque"
    metadata = {
      name      = var.name
      namespace = local.namespace
      labels    = var.additional_labels
    }
    data = {
      (var.scrape_config_key) = base64encode(yamlencode([local.scrape_config]))
    }
  }
}
