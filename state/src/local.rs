//! The local backend: `.gpustack/state.json` next to the stack.
//!
//! **Invariant:** the state file is only ever replaced whole: written to a temporary file,
//! synced, then renamed over the old one, whose previous content is kept as
//! `state.json.backup`. A crash at any point leaves either the old or the new state, both
//! parseable. Files are created with mode 0600: state holds sensitive values.

use crate::backend::{Backend, LockError, LockGuard, StateError};
use crate::encryption::{Encryption, Target};
use crate::{LockInfo, State};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct LocalBackend {
    path: PathBuf,
    /// Whether this run already saved the state it found as `.backup`.
    backed_up: std::sync::atomic::AtomicBool,
    encryption: std::sync::Arc<Encryption>,
}

/// Removes our own lock file: after force-unlock someone else may hold the lock.
fn release(path: &Path, id: &str) {
    if read_lock(path).is_some_and(|held| held.id == id) {
        let _ = std::fs::remove_file(path);
    }
}

fn read_lock(path: &Path) -> Option<LockInfo> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

impl LocalBackend {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            backed_up: std::sync::atomic::AtomicBool::new(false),
            encryption: std::sync::Arc::new(Encryption::none(Target::State)),
        }
    }

    /// States written encrypted, and read through the same configuration.
    pub fn with_encryption(mut self, encryption: std::sync::Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// `<stack>/.gpustack/state.json`, or `path` from the backend block (relative to the stack).
    pub fn for_stack(stack_dir: &Path, configured: Option<&str>) -> Self {
        match configured {
            Some(p) => Self::new(stack_dir.join(p)),
            None => Self::new(stack_dir.join(".gpustack").join("state.json")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn note_path(&self, name: &str) -> PathBuf {
        self.path.with_file_name(name)
    }

    fn lock_path(&self) -> PathBuf {
        with_suffix(&self.path, ".lock")
    }

    fn location_of(&self) -> String {
        self.path.display().to_string()
    }

    pub fn read_sync(&self) -> Result<Option<State>, StateError> {
        crate::block_on(self.read_async())
    }

    async fn read_async(&self) -> Result<Option<State>, StateError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                let json =
                    self.encryption
                        .open(&bytes)
                        .await
                        .map_err(|source| StateError::Read {
                            location: self.location_of(),
                            source: source.into(),
                        })?;
                State::decode(&json)
                    .map(Some)
                    .map_err(|source| StateError::Decode {
                        location: self.location_of(),
                        source,
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Read {
                location: self.location_of(),
                source: source.into(),
            }),
        }
    }

    pub fn write_sync(&self, state: &State) -> Result<(), StateError> {
        crate::block_on(self.write_async(state))
    }

    async fn write_async(&self, state: &State) -> Result<(), StateError> {
        let bytes = self
            .encryption
            .seal(state.encode(), None)
            .await
            .map_err(|source| StateError::Write {
                location: self.location_of(),
                source: source.into(),
            })?;
        let err = |source: std::io::Error| StateError::Write {
            location: self.location_of(),
            source: source.into(),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        // The backup is the state as this run found it, taken at its first write (as
        // Terraform's .backup): one copy per run, not one per change.
        if self.path.exists()
            && !self
                .backed_up
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            // Copied aside and renamed, so that a crash never leaves half a backup.
            let backup = with_suffix(&self.path, ".backup");
            let partial = with_suffix(&self.path, ".backup.tmp");
            std::fs::copy(&self.path, &partial).map_err(err)?;
            restrict(&partial).map_err(err)?;
            std::fs::rename(&partial, &backup).map_err(err)?;
        }
        let tmp = with_suffix(&self.path, &format!(".tmp-{}", std::process::id()));
        let mut file = private_file(&tmp).map_err(err)?;
        file.write_all(&bytes).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(err)?;
        if let Some(dir) = self.path.parent()
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Takes the lock, retrying until `timeout` while someone else holds it.
    pub async fn lock_async(
        &self,
        info: LockInfo,
        timeout: Duration,
    ) -> Result<LockGuard, LockError> {
        let path = self.lock_path();
        let deadline = Instant::now() + timeout;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| LockError::Backend {
                location: path.display().to_string(),
                source: source.into(),
            })?;
        }
        // The lock file appears complete or not at all: it is written aside, then hard-linked
        // into place, which fails atomically when another holder's file is already there.
        let tmp = with_suffix(&path, &format!(".{}", info.id));
        {
            let mut file = private_file(&tmp).map_err(|source| LockError::Backend {
                location: tmp.display().to_string(),
                source: source.into(),
            })?;
            let json = serde_json::to_vec_pretty(&info).unwrap_or_default();
            file.write_all(&json)
                .and_then(|()| file.sync_all())
                .map_err(|source| LockError::Backend {
                    location: tmp.display().to_string(),
                    source: source.into(),
                })?;
        }
        let result = loop {
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => {
                    let (path, id) = (path.clone(), info.id.clone());
                    break Ok(LockGuard::new(Box::pin(async move {
                        release(&path, &id);
                        Ok(())
                    })));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if Instant::now() >= deadline {
                        break Err(LockError::Held(Box::new(
                            read_lock(&path).unwrap_or_else(LockInfo::unreadable),
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(source) => {
                    break Err(LockError::Backend {
                        location: path.display().to_string(),
                        source: source.into(),
                    });
                }
            }
        };
        let _ = std::fs::remove_file(&tmp);
        result
    }

    pub fn force_unlock_sync(&self, id: &str) -> Result<LockInfo, LockError> {
        let path = self.lock_path();
        let Some(held) = read_lock(&path) else {
            return if path.exists() {
                std::fs::remove_file(&path).map_err(|source| LockError::Backend {
                    location: path.display().to_string(),
                    source: source.into(),
                })?;
                Ok(LockInfo::unreadable())
            } else {
                Err(LockError::NotLocked)
            };
        };
        if held.id != id {
            return Err(LockError::WrongId {
                given: id.to_owned(),
                held: Box::new(held),
            });
        }
        std::fs::remove_file(&path).map_err(|source| LockError::Backend {
            location: path.display().to_string(),
            source: source.into(),
        })?;
        Ok(held)
    }
}

#[async_trait::async_trait]
impl Backend for LocalBackend {
    fn location(&self) -> String {
        self.location_of()
    }

    async fn read(&self) -> Result<Option<State>, StateError> {
        self.read_async().await
    }

    async fn write(&self, state: &State) -> Result<(), StateError> {
        self.write_async(state).await
    }

    async fn lock(&self, info: LockInfo, timeout: Duration) -> Result<LockGuard, LockError> {
        self.lock_async(info, timeout).await
    }

    async fn force_unlock(&self, id: &str) -> Result<LockInfo, LockError> {
        self.force_unlock_sync(id)
    }

    /// Notes live beside the state file.
    async fn read_note(&self, name: &str) -> Result<Option<Vec<u8>>, StateError> {
        let path = self.note_path(name);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StateError::Read {
                location: path.display().to_string(),
                source: e.into(),
            }),
        }
    }

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let path = self.note_path(name);
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = with_suffix(&path, ".tmp");
            private_file(&tmp)?.write_all(bytes)?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| StateError::Write {
            location: path.display().to_string(),
            source: e.into(),
        })
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

fn private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn restrict(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> (tempfile::TempDir, LocalBackend) {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::for_stack(dir.path(), None);
        (dir, backend)
    }

    #[test]
    fn writes_atomically_with_backup_and_private_mode() {
        let (_dir, backend) = backend();
        assert!(backend.read_sync().unwrap().is_none());
        let mut state = State::new("l1", "0.1.0");
        backend.write_sync(&state).unwrap();
        state.serial = 1;
        backend.write_sync(&state).unwrap();
        assert_eq!(backend.read_sync().unwrap().unwrap().serial, 1);
        let backup =
            State::decode(&std::fs::read(with_suffix(backend.path(), ".backup")).unwrap()).unwrap();
        assert_eq!(backup.serial, 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(backend.path())
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o777,
                0o600
            );
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn second_lock_fails_naming_the_holder_and_force_unlock_needs_the_id() {
        let (_dir, backend) = backend();
        let guard = backend
            .lock_async(LockInfo::new("apply"), Duration::ZERO)
            .await
            .unwrap();
        let Err(LockError::Held(held)) = backend
            .lock_async(LockInfo::new("plan"), Duration::from_millis(150))
            .await
        else {
            panic!("second lock must fail")
        };
        assert_eq!(held.operation, "apply");
        assert_eq!(held.pid, std::process::id());
        assert!(matches!(
            backend.force_unlock_sync("wrong"),
            Err(LockError::WrongId { .. })
        ));
        drop(guard);
        assert!(matches!(
            backend.force_unlock_sync(&held.id),
            Err(LockError::NotLocked)
        ));
        let guard = backend
            .lock_async(LockInfo::new("apply"), Duration::ZERO)
            .await
            .unwrap();
        let id = read_lock(&backend.lock_path()).unwrap().id;
        backend.force_unlock_sync(&id).unwrap();
        drop(guard);
    }
}
