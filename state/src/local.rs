//! The local backend: `.gpustack/state.json` next to the stack.
//!
//! **Invariant:** the state file is only ever replaced whole: written to a temporary file,
//! synced, then renamed over the old one, whose previous content is kept as
//! `state.json.backup`. A crash at any point leaves either the old or the new state, both
//! parseable. Every file this backend writes beside the state (the temporary file, the backup,
//! notes) is created exclusively under a random name in the state's directory, mode 0600, and
//! renamed into place: a symlink planted at any of those names is replaced, never followed
//! (`tests::no_file_is_written_through_a_symlink`).
//!
//! **Invariant:** the lock is an OS lock (`flock`) on `state.json.lock`, held by the process
//! through its open file: it dies with the process, whatever ends it (SIGKILL, a crash), so a
//! lock whose process is gone never blocks the next run
//! (`fast::locks::a_plan_or_apply_killed_while_holding_the_lock_never_blocks_the_next_run`). The file also holds the holder's
//! record (who, pid, operation, lock ID), so that a run that finds the file locked says who
//! holds it. A lock file is valid only while it is still the file at the path: force-unlock
//! removes it, the holder notices (its state writes check, a watcher polls) and stops, and the
//! next run locks a new file.

use crate::backend::{Backend, Fence, LockError, LockGuard, StateError};
use crate::encryption::{Encryption, Target};
use crate::{LockInfo, State};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest state file, or note beside it, read: as the largest plan or state file the CLI
/// reads, far above a 10,000-resource state.
const MAX_STATE_BYTES: u64 = 1 << 30;

