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
use crate::configure::Configured;
use crate::diag::Diag;
use crate::evaluate::store;
use crate::evaluate::{Decl, EvalOptions, Evaluation, Inputs, Repetition};
use crate::graph::{Graph, NodeKind};
use crate::instances::{Instance, InstanceKey, assemble, expand, keep_ignored, recorded, report};
use crate::sensitive::{Salt, encode, masked_texts};
use crate::source::Span;
use futures::future::BoxFuture;
use gpustack_protocol::{
    Diagnostic, PlanResourceChangeRequest, ReadDataSourceRequest, ReadResourcesRequest, Value,
};
use gpustack_state::{ResourceState, State};
use indexmap::IndexMap;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Calls a provider configuration may have in flight when its block does not say. High enough
/// that a stack of 10,000 resources at 20 ms per call is bounded by its depth, not by this
/// limit (64 made the limit the bound: 10,000 × 20 ms / 64 = 3.1 s against a 2 s critical
/// path); an API server that is sent more than it serves answers 429 with Retry-After, which
/// the clients honour.

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
    /// Import blocks into undeclared resources write their configuration instead of failing
    /// (`--generate-config-out`).
    pub generate_config: bool,
    /// No one reads this plan before it is applied (`apply --auto-approve`): providers skip
    /// previews that only serve the plan's display.
    pub unreviewed: bool,
    /// Instance addresses imported by id as an `import` block would (`gpustack import`).
    pub imports: Vec<(String, String)>,
}

enum Outcome {
    Provider {
        handle: Option<Configured>,
        refreshed: Vec<(String, Option<Value>)>,
        /// What the refreshed objects said about GPUs, by instance address.
        refresh_facts: Vec<(String, gpustack_protocol::GpuFact)>,
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
    gpu_facts: Vec<gpustack_protocol::GpuFact>,
    /// The object comes into the state with this change.
    importing: Option<super::Importing>,
}

/// One managed instance to plan.
struct ManagedInstance<'h> {
    handle: &'h Configured,
    type_name: String,
    key: InstanceKey,
    address: String,
    prior: Option<Value>,
    config: Value,
    /// The id of an `import` block for it.
    import: Option<String>,
    /// The state records it, and the refresh found its object gone.
    vanished: bool,
    schema_paths: &'h [gpustack_protocol::Path],
    schema: &'h gpustack_protocol::Schema,
    owner: String,
    preview: bool,
}

