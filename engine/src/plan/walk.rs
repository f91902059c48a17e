//! The plan walk: the graph in dependency order, concurrently. Expressions are evaluated on the
//! walk's own task (they are fast and need the scope); provider calls run as futures, bounded
//! per provider configuration, and a node starts as soon as its dependencies have finished.
//!
//! **Invariant:** the walk performs no I/O itself: reads and plans go through providers.

use super::{
    Action, DataRecord, OutputChange, Plan, ResourceChange, Snapshot, config_hash, mark_schema,
    sensitive_attributes,
};
use crate::config::{Resource, ResourceMode};
use crate::diag::Diag;
use crate::evaluate::{EvalOptions, Inputs, Walk};
use crate::graph::{Graph, NodeKind};
use crate::instances::{
    Instance, InstanceKey, assemble, expand, keep_ignored, recorded, report, store,
};
use crate::sensitive::{Salt, encode, masked_texts};
use crate::source::Span;
use futures::future::BoxFuture;
use gpustack_protocol::{
    ConfigureRequest, Diagnostic, PlanResourceChangeRequest, Provider, ReadDataSourceRequest,
    ReadResourcesRequest, Value,
};
use gpustack_state::{ResourceState, State};
use indexmap::IndexMap;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Calls a provider configuration may have in flight when its block does not say.
pub const DEFAULT_MAX_CONCURRENCY: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanMode {
    #[default]
    Normal,
    Destroy,
    RefreshOnly,
}

#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    pub mode: PlanMode,
    /// Read live objects first (`--refresh=false` turns it off).
    pub refresh: bool,
    /// Resource addresses to limit the plan to, with their dependencies.
    pub targets: Vec<String>,
    /// Instance addresses to replace even if nothing changed.
    pub replace: Vec<String>,
}

/// A configured provider and its concurrency bound.
#[derive(Clone)]
pub(crate) struct ProviderHandle {
    pub(crate) instance: Arc<dyn Provider>,
    pub(crate) permits: Arc<Semaphore>,
}

enum Outcome {
    Provider {
        handle: Option<ProviderHandle>,
        refreshed: Vec<(String, Option<Value>)>,
        diagnostics: Vec<Diagnostic>,
    },
    Resource {
        instances: Vec<PlannedInstance>,
        diagnostics: Vec<Diagnostic>,
    },
}

struct PlannedInstance {
    key: InstanceKey,
    address: String,
    prior: Option<Value>,
    planned: Value,
    requires_replace: Vec<String>,
    capacity: Vec<gpustack_protocol::CapacityChange>,
    gpu_facts: Vec<gpustack_protocol::GpuFact>,
}

struct Planner<'w, 'a> {
    walk: &'w mut Walk<'a>,
    /// The state's digest key (or the one the state this plan creates will have).
    salt: &'a Salt,
    /// What data sources answered, for the plan's snapshot.
    data: IndexMap<String, DataRecord>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    state: Option<&'a State>,
    options: &'a PlanOptions,
    providers: HashMap<NodeIndex, ProviderHandle>,
    refreshed: HashMap<String, Option<Value>>,
    failed: HashSet<NodeIndex>,
    /// Config addresses the plan is limited to (`--target` and their dependencies); None: all.
    allowed: Option<HashSet<NodeIndex>>,
    changes: Vec<ResourceChange>,
    capacity: Vec<crate::plan::CapacityLine>,
    /// What resources said about GPUs, by instance address, for the capacity pass.
    gpu_facts: Vec<(String, gpustack_protocol::GpuFact)>,
    /// Config addresses of resources seen in configuration, for finding orphans.
    configured: HashSet<String>,
}

