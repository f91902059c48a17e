//! Applying a plan: the configuration snapshot is walked again in dependency order; each
//! instance's planned change is finalised with the values now known and carried out through
//! its provider; deletions of objects the configuration no longer has run last, dependents
//! first.
//!
//! **Invariant:** the state is written after every completed change, so a crash loses at most
//! the changes in flight, which the next run adopts (creates are idempotent by identity).
//! **Invariant:** apply evaluates only the plan's own snapshot — its configuration, variables,
//! file reads and data-source answers — never the working tree; what the plan keeps only as a
//! digest (a secret) is supplied or read again and checked against it.
//! **Invariant:** a change is carried out only as planned: the provider's final plan must keep
//! every value the saved plan knew and the action it chose ("inconsistent final plan").
//! **Invariant:** nothing is done without the state lock: the lock's fence is checked just
//! before every provider call (configure, read, plan, apply, each step of a replacement) and
//! every state write; once it is lost no call starts and the state is not written (the
//! changes done are in the report's state, which the caller keeps elsewhere)
//! (`world::backends::*_a_paused_holder_that_lost_its_lock_stops_and_writes_no_state`).

use crate::config::{Files, Resource, ResourceMode};
use crate::diag::Diag;
use crate::evaluate::store;
use crate::evaluate::{EvalOptions, Evaluation, Inputs, Repetition};
use crate::graph::{Graph, NodeKind};
use crate::instances::{Instance, InstanceKey, assemble, expand, keep_ignored, recorded, report};
use crate::plan::{Action, Plan, PlanMode, ResourceChange, sensitive_attributes};
use crate::progress::Progress;
use crate::schedule::{Steps, walk};
use crate::sensitive::{Salt, encode};
use crate::source::{SourceMap, Span};
use crate::{InputSource, Session};
use futures::future::BoxFuture;
use gpustack_protocol::Registry;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, PlanResourceChangeRequest,
    Provider, Value,
};
use gpustack_state::{Fence, OutputState, ResourceState, State};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::sync::Semaphore;

/// Writes the state somewhere durable; called after every change.
pub type Persist<'p> = &'p mut (dyn FnMut(&State) -> Result<(), String> + Send);

/// What stops an apply. `stop` (Ctrl-C, a failed state write) lets the operations in flight
/// finish and starts no new graph node; `fence` is the state lock's: once it is lost, no
/// provider call starts, even within a node, and the state is not written.
#[derive(Clone)]
pub struct Halt {
    pub stop: Arc<AtomicBool>,
    pub fence: Arc<Fence>,
}

/// The error of a provider call that was not made: the lock is gone.
fn lock_lost(what: &str) -> Diagnostic {
    Diagnostic::error(
        "State lock lost",
        format!(
            "This run no longer holds the state lock, so {what} was not done. Nothing more is started; plan again once the lock is free."
        ),
    )
}

pub struct ApplyReport {
    pub state: State,
    /// Whether `state` holds changes that were not written to the backend (a write failed,
    /// or was refused because the lock was lost).
    pub unsaved: bool,
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
    pub counts: Counts,
    /// Every change carried out, in the order it finished, with its errors.
    pub results: Vec<ChangeResult>,
}

/// How one instance's change went (for reports such as JUnit).
#[derive(Debug, Clone)]
pub struct ChangeResult {
    pub address: String,
    pub type_name: String,
    pub actions: Vec<Action>,
    /// "summary: detail" of each error; empty when the change succeeded.
    pub errors: Vec<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub imported: usize,
    pub added: usize,
    pub changed: usize,
    pub destroyed: usize,
    pub forgotten: usize,
}

#[derive(Clone)]
struct Handle {
    instance: Arc<dyn Provider>,
    /// Checked just before each call through `instance`.
    fence: Arc<Fence>,
    permits: Arc<Semaphore>,
    progress: Arc<Progress>,
    /// This stack's mark, set on what is created.
    owner: Arc<str>,
}

/// What one instance's change came to.
struct Done {
    /// The change carried out; None for data sources and instances outside the plan.
    change: Option<ResourceChange>,
    /// The object afterwards: None when it no longer exists.
    new_state: Option<Value>,
    /// Whether `new_state` replaces what the state records (false when nothing was done).
    touched: bool,
    diagnostics: Vec<Diagnostic>,
}

enum Outcome {
    Provider(Result<Handle, Vec<Diagnostic>>),
    Resource(Vec<(InstanceKey, Done)>),
}

/// The state and everything that writes to it, shared by both phases of an apply.
struct Ledger<'s, 'p> {
    state: &'s mut State,
    salt: Salt,
    persist: Persist<'p>,
    counts: Counts,
    diags: Vec<Diag>,
    results: Vec<ChangeResult>,
    /// Changes recorded and not yet written.
    dirty: bool,
    /// A new state not written yet: it is, before the first object is changed.
    fresh: bool,
    /// When the state was last written, for [`Ledger::flush_soon`].
    last_save: Option<std::time::Instant>,
    slots: Slots,
    fence: Arc<Fence>,
    /// Changes were recorded that no write has saved.
    unsaved: bool,
}

/// Where each object is in `State::resources`, so that recording each of thousands of changes
/// costs constant time instead of a scan of the state.
///
/// **Invariant:** `by_address` names the one live entry of each address. An entry no address
/// names (deleted or replaced) stays where it is until [`Ledger::compact`], before the next
/// write, so that the others keep their order.
struct Slots {
    by_address: HashMap<String, usize>,
    /// The slots of each resource block's instances, in the state's order; a slot that is no
    /// longer live is skipped when read.
    by_config: HashMap<String, Vec<usize>>,
    stale: bool,
}

impl Slots {
    /// The first entry of an address is the live one, as a scan of the state would find it.
    fn of(state: &State) -> Self {
        Self {
            by_address: state.positions(),
            by_config: crate::instances::positions_by_config(&state.resources),
            stale: false,
        }
    }

    /// A new address's entry, at `slot`.
    fn insert(&mut self, address: &str, slot: usize) {
        self.by_address.insert(address.to_owned(), slot);
        self.by_config
            .entry(crate::address::strip_instance_key(address))
            .or_default()
            .push(slot);
    }

