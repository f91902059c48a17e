//! Terraform's own states, read where Terraform's `s3` and `kubernetes` backends keep them,
//! for `data "terraform_remote_state"`: read only, never locked, never written. The object
//! at `key` in S3; in Kubernetes the Secret `tfstate-WORKSPACE-SUFFIX`, whose `tfstate` key
//! holds the state gzip-compressed (the Secret's data is base64 on the wire, as every
//! Secret's).

use gpustack_state::{BoxError, KubernetesConfig, S3Config};

/// Why a Terraform state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchTerraformStateError {
    #[error("cannot reach the {kind} backend")]
    Connect {
        kind: &'static str,
        source: gpustack_state::StateError,
    },
    #[error("cannot read {location}")]
    Read { location: String, source: BoxError },
    #[error("{location} does not hold a gzip-compressed state under its tfstate key")]
    Decompress {
        location: String,
        source: std::io::Error,
    },
}

/// The object `config.key` of `config.bucket`; `None` when there is none.
pub async fn read_s3(config: &S3Config) -> Result<Option<Vec<u8>>, FetchTerraformStateError> {
    let backend = crate::s3::S3Backend::connect(config)
        .await
        .map_err(|source| FetchTerraformStateError::Connect { kind: "s3", source })?;
    backend
        .get(&config.key)
        .await
        .map(|found| found.map(|(bytes, _)| bytes))
        .map_err(|source| FetchTerraformStateError::Read {
            location: format!("s3://{}/{}", config.bucket, config.key),
            source,
        })
}

/// The state in the Secret `secret` of `config.namespace`; `None` when there is no such
/// Secret, or it holds no state.
pub async fn read_kubernetes(
    config: &KubernetesConfig,
    secret: &str,
) -> Result<Option<Vec<u8>>, FetchTerraformStateError> {
    use k8s_openapi::api::core::v1::Secret;
    let location = format!("the Secret {}/{secret}", config.namespace);
    let client = crate::kubernetes::client(config).await.map_err(|source| {
        FetchTerraformStateError::Connect {
            kind: "kubernetes",
            source,
        }
    })?;
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client, &config.namespace);
    let found = secrets
        .get_opt(secret)
        .await
        .map_err(|e| FetchTerraformStateError::Read {
            location: location.clone(),
            source: gpustack_protocol::error_chain(&e).into(),
        })?;
    let Some(compressed) = found
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove("tfstate"))
    else {
        return Ok(None);
    };
    crate::kubernetes::gunzip(&compressed.0)
        .map(Some)
        .map_err(|source| FetchTerraformStateError::Decompress { location, source })
}
