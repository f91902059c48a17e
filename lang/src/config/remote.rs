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

/// Why a module source that looks like a git source is refused. Every part of a source reaches
/// `git` as an argument, so anything git could read as an option, a transport helper or a
/// path outside the checkout is refused before `init` runs anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("a module source may not contain spaces or control characters")]
    Whitespace,
    #[error(
        "\"{scheme}://\" is not a supported git transport: use https://, ssh://, git@HOST:PATH or file:// (for a repository on this machine)"
    )]
    Scheme { scheme: String },
    #[error(
        "\"{0}\" uses git's transport-helper syntax (TRANSPORT::ADDRESS), which can run commands; use an https://, ssh:// or file:// URL"
    )]
    TransportHelper(String),
    #[error("\"{0}\" starts with \"-\", which git would read as an option")]
    Option(String),
    #[error("the repository URL is empty")]
    EmptyUrl,
    #[error("\"{0}\" has no host")]
    NoHost(String),
    #[error(
        "the ref \"{0}\" is not a valid branch, tag or commit name (letters, digits, \".\", \"_\", \"-\" and \"/\"; not starting with \"-\" or \"/\", no \"..\")"
    )]
    Reference(String),
    #[error("the query argument \"{0}\" is not supported: git module sources take only ?ref=")]
    Query(String),
    #[error("the module directory \"{0}\" leaves the repository (an absolute path or \"..\")")]
    Subdir(String),
    #[error(
        "\"github.com/{0}\" is not github.com/OWNER/REPO (names of letters, digits, \".\", \"_\" and \"-\")"
    )]
    GitHub(String),
}

impl GitSource {
    /// The source as written: `Ok(None)` when it is not a git source (a local path, or a form
    /// the caller refuses), an error when it is one gpustack will not hand to git.
    pub fn parse(source: &str) -> Result<Option<GitSource>, SourceError> {
        let rest = if let Some(rest) = source.strip_prefix("git::") {
            rest.to_owned()
        } else if let Some(rest) = source.strip_prefix("github.com/") {
            let repo = rest.split(['/', '?']).take(2).collect::<Vec<_>>();
            if repo.len() != 2 || !repo.iter().all(|part| github_name(part)) {
                return Err(SourceError::GitHub(rest.to_owned()));
            }
            format!("https://github.com/{rest}")
        } else {
            return Ok(None);
        };
        if source.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(SourceError::Whitespace);
        }
        let (location, query) = match rest.split_once('?') {
            Some((location, query)) => (location.to_owned(), Some(query.to_owned())),
            None => (rest, None),
        };
        let mut reference = None;
        for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            match &*key {
                "ref" if valid_reference(&value) => reference = Some(value.into_owned()),
                "ref" => return Err(SourceError::Reference(value.into_owned())),
                // A shallow fetch is what init always makes.
                "depth" => {}
                other => return Err(SourceError::Query(other.to_owned())),
            }
        }
        // `//` after the scheme's own separates the repository from the directory in it.
        let after_scheme = location.find("://").map_or(0, |i| i + 3);
        let (url, subdir) = match location[after_scheme..].find("//") {
            Some(i) => {
                let (url, subdir) = location.split_at(after_scheme + i);
                (url.to_owned(), subdir.trim_start_matches('/').to_owned())
            }
            None => (location, String::new()),
        };
        check_url(&url)?;
        if subdir.starts_with(['/', '\\'])
            || subdir.split(['/', '\\']).any(|step| step == "..")
            || subdir.contains(':')
        {
            return Err(SourceError::Subdir(subdir));
        }
        Ok(Some(GitSource {
            url,
            subdir,
            reference,
        }))
    }

    /// The transports git may use for this source: the source's own, never a transport
    /// helper, and the local file transport only when the source names a local repository.
    pub fn allowed_protocols(&self) -> &'static str {
        if self.url.starts_with("file://") {
            "file"
        } else if self.url.starts_with("https://") {
            "https"
        } else {
            "ssh"
        }
    }

    /// The directory of a checkout of this source at `commit`, under the stack directory.
    pub fn checkout_dir(&self, stack_dir: &Path, commit: &str) -> PathBuf {
        use sha2::Digest;
        let key = sha2::Sha256::digest(format!("{}\n{commit}", self.url));
        let key: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
        stack_dir.join(MODULES_DIR).join(key)
    }
}

