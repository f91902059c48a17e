//! Terraform's language features that a stack written for Terraform uses unchanged, planned and
//! applied end to end against the `test` provider and the built-in `terraform_data`.

use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

const PROVIDER: &str = "provider \"test\" {\n  world = \"world.json\"\n}\n\n";

fn stack(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.hcl"), format!("{PROVIDER}{text}")).unwrap();
    dir
}

fn rewrite(dir: &Path, text: &str) {
    std::fs::write(dir.join("main.hcl"), format!("{PROVIDER}{text}")).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, ENV);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

fn outputs(dir: &Path) -> serde_json::Value {
    let (code, out, err) = run(dir, &["output", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

fn world(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("world.json")).unwrap()).unwrap()
}

const DYNAMIC: &str = r#"variable "pools" {
  default = { t4 = 1, a100 = 4 }
}

resource "test_group" "gpus" {
  name = "gpus"

  dynamic "member" {
    for_each = var.pools
    iterator = pool
    content {
      name   = pool.key
      weight = pool.value
    }
  }

  dynamic "settings" {
    for_each = ["spread"]
    content {
      mode = settings.value
    }
  }
}

output "members" {
  value = test_group.gpus.member[*].name
}

output "mode" {
  value = test_group.gpus.settings.mode
}
"#;

/// A dynamic block makes one block per element, in the lexical order of a map's keys, with the
/// iterator named by `iterator` (or after the block type); a second plan has nothing to do.
#[test]
fn dynamic_blocks_expand_per_element() {
    let dir = stack(DYNAMIC);
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let o = outputs(d);
    assert_eq!(
        o["members"]["value"],
        serde_json::json!(["a100", "t4"]),
        "{o}"
    );
    assert_eq!(o["mode"]["value"], "spread");
    let members = &world(d)["gpus"]["member"];
    assert_eq!(
        members,
        &serde_json::json!([{"name": "a100", "weight": 4}, {"name": "t4", "weight": 1}])
    );
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");

    rewrite(d, &DYNAMIC.replace("a100 = 4", "a100 = 4, h100 = 8"));
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("h100"), "{out}");
}

/// What a dynamic block gets wrong is reported where it is written.
#[test]
fn dynamic_block_mistakes_are_located() {
    let dir = stack(
        r#"resource "test_group" "g" {
  name = "g"

  dynamic "membr" {
    for_each = ["a"]
    content {
      name = membr.value
    }
  }

  dynamic "member" {
    for_each = 3
    content {
      name = "x"
    }
  }

  dynamic "member" {
    for_each = ["a"]
  }
}
"#,
    );
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1, "{err}");
    for expected in [
        "Blocks of type \"membr\" are not expected",
        "Did you mean \"member\"",
        "Cannot use a number value in for_each",
        "needs for_each and a content block",
        "main.hcl:8:",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in\n{err}");
    }
}

const DATA: &str = r#"variable "release" {
  default = "v1"
}

variable "replicas" {
  default = 10
}

resource "terraform_data" "config" {
  input            = { replicas = var.replicas }
  triggers_replace = var.release
}

resource "test_object" "pool" {
  name  = "pool"
  value = "replicas=${terraform_data.config.output.replicas}"
}

output "id" {
  value = terraform_data.config.id
}
"#;

/// `terraform_data` stores its input as output; an input change updates it in place (same id),
/// a change of triggers_replace replaces it (new id); the plan shows the output it will store.
#[test]
fn terraform_data_updates_in_place_and_replaces_on_triggers() {
    let dir = stack(DATA);
    let d = dir.path();
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("replicas=10"),
        "the planned output is known:\n{out}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(world(d)["pool"]["value"], "replicas=10");
    let first = outputs(d)["id"]["value"].as_str().unwrap().to_owned();
    assert_eq!(first.len(), 36, "{first}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");

    rewrite(d, &DATA.replace("default = 10", "default = 20"));
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 added, 2 changed, 0 destroyed"), "{out}");
    assert_eq!(world(d)["pool"]["value"], "replicas=20");
    assert_eq!(outputs(d)["id"]["value"], first.as_str());

    rewrite(
        d,
        &DATA
            .replace("default = 10", "default = 20")
            .replace("\"v1\"", "\"v2\""),
    );
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("must be replaced"), "{out}");
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(outputs(d)["id"]["value"], first.as_str());
}

