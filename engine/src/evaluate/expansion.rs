//! How count, for_each and `lifecycle { enabled }` expand a resource block or a module call
//! into instances, and the bindings (`count.index`, `each.key`, `each.value`) each instance's
//! expressions see.

use super::{EvalContext, EvalOptions, Inputs};
use crate::graph::{Graph, NodeKind};
use gpustack_lang::config::{Expr, Resource, Stack};
use gpustack_lang::diag::{Diag, Diags};
use gpustack_lang::source::SourceMap;
use gpustack_protocol::{Registry, Type, Value};
use indexmap::IndexMap;

/// The most instances `count` or `for_each` may make of one block: beyond it a typo (or a
/// hostile module) would exhaust memory before anything could be shown.
pub const MAX_INSTANCES: usize = 100_000;

/// The instances of every repeated module call that `expansions` does not have yet, from a
/// static evaluation of the stack as loaded so far (its repeated calls loaded once, as
/// templates). A count or for_each that is not known, or not valid, is reported in `diags`
/// and expands to no instance.
pub fn module_expansions(
    stack: &Stack,
    graph: &Graph,
    registry: &Registry,
    sources: &SourceMap,
    inputs: &Inputs,
    expansions: &gpustack_lang::config::ModuleExpansions,
    diags: &mut Diags,
) -> gpustack_lang::config::ModuleExpansions {
    let pending: Vec<(usize, &gpustack_lang::config::ModuleCall)> = stack
        .modules
        .iter()
        .enumerate()
        .flat_map(|(i, m)| m.calls.values().map(move |c| (i, c)))
        .filter(|(i, c)| {
            c.is_repeated()
                && !expansions.contains_key(&(stack.modules[*i].path.clone(), c.name.clone()))
        })
        .collect();
    let mut found = gpustack_lang::config::ModuleExpansions::new();
    if pending.is_empty() {
        return found;
    }
    // Everything but the counts and for_eachs is reported by the final evaluation.
    let mut scratch = Diags::default();
    let mut walk = EvalContext::new(stack, registry, sources, &mut scratch);
    walk.workspace.clone_from(&inputs.workspace);
    for node in graph.order() {
        let n = &graph.graph[node];
        match &n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                walk.step_value(
                    graph,
                    node,
                    inputs,
                    EvalOptions {
                        allow_missing_inputs: true,
                    },
                );
            }
            NodeKind::Provider | NodeKind::Resource(_) => {}
        }
    }
    let mut errors = Diags::default();
    for (module, call) in pending {
        let before = walk.diags.0.len();
        let expansion = walk.repetition_of(module, call.count.as_ref(), call.for_each.as_ref());
        errors.0.extend(walk.diags.0.drain(before..));
        let instances = match expansion {
            Expansion::Count(n) => (0..n)
                .map(|i| gpustack_lang::config::ModuleInstance {
                    call: call.name.clone(),
                    key: format!("[{i}]"),
                    count_index: Some(i),
                    each: None,
                })
                .collect(),
            Expansion::ForEach(items) => items
                .into_iter()
                .map(|(k, v)| gpustack_lang::config::ModuleInstance {
                    call: call.name.clone(),
                    key: format!("[{}]", Value::string(k.clone())),
                    count_index: None,
                    each: Some((k, v)),
                })
                .collect(),
            Expansion::Unknown => {
                let what = if call.count.is_some() {
                    "count"
                } else {
                    "for_each"
                };
                let span = call
                    .count
                    .as_ref()
                    .or(call.for_each.as_ref())
                    .map(Expr::span);
                errors.push(Diag::error(
                    span,
                    format!("Invalid {what} argument"),
                    format!("The {what} of module \"{}\" depends on values that are known only after apply; gpustack must know which module instances to plan. Use --target to apply what it depends on first.", call.name),
                ));
                Vec::new()
            }
            Expansion::Single | Expansion::Disabled | Expansion::Invalid => Vec::new(),
        };
        found.insert(
            (stack.modules[module].path.clone(), call.name.clone()),
            instances,
        );
    }
    drop(walk);
    diags.0.extend(errors.0);
    found
}

/// How a resource block expands.
pub(crate) enum Expansion {
    Single,
    Count(usize),
    ForEach(IndexMap<String, Value>),
    /// `lifecycle { enabled = false }` (OpenTofu): no instance, and references see null.
    Disabled,
    /// count or for_each is not known yet: the body is checked once with unknown keys.
    Unknown,
    /// count or for_each is wrong, and that has been reported: checked as if unknown.
    Invalid,
}

