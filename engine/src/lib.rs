//! The gpustack engine: a stack the language crate loaded, turned into a dependency graph,
//! evaluated, planned against live state and applied.
//!
//! The pipeline is load → graph → evaluate → refresh → diff → plan → apply → validate. This
//! file is the engine's API (its façade): the operations — [`load`], [`Session`] with
//! [`plan`], [`apply`], [`import`] and [`console`] — and the types their callers need; plans
//! render through the `plan_*`/`drift_*` functions. Everything else is the engine's own.

mod apply;
mod configure;
mod encryption;
mod evaluate;
mod graph;
mod import;
mod instances;
mod output;
mod plan;
mod progress;
mod schedule;
mod sensitive;
mod unknowns;
mod version;

pub use apply::{ApplyReport, ChangeResult, Halt, Supplied, apply};
pub use configure::DEFAULT_MAX_CONCURRENCY;
pub use evaluate::EvalOptions;
pub use import::{ImportError, import, import_all};
pub use output::{
    console_value, drift_json, drift_markdown, drift_metrics, drift_text, plan_json, plan_markdown,
    plan_text,
};
pub use plan::{Action, DecodePlanError, Plan, PlanMode, PlanOptions, ResourceChange};
pub use version::VERSION;

/// The version of the JSON plan format gpustack writes (Terraform's `format_version`).
pub const PLAN_FORMAT_VERSION: &str = plan::FORMAT_VERSION;

// The language lives in its own crate; these keep the engine's paths to it short.
pub(crate) use gpustack_lang::expr as lang;
pub(crate) use gpustack_lang::{address, config, diag, fmt, source};

use crate::config::{Expr, Stack};
use crate::diag::Diags;
use crate::evaluate::{Evaluated, Inputs, RawInput};
use crate::graph::Graph;
use crate::source::SourceMap;
use gpustack_protocol::Diagnostic;
use gpustack_protocol::Registry;
use hcl_edit::structure::Structure;
use std::path::{Path, PathBuf};

/// Where root variable values come from, lowest precedence first: the environment
/// (`GPUSTACK_VAR_<name>`), `--var-file`s in order, then `--var`s in order.
#[derive(Debug, Default, Clone)]
pub struct VariableArgs {
    pub vars: Vec<String>,
    pub var_files: Vec<PathBuf>,
    pub env: Vec<(String, String)>,
}

impl VariableArgs {
    /// The `GPUSTACK_VAR_*` variables of this process.
    pub fn from_process_env(vars: Vec<String>, var_files: Vec<PathBuf>) -> Self {
        let env = std::env::vars()
            .filter_map(|(k, v)| k.strip_prefix("GPUSTACK_VAR_").map(|n| (n.to_owned(), v)))
            .collect();
        Self {
            vars,
            var_files,
            env,
        }
    }
}

/// A stack loaded, graphed and evaluated, with every problem found on the way.
pub struct Loaded {
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
    stack: Stack,
    graph: Graph,
    evaluated: Evaluated,
}

impl Loaded {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Resource instances, after count and for_each.
    pub fn resource_count(&self) -> usize {
        self.evaluated.resources
    }

    /// Modules, the root and every instance of a repeated call included.
    pub fn module_count(&self) -> usize {
        self.stack.modules.len()
    }

    /// The dependency graph in Graphviz's dot language.
    pub fn graph_dot(&self) -> String {
        graph::dot::render(&self.stack, &self.graph, &self.evaluated.instances)
    }
}

/// A stack loaded and graphed, not yet evaluated: what plan and apply start from.
pub struct Session {
    pub dir: PathBuf,
    pub sources: SourceMap,
    pub diags: Diags,
    registry: Registry,
    /// How many files of `sources` belong to the stack (the rest are variable files).
    stack_files: usize,
    stack: Stack,
    graph: Graph,
    inputs: Inputs,
}

