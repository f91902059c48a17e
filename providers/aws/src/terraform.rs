//! The AWS provider's `aws_eks_node_group`, read as an EKS node group of gpustack's own
//! schema for `gpustack review`: the same shape, checks and GPU fact as `eks_nodegroup`.

use crate::{Aws, Connected};
use gpustack_protocol::{Diagnostic, ForeignChange, Reviewed};
use gpustack_provider_sdk::check::{Checker, strings};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::terraform_pool::TerraformPool;

const NODE_GROUP: TerraformPool = TerraformPool {
    type_name: "aws_eks_node_group",
    renames: &[
        ("cluster_name", "cluster_name"),
        ("nodegroup_name", "node_group_name"),
        ("node_role", "node_role_arn"),
        ("subnets", "subnet_ids"),
        ("instance_types", "instance_types"),
        ("ami_type", "ami_type"),
        ("capacity_type", "capacity_type"),
        ("disk_size", "disk_size"),
        ("min_size", "scaling_config.0.min_size"),
        ("max_size", "scaling_config.0.max_size"),
        ("desired_size", "scaling_config.0.desired_size"),
        ("labels", "labels"),
        ("taints", "taint"),
    ],
    own_import_id,
    terraform_import_id: |id| id.replacen('/', ":", 1),
    import_formats: "CLUSTER_NAME:NODE_GROUP_NAME",
};

/// `CLUSTER/NODEGROUP` of the AWS provider's import ID of a node group, `CLUSTER:NODEGROUP`.
fn own_import_id(id: &str) -> Option<String> {
    let (cluster, group) = id.split_once(':')?;
    (!cluster.is_empty() && !group.is_empty() && !group.contains(':'))
        .then(|| format!("{cluster}/{group}"))
}

pub(crate) fn review(aws: &Aws, change: &ForeignChange<'_>) -> Option<Reviewed> {
    NODE_GROUP.review::<Connected>(change, crate::pool::table_shape, |own| {
        let mut check = Checker::new(own);
        aws.check("eks_nodegroup", &mut check);
        let mut diagnostics = check.diagnostics;
        let types = strings(own, "instance_types");
        let gpus = |t: &String| {
            gpustack_provider_sdk::catalog::gpus(t).map(|g| (g.count, g.model, g.memory_gb))
        };
        if let Some(first) = types.first()
            && let Some(other) = types[1..].iter().find(|t| gpus(t) != gpus(first))
        {
            diagnostics.push(
                Diagnostic::warning(
                    "Instance types with different GPUs",
                    format!(
                        "The node group may launch {first} or {other}, which have different GPUs: its capacity is counted as {first}'s."
                    ),
                )
                .with_attribute("instance_types"),
            );
        }
        diagnostics
    })
}
