# NVIDIA's GPUs through Dynamic Resource Allocation: the DRA Driver for NVIDIA GPUs on the
# nodes that pool_selector picks (which must not run the device plugin), installed by its own
# chart (via = "helm") or by GPU Operator 26.7's GPUCluster (via = "gpu-cluster", the operator
# chart with clusterPolicy.deployCR = false: a cluster has a GPUCluster or a ClusterPolicy,
# never both). Either way the driver creates the DeviceClasses gpu.nvidia.com (with
# extendedResourceName nvidia.com/gpu, so that pods that still ask for nvidia.com/gpu get a
# DRA device), mig.nvidia.com and vfio.gpu.nvidia.com. The plan checks the feature gates, the
# device plugin beside the driver, and every claim selector of the stack against the devices.

locals {
  chart_is_local_or_oci = anytrue([
    startswith(var.chart, "oci://"),
    startswith(var.chart, "."),
    startswith(var.chart, "/"),
    endswith(var.chart, ".tgz"),
  ])

  driver_values = {
    # The driver must not share a node with the device plugin; pool_selector says where it
    # runs, and those nodes carry nvidia.com/gpu.deploy.device-plugin=false.
    gpuResourcesEnabledOverride = true
    featureGates                = var.feature_gates
    resources = {
      computeDomains = {
        enabled = var.compute_domains
      }
    }
    kubeletPlugin = {
      nodeSelector = var.pool_selector
    }
  }

  operator_values = {
    clusterPolicy = {
      deployCR = false
    }
    gpuCluster = {
      deployCR = true
    }
    draDriver = {
      featureGates = var.feature_gates
      computeDomains = {
        enabled = var.compute_domains
      }
    }
    driver = {
      enabled = var.driver_enabled
    }
  }
}

resource "helm_release" "driver" {
  count            = var.via == "helm" ? 1 : 0
  name             = var.release_name
  namespace        = var.namespace
  create_namespace = true
  chart            = var.chart
  repository       = local.chart_is_local_or_oci ? null : var.repository
  version          = var.chart_version
  values           = merge(local.driver_values, var.extra_values)
}

resource "helm_release" "gpu_cluster" {
  count            = var.via == "gpu-cluster" ? 1 : 0
  name             = var.release_name
  namespace        = var.namespace
  create_namespace = true
  chart            = var.chart
  repository       = local.chart_is_local_or_oci ? null : var.repository
  version          = var.chart_version
  values           = merge(local.operator_values, var.extra_values)
}

resource "kubernetes_manifest" "claim_template" {
  for_each = var.claim_templates
  manifest = {
    apiVersion = "resource.k8s.io/v1"
    kind       = "ResourceClaimTemplate"
    metadata = {
      name      = each.key
      namespace = each.value.namespace
    }
    spec = {
      spec = {
        devices = {
          requests = [{
            name = "gpu"
            exactly = {
              deviceClassName = each.value.device_class
              count           = each.value.count
              # Absent rather than empty, as the API server stores it.
              selectors = length(each.value.selectors) > 0 ? [for expression in each.value.selectors : { cel = { expression = expression } }] : null
            }
          }]
          constraints = length(each.value.match_attributes) > 0 ? [for attribute in each.value.match_attributes : { matchAttribute = attribute }] : null
        }
      }
    }
  }
}
