//! Waiting after apply: for a rollout, a status condition or JSONPath values, with a timeout.

use crate::cluster::{Cluster, Kind, api_error, duration};
use gpustack_protocol::Value;
use gpustack_provider_sdk::objects::{json_path, scalar_text};
use k8s_openapi::api::core::v1::ServiceAccount;
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
    /// A Pod's phases to wait for (a typed pod's `target_state`); waited for while it is
    /// Pending, refused at once in any other.
    phases: Vec<String>,
    /// JSONPaths that must hold a value (a token Secret's `data.token`).
    present: Vec<String>,
    /// A Namespace's `default` ServiceAccount must exist.
    default_service_account: bool,
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
        result.phases = get("phase")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        result.present = get("present")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        result.default_service_account =
            get("default_service_account").and_then(Value::as_bool) == Some(true);
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
        !self.rollout
            && self.conditions.is_empty()
            && self.fields.is_empty()
            && self.phases.is_empty()
            && self.present.is_empty()
            && !self.default_service_account
    }

    /// Why waiting on `object` can never succeed: a pod in a phase it will not leave for one
    /// of the target phases (as Terraform's provider stops at once on one).
    fn unreachable(&self, object: &Json) -> Option<String> {
        let phase = pod_phase(object);
        (!self.phases.is_empty() && phase != "Pending" && !self.phases.iter().any(|p| p == phase))
            .then(|| {
                format!(
                    "the pod's phase is {phase}, not one of {} (target_state)",
                    self.phases.join(", ")
                )
            })
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
        if !self.phases.is_empty() {
            let phase = pod_phase(object);
            if !self.phases.iter().any(|p| p == phase) {
                missing.push(format!(
                    "the pod's phase is {phase} (waiting for {})",
                    self.phases.join(" or ")
                ));
            }
        }
        for path in &self.present {
            if json_path(object, path).is_none_or(|v| v.is_null() || v == "") {
                missing.push(format!("{path} is not set yet"));
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
                Ok(Some(object)) => {
                    if let Some(why) = self.unreachable(&object) {
                        return Err(format!("{}.", capitalized(&why)));
                    }
                    let mut pending = self.pending(&object);
                    if self.default_service_account {
                        let accounts: kube::Api<ServiceAccount> =
                            kube::Api::namespaced(cluster.client.clone(), name);
                        match accounts.get_opt("default").await {
                            Ok(Some(_)) => {}
                            Ok(None) => pending.push(
                                "the namespace has no default service account yet".to_owned(),
                            ),
                            Err(e) => pending.push(api_error(&e)),
                        }
                    }
                    pending
                }
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

/// A pod's phase; one the kubelet has not reported yet is Pending.
fn pod_phase(object: &Json) -> &str {
    object
        .pointer("/status/phase")
        .and_then(Json::as_str)
        .unwrap_or("Pending")
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
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
    if object.get("kind").and_then(Json::as_str) == Some("ReplicationController") {
        // What Terraform's provider waits for: as many pods labelled as the selector asks
        // as replicas wanted.
        let wanted = object
            .pointer("/spec/replicas")
            .and_then(Json::as_i64)
            .unwrap_or(1);
        let labelled = number("/status/fullyLabeledReplicas");
        return (labelled != wanted)
            .then(|| format!("{labelled} of {wanted} replicas labelled as the selector asks"));
    }
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
    fn a_pod_waits_while_pending_and_stops_at_a_phase_it_will_not_leave() {
        let wait = Wait::from_config(
            Some(&Value::from_json(
                &json!({"phase": ["Running", "Succeeded"]}),
            )),
            "Pod",
        )
        .unwrap();
        let mut pod = json!({"kind": "Pod", "status": {}});
        assert_eq!(wait.pending(&pod).len(), 1);
        assert_eq!(wait.unreachable(&pod), None);
        pod["status"]["phase"] = json!("Succeeded");
        assert!(wait.pending(&pod).is_empty());
        pod["status"]["phase"] = json!("Failed");
        assert_eq!(
            wait.unreachable(&pod).as_deref(),
            Some("the pod's phase is Failed, not one of Running, Succeeded (target_state)")
        );
    }

    #[test]
    fn a_replication_controller_waits_for_its_labelled_replicas() {
        let mut rc = json!({"kind": "ReplicationController", "spec": {"replicas": 2}, "status": {"fullyLabeledReplicas": 1}});
        assert!(rollout_pending(&rc).is_some());
        rc["status"]["fullyLabeledReplicas"] = json!(2);
        assert_eq!(rollout_pending(&rc), None);
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