    fn is_live(&self, slot: usize, r: &ResourceState) -> bool {
        self.by_address.get(&r.address) == Some(&slot)
    }
}

/// How long recorded changes may wait for the next state write while the apply goes on.
/// Writing the whole state after every one of thousands of changes costs time quadratic in
/// the state's size; an object created in the moments before a crash carries the stack's
/// mark, and the next plan adopts it.
const PERSIST_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

impl Ledger<'_, '_> {
    /// The object's sensitive parts are kept as digests, their paths beside them.
    fn record(&mut self, done: &Done, dependencies: &[String]) {
        let Some(change) = &done.change else { return };
        if done.touched || done.diagnostics.iter().any(Diagnostic::is_error) {
            self.results.push(ChangeResult {
                address: change.address.clone(),
                type_name: change.type_name.clone(),
                actions: change.actions.clone(),
                errors: done
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| format!("{}: {}", d.summary, d.detail))
                    .collect(),
            });
        }
        if done.touched {
            match &done.new_state {
                Some(new_state) => {
                    let encoded = encode(new_state, &self.salt);
                    self.put(crate::sensitive::state_entry(
                        &change.address,
                        &change.type_name,
                        &change.provider,
                        encoded.json,
                        &encoded.sensitive,
                        dependencies.to_vec(),
                    ));
                }
                None => self.remove(&change.address),
            }
            if done.diagnostics.iter().all(|d| !d.is_error()) {
                if change.importing.is_some() {
                    self.counts.imported += 1;
                }
                for action in &change.actions {
                    match action {
                        Action::Create => self.counts.added += 1,
                        Action::Update => self.counts.changed += 1,
                        Action::Delete => self.counts.destroyed += 1,
                        Action::Forget => self.counts.forgotten += 1,
                        Action::NoOp | Action::Read => {}
                    }
                }
            }
            self.dirty = true;
        }
    }

    /// Writes a new state before the first change, so that the lineage the change marks its
    /// object with is on record when the object exists.
    fn before_first_change(&mut self) {
        // Without the lock no change will be made (each provider call checks the fence).
        if self.fresh && !self.fence.is_lost() {
            self.fresh = false;
            self.save();
        }
    }

    /// Writes what was recorded since the last write. Called once per finished node, so that
    /// the thousand instances of one `for_each` cost one write, not a thousand.
    fn flush(&mut self) {
        if self.dirty {
            self.save();
        }
    }

    /// Writes what was recorded if the last write is [`PERSIST_INTERVAL`] old; the apply's
    /// last [`Ledger::flush`] writes the rest.
    fn flush_soon(&mut self) {
        if self
            .last_save
            .is_none_or(|at| at.elapsed() >= PERSIST_INTERVAL)
        {
            self.flush();
        }
    }

    fn get(&self, address: &str) -> Option<&ResourceState> {
        self.slots
            .by_address
            .get(address)
            .map(|&slot| &self.state.resources[slot])
    }

    fn get_mut(&mut self, address: &str) -> Option<&mut ResourceState> {
        self.slots
            .by_address
            .get(address)
            .map(|&slot| &mut self.state.resources[slot])
    }

    /// The recorded instances of a resource block, in the state's order.
    fn instances<'l>(&'l self, config_address: &str) -> impl Iterator<Item = &'l ResourceState> {
        self.slots
            .by_config
            .get(config_address)
            .into_iter()
            .flatten()
            .filter_map(|&slot| {
                let r = &self.state.resources[slot];
                self.slots.is_live(slot, r).then_some(r)
            })
    }

    fn put(&mut self, entry: ResourceState) {
        match self.get_mut(&entry.address) {
            Some(existing) => *existing = entry,
            None => {
                let slot = self.state.resources.len();
                self.slots.insert(&entry.address, slot);
                self.state.resources.push(entry);
            }
        }
    }

    fn remove(&mut self, address: &str) {
        if self.slots.by_address.remove(address).is_some() {
            self.slots.stale = true;
        }
    }

    /// Drops the entries of deleted objects, which [`Ledger::remove`] left in place.
    fn compact(&mut self) {
        if !self.slots.stale {
            return;
        }
        let slots = &self.slots;
        let mut slot = 0;
        self.state.resources.retain(|r| {
            let live = slots.is_live(slot, r);
            slot += 1;
            live
        });
        self.slots = Slots::of(self.state);
    }

    fn save(&mut self) {
        self.compact();
        self.dirty = false;
        self.last_save = Some(std::time::Instant::now());
        if self.fence.is_lost() {
            if !self.unsaved {
                self.diags.push(Diag::error(
                    None,
                    "State not written",
                    "This run no longer holds the state lock: whoever holds it now may have written the state since, and this run's state must not replace it.",
                ));
            }
            self.unsaved = true;
            return;
        }
        self.state.serial += 1;
        match (self.persist)(self.state) {
            Ok(()) => self.unsaved = false,
            Err(e) => {
                self.unsaved = true;
                self.diags
                    .push(Diag::error(None, "Cannot save the state", e));
            }
        }
    }
}

/// The variables given to an apply, for the plan's sensitive variables (a plan holds only
/// their digests).
#[derive(Clone, Copy)]
pub struct Supplied<'a> {
    pub variables: &'a crate::VariableArgs,
    /// The plan comes from a file, so the variables may set nothing else (otherwise they are
    /// the ones the plan was just made with).
    pub saved: bool,
}

/// Carries out a plan against the providers of `registry`.
pub async fn apply(
    registry: &Registry,
    plan: &Plan,
    state: Option<State>,
    persist: Persist<'_>,
    halt: &Halt,
    live_progress: bool,
    supplied: Supplied<'_>,
) -> ApplyReport {
    let progress = Arc::new(Progress::new(live_progress));
    let ticker = {
        let progress = progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(progress.interval()).await;
                progress.tick();
            }
        })
    };
    let report = apply_with(
        registry,
        plan,
        state,
        persist,
        halt,
        progress.clone(),
        supplied,
    )
    .await;
    ticker.abort();
    progress.close();
    report
}

