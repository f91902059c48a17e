//! `kubernetes_node_rollout`: a change to GPU nodes — labels (a MIG geometry, a
//! device-plugin config) or a restart of pods on each node (a device plugin that must load
//! an edited sharing config) — carried out node by node within a budget, as NVIDIA leaves it
//! to "a higher level entity" (gpu-operator#262): cordon → empty the node of GPU pods (wait,
//! evict or fail) → relabel/restart → watch it settle → check what the node advertises →
//! uncordon → the next node, started as soon as one finishes.
//!
//! Each node's step is recorded in an annotation on the node before the step begins, so a
//! refresh reads how far the rollout got after any crash, and the next apply resumes each
//! node at its recorded step. The state's `progress` holds the same, per node.

mod node;
mod spec;

use crate::connection::Connected;
use gpustack_cluster::api_error;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic, Existing,
    GpuFact, NodeLabelsFact, ObjectAttr, PlanResourceChangeRequest, PlanResourceChangeResponse,
    ReadResourcesRequest, ReadResourcesResponse, RolloutFact, Schema, Type, Value, path,
};
use gpustack_provider_sdk::check::{Checker, attribute, set};
use gpustack_provider_sdk::resource::Resource;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;
use kube::runtime::watcher;
use node::{Context, Failure};
use serde_json::json;
use spec::{Record, Settle, Spec, Step};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

pub(crate) const TYPE: &str = "kubernetes_node_rollout";

pub(crate) fn schema() -> Schema {
    Schema::new(
        "A change to nodes carried out node by node within a budget: cordon, empty of GPU pods, relabel or restart, watch it settle, check what the node advertises, uncordon. Each node's step is recorded on the node, so an interrupted rollout resumes where it stopped.",
    )
    .attr(
        "name",
        Attribute::required(Type::String).describe(
            "Names the rollout on the nodes (annotation rollout.gpustack.dev/<name>, and the cordons it owns).",
        ),
    )
    .attr("nodes", Attribute::required(Type::list(Type::String)))
    .attr(
        "labels",
        Attribute::optional(Type::map(Type::String))
            .describe("Labels set on each node in its turn (nvidia.com/mig.config)."),
    )
    .attr(
        "restart",
        Attribute::optional(Type::object([
            ("namespace", ObjectAttr::required(Type::String)),
            ("label_selector", ObjectAttr::required(Type::String)),
        ]))
        .describe("Pods deleted on each node in its turn, for their DaemonSet to make again (the device plugin, to load an edited config)."),
    )
    .attr(
        "triggers",
        Attribute::optional(Type::map(Type::String))
            .describe("Values whose change rolls every node again (a config's digest)."),
    )
    .attr(
        "settle",
        Attribute::optional_computed(Type::String).describe(
            "What a node waits for after its change: mig (nvidia.com/mig.config.state = success), restart (the restarted pods replaced and ready), allocatable (default: only what it advertises), dra (NVIDIA's DRA driver publishes the node's GPUs in ResourceSlices and the device plugin advertises none: a move from the device plugin to DRA).",
        ),
    )
    .attr(
        "expect_per_gpu",
        Attribute::optional(Type::map(Type::Number)).describe(
            "Resource → what each physical GPU of a node must advertise after its change (× nvidia.com/gpu.count).",
        ),
    )
    .attr(
        "max_unavailable",
        Attribute::optional_computed(Type::String)
            .describe("Nodes taken at once: a count (\"1\", the default) or a percentage of the nodes (\"25%\", rounded up)."),
    )
    .attr(
        "drain",
        Attribute::optional_computed(Type::String).describe(
            "What happens to a node's GPU pods before its change: wait (default) for them to finish, evict them (PodDisruptionBudgets respected), or fail.",
        ),
    )
    .attr(
        "drain_timeout",
        Attribute::optional_computed(Type::String).describe("Default 30m."),
    )
    .attr(
        "settle_timeout",
        Attribute::optional_computed(Type::String)
            .describe("How long a node may take to settle, and then to advertise what is expected; default 15m."),
    )
    .attr(
        "progress",
        Attribute::computed(Type::map(Type::String))
            .describe("Node → its step: pending, cordoned, draining, reconfiguring, validating, done, failed."),
    )
}

