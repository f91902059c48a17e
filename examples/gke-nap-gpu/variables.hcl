variable "project" {
  type = string
}

variable "gcp_endpoint" {
  type        = string
  default     = null
  description = "GKE API endpoint; default https://container.googleapis.com."
}

variable "location" {
  type        = string
  default     = "us-central1"
  description = "The cluster's region or zone."
}

variable "cluster" {
  type = string
}

variable "zones" {
  type        = list(string)
  default     = ["us-central1-a", "us-central1-c"]
  description = "Zones where auto-provisioned GPU pools may be created (where the accelerators exist)."
}

variable "max_cpu" {
  type    = number
  default = 256
}

variable "max_memory_gb" {
  type    = number
  default = 1024
}

variable "max_gpus" {
  type = map(number)
  default = {
    t4   = 8
    v100 = 4
    a100 = 4
  }
  description = "At most this many GPUs of each accelerator type across the cluster."
}