async fn apply_with(
    registry: &Registry,
    plan: &Plan,
    state: Option<State>,
    persist: Persist<'_>,
    halt: &Halt,
    progress: Arc<Progress>,
    supplied: Supplied<'_>,
) -> ApplyReport {
    let files = Files::Snapshot {
        root: plan.snapshot.stack_dir.clone().into(),
        files: Arc::new(plan.snapshot.files.clone()),
    };
    let variables = plan
        .snapshot
        .variables
        .iter()
        .map(|(k, v)| (k.clone(), Value::from_json(v)))
        .collect();
    let mut session = Session::open(
        registry.clone(),
        std::path::Path::new(&plan.snapshot.stack_dir),
        &files,
        InputSource::Plan {
            values: &variables,
            sensitive: &plan.snapshot.sensitive_variables,
            supplied: supplied.variables,
            only_sensitive: supplied.saved,
        },
    );
    if crate::plan::config_hash(&plan.snapshot) != plan.config_hash {
        session.diags.error(
            None,
            "Plan file was modified",
            "The plan's configuration, variables, file reads or data-source answers do not match the hash it was saved with: the file was changed after it was made. Make a new plan.",
        );
    }
    // A new state is written before the first object is made: the lineage that marks the
    // stack's objects is then recorded, and a run killed right after a create can adopt it.
    let fresh = state.is_none() && plan.has_changes();
    let mut state = state.unwrap_or_else(|| {
        State::new(
            plan.new_lineage
                .clone()
                .unwrap_or_else(gpustack_state::new_lineage),
            crate::version::VERSION,
        )
    });
    let owner: Arc<str> = crate::plan::owner_mark(&state.lineage).into();
    // The plan's `moved` blocks, as the plan applied them; an object moved into a module is
    // served by the module's provider configuration from now on.
    let mut moved = false;
    if !plan.moved.is_empty() {
        let mut index = state.positions();
        let mut providers: HashMap<&str, &str> = HashMap::new();
        for c in &plan.resource_changes {
            providers
                .entry(c.address.as_str())
                .or_insert(c.provider.as_str());
        }
        for m in &plan.moved {
            if let Some(i) = index.remove(&m.from) {
                let r = &mut state.resources[i];
                r.address = m.to.clone();
                if let Some(provider) = providers.get(m.to.as_str()) {
                    (*provider).clone_into(&mut r.provider);
                }
                index.insert(m.to.clone(), i);
                moved = true;
            }
        }
    }
    let salt = match (&state.digest_key, &plan.digest_key) {
        (Some(key), _) => Salt::from_hex(key),
        (None, Some(key)) => Salt::from_hex(key),
        (None, None) => Some(Salt::new()),
    };
    let Some(salt) = salt else {
        session.diags.error(
            None,
            "Invalid digest key",
            "The state's or the plan's digest_key is not hexadecimal; the file was edited by hand.",
        );
        let (sources, diagnostics) = session.diagnostics();
        return ApplyReport {
            state,
            unsaved: false,
            sources,
            diagnostics,
            counts: Counts::default(),
            results: Vec::new(),
        };
    };
    // A new state (or one written before digests were salted) takes the key the plan used;
    // an old one is then written again, so that no plaintext secret of it stays at rest.
    let rewrite = state.digest_key.is_none() && !state.resources.is_empty();
    if state.digest_key.is_none() {
        state.digest_key = Some(salt.to_hex());
    }
    if rewrite {
        for r in &mut state.resources {
            let paths = sensitive_attributes(session.registry.resource_schema(&r.type_name));
            let value = crate::plan::mark_schema(crate::plan::state_value(r), &paths);
            let encoded = encode(&value, &salt);
            r.attributes = encoded.json;
            r.sensitive_paths = crate::sensitive::tree_paths(&encoded.sensitive);
        }
    }
    let mut counts = Counts::default();
    let mut results = Vec::new();
    let mut unsaved = false;
    let recorded = || crate::evaluate::Recorded {
        sensitive_variables: plan.snapshot.sensitive_variables.clone(),
        inputs: plan.snapshot.inputs.clone(),
        salt: salt.clone(),
    };
    // The sensitive variables first: one missing or different refuses the whole plan before
    // anything is changed.
    if !session.diags.has_errors() && !plan.snapshot.sensitive_variables.is_empty() {
        let (mut check, graph, inputs) = session.provider_walk();
        check.recorded = Some(recorded());
        let roots: Vec<_> = graph
            .graph
            .node_indices()
            .filter(|&n| graph.graph[n].module == 0 && graph.graph[n].kind == NodeKind::Variable)
            .collect();
        for node in roots {
            check.step_value(graph, node, inputs, EvalOptions::default());
        }
    }
    // So are the inputs that went into a secret, which the plan holds only as digests.
    for (key, record) in &plan.snapshot.inputs {
        if let crate::plan::FileRecord::Digest(digest) = record
            && let Err(problem) = crate::evaluate::check_digest_input(key, digest, &salt)
        {
            session
                .diags
                .error(None, "Saved plan input differs", problem);
        }
    }
    if !session.diags.has_errors() {
        let (mut walk_state, graph, inputs) = session.provider_walk();
        walk_state.recorded = Some(recorded());
        let slots = Slots::of(&state);
        let mut ledger = Ledger {
            state: &mut state,
            salt: salt.clone(),
            persist,
            counts: Counts::default(),
            diags: Vec::new(),
            results: Vec::new(),
            dirty: moved,
            fresh,
            last_save: None,
            slots,
            fence: halt.fence.clone(),
            unsaved: false,
        };
        // `removed` blocks: forgotten, the objects left as they are.
        for c in plan
            .resource_changes
            .iter()
            .filter(|c| c.actions == [Action::Forget])
        {
            ledger.remove(&c.address);
            ledger.counts.forgotten += 1;
            ledger.dirty = true;
        }
        ledger.flush();
        let (handles, handled) = {
            let mut by_config: HashMap<&str, Vec<&str>> = HashMap::new();
            for c in &plan.resource_changes {
                by_config
                    .entry(c.config_address.as_str())
                    .or_default()
                    .push(c.address.as_str());
            }
            let mut applier = Applier {
                fence: halt.fence.clone(),
                owner: owner.clone(),
                progress: progress.clone(),
                walk: &mut walk_state,
                graph,
                inputs,
                plan,
                changes: plan
                    .resource_changes
                    .iter()
                    .map(|c| (c.address.clone(), c))
                    .collect(),
                by_config,
                providers: HashMap::new(),
                failed: HashSet::new(),
                ledger: &mut ledger,
                handled: HashSet::new(),
                repetitions: HashMap::new(),
            };
            walk(&graph.graph, &mut applier, &halt.stop).await;
            // Check blocks on what is now there: warnings, as Terraform reports them.
            if plan.mode == crate::plan::PlanMode::Normal {
                applier.walk.run_checks();
            }
            let handles: HashMap<String, Handle> = applier
                .providers
                .iter()
                .map(|(node, handle)| {
                    (
                        graph.graph[*node].address(applier.walk.stack),
                        handle.clone(),
                    )
                })
                .collect();
            (handles, applier.handled)
        };
        let deletions: Vec<ResourceChange> = plan
            .resource_changes
            .iter()
            .filter(|c| c.actions == [Action::Delete] && !handled.contains(&c.address))
            .cloned()
            .collect();
        let order = deletion_order(&deletions);
        let mut deleter = Deleter {
            handles,
            ledger: &mut ledger,
            failed: HashSet::new(),
            nodes: deletions,
            order: order.clone(),
        };
        walk(&order, &mut deleter, &halt.stop).await;
        if plan.mode == PlanMode::RefreshOnly && !plan.resource_drift.is_empty() {
            // A refresh-only plan changes no object: the state takes what refresh saw.
            ledger.dirty = true;
            for drift in &plan.resource_drift {
                match drift.after_value() {
                    Some(live) => {
                        if let Some(r) = ledger.get_mut(&drift.address) {
                            r.attributes = (*drift.after).clone();
                            r.sensitive_paths =
                                crate::sensitive::tree_paths(&drift.after_sensitive);
                            let _ = live;
                        }
                    }
                    None => ledger.remove(&drift.address),
                }
            }
        }
        let vanished: Vec<&str> = plan.vanished().collect();
        if !vanished.is_empty() {
            ledger.dirty = true;
            for address in vanished {
                ledger.remove(address);
            }
        }
        let outputs_before = ledger.state.outputs.clone();
        update_outputs(ledger.state, &walk_state, plan.mode, &salt);
        // An apply that changed nothing writes nothing: the serial stays, so other saved plans
        // made from this state remain valid.
        if ledger.state.outputs != outputs_before || rewrite {
            ledger.dirty = true;
        }
        ledger.flush();
        ledger.compact();
        counts = ledger.counts;
        results = ledger.results;
        unsaved = ledger.unsaved;
        for d in ledger.diags {
            walk_state.diags.push(d);
        }
    }
    let (sources, diagnostics) = session.diagnostics();
    ApplyReport {
        state,
        unsaved,
        sources,
        diagnostics,
        counts,
        results,
    }
}

