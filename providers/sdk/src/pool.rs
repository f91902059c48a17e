//! The flow every cloud's GPU node pool shares — AKS agent pools, EKS node groups, GKE node
//! pools: refresh by key, a plan from the schema refined by the cloud's replace rules, the
//! pool's GPU facts, the check that a planned create does not take over a pool someone else
//! made (adopting one this stack marked), create/update/delete with the object kept on
//! failure, and import by ID. A cloud supplies only its API calls and rules ([`CloudPool`]).

use crate::resource::Resource;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic, Existing,
    GpuFact, NodeRemoval, PlanDeleteRequest, PlanDeleteResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, PoolFact, PoolShape, ReadResourcesRequest, ReadResourcesResponse,
    Schema, StopSignal, Type, Value, plan_from_schema,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The attribute of every pool's state that records the stack mark the pool was created with
/// (its creation tag or label): a pool of the recorded name without it is another pool, made
/// since by someone else. Null for a pool imported unmarked, which is known by name alone.
pub const CREATION_TOKEN: &str = "creation_token";

/// [`CREATION_TOKEN`]'s attribute, for a cloud's pool schema.
pub fn creation_token_attribute() -> Attribute {
    Attribute::computed(Type::String).describe(
        "The stack mark the pool was created with (its gpustack.dev/creation-token tag or label): a pool of the same name without it is another one.",
    )
}

/// The block of every pool that moves its GPU workloads before the pool goes (a replacement,
/// a deletion): cordon its nodes, empty them of GPU pods as `drain` says, then delete it.
pub const ROLLOUT: &str = "rollout";

/// The attribute of every pool's state naming the pool it replaces whose deletion an apply
/// could not finish (its nodes could not be drained): the next apply finishes it.
pub const REPLACING: &str = "replacing";

/// The stack mark of the pool [`REPLACING`] names, so that only that pool is ever finished.
pub const REPLACING_MARK: &str = "replacing_mark";

/// [`ROLLOUT`]'s block, for a cloud's pool schema.
pub fn rollout_block() -> Schema {
    Schema::new("How the pool's nodes are emptied of GPU pods before the pool is deleted or replaced. With lifecycle { create_before_destroy = true } the new pool comes first (a surge): its nodes are Ready before any old node is drained.")
        .attr(
            "config_path",
            Attribute::required(Type::String)
                .describe("The kubeconfig of the pool's cluster, through which its nodes are cordoned and drained (required: a current context is never guessed)."),
        )
        .attr("config_context", Attribute::optional(Type::String))
        .attr(
            "max_unavailable",
            Attribute::optional(Type::String).describe(
                "Nodes drained at once: a count (\"1\", the default) or a percentage of the pool's nodes (\"25%\", rounded up). Every old node is cordoned first, so that nothing lands on them.",
            ),
        )
        .attr(
            "drain",
            Attribute::optional(Type::String).describe(
                "What happens to a node's GPU pods: wait (default) for them to finish, evict them (PodDisruptionBudgets respected), or fail.",
            ),
        )
        .attr(
            "drain_timeout",
            Attribute::optional(Type::String).describe("Per node; default 30m."),
        )
        .attr(
            "ready_timeout",
            Attribute::optional(Type::String).describe(
                "How long the new pool's nodes may take to be Ready before the old ones are drained (create_before_destroy); default 15m.",
            ),
        )
}

/// A cloud's pool schema with what every pool has: the stack mark, the rollout block and the
/// unfinished replacement.
pub fn pool_schema(schema: Schema) -> Schema {
    schema
        .attr(CREATION_TOKEN, creation_token_attribute())
        .attr(REPLACING, replacing_attribute())
        .attr(
            REPLACING_MARK,
            Attribute::computed(Type::String).describe(
                "The stack mark of the pool named by replacing (null: one imported unmarked).",
            ),
        )
        .block(
            ROLLOUT,
            gpustack_protocol::BlockNesting::Single,
            rollout_block(),
        )
}

/// [`REPLACING`]'s attribute, for a cloud's pool schema.
pub fn replacing_attribute() -> Attribute {
    Attribute::computed(Type::String).describe(
        "The pool this one replaces, while its deletion is unfinished (its nodes could not be drained): the next apply drains and deletes it.",
    )
}

/// Checks a pool's rollout block as far as its values are known.
pub fn check_rollout(check: &mut crate::check::Checker<'_>) {
    check.one_of("rollout.drain", &["wait", "evict", "fail"]);
    if let Some(text) = check.str("rollout.max_unavailable")
        && let Err(e) = budget(text, 1)
    {
        check.error(
            "rollout.max_unavailable",
            "Invalid rollout budget",
            e.to_string(),
        );
    }
    for name in ["drain_timeout", "ready_timeout"] {
        let path = format!("rollout.{name}");
        if let Some(text) = check.str(&path)
            && let Err(e) = crate::check::duration(Some(text), std::time::Duration::ZERO)
        {
            check.error(
                &path,
                "Invalid duration",
                gpustack_protocol::error_chain(&e),
            );
        }
    }
}

