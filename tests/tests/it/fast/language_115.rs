//! The language of Terraform 1.10 to 1.15 as gpustack has it: deprecated variables and
//! outputs, `convert()`, `output { type }`, const variables in module sources, ephemeral
//! variables (refused where they would be written down, recorded nowhere), imports by
//! identity, and actions refused by name.

use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack_env(dir, args, &[("GPUSTACK_TEST_PROVIDER", "1")]);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn stack(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const MODULE: &str = r#"variable "size" {
  type       = number
  default    = 1
  deprecated = "use replicas instead"
}

variable "replicas" {
  type    = number
  default = 1
}

output "old" {
  value      = var.size
  deprecated = "read count instead"
}

output "count" {
  value = var.replicas
  type  = string
}
"#;

#[test]
fn deprecated_convert_output_types_and_const_sources() {
    let dir = stack(&[
        (
            "main.tf",
            r#"terraform {
  required_version = ">= 1.15"
}

variable "flavor" {
  type    = string
  default = "gpu"
  const   = true
}

module "pool" {
  source = "./modules/${var.flavor}"
  size   = 2
}

output "old" {
  value = module.pool.old
}

output "count" {
  value = module.pool.count
}

output "converted" {
  value = convert({ a = 1, b = "2" }, map(string))
}

provider "test" {
  world = "world.json"
}

resource "test_object" "sized" {
  name  = "sized"
  value = module.pool.count
}
"#,
        ),
        ("modules/gpu/main.tf", MODULE),
    ]);
    let (code, out, err) = run(dir.path(), &["plan", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("Deprecated variable") && err.contains("use replicas instead"),
        "{err}"
    );
    assert!(
        err.contains("Deprecated output") && err.contains("read count instead"),
        "{err}"
    );
    // The output's declared type converts its value; convert() converts as a variable would.
    assert!(out.contains("count = \"1\""), "{out}");
    assert!(
        out.contains("converted = {\"a\":\"1\",\"b\":\"2\"}"),
        "{out}"
    );
    // A warning while applying (the deprecated variable, again) stops nothing that depends
    // on the value it warned about.
    let (code, out, err) = run(dir.path(), &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 added"), "{out}{err}");
    // A const variable given on the command line chooses another module.
    let (code, _, err) = run(dir.path(), &["validate", "-var", "flavor=cpu"]);
    assert_eq!(code, 1);
    assert!(err.contains("modules/cpu"), "{err}");
    // An output whose value cannot take its declared type is refused.
    std::fs::write(
        dir.path().join("extra.tf"),
        "output \"bad\" {\n  value = [1]\n  type  = string\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid output value"), "{err}");
}

