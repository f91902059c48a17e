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

/// Why a Terraform state file was not read.
#[derive(Debug)]
pub enum ReadTerraformStateError {
    Unreadable(String, std::io::Error),
    NotJson(String, serde_json::Error),
    Version(String, String),
    Resources(String),
}

impl std::fmt::Display for ReadTerraformStateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreadable(name, e) => write!(f, "{name}: {e}"),
            Self::NotJson(name, e) => write!(
                f,
                "{name} is not a Terraform state (terraform state pull prints one): {e}"
            ),
            Self::Version(name, v) => write!(
                f,
                "{name} is a Terraform state of format version {v}; only version 4 (Terraform 0.12 and later) is read"
            ),
            Self::Resources(name) => write!(f, "{name}: `resources` is not a list of resources"),
        }
    }
}

/// One managed instance of the Terraform state.
#[derive(Debug, PartialEq)]
pub struct Instance {
    pub address: String,
    pub type_name: String,
    pub attributes: Json,
}

/// The managed resource instances of a Terraform state (data sources are skipped).
pub fn instances(name: &str, text: &str) -> Result<Vec<Instance>, ReadTerraformStateError> {
    let state: Json = serde_json::from_str(text)
        .map_err(|e| ReadTerraformStateError::NotJson(name.to_owned(), e))?;
    match state.get("version") {
        Some(v) if v.as_u64() == Some(4) => {}
        Some(v) => {
            return Err(ReadTerraformStateError::Version(
                name.to_owned(),
                v.to_string(),
            ));
        }
        None => {
            return Err(ReadTerraformStateError::Version(
                name.to_owned(),
                "(none)".to_owned(),
            ));
        }
    }
    let resources = match state.get("resources") {
        None => return Ok(Vec::new()),
        Some(Json::Array(r)) => r,
        Some(_) => return Err(ReadTerraformStateError::Resources(name.to_owned())),
    };
    let mut found = Vec::new();
    for resource in resources {
        if resource.get("mode").and_then(Json::as_str) != Some("managed") {
            continue;
        }
        let (Some(type_name), Some(resource_name)) = (
            resource.get("type").and_then(Json::as_str),
            resource.get("name").and_then(Json::as_str),
        ) else {
            return Err(ReadTerraformStateError::Resources(name.to_owned()));
        };
        let prefix = resource
            .get("module")
            .and_then(Json::as_str)
            .map(|m| format!("{m}."))
            .unwrap_or_default();
        let empty = Vec::new();
        let list = resource
            .get("instances")
            .and_then(Json::as_array)
            .unwrap_or(&empty);
        for instance in list {
            let key = match instance.get("index_key") {
                Some(Json::Number(n)) => format!("[{n}]"),
                Some(Json::String(s)) => format!("[{}]", Json::String(s.clone())),
                _ => String::new(),
            };
            found.push(Instance {
                address: format!("{prefix}{type_name}.{resource_name}{key}"),
                type_name: type_name.to_owned(),
                attributes: instance.get("attributes").cloned().unwrap_or(Json::Null),
            });
        }
    }
    Ok(found)
}

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
    let name = file.display().to_string();
    let found = match std::fs::read_to_string(file) {
        Ok(text) => instances(&name, &text),
        Err(e) => Err(ReadTerraformStateError::Unreadable(name.clone(), e)),
    };
    let found = match found {
        Ok(f) => f,
        Err(e) => return error(e),
    };
    run(async {
        let mut session = Session::open(
            crate::registry(),
            dir,
            &Files::Disk,
            InputSource::Args(variables),
        );
        if session.diags.has_errors() {
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
    fn addresses_and_ids_from_a_terraform_state() {
        let state = serde_json::json!({
            "version": 4,
            "resources": [
                {"mode": "data", "type": "kubernetes_nodes", "name": "all", "instances": [{"attributes": {}}]},
                {"mode": "managed", "type": "helm_release", "name": "op", "module": "module.gpu",
                 "instances": [{"index_key": "a", "attributes": {"name": "gpu-operator", "namespace": "gpu"}}]},
                {"mode": "managed", "type": "kubernetes_manifest", "name": "cm",
                 "instances": [{"index_key": 0, "attributes": {
                     "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}},
                     "object": {"metadata": {"uid": "u1"}}}}]},
            ]
        });
        let found = instances("tf.json", &state.to_string()).unwrap();
        let addresses: Vec<&str> = found.iter().map(|i| i.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "module.gpu.helm_release.op[\"a\"]",
                "kubernetes_manifest.cm[0]"
            ]
        );
        assert_eq!(
            takeover(&found[0].type_name, &found[0].attributes),
            Ok(Takeover {
                id: "gpu/gpu-operator".into(),
                uid: None
            })
        );
        assert_eq!(
            takeover(&found[1].type_name, &found[1].attributes),
            Ok(Takeover {
                id: "v1/ConfigMap/n/c".into(),
                uid: Some("u1".into())
            })
        );
        assert!(takeover("aws_iam_role", &Json::Null).is_err());
    }
}
