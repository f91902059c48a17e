//! `data "terraform_remote_state"`: the root outputs of a stack that stays in Terraform (the
//! cluster, its identity, its networks), read from the state Terraform keeps in its `s3`,
//! `kubernetes` or `local` backend, in Terraform's state format (version 4, what `terraform
//! state pull` prints).
//!
//! `config` takes the arguments of Terraform's backend block, each honoured, accepted or
//! refused as `gpustack_protocol::terraform` says (the read takes no lock, so what only
//! concerns locking is accepted). The local backend is read here; S3 and Kubernetes need their
//! SDKs, which this crate does not link: the binary hands the provider a [`StateReader`].

use gpustack_protocol::terraform::{BackendArgument, backend_argument, s3_endpoint};
use gpustack_protocol::{Attribute, Diagnostic, ObjectAttr, Schema, Type, Value};
use gpustack_provider_sdk::check::Checker;
use indexmap::IndexMap;
use std::sync::Arc;

pub(crate) const TYPE: &str = "terraform_remote_state";

const BACKENDS: [&str; 3] = ["s3", "kubernetes", "local"];

/// Where a Terraform state lives in a backend that needs a network client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteState {
    /// The object `key` of `bucket`.
    S3 {
        bucket: String,
        key: String,
        region: Option<String>,
        endpoint: Option<String>,
        profile: Option<String>,
        use_path_style: Option<bool>,
    },
    /// The Secret `secret` of `namespace` (`tfstate-WORKSPACE-SUFFIX`), its `tfstate` key
    /// gzip-compressed.
    Kubernetes {
        namespace: String,
        secret: String,
        /// `config_path`, else `config_paths`: merged in order.
        config_paths: Vec<String>,
        context: Option<String>,
        /// The kubeconfig cluster and user replacing the context's own.
        cluster: Option<String>,
        user: Option<String>,
        in_cluster: Option<bool>,
    },
}

impl std::fmt::Display for RemoteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteState::S3 { bucket, key, .. } => write!(f, "s3://{bucket}/{key}"),
            RemoteState::Kubernetes {
                namespace, secret, ..
            } => write!(f, "the Secret {namespace}/{secret}"),
        }
    }
}

/// Reads the bytes of a Terraform state from a remote backend: `Ok(None)` when none is there.
/// The error is shown with its causes.
#[async_trait::async_trait]
pub trait StateReader: Send + Sync {
    async fn read(
        &self,
        location: &RemoteState,
    ) -> Result<Option<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>>;
}

pub(crate) fn schema() -> Schema {
    Schema::new("The root outputs of a Terraform stack, read from its state in a backend.")
        .attr(
            "backend",
            Attribute::required(Type::String)
                .describe("The backend the state is kept in: s3, kubernetes or local."),
        )
        .attr(
            "config",
            Attribute::optional(Type::Any).describe(
                "The arguments of the backend, as its terraform { backend } block has them.",
            ),
        )
        .attr(
            "defaults",
            Attribute::optional(Type::Any).describe("Values of outputs the state lacks."),
        )
        .attr(
            "workspace",
            Attribute::optional(Type::String).describe("The Terraform workspace; default."),
        )
        .attr(
            "outputs",
            Attribute::computed(Type::Any)
                .describe("Every root output of the state, sensitive ones marked."),
        )
}

/// The configuration's checks: a backend gpustack reads, and each argument of its `config`
/// one that Terraform's backend has and gpustack does not refuse.
pub(crate) fn check(check: &mut Checker<'_>) {
    let Some(backend) = check.str("backend") else {
        return;
    };
    if !BACKENDS.contains(&backend) {
        check.error(
            "backend",
            "Unsupported backend",
            format!(
                "gpustack reads Terraform states from the backends s3, kubernetes and local, not \"{backend}\"."
            ),
        );
        return;
    }
    match check.get("config") {
        None => {}
        Some(Value::Object(config)) => {
            for (name, value) in config {
                for (path, why) in config_argument(backend, name, value) {
                    check.error(&path, "Unsupported backend argument", why);
                }
            }
        }
        Some(_) => check.error(
            "config",
            "Invalid backend configuration",
            "The configuration must be an object value.".into(),
        ),
    }
    if let Some(defaults) = check.get("defaults")
        && !matches!(defaults.peel(), Value::Object(_))
    {
        check.error(
            "defaults",
            "Invalid default values",
            "Defaults must be given in an object value.".into(),
        );
    }
}

