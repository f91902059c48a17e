//! The provider configured for one cluster: Terraform's kubernetes provider configuration
//! (the kubectl provider's too), and what every resource type of one connection shares — the
//! cluster, and what one plan learns of it once for all of them.

use crate::cluster::{Cluster, api_error};
use gpustack_protocol::{Attribute, BlockNesting, Diagnostic, Schema, Type};
use gpustack_provider_sdk::check::Checker;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Terraform's kubernetes provider configuration, beside gpustack's own arguments (shared by
/// the kubectl provider, whose configuration is the same).
pub(crate) fn terraform_config(config: Schema) -> Schema {
    let text = || Attribute::optional(Type::String);
    config
        .attr("config_paths", Attribute::optional(Type::list(Type::String)))
        .attr("config_context", text().describe("Terraform's name of context."))
        .attr("config_context_auth_info", text())
        .attr("config_context_cluster", text())
        .attr("client_certificate", text())
        .attr("client_key", text().sensitive())
        .attr("username", text())
        .attr("password", text().sensitive())
        .attr("insecure", Attribute::optional(Type::Bool))
        .attr("tls_server_name", text())
        .attr("proxy_url", text())
        .attr(
            "ignore_annotations",
            Attribute::optional(Type::list(Type::String)).describe(
                "Accepted: gpustack compares only the fields a resource sets, so annotations it does not set never show as changes.",
            ),
        )
        .attr(
            "ignore_labels",
            Attribute::optional(Type::list(Type::String)).describe(
                "Accepted: gpustack compares only the fields a resource sets, so labels it does not set never show as changes.",
            ),
        )
        .block(
            "experiments",
            BlockNesting::Single,
            Schema::new("Terraform's experiments: kubernetes_manifest is always served.")
                .attr("manifest_resource", Attribute::optional(Type::Bool)),
        )
        .block(
            "exec",
            BlockNesting::Single,
            Schema::new("A credential plugin, as a kubeconfig's exec.")
                .attr("api_version", Attribute::required(Type::String))
                .attr("command", Attribute::required(Type::String))
                .attr("args", Attribute::optional(Type::list(Type::String)))
                .attr("env", Attribute::optional(Type::map(Type::String))),
        )
}

/// Refuses arguments of Terraform's kubernetes provider configuration that contradict each other.
pub(crate) fn check_config(check: &mut Checker<'_>) {
    if check.get("context").is_some() && check.get("config_context").is_some() {
        check.error(
            "config_context",
            "Conflicting arguments",
            "context and config_context name the same thing: set one.".into(),
        );
    }
}

/// The provider configured for one cluster.
pub(crate) struct Connected {
    pub(crate) cluster: Arc<Cluster>,
    /// The objects of each (apiVersion, kind, namespace) that planned creates look for: one
    /// metadata LIST per group for a whole plan, not a GET per object.
    present: std::sync::Mutex<HashMap<Group, Arc<Present>>>,
    /// The uids of the objects whose states this provider refreshed: the stack's, when a
    /// deletion's reach is judged.
    known: std::sync::Mutex<HashSet<String>>,
    /// The live cluster as the GPU model needs it: read once per plan, by the first object
    /// that bears on GPUs.
    gpu_cluster: tokio::sync::OnceCell<Result<gpustack_protocol::ClusterFact, String>>,
    /// The cluster's namespaces, read once per plan by the first create of a namespaced
    /// object or of a namespace.
    pub(crate) namespaces: tokio::sync::OnceCell<Result<gpustack_cluster::Namespaces, String>>,
    /// The plan was told, once, that the namespaces could not be read.
    pub(crate) namespaces_warned: std::sync::atomic::AtomicBool,
}

/// (apiVersion, kind, namespace).
type Group = (String, String, Option<String>);

/// Names in one group, each with the stack mark it carries.
type Present = tokio::sync::OnceCell<Result<HashMap<String, Option<String>>, String>>;

impl Connected {
    pub(crate) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    pub(crate) fn new(cluster: Arc<Cluster>) -> Arc<Self> {
        Arc::new(Self {
            cluster,
            present: std::sync::Mutex::default(),
            known: std::sync::Mutex::default(),
            gpu_cluster: tokio::sync::OnceCell::new(),
            namespaces: tokio::sync::OnceCell::new(),
            namespaces_warned: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Counts `uid` as the stack's: the object of a state this provider planned or refreshed.
    pub(crate) fn mark_known(&self, uid: &str) {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(uid.to_owned());
    }

    /// The uids counted as the stack's so far.
    pub(crate) fn known_uids(&self) -> HashSet<String> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The names of one group, read once for every planned create that looks in it.
    pub(crate) fn present(&self, group: Group) -> Arc<Present> {
        let mut present = self.present.lock().unwrap_or_else(|e| e.into_inner());
        present.entry(group).or_default().clone()
    }

    /// The live cluster's GPU facts, or why they cannot be read (the plan then goes on
    /// without node lines, and says so).
    async fn cluster_fact(&self) -> Result<gpustack_protocol::ClusterFact, String> {
        self.gpu_cluster
            .get_or_init(|| async {
                gpustack_cluster::facts::cluster_fact(&self.cluster)
                    .await
                    .map_err(|e| api_error(&e))
            })
            .await
            .clone()
    }

    pub(crate) async fn push_cluster(
        &self,
        facts: &mut Vec<(usize, gpustack_protocol::GpuFact)>,
        index: usize,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        match self.cluster_fact().await {
            Ok(cluster) => facts.push((index, gpustack_protocol::GpuFact::Cluster(cluster))),
            Err(why) => diagnostics.push(gpustack_cluster::gpu_nodes_not_read(&why)),
        }
    }
}
