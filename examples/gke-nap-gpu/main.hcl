# GKE node auto-provisioning for GPUs, as in the reference flow: the cluster creates GPU node
# pools on demand within per-accelerator limits (T4, V100, A100) and removes them when idle.
# Pods choose their GPU with the cloud.google.com/gke-accelerator node selector (and
# cloud.google.com/gke-spot for spot), and tolerate nvidia.com/gpu.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "gcp" {
  project  = var.project
  endpoint = var.gcp_endpoint
}

resource "gke_node_autoprovisioning" "gpus" {
  location  = var.location
  cluster   = var.cluster
  enabled   = true
  locations = var.zones
  resource_limits = [
    { resource_type = "cpu", maximum = var.max_cpu },
    { resource_type = "memory", maximum = var.max_memory_gb },
    { resource_type = "nvidia-tesla-t4", maximum = var.max_gpus["t4"] },
    { resource_type = "nvidia-tesla-v100", maximum = var.max_gpus["v100"] },
    { resource_type = "nvidia-tesla-a100", maximum = var.max_gpus["a100"] },
  ]
}
