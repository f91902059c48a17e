# The NVIDIA GPU Operator, installed with Helm. The operator owns the ClusterPolicy
# "cluster-policy"; sharing modules patch its device-plugin fields.

locals {
  # A local path (relative or absolute, a directory or a .tgz) or an OCI reference is used as
  # is; helm would look a name up in the repository instead.
  chart_is_local_or_oci = anytrue([
    startswith(var.chart, "oci://"),
    startswith(var.chart, "."),
    startswith(var.chart, "/"),
    endswith(var.chart, ".tgz"),
  ])

  values = {
    driver = {
      enabled = var.driver_enabled
    }
    toolkit = {
      enabled = var.toolkit_enabled
    }
    operator = {
      runtimeClass = var.runtime_class
    }
    mig = {
      strategy = var.mig_strategy
    }
    dcgmExporter = {
      enabled = var.dcgm_exporter_enabled
      serviceMonitor = {
        enabled = var.service_monitor_enabled
      }
    }
  }
}

# The namespace is a resource of the stack rather than helm's --create-namespace, so that
# destroy removes it with everything the operator made in it.
resource "kubernetes_manifest" "namespace" {
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name = var.namespace
    }
  }
}

resource "helm_release" "operator" {
  name       = "gpu-operator"
  chart      = var.chart
  repository = local.chart_is_local_or_oci ? null : var.repository
  version    = var.chart_version
  namespace  = kubernetes_manifest.namespace.manifest.metadata.name
  values     = merge(local.values, var.extra_values)
  atomic     = true
  wait       = true
  timeout    = "10m"
}
