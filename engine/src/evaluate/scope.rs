//! The scope of one module's expressions: what `var.x`, `local.y`, `module.m.out`,
//! `data.t.n`, `count.index`, `each.key`, `path.module` and `TYPE.NAME` mean there, with
//! "did you mean" errors for what is not declared.

use super::{Decl, EvalContext, Repetition};
use gpustack_lang::config::Module;
use gpustack_lang::diag::suggest;
use gpustack_lang::expr::eval::{EvalError, ImpureCallError, ReadInputError, Scope};
use gpustack_lang::expr::functions::CallError;
use gpustack_protocol::Value;
use std::borrow::Cow;
use std::ops::Range;

pub(super) struct ModuleScope<'w, 'a> {
    pub(super) eval: &'w EvalContext<'a>,
    pub(super) module: usize,
    pub(super) repetition: Option<Repetition>,
    /// The file of the expression, which names the place of an impure call's record.
    pub(super) file: Option<gpustack_lang::source::FileId>,
}

/// A declared name's value; unknown when its node could not be evaluated.
fn found(v: Option<&Value>, used: usize) -> Result<(Cow<'_, Value>, usize), EvalError> {
    Ok((v.map_or(Cow::Owned(Value::Unknown), Cow::Borrowed), used))
}

fn undeclared(range: Option<Range<usize>>, summary: &str, detail: String) -> EvalError {
    EvalError::new(range, summary, detail)
}

/// A variable's or local's value (`what`: "An input variable", "A local value"), or the error
/// that no such name is declared, with the closest declared one.
fn declared<'v, T>(
    name: &str,
    range: Option<Range<usize>>,
    names: &gpustack_lang::config::Names<T>,
    value: Option<&'v Value>,
    what: &str,
) -> Result<(Cow<'v, Value>, usize), EvalError> {
    if names.contains_key(name) {
        return found(value, 2);
    }
    let kind = what.split_once(' ').map_or(what, |(_, kind)| kind);
    Err(undeclared(
        range,
        &format!("Reference to undeclared {kind}"),
        format!(
            "{what} named \"{name}\" has not been declared in this module.{}",
            suggest(name, names.keys().map(String::as_str))
        ),
    ))
}

/// How a path given to `file()` is recorded: relative to the working directory where it is
/// under it, so that a plan applied from another clone finds its files.
pub(super) fn input_key(path: &str) -> String {
    let p = std::path::Path::new(path);
    if p.is_absolute()
        && let Ok(cwd) = std::env::current_dir()
        && let Ok(rest) = p.strip_prefix(&cwd)
    {
        return rest.to_string_lossy().replace('\\', "/");
    }
    path.trim_start_matches("./").replace('\\', "/")
}

impl Scope for ModuleScope<'_, '_> {
    fn read_file(&self, path: &str) -> Result<Option<String>, ReadInputError> {
        self.eval.read_file(path)
    }

    fn inputs_mark(&self) -> usize {
        self.eval.flows.borrow().mark()
    }

    fn inputs_into_secret(&self, mark: usize) {
        self.eval.flows.borrow_mut().taint_since(mark);
    }

    fn reads_ephemeral(&self, expression: &hcl_edit::expr::Expression) -> bool {
        self.eval
            .ephemeral
            .reads(self.eval.stack, self.module, expression)
    }

    fn required_provider(&self, name: &str) -> Option<String> {
        self.eval.stack.modules[self.module]
            .terraform
            .as_ref()?
            .required_providers
            .iter()
            .find(|entry| entry.name == name)
            .map(|entry| entry.source.clone())
    }

