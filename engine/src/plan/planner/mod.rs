//! The plan walk: the graph in dependency order, concurrently. Expressions are evaluated on the
//! walk's own task (they are fast and need the scope); provider calls run as futures, bounded
//! per provider configuration, and a node starts as soon as its dependencies have finished.
//!
//! **Invariant:** the walk performs no I/O itself: reads and plans go through providers.

use super::{
    Action, DataRecord, OutputChange, Plan, ResourceChange, Snapshot, config_hash, mark_schema,
    sensitive_attributes,
};
use crate::configure::Configured;
use crate::evaluate::store;
use crate::evaluate::{Decl, EvalContext, EvalOptions, Inputs, Repetition};
use crate::graph::{Graph, NodeKind};
use crate::instances::{Instance, InstanceKey, assemble, expand, keep_ignored, recorded, report};
use crate::sensitive::{Salt, encode, masked_texts};
use futures::future::BoxFuture;
use gpustack_lang::config::{Resource, ResourceMode};
use gpustack_lang::diag::Diag;
use gpustack_lang::source::Span;
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

mod orphan;
mod outputs;
mod provider;
mod resource;
mod runs;

use resource::PlannedInstance;

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
    /// The plan is only shown (`plan` without `-out`): of a stack with no state yet, what
    /// providers choose at random is unknown, since the secret their seed comes from is made
    /// with the state.
    pub speculative: bool,
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

struct Planner<'w, 'a> {
    eval: &'w mut EvalContext<'a>,
    /// This stack's mark on what it creates.
    owner: String,
    /// `import` blocks by the config address of the resource they import into.
    import_blocks: HashMap<String, Vec<&'a gpustack_lang::config::Import>>,
    /// Evaluated `import` blocks: instance address → (id, block).
    imports: HashMap<String, (String, Span)>,
    /// Import blocks into resources that are not declared (`--generate-config-out`).
    missing: Vec<&'a gpustack_lang::config::Import>,
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
    /// What planned changes make that others may need (a namespace), by key: every
    /// instance that makes it.
    makers: HashMap<String, Vec<(NodeIndex, String)>>,
    /// The resource blocks with an instance that changes: what may make what no provider
    /// reports (a chart's own Namespace, a command).
    changing: HashSet<NodeIndex>,
    /// What planned changes need that is missing now, with where each is configured.
    needs: Vec<(NodeIndex, String, Span, gpustack_protocol::Prerequisite)>,
}

// Long by design: the plan's phases in their order (walk, checks, orphans, collateral, the
// GPU pass, the snapshot), each a call of its own.
/// Plans a stack whose configuration is loaded and checked. Errors go to `diags`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn make_plan<'a>(
    walk: &mut EvalContext<'a>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    state: Option<&'a State>,
    options: &'a PlanOptions,
    snapshot: Snapshot,
    salt: &'a Salt,
    ownership: Ownership,
) -> Option<Plan> {
    let allowed = targets(walk, graph, &options.targets);
    let (import_blocks, missing) = import_blocks(walk, graph, options);
    let previous = ownership
        .moves
        .iter()
        .map(|m| (m.to.clone(), m.from.clone()))
        .collect();
    let known = known_objects(walk, state);
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
        eval: walk,
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
        makers: HashMap::new(),
        changing: HashSet::new(),
        needs: Vec::new(),
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::schedule::run(&graph.graph, &mut planner, &stop).await;
    // Check blocks see everything planned; what they cannot tell yet, apply checks.
    if options.mode == PlanMode::Normal {
        planner.eval.run_checks();
    }
    let generated = planner.generate().await;
    if planner.eval.diags.has_errors() {
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
    if planner.eval.diags.has_errors() {
        return None;
    }
    let output_changes = planner.output_changes();
    // Reported with the GPU pass's findings: a plan that fails for both says both.
    planner.check_order();
    let gpu = planner.gpu_pass(mode);
    if planner.eval.diags.has_errors() {
        return None;
    }
    let (mut gpu_capacity, gpu_drift, gpu_disruption) =
        gpu.map_or_else(Default::default, |g| (g.capacity, g.drift, g.disruption));
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
        timestamp: gpustack_lang::expr::functions::plan_timestamp(),
        workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
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
        gpu_disruption,
        snapshot,
    })
}

