# MPS: the device plugin shares each full GPU between pods through one MPS control daemon per
# node, with a memory and compute share per client, which time-slicing cannot give. The inputs
# are checked here; the objects are made by ../device-plugin-sharing.

module "sharing" {
  source                         = "../device-plugin-sharing"
  strategy                       = "mps"
  manager                        = "mps"
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
