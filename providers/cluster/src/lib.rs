//! A connection to one Kubernetes cluster as gpustack's providers hold it: the client built from
//! a provider configuration, the API discovery cache, and the live GPU facts ([`facts`]). The
//! kubernetes, gpu and helm providers share it; no provider depends on another for it.

use gpustack_protocol::{Diagnostic, Value};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::Scope;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

pub mod drain;
pub mod facts;
pub mod watch;
pub mod yaml;

type Json = serde_json::Value;

/// The credentials of Terraform's kubernetes provider gpustack's own arguments do not have: any
/// of them makes the client's kubeconfig one built from the provider block.
pub const TERRAFORM_CREDENTIALS: &[&str] = &[
    "client_certificate",
    "client_key",
    "username",
    "password",
    "insecure",
    "tls_server_name",
    "proxy_url",
    "exec",
];

/// A kubeconfig document of the credentials Terraform's kubernetes and helm providers take in
/// their configuration (host, token, client certificate, exec plugin, ...); `None` when it
/// names none (it then only chooses a kubeconfig and a context).
pub fn terraform_kubeconfig(kubernetes: &Value) -> Option<Json> {
    use base64::Engine as _;
    use gpustack_provider_sdk::check::{attribute, text};
    let credentials = [
        "host",
        "token",
        "client_certificate",
        "client_key",
        "username",
        "password",
        "cluster_ca_certificate",
        "exec",
    ];
    if !credentials
        .iter()
        .any(|k| attribute(kubernetes, k).is_some())
    {
        return None;
    }
    let b64 = |name: &str| {
        text(kubernetes, name).map(|pem| base64::engine::general_purpose::STANDARD.encode(pem))
    };
    let mut cluster = serde_json::Map::new();
    if let Some(host) = text(kubernetes, "host") {
        cluster.insert("server".into(), host.into());
    }
    if let Some(ca) = b64("cluster_ca_certificate") {
        cluster.insert("certificate-authority-data".into(), ca.into());
    }
    if attribute(kubernetes, "insecure").and_then(Value::as_bool) == Some(true) {
        cluster.insert("insecure-skip-tls-verify".into(), true.into());
    }
    if let Some(name) = text(kubernetes, "tls_server_name") {
        cluster.insert("tls-server-name".into(), name.into());
    }
    if let Some(proxy) = text(kubernetes, "proxy_url") {
        cluster.insert("proxy-url".into(), proxy.into());
    }
    let mut user = serde_json::Map::new();
    for (name, key) in [
        ("token", "token"),
        ("username", "username"),
        ("password", "password"),
    ] {
        if let Some(value) = text(kubernetes, name) {
            user.insert(key.into(), value.into());
        }
    }
    if let Some(cert) = b64("client_certificate") {
        user.insert("client-certificate-data".into(), cert.into());
    }
    if let Some(key) = b64("client_key") {
        user.insert("client-key-data".into(), key.into());
    }
    if let Some(exec) = attribute(kubernetes, "exec") {
        let env: Vec<Json> = attribute(exec, "env")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| serde_json::json!({"name": k, "value": v.as_str().unwrap_or_default()}))
            .collect();
        let args: Vec<Json> = attribute(exec, "args")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(Json::from)
            .collect();
        user.insert(
            "exec".into(),
            serde_json::json!({
                "apiVersion": text(exec, "api_version"),
                "command": text(exec, "command"),
                "args": args,
                "env": env,
                "interactiveMode": "Never",
            }),
        );
    }
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "terraform", "cluster": cluster}],
        "users": [{"name": "terraform", "user": user}],
        "contexts": [{"name": "terraform", "context": {"cluster": "terraform", "user": "terraform"}}],
        "current-context": "terraform",
    });
    Some(config)
}

/// The environment variables of Terraform's kubernetes provider (and of the helm provider's
/// `kubernetes` block), each the default of the argument beside it: the configuration's own
/// value wins, as in Terraform.
pub const KUBE_ENVIRONMENT: &[(&str, &str)] = &[
    ("config_path", "KUBE_CONFIG_PATH"),
    ("config_context", "KUBE_CTX"),
    ("config_context_auth_info", "KUBE_CTX_AUTH_INFO"),
    ("config_context_cluster", "KUBE_CTX_CLUSTER"),
    ("host", "KUBE_HOST"),
    ("token", "KUBE_TOKEN"),
    ("username", "KUBE_USER"),
    ("password", "KUBE_PASSWORD"),
    ("insecure", "KUBE_INSECURE"),
    ("tls_server_name", "KUBE_TLS_SERVER_NAME"),
    ("client_certificate", "KUBE_CLIENT_CERT_DATA"),
    ("client_key", "KUBE_CLIENT_KEY_DATA"),
    ("cluster_ca_certificate", "KUBE_CLUSTER_CA_CERT_DATA"),
    ("proxy_url", "KUBE_PROXY_URL"),
];