/// Plans a stack whose configuration is loaded and checked. Errors go to `diags`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn plan<'a>(
    walk: &mut Walk<'a>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    state: Option<&'a State>,
    options: &'a PlanOptions,
    snapshot: Snapshot,
    salt: &'a Salt,
) -> Option<Plan> {
    let allowed = targets(walk, graph, &options.targets);
    let mut planner = Planner {
        walk,
        salt,
        data: IndexMap::new(),
        graph,
        inputs,
        state,
        options,
        providers: HashMap::new(),
        refreshed: HashMap::new(),
        failed: HashSet::new(),
        allowed,
        changes: Vec::new(),
        capacity: Vec::new(),
        gpu_facts: Vec::new(),
        configured: HashSet::new(),
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::walker::walk(&graph.graph, &mut planner, &stop).await;
    if planner.walk.diags.has_errors() {
        return None;
    }
    let drift = planner.drift();
    planner.orphans();
    let mode = options.mode;
    let mut resource_changes = match mode {
        PlanMode::Normal => std::mem::take(&mut planner.changes),
        PlanMode::Destroy => planner.destroy_changes(),
        PlanMode::RefreshOnly => Vec::new(),
    };
    // Changes finish in any order; plans read the same every time.
    resource_changes.sort_by(|a, b| a.address.cmp(&b.address));
    let mut drift = drift;
    drift.sort_by(|a, b| a.address.cmp(&b.address));
    if planner.walk.diags.has_errors() {
        return None;
    }
    let output_changes = planner.output_changes();
    let mut gpu_capacity = match mode {
        PlanMode::Normal => {
            let mut lines = std::mem::take(&mut planner.capacity);
            lines.extend(super::capacity::pool_lines(&planner.gpu_facts));
            lines
        }
        _ => Vec::new(),
    };
    gpu_capacity.sort_by(|a, b| (&a.change.scope, &a.address).cmp(&(&b.change.scope, &b.address)));
    let mut snapshot = snapshot;
    snapshot.data = std::mem::take(&mut planner.data);
    snapshot.data.sort_keys();
    Some(Plan {
        format_version: super::FORMAT_VERSION.into(),
        gpustack_version: crate::version::VERSION.into(),
        mode,
        lineage: state.map(|s| s.lineage.clone()),
        serial: state.map_or(0, |s| s.serial),
        config_hash: config_hash(&snapshot),
        digest_key: None,
        resource_changes,
        resource_drift: drift,
        output_changes,
        gpu_capacity,
        snapshot,
    })
}

/// The resource nodes a `--target` list selects, with everything they depend on.
fn targets(walk: &mut Walk<'_>, graph: &Graph, targets: &[String]) -> Option<HashSet<NodeIndex>> {
    if targets.is_empty() {
        return None;
    }
    let mut selected = Vec::new();
    for target in targets {
        let config_address = crate::address::Address::parse(&strip_instance_key(target));
        let found: Vec<NodeIndex> = graph
            .graph
            .node_indices()
            .filter(|&n| matches!(graph.graph[n].kind, NodeKind::Resource(_)))
            .filter(|&n| {
                let address = crate::address::Address::parse(&graph.graph[n].address(walk.stack));
                matches!((&address, &config_address), (Ok(a), Ok(t)) if a.starts_with(t))
            })
            .collect();
        if found.is_empty() {
            walk.diags.push(Diag::error(
                None,
                "Invalid target",
                format!("No resource or module in the stack matches \"{target}\"."),
            ));
        }
        selected.extend(found);
    }
    let mut allowed = HashSet::new();
    let mut pending = selected;
    while let Some(n) = pending.pop() {
        if allowed.insert(n) {
            pending.extend(graph.graph.neighbors_directed(n, Direction::Incoming));
        }
    }
    Some(allowed)
}

pub(crate) use crate::address::strip_instance_key;

/// True when a `--target` names this instance, its resource or a module it is in.
fn targeted(targets: &[String], address: &str) -> bool {
    use crate::address::Address;
    let Ok(address) = Address::parse(address) else {
        return false;
    };
    targets
        .iter()
        .filter_map(|t| Address::parse(t).ok())
        .any(|t| address.starts_with(&t))
}

impl crate::walker::Steps for Planner<'_, '_> {
    type Outcome = Outcome;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Outcome>> {
        self.start_node(node)
    }

    fn finish(&mut self, node: NodeIndex, outcome: Outcome) {
        self.finish_node(node, outcome);
    }
}

impl Planner<'_, '_> {
    fn depends_on_failure(&self, node: NodeIndex) -> bool {
        self.graph
            .graph
            .neighbors_directed(node, Direction::Incoming)
            .any(|d| self.failed.contains(&d))
    }

    fn start_node(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Outcome>> {
        if self.depends_on_failure(node) {
            self.failed.insert(node);
            return None;
        }
        let n = self.graph.graph[node].clone();
        let errors_before = self.walk.diags.0.len();
        match n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                self.walk
                    .step_value(self.graph, node, self.inputs, EvalOptions::default());
                None
            }
            NodeKind::Provider => {
                let config = self.walk.provider(n.module, &n.key, n.span, n.implied);
                if self.walk.diags.0.len() > errors_before || config.is_none() {
                    self.failed.insert(node);
                    return None;
                }
                Some(self.start_provider(node, config.unwrap_or_default()))
            }
            NodeKind::Resource(mode) => {
                let module = &self.walk.stack.modules[n.module];
                let resource = match mode {
                    ResourceMode::Managed => &module.resources[&n.key],
                    ResourceMode::Data => &module.data[&n.key],
                };
                self.start_resource(node, n.module, resource)
            }
        }
    }

    fn start_provider(&mut self, node: NodeIndex, config: Value) -> BoxFuture<'static, Outcome> {
        let n = &self.graph.graph[node];
        let address = n.address(self.walk.stack);
        let name = n.key.split('.').next().unwrap_or_default().to_owned();
        let factory = self.walk.registry.provider(&name).cloned();
        let limit = config
            .as_object()
            .and_then(|c| c.get("max_concurrency"))
            .and_then(Value::as_number)
            .filter(|n| *n >= 1.0)
            .map_or(DEFAULT_MAX_CONCURRENCY, |n| n as usize);
        // The state's objects served by this configuration, grouped by type for batched reads,
        // with the paths that are sensitive in each (their values are digests).
        let mut by_type: IndexMap<String, Vec<(String, Value, Vec<gpustack_protocol::Path>)>> =
            IndexMap::new();
        if let Some(state) = self.state {
            for r in state.resources.iter().filter(|r| r.provider == address) {
                let mut paths = r.sensitive_paths.clone();
                paths.extend(sensitive_attributes(
                    self.walk.registry.resource_schema(&r.type_name),
                ));
                by_type.entry(r.type_name.clone()).or_default().push((
                    r.address.clone(),
                    Value::from_json(&r.attributes),
                    paths,
                ));
            }
        }
        let refresh = self.options.refresh;
        Box::pin(async move {
            let Some(factory) = factory else {
                return Outcome::Provider {
                    handle: None,
                    refreshed: vec![],
                    diagnostics: vec![Diagnostic::error("Unknown provider", name)],
                };
            };
            let instance = match factory
                .configure(ConfigureRequest {
                    config: config.unmark_deep().0,
                })
                .await
            {
                Ok(instance) => instance,
                Err(diagnostics) => {
                    return Outcome::Provider {
                        handle: None,
                        refreshed: vec![],
                        diagnostics,
                    };
                }
            };
            let handle = ProviderHandle {
                instance,
                permits: Arc::new(Semaphore::new(limit)),
            };
            let mut refreshed = Vec::new();
            let mut diagnostics = Vec::new();
            if refresh {
                let reads = by_type.into_iter().map(|(type_name, objects)| {
                    let handle = handle.clone();
                    async move {
                        let _permit = handle.permits.acquire().await;
                        let states = objects.iter().map(|(_, v, _)| v.clone()).collect();
                        let sensitive_paths = objects.iter().map(|(_, _, p)| p.clone()).collect();
                        let response = handle
                            .instance
                            .read_resources(ReadResourcesRequest {
                                type_name,
                                states,
                                sensitive_paths,
                            })
                            .await;
                        (objects, response)
                    }
                });
                for (objects, response) in futures::future::join_all(reads).await {
                    diagnostics.extend(response.diagnostics);
                    for (i, (address, prior, paths)) in objects.into_iter().enumerate() {
                        // What was sensitive stays so in the live object.
                        let live = response
                            .states
                            .get(i)
                            .cloned()
                            .unwrap_or(Some(prior.clone()))
                            .map(|v| v.mark_paths(&paths));
                        refreshed.push((address, live));
                    }
                }
            } else {
                for (_, objects) in by_type {
                    refreshed.extend(
                        objects.into_iter().map(|(address, prior, paths)| {
                            (address, Some(prior.mark_paths(&paths)))
                        }),
                    );
                }
            }
            Outcome::Provider {
                handle: Some(handle),
                refreshed,
                diagnostics,
            }
        })
    }

    fn start_resource(
        &mut self,
        node: NodeIndex,
        module: usize,
        r: &Resource,
    ) -> Option<BoxFuture<'static, Outcome>> {
        let prefix = self.walk.stack.modules[module].prefix();
        let config_address = format!("{prefix}{}", r.local_address());
        self.configured.insert(config_address.clone());
        let excluded = self.allowed.as_ref().is_some_and(|a| !a.contains(&node));
        if excluded || self.options.mode != PlanMode::Normal {
            // Outside the plan's scope: its value is what the state knows.
            let value = self.prior_value(&config_address, r);
            store(self.walk, module, r, value);
            return None;
        }
        let Some(handle) = self
            .graph
            .provider_of
            .get(&node)
            .and_then(|p| self.providers.get(p))
            .cloned()
        else {
            self.failed.insert(node);
            return None;
        };
        let schema = crate::instances::schema_of(self.walk.registry, r).cloned();
        let Some(schema) = schema else {
            self.failed.insert(node);
            return None;
        };
        let errors_before = self.walk.diags.0.len();
        let Some(instances) = expand(self.walk, module, r, &config_address) else {
            self.failed.insert(node);
            return None;
        };
        let context = format!("a {} block", r.type_name);
        let mut requests = Vec::with_capacity(instances.len());
        for Instance {
            key,
            address,
            repetition,
        } in instances
        {
            let mut config = self
                .walk
                .decode(module, &r.body, &schema, repetition, &context);
            self.walk.provider_checks(r, &config);
            // Digests (a state read without refresh) give way to the configuration's values.
            let prior = self
                .refreshed
                .get(&address)
                .cloned()
                .flatten()
                .map(|p| crate::sensitive::rehydrate(p, &config, self.salt));
            if let Some(prior) = &prior {
                keep_ignored(&mut config, prior, &r.lifecycle);
            }
            requests.push((key, address, prior, config));
        }
        if self.walk.diags.0.len() > errors_before {
            self.failed.insert(node);
            return None;
        }
        let type_name = r.type_name.clone();
        let mode = r.mode;
        let schema_paths = sensitive_attributes(Some(&schema));
        Some(Box::pin(async move {
            let calls = requests.into_iter().map(|(key, address, prior, config)| {
                let handle = handle.clone();
                let type_name = type_name.clone();
                let schema_paths = schema_paths.clone();
                async move {
                    let _permit = handle.permits.acquire().await;
                    let secrets = Secrets::of(prior.as_ref(), &config, &schema_paths);
                    match mode {
                        ResourceMode::Managed => {
                            let response = handle
                                .instance
                                .plan_resource_change(PlanResourceChangeRequest {
                                    type_name,
                                    prior_state: prior.clone().map(|p| p.unmark_deep().0),
                                    config: config.unmark_deep().0,
                                    for_apply: false,
                                    sensitive_paths: secrets.paths.clone(),
                                })
                                .await;
                            let planned = secrets.mark(response.planned_state);
                            (
                                PlannedInstance {
                                    key,
                                    address,
                                    prior: prior.map(|p| secrets.mark(p.unmark_deep().0)),
                                    planned,
                                    requires_replace: response.requires_replace,
                                    capacity: response.capacity,
                                    gpu_facts: response.gpu_facts,
                                },
                                response.diagnostics,
                            )
                        }
                        ResourceMode::Data if config.is_wholly_known() => {
                            let response = handle
                                .instance
                                .read_data_source(ReadDataSourceRequest {
                                    type_name,
                                    config: config.unmark_deep().0,
                                })
                                .await;
                            (
                                PlannedInstance {
                                    key,
                                    address,
                                    prior: None,
                                    planned: secrets.mark(response.state),
                                    requires_replace: vec![],
                                    capacity: vec![],
                                    gpu_facts: vec![],
                                },
                                response.diagnostics,
                            )
                        }
                        ResourceMode::Data => (
                            PlannedInstance {
                                key,
                                address,
                                prior: None,
                                planned: Value::Unknown,
                                requires_replace: vec![],
                                capacity: vec![],
                                gpu_facts: vec![],
                            },
                            vec![],
                        ),
                    }
                }
            });
            let mut instances = Vec::new();
            let mut diagnostics = Vec::new();
            for (instance, diags) in futures::future::join_all(calls).await {
                instances.push(instance);
                diagnostics.extend(diags);
            }
            Outcome::Resource {
                instances,
                diagnostics,
            }
        }))
    }

    fn finish_node(&mut self, node: NodeIndex, outcome: Outcome) {
        let n = self.graph.graph[node].clone();
        let span = Some(n.span);
        match outcome {
            Outcome::Provider {
                handle,
                refreshed,
                diagnostics,
            } => {
                let failed = report(self.walk.diags, span, &diagnostics);
                match handle {
                    Some(handle) if !failed => {
                        self.providers.insert(node, handle);
                    }
                    _ => {
                        self.failed.insert(node);
                    }
                }
                self.refreshed.extend(refreshed);
            }
            Outcome::Resource {
                instances,
                diagnostics,
            } => {
                if report(self.walk.diags, span, &diagnostics) {
                    self.failed.insert(node);
                    return;
                }
                let module = &self.walk.stack.modules[n.module];
                let resource = match n.kind {
                    NodeKind::Resource(ResourceMode::Data) => &module.data[&n.key],
                    _ => &module.resources[&n.key],
                };
                let provider = self
                    .graph
                    .provider_of
                    .get(&node)
                    .map(|p| self.graph.graph[*p].address(self.walk.stack))
                    .unwrap_or_default();
                let dependencies = resource_dependencies(self.graph, node, self.walk.stack);
                let value = assemble(instances.iter().map(|i| (&i.key, i.planned.clone())));
                if resource.mode == ResourceMode::Data {
                    for instance in instances.iter().filter(|i| i.planned.is_wholly_known()) {
                        let encoded = encode(&instance.planned, self.salt);
                        self.data.insert(
                            instance.address.clone(),
                            DataRecord {
                                value: encoded.json,
                                sensitive: encoded.sensitive,
                            },
                        );
                    }
                }
                if resource.mode == ResourceMode::Managed {
                    for instance in &instances {
                        let change =
                            self.change_for(resource, instance, &provider, &dependencies, n.span);
                        self.gpu_facts.extend(
                            instance
                                .gpu_facts
                                .iter()
                                .map(|f| (instance.address.clone(), f.clone())),
                        );
                        self.capacity.extend(instance.capacity.iter().map(|c| {
                            crate::plan::CapacityLine {
                                address: instance.address.clone(),
                                change: c.clone(),
                            }
                        }));
                        self.changes.push(change);
                    }
                }
                store(self.walk, n.module, resource, value);
            }
        }
    }

    fn change_for(
        &mut self,
        r: &Resource,
        instance: &PlannedInstance,
        provider: &str,
        dependencies: &[String],
        span: Span,
    ) -> ResourceChange {
        let forced = self.options.replace.iter().any(|a| a == &instance.address);
        let (actions, reason) = match &instance.prior {
            None => (vec![Action::Create], None),
            Some(_) if !instance.requires_replace.is_empty() || forced => {
                let reason = if forced {
                    "replace_by_request".to_owned()
                } else {
                    format!(
                        "replace_because_cannot_update: {}",
                        instance.requires_replace.join(", ")
                    )
                };
                let order = if r.lifecycle.create_before_destroy {
                    vec![Action::Create, Action::Delete]
                } else {
                    vec![Action::Delete, Action::Create]
                };
                (order, Some(reason))
            }
            // Values decide, not marks: a secret that did not change is no change.
            Some(prior) if *prior == instance.planned => (vec![Action::NoOp], None),
            Some(_) => (vec![Action::Update], None),
        };
        if r.lifecycle.prevent_destroy && actions.contains(&Action::Delete) {
            self.walk.diags.push(Diag::error(
                span,
                "Instance cannot be destroyed",
                format!("{} has lifecycle.prevent_destroy set, but the plan would destroy it ({}). Change the configuration so that it is updated in place, or remove prevent_destroy.", instance.address, reason.clone().unwrap_or_default()),
            ));
        }
        let mut change = Sides::of(instance.prior.as_ref(), Some(&instance.planned), self.salt)
            .change(&instance.address, &r.type_name, provider, actions, reason);
        change.replace_paths = instance.requires_replace.clone();
        change.dependencies = dependencies.to_vec();
        change
    }

    /// What the state knows of a resource (refreshed where it was), shaped like its
    /// configuration; unknown when it does not exist yet.
    fn prior_value(&self, config_address: &str, r: &Resource) -> Value {
        let Some(state) = self.state else {
            return Value::Unknown;
        };
        recorded(state.resources.iter(), config_address, r, |s| {
            self.refreshed
                .get(&s.address)
                .cloned()
                .flatten()
                .unwrap_or_else(|| state_value(s))
        })
    }

    /// Objects whose live state differs from the state file: changed outside gpustack.
    fn drift(&self) -> Vec<ResourceChange> {
        let Some(state) = self.state else {
            return Vec::new();
        };
        let mut drift = Vec::new();
        for r in &state.resources {
            let Some(live) = self.refreshed.get(&r.address) else {
                continue;
            };
            let recorded = state_value(r);
            if let Some(live) = live
                && encode(live, self.salt).json == r.attributes
            {
                continue;
            }
            let (action, reason) = if live.is_some() {
                (Action::Update, "changed_outside_gpustack")
            } else {
                (Action::Delete, "deleted_outside_gpustack")
            };
            let mut change = Sides::of(Some(&recorded), live.as_ref(), self.salt).change(
                &r.address,
                &r.type_name,
                &r.provider,
                vec![action],
                Some(reason.into()),
            );
            change.dependencies = r.dependencies.clone();
            drift.push(change);
        }
        drift
    }

    /// State objects the configuration no longer has: they are deleted.
    fn orphans(&mut self) {
        if self.options.mode != PlanMode::Normal {
            return;
        }
        let Some(state) = self.state else { return };
        let planned: HashSet<&str> = self.changes.iter().map(|c| c.address.as_str()).collect();
        let mut orphans = Vec::new();
        for r in &state.resources {
            let config_address = strip_instance_key(&r.address);
            if planned.contains(r.address.as_str()) || r.mode == gpustack_state::ResourceMode::Data
            {
                continue;
            }
            if self.allowed.is_some() && !targeted(&self.options.targets, &r.address) {
                continue;
            }
            let Some(live) = self.refreshed.get(&r.address) else {
                self.walk.diags.push(Diag::error(
                    None,
                    "Provider configuration not present",
                    format!("{} must be destroyed, but its provider configuration {} is no longer in the stack. Add it back to destroy the object, or forget it with gpustack state rm.", r.address, r.provider),
                ));
                continue;
            };
            let Some(live) = live else { continue };
            let reason = if self.configured.contains(&config_address) {
                "delete_because_no_instance"
            } else {
                "delete_because_no_resource_config"
            };
            orphans.push(delete_change(r, live, reason, self.salt));
        }
        self.changes.extend(orphans);
    }

    /// Every object of the state, deleted.
    fn destroy_changes(&mut self) -> Vec<ResourceChange> {
        let Some(state) = self.state else {
            return Vec::new();
        };
        let mut changes = Vec::new();
        for r in state
            .resources
            .iter()
            .filter(|r| r.mode == gpustack_state::ResourceMode::Managed)
        {
            if self.allowed.is_some() && !targeted(&self.options.targets, &r.address) {
                continue;
            }
            match self.refreshed.get(&r.address) {
                Some(Some(live)) => {
                    changes.push(delete_change(r, live, "delete_because_destroy", self.salt))
                }
                Some(None) => {}
                None => changes.push(delete_change(
                    r,
                    &state_value(r),
                    "delete_because_destroy",
                    self.salt,
                )),
            }
        }
        changes
    }

    /// By name, as Terraform lists them: the walk finishes outputs in any order.
    fn output_changes(&self) -> IndexMap<String, OutputChange> {
        let prior = self.state.map(|s| &s.outputs);
        let mut outputs: Vec<_> = self.walk.out.outputs.iter().collect();
        outputs.sort_by(|a, b| a.0.cmp(b.0));
        outputs
            .into_iter()
            .map(|(name, (value, sensitive))| {
                let encoded = encode(&output_value(value, *sensitive), self.salt);
                let (after, unknown) = (encoded.json, encoded.unknown);
                let before = prior.and_then(|p| p.get(name)).map(|o| &o.value);
                let actions = match (before, self.options.mode) {
                    (_, PlanMode::Destroy) => vec![Action::Delete],
                    (None, _) => vec![Action::Create],
                    (Some(b), _) if *b == after && unknown == serde_json::Value::Bool(false) => {
                        vec![Action::NoOp]
                    }
                    (Some(_), _) => vec![Action::Update],
                };
                (
                    name.clone(),
                    OutputChange {
                        actions,
                        after,
                        after_unknown: unknown != serde_json::Value::Bool(false),
                        sensitive: *sensitive,
                    },
                )
            })
            .collect()
    }
}

