//! Choosing, opening and locking the state backend; `gpustack init` and state migration.
//!
//! `.gpustack/backend.json` records the backend a stack was last initialised with. A stack
//! whose backend block changed refuses to run until `init --migrate-state` (copy the state) or
//! `init --reconfigure` (start from the new backend as it is), so that no run ever plans from
//! an empty state while the real one sits in the old backend.

use gpustack_engine::{Session, SettingsError};
use gpustack_state::{Backend, BackendConfig, Encryption, Encryptions, LockGuard, LockInfo, State};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The environment variable that holds an `encryption` block's body, laid over the stack's
/// (for CI: the passphrase or key comes from a secret store, never from a file).
pub const ENCRYPTION_ENV: &str = "GPUSTACK_ENCRYPTION";

/// What the stack says of its state: where it lives (its backend block) and how states and
/// plans are encrypted (its `encryption` block with GPUSTACK_ENCRYPTION over it), asked of the
/// engine once. An encryption configuration error is reported at its line.
pub fn settings(session: &mut Session) -> Result<(BackendConfig, Encryptions), String> {
    let overrides = backend_overrides(session.dir())?;
    settings_with(session, &overrides)
}

/// Only the backend the stack keeps its state in (force-unlock needs no encryption).
pub fn backend_config(session: &Session) -> Result<BackendConfig, String> {
    let overrides = backend_overrides(session.dir())?;
    session
        .backend_config(&overrides)
        .map_err(|e| e.to_string())
}

/// As [`settings`], with the backend's partial configuration given.
fn settings_with(
    session: &mut Session,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<(BackendConfig, Encryptions), String> {
    let environment = std::env::var(ENCRYPTION_ENV).ok();
    match session.settings(environment.as_deref(), overrides) {
        Ok(settings) => {
            let encryptions = match &settings.encryption {
                None => Encryptions::none(),
                Some(config) => gpustack_backends::encryptions(config).map_err(|e| full(&e))?,
            };
            Ok((settings.backend, encryptions))
        }
        Err(e) => {
            if let SettingsError::Encryption { diagnostics } = &e {
                let color =
                    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal();
                super::report::diagnostics(session.sources(), diagnostics, color);
            }
            Err(e.to_string())
        }
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("Error: cannot start the async runtime: {e}");
            std::process::exit(1)
        })
}

fn error(message: impl std::fmt::Display) -> ExitCode {
    super::report::fail(&message.to_string());
    ExitCode::from(1)
}

/// Where the selected workspace is kept, as Terraform keeps it in `.terraform/environment`.
fn environment_path(dir: &Path) -> PathBuf {
    dir.join(".gpustack").join("environment")
}

/// The workspace a run in `dir` is in: `TF_WORKSPACE` when set, else the one `workspace
/// select` recorded, else `default`.
pub fn current_workspace(dir: &Path) -> Result<String, String> {
    if let Ok(name) = std::env::var("TF_WORKSPACE")
        && !name.is_empty()
    {
        gpustack_state::check_workspace_name(&name).map_err(|e| format!("TF_WORKSPACE: {e}"))?;
        return Ok(name);
    }
    match std::fs::read_to_string(environment_path(dir)) {
        Ok(text) => {
            let name = text.trim().to_owned();
            gpustack_state::check_workspace_name(&name)
                .map_err(|e| format!("{}: {e}", environment_path(dir).display()))?;
            Ok(name)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(gpustack_state::DEFAULT_WORKSPACE.to_owned())
        }
        Err(e) => Err(format!("{}: {e}", environment_path(dir).display())),
    }
}

/// Records the workspace `dir`'s runs are in.
pub fn select_workspace(dir: &Path, name: &str) -> Result<(), String> {
    let path = environment_path(dir);
    std::fs::create_dir_all(dir.join(".gpustack"))
        .and_then(|()| super::files::write_replacing(&path, name.as_bytes(), super::files::SHARED))
        .map_err(|e| format!("cannot record the workspace in {}: {e}", path.display()))
}

/// The largest backend configuration read: a `-backend-config` file or what `init` recorded,
/// a few `key = value` lines.
const MAX_BACKEND_CONFIG_BYTES: u64 = 1 << 20;

