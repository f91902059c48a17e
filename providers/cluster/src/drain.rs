//! Emptying nodes of GPU pods as `kubectl drain` does (policy/v1 evictions, a
//! PodDisruptionBudget's 429 asked again every 5 s, DaemonSet and mirror pods left), shared by
//! the node-by-node rollout and by the cloud pools' replacement: cordon every node of the old
//! pool once the new pool's nodes are Ready, then drain them within the budget, so that the
//! cloud deletes empty nodes.

use crate::watch::{View, Watch};
use crate::{ApiError, api_error};
use gpustack_protocol::Diagnostic;
use gpustack_provider_sdk::pool::{DrainRequest, NodeDrainer, budget};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{EvictParams, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The annotation that marks a cordon as gpustack's: only such cordons are ever lifted.
pub const CORDONED_BY: &str = "gpustack.dev/cordoned-by";
/// How long an eviction refused by a PodDisruptionBudget waits before it is asked again
/// (kubectl drain's interval).
const EVICTION_RETRY: Duration = Duration::from_secs(5);
/// The field manager of a pool drain's cordons.
const MANAGER: &str = "gpustack-pool-rollout";
pub const DEFAULT_DRAIN_TIMEOUT: &str = "30m";
const DEFAULT_READY_TIMEOUT: &str = "15m";

/// What happens to a node's GPU pods before its change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    Wait,
    Evict,
    Fail,
}

/// Why a text is not a [`Drain`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("drain = \"{0}\" is none of wait, evict and fail")]
pub struct ParseDrainError(pub String);

impl Drain {
    pub fn parse(text: Option<&str>) -> Result<Self, ParseDrainError> {
        match text.unwrap_or("wait") {
            "wait" => Ok(Self::Wait),
            "evict" => Ok(Self::Evict),
            "fail" => Ok(Self::Fail),
            other => Err(ParseDrainError(other.to_owned())),
        }
    }
}

pub fn unschedulable(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

pub fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The pods that hold a node's GPUs and must be gone before it changes. DaemonSet pods are
/// left, as `kubectl drain --ignore-daemonsets` leaves them: evicted, they would be made again
/// on the same node; mirror pods cannot be evicted.
pub fn gpu_pods(pods: Vec<Arc<Pod>>) -> Vec<Arc<Pod>> {
    let mut pods: Vec<Arc<Pod>> = pods
        .into_iter()
        .filter(|p| crate::facts::holds_gpus(p) && !terminal(p))
        .filter(|p| {
            !p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "DaemonSet")
                && !p
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
        })
        .collect();
    pods.sort_by_key(|p| pod_name(p));
    pods
}

pub fn pod_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    pods.iter().map(|p| pod_name(p)).collect()
}

/// Why a node could not be emptied of GPU pods.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error("the node's pods could not be listed")]
    Unlisted,
    /// What the caller's turn between looks failed with.
    #[error(transparent)]
    Turn(Box<dyn std::error::Error + Send + Sync>),
    #[error("GPU pods run on the node and drain = \"fail\": {}", .pods.join(", "))]
    Refused { pods: Vec<String> },
    #[error(
        "after {} GPU pods were not evicted: {}",
        humantime::format_duration(*.timeout),
        .pods.join(", ")
    )]
    NotEvicted {
        timeout: Duration,
        pods: Vec<String>,
    },
    #[error(
        "after {} GPU pods are still running: {}",
        humantime::format_duration(*.timeout),
        .pods.join(", ")
    )]
    StillRunning {
        timeout: Duration,
        pods: Vec<String>,
    },
    #[error("cannot evict {pod}")]
    Evict {
        pod: String,
        #[source]
        source: ApiError,
    },
}

/// Empties one node of GPU pods.
pub struct Emptying<'a> {
    pub client: &'a kube::Client,
    pub drain: Drain,
    pub timeout: Duration,
}

