//! `gpustack state import-terraform FILE`: the objects of a Terraform state taken over under
//! the same addresses, through the engine's import (one plan walk, under the state lock), and
//! written only when every one is the object Terraform recorded.

use super::backend::full;
use super::state::{error, run};
use gpustack_engine::{InputSource, Session, VariableArgs};
use gpustack_lang::config::Files;
use serde_json::Value as Json;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// How gpustack takes one Terraform instance over: its import ID, and the identity Terraform
/// recorded (a Kubernetes object's uid) where it recorded one.
#[derive(Debug, PartialEq)]
pub struct Takeover {
    pub id: String,
    pub uid: Option<String>,
}

fn text(value: Option<&Json>) -> Option<String> {
    value
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn object_id(api_version: &str, kind: &str, namespace: Option<String>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{api_version}/{kind}/{ns}/{name}"),
        None => format!("{api_version}/{kind}/{name}"),
    }
}

/// The import ID gpustack's provider takes for a Terraform instance, derived from the
/// attributes Terraform recorded; or why the instance is left to Terraform.
pub fn takeover(type_name: &str, attributes: &Json) -> Result<Takeover, &'static str> {
    let at = |p: &str| text(attributes.pointer(p));
    match type_name {
        "kubernetes_manifest" => {
            let manifest = attributes.get("manifest").unwrap_or(&Json::Null);
            let object = attributes.get("object").unwrap_or(&Json::Null);
            let field = |p: &str| text(manifest.pointer(p)).or_else(|| text(object.pointer(p)));
            let (Some(api_version), Some(kind), Some(name)) = (
                field("/apiVersion"),
                field("/kind"),
                field("/metadata/name"),
            ) else {
                return Err("its manifest names no apiVersion, kind and name");
            };
            Ok(Takeover {
                id: object_id(&api_version, &kind, field("/metadata/namespace"), &name),
                uid: text(object.pointer("/metadata/uid")),
            })
        }
        "kubectl_manifest" => {
            let (Some(api_version), Some(kind), Some(name)) =
                (at("/api_version"), at("/kind"), at("/name"))
            else {
                return Err("it records no api_version, kind and name");
            };
            Ok(Takeover {
                id: object_id(&api_version, &kind, at("/namespace"), &name),
                uid: at("/uid").or_else(|| at("/live_uid")),
            })
        }
        "helm_release" => {
            let Some(name) = at("/name") else {
                return Err("it records no release name");
            };
            let namespace = at("/namespace").unwrap_or_else(|| "default".to_owned());
            Ok(Takeover {
                id: format!("{namespace}/{name}"),
                uid: None,
            })
        }
        _ => typed(type_name, attributes),
    }
}

#[cfg(feature = "kubernetes")]
fn typed(type_name: &str, attributes: &Json) -> Result<Takeover, &'static str> {
    let Some((api_version, kind, namespaced)) = gpustack_provider_kubernetes::typed_kind(type_name)
    else {
        return Err("gpustack does not serve this type");
    };
    let metadata = attributes.pointer("/metadata/0").unwrap_or(&Json::Null);
    let Some(name) = text(metadata.get("name")) else {
        return Err("its metadata records no name");
    };
    let namespace =
        namespaced.then(|| text(metadata.get("namespace")).unwrap_or_else(|| "default".to_owned()));
    Ok(Takeover {
        id: object_id(api_version, kind, namespace, &name),
        uid: text(metadata.get("uid")),
    })
}

#[cfg(not(feature = "kubernetes"))]
fn typed(_: &str, _: &Json) -> Result<Takeover, &'static str> {
    Err("gpustack does not serve this type")
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
        let mut take = Vec::new();
        let mut left = Vec::new();
        for instance in &found {
            match takeover(&instance.type_name, &instance.attributes) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_ids_from_a_terraform_states_attributes() {
        let helm = serde_json::json!({"name": "gpu-operator", "namespace": "gpu"});
        assert_eq!(
            takeover("helm_release", &helm),
            Ok(Takeover {
                id: "gpu/gpu-operator".into(),
                uid: None
            })
        );
        let manifest = serde_json::json!({
            "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}},
            "object": {"metadata": {"uid": "u1"}}});
        assert_eq!(
            takeover("kubernetes_manifest", &manifest),
            Ok(Takeover {
                id: "v1/ConfigMap/n/c".into(),
                uid: Some("u1".into())
            })
        );
        assert!(takeover("aws_iam_role", &Json::Null).is_err());
    }
}
