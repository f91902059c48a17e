//! Evaluates a stack in graph order: variables, locals, provider configurations, resources
//! (expanded by count/for_each and checked against their provider's schema) and outputs.
//!
//! **Invariant:** a node is evaluated only after every node it depends on; a node whose
//! evaluation failed is unknown to its dependents, so one mistake is reported once.

mod ephemeral;
mod flows;
pub(crate) mod locate;
mod scope;

use crate::graph::dot::Instances;
use crate::graph::{Graph, NodeKind};
use gpustack_lang::config::{BodyRef, Expr, Resource, ResourceMode, Stack, Variable};
use gpustack_lang::diag::{Diag, Diags, closest, suggest};
use gpustack_lang::expr::eval::{EmptyScope, EvalError, Evaluator, Scope};
use gpustack_lang::source::{SourceMap, Span};
use gpustack_protocol::Registry;
use gpustack_protocol::{
    BlockNesting, NestedBlock, Schema, Type, ValidateResourceConfigRequest, Value,
};
use hcl_edit::Span as _;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Structure;
use indexmap::IndexMap;
use scope::{ModuleScope, input_key};
use std::collections::HashSet;
use std::ops::Range;

/// The most instances `count` or `for_each` may make of one block: beyond it a typo (or a
/// hostile module) would exhaust memory before anything could be shown.
pub const MAX_INSTANCES: usize = 100_000;

pub(crate) use flows::{Decl, Flows};

/// A file an expression read at plan time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileRecord {
    /// The file's text, which apply reads instead of the disk.
    Content(String),
    /// The digest of a file that holds a secret: apply reads the disk and checks it.
    Digest(String),
    /// The file did not exist.
    Missing,
}

/// The text of a file a saved plan holds only as a digest (it went into a secret), read
/// again and checked against the digest.
fn read_digest_input(
    path: &str,
    digest: &str,
    salt: &crate::sensitive::Salt,
) -> Result<Option<String>, String> {
    match gpustack_lang::expr::eval::read_disk(path).map_err(|e| e.to_string())? {
        Some(text) if salt.digest(&Value::String(text.clone())) == digest => Ok(Some(text)),
        Some(_) => Err(format!(
            "\"{path}\" went into a secret, so the plan kept only its digest, and the file now differs from what was planned. Restore it or make a new plan."
        )),
        None => Err(format!(
            "\"{path}\" went into a secret, so the plan kept only its digest and applying reads the file again, but it is missing. Restore it (apply where the plan was made) or make a new plan."
        )),
    }
}

/// Checks, before an apply changes anything, an input a saved plan holds only as a digest:
/// a file must read as it did; an impure call's value cannot be made again.
pub(crate) fn check_digest_input(
    key: &str,
    digest: &str,
    salt: &crate::sensitive::Salt,
) -> Result<(), String> {
    match key.strip_prefix("gpustack:") {
        // A listing of files is made again when it is read, and checked there.
        Some(site) if site.contains(":fileset(") => Ok(()),
        Some(_) => Err(not_made_again(key)),
        None => read_digest_input(key, digest, salt).map(|_| ()),
    }
}

fn not_made_again(key: &str) -> String {
    format!(
        "the value of a call ({key}) went into a secret, so the plan kept only its digest, and applying cannot make the same value again (the clock, randomness); apply without a saved plan."
    )
}

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

#[derive(Debug, Clone, Copy, Default)]
pub struct EvalOptions {
    /// Root variables without a value are unknown (validate) instead of an error (plan).
    pub allow_missing_inputs: bool,
}

#[derive(Debug, Default)]
pub struct Evaluated {
    pub instances: Instances,
    /// Evaluated provider configurations, by address (`provider.azure.west`).
    pub providers: IndexMap<String, Value>,
    /// Resource and data source instances evaluated (their configurations are the values
    /// references see, in their module's scope, not stored twice).
    pub resources: usize,
    pub outputs: IndexMap<String, (Value, bool)>,
}

#[derive(Default)]
pub(crate) struct ModuleValues {
    pub(crate) vars: foldhash::HashMap<String, Value>,
    pub(crate) locals: foldhash::HashMap<String, Value>,
    pub(crate) outputs: IndexMap<String, Value>,
    pub(crate) resources: foldhash::HashMap<String, Value>,
    pub(crate) data: foldhash::HashMap<String, Value>,
}

/// What apply evaluates from the plan instead of the working tree.
pub(crate) struct Recorded {
    /// Digests of the sensitive root variables' values, which apply is given again.
    pub(crate) sensitive_variables: IndexMap<String, String>,
    /// The ephemeral root variables, which apply is given again too.
    pub(crate) ephemeral_variables: Vec<String>,
    /// The files the plan's evaluation read.
    pub(crate) inputs: std::collections::BTreeMap<String, FileRecord>,
    pub(crate) salt: crate::sensitive::Salt,
}

pub(crate) struct EvalContext<'a> {
    /// Set when applying a saved plan: files and sensitive variables come from, or are
    /// checked against, the plan.
    pub(crate) recorded: Option<Recorded>,
    /// Every file the evaluation read from disk, for the plan's snapshot.
    pub(crate) files_read: std::cell::RefCell<std::collections::BTreeMap<String, FileRecord>>,
    /// Which of those reached a secret: the plan keeps them only as digests.
    pub(crate) flows: std::cell::RefCell<Flows>,
    pub(crate) stack: &'a Stack,
    pub(crate) registry: &'a Registry,
    pub(crate) sources: &'a SourceMap,
    pub(crate) diags: &'a mut Diags,
    pub(crate) values: Vec<ModuleValues>,
    pub(crate) out: Evaluated,
    /// What an unset computed attribute decodes to: unknown when the decoded object stands for
    /// the resource (validate), null when it is the configuration sent to a provider (plan).
    pub(crate) unset_computed: Value,
    /// `terraform.workspace`.
    pub(crate) workspace: String,
    /// What is ephemeral in each module: what `ephemeralasnull()` answers null for.
    pub(crate) ephemeral: ephemeral::Ephemeral,
}