impl Session {
    /// A walk whose decoded resources are configuration for providers (unset computed
    /// attributes null, not unknown), with the graph and inputs it walks.
    pub(crate) fn provider_context(&mut self) -> (evaluate::EvalContext<'_>, &Graph, &Inputs) {
        let Session {
            registry,
            sources,
            stack,
            graph,
            inputs,
            diags,
            ..
        } = self;
        let mut walk = evaluate::EvalContext::new(stack, registry, sources, diags);
        walk.unset_computed = gpustack_protocol::Value::Null;
        (walk, graph, inputs)
    }

    /// The state backend the root module's `gpustack { backend ... }` or `terraform { backend
    /// ... }` block chooses (local by default). Its attributes are literals: validation has
    /// reported anything else.
    pub fn backend_config(&self) -> Result<gpustack_state::BackendConfig, String> {
        use hcl_edit::structure::Structure;
        let Some(backend) = self.stack.modules.first().and_then(|m| m.backend()) else {
            return Ok(gpustack_state::BackendConfig::default());
        };
        let mut attributes = serde_json::Map::new();
        for structure in backend.body.body.iter() {
            if let Structure::Attribute(attr) = structure {
                let value = lang::eval::Evaluator::new(&lang::eval::EmptyScope)
                    .eval(&attr.value)
                    .map_err(|e| {
                        format!("backend attribute {}: {}", attr.key.as_str(), e.detail)
                    })?;
                attributes.insert(attr.key.as_str().to_owned(), value.to_json());
            }
        }
        gpustack_state::BackendConfig::from_block(&backend.kind, attributes)
            .map_err(|e| format!("the {} backend block: {e}", backend.kind))
    }

    /// How states and plans are encrypted: the root module's `gpustack { encryption { ... } }`
    /// with `environment` (the text of `GPUSTACK_ENCRYPTION`, the body of such a block) laid
    /// over it, root variables from this session's inputs. `None` when neither configures
    /// anything. The errors point into the session's sources, the environment's text included.
    pub fn encryption_config(
        &mut self,
        environment: Option<&str>,
    ) -> Result<Option<gpustack_state::EncryptionConfig>, Vec<Diagnostic>> {
        let block = self.stack.modules.first().and_then(|m| m.encryption());
        let mut diags = Diags::default();
        let from_environment = environment
            .filter(|t| !t.trim().is_empty())
            .and_then(|text| {
                let id = self
                    .sources
                    .add_sensitive(Path::new("GPUSTACK_ENCRYPTION"), text.to_owned());
                config::load::parse_source(&self.sources, id, &mut diags).map(|body| (body, id))
            });
        if block.is_none() && from_environment.is_none() && !diags.has_errors() {
            return Ok(None);
        }
        let mut parts = Vec::new();
        if let Some(block) = block {
            parts.push(encryption::Part {
                body: &block.body,
                file: block.file,
            });
        }
        if let Some((body, file)) = &from_environment {
            parts.push(encryption::Part { body, file: *file });
        }
        let (stack, inputs) = (&self.stack, &self.inputs);
        let variables = |name: &str| evaluate::static_root_variable(stack, inputs, name);
        let config = if diags.has_errors() {
            None
        } else {
            encryption::evaluate(&parts, &variables, &mut diags)
        };
        match config {
            Some(config) if !diags.has_errors() => Ok(Some(config)),
            _ => Err(diags.into_sorted(&self.sources)),
        }
    }

