//! The `kubernetes` and `gpu` providers: they share one cluster connection and its API
//! discovery (`cluster`). `kubernetes` applies objects by server-side apply and waits for
//! them (`kubernetes`, `wait`) and reads the GPU capacity a sharing policy gives the nodes
//! (`capacity`); `gpu` labels GPU nodes and runs smoke tests on them (`gpu`).

mod capacity;
mod cluster;
mod collateral;
mod gpu;
mod kubernetes;
mod wait;

use gpustack_protocol::{ProviderFactory, Value};
use gpustack_provider_sdk::family::Factory;
use std::sync::Arc;

/// The `kubernetes` provider, for a registry.
pub fn kubernetes() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(kubernetes::Kubernetes))
}

/// The live cluster's GPU facts as the kubernetes provider reads them (GPU nodes, the
/// ClusterPolicy and the ConfigMaps it points at, DRA devices), for the other providers of the
/// Kubernetes family whose objects configure GPUs: a helm release of the GPU Operator. The
/// cluster is the one kubectl would use with this kubeconfig and context.
pub async fn gpu_cluster(
    config_path: Option<&str>,
    context: Option<&str>,
) -> Result<gpustack_protocol::ClusterFact, String> {
    let mut config = indexmap::IndexMap::new();
    if let Some(path) = config_path {
        config.insert("config_path".to_owned(), Value::string(path));
    }
    if let Some(context) = context {
        config.insert("context".to_owned(), Value::string(context));
    }
    let cluster = cluster::Cluster::connect(&Value::Object(config))
        .await
        .map_err(|d| d.detail)?;
    capacity::cluster_fact(&cluster)
        .await
        .map_err(|e| cluster::api_error(&e))
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

/// The `gpu` provider, for a registry.
pub fn gpu() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(gpu::Gpu))
}
