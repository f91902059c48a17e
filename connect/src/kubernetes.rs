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
    /// Kubeconfig files, merged in order as kubectl merges `$KUBECONFIG`'s: the first file to
    /// name a cluster, user or context, or to set `current-context`, decides it. None:
    /// `$KUBECONFIG`'s, else `~/.kube/config`.
    pub config_paths: Vec<String>,
    pub context: Option<String>,
    /// The kubeconfig cluster and user that replace the context's own (Terraform's
    /// `config_context_cluster` and `config_context_auth_info`).
    pub cluster: Option<String>,
    pub user: Option<String>,
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

/// Explicit `host`, else `in_cluster`, else the kubeconfig files (`config_paths` merged, else
/// every file of `$KUBECONFIG` merged, else `~/.kube/config`) and its `context`; in a pod with no
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
    if settings.config_paths.is_empty()
        && settings.context.is_none()
        && settings.cluster.is_none()
        && settings.user.is_none()
        && kube::config::Kubeconfig::read().is_err()
        && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
    {
        return kube::Config::incluster().map_err(ConnectError::InCluster);
    }
    let (kubeconfig, source_name) = read_kubeconfig(settings)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &options(settings))
        .await
        .map_err(|error| ConnectError::Kubeconfig { source_name, error })
}

/// The kubeconfig of `settings` (its `config_paths` merged, else every file of `$KUBECONFIG`
/// merged, else `~/.kube/config`), its relative paths made absolute, with its name for
/// messages.
fn read_kubeconfig(
    settings: &KubeSettings,
) -> Result<(kube::config::Kubeconfig, String), ConnectError> {
    use kube::config::Kubeconfig;
    let (kubeconfig, source_name) = match settings.config_paths.as_slice() {
        [] => (
            Kubeconfig::read(),
            std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_owned()),
        ),
        [path] => (Kubeconfig::read_from(home_expanded(path)), path.clone()),
        paths => (
            paths
                .iter()
                .try_fold(Kubeconfig::default(), |merged, path| {
                    Kubeconfig::read_from(home_expanded(path)).and_then(|next| merged.merge(next))
                }),
            paths.join(", "),
        ),
    };
    let kubeconfig = kubeconfig.map_err(|error| ConnectError::ReadKubeconfig {
        source_name: source_name.clone(),
        error,
    })?;
    Ok((kubeconfig, source_name))
}

/// The kubeconfig of `settings` as one document (several `config_paths` merged), for a
/// client that reads one file (the helm CLI). Paths in it are absolute, so the document may
/// be written anywhere.
pub fn merged_kubeconfig(settings: &KubeSettings) -> Result<serde_json::Value, ConnectError> {
    let (kubeconfig, _) = read_kubeconfig(settings)?;
    serde_json::to_value(&kubeconfig).map_err(|e| ConnectError::Explicit(e.to_string()))
}

fn options(settings: &KubeSettings) -> kube::config::KubeConfigOptions {
    kube::config::KubeConfigOptions {
        context: settings.context.clone(),
        cluster: settings.cluster.clone(),
        user: settings.user.clone(),
    }
}

/// The name of the context [`selected_kubeconfig`] writes.
pub const SELECTED_CONTEXT: &str = "gpustack-selected";

/// The kubeconfig file of `settings` with one more context, [`SELECTED_CONTEXT`], made
/// current: `settings.context` (else the current one) with its cluster and user replaced by
/// `settings.cluster` and `settings.user` where given. For a client that can only choose a
/// context (the helm CLI) to reach the cluster as the Kubernetes provider does. Paths in it
/// are absolute, so the document may be written anywhere.
pub fn selected_kubeconfig(settings: &KubeSettings) -> Result<serde_json::Value, ConnectError> {
    let (mut kubeconfig, source_name) = read_kubeconfig(settings)?;
    let wanted = settings
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone());
    let found = wanted.as_ref().and_then(|name| {
        kubeconfig
            .contexts
            .iter()
            .find(|c| &c.name == name)
            .and_then(|c| c.context.clone())
    });
    let mut context = match (found, wanted) {
        (Some(context), _) => context,
        (None, Some(name)) => {
            return Err(ConnectError::Kubeconfig {
                source_name,
                error: kube::config::KubeconfigError::LoadContext(name),
            });
        }
        (None, None) => {
            return Err(ConnectError::Kubeconfig {
                source_name,
                error: kube::config::KubeconfigError::CurrentContextNotSet,
            });
        }
    };
    for (given, names, what) in [
        (&settings.cluster, cluster_names(&kubeconfig), "cluster"),
        (&settings.user, user_names(&kubeconfig), "user"),
    ] {
        if let Some(name) = given
            && !names.contains(name)
        {
            return Err(ConnectError::Explicit(format!(
                "kubeconfig {source_name} has no {what} named {name:?}"
            )));
        }
    }
    if let Some(cluster) = &settings.cluster {
        context.cluster.clone_from(cluster);
    }
    if let Some(user) = &settings.user {
        context.user = Some(user.clone());
    }
    kubeconfig.contexts.retain(|c| c.name != SELECTED_CONTEXT);
    kubeconfig.contexts.push(kube::config::NamedContext {
        name: SELECTED_CONTEXT.to_owned(),
        context: Some(context),
        other: Default::default(),
    });
    kubeconfig.current_context = Some(SELECTED_CONTEXT.to_owned());
    serde_json::to_value(&kubeconfig).map_err(|e| ConnectError::Explicit(e.to_string()))
}

fn cluster_names(kubeconfig: &kube::config::Kubeconfig) -> Vec<String> {
    kubeconfig.clusters.iter().map(|c| c.name.clone()).collect()
}

fn user_names(kubeconfig: &kube::config::Kubeconfig) -> Vec<String> {
    kubeconfig
        .auth_infos
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

/// A kubeconfig path as Terraform's providers and backend take it: a leading `~` is the home
/// directory (`config_path = "~/.kube/config"`, their documentation's own example).
pub fn home_expanded(path: &str) -> std::path::PathBuf {
    expand_home(path, std::env::home_dir().as_deref())
}

fn expand_home(path: &str, home: Option<&std::path::Path>) -> std::path::PathBuf {
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
        _ => std::path::PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::expand_home;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_leading_tilde_is_the_home_directory() {
        let home = Some(Path::new("/home/ci"));
        assert_eq!(
            expand_home("~/.kube/config", home),
            PathBuf::from("/home/ci/.kube/config")
        );
        assert_eq!(expand_home("~", home), PathBuf::from("/home/ci"));
        // Another user's home and a tilde further in stay as written.
        assert_eq!(expand_home("~ci/config", home), PathBuf::from("~ci/config"));
        assert_eq!(
            expand_home("/k/~/config", home),
            PathBuf::from("/k/~/config")
        );
        assert_eq!(expand_home("~/config", None), PathBuf::from("~/config"));
    }
}
