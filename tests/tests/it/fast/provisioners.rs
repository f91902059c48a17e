//! `local-exec` provisioners as Terraform runs them: create-time ones after their object is
//! made (a failure taints it, `on_failure = continue` only warns), destroy-time ones before it
//! goes; the plan says what will run on this machine; a secret in the arguments hides the
//! output; what cannot run here (`remote-exec`, `file`, `connection`) is refused by name.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack(dir, args);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

const STACK: &str = r#"resource "random_pet" "name" {}

resource "null_resource" "marker" {
  triggers = { name = random_pet.name.id }

  provisioner "local-exec" {
    command     = "echo \"$GREETING ${self.triggers.name}\" > marker-${self.triggers.name}.txt"
    environment = { GREETING = "made" }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "rm marker-${self.triggers.name}.txt"
  }
}
"#;

#[test]
fn create_time_runs_after_the_object_and_destroy_time_before_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.tf"), STACK).unwrap();
    let (code, plan, err) = run(d, &["plan", "-out=p.plan", "-no-color"]);
    assert_eq!(code, 0, "{plan}{err}");
    // A saved plan knows the pet's name, so the command it will run is shown in full.
    let pet_line = plan
        .lines()
        .find(|l| l.contains("+ id") && l.contains('-'))
        .unwrap_or_default();
    let pet = pet_line
        .split('"')
        .nth(1)
        .expect("the pet's name")
        .to_owned();
    assert!(
        plan.contains(&format!(
            "# (runs on this machine: local-exec: echo \"$GREETING {pet}\" > marker-{pet}.txt)"
        )),
        "{plan}"
    );
    let (code, out, err) = run(d, &["apply", "-no-color", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("null_resource.marker (local-exec): Executing:"),
        "progress goes to stderr: {out}{err}"
    );
    let marker = d.join(format!("marker-{pet}.txt"));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        format!("made {pet}")
    );
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(
        code, 0,
        "a provisioner runs once, not on every plan: {out}{err}"
    );
    let (code, out, err) = run(d, &["destroy", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!marker.exists(), "the destroy-time provisioner ran: {out}");
}

#[test]
fn a_failure_taints_the_object_and_on_failure_continue_only_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"resource "null_resource" "fails" {
  provisioner "local-exec" {
    command = "echo broken; exit 3"
  }
}

resource "null_resource" "tolerated" {
  provisioner "local-exec" {
    command    = "exit 4"
    on_failure = continue
  }
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 1, "{out}{err}");
    // Reported at the provisioner block that failed, with its output.
    assert!(err.contains("local-exec provisioner error"), "{err}");
    assert!(
        err.contains("main.tf:2:"),
        "located at the provisioner: {err}"
    );
    assert!(err.contains("exit status 3. Output: broken"), "{err}");
    assert!(
        err.contains("exit status 4") && err.contains("on_failure = continue"),
        "{err}"
    );
    let (_, list, _) = run(d, &["state", "list"]);
    assert!(
        list.contains("null_resource.fails"),
        "the object exists: {list}"
    );
    let (code, plan, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(code, 2, "{plan}{err}");
    assert!(
        plan.contains("null_resource.fails must be replaced (tainted"),
        "{plan}"
    );
    assert!(!plan.contains("null_resource.tolerated"), "{plan}");
    // The replacement is a new object: a new id, not the tainted one's.
    assert!(plan.contains("~ id = \""), "{plan}");
}

#[test]
fn a_secret_in_the_arguments_hides_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"variable "token" {
  type      = string
  sensitive = true
}

resource "null_resource" "login" {
  provisioner "local-exec" {
    command     = "echo logging in with $TOKEN as ${var.token}"
    environment = { TOKEN = var.token }
  }
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan", "-no-color", "-var", "token=Hunter2zz"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("# (runs on this machine: local-exec: (sensitive value))"),
        "{out}"
    );
    let (code, out, err) = run(
        d,
        &[
            "apply",
            "-auto-approve",
            "-no-color",
            "-var",
            "token=Hunter2zz",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("(output suppressed due to sensitive value in config)"),
        "{out}{err}"
    );
    assert!(
        !out.contains("Hunter2zz") && !err.contains("Hunter2zz"),
        "{out}{err}"
    );
}

#[test]
fn what_cannot_run_here_is_refused_by_name() {
    for (case, body, expected) in [
        (
            "remote-exec",
            r#"resource "null_resource" "x" {
  provisioner "remote-exec" {
    inline = ["echo hi"]
  }
}
"#,
            "remote-exec",
        ),
        (
            "connection",
            r#"resource "null_resource" "x" {
  connection {
    host = "10.0.0.1"
  }
}
"#,
            "connection block",
        ),
        (
            "destroy-time reference",
            r#"resource "random_pet" "p" {}

resource "null_resource" "x" {
  provisioner "local-exec" {
    when    = destroy
    command = "echo ${random_pet.p.id}"
  }
}
"#,
            "Invalid reference from destroy provisioner",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.tf"), body).unwrap();
        let (code, out, err) = run(dir.path(), &["validate", "-no-color"]);
        assert_eq!(code, 1, "{case}: {out}{err}");
        assert!(err.contains(expected), "{case}: {err}");
    }
}

#[test]
fn init_names_every_resource_that_runs_commands_here_modules_included() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("m")).unwrap();
    std::fs::write(
        d.join("main.tf"),
        "module \"creds\" {\n  source = \"./m\"\n}\n\nresource \"null_resource\" \"quiet\" {}\n\ndata \"external\" \"token\" {\n  program = [\"./token.sh\"]\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("m/main.tf"),
        "resource \"null_resource\" \"kubeconfig\" {\n  provisioner \"local-exec\" {\n    command = \"echo fetching credentials\"\n  }\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["init", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("These run commands on the machine that plans or applies the stack:")
            && err.contains("module.creds.null_resource.kubeconfig (local-exec)")
            && err.contains("data.external.token (external program, run by plan)"),
        "{err}"
    );
    assert!(!err.contains("null_resource.quiet"), "{err}");
}
