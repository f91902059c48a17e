//! The reconciliation engine against the `test` provider (objects in a JSON world file, with
//! latency, failures and a journal of operations): ordering, parallelism, failure isolation,
//! lifecycle rules, unknown values, import, locking, and snapshots of plan and drift output.

use gpustack_tests::{gpustack_bin, gpustack_env, stderr, stdout};
use std::path::Path;
use std::time::{Duration, Instant};

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

fn provider(latency_ms: u32, extra: &str) -> String {
    format!(
        "provider \"test\" {{\n  latency_ms = {latency_ms}\n  world      = \"world.json\"\n  journal    = \"journal.log\"\n{extra}}}\n\n"
    )
}

const CHAIN: &str = r#"resource "test_object" "a" {
  name = "a"
}

resource "test_object" "b" {
  name  = "b"
  value = test_object.a.id
}

resource "test_object" "c" {
  name  = "c"
  value = test_object.b.id
}

resource "test_object" "d" {
  name = "d"
}

resource "test_object" "p" {
  count = 8
  name  = "p${count.index}"
}
"#;

fn stack(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.hcl"), text).unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, ENV);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

/// (operation, name, start ms, end ms, failed) from the provider's journal.
fn journal(dir: &Path) -> Vec<(String, String, u128, u128, bool)> {
    std::fs::read_to_string(dir.join("journal.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_owned(),
                f[1].to_owned(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f.get(4) == Some(&"failed"),
            )
        })
        .collect()
}

fn entry<'a>(
    journal: &'a [(String, String, u128, u128, bool)],
    op: &str,
    name: &str,
) -> &'a (String, String, u128, u128, bool) {
    journal
        .iter()
        .find(|e| e.0 == op && e.1 == name)
        .unwrap_or_else(|| panic!("no {op} {name} in {journal:?}"))
}

/// The most operations of the journal in flight at one moment.
fn most_in_flight(journal: &[(String, String, u128, u128, bool)]) -> usize {
    // Ends sort before starts at the same millisecond: back-to-back calls do not overlap.
    let mut events: Vec<(u128, i32)> = journal.iter().flat_map(|e| [(e.2, 1), (e.3, -1)]).collect();
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn a_provider_block_without_max_concurrency_has_128_calls_in_flight() {
    // 200 independent creates of 300 ms each: the first 128 all start before any ends, and
    // the default limit holds the rest back.
    let d = stack(&format!(
        "{}resource \"test_object\" \"p\" {{\n  count = 200\n  name  = \"p${{count.index}}\"\n}}\n",
        provider(300, "")
    ));
    let (code, out, err) = run(d.path(), &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = journal(d.path());
    assert_eq!(j.len(), 200, "{j:?}");
    assert_eq!(most_in_flight(&j), 128, "{j:?}");
}

fn world(dir: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join("world.json")).unwrap_or_else(|_| "{}".into()),
    )
    .unwrap()
}

