//! Shared helpers for the end-to-end tests: where the binary, the repository and the fixtures are.
// Test support: failing loudly is the point.
#![allow(clippy::panic, clippy::unwrap_used)]

pub mod aks;
pub mod cluster;
pub mod conformance;
pub mod faults;
pub mod gke;
pub mod gpusim;
pub mod http;
pub mod measure;
pub mod moto;
pub mod receiver;
pub mod registry;
pub mod terraform_plan;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the parent of this crate). Cargo names the crate's directory when it
/// runs a test; the directory it was compiled in is the fallback (a benchmark run by hand),
/// because a build cached outside the repository may have been compiled in another clone.
pub fn repo_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A state file's text without the attribute `name` anywhere, as a state written before the
/// attribute existed has it.
pub fn unrecorded(state: &str, name: &str) -> String {
    fn strip(value: &mut serde_json::Value, name: &str) {
        match value {
            serde_json::Value::Object(o) => {
                o.remove(name);
                o.values_mut().for_each(|v| strip(v, name));
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| strip(v, name)),
            _ => {}
        }
    }
    let mut json: serde_json::Value = serde_json::from_str(state).expect("a state file");
    strip(&mut json, name);
    serde_json::to_string_pretty(&json).unwrap()
}

pub fn fixtures_dir() -> PathBuf {
    repo_root().join("tests").join("fixtures")
}

/// A file of the pinned upstream data (`tests/cluster/upstream.lock`): `../shared/upstream`
/// where it lies next to the repository, else the copy `tests/cluster/upstream` fetched into
/// the test world's cache and checked against the pinned digests. Resolved once per process;
/// the script says on stderr which directory it is.
pub fn upstream(path: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let output = std::process::Command::new(repo_root().join("tests/cluster/upstream"))
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run tests/cluster/upstream");
        assert!(
            output.status.success(),
            "tests/cluster/upstream found no upstream data (see its message above)"
        );
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    })
    .join(path)
}

/// The `gpustack` binary of this build: `$GPUSTACK_BIN`, else beside the running executable
/// (binaries live in `target/<profile>`, test executables one level down in `deps`).
pub fn gpustack_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("GPUSTACK_BIN") {
        return PathBuf::from(bin);
    }
    let name = format!("gpustack{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().unwrap_or_default();
    let candidates: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(&name))
        .collect();
    match candidates.iter().find(|c| c.is_file()) {
        Some(bin) => bin.clone(),
        None => panic!(
            "gpustack binary not found at {candidates:?}: build it with cargo build -p gpustack (cargo test --workspace does)"
        ),
    }
}

/// Runs gpustack in `dir` with a clean environment for colour and variables.
pub fn gpustack(dir: &Path, args: &[&str]) -> Output {
    gpustack_env(dir, args, &[])
}

/// Every file in HCL's native syntax (`*.hcl`, `*.tf`) under `dir`, recursively, skipping
/// build and state directories and what Terraform writes itself.
pub fn hcl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    pending.push(path);
                }
            } else if (name.ends_with(".hcl") || name.ends_with(".tf")) && !name.starts_with('.') {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Runs gpustack with extra environment variables (e.g. `GPUSTACK_TEST_PROVIDER=1`).
pub fn gpustack_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    gpustack_command(dir, args, env)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gpustack: {e}"))
}

/// gpustack in `dir` as [`gpustack_env`] runs it, to spawn or to add to.
pub fn gpustack_command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(gpustack_bin());
    command
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("GPUSTACK_LOG")
        .env_remove("GPUSTACK_ENCRYPTION");
    for (key, _) in std::env::vars() {
        if key.starts_with("GPUSTACK_VAR_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    command
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs a gpustack command and SIGKILLs it as soon as `done` is true (checked every 50 ms,
/// for at most 60 s): a crash at a chosen moment, such as right after a cloud create.
pub fn kill_when(mut command: Command, mut done: impl FnMut() -> bool) {
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start gpustack");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "the moment to kill gpustack never came"
        );
        assert!(
            child.try_wait().ok().flatten().is_none(),
            "gpustack ended before the moment to kill it"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SIGKILL: nothing of gpustack runs after this, no state write, no cleanup.
    child.kill().expect("kill gpustack");
    let _ = child.wait();
}

/// Releases the local state lock a killed run left, as its operator would with
/// `gpustack force-unlock ID`.
pub fn force_unlock_local(dir: &Path) {
    let lock = dir.join(".gpustack/state.json.lock");
    let Ok(text) = std::fs::read_to_string(&lock) else {
        return;
    };
    let info: serde_json::Value = serde_json::from_str(&text).expect("the lock file is JSON");
    let id = info["id"].as_str().expect("the lock has an id").to_owned();
    let out = gpustack(dir, &["force-unlock", &id]);
    assert!(out.status.success(), "force-unlock: {}", stderr(&out));
}
