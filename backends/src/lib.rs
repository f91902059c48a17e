//! The remote state backends, and the one place that turns a backend block into a backend.
//!
//! `kubernetes` keeps the state in Secrets and locks with a Lease; `s3` keeps it in an object
//! and locks with conditional writes. The state format, the [`Backend`] trait and the local
//! backend live in `gpustack-state`, which names none of these: the binary opens a backend
//! through [`open`].
//!
//! **Invariant:** every remote write compares-and-swaps on a version the store gave this
//! process (see each backend's module).

pub mod kubernetes;
mod remote;
pub mod s3;

use gpustack_state::{Backend, BackendConfig, LocalBackend, StateError};
use std::path::Path;

/// Connects to the backend a configuration names. `stack_dir` anchors relative local paths.
pub async fn open(
    config: &BackendConfig,
    stack_dir: &Path,
) -> Result<Box<dyn Backend>, StateError> {
    Ok(match config {
        BackendConfig::Local { path } => {
            Box::new(LocalBackend::for_stack(stack_dir, path.as_deref()))
        }
        BackendConfig::Kubernetes(config) => {
            Box::new(kubernetes::KubernetesBackend::connect(config).await?)
        }
        BackendConfig::S3(config) => Box::new(s3::S3Backend::connect(config).await?),
    })
}
