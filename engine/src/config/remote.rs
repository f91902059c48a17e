//! Module sources from git, as Terraform writes them: `git::URL//SUBDIR?ref=REF` (any URL git
//! understands: https, ssh, file) and the `github.com/OWNER/REPO//SUBDIR?ref=REF` shorthand.
//! `gpustack init` fetches them into `.gpustack/modules/` and pins each to a commit in
//! [`LOCK_FILE`]; loading reads them from there and never fetches.
//!
//! **Invariant:** the engine only reads what `init` installed: it runs no git and makes no
//! network request for a module.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock file next to the stack's files: one pinned commit per git source. Commit it.
pub const LOCK_FILE: &str = "gpustack.modules.lock.json";
/// Where `init` checks the pinned commits out, under the stack directory.
pub const MODULES_DIR: &str = ".gpustack/modules";

/// A git module source, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// What git fetches from.
    pub url: String,
    /// The directory of the module inside the repository; empty for its root.
    pub subdir: String,
    /// `?ref=`: a tag, branch or commit; None for the remote's default branch.
    pub reference: Option<String>,
}

impl GitSource {
    /// The source as written, when it is a git source.
    pub fn parse(source: &str) -> Option<GitSource> {
        let rest = if let Some(rest) = source.strip_prefix("git::") {
            rest.to_owned()
        } else if let Some(rest) = source.strip_prefix("github.com/") {
            format!("https://github.com/{rest}")
        } else {
            return None;
        };
        let (location, query) = match rest.split_once('?') {
            Some((location, query)) => (location.to_owned(), Some(query.to_owned())),
            None => (rest, None),
        };
        let reference = query.and_then(|q| {
            q.split('&')
                .find_map(|kv| kv.strip_prefix("ref=").map(str::to_owned))
        });
        // `//` after the scheme's own separates the repository from the directory in it.
        let after_scheme = location.find("://").map_or(0, |i| i + 3);
        let (url, subdir) = match location[after_scheme..].find("//") {
            Some(i) => {
                let (url, subdir) = location.split_at(after_scheme + i);
                (url.to_owned(), subdir.trim_start_matches('/').to_owned())
            }
            None => (location, String::new()),
        };
        (!url.is_empty()).then_some(GitSource {
            url,
            subdir,
            reference,
        })
    }

    /// The directory of a checkout of this source at `commit`, under the stack directory.
    pub fn checkout_dir(&self, stack_dir: &Path, commit: &str) -> PathBuf {
        use sha2::Digest;
        let key = sha2::Sha256::digest(format!("{}\n{commit}", self.url));
        let key: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
        stack_dir.join(MODULES_DIR).join(key)
    }
}

/// [`LOCK_FILE`]: by source as written.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleLock {
    pub version: u32,
    pub modules: BTreeMap<String, LockedModule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedModule {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The commit the reference named when it was locked.
    pub commit: String,
}

impl ModuleLock {
    /// The stack's lock file from the disk; empty when there is none.
    pub fn read(stack_dir: &Path) -> Result<ModuleLock, String> {
        let path = stack_dir.join(LOCK_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => ModuleLock::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ModuleLock {
                version: 1,
                ..ModuleLock::default()
            }),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<ModuleLock, String> {
        serde_json::from_str(text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn write(&self, stack_dir: &Path) -> std::io::Result<()> {
        let path = stack_dir.join(LOCK_FILE);
        let tmp = path.with_extension("json.tmp");
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, path)
    }
}

/// Where a git source's module is, by the lock; the error says what to do.
pub fn installed_dir(
    stack_dir: &Path,
    source: &str,
    git: &GitSource,
    lock: &ModuleLock,
) -> Result<PathBuf, String> {
    let Some(locked) = lock.modules.get(source) else {
        return Err(format!(
            "\"{source}\" is not installed: run gpustack init to fetch it and pin its commit in {LOCK_FILE}."
        ));
    };
    Ok(git
        .checkout_dir(stack_dir, &locked.commit)
        .join(&git.subdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terraform_git_source_forms() {
        assert_eq!(
            GitSource::parse("git::https://example.com/gpu/modules.git//pool?ref=v1.2.0"),
            Some(GitSource {
                url: "https://example.com/gpu/modules.git".into(),
                subdir: "pool".into(),
                reference: Some("v1.2.0".into()),
            })
        );
        assert_eq!(
            GitSource::parse("git::file:///srv/git/modules.git"),
            Some(GitSource {
                url: "file:///srv/git/modules.git".into(),
                subdir: String::new(),
                reference: None,
            })
        );
        assert_eq!(
            GitSource::parse("git::ssh://git@example.com/gpu.git//a/b?ref=main"),
            Some(GitSource {
                url: "ssh://git@example.com/gpu.git".into(),
                subdir: "a/b".into(),
                reference: Some("main".into()),
            })
        );
        assert_eq!(
            GitSource::parse("github.com/acme/gpu-modules//time-slicing?ref=v2"),
            Some(GitSource {
                url: "https://github.com/acme/gpu-modules".into(),
                subdir: "time-slicing".into(),
                reference: Some("v2".into()),
            })
        );
        assert_eq!(GitSource::parse("../modules/pool"), None);
        assert_eq!(GitSource::parse("hashicorp/consul/aws"), None);
    }
}
