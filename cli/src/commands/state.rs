//! Commands that read or edit the state directly: state list/show/rm/mv/pull, import, output,
//! show, force-unlock.

use super::backend::{full, lock, runtime};
use gpustack_engine::{InputSource, Session, VariableArgs};
use gpustack_lang::config::Files;
use gpustack_state::{Backend, ResourceState, State};
use std::future::Future;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub(super) fn error(message: impl std::fmt::Display) -> ExitCode {
    super::report::fail(&message.to_string());
    ExitCode::from(1)
}

/// The stack's backend, from its settings, with its state encryption (root variables the
/// encryption block reads come from GPUSTACK_VAR_*).
async fn stack_backend(dir: &Path) -> Result<Box<dyn Backend>, ExitCode> {
    stack_backend_encrypted(dir)
        .await
        .map(|(backend, _)| backend)
}

async fn stack_backend_encrypted(
    dir: &Path,
) -> Result<(Box<dyn Backend>, gpustack_state::Encryptions), ExitCode> {
    let mut session = Session::open(
        crate::registry(),
        dir,
        &Files::Disk,
        InputSource::Args(&VariableArgs::environment()),
    );
    let (config, encryptions) = super::backend::settings(&mut session).map_err(error)?;
    let backend = super::backend::open(dir, &config, encryptions.state.clone())
        .await
        .map_err(error)?;
    Ok((backend, encryptions))
}

/// The state, which must exist.
async fn read(backend: &dyn Backend) -> Result<State, ExitCode> {
    match backend.read().await {
        Ok(Some(state)) => Ok(state),
        Ok(None) => Err(error(format!(
            "there is no state at {}: nothing has been applied yet",
            backend.location()
        ))),
        Err(e) => Err(error(full(&e))),
    }
}

async fn stack_state(dir: &Path) -> Result<State, ExitCode> {
    let backend = stack_backend(dir).await?;
    read(backend.as_ref()).await
}

/// Runs a command's body in the runtime the backends need.
pub(super) fn run(body: impl Future<Output = ExitCode>) -> ExitCode {
    runtime().block_on(body)
}

/// The attributes with every sensitive part (a digest in the state) shown as
/// `(sensitive value)`.
fn masked(r: &ResourceState) -> serde_json::Value {
    fn mask(value: &mut serde_json::Value, path: &[gpustack_protocol::PathStep]) {
        use gpustack_protocol::PathStep;
        let Some((first, rest)) = path.split_first() else {
            if !value.is_null() {
                *value = serde_json::Value::String(gpustack_protocol::SENSITIVE.into());
            }
            return;
        };
        let next = match (value, first) {
            (serde_json::Value::Object(map), PathStep::Key(k)) => map.get_mut(k),
            (serde_json::Value::Array(items), PathStep::Index(i)) => items.get_mut(*i),
            _ => None,
        };
        if let Some(next) = next {
            mask(next, rest);
        }
    }
    let mut attributes = r.attributes.clone();
    for path in &r.sensitive_paths {
        mask(&mut attributes, path);
    }
    attributes
}

pub fn list(dir: &Path) -> ExitCode {
    run(async {
        let backend = match stack_backend(dir).await {
            Ok(b) => b,
            Err(c) => return c,
        };
        match backend.read().await {
            Ok(Some(state)) => {
                for r in &state.resources {
                    println!("{}", r.address);
                }
                ExitCode::SUCCESS
            }
            Ok(None) => ExitCode::SUCCESS,
            Err(e) => error(full(&e)),
        }
    })
}