/// The checkout of a git module that `dir` lies in (`<stack>/.gpustack/modules/<key>`), if any.
pub fn checkout_of(stack_dir: &Path, dir: &Path) -> Option<PathBuf> {
    let modules = crate::source::normalize(&stack_dir.join(MODULES_DIR));
    let rest = crate::source::normalize(dir);
    let key = rest.strip_prefix(&modules).ok()?.components().next()?;
    Some(modules.join(key))
}

/// Checks that the module directory `dir` of the checkout `checkout`, and every file in it,
/// resolve (symbolic links followed) to paths inside the checkout: a repository can hold a
/// link to any absolute path, which a lexical check of the source does not see. A directory
/// that does not exist passes (it is reported as not installed).
pub fn stays_inside(checkout: &Path, dir: &Path) -> Result<(), ModuleInstallError> {
    let Ok(root) = checkout.canonicalize() else {
        return Ok(());
    };
    let Ok(resolved) = dir.canonicalize() else {
        return Ok(());
    };
    let outside = |path: &Path, to: &Path| ModuleInstallError::OutsideCheckout {
        path: path.to_path_buf(),
        target: to.to_path_buf(),
    };
    if !resolved.starts_with(&root) {
        return Err(outside(dir, &resolved));
    }
    let Ok(entries) = std::fs::read_dir(&resolved) else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        match path.canonicalize() {
            Ok(target) if !target.starts_with(&root) => return Err(outside(&path, &target)),
            _ => {}
        }
    }
    Ok(())
}

/// The public registry, which a source names when it names no host.
pub const DEFAULT_REGISTRY: &str = "registry.terraform.io";

/// A module registry source (`NAMESPACE/NAME/PROVIDER`, `HOST/NAMESPACE/NAME/PROVIDER`,
/// optionally `//DIR`), resolved by `init` through the Module Registry Protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySource {
    pub host: String,
    pub namespace: String,
    pub name: String,
    pub provider: String,
    /// The directory of the module inside the package; empty for its root.
    pub subdir: String,
}

impl RegistrySource {
    /// The source as written: `None` when it is not a registry address.
    pub fn parse(source: &str) -> Option<RegistrySource> {
        if source.starts_with("./") || source.starts_with("../") || source.contains("::") {
            return None;
        }
        let (address, subdir) = match source.split_once("//") {
            Some((address, subdir)) => (address, subdir.trim_matches('/').to_owned()),
            None => (source, String::new()),
        };
        if subdir
            .split('/')
            .any(|step| step == ".." || step.starts_with('-'))
        {
            return None;
        }
        let parts: Vec<&str> = address.split('/').collect();
        let (host, rest) = match parts.as_slice() {
            [namespace, name, provider] => (DEFAULT_REGISTRY, [*namespace, *name, *provider]),
            [host, namespace, name, provider] if host.contains('.') => {
                (*host, [*namespace, *name, *provider])
            }
            _ => return None,
        };
        let name_part = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && !s.starts_with(['-', '.'])
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        };
        let host_ok = host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == ':')
            && !host.starts_with(['-', '.']);
        if !host_ok || !rest.iter().all(|p| name_part(p)) || host == "github.com" {
            return None;
        }
        Some(RegistrySource {
            host: host.to_ascii_lowercase(),
            namespace: rest[0].to_owned(),
            name: rest[1].to_owned(),
            provider: rest[2].to_owned(),
            subdir,
        })
    }

    /// `HOST/NAMESPACE/NAME/PROVIDER`, without a directory.
    pub fn package(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.host, self.namespace, self.name, self.provider
        )
    }

    /// Where `init` puts the package of `version`, under the stack directory.
    pub fn package_dir(&self, stack_dir: &Path, version: &str) -> PathBuf {
        use sha2::Digest;
        let key = sha2::Sha256::digest(format!("{}\n{version}", self.package()));
        let key: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
        stack_dir.join(MODULES_DIR).join(format!("r-{key}"))
    }
}

