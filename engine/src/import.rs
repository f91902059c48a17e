//! `gpustack import ADDRESS ID`: an existing object taken under management on the plan's own
//! walk, as OpenTofu's import walks its graph. The plan configures the resource's provider and
//! reads the object through its import exactly as for an `import` block, limited to the
//! address and what it depends on; the object is then recorded as apply records one
//! ([`crate::sensitive::state_entry`]), and nothing else is changed: the next plan shows how
//! it differs from the configuration.

use crate::plan::{PlanMode, PlanOptions};
use crate::session::Session;
use crate::version;
use gpustack_lang::source::SourceMap;
use gpustack_protocol::Diagnostic;
use gpustack_state::State;

/// Why an import took nothing in.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{0} is not declared in the stack: add its resource block first, then import")]
    NotDeclared(String),
    #[error("{0} is a data source: only managed resources can be imported")]
    NotManaged(String),
    #[error(
        "{0} is already managed; remove it with gpustack state rm first to import another object there"
    )]
    AlreadyManaged(String),
    #[error("the object could not be read (see the diagnostics)")]
    Unread,
}

/// The state with the object `id` recorded at `address`, or why not, with every diagnostic
/// and the sources they point into.
pub async fn import(
    session: Session,
    state: Option<&State>,
    address: &str,
    id: &str,
) -> (Result<State, ImportError>, SourceMap, Vec<Diagnostic>) {
    import_all(session, state, &[(address.to_owned(), id.to_owned())]).await
}

/// The state with every `(address, id)` recorded, read on one plan's walk, or why not: one
/// failure takes nothing in.
pub async fn import_all(
    session: Session,
    state: Option<&State>,
    imports: &[(String, String)],
) -> (Result<State, ImportError>, SourceMap, Vec<Diagnostic>) {
    for (address, _) in imports {
        let refused = if address.starts_with("data.") || address.contains(".data.") {
            Some(ImportError::NotManaged(address.clone()))
        } else if state.is_some_and(|s| s.resource(address).is_some()) {
            Some(ImportError::AlreadyManaged(address.clone()))
        } else {
            None
        };
        if let Some(refused) = refused {
            let (sources, diagnostics) = session.diagnostics();
            return (Err(refused), sources, diagnostics);
        }
    }
    let options = PlanOptions {
        mode: PlanMode::Normal,
        refresh: true,
        targets: imports.iter().map(|(a, _)| a.clone()).collect(),
        imports: imports.to_vec(),
        ..PlanOptions::default()
    };
    let (plan, sources, diagnostics) = crate::plan::plan(session, state, &options).await;
    let Some(plan) = plan else {
        return (Err(ImportError::Unread), sources, diagnostics);
    };
    let mut changes = Vec::new();
    for (address, _) in imports {
        let Some(change) = plan.resource_changes.iter().find(|c| &c.address == address) else {
            return (
                Err(ImportError::NotDeclared(address.clone())),
                sources,
                diagnostics,
            );
        };
        if change.importing.is_none() {
            return (Err(ImportError::Unread), sources, diagnostics);
        }
        changes.push(change);
    }
    let mut state = state.cloned().unwrap_or_else(|| {
        State::new(
            plan.new_lineage
                .clone()
                .unwrap_or_else(gpustack_state::new_lineage),
            version::VERSION,
        )
    });
    if state.digest_key.is_none() {
        state.digest_key.clone_from(&plan.digest_key);
    }
    for change in changes {
        state.resources.push(crate::sensitive::state_entry(
            &change.address,
            &change.type_name,
            &change.provider,
            (*change.before).clone(),
            &change.before_sensitive,
            Vec::new(),
        ));
    }
    state.serial += 1;
    (Ok(state), sources, diagnostics)
}
