//! The values of variables: a root variable's from its sources (`-var`, variables files, the
//! environment, a saved plan) in Terraform's precedence, a module variable's from its call,
//! each converted to its type and validated.

use super::{EvalContext, EvalOptions, Repetition};
use gpustack_lang::config::{Expr, Stack, Variable};
use gpustack_lang::diag::{Diag, suggest};
use gpustack_lang::expr::eval::{EmptyScope, Evaluator};
use gpustack_lang::source::Span;
use gpustack_protocol::{Type, Value};
use hcl_edit::expr::Expression;
use indexmap::IndexMap;

/// A value for a root variable, before it is converted to the variable's type.
#[derive(Debug, Clone)]
pub enum RawInput {
    /// From `-var name=value`, `TF_VAR_name` or `GPUSTACK_VAR_name`: a string for string
    /// variables, an HCL expression for the others. `origin` says where it came from, for
    /// diagnostics; `environment` is set for the environment's, which may name variables the
    /// stack does not declare (as Terraform ignores such `TF_VAR_`s).
    Text {
        raw: String,
        origin: String,
        environment: bool,
    },
    /// From a variables file in HCL, with its location.
    Expr(Expr),
    /// From a variables file in JSON (`terraform.tfvars.json`): the member's value as it is,
    /// and where it was written.
    Json { value: Value, span: Span },
    /// Already evaluated: the variables recorded in a saved plan.
    Value(Value),
}

#[derive(Debug)]
pub struct Inputs {
    pub values: IndexMap<String, RawInput>,
    /// The workspace the run is in: what `terraform.workspace` is.
    pub workspace: String,
}

impl Inputs {
    pub fn new(values: IndexMap<String, RawInput>, workspace: &str) -> Self {
        Self {
            values,
            workspace: workspace.to_owned(),
        }
    }
}

/// What the loader reads of the inputs: the values of the const root variables.
impl gpustack_lang::config::RootValues for Inputs {
    fn value(&self, name: &str, ty: &Type) -> Option<Value> {
        match self.values.get(name)? {
            RawInput::Text { raw, .. } => parse_text_input(raw, ty).ok(),
            RawInput::Expr(expr) => Evaluator::new(&EmptyScope).eval(&expr.expr).ok(),
            RawInput::Json { value, .. } | RawInput::Value(value) => Some(value.clone()),
        }
    }
}

impl Default for Inputs {
    fn default() -> Self {
        Self::new(IndexMap::new(), gpustack_state::DEFAULT_WORKSPACE)
    }
}

