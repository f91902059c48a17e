//! The whole engine from the command line with `local_file`: plan, apply, drift, restore,
//! destroy, saved plans and locking.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

const STACK: &str = r#"variable "replicas" {
  type    = number
  default = 10
}

resource "local_file" "config" {
  filename = "out/time-slicing.yaml"
  content  = yamlencode({ version = "v1", sharing = { timeSlicing = { resources = [{ name = "nvidia.com/gpu", replicas = var.replicas }] } } })
}

resource "local_file" "readme" {
  filename = "out/README.txt"
  content  = "config ${local_file.config.id}\n"
}

resource "local_file" "token" {
  filename          = "out/token.txt"
  sensitive_content = "s3cr3t-t0ken"
}
"#;

fn stack() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.hcl"), STACK).unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gpustack(dir, args);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

#[test]
fn plan_apply_drift_restore_destroy() {
    let dir = stack();
    let d = dir.path();
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::write(d.join("out/mine.txt"), "not managed").unwrap();

    let (code, out, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("Plan: 3 to add, 0 to change, 0 to destroy."),
        "{out}"
    );
    assert!(
        !out.contains("s3cr3t"),
        "a sensitive value reached the plan:\n{out}"
    );

    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        std::fs::read_to_string(d.join("out/time-slicing.yaml"))
            .unwrap()
            .contains("\"replicas\": 10")
    );
    assert!(!out.contains("s3cr3t") && !err.contains("s3cr3t"));

    let (code, out, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "a second plan must find nothing to do:\n{out}");
    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert!(
        !state.contains("s3cr3t"),
        "a secret reached the state:\n{state}"
    );
    assert!(
        state.contains("\"sensitive_content\": \"hmac-sha256:"),
        "the state records a digest of the secret:\n{state}"
    );
    let (_, json, _) = run(d, &["plan", "--json"]);
    assert!(!json.contains("s3cr3t"));

    // A changed secret is still seen as a change, without showing it.
    std::fs::write(
        d.join("main.hcl"),
        STACK.replace("s3cr3t-t0ken", "n3w-t0ken"),
    )
    .unwrap();
    let (code, out, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("~ sensitive_content = (sensitive value)") && !out.contains("n3w-t0ken"),
        "{out}"
    );
    std::fs::write(d.join("main.hcl"), STACK).unwrap();

    std::fs::write(d.join("out/time-slicing.yaml"), "edited by hand\n").unwrap();
    let (code, out, _) = run(d, &["drift", "--metrics-file", "drift.prom"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("local_file.config has changed"), "{out}");
    let metrics = std::fs::read_to_string(d.join("drift.prom")).unwrap();
    assert!(
        metrics.contains("gpustack_drift_resources{stack="),
        "{metrics}"
    );
    assert!(
        metrics.contains("address=\"local_file.config\""),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("gpustack_drift_resources") && l.ends_with(" 1")),
        "{metrics}"
    );

    let (code, json, _) = run(d, &["drift", "--json"]);
    assert_eq!(code, 2);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["drift_count"], 1);
    assert_eq!(report["resource_drift"][0]["address"], "local_file.config");

    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        std::fs::read_to_string(d.join("out/time-slicing.yaml"))
            .unwrap()
            .contains("\"replicas\": 10"),
        "apply must restore the file"
    );
    let (code, _, _) = run(d, &["drift"]);
    assert_eq!(code, 0);

    let (code, out, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !d.join("out/time-slicing.yaml").exists()
            && !d.join("out/README.txt").exists()
            && !d.join("out/token.txt").exists()
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/mine.txt")).unwrap(),
        "not managed",
        "destroy touched a file the stack did not make"
    );

    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert!(
        !state.contains("\"address\""),
        "state still lists objects:\n{state}"
    );
}

