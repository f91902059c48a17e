//! plan, apply, destroy and drift: the commands that read live state and change it.

use super::backend::{full, lock, read, runtime};
use super::report;
use gpustack_engine::ApplyReport;
use gpustack_engine::{InputSource, Session, VariableArgs};
use gpustack_engine::{Plan, PlanMode, PlanOptions};
use gpustack_lang::config::Files;
use gpustack_state::{Backend, Encryption, Encryptions, LockGuard, State};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct Common {
    pub dir: PathBuf,
    pub variables: VariableArgs,
    pub lock_timeout: Duration,
    pub color: bool,
    /// `--json`: diagnostics are JSON too (on stdout when the command fails, so that it
    /// still prints one document there; on stderr otherwise).
    pub json: bool,
}

pub struct PlanArgs {
    pub out: Option<PathBuf>,
    pub json: bool,
    pub markdown: bool,
    pub detailed_exitcode: bool,
    pub options: PlanOptions,
    pub generate_config_out: Option<PathBuf>,
}

fn error(message: impl std::fmt::Display) -> ExitCode {
    report::fail(&message.to_string());
    ExitCode::from(1)
}

fn open(common: &Common) -> Result<Session, ExitCode> {
    let session = Session::open(
        crate::registry(),
        &common.dir,
        &Files::Disk,
        InputSource::Args(&common.variables),
    );
    if session.has_errors() {
        let (sources, diagnostics) = session.diagnostics();
        emit(common, &sources, &diagnostics);
        return Err(ExitCode::from(1));
    }
    Ok(session)
}

