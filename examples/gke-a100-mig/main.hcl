# A GKE node pool of a2-highgpu-1g (1× A100 40 GB) whose GPU is split by GKE into seven
# 1g.5gb MIG instances (gpu_partition_size), spot capacity, tainted so that only GPU pods
# land there. GKE installs the driver (driver_version = "LATEST") and runs its own device
# plugin, which advertises nvidia.com/gpu: 7 per node.

gpustack {
  required_version = ">= 0.1"

  backend "local" {}
}

provider "gcp" {
  project  = var.project
  endpoint = var.gcp_endpoint
}

resource "gke_nodepool" "a100_mig" {
  location       = var.location
  cluster        = var.cluster
  name           = "a100-mig"
  machine_type   = "a2-highgpu-1g"
  node_count     = var.node_count
  min_node_count = 0
  max_node_count = var.max_node_count
  spot           = true
  labels = {
    "gpustack.dev/pool" = "a100-mig"
  }
  taints = [
    {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    },
  ]

  accelerator {
    type               = "nvidia-tesla-a100"
    count              = 1
    gpu_partition_size = "1g.5gb"
    driver_version     = "LATEST"
  }
}