#[test]
fn ephemeral_values_reach_no_plan_no_state_and_only_where_they_may() {
    let dir = stack(&[(
        "main.hcl",
        r#"variable "token" {
  type      = string
  ephemeral = true
}

locals {
  header = "Bearer ${var.token}"
}

provider "test" {
  world = "world.json"
}

resource "test_object" "kept" {
  name  = "kept"
  value = ephemeralasnull(local.header) == null ? "dropped" : "kept"
}
"#,
    )]);
    let secret = "ephemeral-s3cr3t-value";
    let token = format!("token={secret}");
    let (code, out, err) = run(dir.path(), &["plan", "-var", &token, "-out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("\"dropped\""),
        "ephemeralasnull answers null: {out}"
    );
    let plan = std::fs::read_to_string(dir.path().join("p.plan")).unwrap();
    assert!(!plan.contains(secret), "the plan holds the ephemeral value");
    // Applying the saved plan asks for the ephemeral value again.
    let (code, _, err) = run(dir.path(), &["apply", "p.plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("No value for ephemeral variable"), "{err}");
    let (code, out, err) = run(dir.path(), &["apply", "-var", &token, "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    for file in [".gpustack/state.json", "world.json", "p.plan"] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap_or_default();
        assert!(!text.contains(secret), "{file} holds the ephemeral value");
    }
    // Where it would be written down, it is refused at the reference.
    std::fs::write(
        dir.path().join("leak.hcl"),
        "resource \"test_object\" \"leak\" {\n  name  = \"leak\"\n  value = local.header\n}\n\noutput \"leak\" {\n  value = var.token\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.matches("Ephemeral value not allowed").count(),
        2,
        "{err}"
    );
    assert!(err.contains("leak.hcl:3"), "{err}");
    assert!(err.contains("leak.hcl:7"), "{err}");
}

#[test]
fn imports_by_identity_and_actions_refused_by_name() {
    let dir = stack(&[
        (
            "world.json",
            r#"{"made-by-hand": {"name": "made-by-hand", "value": "x"}}"#,
        ),
        (
            "main.hcl",
            r#"provider "test" {
  world = "world.json"
}

import {
  to       = test_object.adopted
  identity = { name = "made-by-hand" }
}

resource "test_object" "adopted" {
  name  = "made-by-hand"
  value = "x"
}
"#,
        ),
    ]);
    let (code, out, err) = run(dir.path(), &["plan", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("will be imported"), "{out}");
    std::fs::write(
        dir.path().join("actions.tf"),
        "action \"aws_lambda_invoke\" \"x\" {}\n\nresource \"terraform_data\" \"t\" {\n  lifecycle {\n    action_trigger {\n      events = [after_create]\n    }\n  }\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1);
    assert_eq!(err.matches("Actions are not supported").count(), 2, "{err}");
}

/// OpenTofu 1.12's lifecycle: `destroy = false` forgets an instance where it would be
/// destroyed (a destroy, its block removed; the state remembers), refuses a replacement, and
/// makes a destroy exit 1; `prevent_destroy` may be an expression of variables, and holds in
/// a destroy plan as in Terraform.
#[test]
fn destroy_false_forgets_and_prevent_destroy_takes_variables() {
    let main = r#"variable "protect" {
  type    = bool
  default = true
}

provider "test" {
  world = "world.json"
}

resource "test_object" "kept" {
  name  = "kept"
  value = "1"
  lifecycle {
    destroy = false
  }
}

resource "test_object" "guarded" {
  name  = "guarded"
  value = "1"
  lifecycle {
    prevent_destroy = var.protect
  }
}

resource "test_object" "plain" {
  name  = "plain"
  value = "1"
}
"#;
    let dir = stack(&[("main.tf", main)]);
    let d = dir.path();
    let world = || std::fs::read_to_string(d.join("world.json")).unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert_eq!(
        state.matches("\"skip_destroy\": true").count(),
        1,
        "{state}"
    );
    // prevent_destroy from a variable refuses a destroy plan.
    let (code, _, err) = run(d, &["plan", "-destroy", "-no-color"]);
    assert_eq!(code, 1);
    assert!(err.contains("Instance cannot be destroyed"), "{err}");
    assert!(err.contains("test_object.guarded"), "{err}");
    // A replacement of what must not be destroyed is refused.
    std::fs::write(
        d.join("main.tf"),
        main.replacen("name  = \"kept\"", "name  = \"kept2\"", 1),
    )
    .unwrap();
    let (code, _, err) = run(d, &["plan", "-no-color"]);
    assert_eq!(code, 1);
    assert!(err.contains("Instance cannot be replaced"), "{err}");
    // Its block removed, it is forgotten: the object stays.
    let without_kept = main.replace(
        "resource \"test_object\" \"kept\" {\n  name  = \"kept\"\n  value = \"1\"\n  lifecycle {\n    destroy = false\n  }\n}\n",
        "",
    );
    std::fs::write(d.join("main.tf"), &without_kept).unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 forgotten"), "{out}");
    assert!(world().contains("\"kept\""), "{}", world());
    // A destroy forgets what says destroy = false, destroys the rest, and exits 1.
    std::fs::write(d.join("main.tf"), main).unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(
        d,
        &[
            "destroy",
            "-auto-approve",
            "-var",
            "protect=false",
            "-no-color",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("2 destroyed, 1 forgotten"), "{out}");
    assert!(err.contains("forgotten, not destroyed"), "{err}");
    let world = world();
    assert!(
        world.contains("\"kept\"") && !world.contains("\"plain\""),
        "{world}"
    );
}