/// Why a `max_unavailable` text is not a rollout budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseBudgetError {
    #[error(
        "max_unavailable = \"{0}\" is neither a count of nodes (\"1\") nor a percentage (\"25%\")"
    )]
    Malformed(String),
    #[error("max_unavailable = \"{0}\" is more than 100%")]
    OverHundredPercent(String),
    #[error("max_unavailable = \"{0}\" allows no node at a time, so the rollout could never start")]
    NoNode(String),
}

/// How many nodes may be taken at once: a count, or a percentage of the nodes rounded up
/// (as Karpenter's disruption budgets count).
pub fn budget(text: &str, nodes: usize) -> Result<usize, ParseBudgetError> {
    let bad = || ParseBudgetError::Malformed(text.to_owned());
    let allowed = if let Some(percent) = text.strip_suffix('%') {
        let p: u64 = percent.trim().parse().map_err(|_| bad())?;
        if p > 100 {
            return Err(ParseBudgetError::OverHundredPercent(text.to_owned()));
        }
        (nodes as u64 * p).div_ceil(100) as usize
    } else {
        text.trim().parse::<usize>().map_err(|_| bad())?
    };
    if allowed == 0 {
        return Err(ParseBudgetError::NoNode(text.to_owned()));
    }
    Ok(allowed.min(nodes.max(1)))
}

/// The nodes of one pool to empty of GPU pods before the pool goes.
pub struct DrainRequest<'a> {
    /// The pool's rollout block (its kubeconfig, budget, drain and timeouts).
    pub rollout: &'a Value,
    /// The cloud's pool label (`kubernetes.azure.com/agentpool`).
    pub label: &'a str,
    /// The pool whose nodes are drained.
    pub pool: &'a str,
    /// The pool made to replace it, whose nodes are to be Ready first (create_before_destroy).
    pub successor: Option<&'a str>,
    /// How many of the successor's nodes are to be Ready first: its minimum size (none for a
    /// pool that scales from zero, whose nodes come only for pods that wait).
    pub successor_nodes: u32,
    /// `AKS node pool rg/cluster/a100`, for messages.
    pub what: String,
    pub stop: &'a StopSignal,
}

/// Cordons and drains a pool's nodes through the pool's Kubernetes cluster. The binary
/// supplies it (the cloud crates link no Kubernetes client).
#[async_trait::async_trait]
pub trait NodeDrainer: Send + Sync {
    /// Drains the pool's nodes; `Ok` carries warnings (a node not waited for, and why).
    async fn drain(&self, request: DrainRequest<'_>) -> Result<Vec<Diagnostic>, Diagnostic>;

    /// The nodes labelled `label=pool` and the running pods holding their GPUs, for the
    /// plan's disruption section. The error is shown with its causes.
    async fn survey(
        &self,
        rollout: &Value,
        label: &str,
        pool: &str,
    ) -> Result<Vec<(String, Vec<String>)>, Box<dyn std::error::Error + Send + Sync>>;
}

/// A cloud provider crate's entry points for its [`Family`](crate::family::Family) struct,
/// named with the field that holds the pools' [`NodeDrainer`]
/// (`cloud_entry_points!(Aws { drainer })`): `provider()`, for a registry, and
/// `provider_with(drainer)`, which the binary calls with its Kubernetes client.
#[macro_export]
macro_rules! cloud_entry_points {
    ($family:ident { $drainer:ident }) => {
        /// The provider, for a registry.
        pub fn provider() -> ::std::sync::Arc<dyn $crate::family::ProviderFactory> {
            provider_with(::std::option::Option::None)
        }

        /// The provider, draining a pool's nodes before the pool goes with `drainer` (the
        /// binary's Kubernetes client).
        pub fn provider_with(
            drainer: ::std::option::Option<::std::sync::Arc<dyn $crate::pool::NodeDrainer>>,
        ) -> ::std::sync::Arc<dyn $crate::family::ProviderFactory> {
            ::std::sync::Arc::new($crate::family::Factory($family { $drainer: drainer }))
        }
    };
}

fn no_drainer(what: &str) -> Diagnostic {
    Diagnostic::error(
        format!("Cannot drain {what}"),
        "This build of gpustack has no Kubernetes client to drain the pool's nodes with (the kubernetes feature): remove the rollout block, or use a build with it.".to_owned(),
    )
}

/// A pool as the cloud holds it: its state in the resource's schema, and the stack mark it
/// carries (the creation tag or label), if any.
pub struct LivePool {
    pub state: Value,
    pub mark: Option<String>,
}

impl LivePool {
    /// The pool's state, with the mark it carries.
    fn into_state(self) -> Value {
        with_token(self.state, self.mark.as_deref())
    }

