//! What every state backend offers: read and write the state whole, lock it, and keep small
//! notes beside it (what a drift webhook last reported).
//!
//! **Invariant:** a write never silently replaces a state that someone else wrote since this
//! process read it: remote backends compare-and-swap on a version the store gives (a
//! resourceVersion, an ETag) and fail with [`StateError::Conflict`] instead.

use crate::{DecodeStateError, LockInfo, State};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read the state at {location}")]
    Read { location: String, source: BoxError },
    #[error("the state at {location} is damaged")]
    Decode {
        location: String,
        source: DecodeStateError,
    },
    #[error("cannot write the state at {location}")]
    Write { location: String, source: BoxError },
    #[error(
        "the state at {location} was written by someone else since this run read it ({detail}); it was not overwritten. Run again to plan from the new state"
    )]
    Conflict { location: String, detail: String },
    #[error("cannot connect to the {kind} backend")]
    Connect {
        kind: &'static str,
        source: BoxError,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the state is locked by {} (pid {}) for {} since {}; lock ID {}", .0.who, .0.pid, .0.operation, .0.created, .0.id)]
    Held(Box<LockInfo>),
    #[error("cannot lock the state at {location}")]
    Backend { location: String, source: BoxError },
    #[error("the state is not locked")]
    NotLocked,
    #[error("the lock ID {given} does not match the lock held by {} (pid {}) for {} since {}; lock ID {}", .held.who, .held.pid, .held.operation, .held.created, .held.id)]
    WrongId { given: String, held: Box<LockInfo> },
}

/// Holds a lock while it lives. Dropping it stops the renewal (if the backend renews) and
/// releases the lock, so that every exit path unlocks.
pub struct LockGuard {
    release: Option<BoxFuture<'static, ()>>,
    renewal: Option<tokio::task::JoinHandle<()>>,
    /// Said to the user once the lock is held, e.g. whose expired lock was taken over.
    pub notice: Option<String>,
}

impl LockGuard {
    pub fn new(release: BoxFuture<'static, ()>) -> Self {
        Self {
            release: Some(release),
            renewal: None,
            notice: None,
        }
    }

    pub(crate) fn renewing(mut self, renewal: tokio::task::JoinHandle<()>) -> Self {
        self.renewal = Some(renewal);
        self
    }

    pub(crate) fn with_notice(mut self, notice: Option<String>) -> Self {
        self.notice = notice;
        self
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        if let Some(release) = self.release.take() {
            block_on(release);
        }
    }
}

/// Runs a backend future to completion from synchronous code. Inside a (multi-threaded)
/// runtime it hands the thread to blocking work first; outside one, only futures that need no
/// runtime (the local backend's) can complete, and remote backends are only used inside one.
pub fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(future)),
        Err(_) => futures::executor::block_on(future),
    }
}

/// A place the state lives.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Where, for messages: `.gpustack/state.json`, `Secret gpustack-state-prod in namespace gpustack`.
    fn location(&self) -> String;

    /// `None` when nothing has been written yet.
    async fn read(&self) -> Result<Option<State>, StateError>;

    /// Replaces the state whole: readers see the old one or the new one, never a mix.
    async fn write(&self, state: &State) -> Result<(), StateError>;

    /// Takes the lock, retrying until `timeout` while someone else holds it.
    async fn lock(&self, info: LockInfo, timeout: Duration) -> Result<LockGuard, LockError>;

    /// Releases a lock by its ID, whoever holds it.
    async fn force_unlock(&self, id: &str) -> Result<LockInfo, LockError>;

    /// A small named document kept beside the state (never part of it).
    async fn read_note(&self, name: &str) -> Result<Option<Vec<u8>>, StateError>;

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError>;
}

/// A backend block's settings, as written in `gpustack { backend "KIND" { ... } }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum BackendConfig {
    Local {
        #[serde(default)]
        path: Option<String>,
    },
    Kubernetes(crate::kubernetes::KubernetesConfig),
    S3(crate::s3::S3Config),
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self::Local { path: None }
    }
}

impl BackendConfig {
    /// From the block's kind and its (literal) attributes.
    pub fn from_block(
        kind: &str,
        attributes: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, String> {
        let mut object = attributes;
        object.insert("kind".into(), kind.into());
        serde_json::from_value(serde_json::Value::Object(object)).map_err(|e| e.to_string())
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Local { .. } => "local",
            Self::Kubernetes(_) => "kubernetes",
            Self::S3(_) => "s3",
        }
    }

    /// Connects to the backend. `stack_dir` anchors relative local paths.
    pub async fn open(&self, stack_dir: &Path) -> Result<Box<dyn Backend>, StateError> {
        Ok(match self {
            Self::Local { path } => {
                Box::new(crate::LocalBackend::for_stack(stack_dir, path.as_deref()))
            }
            Self::Kubernetes(config) => {
                Box::new(crate::kubernetes::KubernetesBackend::connect(config).await?)
            }
            Self::S3(config) => Box::new(crate::s3::S3Backend::connect(config).await?),
        })
    }
}