fn delete_change(r: &ResourceState, live: &Value, reason: &str, salt: &Salt) -> ResourceChange {
    let mut change = Sides::of(Some(live), None, salt).change(
        &r.address,
        &r.type_name,
        &r.provider,
        vec![Action::Delete],
        Some(reason.into()),
    );
    change.dependencies = r.dependencies.clone();
    change
}

/// A state object's attributes, its sensitive parts marked (they are digests).
pub(crate) fn state_value(r: &ResourceState) -> Value {
    Value::from_json(&r.attributes).mark_paths(&r.sensitive_paths)
}

/// A sensitive output's value is a secret as a whole.
pub(crate) fn output_value(value: &Value, sensitive: bool) -> Value {
    if sensitive {
        Value::sensitive(value.clone())
    } else {
        value.clone()
    }
}

/// What is secret about one instance: the paths of its configuration, prior state and schema
/// that are sensitive, and the texts they hold.
pub(crate) struct Secrets {
    pub(crate) paths: Vec<gpustack_protocol::Path>,
    /// The marks themselves, with the texts each hides (a template's secret line).
    marks: Vec<(gpustack_protocol::Path, Vec<String>)>,
    schema: Vec<gpustack_protocol::Path>,
    fragments: Vec<String>,
}

impl Secrets {
    pub(crate) fn of(
        prior: Option<&Value>,
        config: &Value,
        schema: &[gpustack_protocol::Path],
    ) -> Self {
        let mut marks = config.sensitive_marks();
        let mut paths = config.sensitive_paths();
        let mut fragments = config.sensitive_fragments();
        if let Some(prior) = prior {
            marks.extend(prior.sensitive_marks());
            paths.extend(prior.sensitive_paths());
            fragments.extend(
                prior
                    .sensitive_fragments()
                    .into_iter()
                    .filter(|f| !crate::sensitive::is_digest(&Value::string(f.clone()))),
            );
        }
        paths.sort();
        paths.dedup();
        Self {
            paths,
            marks,
            schema: schema.to_vec(),
            fragments,
        }
    }