/// The transports a source may name, and whether each needs a host.
const SCHEMES: &[&str] = &["https", "ssh", "file"];

/// A repository URL git will read as a URL and nothing else: one of [`SCHEMES`], or the
/// scp-like `USER@HOST:PATH` (ssh), never beginning with `-` in any part that reaches ssh or
/// git as an argument, never `TRANSPORT::ADDRESS`.
fn check_url(url: &str) -> Result<(), SourceError> {
    if url.is_empty() {
        return Err(SourceError::EmptyUrl);
    }
    if url.starts_with('-') {
        return Err(SourceError::Option(url.to_owned()));
    }
    if url.contains("::") {
        return Err(SourceError::TransportHelper(url.to_owned()));
    }
    let Some((scheme, after)) = url.split_once("://") else {
        // scp-like: `[user@]host:path`; a colon before any slash makes it ssh to git.
        return match url.split_once(':') {
            Some((host, path)) if !host.is_empty() && !host.contains('/') => {
                let host_name = host.rsplit('@').next().unwrap_or(host);
                if host_name.is_empty() {
                    Err(SourceError::NoHost(url.to_owned()))
                } else if host_name.starts_with('-') || host.starts_with('-') {
                    Err(SourceError::Option(host.to_owned()))
                } else if path.starts_with('-') {
                    Err(SourceError::Option(path.to_owned()))
                } else {
                    Ok(())
                }
            }
            _ => Err(SourceError::Scheme {
                scheme: String::new(),
            }),
        };
    };
    if !SCHEMES.contains(&scheme) {
        return Err(SourceError::Scheme {
            scheme: scheme.to_owned(),
        });
    }
    if scheme == "file" {
        return match after.strip_prefix('/') {
            Some(_) => Ok(()),
            None => Err(SourceError::NoHost(url.to_owned())),
        };
    }
    let authority = after.split('/').next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() {
        return Err(SourceError::NoHost(url.to_owned()));
    }
    if host.starts_with('-') || authority.starts_with('-') {
        return Err(SourceError::Option(authority.to_owned()));
    }
    Ok(())
}

/// A branch, tag or commit name as `git check-ref-format` accepts it, narrowed to what never
/// reads as an option or a refspec (`+`, `:`) and never walks up (`..`).
fn valid_reference(reference: &str) -> bool {
    !reference.is_empty()
        && reference.len() <= 255
        && !reference.starts_with(['-', '/', '.'])
        && !reference.ends_with(['/', '.'])
        && !reference.ends_with(".lock")
        && !reference.contains("..")
        && !reference.contains("//")
        && !reference.contains("@{")
        && reference
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '@'))
}

/// An owner or repository name on GitHub.
fn github_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A full commit id as git prints it (SHA-1 or SHA-256): what a lock file may pin.
pub fn valid_commit(commit: &str) -> bool {
    matches!(commit.len(), 40 | 64)
        && commit
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
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
    /// The commit the reference named when it was locked; for a registry module fetched as
    /// an archive, the SHA-256 of the archive.
    pub commit: String,
    /// A registry module: the version constraint it was locked for, and the version chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A registry module: the SHA-256 of what was fetched (the archive, or the checkout's
    /// files), checked again when it is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// Why a git module is not where a load can use it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModuleInstallError {
    #[error("{path}: {message}")]
    ReadLock { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    ParseLock { path: PathBuf, message: String },
    #[error(
        "{path}: the commit \"{commit}\" pinned for \"{source_text}\" is not a full commit id (40 or 64 hexadecimal digits)"
    )]
    NotACommit {
        path: PathBuf,
        source_text: String,
        commit: String,
    },
    #[error(
        "\"{source_text}\" is not installed: run gpustack init to fetch it and pin what it fetched in {LOCK_FILE}."
    )]
    NotInstalled { source_text: String },
    #[error(
        "\"{source_text}\" is locked for the version constraint {locked}, and the module call now asks for another: run gpustack init to choose a version that meets it."
    )]
    ConstraintChanged { source_text: String, locked: String },
    #[error(
        "{path} resolves through a symbolic link to {target}, outside the module's checkout: a module's files must be in its repository."
    )]
    OutsideCheckout { path: PathBuf, target: PathBuf },
}

