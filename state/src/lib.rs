//! The state format: what gpustack last saw of every object a stack manages.
//!
//! Versioned JSON with a `lineage` (which history this state belongs to, fixed at creation) and
//! a `serial` (incremented on every write), so that a saved plan can refuse to apply over a
//! state it was not made from; the [`Backend`] trait every place that keeps it implements, and
//! the local backend. The remote backends live in `gpustack-backends`.
//!
//! **Invariant:** this crate depends on no SDK and no network client.

mod backend;
mod config;
pub mod encryption;
mod local;
pub mod terraform;

pub use backend::{
    Backend, BackendConfig, BoxError, DEFAULT_LOCAL_STATE, DEFAULT_WORKSPACE,
    DEFAULT_WORKSPACE_DIR, DEFAULT_WORKSPACE_KEY_PREFIX, Fence, LockError, LockGuard, LockHandle,
    StateError, WorkspaceNameError, WriteFence, block_on, check_workspace_name,
};
pub use config::{KubernetesConfig, S3Config};
pub use encryption::{Encryption, EncryptionConfig, EncryptionError, Encryptions};
pub use local::LocalBackend;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format_version: u32,
    /// The gpustack version that wrote it.
    pub gpustack_version: String,
    pub lineage: String,
    pub serial: u64,
    /// The key of the salted digests that stand for sensitive values in this state (hex),
    /// made with the lineage and never shown; absent in states written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_key: Option<String>,
    #[serde(default)]
    pub outputs: IndexMap<String, OutputState>,
    /// Written in address order, so that state files diff cleanly; kept in any order.
    #[serde(default, serialize_with = "in_address_order")]
    pub resources: Vec<ResourceState>,
}

/// An output's last value; a sensitive output's value is only its salted digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputState {
    pub value: serde_json::Value,
    #[serde(default)]
    pub sensitive: bool,
}

/// One managed object instance, e.g. `module.ts.kubernetes_manifest.config` or `aks_nodepool.gpu["a"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceState {
    pub address: String,
    pub mode: ResourceMode,
    #[serde(rename = "type")]
    pub type_name: String,
    /// The provider configuration address, e.g. `provider.azure.west`.
    pub provider: String,
    /// The object's attributes, each sensitive part replaced by its salted digest.
    pub attributes: serde_json::Value,
    /// The paths of the sensitive parts of `attributes` (`["manifest", "data", "token"]`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "sensitive_paths"
    )]
    pub sensitive_paths: Vec<gpustack_protocol::Path>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// Marked for replacement (`taint`, or a create-time provisioner that failed): the next
    /// plan replaces the object, as Terraform's does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tainted: bool,
    /// Its block said `lifecycle { destroy = false }` when it was last applied (OpenTofu
    /// 1.12): once the block is gone, the instance is forgotten, not destroyed, unless a
    /// `removed` block says `destroy = true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_destroy: bool,
    /// The serial of the state the plan that created the object was made from: with the
    /// state's digest key it gives again the seed the provider drew the object's values from
    /// (a password, a private key), so that a secret kept here only as a digest can be drawn
    /// again when the object is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_serial: Option<u64>,
}

/// Sorts references, not the entries: a state of thousands of objects is written every second
/// of an apply.
fn in_address_order<S: serde::Serializer>(
    resources: &[ResourceState],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut sorted: Vec<&ResourceState> = resources.iter().collect();
    sorted.sort_by(|a, b| a.address.cmp(&b.address));
    serializer.collect_seq(sorted)
}

/// Paths as arrays of steps, or (as states written before nested paths) attribute names.
fn sensitive_paths<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<gpustack_protocol::Path>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Entry {
        Path(gpustack_protocol::Path),
        Name(String),
    }
    let entries = Vec::<Entry>::deserialize(deserializer)?;
    Ok(entries
        .into_iter()
        .map(|e| match e {
            Entry::Path(p) => p,
            Entry::Name(n) => vec![gpustack_protocol::PathStep::Key(n)],
        })
        .collect())
}

pub use gpustack_protocol::ResourceMode;

/// Who holds a lock and why; shown to anyone who finds the state locked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    pub id: String,
    pub operation: String,
    pub who: String,
    pub pid: u32,
    pub created: String,
    pub version: String,
}

impl LockInfo {
    pub fn new(operation: &str) -> Self {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "unknown".into());
        let host = std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "localhost".into());
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            operation: operation.to_owned(),
            who: format!("{user}@{host}"),
            pid: std::process::id(),
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    pub fn unreadable() -> Self {
        Self {
            id: "unknown".into(),
            operation: "unknown".into(),
            who: "unknown".into(),
            pid: 0,
            created: "unknown".into(),
            version: String::new(),
        }
    }
}

