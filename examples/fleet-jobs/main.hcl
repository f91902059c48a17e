# Drift detection for a fleet that outgrew one runner: one CronJob per stack, each running
# `gpustack drift` on its own stack in its own pod, in parallel, with one read-only service
# account. `gpustack drift --stacks 'fleet/*'` does the same from one machine; this spreads
# the work over the cluster and gives each stack its own Job history and failure alerts.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

locals {
  name = "gpustack-fleet-drift"
  labels = {
    "app.kubernetes.io/name"       = "gpustack-fleet-drift"
    "app.kubernetes.io/managed-by" = "gpustack"
  }
  stacks = var.stacks != null ? var.stacks : {
    east = { state_suffix = "east", files = { "main.hcl" = file("${path.module}/fleet/east/main.hcl") } }
    west = { state_suffix = "west", files = { "main.hcl" = file("${path.module}/fleet/west/main.hcl") } }
  }
  locks = [for s in values(local.stacks) : "gpustack-lock-${s.state_suffix}"]
}

resource "kubernetes_manifest" "namespace" {
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = { name = var.namespace, labels = local.labels }
  }
}

resource "kubernetes_manifest" "service_account" {
  manifest = {
    apiVersion = "v1"
    kind       = "ServiceAccount"
    metadata   = { name = local.name, namespace = var.namespace, labels = local.labels }
  }
  depends_on = [kubernetes_manifest.namespace]
}

# Every stack's state: read its Secrets and take and release its lock Lease.
resource "kubernetes_manifest" "state_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "Role"
    metadata   = { name = "${local.name}-state", namespace = var.namespace, labels = local.labels }
    rules = [
      { apiGroups = [""], resources = ["secrets"], verbs = ["get"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["create"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["get", "update", "delete"], resourceNames = local.locks },
    ]
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "state_binding" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "RoleBinding"
    metadata   = { name = "${local.name}-state", namespace = var.namespace, labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = "${local.name}-state" }
    subjects   = [{ kind = "ServiceAccount", name = local.name, namespace = var.namespace }]
  }
  depends_on = [kubernetes_manifest.state_role, kubernetes_manifest.service_account]
}

resource "kubernetes_manifest" "read_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "ClusterRole"
    metadata   = { name = "${local.name}-read-${var.namespace}", labels = local.labels }
    rules = [for r in var.watched_resources : {
      apiGroups = r.api_groups
      resources = r.resources
      verbs     = ["get", "list", "watch"]
    }]
  }
}

resource "kubernetes_manifest" "read_binding" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "ClusterRoleBinding"
    metadata   = { name = "${local.name}-read-${var.namespace}", labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "${local.name}-read-${var.namespace}" }
    subjects   = [{ kind = "ServiceAccount", name = local.name, namespace = var.namespace }]
  }
  depends_on = [kubernetes_manifest.read_role, kubernetes_manifest.service_account]
}

resource "kubernetes_manifest" "stack" {
  for_each = local.stacks
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "${local.name}-${each.key}", namespace = var.namespace, labels = merge(local.labels, { "gpustack.dev/stack" = each.key }) }
    data       = each.value.files
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "cronjob" {
  for_each = local.stacks
  manifest = {
    apiVersion = "batch/v1"
    kind       = "CronJob"
    metadata   = { name = "${local.name}-${each.key}", namespace = var.namespace, labels = merge(local.labels, { "gpustack.dev/stack" = each.key }) }
    spec = {
      schedule                   = var.schedule
      concurrencyPolicy          = "Forbid"
      successfulJobsHistoryLimit = 1
      failedJobsHistoryLimit     = 3
      jobTemplate = {
        spec = {
          backoffLimit            = 0
          ttlSecondsAfterFinished = 86400
          template = {
            metadata = { labels = merge(local.labels, { "gpustack.dev/stack" = each.key }) }
            spec = {
              serviceAccountName = local.name
              restartPolicy      = "Never"
              securityContext = {
                runAsNonRoot   = true
                seccompProfile = { type = "RuntimeDefault" }
              }
              containers = [{
                name  = "drift"
                image = var.image
                # The directory is named after the stack, so metrics and reports carry its name.
                args = ["drift", "/stacks/${each.key}", "--json"]
                env  = [{ name = "HOME", value = "/tmp" }]
                securityContext = {
                  allowPrivilegeEscalation = false
                  readOnlyRootFilesystem   = true
                  capabilities             = { drop = ["ALL"] }
                }
                resources = {
                  requests = { cpu = "50m", memory = "64Mi" }
                  limits   = { memory = "256Mi" }
                }
                volumeMounts = [
                  { name = "stack", mountPath = "/stacks/${each.key}", readOnly = true },
                  { name = "tmp", mountPath = "/tmp" },
                ]
              }]
              volumes = [
                { name = "stack", configMap = { name = "${local.name}-${each.key}" } },
                { name = "tmp", emptyDir = {} },
              ]
            }
          }
        }
      }
    }
  }
  depends_on = [
    kubernetes_manifest.stack,
    kubernetes_manifest.state_binding,
    kubernetes_manifest.read_binding,
  ]
}

output "cronjobs" {
  value = [for name, _ in local.stacks : "${var.namespace}/${local.name}-${name}"]
}
