//! What gpustack makes of Terraform's own names: the language version it implements, the
//! provider source addresses it serves, and every argument of Terraform's `s3`, `kubernetes`
//! and `local` state backends. The language reads them in a `terraform { backend ... }` block
//! and the `terraform` provider in `data "terraform_remote_state"`'s `config`, so that both say
//! the same of each argument.

/// The version of the Terraform language gpustack implements, as `required_version` checks it:
/// Terraform 1.15 (`deprecated`, `convert()`, `const` variables in module sources, `output {
/// type }`; 1.14's actions and query files refused by name; 1.12's imports by identity;
/// 1.10's ephemeral values and 1.11's write-only arguments) and OpenTofu 1.11's additions
/// (`lifecycle { enabled }`, state encryption).
pub const LANGUAGE_VERSION: &str = "1.15.0";

/// The provider source addresses (`NAMESPACE/TYPE`, on any registry host; the built-in
/// `terraform` provider is `terraform.io/builtin/terraform`) whose providers
/// gpustack serves under a name of its own when its build has that provider: a
/// `required_providers` entry naming one of these is accepted.
pub const SERVED_PROVIDERS: &[(&str, &str)] = &[
    ("hashicorp/kubernetes", "kubernetes"),
    ("hashicorp/helm", "helm"),
    ("hashicorp/local", "local"),
    ("hashicorp/null", "null"),
    ("hashicorp/time", "time"),
    ("hashicorp/random", "random"),
    ("hashicorp/http", "http"),
    ("hashicorp/tls", "tls"),
    ("hashicorp/external", "external"),
    ("hashicorp/archive", "archive"),
    ("hashicorp/cloudinit", "cloudinit"),
    ("hashicorp/aws", "aws"),
    ("hashicorp/azurerm", "azurerm"),
    ("hashicorp/google", "google"),
    ("hashicorp/google-beta", "google-beta"),
    ("gavinbunney/kubectl", "kubectl"),
    ("alekc/kubectl", "kubectl"),
    ("builtin/terraform", "terraform"),
];

