//! `gpustack init`'s module step: every git and registry module source of the stack (and of
//! the modules it fetches) installed under `.gpustack/modules`, pinned in the lock file: a git
//! source at its commit, a registry source at the version its constraint chose, with the
//! digest of what was fetched. A locked source is fetched as locked until `--upgrade` asks
//! for what its ref (or the registry) names now, and a pinned module already installed needs
//! no network at all.

use gpustack_lang::config::remote::{
    GitSource, LockedModule, ModuleLock, RegistrySource, valid_commit,
};
use gpustack_lang::config::{NoRootValues, RootValues};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::SourceMap;
use std::path::Path;
use std::process::Command;

/// Rounds of fetching: a fetched module may call modules of its own.
const MAX_ROUNDS: usize = 16;

/// A module call's source as `init` fetches it.
enum Wanted {
    Git(GitSource),
    Registry(RegistrySource, Option<String>),
}

/// Installs what is missing; returns how many sources were fetched. `root` gives the
/// values of const root variables, which module sources may read.
pub fn install(dir: &Path, upgrade: bool, root: Option<&dyn RootValues>) -> Result<usize, String> {
    let mut lock = ModuleLock::read(dir).map_err(|e| e.to_string())?;
    lock.version = 1;
    let mut fetched = 0;
    let mut upgraded = std::collections::HashSet::new();
    let mut client = None;
    for _ in 0..MAX_ROUNDS {
        let mut sources = SourceMap::new(dir);
        let mut diags = Diags::default();
        let stack = gpustack_lang::config::load_stack_with(
            &gpustack_lang::config::Files::Disk,
            dir,
            &mut sources,
            &mut diags,
            &gpustack_lang::config::ModuleExpansions::new(),
            None,
            root.unwrap_or(&NoRootValues),
        );
        let mut wanted: Vec<(String, Wanted)> = stack
            .modules
            .iter()
            .flat_map(|m| m.calls.values())
            .filter_map(|c| {
                if let Some(git) = GitSource::parse(&c.source).ok().flatten() {
                    return Some((c.source.clone(), Wanted::Git(git)));
                }
                RegistrySource::parse(&c.source)
                    .map(|r| (c.source.clone(), Wanted::Registry(r, c.version.clone())))
            })
            .collect();
        wanted.sort_by(|a, b| a.0.cmp(&b.0));
        wanted.dedup_by(|a, b| a.0 == b.0);
        let mut round = 0;
        for (source, wanted) in wanted {
            let locked = lock.modules.get(&source).cloned();
            let refresh = upgrade && upgraded.insert(source.clone());
            let installed = match wanted {
                Wanted::Git(git) => install_git(dir, &source, &git, locked.as_ref(), refresh)?,
                Wanted::Registry(registry, constraint) => {
                    if locked.as_ref().is_some_and(|l| {
                        !refresh
                            && l.constraint == constraint
                            && registry
                                .package_dir(dir, l.version.as_deref().unwrap_or_default())
                                .is_dir()
                    }) {
                        None
                    } else {
                        let client = match &client {
                            Some(c) => c,
                            None => client.insert(super::registry::Client::new()?),
                        };
                        Some(install_registry(
                            dir,
                            client,
                            &source,
                            &registry,
                            constraint,
                            locked.filter(|_| !refresh),
                        )?)
                    }
                }
            };
            if let Some(locked) = installed {
                lock.modules.insert(source, locked);
                round += 1;
            }
        }
        if round == 0 {
            break;
        }
        fetched += round;
        lock.write(dir).map_err(|e| {
            format!(
                "cannot write {}: {e}",
                gpustack_lang::config::remote::LOCK_FILE
            )
        })?;
    }
    Ok(fetched)
}

/// A git source checked out at its locked commit, or at what its ref names now; `None` when
/// it is installed as locked already.
fn install_git(
    dir: &Path,
    source: &str,
    git: &GitSource,
    locked: Option<&LockedModule>,
    refresh: bool,
) -> Result<Option<LockedModule>, String> {
    if let Some(locked) = locked
        && !refresh
        && git.checkout_dir(dir, &locked.commit).is_dir()
    {
        return Ok(None);
    }
    let pinned = locked.filter(|_| !refresh).map(|l| l.commit.clone());
    let commit = fetch(dir, git, pinned.as_deref(), None)?;
    let checkout = git.checkout_dir(dir, &commit);
    if let Err(why) =
        gpustack_lang::config::remote::stays_inside(&checkout, &checkout.join(&git.subdir))
    {
        let _ = std::fs::remove_dir_all(&checkout);
        return Err(format!("{source}: {why}"));
    }
    eprintln!(
        "Fetched {source} at {commit}{}",
        if pinned.is_some() { " (locked)" } else { "" }
    );
    Ok(Some(LockedModule {
        url: git.url.clone(),
        reference: git.reference.clone(),
        commit,
        constraint: None,
        version: None,
        digest: None,
    }))
}

