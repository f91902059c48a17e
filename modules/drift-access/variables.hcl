variable "namespace" {
  type        = string
  description = "Where drift Jobs run; also the state namespace of the stacks they check (their kubernetes backend), which should hold nothing but gpustack state. Created here."
}

variable "name" {
  type        = string
  description = "The service account's name, and the prefix of the roles'."
}

variable "state_suffixes" {
  type        = list(string)
  description = "The secret_suffix of each checked stack's backend: their lock Leases are gpustack-lock-SUFFIX."
}

variable "webhook_records" {
  type        = bool
  default     = false
  description = "Whether the Jobs post to a webhook, and so keep what they posted in a Secret gpustack-note-SUFFIX-drift-webhook-json."
}

variable "watched_resources" {
  type = list(object({
    api_groups = list(string)
    resources  = list(string)
  }))
  description = "The kinds the checked stacks manage: the Jobs may get, list and watch them, nothing more."
}

variable "labels" {
  type    = map(string)
  default = {}
}