pub fn evaluate(
    stack: &Stack,
    graph: &Graph,
    registry: &Registry,
    sources: &SourceMap,
    inputs: &Inputs,
    options: EvalOptions,
    diags: &mut Diags,
) -> Evaluated {
    let mut walk = EvalContext::new(stack, registry, sources, diags);
    walk.workspace.clone_from(&inputs.workspace);
    walk.check_inputs(inputs);
    walk.check_settings();
    walk.check_ephemeral();
    for node in graph.order() {
        let n = &graph.graph[node];
        let module = &stack.modules[n.module];
        match &n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                walk.step_value(graph, node, inputs, options)
            }
            NodeKind::Provider => {
                if let Some(config) = walk.provider(n.module, &n.key, n.span, n.implied) {
                    walk.out.providers.insert(n.address(stack), config);
                }
            }
            NodeKind::Resource(mode) => {
                let resource = match mode {
                    ResourceMode::Managed => &module.resources[&n.key],
                    ResourceMode::Data => &module.data[&n.key],
                };
                let (value, keys) = walk.resource(n.module, resource);
                if let Some(keys) = keys {
                    walk.out.instances.insert(node, keys);
                }
                store(&mut walk, n.module, resource, value);
            }
        }
    }
    walk.out
}

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

impl<'a> EvalContext<'a> {
    pub(crate) fn new(
        stack: &'a Stack,
        registry: &'a Registry,
        sources: &'a SourceMap,
        diags: &'a mut Diags,
    ) -> Self {
        let values = stack
            .modules
            .iter()
            .map(|m| {
                let mut values = ModuleValues::default();
                values.resources.reserve(m.resources.len());
                values
            })
            .collect();
        Self {
            recorded: None,
            files_read: Default::default(),
            flows: Default::default(),
            stack,
            registry,
            sources,
            diags,
            values,
            out: Evaluated::default(),
            unset_computed: Value::Unknown,
            workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
            ephemeral: ephemeral::Ephemeral::of(stack),
        }
    }

    /// An impure call's value (see [`gpustack_lang::expr::eval::Scope::impure`]): made and recorded
    /// under `key` while planning, read from the plan's record when applying it.
    pub(crate) fn impure(
        &self,
        key: &str,
        make: &mut dyn FnMut() -> Result<Value, String>,
    ) -> Result<Value, String> {
        let Some(recorded) = &self.recorded else {
            self.flows.borrow_mut().read(key);
            if let Some(FileRecord::Content(text)) = self.files_read.borrow().get(key) {
                return serde_json::from_str(text)
                    .map(|json| Value::from_json(&json))
                    .map_err(|e| e.to_string());
            }
            let value = make()?;
            self.files_read.borrow_mut().insert(
                key.to_owned(),
                FileRecord::Content(value.to_json().to_string()),
            );
            return Ok(value);
        };
        match recorded.inputs.get(key) {
            Some(FileRecord::Content(text)) => serde_json::from_str(text)
                .map(|json| Value::from_json(&json))
                .map_err(|e| e.to_string()),
            // Made again, it must be what was planned (a listing of files is; the clock is not).
            Some(FileRecord::Digest(digest)) => {
                let value = make()?;
                if recorded
                    .salt
                    .digest(&Value::String(value.to_json().to_string()))
                    == *digest
                {
                    Ok(value)
                } else {
                    Err(not_made_again(key))
                }
            }
            _ => Err(format!(
                "the plan has no record of this call ({key}), so applying it cannot make the same value; make a new plan."
            )),
        }
    }

    /// A file for `file()` and friends: from the disk (recorded for the plan) or, applying a
    /// saved plan, from the plan (a file recorded only by digest is read and checked).
    pub(crate) fn read_file(&self, path: &str) -> Result<Option<String>, String> {
        let key = input_key(path);
        let Some(recorded) = &self.recorded else {
            self.flows.borrow_mut().read(&key);
            let text = gpustack_lang::expr::eval::read_disk(path).map_err(|e| e.to_string())?;
            self.files_read.borrow_mut().insert(
                key,
                text.clone()
                    .map_or(FileRecord::Missing, FileRecord::Content),
            );
            return Ok(text);
        };
        match recorded.inputs.get(&key) {
            Some(FileRecord::Content(text)) => Ok(Some(text.clone())),
            Some(FileRecord::Missing) => Ok(None),
            Some(FileRecord::Digest(digest)) => read_digest_input(path, digest, &recorded.salt),
            None => Err(format!(
                "\"{path}\" was not read when the plan was made, so applying the plan cannot read it; make a new plan."
            )),
        }
    }

