//! Conditions: variables' validation rules, resources' preconditions and postconditions,
//! outputs' preconditions and check blocks' assertions.

use super::{EvalContext, Repetition};
use gpustack_lang::config::{Resource, Variable};
use gpustack_lang::diag::Diag;
use gpustack_lang::source::Span;
use gpustack_protocol::{Type, Value};

/// How a false condition is reported.
#[derive(Clone, Copy)]
pub(crate) enum ConditionKind {
    Precondition,
    Postcondition,
    OutputPrecondition,
    /// A check block's assert: a warning, never a failure.
    Check,
}

impl ConditionKind {
    fn summary(self) -> &'static str {
        match self {
            ConditionKind::Precondition => "Resource precondition failed",
            ConditionKind::Postcondition => "Resource postcondition failed",
            ConditionKind::OutputPrecondition => "Module output value precondition failed",
            ConditionKind::Check => "Check block assertion failed",
        }
    }
}

impl EvalContext<'_> {
    /// Runs the validation rules against a candidate value, with `var.<name>` bound to it.
    pub(super) fn validate_variable(
        &mut self,
        module: usize,
        v: &Variable,
        value: &Value,
        at: Option<Span>,
    ) {
        if !value.is_wholly_known() || v.validations.is_empty() {
            return;
        }
        let previous = self.values[module]
            .vars
            .insert(v.name.clone(), value.clone());
        for rule in &v.validations {
            // A rule on a sensitive variable yields a sensitive bool: the mark says nothing
            // of whether the rule held.
            let (condition, _) = self.eval(module, &rule.condition, None).unmark_deep();
            let condition = match condition {
                Value::Unknown | Value::Bool(_) => condition,
                other => Type::Bool.convert(&other).unwrap_or(other),
            };
            match condition {
                Value::Bool(true) | Value::Unknown => {}
                Value::Bool(false) => {
                    let message = condition_message(
                        self.eval(module, &rule.error_message, None),
                        "The value failed validation.",
                    );
                    let rule_at = self.sources.range(rule.condition.span());
                    let shown = if v.sensitive {
                        "(sensitive value)".to_owned()
                    } else {
                        value.to_string()
                    };
                    self.diags.error(
                        at.or(Some(v.span)),
                        "Invalid value for variable",
                        format!("{message}\n\nvar.{} is {shown}; checked by the validation rule at {}:{}:{}.", v.name, rule_at.filename, rule_at.start.line, rule_at.start.column),
                    );
                }
                other => self.diags.error(
                    rule.condition.span(),
                    "Invalid validation condition",
                    format!("The condition must be a bool, not {}.", other.type_name()),
                ),
            }
        }
        match previous {
            Some(p) => self.values[module].vars.insert(v.name.clone(), p),
            None => self.values[module].vars.remove(&v.name),
        };
    }

    /// Evaluates conditions, reporting each false one at its condition with its
    /// error_message (an error, or a warning for a check's assert). Returns how many could not
    /// be decided because they depend on values not known yet.
    pub(crate) fn conditions(
        &mut self,
        module: usize,
        conditions: &[gpustack_lang::config::Condition],
        repetition: Option<Repetition>,
        kind: ConditionKind,
        subject: &str,
    ) -> usize {
        let mut undecided = 0;
        let before = self.diags.0.len();
        for c in conditions {
            let (value, _) = self
                .eval(module, &c.condition, repetition.clone())
                .unmark_deep();
            if !value.is_wholly_known() {
                undecided += 1;
                continue;
            }
            // As in Terraform, a value that converts to a bool ("false") decides too.
            match Type::Bool.convert(&value) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => {
                    let message = condition_message(
                        self.eval(module, &c.error_message, repetition.clone()),
                        "(the error message could not be evaluated)",
                    );
                    let detail =
                        format!("{message}\n\nThis was checked by the condition of {subject}.");
                    self.diags.push(Diag::error(
                        Some(c.condition.span()),
                        kind.summary(),
                        detail,
                    ));
                }
                _ => self.diags.error(
                    c.condition.span(),
                    "Invalid condition result",
                    if value.is_null() {
                        "The condition value is null; it must be true or false.".to_owned()
                    } else {
                        format!(
                            "The condition must be true or false, not {}.",
                            value.type_name()
                        )
                    },
                ),
            }
        }
        // A check never fails a run: what went wrong evaluating its assertions is a warning.
        if matches!(kind, ConditionKind::Check) {
            for d in &mut self.diags.0[before..] {
                d.severity = gpustack_protocol::Severity::Warning;
            }
        }
        undecided
    }

    /// An instance's preconditions; returns its bindings when it has postconditions, to be
    /// kept until its object is known.
    pub(crate) fn preconditions(
        &mut self,
        module: usize,
        r: &Resource,
        address: &str,
        repetition: &Option<Repetition>,
    ) -> Option<Option<Repetition>> {
        let lifecycle = r.lifecycle();
        self.conditions(
            module,
            &lifecycle.preconditions,
            repetition.clone(),
            ConditionKind::Precondition,
            address,
        );
        (!lifecycle.postconditions.is_empty()).then(|| repetition.clone())
    }

    /// An instance's postconditions on its object (`self`); true when one failed.
    pub(crate) fn postconditions(
        &mut self,
        module: usize,
        r: &Resource,
        address: &str,
        repetition: Option<Option<Repetition>>,
        object: &Value,
    ) -> bool {
        if r.lifecycle().postconditions.is_empty() {
            return false;
        }
        let mut scope = repetition.flatten().unwrap_or_default();
        scope.self_value = Some(object.clone());
        let errors = self.diags.error_count();
        self.conditions(
            module,
            &r.lifecycle().postconditions,
            Some(scope),
            ConditionKind::Postcondition,
            address,
        );
        self.diags.error_count() > errors
    }

    /// Every check block's assertions, as warnings; returns how many depend on values not
    /// known yet.
    pub(crate) fn run_checks(&mut self) -> usize {
        let stack = self.stack;
        let mut undecided = 0;
        for (module, m) in stack.modules.iter().enumerate() {
            for check in &m.checks {
                undecided += self.conditions(
                    module,
                    &check.asserts,
                    None,
                    ConditionKind::Check,
                    &format!("check \"{}\"", check.name),
                );
            }
        }
        undecided
    }
}

