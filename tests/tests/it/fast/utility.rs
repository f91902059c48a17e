//! The utility providers a Terraform stack also uses (`random`, `null`, `time`): what the
//! plan shows is what apply records, a saved plan applies exactly, and a second plan is empty.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack(dir, args);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

const STACK: &str = r#"variable "rotation" {
  type    = string
  default = "1"
}

resource "random_password" "db" {
  length      = 24
  min_special = 2
  keepers     = { rotation = var.rotation }
}

resource "random_pet" "name" {
  length = 3
}

resource "random_id" "suffix" {
  byte_length = 4
  prefix      = "gpu-"
}

resource "random_integer" "port" {
  min  = 30000
  max  = 32767
  seed = "fixed"
}

resource "null_resource" "rotated" {
  triggers = { hash = random_password.db.bcrypt_hash }
}

resource "time_static" "made" {}

resource "time_offset" "expiry" {
  offset_days = 30
}

resource "time_sleep" "settle" {
  create_duration = "1s"
  depends_on      = [null_resource.rotated]
}

output "pet" {
  value = random_pet.name.id
}

output "suffix" {
  value = random_id.suffix.hex
}

output "port" {
  value = random_integer.port.result
}

output "expiry" {
  value = time_offset.expiry.rfc3339
}

output "password" {
  value     = random_password.db.result
  sensitive = true
}
"#;

fn planned_output(plan: &str, name: &str) -> String {
    plan.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("+ {name} = ")))
        .unwrap_or_else(|| panic!("no output {name} in:\n{plan}"))
        .to_owned()
}

#[test]
fn random_null_and_time_apply_as_planned_and_replan_empty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.tf"), STACK).unwrap();
    let (code, plan, err) = run(d, &["plan", "-out=p.plan", "-no-color"]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(plan.contains("Plan: 8 to add"), "{plan}");
    let (code, out, err) = run(d, &["apply", "-no-color", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    // What the plan showed is what apply recorded.
    for name in ["pet", "suffix", "port", "expiry"] {
        let (code, value, err) = run(d, &["output", "-json", name]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(value.trim(), planned_output(&plan, name), "{name}");
    }
    let (_, pet, _) = run(d, &["output", "-raw", "pet"]);
    assert_eq!(pet.split('-').count(), 3, "{pet}");
    // The password is in no plan file and no output, only as a digest in the state.
    let (_, state, _) = run(d, &["state", "show", "random_password.db"]);
    assert!(state.contains("(sensitive value)"), "{state}");
    let plan_file = std::fs::read(d.join("p.plan")).unwrap();
    assert!(!String::from_utf8_lossy(&plan_file).contains("\"result\":\""));
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(code, 0, "a second plan is empty: {out}{err}");
    // A keeper's change makes a new password, and what it triggers follows.
    let (code, out, err) = run(
        d,
        &[
            "plan",
            "-var",
            "rotation=2",
            "-detailed-exitcode",
            "-no-color",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("random_password.db must be replaced"), "{out}");
    assert!(
        out.contains("null_resource.rotated must be replaced"),
        "{out}"
    );
    // A seed argument alone decides the value.
    let (_, port, _) = run(d, &["output", "-raw", "port"]);
    let again = tempfile::tempdir().unwrap();
    std::fs::write(again.path().join("main.tf"), STACK).unwrap();
    let (code, out, err) = run(again.path(), &["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, other_port, _) = run(again.path(), &["output", "-raw", "port"]);
    let (_, other_pet, _) = run(again.path(), &["output", "-raw", "pet"]);
    assert_eq!(port, other_port);
    assert_ne!(pet, other_pet, "another stack's state, another seed");
    let (code, out, err) = run(d, &["destroy", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("8 destroyed"), "{out}");
}
