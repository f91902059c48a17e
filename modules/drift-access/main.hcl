# What a drift Job needs, and nothing more: a service account that reads the objects its stacks
# manage where they are, reads their state, takes and gives back their lock Leases and, with a
# webhook, keeps what it posted. Every write it may make names its object: it can create
# nothing, so it can mint no token and run nothing as another account.

locals {
  labels  = merge({ "app.kubernetes.io/managed-by" = "gpustack" }, var.labels)
  states  = [for s in var.state_suffixes : "gpustack-state-${s}"]
  locks   = [for s in var.state_suffixes : "gpustack-lock-${s}"]
  records = var.webhook_records ? { for s in var.state_suffixes : s => "gpustack-note-${s}-drift-webhook-json" } : {}
  state_rules = concat(
    [
      # The index Secret of each state.
      { apiGroups = [""], resources = ["secrets"], verbs = ["get"], resourceNames = local.states },
      # The lock: the Lease outlives each run (the stack's first run created it), so taking
      # and giving it back are a get and an update of that one Lease.
      { apiGroups = ["coordination.k8s.io"], resources = ["leases"], verbs = ["get", "update"], resourceNames = local.locks },
    ],
    # The records exist (created below): posting updates one by name.
    var.webhook_records ? [{ apiGroups = [""], resources = ["secrets"], verbs = ["get", "patch"], resourceNames = values(local.records) }] : [],
    # Chunk Secrets are named by a random generation: only every Secret covers them.
    var.chunked_states ? [{ apiGroups = [""], resources = ["secrets"], verbs = ["get"] }] : [],
  )
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
    metadata   = { name = var.name, namespace = kubernetes_manifest.namespace.manifest.metadata.name, labels = local.labels }
  }
}

# The webhook's record of each state, with nothing in it yet: the Jobs only update it. Its own
# field manager, so that the Jobs' writes (field manager gpustack) leave this resource's fields.
resource "kubernetes_manifest" "record" {
  for_each      = local.records
  field_manager = "gpustack-drift-access"
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    metadata = {
      name      = each.value
      namespace = var.state_namespace
      labels    = merge(local.labels, { "gpustack.dev/state" = each.key })
    }
    type = "Opaque"
  }
  # Ordering only, for a state namespace that is this module's own namespace (discouraged:
  # deleting it would delete the states, so its deletion is refused while it holds one).
  depends_on = [kubernetes_manifest.namespace]
}

# The state: its index Secrets read, its lock Leases taken and given back, by name.
resource "kubernetes_manifest" "state_role" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "Role"
    metadata   = { name = "${var.name}-state", namespace = var.state_namespace, labels = local.labels }
    rules      = local.state_rules
  }
  depends_on = [kubernetes_manifest.namespace]
}

resource "kubernetes_manifest" "state_binding" {
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "RoleBinding"
    metadata   = { name = "${var.name}-state", namespace = var.state_namespace, labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = kubernetes_manifest.state_role.manifest.metadata.name }
    subjects   = [{ kind = "ServiceAccount", name = kubernetes_manifest.service_account.manifest.metadata.name, namespace = var.namespace }]
  }
}

# Refresh only reads, and only where the stacks' objects are.
resource "kubernetes_manifest" "read_role" {
  for_each = var.watched_namespaces
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "Role"
    metadata   = { name = "${var.name}-read", namespace = each.key, labels = local.labels }
    rules = [for r in each.value : {
      apiGroups = r.api_groups
      resources = r.resources
      verbs     = ["get", "list"]
    }]
  }
}

resource "kubernetes_manifest" "read_binding" {
  for_each = var.watched_namespaces
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "RoleBinding"
    metadata   = { name = "${var.name}-read", namespace = each.key, labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = kubernetes_manifest.read_role[each.key].manifest.metadata.name }
    subjects   = [{ kind = "ServiceAccount", name = kubernetes_manifest.service_account.manifest.metadata.name, namespace = var.namespace }]
  }
}

resource "kubernetes_manifest" "cluster_read_role" {
  count = length(var.watched_cluster_resources) > 0 ? 1 : 0
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "ClusterRole"
    metadata   = { name = "${var.name}-read-${var.namespace}", labels = local.labels }
    rules = [for r in var.watched_cluster_resources : {
      apiGroups = r.api_groups
      resources = r.resources
      verbs     = ["get", "list"]
    }]
  }
}

resource "kubernetes_manifest" "cluster_read_binding" {
  count = length(var.watched_cluster_resources) > 0 ? 1 : 0
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "ClusterRoleBinding"
    metadata   = { name = "${var.name}-read-${var.namespace}", labels = local.labels }
    roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = kubernetes_manifest.cluster_read_role[0].manifest.metadata.name }
    subjects   = [{ kind = "ServiceAccount", name = kubernetes_manifest.service_account.manifest.metadata.name, namespace = var.namespace }]
  }
}