pub(crate) fn check(check: &mut Checker<'_>) {
    if let Some(name) = check.str("name")
        && !gpustack_provider_sdk::check::is_dns_label(name)
    {
        check.error(
            "name",
            "Invalid rollout name",
            format!("\"{name}\" must be a DNS label (lowercase letters, digits, '-', at most 63): it names an annotation on the nodes."),
        );
    }
    check.one_of("drain", &["wait", "evict", "fail"]);
    check.one_of("settle", &["mig", "restart", "allocatable", "dra"]);
    let nodes = check
        .get("nodes")
        .and_then(Value::as_list)
        .filter(|_| check.get("nodes").is_some_and(Value::is_wholly_known))
        .map(<[Value]>::len);
    if let (Some(text), Some(nodes)) = (check.str("max_unavailable"), nodes)
        && let Err(e) = spec::budget(text, nodes)
    {
        check.error("max_unavailable", "Invalid rollout budget", format!("{e}."));
    }
    for name in ["drain_timeout", "settle_timeout"] {
        if let Some(text) = check.str(name)
            && let Err(e) = gpustack_cluster::duration(Some(text), std::time::Duration::ZERO)
        {
            check.error(name, "Invalid duration", gpustack_protocol::error_chain(&e));
        }
    }
    let config = check.config();
    let configured = |name: &str| attribute(config, name).is_some_and(|v| !v.is_null());
    if !configured("labels") && !configured("restart") {
        check.error(
            "labels",
            "Nothing to roll out",
            "Set labels (what each node gets) or restart (which pods each node restarts).".into(),
        );
    }
    if check.str("settle") == Some("restart") && !configured("restart") {
        check.error(
            "settle",
            "Nothing to settle",
            "settle = \"restart\" waits for the restarted pods: set restart { namespace, label_selector }.".into(),
        );
    }
    let labels = attribute(config, "labels");
    let sets_geometry = labels
        .and_then(Value::as_object)
        .is_some_and(|l| l.contains_key(spec::MIG_CONFIG));
    if check.str("settle") == Some("mig")
        && !sets_geometry
        && labels.is_none_or(Value::is_wholly_known)
    {
        check.error(
            "settle",
            "Nothing to settle",
            format!(
                "settle = \"mig\" waits for MIG Manager: set labels {{ \"{}\" = GEOMETRY }}.",
                spec::MIG_CONFIG
            ),
        );
    }
}

pub(crate) struct Rollouts(pub(crate) Arc<Connected>);