impl Emptying<'_> {
    /// Waits for, evicts or refuses the GPU pods `pods` (a watch of the node's pods) shows,
    /// until none is left or the timeout. `turn` runs before each look (a rollout cordons the
    /// node again there when someone lifted its cordon).
    pub async fn run<F, E>(
        &self,
        pods: &mut View<Pod>,
        nodes: &mut View<Node>,
        turn: impl Fn() -> F,
    ) -> Result<(), DrainError>
    where
        F: std::future::Future<Output = Result<(), E>>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let deadline = Instant::now() + self.timeout;
        if !pods.ready(deadline).await {
            return Err(DrainError::Unlisted);
        }
        let mut evicted: BTreeMap<String, Instant> = BTreeMap::new();
        loop {
            pods.seen();
            nodes.seen();
            turn().await.map_err(|e| DrainError::Turn(Box::new(e)))?;
            let running = gpu_pods(pods.store.state());
            if running.is_empty() {
                return Ok(());
            }
            match self.drain {
                Drain::Fail => {
                    // Pods already on their way out are waited for, not a failure.
                    let staying: Vec<Arc<Pod>> = running
                        .iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .cloned()
                        .collect();
                    if !staying.is_empty() {
                        return Err(DrainError::Refused {
                            pods: names(&staying),
                        });
                    }
                }
                Drain::Evict => {
                    for pod in &running {
                        self.evict(pod, &mut evicted).await?;
                    }
                }
                Drain::Wait => {}
            }
            if Instant::now() >= deadline {
                let (timeout, pods) = (self.timeout, names(&running));
                return Err(if self.drain == Drain::Evict {
                    DrainError::NotEvicted { timeout, pods }
                } else {
                    DrainError::StillRunning { timeout, pods }
                });
            }
            let retry = evicted
                .values()
                .min()
                .copied()
                .filter(|_| self.drain == Drain::Evict)
                .unwrap_or(deadline)
                .min(deadline);
            tokio::select! {
                () = pods.changed() => {}
                () = nodes.changed() => {}
                () = tokio::time::sleep_until(retry) => {}
            }
        }
    }

    /// Asks the API server to evict a pod, as `kubectl drain` does: a PodDisruptionBudget's
    /// refusal (429) is asked again after [`EVICTION_RETRY`]. `asked` holds, per pod uid, when
    /// it may be asked again.
    async fn evict(
        &self,
        pod: &Pod,
        asked: &mut BTreeMap<String, Instant>,
    ) -> Result<(), DrainError> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if asked.get(&uid).is_some_and(|at| *at > Instant::now()) {
            return Ok(());
        }
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        );
        let name = pod.metadata.name.clone().unwrap_or_default();
        match api.evict(&name, &EvictParams::default()).await {
            Ok(_) => {
                // Asked once; it goes in its own time (its grace period).
                asked.insert(uid, Instant::now() + Duration::from_secs(3600));
                Ok(())
            }
            Err(kube::Error::Api(e)) if e.code == 429 => {
                asked.insert(uid, Instant::now() + EVICTION_RETRY);
                Ok(())
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(DrainError::Evict {
                pod: pod_name(pod),
                source: ApiError(e),
            }),
        }
    }
}

/// Drains a cloud pool's nodes through the Kubernetes cluster its rollout block names.
pub struct PoolDrain;

/// Why a pool's node could not be cordoned.
#[derive(Debug, thiserror::Error)]
#[error("cannot cordon node {node}")]
struct CordonError {
    node: String,
    #[source]
    source: ApiError,
}

/// Why a pool's nodes and their GPU pods were not read for the plan.
#[derive(Debug, thiserror::Error)]
enum SurveyError {
    /// The rollout block's cluster settings, as the connection's diagnostic details them.
    #[error("{0}")]
    Connect(String),
    #[error(transparent)]
    Nodes(ApiError),
    #[error(transparent)]
    Pods(ApiError),
}

struct PoolSettings {
    drain: Drain,
    max_unavailable: String,
    drain_timeout: Duration,
    ready_timeout: Duration,
}

impl PoolSettings {
    fn of(rollout: &gpustack_protocol::Value) -> Result<Self, String> {
        let text = |name: &str| gpustack_provider_sdk::check::text(rollout, name);
        Ok(Self {
            drain: Drain::parse(text("drain")).map_err(|e| e.to_string())?,
            max_unavailable: text("max_unavailable").unwrap_or("1").to_owned(),
            drain_timeout: crate::duration(
                text("drain_timeout"),
                humantime::parse_duration(DEFAULT_DRAIN_TIMEOUT).unwrap_or_default(),
            )
            .map_err(|e| gpustack_protocol::error_chain(&e))?,
            ready_timeout: crate::duration(
                text("ready_timeout"),
                humantime::parse_duration(DEFAULT_READY_TIMEOUT).unwrap_or_default(),
            )
            .map_err(|e| gpustack_protocol::error_chain(&e))?,
        })
    }
}

fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// What one node's drain came to.
enum Outcome {
    Drained,
    /// Not waited for: the node is NotReady, so its pods cannot leave it.
    NotReady,
    /// Not started: the run was asked to stop.
    Skipped,
    Failed(String),
}

