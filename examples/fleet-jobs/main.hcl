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
}

# One service account for the whole fleet, with least-privilege roles: read the watched kinds
# where they are and every stack's state by name, take their locks. The Jobs run in a
# namespace of their own; the fleet's state namespace is never created or deleted here.
module "access" {
  source                    = "../../modules/drift-access"
  namespace                 = var.namespace
  name                      = local.name
  state_namespace           = var.state_namespace
  state_suffixes            = [for s in values(local.stacks) : s.state_suffix]
  watched_namespaces        = var.watched_namespaces
  watched_cluster_resources = var.watched_cluster_resources
  labels                    = local.labels
}

resource "kubernetes_manifest" "stack" {
  for_each = local.stacks
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "${local.name}-${each.key}", namespace = module.access.namespace, labels = merge(local.labels, { "gpustack.dev/stack" = each.key }) }
    data       = each.value.files
  }
}

resource "kubernetes_manifest" "cronjob" {
  for_each = local.stacks
  manifest = {
    apiVersion = "batch/v1"
    kind       = "CronJob"
    metadata   = { name = "${local.name}-${each.key}", namespace = module.access.namespace, labels = merge(local.labels, { "gpustack.dev/stack" = each.key }) }
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
              serviceAccountName = module.access.service_account
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
  depends_on = [kubernetes_manifest.stack]
}

output "cronjobs" {
  value = [for name, _ in local.stacks : "${var.namespace}/${local.name}-${name}"]
}