/// A failed condition's error_message as it may be shown: never a secret, as Terraform says.
fn condition_message(message: Value, otherwise: &str) -> String {
    if message.contains_sensitive() {
        return "The error message included a sensitive value, so it will not be displayed."
            .to_owned();
    }
    match message {
        Value::String(m) => m,
        _ => otherwise.to_owned(),
    }
}

impl EvalContext<'_> {
    /// Whether `lifecycle.prevent_destroy` protects the resource's instances: a literal, or
    /// an expression the plan must know (OpenTofu 1.12). An invalid or unknown one protects,
    /// its error reported, so that no mistake lets a destroy through.
    pub(crate) fn prevent_destroy(&mut self, module: usize, r: &Resource) -> bool {
        self.prevent_destroy_known(module, r, true)
    }

    /// `prevent_destroy`'s type, where the values it reads may not be known yet (validate).
    pub(crate) fn check_prevent_destroy(&mut self, module: usize, r: &Resource) {
        self.prevent_destroy_known(module, r, false);
    }

    fn prevent_destroy_known(&mut self, module: usize, r: &Resource, must_know: bool) -> bool {
        let Some(expr) = &r.lifecycle().prevent_destroy else {
            return false;
        };
        let value = self.eval(module, expr, None);
        match Type::Bool.convert(&value.clone().unmark_deep().0) {
            Ok(Value::Bool(protect)) => protect,
            Ok(Value::Unknown) if !must_know => true,
            Ok(Value::Unknown) => {
                self.diags.push(Diag::error(
                    expr.span(),
                    "Invalid prevent_destroy",
                    "prevent_destroy must be known when the plan is made: use variables and locals, not what only apply will know.",
                ));
                true
            }
            _ => {
                self.diags.push(Diag::error(
                    expr.span(),
                    "Invalid prevent_destroy",
                    format!("prevent_destroy must be true or false, not {value}."),
                ));
                true
            }
        }
    }
}
