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
fn version_prints_the_crate_version() {
    let output = gpustack(&["version"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("gpustack v{}", env!("CARGO_PKG_VERSION"))
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