    /// The live state of the pool `prior` records; `None` when this pool is another one. A
    /// state that records no mark (written before marks were recorded, or of a pool imported
    /// unmarked) is refreshed without one: a refresh that filled it in would be reported as a
    /// change made outside gpustack.
    fn of_record(self, prior: &Value) -> Option<Value> {
        match recorded_token(prior) {
            Some(token) if self.mark.as_deref() != Some(token) => None,
            Some(_) => Some(self.into_state()),
            // Written without the attribute at all (before it existed): so it stays.
            None if !has_token_attribute(prior) => Some(self.state),
            None => Some(with_token(self.state, None)),
        }
    }
}

fn has_token_attribute(state: &Value) -> bool {
    state
        .as_object()
        .is_some_and(|o| o.contains_key(CREATION_TOKEN))
}

fn recorded_token(state: &Value) -> Option<&str> {
    state
        .as_object()
        .and_then(|o| o.get(CREATION_TOKEN))
        .and_then(Value::as_str)
}

fn with_token(mut state: Value, token: Option<&str>) -> Value {
    crate::check::set(
        &mut state,
        CREATION_TOKEN,
        token.map_or(Value::Null, Value::string),
    );
    state
}

/// What identifies a pool: its name, its cluster's, and what the cloud names clusters within
/// (an AKS resource group, a GKE location; nothing for EKS). Its `Display`, the parts joined
/// by `/`, is the import ID.
pub struct PoolKey {
    scope: Option<String>,
    cluster: String,
    name: String,
}

impl PoolKey {
    /// What the cluster is named within; empty for a cloud without one
    /// ([`CloudPool::SCOPE_ATTRIBUTE`]).
    pub fn scope(&self) -> &str {
        self.scope.as_deref().unwrap_or_default()
    }

    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for PoolKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(scope) = &self.scope {
            write!(f, "{scope}/")?;
        }
        write!(f, "{}/{}", self.cluster, self.name)
    }
}

/// One cloud's node pool API and rules.
#[async_trait::async_trait]
pub trait CloudPool: Send + Sync {
    /// What users call one, for messages: `EKS node group`.
    const KIND: &'static str;
    /// The import ID's shape, for the error a malformed one gets: `CLUSTER/NODEGROUP`.
    const ID_FORMAT: &'static str;

    /// The attribute naming what the pool's cluster is named within (`resource_group`,
    /// `location`); `None` for a cloud whose cluster names need nothing more.
    const SCOPE_ATTRIBUTE: Option<&'static str>;
    /// The attribute naming the pool's cluster.
    const CLUSTER_ATTRIBUTE: &'static str;
    /// The attribute naming the pool.
    const NAME_ATTRIBUTE: &'static str;

    fn schema(&self) -> Schema;

    /// The key of a configuration or state; `None` while a part of it is unknown.
    fn key(state: &Value) -> Option<PoolKey> {
        let scope = match Self::SCOPE_ATTRIBUTE {
            Some(attribute) => Some(crate::check::text(state, attribute)?.to_owned()),
            None => None,
        };
        Some(PoolKey {
            scope,
            cluster: crate::check::text(state, Self::CLUSTER_ATTRIBUTE)?.to_owned(),
            name: Self::name(state)?.to_owned(),
        })
    }

