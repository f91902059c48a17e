//! One node's way through a rollout: cordon → drain (wait, evict or fail) → reconfigure
//! (relabel, restart) → settle → validate → uncordon. Each step is recorded on the node
//! before it begins, so that a run killed in any step resumes there; a failure leaves the
//! node cordoned and records where and why.

use super::spec::{
    CORDONED_BY, DEPLOY_PREFIX, GPU_COUNT, MIG_CONFIG, MIG_STATE, PAUSED, Record, Settle, Spec,
    Step,
};
use gpustack_cluster::api_error;
use gpustack_cluster::drain::{Emptying, pod_name};
pub(super) use gpustack_cluster::drain::{ready, unschedulable};
use gpustack_cluster::watch::{View, Watch};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::time::Instant;

/// The field manager of every change a rollout makes to a node.
pub(super) const MANAGER: &str = "gpustack-rollout";

/// What every node of one rollout shares.
pub(super) struct Context {
    pub(super) client: kube::Client,
    pub(super) spec: Spec,
    pub(super) target: String,
    pub(super) nodes: View<Node>,
    /// What every record carries besides the step ([`Record::owner`], [`Record::arguments`]).
    pub(super) owner: String,
    pub(super) arguments: serde_json::Value,
}

/// Where a node stopped, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(super) struct Failure {
    pub(super) step: Step,
    pub(super) message: String,
}

fn fail<T>(step: Step, message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        step,
        message: message.into(),
    })
}

fn annotations(node: &Node) -> Option<&BTreeMap<String, String>> {
    node.metadata.annotations.as_ref()
}

fn labels(node: &Node) -> Option<&BTreeMap<String, String>> {
    node.metadata.labels.as_ref()
}

fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    labels(node)?.get(key).map(String::as_str)
}

/// A node is unavailable when it takes no new pods: cordoned, or not ready.
pub(super) fn unavailable(node: &Node) -> bool {
    unschedulable(node) || !ready(node)
}

/// Whether the node's device plugin still advertises `nvidia.com/gpu`.
fn advertises_gpus(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get("nvidia.com/gpu"))
        .and_then(|q| q.0.parse::<f64>().ok())
        .is_some_and(|n| n > 0.0)
}

/// The pods on a node moved to DRA that still hold GPUs the device plugin gave them, which DRA
/// now offers to claims, if any: ones that tolerate the cordon
/// (`node.kubernetes.io/unschedulable`) and started between the drain and the relabel. They
/// never leave by themselves.
fn plugin_holders(pods: &View<Pod>) -> Option<String> {
    let holding: Vec<String> = pods
        .store
        .state()
        .iter()
        .filter(|p| holds_plugin_gpus(p))
        .map(|p| pod_name(p))
        .collect();
    (!holding.is_empty()).then(|| {
        format!(
            "{} hold GPUs the device plugin gave them, which DRA now offers to claims (they tolerate the cordon, node.kubernetes.io/unschedulable, and started after the drain): delete them, then apply again",
            holding.join(", ")
        )
    })
}

/// A change of a view the rollout may not have: never, without it.
async fn changed<K>(view: Option<&mut View<K>>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    match view {
        Some(view) => view.changed().await,
        None => std::future::pending().await,
    }
}

/// Whether a pod that has not finished holds `nvidia.com/*` devices through the device plugin
/// (a request of an extended resource the scheduler did not turn into a DRA claim).
fn holds_plugin_gpus(pod: &Pod) -> bool {
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    let through_dra = pod
        .status
        .as_ref()
        .is_some_and(|s| s.extended_resource_claim_status.is_some());
    let asks = pod.spec.as_ref().is_some_and(|spec| {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .filter_map(|c| c.resources.as_ref())
            .flat_map(|r| r.limits.iter().flatten().chain(r.requests.iter().flatten()))
            .any(|(name, _)| name.starts_with("nvidia.com/"))
    });
    asks && !finished && !through_dra && pod.metadata.deletion_timestamp.is_none()
}