impl PoolDrain {
    /// Cordons a node of the pool as gpustack's (`mark`), unless someone else cordoned it.
    async fn cordon(api: &Api<Node>, node: &Node, mark: &str) -> Result<(), CordonError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        // An admin's cordon is left as it is; one of ours still in place needs nothing.
        if unschedulable(node) {
            return Ok(());
        }
        let body = json!({
            "spec": {"unschedulable": true},
            "metadata": {"annotations": {CORDONED_BY: mark}},
        });
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..Default::default()
        };
        api.patch(&name, &params, &Patch::Merge(body))
            .await
            .map(|_| ())
            .map_err(|e| CordonError {
                node: name,
                source: ApiError(e),
            })
    }

    /// Lifts the cordons `mark` put on the pool's nodes: the pool stays after all.
    async fn uncordon(api: &Api<Node>, nodes: &[Arc<Node>], mark: &str) {
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..Default::default()
        };
        for node in nodes {
            let ours = node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CORDONED_BY))
                .is_some_and(|m| m == mark);
            if ours {
                let name = node.metadata.name.clone().unwrap_or_default();
                let body = json!({
                    "spec": {"unschedulable": false},
                    "metadata": {"annotations": {CORDONED_BY: null}},
                });
                let _ = api.patch(&name, &params, &Patch::Merge(body)).await;
            }
        }
    }
}

fn of_pool(store: &Store<Node>, label_key: &str, pool: &str) -> Vec<Arc<Node>> {
    let mut of: Vec<Arc<Node>> = store
        .state()
        .into_iter()
        .filter(|n| label(n, label_key) == Some(pool))
        .collect();
    of.sort_by_key(|n| n.metadata.name.clone());
    of
}

