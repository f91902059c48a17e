//! What every state backend offers: read and write the state whole, lock it, and keep small
//! notes beside it (what a drift webhook last reported).
//!
//! **Invariant:** a write never silently replaces a state that someone else wrote since this
//! process read it: remote backends compare-and-swap on a version the store gives (a
//! resourceVersion, an ETag) and fail with [`StateError::Conflict`] instead.

use crate::{DecodeStateError, LockInfo, State};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
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

/// Holds a lock while it lives. Dropping it (or [`LockGuard::release`]) stops the renewal, if
/// the backend renews, and releases the lock, so that every exit path unlocks.
pub struct LockGuard {
    release: Option<BoxFuture<'static, Result<(), String>>>,
    renewal: Option<tokio::task::JoinHandle<()>>,
    lost: Arc<AtomicBool>,
    /// Said to the user once the lock is held, e.g. whose expired lock was taken over.
    pub notice: Option<String>,
}

impl LockGuard {
    pub fn new(release: BoxFuture<'static, Result<(), String>>) -> Self {
        Self {
            release: Some(release),
            renewal: None,
            lost: Arc::new(AtomicBool::new(false)),
            notice: None,
        }
    }

    /// `renewal` keeps the lock alive and sets `lost` once it can no longer vouch for it.
    pub fn renewing(mut self, renewal: tokio::task::JoinHandle<()>, lost: Arc<AtomicBool>) -> Self {
        self.renewal = Some(renewal);
        self.lost = lost;
        self
    }

    pub fn with_notice(mut self, notice: Option<String>) -> Self {
        self.notice = notice;
        self
    }

    /// Becomes true when the lock was taken by someone else or could not be renewed in time:
    /// the run must stop starting operations.
    pub fn lost(&self) -> Arc<AtomicBool> {
        self.lost.clone()
    }

    /// Stops renewing and releases the lock.
    pub async fn release(mut self) {
        self.finish().await;
    }

    async fn finish(&mut self) {
        // The renewal must be over before the release reads the lock's version, or a renewal
        // in flight changes it under the release's conditional delete.
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
            let _ = renewal.await;
        }
        if let Some(release) = self.release.take() {
            match tokio::time::timeout(Duration::from_secs(15), release).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("Warning: could not release the state lock: {e}"),
                Err(_) => eprintln!(
                    "Warning: releasing the state lock took more than 15s; it stays until its TTL expires or someone runs force-unlock"
                ),
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.release.is_none() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(self.finish()));
            }
            // A current-thread runtime cannot block on itself: release in the background.
            Ok(handle) => {
                let mut rest = LockGuard {
                    release: self.release.take(),
                    renewal: self.renewal.take(),
                    lost: self.lost.clone(),
                    notice: None,
                };
                handle.spawn(async move { rest.finish().await });
            }
            Err(_) => match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(self.finish()),
                Err(e) => eprintln!("Warning: could not release the state lock: {e}"),
            },
        }
    }
}

/// Runs a backend future to completion from synchronous code inside a multi-threaded runtime
/// (the thread is handed to blocking work first), or outside any runtime.
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
    Kubernetes(crate::KubernetesConfig),
    S3(crate::S3Config),
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

    /// Whether two configurations name the same state (settings such as `lock_ttl`, a
    /// context or a profile may differ): then nothing needs migrating.
    pub fn same_location(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Local { path: a }, Self::Local { path: b }) => {
                let default = ".gpustack/state.json";
                a.as_deref().unwrap_or(default).trim_start_matches("./")
                    == b.as_deref().unwrap_or(default).trim_start_matches("./")
            }
            (Self::Kubernetes(a), Self::Kubernetes(b)) => {
                a.namespace == b.namespace && a.secret_suffix == b.secret_suffix
            }
            (Self::S3(a), Self::S3(b)) => {
                a.bucket == b.bucket && a.key == b.key && a.endpoint == b.endpoint
            }
            _ => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Local { .. } => "local",
            Self::Kubernetes(_) => "kubernetes",
            Self::S3(_) => "s3",
        }
    }
}