fn node_names(state: &Value) -> Vec<String> {
    attribute(state, "nodes")
        .and_then(Value::as_list)
        .map(|l| {
            l.iter()
                .filter_map(|v| Some(v.as_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// A node's step as its record tells it, against the change `spec` asks for.
fn step_of(spec: &Spec, target: &str, node: &Node) -> Step {
    match Record::read(node.metadata.annotations.as_ref(), &spec.name) {
        Some(r) if r.target == target => {
            if r.step == Step::Done && !spec.labels_match(node.metadata.labels.as_ref()) {
                Step::Pending
            } else {
                r.step
            }
        }
        _ => Step::Pending,
    }
}

/// A node's step as a refresh reports it for the recorded change: a change in progress on
/// the node (a later one, which a killed run left part-way) shows its step, so the plan says
/// where the rollout resumes; otherwise done when the node has the recorded labels.
fn refreshed_step(spec: &Spec, target: &str, node: &Node) -> Step {
    match Record::read(node.metadata.annotations.as_ref(), &spec.name) {
        Some(r) if r.step != Step::Done => r.step,
        Some(r) if r.target == target || spec.restart.is_none() => {
            if spec.labels_match(node.metadata.labels.as_ref()) {
                Step::Done
            } else {
                Step::Pending
            }
        }
        Some(_) => Step::Pending,
        None if spec.restart.is_none() && spec.labels_match(node.metadata.labels.as_ref()) => {
            Step::Done
        }
        None => Step::Pending,
    }
}

/// Each node's step as the nodes record it (a node that is gone: pending), as `progress`.
fn live_progress(spec: &Spec, live: &BTreeMap<String, Node>) -> Value {
    let target = spec.target();
    let progress: BTreeMap<String, Step> = spec
        .nodes
        .iter()
        .map(|n| {
            let step = live
                .get(n)
                .map_or(Step::Pending, |node| refreshed_step(spec, &target, node));
            (n.clone(), step)
        })
        .collect();
    progress_value(&progress)
}

fn progress_value(progress: &BTreeMap<String, Step>) -> Value {
    Value::Object(
        progress
            .iter()
            .map(|(k, v)| (k.clone(), Value::string(v.name())))
            .collect(),
    )
}

/// The GPU model's view of a rollout as `state` records its progress: a node neither done
/// nor untouched is part-way, and cordoned by the rollout until an apply finishes it.
fn rollout_fact(spec: &Spec, state: Option<&Value>) -> RolloutFact {
    let unfinished = state
        .and_then(|p| attribute(p, "progress"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(node, _)| spec.nodes.contains(node))
        .filter_map(|(node, step)| {
            let step = step.as_str()?;
            (step != Step::Done.name() && step != Step::Pending.name())
                .then(|| (node.clone(), step.to_owned()))
        })
        .collect();
    RolloutFact {
        nodes: spec.nodes.clone(),
        how: spec.describe(),
        unfinished,
        expect_per_gpu: spec.expect_per_gpu.clone(),
    }
}

/// The rollout's arguments, as its records keep them: the planned state without `progress`.
fn arguments_of(planned: &Value) -> serde_json::Value {
    let mut arguments = planned.to_json();
    if let Some(object) = arguments.as_object_mut() {
        object.remove("progress");
    }
    arguments
}

impl Rollouts {
    /// Whether an apply of this stack began the rollout on any of its nodes (a record with
    /// the stack's owner mark); a record another stack wrote makes the create a conflict.
    async fn begun(&self, spec: &Spec, owner: &str) -> Option<Existing> {
        let live = self.live_nodes().await.ok()?;
        let records: Vec<(&String, Record)> = spec
            .nodes
            .iter()
            .filter_map(|n| {
                let record = Record::read(live.get(n)?.metadata.annotations.as_ref(), &spec.name)?;
                Some((n, record))
            })
            .filter(|(_, r)| r.owner.is_some())
            .collect();
        let (_, first) = records.first()?;
        let owned = records
            .iter()
            .all(|(_, r)| r.owner.as_deref() == Some(owner));
        let on: Vec<&str> = records.iter().map(|(n, _)| n.as_str()).collect();
        Some(Existing {
            import_id: spec.name.clone(),
            describe: format!(
                "rollout {} (recorded on {}{})",
                spec.name,
                on.join(", "),
                if owned { "" } else { " by another stack" }
            ),
            owned: owned && first.arguments.is_some(),
        })
    }

    async fn live_nodes(&self) -> Result<BTreeMap<String, Node>, String> {
        let nodes: Api<Node> = Api::all(self.0.cluster().client.clone());
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| api_error(&e))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|n| Some((n.metadata.name.clone()?, n)))
            .collect())
    }
}

#[async_trait::async_trait]
impl Resource for Rollouts {
    /// One LIST of the nodes for every rollout of the plan: each node's step is read from
    /// its record, so a crash mid-rollout shows up here as the steps it reached.
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let live = match self.live_nodes().await {
            Ok(live) => live,
            Err(e) => {
                return ReadResourcesResponse {
                    states: request.states.into_iter().map(Some).collect(),
                    diagnostics: vec![Diagnostic::error("Cannot read the nodes", e)],
                    gpu_facts: vec![],
                };
            }
        };
        let states = request
            .states
            .into_iter()
            .map(|mut state| {
                if let Ok(spec) = Spec::of(&state) {
                    set(&mut state, "progress", live_progress(&spec, &live));
                }
                Some(state)
            })
            .collect::<Vec<_>>();
        // The live cluster for the GPU model, so that drift compares every node the rollout
        // changed with what its labels give, and names a wedged node, also in a stack that
        // holds nothing else of the GPU layer; and each rollout's progress as the nodes show
        // it, so that drift names a node left part-way (failed, or killed mid-step) and holds
        // a done node to expect_per_gpu.
        let mut gpu_facts: Vec<(usize, GpuFact)> = states
            .iter()
            .enumerate()
            .filter_map(|(index, state)| {
                let state = state.as_ref()?;
                let spec = Spec::of(state).ok()?;
                Some((index, GpuFact::Rollout(rollout_fact(&spec, Some(state)))))
            })
            .collect();
        let mut diagnostics = Vec::new();
        let first = states
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| Spec::of(s).is_ok()));
        if let Some(index) = first {
            self.0
                .push_cluster(&mut gpu_facts, index, &mut diagnostics)
                .await;
        }
        ReadResourcesResponse {
            states,
            diagnostics,
            gpu_facts,
        }
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let mut planned = request.config.clone();
        let defaults = [
            ("settle", "allocatable"),
            ("max_unavailable", "1"),
            ("drain", "wait"),
            ("drain_timeout", spec::DEFAULT_DRAIN_TIMEOUT),
            ("settle_timeout", spec::DEFAULT_SETTLE_TIMEOUT),
        ];
        for (name, default) in defaults {
            if attribute(&planned, name).is_none_or(Value::is_null) {
                set(&mut planned, name, Value::string(default));
            }
        }
        let nodes_known = attribute(&planned, "nodes").is_some_and(Value::is_wholly_known);
        let progress = if nodes_known {
            progress_value(
                &node_names(&planned)
                    .into_iter()
                    .map(|n| (n, Step::Done))
                    .collect(),
            )
        } else {
            Value::Unknown
        };
        set(&mut planned, "progress", progress);
        let mut diagnostics = Vec::new();
        let mut gpu_facts = Vec::new();
        // A create whose nodes already carry this stack's records of it: an apply began it
        // and was killed before the state recorded it.
        let existing = match Spec::of(&planned) {
            Ok(spec) if request.prior_state.is_none() && !request.for_apply && nodes_known => {
                self.begun(&spec, &request.owner).await
            }
            _ => None,
        };
        if !request.for_apply && planned.is_wholly_known() {
            match Spec::of(&planned) {
                Ok(spec) => {
                    self.plan_facts(
                        &spec,
                        request.prior_state.as_ref(),
                        &mut gpu_facts,
                        &mut diagnostics,
                    )
                    .await;
                }
                Err(e) => diagnostics.push(Diagnostic::error("Invalid rollout", e)),
            }
        }
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace: vec![],
            gpu_facts,
            existing,
            diagnostics,
            order: Default::default(),
        }
    }

    /// A rollout an apply began and did not record, from what its records on the nodes hold:
    /// its arguments as that apply had them, and each node's step.
    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let live = self
            .live_nodes()
            .await
            .map_err(|e| vec![Diagnostic::error("Cannot read the nodes", e)])?;
        let arguments = live
            .values()
            .filter_map(|n| Record::read(n.metadata.annotations.as_ref(), id))
            .find_map(|r| r.arguments)
            .ok_or_else(|| {
                vec![Diagnostic::error(
                    "Cannot import",
                    format!("No node carries a record of rollout {id} with its arguments: a rollout is imported only where an apply of this version began it."),
                )]
            })?;
        let mut state = Value::from_json(&arguments);
        let spec = Spec::of(&state).map_err(|e| vec![Diagnostic::error("Cannot import", e)])?;
        set(&mut state, "progress", live_progress(&spec, &live));
        Ok(state)
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let Some(planned) = request.planned_state else {
            return match request.prior_state {
                Some(prior) => self.remove(&prior).await,
                None => ApplyResourceChangeResponse::default(),
            };
        };
        let spec = match Spec::of(&planned) {
            Ok(spec) => spec,
            Err(e) => {
                return ApplyResourceChangeResponse {
                    new_state: request.prior_state,
                    diagnostics: vec![Diagnostic::error("Invalid rollout", e)],
                };
            }
        };
        let arguments = arguments_of(&planned);
        let (progress, diagnostics) = self
            .run(spec, request.owner.clone(), arguments, &request.stop)
            .await;
        let mut state = planned;
        set(&mut state, "progress", progress_value(&progress));
        ApplyResourceChangeResponse {
            new_state: Some(state),
            diagnostics,
        }
    }
}