    /// A provider's answer with the same parts marked, and any string that holds one of the
    /// secrets (a provider may copy a value elsewhere).
    pub(crate) fn mark(&self, value: Value) -> Value {
        let value = mark_schema(value.mark_with(&self.marks), &self.schema);
        crate::sensitive::mark_leaks(value, &self.fragments)
    }
}

/// Both sides of a change as plans hold them: sensitive where either side is.
pub(crate) struct Sides {
    pub(crate) before: serde_json::Value,
    pub(crate) after: serde_json::Value,
    pub(crate) after_unknown: serde_json::Value,
    pub(crate) before_sensitive: serde_json::Value,
    pub(crate) after_sensitive: serde_json::Value,
    pub(crate) before_masked: serde_json::Value,
    pub(crate) after_masked: serde_json::Value,
}

impl Sides {
    /// A change of these sides (no replace paths or dependencies yet).
    pub(crate) fn change(
        self,
        address: &str,
        type_name: &str,
        provider: &str,
        actions: Vec<Action>,
        action_reason: Option<String>,
    ) -> ResourceChange {
        ResourceChange {
            address: address.to_owned(),
            config_address: strip_instance_key(address),
            mode: "managed".into(),
            type_name: type_name.to_owned(),
            provider: provider.to_owned(),
            actions,
            action_reason,
            before: self.before,
            after: self.after,
            after_unknown: self.after_unknown,
            before_sensitive: self.before_sensitive,
            after_sensitive: self.after_sensitive,
            before_masked: self.before_masked,
            after_masked: self.after_masked,
            replace_paths: vec![],
            dependencies: vec![],
        }
    }

