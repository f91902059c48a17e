//! Root variables from --var, --var-file and GPUSTACK_VAR_*, with their precedence and their
//! errors located where the value was written.

use gpustack_tests::{gpustack_env, stderr, stdout};

const STACK: &str = r#"variable "replicas" {
  type = number

  validation {
    condition     = var.replicas >= 2
    error_message = "Time-slicing needs at least 2 replicas."
  }
}

variable "zones" {
  type    = list(string)
  default = []
}

output "replicas" {
  value = var.replicas
}

output "zones" {
  value = var.zones
}
"#;

fn stack() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.hcl"), STACK).unwrap();
    dir
}

#[test]
fn values_are_taken_from_flags_files_and_the_environment_in_precedence_order() {
    let dir = stack();
    let d = dir.path();
    std::fs::write(
        d.join("dev.vars"),
        "replicas = 4\nzones    = [\"1\", \"2\"]\n",
    )
    .unwrap();
    let env = [("GPUSTACK_VAR_replicas", "3")];

    let out = gpustack_env(d, &["plan", "--json"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        plan["output_changes"]["replicas"]["after"], 3,
        "environment"
    );

    let out = gpustack_env(d, &["plan", "--json", "--var-file", "dev.vars"], &env);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        plan["output_changes"]["replicas"]["after"], 4,
        "a var file overrides the environment"
    );
    assert_eq!(
        plan["output_changes"]["zones"]["after"],
        serde_json::json!(["1", "2"])
    );

    let out = gpustack_env(
        d,
        &[
            "plan",
            "--json",
            "--var-file",
            "dev.vars",
            "--var",
            "replicas=8",
            "--var",
            "zones=[\"3\"]",
        ],
        &env,
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        plan["output_changes"]["replicas"]["after"], 8,
        "--var overrides files"
    );
    assert_eq!(
        plan["output_changes"]["zones"]["after"],
        serde_json::json!(["3"])
    );
}

#[test]
fn bad_values_are_reported_where_they_were_written() {
    let dir = stack();
    let d = dir.path();
    std::fs::write(d.join("bad.vars"), "replicas = 1\n").unwrap();
    let out = gpustack_env(d, &["validate", "--json", "--var-file", "bad.vars"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d0 = &report["diagnostics"][0];
    assert_eq!(d0["summary"], "Invalid value for variable");
    assert_eq!(d0["range"]["filename"], "bad.vars");
    assert_eq!(d0["range"]["start"]["line"], 1);
    assert_eq!(d0["range"]["start"]["column"], 12);

    let out = gpustack_env(d, &["validate", "--var", "replicas=many"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("set by -var replicas=..."),
        "{}",
        stderr(&out)
    );

    let out = gpustack_env(d, &["validate", "--var", "nosuch=1"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("declares no variable \"nosuch\""),
        "{}",
        stderr(&out)
    );

    let out = gpustack_env(d, &["plan"], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "plan needs every root variable: {}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("No value for required variable"),
        "{}",
        stderr(&out)
    );

    let out = gpustack_env(d, &["validate"], &[]);
    assert!(
        out.status.success(),
        "validate treats unset root variables as unknown: {}",
        stderr(&out)
    );
}

/// A value given as text to a variable without a `type` is a string whatever it looks like,
/// as Terraform reads it (its literal mode): `-var mode=0640` and `TF_VAR_mode` keep the
/// leading zero; a typed number reads it as the number.
#[test]
fn text_for_an_untyped_variable_is_a_string() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        "variable \"mode\" {\n  default = \"0600\"\n}\n\nvariable \"n\" {\n  type = number\n}\n\noutput \"mode\" {\n  value = var.mode\n}\n\noutput \"n\" {\n  value = var.n\n}\n",
    )
    .unwrap();
    let out = gpustack_env(
        dir.path(),
        &["apply", "-auto-approve", "-no-color", "-var", "mode=0640"],
        &[("TF_VAR_n", "0640")],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("mode = \"0640\""), "{text}");
    assert!(text.contains("n = 640"), "{text}");
    let out = gpustack_env(
        dir.path(),
        &["apply", "-auto-approve", "-no-color", "-var", "n=2"],
        &[("TF_VAR_mode", "[1, 2]")],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("mode = \"[1, 2]\""),
        "{}",
        stdout(&out)
    );
}
