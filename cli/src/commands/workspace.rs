//! `gpustack workspace`: several states of one stack, each where Terraform's backend of the
//! same kind keeps a workspace's (`BackendConfig::for_workspace`), selected per directory in
//! `.gpustack/environment` or by `TF_WORKSPACE`, as Terraform selects them.

use super::backend::{current_workspace, full, lock, runtime, select_workspace, settings};
use gpustack_engine::{InputSource, Session, VariableArgs};
use gpustack_lang::config::Files;
use gpustack_state::DEFAULT_WORKSPACE;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

fn error(message: impl std::fmt::Display) -> ExitCode {
    super::report::fail(&message.to_string());
    ExitCode::from(1)
}

/// The stack, its backend's base configuration and its encryption.
fn open_stack(
    dir: &Path,
) -> Result<(gpustack_state::BackendConfig, gpustack_state::Encryptions), String> {
    let mut session = Session::open(
        crate::registry(),
        dir,
        &Files::Disk,
        InputSource::Args(&VariableArgs::environment()),
    );
    if session.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        super::report::diagnostics(&sources, &diagnostics, false);
        return Err("the stack does not load".to_owned());
    }
    settings(&mut session)
}

async fn existing(
    dir: &Path,
    config: &gpustack_state::BackendConfig,
) -> Result<Vec<String>, String> {
    gpustack_backends::workspaces(config, dir)
        .await
        .map_err(|e| full(&e))
}

pub fn list(dir: &Path) -> ExitCode {
    let current = match current_workspace(dir) {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let (config, _) = match open_stack(dir) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    runtime().block_on(async {
        let names = match existing(dir, &config).await {
            Ok(n) => n,
            Err(e) => return error(e),
        };
        for name in names {
            let mark = if name == current { "*" } else { " " };
            println!("{mark} {name}");
        }
        println!();
        ExitCode::SUCCESS
    })
}

pub fn show(dir: &Path) -> ExitCode {
    match current_workspace(dir) {
        Ok(name) => {
            println!("{name}");
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

/// Refused while `TF_WORKSPACE` chooses the workspace, as Terraform refuses it.
fn overridden() -> Option<ExitCode> {
    std::env::var("TF_WORKSPACE")
        .ok()
        .filter(|w| !w.is_empty())
        .map(|w| {
            error(format!(
                "the selected workspace is currently overridden using the TF_WORKSPACE environment variable (\"{w}\"); to select a new workspace, either update this environment variable or unset it"
            ))
        })
}

pub fn select(dir: &Path, name: &str, or_create: bool, lock_timeout: Duration) -> ExitCode {
    if let Some(code) = overridden() {
        return code;
    }
    if let Err(e) = gpustack_state::check_workspace_name(name) {
        return error(e);
    }
    let (config, encryptions) = match open_stack(dir) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    let exists = runtime().block_on(existing(dir, &config));
    match exists {
        Ok(names) if names.iter().any(|n| n == name) => {}
        Ok(_) if or_create => return create(dir, name, &config, encryptions, lock_timeout),
        Ok(_) => {
            return error(format!(
                "workspace \"{name}\" doesn't exist. You can create this workspace with the \"new\" subcommand or include the \"-or-create\" flag with the \"select\" subcommand"
            ));
        }
        Err(e) => return error(e),
    }
    if let Err(e) = select_workspace(dir, name) {
        return error(e);
    }
    println!("Switched to workspace \"{name}\".");
    ExitCode::SUCCESS
}

pub fn new(dir: &Path, name: &str, lock_timeout: Duration) -> ExitCode {
    if let Some(code) = overridden() {
        return code;
    }
    if let Err(e) = gpustack_state::check_workspace_name(name) {
        return error(e);
    }
    let (config, encryptions) = match open_stack(dir) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    match runtime().block_on(existing(dir, &config)) {
        Ok(names) if names.iter().any(|n| n == name) => {
            error(format!("workspace \"{name}\" already exists"))
        }
        Ok(_) => create(dir, name, &config, encryptions, lock_timeout),
        Err(e) => error(e),
    }
}

/// Writes the first version of `name`'s state (empty: its lineage and digest key), as
/// Terraform writes an empty state for a new workspace, and selects it.
fn create(
    dir: &Path,
    name: &str,
    config: &gpustack_state::BackendConfig,
    encryptions: gpustack_state::Encryptions,
    lock_timeout: Duration,
) -> ExitCode {
    let written = runtime().block_on(async {
        let backend = super::backend::open_workspace(dir, config, name, encryptions.state).await?;
        let _guard = lock(backend.as_ref(), "workspace new", lock_timeout).await?;
        if backend.read().await.map_err(|e| full(&e))?.is_none() {
            backend
                .write(&gpustack_engine::with_digest_key(None))
                .await
                .map_err(|e| full(&e))?;
        }
        Ok::<_, String>(())
    });
    if let Err(e) = written.and_then(|()| select_workspace(dir, name)) {
        return error(e);
    }
    println!(
        "Created and switched to workspace \"{name}\"!\n\nYou're now on a new, empty workspace. Workspaces isolate their state, so if you run \"gpustack plan\" gpustack will not see any existing state for this configuration."
    );
    ExitCode::SUCCESS
}

pub fn delete(dir: &Path, name: &str, force: bool, lock_timeout: Duration) -> ExitCode {
    if let Err(e) = gpustack_state::check_workspace_name(name) {
        return error(e);
    }
    if name == DEFAULT_WORKSPACE {
        return error("can't delete the default workspace");
    }
    match current_workspace(dir) {
        Ok(current) if current == name => {
            return error(format!(
                "workspace \"{name}\" is your active workspace: you cannot delete the currently active workspace; select another first"
            ));
        }
        Err(e) => return error(e),
        Ok(_) => {}
    }
    let (config, encryptions) = match open_stack(dir) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    let deleted = runtime().block_on(async {
        if !existing(dir, &config).await?.iter().any(|n| n == name) {
            return Err(format!("workspace \"{name}\" doesn't exist"));
        }
        let backend =
            super::backend::open_workspace(dir, &config, name, encryptions.state).await?;
        let guard = lock(backend.as_ref(), "workspace delete", lock_timeout).await?;
        let state = backend.read().await.map_err(|e| full(&e))?;
        let managed = state.as_ref().map_or(0, |s| s.resources.len());
        if managed > 0 && !force {
            return Err(format!(
                "workspace \"{name}\" is not empty: its state records {managed} object(s). Deleting it would leave them running with nothing managing them; destroy them first (gpustack destroy in that workspace), or delete it anyway with -force"
            ));
        }
        backend.delete().await.map_err(|e| full(&e))?;
        guard.release().await;
        Ok(managed)
    });
    match deleted {
        Ok(managed) => {
            // A local workspace's directory goes with its state (and its lock file) when
            // nothing else is in it.
            if let gpustack_state::BackendConfig::Local {
                path: Some(path), ..
            } = config.for_workspace(name)
            {
                let state = dir.join(path);
                let mut lock_file = state.clone().into_os_string();
                lock_file.push(".lock");
                let _ = std::fs::remove_file(lock_file);
                if let Some(parent) = state.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
            }
            if managed > 0 {
                eprintln!(
                    "Warning: workspace \"{name}\" was deleted with {managed} object(s) in its state; gpustack no longer manages them."
                );
            }
            println!("Deleted workspace \"{name}\"!");
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}
