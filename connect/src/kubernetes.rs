//! A Kubernetes client configured the way kubectl finds its cluster.

use std::time::Duration;

mod transport;

/// What a `provider "kubernetes"` block or a `backend "kubernetes"` block says about the
/// cluster. All empty: what kubectl reads.
#[derive(Debug, Clone, Default)]
pub struct KubeSettings {
    /// An API server given directly, with `token` and `cluster_ca_certificate` (PEM).
    pub host: Option<String>,
    pub token: Option<String>,
    pub cluster_ca_certificate: Option<String>,
    pub config_path: Option<String>,
    pub context: Option<String>,
    pub in_cluster: Option<bool>,
    /// A whole kubeconfig document, built from a provider block's credentials (Terraform's
    /// client certificates, exec plugins, ...): used before anything else.
    pub kubeconfig: Option<serde_json::Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "in_cluster = true, but this process does not run in a pod with a service account: {0}"
    )]
    NotInPod(kube::config::InClusterError),
    #[error("Reading kubeconfig {source_name}: {error}")]
    ReadKubeconfig {
        source_name: String,
        error: kube::config::KubeconfigError,
    },
    #[error("kubeconfig {source_name}: {error}")]
    Kubeconfig {
        source_name: String,
        error: kube::config::KubeconfigError,
    },
    #[error("{0}")]
    InCluster(kube::config::InClusterError),
    #[error("{0}")]
    Explicit(String),
    #[error("{0}")]
    Client(kube::Error),
}

/// Explicit `host`, else `in_cluster`, else a kubeconfig file (`config_path`, else every file
/// of `$KUBECONFIG` merged, else `~/.kube/config`) and its `context`; in a pod with no
/// kubeconfig anywhere, its service account, as kubectl does. Builds the client only: no
/// request is made. Speaks HTTP/2 where the server offers it, as kubectl does, unless
/// `DISABLE_HTTP2` is set to anything (client-go's switch, for proxies that break HTTP/2);
/// through a kubeconfig `proxy-url`, HTTP/1.1 on kube's own stack, which also says which proxy
/// protocols it cannot use.
pub async fn client(settings: &KubeSettings) -> Result<kube::Client, ConnectError> {
    let mut config = config(settings).await?;
    config.read_timeout = Some(Duration::from_secs(60));
    if config.proxy_url.is_some() {
        return kube::Client::try_from(config).map_err(ConnectError::Client);
    }
    let offer_http2 = std::env::var_os("DISABLE_HTTP2").is_none_or(|v| v.is_empty());
    transport::client(config, offer_http2).map_err(ConnectError::Client)
}

async fn config(settings: &KubeSettings) -> Result<kube::Config, ConnectError> {
    if let Some(document) = &settings.kubeconfig {
        let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(document.clone())
            .map_err(|e| ConnectError::Explicit(e.to_string()))?;
        let options = kube::config::KubeConfigOptions {
            context: settings.context.clone(),
            ..Default::default()
        };
        return kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| ConnectError::Explicit(e.to_string()));
    }
    if let Some(host) = &settings.host {
        let mut cluster = serde_json::json!({ "server": host });
        if let Some(ca) = &settings.cluster_ca_certificate {
            use base64::Engine;
            cluster["certificate-authority-data"] =
                base64::engine::general_purpose::STANDARD.encode(ca).into();
        }
        let mut user = serde_json::json!({});
        if let Some(token) = &settings.token {
            user["token"] = token.clone().into();
        }
        let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "explicit", "cluster": cluster }],
            "users": [{ "name": "explicit", "user": user }],
            "contexts": [{ "name": "explicit", "context": { "cluster": "explicit", "user": "explicit" } }],
            "current-context": "explicit",
        }))
        .map_err(|e| ConnectError::Explicit(e.to_string()))?;
        return kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| ConnectError::Explicit(e.to_string()));
    }
    if settings.in_cluster == Some(true) {
        return kube::Config::incluster().map_err(ConnectError::NotInPod);
    }
    if settings.config_path.is_none()
        && settings.context.is_none()
        && kube::config::Kubeconfig::read().is_err()
        && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
    {
        return kube::Config::incluster().map_err(ConnectError::InCluster);
    }
    let (kubeconfig, source_name) = match &settings.config_path {
        Some(path) => (kube::config::Kubeconfig::read_from(path), path.clone()),
        None => (
            kube::config::Kubeconfig::read(),
            std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_owned()),
        ),
    };
    let kubeconfig = kubeconfig.map_err(|error| ConnectError::ReadKubeconfig {
        source_name: source_name.clone(),
        error,
    })?;
    let options = kube::config::KubeConfigOptions {
        context: settings.context.clone(),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|error| ConnectError::Kubeconfig { source_name, error })
}
