# A drift-detection cron in the cluster: every `schedule`, a Job runs
# `gpustack drift` on the watched stack with a read-only service account, writes Prometheus
# metrics and posts to a webhook when drift appears or goes away. The Job fails (exit 2) while
# there is drift, so failed-Job alerts fire too.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = var.kubeconfig == "" ? null : var.kubeconfig
}

locals {
  name = "gpustack-drift"
  labels = {
    "app.kubernetes.io/name"       = "gpustack-drift"
    "app.kubernetes.io/managed-by" = "gpustack"
  }
  stack_files = var.stack_files != null ? var.stack_files : {
    "main.hcl" = file("${path.module}/watched/main.hcl")
  }
  lock        = "gpustack-lock-${var.state_suffix}"
  webhook_key = "gpustack-note-${var.state_suffix}-drift-webhook-json"
  args = concat(
    ["drift", "/stack", "--json", "--metrics-file", "/metrics/gpustack-drift.prom"],
    var.webhook_url == "" ? [] : ["--webhook", "$(WEBHOOK_URL)"],
  )
  metrics_volume = var.textfile_dir == "" ? { emptyDir = {} } : {
    hostPath = { path = var.textfile_dir, type = "DirectoryOrCreate" }
  }
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
    apiVersion                   = "v1"
    kind                         = "ServiceAccount"
    metadata                     = { name = local.name, namespace = var.namespace, labels = local.labels }
    automountServiceAccountToken = true
  }
  depends_on = [kubernetes_manifest.namespace]
}

# The state: read the Secrets (chunk names are not known in advance, so every Secret of this
# namespace), take and release the lock Lease, and keep the webhook's record. Nothing else
# in this namespace can be changed.
resource "kubernetes_manifest" "state_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "Role"
    metadata   = { name = "${local.name}-state", namespace = var.namespace, labels = local.labels }
    rules = [
      { apiGroups = [""], resources = ["secrets"], verbs = ["get"] },
      { apiGroups = [""], resources = ["secrets"], verbs = ["patch"], resourceNames = [local.webhook_key] },
      # Server-side apply creates the record the first time; create cannot name its object.
      { apiGroups = [""], resources = ["secrets"], verbs = ["create"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["create"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["get", "update", "delete"], resourceNames = [local.lock] },
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

# Refresh only reads: get, list and watch on the kinds the watched stack manages.
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
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "${local.name}-stack", namespace = var.namespace, labels = local.labels }
    data       = local.stack_files
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "webhook" {
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    metadata   = { name = "${local.name}-webhook", namespace = var.namespace, labels = local.labels }
    type       = "Opaque"
    stringData = { url = var.webhook_url }
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "cronjob" {
  manifest = {
    apiVersion = "batch/v1"
    kind       = "CronJob"
    metadata   = { name = local.name, namespace = var.namespace, labels = local.labels }
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
            metadata = { labels = local.labels }
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
                args  = local.args
                env = [
                  { name = "HOME", value = "/tmp" },
                  { name = "WEBHOOK_URL", valueFrom = { secretKeyRef = { name = "${local.name}-webhook", key = "url" } } },
                ]
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
                  { name = "stack", mountPath = "/stack", readOnly = true },
                  { name = "metrics", mountPath = "/metrics" },
                  { name = "tmp", mountPath = "/tmp" },
                ]
              }]
              volumes = [
                { name = "stack", configMap = { name = "${local.name}-stack" } },
                merge({ name = "metrics" }, local.metrics_volume),
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
    kubernetes_manifest.webhook,
    kubernetes_manifest.state_binding,
    kubernetes_manifest.read_binding,
  ]
}

output "cronjob" {
  value = "${var.namespace}/${local.name}"
}

output "run_now" {
  value = "kubectl -n ${var.namespace} create job --from=cronjob/${local.name} ${local.name}-manual"
}