    /// Evaluates a variable, local or output node and stores its value in its module's scope.
    pub(crate) fn step_value(
        &mut self,
        graph: &Graph,
        node: petgraph::graph::NodeIndex,
        inputs: &Inputs,
        options: EvalOptions,
    ) {
        let n = &graph.graph[node];
        let module = &self.stack.modules[n.module];
        let mark = self.flows.borrow().mark();
        match n.kind {
            NodeKind::Variable => {
                let value = self.variable(n.module, &module.variables[&n.key], inputs, options);
                self.flows.borrow_mut().settle(
                    mark,
                    n.module,
                    Decl::Var,
                    &n.key,
                    value.contains_sensitive(),
                );
                self.values[n.module].vars.insert(n.key.clone(), value);
            }
            NodeKind::Local => {
                let value = self.eval(n.module, &module.locals[&n.key].expr, None);
                self.flows.borrow_mut().settle(
                    mark,
                    n.module,
                    Decl::Local,
                    &n.key,
                    value.contains_sensitive(),
                );
                self.values[n.module].locals.insert(n.key.clone(), value);
            }
            NodeKind::Output => {
                let output = &module.outputs[&n.key];
                self.conditions(
                    n.module,
                    &output.preconditions,
                    None,
                    ConditionKind::OutputPrecondition,
                    &format!("output \"{}\"", output.name),
                );
                let mut value = self.eval(n.module, &output.value, None);
                if let Some(ty) = &output.ty {
                    let (plain, paths) = value.clone().unmark_deep();
                    match ty.convert(&plain) {
                        Ok(converted) if paths.is_empty() => value = converted,
                        Ok(converted) => value = Value::sensitive(converted),
                        Err(e) => {
                            self.diags.error(
                                output.value.span(),
                                "Invalid output value",
                                format!("Output \"{}\" is declared as {ty}: {e}.", output.name),
                            );
                            value = Value::Unknown;
                        }
                    }
                }
                if output.ephemeral && n.module == 0 {
                    self.diags.error(
                        output.span,
                        "Ephemeral output not allowed",
                        "Ephemeral outputs are not allowed in the root module: nothing that is written to a plan or the state may hold an ephemeral value.",
                    );
                }
                if output.sensitive {
                    value = Value::sensitive(value);
                } else if value.contains_sensitive() && n.module == 0 {
                    // Terraform's rule: a root output may carry a secret only when it says so
                    // (a module's outputs pass their marks on to the caller).
                    let source = self
                        .sensitive_reference(n.module, &output.value)
                        .map_or_else(
                            || "a sensitive value".to_owned(),
                            |r| format!("{r}, which is sensitive"),
                        );
                    self.diags.push(Diag::error(
                        output.value.span(),
                        "Output refers to sensitive values",
                        format!("Output \"{}\" reads {source}. Mark the output sensitive = true to confirm it may carry it (it is then never displayed), or use nonsensitive() where the value is safe to show.", output.name),
                    ));
                    value = Value::sensitive(value);
                }
                if n.module == 0 && !output.ephemeral {
                    self.out
                        .outputs
                        .insert(n.key.clone(), (value.clone(), output.sensitive));
                }
                self.flows.borrow_mut().settle(
                    mark,
                    n.module,
                    Decl::Output,
                    &n.key,
                    value.contains_sensitive(),
                );
                self.values[n.module].outputs.insert(n.key.clone(), value);
            }
            NodeKind::Provider | NodeKind::Resource(_) => {}
        }
    }

    /// The first reference of an expression whose value is sensitive, as written
    /// (`local_file.token.sensitive_content`), for messages.
    fn sensitive_reference(&self, module: usize, expr: &Expr) -> Option<String> {
        let scope = ModuleScope {
            eval: self,
            module,
            repetition: None,
            file: None,
        };
        gpustack_lang::expr::refs::references(&expr.expr)
            .into_iter()
            .find_map(|reference| {
                let names = reference.names();
                let (value, used) = scope.lookup(names, None).ok()?;
                let rest: Vec<gpustack_protocol::PathStep> = names[used.min(names.len())..]
                    .iter()
                    .map(|n| gpustack_protocol::PathStep::Key((*n).to_owned()))
                    .collect();
                let part = value.at(&rest).unwrap_or(&value);
                part.contains_sensitive().then(|| names.join("."))
            })
    }

    fn span(
        &self,
        file: gpustack_lang::source::FileId,
        range: Option<Range<usize>>,
    ) -> Option<Span> {
        range.map(|r| Span::new(file, r))
    }

    pub(crate) fn report(&mut self, file: gpustack_lang::source::FileId, err: EvalError) {
        let span = self.span(file, err.range);
        self.diags.push(Diag::error(span, err.summary, err.detail));
    }

    /// Evaluates in a module's scope; an error is reported and yields unknown.
    pub(crate) fn eval(
        &mut self,
        module: usize,
        expr: &Expr,
        repetition: Option<Repetition>,
    ) -> Value {
        self.eval_in(module, &expr.expr, expr.file, repetition)
    }