    /// Recorded by the place of the call and the instance it is evaluated for; the plan's
    /// instant is one record for the whole plan.
    fn impure(
        &self,
        site: &str,
        make: &mut dyn FnMut() -> Result<Value, CallError>,
    ) -> Result<Value, ImpureCallError> {
        if site == "timestamp" {
            return self.eval.impure("gpustack:timestamp()", make);
        }
        let file = self
            .file
            .map(|f| self.eval.sources.file(f).display_name.clone())
            .unwrap_or_default();
        let instance = match &self.repetition {
            Some(r) => match (&r.count_index, &r.each) {
                (Some(index), _) => format!("[{index}]"),
                (None, Some((key, _))) => format!("[{key}]"),
                (None, None) => String::new(),
            },
            None => String::new(),
        };
        let prefix = self.eval.stack.modules[self.module].prefix();
        self.eval
            .impure(&format!("gpustack:{prefix}{file}:{site}{instance}"), make)
    }

    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        if let Some(first) = names.first()
            && let Some((_, key, value)) = self
                .repetition
                .as_ref()
                .and_then(|r| r.iterators.iter().rev().find(|(name, ..)| name == first))
        {
            let iterator = [
                ("key".to_owned(), key.clone()),
                ("value".to_owned(), value.clone()),
            ];
            return Ok((Cow::Owned(Value::Object(iterator.into_iter().collect())), 1));
        }
        match names {
            ["var", name, ..] => self.variable(name, range),
            ["local", name, ..] => self.local(name, range),
            ["module", call, rest @ ..] => self.module_output(call, rest, range),
            ["data", ty, name, ..] => self.data_source(ty, name, range),
            ["data", ..] => Err(undeclared(
                range,
                "Invalid data source reference",
                "A data source is referenced as data.TYPE.NAME.".into(),
            )),
            ["count", attr, ..] => self.count(attr, range),
            ["each", attr, ..] => self.each(attr, range),
            ["path", attr, ..] => self.path(attr, range),
            ["terraform", "workspace", ..] => {
                Ok((Cow::Owned(Value::string(&self.eval.workspace)), 2))
            }
            ["terraform", attr, ..] => Err(undeclared(
                range,
                "Invalid \"terraform\" attribute",
                format!(
                    "The \"terraform\" object has no attribute \"{attr}\"; only terraform.workspace is available."
                ),
            )),
            [
                root @ ("var" | "local" | "module" | "count" | "each" | "path" | "terraform"),
                ..,
            ] => Err(undeclared(
                range,
                "Invalid reference",
                format!("\"{root}\" must be followed by an attribute name, such as {root}.name."),
            )),
            ["self", ..]
                if self
                    .repetition
                    .as_ref()
                    .is_some_and(|r| r.self_value.is_some()) =>
            {
                let value = self
                    .repetition
                    .as_ref()
                    .and_then(|r| r.self_value.clone())
                    .unwrap_or(Value::Unknown);
                Ok((Cow::Owned(value), 1))
            }
            ["self", ..] => Err(undeclared(
                range,
                "Invalid reference",
                "\"self\" is not available here.".into(),
            )),
            [ty, name, ..] => self.resource(ty, name, range),
            [name] => {
                let hint = if self.eval.registry.owner_of(name).is_some() {
                    format!(" A resource is referenced as {name}.NAME.")
                } else {
                    String::new()
                };
                Err(undeclared(
                    range,
                    "Unknown variable",
                    format!("There is no variable named \"{name}\".{hint}"),
                ))
            }
            [] => Err(undeclared(range, "Invalid reference", String::new())),
        }
    }
}

impl ModuleScope<'_, '_> {
    /// A reference to a declaration reads what its value came from.
    fn reach(&self, module: usize, decl: Decl, name: &str) {
        self.eval.flows.borrow_mut().reach(module, decl, name);
    }

    fn variable(
        &self,
        name: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        self.reach(self.module, Decl::Var, name);
        let value = self.eval.values[self.module].vars.get(name);
        declared(name, range, &m.variables, value, "An input variable")
    }

    fn local(
        &self,
        name: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        self.reach(self.module, Decl::Local, name);
        let value = self.eval.values[self.module].locals.get(name);
        declared(name, range, &m.locals, value, "A local value")
    }