/// Diagnostics as text, or as JSON for `--json`.
fn emit(
    common: &Common,
    sources: &gpustack_lang::source::SourceMap,
    diagnostics: &[gpustack_protocol::Diagnostic],
) {
    if !common.json {
        report::diagnostics(sources, diagnostics, common.color);
        return;
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors == 0 && diagnostics.is_empty() {
        return;
    }
    let text = report::diagnostics_json(diagnostics, errors);
    if errors > 0 {
        println!("{text}");
    } else {
        eprintln!("{text}");
    }
}

/// Plans under the lock; the lock is returned so that an apply can keep it, and the stack's
/// encryption, for what the run writes besides the state. A plan that will be `saved` to a
/// file against a stack with no state first writes the state's first version (empty: its
/// lineage and the key of its digests), so that the key never travels in the plan file.
async fn make_plan(
    common: &Common,
    options: &PlanOptions,
    operation: &str,
    saved: bool,
) -> Result<(Plan, Box<dyn Backend>, LockGuard, Encryptions), ExitCode> {
    let mut session = open(common)?;
    let (backend_config, encryptions) = super::backend::settings(&mut session).map_err(error)?;
    let backend = super::backend::open(&common.dir, &backend_config, encryptions.state.clone())
        .await
        .map_err(error)?;
    let guard = lock(backend.as_ref(), operation, common.lock_timeout)
        .await
        .map_err(error)?;
    let mut state = read(backend.as_ref()).await.map_err(error)?;
    if saved && state.as_ref().is_none_or(gpustack_engine::needs_digest_key) {
        let first = gpustack_engine::with_digest_key(state.take());
        backend.write(&first).await.map_err(|e| error(full(&e)))?;
        state = Some(first);
    }
    // A state read with the fallback key (or in clear, while encrypting) is written again
    // with the primary one by the first run that may write, changes or not.
    if operation == "apply"
        && let Some(state) = &state
        && encryptions.state.read_otherwise()
    {
        backend.write(state).await.map_err(|e| error(full(&e)))?;
        match encryptions.state.primary_name() {
            Some(method) => eprintln!(
                "The state was read with its encryption's fallback; it is now encrypted with method.{method}."
            ),
            None => eprintln!(
                "The state was read with its encryption's fallback; it is now written unencrypted."
            ),
        }
    }
    let (plan, sources, diagnostics) =
        gpustack_engine::plan(session, state.as_ref(), options).await;
    emit(common, &sources, &diagnostics);
    match plan {
        Some(plan) => Ok((plan, backend, guard, encryptions)),
        None => Err(ExitCode::from(1)),
    }
}

/// A saved plan from its file: an encrypted one is decrypted with the plan encryption of the
/// stack it names (its directory is in the envelope's header), GPUSTACK_ENCRYPTION over it.
pub(crate) async fn read_plan(file: &Path, variables: &VariableArgs) -> Result<Plan, String> {
    let bytes = super::files::read_given(file)?;
    let bytes = if gpustack_state::encryption::is_envelope(&bytes) {
        let dir = gpustack_state::encryption::envelope_stack_dir(&bytes)
            .unwrap_or_else(|| ".".to_owned());
        let mut session = Session::open(
            crate::registry(),
            Path::new(&dir),
            &Files::Disk,
            InputSource::Args(variables),
        );
        let (_, encryptions) = super::backend::settings(&mut session)?;
        encryptions
            .plan
            .open(&bytes)
            .await
            .map_err(|e| format!("{}: {}", file.display(), full(&e)))?
    } else {
        bytes
    };
    Plan::decode(&bytes).map_err(|e| format!("{}: {}", file.display(), full(&e)))
}

pub fn plan(common: &Common, args: &PlanArgs) -> ExitCode {
    runtime().block_on(async {
        // Refused before planning: the file is new, and in the stack so the next plan reads it.
        let generate_to = match &args.generate_config_out {
            Some(path) => match generated_path(&common.dir, path) {
                Ok(path) => Some(path),
                Err(e) => return error(e),
            },
            None => None,
        };
        let (plan, _, _guard, encryptions) = match make_plan(common, &args.options, "plan", args.out.is_some()).await {
            Ok(p) => p,
            Err(code) => return code,
        };
        if let Some(path) = &generate_to {
            let text: String = plan
                .generated
                .iter()
                .map(|g| g.text.clone())
                .collect::<Vec<_>>()
                .join("\n");
            if plan.generated.is_empty() {
                eprintln!("No import block takes in an undeclared resource: nothing to generate.");
            } else {
                // Imported objects' attributes may be secret.
                if let Err(e) = super::files::write_private(path, text.as_bytes()) {
                    return error(format!("cannot write {}: {e}", path.display()));
                }
                eprintln!(
                    "Wrote configuration for {} imported object(s) to {}: {}. Review it, then plan again.",
                    plan.generated.len(),
                    path.display(),
                    plan.generated
                        .iter()
                        .map(|g| g.address.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if args.json {
            if let Err(e) = super::print_json(&gpustack_engine::plan_json(&plan)) {
                return error(format!("cannot write the plan's JSON: {e}"));
            }
        } else if args.markdown {
            print!("{}", gpustack_engine::plan_markdown(&plan));
        } else {
            print!("{}", gpustack_engine::plan_text(&plan, common.color));
        }
        if let Some(out) = &args.out {
            let sealed = encryptions
                .plan
                .seal(plan.encode(), Some(&plan.snapshot.stack_dir))
                .await;
            let written = match sealed {
                Ok(bytes) => super::files::write_private(out, &bytes).map_err(|e| e.to_string()),
                Err(e) => Err(full(&e)),
            };
            if let Err(e) = written {
                return error(format!("cannot write the plan to {}: {e}", out.display()));
            }
            if !args.json && !args.markdown {
                // As Terraform under TF_IN_AUTOMATION: no advice on the command to type next.
                if in_automation() {
                    println!("\nSaved the plan to {}.", out.display());
                } else {
                    println!(
                        "\nSaved the plan to {}. Apply exactly this plan with: gpustack apply {}",
                        out.display(),
                        out.display()
                    );
                }
            }
        }
        if args.detailed_exitcode && plan.has_changes() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    })
}

/// Where `--generate-config-out` writes: a new `.hcl` file inside the stack directory.
fn generated_path(stack: &Path, path: &Path) -> Result<PathBuf, String> {
    if path.exists() {
        return Err(format!(
            "{} already exists: --generate-config-out writes a new file, never over one",
            path.display()
        ));
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if gpustack_lang::config::stack_file_syntax(&name)
        != Some(gpustack_lang::config::Syntax::Native)
    {
        return Err(format!(
            "{}: the generated file must end in .hcl or .tf, so that the stack loads it",
            path.display()
        ));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (Ok(parent), Ok(stack)) = (std::fs::canonicalize(parent), std::fs::canonicalize(stack))
    else {
        return Err(format!("{}: its directory does not exist", path.display()));
    };
    if parent != stack {
        return Err(format!(
            "{}: write it into the stack directory {}, where the next plan reads it",
            path.display(),
            stack.display()
        ));
    }
    Ok(path.to_path_buf())
}

fn confirm(question: &str, auto_approve: bool) -> Result<bool, ExitCode> {
    if auto_approve {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(error(
            "refusing to ask for confirmation without a terminal; run with --auto-approve, or apply a saved plan",
        ));
    }
    eprint!("\n{question}\n  Only 'yes' will be accepted: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    Ok(answer.trim() == "yes")
}

/// Ctrl-C or SIGTERM stops new operations; the ones in flight finish and the state is saved.
/// A second Ctrl-C releases the lock and aborts.
fn interrupt_flag() -> Arc<AtomicBool> {
    super::interrupt::graceful()
}

// Long by design: an apply's steps around the engine's, in order: the state read again
// under the lock, the fence watched, the state written as the engine asks, the report and
// JUnit, and what is kept when a write fails.
/// `stop` is set by Ctrl-C, which may come while planning or confirming, before any change;
/// `lock` is the state lock the run holds, whose loss stops it the same way.
#[allow(clippy::too_many_arguments)]
async fn execute(
    plan: &Plan,
    backend: &dyn Backend,
    lock: &LockGuard,
    common: &Common,
    stop: Arc<AtomicBool>,
    junit: Option<&Path>,
    saved: bool,
    encryption: &Encryption,
) -> ExitCode {
    let color = common.color;
    if stop.load(Ordering::SeqCst) {
        return error("interrupted before any change was made");
    }
    // Read again under the lock: a plan applies only to the state it was made from.
    let state = match read(backend).await {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    if let Err(e) = check_fresh(plan, state.as_ref()) {
        return error(e);
    }
    let fence = lock.fence();
    if fence.is_lost() {
        return error("the state lock was lost before any change was made");
    }
    if let Err(e) = encryption.prepare().await {
        return error(full(&e));
    }
    let watcher = {
        let (stop, fence) = (stop.clone(), fence.clone());
        tokio::spawn(async move {
            while !fence.is_lost() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            eprintln!(
                "Stopping: no new operation starts without the state lock; the ones in flight finish."
            );
            stop.store(true, Ordering::SeqCst);
        })
    };
    // The walker writes from synchronous code; the write blocks only the thread it runs on.
    // Once a write fails, nothing more is started: what is done would go unrecorded.
    let save_failed = AtomicBool::new(false);
    let mut persist = |state: &State| {
        gpustack_state::block_on(backend.write(state)).inspect_err(|_| {
            save_failed.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
        })
    };
    let halt = gpustack_engine::Halt {
        stop: stop.clone(),
        fence: fence.clone(),
    };
    let ApplyReport {
        state,
        unsaved,
        sources,
        diagnostics,
        counts,
        results,
    } = gpustack_engine::apply(
        &crate::registry(),
        plan,
        state,
        &mut persist,
        &halt,
        std::io::stderr().is_terminal(),
        gpustack_engine::Supplied {
            variables: &common.variables,
            saved,
        },
    )
    .await;
    watcher.abort();
    report::diagnostics(&sources, &diagnostics, color);
    let mut failed = diagnostics.iter().any(|d| d.is_error());
    if save_failed.load(Ordering::SeqCst) || unsaved {
        keep_errored_state(&state, encryption, fence.is_lost()).await;
        failed = true;
    }
    let tests = super::junit::report(&results, &state);
    print_test_results(&tests);
    if let Some(path) = junit
        && let Err(e) = super::junit::write(path, &tests)
    {
        eprintln!("Error: {e}");
        failed = true;
    }
    let verb = if plan.mode == PlanMode::Destroy {
        "Destroy"
    } else {
        "Apply"
    };
    if fence.is_lost() {
        eprintln!("{verb} stopped: the state lock was lost.");
        return ExitCode::from(1);
    }
    if stop.load(Ordering::SeqCst) && !failed {
        eprintln!("{verb} interrupted; the state records what was done.");
        return ExitCode::from(1);
    }
    // Terraform's summary, with imports and forgets only when there are some.
    let done = {
        let mut text = String::new();
        if counts.imported > 0 {
            text.push_str(&format!("{} imported, ", counts.imported));
        }
        text.push_str(&format!(
            "{} added, {} changed, {} destroyed",
            counts.added, counts.changed, counts.destroyed
        ));
        if counts.forgotten > 0 {
            text.push_str(&format!(", {} forgotten", counts.forgotten));
        }
        text
    };
    if failed {
        eprintln!("{verb} failed: {done} before the errors above.");
        return ExitCode::from(1);
    }
    println!("\n{verb} complete! Resources: {done}.");
    if plan.mode == PlanMode::Destroy && counts.forgotten > 0 {
        // As OpenTofu: a destroy that left objects in place (lifecycle { destroy = false })
        // did not do all a destroy does, and says so in its exit code.
        eprintln!(
            "Error: {} object(s) were forgotten, not destroyed (lifecycle {{ destroy = false }}): they remain, and no longer in the state.",
            counts.forgotten
        );
        return ExitCode::from(1);
    }
    if !state.outputs.is_empty() && plan.mode != PlanMode::Destroy {
        println!("\nOutputs:\n");
        for (name, output) in &state.outputs {
            let value = if output.sensitive {
                "(sensitive value)".to_owned()
            } else {
                output.value.to_string()
            };
            println!("{name} = {value}");
        }
    }
    ExitCode::SUCCESS
}

/// The state a failed save could not write, kept in the working directory (as Terraform's
/// errored.tfstate) so that what this run did is not forgotten; encrypted as the state is.
async fn keep_errored_state(state: &State, encryption: &Encryption, lock_lost: bool) {
    let path = Path::new("errored.gpustack-state.json");
    let written = match encryption.seal(state.encode(), None).await {
        Ok(bytes) => super::files::write_private(path, &bytes).map_err(|e| e.to_string()),
        Err(e) => Err(full(&e)),
    };
    match written {
        Ok(()) if lock_lost => eprintln!(
            "This run lost the state lock, so its state was not saved to the backend; it is kept in {}. Someone else may have changed the state since: plan again, and compare before running gpustack state push {}",
            path.display(),
            path.display()
        ),
        Ok(()) => eprintln!(
            "The state of this run could not be saved to its backend; it is kept in {}. Once the backend is reachable, check it and run: gpustack state push {}",
            path.display(),
            path.display()
        ),
        Err(e) => eprintln!(
            "The state of this run could not be saved to its backend, nor to {}: {e}",
            path.display()
        ),
    }
}

/// Each smoke test that ran, check by check, after the apply output.
fn print_test_results(report: &quick_junit::Report) {
    let Some(suite) = report.test_suites.first() else {
        return;
    };
    if suite.test_cases.is_empty() {
        return;
    }
    println!("\nSmoke tests:");
    for case in &suite.test_cases {
        let passed = matches!(case.status, quick_junit::TestCaseStatus::Success { .. });
        let detail = case
            .system_out
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .or_else(|| match &case.status {
                quick_junit::TestCaseStatus::NonSuccess { message, .. } => {
                    message.as_ref().map(|m| m.as_str().to_owned())
                }
                _ => None,
            })
            .unwrap_or_default();
        println!(
            "  {} {} {}: {detail}",
            if passed { "PASS" } else { "FAIL" },
            case.classname.as_ref().map(|c| c.as_str()).unwrap_or(""),
            case.name.as_str()
        );
    }
}

pub fn apply(
    common: &Common,
    plan_file: Option<&Path>,
    options: &PlanOptions,
    auto_approve: bool,
    junit: Option<&Path>,
) -> ExitCode {
    runtime().block_on(async {
        let stop = interrupt_flag();
        let Some(file) = plan_file else {
            // With --auto-approve the plan is carried out unread: no previews for it.
            let options = PlanOptions {
                unreviewed: auto_approve,
                ..options.clone()
            };
            let options = &options;
            let (plan, backend, guard, encryptions) =
                match make_plan(common, options, "apply", false).await {
                    Ok(p) => p,
                    Err(code) => return code,
                };
            let encryption = encryptions.state.as_ref();
            print!("{}", gpustack_engine::plan_text(&plan, common.color));
            if !plan.has_changes() {
                // Objects already gone leave the state, and nothing else is done: no question.
                if plan.vanished().next().is_none() {
                    return ExitCode::SUCCESS;
                }
                return execute(
                    &plan,
                    backend.as_ref(),
                    &guard,
                    common,
                    stop,
                    junit,
                    false,
                    encryption,
                )
                .await;
            }
            let question = if options.mode == PlanMode::Destroy {
                "Do you really want to destroy these objects?"
            } else {
                "Do you want to perform these actions?"
            };
            match confirm(question, auto_approve) {
                Ok(true) => {}
                Ok(false) => return error("apply cancelled"),
                Err(code) => return code,
            }
            return execute(
                &plan,
                backend.as_ref(),
                &guard,
                common,
                stop,
                junit,
                false,
                encryption,
            )
            .await;
        };
        let plan = match read_plan(file, &common.variables).await {
            Ok(plan) => plan,
            Err(e) => return error(e),
        };
        let dir = PathBuf::from(&plan.snapshot.stack_dir);
        match super::backend::current_workspace(&dir) {
            Ok(workspace) if workspace != plan.workspace => {
                return error(format!(
                    "the saved plan was made in workspace \"{}\", and the current workspace is \"{workspace}\": select \"{}\" to apply it, or make a new plan here",
                    plan.workspace, plan.workspace
                ));
            }
            Err(e) => return error(e),
            Ok(_) => {}
        }
        // The plan's own configuration names the backend and the state's encryption; the
        // variables given to the apply are what its encryption block may read.
        let mut session = Session::open(
            crate::registry(),
            &dir,
            &Files::Snapshot {
                root: dir.clone(),
                files: Arc::new(plan.snapshot.files.clone()),
            },
            InputSource::Args(&common.variables),
        );
        let (backend_config, encryptions) = match super::backend::settings(&mut session) {
            Ok(settings) => settings,
            Err(e) => return error(e),
        };
        // A plan in clear where plans are encrypted is refused, unless an unencrypted
        // method says it may be read.
        if let Ok(bytes) = super::files::read_given(file)
            && !gpustack_state::encryption::is_envelope(&bytes)
            && let Err(e) = encryptions.plan.open(&bytes).await
        {
            return error(format!("{}: {}", file.display(), full(&e)));
        }
        let backend =
            match super::backend::open(&dir, &backend_config, encryptions.state.clone()).await {
                Ok(b) => b,
                Err(e) => return error(e),
            };
        let guard = match lock(backend.as_ref(), "apply", common.lock_timeout).await {
            Ok(g) => g,
            Err(e) => return error(e),
        };
        execute(
            &plan,
            backend.as_ref(),
            &guard,
            common,
            stop,
            junit,
            true,
            &encryptions.state,
        )
        .await
    })
}

/// A plan applies only to the state it was made from.
fn check_fresh(plan: &Plan, state: Option<&State>) -> Result<(), String> {
    let (lineage, serial) = state.map_or((None, 0), |s| (Some(s.lineage.clone()), s.serial));
    if lineage != plan.lineage || serial != plan.serial {
        return Err(format!(
            "the saved plan is stale: it was made from state {} serial {}, and the state is now {} serial {}. Something was applied since; make a new plan.",
            plan.lineage.as_deref().unwrap_or("(none)"),
            plan.serial,
            lineage.as_deref().unwrap_or("(none)"),
            serial
        ));
    }
    Ok(())
}

/// Runs the stack's smoke tests again, and changes nothing else: a plan limited to the
/// smoke tests, each replaced.
pub fn test(common: &Common, junit: Option<&Path>) -> ExitCode {
    runtime().block_on(async {
        let stop = interrupt_flag();
        let survey = match make_plan(common, &PlanOptions { refresh: false, ..Default::default() }, "test", false).await {
            Ok((plan, _, _guard, _)) => plan,
            Err(code) => return code,
        };
        let tests: Vec<&gpustack_engine::ResourceChange> = survey
            .resource_changes
            .iter()
            .filter(|c| c.type_name == "gpu_smoke_test")
            .collect();
        if tests.is_empty() {
            return error("this stack has no gpu_smoke_test resources");
        }
        let options = PlanOptions {
            refresh: false,
            targets: tests.iter().map(|c| c.config_address.clone()).collect(),
            replace: tests.iter().map(|c| c.address.clone()).collect(),
            ..Default::default()
        };
        let (plan, backend, guard, encryptions) = match make_plan(common, &options, "test", false).await {
            Ok(p) => p,
            Err(code) => return code,
        };
        let outside: Vec<&str> = plan
            .resource_changes
            .iter()
            .filter(|c| c.type_name != "gpu_smoke_test" && !c.is_no_op())
            .map(|c| c.address.as_str())
            .collect();
        if !outside.is_empty() {
            return error(format!(
                "the smoke tests depend on changes that are not applied yet ({}): run gpustack apply first",
                outside.join(", ")
            ));
        }
        execute(
            &plan,
            backend.as_ref(),
            &guard,
            common,
            stop,
            junit,
            false,
            &encryptions.state,
        )
        .await
    })
}

pub struct DriftArgs {
    pub json: bool,
    pub markdown: bool,
    pub metrics_file: Option<PathBuf>,
    pub webhook: Option<String>,
}

pub fn drift(common: &Common, args: &DriftArgs) -> ExitCode {
    runtime().block_on(async {
        let options = PlanOptions {
            mode: PlanMode::RefreshOnly,
            refresh: true,
            ..Default::default()
        };
        let stack_name = std::fs::canonicalize(&common.dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| common.dir.display().to_string());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (plan, backend, _guard, _) = match make_plan(common, &options, "drift", false).await {
            Ok(planned) => planned,
            Err(code) => {
                if let Some(path) = &args.metrics_file {
                    let empty = empty_plan();
                    let _ = write_metrics(
                        path,
                        &gpustack_engine::drift_metrics(&empty, &stack_name, now, true),
                    );
                }
                return code;
            }
        };
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&gpustack_engine::drift_json(&plan))
                    .unwrap_or_default()
            );
        } else if args.markdown {
            print!("{}", gpustack_engine::drift_markdown(&plan));
        } else {
            print!("{}", gpustack_engine::drift_text(&plan, common.color));
        }
        if let Some(path) = &args.metrics_file
            && let Err(e) = write_metrics(
                path,
                &gpustack_engine::drift_metrics(&plan, &stack_name, now, false),
            )
        {
            return error(format!("cannot write {}: {e}", path.display()));
        }
        if let Some(url) = &args.webhook {
            match super::webhook::notify(url, backend.as_ref(), &stack_name, &plan).await {
                Ok(Some(event)) => eprintln!("Webhook: posted {event:?}."),
                Ok(None) => {}
                Err(e) => return error(e),
            }
        }
        if plan.resource_drift.is_empty() && plan.gpu_drift.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        }
    })
}

fn empty_plan() -> Plan {
    Plan {
        format_version: gpustack_engine::PLAN_FORMAT_VERSION.into(),
        gpustack_version: gpustack_engine::VERSION.into(),
        mode: PlanMode::RefreshOnly,
        lineage: None,
        serial: 0,
        timestamp: String::new(),
        workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
        config_hash: String::new(),
        digest_key: None,
        new_lineage: None,
        moved: vec![],
        generated: vec![],
        resource_changes: vec![],
        resource_drift: vec![],
        output_changes: Default::default(),
        gpu_capacity: vec![],
        gpu_drift: vec![],
        gpu_disruption: vec![],
        snapshot: Default::default(),
    }
}

/// Written whole, so a scraper never reads half a file.
fn write_metrics(path: &Path, text: &str) -> std::io::Result<()> {
    super::files::write_replacing(path, text.as_bytes(), super::files::SHARED)
}

/// What a fleet run does to each stack.
pub enum FleetCommand {
    Drift,
    Plan {
        options: PlanOptions,
        detailed_exitcode: bool,
    },
}

/// One stack's result in a fleet run.
struct FleetEntry {
    stack: String,
    outcome: Result<FleetSummary, String>,
}

struct FleetSummary {
    drifted: Vec<String>,
    /// To add, change, destroy (plan only).
    counts: (usize, usize, usize),
}

/// `drift --stacks GLOB` and `plan --stacks GLOB`: every matching stack, `parallel` at a
/// time, in one summary. Each stack keeps its own backend and lock.
pub fn fleet(
    common: &Common,
    command: FleetCommand,
    pattern: &str,
    parallel: usize,
    json: bool,
) -> ExitCode {
    let stacks: Vec<PathBuf> = match glob::glob(pattern) {
        Ok(paths) => {
            let mut dirs: Vec<PathBuf> = paths
                .filter_map(Result::ok)
                .filter(|p| is_stack(p))
                .collect();
            dirs.sort();
            dirs
        }
        Err(e) => return error(format!("invalid pattern {pattern}: {e}")),
    };
    if stacks.is_empty() {
        return error(format!(
            "no stack directory (a directory with stack files: {}) matches {pattern}",
            gpustack_lang::config::STACK_FILES
        ));
    }
    let (options, operation) = match &command {
        FleetCommand::Drift => (
            PlanOptions {
                mode: PlanMode::RefreshOnly,
                refresh: true,
                ..Default::default()
            },
            "drift",
        ),
        FleetCommand::Plan { options, .. } => (options.clone(), "plan"),
    };
    let entries = runtime().block_on(async {
        let permits = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
        let runs = stacks.iter().map(|dir| {
            let permits = permits.clone();
            let options = options.clone();
            async move {
                let _permit = permits.acquire().await;
                let member = Common {
                    dir: dir.clone(),
                    variables: common.variables.clone(),
                    lock_timeout: common.lock_timeout,
                    color: common.color,
                    json: false,
                };
                let outcome = match make_plan(&member, &options, operation, false).await {
                    Ok((plan, _, guard, _)) => {
                        // Released here, not by the guard's drop: a drop blocks this thread
                        // on the release, and the other stacks' plans, polled on this same
                        // thread, could lose the wakeup that thread was parked for.
                        guard.release().await;
                        Ok(FleetSummary {
                            drifted: plan
                                .resource_drift
                                .iter()
                                .map(|c| c.address.clone())
                                .chain(plan.gpu_drift.iter().map(|d| format!("node {}", d.node)))
                                .collect(),
                            counts: plan.counts(),
                        })
                    }
                    Err(_) => Err("see the errors above".to_owned()),
                };
                FleetEntry {
                    stack: dir.display().to_string(),
                    outcome,
                }
            }
        });
        futures::future::join_all(runs).await
    });
    let is_plan = matches!(command, FleetCommand::Plan { .. });
    let (flagged_count, failed) = report_fleet(&entries, is_plan, json);
    let report_flagged = match &command {
        FleetCommand::Drift => true,
        FleetCommand::Plan {
            detailed_exitcode, ..
        } => *detailed_exitcode,
    };
    if failed > 0 {
        ExitCode::from(1)
    } else if flagged_count > 0 && report_flagged {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints a fleet run's table (or JSON report); returns how many stacks were flagged (with
/// changes, or drifted) and how many failed.
fn report_fleet(entries: &[FleetEntry], is_plan: bool, json: bool) -> (usize, usize) {
    let flagged = |s: &FleetSummary| {
        if is_plan {
            s.counts != (0, 0, 0)
        } else {
            !s.drifted.is_empty()
        }
    };
    let flagged_count = entries
        .iter()
        .filter(|e| e.outcome.as_ref().is_ok_and(flagged))
        .count();
    let failed = entries.iter().filter(|e| e.outcome.is_err()).count();
    let (flag, flag_word) = if is_plan {
        ("changes", "with changes")
    } else {
        ("drift", "drifted")
    };
    if json {
        let stacks: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| match &e.outcome {
                Ok(s) => {
                    let mut entry = serde_json::json!({ "stack": e.stack, "status": if flagged(s) { flag } else { "ok" }, "drift_count": s.drifted.len(), "drifted": s.drifted });
                    if is_plan {
                        entry["add"] = s.counts.0.into();
                        entry["change"] = s.counts.1.into();
                        entry["destroy"] = s.counts.2.into();
                    }
                    entry
                }
                Err(message) => serde_json::json!({ "stack": e.stack, "status": "error", "error": message }),
            })
            .collect();
        let mut report = serde_json::json!({ "format_version": gpustack_engine::PLAN_FORMAT_VERSION, "stacks": stacks, "failed": failed });
        report[if is_plan { "changed" } else { "drifted" }] = flagged_count.into();
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        let width = entries
            .iter()
            .map(|e| e.stack.len())
            .max()
            .unwrap_or(5)
            .max(5);
        if is_plan {
            println!(
                "{:<width$}  {:<7}  {:>3} {:>6} {:>7}  DRIFTED",
                "STACK", "STATUS", "ADD", "CHANGE", "DESTROY"
            );
        } else {
            println!("{:<width$}  {:<7}  DRIFTED", "STACK", "STATUS");
        }
        for e in entries {
            match &e.outcome {
                Ok(s) => {
                    let status = if flagged(s) { flag } else { "ok" };
                    let drifted = if s.drifted.is_empty() {
                        "-".to_owned()
                    } else {
                        s.drifted.join(", ")
                    };
                    if is_plan {
                        let (add, change, destroy) = s.counts;
                        println!(
                            "{:<width$}  {status:<7}  {add:>3} {change:>6} {destroy:>7}  {drifted}",
                            e.stack
                        );
                    } else {
                        println!("{:<width$}  {status:<7}  {drifted}", e.stack);
                    }
                }
                Err(message) => println!("{:<width$}  {:<7}  {message}", e.stack, "error"),
            }
        }
        println!(
            "\n{} stack(s): {flagged_count} {flag_word}, {failed} failed.",
            entries.len()
        );
    }
    (flagged_count, failed)
}

fn is_stack(path: &Path) -> bool {
    path.is_dir()
        && std::fs::read_dir(path).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                gpustack_lang::config::stack_file_syntax(&e.file_name().to_string_lossy()).is_some()
            })
        })
}

/// `gpustack console`: one expression per line of stdin, each answered on stdout against the
/// stack and its state (without the lock: nothing is written). Exit 1 if any failed.
pub fn console(common: &Common) -> ExitCode {
    use std::io::BufRead;
    let expressions: Vec<String> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .map(|l| l.trim().to_owned())
        .take_while(|l| l != "exit")
        .filter(|l| !l.is_empty())
        .collect();
    runtime().block_on(async {
        let mut session = match open(common) {
            Ok(session) => session,
            Err(code) => return code,
        };
        let opened = match super::backend::settings(&mut session) {
            Ok((config, encryptions)) => {
                super::backend::open(&common.dir, &config, encryptions.state).await
            }
            Err(e) => Err(e),
        };
        let backend = match opened {
            Ok(backend) => backend,
            Err(e) => return error(e),
        };
        let state = match read(backend.as_ref()).await {
            Ok(state) => state,
            Err(e) => return error(e),
        };
        let (answers, sources, diagnostics) =
            gpustack_engine::console(session, state.as_ref(), &expressions).await;
        emit(common, &sources, &diagnostics);
        if diagnostics
            .iter()
            .any(gpustack_protocol::Diagnostic::is_error)
        {
            return ExitCode::from(1);
        }
        let mut failed = false;
        for answer in answers {
            match answer {
                Ok(value) => println!("{}", gpustack_engine::console_value(&value)),
                Err(why) => {
                    failed = true;
                    let why = why.to_string();
                    eprintln!("Error: {}", gpustack_protocol::secrets::scrub(&why));
                }
            }
        }
        if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    })
}

/// Terraform's `TF_IN_AUTOMATION`: any non-empty value says a pipeline runs the command, so
/// the output gives no advice on what to type next.
pub(super) fn in_automation() -> bool {
    std::env::var_os("TF_IN_AUTOMATION").is_some_and(|v| !v.is_empty())
}
