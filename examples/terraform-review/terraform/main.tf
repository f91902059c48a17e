# A Terraform stack that stays on Terraform: its GKE GPU pools are reviewed by gpustack on
# every pull request (../.github/workflows/gpu-review.yml), and nothing moves into gpustack.

terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0"
    }
  }
}

variable "project" {
  type = string
}

provider "google" {
  project = var.project
  region  = "us-central1"
}

# Inference: one L4 per node, shared by up to four pods through GKE's time-sharing.
resource "google_container_node_pool" "inference" {
  name           = "inference"
  cluster        = "ml"
  location       = "us-central1"
  node_locations = ["us-central1-a"]
  node_count     = 2

  node_config {
    machine_type = "g2-standard-8"

    guest_accelerator {
      type  = "nvidia-l4"
      count = 1

      gpu_sharing_config {
        gpu_sharing_strategy       = "TIME_SHARING"
        max_shared_clients_per_gpu = 4
      }

      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }
  }
}

# Training: A100 80GB partitioned by GKE into three 2g.20gb MIG devices each.
resource "google_container_node_pool" "training" {
  name           = "training"
  cluster        = "ml"
  location       = "us-central1"
  node_locations = ["us-central1-c"]

  autoscaling {
    min_node_count = 0
    max_node_count = 4
  }

  node_config {
    machine_type = "a2-ultragpu-1g"

    guest_accelerator {
      type               = "nvidia-a100-80gb"
      count              = 1
      gpu_partition_size = "2g.20gb"

      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }
  }
}
