//! Files the commands write beside the user's: plans, errored states, generated
//! configuration, metrics, JUnit reports, the backend record, formatted stack files.
//!
//! **Invariant:** a file is written whole or not at all, and never through whatever is at its
//! path: the text goes into a new file of a random name, created exclusively (`O_EXCL`) in the
//! same directory with its final mode, is synced, and is renamed over the path, which replaces
//! a symlink there instead of following it (`fast::hostile::outputs_replace_links_and_keep_secrets_private`).

use std::path::Path;

pub(crate) use gpustack_fs::{PRIVATE, SHARED};

/// The largest plan or state file read: far above a 10,000-resource plan.
const MAX_READ: u64 = 1 << 30;

/// Writes `bytes` to `path` with `mode` (see the module's invariant).
pub(crate) fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    gpustack_fs::write_atomic(path, bytes, mode)
}

/// Writes a file that can hold sensitive values, 0600.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, PRIVATE)
}

/// A plan or state file the user named: a regular file, bounded before it is read.
pub(crate) fn read_given(path: &Path) -> Result<Vec<u8>, String> {
    gpustack_fs::read_bounded(path, MAX_READ).map_err(|e| format!("{}: {e}", path.display()))
}