/// The bytes of a backend configuration file, `None` where there is none: a device or FIFO
/// given as one is an error naming what it is, never read without end or waited on.
fn read_backend_file(path: &Path) -> Result<Option<Vec<u8>>, gpustack_fs::ReadError> {
    match gpustack_fs::read_bounded(path, MAX_BACKEND_CONFIG_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(gpustack_fs::ReadError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

fn record_path(dir: &Path) -> PathBuf {
    dir.join(".gpustack").join("backend.json")
}

/// Where `init -backend-config` keeps the backend's partial configuration for the commands
/// after it (0600: it may hold credentials), as Terraform keeps it in its working directory.
fn overrides_path(dir: &Path) -> PathBuf {
    dir.join(".gpustack").join("backend-config.json")
}

/// The partial configuration `init -backend-config` recorded; none when it gave none.
fn backend_overrides(dir: &Path) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let path = overrides_path(dir);
    match read_backend_file(&path) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        Ok(None) => Ok(serde_json::Map::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// `-backend-config` arguments, in order: `KEY=VALUE` pairs, or files of `key = value` lines
/// (HCL literals). A value given as `KEY=VALUE` is a boolean or a number when it reads as
/// one, as Terraform converts it to the argument's type.
pub fn parse_backend_config(
    args: &[String],
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let mut out = serde_json::Map::new();
    for arg in args {
        let path = Path::new(arg);
        match arg.split_once('=') {
            Some((key, value)) if !path.is_file() && !key.trim().is_empty() => {
                let value = match value {
                    "true" => serde_json::Value::Bool(true),
                    "false" => serde_json::Value::Bool(false),
                    v => v
                        .parse::<i64>()
                        .map(serde_json::Value::from)
                        .unwrap_or_else(|_| serde_json::Value::String(v.to_owned())),
                };
                out.insert(key.trim().to_owned(), value);
            }
            _ => {
                let text = gpustack_fs::read_text_bounded(path, MAX_BACKEND_CONFIG_BYTES)
                    .map_err(|e| format!("-backend-config={arg}: {e}"))?;
                let body = hcl_edit::parser::parse_body(&text)
                    .map_err(|e| format!("-backend-config={arg}: {e}"))?;
                for structure in body.into_iter() {
                    let hcl_edit::structure::Structure::Attribute(attr) = structure else {
                        return Err(format!(
                            "-backend-config={arg}: a backend configuration file holds only key = value lines"
                        ));
                    };
                    let value = gpustack_lang::expr::literal::literal_value(&attr.value)
                        .ok_or_else(|| {
                            format!(
                                "-backend-config={arg}: {} is not a literal value",
                                attr.key.as_str()
                            )
                        })?;
                    out.insert(attr.key.as_str().to_owned(), value.to_json());
                }
            }
        }
    }
    Ok(out)
}

/// The backend `init` recorded; a record this version cannot read is an error, never "none"
/// (that would skip the check that the backend did not change).
fn recorded(dir: &Path) -> Result<Option<BackendConfig>, String> {
    let path = record_path(dir);
    match read_backend_file(&path) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "cannot read {} ({e}); was it written by a newer gpustack? Run `gpustack init --reconfigure` to record the configured backend again",
                path.display()
            )
        }),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn record(dir: &Path, config: &BackendConfig) -> std::io::Result<()> {
    let path = record_path(dir);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut json = serde_json::to_vec_pretty(config).unwrap_or_default();
    json.push(b'\n');
    super::files::write_private(&path, &json)
}

/// One line naming a backend configuration, for messages.
fn describe(config: &BackendConfig) -> String {
    match config {
        BackendConfig::Local { path, .. } => format!(
            "local ({})",
            path.as_deref().unwrap_or(".gpustack/state.json")
        ),
        BackendConfig::Kubernetes(k) => format!(
            "kubernetes (Secret gpustack-state-{} in namespace {})",
            k.secret_suffix, k.namespace
        ),
        BackendConfig::S3(s) => format!("s3 (s3://{}/{})", s.bucket, s.key),
    }
}

fn has_local_state(dir: &Path) -> bool {
    dir.join(".gpustack").join("state.json").is_file()
}

/// The backend `config` names, at the current workspace's state, encrypted with
/// `encryption`, refusing a backend that changed since `init` recorded it.
pub async fn open(
    dir: &Path,
    config: &BackendConfig,
    encryption: Arc<Encryption>,
) -> Result<Box<dyn Backend>, String> {
    let workspace = current_workspace(dir)?;
    open_workspace(dir, config, &workspace, encryption).await
}

/// As [`open`], at `workspace`'s state.
pub async fn open_workspace(
    dir: &Path,
    config: &BackendConfig,
    workspace: &str,
    encryption: Arc<Encryption>,
) -> Result<Box<dyn Backend>, String> {
    match recorded(dir)? {
        Some(before) if !before.same_location(config) => {
            return Err(format!(
                "the stack's backend changed from {} to {}. Run `gpustack init --migrate-state` to copy the state to the new backend, or `gpustack init --reconfigure` to use the new backend as it is",
                describe(&before),
                describe(config)
            ));
        }
        None if config.kind() != "local" && has_local_state(dir) => {
            return Err(format!(
                "the stack now keeps its state in {}, but a local state exists at .gpustack/state.json. Run `gpustack init --migrate-state` to copy it there",
                describe(config)
            ));
        }
        _ => {}
    }
    gpustack_backends::open_encrypted(&config.for_workspace(workspace), dir, encryption)
        .await
        .map_err(|e| full(&e))
}

pub use gpustack_protocol::error_chain as full;

/// The stack's backend locked for `operation`, and the state it holds: how every command that
/// writes the state outside plan and apply (`import`, `state import-terraform`) begins.
pub async fn open_locked(
    dir: &Path,
    session: &mut Session,
    operation: &str,
    timeout: Duration,
) -> Result<(Box<dyn Backend>, LockGuard, Option<State>), String> {
    let (config, encryptions) = settings(session)?;
    let backend = open(dir, &config, encryptions.state).await?;
    let guard = lock(backend.as_ref(), operation, timeout).await?;
    let state = backend.read().await.map_err(|e| full(&e))?;
    Ok((backend, guard, state))
}

/// Cleared by `-lock=false`: the run takes no state lock, as Terraform's does not, and says
/// so once.
static LOCKING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

pub fn set_locking(on: bool) {
    LOCKING.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub async fn lock(
    backend: &dyn Backend,
    operation: &str,
    timeout: Duration,
) -> Result<LockGuard, String> {
    if !LOCKING.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "Warning: -lock=false: this {operation} holds no state lock; another run may change the state meanwhile."
        );
        return Ok(LockGuard::new(Box::pin(async { Ok(()) })));
    }
    let acquiring = super::interrupt::acquiring();
    let locked = backend.lock(LockInfo::new(operation), timeout).await;
    if let Ok(guard) = &locked {
        super::interrupt::hold(guard);
    }
    drop(acquiring);
    match locked {
        Ok(guard) => {
            if let Some(notice) = &guard.notice {
                eprintln!("{notice}");
            }
            Ok(guard)
        }
        Err(e) => {
            let mut message = format!("{}.", full(&e));
            if let gpustack_state::LockError::Held(held) = &e {
                message.push_str(&format!(
                    "\nIf that run is gone, release it with: gpustack force-unlock {}",
                    held.id
                ));
                if let Some(ttl) = backend.lock_ttl() {
                    message.push_str(&format!(
                        "\nor wait for it: a run with --lock-timeout longer than the lock's TTL ({}s here) takes it over once it has seen it unrenewed that long",
                        ttl.as_secs()
                    ));
                }
            }
            Err(message)
        }
    }
}

pub async fn read(backend: &dyn Backend) -> Result<Option<State>, String> {
    backend.read().await.map_err(|e| full(&e))
}

/// `gpustack init`: checks that the backend answers and records it; with `migrate_state`,
/// copies the state from the backend recorded before (the local default when none was).
pub fn init(
    session: &mut Session,
    dir: &Path,
    migrate_state: bool,
    reconfigure: bool,
    backend_config: &[String],
    lock_timeout: Duration,
) -> ExitCode {
    // The partial configuration given now, or the one recorded before unless -reconfigure
    // starts afresh.
    let overrides = if !backend_config.is_empty() {
        match parse_backend_config(backend_config) {
            Ok(o) => o,
            Err(e) => return error(e),
        }
    } else if reconfigure {
        serde_json::Map::new()
    } else {
        match backend_overrides(dir) {
            Ok(o) => o,
            Err(e) => return error(e),
        }
    };
    // Both ends of a migration read and write through the stack's state encryption: to
    // encrypt a state while moving it, its fallback reads the plaintext one.
    let (config, encryption) = match settings_with(session, &overrides) {
        Ok((config, encryptions)) => (config, encryptions.state),
        Err(e) => return error(e),
    };
    let path = overrides_path(dir);
    let recorded_overrides = if overrides.is_empty() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    } else {
        std::fs::create_dir_all(dir.join(".gpustack")).and_then(|()| {
            let mut json = serde_json::to_vec_pretty(&overrides).unwrap_or_default();
            json.push(b'\n');
            super::files::write_private(&path, &json)
        })
    };
    if let Err(e) = recorded_overrides {
        return error(format!("cannot record {}: {e}", path.display()));
    }
    let before = match recorded(dir) {
        Ok(before) => before.unwrap_or_default(),
        Err(e) if reconfigure => {
            eprintln!("Warning: {e}");
            BackendConfig::default()
        }
        Err(e) => return error(e),
    };
    runtime().block_on(async {
        let moved = !before.same_location(&config);
        let workspace = match current_workspace(dir) {
            Ok(w) => w,
            Err(e) => return error(e),
        };
        let new = match gpustack_backends::open_encrypted(
            &config.for_workspace(&workspace),
            dir,
            encryption.clone(),
        )
        .await
        {
            Ok(b) => b,
            Err(e) => return error(full(&e)),
        };
        let _new_lock = match lock(new.as_ref(), "init", lock_timeout).await {
            Ok(g) => g,
            Err(e) => return error(e),
        };
        let existing = match read(new.as_ref()).await {
            Ok(s) => s,
            Err(e) => return error(e),
        };
        if moved && !reconfigure {
            let old = match gpustack_backends::open_encrypted(
                &before.for_workspace(&workspace),
                dir,
                encryption.clone(),
            )
            .await
            {
                Ok(b) => b,
                Err(e) => return error(full(&e)),
            };
            let _old_lock = match lock(old.as_ref(), "init", lock_timeout).await {
                Ok(g) => g,
                Err(e) => return error(e),
            };
            let old_state = match read(old.as_ref()).await {
                Ok(s) => s,
                Err(e) => return error(e),
            };
            if let Some(state) = old_state {
                if !migrate_state {
                    return error(format!(
                        "the backend changed from {} to {}, and the old one holds a state (serial {}, {} objects). Run `gpustack init --migrate-state` to copy it, or `gpustack init --reconfigure` to leave it behind",
                        describe(&before),
                        describe(&config),
                        state.serial,
                        state.resources.len()
                    ));
                }
                match &existing {
                    Some(there) if there.lineage != state.lineage => {
                        return error(format!(
                            "{} already holds a different state (lineage {}, serial {}); it was not overwritten. Choose another location, or remove that state first",
                            new.location(),
                            there.lineage,
                            there.serial
                        ));
                    }
                    Some(there) if there.serial > state.serial => {
                        return error(format!(
                            "{} holds a newer state of this stack (serial {} > {}); it was not overwritten",
                            new.location(),
                            there.serial,
                            state.serial
                        ));
                    }
                    _ => {}
                }
                if let Err(e) = new.write(&state).await {
                    return error(full(&e));
                }
                println!(
                    "Copied the state (serial {}, {} objects) from {} to {}.\nThe old state is left where it was; remove it once you have checked the new one.",
                    state.serial,
                    state.resources.len(),
                    old.location(),
                    new.location()
                );
            }
        }
        if let Err(e) = record(dir, &config) {
            return error(format!("cannot record the backend in {}: {e}", record_path(dir).display()));
        }
        let current = if moved && migrate_state {
            read(new.as_ref()).await.ok().flatten()
        } else {
            existing
        };
        match current {
            Some(state) => println!(
                "Initialized: the state is in {} (serial {}, {} objects).",
                new.location(),
                state.serial,
                state.resources.len()
            ),
            None => println!(
                "Initialized: the state will be kept in {} (empty so far).",
                new.location()
            ),
        }
        ExitCode::SUCCESS
    })
}
