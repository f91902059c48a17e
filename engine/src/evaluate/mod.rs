//! Evaluates a stack in graph order: variables, locals, provider configurations, resources
//! (expanded by count/for_each and checked against their provider's schema) and outputs.
//!
//! **Invariant:** a node is evaluated only after every node it depends on; a node whose
//! evaluation failed is unknown to its dependents, so one mistake is reported once.

mod conditions;
mod decode;
mod ephemeral;
mod expansion;
mod flows;
mod frozen;
mod inputs;
pub(crate) mod locate;
mod scope;

use crate::graph::dot::Instances;
use crate::graph::{Graph, NodeKind};
use conditions::ConditionKind;
use gpustack_lang::config::{Expr, Resource, ResourceMode, Stack};
use gpustack_lang::diag::{Diag, Diags, suggest};
use gpustack_lang::expr::eval::{
    EmptyScope, EvalError, Evaluator, ImpureCallError, ReadFileError, ReadInputError, Scope,
};
use gpustack_lang::expr::functions::CallError;
use gpustack_lang::source::{SourceMap, Span};
use gpustack_protocol::Registry;
use gpustack_protocol::{Schema, Value};
use hcl_edit::expr::Expression;
use hcl_edit::structure::Structure;
use indexmap::IndexMap;
use inputs::encryption_variable;
use scope::{ModuleScope, input_key};
use std::ops::Range;

pub use expansion::module_expansions;
pub(crate) use expansion::{Expansion, Repetition};
pub(crate) use flows::{Decl, Flows};
pub(crate) use frozen::Frozen;
pub(crate) use inputs::static_root_variable;
pub use inputs::{Inputs, RawInput};

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

/// Why applying a saved plan has no input (a file, an impure call's value) as the plan had it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordedInputError {
    #[error(transparent)]
    Read(#[from] ReadFileError),
    #[error(
        "\"{path}\" went into a secret, so the plan kept only its digest, and the file now differs from what was planned. Restore it or make a new plan."
    )]
    FileDiffers { path: String },
    #[error(
        "\"{path}\" went into a secret, so the plan kept only its digest and applying reads the file again, but it is missing. Restore it (apply where the plan was made) or make a new plan."
    )]
    FileMissing { path: String },
    #[error(
        "\"{path}\" was not read when the plan was made, so applying the plan cannot read it; make a new plan."
    )]
    FileNotRead { path: String },
    #[error(
        "the value of a call ({key}) went into a secret, so the plan kept only its digest, and applying cannot make the same value again (the clock, randomness); apply without a saved plan."
    )]
    NotMadeAgain { key: String },
    #[error(
        "the plan has no record of this call ({key}), so applying it cannot make the same value; make a new plan."
    )]
    CallNotRecorded { key: String },
    /// The value recorded for a call does not decode.
    #[error(transparent)]
    Decode(#[from] serde_json::Error),
}

impl From<RecordedInputError> for ReadInputError {
    fn from(e: RecordedInputError) -> Self {
        match e {
            RecordedInputError::Read(e) => ReadInputError::Disk(e),
            other => ReadInputError::Scope(Box::new(other)),
        }
    }
}

impl From<RecordedInputError> for ImpureCallError {
    fn from(e: RecordedInputError) -> Self {
        ImpureCallError::Scope(Box::new(e))
    }
}

/// The text of a file a saved plan holds only as a digest (it went into a secret), read
/// again and checked against the digest.
fn read_digest_input(
    path: &str,
    digest: &str,
    salt: &crate::sensitive::Salt,
) -> Result<Option<String>, RecordedInputError> {
    match gpustack_lang::expr::eval::read_disk(path)? {
        Some(text) if salt.digest(&Value::String(text.clone())) == digest => Ok(Some(text)),
        Some(_) => Err(RecordedInputError::FileDiffers {
            path: path.to_owned(),
        }),
        None => Err(RecordedInputError::FileMissing {
            path: path.to_owned(),
        }),
    }
}

/// Checks, before an apply changes anything, an input a saved plan holds only as a digest:
/// a file must read as it did; an impure call's value cannot be made again.
pub(crate) fn check_digest_input(
    key: &str,
    digest: &str,
    salt: &crate::sensitive::Salt,
) -> Result<(), RecordedInputError> {
    match key.strip_prefix("gpustack:") {
        // A listing of files is made again when it is read, and checked there.
        Some(site) if site.contains(":fileset(") => Ok(()),
        Some(_) => Err(RecordedInputError::NotMadeAgain {
            key: key.to_owned(),
        }),
        None => read_digest_input(key, digest, salt).map(|_| ()),
    }
}

/// Why an expression written outside the stack (`gpustack console`) has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalTextError {
    /// Where in the text it stops being an expression, and why.
    #[error("{line}:{column}: {message}")]
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {}", .0.summary, .0.detail)]
    Eval(EvalError),
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
                // Its type is checked now; whether it is known, when a plan needs it.
                walk.check_prevent_destroy(n.module, resource);
                store(&mut walk, n.module, resource, value);
            }
        }
    }
    walk.out
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
        make: &mut dyn FnMut() -> Result<Value, CallError>,
    ) -> Result<Value, ImpureCallError> {
        let Some(recorded) = &self.recorded else {
            self.flows.borrow_mut().read(key);
            if let Some(FileRecord::Content(text)) = self.files_read.borrow().get(key) {
                return serde_json::from_str(text)
                    .map(|json| Value::from_json(&json))
                    .map_err(|e| RecordedInputError::Decode(e).into());
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
                .map_err(|e| RecordedInputError::Decode(e).into()),
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
                    Err(RecordedInputError::NotMadeAgain {
                        key: key.to_owned(),
                    }
                    .into())
                }
            }
            _ => Err(RecordedInputError::CallNotRecorded {
                key: key.to_owned(),
            }
            .into()),
        }
    }

    /// A file for `file()` and friends: from the disk (recorded for the plan) or, applying a
    /// saved plan, from the plan (a file recorded only by digest is read and checked).
    pub(crate) fn read_file(&self, path: &str) -> Result<Option<String>, ReadInputError> {
        let key = input_key(path);
        let Some(recorded) = &self.recorded else {
            self.flows.borrow_mut().read(&key);
            let text = gpustack_lang::expr::eval::read_disk(path)?;
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
            Some(FileRecord::Digest(digest)) => {
                Ok(read_digest_input(path, digest, &recorded.salt)?)
            }
            None => Err(RecordedInputError::FileNotRead {
                path: path.to_owned(),
            }
            .into()),
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

    /// An expression written outside the stack (`gpustack console`), in the root module's
    /// scope; the error says where in the text and why.
    pub(crate) fn eval_text(&mut self, text: &str) -> Result<Value, EvalTextError> {
        let expr = hcl_edit::parser::parse_expr(text).map_err(|e| EvalTextError::Parse {
            line: e.location().line(),
            column: e.location().column(),
            message: e.message().to_owned(),
        })?;
        let scope = ModuleScope {
            eval: self,
            module: 0,
            repetition: None,
            file: None,
        };
        Evaluator::new(&scope)
            .eval(&expr)
            .map_err(EvalTextError::Eval)
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