impl EvalContext<'_> {
    pub(crate) fn check_inputs(&mut self, inputs: &Inputs) {
        let root = self.stack.root();
        for (name, raw) in &inputs.values {
            if root.variables.contains_key(name) {
                continue;
            }
            let detail = format!(
                "The stack declares no variable \"{name}\".{}",
                suggest(name, root.variables.keys().map(String::as_str))
            );
            match raw {
                RawInput::Expr(expr) => self.diags.push(Diag::warning(
                    expr.span(),
                    "Value for undeclared variable",
                    detail,
                )),
                RawInput::Text {
                    environment: true, ..
                } => {}
                RawInput::Text { origin, .. } => self.diags.push(Diag::error(
                    None,
                    "Value for undeclared variable",
                    format!("{detail} (set by {origin})"),
                )),
                RawInput::Json { span, .. } => self.diags.push(Diag::warning(
                    *span,
                    "Value for undeclared variable",
                    detail,
                )),
                RawInput::Value(_) => {
                    self.diags
                        .push(Diag::error(None, "Value for undeclared variable", detail))
                }
            }
        }
    }

    // Long by design: a root or module variable's value from its sources in precedence order,
    // converted, defaulted and validated in the order Terraform gives.
    pub(super) fn variable(
        &mut self,
        module: usize,
        v: &Variable,
        inputs: &Inputs,
        options: EvalOptions,
    ) -> Value {
        // The value, where it was written (for diagnostics), and the file that spans refer to.
        let (value, at): (Value, Option<Span>) = if module == 0 {
            if let Some(message) = &v.deprecated
                && inputs.values.contains_key(&v.name)
            {
                self.diags.push(Diag::warning(
                    v.span,
                    "Deprecated variable",
                    format!("\"{}\" is set, but it is deprecated: {message}", v.name),
                ));
            }
            match inputs.values.get(&v.name) {
                Some(RawInput::Expr(expr)) => {
                    let value = Evaluator::new(&EmptyScope).eval(&expr.expr);
                    match value {
                        Ok(value) => (value, Some(expr.span())),
                        Err(err) => {
                            self.report(expr.file, err);
                            return Value::Unknown;
                        }
                    }
                }
                Some(RawInput::Value(value)) => (value.clone(), None),
                Some(RawInput::Json { value, span }) => (value.clone(), Some(*span)),
                Some(RawInput::Text { raw, origin, .. }) => {
                    match parse_text_input(raw, text_type(v)) {
                        Ok(value) => (value, None),
                        Err(message) => {
                            // What the parser quotes of a secret is the secret.
                            let message = if v.sensitive {
                                gpustack_lang::diag::redact_quoted(&message)
                            } else {
                                message
                            };
                            self.diags.error(
                                v.span,
                                "Invalid value for input variable",
                                format!(
                                    "The value of \"{}\" set by {origin} is not valid: {message}",
                                    v.name
                                ),
                            );
                            return Value::Unknown;
                        }
                    }
                }
                None => match &v.default {
                    Some(default) => (self.eval_default(default), Some(default.span())),
                    // Unknown until plan, and already a secret for what reads it.
                    None if options.allow_missing_inputs && v.sensitive => {
                        return Value::sensitive(Value::Unknown);
                    }
                    None if options.allow_missing_inputs => return Value::Unknown,
                    None if self
                        .recorded
                        .as_ref()
                        .is_some_and(|r| r.ephemeral_variables.contains(&v.name)) =>
                    {
                        self.diags.error(v.span, "No value for ephemeral variable", format!("\"{}\" is ephemeral, so the saved plan holds nothing of its value: give it again to apply the plan, with -var {}=..., a -var-file, or TF_VAR_{}.", v.name, v.name, v.name));
                        return Value::Unknown;
                    }
                    None if self
                        .recorded
                        .as_ref()
                        .is_some_and(|r| r.sensitive_variables.contains_key(&v.name)) =>
                    {
                        self.diags.error(v.span, "No value for sensitive variable", format!("\"{}\" is sensitive, so the saved plan does not hold its value: give it again to apply the plan, with --var {}=..., a --var-file, or GPUSTACK_VAR_{}.", v.name, v.name, v.name));
                        return Value::Unknown;
                    }
                    None => {
                        self.diags.error(v.span, "No value for required variable", format!("The root variable \"{}\" has no default: set it with -var {}=..., a -var-file, terraform.tfvars, TF_VAR_{} or GPUSTACK_VAR_{}.", v.name, v.name, v.name, v.name));
                        return Value::Unknown;
                    }
                },
            }
        } else {
            let parent = self.stack.modules[module].parent.unwrap_or(0);
            let call_name = self.stack.modules[module]
                .call_name()
                .unwrap_or_default()
                .to_owned();
            let call = self.stack.modules[parent].calls.get(&call_name);
            // An instance's arguments see its count.index or each.key/each.value; a repeated
            // call loaded once, as the template of instances not known yet (or not expanded
            // after an earlier error), sees them unknown, as a resource's body does.
            let repetition = match &self.stack.modules[module].instance {
                Some(i) => Some(Repetition {
                    count_index: i.count_index.map(|n| Value::number(n as f64)),
                    each: i
                        .each
                        .as_ref()
                        .map(|(k, v)| (Value::String(k.clone()), v.clone())),
                    ..Repetition::default()
                }),
                None => call.filter(|c| c.is_repeated()).map(|c| Repetition {
                    count_index: c.count.as_ref().map(|_| Value::Unknown),
                    each: c
                        .for_each
                        .as_ref()
                        .map(|_| (Value::Unknown, Value::Unknown)),
                    ..Repetition::default()
                }),
            };
            // Said once however many instances the call has: equal diagnostics are one.
            if let (Some(message), Some((_, arg_span))) =
                (&v.deprecated, call.and_then(|c| c.args.get(&v.name)))
            {
                self.diags.push(Diag::warning(
                    *arg_span,
                    "Deprecated variable",
                    format!(
                        "module \"{call_name}\" sets \"{}\", which is deprecated: {message}",
                        v.name
                    ),
                ));
            }
            match call.and_then(|c| c.args.get(&v.name)) {
                Some((expr, _)) => match (self.eval(parent, expr, repetition), &v.default) {
                    // A non-nullable variable given null takes its default, as in Terraform.
                    (value, Some(default)) if !v.nullable && value.is_null() => {
                        (self.eval_default(default), Some(default.span()))
                    }
                    (value, _) => (value, Some(expr.span())),
                },
                None => match &v.default {
                    Some(default) => (self.eval_default(default), Some(default.span())),
                    None if v.sensitive => return Value::sensitive(Value::Unknown),
                    None => return Value::Unknown,
                },
            }
        };
        // Marked before anything reads it, so that no message quotes it; an ephemeral value
        // is as secret as a sensitive one wherever it may go.
        let value = if v.sensitive || v.ephemeral {
            Value::sensitive(value)
        } else {
            value
        };
        let value = match v.ty.convert(&value) {
            Ok(value) => value,
            Err(err) => {
                self.diags.error(
                    at.or(Some(v.span)),
                    "Invalid value for input variable",
                    format!(
                        "The value for variable \"{}\" does not fit its type {}: {err}.",
                        v.name, v.ty
                    ),
                );
                return Value::Unknown;
            }
        };
        if value.is_null() && !v.nullable {
            self.diags.error(
                at.or(Some(v.span)),
                "Invalid value for input variable",
                format!(
                    "The variable \"{}\" is not nullable; a value is required.",
                    v.name
                ),
            );
            return Value::Unknown;
        }
        self.validate_variable(module, v, &value, at);
        if module == 0
            && let Some(recorded) = &self.recorded
            && let Some(digest) = recorded.sensitive_variables.get(&v.name)
            && value.is_wholly_known()
            && recorded.salt.digest(&value) != *digest
        {
            self.diags.error(
                at.or(Some(v.span)),
                "Sensitive variable differs from the plan",
                format!("The value given for the sensitive variable \"{}\" is not the one the plan was made with (the plan holds only its digest). Give the same value, or make a new plan.", v.name),
            );
            return Value::Unknown;
        }
        value
    }

    fn eval_default(&mut self, default: &Expr) -> Value {
        Evaluator::new(&EmptyScope)
            .eval(&default.expr)
            .unwrap_or_else(|err| {
                self.report(default.file, err);
                Value::Unknown
            })
    }
}