/// Whether `labels` satisfies an equality selector (`a=b,c=d`, `a==b`, `a!=b`, `a`).
fn selects(selector: &str, labels: Option<&BTreeMap<String, String>>) -> bool {
    selector
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .all(|term| {
            let get = |k: &str| labels.and_then(|l| l.get(k.trim()));
            if let Some((k, v)) = term.split_once("!=") {
                get(k).map(String::as_str) != Some(v.trim())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                get(k).map(String::as_str) == Some(v.trim())
            } else if let Some(k) = term.strip_prefix('!') {
                get(k).is_none()
            } else {
                get(term).is_some()
            }
        })
}

fn pod_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

impl Context {
    fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes
            .store
            .get(&kube::runtime::reflector::ObjectRef::new(name))
    }

    async fn patch(&self, node: &str, body: Json) -> Result<(), String> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..Default::default()
        };
        nodes
            .patch(node, &params, &Patch::Merge(body))
            .await
            .map(|_| ())
            .map_err(|e| api_error(&e))
    }

    fn record(&self, step: Step, replaced: &[String]) -> Record {
        Record {
            step,
            target: self.target.clone(),
            failed_at: None,
            message: None,
            replaced: replaced.to_vec(),
            owner: Some(self.owner.clone()),
            arguments: Some(self.arguments.clone()),
        }
    }

    fn record_body(&self, record: &Record) -> Json {
        json!({"metadata": {"annotations": {self.spec.record_key(): record.text()}}})
    }

    /// Records the step a node is entering, before any of its work.
    async fn enter(&self, node: &str, step: Step, replaced: &[String]) -> Result<(), Failure> {
        let body = self.record_body(&self.record(step, replaced));
        self.patch(node, body)
            .await
            .or_else(|e| fail(step, format!("cannot record the step: {e}")))
    }

    /// Records the failure on the node; the node stays cordoned.
    pub(super) async fn record_failure(&self, node: &str, failure: &Failure) {
        let record = Record {
            step: Step::Failed,
            target: self.target.clone(),
            failed_at: Some(failure.step),
            message: Some(failure.message.clone()),
            replaced: Vec::new(),
            owner: Some(self.owner.clone()),
            arguments: Some(self.arguments.clone()),
        };
        let _ = self.patch(node, self.record_body(&record)).await;
    }

    fn ours(&self, node: &Node) -> bool {
        annotations(node).and_then(|a| a.get(CORDONED_BY)) == Some(&self.spec.name)
    }

    /// The operator uncordons nodes on its own schedule (gpu-operator#304, #536): a node this
    /// rollout cordoned is cordoned again while it is being worked on.
    async fn keep_cordoned(&self, node: &str, step: Step) -> Result<(), Failure> {
        match self.node(node) {
            Some(n) if self.ours(&n) && !unschedulable(&n) => self
                .patch(node, json!({"spec": {"unschedulable": true}}))
                .await
                .or_else(|e| fail(step, format!("cannot cordon the node again: {e}"))),
            _ => Ok(()),
        }
    }

    /// Takes `node` from `start` to done.
    pub(super) async fn roll(
        &self,
        node: &str,
        start: Step,
        replaced: Vec<String>,
    ) -> Result<(), Failure> {
        let watch = Watch::<Pod>::start(
            Api::all(self.client.clone()),
            watcher::Config::default().fields(&format!("spec.nodeName={node}")),
        );
        let mut pods = watch.view();
        // The node's ResourceSlices, watched only where the rollout waits for them.
        let slice_watch = (self.spec.settle == Settle::Dra).then(|| {
            Watch::<ResourceSlice>::start(
                Api::all(self.client.clone()),
                watcher::Config::default().fields(&format!("spec.nodeName={node}")),
            )
        });
        let mut slices = slice_watch.as_ref().map(Watch::view);
        let mut replaced = replaced;
        let mut step = start;
        loop {
            step = match step {
                Step::Pending => {
                    self.cordon(node).await?;
                    Step::Cordoned
                }
                Step::Cordoned => {
                    self.enter(node, Step::Draining, &[]).await?;
                    Step::Draining
                }
                Step::Draining => {
                    self.drain(node, &mut pods).await?;
                    replaced = self.reconfigure(node, &mut pods).await?;
                    Step::Reconfiguring
                }
                Step::Reconfiguring => {
                    self.settle(node, &mut pods, slices.as_mut(), &replaced)
                        .await?;
                    self.enter(node, Step::Validating, &replaced).await?;
                    Step::Validating
                }
                Step::Validating => {
                    self.validate(node, &mut pods, slices.as_mut()).await?;
                    self.uncordon(node).await?;
                    return Ok(());
                }
                Step::Done => return Ok(()),
                Step::Failed => Step::Pending,
            };
        }
    }

    async fn cordon(&self, node: &str) -> Result<(), Failure> {
        let record = self.record(Step::Cordoned, &[]).text();
        let key = self.spec.record_key();
        let body = match self.node(node) {
            // An admin's cordon (or another tool's) is left as it is, and never lifted.
            Some(n) if unschedulable(&n) && !self.ours(&n) => {
                json!({"metadata": {"annotations": {key: record}}})
            }
            _ => json!({
                "spec": {"unschedulable": true},
                "metadata": {"annotations": {key: record, CORDONED_BY: self.spec.name}},
            }),
        };
        self.patch(node, body)
            .await
            .or_else(|e| fail(Step::Pending, format!("cannot cordon the node: {e}")))
    }

    /// Empties the node of GPU pods as the rollout's drain says.
    async fn drain(&self, node: &str, pods: &mut View<Pod>) -> Result<(), Failure> {
        let step = Step::Draining;
        let emptying = Emptying {
            client: &self.client,
            drain: self.spec.drain,
            timeout: self.spec.drain_timeout,
        };
        let mut nodes = self.nodes.clone();
        emptying
            .run(pods, &mut nodes, || async move {
                self.keep_cordoned(node, step).await
            })
            .await
            .or_else(|e| fail(step, gpustack_protocol::error_chain(&e)))
    }

    /// Relabels the node and restarts the pods the rollout restarts, recording first which
    /// pods those are. MIG Manager's state label goes with a changed geometry, so that the
    /// `success` waited for is the new geometry's, never the old one's.
    async fn reconfigure(&self, node: &str, pods: &mut View<Pod>) -> Result<Vec<String>, Failure> {
        let step = Step::Reconfiguring;
        let current = self.node(node);
        let restarted: Vec<Arc<Pod>> = match &self.spec.restart {
            Some(restart) => pods
                .store
                .state()
                .into_iter()
                .filter(|p| p.metadata.namespace.as_deref() == Some(restart.namespace.as_str()))
                .filter(|p| selects(&restart.label_selector, p.metadata.labels.as_ref()))
                .collect(),
            None => Vec::new(),
        };
        let replaced: Vec<String> = restarted
            .iter()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        let mut new_labels = serde_json::Map::new();
        for (k, v) in &self.spec.labels {
            new_labels.insert(k.clone(), json!(v));
        }
        let geometry_changes = self.spec.labels.get(MIG_CONFIG).is_some_and(|wanted| {
            current.as_deref().and_then(|n| label(n, MIG_CONFIG)) != Some(wanted.as_str())
        });
        if geometry_changes {
            new_labels.insert(MIG_STATE.to_owned(), Json::Null);
        }
        let record = self.record(step, &replaced).text();
        let body = json!({"metadata": {
            "labels": new_labels,
            "annotations": {self.spec.record_key(): record},
        }});
        self.patch(node, body)
            .await
            .or_else(|e| fail(step, format!("cannot relabel the node: {e}")))?;
        self.restart(&restarted).await?;
        Ok(replaced)
    }

    async fn restart(&self, pods: &[Arc<Pod>]) -> Result<(), Failure> {
        for pod in pods {
            let api: Api<Pod> = Api::namespaced(
                self.client.clone(),
                pod.metadata.namespace.as_deref().unwrap_or("default"),
            );
            let name = pod.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    return fail(
                        Step::Reconfiguring,
                        format!("cannot restart {}: {}", pod_name(pod), api_error(&e)),
                    );
                }
            }
        }
        Ok(())
    }

    /// Waits for what reconfigures the node to finish: MIG Manager's state, or the
    /// restarted pods' replacements.
    async fn settle(
        &self,
        node: &str,
        pods: &mut View<Pod>,
        mut slices: Option<&mut View<ResourceSlice>>,
        replaced: &[String],
    ) -> Result<(), Failure> {
        let step = Step::Reconfiguring;
        let deadline = Instant::now() + self.spec.settle_timeout;
        let mut nodes = self.nodes.clone();
        loop {
            pods.seen();
            nodes.seen();
            if let Some(slices) = slices.as_deref_mut() {
                slices.seen();
            }
            self.keep_cordoned(node, step).await?;
            let current = self.node(node);
            let done = match self.spec.settle {
                Settle::Mig => match current.as_deref() {
                    Some(n) => {
                        let wanted = self.spec.labels.get(MIG_CONFIG).map(String::as_str);
                        let state = label(n, MIG_STATE);
                        if state == Some("failed") && label(n, MIG_CONFIG) == wanted {
                            return fail(
                                step,
                                format!(
                                    "MIG Manager could not apply {} ({MIG_STATE}=failed): the geometry does not fit the node's GPUs, or the config set lacks it; the mig-manager pod's log on the node says which",
                                    wanted.unwrap_or_default()
                                ),
                            );
                        }
                        state == Some("success") && label(n, MIG_CONFIG) == wanted
                    }
                    None => false,
                },
                Settle::Restart => {
                    let restart = self.spec.restart.as_ref();
                    pods.store.state().iter().any(|p| {
                        restart.is_some_and(|r| {
                            p.metadata.namespace.as_deref() == Some(r.namespace.as_str())
                                && selects(&r.label_selector, p.metadata.labels.as_ref())
                        }) && p
                            .metadata
                            .uid
                            .as_ref()
                            .is_some_and(|uid| !replaced.contains(uid))
                            && pod_ready(p)
                    })
                }
                Settle::Allocatable => true,
                Settle::Dra => {
                    // Once the device plugin is gone from the node, such a pod is there to stay.
                    if current.as_deref().is_some_and(|n| !advertises_gpus(n))
                        && let Some(holding) = plugin_holders(pods)
                    {
                        return fail(step, holding);
                    }
                    match (&current, slices.as_deref()) {
                        (Some(n), Some(slices)) => self.dra_shortfall(n, pods, slices).is_none(),
                        _ => false,
                    }
                }
            };
            if done {
                return Ok(());
            }
            if Instant::now() >= deadline {
                if let (Some(n), Some(slices)) = (current.as_deref(), slices.as_deref())
                    && let Some(why) = self.dra_shortfall(n, pods, slices)
                {
                    return fail(
                        step,
                        format!(
                            "the node was not served by DRA alone after {}: {why}",
                            humantime::format_duration(self.spec.settle_timeout)
                        ),
                    );
                }
                return fail(step, self.wedge(node, current.as_deref()));
            }
            tokio::select! {
                () = pods.changed() => {}
                () = nodes.changed() => {}
                () = changed(slices.as_deref_mut()) => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// What keeps a node from being served by DRA alone: the device plugin still
    /// advertising `nvidia.com/gpu`, a pod holding a GPU the device plugin gave it, or NVIDIA's
    /// DRA driver publishing fewer GPUs than the node has (full GPUs, and the GPUs MIG devices
    /// are cut from). `None` when it is.
    fn dra_shortfall(
        &self,
        node: &Node,
        pods: &View<Pod>,
        slices: &View<ResourceSlice>,
    ) -> Option<String> {
        if advertises_gpus(node) {
            return Some("the device plugin still advertises nvidia.com/gpu on the node".into());
        }
        if let Some(holding) = plugin_holders(pods) {
            return Some(holding);
        }
        let string = |device: &k8s_openapi::api::resource::v1::Device, key: &str| {
            device
                .attributes
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(|a| a.string.clone())
        };
        let gpus: std::collections::BTreeSet<String> = slices
            .store
            .state()
            .iter()
            .filter(|s| s.spec.driver == gpustack_protocol::nvidia::DRA_DRIVER)
            .flat_map(|s| s.spec.devices.iter().flatten())
            .filter_map(|d| match string(d, "type").as_deref() {
                Some("gpu") => string(d, "uuid").or_else(|| Some(d.name.clone())),
                Some("mig") => string(d, "parentUUID"),
                _ => None,
            })
            .collect();
        let wanted: usize = label(node, GPU_COUNT)
            .and_then(|c| c.parse().ok())
            .unwrap_or(1);
        (gpus.len() < wanted).then(|| {
            format!(
                "NVIDIA's DRA driver publishes {} of its {wanted} GPUs (its kubelet plugin does not run there: the node must match the chart's kubeletPlugin.nodeSelector)",
                gpus.len()
            )
        })
    }

    /// What the node advertises against what the rollout expects: `None` when it matches.
    fn shortfall(&self, node: &Node) -> Option<String> {
        if !ready(node) {
            return Some("the node is NotReady".into());
        }
        if let Some(paused) = labels(node).and_then(|l| {
            l.iter()
                .find(|(k, v)| k.starts_with(DEPLOY_PREFIX) && v.as_str() == PAUSED)
        }) {
            return Some(format!("{}={} is left on the node", paused.0, paused.1));
        }
        let gpus: f64 = label(node, GPU_COUNT)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0.0);
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let wrong: Vec<String> = self
            .spec
            .expect_per_gpu
            .iter()
            .filter_map(|(resource, per_gpu)| {
                let have: f64 = allocatable
                    .and_then(|a| a.get(resource))
                    .and_then(|q| q.0.parse().ok())
                    .unwrap_or(0.0);
                let want = per_gpu * gpus;
                (have != want || gpus == 0.0).then(|| {
                    format!("{resource}: {have}, expected {want} ({per_gpu} per GPU × {gpus} GPUs)")
                })
            })
            .collect();
        (!wrong.is_empty()).then(|| format!("the node advertises {}", wrong.join(", ")))
    }

    /// Why a node did not settle, from the known signs of a wedged reconfiguration.
    fn wedge(&self, node_name: &str, node: Option<&Node>) -> String {
        let waited = humantime::format_duration(self.spec.settle_timeout);
        let Some(node) = node else {
            return format!("node {node_name} is gone");
        };
        let advertised: f64 = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .map(|a| {
                a.iter()
                    .filter(|(k, _)| k.starts_with("nvidia.com/"))
                    .filter_map(|(_, q)| q.0.parse::<f64>().ok())
                    .sum()
            })
            .unwrap_or(0.0);
        match (self.spec.settle, label(node, MIG_STATE)) {
            (Settle::Mig, Some("pending") | None) => format!(
                "{MIG_STATE} is still {} after {waited} and the node advertises {advertised} GPUs: MIG Manager is wedged (gpu-operator#2833, mig-parted#485); restart the mig-manager pod on the node or reboot it",
                label(node, MIG_STATE).unwrap_or("unset")
            ),
            (Settle::Mig, Some("rebooting")) => format!(
                "the node has been rebooting for {waited} (MIG Manager's WITH_REBOOT) and is {}",
                if ready(node) { "Ready" } else { "NotReady" }
            ),
            (Settle::Restart, _) => {
                format!("the restarted pods were not replaced and ready after {waited}")
            }

            _ => format!("the node did not settle after {waited}"),
        }
    }

    /// Checks that the node is back and advertises what the model expects.
    async fn validate(
        &self,
        node: &str,
        pods: &mut View<Pod>,
        mut slices: Option<&mut View<ResourceSlice>>,
    ) -> Result<(), Failure> {
        let step = Step::Validating;
        let deadline = Instant::now() + self.spec.settle_timeout;
        let mut nodes = self.nodes.clone();
        loop {
            nodes.seen();
            pods.seen();
            if let Some(slices) = slices.as_deref_mut() {
                slices.seen();
            }
            self.keep_cordoned(node, step).await?;
            let Some(current) = self.node(node) else {
                return fail(step, format!("node {node} is gone"));
            };
            let problem = match (self.shortfall(&current), slices.as_deref()) {
                (Some(problem), _) => Some(problem),
                (None, Some(slices)) => self.dra_shortfall(&current, pods, slices),
                (None, None) => None,
            };
            let Some(problem) = problem else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                let cause = if !ready(&current) {
                    "the node stayed NotReady after its reconfiguration (a kubelet restart that did not come back, gpu-operator#2415)".to_owned()
                } else if problem.contains(PAUSED) {
                    format!(
                        "{problem} after MIG Manager reported success: the GPU operands stay stopped (gpu-operator#2833)"
                    )
                } else {
                    format!(
                        "{problem}, after the reconfiguration reported success: the device plugin is wedged"
                    )
                };
                return fail(
                    step,
                    format!(
                        "{cause} (waited {})",
                        humantime::format_duration(self.spec.settle_timeout)
                    ),
                );
            }
            tokio::select! {
                () = nodes.changed() => {}
                () = pods.changed(), if slices.is_some() => {}
                () = changed(slices.as_deref_mut()) => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// Lifts the cordon if this rollout put it there, and records the node done.
    async fn uncordon(&self, node: &str) -> Result<(), Failure> {
        let record = self.record(Step::Done, &[]).text();
        let key = self.spec.record_key();
        let body = match self.node(node) {
            Some(n) if self.ours(&n) => json!({
                "spec": {"unschedulable": false},
                "metadata": {"annotations": {key: record, CORDONED_BY: null}},
            }),
            _ => json!({"metadata": {"annotations": {key: record}}}),
        };
        self.patch(node, body)
            .await
            .or_else(|e| fail(Step::Validating, format!("cannot uncordon the node: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::{holds_plugin_gpus, selects};
    use std::collections::BTreeMap;

    #[test]
    fn a_pod_holds_the_device_plugins_gpus_until_its_request_is_a_claim() {
        let pod = |status: serde_json::Value| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "train", "namespace": "ml"},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": status,
            }))
            .unwrap()
        };
        assert!(holds_plugin_gpus(&pod(
            serde_json::json!({"phase": "Running"})
        )));
        assert!(!holds_plugin_gpus(&pod(
            serde_json::json!({"phase": "Succeeded"})
        )));
        // The scheduler turned its nvidia.com/gpu into a claim of the DeviceClass that maps it.
        assert!(!holds_plugin_gpus(&pod(serde_json::json!({
            "phase": "Running",
            "extendedResourceClaimStatus": {"resourceClaimName": "train-extended-resources-x", "requestMappings": []},
        }))));
    }

    #[test]
    fn equality_selectors() {
        let labels: BTreeMap<String, String> =
            [("app".into(), "nvidia-device-plugin-daemonset".into())].into();
        assert!(selects("app=nvidia-device-plugin-daemonset", Some(&labels)));
        assert!(selects(
            "app == nvidia-device-plugin-daemonset",
            Some(&labels)
        ));
        assert!(!selects("app=gpu-feature-discovery", Some(&labels)));
        assert!(selects("app,!other", Some(&labels)));
        assert!(selects("app!=x", Some(&labels)));
        assert!(!selects("app", None));
    }
}