/// The bytes of the regular file at `path`, `None` where there is none: a device or FIFO
/// named as the state's path is an error naming it, never read without end or waited on.
fn read_state_file(path: &Path) -> Result<Option<Vec<u8>>, gpustack_fs::ReadError> {
    match gpustack_fs::read_bounded(path, MAX_STATE_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(gpustack_fs::ReadError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

pub struct LocalBackend {
    path: PathBuf,
    /// Whether this run already saved the state it found as `.backup`.
    backed_up: std::sync::atomic::AtomicBool,
    encryption: std::sync::Arc<Encryption>,
    /// The lock this handle holds, which its state writes check.
    held: Arc<Mutex<Option<Held>>>,
}

/// A lock this process holds: which file it locked, and its fence.
struct Held {
    file: FileId,
    fence: Arc<Fence>,
}

/// A file's identity (device and inode), to tell whether the lock file at the path is still
/// the one this process locked.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

#[cfg(unix)]
fn file_id(metadata: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId(metadata.dev(), metadata.ino())
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> FileId {
    FileId(0, 0)
}

/// Whether `path` (not followed) is still the file `id` names.
fn still_at(path: &Path, id: FileId) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| file_id(&m) == id)
}

/// The lock file, opened without following a symlink and never truncated on open (another
/// process may hold it and its record).
fn open_lock_file(path: &Path, create: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// The record of whoever holds the lock file. A holder writes it just after it locks the
/// file, so a reader that races with that write reads again for a moment.
fn read_lock(path: &Path) -> Option<LockInfo> {
    for attempt in 0..10 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut text = String::new();
        let Ok(mut file) = open_lock_file(path, false) else {
            return None;
        };
        if file.read_to_string(&mut text).is_ok()
            && let Ok(info) = serde_json::from_str(&text)
        {
            return Some(info);
        }
    }
    None
}

/// How often a holder checks that its lock file is still the one at the path.
const WATCH_EVERY: Duration = Duration::from_millis(500);

impl LocalBackend {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            backed_up: std::sync::atomic::AtomicBool::new(false),
            encryption: std::sync::Arc::new(Encryption::none(Target::State)),
            held: Arc::new(Mutex::new(None)),
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
        match read_state_file(&self.path) {
            Ok(Some(bytes)) => {
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
            Ok(None) => Ok(None),
            Err(source) => Err(StateError::Read {
                location: self.location_of(),
                source: source.into(),
            }),
        }
    }

    /// Refuses when this handle's lock was lost: force-unlocked, its file removed or replaced.
    fn check_lock(&self) -> Result<(), StateError> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = held.as_ref()
            && (held.fence.is_lost() || !still_at(&self.lock_path(), held.file))
        {
            held.fence.lose();
            return Err(StateError::LockLost {
                location: self.location_of(),
            });
        }
        Ok(())
    }

    pub fn write_sync(&self, state: &State) -> Result<(), StateError> {
        crate::block_on(self.write_async(state))
    }

    async fn write_async(&self, state: &State) -> Result<(), StateError> {
        self.check_lock()?;
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
        let dir = self.dir();
        std::fs::create_dir_all(&dir).map_err(err)?;
        // The backup is the state as this run found it, taken at its first write (as
        // Terraform's .backup): one copy per run, not one per change.
        if !self.backed_up.load(std::sync::atomic::Ordering::SeqCst) {
            match read_state_file(&self.path) {
                Ok(Some(previous)) => {
                    gpustack_fs::write_atomic(
                        &with_suffix(&self.path, ".backup"),
                        &previous,
                        gpustack_fs::PRIVATE,
                    )
                    .map_err(err)?;
                    self.backed_up
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(StateError::Write {
                        location: self.location_of(),
                        source: source.into(),
                    });
                }
            }
        }
        gpustack_fs::write_atomic(&self.path, &bytes, gpustack_fs::PRIVATE).map_err(err)?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    /// Takes the lock, retrying until `timeout` while someone else holds it.
    pub async fn lock_async(
        &self,
        info: LockInfo,
        timeout: Duration,
    ) -> Result<LockGuard, LockError> {
        let path = self.lock_path();
        let deadline = Instant::now() + timeout;
        let backend_error = |source: std::io::Error| LockError::Backend {
            location: path.display().to_string(),
            source: source.into(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(backend_error)?;
        }
        let json = serde_json::to_vec_pretty(&info).unwrap_or_default();
        loop {
            let mut file = open_lock_file(&path, true).map_err(backend_error)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        return Err(LockError::Held(Box::new(
                            read_lock(&path).unwrap_or_else(LockInfo::unreadable),
                        )));
                    }
                    drop(file);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(backend_error(e)),
            }
            // The file may have been removed (released, force-unlocked) between our open and
            // our lock: then we locked a file no one else will look at; open the path again.
            let id = file_id(&file.metadata().map_err(backend_error)?);
            if !still_at(&path, id) {
                continue;
            }
            file.set_len(0)
                .and_then(|()| file.write_all(&json))
                .map_err(backend_error)?;
            let fence = Fence::new();
            *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some(Held {
                file: id,
                fence: fence.clone(),
            });
            let watcher = tokio::spawn(watch(path.clone(), id, fence.clone()));
            let held = self.held.clone();
            let release_path = path.clone();
            let release = Box::pin(async move {
                held.lock().unwrap_or_else(|e| e.into_inner()).take();
                // Removed while still locked, so that no one locks this file after us; the
                // lock itself ends when the file is closed.
                if still_at(&release_path, id) {
                    let _ = std::fs::remove_file(&release_path);
                }
                drop(file);
                Ok(())
            });
            return Ok(LockGuard::new(release).renewing(watcher, fence));
        }
    }

    /// Releases the lock of a run that is gone or stuck. A lock file no process holds is what
    /// a run that ended without releasing left behind (it blocks no one): its record is
    /// removed when the ID matches, and otherwise the state is not locked. A lock a live
    /// process holds (here, or on another machine sharing the directory) is released by
    /// removing its file once the ID matches: the next run locks a new file, and the holder
    /// stops at its next provider call or state write.
    pub fn force_unlock_sync(&self, id: &str) -> Result<LockInfo, LockError> {
        let path = self.lock_path();
        let backend_error = |source: std::io::Error| LockError::Backend {
            location: path.display().to_string(),
            source: source.into(),
        };
        let file = match open_lock_file(&path, false) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LockError::NotLocked);
            }
            Err(e) => return Err(backend_error(e)),
        };
        let held = match file.try_lock() {
            Ok(()) => {
                let recorded = read_lock(&path);
                drop(file);
                return match recorded {
                    Some(info) if info.id == id => {
                        std::fs::remove_file(&path).map_err(backend_error)?;
                        Ok(info)
                    }
                    _ => Err(LockError::NotLocked),
                };
            }
            Err(std::fs::TryLockError::WouldBlock) => read_lock(&path),
            Err(std::fs::TryLockError::Error(e)) => return Err(backend_error(e)),
        };
        match held {
            Some(held) if held.id != id => Err(LockError::WrongId {
                given: id.to_owned(),
                held: Box::new(held),
            }),
            held => {
                std::fs::remove_file(&path).map_err(backend_error)?;
                Ok(held.unwrap_or_else(LockInfo::unreadable))
            }
        }
    }
}