/// What is wrong with one argument of `config`: (path, why) for each refusal.
fn config_argument(backend: &str, name: &str, value: &Value) -> Vec<(String, String)> {
    let path = format!("config.{name}");
    match backend_argument(backend, name) {
        None => vec![(
            path,
            format!("Terraform's {backend} backend has no argument \"{name}\"."),
        )],
        Some(BackendArgument::Refused(why)) => vec![(path, format!("{name} is refused: {why}."))],
        Some(BackendArgument::Special) => match (name, value.peel()) {
            ("endpoints", Value::Object(endpoints)) => endpoints
                .keys()
                .filter_map(|key| match s3_endpoint(key) {
                    Some(BackendArgument::Refused(why)) => Some(format!(
                        "endpoints.{key} is refused: {why}."
                    )),
                    None => Some(format!(
                        "\"{key}\" is not an endpoint of Terraform's s3 backend: they are s3, dynamodb, iam, sts and sso."
                    )),
                    _ => None,
                })
                .map(|why| (path.clone(), why))
                .collect(),
            _ => Vec::new(),
        },
        // A read takes no lock: what concerns locking changes nothing here.
        Some(_) => Vec::new(),
    }
}

fn text(config: &IndexMap<String, Value>, name: &str) -> Option<String> {
    config
        .get(name)
        .and_then(|v| v.peel().as_str())
        .map(str::to_owned)
}