/// A `terraform_data` is imported by its id, with empty values, as in Terraform.
#[test]
fn terraform_data_imports_by_id() {
    let dir = stack("resource \"terraform_data\" \"x\" {\n}\n");
    let d = dir.path();
    let id = "6d2c9f6a-0000-4000-8000-000000000001";
    let (code, out, err) = run(d, &["import", "terraform_data.x", id]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `ignore_changes` takes paths into an attribute: a map key, a block's attribute by index.
#[test]
fn ignore_changes_follows_nested_paths() {
    let base = r#"resource "test_object" "pool" {
  name = "pool"
  tags = { team = "ml", pool = "t4" }

  lifecycle {
    ignore_changes = [tags["team"]]
  }
}

resource "test_group" "g" {
  name = "g"

  member {
    name   = "a"
    weight = 1
  }

  lifecycle {
    ignore_changes = [member[0].weight]
  }
}
"#;
    let dir = stack(base);
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    rewrite(
        d,
        &base
            .replace(
                "team = \"ml\", pool = \"t4\"",
                "team = \"infra\", pool = \"a100\"",
            )
            .replace("weight = 1", "weight = 5"),
    );
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("a100") && !out.contains("infra"), "{out}");
    assert!(
        !out.contains("test_group.g"),
        "the weight is ignored:\n{out}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        world(d)["pool"]["tags"],
        serde_json::json!({"team": "ml", "pool": "a100"})
    );
    assert_eq!(world(d)["g"]["member"][0]["weight"], 1);

    let dir = stack(
        "resource \"test_object\" \"x\" {\n  name = \"x\"\n  lifecycle {\n    ignore_changes = [tags[var.k]]\n  }\n}\n",
    );
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Invalid ignore_changes entry"), "{err}");
}

/// `replace_triggered_by` replaces a resource when what it names changes: a whole instance
/// with any change, an attribute only when its value changes; the plan says which entry.
#[test]
fn replace_triggered_by_replaces_on_the_named_change() {
    let base = r#"variable "release" {
  default = "v1"
}

variable "note" {
  default = "a"
}

resource "terraform_data" "version" {
  input = var.release
}

resource "terraform_data" "marker" {
  input = var.note
}

resource "test_object" "pool" {
  name = "pool"

  lifecycle {
    replace_triggered_by = [terraform_data.version]
  }
}

resource "test_object" "cache" {
  count = 2
  name  = "cache${count.index}"

  lifecycle {
    replace_triggered_by = [terraform_data.marker.id]
  }
}
"#;
    let dir = stack(base);
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");

    // The marker's input changes but not its id: the caches stay.
    rewrite(d, &base.replace("default = \"a\"", "default = \"b\""));
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("test_object.cache"), "{out}");
    assert!(!out.contains("test_object.pool"), "{out}");

    rewrite(d, &base.replace("\"v1\"", "\"v2\""));
    let (code, out, err) = run(d, &["plan", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pool = plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "test_object.pool")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        pool["change"]["actions"],
        serde_json::json!(["delete", "create"])
    );
    assert!(
        pool["action_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("replace_by_triggers")),
        "{pool}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");

    let dir = stack(
        "resource \"test_object\" \"x\" {\n  name = \"x\"\n  lifecycle {\n    replace_triggered_by = [var.v]\n  }\n}\n",
    );
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Invalid replace_triggered_by expression"),
        "{err}"
    );
}

const CONDITIONS: &str = r#"variable "replicas" {
  default = 10
}

resource "test_object" "pool" {
  name  = "pool"
  value = tostring(var.replicas)

  lifecycle {
    precondition {
      condition     = var.replicas >= 2
      error_message = "Time-slicing needs at least 2 replicas."
    }
    postcondition {
      condition     = self.value != "13"
      error_message = "13 replicas are refused."
    }
  }
}

check "pool_id" {
  assert {
    condition     = test_object.pool.id == "obj-other"
    error_message = "The pool has another id."
  }
}

output "replicas" {
  value = var.replicas

  precondition {
    condition     = var.replicas < 100
    error_message = "At most 99 replicas."
  }
}
"#;