/// A sensitive output is kept only as its digest.
fn update_outputs(state: &mut State, walk: &Evaluation<'_>, mode: PlanMode, salt: &Salt) {
    if mode == PlanMode::Destroy {
        state.outputs.clear();
        return;
    }
    for (name, (value, sensitive)) in &walk.out.outputs {
        if value.is_wholly_known() {
            let value = crate::plan::output_value(value, *sensitive);
            state.outputs.insert(
                name.clone(),
                OutputState {
                    value: encode(&value, salt).json,
                    sensitive: *sensitive || value.contains_sensitive(),
                },
            );
        }
    }
    state
        .outputs
        .retain(|name, _| walk.out.outputs.contains_key(name));
}

struct Applier<'w, 'a, 'l, 's, 'p> {
    walk: &'w mut Evaluation<'a>,
    fence: Arc<Fence>,
    owner: Arc<str>,
    graph: &'a Graph,
    inputs: &'a Inputs,
    plan: &'a Plan,
    changes: HashMap<String, &'a ResourceChange>,
    /// The addresses of each resource block's changes.
    by_config: HashMap<&'a str, Vec<&'a str>>,
    providers: HashMap<NodeIndex, Handle>,
    failed: HashSet<NodeIndex>,
    ledger: &'l mut Ledger<'s, 'p>,
    /// Instance addresses whose change the walk carried out (or skipped after a failure).
    handled: HashSet<String>,
    progress: Arc<Progress>,
    /// The count/for_each bindings of instances whose postconditions run after their change.
    repetitions: HashMap<String, Option<Repetition>>,
}

