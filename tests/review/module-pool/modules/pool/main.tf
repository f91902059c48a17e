variable "name" {
  type = string
}

resource "google_container_node_pool" "this" {
  name       = var.name
  cluster    = "ml"
  location   = "us-central1-c"
  node_count = 1

  node_config {
    machine_type = "n1-standard-8"

    guest_accelerator {
      type               = "nvidia-tesla-t4"
      count              = 1
      gpu_partition_size = "1g.5gb"
    }
  }
}