/// Preconditions and postconditions stop a plan with the condition's message at its line;
/// a check block's failed assertion is a warning, after apply while the plan cannot tell.
#[test]
fn conditions_and_check_blocks() {
    let dir = stack(CONDITIONS);
    let d = dir.path();
    for (replicas, summary, message) in [
        (
            "1",
            "Resource precondition failed",
            "Time-slicing needs at least 2 replicas.",
        ),
        (
            "13",
            "Resource postcondition failed",
            "13 replicas are refused.",
        ),
        (
            "200",
            "Module output value precondition failed",
            "At most 99 replicas.",
        ),
    ] {
        rewrite(
            d,
            &CONDITIONS.replace("default = 10", &format!("default = {replicas}")),
        );
        let (code, out, err) = run(d, &["plan"]);
        assert_eq!(code, 1, "{replicas}: {out}{err}");
        assert!(
            err.contains(summary) && err.contains(message),
            "{replicas}: {err}"
        );
        assert!(err.contains("main.hcl:"), "located: {err}");
    }
    rewrite(d, CONDITIONS);
    // At plan the pool's id is not known yet: the check waits for apply.
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("Check block assertion failed"), "{err}");
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "a failed check never fails an apply: {out}{err}");
    assert!(
        err.contains("Check block assertion failed") && err.contains("The pool has another id."),
        "{out}{err}"
    );
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("Check block assertion failed"), "{err}");
}

/// OpenTofu's `lifecycle { enabled = ... }`: one instance or none; references see null when
/// it is off, and turning it off destroys the instance.
#[test]
fn enabled_turns_one_instance_on_and_off() {
    let base = r#"variable "on" {
  default = true
}

resource "test_object" "x" {
  name = "x"

  lifecycle {
    enabled = var.on
  }
}

output "id" {
  value = test_object.x == null ? "none" : test_object.x.id
}
"#;
    let dir = stack(base);
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(outputs(d)["id"]["value"], "obj-x");
    rewrite(d, &base.replace("default = true", "default = false"));
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 destroyed"), "{out}");
    assert_eq!(outputs(d)["id"]["value"], "none");
    assert!(world(d).get("x").is_none(), "{}", world(d));

    let dir = stack(
        "resource \"test_object\" \"x\" {\n  count = 2\n  name  = \"x\"\n  lifecycle {\n    enabled = true\n  }\n}\n",
    );
    let (code, _, err) = run(dir.path(), &["validate"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("enabled cannot be used together with count"),
        "{err}"
    );
}

/// With `--json`, a command that fails still prints one JSON document on stdout: its
/// diagnostics.
#[test]
fn plan_json_reports_errors_as_json() {
    let dir = stack("resource \"test_object\" \"x\" {\n  name = var.missing\n}\n");
    let (code, out, _) = run(dir.path(), &["plan", "--json"]);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(report["errored"], true);
    assert_eq!(report["error_count"], 1);
    let diagnostic = &report["diagnostics"][0];
    assert!(
        diagnostic.to_string().contains("undeclared input variable"),
        "{diagnostic}"
    );
    // So do drift (of a stack that does not parse) and the commands that read a plan file or
    // the state.
    std::fs::write(dir.path().join("bad.plan"), "x").unwrap();
    let unparsable = stack("resource \"test_object\" \"x\" {\n");
    for (dir, args) in [
        (unparsable.path(), &["drift", "--json"][..]),
        (dir.path(), &["show", "bad.plan", "--json"][..]),
        (dir.path(), &["output", "--json"][..]),
    ] {
        let (code, out, _) = run(dir, args);
        assert_eq!(code, 1, "{args:?}: {out}");
        let report: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert_eq!(report["errored"], true, "{args:?}");
    }
}

/// `show --json` of a saved plan prints the document `plan --json` prints.
#[test]
fn show_json_of_a_saved_plan_is_the_plan_json() {
    let dir = stack("resource \"test_object\" \"x\" {\n  name  = \"x\"\n  value = \"v\"\n}\n");
    let d = dir.path();
    let (code, planned, err) = run(d, &["plan", "--json", "--out", "p.plan"]);
    assert_eq!(code, 0, "{err}");
    let (code, shown, err) = run(d, &["show", "p.plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let planned: serde_json::Value = serde_json::from_str(&planned).unwrap();
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown, planned);
    assert_eq!(shown["format_version"], "1.2");
}

const POOL_MODULE: &str = r#"variable "name" {
  type = string
}

variable "gpus" {
  type = number
}

