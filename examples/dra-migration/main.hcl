# Moving GPU pools from the device plugin to Dynamic Resource Allocation, pool by pool, with no
# pod left without a device. NVIDIA's DRA driver (modules/dra-gpu) serves the nodes that opt
# out of the device plugin (nvidia.com/gpu.deploy.device-plugin=false); the nodes of the pools
# in var.dra_pools are moved by a node-by-node rollout: each node in its turn is cordoned and
# emptied of its GPU pods (evicted, PodDisruptionBudgets respected), relabelled, and
# uncordoned only once the driver publishes its GPUs and the device plugin advertises none.
# The pods evicted start again elsewhere: on a pool still on the device plugin, or on a moved
# node through the DeviceClass gpu.nvidia.com, whose extendedResourceName lets pods that ask
# for nvidia.com/gpu get a DRA device without a change. Add the next pool to dra_pools when
# the last one is done. Runs on the local test cluster with --var kubeconfig=PATH
# --var chart=PATH/dra-driver-nvidia-gpu --var pool_label=LABEL --var 'dra_pools=["b"]'.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "kubernetes" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

provider "helm" {
  config_path = local.kubeconfig
  context     = var.kube_context
}

module "dra" {
  source    = "../../modules/dra-gpu"
  chart     = var.chart
  namespace = var.driver_namespace
  # The nodes the rollout below moves, and only those.
  pool_selector = {
    "nvidia.com/gpu.deploy.device-plugin" = "false"
  }
}

data "kubernetes_nodes" "moving" {
  count          = length(var.dra_pools) > 0 ? 1 : 0
  label_selector = "${var.pool_label} in (${join(",", var.dra_pools)})"
}

resource "kubernetes_node_rollout" "to_dra" {
  count           = length(var.dra_pools) > 0 ? 1 : 0
  name            = "to-dra"
  nodes           = sort([for node in data.kubernetes_nodes.moving[0].nodes : node.name])
  labels          = { "nvidia.com/gpu.deploy.device-plugin" = "false" }
  settle          = "dra"
  drain           = var.drain
  drain_timeout   = var.drain_timeout
  max_unavailable = var.max_unavailable
  depends_on      = [module.dra]
}

locals {
  kubeconfig = var.kubeconfig != "" ? var.kubeconfig : null
}