/// A registry module at its locked version (its digest checked again), or at the newest
/// version its constraint allows.
fn install_registry(
    dir: &Path,
    client: &super::registry::Client,
    source: &str,
    registry: &RegistrySource,
    constraint: Option<String>,
    locked: Option<LockedModule>,
) -> Result<LockedModule, String> {
    let pinned = locked.filter(|l| l.constraint == constraint && l.version.is_some());
    let (version, location) = match &pinned {
        Some(l) => {
            let version = l.version.clone().unwrap_or_default();
            let location = client.location_of(registry, &version)?;
            (version, location)
        }
        None => {
            let resolved = client.resolve(registry, constraint.as_deref())?;
            (resolved.version, resolved.location)
        }
    };
    let package = registry.package_dir(dir, &version);
    std::fs::create_dir_all(dir.join(gpustack_lang::config::remote::MODULES_DIR))
        .map_err(|e| format!("{source}: {e}"))?;
    let digest = if location.starts_with("git::") {
        let git = GitSource::parse(&location)
            .map_err(|e| format!("{source}: the registry's location {location}: {e}"))?
            .ok_or_else(|| {
                format!("{source}: the registry's location {location} is not a git source")
            })?;
        let pinned_commit = pinned.as_ref().map(|l| l.commit.clone());
        let commit = fetch(dir, &git, pinned_commit.as_deref(), Some(&package))?;
        if !git.subdir.is_empty() {
            hoist(&package, &git.subdir)?;
        }
        commit
    } else {
        let (_, subdir) = super::registry::split_subdir(&location);
        let digest = client.fetch_archive(&location, &package)?;
        if !subdir.is_empty() {
            hoist(&package, &subdir)?;
        }
        digest
    };
    if let Some(l) = &pinned
        && l.digest.as_deref().is_some_and(|d| d != digest)
    {
        let _ = std::fs::remove_dir_all(&package);
        return Err(format!(
            "{source} version {version}: the registry now serves other content than was locked (digest {digest}, locked {}); if that is expected, run gpustack init -upgrade",
            l.digest.as_deref().unwrap_or_default()
        ));
    }
    let module_dir = if registry.subdir.is_empty() {
        package.clone()
    } else {
        package.join(&registry.subdir)
    };
    if let Err(why) = gpustack_lang::config::remote::stays_inside(&package, &module_dir) {
        let _ = std::fs::remove_dir_all(&package);
        return Err(format!("{source}: {why}"));
    }
    eprintln!(
        "Fetched {source} version {version}{}",
        if pinned.is_some() { " (locked)" } else { "" }
    );
    Ok(LockedModule {
        url: location,
        reference: None,
        commit: digest.clone(),
        constraint,
        version: Some(version),
        digest: Some(digest),
    })
}

/// Keeps only `subdir` of a fetched package (`URL//DIR` of the registry's location).
fn hoist(package: &Path, subdir: &str) -> Result<(), String> {
    let inner = package.join(subdir);
    if !inner.is_dir() {
        return Err(format!("the package has no directory {subdir}"));
    }
    let tmp = package.with_extension("hoist");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::rename(&inner, &tmp)
        .and_then(|()| std::fs::remove_dir_all(package))
        .and_then(|()| std::fs::rename(&tmp, package))
        .map_err(|e| format!("{}: {e}", package.display()))
}

/// Runs git for `source`: only the source's own transport is allowed (`GIT_ALLOW_PROTOCOL`
/// overrides any configuration, so no `ext::` helper and no local file unless the source is
/// one), no hook of the fresh repository runs, and nothing waits for a password. Callers put
/// `--` before every argument that comes from the stack.
fn git(source: &GitSource, args: &[&str], cwd: &Path) -> Result<String, String> {
    let out = Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .current_dir(cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", source.allowed_protocols())
        .env("GIT_PROTOCOL_FROM_USER", "0")
        .output()
        .map_err(|e| format!("cannot run git (module sources from git need it): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Checks the source out at its pinned commit, or at what its ref names now; returns the
/// commit. The checkout is made aside and moved into place (its own, or `target`) when
/// complete.
fn fetch(
    dir: &Path,
    source: &GitSource,
    pinned: Option<&str>,
    target: Option<&Path>,
) -> Result<String, String> {
    let modules = dir.join(gpustack_lang::config::remote::MODULES_DIR);
    std::fs::create_dir_all(&modules).map_err(|e| format!("{}: {e}", modules.display()))?;
    let tmp = modules.join(format!(".fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let result = (|| {
        git(source, &["init", "-q"], &tmp)?;
        let reference = source.reference.as_deref().unwrap_or("HEAD");
        git(
            source,
            &["fetch", "-q", "--depth", "1", "--", &source.url, reference],
            &tmp,
        )?;
        let named = git(source, &["rev-parse", "--verify", "FETCH_HEAD"], &tmp)?;
        let commit = match pinned {
            Some(pinned) if pinned != named => {
                // The ref moved since it was locked: the locked commit is what the stack uses.
                git(
                    source,
                    &["fetch", "-q", "--depth", "1", "--", &source.url, pinned],
                    &tmp,
                )
                .map_err(|e| {
                    format!("{e}\nthe locked commit {pinned} of {} is gone; run gpustack init --upgrade to lock what {reference} names now ({named})", source.url)
                })?;
                pinned.to_owned()
            }
            _ => named,
        };
        if !valid_commit(&commit) {
            return Err(format!(
                "git named \"{commit}\" for {}, which is not a commit id",
                source.url
            ));
        }
        git(
            source,
            &[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "-q",
                "--detach",
                &commit,
            ],
            &tmp,
        )?;
        Ok::<_, String>(commit)
    })();
    let commit = match result {
        Ok(commit) => commit,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let _ = std::fs::remove_dir_all(tmp.join(".git"));
    let target = target.map_or_else(|| source.checkout_dir(dir, &commit), Path::to_path_buf);
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&tmp, &target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(commit)
}
