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

use crate::evaluate::store;
use crate::evaluate::{EvalContext, EvalOptions, Inputs, Repetition};
use crate::graph::{Graph, NodeKind};
use crate::instances::{Instance, InstanceKey, assemble, expand, keep_ignored, recorded, report};
use crate::plan::{Action, Plan, PlanMode, ResourceChange, sensitive_attributes};
use crate::progress::Progress;
use crate::schedule::{Steps, run};
use crate::sensitive::{Salt, encode};
use crate::session::{InputSource, Session};
use futures::future::BoxFuture;
use gpustack_lang::config::{Files, Resource, ResourceMode};
use gpustack_lang::diag::Diag;
use gpustack_lang::source::{SourceMap, Span};
use gpustack_protocol::Registry;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, PlanResourceChangeRequest,
    Provider, Successor, Value,
};
use gpustack_state::{Fence, OutputState, ResourceState, State};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::sync::Semaphore;

mod change;
mod delete;
mod ledger;
mod provision;

use change::Applier;
#[cfg(test)]
use change::first_difference;
use delete::{Deleter, deletion_order};
use ledger::{Ledger, Slots};

/// Writes the state somewhere durable; called after every change. The error is shown with
/// its causes.
pub type Persist<'p> = &'p mut (dyn FnMut(&State) -> Result<(), gpustack_state::StateError> + Send);

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
    /// Ctrl-C: told to every change, so that a long one can stop at a safe point.
    stop: gpustack_protocol::StopSignal,
    /// The serial of the state the plan was made from, which seeds what providers choose at
    /// random as it did when the plan was made.
    serial: u64,
    /// When the plan was made: "now" for what providers derive from the time.
    plan_time: Arc<str>,
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
    /// A create-time provisioner failed: the object exists and the next plan replaces it.
    tainted: bool,
}

enum Outcome {
    Provider(Result<Handle, Vec<Diagnostic>>),
    Resource(Vec<(InstanceKey, Done)>),
}

/// The variables given to an apply, for the plan's sensitive variables (a plan holds only
/// their digests).
#[derive(Clone, Copy)]
pub struct Supplied<'a> {
    pub variables: &'a crate::session::VariableArgs,
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
    let mut session = plan_session(registry, plan, &supplied);
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
    let moved = apply_plan_moves(&mut state, plan);
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
    let rewrite = take_digest_key(&mut state, &salt, &session.registry);
    let mut counts = Counts::default();
    let mut results = Vec::new();
    let mut unsaved = false;
    let recorded = || crate::evaluate::Recorded {
        sensitive_variables: plan.snapshot.sensitive_variables.clone(),
        ephemeral_variables: plan.snapshot.ephemeral_variables.clone(),
        inputs: plan.snapshot.inputs.clone(),
        salt: salt.clone(),
    };
    check_saved_inputs(&mut session, plan, &salt, &recorded);
    if !session.diags.has_errors() {
        let drawing_types = session
            .registry
            .resource_types()
            .filter(|t| {
                session
                    .registry
                    .resource_schema(t)
                    .is_some_and(gpustack_protocol::Schema::draws_secrets)
            })
            .map(str::to_owned)
            .collect();
        let (mut walk_state, graph, inputs) = session.provider_context();
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
            plan_serial: plan.serial,
            drawing_types,
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
                stop: gpustack_protocol::StopSignal::new(halt.stop.clone()),
                owner: owner.clone(),
                progress: progress.clone(),
                eval: &mut walk_state,
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
            run(&graph.graph, &mut applier, &halt.stop).await;
            // Check blocks on what is now there: warnings, as Terraform reports them.
            if plan.mode == crate::plan::PlanMode::Normal {
                applier.eval.run_checks();
            }
            let handles: HashMap<String, Handle> = applier
                .providers
                .iter()
                .map(|(node, handle)| {
                    (
                        graph.graph[*node].address(applier.eval.stack),
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
        let provisioning = provision::for_deletions(&mut walk_state, &deletions);
        let mut deleter = Deleter {
            handles,
            provisioning,
            ledger: &mut ledger,
            failed: HashSet::new(),
            nodes: deletions,
            order: order.clone(),
        };
        run(&order, &mut deleter, &halt.stop).await;
        settle_unchanged(&mut ledger, plan);
        if plan.mode == crate::plan::PlanMode::Normal {
            ledger.keep_skip_destroy(walk_state.stack);
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

/// The session a plan's own snapshot opens, its hash checked: apply evaluates what the plan
/// recorded, never the files on disk.
fn plan_session(registry: &Registry, plan: &Plan, supplied: &Supplied<'_>) -> Session {
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
            ephemeral: &plan.snapshot.ephemeral_variables,
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
    session
}

/// The plan's `moved` blocks, as the plan applied them; an object moved into a module is
/// served by the module's provider configuration from now on. True when any moved.
fn apply_plan_moves(state: &mut State, plan: &Plan) -> bool {
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
    moved
}

/// A new state (or one written before digests were salted) takes the key the plan used; an
/// old one is then written again, so that no plaintext secret of it stays at rest. True when
/// the state must be written again.
fn take_digest_key(state: &mut State, salt: &Salt, registry: &Registry) -> bool {
    let rewrite = state.digest_key.is_none() && !state.resources.is_empty();
    if state.digest_key.is_none() {
        state.digest_key = Some(salt.to_hex());
    }
    if rewrite {
        for r in &mut state.resources {
            let paths = sensitive_attributes(registry.resource_schema(&r.type_name));
            let value = crate::plan::mark_schema(crate::plan::state_value(r), &paths);
            let encoded = encode(&value, salt);
            r.attributes = encoded.json;
            r.sensitive_paths = crate::sensitive::tree_paths(&encoded.sensitive);
        }
    }
    rewrite
}

/// The sensitive variables first: one missing or different refuses the whole plan before
/// anything is changed; so are the inputs that went into a secret, which the plan holds only
/// as digests.
fn check_saved_inputs(
    session: &mut Session,
    plan: &Plan,
    salt: &Salt,
    recorded: &dyn Fn() -> crate::evaluate::Recorded,
) {
    if !session.diags.has_errors() && !plan.snapshot.sensitive_variables.is_empty() {
        let (mut check, graph, inputs) = session.provider_context();
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
    for (key, record) in &plan.snapshot.inputs {
        if let crate::plan::FileRecord::Digest(digest) = record
            && let Err(problem) = crate::evaluate::check_digest_input(key, digest, salt)
        {
            session
                .diags
                .error(None, "Saved plan input differs", problem.to_string());
        }
    }
}

/// What a plan changes without a provider call: a refresh-only plan's drift taken into the
/// state, and objects found gone dropped from it.
fn settle_unchanged(ledger: &mut Ledger<'_, '_>, plan: &Plan) {
    if plan.mode == PlanMode::RefreshOnly && !plan.resource_drift.is_empty() {
        // A refresh-only plan changes no object: the state takes what refresh saw.
        ledger.dirty = true;
        for drift in &plan.resource_drift {
            match drift.after_value() {
                Some(live) => {
                    if let Some(r) = ledger.get_mut(&drift.address) {
                        r.attributes = (*drift.after).clone();
                        r.sensitive_paths = crate::sensitive::tree_paths(&drift.after_sensitive);
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
}

/// A sensitive output is kept only as its digest.
fn update_outputs(state: &mut State, walk: &EvalContext<'_>, mode: PlanMode, salt: &Salt) {
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
