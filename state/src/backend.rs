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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    #[error(
        "this run no longer holds the state lock of {location} (it was taken over, force-unlocked or not renewed in time): the state was not written"
    )]
    LockLost { location: String },
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

/// Whether this run may still act as the holder of its lock. Checked before every provider
/// call and every state write of a run that changes things: one atomic load, and for a lock
/// with a deadline one read of the monotonic clock.
///
/// **Invariant:** once lost, a fence stays lost. A remote lock's fence also expires on its
/// own, without any task running, at the deadline its last confirmed renewal vouches for
/// (two thirds of the TTL after that renewal was sent): a process that was paused past it
/// finds the fence lost at its next check, before its renewal task has had a chance to run.
#[derive(Debug)]
pub struct Fence {
    lost: AtomicBool,
    base: Instant,
    /// Nanoseconds after `base` from which the lock can no longer be vouched for; `u64::MAX`
    /// when it has no deadline (the local lock lives as long as the process).
    until: AtomicU64,
}

impl Default for Fence {
    fn default() -> Self {
        Self {
            lost: AtomicBool::new(false),
            base: Instant::now(),
            until: AtomicU64::new(u64::MAX),
        }
    }
}

impl Fence {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The lock is vouched for until `deadline` (a confirmed renewal moves it on).
    pub fn hold_until(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.base).as_nanos();
        self.until.store(
            u64::try_from(nanos).unwrap_or(u64::MAX - 1),
            Ordering::SeqCst,
        );
    }

    pub fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }

    /// True once the lock was taken over, released, force-unlocked, or not renewed in time:
    /// the run must not start another provider call nor write the state.
    pub fn is_lost(&self) -> bool {
        if self.lost.load(Ordering::SeqCst) {
            return true;
        }
        let until = self.until.load(Ordering::SeqCst);
        if until == u64::MAX {
            return false;
        }
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if now >= until {
            self.lose();
            return true;
        }
        false
    }
}

/// The fence of the lock a backend handle took, which that handle's state writes check: a
/// run that lost its lock cannot write the state through it ([`StateError::LockLost`]).
#[derive(Default)]
pub struct WriteFence(std::sync::Mutex<Option<Arc<Fence>>>);

impl WriteFence {
    pub fn arm(&self, fence: Arc<Fence>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(fence);
    }

    pub fn check(&self, location: impl FnOnce() -> String) -> Result<(), StateError> {
        let lost = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|f| f.is_lost());
        if lost {
            return Err(StateError::LockLost {
                location: location(),
            });
        }
        Ok(())
    }
}

type Release = BoxFuture<'static, Result<(), BoxError>>;

/// What releasing a lock takes: the renewal to stop, then the release itself. Behind an async
/// mutex, so that a release from elsewhere (an interrupt) waits for one in progress.
#[derive(Default)]
struct Parts {
    renewal: Option<tokio::task::JoinHandle<()>>,
    release: Option<Release>,
}

/// Holds a lock while it lives. Dropping it (or [`LockGuard::release`]) stops the renewal, if
/// the backend renews, and releases the lock, so that every exit path unlocks.
pub struct LockGuard {
    parts: Arc<tokio::sync::Mutex<Parts>>,
    fence: Arc<Fence>,
    /// Said to the user once the lock is held, e.g. whose expired lock was taken over.
    pub notice: Option<String>,
}

/// Releases a lock from elsewhere than its guard's owner (an interrupt handler); cloneable.
#[derive(Clone)]
pub struct LockHandle {
    parts: Arc<tokio::sync::Mutex<Parts>>,
    fence: Arc<Fence>,
}

impl LockHandle {
    /// Marks the lock lost (nothing more may be written under it), stops renewing and
    /// releases it; waits for a release already in progress. Releasing twice is harmless.
    pub async fn release(&self) {
        self.fence.lose();
        finish(&self.parts).await;
    }
}

impl LockGuard {
    pub fn new(release: Release) -> Self {
        Self {
            parts: Arc::new(tokio::sync::Mutex::new(Parts {
                renewal: None,
                release: Some(release),
            })),
            fence: Fence::new(),
            notice: None,
        }
    }

    /// `renewal` keeps the lock alive (or watches it) and loses `fence` once it can no
    /// longer vouch for it.
    pub fn renewing(mut self, renewal: tokio::task::JoinHandle<()>, fence: Arc<Fence>) -> Self {
        match self.parts.try_lock() {
            Ok(mut parts) => parts.renewal = Some(renewal),
            Err(_) => renewal.abort(),
        }
        self.fence = fence;
        self
    }

    pub fn with_notice(mut self, notice: Option<String>) -> Self {
        self.notice = notice;
        self
    }

    /// Lost when the lock was taken by someone else or could not be renewed in time: the run
    /// must stop starting operations and must not write the state.
    pub fn fence(&self) -> Arc<Fence> {
        self.fence.clone()
    }

    pub fn handle(&self) -> LockHandle {
        LockHandle {
            parts: self.parts.clone(),
            fence: self.fence.clone(),
        }
    }

    /// Stops renewing and releases the lock.
    pub async fn release(self) {
        finish(&self.parts).await;
    }
}

async fn finish(parts: &tokio::sync::Mutex<Parts>) {
    let mut parts = parts.lock().await;
    // The renewal must be over before the release reads the lock's version, or a renewal in
    // flight changes it under the release's conditional delete.
    if let Some(renewal) = parts.renewal.take() {
        renewal.abort();
        let _ = renewal.await;
    }
    if let Some(release) = parts.release.take() {
        match tokio::time::timeout(Duration::from_secs(15), release).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!(
                "Warning: could not release the state lock: {}",
                gpustack_protocol::error_chain(e.as_ref())
            ),
            Err(_) => eprintln!(
                "Warning: releasing the state lock took more than 15s; it stays until someone who waits for it has seen it unrenewed for its TTL, or someone runs force-unlock"
            ),
        }
    }
}

