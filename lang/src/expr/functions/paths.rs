//! Path functions with Go's `path/filepath` rules on Unix, as Terraform has them: `basename`,
//! `dirname`, `abspath`, `pathexpand`. They compute on strings; only `abspath` reads the working
//! directory and `pathexpand` the home directory.

use super::*;

/// Go's `filepath.Clean`: one separator at a time, no `.`, no inner `..`, no `..` above the
/// root; the empty path is `.`.
pub(super) fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

pub(super) fn basename(a: &Args<'_>) -> CallResult {
    let path = a.string(0)?;
    if path.is_empty() {
        return ok_string(".");
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return ok_string("/");
    }
    ok_string(trimmed.rsplit('/').next().unwrap_or(trimmed))
}

pub(super) fn dirname(a: &Args<'_>) -> CallResult {
    let path = a.string(0)?;
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    };
    ok_string(clean(dir))
}

pub(super) fn abspath(a: &Args<'_>) -> CallResult {
    let path = a.string(0)?;
    if path.starts_with('/') {
        return ok_string(clean(&path));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CallError::call(format!("cannot find the working directory: {e}")))?;
    ok_string(clean(&format!("{}/{path}", cwd.display())))
}

pub(super) fn pathexpand(a: &Args<'_>) -> CallResult {
    let path = a.string(0)?;
    let Some(rest) = path.strip_prefix('~') else {
        return ok_string(path);
    };
    if !rest.is_empty() && !rest.starts_with('/') {
        return Err(CallError::call("cannot expand user-specific home dir"));
    }
    let home =
        std::env::var("HOME").map_err(|_| CallError::call("cannot expand ~: HOME is not set"))?;
    ok_string(format!("{home}{rest}"))
}