/// What gpustack makes of one argument of a Terraform backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendArgument {
    /// Read as the gpustack backend's argument of this name.
    Honoured(&'static str),
    /// Accepted; it changes nothing gpustack does, for the reason given.
    Accepted(&'static str),
    /// Accepted with a warning: what it asks for is not done, for the reason given.
    Ignored(&'static str),
    /// Refused, for the reason given.
    Refused(&'static str),
    /// Read by the caller itself: its value is restructured (`endpoints`, `config_paths`,
    /// `load_config_file`, `use_lockfile`).
    Special,
}

const CREDENTIALS: &str = "credentials do not belong in a stack's files: gpustack reads them as the AWS SDK does, from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), a profile or the instance's role";
const SHARED_FILES: &str = "gpustack reads the AWS configuration and credentials files the AWS SDK finds (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE); name the profile with profile";
const ROLE: &str = "gpustack's S3 client assumes no role itself: give the profile a role_arn (with source_profile or credential_source) in the AWS configuration file and name it with profile";
const CLUSTER_CREDENTIALS: &str = "gpustack's kubernetes backend reaches the cluster through a kubeconfig (config_path, config_context) or, in a pod, its service account (in_cluster_config); credentials do not belong in a stack's files";
const NO_VALIDATION_CALL: &str = "gpustack makes no such call before it reads or writes the state";

/// Every argument of Terraform's `backend "KIND"` blocks for the kinds gpustack has (`s3`,
/// `kubernetes`, `local`); `None` for an argument Terraform does not have either.
pub fn backend_argument(kind: &str, name: &str) -> Option<BackendArgument> {
    use BackendArgument::*;
    Some(match (kind, name) {
        ("s3", "bucket") => Honoured("bucket"),
        ("s3", "key") => Honoured("key"),
        ("s3", "region") => Honoured("region"),
        ("s3", "profile") => Honoured("profile"),
        ("s3", "use_path_style") => Honoured("use_path_style"),
        ("s3", "endpoint") => Honoured("endpoint"),
        ("s3", "force_path_style") => Honoured("use_path_style"),
        ("s3", "endpoints" | "use_lockfile") => Special,
        ("s3", "dynamodb_table" | "dynamodb_endpoint") => Ignored(
            "gpustack locks an S3 state with a lock object written only if absent (KEY.lock, by S3's conditional writes), as Terraform's use_lockfile does, never with DynamoDB: a Terraform run that locks through this table does not exclude a gpustack run",
        ),
        ("s3", "encrypt") => Accepted(
            "S3 encrypts every object at rest (SSE-S3) whether or not a request asks; encrypt the state with keys of your own with the encryption block",
        ),
        ("s3", "kms_key_id") => Refused(
            "gpustack does not ask S3 for SSE-KMS: encrypt the state with an aws_kms key provider in the encryption block instead",
        ),
        ("s3", "sse_customer_key") => Refused(
            "gpustack does not send SSE-C keys: encrypt the state with the encryption block instead",
        ),
        ("s3", "acl") => Refused(
            "gpustack writes the state with the bucket's own access settings and sets no ACL",
        ),
        ("s3", "access_key" | "secret_key" | "token") => Refused(CREDENTIALS),
        ("s3", "shared_config_files" | "shared_credentials_file" | "shared_credentials_files") => {
            Refused(SHARED_FILES)
        }
        ("s3", "assume_role" | "assume_role_with_web_identity" | "role_arn") => Refused(ROLE),
        ("s3", "workspace_key_prefix") => Honoured("workspace_key_prefix"),
        (
            "s3",
            "skip_credentials_validation"
            | "skip_requesting_account_id"
            | "skip_region_validation"
            | "allowed_account_ids"
            | "forbidden_account_ids",
        ) => match name {
            "allowed_account_ids" | "forbidden_account_ids" => Refused(
                "gpustack does not look up the account its credentials belong to, so it cannot check it",
            ),
            _ => Accepted(NO_VALIDATION_CALL),
        },
        (
            "s3",
            "skip_metadata_api_check"
            | "ec2_metadata_service_endpoint"
            | "ec2_metadata_service_endpoint_mode",
        ) => Refused(
            "gpustack's AWS credentials chain reads the instance metadata service as the AWS SDK configures it (AWS_EC2_METADATA_DISABLED, AWS_EC2_METADATA_SERVICE_ENDPOINT)",
        ),
        ("s3", "skip_s3_checksum") => Refused(
            "gpustack's S3 client sends checksums as the AWS SDK does; an S3-compatible store that rejects them is not supported",
        ),
        ("s3", "iam_endpoint" | "sts_endpoint" | "sts_region") => Refused(
            "gpustack's S3 client calls only S3; its credentials chain uses the AWS SDK's own STS settings (AWS_STS_REGIONAL_ENDPOINTS, the profile)",
        ),
        ("s3", "max_retries" | "retry_mode") => Ignored(
            "gpustack retries S3 requests with the AWS SDK's standard retry policy (AWS_MAX_ATTEMPTS, AWS_RETRY_MODE set it)",
        ),
        ("s3", "custom_ca_bundle" | "http_proxy" | "https_proxy" | "no_proxy" | "insecure") => {
            Refused(
                "gpustack's S3 client trusts the system's certificate authorities, always verifies them and uses no proxy settings of the stack's",
            )
        }
        ("s3", "use_fips_endpoint" | "use_dualstack_endpoint") => Refused(
            "gpustack's S3 client resolves endpoints as the AWS SDK does (AWS_USE_FIPS_ENDPOINT, AWS_USE_DUALSTACK_ENDPOINT set them); to name one, use endpoints.s3",
        ),
        ("kubernetes", "secret_suffix") => Honoured("secret_suffix"),
        ("kubernetes", "namespace") => Honoured("namespace"),
        ("kubernetes", "config_path") => Honoured("config_path"),
        ("kubernetes", "config_context") => Honoured("context"),
        ("kubernetes", "in_cluster_config") => Honoured("in_cluster"),
        ("kubernetes", "config_paths") => Honoured("config_paths"),
        ("kubernetes", "load_config_file") => Special,
        (
            "kubernetes",
            "host"
            | "username"
            | "password"
            | "token"
            | "client_certificate"
            | "client_key"
            | "cluster_ca_certificate"
            | "exec"
            | "insecure",
        ) => Refused(CLUSTER_CREDENTIALS),
        ("kubernetes", "config_context_auth_info") => Honoured("user"),
        ("kubernetes", "config_context_cluster") => Honoured("cluster"),
        ("kubernetes", "proxy_url") => {
            Refused("set proxy-url on the cluster in the kubeconfig, which gpustack honours")
        }
        ("kubernetes", "labels") => Ignored(
            "gpustack labels its state Secrets with its own labels only (app.kubernetes.io/managed-by, gpustack.dev/state)",
        ),
        ("local", "path") => Honoured("path"),
        ("local", "workspace_dir") => Honoured("workspace_dir"),
        _ => return None,
    })
}

/// Every argument name of a Terraform backend kind, for suggestions.
pub fn backend_arguments(kind: &str) -> &'static [&'static str] {
    match kind {
        "s3" => &[
            "bucket",
            "key",
            "region",
            "profile",
            "use_path_style",
            "endpoint",
            "endpoints",
            "force_path_style",
            "use_lockfile",
            "dynamodb_table",
            "dynamodb_endpoint",
            "encrypt",
            "kms_key_id",
            "sse_customer_key",
            "acl",
            "access_key",
            "secret_key",
            "token",
            "shared_config_files",
            "shared_credentials_file",
            "shared_credentials_files",
            "assume_role",
            "assume_role_with_web_identity",
            "role_arn",
            "workspace_key_prefix",
            "skip_credentials_validation",
            "skip_requesting_account_id",
            "skip_region_validation",
            "allowed_account_ids",
            "forbidden_account_ids",
            "skip_metadata_api_check",
            "ec2_metadata_service_endpoint",
            "ec2_metadata_service_endpoint_mode",
            "skip_s3_checksum",
            "iam_endpoint",
            "sts_endpoint",
            "sts_region",
            "max_retries",
            "retry_mode",
            "custom_ca_bundle",
            "http_proxy",
            "https_proxy",
            "no_proxy",
            "insecure",
            "use_fips_endpoint",
            "use_dualstack_endpoint",
        ],
        "kubernetes" => &[
            "secret_suffix",
            "namespace",
            "config_path",
            "config_paths",
            "config_context",
            "in_cluster_config",
            "load_config_file",
            "host",
            "username",
            "password",
            "token",
            "client_certificate",
            "client_key",
            "cluster_ca_certificate",
            "exec",
            "insecure",
            "config_context_auth_info",
            "config_context_cluster",
            "proxy_url",
            "labels",
        ],
        "local" => &["path", "workspace_dir"],
        _ => &[],
    }
}

/// What `endpoints = { NAME = ... }` of an S3 backend is to gpustack.
pub fn s3_endpoint(name: &str) -> Option<BackendArgument> {
    use BackendArgument::*;
    Some(match name {
        "s3" => Honoured("endpoint"),
        "dynamodb" => {
            Ignored("gpustack never calls DynamoDB: it locks with a lock object in the bucket")
        }
        "iam" | "sts" | "sso" => Refused(
            "gpustack's S3 client calls only S3; its credentials chain uses the AWS SDK's own endpoint settings",
        ),
        _ => return None,
    })
}

/// A Terraform provider gpustack does not serve, as the types it owns are recognised by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignProvider {
    /// Its source address.
    pub source: &'static str,
    /// Whether it manages what a GPU stack builds on and leaves to Terraform (clusters,
    /// identity, networks), whose outputs `terraform_remote_state` reads; otherwise a utility
    /// provider (random values, timers, HTTP reads).
    pub infrastructure: bool,
}

/// The Terraform providers gpustack does not serve, by the prefix of their type names.
const FOREIGN_PROVIDERS: &[(&str, &str, bool)] = &[
    ("aws_", "hashicorp/aws", true),
    ("azurerm_", "hashicorp/azurerm", true),
    ("azuread_", "hashicorp/azuread", true),
    ("azapi_", "azure/azapi", true),
    ("google_", "hashicorp/google", true),
    ("oci_", "oracle/oci", true),
    ("alicloud_", "aliyun/alicloud", true),
    ("ibm_", "IBM-Cloud/ibm", true),
    ("digitalocean_", "digitalocean/digitalocean", true),
    ("linode_", "linode/linode", true),
    ("vsphere_", "hashicorp/vsphere", true),
    ("cloudflare_", "cloudflare/cloudflare", true),
    ("vault_", "hashicorp/vault", true),
    ("github_", "integrations/github", true),
    ("tls_", "hashicorp/tls", false),
    ("http", "hashicorp/http", false),
    ("external", "hashicorp/external", false),
    ("archive_", "hashicorp/archive", false),
    ("cloudinit_", "hashicorp/cloudinit", false),
    ("random_", "hashicorp/random", false),
    ("null_", "hashicorp/null", false),
    ("time_", "hashicorp/time", false),
];

/// Types of foreign providers that gpustack will serve itself: their own diagnostics say what
/// it serves instead, not that they belong elsewhere.
const SERVED_LATER: &[&str] = &[
    "azurerm_kubernetes_cluster_node_pool",
    "aws_eks_node_group",
    "google_container_node_pool",
];

/// The kubernetes provider's types whose API Kubernetes no longer serves (gpustack's test
/// world runs 1.36): the API, the release that removed it, and what to write instead.
const REMOVED_APIS: &[(&str, &str, &str, &str)] = &[
    (
        "kubernetes_ingress",
        "networking.k8s.io/v1beta1 Ingress",
        "1.22",
        "kubernetes_ingress_v1",
    ),
    (
        "kubernetes_csi_driver",
        "storage.k8s.io/v1beta1 CSIDriver",
        "1.22",
        "kubernetes_csi_driver_v1",
    ),
    (
        "kubernetes_validating_webhook_configuration",
        "admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration",
        "1.22",
        "kubernetes_validating_webhook_configuration_v1",
    ),
    (
        "kubernetes_horizontal_pod_autoscaler",
        "autoscaling/v2beta2 HorizontalPodAutoscaler (the provider's choice once a metric is set)",
        "1.26",
        "kubernetes_horizontal_pod_autoscaler_v2 (or _v1 for a CPU target alone)",
    ),
    (
        "kubernetes_horizontal_pod_autoscaler_v2beta2",
        "autoscaling/v2beta2 HorizontalPodAutoscaler",
        "1.26",
        "kubernetes_horizontal_pod_autoscaler_v2",
    ),
    (
        "kubernetes_pod_security_policy",
        "policy/v1beta1 PodSecurityPolicy",
        "1.25",
        "Pod Security Admission: the pod-security.kubernetes.io/ labels of a kubernetes_namespace_v1",
    ),
    (
        "kubernetes_pod_security_policy_v1beta1",
        "policy/v1beta1 PodSecurityPolicy",
        "1.25",
        "Pod Security Admission: the pod-security.kubernetes.io/ labels of a kubernetes_namespace_v1",
    ),
];

/// Why a type of a provider gpustack serves (kubernetes, helm, kubectl) is not served: the
/// Terraform provider it belongs to and what to write instead; `None` for other names.
pub fn unserved_type(type_name: &str, data: bool) -> Option<String> {
    if let Some((_, api, removed, instead)) = REMOVED_APIS
        .iter()
        .find(|(name, ..)| *name == type_name)
        .filter(|(name, ..)| !data || *name == "kubernetes_ingress")
    {
        return Some(format!(
            "{type_name} of Terraform's hashicorp/kubernetes provider writes {api}, which Kubernetes removed in {removed}: no cluster gpustack supports serves it. Write {instead}."
        ));
    }
    let (source, instead) = if type_name.starts_with("kubernetes_") {
        (
            "hashicorp/kubernetes",
            if data {
                "read the object with data \"kubernetes_resource\" (any kind, by name) or \"kubernetes_resources\" (by namespace and selectors)"
            } else {
                "write the object as a kubernetes_manifest (the same server-side apply, identity and ownership rules)"
            },
        )
    } else if type_name.starts_with("helm_") {
        (
            "hashicorp/helm",
            if data {
                "render a chart with data \"helm_template\""
            } else {
                "install the chart with helm_release, or render it with data \"helm_template\""
            },
        )
    } else if type_name.starts_with("kubectl_") {
        (
            "gavinbunney/kubectl",
            "write the object as a kubectl_manifest or a kubernetes_manifest",
        )
    } else {
        return None;
    };
    let what = if data { "data source" } else { "resource type" };
    Some(format!(
        "{type_name} is a {what} of Terraform's {source} provider that gpustack does not serve yet: {instead}."
    ))
}

/// The resource types of Terraform's hashicorp/kubernetes provider (v3, and the types v2 had
/// that v3 removed), as its registry documents list them: a name among them that gpustack does not serve is answered "not
/// served yet", never with a served type's name as a spelling suggestion.
pub const KUBERNETES_RESOURCES: &[&str] = &[
    "kubernetes_annotations",
    "kubernetes_api_service",
    "kubernetes_api_service_v1",
    "kubernetes_certificate_signing_request",
    "kubernetes_certificate_signing_request_v1",
    "kubernetes_cluster_role",
    "kubernetes_cluster_role_v1",
    "kubernetes_cluster_role_binding",
    "kubernetes_cluster_role_binding_v1",
    "kubernetes_config_map",
    "kubernetes_config_map_v1",
    "kubernetes_config_map_v1_data",
    "kubernetes_cron_job",
    "kubernetes_cron_job_v1",
    "kubernetes_csi_driver",
    "kubernetes_csi_driver_v1",
    "kubernetes_daemonset",
    "kubernetes_daemon_set_v1",
    "kubernetes_default_service_account",
    "kubernetes_default_service_account_v1",
    "kubernetes_deployment",
    "kubernetes_deployment_v1",
    "kubernetes_endpoint_slice_v1",
    "kubernetes_endpoints",
    "kubernetes_endpoints_v1",
    "kubernetes_env",
    "kubernetes_horizontal_pod_autoscaler",
    "kubernetes_horizontal_pod_autoscaler_v1",
    "kubernetes_horizontal_pod_autoscaler_v2",
    "kubernetes_horizontal_pod_autoscaler_v2beta2",
    "kubernetes_ingress",
    "kubernetes_ingress_v1",
    "kubernetes_ingress_class",
    "kubernetes_ingress_class_v1",
    "kubernetes_job",
    "kubernetes_job_v1",
    "kubernetes_labels",
    "kubernetes_limit_range",
    "kubernetes_limit_range_v1",
    "kubernetes_manifest",
    "kubernetes_mutating_webhook_configuration",
    "kubernetes_mutating_webhook_configuration_v1",
    "kubernetes_namespace",
    "kubernetes_namespace_v1",
    "kubernetes_network_policy",
    "kubernetes_network_policy_v1",
    "kubernetes_node_taint",
    "kubernetes_persistent_volume",
    "kubernetes_persistent_volume_v1",
    "kubernetes_persistent_volume_claim",
    "kubernetes_persistent_volume_claim_v1",
    "kubernetes_pod",
    "kubernetes_pod_v1",
    "kubernetes_pod_disruption_budget",
    "kubernetes_pod_disruption_budget_v1",
    "kubernetes_pod_security_policy",
    "kubernetes_pod_security_policy_v1beta1",
    "kubernetes_priority_class",
    "kubernetes_priority_class_v1",
    "kubernetes_replication_controller",
    "kubernetes_replication_controller_v1",
    "kubernetes_resource_quota",
    "kubernetes_resource_quota_v1",
    "kubernetes_role",
    "kubernetes_role_v1",
    "kubernetes_role_binding",
    "kubernetes_role_binding_v1",
    "kubernetes_runtime_class_v1",
    "kubernetes_secret",
    "kubernetes_secret_v1",
    "kubernetes_secret_v1_data",
    "kubernetes_service",
    "kubernetes_service_v1",
    "kubernetes_service_account",
    "kubernetes_service_account_v1",
    "kubernetes_stateful_set",
    "kubernetes_stateful_set_v1",
    "kubernetes_storage_class",
    "kubernetes_storage_class_v1",
    "kubernetes_token_request_v1",
    "kubernetes_validating_admission_policy_v1",
    "kubernetes_validating_webhook_configuration",
    "kubernetes_validating_webhook_configuration_v1",
];

/// The data sources of Terraform's hashicorp/kubernetes provider (v3, and v2's).
pub const KUBERNETES_DATA_SOURCES: &[&str] = &[
    "kubernetes_all_namespaces",
    "kubernetes_config_map",
    "kubernetes_config_map_v1",
    "kubernetes_endpoint_slice_v1",
    "kubernetes_endpoints_v1",
    "kubernetes_ingress",
    "kubernetes_ingress_v1",
    "kubernetes_mutating_webhook_configuration_v1",
    "kubernetes_namespace",
    "kubernetes_namespace_v1",
    "kubernetes_nodes",
    "kubernetes_persistent_volume_claim",
    "kubernetes_persistent_volume_claim_v1",
    "kubernetes_persistent_volume_v1",
    "kubernetes_pod",
    "kubernetes_pod_v1",
    "kubernetes_resource",
    "kubernetes_resources",
    "kubernetes_secret",
    "kubernetes_secret_v1",
    "kubernetes_server_version",
    "kubernetes_service",
    "kubernetes_service_v1",
    "kubernetes_service_account",
    "kubernetes_service_account_v1",
    "kubernetes_storage_class",
    "kubernetes_storage_class_v1",
];

/// The data sources of gavinbunney/kubectl.
pub const KUBECTL_DATA_SOURCES: &[&str] = &[
    "kubectl_file_documents",
    "kubectl_filename_list",
    "kubectl_path_documents",
    "kubectl_server_version",
];

/// Whether `type_name` is a type Terraform's kubernetes or kubectl provider documents.
pub fn is_documented_type(type_name: &str, data: bool) -> bool {
    match data {
        true => {
            KUBERNETES_DATA_SOURCES.contains(&type_name)
                || KUBECTL_DATA_SOURCES.contains(&type_name)
        }
        false => KUBERNETES_RESOURCES.contains(&type_name) || type_name == "kubectl_manifest",
    }
}

/// The Terraform provider a type gpustack does not serve belongs to, when gpustack knows it.
pub fn foreign_provider(type_name: &str) -> Option<ForeignProvider> {
    if SERVED_LATER.contains(&type_name) {
        return None;
    }
    FOREIGN_PROVIDERS
        .iter()
        .find(|(prefix, _, _)| {
            type_name.starts_with(prefix)
                && (prefix.ends_with('_') || type_name.len() == prefix.len())
        })
        .map(|&(_, source, infrastructure)| ForeignProvider {
            source,
            infrastructure,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of the lists has a verdict, and no verdict names an argument the lists
    /// leave out: the two say the same.
    #[test]
    fn every_listed_backend_argument_has_a_verdict() {
        for kind in ["s3", "kubernetes", "local"] {
            for name in backend_arguments(kind) {
                assert!(backend_argument(kind, name).is_some(), "{kind}.{name}");
            }
        }
        assert_eq!(backend_argument("s3", "lock_ttl"), None);
        assert_eq!(backend_argument("gcs", "bucket"), None);
    }

    #[test]
    fn types_are_attributed_to_their_providers() {
        let source = |t: &str| foreign_provider(t).map(|p| p.source);
        assert_eq!(source("aws_iam_role"), Some("hashicorp/aws"));
        assert_eq!(
            source("azurerm_kubernetes_cluster"),
            Some("hashicorp/azurerm")
        );
        assert_eq!(source("http"), Some("hashicorp/http"));
        assert_eq!(source("httpx_thing"), None);
        assert_eq!(source("aks_nodepool"), None);
        assert_eq!(source("aws_eks_node_group"), None);
        assert_eq!(source("kubernetes_config_map_v1"), None);
    }
}
