//! A Terraform user's CI workflow, run with `gpustack` in place of `terraform` and nothing
//! else changed: their flags as Go spells them, `-chdir`, `TF_CLI_ARGS_*`, their variables
//! files and `TF_VAR_`s, their workspaces; each step exits as Terraform's would and the JSON
//! outputs parse as Terraform's.

use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, env);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

const STACK: &str = r#"variable "region" {
  type = string
}

variable "replicas" {
  type = number
}

variable "team" {
  type = string
}

variable "env" {
  type    = string
  default = "dev"
}

resource "terraform_data" "pool" {
  input = "${var.team}-${var.region}-${var.replicas}-${var.env}-${terraform.workspace}"
}

output "pool" {
  value = terraform_data.pool.output
}

output "replicas" {
  value = var.replicas
}
"#;

fn workflow_stack() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let infra = root.path().join("infra");
    std::fs::create_dir_all(&infra).unwrap();
    std::fs::write(infra.join("main.tf"), STACK).unwrap();
    // terraform.tfvars first, then *.auto.tfvars in name order, the later winning.
    std::fs::write(
        infra.join("terraform.tfvars"),
        "region = \"eu\"\nreplicas = 3\n",
    )
    .unwrap();
    std::fs::write(infra.join("gpu.auto.tfvars"), "replicas = 10\n").unwrap();
    std::fs::write(infra.join("ci.tfvars"), "env = \"ci\"\n").unwrap();
    // Other tools' HCL beside the module, which Terraform does not read: a Terragrunt file
    // and a partial backend configuration kept for `init -backend-config`.
    std::fs::write(
        infra.join("terragrunt.hcl"),
        "include \"root\" {\n  path = find_in_parent_folders()\n}\n",
    )
    .unwrap();
    std::fs::write(infra.join("backend.hcl"), "bucket = \"tf-state\"\n").unwrap();
    root
}

