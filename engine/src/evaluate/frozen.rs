//! A provisioner's arguments, evaluated once its object exists: every name they read besides
//! `self` is resolved when the resource's node starts (the walk moves on while the provider
//! works), and `self` is the object the provider answered with.

use super::scope::ModuleScope;
use super::{EvalContext, Repetition};
use gpustack_lang::config::BodyRef;
use gpustack_lang::expr::eval::{EvalError, Evaluator, Scope};
use gpustack_protocol::Value;
use std::borrow::Cow;
use std::ops::Range;

/// The values a body reads, by the leading names that resolved them.
#[derive(Clone, Default)]
pub(crate) struct Frozen {
    values: Vec<(Vec<String>, Value)>,
}

struct FrozenScope<'f> {
    frozen: &'f Frozen,
    self_value: &'f Value,
}

impl Scope for FrozenScope<'_> {
    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        if names.first() == Some(&"self") {
            return Ok((Cow::Borrowed(self.self_value), 1));
        }
        self.frozen
            .values
            .iter()
            .find(|(resolved, _)| {
                resolved.len() <= names.len() && resolved.iter().zip(names).all(|(a, b)| a == b)
            })
            .map(|(resolved, value)| (Cow::Borrowed(value), resolved.len()))
            .ok_or_else(|| {
                EvalError::new(
                    range,
                    "Reference not resolved",
                    format!(
                        "{} was not resolved when the resource started",
                        names.join(".")
                    ),
                )
            })
    }
}

impl Frozen {
    /// The body's arguments as an object, with `self` the object as it now is.
    pub(crate) fn evaluate(&self, body: &BodyRef, self_value: &Value) -> Result<Value, String> {
        let scope = FrozenScope {
            frozen: self,
            self_value,
        };
        let mut out = indexmap::IndexMap::new();
        for attribute in body.body.attributes() {
            let value = Evaluator::new(&scope)
                .eval(&attribute.value)
                .map_err(|e| format!("{}: {}", attribute.key.as_str(), e.detail))?;
            out.insert(attribute.key.as_str().to_owned(), value);
        }
        Ok(Value::Object(out))
    }
}

impl EvalContext<'_> {
    /// What `body` reads in `module` besides `self`, resolved now; None (with the errors
    /// reported) when a name does not resolve.
    pub(crate) fn freeze(
        &mut self,
        module: usize,
        body: &BodyRef,
        repetition: Option<Repetition>,
    ) -> Option<Frozen> {
        let mut frozen = Frozen::default();
        let mut errors = Vec::new();
        {
            let scope = ModuleScope {
                eval: self,
                module,
                repetition,
                file: Some(body.file),
            };
            for attribute in body.body.attributes() {
                for reference in gpustack_lang::expr::refs::references(&attribute.value) {
                    let names = reference.names();
                    if names.first() == Some(&"self") {
                        continue;
                    }
                    match scope.lookup(names, reference.range.clone()) {
                        Ok((value, used)) => frozen.values.push((
                            names[..used].iter().map(|n| (*n).to_owned()).collect(),
                            value.into_owned(),
                        )),
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        let failed = !errors.is_empty();
        for e in errors {
            self.report(body.file, e);
        }
        (!failed).then_some(frozen)
    }
}