impl ModuleLock {
    /// The stack's lock file from the disk; empty when there is none.
    pub fn read(stack_dir: &Path) -> Result<ModuleLock, ModuleInstallError> {
        let path = stack_dir.join(LOCK_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => ModuleLock::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ModuleLock {
                version: 1,
                ..ModuleLock::default()
            }),
            Err(e) => Err(ModuleInstallError::ReadLock {
                path,
                message: e.to_string(),
            }),
        }
    }

    /// The lock file's text; a pinned commit that is not a full commit id is refused, since
    /// it reaches git as an argument.
    pub fn parse(text: &str, path: &Path) -> Result<ModuleLock, ModuleInstallError> {
        let lock: ModuleLock =
            serde_json::from_str(text).map_err(|e| ModuleInstallError::ParseLock {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        if let Some((source, locked)) = lock
            .modules
            .iter()
            .find(|(_, locked)| locked.version.is_none() && !valid_commit(&locked.commit))
        {
            return Err(ModuleInstallError::NotACommit {
                path: path.to_path_buf(),
                source_text: source.clone(),
                commit: locked.commit.clone(),
            });
        }
        Ok(lock)
    }

    /// Written through a new file of a random name, created exclusively, then renamed over
    /// the lock file: never through a link planted at it.
    pub fn write(&self, stack_dir: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        gpustack_fs::write_atomic(
            &stack_dir.join(LOCK_FILE),
            text.as_bytes(),
            gpustack_fs::SHARED,
        )
    }
}

/// Where a registry source's module is, by the lock; the error says what to do.
pub fn installed_registry_dir(
    stack_dir: &Path,
    source: &str,
    registry: &RegistrySource,
    constraint: Option<&str>,
    lock: &ModuleLock,
) -> Result<PathBuf, ModuleInstallError> {
    let Some(locked) = lock.modules.get(source) else {
        return Err(ModuleInstallError::NotInstalled {
            source_text: source.to_owned(),
        });
    };
    if locked.constraint.as_deref() != constraint {
        return Err(ModuleInstallError::ConstraintChanged {
            source_text: source.to_owned(),
            locked: locked.constraint.clone().unwrap_or_else(|| "(none)".into()),
        });
    }
    let version = locked.version.as_deref().unwrap_or_default();
    let dir = registry.package_dir(stack_dir, version);
    Ok(if registry.subdir.is_empty() {
        dir
    } else {
        dir.join(&registry.subdir)
    })
}

/// Where a git source's module is, by the lock; the error says what to do.
pub fn installed_dir(
    stack_dir: &Path,
    source: &str,
    git: &GitSource,
    lock: &ModuleLock,
) -> Result<PathBuf, ModuleInstallError> {
    let Some(locked) = lock.modules.get(source) else {
        return Err(ModuleInstallError::NotInstalled {
            source_text: source.to_owned(),
        });
    };
    Ok(git
        .checkout_dir(stack_dir, &locked.commit)
        .join(&git.subdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(source: &str) -> Option<GitSource> {
        GitSource::parse(source).expect("a valid source")
    }

    #[test]
    fn terraform_git_source_forms() {
        assert_eq!(
            git("git::https://example.com/gpu/modules.git//pool?ref=v1.2.0"),
            Some(GitSource {
                url: "https://example.com/gpu/modules.git".into(),
                subdir: "pool".into(),
                reference: Some("v1.2.0".into()),
            })
        );
        assert_eq!(
            git("git::file:///srv/git/modules.git"),
            Some(GitSource {
                url: "file:///srv/git/modules.git".into(),
                subdir: String::new(),
                reference: None,
            })
        );
        assert_eq!(
            git("git::ssh://git@example.com/gpu.git//a/b?ref=main"),
            Some(GitSource {
                url: "ssh://git@example.com/gpu.git".into(),
                subdir: "a/b".into(),
                reference: Some("main".into()),
            })
        );
        assert_eq!(
            git("git::git@github.com:acme/gpu.git//pool?ref=release/v2"),
            Some(GitSource {
                url: "git@github.com:acme/gpu.git".into(),
                subdir: "pool".into(),
                reference: Some("release/v2".into()),
            })
        );
        assert_eq!(
            git("github.com/acme/gpu-modules//time-slicing?ref=v2"),
            Some(GitSource {
                url: "https://github.com/acme/gpu-modules".into(),
                subdir: "time-slicing".into(),
                reference: Some("v2".into()),
            })
        );
        assert_eq!(
            git("git::https://example.com/m.git?ref=v1%2E2").and_then(|g| g.reference),
            Some("v1.2".into())
        );
        assert_eq!(git("../modules/pool"), None);
        assert_eq!(git("hashicorp/consul/aws"), None);
    }

    #[test]
    fn sources_that_could_reach_git_as_options_or_helpers_are_refused() {
        let refused = [
            (
                "git::--upload-pack=touch /tmp/x;true//m?ref=main",
                SourceError::Whitespace,
            ),
            (
                "git::--upload-pack=touch${IFS}/tmp/x//m?ref=main",
                SourceError::Option("--upload-pack=touch${IFS}/tmp/x".into()),
            ),
            (
                "git::https://example.com/m.git?ref=--upload-pack=x",
                SourceError::Reference("--upload-pack=x".into()),
            ),
            (
                "git::https://example.com/m.git?ref=main:refs/heads/x",
                SourceError::Reference("main:refs/heads/x".into()),
            ),
            (
                "git::https://example.com/m.git?ref=%2Dx",
                SourceError::Reference("-x".into()),
            ),
            ("git::ext::sh -c touch% /tmp/x", SourceError::Whitespace),
            (
                "git::ext::sh%20-c%20id",
                SourceError::TransportHelper("ext::sh%20-c%20id".into()),
            ),
            ("git::fd::3", SourceError::TransportHelper("fd::3".into())),
            (
                "git::ssh://-oProxyCommand=id/x.git",
                SourceError::Option("-oProxyCommand=id".into()),
            ),
            (
                "git::-oProxyCommand=id:x.git",
                SourceError::Option("-oProxyCommand=id:x.git".into()),
            ),
            (
                "git::git@-oProxyCommand=id:x.git",
                SourceError::Option("git@-oProxyCommand=id".into()),
            ),
            ("git::host:-x.git", SourceError::Option("-x.git".into())),
            (
                "git::http://example.com/m.git",
                SourceError::Scheme {
                    scheme: "http".into(),
                },
            ),
            (
                "git::git://example.com/m.git",
                SourceError::Scheme {
                    scheme: "git".into(),
                },
            ),
            (
                "git::https://example.com/m.git//../../etc",
                SourceError::Subdir("../../etc".into()),
            ),
            (
                "git::https://example.com/m.git?sshkey=abc",
                SourceError::Query("sshkey".into()),
            ),
            (
                "git::https:///m.git",
                SourceError::NoHost("https:///m.git".into()),
            ),
            ("git::", SourceError::EmptyUrl),
            (
                "github.com/--upload-pack=x/y",
                SourceError::GitHub("--upload-pack=x/y".into()),
            ),
            ("github.com/acme", SourceError::GitHub("acme".into())),
        ];
        for (source, why) in refused {
            assert_eq!(GitSource::parse(source), Err(why), "{source}");
        }
    }

    #[test]
    fn a_lock_file_pins_only_commit_ids() {
        let lock = |commit: &str| {
            format!(
                r#"{{"version":1,"modules":{{"git::https://example.com/m.git":{{"url":"https://example.com/m.git","commit":"{commit}"}}}}}}"#
            )
        };
        let path = Path::new(LOCK_FILE);
        assert!(ModuleLock::parse(&lock(&"a".repeat(40)), path).is_ok());
        assert!(ModuleLock::parse(&lock(&"0".repeat(64)), path).is_ok());
        for hostile in ["--upload-pack=x", "HEAD", "ABCDEF0123", ""] {
            let err = ModuleLock::parse(&lock(hostile), path)
                .unwrap_err()
                .to_string();
            assert!(err.contains("not a full commit id"), "{err}");
        }
    }
}