/// A new lineage: the identity of a state's history.
pub fn new_lineage() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeStateError {
    #[error("the state is not valid JSON in the gpustack state format")]
    Malformed(#[from] serde_json::Error),
    #[error("the state has format version {found}; this gpustack reads version {FORMAT_VERSION}")]
    UnsupportedVersion { found: u32 },
}

impl State {
    pub fn new(lineage: impl Into<String>, gpustack_version: impl Into<String>) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            gpustack_version: gpustack_version.into(),
            lineage: lineage.into(),
            serial: 0,
            digest_key: None,
            outputs: IndexMap::new(),
            resources: Vec::new(),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeStateError> {
        #[derive(Deserialize)]
        struct Header {
            format_version: u32,
        }
        let header: Header = serde_json::from_slice(bytes)?;
        if header.format_version != FORMAT_VERSION {
            return Err(DecodeStateError::UnsupportedVersion {
                found: header.format_version,
            });
        }
        Ok(serde_json::from_slice(bytes)?)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Each address's position in `resources`: the first, should one repeat, as a scan finds.
    pub fn positions(&self) -> std::collections::HashMap<String, usize> {
        let mut positions = std::collections::HashMap::with_capacity(self.resources.len());
        for (i, r) in self.resources.iter().enumerate() {
            positions.entry(r.address.clone()).or_insert(i);
        }
        positions
    }

    pub fn resource(&self, address: &str) -> Option<&ResourceState> {
        self.resources.iter().find(|r| r.address == address)
    }
}

/// The configuration each state backend accepts in `gpustack { backend "KIND" { ... } }`.
pub fn backend_schema(kind: &str) -> Option<gpustack_protocol::Schema> {
    use gpustack_protocol::{Attribute, Schema, Type};
    let schema = match kind {
        "local" => Schema::new("State in a file next to the stack.").attr(
            "path",
            Attribute::optional(Type::String).describe("Default .gpustack/state.json."),
        ),
        "kubernetes" => Schema::new("State in Secrets of a namespace, locked with a Lease.")
            .attr("namespace", Attribute::required(Type::String))
            .attr("secret_suffix", Attribute::required(Type::String))
            .attr("config_path", Attribute::optional(Type::String))
            .attr(
                "config_paths",
                Attribute::optional(Type::list(Type::String))
                    .describe("Kubeconfig files merged in order, as kubectl merges $KUBECONFIG's."),
            )
            .attr("context", Attribute::optional(Type::String))
            .attr("in_cluster", Attribute::optional(Type::Bool))
            .attr(
                "lock_ttl",
                Attribute::optional(Type::String)
                    .describe("How long a crashed holder's lock lives, e.g. \"2m\"."),
            ),
        "s3" => Schema::new("State in an S3 object, locked with a conditional write.")
            .attr("bucket", Attribute::required(Type::String))
            .attr("key", Attribute::required(Type::String))
            .attr("region", Attribute::optional(Type::String))
            .attr("endpoint", Attribute::optional(Type::String))
            .attr("profile", Attribute::optional(Type::String))
            .attr("use_path_style", Attribute::optional(Type::Bool))
            .attr(
                "lock_ttl",
                Attribute::optional(Type::String)
                    .describe("How long a crashed holder's lock lives, e.g. \"2m\"."),
            ),
        _ => return None,
    };
    Some(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_other_versions() {
        let mut state = State::new("9b7c", "0.1.0");
        state.resources.push(ResourceState {
            address: "local_file.a".into(),
            mode: ResourceMode::Managed,
            type_name: "local_file".into(),
            provider: "provider.local".into(),
            attributes: serde_json::json!({"filename": "a.txt"}),
            sensitive_paths: vec![],
            dependencies: vec!["var.x".into()],
            tainted: false,
            skip_destroy: false,
            seed_serial: None,
        });
        let decoded = State::decode(&state.encode()).unwrap();
        assert_eq!(decoded, state);
        let legacy = String::from_utf8(state.encode()).unwrap().replace(
            "\"dependencies\"",
            "\"sensitive_paths\": [\"content\"],\n\"dependencies\"",
        );
        assert_eq!(
            State::decode(legacy.as_bytes()).unwrap().resources[0].sensitive_paths,
            vec![vec![gpustack_protocol::PathStep::Key("content".into())]]
        );
        assert_eq!(
            decoded.resource("local_file.a").unwrap().type_name,
            "local_file"
        );

        let future = String::from_utf8(state.encode())
            .unwrap()
            .replace("\"format_version\": 1", "\"format_version\": 9");
        assert!(matches!(
            State::decode(future.as_bytes()),
            Err(DecodeStateError::UnsupportedVersion { found: 9 })
        ));
    }
}