impl Rollouts {
    /// The GPU model's view of a planned rollout: the labels each node gets, the live
    /// cluster, and how the nodes are taken (the disruption section's rollout).
    async fn plan_facts(
        &self,
        spec: &Spec,
        prior: Option<&Value>,
        facts: &mut Vec<GpuFact>,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let before = prior.and_then(|p| Spec::of(p).ok());
        if !spec.labels.is_empty() {
            for node in &spec.nodes {
                let had = before
                    .as_ref()
                    .filter(|b| b.nodes.contains(node))
                    .map(|b| b.labels.clone())
                    .unwrap_or_default();
                facts.push(GpuFact::NodeLabels(NodeLabelsFact {
                    node: node.clone(),
                    labels: spec.labels.clone(),
                    labels_before: had,
                    attribute: path(["labels"]),
                }));
            }
        }
        facts.push(GpuFact::Rollout(rollout_fact(spec, prior)));
        let mut cluster = Vec::new();
        self.0.push_cluster(&mut cluster, 0, diagnostics).await;
        let missing: Vec<&str> = match cluster.first() {
            Some((_, GpuFact::Cluster(c))) if c.unread.is_empty() => spec
                .nodes
                .iter()
                .filter(|n| !c.nodes.iter().any(|live| &live.name == *n))
                .map(String::as_str)
                .collect(),
            _ => Vec::new(),
        };
        if !missing.is_empty() {
            diagnostics.push(Diagnostic::warning(
                "Rollout names nodes that are not GPU nodes of the cluster",
                format!(
                    "{} {}: apply will fail at {} unless {} by then.",
                    if missing.len() == 1 { "Node" } else { "Nodes" },
                    missing.join(", "),
                    if missing.len() == 1 {
                        "it"
                    } else {
                        "the first"
                    },
                    if missing.len() == 1 {
                        "it joins"
                    } else {
                        "they join"
                    },
                ),
            ));
        }
        facts.extend(cluster.into_iter().map(|(_, f)| f));
    }

