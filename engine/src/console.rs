//! `gpustack console`.

use crate::evaluate::EvalTextError;
use crate::plan;
use crate::sensitive;
use crate::session::Session;
use gpustack_lang::source::SourceMap;
use gpustack_protocol::Diagnostic;

/// `gpustack console`: each expression evaluated in the root module against the stack and its
/// state, as `terraform console` does: resources are what the state records (nothing is
/// refreshed or planned), data sources are read. Each answer is the value, or why it has none.
pub async fn console(
    mut session: Session,
    state: Option<&gpustack_state::State>,
    expressions: &[String],
) -> (
    Vec<Result<gpustack_protocol::Value, EvalTextError>>,
    SourceMap,
    Vec<Diagnostic>,
) {
    if session.diags.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        return (Vec::new(), sources, diagnostics);
    }
    let salt = state
        .and_then(|s| s.digest_key.as_deref())
        .and_then(sensitive::Salt::from_hex)
        .unwrap_or_default();
    let options = plan::PlanOptions {
        mode: plan::PlanMode::RefreshOnly,
        refresh: false,
        ..Default::default()
    };
    let answers = {
        let (mut walk, graph, inputs) = session.provider_context();
        walk.check_inputs(inputs);
        let _ = plan::make_plan(
            &mut walk,
            graph,
            inputs,
            state,
            &options,
            plan::Snapshot::default(),
            &salt,
            plan::Ownership {
                owner: String::new(),
                moves: Vec::new(),
            },
        )
        .await;
        expressions.iter().map(|e| walk.eval_text(e)).collect()
    };
    let (sources, diagnostics) = session.diagnostics();
    (answers, sources, diagnostics)
}