/// The command lines of a GitHub Actions job written for Terraform (hashicorp/setup-terraform's
/// examples), with `gpustack` for `terraform`.
#[test]
fn a_terraform_ci_workflow_runs_unchanged() {
    let root = workflow_stack();
    let d = root.path();
    let env = [
        ("TF_VAR_team", "ml"),
        ("TF_IN_AUTOMATION", "1"),
        ("TF_INPUT", "0"),
        ("TF_CLI_ARGS_plan", "-lock-timeout=5s"),
        ("TF_CLI_ARGS", "-no-color"),
    ];
    let (code, out, err) = run(d, &["-chdir=infra", "init", "-input=false"], &env);
    assert_eq!(code, 0, "init: {out}{err}");
    let (code, out, err) = run(d, &["-chdir=infra", "validate"], &env);
    assert_eq!(code, 0, "validate: {out}{err}");
    for file in ["backend.hcl", "terragrunt.hcl"] {
        assert!(
            err.contains(&format!(
                "{file} sits beside Terraform's files but is not configuration"
            )),
            "{err}"
        );
    }
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "plan",
            "-input=false",
            "-var-file=ci.tfvars",
            "-out=tfplan",
        ],
        &env,
    );
    assert_eq!(code, 0, "plan: {out}{err}");
    // TF_IN_AUTOMATION: no advice on what to type next.
    assert!(out.contains("Saved the plan to tfplan."), "{out}");
    assert!(!out.contains("gpustack apply"), "{out}");
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "plan",
            "-var-file=ci.tfvars",
            "-detailed-exitcode",
        ],
        &env,
    );
    assert_eq!(code, 2, "plan -detailed-exitcode with changes: {out}{err}");
    let (code, out, err) = run(d, &["-chdir=infra", "show", "-json", "tfplan"], &env);
    assert_eq!(code, 0, "show -json: {err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(plan["format_version"].as_str().unwrap().starts_with("1."));
    assert_eq!(
        plan["resource_changes"][0]["change"]["actions"],
        serde_json::json!(["create"])
    );
    assert_eq!(
        plan["resource_changes"][0]["change"]["after"]["input"],
        "ml-eu-10-ci-default"
    );
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "apply",
            "-input=false",
            "-auto-approve",
            "tfplan",
        ],
        &env,
    );
    assert_eq!(code, 0, "apply: {out}{err}");
    let (code, out, err) = run(d, &["-chdir=infra", "output", "-json"], &env);
    assert_eq!(code, 0, "output -json: {err}");
    let outputs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        outputs,
        serde_json::json!({
            "pool": {"sensitive": false, "type": "string", "value": "ml-eu-10-ci-default"},
            "replicas": {"sensitive": false, "type": "number", "value": 10},
        })
    );
    let (code, out, _) = run(d, &["-chdir=infra", "output", "-raw", "pool"], &env);
    assert_eq!((code, out.as_str()), (0, "ml-eu-10-ci-default"));
    // A second plan has nothing to do: -detailed-exitcode says 0.
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "plan",
            "-var-file=ci.tfvars",
            "-detailed-exitcode",
        ],
        &env,
    );
    assert_eq!(code, 0, "{out}{err}");
    // A -var after the -var-file wins over it, as the command line orders them.
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "plan",
            "-var-file=ci.tfvars",
            "-var",
            "env=prod",
            "-json",
        ],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        plan["resource_changes"][0]["change"]["after"]["input"],
        "ml-eu-10-prod-default"
    );
    // The job's next stage works in a workspace of its own, made if missing.
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "workspace",
            "select",
            "-or-create",
            "staging",
        ],
        &env,
    );
    assert_eq!(code, 0, "workspace select -or-create: {out}{err}");
    let (code, out, err) = run(d, &["-chdir=infra", "workspace", "show"], &env);
    assert_eq!((code, out.trim()), (0, "staging"), "{err}");
    let (code, out, err) = run(
        d,
        &[
            "-chdir=infra",
            "plan",
            "-var-file=ci.tfvars",
            "-detailed-exitcode",
        ],
        &env,
    );
    assert_eq!(
        code, 2,
        "a new workspace has its own, empty state: {out}{err}"
    );
    let (code, out, err) = run(d, &["-chdir=infra", "workspace", "select", "default"], &env);
    assert_eq!(code, 0, "workspace select: {out}{err}");
    // Usage errors exit 1, as Terraform's.
    let (code, _, _) = run(d, &["-chdir=infra", "plan", "-no-such-flag"], &env);
    assert_eq!(code, 1);
    // A flag gpustack has no use for is accepted with a note, not refused.
    let (code, _, err) = run(d, &["-chdir=infra", "plan", "-parallelism=20"], &env);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("-parallelism=20 is accepted"), "{err}");
}

