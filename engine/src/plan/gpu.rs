//! The GPU pass: what the plan's resources reported about GPUs goes to the GPU model
//! (`gpustack-gpu`), whose findings become located diagnostics and whose capacity lines and
//! capacity drift go into the plan (DESIGN §1).

use super::CapacityLine;
use crate::evaluate::EvalContext;
use gpustack_gpu::{Model, NodeDrift, Severity, Sourced};
use gpustack_protocol::GpuFact;
use std::collections::HashMap;

/// Where a resource instance is configured: its module and resource key.
pub(crate) type Sources = HashMap<String, (usize, String)>;

pub(crate) struct Outcome {
    pub capacity: Vec<CapacityLine>,
    pub drift: Vec<NodeDrift>,
    pub disruption: Vec<gpustack_gpu::Disruption>,
}

/// Runs the model on the facts of a plan; `checks`: report its findings (a normal plan), or
/// only measure (refresh-only: drift runs on what is live, whatever the stack now says).
/// The disruption section alone: what a destroy takes from live nodes.
pub(crate) fn disruptions(facts: &[(String, GpuFact)]) -> Outcome {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|(address, fact)| Sourced { address, fact })
        .collect();
    Outcome {
        capacity: Vec::new(),
        drift: Vec::new(),
        disruption: Model::build(&sourced).disruptions(),
    }
}

pub(crate) fn pass(
    walk: &mut EvalContext<'_>,
    facts: &[(String, GpuFact)],
    sources: &Sources,
    checks: bool,
) -> Outcome {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|(address, fact)| Sourced { address, fact })
        .collect();
    let model = Model::build(&sourced);
    if checks {
        let locator = crate::evaluate::locate::Locator {
            stack: walk.stack,
            sources: walk.sources,
        };
        for finding in model.findings() {
            let location = sources.get(&finding.address).and_then(|(module, key)| {
                let resource = walk.stack.modules[*module].resources.get(key)?;
                locator
                    .path(*module, &resource.body, &finding.path)
                    .or(Some(crate::evaluate::locate::Location::at(resource.span)))
            });
            walk.diags.push(located(
                &finding,
                &gpustack_protocol::path_text(&finding.path),
                location,
            ));
        }
    }
    let capacity = if checks {
        model
            .capacity()
            .into_iter()
            .map(|(address, change)| CapacityLine { address, change })
            .collect()
    } else {
        Vec::new()
    };
    Outcome {
        capacity,
        drift: if checks { Vec::new() } else { model.drift() },
        disruption: if checks {
            model.disruptions()
        } else {
            Vec::new()
        },
    }
}

/// A finding of the GPU model (or of a provider's review) as a diagnostic at `location`,
/// its detail naming the resource instance and the attribute (`at ADDRESS.PATH`) and where a
/// value read from a file is written.
pub(crate) fn located(
    finding: &gpustack_gpu::Finding,
    attribute: &str,
    location: Option<crate::evaluate::locate::Location>,
) -> gpustack_lang::diag::Diag {
    let span = location.as_ref().map(|l| l.span);
    let detail = format!(
        "{} (at {}{}{})",
        finding.detail,
        finding.address,
        if attribute.is_empty() {
            String::new()
        } else {
            format!(".{attribute}")
        },
        match location.and_then(|l| l.in_file) {
            Some(place) => format!(", written at {place}"),
            None => String::new(),
        }
    );
    match finding.severity {
        Severity::Error => gpustack_lang::diag::Diag::error(span, finding.summary.clone(), detail),
        Severity::Warning => {
            gpustack_lang::diag::Diag::warning(span, finding.summary.clone(), detail)
        }
    }
}