/// The root module's `import` blocks by the config address they import into, and those into
/// resources that are not declared (written by `--generate-config-out`, else errors).
fn import_blocks<'a>(
    walk: &mut EvalContext<'a>,
    graph: &Graph,
    options: &PlanOptions,
) -> (
    HashMap<String, Vec<&'a gpustack_lang::config::Import>>,
    Vec<&'a gpustack_lang::config::Import>,
) {
    let mut import_blocks: HashMap<String, Vec<&gpustack_lang::config::Import>> = HashMap::new();
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
    (import_blocks, missing)
}

/// The state's objects by identity, each with its address: a create of one that the state
/// has at another address is a rename, not a new object.
fn known_objects(walk: &EvalContext<'_>, state: Option<&State>) -> HashMap<String, String> {
    state
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
        .unwrap_or_default()
}

impl Planner<'_, '_> {
    /// What each planned change needs made first (a namespace), against what the plan makes
    /// and in which order apply takes them: missing altogether, or made only after, is an
    /// error (apply would fail); made by a change nothing orders first is a warning (apply
    /// may meet it or not).
    fn check_order(&mut self) {
        let before = |from: NodeIndex, to: NodeIndex| {
            from != to && petgraph::algo::has_path_connecting(&self.graph.graph, from, to, None)
        };
        for (node, address, span, need) in std::mem::take(&mut self.needs) {
            let describe = &need.describe;
            let makers = self.makers.get(&need.key).map_or(&[][..], Vec::as_slice);
            if makers.is_empty() {
                // A change it depends on may make it without saying so (a chart's own
                // Namespace, a command): then apply may still work.
                let unreported = self.changing.iter().copied().find(|&m| before(m, node));
                let detail = match unreported {
                    Some(m) => format!(
                        "{address} needs {describe}, which does not exist, and no change of this plan says it makes it: apply fails unless {} (applied before it) makes it.",
                        self.graph.graph[m].address(self.eval.stack)
                    ),
                    None => format!(
                        "{address} needs {describe}, which does not exist, and nothing in this plan makes it: apply would fail. Make it in this stack (and have {address} depend on it) or before the apply."
                    ),
                };
                self.eval.diags.push(if unreported.is_some() {
                    Diag::warning(Some(span), "Needs what nothing makes", detail)
                } else {
                    Diag::error(Some(span), "Needs what nothing makes", detail)
                });
                continue;
            }
            if makers.iter().any(|(m, _)| *m == node || before(*m, node)) {
                continue;
            }
            let unordered = makers.iter().find(|(m, _)| !before(node, *m));
            match unordered {
                Some((_, made_by)) => {
                    let maker_block = strip_instance_key(made_by);
                    self.eval.diags.push(Diag::warning(
                        Some(span),
                        "Nothing orders what it needs first",
                        format!("{address} needs {describe}, which {made_by} makes, but nothing orders {made_by} first: apply may reach {address} before it. Add depends_on = [{maker_block}]."),
                    ));
                }
                None => {
                    let made_by = &makers[0].1;
                    self.eval.diags.push(Diag::error(
                        Some(span),
                        "Applied before what it needs",
                        format!("{address} needs {describe}, which {made_by} makes, but {made_by} applies after {address} (it depends on it): apply would fail. Make {describe} a resource of its own that both depend on."),
                    ));
                }
            }
        }
    }

    /// The GPU model's pass over what the plan found: the planned objects' facts (with the
    /// live cluster as refresh saw it, for plans that only delete GPU objects), or in a
    /// refresh-only plan the live ones; none for a destroy.
    fn gpu_pass(&mut self, mode: PlanMode) -> Option<super::gpu::Outcome> {
        // The live cluster as refresh saw it, for plans that only delete GPU objects.
        let cluster = self
            .refresh_facts
            .iter()
            .find(|(_, f)| matches!(f, gpustack_protocol::GpuFact::Cluster(_)))
            .cloned();
        match mode {
            // Only what the deletions take from live nodes (a pool's nodes and their pods).
            PlanMode::Destroy => {
                self.gpu_facts.splice(0..0, cluster);
                Some(super::gpu::disruptions(&self.gpu_facts))
            }
            PlanMode::Normal => {
                self.gpu_facts.splice(0..0, cluster);
                Some(super::gpu::pass(
                    self.eval,
                    &self.gpu_facts,
                    &self.gpu_sources,
                    true,
                ))
            }
            PlanMode::RefreshOnly => Some(super::gpu::pass(
                self.eval,
                &self.refresh_facts,
                &self.gpu_sources,
                false,
            )),
        }
    }
}

