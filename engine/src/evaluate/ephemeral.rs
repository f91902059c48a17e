//! Where an ephemeral value may go (Terraform 1.10): what is derived from an ephemeral
//! variable, or a child module's ephemeral output, is ephemeral too (a local reading one is),
//! and may reach only locals, provider blocks, conditions, ephemeral outputs, a child's
//! ephemeral variables and write-only arguments — never a plan or the state. Decided from
//! the references that reach a value (`ephemeralasnull(...)` answers null for what it wraps),
//! as conservatively as Terraform's marks propagate: whatever reads an ephemeral value is.

use gpustack_lang::config::{BodyRef, Expr, Module, Stack};
use gpustack_lang::diag::{Diag, Diags};
use gpustack_lang::expr::refs::{Ref, references_reaching_the_value};
use gpustack_lang::source::Span;
use gpustack_protocol::Registry;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Structure;
use std::collections::HashSet;

/// The ephemeral names of each module: its ephemeral variables and the locals derived from
/// them or from a child's ephemeral outputs.
#[derive(Debug, Default)]
pub(crate) struct Ephemeral {
    modules: Vec<ModuleNames>,
}

#[derive(Debug, Default)]
struct ModuleNames {
    variables: HashSet<String>,
    locals: HashSet<String>,
}

impl Ephemeral {
    pub(crate) fn of(stack: &Stack) -> Self {
        let modules = stack
            .modules
            .iter()
            .map(|m| {
                let variables: HashSet<String> = m
                    .variables
                    .values()
                    .filter(|v| v.ephemeral)
                    .map(|v| v.name.clone())
                    .collect();
                let mut names = ModuleNames {
                    variables,
                    locals: HashSet::new(),
                };
                // The locals that read an ephemeral value directly, then every local that
                // reads one of those, breadth-first over who reads whom: linear in the locals.
                let mut readers: std::collections::HashMap<&str, Vec<&str>> = Default::default();
                let mut pending = std::collections::VecDeque::new();
                for l in m.locals.values() {
                    for r in references_reaching_the_value(&l.expr.expr) {
                        if let ["local", name, ..] = r.names() {
                            readers.entry(*name).or_default().push(l.name.as_str());
                        } else if names.reads(stack, m, &r) {
                            pending.push_back(l.name.as_str());
                        }
                    }
                }
                while let Some(name) = pending.pop_front() {
                    if names.locals.insert(name.to_owned()) {
                        pending.extend(readers.get(name).into_iter().flatten().copied());
                    }
                }
                names
            })
            .collect();
        Self { modules }
    }

    /// Whether `expr` of `module` reads an ephemeral value into its result.
    pub(crate) fn reads(&self, stack: &Stack, module: usize, expr: &Expression) -> bool {
        self.first(stack, module, expr).is_some()
    }

    /// The first reference of `expr` that reads an ephemeral value into its result.
    fn first<'e>(&self, stack: &Stack, module: usize, expr: &'e Expression) -> Option<Ref<'e>> {
        let (names, m) = (self.modules.get(module)?, &stack.modules[module]);
        references_reaching_the_value(expr)
            .into_iter()
            .find(|r| names.reads(stack, m, r))
    }
}

impl ModuleNames {
    fn reads(&self, stack: &Stack, m: &Module, reference: &Ref<'_>) -> bool {
        match reference.names() {
            ["var", name, ..] => self.variables.contains(*name),
            ["local", name, ..] => self.locals.contains(*name),
            ["module", call, rest @ ..] => {
                let children: Vec<usize> = m
                    .children
                    .get(*call)
                    .copied()
                    .into_iter()
                    .chain(m.instances.get(*call).into_iter().flatten().copied())
                    .collect();
                children.iter().any(|&c| {
                    let outputs = &stack.modules[c].outputs;
                    match rest.first() {
                        Some(output) => outputs.get(*output).is_some_and(|o| o.ephemeral),
                        None => outputs.values().any(|o| o.ephemeral),
                    }
                })
            }
            _ => false,
        }
    }
}