    /// Loads `dir` from `files` (the disk, or a plan's snapshot) and builds its graph against
    /// the providers of `registry`.
    pub fn open(
        registry: Registry,
        dir: &Path,
        files: &config::Files,
        inputs: InputSource<'_>,
    ) -> Self {
        let mut sources = SourceMap::new(dir);
        let mut diags = Diags::default();
        let stack = config::load_stack_with(
            files,
            dir,
            &mut sources,
            &mut diags,
            &config::ModuleExpansions::new(),
            Some(&registry),
        );
        let repeated = stack
            .modules
            .iter()
            .any(|m| m.calls.values().any(config::ModuleCall::is_repeated));
        let mut stack = stack;
        if repeated && !diags.has_errors() {
            let (expansions, failures) = expand_modules(files, dir, &registry, &inputs);
            sources = SourceMap::new(dir);
            diags = Diags::default();
            stack = config::load_stack_with(
                files,
                dir,
                &mut sources,
                &mut diags,
                &expansions,
                Some(&registry),
            );
            diags.0.extend(failures.0);
        }
        let stack_files = sources.files().count();
        let inputs = read_inputs(&inputs, &mut sources, &mut diags);
        protect_sensitive_inputs(&stack, &inputs, &mut sources, stack_files);
        let graph = graph::build(&stack, &sources, &registry, &mut diags);
        Self {
            dir: dir.to_path_buf(),
            registry,
            sources,
            stack_files,
            stack,
            graph,
            inputs,
            diags,
        }
    }

    /// Every stack file, by path relative to the stack directory, for a plan's snapshot.
    pub fn snapshot_files(&self) -> std::collections::BTreeMap<String, String> {
        self.sources
            .files()
            .take(self.stack_files)
            .map(|(_, f)| {
                (
                    source::relative_to(&f.path, &source::normalize(&self.dir))
                        .to_string_lossy()
                        .replace('\\', "/"),
                    f.shown_text().to_owned(),
                )
            })
            .collect()
    }

    /// True when the configuration declares the resource of instance `address`.
    pub fn declares(&self, address: &str) -> bool {
        let resource = address::strip_instance_key(address);
        self.stack.modules.iter().any(|m| {
            m.resources
                .values()
                .any(|r| format!("{}{}", m.prefix(), r.local_address()) == resource)
        })
    }

    pub fn diagnostics(self) -> (SourceMap, Vec<Diagnostic>) {
        let diagnostics = self.diags.into_sorted(&self.sources);
        (self.sources, diagnostics)
    }
}