/// `config` with what the configuration leaves unset taken from the environment
/// ([`KUBE_ENVIRONMENT`]; `KUBE_CONFIG_PATHS`, a path list, for `config_paths`), read through
/// `lookup`.
pub fn with_environment_from(config: &Value, lookup: impl Fn(&str) -> Option<String>) -> Value {
    let mut out = match config {
        Value::Object(o) => o.clone(),
        _ => indexmap::IndexMap::new(),
    };
    let unset = |out: &indexmap::IndexMap<String, Value>, name: &str| {
        out.get(name).is_none_or(Value::is_null)
    };
    for (name, variable) in KUBE_ENVIRONMENT {
        let Some(text) = lookup(variable).filter(|t| !t.is_empty()) else {
            continue;
        };
        if !unset(&out, name) {
            continue;
        }
        let value = if *name == "insecure" {
            Value::Bool(matches!(text.as_str(), "1" | "true" | "TRUE" | "True"))
        } else {
            Value::String(text)
        };
        out.insert((*name).to_owned(), value);
    }
    if unset(&out, "config_paths")
        && let Some(paths) = lookup("KUBE_CONFIG_PATHS").filter(|t| !t.is_empty())
    {
        let list = std::env::split_paths(&paths)
            .map(|p| Value::String(p.display().to_string()))
            .collect();
        out.insert("config_paths".to_owned(), Value::List(list));
    }
    Value::Object(out)
}

/// [`with_environment_from`] this process's environment.
pub fn with_environment(config: &Value) -> Value {
    with_environment_from(config, |name| std::env::var(name).ok())
}

/// Why the live cluster's GPU facts could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GpuClusterError {
    /// The client could not be configured: the diagnostic's detail says why.
    #[error("{}", .0.detail)]
    Connect(Diagnostic),
    #[error(transparent)]
    Read(ApiError),
}

/// The live cluster's GPU facts as the kubernetes provider reads them (GPU nodes, the
/// ClusterPolicy and the ConfigMaps it points at, DRA devices), for the other providers of the
/// Kubernetes family whose objects configure GPUs: a helm release of the GPU Operator. The
/// cluster is the one kubectl would use with this kubeconfig and context.
pub async fn gpu_cluster(
    config_path: Option<&str>,
    context: Option<&str>,
) -> Result<gpustack_protocol::ClusterFact, GpuClusterError> {
    let cluster = connect_at(config_path, context).await?;
    facts::cluster_fact(&cluster)
        .await
        .map_err(|e| GpuClusterError::Read(ApiError(e)))
}

/// A cluster's namespaces as a plan sees them: the cluster's identity (the uid of its
/// `kube-system` namespace, the same whichever address or credentials reach it) and the names
/// of the namespaces there now.
#[derive(Debug, Clone)]
pub struct Namespaces {
    pub identity: String,
    pub names: std::collections::HashSet<String>,
}

impl Namespaces {
    /// The key of namespace `name` of this cluster, as [`gpustack_protocol::Order`] has it.
    pub fn key(&self, name: &str) -> String {
        gpustack_protocol::namespace_key(&self.identity, name)
    }
}

impl Cluster {
    /// The cluster's namespaces (one metadata LIST).
    pub async fn namespaces(&self) -> Result<Namespaces, kube::Error> {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let list = api.list_metadata(&kube::api::ListParams::default()).await?;
        let mut identity = String::new();
        let mut names = std::collections::HashSet::new();
        for ns in list.items {
            let name = ns.metadata.name.unwrap_or_default();
            if name == "kube-system" {
                identity = ns.metadata.uid.unwrap_or_default();
            }
            names.insert(name);
        }
        Ok(Namespaces { identity, names })
    }
}

/// [`Cluster::namespaces`] of the cluster a kubeconfig names, for the providers that reach it
/// through another client (helm).
pub async fn namespaces_at(
    config_path: Option<&str>,
    context: Option<&str>,
) -> Result<Namespaces, GpuClusterError> {
    connect_at(config_path, context)
        .await?
        .namespaces()
        .await
        .map_err(|e| GpuClusterError::Read(ApiError(e)))
}

/// The client of the cluster a kubeconfig (and a context of it) names.
async fn connect_at(
    config_path: Option<&str>,
    context: Option<&str>,
) -> Result<Cluster, GpuClusterError> {
    let mut config = indexmap::IndexMap::new();
    if let Some(path) = config_path {
        config.insert("config_path".to_owned(), Value::string(path));
    }
    if let Some(context) = context {
        config.insert("context".to_owned(), Value::string(context));
    }
    Cluster::connect(&Value::Object(config))
        .await
        .map_err(GpuClusterError::Connect)
}

