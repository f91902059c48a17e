//! Commands, argument parsing and output. Exit codes follow Terraform: 0 success, 1 error,
//! 2 changes present (plan --detailed-exitcode, drift).

mod fmt;
mod render;

use clap::{Args, Parser, Subcommand};
use gpustack::evaluate::EvalOptions;
use gpustack::{VariableArgs, load};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "gpustack", version = gpustack::version::VERSION, about = "GPU infrastructure on Kubernetes as code", disable_version_flag = true)]
struct Cli {
    /// Never colour output (also: NO_COLOR=1). Colour is only used on a terminal.
    #[arg(long, global = true)]
    no_color: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a stack: syntax, references, types, provider schemas, modules, cycles.
    Validate {
        #[command(flatten)]
        stack: StackArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite .hcl files in the canonical style (keeps comments).
    Fmt {
        /// Files or directories (recursively); default: the current directory.
        paths: Vec<PathBuf>,
        /// Change nothing; list files that need formatting and exit 1 if any do.
        #[arg(long)]
        check: bool,
        /// Show what would change as a diff.
        #[arg(long)]
        diff: bool,
    },
    /// Print the dependency graph as Graphviz DOT (edges in execution order).
    Graph {
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Print the version.
    Version {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct StackArgs {
    /// The stack directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Set a root variable: --var name=value (repeatable; overrides files and environment).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// Read root variables from an HCL file of name = value lines (repeatable).
    #[arg(long = "var-file", value_name = "FILE")]
    var_files: Vec<PathBuf>,
}

impl StackArgs {
    fn variables(&self) -> VariableArgs {
        VariableArgs::from_process_env(self.vars.clone(), self.var_files.clone())
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_tracing();
    let color =
        !cli.no_color && std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal();
    match cli.command {
        Command::Validate { stack, json } => validate(&stack, json, color),
        Command::Fmt { paths, check, diff } => fmt::run(paths, check, diff, color),
        Command::Graph { stack } => graph(&stack, color),
        Command::Version { json } => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "gpustack_version": gpustack::version::VERSION, "format_version": "1.0" })
                );
            } else {
                println!("gpustack v{}", gpustack::version::VERSION);
            }
            ExitCode::SUCCESS
        }
    }
}

/// Logs go to stderr, off unless GPUSTACK_LOG is set (e.g. GPUSTACK_LOG=debug).
fn init_tracing() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("GPUSTACK_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

fn validate(args: &StackArgs, json: bool, color: bool) -> ExitCode {
    let loaded = load(
        &args.dir,
        &args.variables(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    let errors = loaded.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = loaded.diagnostics.len() - errors;
    if json {
        let report = serde_json::json!({
            "format_version": "1.0",
            "valid": errors == 0,
            "error_count": errors,
            "warning_count": warnings,
            "diagnostics": loaded.diagnostics,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        render::diagnostics(&loaded.sources, &loaded.diagnostics, color);
        if errors == 0 {
            let resources = loaded.evaluated.resources.len();
            println!(
                "Success! The stack is valid ({resources} resource instance{}, {} module{}).",
                plural(resources),
                loaded.stack.modules.len(),
                plural(loaded.stack.modules.len())
            );
        } else {
            eprintln!("{errors} error{} found.", plural(errors));
        }
    }
    if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn graph(args: &StackArgs, color: bool) -> ExitCode {
    let loaded = load(
        &args.dir,
        &args.variables(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    render::diagnostics(&loaded.sources, &loaded.diagnostics, color);
    if loaded.has_errors() {
        return ExitCode::from(1);
    }
    print!(
        "{}",
        gpustack::graph::dot::render(&loaded.stack, &loaded.graph, &loaded.evaluated.instances)
    );
    ExitCode::SUCCESS
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
