//! A connection to one Kubernetes cluster, shared by the kubernetes and gpu providers: the
//! client built from the provider configuration, and the API discovery cache.

use gpustack_protocol::{Diagnostic, Value};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::Scope;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// Where a kind lives in the API.
#[derive(Clone)]
pub(crate) struct Kind {
    pub(crate) resource: ApiResource,
    pub(crate) namespaced: bool,
}

/// The kinds one apiVersion serves, by name; locked while they are being discovered.
type KindsOfVersion = Arc<Mutex<HashMap<String, Kind>>>;

pub(crate) struct Cluster {
    pub(crate) client: kube::Client,
    /// apiVersion → kind → where it lives. One lock per apiVersion, so that a thousand
    /// concurrent first lookups make one discovery request, not a thousand.
    kinds: std::sync::Mutex<HashMap<String, KindsOfVersion>>,
}

fn text(config: &Value, name: &str) -> Option<String> {
    crate::check::text(config, name).map(str::to_owned)
}

fn config_error(detail: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error("Cannot configure the Kubernetes client", detail.to_string())
}

impl Cluster {
    /// Explicit `host` (with `token`, `cluster_ca_certificate`), else `in_cluster`, else a
    /// kubeconfig file and optional `context`. Builds the client only: no request is made.
    pub(crate) async fn connect(config: &Value) -> Result<Self, Diagnostic> {
        let client_config = if let Some(host) = text(config, "host") {
            let mut cluster = serde_json::json!({ "server": host });
            if let Some(ca) = text(config, "cluster_ca_certificate") {
                use base64::Engine;
                cluster["certificate-authority-data"] =
                    base64::engine::general_purpose::STANDARD.encode(ca).into();
            }
            let mut user = serde_json::json!({});
            if let Some(token) = text(config, "token") {
                user["token"] = token.into();
            }
            let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(serde_json::json!({
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{ "name": "explicit", "cluster": cluster }],
                "users": [{ "name": "explicit", "user": user }],
                "contexts": [{ "name": "explicit", "context": { "cluster": "explicit", "user": "explicit" } }],
                "current-context": "explicit",
            }))
            .map_err(config_error)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(config_error)?
        } else if crate::check::attribute(config, "in_cluster").and_then(Value::as_bool)
            == Some(true)
        {
            kube::Config::incluster().map_err(|e| {
                config_error(format!(
                    "in_cluster = true, but this process does not run in a pod with a service account: {e}"
                ))
            })?
        } else if text(config, "config_path").is_none()
            && text(config, "context").is_none()
            && kube::config::Kubeconfig::read().is_err()
            && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        {
            // No kubeconfig anywhere, in a pod: its service account, as kubectl does.
            kube::Config::incluster().map_err(config_error)?
        } else {
            // config_path, else what kubectl reads: every file of $KUBECONFIG, merged, else
            // ~/.kube/config.
            let (kubeconfig, source) = match text(config, "config_path") {
                Some(path) => (kube::config::Kubeconfig::read_from(&path), path),
                None => (
                    kube::config::Kubeconfig::read(),
                    std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_owned()),
                ),
            };
            let kubeconfig = kubeconfig
                .map_err(|e| config_error(format!("Reading kubeconfig {source}: {e}")))?;
            let options = kube::config::KubeConfigOptions {
                context: text(config, "context"),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| config_error(format!("kubeconfig {source}: {e}")))?
        };
        let mut client_config = client_config;
        client_config.read_timeout = Some(Duration::from_secs(60));
        let client = kube::Client::try_from(client_config).map_err(config_error)?;
        Ok(Self {
            client,
            kinds: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Finds a kind through API discovery (one request per apiVersion); `None` when the
    /// server does not serve it (yet: a CRD planned in the same run). Misses ask again.
    pub(crate) async fn kind(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Kind>, kube::Error> {
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
    pub(crate) async fn kind_eventually(
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

    pub(crate) fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        match (kind.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            (true, None) => Api::default_namespaced_with(self.client.clone(), &kind.resource),
            (false, _) => Api::all_with(self.client.clone(), &kind.resource),
        }
    }
}

/// The message of a Kubernetes API error, without kube's wrapping.
pub(crate) fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => other.to_string(),
    }
}

/// Parses durations such as "5m", "90s", "1h30m".
pub(crate) fn duration(text: Option<&str>, default: Duration) -> Result<Duration, String> {
    match text {
        None => Ok(default),
        Some(t) => humantime::parse_duration(t)
            .map_err(|e| format!("\"{t}\" is not a duration such as \"90s\" or \"5m\": {e}")),
    }
}
