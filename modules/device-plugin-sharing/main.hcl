# What time-slicing and MPS share: the device-plugin sharing config in a ConfigMap, the
# ClusterPolicy pointed at it (GPU-FACTS reference flow, step 3), a restart of the plugin when
# the content changes in place, and optional per-node selection. The time-slicing and mps
# modules call this one with their strategy and their own input checks.

locals {
  sharing_config = {
    version = "v1"
    flags = {
      migStrategy = var.mig_strategy
    }
    sharing = {
      (var.strategy) = {
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

  # With a pool named, nodes without the label must not share their GPUs, so the default the
  # ClusterPolicy falls back to is a config without a sharing section.
  per_pool    = length(var.node_names) > 0
  default_key = local.per_pool ? var.unshared_config_key : var.config_key

  config_data = merge(
    {
      (var.config_key) = yamlencode(local.sharing_config)
    },
    local.per_pool ? {
      (var.unshared_config_key) = yamlencode({
        version = "v1"
        flags = {
          migStrategy = var.mig_strategy
        }
      })
    } : {},
  )

  config_hash = sha256(jsonencode(local.config_data))
}

resource "kubernetes_manifest" "config" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = var.config_name
      namespace = var.operator.namespace
    }
    data = local.config_data
  }
}

# The chart owns the ClusterPolicy; taking over just these fields needs force_conflicts, and
# a manager of our own so that the other modules' fields are not dropped by this apply.
resource "kubernetes_patch" "cluster_policy" {
  api_version     = "nvidia.com/v1"
  kind            = "ClusterPolicy"
  name            = var.operator.cluster_policy_name
  field_manager   = "gpustack-${var.manager}"
  force_conflicts = true

  patch = {
    spec = {
      devicePlugin = {
        config = {
          name    = kubernetes_manifest.config.manifest.metadata.name
          default = local.default_key
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

  # A named pool is labelled first, so that its nodes never fall back to the unshared default.
  depends_on = [kubernetes_labels.pool]
}

# The operator does not watch the ConfigMap: a change of its content in place takes effect
# only when the device plugin restarts (gpu-operator#1144). For every GPU node (no pool
# named), a new pod-template annotation restarts the DaemonSet's pods by its rolling update.
# No rollout wait: it would also wait for nodes that are being drained or are not ready.
resource "kubernetes_patch" "restart_device_plugin" {
  count = local.per_pool ? 0 : 1

  api_version     = "apps/v1"
  kind            = "DaemonSet"
  name            = var.operator.device_plugin_daemonset
  namespace       = var.operator.namespace
  field_manager   = "gpustack-${var.manager}-restart"
  force_conflicts = true

  patch = {
    spec = {
      template = {
        metadata = {
          annotations = {
            "gpustack.dev/sharing-config-hash" = local.config_hash
          }
        }
      }
    }
  }

  depends_on = [kubernetes_manifest.config, kubernetes_patch.cluster_policy]
}

moved {
  from = kubernetes_patch.restart_device_plugin
  to   = kubernetes_patch.restart_device_plugin[0]
}

# For a named pool, the nodes are taken in turn within the budget: cordoned, their GPU pods
# waited for (or evicted), the node's device-plugin pod restarted, its replacement waited
# for, what each GPU advertises checked, uncordoned.
resource "kubernetes_node_rollout" "restart_device_plugin" {
  count = local.per_pool ? 1 : 0

  name  = "${var.manager}-config"
  nodes = var.node_names
  restart = {
    namespace      = var.operator.namespace
    label_selector = "app=${var.operator.device_plugin_daemonset}"
  }
  triggers = {
    config = local.config_hash
  }
  settle = "restart"
  # Whole GPUs only: on MIG devices what each GPU advertises also depends on the geometry.
  expect_per_gpu = var.mig_strategy == "none" ? {
    (var.rename_by_default ? "${var.resource_name}.shared" : var.resource_name) = var.replicas
  } : null

  max_unavailable = var.rollout.max_unavailable
  drain           = var.rollout.drain
  drain_timeout   = var.rollout.drain_timeout
  settle_timeout  = var.rollout.settle_timeout

  depends_on = [kubernetes_manifest.config, kubernetes_patch.cluster_policy, kubernetes_labels.pool]
}

# Per-pool selection: the device plugin reads the config key from this node label.
resource "kubernetes_labels" "pool" {
  for_each = toset(var.node_names)

  api_version   = "v1"
  kind          = "Node"
  name          = each.value
  field_manager = "gpustack-${var.manager}"

  labels = {
    "nvidia.com/device-plugin.config" = var.config_key
  }

  depends_on = [kubernetes_manifest.config]
}