    // Long by design: the scheduler in one place — which node starts when (the budget, the
    // nodes already unavailable first), the joins, and the stop on a failure or an interrupt —
    // reads best as one loop.
    async fn run(
        &self,
        spec: Spec,
        owner: String,
        arguments: serde_json::Value,
        stop: &gpustack_protocol::StopSignal,
    ) -> (BTreeMap<String, Step>, Vec<Diagnostic>) {
        let client = self.0.cluster().client.clone();
        let target = spec.target();
        let watch = gpustack_cluster::watch::Watch::<Node>::start(
            Api::all(client.clone()),
            watcher::Config::default(),
        );
        let view = watch.view();
        let mut progress: BTreeMap<String, Step> = spec
            .nodes
            .iter()
            .map(|n| (n.clone(), Step::Pending))
            .collect();
        let allowed = match spec::budget(&spec.max_unavailable, spec.nodes.len()) {
            Ok(n) => n,
            Err(e) => {
                return (
                    progress,
                    vec![Diagnostic::error("Invalid rollout budget", e.to_string())],
                );
            }
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        if !view.ready(deadline).await {
            return (
                progress,
                vec![Diagnostic::error(
                    "Cannot watch the nodes",
                    "The node list did not arrive within a minute.",
                )],
            );
        }
        let context = Arc::new(Context {
            client,
            spec,
            target,
            nodes: view,
            owner,
            arguments,
        });
        let spec = &context.spec;
        let mut queue: Vec<(String, Step, Vec<String>)> = Vec::new();
        let mut missing = Vec::new();
        for name in &spec.nodes {
            let Some(node) = context
                .nodes
                .store
                .get(&kube::runtime::reflector::ObjectRef::new(name))
            else {
                missing.push(name.clone());
                continue;
            };
            let record = Record::read(node.metadata.annotations.as_ref(), &spec.name)
                .filter(|r| r.target == context.target);
            let mut step = step_of(spec, &context.target, &node);
            if step == Step::Failed {
                step = record
                    .as_ref()
                    .and_then(|r| r.failed_at)
                    .unwrap_or(Step::Pending);
            }
            // Labels already in place and nothing to restart: the node needs no work, only
            // its record.
            if step == Step::Pending
                && spec.restart.is_none()
                && spec.triggers.is_empty()
                && spec.labels_match(node.metadata.labels.as_ref())
                && (spec.settle != Settle::Mig
                    || node
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(spec::MIG_STATE))
                        .map(String::as_str)
                        == Some("success"))
            {
                step = Step::Validating;
            }
            progress.insert(name.clone(), step);
            if step != Step::Done {
                let replaced = record.map(|r| r.replaced).unwrap_or_default();
                queue.push((name.clone(), step, replaced));
            }
        }
        if !missing.is_empty() {
            return (
                progress,
                vec![Diagnostic::error(
                    "Rollout names nodes that do not exist",
                    format!(
                        "No node is named {}; nothing was changed.",
                        missing.join(", ")
                    ),
                )],
            );
        }
        // Nodes part-way through go first, then nodes that already take no pods (their turn
        // costs no further capacity), then the rest in the order given.
        let is_unavailable = |name: &str| {
            context
                .nodes
                .store
                .get(&kube::runtime::reflector::ObjectRef::new(name))
                .is_some_and(|n| node::unavailable(&n))
        };
        queue.sort_by_key(|(name, step, _)| {
            (
                *step == Step::Pending,
                *step == Step::Pending && !is_unavailable(name),
            )
        });
        let mut queue: VecDeque<_> = queue.into();
        let mut running = tokio::task::JoinSet::new();
        let mut failures: Vec<(String, Failure)> = Vec::new();
        let mut interrupted = false;
        loop {
            while failures.is_empty() && !interrupted {
                if stop.is_set() {
                    interrupted = true;
                    break;
                }
                let Some((name, _, _)) = queue.front() else {
                    break;
                };
                let others_down = queue
                    .iter()
                    .skip(1)
                    .filter(|(n, s, _)| *s == Step::Pending && is_unavailable(n))
                    .count();
                let free = running.len() + others_down < allowed
                    || (is_unavailable(name) && running.len() < allowed);
                if !free {
                    break;
                }
                let (name, step, replaced) = queue.pop_front().expect("a front");
                let context = context.clone();
                progress.insert(name.clone(), step);
                running.spawn(async move {
                    let result = context.roll(&name, step, replaced).await;
                    if let Err(failure) = &result {
                        context.record_failure(&name, failure).await;
                    }
                    (name, result)
                });
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            match joined {
                Ok((name, Ok(()))) => {
                    progress.insert(name, Step::Done);
                }
                Ok((name, Err(failure))) => {
                    progress.insert(name.clone(), Step::Failed);
                    failures.push((name, failure));
                }
                Err(e) => failures.push((
                    "?".into(),
                    Failure {
                        step: Step::Pending,
                        message: format!("a node's rollout task ended abnormally: {e}"),
                    },
                )),
            }
        }
        let mut diagnostics = Vec::new();
        let left: Vec<&str> = queue.iter().map(|(n, _, _)| n.as_str()).collect();
        for (name, failure) in &failures {
            diagnostics.push(Diagnostic::error(
                format!("Rollout {} stopped at node {name}", spec.name),
                format!(
                    "Node {name} failed while {}: {}.\nThe node stays cordoned{}. Fix the cause, then run apply again: the rollout resumes at node {name}, step {}.",
                    failure.step.name(),
                    failure.message,
                    if left.is_empty() {
                        String::new()
                    } else {
                        format!("; not started: {}", left.join(", "))
                    },
                    failure.step.name(),
                ),
            ));
        }
        if interrupted && failures.is_empty() && !left.is_empty() {
            diagnostics.push(Diagnostic::error(
                format!("Rollout {} interrupted", spec.name),
                format!(
                    "The nodes in progress were finished; not started: {}. Run apply again to go on.",
                    left.join(", ")
                ),
            ));
        }
        drop(watch);
        (progress, diagnostics)
    }

    /// Destroying a rollout takes its labels off the nodes, with its records and the cordons
    /// it still holds (as `kubernetes_labels` does, at once: a geometry that goes falls back
    /// to the ClusterPolicy's default).
    async fn remove(&self, prior: &Value) -> ApplyResourceChangeResponse {
        let Ok(spec) = Spec::of(prior) else {
            return ApplyResourceChangeResponse::default();
        };
        let nodes: Api<Node> = Api::all(self.0.cluster().client.clone());
        let live = match self.live_nodes().await {
            Ok(live) => live,
            Err(e) => {
                return ApplyResourceChangeResponse {
                    new_state: Some(prior.clone()),
                    diagnostics: vec![Diagnostic::error("Cannot read the nodes", e)],
                };
            }
        };
        let mut diagnostics = Vec::new();
        for name in &spec.nodes {
            let Some(node) = live.get(name) else {
                continue;
            };
            let ours = node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(spec::CORDONED_BY))
                == Some(&spec.name);
            let labels: serde_json::Map<String, serde_json::Value> = spec
                .labels
                .keys()
                .map(|k| (k.clone(), serde_json::Value::Null))
                .collect();
            let mut body = json!({"metadata": {
                "labels": labels,
                "annotations": {spec.record_key(): null},
            }});
            if ours {
                body["spec"] = json!({"unschedulable": false});
                body["metadata"]["annotations"][spec::CORDONED_BY] = serde_json::Value::Null;
            }
            let params = kube::api::PatchParams {
                field_manager: Some(node::MANAGER.to_owned()),
                ..Default::default()
            };
            if let Err(e) = nodes
                .patch(name, &params, &kube::api::Patch::Merge(body))
                .await
            {
                diagnostics.push(Diagnostic::error(
                    "Cannot remove the rollout from a node",
                    format!("node {name}: {}", api_error(&e)),
                ));
            }
        }
        ApplyResourceChangeResponse {
            new_state: (!diagnostics.is_empty()).then(|| prior.clone()),
            diagnostics,
        }
    }
}
