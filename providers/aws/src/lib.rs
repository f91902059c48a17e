//! The `aws` provider: EKS managed node groups (`eks_nodegroup`) and the GPUs of EC2 instance
//! types from DescribeInstanceTypes (`aws_instance_types`).
//!
//! Split by kind: this file is the family (the schema, the checks, connecting);
//! `eks.rs` the EKS calls a node group's flow waits on; `pool.rs` the node group as a
//! [`CloudPool`](gpustack_provider_sdk::pool::CloudPool): its state, create, update and
//! delete; `instance_types.rs` EC2's view of instance types and the data source on it.

mod eks;
mod instance_types;
mod pool;
mod terraform;

use gpustack_protocol::{
    Attribute, Diagnostic, Provider, ProviderSchema, ProviderTypes, Schema, Type, Value,
};
use gpustack_provider_sdk::catalog::Gpus;
use gpustack_provider_sdk::check::{Checker, provider_config, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::pool::{CloudPool, NodeDrainer, Pools};
use gpustack_provider_sdk::resource::Resources;
use gpustack_provider_sdk::taint_type;
use instance_types::InstanceTypes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// EKS managed node groups and EC2 instance-type data.
#[derive(Default)]
pub(crate) struct Aws {
    drainer: Option<Arc<dyn NodeDrainer>>,
}

gpustack_provider_sdk::cloud_entry_points!(Aws { drainer });

/// The provider block's schema: gpustack's own arguments and the AWS provider's.
fn config() -> Schema {
    terraform::provider_arguments(
        provider_config("AWS, with the standard credential chain; gpustack's own arguments and the AWS provider's.")
            .attr("region", Attribute::optional(Type::String))
            .attr("profile", Attribute::optional(Type::String))
            .attr(
                "endpoint",
                Attribute::optional(Type::String).describe("Endpoint override, e.g. for moto."),
            ),
    )
}

#[async_trait::async_trait]
impl Family for Aws {
    /// A node group is its name in its cluster.
    fn identity(&self, _: &str, state: &Value) -> Option<String> {
        Connected::key(state).map(|key| format!("eks:{key}"))
    }

    fn types(&self) -> ProviderTypes {
        ProviderTypes {
            name: "aws".into(),
            resources: vec![
                "eks_nodegroup".into(),
                terraform::NODE_GROUP.type_name.into(),
            ],
            data_sources: vec![
                "aws_instance_types".into(),
                terraform::NODE_GROUP.type_name.into(),
            ],
        }
    }

    fn config(&self) -> Schema {
        config()
    }

    fn schema(&self) -> ProviderSchema {
        let config = config();
        let nodegroup = gpustack_provider_sdk::pool::pool_schema(
            Schema::new("An EKS managed node group.")
                .attr(
                    "cluster_name",
                    Attribute::required(Type::String).force_new(),
                )
                .attr(
                    "nodegroup_name",
                    Attribute::required(Type::String).force_new(),
                )
                .attr("node_role", Attribute::required(Type::String).force_new())
                .attr(
                    "subnets",
                    Attribute::required(Type::set(Type::String)).force_new(),
                )
                .attr(
                    "instance_types",
                    Attribute::required(Type::list(Type::String)).force_new(),
                )
                .attr(
                    "ami_type",
                    Attribute::optional_computed(Type::String).force_new(),
                )
                .attr(
                    "capacity_type",
                    Attribute::optional_computed(Type::String).force_new(),
                )
                .attr(
                    "disk_size",
                    Attribute::optional_computed(Type::Number).force_new(),
                )
                .attr("min_size", Attribute::required(Type::Number))
                .attr("max_size", Attribute::required(Type::Number))
                .attr("desired_size", Attribute::optional_computed(Type::Number))
                .attr("labels", Attribute::optional(Type::map(Type::String)))
                .attr(
                    "tags",
                    Attribute::optional(Type::map(Type::String))
                        .describe("The node group's tags (besides gpustack's creation mark)."),
                )
                .attr("taints", Attribute::optional(Type::list(taint_type())))
                .attr(
                    "kubernetes_version",
                    Attribute::optional_computed(Type::String),
                )
                .attr(
                    "release_version",
                    Attribute::optional_computed(Type::String),
                )
                .attr("arn", Attribute::computed(Type::String))
                .attr("status", Attribute::computed(Type::String)),
        );
        let instance_types =
            Schema::new("GPU details of EC2 instance types, from DescribeInstanceTypes.")
                .attr(
                    "instance_types",
                    Attribute::required(Type::list(Type::String)),
                )
                .attr("gpus", Attribute::computed(Type::map(Type::Any)));
        ProviderSchema {
            name: "aws".into(),
            config,
            resources: [
                ("eks_nodegroup".to_owned(), nodegroup),
                (
                    terraform::NODE_GROUP.type_name.to_owned(),
                    terraform::node_group_schema(),
                ),
            ]
            .into(),
            data_sources: [
                ("aws_instance_types".to_owned(), instance_types),
                (
                    terraform::NODE_GROUP.type_name.to_owned(),
                    gpustack_provider_sdk::terraform_pool::data_schema(
                        &terraform::node_group_schema(),
                        &["cluster_name", "node_group_name"],
                    ),
                ),
            ]
            .into(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            terraform::check_provider(check);
            return;
        }
        if type_name == terraform::NODE_GROUP.type_name {
            gpustack_provider_sdk::terraform_pool::refuse_unserved(
                check,
                terraform::REFUSED,
                "gpustack's EKS node groups",
            );
            gpustack_provider_sdk::terraform_pool::own_checks(
                check,
                &terraform::NODE_GROUP,
                |own| self.check("eks_nodegroup", own),
            );
            return;
        }
        if type_name == "eks_nodegroup" {
            gpustack_provider_sdk::pool::check_rollout(check);
            check.one_of("capacity_type", &["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]);
            check.one_of(
                "ami_type",
                &[
                    "AL2023_x86_64_NVIDIA",
                    "AL2023_ARM_64_NVIDIA",
                    "BOTTLEROCKET_x86_64_NVIDIA",
                    "BOTTLEROCKET_ARM_64_NVIDIA",
                    "AL2023_x86_64_STANDARD",
                    "AL2023_ARM_64_STANDARD",
                    "BOTTLEROCKET_x86_64",
                    "BOTTLEROCKET_ARM_64",
                    "AL2_x86_64_GPU",
                    "CUSTOM",
                ],
            );
            check.range("min_size", 0.0, 1000.0);
            check.range("max_size", 1.0, 1000.0);
            check.min_not_above_max("min_size", "max_size", "Invalid scaling range");
            if let (Some(min), Some(max), Some(desired)) = (
                check.number("min_size"),
                check.number("max_size"),
                check.number("desired_size"),
            ) && (desired < min || desired > max)
            {
                check.error(
                    "desired_size",
                    "Invalid scaling range",
                    format!("desired_size {desired} is outside {min}..{max}."),
                );
            }
            check.cloud_taint_effects("taints", "EKS");
            gpu_ami(check);
        }
    }

    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        terraform::review(self, change)
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let endpoint = |service: &str| {
            terraform::endpoint(config, service)
                .or_else(|| text(config, "endpoint").map(str::to_owned))
        };
        let settings = gpustack_connect::aws::AwsSettings {
            region: text(config, "region").map(str::to_owned),
            profile: text(config, "profile").map(str::to_owned),
            endpoint: None,
        };
        // Node group operations are few and slow; a throttled or failed call is worth more
        // attempts than the SDK's default three.
        let loader =
            terraform::with_provider_arguments(gpustack_connect::aws::loader(&settings), config);
        let shared = loader.load().await;
        if shared.region().is_none() {
            return Err(vec![Diagnostic::error(
                "No AWS region",
                "Set region in the aws provider block, or AWS_REGION / a profile's region.",
            )]);
        }
        let shared = terraform::assumed(shared, config).await;
        let mut eks = aws_sdk_eks::config::Builder::from(&shared);
        if let Some(url) = endpoint("eks") {
            eks = eks.endpoint_url(url);
        }
        let mut ec2 = aws_sdk_ec2::config::Builder::from(&shared);
        if let Some(url) = endpoint("ec2") {
            ec2 = ec2.endpoint_url(url);
        }
        let connected = Arc::new(Connected {
            eks: aws_sdk_eks::Client::from_conf(eks.build()),
            ec2: aws_sdk_ec2::Client::from_conf(ec2.build()),
            gpus: Mutex::new(HashMap::new()),
        });
        Ok(Arc::new(
            Resources::new()
                .resource(
                    "eks_nodegroup",
                    Pools(connected.clone(), self.drainer.clone()),
                )
                .resource(
                    terraform::NODE_GROUP.type_name,
                    gpustack_provider_sdk::terraform_pool::TerraformPools {
                        pool: &terraform::NODE_GROUP,
                        inner: Pools(connected.clone(), self.drainer.clone()),
                        default_tags: terraform::default_tags(config),
                    },
                )
                .data_source(
                    terraform::NODE_GROUP.type_name,
                    gpustack_provider_sdk::terraform_pool::TerraformPoolData {
                        pool: &terraform::NODE_GROUP,
                        cloud: connected.clone(),
                    },
                )
                .data_source("aws_instance_types", InstanceTypes(connected)),
        ))
    }
}

/// GPU instances on an AMI without NVIDIA's driver: their GPUs would never be advertised
/// (GPU-FACTS, EKS: the NVIDIA AMI types carry the driver; `CUSTOM` is the launch
/// template's to say).
fn gpu_ami(check: &mut Checker<'_>) {
    let Some(ami) = check.str("ami_type") else {
        return;
    };
    if ami == "CUSTOM" || ami.contains("NVIDIA") || ami.ends_with("_GPU") {
        return;
    }
    let Some(machine) = check
        .get("instance_types")
        .and_then(|t| t.as_list())
        .and_then(|t| t.iter().find_map(|m| m.as_str()))
        .map(str::to_owned)
    else {
        return;
    };
    if let Some(gpus) = gpustack_provider_sdk::catalog::gpus(&machine) {
        check.error(
            "ami_type",
            "GPU instances without NVIDIA's driver",
            format!(
                "{machine} has {}× {}, but ami_type {ami} carries no NVIDIA driver, so the nodes would advertise no GPUs: use AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA.",
                gpus.count, gpus.model
            ),
        );
    }
}

/// An `aws` provider block, connected.
pub(crate) struct Connected {
    eks: aws_sdk_eks::Client,
    ec2: aws_sdk_ec2::Client,
    /// DescribeInstanceTypes answers, by instance type (`None`: not a GPU type).
    gpus: Mutex<HashMap<String, Option<(Gpus, String)>>>,
}