/// Two workspaces of one stack hold separate states and see their own `terraform.workspace`;
/// deleting one whose state records objects is refused as Terraform refuses it.
#[test]
fn local_workspaces_hold_separate_states() {
    let root = workflow_stack();
    let d = root.path();
    let env = [("TF_VAR_team", "ml")];
    let chdir = |args: &[&str]| {
        let mut all = vec!["-chdir=infra"];
        all.extend_from_slice(args);
        run(d, &all, &env)
    };
    let (code, out, err) = chdir(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = chdir(&["workspace", "new", "staging"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(d.join("infra/terraform.tfstate.d/staging").is_dir());
    let (code, out, _) = chdir(&["workspace", "show"]);
    assert_eq!((code, out.trim()), (0, "staging"));
    // A new workspace starts empty: the default's object is not in it.
    let (code, out, err) = chdir(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    let (code, out, err) = chdir(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, staging, _) = chdir(&["output", "-raw", "pool"]);
    assert_eq!(staging, "ml-eu-10-dev-staging");
    let (code, out, _) = chdir(&["workspace", "list"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim_end(), "  default\n* staging");
    // TF_WORKSPACE chooses for one run without changing the selection.
    let (_, default, _) = run(
        d,
        &["-chdir=infra", "output", "-raw", "pool"],
        &[("TF_WORKSPACE", "default")],
    );
    assert_eq!(default, "ml-eu-10-dev-default");
    let (code, _, err) = chdir(&["workspace", "delete", "staging"]);
    assert_eq!(code, 1, "the current workspace is never deleted: {err}");
    let (code, out, err) = chdir(&["workspace", "select", "default"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = chdir(&["workspace", "delete", "staging"]);
    assert_eq!(code, 1);
    assert!(err.contains("is not empty"), "{err}");
    let (code, _, err) = chdir(&["workspace", "delete", "default"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = chdir(&["workspace", "select", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("doesn't exist"), "{err}");
    // A plan saved in one workspace is refused in another.
    let (code, out, err) = chdir(&["plan", "-var=env=x", "-out=default.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = chdir(&["workspace", "select", "staging"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = chdir(&["apply", "default.plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("made in workspace \"default\""), "{err}");
    let (code, out, err) = chdir(&["destroy", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = chdir(&["workspace", "select", "default"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = chdir(&["workspace", "delete", "staging"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!d.join("infra/terraform.tfstate.d/staging").exists());
}

/// `-refresh=false` (and `--refresh=false`) skips reading live objects in plan and apply:
/// an object deleted outside gpustack is not noticed, as in Terraform.
#[test]
fn refresh_false_reads_nothing_live() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        "provider \"test\" {\n  world = \"world.json\"\n}\n\nresource \"test_object\" \"a\" {\n  name  = \"a\"\n  value = \"1\"\n}\n",
    )
    .unwrap();
    let env = [("GPUSTACK_TEST_PROVIDER", "1")];
    let (code, out, err) = run(d, &["apply", "-auto-approve"], &env);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::write(d.join("world.json"), "{}").unwrap();
    for args in [
        &["plan", "-refresh=false", "-detailed-exitcode"][..],
        &["plan", "--refresh=false", "-detailed-exitcode"],
        &["apply", "-refresh=false", "-auto-approve"],
    ] {
        let (code, out, err) = run(d, args, &env);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(!out.contains("has been deleted"), "{args:?}: {out}");
    }
    let (code, out, _) = run(d, &["plan", "-detailed-exitcode"], &env);
    assert_eq!(code, 2, "a refreshing plan sees the deletion: {out}");
    assert!(out.contains("has been deleted"), "{out}");
}

/// `providers` prints Terraform's tree of requirements (the configuration's, with version
/// constraints, then the state's); `providers schema -json` the served schemas in
/// Terraform's format; `providers lock` and `mirror` have nothing to do and say so.
#[test]
fn providers_as_terraform_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"terraform {
  required_providers {
    helm = {
      source  = "hashicorp/helm"
      version = "~> 2.17"
    }
  }
}

resource "terraform_data" "marker" {
  input = "x"
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let mut main = std::fs::read_to_string(d.join("main.tf")).unwrap();
    main.push_str("\nmodule \"gpu\" {\n  source = \"./gpu\"\n}\n");
    std::fs::write(d.join("main.tf"), main).unwrap();
    std::fs::create_dir_all(d.join("gpu")).unwrap();
    std::fs::write(
        d.join("gpu/main.tf"),
        "resource \"kubernetes_manifest\" \"m\" {\n  manifest = {\n    apiVersion = \"v1\"\n    kind       = \"ConfigMap\"\n    metadata   = { name = \"m\", namespace = \"default\" }\n  }\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["providers"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            ".\n├── provider[registry.terraform.io/hashicorp/helm] ~> 2.17\n├── provider[terraform.io/builtin/terraform]\n└── module.gpu\n    └── provider[registry.terraform.io/hashicorp/kubernetes]\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "Providers required by state:\n\n    provider[terraform.io/builtin/terraform]"
        ),
        "{out}"
    );
    let (code, out, err) = run(d, &["providers", "schema", "-json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let schemas: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schemas["format_version"], "1.0");
    let kubernetes = &schemas["provider_schemas"]["registry.terraform.io/hashicorp/kubernetes"];
    let manifest = &kubernetes["resource_schemas"]["kubernetes_manifest"]["block"];
    assert_eq!(
        manifest["attributes"]["manifest"]["required"], true,
        "{manifest}"
    );
    assert_eq!(manifest["attributes"]["manifest"]["type"], "dynamic");
    assert_eq!(
        kubernetes["provider"]["block"]["attributes"]["token"]["sensitive"],
        true
    );
    assert!(
        schemas["provider_schemas"]["registry.terraform.io/hashicorp/helm"]["resource_schemas"]
            ["helm_release"]
            .is_object()
    );
    for args in [
        &["providers", "lock"][..],
        &["providers", "mirror", "mirror-dir"],
    ] {
        let (code, out, err) = run(d, args, &[]);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(out.contains("built into the binary"), "{out}");
    }
    assert!(!d.join("mirror-dir").exists());
}

/// Terraform's spellings of the version, and the flags gpustack cannot honour refused by
/// name with what to do instead, before anything is read or locked.
#[test]
fn terraform_only_flags_are_answered_by_name() {
    let root = workflow_stack();
    let d = root.path();
    for version in ["-version", "-v", "--version"] {
        let (code, out, err) = run(d, &[version], &[]);
        assert_eq!(code, 0, "{version}: {err}");
        assert!(out.contains("gpustack"), "{version}: {out}");
    }
    let (code, _, err) = run(d, &["-chdir=infra", "apply", "-json", "-auto-approve"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("apply -json is Terraform's stream"), "{err}");
    for flag in ["-state=old.tfstate", "-state-out=new.tfstate", "-backup=-"] {
        let (code, _, err) = run(d, &["-chdir=infra", "plan", flag], &[("TF_VAR_team", "ml")]);
        assert_eq!(code, 1, "{flag}");
        let name = flag.split('=').next().unwrap();
        assert!(
            err.contains(&format!("{name} is Terraform's legacy path")),
            "{flag}: {err}"
        );
    }
    assert!(
        !d.join("infra/.gpustack").exists(),
        "a refused flag locked or wrote the state"
    );
}

/// The rest of a Terraform user's everyday commands: JSON variables files (loaded in
/// Terraform's order with the HCL ones), heredoc descriptions, `-lock=false` and
/// `-compact-warnings` accepted, `taint` and `untaint`, and `workspace delete -force` of a
/// workspace that still holds objects.
#[test]
fn json_variables_files_taint_and_a_forced_workspace_delete_work_as_in_terraform() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"variable "region" {
  type        = string
  description = <<EOT
Where the GPU pool runs.
EOT
}

variable "replicas" {
  type        = number
  description = <<-EOT
    How many nodes.
    EOT
}

resource "terraform_data" "pool" {
  input = "${var.region}-${var.replicas}"
}

output "pool" {
  value       = terraform_data.pool.output
  description = <<EOT
The pool's name.
EOT
}
"#,
    )
    .unwrap();
    // terraform.tfvars.json first, then *.auto.tfvars.json in name order, the later winning.
    std::fs::write(
        d.join("terraform.tfvars.json"),
        r#"{"region": "eu", "replicas": 3}"#,
    )
    .unwrap();
    std::fs::write(d.join("gpu.auto.tfvars.json"), r#"{"replicas": 8}"#).unwrap();
    let (code, out, err) = run(d, &["validate"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(
        d,
        &["apply", "-auto-approve", "-lock=false", "-compact-warnings"],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (_, pool, _) = run(d, &["output", "-raw", "pool"], &[]);
    assert_eq!(pool, "eu-8");
    let (code, out, err) = run(d, &["taint", "terraform_data.pool"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("tainted"), "{out}");
    let (code, out, err) = run(d, &["untaint", "terraform_data.pool"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    // A workspace that holds objects goes only with -force, which leaves them unmanaged.
    for args in [
        &["workspace", "new", "scratch"][..],
        &["apply", "-auto-approve"],
        &["workspace", "select", "default"],
    ] {
        let (code, out, err) = run(d, args, &[]);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
    let (code, _, err) = run(d, &["workspace", "delete", "scratch"], &[]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = run(d, &["workspace", "delete", "-force", "scratch"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!d.join("terraform.tfstate.d/scratch").exists());
}
