module "training" {
  count  = 1
  source = "./modules/pool"
  name   = "training"
}
