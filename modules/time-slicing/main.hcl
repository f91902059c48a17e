# Time-slicing: the device-plugin sharing config in a ConfigMap, and the ClusterPolicy
# pointed at it (GPU-FACTS reference flow, step 3).

locals {
  sharing_config = {
    version = "v1"
    flags = {
      migStrategy = var.mig_strategy
    }
    sharing = {
      timeSlicing = {
        renameByDefault            = var.rename_by_default
        failRequestsGreaterThanOne = var.fail_requests_greater_than_one
        resources = [
          {
            name     = var.resource_name
            replicas = var.replicas
          },
        ]
      }
    }
  }
}

resource "kubernetes_manifest" "config" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = var.config_name
      namespace = var.operator.namespace
    }
    data = {
      (var.config_key) = yamlencode(local.sharing_config)
    }
  }
}

resource "kubernetes_patch" "cluster_policy" {
  api_version = "nvidia.com/v1"
  kind        = "ClusterPolicy"
  name        = var.operator.cluster_policy_name

  patch = {
    spec = {
      devicePlugin = {
        config = {
          name    = kubernetes_manifest.config.manifest.metadata.name
          default = var.config_key
        }
      }
    }
  }

  wait {
    fields = {
      "{.status.state}" = "ready"
    }
    timeout = "5m"
  }
}
