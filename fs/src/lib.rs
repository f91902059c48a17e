//! Files as gpustack reads and writes them.
//!
//! **Invariant:** a read is bounded before it begins: only a regular file is read (a device,
//! FIFO or socket at the path is an error naming it, and opening one never blocks), its size
//! is checked from its metadata and the limit is enforced again while reading, so that a file
//! that grows, or lies about its size, is never read past it (`tests::*` in this crate).
//!
//! **Invariant:** a write is whole or not at all and never goes through whatever is at the
//! path: the bytes go into a new file of a random name, created exclusively (`O_EXCL`) in the
//! same directory with its final mode, synced, and renamed over the path, which replaces a
//! symlink there instead of following it.

use std::io::{Read, Write};
use std::path::Path;

/// Mode of files that can hold sensitive values: plans, states, generated configuration.
pub const PRIVATE: u32 = 0o600;
/// Mode of files meant to be read by other tools and people: reports, lock files.
pub const SHARED: u32 = 0o644;

/// Why a bounded read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("no such file")]
    NotFound,
    #[error("it is a directory, not a file")]
    Directory,
    /// A device, FIFO or socket: reading one could block or never end.
    #[error("it is a {0}, not a regular file; only regular files are read")]
    NotRegular(&'static str),
    #[error("it is larger than {}", size(*.limit))]
    TooLarge { limit: u64 },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

fn kind_of(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("FIFO");
        }
        if file_type.is_socket() {
            return Some("socket");
        }
        if file_type.is_char_device() {
            return Some("character device");
        }
        if file_type.is_block_device() {
            return Some("block device");
        }
    }
    Some("special file")
}

fn not_regular(kind: &'static str) -> ReadError {
    if kind == "directory" {
        ReadError::Directory
    } else {
        ReadError::NotRegular(kind)
    }
}

/// The bytes of the regular file at `path` (links followed), at most `limit` of them.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let metadata = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    if let Some(kind) = kind_of(metadata.file_type()) {
        return Err(not_regular(kind));
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Something swapped in since the check above must not block the open.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    let opened = file.metadata()?;
    if let Some(kind) = kind_of(opened.file_type()) {
        return Err(not_regular(kind));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The text of the regular file at `path`, at most `limit` bytes of UTF-8.
pub fn read_text_bounded(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bounded(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (at byte {})",
                e.utf8_error().valid_up_to()
            ),
        ))
    })
}

/// Writes `bytes` to `path` with `mode` (see the crate's invariant). The directory must
/// exist.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(bytes)?;
    // The mode exactly as asked, whatever the umask took from it at creation.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_within_its_limit_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_bounded(&path, 10).unwrap(), b"0123456789");
        assert!(matches!(
            read_bounded(&path, 9),
            Err(ReadError::TooLarge { limit: 9 })
        ));
        assert!(matches!(
            read_bounded(&dir.path().join("none"), 9),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(
            read_bounded(dir.path(), 9),
            Err(ReadError::Directory)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_refused_before_any_read() {
        let err = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a character device, not a regular file; only regular files are read"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer ever opens it: a read that opened it would wait forever.
        assert!(matches!(
            read_bounded(&fifo, 1 << 20),
            Err(ReadError::NotRegular("FIFO"))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_write_replaces_a_link_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"untouched").unwrap();
        let path = dir.path().join("out");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        write_atomic(&path, b"new", PRIVATE).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::symlink_metadata(&path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, PRIVATE);
    }
}
