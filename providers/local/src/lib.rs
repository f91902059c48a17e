//! Providers that need only the machine: `local` (files next to the stack, `local_file`,
//! written atomically), Terraform's built-in `terraform` (`terraform_data`, and
//! `terraform_remote_state`, which reads remote backends through a reader the binary gives),
//! the utility providers whose objects live only in the state: `random`, `null`, `time`,
//! `tls`, `cloudinit`; `archive` (files made from files) and `external` (a program run at
//! plan).

pub mod archive;
pub mod cloudinit;
pub mod external;
pub mod null;
pub mod random;
mod remote_state;
mod state_only;
pub mod terraform;
pub mod time;
pub mod tls;
mod words;

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
    plan_from_schema,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use indexmap::IndexMap;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// Files on the machine that runs gpustack: rendered manifests for GitOps repositories, and
/// the offline provider that exercises the whole engine without a cloud.
pub(crate) struct Local;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Local))
}

#[async_trait::async_trait]
impl Family for Local {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("local", &["local_file"], &["local_file"])
    }

    /// A file is its path, as the process sees it.
    fn identity(&self, _: &str, state: &Value) -> Option<String> {
        let filename = attr_str(state, "filename")?;
        let path = std::path::Path::new(filename);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(path)
        };
        Some(format!("file:{}", absolute.display()))
    }

    fn schema(&self) -> ProviderSchema {
        let file = Schema::new("A file on the local disk, written atomically.")
            .attr(
                "filename",
                Attribute::required(Type::String)
                    .force_new()
                    .describe("Path of the file, relative to the stack."),
            )
            .attr(
                "content",
                Attribute::optional(Type::String).describe("Content of the file."),
            )
            .attr(
                "sensitive_content",
                Attribute::optional(Type::String)
                    .sensitive()
                    .describe("Content that never appears in plans, logs or output."),
            )
            .attr(
                "file_permission",
                Attribute::optional_computed(Type::String)
                    .force_new()
                    .describe("Octal mode, default \"0644\"."),
            )
            .attr(
                "id",
                Attribute::computed(Type::String).describe("SHA-256 of the content."),
            );
        let data_file = Schema::new("Reads a file from the local disk.")
            .attr("filename", Attribute::required(Type::String))
            .attr("content", Attribute::computed(Type::String));
        ProviderSchema {
            name: "local".into(),
            config: provider_config("Local files; needs no configuration."),
            resources: [("local_file".to_owned(), file)].into(),
            data_sources: [("local_file".to_owned(), data_file)].into(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == "local_file" {
            if check.get("content").is_some() && check.get("sensitive_content").is_some() {
                check.error(
                    "sensitive_content",
                    "Conflicting attributes",
                    "Set either content or sensitive_content, not both.".into(),
                );
            }
            if let Some(mode) = check.str("file_permission")
                && (mode.len() > 4 || u32::from_str_radix(mode, 8).is_err())
            {
                check.error(
                    "file_permission",
                    "Invalid file permission",
                    format!("\"{mode}\" is not an octal mode such as \"0644\"."),
                );
            }
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(Local))
    }
}

#[async_trait::async_trait]
impl Provider for Local {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let mut results = Vec::with_capacity(request.states.len());
        for (i, state) in request.states.iter().enumerate() {
            let secret = request
                .sensitive_paths
                .get(i)
                .is_some_and(|paths| content_is_secret(paths));
            results.push(match attr_str(state, "filename") {
                Some(filename) => read_file(filename, state, secret).await,
                None => Ok(None),
            });
        }
        ReadResourcesResponse::collect(&request.states, results)
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = self.schema();
        let Some(resource) = schema.resources.get(&request.type_name) else {
            return PlanResourceChangeResponse::default();
        };
        let mut response =
            plan_from_schema(resource, request.prior_state.as_ref(), &request.config);
        if let Value::Object(planned) = &mut response.planned_state {
            if planned.get("file_permission").is_none_or(Value::is_unknown) {
                planned.insert("file_permission".into(), Value::string("0644"));
            }
            let secret = content_is_secret(&request.sensitive_paths)
                || planned
                    .get("sensitive_content")
                    .is_some_and(|v| !v.is_null());
            let content = content_of(planned);
            planned.insert(
                "id".into(),
                content.map_or(Value::Unknown, |c| id_of(c, secret)),
            );
        }
        // A file has no place for a stack's mark: one that is there and not in the state is
        // someone else's until it is imported.
        if request.prior_state.is_none()
            && let Some(filename) = attr_str(&response.planned_state, "filename")
            && Path::new(filename).exists()
        {
            response.existing = Some(gpustack_protocol::Existing {
                import_id: filename.to_owned(),
                describe: format!("the file {filename}"),
                owned: false,
            });
        }
        response
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        match (&request.prior_state, &request.planned_state) {
            (Some(prior), None) => {
                let Some(filename) = attr_str(prior, "filename") else {
                    return ApplyResourceChangeResponse::default();
                };
                match tokio::fs::remove_file(filename).await {
                    Ok(()) => ApplyResourceChangeResponse::default(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        ApplyResourceChangeResponse::default()
                    }
                    Err(e) => failed(
                        Some(prior.clone()),
                        format!("cannot delete {filename}: {e}"),
                    ),
                }
            }
            (prior, Some(planned)) => {
                let Value::Object(attrs) = planned else {
                    return failed(prior.clone(), "the planned state is not an object".into());
                };
                let (Some(filename), Some(content)) = (
                    attrs.get("filename").and_then(Value::as_str),
                    content_of(attrs),
                ) else {
                    return failed(
                        prior.clone(),
                        "filename and content must be known to write the file".into(),
                    );
                };
                let mode = attrs
                    .get("file_permission")
                    .and_then(Value::as_str)
                    .unwrap_or("0644");
                if let Some(old) = prior.as_ref().and_then(|p| attr_str(p, "filename"))
                    && old != filename
                {
                    let _ = tokio::fs::remove_file(old).await;
                }
                if let Err(e) = write_file(Path::new(filename), content, mode).await {
                    return failed(prior.clone(), format!("cannot write {filename}: {e}"));
                }
                let secret = content_is_secret(&request.sensitive_paths)
                    || attrs.get("sensitive_content").is_some_and(|v| !v.is_null());
                let mut state = attrs.clone();
                state.insert("file_permission".into(), Value::string(mode));
                state.insert("id".into(), id_of(content, secret));
                ApplyResourceChangeResponse {
                    new_state: Some(Value::Object(state)),
                    diagnostics: vec![],
                }
            }
            (None, None) => ApplyResourceChangeResponse::default(),
        }
    }

    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        let skeleton = Value::Object(IndexMap::from([(
            "filename".to_owned(),
            Value::String(request.id.clone()),
        )]));
        match read_file(&request.id, &skeleton, false).await {
            Ok(Some(state)) => ImportResourceResponse {
                state: Some(state),
                diagnostics: vec![],
            },
            Ok(None) => ImportResourceResponse {
                state: None,
                diagnostics: vec![Diagnostic::error(
                    "Cannot import",
                    format!("{} does not exist.", request.id),
                )],
            },
            Err(d) => ImportResourceResponse {
                state: None,
                diagnostics: vec![d],
            },
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        let Some(filename) = attr_str(&request.config, "filename") else {
            return ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![],
            };
        };
        let read = read_bounded(filename)
            .await
            .and_then(|bytes| String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into()));
        match read {
            Ok(content) => ReadDataSourceResponse {
                state: Value::Object(IndexMap::from([
                    ("filename".to_owned(), Value::string(filename)),
                    ("content".to_owned(), Value::String(content)),
                ])),
                diagnostics: vec![],
            },
            Err(e) => ReadDataSourceResponse {
                state: request.config.clone(),
                diagnostics: vec![Diagnostic::error(
                    "Cannot read file",
                    format!("{filename}: {e}"),
                )],
            },
        }
    }
}

