//! Files the commands write beside the user's: plans, errored states, generated
//! configuration, metrics, JUnit reports, the backend record, formatted stack files.
//!
//! **Invariant:** a file is written whole or not at all, and never through whatever is at its
//! path: the text goes into a new file of a random name, created exclusively (`O_EXCL`) in the
//! same directory with its final mode, is synced, and is renamed over the path, which replaces
//! a symlink there instead of following it (`fast::hostile::outputs_replace_links_and_keep_secrets_private`).

use std::io::Write;
use std::path::Path;

/// Mode of files that can hold sensitive values: plans, states, generated configuration.
pub(crate) const PRIVATE: u32 = 0o600;
/// Mode of reports meant to be read by other tools: metrics, JUnit.
pub(crate) const SHARED: u32 = 0o644;

/// Writes `bytes` to `path` with `mode` (see the module's invariant).
pub(crate) fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
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

/// Writes a file that can hold sensitive values, 0600.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, PRIVATE)
}
