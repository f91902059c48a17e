variable "namespace" {
  type        = string
  description = "Where drift Jobs run, created here and holding only this module's objects and the Jobs'. Not the checked stacks' state namespace: deleting a namespace deletes all it holds."
}

variable "name" {
  type        = string
  description = "The service account's name, and the prefix of the roles'."
}

variable "state_namespace" {
  type        = string
  description = "The namespace of the checked stacks' kubernetes backend. It is not created here: it holds their state, which must outlive this module."
}

variable "state_suffixes" {
  type        = list(string)
  description = "The secret_suffix of each checked stack's backend: its state is the Secret gpustack-state-SUFFIX, its lock the Lease gpustack-lock-SUFFIX."
}

variable "chunked_states" {
  type        = bool
  default     = false
  description = "Whether a checked state may outgrow one Secret (about 900 KiB compressed): its chunk Secrets have names no role can list in advance, so the Jobs then read every Secret of the state namespace."
}

variable "webhook_records" {
  type        = bool
  default     = false
  description = "Whether the Jobs post to a webhook, and so keep what they posted in a Secret gpustack-note-SUFFIX-drift-webhook-json, which this module creates."
}

variable "watched_namespaces" {
  type = map(list(object({
    api_groups = list(string)
    resources  = list(string)
  })))
  description = "The namespaced kinds the checked stacks manage, by namespace: the Jobs may get and list them there, nothing more, nowhere else. The GPU Operator's namespace needs configmaps for the GPU model's drift."
}

variable "watched_cluster_resources" {
  type = list(object({
    api_groups = list(string)
    resources  = list(string)
  }))
  default     = []
  description = "The cluster-scoped kinds the checked stacks manage or the GPU model reads (nodes, clusterpolicies): the Jobs may get and list them."
}

variable "labels" {
  type    = map(string)
  default = {}
}
