terraform {
  required_providers {
    google = {
      source = "hashicorp/google"
    }
    helm = {
      source = "hashicorp/helm"
    }
  }
}

provider "google" {
  project = "ml-project"
  region  = "us-central1"
}

resource "google_container_node_pool" "a100" {
  name           = "a100"
  cluster        = "ml"
  location       = "us-central1"
  node_locations = ["us-central1-c"]
  node_count     = 2

  node_config {
    machine_type = "a2-ultragpu-1g"
    labels = {
      team = "research"
    }

    guest_accelerator {
      type               = "nvidia-a100-80gb"
      count              = 1
      gpu_partition_size = "1g.10gb"

      gpu_sharing_config {
        gpu_sharing_strategy       = "TIME_SHARING"
        max_shared_clients_per_gpu = 2
      }

      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }
  }
}

resource "google_container_node_pool" "cpu" {
  name       = "cpu"
  cluster    = "ml"
  location   = "us-central1"
  node_count = 1

  node_config {
    machine_type = "e2-standard-4"
  }
}