/// A state with every attribute of its schema, unset ones null: a provider that leaves an
/// empty attribute out (an app version a chart does not have) does not plan a change.
fn conform(value: Value, schema: &gpustack_protocol::Schema) -> Value {
    match value {
        Value::Object(mut map) => {
            for name in schema.attributes.keys().chain(schema.blocks.keys()) {
                map.entry(name.clone()).or_insert(Value::Null);
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// Plans one managed instance: imports it first when an `import` block says so; refuses a
/// create whose object exists and is not this stack's, and adopts (imports) one that is.
async fn plan_managed(m: ManagedInstance<'_>) -> (PlannedInstance, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut prior = m.prior.map(|p| conform(p, m.schema));
    let mut importing = None;
    if let Some(id) = &m.import {
        match import_object(m.handle, &m.type_name, id, m.schema_paths).await {
            Ok(state) => {
                prior = Some(conform(state, m.schema));
                importing = Some(super::Importing {
                    id: id.clone(),
                    adopted: false,
                });
            }
            Err(mut d) => {
                diagnostics.append(&mut d);
                return (failed_instance(m.key, m.address), diagnostics);
            }
        }
    }
    for attempt in 0..2 {
        let secrets = Secrets::of(prior.as_ref(), &m.config, m.schema_paths);
        let response = m
            .handle
            .instance
            .plan_resource_change(PlanResourceChangeRequest {
                type_name: m.type_name.clone(),
                prior_state: prior.clone().map(|p| p.unmark_deep().0),
                config: m.config.clone().unmark_deep().0,
                for_apply: false,
                preview: m.preview,
                sensitive_paths: secrets.paths.clone(),
                owner: m.owner.clone(),
            })
            .await;
        match response.existing.filter(|_| prior.is_none()) {
            Some(existing) if existing.owned && attempt == 0 => {
                // Ours, from a run that died before recording it: adopt it and plan again.
                match import_object(m.handle, &m.type_name, &existing.import_id, m.schema_paths)
                    .await
                {
                    Ok(state) => {
                        prior = Some(conform(state, m.schema));
                        importing = Some(super::Importing {
                            id: existing.import_id,
                            adopted: true,
                        });
                        continue;
                    }
                    Err(mut d) => {
                        diagnostics.append(&mut d);
                        return (failed_instance(m.key, m.address), diagnostics);
                    }
                }
            }
            Some(existing) if !existing.owned => {
                let since = if m.vanished {
                    " The object this stack recorded is gone (deleted outside gpustack)."
                } else {
                    ""
                };
                diagnostics.push(Diagnostic::error(
                    "Object already exists",
                    format!(
                        "{address} would create {what}, which already exists and was not made by this stack: gpustack never changes or deletes an object it does not manage.{since} To manage it here, import it:\n\n  import {{\n    to = {address}\n    id = {id}\n  }}\n\nor run: gpustack import '{address}' {id}",
                        address = m.address,
                        what = existing.describe,
                        id = serde_json::Value::String(existing.import_id.clone()),
                    ),
                ));
                return (failed_instance(m.key, m.address), diagnostics);
            }
            _ => {}
        }
        diagnostics.extend(response.diagnostics);
        let planned = secrets.mark(conform(response.planned_state, m.schema));
        return (
            PlannedInstance {
                key: m.key,
                address: m.address,
                prior: prior.map(|p| secrets.mark(p.unmark_deep().0)),
                planned,
                requires_replace: response.requires_replace,
                gpu_facts: response.gpu_facts,
                importing,
            },
            diagnostics,
        );
    }
    (failed_instance(m.key, m.address), diagnostics)
}

fn failed_instance(key: InstanceKey, address: String) -> PlannedInstance {
    PlannedInstance {
        key,
        address,
        prior: None,
        planned: Value::Unknown,
        requires_replace: vec![],
        gpu_facts: vec![],
        importing: None,
    }
}

/// An object read through its provider's import, with its schema's secrets marked.
async fn import_object(
    handle: &Configured,
    type_name: &str,
    id: &str,
    schema_paths: &[gpustack_protocol::Path],
) -> Result<Value, Vec<Diagnostic>> {
    let response = handle
        .instance
        .import_resource(gpustack_protocol::ImportResourceRequest {
            type_name: type_name.to_owned(),
            id: id.to_owned(),
        })
        .await;
    match response.state {
        Some(state) if !response.diagnostics.iter().any(Diagnostic::is_error) => {
            Ok(mark_schema(state, schema_paths))
        }
        _ => {
            let mut d = response.diagnostics;
            if d.is_empty() {
                d.push(Diagnostic::error(
                    "Cannot import",
                    format!("{type_name} {id} was not found."),
                ));
            }
            Err(d)
        }
    }
}

struct Planner<'w, 'a> {
    walk: &'w mut Evaluation<'a>,
    /// This stack's mark on what it creates.
    owner: String,
    /// `import` blocks by the config address of the resource they import into.
    import_blocks: HashMap<String, Vec<&'a crate::config::Import>>,
    /// Evaluated `import` blocks: instance address → (id, block).
    imports: HashMap<String, (String, Span)>,
    /// Import blocks into resources that are not declared (`--generate-config-out`).
    missing: Vec<&'a crate::config::Import>,
    /// Instance address → the address it had before a `moved` block.
    previous: HashMap<String, String>,
    /// Where each planned instance's resource is declared, for located diagnostics.
    spans: HashMap<String, Span>,
    /// The count/for_each bindings of instances whose postconditions run once they are planned.
    repetitions: HashMap<String, Option<Repetition>>,
    /// The state's objects by identity: a create of one that the state has at another
    /// address is a rename, not a new object.
    known: HashMap<String, String>,
    /// Each configured resource's provider configuration address, by resource address.
    config_providers: HashMap<String, String>,
    /// The state's digest key (or the one the state this plan creates will have).
    salt: &'a Salt,
    /// What data sources answered, for the plan's snapshot.
    data: IndexMap<String, DataRecord>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    state: Option<&'a State>,
    options: &'a PlanOptions,
    providers: HashMap<NodeIndex, Configured>,
    /// Live states by instance address, until the instance's plan takes its own.
    refreshed: HashMap<String, Option<Value>>,
    /// Instances whose live state their plan took out of `refreshed`.
    taken: HashSet<String>,
    /// Objects changed or deleted outside gpustack, with their index in the state, found as
    /// their live states arrive (so that `refreshed` need not keep them all to the end).
    drifted: Vec<(usize, ResourceChange)>,
    /// Each state resource's index, by address.
    state_index: HashMap<&'a str, usize>,
    /// The indices of each resource block's instances in the state, in its order.
    state_by_config: HashMap<String, Vec<usize>>,
    failed: HashSet<NodeIndex>,
    /// Config addresses the plan is limited to (`--target` and their dependencies); None: all.
    allowed: Option<HashSet<NodeIndex>>,
    changes: Vec<ResourceChange>,
    /// What resources said about GPUs, by instance address, for the GPU pass.
    gpu_facts: Vec<(String, gpustack_protocol::GpuFact)>,
    /// Where each instance that reported GPU facts is configured.
    gpu_sources: super::gpu::Sources,
    /// What refreshed objects said about GPUs: the live side, for drift.
    refresh_facts: Vec<(String, gpustack_protocol::GpuFact)>,
    /// Config addresses of resources seen in configuration, for finding orphans.
    configured: HashSet<String>,
}

/// Plans a stack whose configuration is loaded and checked. Errors go to `diags`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn plan<'a>(
    walk: &mut Evaluation<'a>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    state: Option<&'a State>,
    options: &'a PlanOptions,
    snapshot: Snapshot,
    salt: &'a Salt,
    ownership: Ownership,
) -> Option<Plan> {
    let allowed = targets(walk, graph, &options.targets);
    let mut import_blocks: HashMap<String, Vec<&crate::config::Import>> = HashMap::new();
    let mut missing = Vec::new();
    for import in &walk.stack.root().imports {
        if let Some(target) = super::ownership::Target::of(&import.to, "to", walk.diags) {
            let address = target.config_address();
            let declared = walk.stack.modules.iter().any(|m| {
                m.resources
                    .values()
                    .any(|r| format!("{}{}", m.prefix(), r.local_address()) == address)
            }) || graph
                .graph
                .node_indices()
                .any(|n| graph.graph[n].address(walk.stack) == address);
            if !declared {
                if options.generate_config {
                    missing.push(import);
                } else {
                    walk.diags.push(Diag::error(
                        Some(import.to.span()),
                        "Import into a resource that is not declared",
                        format!("There is no resource block for {address}: write one for the imported object (gpustack plan --generate-config-out FILE writes it for you)."),
                    ));
                }
                continue;
            }
            import_blocks.entry(address).or_default().push(import);
        }
    }
    let previous = ownership
        .moves
        .iter()
        .map(|m| (m.to.clone(), m.from.clone()))
        .collect();
    let known = state
        .map(|s| {
            s.resources
                .iter()
                .filter_map(|r| {
                    let provider = walk
                        .registry
                        .provider(walk.registry.owner_of(&r.type_name)?)?;
                    let identity =
                        provider.identity(&r.type_name, &Value::from_json(&r.attributes))?;
                    Some((identity, r.address.clone()))
                })
                .collect()
        })
        .unwrap_or_default();
    let config_providers = graph
        .provider_of
        .iter()
        .map(|(resource, provider)| {
            (
                graph.graph[*resource].address(walk.stack),
                graph.graph[*provider].address(walk.stack),
            )
        })
        .collect();
    let mut planner = Planner {
        walk,
        known,
        config_providers,
        owner: ownership.owner,
        import_blocks,
        imports: HashMap::new(),
        missing,
        previous,
        spans: HashMap::new(),
        repetitions: HashMap::new(),
        salt,
        data: IndexMap::new(),
        graph,
        inputs,
        state,
        options,
        providers: HashMap::new(),
        refreshed: HashMap::new(),
        taken: HashSet::new(),
        drifted: Vec::new(),
        state_index: state
            .map(|s| {
                s.resources
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.address.as_str(), i))
                    .collect()
            })
            .unwrap_or_default(),
        state_by_config: state.map_or_else(HashMap::new, |s| {
            crate::instances::positions_by_config(&s.resources)
        }),
        failed: HashSet::new(),
        allowed,
        changes: Vec::new(),
        gpu_facts: Vec::new(),
        gpu_sources: Default::default(),
        refresh_facts: Vec::new(),
        configured: HashSet::new(),
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::schedule::walk(&graph.graph, &mut planner, &stop).await;
    // Check blocks see everything planned; what they cannot tell yet, apply checks.
    if options.mode == PlanMode::Normal {
        planner.walk.run_checks();
    }
    let generated = planner.generate().await;
    if planner.walk.diags.has_errors() {
        return None;
    }
    let drift = planner.drift();
    planner.orphans();
    planner.check_identities();
    let mode = options.mode;
    let mut resource_changes = match mode {
        PlanMode::Normal => std::mem::take(&mut planner.changes),
        PlanMode::Destroy => planner.destroy_changes(),
        PlanMode::RefreshOnly => Vec::new(),
    };
    planner.collateral(&mut resource_changes).await;
    // Changes finish in any order; plans read the same every time.
    resource_changes.sort_by(|a, b| a.address.cmp(&b.address));
    let mut drift = drift;
    drift.sort_by(|a, b| a.address.cmp(&b.address));
    if planner.walk.diags.has_errors() {
        return None;
    }
    let output_changes = planner.output_changes();
    let gpu = match mode {
        PlanMode::Destroy => None,
        PlanMode::Normal => {
            // The live cluster as refresh saw it, for plans that only delete GPU objects.
            let cluster = planner
                .refresh_facts
                .iter()
                .find(|(_, f)| matches!(f, gpustack_protocol::GpuFact::Cluster(_)))
                .cloned();
            planner.gpu_facts.splice(0..0, cluster);
            Some(super::gpu::pass(
                planner.walk,
                &planner.gpu_facts,
                &planner.gpu_sources,
                true,
            ))
        }
        PlanMode::RefreshOnly => Some(super::gpu::pass(
            planner.walk,
            &planner.refresh_facts,
            &planner.gpu_sources,
            false,
        )),
    };
    if planner.walk.diags.has_errors() {
        return None;
    }
    let (mut gpu_capacity, gpu_drift) =
        gpu.map_or_else(Default::default, |g| (g.capacity, g.drift));
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
        new_lineage: None,
        moved: ownership.moves,
        generated,
        resource_changes,
        resource_drift: drift,
        output_changes,
        gpu_capacity,
        gpu_drift,
        snapshot,
    })
}