/// [`namespaces_not_read`] into `diagnostics` the first time `warned` is passed: a plan says it
/// once per provider, however many objects could not be checked.
pub fn warn_namespaces_not_read_once(
    warned: &std::sync::atomic::AtomicBool,
    why: &str,
    diagnostics: &mut Vec<gpustack_protocol::Diagnostic>,
) {
    if !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
        diagnostics.push(namespaces_not_read(why));
    }
}

/// The warning a plan gets, once, when the cluster's namespaces cannot be listed.
pub fn namespaces_not_read(why: &str) -> gpustack_protocol::Diagnostic {
    gpustack_protocol::Diagnostic::warning(
        "Namespaces not read",
        format!(
            "Cannot list the cluster's namespaces ({why}): the plan does not check that each object's namespace exists or is made before it."
        ),
    )
}

/// The warning a plan gets when the cluster's GPU nodes cannot be read.
pub fn gpu_nodes_not_read(why: &str) -> gpustack_protocol::Diagnostic {
    gpustack_protocol::Diagnostic::warning(
        "GPU nodes not read",
        format!(
            "Cannot list the cluster's GPU nodes ({why}): the plan has no node capacity lines and no checks against the nodes' GPUs."
        ),
    )
}

/// Where a kind lives in the API.
#[derive(Clone)]
pub struct Kind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// The kinds one apiVersion serves, by name; locked while they are being discovered.
type KindsOfVersion = Arc<Mutex<HashMap<String, Kind>>>;

pub struct Cluster {
    pub client: kube::Client,
    /// apiVersion → kind → where it lives. One lock per apiVersion, so that a thousand
    /// concurrent first lookups make one discovery request, not a thousand.
    kinds: std::sync::Mutex<HashMap<String, KindsOfVersion>>,
}

fn text(config: &Value, name: &str) -> Option<String> {
    gpustack_provider_sdk::check::text(config, name).map(str::to_owned)
}