/// The largest file read, as the language's `file()` reads at most.
const MAX_FILE_BYTES: u64 = 64 << 20;
const NOT_FOUND: &str = "no such file";

/// A regular file's bytes, bounded before they are read; the error says why not.
async fn read_bounded(filename: &str) -> Result<Vec<u8>, String> {
    let path = std::path::PathBuf::from(filename);
    tokio::task::spawn_blocking(move || gpustack_fs::read_bounded(&path, MAX_FILE_BYTES))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

fn attr_str<'a>(state: &'a Value, name: &str) -> Option<&'a str> {
    state.as_object()?.get(name)?.as_str()
}

fn content_of(attrs: &IndexMap<String, Value>) -> Option<&str> {
    ["content", "sensitive_content"]
        .iter()
        .find_map(|k| attrs.get(*k).and_then(Value::as_str))
        .or_else(|| {
            // Neither set: an empty file, once both are known to be null.
            let known_null = |k: &str| attrs.get(k).is_none_or(Value::is_null);
            (known_null("content") && known_null("sensitive_content")).then_some("")
        })
}

/// True when `content` is a secret (a sensitive variable flowed into it); `sensitive_content`
/// always is, when it is set.
fn content_is_secret(paths: &[gpustack_protocol::Path]) -> bool {
    paths.iter().any(|p| {
        matches!(p.first(), Some(gpustack_protocol::PathStep::Key(k)) if k == "content")
            || p.is_empty()
    })
}

