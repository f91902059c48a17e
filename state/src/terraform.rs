//! Terraform's state (format version 4), read in one place: by `state import-terraform` and
//! by `data "terraform_remote_state"`.
//!
//! The document is decoded into the documented schema, so that a field of the wrong shape is
//! an error naming the field (`outputs: invalid type: sequence, expected a map`), never read
//! as absent; fields Terraform added later and gpustack does not read (`check_results`) are
//! left alone.

use indexmap::IndexMap;
use serde::Deserialize;
use std::path::Path;

/// The largest Terraform state read: far above the states of real stacks, far below memory.
pub const MAX_BYTES: u64 = 256 << 20;

/// Why a Terraform state was not read. `name` is how the user knows the document (its path,
/// or the backend location it came from).
#[derive(Debug, thiserror::Error)]
pub enum ReadTerraformStateError {
    #[error("{name}: {source}")]
    Unreadable {
        name: String,
        source: gpustack_fs::ReadError,
    },
    #[error("{name} is not a JSON document (terraform state pull prints a state): {source}")]
    NotJson {
        name: String,
        source: serde_json::Error,
    },
    #[error("{name} is a gpustack state, not Terraform's")]
    Gpustack { name: String },
    #[error("{name} has no \"version\": it is not a Terraform state")]
    NoVersion { name: String },
    #[error(
        "{name} is a Terraform state of format version {version} (Terraform 0.11 or older); run Terraform 0.12 or newer on its stack once to upgrade it to version 4"
    )]
    Old { name: String, version: u64 },
    #[error(
        "{name} is a Terraform state of format version {version}; gpustack reads version 4 (Terraform 0.12 and later)"
    )]
    Version { name: String, version: String },
    #[error("{name}: the field {field} {message}")]
    Shape {
        name: String,
        field: String,
        message: String,
    },
}

/// A Terraform state as its documented schema has it (the parts gpustack reads).
#[derive(Debug, Clone, Deserialize)]
pub struct TerraformState {
    #[serde(default)]
    pub terraform_version: Option<String>,
    #[serde(default)]
    pub serial: u64,
    #[serde(default)]
    pub lineage: String,
    #[serde(default)]
    pub outputs: IndexMap<String, Output>,
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// A root output: its value, the cty type it was recorded with, and whether it is sensitive.
#[derive(Debug, Clone, Deserialize)]
pub struct Output {
    pub value: serde_json::Value,
    /// cty's JSON form of a type: `"string"`, `["list", "number"]`, `["object", {...}]`.
    #[serde(default, rename = "type")]
    pub ty: Option<serde_json::Value>,
    #[serde(default)]
    pub sensitive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Managed,
    Data,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Resource {
    #[serde(default)]
    pub module: Option<String>,
    pub mode: Mode,
    #[serde(rename = "type")]
    pub type_name: String,
    pub name: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub instances: Vec<Instance>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Instance {
    #[serde(default)]
    pub index_key: Option<IndexKey>,
    #[serde(default)]
    pub schema_version: u64,
    #[serde(default)]
    pub attributes: Option<serde_json::Value>,
}

/// `count.index` or `each.key` of an instance.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum IndexKey {
    Int(i64),
    String(String),
}

/// One managed resource instance, by its address.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedInstance {
    pub address: String,
    pub type_name: String,
    pub attributes: serde_json::Value,
}

/// Decodes a Terraform state; `name` is how errors name it.
pub fn parse(name: &str, bytes: &[u8]) -> Result<TerraformState, ReadTerraformStateError> {
    let json: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|source| ReadTerraformStateError::NotJson {
            name: name.to_owned(),
            source,
        })?;
    match json.get("version") {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(4) => {}
        Some(serde_json::Value::Number(n)) if n.as_u64().is_some_and(|v| v <= 3) => {
            return Err(ReadTerraformStateError::Old {
                name: name.to_owned(),
                version: n.as_u64().unwrap_or_default(),
            });
        }
        Some(other) => {
            return Err(ReadTerraformStateError::Version {
                name: name.to_owned(),
                version: other.to_string(),
            });
        }
        None if json.get("format_version").is_some() => {
            return Err(ReadTerraformStateError::Gpustack {
                name: name.to_owned(),
            });
        }
        None => {
            return Err(ReadTerraformStateError::NoVersion {
                name: name.to_owned(),
            });
        }
    }
    serde_path_to_error::deserialize(json).map_err(|e| {
        let field = e.path().to_string();
        ReadTerraformStateError::Shape {
            name: name.to_owned(),
            field: if field == "." {
                "(the document)".to_owned()
            } else {
                field
            },
            message: e.into_inner().to_string().replace("invalid type: ", "is "),
        }
    })
}

