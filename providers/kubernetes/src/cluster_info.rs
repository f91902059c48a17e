//! Data sources about the cluster itself, as Terraform's providers have them: its namespaces
//! (`kubernetes_all_namespaces`) and its API server's version (`kubernetes_server_version`,
//! and gavinbunney/kubectl's `kubectl_server_version`).

use crate::cluster::{Cluster, api_error};
use gpustack_protocol::{Attribute, Diagnostic, ReadDataSourceResponse, Schema, Type, Value};
use gpustack_provider_sdk::resource::DataSource;
use indexmap::IndexMap;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use std::sync::Arc;

pub(crate) const ALL_NAMESPACES: &str = "kubernetes_all_namespaces";
pub(crate) const SERVER_VERSION: &str = "kubernetes_server_version";
pub(crate) const KUBECTL_SERVER_VERSION: &str = "kubectl_server_version";

/// The version fields each data source answers, as the API server's `/version` names them.
const KUBERNETES_VERSION_FIELDS: &[(&str, &str)] = &[
    ("build_date", "buildDate"),
    ("compiler", "compiler"),
    ("git_commit", "gitCommit"),
    ("git_tree_state", "gitTreeState"),
    ("git_version", "gitVersion"),
    ("go_version", "goVersion"),
    ("major", "major"),
    ("minor", "minor"),
    ("platform", "platform"),
];
const KUBECTL_VERSION_FIELDS: &[(&str, &str)] = &[
    ("build_date", "buildDate"),
    ("git_commit", "gitCommit"),
    ("git_version", "gitVersion"),
    ("major", "major"),
    ("minor", "minor"),
    ("platform", "platform"),
];

pub(crate) fn all_namespaces_schema() -> Schema {
    Schema::new("The names of the cluster's namespaces.")
        .attr("id", Attribute::computed(Type::String))
        .attr("namespaces", Attribute::computed(Type::list(Type::String)))
}

pub(crate) fn server_version_schema(kubectl: bool) -> Schema {
    let fields = if kubectl {
        KUBECTL_VERSION_FIELDS
    } else {
        KUBERNETES_VERSION_FIELDS
    };
    let schema = Schema::new("The API server's version, as its /version answers.")
        .attr("id", Attribute::computed(Type::String))
        .attr(
            "version",
            Attribute::computed(Type::String).describe("The git version without its leading v."),
        );
    let schema = if kubectl {
        schema.attr(
            "patch",
            Attribute::computed(Type::String).describe("The patch release of the version."),
        )
    } else {
        schema
    };
    fields.iter().fold(schema, |schema, (name, _)| {
        schema.attr(name, Attribute::computed(Type::String))
    })
}

fn failed(diagnostic: Diagnostic) -> ReadDataSourceResponse {
    ReadDataSourceResponse {
        state: Value::Null,
        diagnostics: vec![diagnostic],
    }
}

pub(crate) struct AllNamespaces(pub(crate) Arc<Cluster>);

#[async_trait::async_trait]
impl DataSource for AllNamespaces {
    async fn read(&self, _config: Value) -> ReadDataSourceResponse {
        let api: kube::Api<Namespace> = kube::Api::all(self.0.client.clone());
        let list = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list,
            Err(e) => {
                return failed(Diagnostic::error("Cannot list namespaces", api_error(&e)));
            }
        };
        let mut names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        names.sort();
        ReadDataSourceResponse {
            state: Value::Object(IndexMap::from([
                ("id".to_owned(), Value::string("cluster_namespaces")),
                (
                    "namespaces".to_owned(),
                    Value::List(names.into_iter().map(Value::string).collect()),
                ),
            ])),
            diagnostics: Vec::new(),
        }
    }
}

pub(crate) struct ServerVersion {
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) kubectl: bool,
}

#[async_trait::async_trait]
impl DataSource for ServerVersion {
    async fn read(&self, _config: Value) -> ReadDataSourceResponse {
        let info = match self.cluster.client.apiserver_version().await {
            Ok(info) => info,
            Err(e) => {
                return failed(Diagnostic::error(
                    "Cannot read the server's version",
                    api_error(&e),
                ));
            }
        };
        let json = serde_json::to_value(&info).unwrap_or_default();
        let field = |key: &str| json.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        let version = field("gitVersion").trim_start_matches('v').to_owned();
        let fields = if self.kubectl {
            KUBECTL_VERSION_FIELDS
        } else {
            KUBERNETES_VERSION_FIELDS
        };
        let mut state: IndexMap<String, Value> = fields
            .iter()
            .map(|(name, key)| ((*name).to_owned(), Value::string(field(key))))
            .collect();
        if self.kubectl {
            let patch = version
                .split(['.', '-', '+'])
                .nth(2)
                .unwrap_or_default()
                .to_owned();
            state.insert("patch".to_owned(), Value::string(patch));
        }
        state.insert("id".to_owned(), Value::string(&version));
        state.insert("version".to_owned(), Value::string(version));
        ReadDataSourceResponse {
            state: Value::Object(state),
            diagnostics: Vec::new(),
        }
    }
}