fn flag(config: &IndexMap<String, Value>, name: &str) -> Option<bool> {
    match config.get(name).map(Value::peel) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// Where the state is: a file, or a remote location.
enum Location {
    File(std::path::PathBuf),
    Remote(RemoteState),
}

fn location(
    backend: &str,
    config: &IndexMap<String, Value>,
    workspace: &str,
) -> Result<Location, String> {
    let required = |name: &str| {
        text(config, name).ok_or_else(|| format!("The {backend} backend needs config.{name}."))
    };
    let default_workspace = workspace == "default";
    Ok(match backend {
        "local" => {
            let path = if default_workspace {
                text(config, "path").unwrap_or_else(|| "terraform.tfstate".into())
            } else {
                let dir =
                    text(config, "workspace_dir").unwrap_or_else(|| "terraform.tfstate.d".into());
                format!("{dir}/{workspace}/terraform.tfstate")
            };
            Location::File(path.into())
        }
        "s3" => {
            let key = required("key")?;
            let key = if default_workspace {
                key
            } else {
                let prefix = text(config, "workspace_key_prefix").unwrap_or_else(|| "env:".into());
                format!("{prefix}/{workspace}/{key}")
            };
            let endpoint = text(config, "endpoint").or_else(|| {
                match config.get("endpoints").map(Value::peel) {
                    Some(Value::Object(endpoints)) => text(endpoints, "s3"),
                    _ => None,
                }
            });
            Location::Remote(RemoteState::S3 {
                bucket: required("bucket")?,
                key,
                region: text(config, "region"),
                endpoint,
                profile: text(config, "profile"),
                use_path_style: flag(config, "use_path_style").or(flag(config, "force_path_style")),
            })
        }
        "kubernetes" => {
            let suffix = required("secret_suffix")?;
            let secret = format!("tfstate-{workspace}-{suffix}");
            let config_paths = match text(config, "config_path") {
                Some(path) => vec![path],
                None => match config.get("config_paths").map(Value::peel) {
                    Some(Value::List(paths)) => paths
                        .iter()
                        .filter_map(|p| p.as_str())
                        .map(str::to_owned)
                        .collect(),
                    _ => Vec::new(),
                },
            };
            Location::Remote(RemoteState::Kubernetes {
                namespace: text(config, "namespace").unwrap_or_else(|| "default".into()),
                secret,
                config_paths,
                context: text(config, "config_context"),
                cluster: text(config, "config_context_cluster"),
                user: text(config, "config_context_auth_info"),
                in_cluster: flag(config, "in_cluster_config"),
            })
        }
        other => {
            return Err(format!(
                "gpustack reads no Terraform states from a \"{other}\" backend."
            ));
        }
    })
}

/// Reads the state the configuration names and answers the data source's state.
pub(crate) async fn read(
    reader: Option<&Arc<dyn StateReader>>,
    config: &Value,
) -> (Value, Vec<Diagnostic>) {
    let fail = |diagnostic: Diagnostic| (config.clone(), vec![diagnostic]);
    let attr = |name: &str| {
        config
            .as_object()
            .and_then(|o| o.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let backend = attr("backend");
    let Some(backend) = backend.as_str() else {
        return fail(
            Diagnostic::error("Invalid backend", "backend must be a string.")
                .with_attribute("backend"),
        );
    };
    let empty = IndexMap::new();
    let backend_config = attr("config");
    let backend_config = match backend_config.peel() {
        Value::Object(o) => o,
        _ => &empty,
    };
    let workspace = attr("workspace");
    let workspace = workspace.as_str().unwrap_or("default");
    let location = match location(backend, backend_config, workspace) {
        Ok(location) => location,
        Err(why) => {
            return fail(
                Diagnostic::error("Invalid backend configuration", why).with_attribute("config"),
            );
        }
    };
    let (bytes, shown) = match &location {
        Location::File(path) => (
            match gpustack_fs::read_bounded(path, gpustack_state::terraform::MAX_BYTES) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(gpustack_fs::ReadError::NotFound) => Ok(None),
                Err(e) => Err(format!("{}: {e}", path.display())),
            },
            path.display().to_string(),
        ),
        Location::Remote(remote) => (
            match reader {
                Some(reader) => reader
                    .read(remote)
                    .await
                    .map_err(|e| gpustack_protocol::error_chain(&*e)),
                None => Err("this build of gpustack reads no remote backend".into()),
            },
            remote.to_string(),
        ),
    };
    let bytes = match bytes {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return fail(
                Diagnostic::error(
                    "Unable to find remote state",
                    format!(
                        "No stored state was found for the workspace \"{workspace}\" in {shown}."
                    ),
                )
                .with_attribute("workspace"),
            );
        }
        Err(why) => {
            return fail(
                Diagnostic::error(
                    "Error loading the remote state",
                    format!("Reading {shown}: {why}"),
                )
                .with_attribute("backend"),
            );
        }
    };
    let mut outputs = match attr("defaults").peel() {
        Value::Object(defaults) => defaults.clone(),
        _ => IndexMap::new(),
    };
    match state_outputs(&shown, &bytes) {
        Ok(found) => outputs.extend(found),
        Err(why) => {
            return fail(
                Diagnostic::error("Invalid Terraform state", why).with_attribute("backend"),
            );
        }
    }
    let mut state = match config {
        Value::Object(o) => o.clone(),
        _ => IndexMap::new(),
    };
    state.insert("outputs".into(), Value::Object(outputs));
    (Value::Object(state), Vec::new())
}

/// The root outputs of a Terraform state (format version 4), each converted to the type the
/// state records for it and marked when it is sensitive. `name` is how errors name the state.
pub(crate) fn state_outputs(name: &str, bytes: &[u8]) -> Result<IndexMap<String, Value>, String> {
    let state = gpustack_state::terraform::parse(name, bytes).map_err(|e| e.to_string())?;
    let mut out = IndexMap::new();
    for (output_name, output) in state.outputs {
        let value = Value::from_json(&output.value);
        let value = match output.ty.as_ref().map(cty_type) {
            Some(Some(ty)) => ty.convert(&value).map_err(|e| {
                format!("{name}: the output \"{output_name}\" does not hold its recorded type: {e}")
            })?,
            Some(None) => {
                return Err(format!(
                    "{name}: the output \"{output_name}\" records a type gpustack cannot read"
                ));
            }
            None => value,
        };
        out.insert(
            output_name,
            if output.sensitive {
                Value::sensitive(value)
            } else {
                value
            },
        );
    }
    Ok(out)
}

/// A type as cty writes it in JSON: `"string"`, `["list", "number"]`, `["object", {...}]`,
/// `["tuple", [...]]`, `"dynamic"`.
fn cty_type(json: &serde_json::Value) -> Option<Type> {
    use serde_json::Value as J;
    Some(match json {
        J::String(name) => match name.as_str() {
            "string" => Type::String,
            "number" => Type::Number,
            "bool" => Type::Bool,
            "dynamic" => Type::Any,
            _ => return None,
        },
        J::Array(parts) => match (parts.first()?.as_str()?, parts.get(1)?) {
            ("list", inner) => Type::List(Box::new(cty_type(inner)?)),
            ("set", inner) => Type::Set(Box::new(cty_type(inner)?)),
            ("map", inner) => Type::Map(Box::new(cty_type(inner)?)),
            ("tuple", J::Array(items)) => {
                Type::Tuple(items.iter().map(cty_type).collect::<Option<_>>()?)
            }
            ("object", J::Object(attrs)) => {
                let optional: Vec<&str> = parts
                    .get(2)
                    .and_then(J::as_array)
                    .map(|o| o.iter().filter_map(J::as_str).collect())
                    .unwrap_or_default();
                Type::Object(
                    attrs
                        .iter()
                        .map(|(k, t)| {
                            let ty = cty_type(t)?;
                            let attr = if optional.contains(&k.as_str()) {
                                ObjectAttr {
                                    ty,
                                    optional: true,
                                    default: None,
                                }
                            } else {
                                ObjectAttr::required(ty)
                            };
                            Some((k.clone(), attr))
                        })
                        .collect::<Option<_>>()?,
                )
            }
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{
      "version": 4,
      "terraform_version": "1.9.8",
      "serial": 12,
      "lineage": "3f0c1d34-7d2e-4d6a-9f2f-1f6b0cde9a11",
      "outputs": {
        "cluster_name": {"value": "gpu", "type": "string"},
        "node_count": {"value": 3, "type": "number"},
        "subnets": {"value": ["a", "b"], "type": ["list", "string"]},
        "tags": {"value": {"team": "ml"}, "type": ["map", "string"]},
        "endpoint": {"value": {"host": "https://k", "port": 443}, "type": ["object", {"host": "string", "port": "number"}]},
        "token": {"value": "s3cr3t", "type": "string", "sensitive": true}
      },
      "resources": [],
      "check_results": null
    }"#;

    #[test]
    fn outputs_keep_their_types_and_sensitive_ones_are_marked() {
        let outputs = state_outputs("s", STATE.as_bytes()).unwrap();
        assert_eq!(outputs["cluster_name"], Value::string("gpu"));
        assert_eq!(outputs["node_count"], Value::number(3.0));
        assert_eq!(
            outputs["subnets"],
            Value::List(vec![Value::string("a"), Value::string("b")])
        );
        assert!(matches!(outputs["token"], Value::Sensitive(_)));
        assert!(matches!(outputs["endpoint"].peel(), Value::Object(o) if o.len() == 2));
    }

    #[test]
    fn other_documents_are_refused_with_the_reason() {
        let v3 = r#"{"version": 3, "modules": []}"#;
        assert!(
            state_outputs("s", v3.as_bytes())
                .unwrap_err()
                .contains("version 3")
        );
        let gpustack = r#"{"format_version": 1, "resources": []}"#;
        assert!(
            state_outputs("s", gpustack.as_bytes())
                .unwrap_err()
                .contains("gpustack state")
        );
        assert!(state_outputs("s", b"not json").is_err());
        // Outputs that are not an object are an error naming the field, not "no outputs".
        let array = r#"{"version": 4, "outputs": []}"#;
        assert_eq!(
            state_outputs("s", array.as_bytes()).unwrap_err(),
            "s: the field outputs is sequence, expected a map"
        );
    }

    #[test]
    fn locations_follow_terraforms_naming_of_workspaces() {
        let config: IndexMap<String, Value> = [
            ("bucket".to_owned(), Value::string("b")),
            ("key".to_owned(), Value::string("gpu/terraform.tfstate")),
            ("secret_suffix".to_owned(), Value::string("cluster")),
        ]
        .into();
        let Ok(Location::Remote(RemoteState::S3 { key, .. })) = location("s3", &config, "staging")
        else {
            panic!()
        };
        assert_eq!(key, "env:/staging/gpu/terraform.tfstate");
        let Ok(Location::Remote(RemoteState::Kubernetes {
            namespace, secret, ..
        })) = location("kubernetes", &config, "default")
        else {
            panic!()
        };
        assert_eq!(
            (namespace.as_str(), secret.as_str()),
            ("default", "tfstate-default-cluster")
        );
        let Ok(Location::File(path)) = location("local", &IndexMap::new(), "staging") else {
            panic!()
        };
        assert_eq!(
            path,
            std::path::Path::new("terraform.tfstate.d/staging/terraform.tfstate")
        );
    }
}
