use crate::check::{Checker, provider_config};
use gpustack_protocol::{
    Attribute, GetSchemaRequest, GetSchemaResponse, ObjectAttr, Provider, ProviderSchema, Schema,
    Type, ValidateResourceConfigRequest, ValidateResourceConfigResponse,
};

/// EKS managed node groups and EC2 instance-type data.
pub(crate) struct Aws;

pub(crate) fn taint_type() -> Type {
    Type::object([
        ("key", ObjectAttr::required(Type::String)),
        ("value", ObjectAttr::optional(Type::String)),
        ("effect", ObjectAttr::required(Type::String)),
    ])
}

impl Provider for Aws {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        let config = provider_config("AWS, with the standard credential chain.")
            .attr("region", Attribute::optional(Type::String))
            .attr("profile", Attribute::optional(Type::String))
            .attr(
                "endpoint",
                Attribute::optional(Type::String).describe("Endpoint override, e.g. for moto."),
            );
        let nodegroup = Schema::new("An EKS managed node group.")
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
            .attr("status", Attribute::computed(Type::String));
        let instance_types =
            Schema::new("GPU details of EC2 instance types, from DescribeInstanceTypes.")
                .attr(
                    "instance_types",
                    Attribute::required(Type::list(Type::String)),
                )
                .attr("gpus", Attribute::computed(Type::map(Type::Any)));
        GetSchemaResponse {
            schema: ProviderSchema {
                name: "aws".into(),
                config,
                resources: [("eks_nodegroup".to_owned(), nodegroup)].into(),
                data_sources: [("aws_instance_types".to_owned(), instance_types)].into(),
            },
            diagnostics: vec![],
        }
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest,
    ) -> ValidateResourceConfigResponse {
        let mut check = Checker::new(&request.config);
        if request.type_name == "eks_nodegroup" {
            check.one_of("capacity_type", &["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]);
            check.one_of(
                "ami_type",
                &[
                    "AL2023_x86_64_NVIDIA",
                    "AL2023_ARM_64_NVIDIA",
                    "BOTTLEROCKET_x86_64_NVIDIA",
                    "BOTTLEROCKET_ARM_64_NVIDIA",
                    "AL2023_x86_64_STANDARD",
                    "BOTTLEROCKET_x86_64",
                ],
            );
            check.range("min_size", 0.0, 1000.0);
            check.range("max_size", 1.0, 1000.0);
            if let (Some(min), Some(max)) = (check.number("min_size"), check.number("max_size")) {
                if min > max {
                    check.error(
                        "min_size",
                        "Invalid scaling range",
                        format!("min_size {min} is greater than max_size {max}."),
                    );
                }
                if let Some(desired) = check.number("desired_size")
                    && (desired < min || desired > max)
                {
                    check.error(
                        "desired_size",
                        "Invalid scaling range",
                        format!("desired_size {desired} is outside {min}..{max}."),
                    );
                }
            }
            check.cloud_taint_effects("taints", "EKS");
        }
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }
}
