# GPU metrics in Prometheus: the GPU Operator with dcgm-exporter on every GPU node (port 9400,
# /metrics), and a ServiceMonitor that the Prometheus Operator picks up, relabelling each
# series with the node it came from (kubernetes_node). Needs the Prometheus Operator's CRDs;
# the exporter runs privileged with hostIPC, so not on GKE Autopilot, which exports GPU
# metrics itself. Runs on the local test cluster with --var kubeconfig=PATH
# --var chart=PATH/gpu-operator.tgz.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

provider "helm" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

module "gpu_operator" {
  source                = "../../modules/gpu-operator"
  chart                 = var.chart
  driver_enabled        = false
  toolkit_enabled       = false
  runtime_class         = "nvidia-container-runtime"
  dcgm_exporter_enabled = true
  # The ServiceMonitor comes from the module below, with the node relabelling.
  service_monitor_enabled = false
}

module "dcgm_monitoring" {
  source            = "../../modules/dcgm-monitoring"
  operator          = module.gpu_operator
  mode              = "service-monitor"
  namespace         = var.prometheus_namespace
  interval          = var.interval
  additional_labels = var.service_monitor_labels
}