/// Where root variable values come from.
pub enum InputSource<'a> {
    /// `--var`, `--var-file` and the environment.
    Args(&'a VariableArgs),
    /// Values given as they are.
    Values(&'a indexmap::IndexMap<String, gpustack_protocol::Value>),
    /// A saved plan's: the values it recorded, and for its sensitive variables (recorded
    /// only as digests) the ones `supplied` gives again; `supplied` may set nothing else.
    Plan {
        values: &'a indexmap::IndexMap<String, gpustack_protocol::Value>,
        sensitive: &'a indexmap::IndexMap<String, String>,
        supplied: &'a VariableArgs,
        /// Refuse what `supplied` sets besides the sensitive variables (a saved plan).
        only_sensitive: bool,
    },
}

/// Whether `state` has no key for its digests yet and can take one without being rewritten
/// (it records no object).
pub fn needs_digest_key(state: &gpustack_state::State) -> bool {
    state.digest_key.is_none() && state.resources.is_empty()
}

/// `state` (or the first version of a new one: a new lineage, nothing recorded) with a key for
/// its digests. Written before a plan is saved to a file, so that the plan's digests are keyed
/// by what only the state holds: a plan file alone confirms no guess of a secret.
pub fn with_digest_key(state: Option<gpustack_state::State>) -> gpustack_state::State {
    let mut state = state.unwrap_or_else(|| {
        gpustack_state::State::new(gpustack_state::new_lineage(), version::VERSION)
    });
    if state.digest_key.is_none() {
        state.digest_key = Some(sensitive::Salt::new().to_hex());
    }
    state
}

/// Plans the stack against `state`. Returns the plan (None when there were errors) and every
/// diagnostic with the sources they point into.
pub async fn plan(
    mut session: Session,
    state: Option<&gpustack_state::State>,
    options: &plan::PlanOptions,
) -> (Option<plan::Plan>, SourceMap, Vec<Diagnostic>) {
    if session.diags.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        return (None, sources, diagnostics);
    }
    let files = session.snapshot_files();
    // The state's digest key; a state that has none yet gets the one this plan makes.
    let existing_key = state
        .and_then(|s| s.digest_key.as_deref())
        .and_then(sensitive::Salt::from_hex);
    let new_key = existing_key.is_none();
    let salt = existing_key.unwrap_or_default();
    // The lineage the state has, or the one the state this plan creates will have: what
    // this stack's objects are marked with.
    let new_lineage = state.is_none().then(gpustack_state::new_lineage);
    let lineage = state
        .map(|s| s.lineage.clone())
        .or_else(|| new_lineage.clone())
        .unwrap_or_default();
    // A copy of the state only when a `moved` block has something to move: at 10,000
    // resources a copy is tens of megabytes.
    let has_moves = session.stack.modules.iter().any(|m| !m.moves.is_empty());
    let moved = state
        .filter(|_| has_moves)
        .map(|s| plan::apply_moves(&session.stack, s, &mut session.diags));
    let (moved_state, moves) = match moved {
        Some((state, moves)) => (Some(state), moves),
        None => (None, Vec::new()),
    };
    let result = {
        let stack_dir = session.dir.to_string_lossy().into_owned();
        let (mut walk, graph, inputs) = session.provider_context();
        walk.check_inputs(inputs);
        walk.check_settings();
        let planned = plan::make_plan(
            &mut walk,
            graph,
            inputs,
            moved_state.as_ref().or(state),
            options,
            plan::Snapshot {
                stack_dir,
                files,
                ..Default::default()
            },
            &salt,
            plan::Ownership {
                owner: plan::owner_mark(&lineage),
                moves,
            },
        )
        .await;
        let mut variables = indexmap::IndexMap::new();
        let mut sensitive_variables = indexmap::IndexMap::new();
        for (name, declared) in &walk.stack.root().variables {
            let Some(value) = walk.values[0].vars.get(name) else {
                continue;
            };
            if declared.sensitive || value.contains_sensitive() {
                sensitive_variables.insert(name.clone(), salt.digest(value));
            } else {
                variables.insert(name.clone(), value.to_json());
            }
        }
        // An input that went into a secret, or holds one, is kept as a digest: apply reads
        // the file again and checks it.
        let secret: std::collections::HashSet<String> = walk
            .flows
            .borrow()
            .secret_keys()
            .map(str::to_owned)
            .collect();
        let inputs = walk
            .files_read
            .take()
            .into_iter()
            .map(|(path, record)| match record {
                plan::FileRecord::Content(text)
                    if secret.contains(&path)
                        || gpustack_protocol::secrets::contains_any(&text) =>
                {
                    let digest = salt.digest(&gpustack_protocol::Value::String(text));
                    (path, plan::FileRecord::Digest(digest))
                }
                other => (path, other),
            })
            .collect();
        planned.map(|mut p| {
            p.snapshot.variables = variables;
            p.snapshot.sensitive_variables = sensitive_variables;
            p.snapshot.inputs = inputs;
            p.digest_key = new_key.then(|| salt.to_hex());
            p.new_lineage = new_lineage;
            // Freshness is checked against the state as it was, before the moves.
            p.lineage = state.map(|s| s.lineage.clone());
            p.serial = state.map_or(0, |s| s.serial);
            p.config_hash = plan::config_hash(&p.snapshot);
            p
        })
    };
    let (sources, diagnostics) = session.diagnostics();
    (result, sources, diagnostics)
}

