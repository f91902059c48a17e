//! The values of a stack's root variables: from the command line, variables files and the
//! environment, or from a saved plan.

use crate::evaluate::{Inputs, RawInput};
use gpustack_lang::config::{self, Expr, Stack};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::{FileId, SourceMap};
use hcl_edit::structure::Structure;
use std::path::PathBuf;

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

/// The variables of a run, from where `inputs` says; files they come from join `sources`.
pub(super) fn read_inputs(
    inputs: &InputSource<'_>,
    sources: &mut SourceMap,
    diags: &mut Diags,
) -> Inputs {
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