resource "terraform_data" "pool" {
  input = { name = var.name, gpus = var.gpus }
}

output "label" {
  value = "${terraform_data.pool.output.name}:${terraform_data.pool.output.gpus}"
}
"#;

const FLEET: &str = r#"variable "pools" {
  default = { t4 = 1, a100 = 8 }
}

module "pool" {
  source   = "./modules/pool"
  for_each = var.pools
  name     = each.key
  gpus     = each.value
}

module "spare" {
  source = "./modules/pool"
  count  = 2
  name   = "spare${count.index}"
  gpus   = count.index
}

output "labels" {
  value = { for k, m in module.pool : k => m.label }
}

output "t4" {
  value = module.pool["t4"].label
}

output "spares" {
  value = module.spare[*].label
}
"#;

/// count and for_each on module blocks: one module instance per element, addressed
/// `module.pool["t4"]` / `module.spare[0]` in plans, state and --target, referenced as a map
/// or list of the instances' outputs; removing an entry destroys only its instance.
#[test]
fn module_count_and_for_each_stamp_instances() {
    let dir = stack(FLEET);
    let d = dir.path();
    std::fs::create_dir_all(d.join("modules/pool")).unwrap();
    std::fs::write(d.join("modules/pool/main.hcl"), POOL_MODULE).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let o = outputs(d);
    assert_eq!(o["t4"]["value"], "t4:1");
    assert_eq!(
        o["labels"]["value"],
        serde_json::json!({"t4": "t4:1", "a100": "a100:8"})
    );
    assert_eq!(
        o["spares"]["value"],
        serde_json::json!(["spare0:0", "spare1:1"])
    );
    let (_, list, _) = run(d, &["state", "list"]);
    for address in [
        "module.pool[\"a100\"].terraform_data.pool",
        "module.pool[\"t4\"].terraform_data.pool",
        "module.spare[0].terraform_data.pool",
        "module.spare[1].terraform_data.pool",
    ] {
        assert!(list.contains(address), "{address} in\n{list}");
    }
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");

    rewrite(d, &FLEET.replace("{ t4 = 1, a100 = 8 }", "{ t4 = 2 }"));
    let (code, out, err) = run(d, &["plan", "--target", "module.pool[\"t4\"]"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 to add, 1 to change, 0 to destroy"), "{out}");
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 added, 1 changed, 1 destroyed"), "{out}");
    assert_eq!(
        outputs(d)["labels"]["value"],
        serde_json::json!({"t4": "t4:2"})
    );

    // What count/for_each needs must be known when planning.
    let dir = stack(
        "resource \"terraform_data\" \"n\" {\n  input = 2\n}\n\nmodule \"m\" {\n  source = \"./m\"\n  count  = terraform_data.n.output\n}\n",
    );
    std::fs::create_dir_all(dir.path().join("m")).unwrap();
    std::fs::write(
        dir.path().join("m/main.hcl"),
        "output \"x\" {\n  value = 1\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(dir.path(), &["plan"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("known only after apply"), "{err}");
}

/// `gpustack console` answers expressions against the stack and its state, one per line.
#[test]
fn console_evaluates_expressions_against_the_state() {
    let dir = stack(FLEET);
    let d = dir.path();
    std::fs::create_dir_all(d.join("modules/pool")).unwrap();
    std::fs::write(d.join("modules/pool/main.hcl"), POOL_MODULE).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let out = console(
        d,
        b"module.pool[\"t4\"].label\nlength(module.spare)\nvar.pools\nupper(\"t4\")\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "\"t4:1\"\n2\n{\n  \"a100\" = 8\n  \"t4\" = 1\n}\n\"T4\"\n"
    );

    let out = console(d, b"var.nope\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("undeclared input variable"),
        "{}",
        stderr(&out)
    );
}

/// A check block's own data source: read at plan like any other, but a failure to read it is
/// a warning of the check, and the plan goes on.
#[test]
fn check_scoped_data_sources_warn_instead_of_failing() {
    let base = r#"resource "test_object" "pool" {
  name  = "pool"
  value = "ready"
}

check "pool_state" {
  data "test_object" "live" {
    name = "WATCHED"
  }

  assert {
    condition     = data.test_object.live.value == "ready"
    error_message = "The watched object is not ready."
  }
}
"#;
    let dir = stack(&base.replace("WATCHED", "elsewhere"));
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "a failed read in a check never fails: {out}{err}");
    assert!(
        err.contains("Check block \"pool_state\": No such test object"),
        "{err}"
    );
    rewrite(d, &base.replace("WATCHED", "pool"));
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("Check block"), "the object is ready: {err}");
}

