//! The values of a stack's root variables: from the command line, variables files and the
//! environment, or from a saved plan.

use crate::evaluate::{Inputs, RawInput};
use gpustack_lang::config::{self, Expr, Stack};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::{FileId, SourceMap};
use hcl_edit::structure::Structure;
use indexmap::IndexMap;
use std::path::PathBuf;

/// One `-var NAME=VALUE` or `-var-file FILE` of the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariableArg {
    Var(String),
    File(PathBuf),
}

/// Where root variable values come from, lowest precedence first, as Terraform takes them:
/// `TF_VAR_<name>` then `GPUSTACK_VAR_<name>` from the environment; `terraform.tfvars`,
/// `terraform.tfvars.json` and `*.auto.tfvars(.json)` (in name order) from the stack's
/// directory; then each `-var` and `-var-file` in the order the command line gives them.
#[derive(Debug, Clone)]
pub struct VariableArgs {
    /// `-var` and `-var-file`, in command-line order: a later one wins.
    pub given: Vec<VariableArg>,
    /// `(name, value, variable)` from the environment, lowest precedence first.
    pub env: Vec<(String, String, String)>,
    /// Whether the stack directory's `terraform.tfvars` and `*.auto.tfvars` are read.
    pub auto_files: bool,
    /// The workspace the run is in (`terraform.workspace`): where its state is, chosen by
    /// `workspace select` or `TF_WORKSPACE`.
    pub workspace: String,
}

impl Default for VariableArgs {
    fn default() -> Self {
        Self {
            given: Vec::new(),
            env: Vec::new(),
            auto_files: false,
            workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
        }
    }
}

impl VariableArgs {
    /// The command line's variables with this process's `TF_VAR_*` and `GPUSTACK_VAR_*`, and
    /// the stack directory's variable files, as a Terraform command reads them.
    pub fn from_process_env(given: Vec<VariableArg>) -> Self {
        let mut env: Vec<(String, String, String)> = std::env::vars()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix("TF_VAR_")?;
                Some((name.to_owned(), v, k.clone()))
            })
            .collect();
        env.extend(std::env::vars().filter_map(|(k, v)| {
            let name = k.strip_prefix("GPUSTACK_VAR_")?;
            Some((name.to_owned(), v, k.clone()))
        }));
        Self {
            given,
            env,
            auto_files: true,
            ..Self::default()
        }
    }

    /// The same, in `workspace`.
    pub fn in_workspace(mut self, workspace: &str) -> Self {
        self.workspace = workspace.to_owned();
        self
    }

    /// Only the values of the environment: what commands that take no `-var` read.
    pub fn environment() -> Self {
        Self::from_process_env(Vec::new())
    }
}

/// The variable files Terraform reads from a root module's directory without being asked:
/// `terraform.tfvars`, `terraform.tfvars.json`, then every `*.auto.tfvars` and
/// `*.auto.tfvars.json` in lexical order of their names.
pub fn auto_variable_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["terraform.tfvars", "terraform.tfvars.json"]
        .into_iter()
        .map(|name| dir.join(name))
        .filter(|path| path.is_file())
        .collect();
    let mut auto: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".auto.tfvars") || n.ends_with(".auto.tfvars.json"))
                && path.is_file()
        })
        .collect();
    auto.sort();
    files.extend(auto);
    files
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
        /// Ephemeral variables, of which the plan holds nothing: given again, as sensitive
        /// ones are.
        ephemeral: &'a [String],
        supplied: &'a VariableArgs,
        /// Refuse what `supplied` sets besides the sensitive variables (a saved plan).
        only_sensitive: bool,
    },
}

