//! The binary's own smoke tests; they also make `cargo test` build the binary that the
//! end-to-end tests in tests/ run.

#![allow(clippy::panic, clippy::unwrap_used)]

use std::process::Command;

fn gpustack(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpustack"))
        .args(args)
        .output()
        .expect("run gpustack")
}

#[test]
fn version_prints_the_crate_version_and_the_language_it_implements() {
    let output = gpustack(&["version"]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(format!("gpustack v{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let language = lines.next().unwrap_or_default();
    assert!(
        language.starts_with("implements the Terraform language 1."),
        "{stdout}"
    );
}

#[test]
fn usage_errors_exit_1() {
    let output = gpustack(&["validate", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn missing_directory_is_an_error_not_a_panic() {
    let output = gpustack(&["validate", "/nonexistent/stack"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Cannot read stack directory"));
}