impl Steps for Applier<'_, '_, '_, '_, '_> {
    type Outcome = Outcome;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Outcome>> {
        if self
            .graph
            .graph
            .neighbors_directed(node, Direction::Incoming)
            .any(|d| self.failed.contains(&d))
        {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        }
        let n = self.graph.graph[node].clone();
        match n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                // A value that no longer evaluates stops what depends on it.
                let errors = self.walk.diags.0.len();
                self.walk
                    .step_value(self.graph, node, self.inputs, EvalOptions::default());
                if self.walk.diags.0.len() > errors {
                    self.failed.insert(node);
                }
                None
            }
            NodeKind::Provider => {
                let errors = self.walk.diags.0.len();
                let config = self.walk.provider(n.module, &n.key, n.span, n.implied);
                let name = n.key.split('.').next().unwrap_or_default().to_owned();
                let factory = self.walk.registry.provider(&name).cloned();
                let owner = self.owner.clone();
                match (config, factory) {
                    (Some(config), Some(factory)) if self.walk.diags.0.len() == errors => {
                        let progress = self.progress.clone();
                        let fence = self.fence.clone();
                        Some(Box::pin(async move {
                            if fence.is_lost() {
                                return Outcome::Provider(Err(vec![lock_lost(
                                    "the provider's configuration",
                                )]));
                            }
                            Outcome::Provider(
                                crate::configure::configure(&factory, &config).await.map(
                                    |configured| Handle {
                                        instance: configured.instance,
                                        fence,
                                        permits: configured.permits,
                                        progress,
                                        owner,
                                    },
                                ),
                            )
                        }))
                    }
                    _ => {
                        self.failed.insert(node);
                        None
                    }
                }
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

    fn finish(&mut self, node: NodeIndex, outcome: Outcome) {
        let n = self.graph.graph[node].clone();
        match outcome {
            Outcome::Provider(Ok(handle)) => {
                self.providers.insert(node, handle);
            }
            Outcome::Provider(Err(diagnostics)) => {
                self.report(Some(n.span), &diagnostics);
                self.failed.insert(node);
            }
            Outcome::Resource(done) => {
                let module = &self.walk.stack.modules[n.module];
                let resource = match n.kind {
                    NodeKind::Resource(ResourceMode::Data) => &module.data[&n.key],
                    _ => &module.resources[&n.key],
                };
                let dependencies =
                    crate::plan::resource_dependencies(self.graph, node, self.walk.stack);
                let mut failed = false;
                for (_, d) in &done {
                    if let Some(change) = &d.change {
                        self.handled.insert(change.address.clone());
                    }
                    let diagnostics =
                        crate::instances::as_check_warnings(resource, d.diagnostics.clone());
                    failed |= self.report(Some(n.span), &diagnostics);
                    if resource.mode == ResourceMode::Managed {
                        self.ledger.record(d, &dependencies);
                    }
                    // Postconditions on the object as it now is; the change stays recorded.
                    if let (Some(change), Some(new_state)) = (&d.change, &d.new_state) {
                        let kept = self.repetitions.remove(&change.address);
                        failed |= self.walk.postconditions(
                            n.module,
                            resource,
                            &change.address,
                            kept,
                            new_state,
                        );
                    }
                }
                self.ledger.flush_soon();
                if failed {
                    self.failed.insert(node);
                }
                // A check's data source that could not be read is unknown to its assertions.
                let unread = resource.check.is_some()
                    && done
                        .iter()
                        .any(|(_, d)| d.diagnostics.iter().any(Diagnostic::is_error));
                let value = assemble(
                    resource,
                    done.iter()
                        .map(|(k, d)| (k, d.new_state.clone().unwrap_or(Value::Null))),
                );
                let value = if unread { Value::Unknown } else { value };
                store(self.walk, n.module, resource, value);
            }
        }
    }
}

impl Applier<'_, '_, '_, '_, '_> {
    fn report(&mut self, span: Option<Span>, diagnostics: &[Diagnostic]) -> bool {
        report(self.walk.diags, span, diagnostics)
    }

    /// Changes of a node that will not run count as handled, so they are not retried as orphans.
    fn mark_handled(&mut self, node: NodeIndex) {
        let address = self.graph.graph[node].address(self.walk.stack);
        for &instance in self.by_config.get(address.as_str()).into_iter().flatten() {
            self.handled.insert(instance.to_owned());
        }
    }

    fn start_resource(
        &mut self,
        node: NodeIndex,
        module: usize,
        r: &Resource,
    ) -> Option<BoxFuture<'static, Outcome>> {
        let config_address = format!(
            "{}{}",
            self.walk.stack.modules[module].prefix(),
            r.local_address()
        );
        let has_changes = self.by_config.contains_key(config_address.as_str());
        if self.plan.mode != PlanMode::Normal || (!has_changes && r.mode == ResourceMode::Managed) {
            let value = recorded(
                self.ledger.instances(&config_address),
                &config_address,
                r,
                crate::plan::state_value,
            );
            store(self.walk, module, r, value);
            return None;
        }
        let handle = self
            .graph
            .provider_of
            .get(&node)
            .and_then(|p| self.providers.get(p))
            .cloned();
        let schema = crate::evaluate::schema_of(self.walk.registry, r).cloned();
        let (Some(handle), Some(schema)) = (handle, schema) else {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        };
        let Some(instances) = expand(self.walk, module, r, &config_address) else {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        };
        let context = format!("a {} block", r.type_name);
        let mut work = Vec::new();
        let errors_before = self.walk.diags.0.len();
        for Instance {
            key,
            address,
            repetition,
        } in instances
        {
            // Preconditions the plan could not decide are decided now, before any change.
            if let Some(kept) = self.walk.preconditions(module, r, &address, &repetition) {
                self.repetitions.insert(address.clone(), kept);
            }
            let mut config = self
                .walk
                .decode(module, &r.body, &schema, repetition, &context);
            // A configuration that no longer evaluates (a file that changed since the plan)
            // is never applied, not even as far as it goes.
            if self.walk.diags.0.len() > errors_before {
                continue;
            }
            if r.mode == ResourceMode::Data {
                let record = self.plan.snapshot.data.get(&address).cloned();
                work.push((key, Work::Read(address, config, record)));
                continue;
            }
            let Some(change) = self.changes.get(&address).copied() else {
                // Not part of this plan (e.g. --target): it stays as recorded.
                let recorded = self.ledger.get(&address).map(crate::plan::state_value);
                work.push((key, Work::Keep(recorded)));
                continue;
            };
            if let Some(prior) = change.before_value() {
                let prior = crate::sensitive::rehydrate(prior, &config, &self.ledger.salt);
                keep_ignored(&mut config, &prior, r.lifecycle());
            }
            work.push((key, Work::Change(Box::new(change.clone()), config)));
        }
        if self.walk.diags.0.len() > errors_before {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        }
        if work
            .iter()
            .any(|(_, w)| matches!(w, Work::Change(c, _) if !c.is_no_op()))
        {
            self.ledger.before_first_change();
        }
        let type_name = r.type_name.clone();
        let schema_paths = sensitive_attributes(Some(&schema));
        let salt = self.ledger.salt.clone();
        Some(Box::pin(async move {
            let calls = work.into_iter().map(|(key, work)| {
                let handle = handle.clone();
                let type_name = type_name.clone();
                let schema_paths = schema_paths.clone();
                let salt = salt.clone();
                async move {
                    let done = match work {
                        // The answer the plan was made with; read again only when the plan
                        // could not read it (it depended on changes) or holds only its digest.
                        Work::Read(_, _, Some(record))
                            if !record.sensitive.is_object() && record.sensitive != true =>
                        {
                            Done {
                                change: None,
                                new_state: Some(Value::from_json(&record.value)),
                                touched: false,
                                diagnostics: vec![],
                            }
                        }
                        Work::Read(address, config, record) => {
                            let secrets =
                                crate::plan::Secrets::of(None, &config, &schema_paths);
                            let _permit = handle.permits.acquire().await;
                            if handle.fence.is_lost() {
                                return (
                                    key,
                                    Done {
                                        change: None,
                                        new_state: None,
                                        touched: false,
                                        diagnostics: vec![lock_lost(&format!(
                                            "the read of {address}"
                                        ))],
                                    },
                                );
                            }
                            let response = handle
                                .instance
                                .read_data_source(gpustack_protocol::ReadDataSourceRequest {
                                    type_name,
                                    config: config.unmark_deep().0,
                                })
                                .await;
                            let mut state = secrets.mark(response.state);
                            let mut diagnostics = response.diagnostics;
                            if let Some(record) = record {
                                let paths = crate::sensitive::tree_paths(&record.sensitive);
                                state = state.mark_paths(&paths);
                                if encode(&state, &salt).json != record.value {
                                    diagnostics.push(Diagnostic::error(
                                        "Data source changed since the plan",
                                        format!("{address} answers differently than when the plan was made (its sensitive result is checked against the plan's digest). Nothing that depends on it is changed; make a new plan."),
                                    ));
                                }
                            }
                            Done {
                                change: None,
                                new_state: Some(state),
                                touched: false,
                                diagnostics,
                            }
                        }
                        Work::Keep(recorded) => Done {
                            change: None,
                            new_state: recorded,
                            touched: false,
                            diagnostics: vec![],
                        },
                        Work::Change(change, config) if change.is_no_op() => {
                            // Recorded secrets are digests; the configuration has their values.
                            let before = change
                                .before_value()
                                .map(|b| crate::sensitive::rehydrate(b, &config, &salt));
                            // An import with nothing to change is recorded as it is.
                            let touched = change.importing.is_some();
                            Done {
                                change: Some(*change),
                                new_state: before,
                                touched,
                                diagnostics: vec![],
                            }
                        }
                        Work::Change(change, config) => {
                            carry_out(&handle, type_name, *change, config, &schema_paths, &salt)
                                .await
                        }
                    };
                    (key, done)
                }
            });
            Outcome::Resource(futures::future::join_all(calls).await)
        }))
    }
}

