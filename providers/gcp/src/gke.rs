//! The GKE API as the node pool and auto-provisioning flows use it: the retry policy, errors
//! as users read them, resource names, reading a pool, and waiting for operations.

use crate::Connected;
use google_cloud_container_v1::model::{NodePool, Operation};
use gpustack_protocol::{Diagnostic, Value};
use gpustack_provider_sdk::check::text;
use serde_json::{Value as Json, json};
use std::time::Duration;

/// How long one operation may take.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Retries throttling, server errors and broken connections, also of calls that are not
/// idempotent: creates are recognised by their label when a retry finds the pool.
#[derive(Debug)]
pub(crate) struct Transient;

impl google_cloud_gax::retry_policy::RetryPolicy for Transient {
    fn on_error(
        &self,
        _: &google_cloud_gax::retry_state::RetryState,
        error: google_cloud_gax::error::Error,
    ) -> google_cloud_gax::retry_result::RetryResult {
        use google_cloud_gax::retry_result::RetryResult;
        let transient = error.is_io()
            || error.is_connect()
            || error.is_timeout()
            || matches!(error.http_status_code(), Some(429 | 500 | 502 | 503 | 504));
        if transient {
            RetryResult::Continue(error)
        } else {
            RetryResult::Permanent(error)
        }
    }
}

pub(crate) type GkeError = google_cloud_gax::error::Error;

pub(crate) fn describe(e: &GkeError) -> String {
    match e.status() {
        Some(status) => format!("{:?}: {}", status.code, status.message),
        None => gpustack_protocol::error_chain(e),
    }
}

pub(crate) fn not_found(e: &GkeError) -> bool {
    e.http_status_code() == Some(404)
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// A node pool as JSON with its enums by name (the SDK writes them as numbers).
pub(crate) fn pool_json(pool: &NodePool) -> Json {
    let mut json = to_json(pool);
    json["status"] = json!(pool.status.name());
    if let Some(config) = &pool.config {
        for (i, taint) in config.taints.iter().enumerate() {
            json["config"]["taints"][i]["effect"] = json!(taint.effect.name());
        }
        for (i, accelerator) in config.accelerators.iter().enumerate() {
            if let Some(strategy) = accelerator
                .gpu_sharing_config
                .as_ref()
                .and_then(|g| g.gpu_sharing_strategy.as_ref())
            {
                json["config"]["accelerators"][i]["gpuSharingConfig"]["gpuSharingStrategy"] =
                    json!(strategy.name());
            }
            if let Some(version) = accelerator
                .gpu_driver_installation_config
                .as_ref()
                .and_then(|g| g.gpu_driver_version.as_ref())
            {
                json["config"]["accelerators"][i]["gpuDriverInstallationConfig"]["gpuDriverVersion"] =
                    json!(version.name());
            }
        }
    }
    json
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned + Default>(v: Json) -> T {
    serde_json::from_value(v).unwrap_or_default()
}

impl Connected {
    pub(crate) fn cluster_path(&self, location: &str, cluster: &str) -> String {
        format!(
            "projects/{}/locations/{location}/clusters/{cluster}",
            self.project
        )
    }

    pub(crate) fn pool_path(&self, state: &Value) -> String {
        format!(
            "{}/nodePools/{}",
            self.cluster_path(
                text(state, "location").unwrap_or_default(),
                text(state, "cluster").unwrap_or_default()
            ),
            text(state, "name").unwrap_or_default()
        )
    }

    pub(crate) async fn get_pool(&self, state: &Value) -> Result<Option<NodePool>, Diagnostic> {
        let name = self.pool_path(state);
        match self.client.get_node_pool().set_name(&name).send().await {
            Ok(pool) => Ok(Some(pool)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(Diagnostic::error(
                format!("Cannot read GKE node pool {name}"),
                describe(&e),
            )),
        }
    }

    /// Polls an operation until it is DONE; its error, if any, is the result.
    pub(crate) async fn wait(&self, location: &str, operation: &Operation) -> Result<(), String> {
        let name = format!(
            "projects/{}/locations/{location}/operations/{}",
            self.project, operation.name
        );
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        let mut delay = Duration::from_millis(500);
        let mut current = operation.clone();
        loop {
            if current.status == google_cloud_container_v1::model::operation::Status::Done {
                return match &current.error {
                    Some(e) if e.code != 0 || !e.message.is_empty() => Err(e.message.clone()),
                    _ => Ok(()),
                };
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "operation {} did not finish within {} minutes",
                    operation.name,
                    OPERATION_TIMEOUT.as_secs() / 60
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
            current = self
                .client
                .get_operation()
                .set_name(&name)
                .send()
                .await
                .map_err(|e| describe(&e))?;
        }
    }

    /// Polls the pool until it is RUNNING (when its operation is not known).
    pub(crate) async fn wait_pool_running(&self, state: &Value) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        let mut delay = Duration::from_millis(500);
        loop {
            let pool = self.get_pool(state).await.map_err(|d| d.detail)?;
            let status = pool
                .as_ref()
                .and_then(|p| p.status.name().map(str::to_owned));
            match status.as_deref() {
                Some("RUNNING") => return Ok(()),
                Some("ERROR") => return Err("the node pool is in state ERROR".to_owned()),
                None => return Err("the node pool disappeared".to_owned()),
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err("the node pool did not become RUNNING".to_owned());
                }
                _ => {}
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
        }
    }
}