    pub(crate) fn of(before: Option<&Value>, after: Option<&Value>, salt: &Salt) -> Self {
        let mut paths: Vec<gpustack_protocol::Path> = Vec::new();
        for v in [before, after].into_iter().flatten() {
            paths.extend(v.sensitive_paths());
        }
        let side = |v: Option<&Value>| {
            v.map(|v| {
                let marked = v.clone().mark_paths(&paths);
                let masked = masked_texts(&marked, salt);
                (encode(&marked, salt), masked)
            })
        };
        let no = serde_json::Value::Bool(false);
        let (b, bm) = side(before).map_or((None, no.clone()), |(e, m)| (Some(e), m));
        let (a, am) = side(after).map_or((None, no.clone()), |(e, m)| (Some(e), m));
        Self {
            before: b
                .as_ref()
                .map_or(serde_json::Value::Null, |e| e.json.clone()),
            before_sensitive: b.as_ref().map_or(no.clone(), |e| e.sensitive.clone()),
            after: a
                .as_ref()
                .map_or(serde_json::Value::Null, |e| e.json.clone()),
            after_unknown: a.as_ref().map_or(no.clone(), |e| e.unknown.clone()),
            after_sensitive: a.as_ref().map_or(no, |e| e.sensitive.clone()),
            before_masked: bm,
            after_masked: am,
        }
    }
}

/// The resources a resource depends on, through variables, locals and outputs in between.
pub(crate) fn resource_dependencies(
    graph: &Graph,
    node: NodeIndex,
    stack: &crate::config::Stack,
) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut pending: Vec<NodeIndex> = graph
        .graph
        .neighbors_directed(node, Direction::Incoming)
        .collect();
    let mut out = Vec::new();
    while let Some(n) = pending.pop() {
        if !seen.insert(n) {
            continue;
        }
        match graph.graph[n].kind {
            NodeKind::Resource(_) => out.push(graph.graph[n].address(stack)),
            NodeKind::Provider => {}
            _ => pending.extend(graph.graph.neighbors_directed(n, Direction::Incoming)),
        }
    }
    out.sort();
    out
}
