//! Provisioners (`local-exec`) as Terraform runs them: the create-time ones after their object
//! is created, in order, the first failure tainting the object (unless `on_failure =
//! continue`); the destroy-time ones before their object is destroyed, a failure keeping it.

use super::*;
use crate::evaluate::Frozen;
use gpustack_lang::config::{BodyRef, Provisioner as ProvisionerBlock};
use gpustack_protocol::{ProvisionRequest, Provisioner, Severity, StopSignal};

/// One provisioner of an instance, its names resolved, waiting for its object.
#[derive(Clone)]
pub(super) struct Pending {
    /// Its place among its resource's provisioner blocks: what its diagnostics name.
    index: usize,
    kind: String,
    runner: Arc<dyn Provisioner>,
    continue_on_failure: bool,
    body: BodyRef,
    frozen: Frozen,
}

/// An instance's provisioners: those to run after it is created and before it is destroyed.
#[derive(Clone, Default)]
pub(super) struct Provisioning {
    pub(super) create: Vec<Pending>,
    pub(super) destroy: Vec<Pending>,
}

/// The provisioners of `r` that `actions` call for, for one instance: None (errors reported)
/// where one cannot be prepared.
pub(super) fn prepare(
    eval: &mut EvalContext<'_>,
    module: usize,
    r: &Resource,
    actions: &[Action],
    repetition: &Option<Repetition>,
) -> Option<Provisioning> {
    let mut out = Provisioning::default();
    let mut ok = true;
    for (index, block) in r.provisioners().iter().enumerate() {
        let wanted = if block.when_destroy {
            actions.contains(&Action::Delete)
        } else {
            actions.contains(&Action::Create)
        };
        if !wanted {
            continue;
        }
        match pending(eval, module, index, block, repetition) {
            Some(p) if block.when_destroy => out.destroy.push(p),
            Some(p) => out.create.push(p),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn pending(
    eval: &mut EvalContext<'_>,
    module: usize,
    index: usize,
    block: &ProvisionerBlock,
    repetition: &Option<Repetition>,
) -> Option<Pending> {
    let Some(runner) = eval.registry.provisioner(&block.kind).cloned() else {
        eval.diags.push(Diag::error(
            Some(block.span),
            "Provisioner not available",
            format!("This build of gpustack runs no {} provisioner.", block.kind),
        ));
        return None;
    };
    let frozen = eval.freeze(module, &block.body, repetition.clone())?;
    Some(Pending {
        index,
        kind: block.kind.clone(),
        runner,
        continue_on_failure: block.continue_on_failure,
        body: block.body.clone(),
        frozen,
    })
}

/// What a provisioner's diagnostics name, so they are reported at its block
/// ([`provisioner_span`]).
fn attribute(index: usize) -> String {
    format!("provisioner[{index}]")
}

/// The block a diagnostic of [`run`] names.
pub(super) fn provisioner_span(
    r: &Resource,
    attribute: &str,
) -> Option<gpustack_lang::source::Span> {
    let index: usize = attribute
        .strip_prefix("provisioner[")?
        .strip_suffix(']')?
        .parse()
        .ok()?;
    r.provisioners().get(index).map(|p| p.span)
}

/// Runs `pending` in order with `self_value` as `self`. The diagnostics say what failed (a
/// failure with `on_failure = continue` as a warning); true when one failed that stops.
pub(super) async fn run(
    pending: &[Pending],
    self_value: &Value,
    address: &str,
    progress: &Arc<Progress>,
    stop: &StopSignal,
) -> (Vec<Diagnostic>, bool) {
    let mut diagnostics = Vec::new();
    for p in pending {
        let at = |mut d: Diagnostic| {
            d.attribute = Some(attribute(p.index));
            d
        };
        let config = match p.frozen.evaluate(&p.body, self_value) {
            Ok(config) => config,
            Err(e) => {
                diagnostics.push(at(Diagnostic::error("Invalid provisioner arguments", e)));
                return (diagnostics, true);
            }
        };
        if !config.is_wholly_known() {
            diagnostics.push(at(Diagnostic::error(
                "Invalid provisioner arguments",
                "its arguments are not known even now that the object exists",
            )));
            return (diagnostics, true);
        }
        let sensitive = config.contains_sensitive();
        let prefix = format!("{address} ({}): ", p.kind);
        let lines = progress.clone();
        let request = ProvisionRequest {
            config: config.unmark_deep().0,
            sensitive,
            output: Arc::new(move |line: &str| {
                let line = gpustack_protocol::terminal::escape_controls(line);
                lines.line(&format!("{prefix}{line}"));
            }),
            stop: stop.clone(),
        };
        let answer: Vec<Diagnostic> = p
            .runner
            .provision(request)
            .await
            .into_iter()
            .map(at)
            .collect();
        let failed = answer.iter().any(Diagnostic::is_error);
        if failed && p.continue_on_failure {
            diagnostics.extend(answer.into_iter().map(|mut d| {
                d.severity = Severity::Warning;
                d.detail = format!("{} (on_failure = continue)", d.detail);
                d
            }));
            continue;
        }
        diagnostics.extend(answer);
        if failed {
            return (diagnostics, true);
        }
    }
    (diagnostics, false)
}

/// The destroy-time provisioners of planned deletions whose resource block is still in the
/// stack (a destroy, fewer instances), by address; an orphan's block, and its provisioners,
/// are gone.
pub(super) fn for_deletions(
    eval: &mut EvalContext<'_>,
    deletions: &[ResourceChange],
) -> HashMap<String, Vec<Pending>> {
    let stack = eval.stack;
    let blocks: HashMap<String, (usize, &Resource)> = stack
        .resources_by_address()
        .filter(|(_, (_, r))| r.provisioners().iter().any(|p| p.when_destroy))
        .collect();
    let mut out = HashMap::new();
    for d in deletions {
        let Some(&(module, r)) = blocks.get(&d.config_address) else {
            continue;
        };
        let suffix = d
            .address
            .strip_prefix(&d.config_address)
            .unwrap_or_default();
        let repetition = Some(crate::instances::InstanceKey::of_suffix(suffix).repetition());
        if let Some(provisioning) = prepare(eval, module, r, &[Action::Delete], &repetition) {
            out.insert(d.address.clone(), provisioning.destroy);
        }
    }
    out
}