/// A root variable the encryption block may read: declared, and sensitive, so that no plan
/// records its value (a saved plan is given it again, as every sensitive variable).
pub(super) fn encryption_variable<'s>(
    stack: &'s Stack,
    name: &str,
) -> Result<&'s Variable, (String, String)> {
    let Some(v) = stack.root().variables.get(name) else {
        return Err((
            "Reference to undeclared input variable".into(),
            format!(
                "The stack declares no variable \"{name}\".{}",
                suggest(name, stack.root().variables.keys().map(String::as_str))
            ),
        ));
    };
    if !v.sensitive {
        return Err((
            "Variable must be sensitive".into(),
            format!(
                "The encryption block reads var.{name}, which holds a key or a passphrase: declare it with sensitive = true, so that no plan or output holds its value."
            ),
        ));
    }
    Ok(v)
}

/// A root variable's value before anything else is evaluated (for the encryption block): from
/// the run's inputs, else its default, converted to its type.
pub(crate) fn static_root_variable(
    stack: &Stack,
    inputs: &Inputs,
    name: &str,
) -> Result<Value, (String, String)> {
    let v = encryption_variable(stack, name)?;
    let invalid = |detail: String| ("Invalid value for input variable".to_owned(), detail);
    let literal = |expr: &Expr| {
        Evaluator::new(&EmptyScope)
            .eval(&expr.expr)
            .map_err(|e| invalid(format!("{}: {}", e.summary, e.detail)))
    };
    let value = match inputs.values.get(name) {
        Some(RawInput::Text { raw, .. }) => parse_text_input(raw, text_type(v)).map_err(invalid)?,
        Some(RawInput::Expr(expr)) => literal(expr)?,
        Some(RawInput::Value(value) | RawInput::Json { value, .. }) => value.clone(),
        None => match &v.default {
            Some(default) => literal(default)?,
            None => {
                return Err((
                    "No value for variable".into(),
                    format!(
                        "The encryption block reads var.{name}, which has no value: set it with --var {name}=..., a --var-file, or GPUSTACK_VAR_{name}."
                    ),
                ));
            }
        },
    };
    v.ty.convert(&value).map_err(|e| {
        invalid(format!(
            "The value for var.{name} does not fit its type {}: {e}.",
            v.ty
        ))
    })
}

/// The type a value given as text is read as: a variable without a `type` takes the text as a
/// string, as Terraform's literal parsing mode does (`-var mode=0640` is "0640").
fn text_type(v: &gpustack_lang::config::Variable) -> &Type {
    if v.typed { &v.ty } else { &Type::String }
}

/// `--var` and `GPUSTACK_VAR_` values: raw text for string variables (as Terraform does), HCL
/// for everything else, so `--var 'zones=["1","2"]'` works.
fn parse_text_input(raw: &str, ty: &Type) -> Result<Value, String> {
    if matches!(ty, Type::String) {
        return Ok(Value::String(raw.to_owned()));
    }
    let expr = hcl_edit::parser::parse_expr(raw)
        .map_err(|e| format!("{} (at column {}).", e.message(), e.location().column()))?;
    let value = Evaluator::new(&EmptyScope)
        .eval(&expr)
        .map_err(|e| format!("{} {}", e.summary, e.detail))?;
    match (&value, ty) {
        // A bare word for an `any` variable is a string, not a reference.
        (_, Type::Any) if matches!(expr, Expression::Variable(_)) => {
            Ok(Value::String(raw.to_owned()))
        }
        _ => Ok(value),
    }
}
