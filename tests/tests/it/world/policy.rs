//! A policy written for Terraform plans, run by a real OPA on gpustack's plan JSON: what
//! OPA/conftest users already have in their pipelines reads gpustack plans unchanged.

use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

/// Written as for `terraform show -json`: only Terraform's documented keys.
const POLICY: &str = r#"package terraform.gpu

import rego.v1

# Destroying a GPU pool needs a person, not a pipeline.
deny contains msg if {
  some rc in input.resource_changes
  rc.type == "test_object"
  "delete" in rc.change.actions
  msg := sprintf("%s would be destroyed (%s)", [rc.address, rc.action_reason])
}

# Time-slicing with fewer than two replicas is no sharing at all.
deny contains msg if {
  some rc in input.resource_changes
  rc.change.after.input.replicas < 2
  msg := sprintf("%s sets %d replica(s)", [rc.address, rc.change.after.input.replicas])
}

# What will exist after the plan, by address.
planned contains r.address if {
  some r in input.planned_values.root_module.resources
}

# Resources whose name is written as a constant in the configuration.
constant_names contains r.address if {
  some r in input.configuration.root_module.resources
  r.expressions.name.constant_value
}

# What the plan cannot know yet.
unknown contains rc.address if {
  some rc in input.resource_changes
  rc.change.after_unknown.id == true
}
"#;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, ENV);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

fn opa_eval(dir: &Path, query: &str) -> serde_json::Value {
    let output = std::process::Command::new(gpustack_tests::cluster::opa())
        .current_dir(dir)
        .args([
            "eval",
            "--format",
            "json",
            "--data",
            "policy.rego",
            "--input",
            "plan.json",
            query,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut value = result["result"][0]["expressions"][0]["value"].clone();
    if let Some(items) = value.as_array_mut() {
        items.sort_by_key(ToString::to_string);
    }
    value
}

#[test]
fn an_opa_policy_for_terraform_plans_reads_a_gpustack_plan() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stack = |replicas: u32, old: bool| {
        let old = if old {
            "resource \"test_object\" \"old_pool\" {\n  name = \"old_pool\"\n}\n"
        } else {
            ""
        };
        format!(
            "provider \"test\" {{\n  world = \"world.json\"\n}}\n\nresource \"terraform_data\" \"sharing\" {{\n  input = {{ replicas = {replicas} }}\n}}\n\nresource \"test_object\" \"pool\" {{\n  name = \"pool\"\n}}\n{old}"
        )
    };
    std::fs::write(d.join("main.hcl"), stack(4, true)).unwrap();
    std::fs::write(d.join("policy.rego"), POLICY).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");

    std::fs::write(d.join("main.hcl"), stack(1, false)).unwrap();
    let (code, json, err) = run(d, &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(d.join("plan.json"), &json).unwrap();
    assert_eq!(
        opa_eval(d, "data.terraform.gpu.deny"),
        serde_json::json!([
            "terraform_data.sharing sets 1 replica(s)",
            "test_object.old_pool would be destroyed (delete_because_no_resource_config)",
        ])
    );
    assert_eq!(
        opa_eval(d, "data.terraform.gpu.planned"),
        serde_json::json!(["terraform_data.sharing", "test_object.pool"])
    );
    assert_eq!(
        opa_eval(d, "data.terraform.gpu.constant_names"),
        serde_json::json!(["test_object.pool"])
    );

    // A plan from nothing: ids are unknown until apply, as after_unknown says.
    let fresh = tempfile::tempdir().unwrap();
    let f = fresh.path();
    std::fs::write(f.join("main.hcl"), stack(4, false)).unwrap();
    std::fs::write(f.join("policy.rego"), POLICY).unwrap();
    let (code, json, err) = run(f, &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(f.join("plan.json"), &json).unwrap();
    assert_eq!(
        opa_eval(f, "data.terraform.gpu.deny"),
        serde_json::json!([])
    );
    assert_eq!(
        opa_eval(f, "data.terraform.gpu.unknown"),
        serde_json::json!(["terraform_data.sharing", "test_object.pool"])
    );
}