pub fn show_resource(dir: &Path, address: &str) -> ExitCode {
    let state = match run_state(dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let Some(r) = state.resource(address) else {
        return error(format!("{address} is not in the state"));
    };
    println!("# {}", r.address);
    println!(
        "{}",
        serde_json::to_string_pretty(&masked(r)).unwrap_or_default()
    );
    ExitCode::SUCCESS
}

/// Edits the state under the lock and writes it back with the next serial.
fn edit(
    dir: &Path,
    operation: &str,
    lock_timeout: Duration,
    change: impl FnOnce(&mut State) -> Result<String, String>,
) -> ExitCode {
    run(async {
        let backend = match stack_backend(dir).await {
            Ok(b) => b,
            Err(c) => return c,
        };
        let _guard = match lock(backend.as_ref(), operation, lock_timeout).await {
            Ok(g) => g,
            Err(e) => return error(e),
        };
        let mut state = match read(backend.as_ref()).await {
            Ok(s) => s,
            Err(c) => return c,
        };
        match change(&mut state) {
            Ok(message) => {
                state.serial += 1;
                if let Err(e) = backend.write(&state).await {
                    return error(full(&e));
                }
                println!("{message}");
                ExitCode::SUCCESS
            }
            Err(e) => error(e),
        }
    })
}

/// The state, read in a runtime of its own, for commands that only read it.
fn run_state(dir: &Path) -> Result<State, ExitCode> {
    runtime().block_on(stack_state(dir))
}

pub fn rm(dir: &Path, addresses: &[String], lock_timeout: Duration) -> ExitCode {
    edit(dir, "state rm", lock_timeout, |state| {
        let mut removed = 0;
        for address in addresses {
            let before = state.resources.len();
            state.resources.retain(|r| {
                r.address != *address
                    && !r.address.starts_with(&format!("{address}["))
                    && !r.address.starts_with(&format!("{address}."))
            });
            if state.resources.len() == before {
                return Err(format!("{address} is not in the state"));
            }
            removed += before - state.resources.len();
        }
        Ok(format!(
            "Removed {removed} object(s) from the state; the objects themselves were not touched."
        ))
    })
}

/// `taint ADDRESS` (`tainted`) and `untaint ADDRESS`: marks an object for replacement by the
/// next plan, or takes the mark away, as Terraform's commands do.
pub fn taint(
    dir: &Path,
    address: &str,
    tainted: bool,
    allow_missing: bool,
    lock_timeout: Duration,
) -> ExitCode {
    let operation = if tainted { "taint" } else { "untaint" };
    let mut missing = false;
    let code = edit(dir, operation, lock_timeout, |state| {
        let Some(r) = state
            .resources
            .iter_mut()
            .find(|r| r.address == address && r.mode == gpustack_state::ResourceMode::Managed)
        else {
            missing = true;
            return Err(format!(
                "no such resource instance: {address} is not a managed resource in the state"
            ));
        };
        if !tainted && !r.tainted {
            return Err(format!("resource instance {address} is not tainted"));
        }
        r.tainted = tainted;
        Ok(if tainted {
            format!("Resource instance {address} has been marked as tainted.")
        } else {
            format!("Resource instance {address} has been successfully untainted.")
        })
    });
    if missing && allow_missing {
        eprintln!("Warning: no such resource instance: {address} (-allow-missing: nothing done)");
        return ExitCode::SUCCESS;
    }
    code
}

pub fn mv(dir: &Path, from: &str, to: &str, lock_timeout: Duration) -> ExitCode {
    edit(dir, "state mv", lock_timeout, |state| {
        if state.resources.iter().any(|r| r.address == to) {
            return Err(format!("{to} already exists in the state"));
        }
        let mut moved = 0;
        for r in &mut state.resources {
            let rest = if r.address == from {
                Some(String::new())
            } else {
                r.address
                    .strip_prefix(from)
                    .filter(|rest| rest.starts_with('[') || rest.starts_with('.'))
                    .map(str::to_owned)
            };
            if let Some(rest) = rest {
                r.address = format!("{to}{rest}");
                moved += 1;
            }
        }
        if moved == 0 {
            return Err(format!("{from} is not in the state"));
        }
        Ok(format!("Moved {moved} object(s) from {from} to {to}."))
    })
}

/// The state as it is stored, decrypted, without its digest key: with the key, anyone who
/// sees the output could test guesses of every secret against its digest. `state push` of a
/// pulled state keeps the key the backend's state has.
pub fn pull(dir: &Path) -> ExitCode {
    let mut state = match run_state(dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    state.digest_key = None;
    print!("{}", String::from_utf8_lossy(&state.encode()));
    ExitCode::SUCCESS
}

pub fn push(dir: &Path, file: &Path, force: bool, lock_timeout: Duration) -> ExitCode {
    let bytes = match super::files::read_given(file) {
        Ok(bytes) => bytes,
        Err(e) => return error(e),
    };
    run(async {
        let (backend, encryptions) = match stack_backend_encrypted(dir).await {
            Ok(b) => b,
            Err(c) => return c,
        };
        // A kept state (errored.gpustack-state.json) is encrypted as the state is; a pulled
        // one is in clear, given on purpose, and encrypted by the write.
        let json = if gpustack_state::encryption::is_envelope(&bytes) {
            encryptions.state.open(&bytes).await.map_err(|e| full(&e))
        } else {
            Ok(bytes)
        };
        let pushed = json.and_then(|json| State::decode(&json).map_err(|e| full(&e)));
        let pushed = match pushed {
            Ok(state) => state,
            Err(e) => return error(format!("{}: {e}", file.display())),
        };
        let _guard = match lock(backend.as_ref(), "state push", lock_timeout).await {
            Ok(g) => g,
            Err(e) => return error(e),
        };
        let current = match backend.read().await {
            Ok(s) => s,
            Err(e) => return error(full(&e)),
        };
        let mut state = pushed.clone();
        if let Some(current) = &current {
            if current.lineage != pushed.lineage && !force {
                return error(format!(
                    "{} holds another state (lineage {}, not {}); use --force to replace it",
                    backend.location(),
                    current.lineage,
                    pushed.lineage
                ));
            }
            if current.serial > pushed.serial && !force {
                return error(format!(
                    "{} holds a newer state (serial {} > {}); use --force to replace it",
                    backend.location(),
                    current.serial,
                    pushed.serial
                ));
            }
            state.serial = state.serial.max(current.serial + 1);
            // A pulled state has no digest key: the one its digests were made with is here.
            if state.digest_key.is_none() && current.lineage == pushed.lineage {
                state.digest_key.clone_from(&current.digest_key);
            }
        }
        if state.digest_key.is_none()
            && state
                .resources
                .iter()
                .any(|r| !r.sensitive_paths.is_empty())
        {
            eprintln!(
                "Warning: {} has no digest key (state pull leaves it out) and {} holds no state of its lineage to take it from: the digests of its sensitive values cannot be checked, so the next plan shows them as changing and its apply records them again.",
                file.display(),
                backend.location()
            );
        }
        if let Err(e) = backend.write(&state).await {
            return error(full(&e));
        }
        println!(
            "Pushed {} ({} objects) to {} as serial {}.",
            file.display(),
            state.resources.len(),
            backend.location(),
            state.serial
        );
        ExitCode::SUCCESS
    })
}

pub fn output(dir: &Path, name: Option<&str>, json: bool) -> ExitCode {
    let state = match run_state(dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match name {
        Some(name) => {
            let Some(output) = state.outputs.get(name) else {
                return error(format!("the state has no output named \"{name}\""));
            };
            if output.sensitive {
                eprintln!(
                    "The output \"{name}\" is sensitive: the state keeps only its digest, never its value."
                );
                println!(
                    "{}",
                    if json {
                        "\"(sensitive value)\""
                    } else {
                        "(sensitive value)"
                    }
                );
                return ExitCode::SUCCESS;
            }
            match (&output.value, json) {
                (_, true) => println!("{}", output.value),
                // Terraform prints a string here for people (`-raw` is the form for scripts),
                // so what could act on a terminal is escaped, as in plan text.
                (serde_json::Value::String(s), false) => {
                    println!("{}", gpustack_protocol::terminal::escape_controls(s))
                }
                (other, false) => println!("{other}"),
            }
        }
        None if json => {
            // As `terraform output -json`: by name, each with its value's type in cty's JSON.
            let mut names: Vec<&String> = state.outputs.keys().collect();
            names.sort();
            let outputs: serde_json::Map<String, serde_json::Value> = names
                .into_iter()
                .map(|k| {
                    let o = &state.outputs[k];
                    let value = if o.sensitive {
                        serde_json::Value::String("(sensitive value)".into())
                    } else {
                        o.value.clone()
                    };
                    let output = serde_json::json!({
                        "sensitive": o.sensitive,
                        "type": cty_type_of(&value),
                        "value": value,
                    });
                    (k.clone(), output)
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&outputs).unwrap_or_default()
            );
        }
        None => {
            for (k, o) in &state.outputs {
                println!(
                    "{k} = {}",
                    if o.sensitive {
                        "(sensitive value)".to_owned()
                    } else {
                        o.value.to_string()
                    }
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// `output --raw NAME`: a string, number or bool printed as it is, with no newline after it, as
/// `terraform output -raw` prints it; other values are refused, as Terraform refuses them.
pub fn output_raw(dir: &Path, name: &str) -> ExitCode {
    let state = match run_state(dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let Some(output) = state.outputs.get(name) else {
        return error(format!("the state has no output named \"{name}\""));
    };
    if output.sensitive {
        return error(format!(
            "the output \"{name}\" is sensitive: the state keeps only its digest, never its value, so --raw has nothing to print"
        ));
    }
    let text = match &output.value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(_) => match gpustack_protocol::Value::from_json(&output.value) {
            gpustack_protocol::Value::Number(n) => gpustack_protocol::format_number(&n),
            other => other.to_string(),
        },
        serde_json::Value::Null => {
            return error(format!(
                "the output \"{name}\" is null, so --raw cannot print it"
            ));
        }
        _ => {
            return error(format!(
                "--raw prints only strings, numbers and bools, and the output \"{name}\" is a collection: use --json for it"
            ));
        }
    };
    print!("{text}");
    ExitCode::SUCCESS
}

pub fn show(
    dir: &Path,
    plan_file: Option<&Path>,
    json: bool,
    markdown: bool,
    color: bool,
) -> ExitCode {
    if let Some(file) = plan_file {
        let variables = VariableArgs::environment();
        let plan = match runtime().block_on(super::ops::read_plan(file, &variables)) {
            Ok(p) => p,
            Err(e) => return error(e),
        };
        if json {
            if let Err(e) = super::print_json(&gpustack_engine::plan_json(&plan)) {
                return error(format!("cannot write the plan's JSON: {e}"));
            }
        } else if markdown {
            print!("{}", gpustack_engine::plan_markdown(&plan));
        } else {
            print!("{}", gpustack_engine::plan_text(&plan, color));
        }
        return ExitCode::SUCCESS;
    }
    let state = match run_state(dir) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if json {
        let resources: Vec<serde_json::Value> = state
            .resources
            .iter()
            .map(|r| serde_json::json!({ "address": r.address, "type": r.type_name, "provider": r.provider, "values": masked(r), "dependencies": r.dependencies }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "format_version": "1.0", "lineage": state.lineage, "serial": state.serial, "resources": resources })).unwrap_or_default());
    } else {
        for r in &state.resources {
            println!(
                "# {}:\n{}\n",
                r.address,
                serde_json::to_string_pretty(&masked(r)).unwrap_or_default()
            );
        }
    }
    ExitCode::SUCCESS
}

pub fn force_unlock(dir: &Path, id: &str) -> ExitCode {
    run(async {
        // The state is not read: releasing a lock needs no key.
        let session = Session::open(
            crate::registry(),
            dir,
            &Files::Disk,
            InputSource::Args(&VariableArgs::default()),
        );
        let none = std::sync::Arc::new(gpustack_state::Encryption::none(
            gpustack_state::encryption::Target::State,
        ));
        let config = match super::backend::backend_config(&session) {
            Ok(config) => config,
            Err(e) => return error(e),
        };
        let backend = match super::backend::open(dir, &config, none).await {
            Ok(b) => b,
            Err(e) => return error(e),
        };
        match backend.force_unlock(id).await {
            Ok(held) => {
                println!(
                    "Released the lock held by {} (pid {}) for {} since {}.",
                    held.who, held.pid, held.operation, held.created
                );
                ExitCode::SUCCESS
            }
            Err(e) => error(full(&e)),
        }
    })
}

/// Brings an existing object under management: the engine reads it through the resource's
/// provider, on the plan's walk, and it is recorded in the state.
pub fn import(
    dir: &Path,
    variables: &VariableArgs,
    address: &str,
    id: &str,
    lock_timeout: Duration,
    color: bool,
) -> ExitCode {
    run(async {
        let mut session = Session::open(
            crate::registry(),
            dir,
            &Files::Disk,
            InputSource::Args(variables),
        );
        if session.has_errors() {
            let (sources, diagnostics) = session.diagnostics();
            super::report::diagnostics(&sources, &diagnostics, color);
            return ExitCode::from(1);
        }
        let (backend, guard, state) =
            match super::backend::open_locked(dir, &mut session, "import", lock_timeout).await {
                Ok(opened) => opened,
                Err(e) => return error(e),
            };
        let (imported, sources, diagnostics) =
            gpustack_engine::import(session, state.as_ref(), address, id).await;
        super::report::diagnostics(&sources, &diagnostics, color);
        let state = match imported {
            Ok(state) => state,
            Err(e) => return error(full(&e)),
        };
        if guard.fence().is_lost() {
            return error("this run no longer holds the state lock; nothing was imported");
        }
        if let Err(e) = backend.write(&state).await {
            return error(full(&e));
        }
        println!(
            "Imported {id} as {address}. Run gpustack plan to see how it differs from the configuration."
        );
        ExitCode::SUCCESS
    })
}

/// The type cty gives a JSON value, in cty's JSON form, as Terraform writes it beside an
/// output's value: a list is a tuple and an object an object type, as Terraform infers them
/// for values it does not have a declared type for.
fn cty_type_of(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::{Value as J, json};
    match value {
        J::Null => json!("dynamic"),
        J::Bool(_) => json!("bool"),
        J::Number(_) => json!("number"),
        J::String(_) => json!("string"),
        J::Array(items) => json!(["tuple", items.iter().map(cty_type_of).collect::<Vec<_>>()]),
        J::Object(map) => json!([
            "object",
            map.iter()
                .map(|(k, v)| (k.clone(), cty_type_of(v)))
                .collect::<serde_json::Map<_, _>>()
        ]),
    }
}

/// The source addresses of the providers the state's objects were made with, each once, in
/// order.
pub fn providers_in_state(dir: &Path) -> Result<Vec<String>, ExitCode> {
    runtime().block_on(async {
        let backend = stack_backend(dir).await?;
        let state = backend.read().await.map_err(|e| error(full(&e)))?;
        let registry = crate::registry();
        let sources: std::collections::BTreeSet<String> = state
            .iter()
            .flat_map(|s| &s.resources)
            .map(|r| {
                let name = r
                    .provider
                    .rsplit_once("provider.")
                    .map_or(r.provider.as_str(), |(_, key)| key);
                let name = name.split('.').next().unwrap_or_default();
                gpustack_engine::default_source(name, &registry)
            })
            .collect();
        Ok(sources.into_iter().collect())
    })
}
