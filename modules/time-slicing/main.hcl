# Time-slicing (GPU-FACTS reference flow, step 3): pods take turns on each GPU, with no memory
# or fault isolation. The inputs are checked here; the objects are made by
# ../device-plugin-sharing.

module "sharing" {
  source                         = "../device-plugin-sharing"
  strategy                       = "timeSlicing"
  manager                        = "time-slicing"
  operator                       = var.operator
  replicas                       = var.replicas
  config_name                    = var.config_name
  config_key                     = var.config_key
  resource_name                  = var.resource_name
  rename_by_default              = var.rename_by_default
  fail_requests_greater_than_one = var.fail_requests_greater_than_one
  mig_strategy                   = var.mig_strategy
  node_names                     = var.node_names
  unshared_config_key            = var.unshared_config_key
  rollout                        = var.rollout
}
