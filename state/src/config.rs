//! The settings of the remote backends, as a `backend` block writes them. They are part of
//! the format (recorded in `.gpustack/backend.json`) even where the backends themselves are
//! not compiled in.

use serde::{Deserialize, Serialize};

/// `backend "kubernetes"`: Secrets of a namespace, locked with a Lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    pub namespace: String,
    pub secret_suffix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// Kubeconfig files merged in order, as kubectl merges `$KUBECONFIG`'s; `config_path`,
    /// when given, is read instead (as Terraform's backend does).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The kubeconfig cluster and user that replace the context's own (Terraform's
    /// `config_context_cluster` and `config_context_auth_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_cluster: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_ttl: Option<String>,
}

impl KubernetesConfig {
    /// The kubeconfig files this backend reads: `config_path`, else `config_paths`; none for
    /// `$KUBECONFIG`'s (else `~/.kube/config`).
    pub fn kubeconfig_files(&self) -> Vec<String> {
        match &self.config_path {
            Some(path) => vec![path.clone()],
            None => self.config_paths.clone(),
        }
    }
}

/// `backend "s3"`: one object, locked with a conditional write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    pub bucket: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_path_style: Option<bool>,
    /// Where the states of workspaces other than `default` live: `PREFIX/WORKSPACE/KEY`
    /// (Terraform's default prefix is `env:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_key_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_ttl: Option<String>,
}