enum Work {
    /// A data source: its address, configuration and the answer the plan recorded.
    Read(String, Value, Option<crate::plan::DataRecord>),
    Keep(Option<Value>),
    Change(Box<ResourceChange>, Value),
}

/// Finalises an instance's plan with the values now known, checks it against the saved
/// change, then creates, updates or replaces.
async fn carry_out(
    handle: &Handle,
    type_name: String,
    change: ResourceChange,
    config: Value,
    schema_paths: &[gpustack_protocol::Path],
    salt: &Salt,
) -> Done {
    let prior = change
        .before_value()
        .map(|p| crate::sensitive::rehydrate(p, &config, salt));
    let replace = change.is_replace();
    // A secret the plan holds only as a digest, which ignore_changes put into the
    // configuration: its value is known to no one here, and the digest must never be sent.
    if let Some(path) = config
        .sensitive_paths()
        .into_iter()
        .find(|p| config.at(p).is_some_and(crate::sensitive::is_digest))
    {
        let diagnostic = Diagnostic::error(
            "Secret not in the saved plan",
            format!(
                "{}: ignore_changes keeps {}, a secret the saved plan holds only as a digest. Apply the stack directory instead of the plan file.",
                change.address,
                gpustack_protocol::path_text(&path)
            ),
        );
        return Done {
            change: Some(change),
            new_state: prior,
            touched: false,
            diagnostics: vec![diagnostic],
        };
    }
    let secrets = crate::plan::Secrets::of(prior.as_ref(), &config, schema_paths);
    let planned = {
        let _permit = handle.permits.acquire().await;
        if handle.fence.is_lost() {
            let what = format!("the change of {}", change.address);
            return Done {
                change: Some(change),
                new_state: prior,
                touched: false,
                diagnostics: vec![lock_lost(&what)],
            };
        }
        let response = handle
            .instance
            .plan_resource_change(PlanResourceChangeRequest {
                type_name: type_name.clone(),
                prior_state: if replace {
                    None
                } else {
                    prior.clone().map(|p| p.unmark_deep().0)
                },
                config: config.unmark_deep().0,
                for_apply: true,
                preview: false,
                sensitive_paths: secrets.paths.clone(),
                owner: handle.owner.to_string(),
            })
            .await;
        if response.diagnostics.iter().any(Diagnostic::is_error) {
            return Done {
                change: Some(change),
                new_state: prior,
                touched: false,
                diagnostics: response.diagnostics,
            };
        }
        let final_replace = !response.requires_replace.is_empty() && prior.is_some();
        if final_replace && !replace {
            return inconsistent(
                change,
                prior,
                format!(
                    "the saved plan updates it in place, but its provider now says {} forces a replacement",
                    response.requires_replace.join(", ")
                ),
            );
        }
        // Made since the plan, by someone else: the create would take it over (a server-side
        // apply, a Helm install, a file written over it). The plan checked; this is the
        // object as it is now.
        if prior.is_none()
            && let Some(existing) = response.existing.as_ref().filter(|e| !e.owned)
        {
            let diagnostic = Diagnostic::error(
                "Object already exists",
                format!(
                    "{} would create {}, which was made since the plan, and not by this stack: gpustack never changes or deletes an object it does not manage. Import it (id {}) or remove it, and plan again.",
                    change.address,
                    existing.describe,
                    serde_json::Value::String(existing.import_id.clone()),
                ),
            );
            return Done {
                change: Some(change),
                new_state: None,
                touched: false,
                diagnostics: vec![diagnostic],
            };
        }
        let planned = secrets.mark(response.planned_state);
        if let Some(path) = inconsistency(&change, &planned, salt) {
            return inconsistent(
                change,
                prior,
                format!("the value of {path} differs from the value the saved plan holds"),
            );
        }
        planned
    };
    let verb = progress_verb(&change);
    handle.progress.start(&change.address, verb.0);
    let paths = secrets.paths.clone();
    let collateral = change.collateral.clone();
    let apply = |prior: Option<Value>, planned: Option<Value>| {
        let request = ApplyResourceChangeRequest {
            type_name: type_name.clone(),
            prior_state: prior.map(|p| p.unmark_deep().0),
            // The old object's deletion is held to what the plan said it takes with it.
            collateral: planned.is_none().then(|| collateral.clone()).flatten(),
            planned_state: planned.map(|p| p.unmark_deep().0),
            sensitive_paths: paths.clone(),
            owner: handle.owner.to_string(),
        };
        let handle = handle.clone();
        async move {
            let _permit = handle.permits.acquire().await;
            if handle.fence.is_lost() {
                return ApplyResourceChangeResponse {
                    new_state: None,
                    diagnostics: vec![lock_lost("a step of the change")],
                };
            }
            handle.instance.apply_resource_change(request).await
        }
    };
    let mut diagnostics = Vec::new();
    let new_state = if replace {
        // In the order the plan chose; if the first step fails nothing changed.
        let create_first = change.actions.first() == Some(&Action::Create);
        let mut created = None;
        for (step, create) in [create_first, !create_first].into_iter().enumerate() {
            let response = if create {
                apply(None, Some(planned.clone())).await
            } else {
                apply(prior.clone(), None).await
            };
            diagnostics.extend(response.diagnostics);
            if create {
                created = response.new_state;
            }
            if step == 0 && diagnostics.iter().any(Diagnostic::is_error) {
                handle.progress.finish(&change.address, None);
                return Done {
                    change: Some(change),
                    new_state: prior,
                    touched: false,
                    diagnostics,
                };
            }
        }
        created
    } else {
        let response = apply(prior.clone(), Some(planned)).await;
        let failed = response.diagnostics.iter().any(Diagnostic::is_error);
        diagnostics.extend(response.diagnostics);
        // A failed update never drops the object from the state, whatever the provider says.
        match response.new_state {
            None if failed => prior.clone(),
            state => state,
        }
    };
    let ok = diagnostics.iter().all(|d| !d.is_error());
    handle
        .progress
        .finish(&change.address, ok.then_some(verb.1));
    // A failed create leaves nothing; a failed update keeps what the provider reports.
    Done {
        change: Some(change),
        new_state: new_state.map(|s| secrets.mark(s)),
        touched: true,
        diagnostics,
    }
}