/// `gpustack console`: each expression evaluated in the root module against the stack and its
/// state, as `terraform console` does: resources are what the state records (nothing is
/// refreshed or planned), data sources are read. Each answer is the value, or why it has none.
pub async fn console(
    mut session: Session,
    state: Option<&gpustack_state::State>,
    expressions: &[String],
) -> (
    Vec<Result<gpustack_protocol::Value, String>>,
    SourceMap,
    Vec<Diagnostic>,
) {
    if session.diags.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        return (Vec::new(), sources, diagnostics);
    }
    let salt = state
        .and_then(|s| s.digest_key.as_deref())
        .and_then(sensitive::Salt::from_hex)
        .unwrap_or_default();
    let options = plan::PlanOptions {
        mode: plan::PlanMode::RefreshOnly,
        refresh: false,
        ..Default::default()
    };
    let answers = {
        let (mut walk, graph, inputs) = session.provider_context();
        walk.check_inputs(inputs);
        let _ = plan::make_plan(
            &mut walk,
            graph,
            inputs,
            state,
            &options,
            plan::Snapshot::default(),
            &salt,
            plan::Ownership {
                owner: String::new(),
                moves: Vec::new(),
            },
        )
        .await;
        expressions.iter().map(|e| walk.eval_text(e)).collect()
    };
    let (sources, diagnostics) = session.diagnostics();
    (answers, sources, diagnostics)
}

/// Runs every static phase over the stack in `dir`. All problems are collected, never only the
/// first; no phase performs network I/O.
pub fn load(
    registry: Registry,
    dir: &Path,
    variables: &VariableArgs,
    options: EvalOptions,
) -> Loaded {
    let Session {
        registry,
        sources,
        stack,
        graph,
        inputs,
        mut diags,
        ..
    } = Session::open(
        registry,
        dir,
        &config::Files::Disk,
        InputSource::Args(variables),
    );
    let evaluated = if stack.modules.is_empty() {
        Evaluated::default()
    } else {
        evaluate::evaluate(
            &stack, &graph, &registry, &sources, &inputs, options, &mut diags,
        )
    };
    let diagnostics = diags.into_sorted(&sources);
    Loaded {
        sources,
        stack,
        graph,
        evaluated,
        diagnostics,
    }
}

/// Keeps the values given to sensitive root variables out of diagnostics: their lines in
/// variable files are sensitive (a variables file that does not parse, whole, when it names a
/// sensitive variable), and their texts from `--var` and the environment are secrets to scrub.
fn protect_sensitive_inputs(
    stack: &Stack,
    inputs: &Inputs,
    sources: &mut SourceMap,
    stack_files: usize,
) {
    let Some(root) = stack.modules.first() else {
        return;
    };
    let sensitive: Vec<&str> = root
        .variables
        .values()
        .filter(|v| v.sensitive)
        .map(|v| v.name.as_str())
        .collect();
    if sensitive.is_empty() {
        return;
    }
    let mut parsed = std::collections::HashSet::new();
    for (name, input) in &inputs.0 {
        match input {
            RawInput::Expr(expr) => {
                parsed.insert(expr.file);
                if sensitive.contains(&name.as_str()) {
                    sources.mark_sensitive(expr.span());
                }
            }
            RawInput::Text { raw, .. } if sensitive.contains(&name.as_str()) => {
                gpustack_protocol::secrets::remember([raw, &raw.trim().to_owned()]);
            }
            _ => {}
        }
    }
    let unparsed: Vec<source::FileId> = sources
        .files()
        .skip(stack_files)
        .filter(|(id, file)| {
            !parsed.contains(id)
                && sensitive.iter().any(|name| {
                    file.shown_text()
                        .match_indices(name)
                        .any(|(at, _)| is_word_at(file.shown_text(), at, name.len()))
                })
        })
        .map(|(id, _)| id)
        .collect();
    for id in unparsed {
        sources.mark_file_sensitive(id);
    }
}

/// Whether `text[at..at + len]` is a whole word (an identifier not part of a longer one).
fn is_word_at(text: &str, at: usize, len: usize) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    !text[..at].chars().next_back().is_some_and(is_ident)
        && !text[at + len..].chars().next().is_some_and(is_ident)
}