    /// The key an import ID names: [`PoolKey`]'s parts, none of them empty.
    fn parse_id(id: &str) -> Option<PoolKey> {
        let (scope, cluster, name) = match Self::SCOPE_ATTRIBUTE {
            Some(_) => {
                let [scope, cluster, name] = crate::normalize::split_id(id)?;
                (Some(scope.to_owned()), cluster, name)
            }
            None => {
                let [cluster, name] = crate::normalize::split_id(id)?;
                (None, cluster, name)
            }
        };
        Some(PoolKey {
            scope,
            cluster: cluster.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The configuration as the cloud compares it (empty collections as unset, ...).
    fn normalize(config: &Value) -> Value {
        config.clone()
    }

    /// What the schema cannot say about a change to a live pool: further replace reasons (a
    /// pool whose creation failed), values an update keeps or makes unknown.
    fn refine(prior: &Value, config: &Value, response: &mut PlanResourceChangeResponse) {
        let _ = (prior, config, response);
    }

    async fn get(&self, key: &PoolKey) -> Result<Option<LivePool>, Diagnostic>;

    /// What the plan's capacity lines call a pool: `nodepool`, `nodegroup`.
    const POOL_KIND: &'static str;
    /// The label the cloud gives a pool's nodes, with the pool's name as its value.
    const POOL_LABEL: &'static str;

    /// The pool's name in a state.
    fn name(state: &Value) -> Option<&str> {
        crate::check::text(state, Self::NAME_ATTRIBUTE)
    }

    /// What the cloud does to a pool's nodes and their pods when it deletes the pool, for a
    /// pool without a rollout block.
    const DELETES_NODES: &'static str;

    /// The labels a state gives the pool's nodes (besides [`CloudPool::POOL_LABEL`]).
    fn node_labels(state: &Value) -> BTreeMap<String, String> {
        crate::check::string_map(state, Self::NODE_LABELS_ATTRIBUTE)
    }

    /// The attribute [`CloudPool::node_labels`] reads: a map of strings.
    const NODE_LABELS_ATTRIBUTE: &'static str;

    /// The machines and GPUs a state describes; `None` while unknown, or for a pool
    /// without GPUs.
    async fn shape(&self, state: &Value) -> Option<PoolShape>;

    /// GPU software the cloud runs on the pool by itself (a device plugin), if the state
    /// turns it on.
    fn managed_gpu_software(_state: &Value) -> Option<gpustack_protocol::ManagedSoftware> {
        None
    }

    /// Creates the pool marked with `owner` (its creation tag or label; a token of its own
    /// when `owner` is empty); on failure, the pool as far as it was made.
    async fn create(
        &self,
        planned: &Value,
        owner: &str,
    ) -> Result<Value, (Option<Value>, Diagnostic)>;

    async fn update(&self, prior: &Value, planned: &Value) -> Result<Value, Diagnostic>;

    async fn delete(&self, prior: &Value) -> Result<(), Diagnostic>;
}

/// A [`CloudPool`] as a [`Resource`], with what drains its nodes (`None`: a build without a
/// Kubernetes client, which refuses a rollout block).
pub struct Pools<P>(pub Arc<P>, pub Option<Arc<dyn NodeDrainer>>);

fn rollout_of(state: &Value) -> Option<&Value> {
    crate::check::attribute(state, ROLLOUT).filter(|r| r.as_object().is_some())
}

fn replacing(state: &Value) -> Option<&str> {
    crate::check::text(state, REPLACING)
}

/// The state without what only gpustack reads (the rollout, the unfinished replacement):
/// what the cloud is asked to match.
fn cloud_part(state: &Value) -> Value {
    let mut state = state.clone();
    for name in [ROLLOUT, REPLACING, REPLACING_MARK] {
        crate::check::set(&mut state, name, Value::Null);
    }
    state
}

impl<P: CloudPool> Pools<P> {
    /// How the nodes of a pool that goes are emptied first, in words.
    /// `successor_first`: for a replacement, whether the new pool is made first.
    fn removal_how(rollout: Option<&Value>, successor_first: Option<bool>) -> String {
        let Some(rollout) = rollout else {
            return format!("none: {}", P::DELETES_NODES);
        };
        let text = |name: &str, default: &str| {
            crate::check::text(rollout, name)
                .unwrap_or(default)
                .to_owned()
        };
        let drain = match text("drain", "wait").as_str() {
            "evict" => "GPU pods evicted (PodDisruptionBudgets respected)",
            "fail" => "stops if GPU pods run",
            _ => "GPU pods waited for",
        };
        let order = match successor_first {
            Some(true) => ", once the new pool's nodes are Ready",
            Some(false) => {
                ", with no new pool before it (no create_before_destroy): its GPU pods wait for new nodes"
            }
            None => "",
        };
        format!(
            "every node cordoned, then drained {} at a time, {drain} (up to {} per node){order}",
            text("max_unavailable", "1"),
            text("drain_timeout", "30m"),
        )
    }

    /// The live nodes that go with the pool `name`, and how they are emptied first; the nodes
    /// themselves read through the rollout's cluster where there is one.
    async fn removal(
        &self,
        name: &str,
        change: String,
        rollout: Option<&Value>,
        successor_first: Option<bool>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> NodeRemoval {
        let mut removal = NodeRemoval {
            selector: [(P::POOL_LABEL.to_owned(), name.to_owned())].into(),
            change,
            how: Self::removal_how(rollout, successor_first),
            nodes: None,
        };
        if let (Some(rollout), Some(drainer)) = (rollout.filter(|r| r.is_wholly_known()), &self.1) {
            match drainer.survey(rollout, P::POOL_LABEL, name).await {
                Ok(nodes) => removal.nodes = Some(nodes),
                Err(why) => diagnostics.push(Diagnostic::warning(
                    format!("The nodes of {} {name} were not read", P::POOL_KIND),
                    format!(
                        "The plan cannot list the nodes that go with the pool, nor their GPU pods: {}",
                        gpustack_protocol::error_chain(&*why)
                    ),
                )),
            }
        }
        removal
    }

    /// A fact that says only which nodes go (no machines of its own to count).
    fn removal_fact(name: &str, removal: NodeRemoval) -> GpuFact {
        GpuFact::Pool(PoolFact {
            kind: P::POOL_KIND.to_owned(),
            name: name.to_owned(),
            node_labels: removal.selector.clone(),
            labels_attribute: gpustack_protocol::path([P::NODE_LABELS_ATTRIBUTE]),
            before: None,
            after: None,
            new: false,
            managed_gpu_software: None,
            removes: Some(removal),
        })
    }

    /// The pool an unfinished replacement left, as the cloud has it now: `None` when it is
    /// gone, or another's by now.
    async fn left_behind(&self, state: &Value) -> Result<Option<Value>, Diagnostic> {
        let Some(old_name) = replacing(state) else {
            return Ok(None);
        };
        let mut old = state.clone();
        crate::check::set(&mut old, P::NAME_ATTRIBUTE, Value::string(old_name));
        let Some(key) = P::key(&old) else {
            return Ok(None);
        };
        let recorded = crate::check::text(state, REPLACING_MARK);
        Ok(self
            .0
            .get(&key)
            .await?
            .filter(|live| live.mark.as_deref() == recorded)
            .map(LivePool::into_state))
    }

    /// Empties the pool `prior` records of GPU pods as `rollout` says. `successor`: the pool
    /// made to replace it, whose first nodes must be Ready before.
    async fn drain(
        &self,
        prior: &Value,
        rollout: &Value,
        successor: Option<&Value>,
        stop: &StopSignal,
    ) -> Result<Vec<Diagnostic>, Diagnostic> {
        let name = P::name(prior).unwrap_or_default();
        let what = match P::key(prior) {
            Some(key) => format!("{} {key}", P::KIND),
            None => format!("{} {name}", P::KIND),
        };
        let Some(drainer) = &self.1 else {
            return Err(no_drainer(&what));
        };
        let successor_nodes = match successor {
            Some(s) => self.0.shape(s).await.map_or(1, |shape| shape.min_nodes),
            None => 0,
        };
        drainer
            .drain(DrainRequest {
                rollout,
                label: P::POOL_LABEL,
                pool: name,
                successor: successor.and_then(P::name),
                successor_nodes,
                what,
                stop,
            })
            .await
    }

    /// Deletes a pool: first what an unfinished replacement left, then the pool itself, its
    /// nodes drained where a rollout says so (the new configuration's for a replacement, so
    /// that a block added with the change applies).
    async fn delete(
        &self,
        request: &ApplyResourceChangeRequest,
        prior: &Value,
    ) -> ApplyResourceChangeResponse {
        let kept = |d: Diagnostic| ApplyResourceChangeResponse {
            new_state: Some(prior.clone()),
            diagnostics: vec![d],
        };
        let mut warnings = match self.finish_replacement(prior, prior, &request.stop).await {
            Ok(warnings) => warnings,
            Err(d) => return kept(d),
        };
        let successor = request.replaced_by.as_ref();
        let rollout = successor
            .and_then(|s| rollout_of(&s.state))
            .or_else(|| rollout_of(prior));
        if let Some(rollout) = rollout {
            let made = successor.filter(|s| s.made).map(|s| &s.state);
            match self.drain(prior, rollout, made, &request.stop).await {
                Ok(more) => warnings.extend(more),
                Err(d) => {
                    return match made {
                        // The new pool stays recorded, with the old one it has still to replace.
                        Some(s) => {
                            let mut s = s.clone();
                            let name = P::name(prior).map_or(Value::Null, Value::string);
                            crate::check::set(&mut s, REPLACING, name);
                            let mark = recorded_token(prior).map_or(Value::Null, Value::string);
                            crate::check::set(&mut s, REPLACING_MARK, mark);
                            ApplyResourceChangeResponse {
                                new_state: Some(s),
                                diagnostics: vec![d],
                            }
                        }
                        None => kept(d),
                    };
                }
            }
        }
        match self.0.delete(prior).await {
            Ok(()) => ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: warnings,
            },
            Err(d) => kept(d),
        }
    }

    /// Drains and deletes the pool an earlier apply could not finish replacing.
    async fn finish_replacement(
        &self,
        prior: &Value,
        planned: &Value,
        stop: &StopSignal,
    ) -> Result<Vec<Diagnostic>, Diagnostic> {
        let Some(old) = self.left_behind(prior).await? else {
            return Ok(Vec::new());
        };
        let warnings = match rollout_of(planned).or_else(|| rollout_of(prior)) {
            Some(rollout) => self.drain(&old, rollout, Some(prior), stop).await?,
            None => Vec::new(),
        };
        self.0.delete(&old).await?;
        Ok(warnings)
    }

    /// The answer to an update (`updating`) or a delete of the pool `prior` records, when that
    /// pool is no longer there: gone, or another pool of its name (without its mark). An
    /// update would create or change another pool; a delete leaves the other one.
    async fn not_there(
        &self,
        prior: &Value,
        updating: bool,
    ) -> Option<ApplyResourceChangeResponse> {
        let token = recorded_token(prior)?;
        let key = P::key(prior)?;
        let live = match self.0.get(&key).await {
            Ok(live) => live,
            Err(d) => {
                return Some(ApplyResourceChangeResponse {
                    new_state: Some(prior.clone()),
                    diagnostics: vec![d],
                });
            }
        };
        let another = match &live {
            Some(live) if live.mark.as_deref() == Some(token) => return None,
            Some(_) => true,
            None => false,
        };
        let not_there = crate::NotThere {
            what: format!("{} {key}", P::KIND),
            noun: "pool",
            removed: "deleted",
            replaced: "deleted and made again by someone else",
            recorded: format!("mark {token}"),
        };
        Some(not_there.answer(prior, updating, another))
    }

    /// The pool's machines and node labels, for the plan's capacity lines. `new`: the change
    /// makes a new pool (a create or a replacement).
    async fn pool_fact(
        &self,
        prior: Option<&Value>,
        planned: Option<&Value>,
        new: bool,
        removes: Option<NodeRemoval>,
    ) -> Option<GpuFact> {
        let before = match prior {
            Some(p) => self.0.shape(p).await,
            None => None,
        };
        let after = match planned {
            Some(p) => self.0.shape(p).await,
            None => None,
        };
        pool_fact::<P>(before, after, planned.or(prior)?, new, removes)
    }
}

/// A pool's GPU fact from its machines before and after, its name and node labels read from
/// `labelled`; `None` when it has GPU machines neither before nor after.
fn pool_fact<P: CloudPool>(
    before: Option<PoolShape>,
    after: Option<PoolShape>,
    labelled: &Value,
    new: bool,
    removes: Option<NodeRemoval>,
) -> Option<GpuFact> {
    if before.is_none() && after.is_none() {
        return None;
    }
    let mut node_labels = P::node_labels(labelled);
    // A name only apply knows (a random suffix) labels no node the plan can match.
    let name = match P::name(labelled) {
        Some(name) => {
            node_labels.insert(P::POOL_LABEL.to_owned(), name.to_owned());
            name.to_owned()
        }
        None => "(name known after apply)".to_owned(),
    };
    Some(GpuFact::Pool(PoolFact {
        kind: P::POOL_KIND.to_owned(),
        name,
        node_labels,
        labels_attribute: gpustack_protocol::path([P::NODE_LABELS_ATTRIBUTE]),
        before,
        after,
        new,
        managed_gpu_software: P::managed_gpu_software(labelled),
        removes,
    }))
}

/// The GPU fact of a pool change another tool planned (`gpustack review`), its values in the
/// cloud's pool schema (`before`, `after`) and its machines from `shape`, which reads no
/// cloud API. A pool deleted or replaced takes its nodes as the cloud does: no rollout of
/// gpustack's drains them first.
pub fn reviewed_pool_fact<P: CloudPool>(
    before: Option<&Value>,
    after: Option<&Value>,
    replace: bool,
    shape: impl Fn(&Value) -> Option<PoolShape>,
) -> Option<GpuFact> {
    let labelled = after.or(before)?;
    let removes = (before.is_some() && (after.is_none() || replace))
        .then(|| before.and_then(P::name))
        .flatten()
        .map(|name| NodeRemoval {
            selector: [(P::POOL_LABEL.to_owned(), name.to_owned())].into(),
            change: if after.is_some() {
                "replaced".to_owned()
            } else {
                "deleted".to_owned()
            },
            how: format!("none: {}", P::DELETES_NODES),
            nodes: None,
        });
    pool_fact::<P>(
        before.and_then(&shape),
        after.and_then(&shape),
        labelled,
        before.is_none() || replace,
        removes,
    )
}

#[async_trait::async_trait]
impl<P: CloudPool> Resource for Pools<P> {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let reads = request.states.iter().map(|state| async move {
            let Some(key) = P::key(state) else {
                return Ok(Some(state.clone()));
            };
            let Some(mut live) = self.0.get(&key).await?.and_then(|l| l.of_record(state)) else {
                return Ok(None);
            };
            // The rollout is gpustack's alone; an unfinished replacement lasts while the old
            // pool, with this stack's mark, is there.
            // (A state written before these attributes existed stays without them.)
            let recorded = |name: &str| state.as_object().is_some_and(|o| o.contains_key(name));
            if recorded(ROLLOUT) {
                let rollout = crate::check::attribute(state, ROLLOUT).cloned();
                crate::check::set(&mut live, ROLLOUT, rollout.unwrap_or(Value::Null));
            }
            if !recorded(REPLACING) {
                return Ok(Some(live));
            }
            let left = self.left_behind(state).await?.is_some();
            for name in [REPLACING, REPLACING_MARK] {
                let value = crate::check::attribute(state, name)
                    .filter(|_| left)
                    .cloned()
                    .unwrap_or(Value::Null);
                crate::check::set(&mut live, name, value);
            }
            Ok(Some(live))
        });
        ReadResourcesResponse::collect(&request.states, futures::future::join_all(reads).await)
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let config = P::normalize(&request.config);
        let prior = request.prior_state.as_ref();
        let mut response = plan_from_schema(&self.0.schema(), prior, &config);
        if let Some(prior) = prior {
            P::refine(prior, &config, &mut response);
        }
        let replace = prior.is_some() && !response.requires_replace.is_empty();
        let new = prior.is_none() || replace;
        // An update keeps the pool, and with it its mark.
        if let Some(prior) = prior.filter(|_| !new) {
            response.planned_state = with_token(response.planned_state, recorded_token(prior));
        }
        // A replacement an earlier apply left unfinished is finished by this plan.
        for name in [REPLACING, REPLACING_MARK] {
            crate::check::set(&mut response.planned_state, name, Value::Null);
        }
        let rollout = rollout_of(&response.planned_state).or_else(|| prior.and_then(rollout_of));
        let what = P::key(&config).map_or_else(
            || format!("{} {}", P::KIND, P::name(&config).unwrap_or_default()),
            |k| format!("{} {k}", P::KIND),
        );
        if rollout.is_some() && self.1.is_none() {
            response.diagnostics.push(no_drainer(&what));
        }
        let unfinished = prior.and_then(replacing);
        if replace && let Some(old) = unfinished {
            response.diagnostics.push(Diagnostic::error(
                format!("Cannot replace {what} yet"),
                format!("It still has to finish replacing {} {old} (an earlier apply could not drain it). Apply the configuration it was made from first, so that {old} is drained and deleted, then change it.", P::POOL_KIND),
            ));
        }
        // A rollout drains the old pool through the new one's cluster: both must be in it.
        if replace
            && rollout.is_some()
            && let (Some(prior), Some(old_name)) = (prior, prior.and_then(P::name))
        {
            let mut renamed = response.planned_state.clone();
            crate::check::set(&mut renamed, P::NAME_ATTRIBUTE, Value::string(old_name));
            let same_cluster = match (P::key(&renamed), P::key(prior)) {
                (Some(a), Some(b)) => a.to_string() == b.to_string(),
                // Unknown until apply: the check runs again on the final plan.
                _ => true,
            };
            if !same_cluster {
                response.diagnostics.push(Diagnostic::error(
                    format!("Cannot roll {what} into another cluster"),
                    "A rollout moves GPU workloads to the new pool within the pool's cluster; this replacement moves the pool to another cluster, resource group or location. Remove the rollout block for this change, or add the new pool beside the old one under another resource.".to_owned(),
                ));
            }
        }
        let mut removes = None;
        if !replace && let Some(old) = unfinished {
            let name = P::name(&response.planned_state).unwrap_or_default();
            let change = format!(
                "{} {old} deleted: the rest of its replacement by {} {name}",
                P::POOL_KIND,
                P::POOL_KIND
            );
            removes = Some(
                self.removal(old, change, rollout, Some(true), &mut response.diagnostics)
                    .await,
            );
        }
        // Values unknown until apply (a machine type from another resource) leave the
        // capacity out rather than guess it.
        let planned = (!response.planned_state.is_null()).then_some(&response.planned_state);
        response.gpu_facts = self
            .pool_fact(prior, planned, new, removes)
            .await
            .into_iter()
            .collect();
        if prior.is_none()
            && let Some(key) = P::key(&config)
        {
            match self.0.get(&key).await {
                Ok(Some(live)) => {
                    response.existing = Some(Existing {
                        import_id: key.to_string(),
                        describe: format!("{} {key}", P::KIND),
                        owned: !request.owner.is_empty()
                            && live.mark.as_deref() == Some(request.owner.as_str()),
                    });
                }
                Ok(None) => {}
                Err(d) => response.diagnostics.push(d),
            }
        }
        response
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        if let Some(prior) = &request.prior_state
            && let Some(response) = self.not_there(prior, request.planned_state.is_some()).await
        {
            return response;
        }
        if let (Some(prior), None) = (&request.prior_state, &request.planned_state) {
            return self.delete(&request, prior).await;
        }
        // Only an owner is a mark known before the create: a pool created without one (a
        // token of the cloud's own) is known by name alone.
        let mark = (!request.owner.is_empty()).then_some(request.owner.as_str());
        // What only gpustack reads goes into the state as planned, never to the cloud.
        let keep = |mut state: Value, planned: &Value| {
            for name in [ROLLOUT, REPLACING, REPLACING_MARK] {
                let value = crate::check::attribute(planned, name)
                    .cloned()
                    .unwrap_or(Value::Null);
                crate::check::set(&mut state, name, value);
            }
            state
        };
        // The rest of an unfinished replacement goes first; its warnings go with the answer.
        let mut warnings = Vec::new();
        if let (Some(prior), Some(planned)) = (&request.prior_state, &request.planned_state) {
            match self.finish_replacement(prior, planned, &request.stop).await {
                Ok(more) => warnings = more,
                Err(d) => {
                    return ApplyResourceChangeResponse {
                        new_state: Some(prior.clone()),
                        diagnostics: vec![d],
                    };
                }
            }
        }
        let mut response = crate::apply_change(
            &request,
            async |planned| {
                self.0
                    .create(&cloud_part(planned), &request.owner)
                    .await
                    .map(|state| keep(with_token(state, mark), planned))
                    .map_err(|(state, d)| (state.map(|s| keep(with_token(s, mark), planned)), d))
            },
            async |prior, planned| {
                let (cloud_prior, cloud_planned) = (cloud_part(prior), cloud_part(planned));
                let state = if cloud_prior == cloud_planned {
                    cloud_prior
                } else {
                    self.0.update(&cloud_prior, &cloud_planned).await?
                };
                Ok(keep(with_token(state, recorded_token(prior)), planned))
            },
            async |_| Ok(()),
        )
        .await;
        response.diagnostics.extend(warnings);
        response
    }

    /// A pool's deletion, or the deletion half of its replacement, takes its nodes (and those
    /// of a pool an unfinished replacement left): the plan lists them, with how they are
    /// emptied first.
    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let prior = &request.prior_state;
        let mut response = PlanDeleteResponse::default();
        let Some(name) = P::name(prior) else {
            return response;
        };
        let (change, rollout, successor_first) = match &request.replaced_by {
            Some((after, made_first)) => {
                let new_name = P::name(after).unwrap_or("(known after apply)");
                let change = if new_name == name {
                    format!("{} {name} replaced", P::POOL_KIND)
                } else {
                    format!(
                        "{} {name} replaced by {} {new_name}",
                        P::POOL_KIND,
                        P::POOL_KIND
                    )
                };
                (
                    change,
                    rollout_of(after).or_else(|| rollout_of(prior)),
                    Some(*made_first),
                )
            }
            None => (
                format!("{} {name} deleted", P::POOL_KIND),
                rollout_of(prior),
                None,
            ),
        };
        let removal = self
            .removal(
                name,
                change,
                rollout,
                successor_first,
                &mut response.diagnostics,
            )
            .await;
        response.gpu_facts.push(Self::removal_fact(name, removal));
        if let Some(old) = replacing(prior) {
            let change = format!(
                "{} {old} deleted, left by an unfinished replacement",
                P::POOL_KIND
            );
            let removal = self
                .removal(
                    old,
                    change,
                    rollout_of(prior),
                    None,
                    &mut response.diagnostics,
                )
                .await;
            response.gpu_facts.push(Self::removal_fact(old, removal));
        }
        response
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let key = P::parse_id(id).ok_or_else(|| {
            vec![Diagnostic::error(
                "Invalid import ID",
                format!("\"{id}\" is not {}.", P::ID_FORMAT),
            )]
        })?;
        match self.0.get(&key).await.map_err(|d| vec![d])? {
            Some(live) => Ok(live.into_state()),
            None => Err(vec![Diagnostic::error(
                format!("{} not found", P::KIND),
                format!("There is no {} {key}.", P::KIND),
            )]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cloud pool of which only the naming is used.
    struct Named<const SCOPED: bool>;

    #[async_trait::async_trait]
    impl<const SCOPED: bool> CloudPool for Named<SCOPED> {
        const KIND: &'static str = "test pool";
        const ID_FORMAT: &'static str = "";
        const SCOPE_ATTRIBUTE: Option<&'static str> = if SCOPED { Some("group") } else { None };
        const CLUSTER_ATTRIBUTE: &'static str = "cluster";
        const NAME_ATTRIBUTE: &'static str = "pool";
        const POOL_KIND: &'static str = "pool";
        const POOL_LABEL: &'static str = "test/pool";
        const DELETES_NODES: &'static str = "";
        const NODE_LABELS_ATTRIBUTE: &'static str = "node_labels";

        fn schema(&self) -> Schema {
            Schema::new("")
        }

        async fn get(&self, _: &PoolKey) -> Result<Option<LivePool>, Diagnostic> {
            Ok(None)
        }

        async fn shape(&self, _: &Value) -> Option<PoolShape> {
            None
        }

        async fn create(&self, _: &Value, _: &str) -> Result<Value, (Option<Value>, Diagnostic)> {
            Ok(Value::Null)
        }

        async fn update(&self, _: &Value, _: &Value) -> Result<Value, Diagnostic> {
            Ok(Value::Null)
        }

        async fn delete(&self, _: &Value) -> Result<(), Diagnostic> {
            Ok(())
        }
    }

    fn state(json: serde_json::Value) -> Value {
        Value::from_json(&json)
    }

    #[test]
    fn a_key_is_its_import_id_and_needs_every_part() {
        let pool = state(serde_json::json!({"group": "rg", "cluster": "aks", "pool": "gpu"}));
        let key = Named::<true>::key(&pool).unwrap();
        assert_eq!(key.to_string(), "rg/aks/gpu");
        assert_eq!(
            (key.scope(), key.cluster(), key.name()),
            ("rg", "aks", "gpu")
        );
        let parsed = Named::<true>::parse_id("rg/aks/gpu").unwrap();
        assert_eq!(parsed.to_string(), key.to_string());
        assert!(Named::<true>::parse_id("aks/gpu").is_none());
        assert!(
            Named::<true>::key(&state(serde_json::json!({"cluster": "aks", "pool": "gpu"})))
                .is_none()
        );

        let key = Named::<false>::key(&pool).unwrap();
        assert_eq!(key.to_string(), "aks/gpu");
        assert_eq!(key.scope(), "");
        assert!(Named::<false>::parse_id("rg/aks/gpu").is_none());
        assert_eq!(
            Named::<false>::parse_id("aks/gpu").unwrap().to_string(),
            "aks/gpu"
        );

        let mut unknown = pool.clone();
        crate::check::set(&mut unknown, "pool", Value::Unknown);
        assert!(Named::<true>::key(&unknown).is_none());
    }

    #[test]
    fn a_pool_is_named_and_labelled_by_its_attributes() {
        let pool = state(serde_json::json!({
            "cluster": "aks",
            "pool": "gpu",
            "node_labels": {"b": "2", "a": "1", "n": 3},
        }));
        assert_eq!(Named::<false>::name(&pool), Some("gpu"));
        let labels = Named::<false>::node_labels(&pool);
        assert_eq!(
            labels.into_iter().collect::<Vec<_>>(),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "2".to_owned())
            ]
        );
    }
}
