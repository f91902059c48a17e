//! `gpustack state import-terraform FILE`: the objects of a Terraform state taken over under
//! the same addresses, through the engine's import (one plan walk, under the state lock), and
//! written only when every one is the object Terraform recorded.

use super::backend::full;
use super::state::{error, run};
use gpustack_engine::{InputSource, Session, VariableArgs};
use gpustack_lang::config::Files;
use gpustack_protocol::TerraformTakeover;
use serde_json::Value as Json;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// How gpustack's provider of `type_name` takes one Terraform instance over, or why the
/// instance is left to Terraform.
fn takeover(
    registry: &gpustack_protocol::Registry,
    type_name: &str,
    attributes: &Json,
) -> Result<TerraformTakeover, &'static str> {
    registry
        .owner_of(type_name)
        .and_then(|name| registry.provider(name))
        .and_then(|provider| provider.terraform_takeover(type_name, attributes))
        .unwrap_or(Err("gpustack does not serve this type"))
}

fn text(value: Option<&Json>) -> Option<String> {
    value
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The identity gpustack records for an object (a Kubernetes object's uid), if any.
fn recorded_uid(attributes: &Json) -> Option<String> {
    text(attributes.get("uid")).or_else(|| text(attributes.pointer("/metadata/0/uid")))
}

fn quoted(address: &str) -> String {
    format!("'{}'", address.replace('\'', r"'\''"))
}

// Long by design: one command's steps under one lock (read the file, open the stack, sort
// what is taken from what is left, import all or nothing, report), as `gpustack import`'s.
pub fn import(
    dir: &Path,
    file: &Path,
    variables: &VariableArgs,
    lock_timeout: Duration,
    color: bool,
) -> ExitCode {
    let found = match gpustack_state::terraform::read(file) {
        Ok(state) => state.managed_instances(),
        Err(e) => return error(e),
    };
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
        let registry = crate::registry();
        let mut take = Vec::new();
        let mut left = Vec::new();
        for instance in &found {
            match takeover(&registry, &instance.type_name, &instance.attributes) {
                Err(why) => left.push((instance.address.clone(), why)),
                Ok(_) if !session.declares(&instance.address) => {
                    left.push((instance.address.clone(), "the stack does not declare it"));
                }
                Ok(t) => take.push((instance.address.clone(), t)),
            }
        }
        let (backend, guard, state) =
            match super::backend::open_locked(dir, &mut session, "import-terraform", lock_timeout)
                .await
            {
                Ok(opened) => opened,
                Err(e) => return error(e),
            };
        // An address gpustack already manages is taken as done only for the same object.
        let mut already = Vec::new();
        let mut imports = Vec::new();
        for (address, t) in &take {
            match state.as_ref().and_then(|s| s.resource(address)) {
                None => imports.push((address.clone(), t.id.clone())),
                Some(r) if t.uid.is_some() && recorded_uid(&r.attributes) == t.uid => {
                    already.push(address.clone());
                }
                Some(_) => {
                    return error(format!(
                        "{address} is already in gpustack's state as another object (or one whose identity Terraform did not record); nothing was imported"
                    ));
                }
            }
        }
        let new_state = if imports.is_empty() {
            None
        } else {
            let (imported, sources, diagnostics) =
                gpustack_engine::import_all(session, state.as_ref(), &imports).await;
            super::report::diagnostics(&sources, &diagnostics, color);
            match imported {
                Ok(s) => Some(s),
                Err(e) => return error(format!("{}; nothing was imported", full(&e))),
            }
        };
        if let Some(new_state) = &new_state {
            let replaced: Vec<String> = take
                .iter()
                .filter(|(address, _)| imports.iter().any(|(a, _)| a == address))
                .filter_map(|(address, t)| {
                    let recorded = t.uid.as_ref()?;
                    let live = new_state
                        .resource(address)
                        .and_then(|r| recorded_uid(&r.attributes));
                    (live.as_ref() != Some(recorded)).then(|| {
                        format!(
                            "{address}: replaced since Terraform recorded it (Terraform recorded uid {recorded}, the object there now has {})",
                            live.as_deref().unwrap_or("none")
                        )
                    })
                })
                .collect();
            if !replaced.is_empty() {
                return error(format!(
                    "{}\nnothing was imported: take over the object Terraform recorded, or leave these to Terraform",
                    replaced.join("\n")
                ));
            }
            if guard.fence().is_lost() {
                return error("this run no longer holds the state lock; nothing was imported");
            }
            if let Err(e) = backend.write(new_state).await {
                return error(full(&e));
            }
        }
        for (address, t) in &take {
            if already.contains(address) {
                println!("{address}: already managed by gpustack");
            } else {
                println!("{address}: imported from \"{}\"", t.id);
            }
        }
        for (address, why) in &left {
            println!("{address}: left to Terraform ({why})");
        }
        println!(
            "Took over {} of {} Terraform resource instances; {} left to Terraform.",
            take.len(),
            found.len(),
            left.len()
        );
        if !take.is_empty() {
            let addresses: Vec<String> = take.iter().map(|(a, _)| quoted(a)).collect();
            println!(
                "On the Terraform side, stop managing what gpustack took over (the objects stay):\n  terraform state rm {}",
                addresses.join(" ")
            );
            println!("Run gpustack plan to see how the objects differ from the configuration.");
        }
        ExitCode::SUCCESS
    })
}