#[test]
fn dependencies_first_independent_branches_in_parallel() {
    let dir = stack(&(provider(100, "") + CHAIN));
    let d = dir.path();
    let (code, plan, _) = run(d, &["plan"]);
    assert_eq!(code, 0);
    assert!(
        plan.contains("value = (known after apply)"),
        "b's value depends on a's id:\n{plan}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = journal(d);
    assert!(
        entry(&j, "create", "a").3 <= entry(&j, "create", "b").2,
        "b started before a finished"
    );
    assert!(
        entry(&j, "create", "b").3 <= entry(&j, "create", "c").2,
        "c started before b finished"
    );
    // The eight independent instances overlap: all of them start before any of them ends.
    let parallel: Vec<_> = (0..8)
        .map(|i| entry(&j, "create", &format!("p{i}")))
        .collect();
    let last_start = parallel.iter().map(|e| e.2).max().unwrap();
    let first_end = parallel.iter().map(|e| e.3).min().unwrap();
    assert!(
        last_start < first_end,
        "independent resources ran one after another: {parallel:?}"
    );
    // One after another, the 12 creates (each a final plan call and an apply call of 100 ms)
    // take at least 2.3 s; along the critical path a → b → c they take about 0.5 s.
    let first_start = j.iter().map(|e| e.2).min().unwrap();
    let last_end = j.iter().map(|e| e.3).max().unwrap();
    assert!(
        last_end - first_start < 1500,
        "the creates took {} ms: not parallel",
        last_end - first_start
    );
    assert_eq!(
        world(d)["b"]["value"],
        "obj-a",
        "the unknown value was resolved at apply"
    );
    assert_eq!(world(d)["c"]["value"], "obj-b");
}

#[test]
fn a_failure_stops_only_its_dependents() {
    let dir = stack(&(provider(10, "  fail_on    = [\"b\"]\n") + CHAIN));
    let d = dir.path();
    let (code, _, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 1);
    assert!(err.contains("Injected failure"), "{err}");
    let j = journal(d);
    assert!(entry(&j, "create", "b").4, "b must have failed");
    assert!(
        !j.iter().any(|e| e.1 == "c"),
        "c depends on b and must not be attempted"
    );
    for name in ["a", "d", "p0", "p7"] {
        assert!(!entry(&j, "create", name).4);
    }
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(
        list.contains("test_object.a")
            && list.contains("test_object.d")
            && list.contains("test_object.p[7]"),
        "{list}"
    );
    assert!(
        !list.contains("test_object.b") && !list.contains("test_object.c"),
        "{list}"
    );
}

/// A provider that answers a refresh with fewer states than it was asked for breaks the
/// protocol: the plan fails and says so, instead of guessing what the unanswered objects hold,
/// and the state keeps every object.
#[test]
fn a_refresh_answered_short_fails_the_plan_and_keeps_the_state() {
    const PAIR: &str = "resource \"test_object\" \"a\" {\n  name = \"a\"\n}\n\nresource \"test_object\" \"b\" {\n  name = \"b\"\n}\n";
    let dir = stack(&(provider(0, "") + PAIR));
    let d = dir.path();
    let (code, _, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        d.join("main.hcl"),
        provider(0, "  short_read = true\n") + PAIR,
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Incomplete refresh")
            && err.contains("answered 1 of the 2 test_object states"),
        "{err}"
    );
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(
        list.contains("test_object.a") && list.contains("test_object.b"),
        "{list}"
    );
}

/// A provider whose final plan at apply differs from the reviewed plan: the change is not
/// made, its dependents are not started, and the rest proceeds.
#[test]
fn an_inconsistent_final_plan_is_refused_and_that_change_is_not_made() {
    let dir = stack(
        &(provider(0, "  final_plan = { b = { value = \"tampered\" } }\n")
            + r#"resource "test_object" "a" {
  name  = "a"
  value = "reviewed"
}

resource "test_object" "b" {
  name  = "b"
  value = "reviewed"
}

resource "test_object" "c" {
  name  = "c"
  value = test_object.b.id
}
"#),
    );
    let d = dir.path();
    let (code, out, err) = run(d, &["plan", "--out", "plan.bin"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["apply", "plan.bin"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Provider produced inconsistent final plan"),
        "{err}"
    );
    assert!(err.contains("test_object.b"), "{err}");
    assert!(err.contains("value"), "names the attribute: {err}");
    let world = world(d);
    assert_eq!(world["a"]["value"], "reviewed", "{world}");
    assert!(
        world.get("b").is_none(),
        "the inconsistent change was made: {world}"
    );
    assert!(
        world.get("c").is_none(),
        "its dependent was started: {world}"
    );
}

/// A plan file edited after it was saved is refused before anything is evaluated.
#[test]
fn a_plan_file_edited_after_it_was_saved_is_refused() {
    let dir = stack(
        &(provider(0, "")
            + "resource \"test_object\" \"a\" {\n  name  = \"a\"\n  value = \"reviewed\"\n}\n"),
    );
    let d = dir.path();
    let (code, out, err) = run(d, &["plan", "--out", "plan.bin"]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(d.join("plan.bin")).unwrap();
    std::fs::write(
        d.join("plan.bin"),
        text.replace("value = \\\"reviewed\\\"", "value = \\\"edited\\\""),
    )
    .unwrap();
    assert_ne!(
        std::fs::read_to_string(d.join("plan.bin")).unwrap(),
        text,
        "the edit took"
    );
    let (code, out, err) = run(d, &["apply", "plan.bin"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Plan file was modified"), "{err}");
    assert!(world(d).get("a").is_none());
}

/// Plan files are written 0600, replacing whatever is at the path, never through a link.
#[cfg(unix)]
#[test]
fn a_plan_file_is_private_and_never_written_through_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let dir = stack(&(provider(0, "") + "resource \"test_object\" \"a\" {\n  name = \"a\"\n}\n"));
    let d = dir.path();
    std::fs::write(d.join("plan.bin"), "old").unwrap();
    std::fs::set_permissions(d.join("plan.bin"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(d.join("victim"), "untouched").unwrap();
    std::os::unix::fs::symlink(d.join("victim"), d.join("linked.bin")).unwrap();
    for out in ["plan.bin", "linked.bin"] {
        let (code, o, e) = run(d, &["plan", "--out", out]);
        assert_eq!(code, 0, "{o}{e}");
        let meta = std::fs::symlink_metadata(d.join(out)).unwrap();
        assert!(meta.file_type().is_file(), "{out} is a plain file now");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{out}");
    }
    assert_eq!(
        std::fs::read_to_string(d.join("victim")).unwrap(),
        "untouched"
    );
}

/// Instance keys are any string: EKS node names have dots, paths have slashes.
#[test]
fn for_each_keys_with_dots_and_slashes_plan_apply_target_and_move() {
    let dir = stack(
        &(provider(0, "")
            + r#"resource "test_object" "node" {
  for_each = toset(["ip-10-0-1-5.ec2.internal", "ip-10-0-1-6.ec2.internal", "a/b[c]"])
  name     = each.key
}

output "ids" {
  value = { for k, n in test_object.node : k => n.id }
}
"#),
    );
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("3 added"), "{out}");
    assert_eq!(world(d).as_object().unwrap().len(), 3, "{}", world(d));
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "the second plan is empty:\n{out}{err}");
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(
        list.contains(r#"test_object.node["ip-10-0-1-5.ec2.internal"]"#)
            && list.contains(r#"test_object.node["a/b[c]"]"#),
        "{list}"
    );
    let (_, outputs, _) = run(d, &["output", "--json"]);
    assert!(outputs.contains("ip-10-0-1-6.ec2.internal"), "{outputs}");
    let (code, plan, err) = run(
        d,
        &[
            "plan",
            "--destroy",
            "--target",
            r#"test_object.node["ip-10-0-1-5.ec2.internal"]"#,
        ],
    );
    assert_eq!(code, 0, "{plan}{err}");
    assert!(
        plan.contains("0 to add, 0 to change, 1 to destroy"),
        "{plan}"
    );
    let (code, out, err) = run(
        d,
        &[
            "state",
            "rm",
            r#"test_object.node["ip-10-0-1-6.ec2.internal"]"#,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(!list.contains("ip-10-0-1-6"), "{list}");
}

/// One apply that creates, updates, replaces and deletes instances of one block, beside a block
/// it leaves alone: the state records each object once, in address order, and agrees with the
/// world, so the next plan is empty; a destroy empties both.
#[test]
fn an_apply_of_every_kind_of_change_records_each_object_once() {
    let config = |names: &[&str], changed: &str| {
        let mut text = provider(5, "");
        text.push_str(&format!(
            "resource \"test_object\" \"node\" {{\n  for_each = toset([{}])\n  name     = each.key\n  value    = each.key == \"c\" ? \"{changed}\" : \"v1\"\n}}\n\nresource \"test_object\" \"keep\" {{\n  count = 2\n  name  = \"keep${{count.index}}\"\n}}\n\noutput \"kept\" {{\n  value = [for k in test_object.keep : k.name]\n}}\n",
            names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
        ));
        text
    };
    let recorded = |d: &Path| -> Vec<(String, Option<String>)> {
        let state =
            gpustack_state::State::decode(&std::fs::read(d.join(".gpustack/state.json")).unwrap())
                .unwrap();
        state
            .resources
            .iter()
            .map(|r| {
                (
                    r.address.clone(),
                    r.attributes["value"].as_str().map(str::to_owned),
                )
            })
            .collect()
    };
    let dir = stack(&config(&["a", "b", "c", "d", "e"], "v1"));
    let d = dir.path();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::write(d.join("main.hcl"), config(&["a", "c", "d", "e", "f"], "v2")).unwrap();
    let (code, out, err) = run(
        d,
        &[
            "apply",
            "--auto-approve",
            "--replace",
            r#"test_object.node["d"]"#,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 added, 1 changed, 2 destroyed"),
        "b deleted, c updated, d replaced, f created:\n{out}"
    );
    let node = |k: &str, v: &str| (format!("test_object.node[\"{k}\"]"), Some(v.to_owned()));
    let keep = |i: usize| (format!("test_object.keep[{i}]"), None);
    assert_eq!(
        recorded(d),
        [
            keep(0),
            keep(1),
            node("a", "v1"),
            node("c", "v2"),
            node("d", "v1"),
            node("e", "v1"),
            node("f", "v1"),
        ]
    );
    let names: Vec<String> = world(d).as_object().unwrap().keys().cloned().collect();
    assert_eq!(names.len(), 7, "{names:?}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "the next plan is empty:\n{out}{err}");
    let (code, out, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("7 destroyed"), "{out}");
    assert_eq!(recorded(d), []);
    assert_eq!(world(d).as_object().unwrap().len(), 0, "{}", world(d));
}

/// A deletion that fails keeps everything it depends on, and says what was kept and why.
#[test]
fn a_failed_delete_keeps_what_it_depends_on() {
    let dir = stack(&(provider(0, "  fail_delete = [\"c\"]\n") + CHAIN));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let (code, out, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Injected failure"), "{err}");
    assert!(
        err.contains("test_object.b was kept, because test_object.c"),
        "{err}"
    );
    assert!(err.contains("test_object.a was kept"), "{err}");
    let world = world(d);
    for kept in ["a", "b", "c"] {
        assert!(world.get(kept).is_some(), "{kept} was deleted: {world}");
    }
    assert!(
        world.get("d").is_none(),
        "independent objects are destroyed: {world}"
    );
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(
        list.contains("test_object.a") && list.contains("test_object.c"),
        "{list}"
    );
}

const ONE: &str = r#"resource "test_object" "a" {
  name  = "shared"
  value = "v"
}
"#;

/// Objects deleted outside gpustack leave the state when an apply or a destroy finds them
/// gone, though nothing is left to change: a destroy of what is already gone empties the
/// state, and so does an apply once the configuration drops a resource whose object went.
#[test]
fn objects_found_gone_leave_the_state() {
    let state_of = |d: &Path| std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    for command in [
        &["destroy", "--auto-approve"][..],
        &["apply", "--auto-approve"],
    ] {
        let dir = stack(&(provider(0, "") + ONE));
        let d = dir.path();
        let (code, out, err) = run(d, &["apply", "--auto-approve"]);
        assert_eq!(code, 0, "{out}{err}");
        std::fs::write(d.join("world.json"), "{}").unwrap();
        if command[0] == "apply" {
            std::fs::write(d.join("main.hcl"), provider(0, "")).unwrap();
        }
        let (code, out, err) = run(d, command);
        assert_eq!(code, 0, "{command:?}: {out}{err}");
        assert!(out.contains("has been deleted"), "{command:?}: {out}");
        assert!(
            !state_of(d).contains("test_object.a"),
            "{command:?}: {}",
            state_of(d)
        );
        let (code, out, err) = run(d, &["plan"]);
        assert_eq!(code, 0, "{command:?}: {out}{err}");
        assert!(!out.contains("has been deleted"), "{command:?}: {out}");
    }
}

/// An object made by someone else between the plan and its apply: the saved plan's create
/// stops at it and changes nothing, where a create would take it over.
#[test]
fn a_create_stops_at_an_object_made_since_the_plan() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    let (code, out, err) = run(d, &["plan", "--out", "plan.bin"]);
    assert_eq!(code, 0, "{out}{err}");
    let someone_elses = r#"{"shared": {"name": "shared", "value": "theirs", "secret": null, "tags": null, "id": "obj-shared"}}"#;
    std::fs::write(d.join("world.json"), someone_elses).unwrap();
    let (code, out, err) = run(d, &["apply", "plan.bin"]);
    assert_eq!(code, 1, "{out}{err}");
    let text = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("test_object.a would create test object shared, which was made since the plan, and not by this stack"),
        "{err}"
    );
    assert!(text.contains("(id \"shared\")"), "{err}");
    assert_eq!(world(d)["shared"]["value"], "theirs", "nothing changed");
    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap_or_default();
    assert!(
        !state.contains("test_object.a"),
        "nothing recorded: {state}"
    );
}

/// An object that exists and is not in the state is refused at plan, with the import that
/// would take it in; with an import block the plan imports it, and a second plan is empty.
#[test]
fn an_existing_object_is_refused_until_imported() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    let someone_elses = r#"{"shared": {"name": "shared", "value": "theirs", "secret": null, "tags": null, "id": "obj-shared"}}"#;
    std::fs::write(d.join("world.json"), someone_elses).unwrap();
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Object already exists"), "{err}");
    assert!(
        err.contains("main.hcl:7:1"),
        "located at the resource: {err}"
    );
    assert!(
        err.contains("to = test_object.a") && err.contains("id = \"shared\""),
        "{err}"
    );
    let (code, _, _) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 1);
    assert_eq!(world(d)["shared"]["value"], "theirs", "nothing changed");

    std::fs::write(
        d.join("main.hcl"),
        provider(0, "") + ONE + "\nimport {\n  to = test_object.a\n  id = \"shared\"\n}\n",
    )
    .unwrap();
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{plan}{err}");
    assert!(
        plan.contains("test_object.a will be updated in-place"),
        "{plan}"
    );
    assert!(plan.contains("(imported from \"shared\")"), "{plan}");
    assert!(
        plan.contains("1 to import, 0 to add, 1 to change, 0 to destroy"),
        "{plan}"
    );
    let (_, json, _) = run(d, &["plan", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["resource_changes"][0]["change"]["importing"]["id"],
        "shared"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("1 imported, 0 added, 1 changed, 0 destroyed"),
        "{out}"
    );
    assert_eq!(world(d)["shared"]["value"], "v");
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "the second plan is empty:\n{plan}{err}");
}

/// An object this stack created but never recorded (a run killed between the create and the
/// state write) carries the stack's mark: the next plan adopts it, never "import it".
#[test]
fn an_object_this_stack_created_and_did_not_record_is_adopted() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    // What a crash between the create and the state write leaves: the object, no record.
    let (code, _, err) = run(d, &["state", "rm", "test_object.a"]);
    assert_eq!(code, 0, "{err}");
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{plan}{err}");
    assert!(plan.contains("test_object.a will be imported"), "{plan}");
    assert!(plan.contains("adopted: this stack created it"), "{plan}");
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 imported, 0 added, 0 changed"), "{out}");
    assert_eq!(
        journal(d).iter().filter(|e| e.0 == "create").count(),
        1,
        "no duplicate"
    );
    let (code, plan, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{plan}");
}

/// A rename with a `moved` block keeps the object; without it, the plan refuses to create one
/// object and destroy it under its old address.
#[test]
fn a_rename_needs_a_moved_block_and_keeps_the_object() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let renamed = ONE.replace("\"test_object\" \"a\"", "\"test_object\" \"b\"");
    std::fs::write(d.join("main.hcl"), provider(0, "") + &renamed).unwrap();
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Create and destroy of one object"), "{err}");
    assert!(
        err.contains("from = test_object.a") && err.contains("to   = test_object.b"),
        "{err}"
    );

    std::fs::write(
        d.join("main.hcl"),
        provider(0, "")
            + &renamed
            + "\nmoved {\n  from = test_object.a\n  to   = test_object.b\n}\n",
    )
    .unwrap();
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "a move is a change to the state:\n{plan}{err}");
    assert!(
        plan.contains("test_object.b has moved") && plan.contains("(moved from test_object.a)"),
        "{plan}"
    );
    assert!(
        plan.contains("0 to add, 0 to change, 0 to destroy"),
        "{plan}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, list, _) = run(d, &["state", "list"]);
    assert_eq!(list.trim(), "test_object.b");
    assert_eq!(
        journal(d).len(),
        1,
        "the object was created once and never touched again"
    );
    let (code, plan, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{plan}");
}

/// `count` added to a resource with `moved { from = x  to = x[0] }`, as Terraform writes it:
/// the object moves to `[0]`, and every later plan (the block still there) is empty.
#[test]
fn a_moved_block_that_adds_count_moves_the_object_once_and_stays_quiet() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let counted = ONE.replace(
        "resource \"test_object\" \"a\" {",
        "resource \"test_object\" \"a\" {\n  count = 1",
    );
    assert_ne!(counted, ONE);
    std::fs::write(
        d.join("main.hcl"),
        provider(0, "")
            + &counted
            + "\nmoved {\n  from = test_object.a\n  to   = test_object.a[0]\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, list, _) = run(d, &["state", "list"]);
    assert_eq!(list.trim(), "test_object.a[0]");
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{plan}{err}");
    assert_eq!(
        journal(d).len(),
        1,
        "the object was created once and never touched again"
    );
}

/// A `removed` block forgets an object without destroying it.
#[test]
fn a_removed_block_forgets_without_destroying() {
    let dir = stack(&(provider(0, "") + ONE));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    std::fs::write(
        d.join("main.hcl"),
        provider(0, "")
            + "removed {\n  from = test_object.a\n\n  lifecycle {\n    destroy = false\n  }\n}\n",
    )
    .unwrap();
    let (code, plan, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{plan}{err}");
    assert!(
        plan.contains("will no longer be managed by gpustack"),
        "{plan}"
    );
    assert!(
        plan.contains("0 to add, 0 to change, 0 to destroy, 1 to forget"),
        "{plan}"
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 forgotten"), "{out}");
    assert!(world(d).get("shared").is_some(), "the object stays");
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(list.trim().is_empty(), "{list}");
}

#[test]
fn destroy_runs_in_reverse_dependency_order() {
    let dir = stack(&(provider(20, "") + CHAIN));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let (code, out, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = journal(d);
    assert!(
        entry(&j, "delete", "c").3 <= entry(&j, "delete", "b").2,
        "b was deleted before c, which depends on it"
    );
    assert!(entry(&j, "delete", "b").3 <= entry(&j, "delete", "a").2);
    assert_eq!(world(d), serde_json::json!({}));
}

#[test]
fn create_before_destroy_and_prevent_destroy() {
    let config = |name: &str, lifecycle: &str| {
        format!(
            "{}resource \"test_object\" \"x\" {{\n  name = \"{name}\"\n\n  lifecycle {{\n{lifecycle}  }}\n}}\n",
            provider(20, "")
        )
    };
    let dir = stack(&config("old", "    create_before_destroy = true\n"));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    std::fs::write(
        d.join("main.hcl"),
        config("new", "    create_before_destroy = true\n"),
    )
    .unwrap();
    let (_, plan, _) = run(d, &["plan"]);
    assert!(
        plan.contains(
            "must be replaced (create before destroy) (because name cannot be changed in place)"
        ),
        "{plan}"
    );
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    let j = journal(d);
    assert!(
        entry(&j, "create", "new").3 <= entry(&j, "delete", "old").2,
        "create_before_destroy must create first: {j:?}"
    );

    std::fs::write(
        d.join("main.hcl"),
        config("newer", "    prevent_destroy = true\n"),
    )
    .unwrap();
    let (code, _, err) = run(d, &["plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("Instance cannot be destroyed"), "{err}");
    // As in Terraform, a destroy is refused too, until prevent_destroy goes.
    let (code, _, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 1);
    assert!(err.contains("Instance cannot be destroyed"), "{err}");
    std::fs::write(d.join("main.hcl"), config("newer", "")).unwrap();
    let (code, _, err) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "destroy plans from the state; {err}");
}

/// A create-before-destroy replacement whose old object cannot be deleted records the new
/// object (made, and what the configuration asks for), whatever the provider answers for the
/// old one, and counts it as added.
#[test]
fn a_create_before_destroy_whose_delete_fails_records_the_new_object() {
    let config = |name: &str| {
        format!(
            "{}resource \"test_object\" \"x\" {{\n  name = \"{name}\"\n\n  lifecycle {{\n    create_before_destroy = true\n  }}\n}}\n",
            provider(0, "  fail_delete = [\"old\"]\n")
        )
    };
    let dir = stack(&config("old"));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    std::fs::write(d.join("main.hcl"), config("new")).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("1 added, 0 changed, 0 destroyed"), "{err}");
    let (_, shown, _) = run(d, &["state", "show", "test_object.x"]);
    assert!(shown.contains("\"new\""), "{shown}");
    assert!(world(d).get("new").is_some(), "{}", world(d));
}

#[test]
fn ignore_changes_keeps_the_live_value() {
    let config = |value: &str| {
        format!(
            "{}resource \"test_object\" \"x\" {{\n  name  = \"x\"\n  value = \"{value}\"\n\n  lifecycle {{\n    ignore_changes = [value]\n  }}\n}}\n",
            provider(0, "")
        )
    };
    let dir = stack(&config("one"));
    let d = dir.path();
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);
    std::fs::write(d.join("main.hcl"), config("two")).unwrap();
    let (code, plan, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{plan}");
}

#[test]
fn import_adopts_an_object_from_the_world() {
    let dir = stack(
        &(provider(0, "")
            + "resource \"test_object\" \"x\" {\n  name  = \"x\"\n  value = \"v\"\n}\n"),
    );
    let d = dir.path();
    std::fs::write(
        d.join("world.json"),
        r#"{"x": {"name": "x", "value": "v", "secret": null, "tags": null, "id": "obj-x"}}"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["import", "test_object.x", "x"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, plan, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(
        code, 0,
        "an imported object that matches needs no change:\n{plan}"
    );
}

#[test]
fn a_second_apply_fails_fast_naming_the_holder() {
    let dir = stack(
        &(provider(1500, "") + "resource \"test_object\" \"slow\" {\n  name = \"slow\"\n}\n"),
    );
    let d = dir.path();
    let mut first = std::process::Command::new(gpustack_bin())
        .current_dir(d)
        .args(["apply", "--auto-approve"])
        .envs(ENV.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = d.join(".gpustack/state.json.lock");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let (code, _, err) = run(d, &["apply", "--auto-approve"]);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the second run must not wait"
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("locked by")
            && err.contains(&format!("pid {}", first.id()))
            && err.contains("for apply since"),
        "{err}"
    );
    assert!(first.wait().unwrap().success());
    assert_eq!(journal(d).len(), 1, "the second run must touch nothing");
}

/// Ids and timestamps vary between runs; lineage is random.
fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/engine");
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(r#""lineage": "[0-9a-f-]{36}""#, r#""lineage": "[lineage]""#);
    settings.add_filter(
        r#""timestamp": "[0-9T:Z-]+""#,
        r#""timestamp": "[timestamp]""#,
    );
    settings.add_filter(
        r#""config_hash": "[0-9a-f]{64}""#,
        r#""config_hash": "[hash]""#,
    );
    settings
}

#[test]
fn plan_and_drift_output_snapshots() {
    let base = provider(0, "")
        + r#"variable "replicas" {
  default = 10
}

resource "test_object" "config" {
  name   = "config"
  value  = "version: v1\nreplicas: ${var.replicas}\nstrategy: time-slicing\n"
  secret = "hunter2"
  tags   = { pool = "t4" }
}

resource "test_object" "pool" {
  name  = "pool"
  value = test_object.config.id
}

resource "test_object" "old" {
  name = "old"
}
"#;
    let dir = stack(&base);
    let d = dir.path();
    let settings = settings();
    let (_, created, _) = run(d, &["plan"]);
    settings.bind(|| insta::assert_snapshot!("plan-create", created));
    assert_eq!(run(d, &["apply", "--auto-approve"]).0, 0);

    let changed = base
        .replace("default = 10", "default = 20")
        .replace("name  = \"pool\"", "name  = \"pool2\"")
        .replace(
            "resource \"test_object\" \"old\" {\n  name = \"old\"\n}\n",
            "",
        );
    std::fs::write(d.join("main.hcl"), changed).unwrap();
    let (code, text, _) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2);
    assert!(!text.contains("hunter2"));
    settings.bind(|| insta::assert_snapshot!("plan-update-replace-delete", text));
    let (_, json, _) = run(d, &["plan", "--json"]);
    assert!(!json.contains("hunter2"));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    settings.bind(|| insta::assert_json_snapshot!("plan-update-replace-delete-json", json));
    let (_, markdown, _) = run(d, &["plan", "--markdown"]);
    settings.bind(|| insta::assert_snapshot!("plan-markdown", markdown));

    std::fs::write(d.join("main.hcl"), &base).unwrap();
    let mut w = world(d);
    w["config"]["tags"]["pool"] = "a100".into();
    w.as_object_mut().unwrap().remove("old");
    std::fs::write(d.join("world.json"), serde_json::to_string(&w).unwrap()).unwrap();
    let (code, drift, _) = run(d, &["drift"]);
    assert_eq!(code, 2);
    settings.bind(|| insta::assert_snapshot!("drift", drift));
    let (_, drift_json, _) = run(d, &["drift", "--json"]);
    let drift_json: serde_json::Value = serde_json::from_str(&drift_json).unwrap();
    settings.bind(|| insta::assert_json_snapshot!("drift-json", drift_json));
}

#[test]
fn ctrl_c_lets_operations_in_flight_finish_and_saves_the_state() {
    let dir = stack(
        &(provider(800, "")
            + "resource \"test_object\" \"a\" {\n  name = \"a\"\n}\n\nresource \"test_object\" \"b\" {\n  name  = \"b\"\n  value = test_object.a.id\n}\n"),
    );
    let d = dir.path();
    let child = std::process::Command::new(gpustack_bin())
        .current_dir(d)
        .args(["apply", "--auto-approve"])
        .envs(ENV.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut err = String::new();
    // Interrupt once the first create is in flight.
    while !err.contains("test_object.a: Creating...") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() == 0 {
            panic!("apply ended before creating anything: {err}");
        }
        err.push_str(&line);
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("Interrupt received"), "{err}");
    let j = journal(d);
    assert_eq!(
        j.len(),
        1,
        "only the operation in flight may finish: {j:?}\n{err}"
    );
    assert_eq!(j[0].1, "a");
    let (_, list, _) = run(d, &["state", "list"]);
    assert_eq!(
        list.trim(),
        "test_object.a",
        "the finished operation must be saved"
    );
}
