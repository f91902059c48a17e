//! What a planned change will run on this machine: its provisioners' commands, as the plan
//! shows them.

use crate::evaluate::EvalContext;
use crate::instances::InstanceKey;
use crate::plan::Action;
use gpustack_lang::config::Resource;
use gpustack_protocol::Value;

/// What a change of `r` will run on this machine, as the plan shows it: each provisioner the
/// actions call for, its command evaluated as far as the plan knows it (a secret masked; what
/// only apply knows, as the configuration writes it).
pub(super) fn planned_runs(
    eval: &mut EvalContext<'_>,
    module: usize,
    r: &Resource,
    actions: &[Action],
    key: &InstanceKey,
    prior: Option<&Value>,
    planned: &Value,
) -> Vec<String> {
    let mut runs = Vec::new();
    for p in r.provisioners() {
        let (wanted, object) = if p.when_destroy {
            (actions.contains(&Action::Delete), prior)
        } else {
            (actions.contains(&Action::Create), Some(planned))
        };
        if !wanted {
            continue;
        }
        let Some(command) = p.body.body.get_attribute("command") else {
            continue;
        };
        let mut repetition = key.repetition();
        repetition.self_value = object.cloned();
        let before = eval.diags.0.len();
        let value = eval.eval_in(module, &command.value, p.body.file, Some(repetition));
        // What the plan cannot evaluate here is apply's to report.
        eval.diags.0.truncate(before);
        let shown = match value {
            v if v.contains_sensitive() => "(sensitive value)".to_owned(),
            Value::String(text) => text,
            _ => command.value.to_string().trim().to_owned(),
        };
        let when = if p.when_destroy {
            " (when = destroy)"
        } else {
            ""
        };
        runs.push(format!("{}{when}: {shown}", p.kind));
    }
    runs
}