/// The kubeconfig files a block names, as Terraform's provider takes them: `config_path`,
/// else every one of `config_paths` (which `KUBE_CONFIG_PATHS` fills).
fn config_paths(config: &Value) -> Vec<String> {
    if let Some(path) = text(config, "config_path") {
        return vec![path];
    }
    gpustack_provider_sdk::check::attribute(config, "config_paths")
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn config_error(detail: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error("Cannot configure the Kubernetes client", detail.to_string())
}

impl Cluster {
    /// Explicit `host` (with `token`, `cluster_ca_certificate`), else `in_cluster`, else a
    /// kubeconfig file and optional `context`. Builds the client only: no request is made.
    pub async fn connect(config: &Value) -> Result<Self, Diagnostic> {
        let config = &with_environment(config);
        let settings = gpustack_connect::kubernetes::KubeSettings {
            host: text(config, "host"),
            token: text(config, "token"),
            cluster_ca_certificate: text(config, "cluster_ca_certificate"),
            config_paths: config_paths(config),
            context: text(config, "context").or_else(|| text(config, "config_context")),
            cluster: text(config, "config_context_cluster"),
            user: text(config, "config_context_auth_info"),
            in_cluster: gpustack_provider_sdk::check::attribute(config, "in_cluster")
                .and_then(Value::as_bool),
            kubeconfig: TERRAFORM_CREDENTIALS
                .iter()
                .any(|k| gpustack_provider_sdk::check::attribute(config, k).is_some())
                .then(|| terraform_kubeconfig(config))
                .flatten(),
        };
        let client = gpustack_connect::kubernetes::client(&settings)
            .await
            .map_err(config_error)?;
        Ok(Self {
            client,
            kinds: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Finds a kind through API discovery (one request per apiVersion); `None` when the
    /// server does not serve it (yet: a CRD planned in the same run). Misses ask again.
    pub async fn kind(&self, api_version: &str, kind: &str) -> Result<Option<Kind>, kube::Error> {
        let slot = {
            let mut all = self
                .kinds
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            all.entry(api_version.to_owned()).or_default().clone()
        };
        let mut known = slot.lock().await;
        if let Some(found) = known.get(kind) {
            return Ok(Some(found.clone()));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gv = kube::core::GroupVersion::gv(group, version);
        match kube::discovery::pinned_group(&self.client, &gv).await {
            Ok(api_group) => {
                for (resource, caps) in api_group.versioned_resources(version) {
                    known.insert(
                        resource.kind.clone(),
                        Kind {
                            resource,
                            namespaced: caps.scope == Scope::Namespaced,
                        },
                    );
                }
                Ok(known.get(kind).cloned())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Like [`Self::kind`], but waits up to `patience` for a kind that a CRD applied moments
    /// ago is about to serve.
    pub async fn kind_eventually(
        &self,
        api_version: &str,
        kind: &str,
        patience: Duration,
    ) -> Result<Option<Kind>, kube::Error> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            if let Some(found) = self.kind(api_version, kind).await? {
                return Ok(Some(found));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Server-side applies `body` to the object `name` of `api` and returns the object the
    /// API server answers, as JSON: read straight into JSON, where `Api::patch` reads it into
    /// a `DynamicObject` that its caller would write back to JSON.
    pub async fn apply_json(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
        params: &kube::api::PatchParams,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, kube::Error> {
        let mut request = kube::core::Request::new(api.resource_url())
            .patch(name, params, &kube::api::Patch::Apply(body))
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("patch");
        self.client.request(request).await
    }

    /// Reads the object `name` of `api` straight into JSON; `None` when there is none.
    pub async fn get_json(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
    ) -> Result<Option<serde_json::Value>, kube::Error> {
        let mut request = kube::core::Request::new(api.resource_url())
            .get(name, &kube::api::GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("get");
        match self.client.request(request).await {
            Ok(object) => Ok(Some(object)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One page of a LIST of `api`, its items read straight into JSON (without the
    /// apiVersion and kind that items of a LIST do not carry).
    pub async fn list_json(
        &self,
        api: &Api<DynamicObject>,
        params: &kube::api::ListParams,
    ) -> Result<ListPage, kube::Error> {
        let mut request = kube::core::Request::new(api.resource_url())
            .list(params)
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("list");
        self.client.request(request).await
    }

    pub fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        match (kind.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            (true, None) => Api::default_namespaced_with(self.client.clone(), &kind.resource),
            (false, _) => Api::all_with(self.client.clone(), &kind.resource),
        }
    }
}

/// A page of a LIST: its items, and the token that asks for the next page.
#[derive(serde::Deserialize)]
pub struct ListPage {
    #[serde(default)]
    pub items: Vec<serde_json::Value>,
    #[serde(default)]
    metadata: ListPageMetadata,
}

#[derive(serde::Deserialize, Default)]
struct ListPageMetadata {
    #[serde(rename = "continue", default)]
    next: Option<String>,
}

impl ListPage {
    /// The token for the next page; `None` on the last.
    pub fn next(&self) -> Option<&str> {
        self.metadata
            .next
            .as_deref()
            .filter(|token| !token.is_empty())
    }
}

/// The parameters of every server-side apply gpustack sends. Field validation is `Ignore`:
/// for an apply, the API server rejects an unknown field whatever the directive ("field not
/// declared in schema", from the typed patch), and `Strict` or `Warn` (the server's default)
/// only add a second, strict YAML decode of the body to find duplicate keys, which a body
/// written from a JSON map cannot have. That decode was about 7% of the API server's CPU for
/// a create of 1,010 objects.
pub fn apply_params(manager: &str, force: bool) -> kube::api::PatchParams {
    let mut params = kube::api::PatchParams::apply(manager).validation_ignore();
    params.force = force;
    params
}

/// A failed Kubernetes API call, shown as [`api_error`] shows it.
#[derive(Debug, thiserror::Error)]
#[error("{}", api_error(.0))]
pub struct ApiError(pub kube::Error);

/// The message of a Kubernetes API error, without kube's wrapping.
pub fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    }
}

pub use gpustack_provider_sdk::check::duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_fills_only_what_the_configuration_leaves_unset() {
        let environment = |name: &str| match name {
            "KUBE_CONFIG_PATH" => Some("/ci/kubeconfig".to_owned()),
            "KUBE_CTX" => Some("from-env".to_owned()),
            "KUBE_INSECURE" => Some("true".to_owned()),
            "KUBE_CONFIG_PATHS" => Some("/a:/b".to_owned()),
            _ => None,
        };
        let config = Value::Object(
            [
                ("config_context".to_owned(), Value::string("configured")),
                ("host".to_owned(), Value::Null),
            ]
            .into_iter()
            .collect(),
        );
        let filled = with_environment_from(&config, environment);
        let get = |name: &str| gpustack_provider_sdk::check::attribute(&filled, name).cloned();
        assert_eq!(get("config_path"), Some(Value::string("/ci/kubeconfig")));
        assert_eq!(get("config_context"), Some(Value::string("configured")));
        assert_eq!(get("insecure"), Some(Value::Bool(true)));
        assert_eq!(get("host"), None, "no KUBE_HOST: still unset");
        assert_eq!(
            get("config_paths"),
            Some(Value::List(vec![Value::string("/a"), Value::string("/b")]))
        );
        assert_eq!(
            with_environment_from(&Value::Null, |_| None),
            Value::Object(indexmap::IndexMap::new())
        );
    }
}
