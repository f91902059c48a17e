variable "project" {
  type = string
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
