# What a drift Job needs, and nothing more: a service account that reads the objects its stacks
# manage, reads their state, takes and releases their lock Leases and, with a webhook, keeps
# what it posted.

locals {
  labels  = merge({ "app.kubernetes.io/managed-by" = "gpustack" }, var.labels)
  locks   = [for s in var.state_suffixes : "gpustack-lock-${s}"]
  records = var.webhook_records ? [for s in var.state_suffixes : "gpustack-note-${s}-drift-webhook-json"] : []
  record_rules = var.webhook_records ? [
    { apiGroups = [""], resources = ["secrets"], verbs = ["patch"], resourceNames = local.records },
    # Server-side apply creates the record the first time; create cannot name its object.
    { apiGroups = [""], resources = ["secrets"], verbs = ["create"] },
  ] : []
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
    metadata   = { name = var.name, namespace = var.namespace, labels = local.labels }
  }
  depends_on = [kubernetes_manifest.namespace]
}

# The state: every Secret of the namespace may be read (chunk names are not known in advance),
# the lock Leases taken and released. Nothing else in the namespace can be changed.
resource "kubernetes_manifest" "state_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "Role"
    metadata   = { name = "${var.name}-state", namespace = var.namespace, labels = local.labels }
    rules = concat([
      { apiGroups = [""], resources = ["secrets"], verbs = ["get"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["create"] },
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["get", "update", "delete"], resourceNames = local.locks },
    ], local.record_rules)
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "state_binding" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "RoleBinding"
    metadata   = { name = "${var.name}-state", namespace = var.namespace, labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = "${var.name}-state" }
    subjects   = [{ kind = "ServiceAccount", name = var.name, namespace = var.namespace }]
  }
  depends_on = [kubernetes_manifest.state_role, kubernetes_manifest.service_account]
}

# Refresh only reads.
resource "kubernetes_manifest" "read_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "ClusterRole"
    metadata   = { name = "${var.name}-read-${var.namespace}", labels = local.labels }
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
    metadata   = { name = "${var.name}-read-${var.namespace}", labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "${var.name}-read-${var.namespace}" }
    subjects   = [{ kind = "ServiceAccount", name = var.name, namespace = var.namespace }]
  }
  depends_on = [kubernetes_manifest.read_role, kubernetes_manifest.service_account]
}