/// A change refused because the provider's final plan is not the reviewed one.
fn inconsistent(change: ResourceChange, prior: Option<Value>, why: String) -> Done {
    let diagnostic = Diagnostic::error(
        "Provider produced inconsistent final plan",
        format!(
            "When finalising the saved plan for {} with the values now known, {why}. The change is not made, nor anything that depends on it; make a new plan.",
            change.address
        ),
    );
    Done {
        change: Some(change),
        new_state: prior,
        touched: false,
        diagnostics: vec![diagnostic],
    }
}

/// The first attribute path whose final value differs from what the saved change knew
/// (values the plan did not know may now be anything).
fn inconsistency(change: &ResourceChange, planned: &Value, salt: &Salt) -> Option<String> {
    let final_value = encode(planned, salt);
    first_difference(
        &change.after,
        &change.after_unknown,
        &final_value.json,
        &final_value.unknown,
        salt,
    )
}

/// The path of the first difference [`differs`] finds, as users write it.
fn first_difference(
    saved: &serde_json::Value,
    saved_unknown: &serde_json::Value,
    now: &serde_json::Value,
    now_unknown: &serde_json::Value,
    salt: &Salt,
) -> Option<String> {
    let mut innermost_first = Vec::new();
    differs(
        saved,
        saved_unknown,
        now,
        now_unknown,
        &mut innermost_first,
        salt,
    )
    .then(|| {
        innermost_first.reverse();
        gpustack_protocol::path_text(&innermost_first)
    })
}

/// Whether `now` differs from `saved`; where it first does (keys in sorted order) is pushed
/// onto `at` innermost step first, so that equal subtrees cost no path allocations. Marks do
/// not decide: a digest on one side equals the value it digests on the other.
fn differs(
    saved: &serde_json::Value,
    saved_unknown: &serde_json::Value,
    now: &serde_json::Value,
    now_unknown: &serde_json::Value,
    at: &mut gpustack_protocol::Path,
    salt: &Salt,
) -> bool {
    use gpustack_protocol::PathStep;
    use serde_json::Value as J;
    // Unknown then, anything now; and what a provider will only report after apply (a
    // preview it no longer makes) may be unknown now: no value it sends differs.
    if *saved_unknown == J::Bool(true) || *now_unknown == J::Bool(true) {
        return false;
    }
    let digest_of = |j: &J| salt.digest(&Value::from_json(j));
    let is_digest = |j: &J| j.as_str().is_some_and(crate::sensitive::is_digest_text);
    match (saved, now) {
        (J::String(digest), _) if is_digest(saved) && !is_digest(now) => {
            return *digest != digest_of(now);
        }
        (_, J::String(digest)) if is_digest(now) && !is_digest(saved) => {
            return digest_of(saved) != *digest;
        }
        _ => {}
    }
    let no = J::Bool(false);
    match (saved, now) {
        (J::Object(a), J::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.into_iter().any(|k| {
                let found = differs(
                    a.get(k).unwrap_or(&J::Null),
                    saved_unknown.get(k).unwrap_or(&no),
                    b.get(k).unwrap_or(&J::Null),
                    now_unknown.get(k).unwrap_or(&no),
                    at,
                    salt,
                );
                if found {
                    at.push(PathStep::Key(k.clone()));
                }
                found
            })
        }
        (J::Array(a), J::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().any(|(i, (x, y))| {
                let found = differs(
                    x,
                    saved_unknown.get(i).unwrap_or(&no),
                    y,
                    now_unknown.get(i).unwrap_or(&no),
                    at,
                    salt,
                );
                if found {
                    at.push(PathStep::Index(i));
                }
                found
            })
        }
        (a, b) => a != b,
    }
}