/// A secret prints masked in the console, and a line `exit` ends the input.
#[test]
fn console_masks_secrets_and_stops_at_exit() {
    let dir =
        stack("variable \"token\" {\n  default   = \"s3cr3t-token\"\n  sensitive = true\n}\n");
    let out = console(dir.path(), b"var.token\nexit\nvar.nope\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "(sensitive value)\n");
}

fn console(dir: &Path, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = gpustack_tests::gpustack_command(dir, &["console"], ENV)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// timestamp() and uuid() are read when the plan is made and recorded in it: a saved plan
/// applied later stores exactly what it showed.
#[test]
fn a_saved_plan_applies_the_clock_and_uuids_it_showed() {
    let dir = stack(
        "resource \"terraform_data\" \"stamp\" {\n  input = { at = timestamp(), id = uuid() }\n}\n\noutput \"stamp\" {\n  value = terraform_data.stamp.output\n}\n",
    );
    let d = dir.path();
    let (code, planned, err) = run(d, &["plan", "--json", "--out", "p.plan"]);
    assert_eq!(code, 0, "{err}");
    let planned: serde_json::Value = serde_json::from_str(&planned).unwrap();
    let input = planned["resource_changes"][0]["change"]["after"]["input"].clone();
    assert!(
        input["at"].is_string() && input["id"].is_string(),
        "{planned}"
    );
    // Past the second the plan was made in.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(outputs(d)["stamp"]["value"], input);
}

/// Terraform's language rules a stack relies on: `terraform.workspace` is "default"; a module
/// call's null for a `nullable = false` variable takes the variable's default; a set variable
/// holds its elements in Terraform's order (strings lexically, numbers numerically) whatever
/// order the call gave them in; and `output --raw NAME` prints a string, number or bool as
/// `terraform output -raw` does, refusing collections, nulls and sensitive outputs.
#[test]
fn workspace_nullable_defaults_set_order_and_raw_outputs() {
    let dir = stack(
        r#"module "m" {
  source  = "./m"
  name    = null
  words   = ["b", "c", "a"]
  numbers = [10, 9, 1]
}

output "workspace" {
  value = terraform.workspace
}

output "name" {
  value = module.m.name
}

output "words" {
  value = module.m.words
}

output "numbers" {
  value = module.m.numbers
}

output "big" {
  value = 9007199254740993
}

output "yes" {
  value = true
}

output "nothing" {
  value = null
}

output "secret" {
  value     = "s3cret"
  sensitive = true
}
"#,
    );
    let d = dir.path();
    std::fs::create_dir(d.join("m")).unwrap();
    std::fs::write(
        d.join("m/main.hcl"),
        r#"variable "name" {
  type     = string
  default  = "fallback"
  nullable = false
}

variable "words" {
  type = set(string)
}

variable "numbers" {
  type = set(number)
}

output "name" {
  value = var.name
}

output "words" {
  value = tolist(var.words)
}

output "numbers" {
  value = tolist(var.numbers)
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let o = outputs(d);
    assert_eq!(o["workspace"]["value"], "default", "{o}");
    assert_eq!(o["name"]["value"], "fallback", "{o}");
    assert_eq!(
        o["words"]["value"],
        serde_json::json!(["a", "b", "c"]),
        "{o}"
    );
    assert_eq!(o["numbers"]["value"], serde_json::json!([1, 9, 10]), "{o}");
    for (name, printed) in [
        ("workspace", "default"),
        ("big", "9007199254740993"),
        ("yes", "true"),
    ] {
        let (code, out, err) = run(d, &["output", "--raw", name]);
        assert_eq!((code, out.as_str()), (0, printed), "{name}: {err}");
    }
    for (name, why) in [
        ("words", "use --json"),
        ("nothing", "is null"),
        ("secret", "keeps only its digest"),
    ] {
        let (code, out, err) = run(d, &["output", "--raw", name]);
        assert_eq!(code, 1, "{name}: {out}{err}");
        assert!(err.contains(why), "{name}: {err}");
        assert!(!out.contains("s3cret") && !err.contains("s3cret"));
    }
}