    /// An expression of `file`, evaluated where it is written (no copy of it is made).
    pub(crate) fn eval_in(
        &mut self,
        module: usize,
        expr: &Expression,
        file: gpustack_lang::source::FileId,
        repetition: Option<Repetition>,
    ) -> Value {
        let result = {
            let scope = ModuleScope {
                eval: self,
                module,
                repetition,
                file: Some(file),
            };
            Evaluator::new(&scope).eval(expr)
        };
        result.unwrap_or_else(|err| {
            self.report(file, err);
            Value::Unknown
        })
    }

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
    fn variable(
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
                Some(RawInput::Text { raw, origin, .. }) => match parse_text_input(raw, &v.ty) {
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
                },
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

    /// Runs the validation rules against a candidate value, with `var.<name>` bound to it.
    fn validate_variable(&mut self, module: usize, v: &Variable, value: &Value, at: Option<Span>) {
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

    /// Checks and evaluates a provider configuration; an implied one is empty.
    pub(crate) fn provider(
        &mut self,
        module: usize,
        key: &str,
        span: Span,
        implied: bool,
    ) -> Option<Value> {
        let name = key.split('.').next().unwrap_or(key);
        let schema = self.registry.config_schema(name).cloned()?;
        if implied {
            let missing: Vec<&str> = schema
                .attributes
                .iter()
                .filter(|(_, a)| a.required)
                .map(|(k, _)| k.as_str())
                .collect();
            if !missing.is_empty() {
                self.diags.error(
                    span,
                    "Missing provider configuration",
                    format!("This needs provider \"{name}\", which requires {}: add a provider \"{name}\" block.", missing.join(", ")),
                );
            }
            return Some(Value::Object(
                schema
                    .attributes
                    .keys()
                    .map(|k| (k.clone(), Value::Null))
                    .collect(),
            ));
        }
        let block = &self.stack.modules[module].providers[key];
        let config = self.decode(
            module,
            &block.body,
            &schema,
            None,
            &format!("provider \"{name}\""),
        );
        if let Some(provider) = self.registry.provider(name) {
            let response = provider.validate_resource_config(ValidateResourceConfigRequest {
                type_name: gpustack_protocol::PROVIDER_CONFIG,
                config: &config,
            });
            for d in response.diagnostics {
                let span = d
                    .attribute
                    .as_deref()
                    .and_then(|path| attribute_span(&block.body, path))
                    .unwrap_or(span);
                self.diags.push(Diag {
                    severity: d.severity,
                    summary: d.summary,
                    detail: d.detail,
                    span: Some(span),
                });
            }
        }
        Some(config)
    }

    fn resource(&mut self, module: usize, r: &Resource) -> (Value, Option<Vec<String>>) {
        let Some(schema) = schema_of(self.registry, r) else {
            if let Some(foreign) = gpustack_protocol::terraform::foreign_provider(&r.type_name) {
                self.foreign_type(r, foreign);
                return (Value::Unknown, None);
            }
            if let Some(why) = gpustack_protocol::terraform::unserved_type(
                &r.type_name,
                r.mode == ResourceMode::Data,
            ) && self
                .registry
                .provider(r.type_name.split('_').next().unwrap_or_default())
                .is_some()
                // A misspelt name of a served type gets its suggestion instead.
                && match r.mode {
                    ResourceMode::Managed => closest(&r.type_name, self.registry.resource_types()),
                    ResourceMode::Data => closest(&r.type_name, self.registry.data_source_types()),
                }
                .is_none()
            {
                self.diags.error(r.type_span, "Type not served", why);
                return (Value::Unknown, None);
            }
            let (what, types): (&str, Vec<&str>) = match r.mode {
                ResourceMode::Managed => ("resource", self.registry.resource_types().collect()),
                ResourceMode::Data => ("data source", self.registry.data_source_types().collect()),
            };
            self.diags.error(
                r.type_span,
                format!("Unsupported {what} type"),
                format!(
                    "No provider offers a {what} type named \"{}\".{}",
                    r.type_name,
                    suggest(&r.type_name, types)
                ),
            );
            return (Value::Unknown, None);
        };
        for (path, span) in &r.lifecycle().ignore_changes {
            let Some(gpustack_protocol::PathStep::Key(attr)) = path.first() else {
                continue;
            };
            if !schema.attributes.contains_key(attr) && !schema.blocks.contains_key(attr) {
                self.diags.error(
                    *span,
                    "Unsupported attribute",
                    format!(
                        "{} has no attribute \"{attr}\" to ignore.{}",
                        r.type_name,
                        suggest(attr, schema.attributes.keys().map(String::as_str))
                    ),
                );
            }
        }
        let expansion = self.expansion(module, r);
        let context = format!("a {} block", r.type_name);
        let instance = |walk: &mut Self, repetition: Option<Repetition>| -> Value {
            let config = walk.decode(module, &r.body, schema, repetition, &context);
            walk.provider_checks(r, &config);
            walk.out.resources += 1;
            config
        };
        match expansion {
            Expansion::Single => (instance(self, None), None),
            Expansion::Disabled => (Value::Null, Some(Vec::new())),
            Expansion::Count(n) => {
                let values = (0..n)
                    .map(|i| {
                        instance(
                            self,
                            Some(Repetition {
                                count_index: Some(Value::number(i as f64)),
                                each: None,
                                ..Default::default()
                            }),
                        )
                    })
                    .collect();
                (
                    Value::List(values),
                    Some((0..n).map(|i| format!("[{i}]")).collect()),
                )
            }
            Expansion::ForEach(items) => {
                let keys = items
                    .keys()
                    .map(|k| format!("[{}]", Value::string(k.clone())))
                    .collect();
                let values = items
                    .into_iter()
                    .map(|(k, v)| {
                        let value = instance(
                            self,
                            Some(Repetition {
                                count_index: None,
                                each: Some((Value::String(k.clone()), v)),
                                ..Default::default()
                            }),
                        );
                        (k, value)
                    })
                    .collect();
                (Value::Object(values), Some(keys))
            }
            Expansion::Unknown | Expansion::Invalid => {
                let repetition = Repetition {
                    count_index: r.count.as_deref().map(|_| Value::Unknown),
                    each: r
                        .for_each
                        .as_ref()
                        .map(|_| (Value::Unknown, Value::Unknown)),
                    ..Repetition::default()
                };
                let config = self.decode(module, &r.body, schema, Some(repetition), &context);
                self.provider_checks(r, &config);
                (Value::Unknown, None)
            }
        }
    }

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

    // Long by design: one pass over the body in source order, attributes and blocks deciding
    // together what is set, misspelt, duplicated or missing; split, each part would need the
    // whole of that state.
    /// Checks a body against a schema and evaluates it into an object with every attribute of
    /// the schema: configured values, unknown for unset computed ones, null otherwise.
    pub(crate) fn decode(
        &mut self,
        module: usize,
        body: &BodyRef,
        schema: &Schema,
        repetition: Option<Repetition>,
        context: &str,
    ) -> Value {
        let file = body.file;
        // Exactly the schema's attributes and blocks end up in it: sized once, where growing
        // from empty reallocated it three times for a resource of ten attributes.
        let mut object: IndexMap<String, Value> =
            IndexMap::with_capacity(schema.attributes.len() + schema.blocks.len());
        let mut seen: foldhash::HashSet<&str> = foldhash::HashSet::default();
        let mut blocks: IndexMap<String, Vec<Value>> = IndexMap::new();
        // Block types a `dynamic` block makes unknown (its for_each is not known yet).
        let mut unknown_blocks: HashSet<String> = HashSet::new();
        // Required attributes that an unsupported argument was probably meant to set: one
        // typo is reported once, not also as a missing argument.
        let mut misspelt: Vec<String> = Vec::new();
        for structure in body.body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let key = attr.key.as_str();
                    let key_span = self.span(file, attr.key.span());
                    if !schema.attributes.contains_key(key)
                        && let Some(nested) = schema.blocks.get(key).filter(|n| n.also_argument)
                    {
                        if !seen.insert(key) {
                            self.diags.error(
                                key_span,
                                "Duplicate argument",
                                format!("The argument \"{key}\" was already set in {context}."),
                            );
                            continue;
                        }
                        let value = self.eval_in(module, &attr.value, file, repetition.clone());
                        self.blocks_as_attribute(
                            (key, key_span.unwrap_or(body.span)),
                            nested,
                            &value,
                            Some(gpustack_lang::config::span_of(file, attr.value.span())),
                            context,
                            &mut blocks,
                            &mut unknown_blocks,
                        );
                        continue;
                    }
                    let Some(schema_attr) = schema.attributes.get(key) else {
                        let hint = if schema.blocks.contains_key(key) {
                            format!(" \"{key}\" is a block: write {key} {{ ... }}.")
                        } else {
                            suggest(key, schema.attributes.keys().map(String::as_str))
                        };
                        if let Some(meant) =
                            closest(key, schema.attributes.keys().map(String::as_str))
                        {
                            misspelt.push(meant.to_owned());
                        }
                        self.diags.error(
                            key_span,
                            "Unsupported argument",
                            format!(
                                "An argument named \"{key}\" is not expected in {context}.{hint}"
                            ),
                        );
                        continue;
                    };
                    if !seen.insert(key) {
                        self.diags.error(
                            key_span,
                            "Duplicate argument",
                            format!("The argument \"{key}\" was already set in {context}."),
                        );
                        continue;
                    }
                    if !schema_attr.is_configurable() {
                        self.diags.error(
                            key_span,
                            "Invalid argument",
                            format!("\"{key}\" is set by the provider and cannot be configured."),
                        );
                        continue;
                    }
                    let value = self.eval_in(module, &attr.value, file, repetition.clone());
                    match schema_attr.ty.convert(&value) {
                        Ok(converted) => {
                            object.insert(key.to_owned(), converted);
                        }
                        Err(err) => {
                            self.diags.error(
                                gpustack_lang::config::span_of(file, attr.value.span()),
                                "Incorrect attribute value type",
                                format!("Inappropriate value for attribute \"{key}\": {err}."),
                            );
                            object.insert(key.to_owned(), Value::Unknown);
                        }
                    }
                }
                Structure::Block(block) if block.ident.as_str() == "dynamic" => {
                    self.dynamic_block(
                        module,
                        file,
                        block,
                        schema,
                        &repetition,
                        context,
                        &mut blocks,
                        &mut unknown_blocks,
                    );
                }
                Structure::Block(block) => {
                    let kind = block.ident.as_str();
                    if !schema.blocks.contains_key(kind)
                        && let Some(attr) = schema.attributes.get(kind)
                        && attr.ty == Type::Any
                        && attr.is_configurable()
                        && block.labels.is_empty()
                    {
                        // An argument that takes either a value or Terraform's block of it
                        // (kubernetes_manifest's `field_manager "name"` or `field_manager {}`):
                        // the block is the object of its arguments.
                        let key_span = self.span(file, block.ident.span());
                        if !seen.insert(kind) {
                            self.diags.error(
                                key_span,
                                "Duplicate argument",
                                format!("The argument \"{kind}\" was already set in {context}."),
                            );
                            continue;
                        }
                        let mut fields = IndexMap::new();
                        for inner in block.body.iter() {
                            match inner {
                                Structure::Attribute(a) => {
                                    let value =
                                        self.eval_in(module, &a.value, file, repetition.clone());
                                    fields.insert(a.key.as_str().to_owned(), value);
                                }
                                Structure::Block(b) => self.diags.error(
                                    self.span(file, b.ident.span()),
                                    "Unsupported block type",
                                    format!("A {kind} block takes arguments only."),
                                ),
                            }
                        }
                        object.insert(kind.to_owned(), Value::Object(fields));
                        continue;
                    }
                    let Some(nested) = schema.blocks.get(kind) else {
                        let hint = if schema.attributes.contains_key(kind) {
                            format!(" \"{kind}\" is an argument: write {kind} = ....")
                        } else {
                            suggest(kind, schema.blocks.keys().map(String::as_str))
                        };
                        self.diags.error(
                            self.span(file, block.ident.span()),
                            "Unsupported block type",
                            format!(
                                "Blocks of type \"{kind}\" are not expected in {context}.{hint}"
                            ),
                        );
                        continue;
                    };
                    if !block.labels.is_empty() {
                        self.diags.error(
                            self.span(file, block.labels[0].span()),
                            "Extraneous label",
                            format!("A {kind} block takes no labels."),
                        );
                    }
                    let inner = BodyRef {
                        body: block.body.clone(),
                        file,
                        span: self.span(file, block.ident.span()).unwrap_or(body.span),
                    };
                    let value = self.decode(
                        module,
                        &inner,
                        &nested.block,
                        repetition.clone(),
                        &format!("a {kind} block"),
                    );
                    self.push_block(&mut blocks, kind, nested, value, inner.span, context);
                }
            }
        }
        for (name, attr) in &schema.attributes {
            if object.contains_key(name) {
                continue;
            }
            if attr.required && !misspelt.contains(name) {
                self.diags.error(
                    body.span,
                    "Missing required argument",
                    format!("The argument \"{name}\" is required in {context}, but it is not set."),
                );
            }
            let unset = if attr.computed {
                self.unset_computed.clone()
            } else {
                Value::Null
            };
            object.insert(name.clone(), unset);
        }
        for (name, nested) in &schema.blocks {
            let list = blocks.swap_remove(name.as_str()).unwrap_or_default();
            if unknown_blocks.contains(name) {
                object.insert(name.clone(), Value::Unknown);
                continue;
            }
            if list.len() < nested.min_items {
                self.diags.error(
                    body.span,
                    "Missing required block",
                    format!(
                        "At least {} {name} block(s) are required in {context}.",
                        nested.min_items
                    ),
                );
            }
            let value = match nested.nesting {
                BlockNesting::Single => list.into_iter().next().unwrap_or(Value::Null),
                BlockNesting::List => Value::List(list),
            };
            object.insert(name.clone(), value);
        }
        Value::Object(object)
    }

    /// A nested block type written as an argument: `set = [{ name = "a", value = "1" }]` for
    /// `set { ... }` blocks, `kubernetes = { ... }` for a `kubernetes { ... }` block. Providers
    /// moved such arguments from one form to the other between major versions (the helm
    /// provider's v2 and v3), and Terraform reads both; each element is one block.
    #[allow(
        clippy::too_many_arguments,
        reason = "the state of the body being decoded"
    )]
    fn blocks_as_attribute(
        &mut self,
        (kind, key_span): (&str, Span),
        nested: &NestedBlock,
        value: &Value,
        value_span: Option<Span>,
        context: &str,
        blocks: &mut IndexMap<String, Vec<Value>>,
        unknown_blocks: &mut HashSet<String>,
    ) {
        let element = block_type(&nested.block);
        let ty = match nested.nesting {
            BlockNesting::Single => element,
            BlockNesting::List => Type::list(element),
        };
        if value.is_unknown() {
            unknown_blocks.insert(kind.to_owned());
            return;
        }
        if value.is_null() {
            return;
        }
        match ty.convert(value) {
            Ok(Value::List(items)) if nested.nesting == BlockNesting::List => {
                for item in items {
                    self.push_block(blocks, kind, nested, item, key_span, context);
                }
            }
            Ok(converted) => self.push_block(blocks, kind, nested, converted, key_span, context),
            Err(err) => self.diags.error(
                value_span.or(Some(key_span)),
                "Incorrect attribute value type",
                format!("Inappropriate value for attribute \"{kind}\": {err}."),
            ),
        }
    }

    fn push_block(
        &mut self,
        blocks: &mut IndexMap<String, Vec<Value>>,
        kind: &str,
        nested: &NestedBlock,
        value: Value,
        span: Span,
        context: &str,
    ) {
        let list = blocks.entry(kind.to_owned()).or_default();
        list.push(value);
        if nested.max_items.is_some_and(|max| list.len() > max) {
            self.diags.error(
                span,
                "Too many blocks",
                format!(
                    "At most {} {kind} block(s) may appear in {context}.",
                    nested.max_items.unwrap_or(1)
                ),
            );
        }
    }

    // Long by design: a `dynamic` block's for_each, iterator and content decoded in one
    // place, as Terraform defines them together.
    /// `dynamic "KIND" { for_each = ..., iterator = NAME, content { ... } }`: one KIND block
    /// per element of for_each, its content evaluated with NAME (default KIND) bound to
    /// `{ key, value }`, as in Terraform.
    #[allow(
        clippy::too_many_arguments,
        reason = "the state of the body being decoded"
    )]
    fn dynamic_block(
        &mut self,
        module: usize,
        file: gpustack_lang::source::FileId,
        block: &hcl_edit::structure::Block,
        schema: &Schema,
        repetition: &Option<Repetition>,
        context: &str,
        blocks: &mut IndexMap<String, Vec<Value>>,
        unknown_blocks: &mut HashSet<String>,
    ) {
        let at = self.span(file, block.ident.span());
        let Some(kind) = block.labels.first().map(|l| l.as_str().to_owned()) else {
            self.diags.error(
                at,
                "Missing dynamic block type",
                "A dynamic block names the block type it generates: dynamic \"TYPE\" { ... }.",
            );
            return;
        };
        let Some(nested) = schema.blocks.get(&kind) else {
            self.diags.error(
                self.span(file, block.labels[0].span()),
                "Unsupported block type",
                format!(
                    "Blocks of type \"{kind}\" are not expected in {context}.{}",
                    suggest(&kind, schema.blocks.keys().map(String::as_str))
                ),
            );
            return;
        };
        let mut for_each = None;
        let mut iterator = kind.clone();
        let mut content = None;
        for structure in block.body.iter() {
            match structure {
                Structure::Attribute(a) if a.key.as_str() == "for_each" => {
                    for_each = Some(Expr {
                        expr: a.value.clone(),
                        file,
                    });
                }
                Structure::Attribute(a) if a.key.as_str() == "iterator" => {
                    match gpustack_lang::config::load::static_parts(&a.value).as_deref() {
                        Some([name]) => iterator = name.clone(),
                        _ => self.diags.error(
                            self.span(file, a.value.span()),
                            "Invalid dynamic iterator name",
                            "The iterator is a name, such as iterator = pool.",
                        ),
                    }
                }
                Structure::Block(b) if b.ident.as_str() == "content" && content.is_none() => {
                    content = Some(b);
                }
                Structure::Attribute(a) => self.diags.error(
                    self.span(file, a.key.span()),
                    "Unsupported argument",
                    format!(
                        "An argument named \"{}\" is not expected in a dynamic block; it takes for_each, iterator and a content block.",
                        a.key.as_str()
                    ),
                ),
                Structure::Block(b) => self.diags.error(
                    self.span(file, b.ident.span()),
                    if b.ident.as_str() == "content" {
                        "Duplicate content block"
                    } else {
                        "Unsupported block type"
                    },
                    "A dynamic block holds one content block.",
                ),
            }
        }
        let (Some(for_each), Some(content)) = (for_each, content) else {
            self.diags.error(
                at,
                "Incomplete dynamic block",
                format!("The dynamic \"{kind}\" block needs for_each and a content block."),
            );
            return;
        };
        let collection = self.eval(module, &for_each, repetition.clone());
        let items: Vec<(Value, Value)> = match collection.clone().unmark_deep().0 {
            v if !v.is_wholly_known() && !matches!(v, Value::List(_) | Value::Object(_)) => {
                unknown_blocks.insert(kind);
                return;
            }
            Value::List(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::number(i as f64), v))
                .collect(),
            // A map is iterated in the lexical order of its keys, as Terraform does.
            Value::Object(items) => {
                let mut items: Vec<(String, Value)> = items.into_iter().collect();
                items.sort_by(|a, b| a.0.cmp(&b.0));
                items
                    .into_iter()
                    .map(|(k, v)| (Value::String(k), v))
                    .collect()
            }
            other => {
                self.diags.error(
                    for_each.span(),
                    "Invalid dynamic for_each value",
                    format!(
                        "Cannot use a {} value in for_each. An iterable collection is required.",
                        other.type_name()
                    ),
                );
                return;
            }
        };
        let inner = BodyRef {
            body: content.body.clone(),
            file,
            span: self
                .span(file, content.ident.span())
                .or(at)
                .unwrap_or(Span::new(file, 0..0)),
        };
        for (key, value) in items {
            let mut bound = repetition.clone().unwrap_or_default();
            bound.iterators.push((iterator.clone(), key, value));
            let value = self.decode(
                module,
                &inner,
                &nested.block,
                Some(bound),
                &format!("a {kind} block"),
            );
            self.push_block(blocks, &kind, nested, value, inner.span, context);
        }
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

    /// An expression written outside the stack (`gpustack console`), in the root module's
    /// scope; the error says where in the text and why.
    pub(crate) fn eval_text(&mut self, text: &str) -> Result<Value, String> {
        let expr = hcl_edit::parser::parse_expr(text).map_err(|e| {
            format!(
                "{}:{}: {}",
                e.location().line(),
                e.location().column(),
                e.message()
            )
        })?;
        let scope = ModuleScope {
            eval: self,
            module: 0,
            repetition: None,
            file: None,
        };
        Evaluator::new(&scope)
            .eval(&expr)
            .map_err(|e| format!("{}: {}", e.summary, e.detail))
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

    /// A type of a Terraform provider gpustack does not serve: reported once per type, at its
    /// first block in the stack, naming the provider.
    fn foreign_type(
        &mut self,
        r: &Resource,
        foreign: gpustack_protocol::terraform::ForeignProvider,
    ) {
        let blocks = self.stack.modules.iter().flat_map(|m| match r.mode {
            ResourceMode::Managed => m.resources.values(),
            ResourceMode::Data => m.data.values(),
        });
        let mut first = None;
        let mut count = 0;
        for other in blocks.filter(|o| o.type_name == r.type_name) {
            first.get_or_insert(other);
            count += 1;
        }
        if !first.is_some_and(|first| std::ptr::eq(first, r)) {
            return;
        }
        let (what, verb) = match r.mode {
            ResourceMode::Managed => ("Resource type", "manage"),
            ResourceMode::Data => ("Data source type", "read"),
        };
        let blocks = if count > 1 {
            format!(" ({count} blocks of this type; this is the first)")
        } else {
            String::new()
        };
        let advice = if foreign.infrastructure {
            " Keep what it manages in the Terraform stack that has it, give that stack outputs for what this one needs (a cluster's endpoint, a role's ARN, a subnet's ID), and read them here with data \"terraform_remote_state\"."
        } else {
            ""
        };
        self.diags.error(
            r.type_span,
            format!("{what} of another provider"),
            format!(
                "{} belongs to Terraform's {} provider, which gpustack does not serve: gpustack does not {verb} it{blocks}.{advice}",
                r.type_name, foreign.source
            ),
        );
    }

    /// Asks the owning provider to check a configuration, and points its findings at the source.
    pub(crate) fn provider_checks(&mut self, r: &Resource, config: &Value) {
        let Some(owner) = self.registry.owner_of(&r.type_name) else {
            return;
        };
        let Some(provider) = self.registry.provider(owner) else {
            return;
        };
        let response = provider.validate_resource_config(ValidateResourceConfigRequest {
            type_name: &r.type_name,
            config,
        });
        for d in response.diagnostics {
            let span = d
                .attribute
                .as_deref()
                .and_then(|path| attribute_span(&r.body, path))
                .unwrap_or(r.span);
            self.diags.push(Diag {
                severity: d.severity,
                summary: d.summary,
                detail: d.detail,
                span: Some(span),
            });
        }
    }

    /// Every place an ephemeral value would be written down, refused; and what is ephemeral
    /// kept for `ephemeralasnull()`.
    pub(crate) fn check_ephemeral(&mut self) {
        ephemeral::check(self.stack, self.registry, &self.ephemeral, self.diags);
    }

    pub(crate) fn check_settings(&mut self) {
        for (i, m) in self.stack.modules.iter().enumerate() {
            if let Some(settings) = &m.settings {
                if i != 0 {
                    self.diags.error(settings.span, "Settings in a child module", "The gpustack block belongs in the root module of a stack; modules cannot choose a backend.");
                    continue;
                }
                if let Some((constraint, span)) = &settings.required_version
                    && let Err(why) = crate::version::check_required(constraint)
                {
                    self.diags
                        .error(*span, "Unsupported gpustack version", why.to_string());
                }
            }
            if i != 0 {
                continue;
            }
            // Its structure and literals; variables' values are known when it is opened.
            if let Some(encryption) = m.encryption() {
                let variables = |name: &str| {
                    encryption_variable(self.stack, name)?;
                    Ok(Value::Unknown)
                };
                crate::encryption::evaluate(
                    &[crate::encryption::Part {
                        body: &encryption.body,
                        file: encryption.file,
                    }],
                    &variables,
                    self.diags,
                );
            }
            let Some(backend) = m.backend() else {
                continue;
            };
            let Some(schema) = gpustack_state::backend_schema(&backend.kind) else {
                self.diags.error(
                    backend.kind_span,
                    "Unknown backend",
                    format!(
                        "There is no backend \"{}\"; backends are local, kubernetes and s3.{}",
                        backend.kind,
                        suggest(&backend.kind, ["local", "kubernetes", "s3"])
                    ),
                );
                continue;
            };
            // Backends are configured before anything is evaluated, so only literals are allowed.
            let mut values = IndexMap::new();
            for structure in backend.body.body.iter() {
                if let Structure::Attribute(attr) = structure
                    && let Err(err) = Evaluator::new(&EmptyScope).eval(&attr.value)
                {
                    self.report(backend.body.file, err);
                    values.insert(attr.key.as_str().to_owned(), ());
                }
            }
            if values.is_empty() {
                self.decode(
                    0,
                    &backend.body,
                    &schema,
                    None,
                    &format!("the {} backend", backend.kind),
                );
            }
        }
    }
}

