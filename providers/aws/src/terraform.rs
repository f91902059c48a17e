//! The AWS provider's `aws_eks_node_group` read as an EKS node group of gpustack's own schema:
//! served on `eks_nodegroup`'s flow, its data source, and `gpustack review` of a change to it,
//! with the same shape, checks and GPU fact; and Terraform's `provider "aws"` arguments.

use crate::{Aws, Connected};
use gpustack_protocol::Value;
use gpustack_protocol::{
    Attribute, BlockNesting, Diagnostic, ForeignChange, Reviewed, Schema, Type,
};
use gpustack_provider_sdk::check::{Checker, attribute, string_map, strings, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::terraform_pool::{TerraformPool, refused_block, single_block as one};
use std::collections::BTreeMap;

pub(crate) static NODE_GROUP: TerraformPool = TerraformPool {
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
        ("kubernetes_version", "version"),
        ("release_version", "release_version"),
        ("arn", "arn"),
        ("status", "status"),
    ],
    own_import_id,
    terraform_import_id: |id| id.replacen('/', ":", 1),
    derived: None,
    import_formats: "CLUSTER_NAME:NODE_GROUP_NAME",
    tags: Some(("tags", "tags", "tags_all")),
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

/// The node group's arguments gpustack does not serve, and why.
pub(crate) const REFUSED: &[(&str, &str)] = &[
    (
        "node_group_name_prefix",
        "gpustack names a node group by node_group_name, which its GPU facts and rollouts key on",
    ),
    (
        "launch_template",
        "the node group takes EKS's AMI for its ami_type and EKS's launch settings",
    ),
    ("remote_access", "SSH access to the nodes is not served"),
    (
        "update_config",
        "EKS's default update (one node at a time) stands; a replacement's nodes are moved by gpustack's rollout block",
    ),
    (
        "node_repair_config",
        "EKS's node auto-repair setting is not served",
    ),
    (
        "force_update_version",
        "a version update that does not respect PodDisruptionBudgets is not served",
    ),
];

/// The provider block's arguments gpustack does not serve, and why.
pub(crate) const PROVIDER_REFUSED: &[(&str, &str)] = &[
    (
        "ignore_tags",
        "every tag is compared: drop the tags others set from the configuration, or keep them out of tags",
    ),
    (
        "shared_config_files",
        "set AWS_CONFIG_FILE, which gpustack's AWS SDK reads",
    ),
    (
        "shared_credentials_files",
        "set AWS_SHARED_CREDENTIALS_FILE, which gpustack's AWS SDK reads",
    ),
    (
        "allowed_account_ids",
        "the account is not checked before apply",
    ),
    (
        "forbidden_account_ids",
        "the account is not checked before apply",
    ),
    ("insecure", "TLS is always verified"),
    (
        "custom_ca_bundle",
        "set AWS_CA_BUNDLE, which gpustack's AWS SDK reads",
    ),
    ("http_proxy", "set HTTPS_PROXY"),
    ("https_proxy", "set HTTPS_PROXY"),
    ("no_proxy", "set NO_PROXY"),
    (
        "ec2_metadata_service_endpoint",
        "the instance metadata service is found where the SDK finds it",
    ),
    (
        "ec2_metadata_service_endpoint_mode",
        "the instance metadata service is found where the SDK finds it",
    ),
    (
        "assume_role[0].transitive_tag_keys",
        "transitive session tags are not served",
    ),
    (
        "assume_role[0].source_identity",
        "a source identity is not served",
    ),
    (
        "assume_role_with_web_identity",
        "set AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, which gpustack's AWS SDK reads",
    ),
];

/// Provider arguments accepted for what they are: each changes nothing gpustack does, for the
/// reason in its description.
pub(crate) const PROVIDER_ACCEPTED: &[(&str, &str)] = &[
    (
        "skip_credentials_validation",
        "gpustack never validates credentials before its first request",
    ),
    (
        "skip_metadata_api_check",
        "gpustack never checks the metadata API before its first request",
    ),
    (
        "skip_region_validation",
        "gpustack does not validate region names",
    ),
    (
        "skip_requesting_account_id",
        "gpustack never requests the account ID",
    ),
    (
        "s3_use_path_style",
        "gpustack's aws provider makes no S3 requests",
    ),
    (
        "s3_us_east_1_regional_endpoint",
        "gpustack's aws provider makes no S3 requests",
    ),
    (
        "token_bucket_rate_limiter_capacity",
        "the SDK's own rate limiter stands",
    ),
];

/// The services of the `endpoints` block gpustack's node groups call, and every other
/// service as accepted (its requests are Terraform's).
pub(crate) const ENDPOINTS_USED: &[&str] = &["eks", "ec2", "sts"];

/// Terraform's `provider "aws"` arguments, added to gpustack's own `aws` provider's: one
/// provider block serves both kinds of stack.
pub(crate) fn provider_arguments(config: Schema) -> Schema {
    let mut config = config
        .attr("access_key", Attribute::optional(Type::String))
        .attr("secret_key", Attribute::optional(Type::String).sensitive())
        .attr("token", Attribute::optional(Type::String).sensitive())
        .attr("max_retries", Attribute::optional(Type::Number))
        .attr("retry_mode", Attribute::optional(Type::String))
        .attr("sts_region", Attribute::optional(Type::String))
        .attr("use_fips_endpoint", Attribute::optional(Type::Bool))
        .attr("use_dualstack_endpoint", Attribute::optional(Type::Bool))
        .block(
            "default_tags",
            BlockNesting::Single,
            Schema::new("Tags every aws_eks_node_group carries under its own tags (gpustack's eks_nodegroup takes only its own tags).")
                .attr("tags", Attribute::optional(Type::map(Type::String))),
        );
    for (name, why) in PROVIDER_ACCEPTED {
        config = config.attr(
            name,
            Attribute::optional(Type::Any).describe(format!("Accepted: {why}.")),
        );
    }
    for (name, _) in PROVIDER_REFUSED {
        if !name.contains('[') && !["ignore_tags", "assume_role_with_web_identity"].contains(name) {
            config = config.attr(name, Attribute::optional(Type::Any));
        }
    }
    config = one(
        config,
        "ignore_tags",
        refused_block(&["keys", "key_prefixes"]),
    );
    config = one(
        config,
        "assume_role_with_web_identity",
        refused_block(&[
            "role_arn",
            "session_name",
            "web_identity_token",
            "web_identity_token_file",
            "duration",
            "policy",
            "policy_arns",
        ]),
    );
    let assume_role = Schema::new("The role every request is made as (STS AssumeRole).")
        .attr("role_arn", Attribute::optional(Type::String))
        .attr("session_name", Attribute::optional(Type::String))
        .attr("external_id", Attribute::optional(Type::String))
        .attr("duration", Attribute::optional(Type::String))
        .attr("policy", Attribute::optional(Type::String))
        .attr("policy_arns", Attribute::optional(Type::set(Type::String)))
        .attr("tags", Attribute::optional(Type::map(Type::String)))
        .attr(
            "transitive_tag_keys",
            Attribute::optional(Type::set(Type::String)),
        )
        .attr("source_identity", Attribute::optional(Type::String));
    config = config.block("assume_role", BlockNesting::List, assume_role);
    let endpoints = ENDPOINTS_OTHER
        .iter()
        .chain(ENDPOINTS_USED)
        .fold(Schema::new("Service endpoints: eks, ec2 and sts are gpustack's; the rest are Terraform's other types'."), |s, n| {
            s.attr(n, Attribute::optional(Type::String))
        });
    config.block("endpoints", BlockNesting::List, endpoints)
}

/// Endpoints of services gpustack's aws provider never calls, accepted so that a Terraform
/// provider block reads as it is (the common ones; another is refused as unknown).
const ENDPOINTS_OTHER: &[&str] = &[
    "acm",
    "autoscaling",
    "cloudformation",
    "cloudwatch",
    "cloudwatchlogs",
    "dynamodb",
    "ecr",
    "ecs",
    "efs",
    "elb",
    "elbv2",
    "iam",
    "kms",
    "lambda",
    "rds",
    "route53",
    "s3",
    "secretsmanager",
    "sns",
    "sqs",
    "ssm",
];

/// Terraform's `aws_eks_node_group` schema.
pub(crate) fn node_group_schema() -> Schema {
    let scaling = Schema::new("The node group's size.")
        .attr("desired_size", Attribute::required(Type::Number))
        .attr("min_size", Attribute::required(Type::Number))
        .attr("max_size", Attribute::required(Type::Number));
    let taint = Schema::new(
        "A taint of every node (effect NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE).",
    )
    .attr("key", Attribute::required(Type::String))
    .attr("value", Attribute::optional(Type::String))
    .attr("effect", Attribute::required(Type::String));
    let mut schema = gpustack_provider_sdk::pool::pool_schema(
        Schema::new("An EKS managed node group in the AWS provider's schema, served on gpustack's EKS flow.")
            .attr("cluster_name", Attribute::required(Type::String).force_new())
            .attr("node_group_name", Attribute::required(Type::String).force_new())
            .attr("node_role_arn", Attribute::required(Type::String).force_new())
            .attr("subnet_ids", Attribute::required(Type::set(Type::String)).force_new())
            .attr("instance_types", Attribute::optional_computed(Type::list(Type::String)).force_new())
            .attr("ami_type", Attribute::optional_computed(Type::String).force_new())
            .attr("capacity_type", Attribute::optional_computed(Type::String).force_new())
            .attr("disk_size", Attribute::optional_computed(Type::Number).force_new())
            .attr("labels", Attribute::optional(Type::map(Type::String)))
            .attr("tags", Attribute::optional(Type::map(Type::String)))
            .attr("tags_all", Attribute::computed(Type::map(Type::String)))
            .attr("version", Attribute::optional_computed(Type::String))
            .attr("release_version", Attribute::optional_computed(Type::String))
            .attr("arn", Attribute::computed(Type::String))
            .attr("status", Attribute::computed(Type::String))
            .attr("id", Attribute::computed(Type::String))
            .attr("node_group_name_prefix", Attribute::optional(Type::String))
            .attr("force_update_version", Attribute::optional(Type::Bool))
            .block("taint", BlockNesting::List, taint),
    );
    schema = one(schema, "scaling_config", scaling);
    if let Some(block) = schema.blocks.get_mut("scaling_config") {
        block.min_items = 1;
    }
    schema = one(
        schema,
        "launch_template",
        refused_block(&["id", "name", "version"]),
    );
    schema = one(
        schema,
        "remote_access",
        refused_block(&["ec2_ssh_key", "source_security_group_ids"]),
    );
    schema = one(
        schema,
        "update_config",
        refused_block(&["max_unavailable", "max_unavailable_percentage"]),
    );
    schema = one(schema, "node_repair_config", refused_block(&["enabled"]));
    schema.block(
        "timeouts",
        gpustack_protocol::BlockNesting::Single,
        Schema::new("Accepted: gpustack waits for each EKS update for as long as it runs.")
            .attr("create", Attribute::optional(Type::String))
            .attr("update", Attribute::optional(Type::String))
            .attr("delete", Attribute::optional(Type::String)),
    )
}

/// The provider block's checks: its refused arguments, and its retry mode.
pub(crate) fn check_provider(check: &mut Checker<'_>) {
    gpustack_provider_sdk::terraform_pool::refuse_provider_arguments(
        check,
        PROVIDER_REFUSED,
        "gpustack's aws provider",
    );
    check.one_of("retry_mode", &["standard", "adaptive"]);
    if let Some(list) = check.get("assume_role").and_then(Value::as_list)
        && list.len() > 1
    {
        check.error(
            "assume_role[1]",
            "Argument not served",
            "A chain of assume_role blocks is not served: gpustack assumes the first role only."
                .into(),
        );
    }
    if let Some(text) = check.str("assume_role[0].duration")
        && gpustack_provider_sdk::check::duration(Some(text), std::time::Duration::ZERO).is_err()
    {
        check.error(
            "assume_role[0].duration",
            "Invalid duration",
            format!("\"{text}\" is not a duration such as \"1h\" or \"15m\"."),
        );
    }
}

/// The endpoint the block's `endpoints` gives a service, if any.
pub(crate) fn endpoint(config: &Value, service: &str) -> Option<String> {
    let endpoints = attribute(config, "endpoints")?.as_list()?.first()?;
    text(endpoints, service).map(str::to_owned)
}

/// The provider block's `default_tags { tags }`.
pub(crate) fn default_tags(config: &Value) -> BTreeMap<String, String> {
    attribute(config, "default_tags")
        .and_then(|d| match d {
            Value::List(items) => items.first(),
            other => Some(other),
        })
        .map(|d| string_map(d, "tags"))
        .unwrap_or_default()
}

/// The SDK's configuration with the provider block's credentials, retries and endpoint
/// variants.
pub(crate) fn with_provider_arguments(
    mut loader: aws_config::ConfigLoader,
    config: &Value,
) -> aws_config::ConfigLoader {
    if let (Some(access), Some(secret)) = (text(config, "access_key"), text(config, "secret_key")) {
        loader = loader.credentials_provider(aws_sdk_eks::config::Credentials::new(
            access,
            secret,
            text(config, "token").map(str::to_owned),
            None,
            "aws provider block",
        ));
    }
    let attempts = attribute(config, "max_retries")
        .and_then(Value::as_number)
        .map_or(6, |n| n.max(0.0) as u32 + 1);
    let retry = match text(config, "retry_mode") {
        Some("adaptive") => aws_config::retry::RetryConfig::adaptive(),
        _ => aws_config::retry::RetryConfig::standard(),
    };
    loader = loader.retry_config(retry.with_max_attempts(attempts));
    if let Some(fips) = attribute(config, "use_fips_endpoint").and_then(Value::as_bool) {
        loader = loader.use_fips(fips);
    }
    if let Some(dual) = attribute(config, "use_dualstack_endpoint").and_then(Value::as_bool) {
        loader = loader.use_dual_stack(dual);
    }
    loader
}

/// The SDK's configuration as the provider block's `assume_role` (its first) makes it: the
/// role's temporary credentials from STS, refreshed as they expire.
pub(crate) async fn assumed(
    shared: aws_config::SdkConfig,
    config: &Value,
) -> aws_config::SdkConfig {
    let Some(role) = attribute(config, "assume_role")
        .and_then(Value::as_list)
        .and_then(<[Value]>::first)
    else {
        return shared;
    };
    let Some(arn) = text(role, "role_arn") else {
        return shared;
    };
    let mut builder = aws_config::sts::AssumeRoleProvider::builder(arn).configure(&shared);
    if let Some(name) = text(role, "session_name") {
        builder = builder.session_name(name);
    }
    if let Some(id) = text(role, "external_id") {
        builder = builder.external_id(id);
    }
    if let Some(policy) = text(role, "policy") {
        builder = builder.policy(policy);
    }
    let arns = strings(role, "policy_arns");
    if !arns.is_empty() {
        builder = builder.policy_arns(arns);
    }
    if let Some(length) = text(role, "duration").and_then(|d| {
        gpustack_provider_sdk::check::duration(Some(d), std::time::Duration::ZERO).ok()
    }) {
        builder = builder.session_length(length);
    }
    let tags = string_map(role, "tags");
    if !tags.is_empty() {
        builder = builder.tags(tags);
    }
    if let Some(region) = text(config, "sts_region") {
        builder = builder.region(aws_config::Region::new(region.to_owned()));
    }
    let provider = builder.build().await;
    shared
        .into_builder()
        .credentials_provider(aws_sdk_eks::config::SharedCredentialsProvider::new(
            provider,
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_groups_import_id_is_cluster_colon_name() {
        assert_eq!(own_import_id("gpu:g5").as_deref(), Some("gpu/g5"));
        assert_eq!(own_import_id("gpu/g5"), None);
        assert_eq!(own_import_id("gpu:"), None);
        assert_eq!((NODE_GROUP.terraform_import_id)("gpu/g5"), "gpu:g5");
        let object = |key: &str, value: Value| {
            Value::Object([(key.to_owned(), value)].into_iter().collect())
        };
        let config = object(
            "default_tags",
            Value::List(vec![object("tags", object("team", Value::string("ml")))]),
        );
        assert_eq!(
            default_tags(&config).get("team").map(String::as_str),
            Some("ml")
        );
    }
}
