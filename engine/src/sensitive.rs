//! Which expressions carry sensitive values, so that no output shows one unless it is marked
//! `sensitive = true` (Terraform's rule, checked statically here).
//!
//! A value is sensitive when it comes from a sensitive variable, from a sensitive attribute of
//! a resource (by its schema), or from a local, module output or module input that is.

use crate::config::{Expr, Stack};
use crate::diag::{Diag, Diags};
use crate::lang::refs::references;
use gpustack_providers::Registry;
use std::collections::HashSet;

struct Finder<'a> {
    stack: &'a Stack,
    registry: &'a Registry,
    /// (module, kind, name) already visited: cycles and shared locals are walked once.
    seen: HashSet<(usize, &'static str, String)>,
}

impl Finder<'_> {
    /// The first sensitive source an expression reads, as a name users recognise.
    fn source(&mut self, module: usize, expr: &Expr) -> Option<String> {
        let m = &self.stack.modules[module];
        for reference in references(&expr.expr) {
            let names: Vec<&str> = reference.names.iter().map(String::as_str).collect();
            let found = match names.as_slice() {
                ["var", name, ..] => self.variable(module, name),
                ["local", name, ..] => match m.locals.get(*name) {
                    Some(local) if self.seen.insert((module, "local", (*name).to_owned())) => {
                        self.source(module, &local.expr)
                    }
                    _ => None,
                },
                ["module", call, rest @ ..] => {
                    let child = m.children.get(*call).copied();
                    let outputs: Vec<String> = match (child, rest.first()) {
                        (Some(c), Some(o)) => vec![(*o).to_owned()]
                            .into_iter()
                            .filter(|o| self.stack.modules[c].outputs.contains_key(o))
                            .collect(),
                        (Some(c), None) => self.stack.modules[c].outputs.keys().cloned().collect(),
                        _ => vec![],
                    };
                    child.and_then(|c| outputs.iter().find_map(|o| self.output(c, o)))
                }
                ["data", ..] | ["count", ..] | ["each", ..] | ["path", ..] | ["self", ..] => None,
                [ty, name, attr, ..] => {
                    let declared = m.resources.contains_key(&format!("{ty}.{name}"));
                    let sensitive = self
                        .registry
                        .resource_schema(ty)
                        .and_then(|s| s.attributes.get(*attr))
                        .is_some_and(|a| a.sensitive);
                    (declared && sensitive).then(|| format!("{ty}.{name}.{attr}"))
                }
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    fn variable(&mut self, module: usize, name: &str) -> Option<String> {
        let m = &self.stack.modules[module];
        let v = m.variables.get(name)?;
        if v.sensitive {
            return Some(format!("{}var.{name}", m.prefix()));
        }
        if !self.seen.insert((module, "var", name.to_owned())) {
            return None;
        }
        // A module input is as sensitive as the caller's argument.
        let parent = m.parent?;
        let call = self.stack.modules[parent].calls.get(m.path.last()?)?;
        let (arg, _) = call.args.get(name)?;
        self.source(parent, arg)
    }

    fn output(&mut self, module: usize, name: &str) -> Option<String> {
        let output = self.stack.modules[module].outputs.get(name)?;
        if output.sensitive {
            return Some(format!(
                "{}output.{name}",
                self.stack.modules[module].prefix()
            ));
        }
        if !self.seen.insert((module, "output", name.to_owned())) {
            return None;
        }
        self.source(module, &output.value)
    }
}

/// Every output, in every module, that reads a sensitive value without `sensitive = true`.
pub(crate) fn check_outputs(stack: &Stack, registry: &Registry, diags: &mut Diags) {
    for (i, m) in stack.modules.iter().enumerate() {
        for output in m.outputs.values().filter(|o| !o.sensitive) {
            let mut finder = Finder {
                stack,
                registry,
                seen: HashSet::new(),
            };
            if let Some(source) = finder.source(i, &output.value) {
                diags.push(Diag::error(
                    output.value.span(),
                    "Output refers to sensitive values",
                    format!("Output \"{}\" reads {source}, which is sensitive. Mark the output sensitive = true to confirm it may carry it (it is then never displayed).", output.name),
                ));
            }
        }
    }
}