/// Reports every place of the stack an ephemeral value reaches that would write it down.
pub(crate) fn check(stack: &Stack, registry: &Registry, ephemeral: &Ephemeral, diags: &mut Diags) {
    for (i, m) in stack.modules.iter().enumerate() {
        let at = |r: &Ref<'_>, expr: &Expr| {
            r.range
                .clone()
                .map(|range| Span::new(expr.file, range))
                .or_else(|| Some(expr.span()))
        };
        for r in m.resources.values().chain(m.data.values()) {
            let schema = match r.mode {
                gpustack_protocol::ResourceMode::Managed => registry.resource_schema(&r.type_name),
                gpustack_protocol::ResourceMode::Data => registry.data_source_schema(&r.type_name),
            };
            let write_only: HashSet<&str> = schema
                .into_iter()
                .flat_map(|s| s.attributes.iter())
                .filter(|(_, a)| a.write_only)
                .map(|(name, _)| name.as_str())
                .collect();
            let what = format!(
                "{}{}.{}",
                if r.mode == gpustack_protocol::ResourceMode::Data {
                    "data."
                } else {
                    ""
                },
                r.type_name,
                r.name
            );
            for expr in r.count.iter().chain(r.for_each.iter()) {
                if let Some(found) = ephemeral.first(stack, i, &expr.expr) {
                    diags.push(refused(at(&found, expr), &what, "count or for_each"));
                }
            }
            body(
                stack,
                i,
                ephemeral,
                &r.body,
                &write_only,
                true,
                &mut |found, span, name| {
                    diags.push(refused(found.or(Some(span)), &what, name));
                },
            );
        }
        for o in m.outputs.values().filter(|o| !o.ephemeral) {
            if let Some(found) = ephemeral.first(stack, i, &o.value.expr) {
                diags.push(Diag::error(
                    at(&found, &o.value),
                    "Ephemeral value not allowed",
                    format!(
                        "Output \"{}\" is not declared ephemeral, so it cannot hold a value derived from an ephemeral one: outputs are written to the state. Declare it ephemeral = true (a child module's only), or wrap the value in ephemeralasnull().",
                        o.name
                    ),
                ));
            }
        }
        for call in m.calls.values() {
            let children: Vec<usize> = m
                .children
                .get(&call.name)
                .copied()
                .into_iter()
                .chain(m.instances.get(&call.name).into_iter().flatten().copied())
                .collect();
            let Some(&child) = children.first() else {
                continue;
            };
            for (name, (expr, _)) in &call.args {
                let takes_ephemeral = stack.modules[child]
                    .variables
                    .get(name)
                    .is_none_or(|v| v.ephemeral);
                if takes_ephemeral {
                    continue;
                }
                if let Some(found) = ephemeral.first(stack, i, &expr.expr) {
                    diags.push(Diag::error(
                        at(&found, expr),
                        "Ephemeral value not allowed",
                        format!(
                            "Module \"{}\"'s variable \"{name}\" is not declared ephemeral, so it cannot take a value derived from an ephemeral one.",
                            call.name
                        ),
                    ));
                }
            }
        }
    }
}

/// Each argument of a resource's body (and of its nested blocks) that reads an ephemeral
/// value, top-level write-only arguments excepted.
fn body(
    stack: &Stack,
    module: usize,
    ephemeral: &Ephemeral,
    body_ref: &BodyRef,
    write_only: &HashSet<&str>,
    top: bool,
    found: &mut dyn FnMut(Option<Span>, Span, &str),
) {
    walk(
        stack,
        module,
        ephemeral,
        body_ref,
        &body_ref.body,
        write_only,
        top,
        found,
    );
}

#[allow(clippy::too_many_arguments)]
fn walk(
    stack: &Stack,
    module: usize,
    ephemeral: &Ephemeral,
    body_ref: &BodyRef,
    body: &hcl_edit::structure::Body,
    write_only: &HashSet<&str>,
    top: bool,
    found: &mut dyn FnMut(Option<Span>, Span, &str),
) {
    use hcl_edit::Span as _;
    for structure in body.iter() {
        match structure {
            Structure::Attribute(attr) => {
                let name = attr.key.as_str();
                if top && write_only.contains(name) {
                    continue;
                }
                if let Some(r) = ephemeral.first(stack, module, &attr.value) {
                    let span = gpustack_lang::config::span_of(body_ref.file, attr.value.span());
                    let at = r.range.map(|range| Span::new(body_ref.file, range));
                    found(at, span, name);
                }
            }
            Structure::Block(block) => walk(
                stack,
                module,
                ephemeral,
                body_ref,
                &block.body,
                write_only,
                false,
                found,
            ),
        }
    }
}

fn refused(span: Option<Span>, resource: &str, argument: &str) -> Diag {
    Diag::error(
        span,
        "Ephemeral value not allowed",
        format!(
            "{resource}'s {argument} is not a write-only argument, so it cannot take a value derived from an ephemeral one: what a resource is given is written to the plan and the state. Only write-only arguments, provider blocks, locals, conditions and ephemeral outputs and variables take ephemeral values; ephemeralasnull() drops one."
        ),
    )
}
