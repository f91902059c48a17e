output "nodegroup_arn" {
  value = eks_nodegroup.a10g.arn
}

output "gpus_per_node" {
  value = data.aws_instance_types.pool.gpus[var.instance_type].count
}