/// The source of an attribute path such as `node_taints[1]` or `accelerator.count`: the list
/// element or nested block attribute where it can be found, else the closest enclosing one.
fn attribute_span(body: &BodyRef, path: &str) -> Option<Span> {
    let mut current = &body.body;
    let mut best = None;
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        let (name, index) = match step.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (step, None),
        };
        if let Some(attr) = current.get_attribute(name) {
            best = attr.value.span().or(attr.span());
            if let (Some(i), Expression::Array(items)) = (index, &attr.value) {
                best = items.get(i).and_then(|e| e.span()).or(best);
            }
            // On into an object constructor, by its literal keys: `config.bucket`.
            let mut value = &attr.value;
            while let (Some(step), Expression::Object(object)) = (steps.next(), value) {
                let Some((key, item)) = object.iter().find(|(key, _)| match key {
                    hcl_edit::expr::ObjectKey::Ident(ident) => ident.as_str() == step,
                    hcl_edit::expr::ObjectKey::Expression(Expression::String(s)) => {
                        s.value() == step
                    }
                    _ => false,
                }) else {
                    break;
                };
                best = key.span().or(best);
                value = item.expr();
            }
            break;
        }
        match current.get_blocks(name).nth(index.unwrap_or(0)) {
            Some(block) if steps.peek().is_some() => {
                best = block.ident.span();
                current = &block.body;
            }
            Some(block) => {
                best = block.ident.span();
                break;
            }
            None => break,
        }
    }
    best.map(|r| Span::new(body.file, r))
}