/// Loses `fence` once the lock file at `path` is no longer the one this process locked.
async fn watch(path: PathBuf, id: FileId, fence: Arc<Fence>) {
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if !still_at(&path, id) {
            eprintln!(
                "Error: the state lock file {} was removed or replaced (force-unlock?): this run no longer holds the state lock.",
                path.display()
            );
            fence.lose();
            return;
        }
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
        read_state_file(&path).map_err(|e| StateError::Read {
            location: path.display().to_string(),
            source: e.into(),
        })
    }

    /// The state file and its backup.
    async fn delete(&self) -> Result<(), StateError> {
        self.check_lock()?;
        for path in [self.path.clone(), with_suffix(&self.path, ".backup")] {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(StateError::Write {
                        location: path.display().to_string(),
                        source: e.into(),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    async fn write_note(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let path = self.note_path(name);
        let dir = self.dir();
        std::fs::create_dir_all(&dir)
            .and_then(|()| gpustack_fs::write_atomic(&path, bytes, gpustack_fs::PRIVATE))
            .map_err(|e| StateError::Write {
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

    #[tokio::test(flavor = "multi_thread")]
    async fn a_lock_file_no_process_holds_never_blocks() {
        let (_dir, backend) = backend();
        // What a run killed while holding the lock leaves: the file and its record, but no
        // OS lock (that died with the process).
        let dead = LockInfo::new("apply");
        std::fs::create_dir_all(backend.lock_path().parent().unwrap()).unwrap();
        std::fs::write(backend.lock_path(), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert!(matches!(
            backend.force_unlock_sync("another-id"),
            Err(LockError::NotLocked)
        ));
        let guard = backend
            .lock_async(LockInfo::new("plan"), Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(read_lock(&backend.lock_path()).unwrap().operation, "plan");
        drop(guard);
        assert!(
            !backend.lock_path().exists(),
            "a release removes the lock file"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_holder_whose_lock_was_forced_away_cannot_write_the_state() {
        let (_dir, backend) = backend();
        let guard = backend
            .lock_async(LockInfo::new("apply"), Duration::ZERO)
            .await
            .unwrap();
        backend.write_sync(&State::new("l1", "0.1.0")).unwrap();
        let id = read_lock(&backend.lock_path()).unwrap().id;
        backend.force_unlock_sync(&id).unwrap();
        // The next run locks a new file at once.
        let other = LocalBackend::new(backend.path());
        let next = other
            .lock_async(LockInfo::new("plan"), Duration::ZERO)
            .await
            .unwrap();
        let refused = backend.write_sync(&State::new("l1", "0.1.0"));
        assert!(
            matches!(refused, Err(StateError::LockLost { .. })),
            "{refused:?}"
        );
        assert!(guard.fence().is_lost());
        drop(guard);
        assert_eq!(
            read_lock(&other.lock_path()).unwrap().operation,
            "plan",
            "the old holder's release leaves the new lock alone"
        );
        drop(next);
    }

    #[cfg(unix)]
    #[test]
    fn no_file_is_written_through_a_symlink() {
        let (dir, backend) = backend();
        let outside = tempfile::tempdir().unwrap();
        let gpustack = dir.path().join(".gpustack");
        std::fs::create_dir_all(&gpustack).unwrap();
        // Links planted at every name a write of the old backend used.
        let names = [
            "state.json.backup",
            "state.json.backup.tmp",
            &format!("state.json.tmp-{}", std::process::id()),
            "drift.json",
            "drift.json.tmp",
            "state.json.lock",
        ];
        for (n, name) in names.iter().enumerate() {
            let target = outside.path().join(format!("target-{n}"));
            std::fs::write(&target, "untouched").unwrap();
            std::os::unix::fs::symlink(&target, gpustack.join(name)).unwrap();
        }
        std::fs::write(backend.path(), State::new("l1", "0.1.0").encode()).unwrap();
        backend.write_sync(&State::new("l1", "0.1.0")).unwrap();
        futures::executor::block_on(backend.write_note("drift.json", b"{}")).unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let locked = runtime.block_on(backend.lock_async(LockInfo::new("plan"), Duration::ZERO));
        assert!(locked.is_err(), "a symlink at the lock file is refused");
        for n in 0..names.len() {
            assert_eq!(
                std::fs::read_to_string(outside.path().join(format!("target-{n}"))).unwrap(),
                "untouched"
            );
        }
        use std::os::unix::fs::PermissionsExt;
        for name in ["state.json", "state.json.backup", "drift.json"] {
            let meta = std::fs::symlink_metadata(gpustack.join(name)).unwrap();
            assert!(meta.is_file(), "{name} is a file of its own now");
            assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
        }
    }
}