    fn module_output(
        &self,
        call: &str,
        rest: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        // A repeated call is a list (count) or map (for_each) of its instances' outputs; the
        // evaluator applies the index and attribute after it.
        if let Some(instances) = m.instances.get(call) {
            let repeated = m.calls.get(call).filter(|c| c.for_each.is_some());
            let objects = instances.iter().map(|&child| {
                self.eval.flows.borrow_mut().reach_all(child, Decl::Output);
                let module = &self.eval.stack.modules[child];
                let outputs = &self.eval.values[child].outputs;
                let object = module
                    .outputs
                    .keys()
                    .map(|k| (k.clone(), outputs.get(k).cloned().unwrap_or(Value::Unknown)))
                    .collect();
                let key = module
                    .instance
                    .as_ref()
                    .and_then(|i| i.each.as_ref().map(|(k, _)| k.clone()))
                    .unwrap_or_default();
                (key, Value::Object(object))
            });
            let value = if repeated.is_some() {
                Value::Object(objects.collect())
            } else {
                Value::List(objects.map(|(_, v)| v).collect())
            };
            return Ok((Cow::Owned(value), 2));
        }
        let Some(&child) = m.children.get(call) else {
            // A call whose module failed to load has been reported already: its
            // outputs are unknown rather than a second, misleading error.
            if m.calls.contains_key(call) {
                return found(None, rest.len().min(1) + 2);
            }
            return Err(undeclared(
                range,
                "Reference to undeclared module",
                format!(
                    "No module call named \"{call}\" is declared in this module.{}",
                    suggest(call, m.calls.keys().map(String::as_str))
                ),
            ));
        };
        let outputs = &self.eval.values[child].outputs;
        let declared = &self.eval.stack.modules[child].outputs;
        match rest.first() {
            Some(output) if declared.contains_key(*output) => {
                self.reach(child, Decl::Output, output);
                found(outputs.get(*output), 3)
            }
            // The module's files did not load whole: its own error says why, and the output
            // may be in what did not load.
            Some(_) if self.eval.stack.modules[child].incomplete => found(None, 3),
            Some(output) => Err(undeclared(
                range,
                "Unsupported attribute",
                format!(
                    "Module \"{call}\" has no output named \"{output}\".{}",
                    suggest(output, declared.keys().map(String::as_str))
                ),
            )),
            None => {
                self.eval.flows.borrow_mut().reach_all(child, Decl::Output);
                let object = declared
                    .keys()
                    .map(|k| (k.clone(), outputs.get(k).cloned().unwrap_or(Value::Unknown)))
                    .collect();
                Ok((Cow::Owned(Value::Object(object)), 2))
            }
        }
    }

    fn data_source(
        &self,
        ty: &str,
        name: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        let values = &self.eval.values[self.module];
        let key = format!("{ty}.{name}");
        self.reach(self.module, Decl::Data, &key);
        if m.data.contains_key(&key) {
            found(values.data.get(&key), 3)
        } else {
            Err(undeclared(
                range,
                "Reference to undeclared data source",
                format!("A data source \"{ty}\" \"{name}\" has not been declared in this module."),
            ))
        }
    }

    fn count(
        &self,
        attr: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        match self
            .repetition
            .as_ref()
            .and_then(|r| r.count_index.as_ref())
        {
            Some(index) if attr == "index" => Ok((Cow::Owned(index.clone()), 2)),
            Some(_) => Err(undeclared(
                range,
                "Invalid count attribute",
                "The count object has only the attribute \"index\".".into(),
            )),
            None => Err(undeclared(
                range,
                "Reference to \"count\" in non-counted context",
                "count.index is only available in a block that sets count.".into(),
            )),
        }
    }

    fn each(
        &self,
        attr: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        match self.repetition.as_ref().and_then(|r| r.each.as_ref()) {
            Some((key, _)) if attr == "key" => Ok((Cow::Owned(key.clone()), 2)),
            Some((_, value)) if attr == "value" => Ok((Cow::Owned(value.clone()), 2)),
            Some(_) => Err(undeclared(
                range,
                "Invalid each attribute",
                "The each object has only the attributes \"key\" and \"value\".".into(),
            )),
            None => Err(undeclared(
                range,
                "Reference to \"each\" in context without for_each",
                "each.key and each.value are only available in a block that sets for_each.".into(),
            )),
        }
    }

    fn path(
        &self,
        attr: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        let path = match attr {
            "module" => m.dir.display().to_string(),
            "root" => self.eval.stack.root().dir.display().to_string(),
            "cwd" => std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            other => {
                return Err(undeclared(
                    range,
                    "Invalid path attribute",
                    format!(
                        "path has no attribute \"{other}\"; use path.module, path.root or path.cwd."
                    ),
                ));
            }
        };
        Ok((
            Cow::Owned(Value::String(if path.is_empty() {
                ".".into()
            } else {
                path
            })),
            2,
        ))
    }

    fn resource(
        &self,
        ty: &str,
        name: &str,
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        let m: &Module = &self.eval.stack.modules[self.module];
        let values = &self.eval.values[self.module];
        let key = format!("{ty}.{name}");
        self.reach(self.module, Decl::Resource, &key);
        // Evaluated resources are the usual case: one lookup, in the values.
        if let Some(value) = values.resources.get(&key) {
            found(Some(value), 2)
        } else if m.resources.contains_key(&key) {
            found(None, 2)
        } else if self.eval.registry.owner_of(ty).is_some()
            || m.resources.values().any(|r| r.type_name == ty)
        {
            Err(undeclared(
                range,
                "Reference to undeclared resource",
                format!("A resource \"{ty}\" \"{name}\" has not been declared in this module."),
            ))
        } else {
            Err(undeclared(
                range,
                "Unknown variable",
                format!("There is no variable named \"{ty}\"."),
            ))
        }
    }
}