/// A root variable the encryption block may read: declared, and sensitive, so that no plan
/// records its value (a saved plan is given it again, as every sensitive variable).
fn encryption_variable<'s>(stack: &'s Stack, name: &str) -> Result<&'s Variable, (String, String)> {
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
        Some(RawInput::Text { raw, .. }) => parse_text_input(raw, &v.ty).map_err(invalid)?,
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

/// The schema of a resource or data source block, by its mode and type.
pub(crate) fn schema_of<'r>(registry: &'r Registry, r: &Resource) -> Option<&'r Schema> {
    match r.mode {
        ResourceMode::Managed => registry.resource_schema(&r.type_name),
        ResourceMode::Data => registry.data_source_schema(&r.type_name),
    }
}

/// Makes a resource's value visible to the expressions that reference it, its schema's
/// sensitive attributes marked in every instance.
pub(crate) fn store(walk: &mut EvalContext<'_>, module: usize, r: &Resource, value: Value) {
    let paths = crate::sensitive::sensitive_attributes(schema_of(walk.registry, r));
    let value = if paths.is_empty() {
        value
    } else {
        let instance = |v: Value| crate::sensitive::mark_schema(v, &paths);
        match (value, r.count.is_some() || r.for_each.is_some()) {
            (Value::List(items), true) => Value::List(items.into_iter().map(instance).collect()),
            (Value::Object(map), true) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, instance(v))).collect())
            }
            (value, _) => instance(value),
        }
    };
    let key = format!("{}.{}", r.type_name, r.name);
    let values = &mut walk.values[module];
    match r.mode {
        ResourceMode::Managed => values.resources.insert(key, value),
        ResourceMode::Data => values.data.insert(key, value),
    };
}

/// The type of one block of `schema` written as an object: its required arguments required,
/// everything else optional.
fn block_type(schema: &Schema) -> Type {
    let mut attrs: IndexMap<String, gpustack_protocol::ObjectAttr> = schema
        .attributes
        .iter()
        .filter(|(_, a)| a.is_configurable())
        .map(|(name, a)| {
            let attr = if a.required {
                gpustack_protocol::ObjectAttr::required(a.ty.clone())
            } else {
                gpustack_protocol::ObjectAttr::optional(a.ty.clone())
            };
            (name.clone(), attr)
        })
        .collect();
    for (name, nested) in &schema.blocks {
        let ty = match nested.nesting {
            BlockNesting::Single => block_type(&nested.block),
            BlockNesting::List => Type::list(block_type(&nested.block)),
        };
        attrs.insert(name.clone(), gpustack_protocol::ObjectAttr::optional(ty));
    }
    Type::Object(attrs)
}
