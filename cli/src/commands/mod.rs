//! Commands, argument parsing and output. Exit codes follow Terraform: 0 success, 1 error,
//! 2 changes present (plan --detailed-exitcode, drift).

mod backend;
mod files;
mod fmt;
mod interrupt;
mod junit;
mod modules;
mod node_check;
mod ops;
mod providers;
mod registry;
mod report;
mod review;
mod state;
mod terraform_cli;
mod terraform_state;
mod webhook;
mod workspace;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use gpustack_engine::EvalOptions;
use gpustack_engine::{PlanMode, PlanOptions};
use gpustack_engine::{VariableArg, VariableArgs, load};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Writes `document` to stdout as pretty JSON and a newline, as it serializes: a large plan's
/// JSON is never held whole in memory.
fn print_json(document: &impl serde::Serialize) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, document)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[derive(Parser)]
#[command(name = "gpustack", version = gpustack_engine::VERSION, about = "GPU infrastructure on Kubernetes as code", disable_version_flag = true)]
struct Cli {
    /// Never colour output (also: NO_COLOR=1). Colour is only used on a terminal.
    #[arg(long, global = true)]
    no_color: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Prepare a stack's state backend: check that it answers and record it; after the backend
    /// block changed, copy the state over with --migrate-state.
    Init {
        /// The stack directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Copy the state from the backend used before (the local one if none was recorded)
        /// to the one the stack now configures.
        #[arg(long, conflicts_with = "reconfigure")]
        migrate_state: bool,
        /// Use the newly configured backend as it is, leaving the old state behind.
        #[arg(long)]
        reconfigure: bool,
        /// Fetch git module sources at what their refs name now, and lock those commits.
        #[arg(long)]
        upgrade: bool,
        /// Part of the backend's configuration, laid over its block and kept for the commands
        /// after: a file of `key = value` lines, or one `KEY=VALUE` (repeatable).
        #[arg(long, value_name = "FILE|KEY=VALUE")]
        backend_config: Vec<String>,
        /// -backend=false: skip the backend (only modules are installed).
        #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
        backend: Option<bool>,
        /// -get=false: skip installing modules.
        #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
        get: Option<bool>,
        /// Answer "yes" to copying the state between backends (gpustack asks no question:
        /// --migrate-state copies it).
        #[arg(long)]
        force_copy: bool,
        /// Terraform's provider plugin directory: gpustack's providers are built in.
        #[arg(long, value_name = "DIR")]
        plugin_dir: Vec<PathBuf>,
        /// Terraform's dependency lock file mode: gpustack pins git modules in its own lock.
        #[arg(long, value_name = "MODE")]
        lockfile: Option<String>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        /// Values of root variables: const ones may be read by module sources and versions.
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[arg(long = "var-file", value_name = "FILE")]
        var_files: Vec<PathBuf>,
        #[command(flatten)]
        run: RunFlags,
    },
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
        /// Files or directories; default: the current directory.
        paths: Vec<PathBuf>,
        /// Change nothing; list files that need formatting and exit 1 if any do.
        #[arg(long)]
        check: bool,
        /// Show what would change as a diff.
        #[arg(long)]
        diff: bool,
        /// Also format the files of every directory below (as terraform fmt -recursive).
        #[arg(long)]
        recursive: bool,
        /// -list=false: do not list the files that need formatting.
        #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
        list: bool,
        /// -write=false: do not rewrite files (as --check, without its exit code).
        #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
        write: bool,
    },
    /// Evaluate expressions against the stack and its state, one per line of stdin (as
    /// terraform console): `echo 'module.pool["t4"].label' | gpustack console`.
    Console {
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Print the dependency graph as Graphviz DOT (edges in execution order).
    Graph {
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Show what apply would change: refresh, diff, and the plan (exit 2 with --detailed-exitcode when there are changes).
    Plan {
        #[command(flatten)]
        stack: StackArgs,
        #[command(flatten)]
        plan: PlanFlags,
        /// Save the plan for `gpustack apply FILE`.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the plan as JSON (format_version 1.0).
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print the plan as Markdown for a pull-request comment.
        #[arg(long)]
        markdown: bool,
        /// Exit 0 for no changes, 1 for errors, 2 for changes.
        #[arg(long)]
        detailed_exitcode: bool,
        /// Plan a fleet: every stack directory matching this pattern (e.g. 'stacks/*'), with
        /// one summary table (or JSON); exit 1 if any failed.
        #[arg(long, value_name = "GLOB", conflicts_with_all = ["out", "markdown"])]
        stacks: Option<String>,
        /// How many stacks of a fleet to plan at once.
        #[arg(long, default_value_t = 4, requires = "stacks")]
        parallel: usize,
        /// Write HCL for the objects import blocks take in that have no resource block yet,
        /// to this new file in the stack directory; then review it and plan again.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["out", "stacks"])]
        generate_config_out: Option<PathBuf>,
    },
    /// The GPU view of a Terraform or OpenTofu plan, with nothing moved into gpustack:
    /// `terraform show -json tfplan > plan.json && gpustack review plan.json`. Exit 1 on a GPU
    /// error; with --detailed-exitcode, 2 when GPU capacity changes.
    Review {
        /// The plan as JSON (`terraform show -json PLANFILE`).
        plan: PathBuf,
        /// The plan's root module, where findings are located in the `.tf` files.
        #[arg(long, value_name = "DIR", default_value = ".")]
        config: PathBuf,
        /// Read the live cluster through this kubeconfig: the GPU nodes and pods the changes
        /// touch, and the GPU Operator's live settings.
        #[arg(long, value_name = "PATH")]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig's context (default: its current context).
        #[arg(long, requires = "kubeconfig")]
        context: Option<String>,
        /// Print the review as JSON.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print the review as Markdown for a pull-request comment.
        #[arg(long)]
        markdown: bool,
        /// Exit 0 when GPU capacity does not change, 1 for errors, 2 when it changes.
        #[arg(long)]
        detailed_exitcode: bool,
    },
    /// Make the changes: plan and ask for confirmation, or apply a saved plan exactly.
    Apply {
        /// A stack directory, or a plan file saved with `plan --out`.
        #[arg(default_value = ".", value_name = "DIR|PLANFILE")]
        path: PathBuf,
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[arg(long = "var-file", value_name = "FILE")]
        var_files: Vec<PathBuf>,
        #[command(flatten)]
        plan: PlanFlags,
        /// Do not ask for confirmation.
        #[arg(long)]
        auto_approve: bool,
        /// Write the smoke tests' results as JUnit XML.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Terraform's -json (its machine-readable UI stream): refused, with what to read
        /// instead.
        #[arg(long, hide = true)]
        json: bool,
    },
    /// Run the stack's smoke tests again (gpu_smoke_test), changing nothing else.
    Test {
        #[command(flatten)]
        stack: StackArgs,
        /// Write the results as JUnit XML.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
    /// Destroy every object the stack manages (only those recorded in its state).
    Destroy {
        #[command(flatten)]
        stack: StackArgs,
        #[arg(long, value_name = "ADDRESS")]
        target: Vec<String>,
        /// Read live objects first (default true; -refresh=false skips it).
        #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
        refresh: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[arg(long)]
        auto_approve: bool,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Compare live objects with the state: exit 0 no drift, 2 drift, 1 error.
    Drift {
        #[command(flatten)]
        stack: StackArgs,
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        #[arg(long)]
        markdown: bool,
        /// Write Prometheus metrics (textfile collector format) to this file.
        #[arg(long, value_name = "FILE")]
        metrics_file: Option<PathBuf>,
        /// POST the JSON report here when drift appears, changes or goes away (not on every
        /// run); what was reported is remembered beside the state.
        #[arg(long, value_name = "URL", conflicts_with = "stacks")]
        webhook: Option<String>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        /// Check a fleet: every stack directory matching this pattern (e.g. 'stacks/*'), with
        /// one summary; exit 2 if any stack drifted, 1 if any failed.
        #[arg(long, value_name = "GLOB", conflicts_with_all = ["markdown", "metrics_file"])]
        stacks: Option<String>,
        /// How many stacks of a fleet to check at once.
        #[arg(long, default_value_t = 4, requires = "stacks")]
        parallel: usize,
    },
    /// Read or edit the state.
    State {
        #[command(subcommand)]
        command: StateCommand,
    },
    /// Mark an object for replacement by the next plan (as terraform taint).
    Taint {
        address: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Succeed when the object is not in the state.
        #[arg(long)]
        allow_missing: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Take a taint's mark away (as terraform untaint).
    Untaint {
        address: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long)]
        allow_missing: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
    /// The providers the configuration and the state require (Terraform's tree); `schema
    /// -json` their schemas; `lock` and `mirror` accepted (the providers are built in).
    Providers {
        #[command(subcommand)]
        command: Option<ProvidersCommand>,
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[arg(long = "var-file", value_name = "FILE")]
        var_files: Vec<PathBuf>,
    },
    /// Several states of one stack, as Terraform's workspaces: list, show, select, new, delete.
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
    /// Bring an existing object under management: gpustack import ADDRESS ID.
    Import {
        address: String,
        id: String,
        /// The stack directory (Terraform's -config).
        #[arg(long, visible_alias = "config", default_value = ".")]
        dir: PathBuf,
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[arg(long = "var-file", value_name = "FILE")]
        var_files: Vec<PathBuf>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Print outputs from the state.
    Output {
        name: Option<String>,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long, conflicts_with = "raw")]
        json: bool,
        /// One output's string, number or bool as it is, without quotes or newline (for a
        /// script), as `terraform output -raw NAME` prints it.
        #[arg(long, requires = "name")]
        raw: bool,
    },
    /// Show a saved plan, or the state.
    Show {
        plan_file: Option<PathBuf>,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// A saved plan as Markdown, for a pull-request comment.
        #[arg(long, requires = "plan_file")]
        markdown: bool,
    },
    /// Release a lock left by a run that is gone: gpustack force-unlock LOCK_ID.
    ForceUnlock {
        id: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Do not ask for confirmation (gpustack asks none: the lock's ID is the confirmation).
        #[arg(long)]
        force: bool,
    },
    /// Update the state to match live objects (as terraform refresh: apply --refresh-only
    /// --auto-approve).
    Refresh {
        #[command(flatten)]
        stack: StackArgs,
        #[arg(long, value_name = "ADDRESS")]
        target: Vec<String>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Install the stack's git module sources (as terraform get; init does it too).
    Get {
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Fetch what the modules' refs name now (terraform get -update).
        #[arg(long)]
        update: bool,
    },
    /// Check this machine's GPUs through NVML: count, model, memory, driver and CUDA version,
    /// MIG mode and devices, ECC errors; exit 1 when an expectation fails or NVML is absent.
    NodeCheck {
        #[command(flatten)]
        expect: node_check::Expectations,
        #[arg(long)]
        json: bool,
    },
    /// Print the version.
    Version {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ProvidersCommand {
    /// The schemas of the providers the configuration requires, in Terraform's JSON form.
    Schema {
        /// Print JSON (the only form, as in Terraform, which requires the flag).
        #[arg(long)]
        json: bool,
    },
    /// Terraform's dependency lock: nothing to lock, the providers are built in.
    Lock {
        /// Terraform's platforms to lock for.
        #[arg(long, value_name = "OS_ARCH")]
        platform: Vec<String>,
        #[arg(long)]
        fs_mirror: Option<PathBuf>,
        #[arg(long)]
        net_mirror: Option<String>,
        #[arg(long)]
        enable_plugin_cache: bool,
        /// Providers to lock.
        providers: Vec<String>,
    },
    /// Terraform's provider mirror: nothing to copy, the providers are built in.
    Mirror {
        #[arg(long, value_name = "OS_ARCH")]
        platform: Vec<String>,
        #[arg(long)]
        lock_file: Option<String>,
        /// The directory Terraform would copy the provider packages to.
        target_dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum WorkspaceCommand {
    /// List the workspaces, the current one marked with *.
    List {
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Print the current workspace.
    Show {
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Choose the workspace the stack's commands use.
    Select {
        name: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Create it when it does not exist.
        #[arg(long)]
        or_create: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
    /// Create a workspace (an empty state) and select it.
    New {
        name: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Delete a workspace's state; refused while it records objects, unless --force.
    Delete {
        name: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long)]
        force: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
        #[command(flatten)]
        run: RunFlags,
    },
}

#[derive(Subcommand)]
enum StateCommand {
    /// List the objects in the state.
    List {
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Show one object's attributes (sensitive ones masked).
    Show {
        address: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Forget objects without touching them.
    Rm {
        #[arg(required = true)]
        addresses: Vec<String>,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
    /// Record an object under a new address (after renaming a resource or moving it into a module).
    Mv {
        from: String,
        to: String,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
    /// Print the raw state.
    Pull {
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Replace the state with a file (e.g. errored.gpustack-state.json after a failed save);
    /// refused for another lineage or when the backend's state is newer, unless --force.
    Push {
        file: PathBuf,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long)]
        force: bool,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
    /// Take over the objects of a Terraform state (`terraform state pull`, format version 4)
    /// that the stack declares, each proved to be the object Terraform recorded.
    ImportTerraform {
        file: PathBuf,
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[arg(long = "var-file", value_name = "FILE")]
        var_files: Vec<PathBuf>,
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        lock_timeout: Duration,
    },
}

/// Terraform's flags of every command that may change or lock the state.
#[derive(Args, Default)]
struct RunFlags {
    /// Ask for missing values (Terraform's -input): gpustack never asks, so -input=false is
    /// what it always does.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_name = "BOOL")]
    input: Option<bool>,
    /// -lock=false: take no state lock (as Terraform; another run may change the state).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_name = "BOOL")]
    lock: Option<bool>,
    /// Terraform's bound on concurrent operations: gpustack bounds them per provider block
    /// (`max_concurrency`), so this is accepted and noted.
    #[arg(long, value_name = "N")]
    parallelism: Option<usize>,
    /// Show warnings as one line each.
    #[arg(long)]
    compact_warnings: bool,
    /// Terraform's legacy -state, -state-out and -backup (local state paths): refused with
    /// where gpustack keeps its state instead.
    #[arg(long, value_name = "PATH", hide = true)]
    state: Option<PathBuf>,
    #[arg(long, value_name = "PATH", hide = true)]
    state_out: Option<PathBuf>,
    #[arg(long, value_name = "PATH", hide = true)]
    backup: Option<PathBuf>,
}

impl RunFlags {
    /// What these flags change for the whole run; a flag gpustack cannot honour ends it here,
    /// before anything is read or locked.
    fn take_effect(&self) {
        for (flag, given) in [
            ("-state", self.state.is_some()),
            ("-state-out", self.state_out.is_some()),
            ("-backup", self.backup.is_some()),
        ] {
            if given {
                eprintln!(
                    "Error: {flag} is Terraform's legacy path of a local state file; gpustack keeps the state where the stack's backend says (backend \"local\" {{ path = ... }}, default .gpustack/state.json, with its own backup), so it cannot write it elsewhere for one run. Set the path in the backend block."
                );
                std::process::exit(1);
            }
        }
        if self.lock == Some(false) {
            backend::set_locking(false);
        }
        if let Some(n) = self.parallelism {
            eprintln!(
                "Note: -parallelism={n} is accepted: gpustack runs independent operations concurrently within each provider block's max_concurrency (default {}), not under one global bound.",
                gpustack_engine::DEFAULT_MAX_CONCURRENCY
            );
        }
        if self.compact_warnings {
            report::compact_warnings(true);
        }
    }
}

fn parse_bool_flag(text: &str) -> Result<bool, String> {
    match text {
        "true" | "1" | "t" | "T" | "TRUE" | "True" => Ok(true),
        "false" | "0" | "f" | "F" | "FALSE" | "False" => Ok(false),
        other => Err(format!("\"{other}\" is not a boolean (true or false)")),
    }
}

#[derive(Args)]
struct PlanFlags {
    /// Plan to destroy everything.
    #[arg(long)]
    destroy: bool,
    /// Only update the state to match live objects.
    #[arg(long, conflicts_with = "destroy")]
    refresh_only: bool,
    /// Read live objects first (default true; -refresh=false skips it).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_parser = parse_bool_flag, value_name = "BOOL")]
    refresh: bool,
    /// Limit the plan to these resources and what they depend on.
    #[arg(long, value_name = "ADDRESS")]
    target: Vec<String>,
    /// Replace these instances even if nothing changed.
    #[arg(long, value_name = "ADDRESS")]
    replace: Vec<String>,
    /// Wait this long for the state lock (e.g. 30s); default: fail at once.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    lock_timeout: Duration,
    #[command(flatten)]
    run: RunFlags,
}

impl PlanFlags {
    fn options(&self) -> PlanOptions {
        let mode = if self.destroy {
            PlanMode::Destroy
        } else if self.refresh_only {
            PlanMode::RefreshOnly
        } else {
            PlanMode::Normal
        };
        PlanOptions {
            mode,
            refresh: self.refresh,
            targets: self.target.clone(),
            replace: self.replace.clone(),
            generate_config: false,
            unreviewed: false,
            imports: vec![],
            speculative: false,
        }
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e}: use a duration such as 30s or 2m"))
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
        // A plan file names no directory: its stack is the one the command runs in.
        let dir = if self.dir.is_file() {
            std::path::Path::new(".")
        } else {
            self.dir.as_path()
        };
        given_variables(dir, &self.vars, &self.var_files)
    }
}

/// Go's `-switch=true` and `-switch=false` for gpustack's switches (`--auto-approve`,
/// `--force`): the first as the switch, the second as nothing.
fn switches_as_go_writes_them(
    command: &clap::Command,
    args: Vec<std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    // The command the words name (`workspace select`): a switch is one only of the command
    // it is given to. A flag that takes a value itself (`--refresh=false`) is left to clap.
    let mut invoked = command;
    for word in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if word.starts_with('-') {
            continue;
        }
        match invoked.find_subcommand(word) {
            Some(sub) => invoked = sub,
            None => break,
        }
    }
    let is_switch = |long: &str| {
        invoked.get_arguments().any(|a| {
            a.get_long() == Some(long)
                && matches!(a.get_action(), clap::ArgAction::SetTrue)
                && a.get_num_args().is_none_or(|n| n.max_values() == 0)
        })
    };
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        let rewritten = arg.to_str().and_then(|text| {
            let (flag, value) = text.strip_prefix("--")?.split_once('=')?;
            let value = parse_bool_flag(value).ok()?;
            is_switch(flag).then(|| value.then(|| format!("--{flag}").into()))
        });
        match rewritten {
            Some(Some(switch)) => out.push(switch),
            Some(None) => {}
            None => out.push(arg),
        }
    }
    out
}

/// The command line's `-var`s and `-var-file`s, in the order given: Terraform applies them in
/// that order, the later winning, whichever of the two each is.
static GIVEN_VARIABLES: std::sync::OnceLock<Vec<VariableArg>> = std::sync::OnceLock::new();

/// The run's variables: `vars` and `var_files` in the order the command line gave them, in
/// the workspace `dir` is in (an unreadable selection is reported when the backend opens).
fn given_variables(dir: &std::path::Path, vars: &[String], var_files: &[PathBuf]) -> VariableArgs {
    let given = GIVEN_VARIABLES.get().cloned().unwrap_or_else(|| {
        var_files
            .iter()
            .map(|f| VariableArg::File(f.clone()))
            .chain(vars.iter().map(|v| VariableArg::Var(v.clone())))
            .collect()
    });
    let workspace = backend::current_workspace(dir)
        .unwrap_or_else(|_| gpustack_state::DEFAULT_WORKSPACE.to_owned());
    VariableArgs::from_process_env(given).in_workspace(&workspace)
}

/// The `vars` and `var_files` of the innermost command of `matches`, ordered by where they
/// stand on the command line.
fn variable_order(matches: &clap::ArgMatches) -> Vec<VariableArg> {
    let mut leaf = matches;
    while let Some((_, sub)) = leaf.subcommand() {
        leaf = sub;
    }
    let mut found: Vec<(usize, VariableArg)> = Vec::new();
    let has = |id: &str| leaf.ids().any(|i| i.as_str() == id);
    if has("vars")
        && let (Some(values), Some(indices)) =
            (leaf.get_many::<String>("vars"), leaf.indices_of("vars"))
    {
        found.extend(indices.zip(values.map(|v| VariableArg::Var(v.clone()))));
    }
    if has("var_files")
        && let (Some(values), Some(indices)) = (
            leaf.get_many::<PathBuf>("var_files"),
            leaf.indices_of("var_files"),
        )
    {
        found.extend(indices.zip(values.map(|v| VariableArg::File(v.clone()))));
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, arg)| arg).collect()
}

// Long by design: one arm per command of the command line, each a call into its module.
pub fn main() -> ExitCode {
    let invocation = match terraform_cli::read(std::env::args_os().collect(), &|name| {
        std::env::var(name).ok()
    }) {
        Ok(invocation) => invocation,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = &invocation.chdir
        && let Err(e) = std::env::set_current_dir(dir)
    {
        eprintln!("Error: -chdir={}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let command = Cli::command();
    let args = switches_as_go_writes_them(&command, invocation.args);
    let parsed = command.try_get_matches_from(&args).and_then(|matches| {
        let _ = GIVEN_VARIABLES.set(variable_order(&matches));
        Cli::from_arg_matches(&matches)
    });
    let cli = match parsed {
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
        Command::Init {
            dir,
            migrate_state,
            reconfigure,
            upgrade,
            backend_config,
            backend: use_backend,
            get,
            force_copy,
            plugin_dir,
            lockfile,
            lock_timeout,
            vars,
            var_files,
            run,
        } => {
            run.take_effect();
            let variables = given_variables(&dir, &vars, &var_files);
            let root = gpustack_engine::root_values(&dir, &variables);
            if !plugin_dir.is_empty() || lockfile.is_some() {
                eprintln!(
                    "Note: -plugin-dir and -lockfile are accepted: gpustack's providers are built into the binary, and its git modules are pinned in {}.",
                    gpustack_lang::config::remote::LOCK_FILE
                );
            }
            let migrate_state = migrate_state || force_copy;
            // Modules first: the stack cannot load without them.
            let installed = if get == Some(false) {
                Ok(0)
            } else {
                modules::install(&dir, upgrade, Some(&root))
            };
            match installed {
                Ok(0) => {}
                Ok(n) => eprintln!(
                    "Installed {n} module source(s); they are pinned in {}.",
                    gpustack_lang::config::remote::LOCK_FILE
                ),
                Err(e) => {
                    eprintln!("Error: {e}");
                    return ExitCode::from(1);
                }
            }
            // The variables init was given: const ones name module sources, and the
            // encryption block may read any.
            let mut session = gpustack_engine::Session::open(
                crate::registry(),
                &dir,
                &gpustack_lang::config::Files::Disk,
                gpustack_engine::InputSource::Args(&variables),
            );
            if session.has_errors() {
                let (sources, diagnostics) = session.diagnostics();
                report::diagnostics(&sources, &diagnostics, color);
                return ExitCode::from(1);
            }
            // What apply will run on the machine it runs on, for whoever reviews the stack and
            // the modules it just fetched.
            let commands = session.local_commands();
            if !commands.is_empty() {
                eprintln!("These run commands on the machine that plans or applies the stack:");
                for (address, kinds) in &commands {
                    eprintln!("  {address} ({})", kinds.join(", "));
                }
            }
            if use_backend == Some(false) {
                eprintln!(
                    "gpustack has been initialized (the backend was skipped: -backend=false)."
                );
                return ExitCode::SUCCESS;
            }
            backend::init(
                &mut session,
                &dir,
                migrate_state,
                reconfigure,
                &backend_config,
                lock_timeout,
            )
        }
        Command::Validate { stack, json } => validate(&stack, json, color),
        Command::Fmt {
            paths,
            check,
            diff,
            recursive,
            list,
            write,
        } => fmt::run(
            paths,
            &fmt::Options {
                check,
                diff,
                recursive,
                list,
                write: write && !check,
            },
        ),
        Command::Review {
            plan,
            config,
            kubeconfig,
            context,
            json,
            markdown,
            detailed_exitcode,
        } => review::review(&review::ReviewArgs {
            plan,
            config,
            kubeconfig,
            context,
            json,
            markdown,
            detailed_exitcode,
            color,
        }),
        Command::Graph { stack } => graph(&stack, color),
        Command::Console { stack } => ops::console(&common(&stack, Duration::ZERO, color)),
        Command::Plan {
            stack,
            plan,
            json,
            detailed_exitcode,
            stacks: Some(pattern),
            parallel,
            ..
        } => ops::fleet(
            &{
                plan.run.take_effect();
                common(&stack, plan.lock_timeout, color)
            },
            ops::FleetCommand::Plan {
                options: PlanOptions {
                    speculative: true,
                    ..plan.options()
                },
                detailed_exitcode,
            },
            &pattern,
            parallel,
            json,
        ),
        Command::Plan {
            stack,
            plan,
            out,
            json,
            markdown,
            detailed_exitcode,
            generate_config_out,
            ..
        } => {
            plan.run.take_effect();
            let common = ops::Common {
                json,
                ..common(&stack, plan.lock_timeout, color)
            };
            let mut options = plan.options();
            options.generate_config = generate_config_out.is_some();
            options.speculative = out.is_none();
            ops::plan(
                &common,
                &ops::PlanArgs {
                    out,
                    json,
                    markdown,
                    detailed_exitcode,
                    options,
                    generate_config_out,
                },
            )
        }
        Command::Apply {
            path,
            vars,
            var_files,
            plan,
            auto_approve,
            junit,
            json,
        } => {
            if json {
                eprintln!(
                    "Error: apply -json is Terraform's stream of its machine-readable UI, which gpustack does not write. Save the plan (plan -out=FILE) and read it with show -json FILE, apply it, then read the result with output -json or show -json."
                );
                return ExitCode::from(1);
            }
            let stack = StackArgs {
                dir: path.clone(),
                vars,
                var_files,
            };
            plan.run.take_effect();
            let common = common(&stack, plan.lock_timeout, color);
            let plan_file = path.is_file().then_some(path.as_path());
            ops::apply(
                &common,
                plan_file,
                &plan.options(),
                auto_approve,
                junit.as_deref(),
            )
        }
        Command::Test {
            stack,
            junit,
            lock_timeout,
        } => ops::test(&common(&stack, lock_timeout, color), junit.as_deref()),
        Command::Destroy {
            stack,
            target,
            refresh,
            lock_timeout,
            auto_approve,
            run,
        } => {
            run.take_effect();
            let common = common(&stack, lock_timeout, color);
            let options = PlanOptions {
                mode: PlanMode::Destroy,
                refresh,
                targets: target,
                replace: vec![],
                generate_config: false,
                unreviewed: false,
                imports: vec![],
                speculative: false,
            };
            ops::apply(&common, None, &options, auto_approve, None)
        }
        Command::Drift {
            stack,
            json,
            stacks: Some(pattern),
            parallel,
            lock_timeout,
            ..
        } => ops::fleet(
            &common(&stack, lock_timeout, color),
            ops::FleetCommand::Drift,
            &pattern,
            parallel,
            json,
        ),
        Command::Drift {
            stack,
            json,
            markdown,
            metrics_file,
            webhook,
            lock_timeout,
            ..
        } => ops::drift(
            &ops::Common {
                json,
                ..common(&stack, lock_timeout, color)
            },
            &ops::DriftArgs {
                json,
                markdown,
                metrics_file,
                webhook,
            },
        ),
        Command::State { command } => match command {
            StateCommand::List { dir } => state::list(&dir),
            StateCommand::Show { address, dir } => state::show_resource(&dir, &address),
            StateCommand::Rm {
                addresses,
                dir,
                lock_timeout,
            } => state::rm(&dir, &addresses, lock_timeout),
            StateCommand::Mv {
                from,
                to,
                dir,
                lock_timeout,
            } => state::mv(&dir, &from, &to, lock_timeout),
            StateCommand::Pull { dir } => state::pull(&dir),
            StateCommand::Push {
                file,
                dir,
                force,
                lock_timeout,
            } => state::push(&dir, &file, force, lock_timeout),
            StateCommand::ImportTerraform {
                file,
                dir,
                vars,
                var_files,
                lock_timeout,
            } => terraform_state::import(
                &dir,
                &file,
                &given_variables(&dir, &vars, &var_files),
                lock_timeout,
                color,
            ),
        },
        Command::Taint {
            address,
            dir,
            allow_missing,
            lock_timeout,
            run,
        } => {
            run.take_effect();
            state::taint(&dir, &address, true, allow_missing, lock_timeout)
        }
        Command::Untaint {
            address,
            dir,
            allow_missing,
            lock_timeout,
            run,
        } => {
            run.take_effect();
            state::taint(&dir, &address, false, allow_missing, lock_timeout)
        }
        Command::Providers {
            command,
            vars,
            var_files,
        } => {
            let variables = given_variables(std::path::Path::new("."), &vars, &var_files);
            match command {
                None => providers::tree(std::path::Path::new("."), &variables, color),
                Some(ProvidersCommand::Schema { json: false }) => {
                    eprintln!("Error: providers schema prints JSON only: add -json.");
                    ExitCode::from(1)
                }
                Some(ProvidersCommand::Schema { json: true }) => {
                    providers::schema_json(std::path::Path::new("."), &variables, color)
                }
                Some(ProvidersCommand::Lock { .. }) => {
                    println!(
                        "gpustack's providers are built into the binary: there is no provider package to lock, and no .terraform.lock.hcl is written. Module sources are pinned by gpustack init in gpustack.modules.lock.json."
                    );
                    ExitCode::SUCCESS
                }
                Some(ProvidersCommand::Mirror { .. }) => {
                    println!(
                        "gpustack's providers are built into the binary: there is no provider package to mirror, and nothing is written."
                    );
                    ExitCode::SUCCESS
                }
            }
        }
        Command::Workspace { command } => match command {
            WorkspaceCommand::List { dir } => workspace::list(&dir),
            WorkspaceCommand::Show { dir } => workspace::show(&dir),
            WorkspaceCommand::Select {
                name,
                dir,
                or_create,
                lock_timeout,
            } => workspace::select(&dir, &name, or_create, lock_timeout),
            WorkspaceCommand::New {
                name,
                dir,
                lock_timeout,
                run,
            } => {
                run.take_effect();
                workspace::new(&dir, &name, lock_timeout)
            }
            WorkspaceCommand::Delete {
                name,
                dir,
                force,
                lock_timeout,
                run,
            } => {
                run.take_effect();
                workspace::delete(&dir, &name, force, lock_timeout)
            }
        },
        Command::Import {
            address,
            id,
            dir,
            vars,
            var_files,
            lock_timeout,
            run,
        } => state::import(
            &dir,
            &given_variables(&dir, &vars, &var_files),
            &address,
            &id,
            {
                run.take_effect();
                lock_timeout
            },
            color,
        ),
        Command::Output {
            name,
            dir,
            json,
            raw,
        } => {
            report::json_errors(json);
            match (name, raw) {
                (Some(name), true) => state::output_raw(&dir, &name),
                (name, _) => state::output(&dir, name.as_deref(), json),
            }
        }
        Command::Show {
            plan_file,
            dir,
            json,
            markdown,
        } => {
            report::json_errors(json);
            state::show(&dir, plan_file.as_deref(), json, markdown, color)
        }
        Command::ForceUnlock { id, dir, force: _ } => state::force_unlock(&dir, &id),
        Command::Refresh {
            stack,
            target,
            lock_timeout,
            run,
        } => {
            run.take_effect();
            let common = common(&stack, lock_timeout, color);
            let options = PlanOptions {
                mode: PlanMode::RefreshOnly,
                refresh: true,
                targets: target,
                replace: vec![],
                generate_config: false,
                unreviewed: false,
                imports: vec![],
                speculative: false,
            };
            ops::apply(&common, None, &options, true, None)
        }
        Command::Get { dir, update } => match modules::install(&dir, update, None) {
            Ok(n) => {
                eprintln!("Installed {n} module source(s).");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("Error: {e}");
                ExitCode::from(1)
            }
        },
        Command::NodeCheck { expect, json } => node_check::run(&expect, json),
        Command::Version { json } => {
            if json {
                // As `terraform version -json`, the providers being the ones built in.
                let providers: serde_json::Map<String, serde_json::Value> =
                    gpustack_protocol::terraform::SERVED_PROVIDERS
                        .iter()
                        .filter(|(source, _)| !source.starts_with("builtin/"))
                        .map(|(source, _)| {
                            (
                                format!("registry.terraform.io/{source}"),
                                serde_json::Value::String(gpustack_engine::VERSION.to_owned()),
                            )
                        })
                        .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "terraform_version": gpustack_protocol::terraform::LANGUAGE_VERSION,
                        "platform": format!("{}_{}", std::env::consts::OS, match std::env::consts::ARCH {
                            "x86_64" => "amd64",
                            "aarch64" => "arm64",
                            other => other,
                        }),
                        "provider_selections": providers,
                        "terraform_outdated": false,
                        "gpustack_version": gpustack_engine::VERSION,
                    }))
                    .unwrap_or_default()
                );
            } else {
                println!("gpustack v{}", gpustack_engine::VERSION);
                println!(
                    "implements the {}",
                    gpustack_lang::config::terraform::language_version()
                );
            }
            ExitCode::SUCCESS
        }
    }
}

/// Logs go to stderr, off unless GPUSTACK_LOG is set (e.g. GPUSTACK_LOG=debug), scrubbed of
/// every secret the run has seen: a client library's trace line knows no marks.
fn init_tracing() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("GPUSTACK_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(|| ScrubbedLine(Vec::new()))
            .try_init();
    }
}

/// One log line, written to stderr scrubbed when it is complete.
struct ScrubbedLine(Vec<u8>);

impl std::io::Write for ScrubbedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ScrubbedLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            gpustack_protocol::secrets::scrub(&text).as_bytes(),
        );
    }
}

fn validate(args: &StackArgs, json: bool, color: bool) -> ExitCode {
    let loaded = load(
        crate::registry(),
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
        report::diagnostics(&loaded.sources, &loaded.diagnostics, color);
        if errors == 0 {
            let resources = loaded.resource_count();
            println!(
                "Success! The stack is valid ({resources} resource instance{}, {} module{}).",
                plural(resources),
                loaded.module_count(),
                plural(loaded.module_count())
            );
        } else {
            eprintln!("{errors} error{} found.", plural(errors));
        }
    }
    // The process ends here: freeing the stack's tree one node at a time is work no one
    // waits for, and the operating system takes the memory back whole.
    std::mem::forget(loaded);
    if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn graph(args: &StackArgs, color: bool) -> ExitCode {
    let loaded = load(
        crate::registry(),
        &args.dir,
        &args.variables(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    report::diagnostics(&loaded.sources, &loaded.diagnostics, color);
    if loaded.has_errors() {
        return ExitCode::from(1);
    }
    print!("{}", loaded.graph_dot());
    ExitCode::SUCCESS
}

fn common(stack: &StackArgs, lock_timeout: Duration, color: bool) -> ops::Common {
    ops::Common {
        dir: stack.dir.clone(),
        variables: stack.variables(),
        lock_timeout,
        color,
        json: false,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