/// The variables of a run, from where `inputs` says; files they come from join `sources`.
fn read_inputs(inputs: &InputSource<'_>, sources: &mut SourceMap, diags: &mut Diags) -> Inputs {
    match inputs {
        InputSource::Args(args) => collect_inputs(args, sources, diags),
        InputSource::Values(values) => Inputs(
            values
                .iter()
                .map(|(k, v)| (k.clone(), RawInput::Value(v.clone())))
                .collect(),
        ),
        InputSource::Plan {
            values,
            sensitive,
            supplied,
            only_sensitive,
        } => {
            let mut inputs = Inputs(
                values
                    .iter()
                    .map(|(k, v)| (k.clone(), RawInput::Value(v.clone())))
                    .collect(),
            );
            let given = collect_inputs(supplied, sources, diags);
            for (name, raw) in given.0 {
                if sensitive.contains_key(&name) {
                    inputs.0.insert(name, raw);
                } else if !*only_sensitive || supplied.env.iter().any(|(n, _)| *n == name) {
                    // The environment of a pipeline sets many variables; the plan's own
                    // values win over those it does not need.
                } else {
                    diags.error(
                        None,
                        "Variable set for a saved plan",
                        format!("\"{name}\" cannot be set when applying a saved plan: the plan holds the value it was made with. Only sensitive variables, which a plan holds as digests, are given again."),
                    );
                }
            }
            inputs
        }
    }
}

/// The instances of repeated module calls (count/for_each on `module`): each round evaluates
/// the counts and for_eachs of the stack loaded so far and loads it again with that many
/// instances, one level of nesting per round. Returns them with what could not be expanded.
fn expand_modules(
    files: &config::Files,
    dir: &Path,
    registry: &Registry,
    source: &InputSource<'_>,
) -> (config::ModuleExpansions, Diags) {
    let mut expansions = config::ModuleExpansions::new();
    let mut failures = Diags::default();
    let mut scratch_sources = SourceMap::new(dir);
    let mut scratch = Diags::default();
    let mut stack = config::load_stack_with(
        files,
        dir,
        &mut scratch_sources,
        &mut scratch,
        &expansions,
        Some(registry),
    );
    for _ in 0..32 {
        let inputs = read_inputs(source, &mut scratch_sources, &mut scratch);
        let graph = graph::build(&stack, &scratch_sources, registry, &mut scratch);
        let found = evaluate::module_expansions(
            &stack,
            &graph,
            registry,
            &scratch_sources,
            &inputs,
            &expansions,
            &mut failures,
        );
        if found.is_empty() {
            break;
        }
        expansions.extend(found);
        scratch_sources = SourceMap::new(dir);
        scratch = Diags::default();
        stack = config::load_stack_with(
            files,
            dir,
            &mut scratch_sources,
            &mut scratch,
            &expansions,
            Some(registry),
        );
    }
    (expansions, failures)
}

fn collect_inputs(args: &VariableArgs, sources: &mut SourceMap, diags: &mut Diags) -> Inputs {
    let mut inputs = Inputs::default();
    for (name, raw) in &args.env {
        inputs.0.insert(
            name.clone(),
            RawInput::Text {
                raw: raw.clone(),
                origin: format!("the environment variable GPUSTACK_VAR_{name}"),
            },
        );
    }
    for path in &args.var_files {
        let Some((file, body)) = config::parse_file(sources, path, diags) else {
            continue;
        };
        for structure in body {
            match structure {
                Structure::Attribute(attr) => {
                    inputs.0.insert(
                        attr.key.as_str().to_owned(),
                        RawInput::Expr(Expr {
                            expr: attr.value,
                            file,
                        }),
                    );
                }
                Structure::Block(block) => {
                    use hcl_edit::Span as _;
                    diags.error(
                        config::span_of(file, block.ident.span()),
                        "Unexpected block",
                        "A variable file holds only name = value assignments.",
                    );
                }
            }
        }
    }
    for var in &args.vars {
        match var.split_once('=') {
            Some((name, raw)) if !name.trim().is_empty() => {
                inputs.0.insert(
                    name.trim().to_owned(),
                    RawInput::Text {
                        raw: raw.to_owned(),
                        origin: format!("--var {name}=..."),
                    },
                );
            }
            _ => diags.error(
                None,
                "Invalid --var option",
                format!("\"{var}\" is not of the form NAME=VALUE."),
            ),
        }
    }
    inputs
}
