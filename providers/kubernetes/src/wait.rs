//! Waiting after apply: for a rollout, a status condition or JSONPath values, with a timeout.

use crate::cluster::{Cluster, Kind, api_error, duration};
use gpustack_protocol::Value;
use gpustack_provider_sdk::objects::{json_path, scalar_text};
use serde_json::Value as Json;
use std::time::Duration;

pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What one `wait` block asks for, plus what the kind itself implies (a CRD is usable once
/// Established).
#[derive(Debug, Default)]
pub(crate) struct Wait {
    rollout: bool,
    conditions: Vec<(String, String)>,
    fields: Vec<(String, String)>,
    pub(crate) timeout: Duration,
}

impl Wait {
    pub(crate) fn from_config(wait: Option<&Value>, kind: &str) -> Result<Self, String> {
        let block = wait.and_then(Value::as_object);
        let get = |name: &str| block.and_then(|b| b.get(name)).filter(|v| !v.is_null());
        let mut result = Wait {
            rollout: get("rollout").and_then(Value::as_bool).unwrap_or(false),
            timeout: duration(get("timeout").and_then(Value::as_str), DEFAULT_TIMEOUT)
                .map_err(|e| gpustack_protocol::error_chain(&e))?,
            ..Default::default()
        };
        if let Some(fields) = get("fields").and_then(Value::as_object) {
            for (path, expected) in fields {
                if let Some(expected) = expected.as_str() {
                    result.fields.push((path.clone(), expected.to_owned()));
                }
            }
        }
        for condition in get("condition")
            .and_then(Value::as_list)
            .unwrap_or_default()
        {
            let Some(c) = condition.as_object() else {
                continue;
            };
            let Some(kind) = c.get("type").and_then(Value::as_str) else {
                continue;
            };
            let status = c.get("status").and_then(Value::as_str).unwrap_or("True");
            result.conditions.push((kind.to_owned(), status.to_owned()));
        }
        if kind == "CustomResourceDefinition" {
            result
                .conditions
                .push(("Established".to_owned(), "True".to_owned()));
        }
        Ok(result)
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.rollout && self.conditions.is_empty() && self.fields.is_empty()
    }

    /// What is still missing on `object`; empty once done.
    fn pending(&self, object: &Json) -> Vec<String> {
        let mut missing = Vec::new();
        if self.rollout
            && let Some(why) = rollout_pending(object)
        {
            missing.push(why);
        }
        for (kind, status) in &self.conditions {
            let found = object
                .pointer("/status/conditions")
                .and_then(Json::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Json::as_str) == Some(kind))
                })
                .and_then(|c| c.get("status").and_then(Json::as_str));
            if found != Some(status.as_str()) {
                missing.push(format!(
                    "condition {kind} is {} (waiting for {status})",
                    found.unwrap_or("absent")
                ));
            }
        }
        for (path, expected) in &self.fields {
            let found = json_path(object, path).map(scalar_text);
            if found.as_deref() != Some(expected.as_str()) {
                missing.push(format!(
                    "{path} is {} (waiting for \"{expected}\")",
                    found.map_or_else(|| "absent".to_owned(), |f| format!("\"{f}\""))
                ));
            }
        }
        missing
    }

    /// Polls the object until nothing is pending; the error names what was still missing.
    pub(crate) async fn until_done(
        &self,
        cluster: &Cluster,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        let api = cluster.api(kind, namespace);
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let pending = match cluster.get_json(&api, name).await {
                Ok(Some(object)) => self.pending(&object),
                Ok(None) => vec!["the object does not exist".to_owned()],
                Err(e) => vec![api_error(&e)],
            };
            if pending.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "Still waiting after {}: {}.",
                    humantime::format_duration(self.timeout),
                    pending.join("; ")
                ));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// Why a Deployment, DaemonSet or StatefulSet has not rolled out yet, or a LoadBalancer
