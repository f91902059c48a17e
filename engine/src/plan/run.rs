//! A plan of a session's stack against a state: the walk, then what the plan records of
//! its inputs.

use crate::sensitive;
use crate::session::Session;
use crate::version;
use gpustack_lang::source::SourceMap;
use gpustack_protocol::Diagnostic;

/// Whether `state` has no key for its digests yet and can take one without being rewritten
/// (it records no object).
pub fn needs_digest_key(state: &gpustack_state::State) -> bool {
    state.digest_key.is_none() && state.resources.is_empty()
}

/// `state` (or the first version of a new one: a new lineage, nothing recorded) with a key for
/// its digests. Written before a plan is saved to a file, so that the plan's digests are keyed
/// by what only the state holds: a plan file alone confirms no guess of a secret.
pub fn with_digest_key(state: Option<gpustack_state::State>) -> gpustack_state::State {
    let mut state = state.unwrap_or_else(|| {
        gpustack_state::State::new(gpustack_state::new_lineage(), version::VERSION)
    });
    if state.digest_key.is_none() {
        state.digest_key = Some(sensitive::Salt::new().to_hex());
    }
    state
}

/// Plans the stack against `state`. Returns the plan (None when there were errors) and every
/// diagnostic with the sources they point into.
pub async fn plan(
    mut session: Session,
    state: Option<&gpustack_state::State>,
    options: &super::PlanOptions,
) -> (Option<super::Plan>, SourceMap, Vec<Diagnostic>) {
    if session.diags.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        return (None, sources, diagnostics);
    }
    let files = session.snapshot_files();
    // The state's digest key; a state that has none yet gets the one this plan makes.
    let existing_key = state
        .and_then(|s| s.digest_key.as_deref())
        .and_then(sensitive::Salt::from_hex);
    let new_key = existing_key.is_none();
    let salt = existing_key.unwrap_or_default();
    // The lineage the state has, or the one the state this plan creates will have: what
    // this stack's objects are marked with.
    let new_lineage = state.is_none().then(gpustack_state::new_lineage);
    let lineage = state
        .map(|s| s.lineage.clone())
        .or_else(|| new_lineage.clone())
        .unwrap_or_default();
    // A copy of the state only when a `moved` block has something to move: at 10,000
    // resources a copy is tens of megabytes.
    let has_moves = session.stack.modules.iter().any(|m| !m.moves.is_empty());
    let moved = state
        .filter(|_| has_moves)
        .map(|s| super::apply_moves(&session.stack, s, &mut session.diags));
    let (moved_state, moves) = match moved {
        Some((state, moves)) => (Some(state), moves),
        None => (None, Vec::new()),
    };
    let result = {
        let stack_dir = session.dir.to_string_lossy().into_owned();
        let (mut walk, graph, inputs) = session.provider_context();
        walk.check_inputs(inputs);
        walk.check_settings();
        walk.check_ephemeral();
        let planned = super::make_plan(
            &mut walk,
            graph,
            inputs,
            moved_state.as_ref().or(state),
            options,
            super::Snapshot {
                stack_dir,
                files,
                ..Default::default()
            },
            &salt,
            super::Ownership {
                owner: super::owner_mark(&lineage),
                moves,
            },
        )
        .await;
        let mut variables = indexmap::IndexMap::new();
        let mut sensitive_variables = indexmap::IndexMap::new();
        let mut ephemeral_variables = Vec::new();
        for (name, declared) in &walk.stack.root().variables {
            if declared.ephemeral {
                ephemeral_variables.push(name.clone());
                continue;
            }
            let Some(value) = walk.values[0].vars.get(name) else {
                continue;
            };
            if declared.sensitive || value.contains_sensitive() {
                sensitive_variables.insert(name.clone(), salt.digest(value));
            } else {
                variables.insert(name.clone(), value.to_json());
            }
        }
        // An input that went into a secret, or holds one, is kept as a digest: apply reads
        // the file again and checks it.
        let secret: std::collections::HashSet<String> = walk
            .flows
            .borrow()
            .secret_keys()
            .map(str::to_owned)
            .collect();
        let inputs = walk
            .files_read
            .take()
            .into_iter()
            .map(|(path, record)| match record {
                super::FileRecord::Content(text)
                    if secret.contains(&path)
                        || gpustack_protocol::secrets::contains_any(&text) =>
                {
                    let digest = salt.digest(&gpustack_protocol::Value::String(text));
                    (path, super::FileRecord::Digest(digest))
                }
                other => (path, other),
            })
            .collect();
        planned.map(|mut p| {
            p.snapshot.variables = variables;
            p.snapshot.sensitive_variables = sensitive_variables;
            p.snapshot.ephemeral_variables = ephemeral_variables;
            p.snapshot.inputs = inputs;
            p.digest_key = new_key.then(|| salt.to_hex());
            p.new_lineage = new_lineage;
            // Freshness is checked against the state as it was, before the moves.
            p.lineage = state.map(|s| s.lineage.clone());
            p.serial = state.map_or(0, |s| s.serial);
            p.workspace.clone_from(&session.inputs.workspace);
            p.config_hash = super::config_hash(&p.snapshot);
            p
        })
    };
    let (sources, diagnostics) = session.diagnostics();
    (result, sources, diagnostics)
}