/// Reads and decodes the Terraform state in the file at `path`, bounded before it reads.
pub fn read(path: &Path) -> Result<TerraformState, ReadTerraformStateError> {
    let name = path.display().to_string();
    let bytes = gpustack_fs::read_bounded(path, MAX_BYTES).map_err(|source| {
        ReadTerraformStateError::Unreadable {
            name: name.clone(),
            source,
        }
    })?;
    parse(&name, &bytes)
}

impl TerraformState {
    /// The managed resource instances (data sources are skipped), addressed as Terraform
    /// addresses them.
    pub fn managed_instances(&self) -> Vec<ManagedInstance> {
        let mut found = Vec::new();
        for resource in self.resources.iter().filter(|r| r.mode == Mode::Managed) {
            let prefix = resource
                .module
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| format!("{m}."))
                .unwrap_or_default();
            for instance in &resource.instances {
                let key = match &instance.index_key {
                    Some(IndexKey::Int(n)) => format!("[{n}]"),
                    Some(IndexKey::String(s)) => {
                        format!("[{}]", serde_json::Value::String(s.clone()))
                    }
                    None => String::new(),
                };
                found.push(ManagedInstance {
                    address: format!("{prefix}{}.{}{key}", resource.type_name, resource.name),
                    type_name: resource.type_name.clone(),
                    attributes: instance
                        .attributes
                        .clone()
                        .unwrap_or(serde_json::Value::Null),
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_instances_are_addressed_as_terraform_addresses_them() {
        let state = serde_json::json!({
            "version": 4,
            "resources": [
                {"mode": "data", "type": "kubernetes_nodes", "name": "all", "instances": [{"attributes": {}}]},
                {"mode": "managed", "type": "helm_release", "name": "op", "module": "module.gpu",
                 "instances": [{"index_key": "a", "attributes": {"name": "gpu-operator"}}]},
                {"mode": "managed", "type": "kubernetes_manifest", "name": "cm",
                 "instances": [{"index_key": 0, "attributes": {}}]},
            ]
        });
        let found = parse("tf.json", state.to_string().as_bytes())
            .unwrap()
            .managed_instances();
        let addresses: Vec<&str> = found.iter().map(|i| i.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "module.gpu.helm_release.op[\"a\"]",
                "kubernetes_manifest.cm[0]"
            ]
        );
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_an_error_naming_the_file_and_the_field() {
        let cases = [
            (r#"{"version": 4, "outputs": []}"#, "outputs"),
            (
                r#"{"version": 4, "outputs": {"a": {"value": 1, "sensitive": "yes"}}}"#,
                "outputs.a.sensitive",
            ),
            (r#"{"version": 4, "resources": {}}"#, "resources"),
            (
                r#"{"version": 4, "resources": [{"mode": "managed", "type": 3, "name": "x"}]}"#,
                "resources[0].type",
            ),
            (
                r#"{"version": 4, "resources": [{"mode": "other", "type": "t", "name": "x"}]}"#,
                "resources[0].mode",
            ),
        ];
        for (text, field) in cases {
            let err = parse("tf.json", text.as_bytes()).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("tf.json: the field {field} ")),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn only_format_version_4_is_read() {
        for (text, says) in [
            (
                r#"{"version": 3}"#,
                "format version 3 (Terraform 0.11 or older)",
            ),
            (r#"{"version": "4"}"#, "format version \"4\""),
            (r#"{"format_version": 1}"#, "a gpustack state"),
            (r#"{}"#, "no \"version\""),
            ("not json", "not a JSON document"),
        ] {
            let err = parse("s", text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
