//! The remote state backends, and the one place that turns a backend block into a backend.
//!
//! `kubernetes` keeps the state in Secrets and locks with a Lease; `s3` keeps it in an object
//! and locks with conditional writes. The state format, the [`Backend`] trait and the local
//! backend live in `gpustack-state`, which names none of these: the binary opens a backend
//! through [`open`].
//!
//! **Invariant:** every remote write compares-and-swaps on a version the store gave this
//! process (see each backend's module).

pub mod kms;
pub mod kubernetes;
mod remote;
pub mod s3;
pub mod terraform_state;

use gpustack_state::encryption::{
    EncryptionConfig, EncryptionError, Encryptions, KeyProviderConfig,
};
use gpustack_state::{Backend, BackendConfig, Encryption, LocalBackend, StateError};
use std::path::Path;
use std::sync::Arc;

/// Connects to the backend a configuration names. `stack_dir` anchors relative local paths.
pub async fn open(
    config: &BackendConfig,
    stack_dir: &Path,
) -> Result<Box<dyn Backend>, StateError> {
    open_encrypted(
        config,
        stack_dir,
        Arc::new(Encryption::none(gpustack_state::encryption::Target::State)),
    )
    .await
}

/// As [`open`], the state written and read through `encryption`.
pub async fn open_encrypted(
    config: &BackendConfig,
    stack_dir: &Path,
    encryption: Arc<Encryption>,
) -> Result<Box<dyn Backend>, StateError> {
    Ok(match config {
        BackendConfig::Local { path, .. } => Box::new(
            LocalBackend::for_stack(stack_dir, path.as_deref()).with_encryption(encryption),
        ),
        BackendConfig::Kubernetes(config) => Box::new(
            kubernetes::KubernetesBackend::connect(config)
                .await?
                .with_encryption(encryption),
        ),
        BackendConfig::S3(config) => Box::new(
            s3::S3Backend::connect(config)
                .await?
                .with_encryption(encryption),
        ),
    })
}

/// The workspaces a backend holds states of: `default` first (it always exists, as in
/// Terraform), then the others in name order, found where [`BackendConfig::for_workspace`]
/// puts them.
pub async fn workspaces(
    config: &BackendConfig,
    stack_dir: &Path,
) -> Result<Vec<String>, StateError> {
    let mut found = match config {
        BackendConfig::Local {
            path,
            workspace_dir,
        } => {
            let dir = stack_dir.join(
                workspace_dir
                    .as_deref()
                    .unwrap_or(gpustack_state::DEFAULT_WORKSPACE_DIR),
            );
            let file = path
                .as_deref()
                .unwrap_or(gpustack_state::DEFAULT_LOCAL_STATE)
                .rsplit('/')
                .next()
                .unwrap_or("state.json")
                .to_owned();
            std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter(|e| e.path().join(&file).is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        }
        BackendConfig::S3(s3) => {
            let prefix = s3
                .workspace_key_prefix
                .as_deref()
                .unwrap_or(gpustack_state::DEFAULT_WORKSPACE_KEY_PREFIX);
            s3::S3Backend::connect(s3).await?.workspaces(prefix).await?
        }
        BackendConfig::Kubernetes(k) => {
            kubernetes::KubernetesBackend::connect(k)
                .await?
                .workspaces()
                .await?
        }
    };
    found.retain(|w| w != gpustack_state::DEFAULT_WORKSPACE);
    found.sort();
    found.dedup();
    found.insert(0, gpustack_state::DEFAULT_WORKSPACE.to_owned());
    Ok(found)
}

/// A key provider kind this build makes none of.
#[derive(Debug, thiserror::Error)]
#[error("no key provider of kind {kind}")]
struct UnknownKeyProvider {
    kind: &'static str,
}

/// The encryption of states and plans an `encryption` block configures, with the key
/// providers that reach a network (AWS KMS) made here.
pub fn encryptions(config: &EncryptionConfig) -> Result<Encryptions, EncryptionError> {
    Encryptions::new(config, &|_, provider| match provider {
        KeyProviderConfig::AwsKms(kms) => Ok(Arc::new(kms::KmsProvider::new(kms.clone())?)),
        other => Err(Box::new(UnknownKeyProvider { kind: other.kind() })),
    })
}