/// Who the stack is and what its `moved` blocks did to the state it plans from.
pub(crate) struct Ownership {
    pub(crate) owner: String,
    pub(crate) moves: Vec<super::Move>,
}

/// The resource nodes a `--target` list selects, with everything they depend on.
fn targets(
    walk: &mut EvalContext<'_>,
    graph: &Graph,
    targets: &[String],
) -> Option<HashSet<NodeIndex>> {
    if targets.is_empty() {
        return None;
    }
    let mut selected = Vec::new();
    for target in targets {
        let config_address = gpustack_lang::address::Address::parse(&strip_instance_key(target));
        let found: Vec<NodeIndex> = graph
            .graph
            .node_indices()
            .filter(|&n| matches!(graph.graph[n].kind, NodeKind::Resource(_)))
            .filter(|&n| {
                let address =
                    gpustack_lang::address::Address::parse(&graph.graph[n].address(walk.stack));
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

pub(crate) use gpustack_lang::address::strip_instance_key;

/// True when a `--target` names this instance, its resource or a module it is in.
fn targeted(targets: &[String], address: &str) -> bool {
    use gpustack_lang::address::Address;
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
        let errors_before = self.eval.diags.error_count();
        match n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                self.eval
                    .step_value(self.graph, node, self.inputs, EvalOptions::default());
                None
            }
            NodeKind::Provider => {
                let mark = self.eval.flows.borrow().mark();
                let config = self.eval.provider(n.module, &n.key, n.span, n.implied);
                let name = n.key.split('.').next().unwrap_or_default();
                let secret = config.as_ref().is_some_and(|c| {
                    c.contains_sensitive()
                        || crate::sensitive::sets_any(
                            c,
                            &sensitive_attributes(self.eval.registry.config_schema(name)),
                        )
                });
                self.eval
                    .flows
                    .borrow_mut()
                    .settle(mark, n.module, Decl::Provider, &n.key, secret);
                if self.eval.diags.error_count() > errors_before || config.is_none() {
                    self.failed.insert(node);
                    return None;
                }
                Some(self.start_provider(node, config.unwrap_or_default()))
            }
            NodeKind::Resource(mode) => {
                let module = &self.eval.stack.modules[n.module];
                let resource = match mode {
                    ResourceMode::Managed => &module.resources[&n.key],
                    ResourceMode::Data => &module.data[&n.key],
                };
                let mark = self.eval.flows.borrow().mark();
                let started = self.start_resource(node, n.module, resource);
                self.eval
                    .flows
                    .borrow_mut()
                    .settle(mark, n.module, decl_of(mode), &n.key, false);
                started
            }
        }
    }

    fn finish_node(&mut self, node: NodeIndex, outcome: Outcome) {
        match outcome {
            Outcome::Provider {
                handle,
                refreshed,
                refresh_facts,
                diagnostics,
            } => self.finish_provider(node, handle, refreshed, refresh_facts, diagnostics),
            Outcome::Resource {
                instances,
                diagnostics,
            } => self.finish_resource(node, instances, diagnostics),
        }
    }

    /// Refuses two addresses for one object (see [`super::ownership`]).
    fn check_identities(&mut self) {
        let registry = self.eval.registry;
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
        super::ownership::check_identities(&claims, self.eval.diags);
        // A replacement created before its old object is destroyed cannot have the old one's
        // name: the create would find it taken, or take it over.
        for c in &self.changes {
            if c.actions == [Action::Create, Action::Delete]
                && let (Some(before), Some(after)) = (identity(c, false), identity(c, true))
                && before == after
            {
                self.eval.diags.push(Diag::error(
                    self.spans.get(&c.address).copied(),
                    "create_before_destroy of one object",
                    format!("{} must be replaced with create_before_destroy, but the new object would be the old one ({}): it cannot exist twice. Give the new object another name, or drop create_before_destroy.", c.address, before.replace(':', " ")),
                ));
            }
        }
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

/// Where the resource block of a config address is, if the stack still has one.
fn resource_span(stack: &gpustack_lang::config::Stack, config_address: &str) -> Option<Span> {
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
            runs: vec![],
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
    stack: &gpustack_lang::config::Stack,
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