/// A guard dropped in async code blocks its thread on the release. Where other futures are
/// polled on that same thread (a `join_all` inside `block_on`), the nested wait can take the
/// wakeup the outer one was parked for: such code releases with [`LockGuard::release`].
impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Ok(parts) = self.parts.try_lock()
            && parts.release.is_none()
        {
            return;
        }
        let parts = self.parts.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(finish(&parts)));
            }
            // A current-thread runtime cannot block on itself: release in the background.
            Ok(handle) => {
                handle.spawn(async move { finish(&parts).await });
            }
            Err(_) => match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(finish(&parts)),
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

    /// How long a lock no one renews lasts, for a waiter that watches it (remote backends);
    /// `None` when a lock lasts exactly as long as its holder (the local OS lock).
    fn lock_ttl(&self) -> Option<Duration> {
        None
    }

    /// Releases a lock by its ID, whoever holds it.
    async fn force_unlock(&self, id: &str) -> Result<LockInfo, LockError>;

    /// A small named document kept beside the state (never part of it).
    async fn read_note(&self, name: &str) -> Result<Option<Vec<u8>>, StateError>;

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError>;

    /// Deletes the state and what is kept beside it (its backup, its notes): how a workspace
    /// is deleted. The caller holds the lock.
    async fn delete(&self) -> Result<(), StateError>;
}

/// A backend block's settings, as written in `gpustack { backend "KIND" { ... } }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum BackendConfig {
    Local {
        #[serde(default)]
        path: Option<String>,
        /// Where the states of workspaces other than `default` live (Terraform's
        /// `terraform.tfstate.d`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace_dir: Option<String>,
    },
    Kubernetes(crate::KubernetesConfig),
    S3(crate::S3Config),
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self::Local {
            path: None,
            workspace_dir: None,
        }
    }
}

/// The workspace a stack starts in, whose state is where the backend block says.
pub const DEFAULT_WORKSPACE: &str = "default";
/// Where the local backend keeps the other workspaces' states, as Terraform's does.
pub const DEFAULT_WORKSPACE_DIR: &str = "terraform.tfstate.d";
/// What precedes a workspace's name in an S3 key, as in Terraform's S3 backend.
pub const DEFAULT_WORKSPACE_KEY_PREFIX: &str = "env:";
/// The local backend's state file, in its default place.
pub const DEFAULT_LOCAL_STATE: &str = ".gpustack/state.json";

/// Why a name cannot be a workspace's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "\"{0}\" is not a valid workspace name: use letters, digits, '-', '_' and '.', as it becomes part of a path, an S3 key and a Secret's name"
)]
pub struct WorkspaceNameError(pub String);

/// Checks a workspace name: it becomes part of a path, a key and a Kubernetes name.
pub fn check_workspace_name(name: &str) -> Result<(), WorkspaceNameError> {
    let valid = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 90
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(WorkspaceNameError(name.to_owned()))
    }
}

impl BackendConfig {
    /// From the block's kind and its (literal) attributes.
    pub fn from_block(
        kind: &str,
        attributes: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, serde_json::Error> {
        let mut object = attributes;
        object.insert("kind".into(), kind.into());
        serde_json::from_value(serde_json::Value::Object(object))
    }

    /// The configuration of `workspace`'s state: the block's own for `default`; for another,
    /// where Terraform's backend of the same kind keeps it — the local
    /// `terraform.tfstate.d/WORKSPACE/`, S3's `env:/WORKSPACE/KEY`, the Kubernetes Secret
    /// whose suffix begins with the workspace (`gpustack-state-WORKSPACE-SUFFIX`, as
    /// Terraform's `tfstate-WORKSPACE-SUFFIX`).
    pub fn for_workspace(&self, workspace: &str) -> Self {
        if workspace == DEFAULT_WORKSPACE {
            return self.clone();
        }
        match self {
            Self::Local {
                path,
                workspace_dir,
            } => {
                let file = path
                    .as_deref()
                    .unwrap_or(DEFAULT_LOCAL_STATE)
                    .rsplit('/')
                    .next()
                    .unwrap_or("state.json")
                    .to_owned();
                let dir = workspace_dir.as_deref().unwrap_or(DEFAULT_WORKSPACE_DIR);
                Self::Local {
                    path: Some(format!("{dir}/{workspace}/{file}")),
                    workspace_dir: workspace_dir.clone(),
                }
            }
            Self::S3(s3) => {
                let prefix = s3
                    .workspace_key_prefix
                    .as_deref()
                    .unwrap_or(DEFAULT_WORKSPACE_KEY_PREFIX);
                Self::S3(crate::S3Config {
                    key: format!("{prefix}/{workspace}/{}", s3.key),
                    ..s3.clone()
                })
            }
            Self::Kubernetes(k) => Self::Kubernetes(crate::KubernetesConfig {
                secret_suffix: format!("{workspace}-{}", k.secret_suffix),
                ..k.clone()
            }),
        }
    }

    /// Whether two configurations name the same state (settings such as `lock_ttl`, a
    /// context or a profile may differ): then nothing needs migrating.
    pub fn same_location(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Local { path: a, .. }, Self::Local { path: b, .. }) => {
                let default = DEFAULT_LOCAL_STATE;
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
