//! The root module's outputs as the plan changes them.

use super::*;

impl Planner<'_, '_> {
    /// By name, as Terraform lists them: the walk finishes outputs in any order.
    pub(super) fn output_changes(&self) -> IndexMap<String, OutputChange> {
        let prior = self.state.map(|s| &s.outputs);
        let mut outputs: Vec<_> = self.eval.out.outputs.iter().collect();
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
