//! The local state lock never outlives its run: a run killed with SIGKILL while it holds the
//! lock (an OS lock, which dies with the process) never blocks the next one, and a command
//! stopped by Ctrl-C or SIGTERM while it holds the lock releases it.

use gpustack_tests::{gpustack_command, gpustack_env, stderr, stdout};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

/// One object, every provider call of which takes `latency_ms`.
fn write_stack(dir: &Path, latency_ms: u32) {
    std::fs::write(
        dir.join("main.hcl"),
        format!(
            "provider \"test\" {{\n  latency_ms = {latency_ms}\n  world      = \"world.json\"\n}}\n\nresource \"test_object\" \"slow\" {{\n  name  = \"slow\"\n  value = \"v\"\n}}\n"
        ),
    )
    .unwrap();
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack_env(dir, args, ENV);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    gpustack_command(dir, args, ENV)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `child` holds the state lock: the lock file names its pid.
fn wait_until_locked(dir: &Path, child: &mut Child) {
    let lock = dir.join(".gpustack/state.json.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("gpustack ended ({status}) before it was seen holding the lock:\n{err}");
        }
        let holder = std::fs::read_to_string(&lock)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|info| info["pid"].as_u64());
        if holder == Some(u64::from(child.id())) {
            return;
        }
        assert!(Instant::now() < deadline, "gpustack never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

/// The next run that takes the lock neither waits nor fails.
fn next_run_is_not_blocked(dir: &Path, args: &[&str]) {
    let started = Instant::now();
    let (code, out, err) = run(dir, args);
    assert_eq!(code, 0, "the next run must not be blocked:\n{out}{err}");
    assert!(!err.contains("locked by"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the next run must not wait for the lock"
    );
}

#[test]
fn a_plan_or_apply_killed_while_holding_the_lock_never_blocks_the_next_run() {
    for command in [&["plan"][..], &["apply", "--auto-approve"]] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_stack(d, 3000);
        let mut child = spawn(d, command);
        wait_until_locked(d, &mut child);
        // SIGKILL: nothing of gpustack runs after this.
        child.kill().unwrap();
        child.wait().unwrap();
        write_stack(d, 0);
        next_run_is_not_blocked(d, command);
    }
}

/// Ctrl-C (SIGINT) and SIGTERM, each while plan, drift and import hold the lock: the command
/// exits 130 or 143, and the next run takes the lock at once; a state command that fails
/// holding it gives it up too.
#[test]
fn an_interrupted_command_leaves_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_stack(d, 0);
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let state = d.join(".gpustack/state.json");
    let saved = std::fs::read(&state).unwrap();
    for (signal_name, code) in [("INT", 130), ("TERM", 143)] {
        for command in [
            &["plan"][..],
            &["drift"],
            &["import", "test_object.slow", "slow"],
        ] {
            let what = format!("{} by SIG{signal_name}", command.join(" "));
            write_stack(d, 3000);
            // An import into an address the state holds is refused before any provider call:
            // the object is taken out of the state first, so that the import reads it.
            let import = command[0] == "import";
            if import {
                let (code, out, err) = run(d, &["state", "rm", "test_object.slow"]);
                assert_eq!(code, 0, "{out}{err}");
            }
            let mut child = spawn(d, command);
            wait_until_locked(d, &mut child);
            signal(&child, signal_name);
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(code),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if import {
                std::fs::write(&state, &saved).unwrap();
            }
            write_stack(d, 0);
            next_run_is_not_blocked(d, &["plan"]);
        }
    }
    // A state command does its work in an instant, so no signal catches it mid-way; one that
    // fails after taking the lock (a state file that is a named pipe, refused unread) gives
    // the lock up as well.
    std::fs::remove_file(&state).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&state)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let (code, _, err) = run(d, &["state", "rm", "test_object.slow"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    std::fs::remove_file(&state).unwrap();
    std::fs::write(&state, &saved).unwrap();
    next_run_is_not_blocked(d, &["plan"]);
}
