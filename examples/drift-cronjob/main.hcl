# A drift-detection cron in the cluster: every `schedule`, a Job runs
# `gpustack drift` on the watched stack with a read-only service account, writes Prometheus
# metrics and posts to a webhook when drift appears or goes away. The Job fails (exit 2) while
# there is drift, so failed-Job alerts fire too.
#
# The cron runs in a namespace of its own, which this stack creates and which holds nothing
# but the cron: the watched stack's state (its Secret and lock Lease) lives in its own state
# namespace, which this stack never creates or deletes, so destroying the cron leaves it.

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
  # A run killed mid-way leaves its Lease held: the next run takes it over once it has
  # watched it unrenewed for the watched stack's lock_ttl (2m), so it waits longer than that.
  args = concat(
    ["drift", "/stack", "--json", "--metrics-file", "/metrics/gpustack-drift.prom", "--lock-timeout", "3m"],
    var.webhook_url == "" ? [] : ["--webhook", "$(WEBHOOK_URL)"],
  )
  metrics_volume = var.textfile_dir == "" ? { emptyDir = {} } : {
    hostPath = { path = var.textfile_dir, type = "DirectoryOrCreate" }
  }
}

# The service account and its least-privilege roles: read the watched kinds where they are and
# the state by name, take the lock, keep the webhook's record.
module "access" {
  source          = "../../modules/drift-access"
  namespace       = var.namespace
  name            = local.name
  state_namespace = var.state_namespace
  state_suffixes  = [var.state_suffix]
  # Whether there is a webhook is no secret; its URL is.
  webhook_records           = nonsensitive(var.webhook_url != "")
  watched_namespaces        = var.watched_namespaces
  watched_cluster_resources = var.watched_cluster_resources
  labels                    = local.labels
}

resource "kubernetes_manifest" "stack" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "${local.name}-stack", namespace = module.access.namespace, labels = local.labels }
    data       = local.stack_files
  }
}

resource "kubernetes_manifest" "webhook" {
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    metadata   = { name = "${local.name}-webhook", namespace = module.access.namespace, labels = local.labels }
    type       = "Opaque"
    stringData = { url = var.webhook_url }
  }
}

resource "kubernetes_manifest" "cronjob" {
  manifest = {
    apiVersion = "batch/v1"
    kind       = "CronJob"
    metadata   = { name = local.name, namespace = module.access.namespace, labels = local.labels }
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
              serviceAccountName = module.access.service_account
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
  depends_on = [kubernetes_manifest.stack, kubernetes_manifest.webhook]
}

output "cronjob" {
  value = "${var.namespace}/${local.name}"
}

output "run_now" {
  value = "kubectl -n ${var.namespace} create job --from=cronjob/${local.name} ${local.name}-manual"
}