#[async_trait::async_trait]
impl NodeDrainer for PoolDrain {
    // Long by design: connect, wait for the new pool, cordon the old one, drain it within the
    // budget until no node is left undrained, and say what happened, in that order.
    async fn drain(&self, request: DrainRequest<'_>) -> Result<Vec<Diagnostic>, Diagnostic> {
        let failure = |detail: String| {
            Diagnostic::error(
                format!("Cannot drain the nodes of {}", request.what),
                detail,
            )
        };
        let settings = PoolSettings::of(request.rollout).map_err(failure)?;
        let client = crate::Cluster::connect(request.rollout).await?.client;
        let node_api: Api<Node> = Api::all(client.clone());
        // One request first, so that an unreachable cluster is said at once, with its cause.
        node_api
            .list(
                &kube::api::ListParams::default()
                    .labels(request.label)
                    .limit(1),
            )
            .await
            .map_err(|e| {
                failure(format!(
                    "the cluster of the rollout's config_path cannot be read: {}",
                    api_error(&e)
                ))
            })?;
        let watch = Watch::<Node>::start(
            node_api.clone(),
            watcher::Config::default().labels(request.label),
        );
        let mut nodes = watch.view();
        let deadline = Instant::now() + settings.ready_timeout;
        if !nodes.ready(deadline).await {
            return Err(failure("the cluster's nodes could not be listed".into()));
        }
        // A surge: the new pool's nodes take the GPU pods, so they are Ready first.
        if let Some(successor) = request.successor.filter(|_| request.successor_nodes > 0) {
            let wanted = request.successor_nodes as usize;
            loop {
                nodes.seen();
                let ready_now = of_pool(&nodes.store, request.label, successor)
                    .iter()
                    .filter(|n| ready(n))
                    .count();
                if ready_now >= wanted {
                    break;
                }
                if request.stop.is_set() {
                    return Err(failure(
                        "stopped (interrupted) while waiting for the new pool's nodes; no old node was touched".into(),
                    ));
                }
                if Instant::now() >= deadline {
                    return Err(failure(format!(
                        "{ready_now} of the new pool's {wanted} nodes ({}={successor}) were Ready after {}; the old pool's nodes were left as they are",
                        request.label,
                        humantime::format_duration(settings.ready_timeout)
                    )));
                }
                let tick = (Instant::now() + Duration::from_secs(1)).min(deadline);
                tokio::select! {
                    () = nodes.changed() => {}
                    () = tokio::time::sleep_until(tick) => {}
                }
            }
        }
        let mark = format!("pool/{}", request.pool);
        let emptying = Emptying {
            client: &client,
            drain: settings.drain,
            timeout: settings.drain_timeout,
        };
        let mut done: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let mut failed: Vec<String> = Vec::new();
        let mut warnings: Vec<Diagnostic> = Vec::new();
        let mut stopped = false;
        // Nodes the pool gains meanwhile (an autoscaler making room for evicted pods) are
        // cordoned and drained in a further round.
        loop {
            let old = of_pool(&nodes.store, request.label, request.pool);
            let pending: Vec<Arc<Node>> = old
                .iter()
                .filter(|n| !done.contains(n.metadata.name.as_deref().unwrap_or_default()))
                .cloned()
                .collect();
            if pending.is_empty() || !failed.is_empty() || stopped {
                break;
            }
            let allowed =
                budget(&settings.max_unavailable, old.len()).map_err(|e| failure(e.to_string()))?;
            // Every old node first, so that what is evicted from one never lands on another.
            for node in &old {
                Self::cordon(&node_api, node, &mark)
                    .await
                    .map_err(|e| failure(gpustack_protocol::error_chain(&e)))?;
            }
            let names: Vec<String> = pending
                .iter()
                .map(|n| n.metadata.name.clone().unwrap_or_default())
                .collect();
            let drains = names.into_iter().map(|name| {
                let (emptying, nodes, node_api, mark) =
                    (&emptying, nodes.clone(), node_api.clone(), mark.clone());
                async move {
                    if request.stop.is_set() {
                        return (name, Outcome::Skipped);
                    }
                    let current = nodes
                        .store
                        .get(&kube::runtime::reflector::ObjectRef::new(&name));
                    // Pods on a NotReady node cannot leave it: the node goes with the pool.
                    if current.as_deref().is_some_and(|n| !ready(n)) {
                        return (name, Outcome::NotReady);
                    }
                    let pod_watch = Watch::<Pod>::start(
                        Api::all(emptying.client.clone()),
                        watcher::Config::default().fields(&format!("spec.nodeName={name}")),
                    );
                    let (mut pods, mut turn_nodes) = (pod_watch.view(), nodes.clone());
                    // A cordon lifted meanwhile (the GPU Operator lifts some) is put back.
                    let recordon = || {
                        let (node_api, nodes, mark, name) =
                            (node_api.clone(), nodes.clone(), mark.clone(), name.clone());
                        async move {
                            match nodes
                                .store
                                .get(&kube::runtime::reflector::ObjectRef::new(&name))
                            {
                                Some(n) => PoolDrain::cordon(&node_api, &n, &mark).await,
                                None => Ok(()),
                            }
                        }
                    };
                    let outcome = match emptying.run(&mut pods, &mut turn_nodes, recordon).await {
                        Ok(()) => Outcome::Drained,
                        Err(e) => Outcome::Failed(gpustack_protocol::error_chain(&e)),
                    };
                    (name, outcome)
                }
            });
            use futures::StreamExt;
            let outcomes: Vec<(String, Outcome)> = futures::stream::iter(drains)
                .buffer_unordered(allowed)
                .collect()
                .await;
            for (node, outcome) in outcomes {
                match outcome {
                    Outcome::Drained => {
                        done.insert(node);
                    }
                    Outcome::NotReady => {
                        warnings.push(Diagnostic::warning(
                            format!("Node {node} was not drained"),
                            format!("It is NotReady, so its pods cannot leave it; it goes with {}, and its GPU pods with it.", request.what),
                        ));
                        done.insert(node);
                    }
                    Outcome::Skipped => stopped = true,
                    Outcome::Failed(why) => failed.push(format!("node {node}: {why}")),
                }
            }
        }
        if failed.is_empty() && !stopped {
            return Ok(warnings);
        }
        let old = of_pool(&nodes.store, request.label, request.pool);
        let what_now = if request.successor.is_some() {
            format!(
                "The old pool and its nodes stay, cordoned (annotation {CORDONED_BY}={mark}); the next apply drains what is left and deletes the pool. To keep the old pool instead, uncordon its nodes and set the configuration back."
            )
        } else {
            Self::uncordon(&node_api, &old, &mark).await;
            "The pool stays, its nodes uncordoned again; the next apply drains it again.".to_owned()
        };
        let cause = if failed.is_empty() {
            format!(
                "stopped (interrupted) with {} of {} nodes drained",
                done.len(),
                old.len()
            )
        } else {
            failed.join("; ")
        };
        Err(failure(format!("{cause}. {what_now}")))
    }

    async fn survey(
        &self,
        rollout: &gpustack_protocol::Value,
        label: &str,
        pool: &str,
    ) -> Result<Vec<(String, Vec<String>)>, Box<dyn std::error::Error + Send + Sync>> {
        let client = crate::Cluster::connect(rollout)
            .await
            .map_err(|d| SurveyError::Connect(d.detail))?
            .client;
        let selector = format!("{label}={pool}");
        let listed = Api::<Node>::all(client.clone())
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .map_err(|e| SurveyError::Nodes(ApiError(e)))?;
        let mut out = Vec::new();
        for node in listed.items {
            let name = node.metadata.name.clone().unwrap_or_default();
            let pods = Api::<Pod>::all(client.clone())
                .list(&kube::api::ListParams::default().fields(&format!("spec.nodeName={name}")))
                .await
                .map_err(|e| SurveyError::Pods(ApiError(e)))?;
            let held: Vec<String> = gpu_pods(pods.items.into_iter().map(Arc::new).collect())
                .iter()
                .map(|p| pod_name(p))
                .collect();
            out.push((name, held));
        }
        out.sort();
        Ok(out)
    }
}