/// Service or an Ingress has no load balancer yet (what Terraform's `wait_for_load_balancer`
/// waits for); `None` once it has.
fn rollout_pending(object: &Json) -> Option<String> {
    if object.get("kind").and_then(Json::as_str) == Some("Ingress") {
        let balanced = object
            .pointer("/status/loadBalancer/ingress")
            .and_then(Json::as_array)
            .is_some_and(|i| !i.is_empty());
        return (!balanced).then(|| "the ingress has no load balancer yet".to_owned());
    }
    if object.get("kind").and_then(Json::as_str) == Some("Service") {
        let balanced = object.pointer("/spec/type").and_then(Json::as_str) != Some("LoadBalancer")
            || object
                .pointer("/status/loadBalancer/ingress")
                .and_then(Json::as_array)
                .is_some_and(|i| !i.is_empty());
        return (!balanced).then(|| "the load balancer has no ingress yet".to_owned());
    }
    let number = |path: &str| object.pointer(path).and_then(Json::as_i64).unwrap_or(0);
    let generation = number("/metadata/generation");
    let observed = number("/status/observedGeneration");
    if observed < generation {
        return Some(format!(
            "the controller has seen generation {observed} of {generation}"
        ));
    }
    let kind = object.get("kind").and_then(Json::as_str).unwrap_or("");
    let (wanted, updated, available) = match kind {
        "DaemonSet" => (
            number("/status/desiredNumberScheduled"),
            number("/status/updatedNumberScheduled"),
            number("/status/numberAvailable"),
        ),
        "StatefulSet" => (
            object
                .pointer("/spec/replicas")
                .and_then(Json::as_i64)
                .unwrap_or(1),
            number("/status/updatedReplicas"),
            number("/status/readyReplicas"),
        ),
        _ => (
            object
                .pointer("/spec/replicas")
                .and_then(Json::as_i64)
                .unwrap_or(1),
            number("/status/updatedReplicas"),
            number("/status/availableReplicas"),
        ),
    };
    // Old pods still running (kubectl's check): a Deployment's status.replicas counts them.
    let total = object
        .pointer("/status/replicas")
        .and_then(Json::as_i64)
        .unwrap_or(updated);
    let old = if kind == "Deployment" || kind.is_empty() {
        total - updated
    } else {
        0
    };
    (updated < wanted || available < wanted || old > 0).then(|| {
        format!(
            "rollout: {updated} of {wanted} updated, {available} available, {old} old still running"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rollout_waits_for_the_new_generation_and_replicas() {
        let mut deployment = json!({
            "kind": "Deployment",
            "metadata": {"generation": 2},
            "spec": {"replicas": 3},
            "status": {"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 3}
        });
        assert!(rollout_pending(&deployment).is_some());
        deployment["status"]["observedGeneration"] = json!(2);
        deployment["status"]["availableReplicas"] = json!(2);
        assert!(rollout_pending(&deployment).is_some());
        deployment["status"]["availableReplicas"] = json!(3);
        deployment["status"]["replicas"] = json!(4);
        assert!(
            rollout_pending(&deployment).is_some(),
            "an old pod still runs"
        );
        deployment["status"]["replicas"] = json!(3);
        assert_eq!(rollout_pending(&deployment), None);
    }

    #[test]
    fn a_load_balancer_service_waits_for_its_ingress_and_others_do_not() {
        let mut service = json!({
            "kind": "Service",
            "metadata": {"generation": 1},
            "spec": {"type": "LoadBalancer"},
            "status": {"loadBalancer": {}}
        });
        assert!(rollout_pending(&service).is_some());
        service["status"]["loadBalancer"]["ingress"] = json!([{"ip": "10.0.0.1"}]);
        assert_eq!(rollout_pending(&service), None);
        let cluster_ip = json!({"kind": "Service", "metadata": {"generation": 1}, "spec": {}});
        assert_eq!(rollout_pending(&cluster_ip), None);
    }

    #[test]
    fn crds_wait_for_established() {
        let wait = Wait::from_config(None, "CustomResourceDefinition").unwrap();
        let crd = json!({"status": {"conditions": [{"type": "Established", "status": "False"}]}});
        assert_eq!(wait.pending(&crd).len(), 1);
        let crd = json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}});
        assert!(wait.pending(&crd).is_empty());
    }
}