/// Keeps the values given to sensitive root variables out of diagnostics: their lines in
/// variable files are sensitive (a variables file that does not parse, whole, when it names a
/// sensitive variable), and their texts from `--var` and the environment are secrets to scrub.
pub(super) fn protect_sensitive_inputs(
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
    for (name, input) in &inputs.values {
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
    let unparsed: Vec<FileId> = sources
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

/// The variables of a run, from where `inputs` says, variables files found in `dir`; files
/// they come from join `sources`.
pub(super) fn read_inputs(
    dir: &std::path::Path,
    inputs: &InputSource<'_>,
    sources: &mut SourceMap,
    diags: &mut Diags,
) -> Inputs {
    match inputs {
        InputSource::Args(args) => collect_inputs(dir, args, sources, diags),
        InputSource::Values(values) => Inputs::new(
            values
                .iter()
                .map(|(k, v)| (k.clone(), RawInput::Value(v.clone())))
                .collect(),
            gpustack_state::DEFAULT_WORKSPACE,
        ),
        InputSource::Plan {
            values,
            sensitive,
            ephemeral,
            supplied,
            only_sensitive,
        } => {
            let mut inputs = Inputs::new(
                values
                    .iter()
                    .map(|(k, v)| (k.clone(), RawInput::Value(v.clone())))
                    .collect(),
                &supplied.workspace,
            );
            // What the command line sets: with a saved plan, only sensitive variables (which
            // the plan holds as digests). The environment and the directory's variables files
            // set much a pipeline does not mean for this plan: the plan's own values win.
            let explicit = collect_inputs(
                dir,
                &VariableArgs {
                    given: supplied.given.clone(),
                    ..VariableArgs::default()
                },
                &mut SourceMap::new(dir),
                &mut Diags::default(),
            );
            let given = collect_inputs(dir, supplied, sources, diags);
            for (name, raw) in given.values {
                if sensitive.contains_key(&name) || ephemeral.contains(&name) {
                    inputs.values.insert(name, raw);
                } else if *only_sensitive && explicit.values.contains_key(&name) {
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

fn collect_inputs(
    dir: &std::path::Path,
    args: &VariableArgs,
    sources: &mut SourceMap,
    diags: &mut Diags,
) -> Inputs {
    let mut inputs = Inputs::new(IndexMap::new(), &args.workspace);
    for (name, raw, variable) in &args.env {
        inputs.values.insert(
            name.clone(),
            RawInput::Text {
                raw: raw.clone(),
                origin: format!("the environment variable {variable}"),
                environment: true,
            },
        );
    }
    if args.auto_files {
        for path in auto_variable_files(dir) {
            read_variable_file(&path, &mut inputs, sources, diags);
        }
    }
    for arg in &args.given {
        match arg {
            VariableArg::File(path) => {
                read_variable_file(path, &mut inputs, sources, diags);
            }
            VariableArg::Var(var) => match var.split_once('=') {
                Some((name, raw)) if !name.trim().is_empty() => {
                    inputs.values.insert(
                        name.trim().to_owned(),
                        RawInput::Text {
                            raw: raw.to_owned(),
                            origin: format!("-var {name}=..."),
                            environment: false,
                        },
                    );
                }
                _ => diags.error(
                    None,
                    "Invalid -var option",
                    format!("\"{var}\" is not of the form NAME=VALUE."),
                ),
            },
        }
    }
    inputs
}

/// One variables file's assignments: HCL `name = value` lines, or for a `.json` file one
/// JSON object whose members are the values.
fn read_variable_file(
    path: &std::path::Path,
    inputs: &mut Inputs,
    sources: &mut SourceMap,
    diags: &mut Diags,
) {
    if path.extension().is_some_and(|e| e == "json") {
        let Some((file, values)) = config::parse_json_variables(sources, path, diags) else {
            return;
        };
        for (name, value, span) in values {
            inputs.values.insert(
                name,
                RawInput::Json {
                    value,
                    span: config::span_of(file, Some(span)),
                },
            );
        }
        return;
    }
    let Some((file, body)) = config::parse_file(sources, path, diags) else {
        return;
    };
    for structure in body {
        match structure {
            Structure::Attribute(attr) => {
                inputs.values.insert(
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
