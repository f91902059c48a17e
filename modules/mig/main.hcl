# MIG: splits each GPU of the named nodes into isolated instances. The MIG manager applies the
# geometry a node's nvidia.com/mig.config label names, from a mig-parted config set (NVIDIA's
# default one unless config_name says otherwise), and reports the outcome in
# nvidia.com/mig.config.state.

locals {
  # MIG profile → instances per GPU, per model (GPU-FACTS "MIG"; A30 from NVIDIA's default
  # mig-parted set). Keys are spelt as in geometry and resource names: a "+me" profile (with
  # the media engines, one per GPU) is ".me".
  mig_profiles = {
    "A100-40GB" = {
      "1g.5gb"    = 7
      "1g.5gb.me" = 1
      "1g.10gb"   = 4
      "2g.10gb"   = 3
      "3g.20gb"   = 2
      "4g.20gb"   = 1
      "7g.40gb"   = 1
    }
    "A100-80GB" = local.profiles_80gb
    "H100-80GB" = local.profiles_80gb
    "H200-141GB" = {
      "1g.18gb"    = 7
      "1g.18gb.me" = 1
      "1g.35gb"    = 4
      "2g.35gb"    = 3
      "3g.71gb"    = 2
      "4g.71gb"    = 1
      "7g.141gb"   = 1
    }
    "A30-24GB" = {
      "1g.6gb"     = 4
      "1g.6gb.me"  = 1
      "2g.12gb"    = 2
      "2g.12gb.me" = 1
      "4g.24gb"    = 1
    }
  }

  profiles_80gb = {
    "1g.10gb"    = 7
    "1g.10gb.me" = 1
    "1g.20gb"    = 4
    "2g.20gb"    = 3
    "3g.40gb"    = 2
    "4g.40gb"    = 1
    "7g.80gb"    = 1
  }

  # all-balanced in NVIDIA's default set mixes sizes, so it needs the mixed strategy.
  balanced = {
    "A100-40GB"  = { "1g.5gb" = 2, "2g.10gb" = 1, "3g.20gb" = 1 }
    "A100-80GB"  = { "1g.10gb" = 2, "2g.20gb" = 1, "3g.40gb" = 1 }
    "H100-80GB"  = { "1g.10gb" = 2, "2g.20gb" = 1, "3g.40gb" = 1 }
    "H200-141GB" = { "1g.18gb" = 2, "2g.35gb" = 1, "3g.71gb" = 1 }
    "A30-24GB"   = { "1g.6gb" = 2, "2g.12gb" = 1 }
  }

  profile = trimprefix(var.geometry, "all-")
  # Lookups with a default, so that an unknown model is reported once, by its validation.
  model_profiles = lookup(local.mig_profiles, var.gpu_model, {})

  # Instances per GPU of each profile the geometry makes; null for a custom geometry, whose
  # layout only its config set knows, and for a profile the GPU lacks (which the geometry's
  # validation reports).
  layout = (
    var.geometry == "all-disabled" ? {} :
    var.geometry == "all-enabled" ? {} :
    var.geometry == "all-balanced" ? lookup(local.balanced, var.gpu_model, {}) :
    contains(keys(local.model_profiles), local.profile) ? { (local.profile) = local.model_profiles[local.profile] } :
    null
  )

  # What the device plugin advertises per GPU. MIG disabled leaves the whole GPU; the single
  # strategy advertises its one profile as nvidia.com/gpu (several profiles are refused by
  # the strategy's validation); mixed names each profile.
  resources_per_gpu = (
    local.layout == null ? null :
    var.geometry == "all-disabled" ? { "nvidia.com/gpu" = 1 } :
    var.strategy == "single" ? (length(local.layout) == 1 ? { "nvidia.com/gpu" = sum(values(local.layout)) } : null) :
    { for p, n in local.layout : "nvidia.com/mig-${p}" => n }
  )
}

# The chart owns the ClusterPolicy; taking over just these fields needs force_conflicts, and
# a manager of our own so that the sharing modules' fields are not dropped by this apply.
resource "kubernetes_patch" "cluster_policy" {
  api_version     = "nvidia.com/v1"
  kind            = "ClusterPolicy"
  name            = var.operator.cluster_policy_name
  field_manager   = "gpustack-mig"
  force_conflicts = true

  patch = {
    spec = {
      mig = {
        strategy = var.strategy
      }
      migManager = {
        config = {
          name = var.config_name
          # Nodes without a nvidia.com/mig.config label keep MIG off.
          default = "all-disabled"
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

# A geometry change stops every GPU operand of the node and needs its GPUs free, and MIG
# Manager neither cordons nor drains (gpu-operator#262): the nodes are taken in turn within
# the budget — cordoned, emptied of GPU pods, relabelled, watched until MIG Manager reports
# success (or "failed" when the geometry does not fit), checked against what each GPU must
# advertise, uncordoned. Each node's step is recorded on the node, so an interrupted rollout
# resumes where it stopped.
resource "kubernetes_node_rollout" "geometry" {
  name  = "mig-geometry"
  nodes = var.node_names

  labels = {
    "nvidia.com/mig.config" = var.geometry
  }
  settle         = "mig"
  expect_per_gpu = var.rollout.check_allocatable ? local.resources_per_gpu : null

  max_unavailable = var.rollout.max_unavailable
  drain           = var.rollout.drain
  drain_timeout   = var.rollout.drain_timeout
  settle_timeout  = var.rollout.settle_timeout

  depends_on = [kubernetes_patch.cluster_policy]
}
