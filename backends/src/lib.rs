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
    EncryptionConfig, EncryptionError, Encryptions, KeyProvider, KeyProviderConfig,
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
        BackendConfig::Local { path } => Box::new(
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

/// The encryption of states and plans an `encryption` block configures, with the key
/// providers that reach a network (AWS KMS) made here.
pub fn encryptions(config: &EncryptionConfig) -> Result<Encryptions, EncryptionError> {
    Encryptions::new(config, &|_, provider| match provider {
        KeyProviderConfig::AwsKms(kms) => {
            kms::KmsProvider::new(kms.clone()).map(|p| Arc::new(p) as Arc<dyn KeyProvider>)
        }
        other => Err(format!("no key provider of kind {}", other.kind())),
    })
}