#[test]
fn saved_plans_are_refused_when_stale_or_reused() {
    let dir = stack();
    let d = dir.path();
    let (code, _, err) = run(d, &["plan", "--out", "first.plan"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(d, &["apply", "first.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = run(d, &["apply", "first.plan"]);
    assert_eq!(code, 1, "applying the same plan twice must be refused");
    assert!(err.contains("stale"), "{err}");

    std::fs::write(
        d.join("main.hcl"),
        STACK.replace("default = 10", "default = 12"),
    )
    .unwrap();
    let (code, _, _) = run(d, &["plan", "--out", "second.plan"]);
    assert_eq!(code, 0);
    std::fs::write(
        d.join("main.hcl"),
        STACK.replace("default = 10", "default = 14"),
    )
    .unwrap();
    let (code, _, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(d, &["apply", "second.plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("the saved plan is stale"), "{err}");
    assert!(
        std::fs::read_to_string(d.join("out/time-slicing.yaml"))
            .unwrap()
            .contains("\"replicas\": 14"),
        "a refused plan changed files"
    );
}

#[test]
fn a_saved_plan_applies_its_own_snapshot_not_the_files_on_disk() {
    let dir = stack();
    let d = dir.path();
    let (code, _, _) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0);
    std::fs::write(
        d.join("main.hcl"),
        STACK.replace("default = 10", "default = 99"),
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        std::fs::read_to_string(d.join("out/time-slicing.yaml"))
            .unwrap()
            .contains("\"replicas\": 10")
    );
}

#[test]
fn apply_without_a_terminal_refuses_to_prompt() {
    let dir = stack();
    let (code, _, err) = run(dir.path(), &["apply"]);
    assert_eq!(code, 1);
    assert!(err.contains("--auto-approve"), "{err}");
    assert!(
        !dir.path().join("out").exists(),
        "nothing may be written without confirmation"
    );
}

#[test]
fn state_commands() {
    let dir = stack();
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let (code, list, _) = run(d, &["state", "list"]);
    assert_eq!(code, 0);
    assert_eq!(
        list.lines().collect::<Vec<_>>(),
        ["local_file.config", "local_file.readme", "local_file.token"]
    );
    let (_, shown, _) = run(d, &["state", "show", "local_file.token"]);
    assert!(
        shown.contains("(sensitive value)") && !shown.contains("s3cr3t"),
        "{shown}"
    );
    assert_eq!(
        run(d, &["state", "mv", "local_file.readme", "local_file.notes"]).0,
        0
    );
    assert_eq!(run(d, &["state", "rm", "local_file.token"]).0, 0);
    let (_, list, _) = run(d, &["state", "list"]);
    assert_eq!(
        list.lines().collect::<Vec<_>>(),
        ["local_file.config", "local_file.notes"]
    );
    assert!(
        d.join("out/token.txt").exists(),
        "state rm must not delete the object"
    );
    let (code, _, err) = run(d, &["state", "rm", "local_file.nothing"]);
    assert_eq!(code, 1);
    assert!(err.contains("not in the state"));
    // The configuration still says readme: creating it while destroying notes would delete
    // the file it just wrote, so the plan refuses and says how to keep it. The token's file,
    // forgotten by state rm, is someone else's now: importing it is the way back.
    let (code, plan, err) = run(d, &["plan"]);
    assert_eq!(code, 1, "{plan}{err}");
    assert!(err.contains("Create and destroy of one object"), "{err}");
    assert!(
        err.contains("from = local_file.notes") && err.contains("to   = local_file.readme"),
        "{err}"
    );
    assert!(
        err.contains("Object already exists") && err.contains("local_file.token"),
        "{err}"
    );
}

#[test]
fn import_adopts_an_existing_file() {
    let dir = stack();
    let d = dir.path();
    std::fs::create_dir_all(d.join("out")).unwrap();
    let (code, _, err) = run(d, &["import", "local_file.token", "out/token.txt"]);
    assert_eq!(code, 1, "importing a missing file must fail");
    assert!(err.contains("does not exist"), "{err}");
    std::fs::write(d.join("out/token.txt"), "s3cr3t-t0ken").unwrap();
    let (code, out, err) = run(d, &["import", "local_file.token", "out/token.txt"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, plan, _) = run(d, &["plan"]);
    assert!(!plan.contains("local_file.token will be created"), "{plan}");
}

#[test]
fn refresh_only_takes_live_values_into_the_state_without_touching_objects() {
    let dir = stack();
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    std::fs::write(d.join("out/README.txt"), "changed by hand\n").unwrap();
    let (code, out, err) = run(d, &["apply", "--refresh-only", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("out/README.txt")).unwrap(),
        "changed by hand\n"
    );
    assert_eq!(
        run(d, &["drift"]).0,
        0,
        "the state now matches the live file"
    );
    let (code, plan, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "the configuration still differs:\n{plan}");
    assert!(
        plan.contains("local_file.readme will be updated in-place"),
        "{plan}"
    );
}

#[test]
fn drift_over_a_fleet_of_stacks() {
    let fleet = tempfile::tempdir().unwrap();
    let f = fleet.path();
    for name in ["east", "west", "north"] {
        let d = f.join("stacks").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("main.hcl"), format!("resource \"local_file\" \"config\" {{\n  filename = \"${{path.module}}/out.txt\"\n  content  = \"{name}\"\n}}\n")).unwrap();
        let dir = format!("stacks/{name}");
        assert_eq!(run(f, &["apply", "--auto-approve", &dir]).0, 0);
    }
    let (code, out, err) = run(f, &["drift", "--stacks", "stacks/*"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("3 stack(s): 0 drifted, 0 failed."), "{out}");

    std::fs::write(f.join("stacks/west/out.txt"), "edited").unwrap();
    let (code, out, _) = run(f, &["drift", "--stacks", "stacks/*", "--parallel", "2"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("stacks/west")
            && l.contains("drift")
            && l.contains("local_file.config")),
        "{out}"
    );
    let (code, json, _) = run(f, &["drift", "--stacks", "stacks/*", "--json"]);
    assert_eq!(code, 2);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["drifted"], 1);
    assert_eq!(report["stacks"].as_array().unwrap().len(), 3);

    // plan over the fleet: the drifted stack has a change to make (restore the file), and its
    // drift is named; exit 2 only with --detailed-exitcode.
    std::fs::write(f.join("stacks/east/main.hcl"), "resource \"local_file\" \"config\" {\n  filename = \"${path.module}/out.txt\"\n  content  = \"east, edited in the stack\"\n}\n").unwrap();
    let (code, out, err) = run(f, &["plan", "--stacks", "stacks/*"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("stacks/east") && l.contains("changes")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("stacks/west") && l.contains("local_file.config")),
        "{out}"
    );
    assert!(
        out.contains("3 stack(s): 2 with changes, 0 failed."),
        "{out}"
    );
    let (code, json, _) = run(
        f,
        &[
            "plan",
            "--stacks",
            "stacks/*",
            "--json",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code, 2);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["changed"], 2, "{report}");
    let east = &report["stacks"][0];
    assert_eq!(
        (east["stack"].as_str(), east["change"].as_u64()),
        (Some("stacks/east"), Some(1)),
        "{report}"
    );

    std::fs::write(
        f.join("stacks/north/main.hcl"),
        "resource \"local_file\" {\n}\n",
    )
    .unwrap();
    let (code, out, _) = run(f, &["drift", "--stacks", "stacks/*"]);
    assert_eq!(code, 1, "a broken stack fails the fleet run:\n{out}");
    assert!(out.contains("1 drifted, 1 failed"), "{out}");
}

#[test]
fn state_push_restores_a_kept_state_and_refuses_another_lineage_or_an_older_one() {
    let dir = stack();
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let path = d.join(".gpustack/state.json");
    let state: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let serial = state["serial"].as_u64().unwrap();

    let mut other = state.clone();
    other["lineage"] = "another-history".into();
    std::fs::write(d.join("other.json"), other.to_string()).unwrap();
    let (code, _, err) = run(d, &["state", "push", "other.json"]);
    assert_eq!(code, 1);
    assert!(err.contains("holds another state"), "{err}");

    let mut older = state.clone();
    older["serial"] = (serial - 1).into();
    std::fs::write(d.join("older.json"), older.to_string()).unwrap();
    let (code, _, err) = run(d, &["state", "push", "older.json"]);
    assert_eq!(code, 1);
    assert!(err.contains("holds a newer state"), "{err}");

    let mut kept = state.clone();
    kept["resources"].as_array_mut().unwrap().pop();
    std::fs::write(d.join("kept.json"), kept.to_string()).unwrap();
    let (code, out, err) = run(d, &["state", "push", "kept.json"]);
    assert_eq!(code, 0, "{out}{err}");
    let pushed: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(pushed["serial"].as_u64(), Some(serial + 1));
    assert_eq!(
        pushed["resources"].as_array().unwrap().len(),
        state["resources"].as_array().unwrap().len() - 1
    );
}
