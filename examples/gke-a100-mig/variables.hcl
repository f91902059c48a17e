variable "project" {
  type = string
}

variable "gcp_endpoint" {
  type        = string
  default     = null
  description = "GKE API endpoint; default https://container.googleapis.com."
}

variable "location" {
  type    = string
  default = "us-central1-c"
}

variable "cluster" {
  type = string
}

variable "node_count" {
  type    = number
  default = 1
}

variable "max_node_count" {
  type    = number
  default = 4
}