/// Who the stack is and what its `moved` blocks did to the state it plans from.
pub(crate) struct Ownership {
    pub(crate) owner: String,
    pub(crate) moves: Vec<super::Move>,
}

/// The resource nodes a `--target` list selects, with everything they depend on.
fn targets(
    walk: &mut Evaluation<'_>,
    graph: &Graph,
    targets: &[String],
) -> Option<HashSet<NodeIndex>> {
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

impl crate::schedule::Steps for Planner<'_, '_> {
    type Outcome = Outcome;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Outcome>> {
        self.start_node(node)
    }

    fn finish(&mut self, node: NodeIndex, outcome: Outcome) {
        self.finish_node(node, outcome);
    }
}

/// The kind of declaration a resource block is, for [`crate::evaluate::Flows`].
fn decl_of(mode: ResourceMode) -> Decl {
    match mode {
        ResourceMode::Managed => Decl::Resource,
        ResourceMode::Data => Decl::Data,
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
                let mark = self.walk.flows.borrow().mark();
                let config = self.walk.provider(n.module, &n.key, n.span, n.implied);
                let name = n.key.split('.').next().unwrap_or_default();
                let secret = config.as_ref().is_some_and(|c| {
                    c.contains_sensitive()
                        || crate::sensitive::sets_any(
                            c,
                            &sensitive_attributes(
                                self.walk.registry.schema(name).map(|s| &s.config),
                            ),
                        )
                });
                self.walk
                    .flows
                    .borrow_mut()
                    .settle(mark, n.module, Decl::Provider, &n.key, secret);
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
                let mark = self.walk.flows.borrow().mark();
                let started = self.start_resource(node, n.module, resource);
                self.walk
                    .flows
                    .borrow_mut()
                    .settle(mark, n.module, decl_of(mode), &n.key, false);
                started
            }
        }
    }

    fn start_provider(&mut self, node: NodeIndex, config: Value) -> BoxFuture<'static, Outcome> {
        let n = &self.graph.graph[node];
        let address = n.address(self.walk.stack);
        let name = n.key.split('.').next().unwrap_or_default().to_owned();
        let factory = self.walk.registry.provider(&name).cloned();
        // The state's objects served by this configuration, grouped by type for batched reads,
        // with the paths that are sensitive in each (their values are digests).
        let mut by_type: IndexMap<String, Vec<(String, Value, Vec<gpustack_protocol::Path>)>> =
            IndexMap::new();
        if let Some(state) = self.state {
            // The provider the configuration gives a resource now (a resource moved into a
            // module has the module's), else the one that made it.
            let serves = |r: &&ResourceState| {
                self.config_providers
                    .get(&strip_instance_key(&r.address))
                    .unwrap_or(&r.provider)
                    == &address
            };
            for r in state.resources.iter().filter(serves) {
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
                    refresh_facts: vec![],
                    diagnostics: vec![Diagnostic::error("Unknown provider", name)],
                };
            };
            let handle = match crate::configure::configure(&factory, &config).await {
                Ok(handle) => handle,
                Err(diagnostics) => {
                    return Outcome::Provider {
                        handle: None,
                        refreshed: vec![],
                        refresh_facts: vec![],
                        diagnostics,
                    };
                }
            };
            let mut refreshed = Vec::new();
            let mut refresh_facts = Vec::new();
            let mut diagnostics = Vec::new();
            if refresh {
                // The states move into the requests: a refresh holds one copy of each.
                let reads = by_type.into_iter().map(|(type_name, objects)| {
                    let handle = handle.clone();
                    async move {
                        let _permit = handle.permits.acquire().await;
                        let mut addresses = Vec::with_capacity(objects.len());
                        let mut states = Vec::with_capacity(objects.len());
                        let mut sensitive_paths = Vec::with_capacity(objects.len());
                        for (address, state, paths) in objects {
                            addresses.push(address);
                            states.push(state);
                            sensitive_paths.push(paths);
                        }
                        let response = handle
                            .instance
                            .read_resources(ReadResourcesRequest {
                                type_name: type_name.clone(),
                                states,
                                sensitive_paths: sensitive_paths.clone(),
                            })
                            .await;
                        (type_name, addresses, sensitive_paths, response)
                    }
                });
                for (type_name, addresses, paths, response) in
                    futures::future::join_all(reads).await
                {
                    diagnostics.extend(response.diagnostics);
                    if response.states.len() != addresses.len() {
                        // The protocol asks one answer per state; those without one are not
                        // known, and the failed provider plans nothing for them.
                        diagnostics.push(Diagnostic::error(
                            "Incomplete refresh",
                            format!(
                                "The provider answered {} of the {} {type_name} states it was asked to read.",
                                response.states.len(),
                                addresses.len()
                            ),
                        ));
                    }
                    refresh_facts.extend(
                        response
                            .gpu_facts
                            .into_iter()
                            .filter_map(|(i, fact)| Some((addresses.get(i)?.clone(), fact))),
                    );
                    for ((address, paths), live) in
                        addresses.into_iter().zip(paths).zip(response.states)
                    {
                        // What was sensitive stays so in the live object.
                        refreshed.push((address, live.map(|v| v.mark_paths(&paths))));
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
                refresh_facts,
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
        let schema = crate::evaluate::schema_of(self.walk.registry, r).cloned();
        let Some(schema) = schema else {
            self.failed.insert(node);
            return None;
        };
        let errors_before = self.walk.diags.0.len();
        let schema_paths = sensitive_attributes(Some(&schema));
        let mark = self.walk.flows.borrow().mark();
        if r.mode == ResourceMode::Managed {
            self.evaluate_imports(&config_address);
        }
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
            self.spans.insert(address.clone(), r.span);
            if let Some(kept) = self.walk.preconditions(module, r, &address, &repetition) {
                self.repetitions.insert(address.clone(), kept);
            }
            let mut config = self
                .walk
                .decode(module, &r.body, &schema, repetition, &context);
            self.walk.provider_checks(r, &config);
            if config.contains_sensitive() || crate::sensitive::sets_any(&config, &schema_paths) {
                self.walk.flows.borrow_mut().taint_since(mark);
            }
            // Digests (a state read without refresh) give way to the configuration's values.
            // Taken, not copied: drift was noted when the live state arrived.
            let refreshed = self.refreshed.remove(&address).inspect(|_| {
                self.taken.insert(address.clone());
            });
            // In the state, but its object is gone.
            let vanished = matches!(refreshed, Some(None));
            let prior = refreshed
                .flatten()
                .map(|p| crate::sensitive::rehydrate(p, &config, self.salt));
            if let Some(prior) = &prior {
                keep_ignored(&mut config, prior, r.lifecycle());
            }
            // An `import` block for an instance the state does not have yet.
            let import = match &prior {
                None => self
                    .imports
                    .get(&address)
                    .map(|(id, _)| id.clone())
                    .or_else(|| {
                        self.options
                            .imports
                            .iter()
                            .find(|(to, _)| *to == address)
                            .map(|(_, id)| id.clone())
                    }),
                Some(_) => None,
            };
            if prior.is_none()
                && import.is_none()
                && r.mode == ResourceMode::Managed
                && let Some(other) = self.known_elsewhere(&r.type_name, &config, &address)
            {
                self.walk.diags.push(Diag::error(
                    Some(r.span),
                    "Create and destroy of one object",
                    format!("{address} would create the object that {other} already manages in this stack: the apply would take it over and then delete it under its old address. If the resource was renamed or moved, say so:\n\n  moved {{\n    from = {other}\n    to   = {address}\n  }}"),
                ));
                continue;
            }
            requests.push((key, address, prior, config, import, vanished));
        }
        if self.walk.diags.0.len() > errors_before {
            self.failed.insert(node);
            return None;
        }
        let type_name = r.type_name.clone();
        let mode = r.mode;
        let owner = self.owner.clone();
        let preview = !self.options.unreviewed;
        Some(Box::pin(async move {
            // Each instance's future borrows the resource's schema from this one.
            let (schema, schema_paths) = (&schema, &schema_paths);
            let calls =
                requests
                    .into_iter()
                    .map(|(key, address, prior, config, import, vanished)| {
                        let handle = handle.clone();
                        let type_name = type_name.clone();
                        let owner = owner.clone();
                        async move {
                            let _permit = handle.permits.acquire().await;
                            let secrets = Secrets::of(prior.as_ref(), &config, schema_paths);
                            match mode {
                                ResourceMode::Managed => {
                                    plan_managed(ManagedInstance {
                                        handle: &handle,
                                        type_name,
                                        key,
                                        address,
                                        prior,
                                        config,
                                        import,
                                        vanished,
                                        schema_paths,
                                        schema,
                                        owner,
                                        preview,
                                    })
                                    .await
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
                                            gpu_facts: vec![],
                                            importing: None,
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
                                        gpu_facts: vec![],
                                        importing: None,
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
                refresh_facts,
                diagnostics,
            } => {
                self.refresh_facts.extend(refresh_facts);
                let failed = report(self.walk.diags, span, &diagnostics);
                match handle {
                    Some(handle) if !failed => {
                        self.providers.insert(node, handle);
                    }
                    _ => {
                        self.failed.insert(node);
                    }
                }
                for (address, live) in &refreshed {
                    self.note_drift(address, live.as_ref());
                }
                self.refreshed.extend(refreshed);
            }
            Outcome::Resource {
                instances,
                diagnostics,
            } => {
                let module = &self.walk.stack.modules[n.module];
                let resource = match n.kind {
                    NodeKind::Resource(ResourceMode::Data) => &module.data[&n.key],
                    _ => &module.resources[&n.key],
                };
                // A check's data source that could not be read is unknown to its assertions,
                // which then wait rather than fail on a null.
                let unread =
                    resource.check.is_some() && diagnostics.iter().any(Diagnostic::is_error);
                let diagnostics = crate::instances::as_check_warnings(resource, diagnostics);
                let locator = crate::evaluate::locate::Locator {
                    stack: self.walk.stack,
                    sources: self.walk.sources,
                };
                let at = |attribute: &str| {
                    let path = crate::evaluate::locate::path_of_text(attribute);
                    locator
                        .path(n.module, &resource.body, &path)
                        .map(|l| l.span)
                };
                if crate::instances::report_at(self.walk.diags, span, &diagnostics, at) {
                    self.failed.insert(node);
                    return;
                }
                let mut instances = instances;
                if unread {
                    for instance in &mut instances {
                        instance.planned = Value::Unknown;
                    }
                }
                let provider = self
                    .graph
                    .provider_of
                    .get(&node)
                    .map(|p| self.graph.graph[*p].address(self.walk.stack))
                    .unwrap_or_default();
                let dependencies = resource_dependencies(self.graph, node, self.walk.stack);
                let mark = self.walk.flows.borrow().mark();
                for instance in &instances {
                    let kept = self.repetitions.remove(&instance.address);
                    self.walk.postconditions(
                        n.module,
                        resource,
                        &instance.address,
                        kept,
                        &instance.planned,
                    );
                }
                // A provider's answer may hold secrets its configuration did not (a Secret's
                // data): what the configuration read went into them.
                let secret = instances.iter().any(|i| i.planned.contains_sensitive());
                self.walk.flows.borrow_mut().settle(
                    mark,
                    n.module,
                    decl_of(resource.mode),
                    &n.key,
                    secret,
                );
                // Only what something may read is assembled: one copy fewer of every planned
                // instance of a resource nothing references. Check blocks and import blocks
                // are evaluated outside the graph, so their module's resources always are.
                let module = &self.walk.stack.modules[n.module];
                let read = !module.checks.is_empty()
                    || !module.imports.is_empty()
                    || self
                        .graph
                        .graph
                        .neighbors_directed(node, Direction::Outgoing)
                        .next()
                        .is_some();
                let value = if read {
                    assemble(
                        resource,
                        instances.iter().map(|i| (&i.key, i.planned.clone())),
                    )
                } else {
                    Value::Unknown
                };
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
                        let change = self.change_for(
                            n.module,
                            resource,
                            instance,
                            &provider,
                            &dependencies,
                            n.span,
                        );
                        if !instance.gpu_facts.is_empty() {
                            self.gpu_sources.insert(
                                instance.address.clone(),
                                (n.module, resource.local_address()),
                            );
                        }
                        self.gpu_facts.extend(
                            instance
                                .gpu_facts
                                .iter()
                                .map(|f| (instance.address.clone(), f.clone())),
                        );
                        self.changes.push(change);
                    }
                }
                store(self.walk, n.module, resource, value);
            }
        }
    }

    /// The state address that already manages the object this configuration names, when it
    /// is not `address` itself.
    fn known_elsewhere(&self, type_name: &str, config: &Value, address: &str) -> Option<String> {
        let registry = self.walk.registry;
        let provider = registry.provider(registry.owner_of(type_name)?)?;
        let identity = provider.identity(type_name, &config.clone().unmark_deep().0)?;
        self.known
            .get(&identity)
            .filter(|other| other.as_str() != address)
            .filter(|other| {
                // Still configured there: two instances of one object, reported after the walk.
                !self.configured_instance(other)
            })
            .cloned()
    }

    /// True when an instance address is also one the configuration plans (a resource block
    /// seen so far).
    fn configured_instance(&self, address: &str) -> bool {
        self.configured.contains(&strip_instance_key(address))
    }

    /// The `import` blocks into one resource, evaluated: each instance address with its id.
    fn evaluate_imports(&mut self, config_address: &str) {
        let Some(blocks) = self.import_blocks.get(config_address).cloned() else {
            return;
        };
        for import in blocks {
            for (address, id) in self.evaluate_import(import) {
                self.imports.insert(address, (id, import.span));
            }
        }
    }

    /// One `import` block's instances: (address, id) for each of its for_each elements.
    fn evaluate_import(&mut self, import: &crate::config::Import) -> Vec<(String, String)> {
        use crate::address::{Address, Key, Step};
        let mut out = Vec::new();
        {
            let repetitions: Vec<Option<crate::evaluate::Repetition>> = match &import.for_each {
                None => vec![None],
                Some(for_each) => {
                    let value = self.walk.eval(0, for_each, None);
                    let pairs: Vec<(Value, Value)> = match value.unmark_deep().0 {
                        Value::Object(map) => map
                            .into_iter()
                            .map(|(k, v)| (Value::String(k), v))
                            .collect(),
                        Value::List(items) => items
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| (Value::Number(i as f64), v))
                            .collect(),
                        _ => {
                            self.walk.diags.push(Diag::error(
                                Some(for_each.span()),
                                "Invalid for_each argument",
                                "An import block's for_each must be a map or a list known at plan time.",
                            ));
                            return out;
                        }
                    };
                    pairs
                        .into_iter()
                        .map(|(k, v)| {
                            Some(crate::evaluate::Repetition {
                                count_index: None,
                                each: Some((k, v)),
                                ..Default::default()
                            })
                        })
                        .collect()
                }
            };
            let Some(target) = super::ownership::Target::of(&import.to, "to", self.walk.diags)
            else {
                return out;
            };
            for repetition in repetitions {
                let mut steps = Vec::new();
                let mut ok = true;
                for (name, index) in &target.steps {
                    let key = match index {
                        None => None,
                        Some(expr) => {
                            let expr = crate::config::Expr {
                                expr: (*expr).clone(),
                                file: import.to.file,
                            };
                            match self.walk.eval(0, &expr, repetition.clone()).unmark_deep().0 {
                                Value::String(s) => Some(Key::Name(s)),
                                Value::Number(n) if n >= 0.0 && n.fract() == 0.0 => {
                                    Some(Key::Index(n as usize))
                                }
                                _ => {
                                    ok = false;
                                    None
                                }
                            }
                        }
                    };
                    steps.push(Step {
                        name: name.clone(),
                        key,
                    });
                }
                let id = self.walk.eval(0, &import.id, repetition.clone());
                match (ok, id.unmark_deep().0) {
                    (true, Value::String(id)) => out.push((Address(steps).to_string(), id)),
                    _ => self.walk.diags.push(Diag::error(
                        Some(import.span),
                        "Invalid import",
                        "An import block's id and the keys of its to address must be strings (or numbers, for keys) known at plan time.",
                    )),
                }
            }
        }
        out
    }

    /// `--generate-config-out`: each import block whose resource is not declared, imported
    /// through its provider and written as a resource block.
    async fn generate(&mut self) -> Vec<super::generate::Generated> {
        let mut out = Vec::new();
        let missing = std::mem::take(&mut self.missing);
        for import in missing {
            let instances = self.evaluate_import(import);
            for (address, id) in instances {
                let Ok(parsed) = crate::address::Address::parse(&address) else {
                    continue;
                };
                let [ty, name] = parsed.0.as_slice() else {
                    self.walk.diags.push(Diag::error(
                        Some(import.to.span()),
                        "Cannot generate configuration",
                        "--generate-config-out writes resources of the root module only.",
                    ));
                    continue;
                };
                let registry = self.walk.registry;
                let provider = registry.owner_of(&ty.name).map(str::to_owned);
                let handle = provider.as_deref().and_then(|p| {
                    self.graph
                        .node(0, NodeKind::Provider, p)
                        .and_then(|n| self.providers.get(&n))
                        .cloned()
                });
                let (Some(handle), Some(schema)) = (handle, registry.resource_schema(&ty.name))
                else {
                    self.walk.diags.push(Diag::error(
                        Some(import.to.span()),
                        "Cannot generate configuration",
                        format!("{address}: declare its provider block ({}) in the root module, so that the object can be read.", provider.unwrap_or_default()),
                    ));
                    continue;
                };
                let paths = sensitive_attributes(Some(schema));
                match import_object(&handle, &ty.name, &id, &paths).await {
                    Ok(state) => out.push(super::generate::Generated {
                        address,
                        text: super::generate::resource_block(
                            &ty.name, &name.name, &id, schema, &state,
                        ),
                    }),
                    Err(d) => {
                        report(self.walk.diags, Some(import.span), &d);
                    }
                }
            }
        }
        out
    }

    /// Refuses two addresses for one object (see [`super::ownership`]).
    fn check_identities(&mut self) {
        let registry = self.walk.registry;
        let identity = |c: &ResourceChange, after: bool| {
            let value = if after {
                c.after_value()
            } else {
                c.before_value()
            }?;
            let provider = registry.provider(registry.owner_of(&c.type_name)?)?;
            provider.identity(&c.type_name, &value.unmark_deep().0)
        };
        let claims =
            super::ownership::claims(&self.changes, identity, |a| self.spans.get(a).copied());
        super::ownership::check_identities(&claims, self.walk.diags);
        // A replacement created before its old object is destroyed cannot have the old one's
        // name: the create would find it taken, or take it over.
        for c in &self.changes {
            if c.actions == [Action::Create, Action::Delete]
                && let (Some(before), Some(after)) = (identity(c, false), identity(c, true))
                && before == after
            {
                self.walk.diags.push(Diag::error(
                    self.spans.get(&c.address).copied(),
                    "create_before_destroy of one object",
                    format!("{} must be replaced with create_before_destroy, but the new object would be the old one ({}): it cannot exist twice. Give the new object another name, or drop create_before_destroy.", c.address, before.replace(':', " ")),
                ));
            }
        }
    }

    fn change_for(
        &mut self,
        module: usize,
        r: &Resource,
        instance: &PlannedInstance,
        provider: &str,
        dependencies: &[String],
        span: Span,
    ) -> ResourceChange {
        let forced = self.options.replace.iter().any(|a| a == &instance.address);
        let trigger = match &instance.prior {
            Some(_) if !forced && instance.requires_replace.is_empty() => {
                self.replace_trigger(module, r, instance)
            }
            _ => None,
        };
        let (actions, reason) = match &instance.prior {
            None => (vec![Action::Create], None),
            Some(_) if !instance.requires_replace.is_empty() || forced || trigger.is_some() => {
                let reason = if forced {
                    "replace_by_request".to_owned()
                } else if let Some(by) = &trigger {
                    format!("replace_by_triggers: {by}")
                } else {
                    format!(
                        "replace_because_cannot_update: {}",
                        instance.requires_replace.join(", ")
                    )
                };
                let order = if r.lifecycle().create_before_destroy {
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
        if r.lifecycle().prevent_destroy && actions.contains(&Action::Delete) {
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
        change.importing = instance.importing.clone();
        change.previous_address = self.previous.get(&instance.address).cloned();
        change
    }

    /// The first `replace_triggered_by` entry of `r` whose target is planned to change, as
    /// written; None when none is. A whole instance triggers with any change; an attribute
    /// when its value changes or will only be known after apply.
    fn replace_trigger(
        &mut self,
        module: usize,
        r: &Resource,
        instance: &PlannedInstance,
    ) -> Option<String> {
        let prefix = self.walk.stack.modules[module].prefix();
        for expr in &r.lifecycle().replace_triggered_by {
            let Some(target) = crate::config::load::trigger_target(&expr.expr) else {
                continue;
            };
            let resource = format!("{prefix}{}", target.resource);
            let address = match target.key {
                None => None,
                Some(key) => {
                    let repetition = match &instance.key {
                        InstanceKey::Single => None,
                        InstanceKey::Index(i) => Some(crate::evaluate::Repetition {
                            count_index: Some(Value::Number(*i as f64)),
                            ..Default::default()
                        }),
                        InstanceKey::Key(k) => Some(crate::evaluate::Repetition {
                            each: Some((Value::String(k.clone()), Value::Unknown)),
                            ..Default::default()
                        }),
                    };
                    let key_expr = crate::config::Expr {
                        expr: key.clone(),
                        file: expr.file,
                    };
                    match self.walk.eval(module, &key_expr, repetition) {
                        Value::Number(n) if n >= 0.0 && n.fract() == 0.0 => {
                            Some(format!("{resource}[{}]", n as usize))
                        }
                        Value::String(k) => Some(format!("{resource}[{}]", Value::String(k))),
                        _ => continue,
                    }
                }
            };
            let changed = self.changes.iter().any(|c| {
                let named = match &address {
                    Some(a) => c.address == *a,
                    None => {
                        c.address == resource
                            || c.address
                                .strip_prefix(resource.as_str())
                                .is_some_and(|rest| rest.starts_with('['))
                    }
                };
                named
                    && if target.attribute.is_empty() {
                        !c.actions.iter().all(|a| *a == Action::NoOp)
                    } else {
                        attribute_changes(c, &target.attribute)
                    }
            });
            if changed {
                let text = self.walk.sources.snippet(expr.span()).trim();
                return Some(if text.is_empty() {
                    resource
                } else {
                    text.to_owned()
                });
            }
        }
        None
    }

    /// What the state knows of a resource (refreshed where it was), shaped like its
    /// configuration; unknown when it does not exist yet.
    fn prior_value(&self, config_address: &str, r: &Resource) -> Value {
        let Some(state) = self.state else {
            return Value::Unknown;
        };
        let instances = self
            .state_by_config
            .get(config_address)
            .into_iter()
            .flatten();
        recorded(
            instances.map(|&i| &state.resources[i]),
            config_address,
            r,
            |s| {
                self.refreshed
                    .get(&s.address)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| state_value(s))
            },
        )
    }

    /// Notes an object whose live state differs from the state file: changed outside
    /// gpustack.
    fn note_drift(&mut self, address: &str, live: Option<&Value>) {
        let (Some(state), Some(&index)) = (self.state, self.state_index.get(address)) else {
            return;
        };
        let r = &state.resources[index];
        if let Some(live) = live
            && encode(live, self.salt).json == r.attributes
        {
            return;
        }
        let recorded = state_value(r);
        let (action, reason) = if live.is_some() {
            (Action::Update, "changed_outside_gpustack")
        } else {
            (Action::Delete, "deleted_outside_gpustack")
        };
        let mut change = Sides::of(Some(&recorded), live, self.salt).change(
            &r.address,
            &r.type_name,
            &r.provider,
            vec![action],
            Some(reason.into()),
        );
        change.dependencies = r.dependencies.clone();
        self.drifted.push((index, change));
    }

    /// Objects whose live state differs from the state file, in the state's order.
    fn drift(&mut self) -> Vec<ResourceChange> {
        let mut drifted = std::mem::take(&mut self.drifted);
        drifted.sort_by_key(|(index, _)| *index);
        drifted.into_iter().map(|(_, change)| change).collect()
    }

    /// State objects the configuration no longer has: they are deleted.
    fn orphans(&mut self) {
        if self.options.mode != PlanMode::Normal {
            return;
        }
        let Some(state) = self.state else { return };
        let removals = self.removals();
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
            // `removed { lifecycle { destroy = false } }`: out of the state, left as it is.
            if let Ok(address) = crate::address::Address::parse(&r.address)
                && removals.iter().any(|from| address.starts_with(from))
            {
                let recorded = state_value(r);
                let mut change = Sides::of(Some(&recorded), None, self.salt).change(
                    &r.address,
                    &r.type_name,
                    &r.provider,
                    vec![Action::Forget],
                    None,
                );
                change.dependencies = r.dependencies.clone();
                orphans.push(change);
                continue;
            }
            // Its configuration planned it (and took its live state).
            if self.taken.contains(&r.address) {
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
            // What the deleted object meant for GPUs goes with it (a node leaves a sharing
            // config when its label resource is removed).
            let removed: Vec<_> = self
                .refresh_facts
                .iter()
                .filter(|(address, _)| *address == r.address)
                .filter_map(|(address, fact)| Some((address.clone(), fact.removed()?)))
                .collect();
            self.gpu_facts.extend(removed);
            let reason = if self.configured.contains(&config_address) {
                "delete_because_no_instance"
            } else {
                "delete_because_no_resource_config"
            };
            orphans.push(delete_change(r, live, reason, self.salt));
        }
        self.changes.extend(orphans);
    }

    /// The addresses `removed` blocks forget (those with `destroy = false`); one whose
    /// resource is still configured is an error.
    fn removals(&mut self) -> Vec<crate::address::Address> {
        let mut out = Vec::new();
        let stack = self.walk.stack;
        for module in &stack.modules {
            let prefix = module.prefix();
            for removed in module.removals.iter().filter(|r| !r.destroy) {
                let Some(target) =
                    super::ownership::Target::of(&removed.from, "from", self.walk.diags)
                else {
                    continue;
                };
                let local = target.config_address();
                let full = format!("{prefix}{local}");
                if self.configured.contains(&full) {
                    self.walk.diags.push(Diag::error(
                        Some(removed.span),
                        "Removed resource is still configured",
                        format!("This removed block forgets {full}, but its resource block is still in the stack: delete the resource block too, or drop the removed block."),
                    ));
                    continue;
                }
                match target.literal() {
                    Some(local) => {
                        let mut address =
                            crate::address::Address::parse(prefix.trim_end_matches('.'))
                                .map(|a| a.0)
                                .unwrap_or_default();
                        address.extend(local.0);
                        out.push(crate::address::Address(address));
                    }
                    None => self.walk.diags.push(Diag::error(
                        Some(removed.from.span()),
                        "Invalid address",
                        "The instance keys of a removed block must be literal strings or numbers.",
                    )),
                }
            }
        }
        out
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
            let mut change = match self.refreshed.get(&r.address) {
                Some(Some(live)) => delete_change(r, live, "delete_because_destroy", self.salt),
                Some(None) => continue,
                None => delete_change(r, &state_value(r), "delete_because_destroy", self.salt),
            };
            // Destroyed through the provider the configuration gives it now.
            if let Some(provider) = self.config_providers.get(&strip_instance_key(&r.address)) {
                change.provider = provider.clone();
            }
            changes.push(change);
        }
        changes
    }

    /// Asks the provider of every planned deletion (a replacement's too) what it takes with
    /// it, all at once: the answer goes into the change, and a deletion that would take what
    /// the stack did not say it may is an error at its resource block.
    async fn collateral(&mut self, changes: &mut [ResourceChange]) {
        let handles: HashMap<String, Configured> = self
            .providers
            .iter()
            .map(|(node, handle)| {
                (
                    self.graph.graph[*node].address(self.walk.stack),
                    handle.clone(),
                )
            })
            .collect();
        let owner = self.owner.clone();
        let managed: Arc<[String]> = self.known.keys().cloned().collect();
        let asks = changes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.actions.contains(&Action::Delete))
            .filter_map(|(i, c)| {
                let handle = handles.get(&c.provider)?.clone();
                let prior = c.before_value()?.unmark_deep().0;
                let request = gpustack_protocol::PlanDeleteRequest {
                    type_name: c.type_name.clone(),
                    prior_state: prior,
                    owner: owner.clone(),
                    managed: managed.clone(),
                };
                Some(async move {
                    let _permit = handle.permits.acquire().await;
                    (i, handle.instance.plan_delete(request).await)
                })
            });
        for (i, response) in futures::future::join_all(asks).await {
            let change = &mut changes[i];
            let span = self
                .spans
                .get(&change.address)
                .copied()
                .or_else(|| resource_span(self.walk.stack, &change.config_address));
            let diagnostics: Vec<Diagnostic> = response
                .diagnostics
                .into_iter()
                .map(|mut d| {
                    d.detail = format!("{}: {}", change.address, d.detail);
                    d
                })
                .collect();
            report(self.walk.diags, span, &diagnostics);
            change.collateral = response.collateral.filter(|c| !c.is_empty());
        }
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

/// Whether a planned change alters the attribute at `path`: a new value, or one only apply
/// will know.
fn attribute_changes(change: &ResourceChange, path: &[String]) -> bool {
    let at = |mut v: &serde_json::Value| {
        for step in path {
            v = v.get(step)?;
        }
        Some(v.clone())
    };
    let unknown = {
        let mut v = &change.after_unknown;
        let mut unknown = v == &serde_json::Value::Bool(true);
        for step in path {
            if unknown {
                break;
            }
            match v.get(step) {
                Some(next) => {
                    v = next;
                    unknown = v == &serde_json::Value::Bool(true);
                }
                None => break,
            }
        }
        unknown
    };
    unknown || at(&change.before) != at(&change.after)
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

/// Where the resource block of a config address is, if the stack still has one.
fn resource_span(stack: &crate::config::Stack, config_address: &str) -> Option<Span> {
    stack.modules.iter().find_map(|m| {
        let prefix = m.prefix();
        let local = config_address.strip_prefix(prefix.as_str())?;
        m.resources
            .values()
            .find(|r| r.local_address() == local)
            .map(|r| r.span)
    })
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
    pub(crate) before: std::sync::Arc<serde_json::Value>,
    pub(crate) after: std::sync::Arc<serde_json::Value>,
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
            importing: None,
            previous_address: None,
            collateral: None,
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
        // (json, sensitive, unknown, masked) of one side.
        let parts = |side: Option<(crate::sensitive::Encoded, serde_json::Value)>| match side {
            Some((e, masked)) => (std::sync::Arc::new(e.json), e.sensitive, e.unknown, masked),
            None => (
                std::sync::Arc::new(serde_json::Value::Null),
                no.clone(),
                no.clone(),
                no.clone(),
            ),
        };
        let (before_json, before_sensitive, before_unknown, before_masked) = parts(side(before));
        // An unchanged object is held once, for both sides.
        let (after_json, after_sensitive, after_unknown, after_masked) =
            if before.is_some() && before == after {
                (
                    before_json.clone(),
                    before_sensitive.clone(),
                    before_unknown,
                    before_masked.clone(),
                )
            } else {
                parts(side(after))
            };
        Self {
            before: before_json,
            before_sensitive,
            after: after_json,
            after_unknown,
            after_sensitive,
            before_masked,
            after_masked,
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
