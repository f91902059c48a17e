//! `gpustack init`'s module step: every git module source of the stack (and of the modules it
//! fetches) checked out at a pinned commit under `.gpustack/modules`, with the commits in the
//! lock file. A locked source is fetched at its locked commit until `--upgrade` asks for what
//! its ref names now.

use gpustack_lang::config::remote::{GitSource, LockedModule, ModuleLock, valid_commit};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::SourceMap;
use std::path::Path;
use std::process::Command;

/// Rounds of fetching: a fetched module may call git modules of its own.
const MAX_ROUNDS: usize = 16;

/// Installs what is missing; returns how many sources were fetched.
pub fn install(dir: &Path, upgrade: bool) -> Result<usize, String> {
    let mut lock = ModuleLock::read(dir).map_err(|e| e.to_string())?;
    lock.version = 1;
    let mut fetched = 0;
    let mut upgraded = std::collections::HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let mut sources = SourceMap::new(dir);
        let mut diags = Diags::default();
        let stack = gpustack_lang::config::load_stack(dir, &mut sources, &mut diags);
        let mut wanted: Vec<(String, GitSource)> = stack
            .modules
            .iter()
            .flat_map(|m| m.calls.values())
            .filter_map(|c| {
                GitSource::parse(&c.source)
                    .ok()
                    .flatten()
                    .map(|g| (c.source.clone(), g))
            })
            .collect();
        wanted.sort_by(|a, b| a.0.cmp(&b.0));
        wanted.dedup_by(|a, b| a.0 == b.0);
        let mut round = 0;
        for (source, git) in wanted {
            let locked = lock.modules.get(&source).cloned();
            let refresh = upgrade && upgraded.insert(source.clone());
            if let Some(locked) = &locked
                && !refresh
                && git.checkout_dir(dir, &locked.commit).is_dir()
            {
                continue;
            }
            let pinned = locked.filter(|_| !refresh).map(|l| l.commit);
            let commit = fetch(dir, &git, pinned.as_deref())?;
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
            lock.modules.insert(
                source,
                LockedModule {
                    url: git.url.clone(),
                    reference: git.reference.clone(),
                    commit,
                },
            );
            round += 1;
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
/// commit. The checkout is made aside and moved into place when complete.
fn fetch(dir: &Path, source: &GitSource, pinned: Option<&str>) -> Result<String, String> {
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
    let target = source.checkout_dir(dir, &commit);
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&tmp, &target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(commit)
}