/// The file's id, its content's SHA-256; a digest of a secret is itself a secret (an unsalted
/// hash of a weak secret gives it away).
fn id_of(content: &str, secret: bool) -> Value {
    let id = Value::String(digest(content));
    if secret { Value::sensitive(id) } else { id }
}

fn digest(content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn failed(state: Option<Value>, message: String) -> ApplyResourceChangeResponse {
    ApplyResourceChangeResponse {
        new_state: state,
        diagnostics: vec![Diagnostic::error("local_file failed", message)],
    }
}

/// The file as it is on disk, in the shape of the recorded state (which of content and
/// sensitive_content holds it follows the record).
async fn read_file(
    filename: &str,
    recorded: &Value,
    secret: bool,
) -> Result<Option<Value>, Diagnostic> {
    let content = match read_bounded(filename).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e == NOT_FOUND => return Ok(None),
        Err(e) => {
            return Err(Diagnostic::error(
                "Cannot read file",
                format!("{filename}: {e}"),
            ));
        }
    };
    let mode = tokio::fs::metadata(filename)
        .await
        .map(|m| permission_of(&m))
        .unwrap_or_else(|_| "0644".into());
    let mut state = recorded.as_object().cloned().unwrap_or_default();
    let sensitive = state.get("sensitive_content").is_some_and(|v| !v.is_null());
    state.insert("filename".into(), Value::string(filename));
    state.insert(
        if sensitive {
            "sensitive_content"
        } else {
            "content"
        }
        .into(),
        Value::String(content.clone()),
    );
    state
        .entry(
            if sensitive {
                "content"
            } else {
                "sensitive_content"
            }
            .to_owned(),
        )
        .or_insert(Value::Null);
    state.insert("file_permission".into(), Value::String(mode));
    state.insert("id".into(), id_of(&content, secret || sensitive));
    Ok(Some(Value::Object(state)))
}

#[cfg(unix)]
fn permission_of(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::PermissionsExt;
    format!("{:04o}", meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn permission_of(_: &std::fs::Metadata) -> String {
    "0644".into()
}

/// Writes through a new file of a random name, created exclusively with its final mode in
/// the same directory, then renamed over the path: a crash never leaves half a file, and a
/// symlink planted at the path (or at a predictable temporary name) is replaced, never
/// followed.
async fn write_file(path: &Path, content: &str, mode: &str) -> std::io::Result<()> {
    let path = path.to_path_buf();
    let content = content.to_owned();
    let bits = u32::from_str_radix(mode, 8).unwrap_or(0o644);
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        gpustack_fs::write_atomic(&path, content.as_bytes(), bits)
    })
    .await
    .map_err(std::io::Error::other)?
}