fn progress_verb(change: &ResourceChange) -> (&'static str, &'static str) {
    match change.actions.as_slice() {
        [Action::Create] => ("Creating", "Creation complete"),
        [Action::Update] => ("Modifying", "Modifications complete"),
        [Action::Delete] => ("Destroying", "Destruction complete"),
        _ => ("Replacing", "Replacement complete"),
    }
}

/// Deletions as a graph: an object is deleted only after everything that depends on it.
fn deletion_order(deletions: &[ResourceChange]) -> DiGraph<(), ()> {
    let mut graph = DiGraph::new();
    let nodes: Vec<NodeIndex> = deletions.iter().map(|_| graph.add_node(())).collect();
    let mut by_config: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in deletions.iter().enumerate() {
        by_config
            .entry(d.config_address.as_str())
            .or_default()
            .push(i);
    }
    for (i, d) in deletions.iter().enumerate() {
        for dependency in &d.dependencies {
            for &j in by_config.get(dependency.as_str()).into_iter().flatten() {
                if i != j {
                    // i depends on j: delete i first.
                    graph.update_edge(nodes[i], nodes[j], ());
                }
            }
        }
    }
    graph
}

struct Deleter<'l, 's, 'p> {
    handles: HashMap<String, Handle>,
    ledger: &'l mut Ledger<'s, 'p>,
    failed: HashSet<NodeIndex>,
    nodes: Vec<ResourceChange>,
    /// Edges from each deletion to those that wait for it.
    order: DiGraph<(), ()>,
}

impl Steps for Deleter<'_, '_, '_> {
    type Outcome = Done;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Done>> {
        let change = self.nodes[node.index()].clone();
        // What a failed deletion depends on stays: a namespace, a CRD or an operator release
        // is not deleted under an object that still exists.
        let blocked: Vec<String> = self
            .order
            .neighbors_directed(node, Direction::Incoming)
            .filter(|d| self.failed.contains(d))
            .map(|d| self.nodes[d.index()].address.clone())
            .collect();
        if !blocked.is_empty() {
            self.ledger.diags.push(Diag::error(
                None,
                "Kept: a dependent was not destroyed",
                format!(
                    "{} was kept, because {} (which depends on it) could not be destroyed. Destroy again once that succeeds.",
                    change.address,
                    blocked.join(", ")
                ),
            ));
            self.failed.insert(node);
            return None;
        }
        let Some(handle) = self.handles.get(&change.provider).cloned() else {
            self.ledger.diags.push(Diag::error(
                None,
                "Provider configuration not present",
                format!(
                    "{} cannot be destroyed: its provider configuration {} is not in the stack.",
                    change.address, change.provider
                ),
            ));
            self.failed.insert(node);
            return None;
        };
        Some(Box::pin(async move {
            handle.progress.start(&change.address, "Destroying");
            let prior = change.before_value();
            let request = ApplyResourceChangeRequest {
                type_name: change.type_name.clone(),
                prior_state: prior.clone().map(|p| p.unmark_deep().0),
                planned_state: None,
                sensitive_paths: prior
                    .as_ref()
                    .map(Value::sensitive_paths)
                    .unwrap_or_default(),
                owner: handle.owner.to_string(),
                collateral: change.collateral.clone(),
            };
            let response = {
                let _permit = handle.permits.acquire().await;
                if handle.fence.is_lost() {
                    ApplyResourceChangeResponse {
                        new_state: prior.clone(),
                        diagnostics: vec![lock_lost("the delete")],
                    }
                } else {
                    handle.instance.apply_resource_change(request).await
                }
            };
            let ok = response.diagnostics.iter().all(|d| !d.is_error());
            handle
                .progress
                .finish(&change.address, ok.then_some("Destruction complete"));
            Done {
                new_state: if ok { None } else { prior },
                change: Some(change),
                touched: ok,
                diagnostics: response.diagnostics,
            }
        }))
    }

    fn finish(&mut self, node: NodeIndex, done: Done) {
        for d in &done.diagnostics {
            let address = done
                .change
                .as_ref()
                .map(|c| c.address.clone())
                .unwrap_or_default();
            self.ledger.diags.push(Diag {
                severity: d.severity,
                summary: d.summary.clone(),
                detail: format!("{address}: {}", d.detail),
                span: None,
            });
        }
        if done.diagnostics.iter().any(Diagnostic::is_error) {
            self.failed.insert(node);
        }
        let dependencies = done
            .change
            .as_ref()
            .map(|c| c.dependencies.clone())
            .unwrap_or_default();
        self.ledger.record(&done, &dependencies);
        self.ledger.flush_soon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_path_and_a_digest_equals_its_value() {
        let salt = Salt::new();
        let no = json!(false);
        let saved = json!({"z": {"y": 1}, "b": {"x": [1, 2]}, "a": 1});
        let now = json!({"a": 1, "b": {"x": [1, 3]}, "z": {"y": 2}});
        assert_eq!(
            first_difference(&saved, &no, &now, &no, &salt).as_deref(),
            Some("b.x[1]")
        );
        let unknown = json!({"b": true, "z": {"y": true}});
        assert_eq!(first_difference(&saved, &unknown, &now, &no, &salt), None);
        let extra = json!({"a": 1, "b": {"x": [1, 2]}, "z": {"y": 1}, "new key": 0});
        assert_eq!(
            first_difference(&saved, &no, &extra, &no, &salt).as_deref(),
            Some("[\"new key\"]")
        );
        let secret = json!({"data": {"password": "s3cret"}});
        let digest = json!({"data": {"password": salt.digest(&Value::string("s3cret"))}});
        assert_eq!(first_difference(&digest, &no, &secret, &no, &salt), None);
        assert_eq!(first_difference(&secret, &no, &digest, &no, &salt), None);
        let other = json!({"data": {"password": "other"}});
        assert_eq!(
            first_difference(&digest, &no, &other, &no, &salt).as_deref(),
            Some("data.password")
        );
        let resalted = json!({"data": {"password": Salt::new().digest(&Value::string("s3cret"))}});
        assert_eq!(
            first_difference(&digest, &no, &resalted, &no, &salt).as_deref(),
            Some("data.password")
        );
    }
}