/// Bindings of `count.index` / `each.key` / `each.value` inside a resource body.
#[derive(Clone, Default)]
pub(crate) struct Repetition {
    pub(crate) count_index: Option<Value>,
    pub(crate) each: Option<(Value, Value)>,
    /// The iterators of the `dynamic` blocks around an expression, innermost last: each
    /// name is an object with `key` and `value`.
    pub(crate) iterators: Vec<(String, Value, Value)>,
    /// `self` in a postcondition: the planned (or applied) object.
    pub(crate) self_value: Option<Value>,
}

impl EvalContext<'_> {
    pub(crate) fn expansion(&mut self, module: usize, r: &Resource) -> Expansion {
        if let Some(enabled) = &r.lifecycle().enabled {
            let value = self.eval(module, enabled, None);
            return match Type::Bool.convert(&value.clone().unmark_deep().0) {
                Ok(Value::Bool(true)) => Expansion::Single,
                Ok(Value::Bool(false)) => Expansion::Disabled,
                Ok(Value::Unknown) => Expansion::Unknown,
                _ => {
                    self.diags.error(
                        enabled.span(),
                        "Invalid enabled argument",
                        format!("enabled must be true or false, not {value}."),
                    );
                    Expansion::Invalid
                }
            };
        }
        self.repetition_of(module, r.count.as_deref(), r.for_each.as_deref())
    }

    /// How count or for_each, evaluated in `module`, expand a block (a resource or a module
    /// call); Single when neither is set.
    pub(crate) fn repetition_of(
        &mut self,
        module: usize,
        count: Option<&Expr>,
        for_each: Option<&Expr>,
    ) -> Expansion {
        if let Some(count) = count {
            let value = self.eval(module, count, None);
            if value.contains_sensitive() {
                self.diags.error(
                    count.span(),
                    "Invalid count argument",
                    "Sensitive values, or values derived from sensitive values, cannot be used as count arguments. If used, the sensitive value could be exposed as a resource instance key.",
                );
                return Expansion::Invalid;
            }
            return match value {
                Value::Unknown => Expansion::Unknown,
                value => match Type::Number.convert(&value) {
                    Ok(Value::Number(n))
                        if n.to_i64()
                            .and_then(|i| usize::try_from(i).ok())
                            .is_some_and(|i| i <= MAX_INSTANCES) =>
                    {
                        Expansion::Count(
                            n.to_i64()
                                .and_then(|i| usize::try_from(i).ok())
                                .unwrap_or(0),
                        )
                    }
                    _ => {
                        self.diags.error(
                            count.span(),
                            "Invalid count argument",
                            format!(
                                "count must be a whole number from 0 to {MAX_INSTANCES}, not {}.",
                                value
                            ),
                        );
                        Expansion::Invalid
                    }
                },
            };
        }
        let Some(for_each) = for_each else {
            return Expansion::Single;
        };
        let value = self.eval(module, for_each, None);
        // The keys become instance addresses, which every plan shows; the values may be secret.
        let secret_keys = value.is_sensitive()
            || value
                .as_list()
                .is_some_and(|items| items.iter().any(Value::contains_sensitive));
        if secret_keys {
            self.diags.error(
                for_each.span(),
                "Invalid for_each argument",
                "Sensitive values, or values derived from sensitive values, cannot be used as for_each arguments. If used, the sensitive value could be exposed as a resource instance key.",
            );
            return Expansion::Invalid;
        }
        let size = match &value {
            Value::Object(map) => map.len(),
            Value::List(items) => items.len(),
            _ => 0,
        };
        if size > MAX_INSTANCES {
            self.diags.error(
                for_each.span(),
                "Invalid for_each argument",
                format!(
                    "for_each may make at most {MAX_INSTANCES} instances of a block, not {size}."
                ),
            );
            return Expansion::Invalid;
        }
        match value {
            Value::Unknown => Expansion::Unknown,
            Value::Object(map) => Expansion::ForEach(map),
            Value::List(items) => {
                let mut set = IndexMap::new();
                for item in items {
                    match item {
                        Value::String(s) => {
                            set.insert(s.clone(), Value::String(s));
                        }
                        Value::Unknown => return Expansion::Unknown,
                        other => {
                            self.diags.error(for_each.span(), "Invalid for_each argument", format!("A list given to for_each must hold strings (it is used as a set), not {}; use a map to name the instances.", other.type_name()));
                            return Expansion::Invalid;
                        }
                    }
                }
                Expansion::ForEach(set)
            }
            other => {
                self.diags.error(
                    for_each.span(),
                    "Invalid for_each argument",
                    format!(
                        "for_each needs a map or a set of strings, not {}.",
                        if other.is_null() {
                            "null".to_owned()
                        } else {
                            other.type_name().to_owned()
                        }
                    ),
                );
                Expansion::Invalid
            }
        }
    }
}
