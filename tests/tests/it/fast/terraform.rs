//! A stack written for Terraform or OpenTofu, as it is: `.tf` files, Terraform's JSON syntax,
//! the `terraform` block (its version, providers, backend and OpenTofu's encryption),
//! `depends_on` as OpenTofu reads it, and `terraform_remote_state` on a local Terraform state.

use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_env(dir, args, &[])
}

fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let env: Vec<(&str, &str)> = ENV.iter().chain(env).copied().collect();
    let output = gpustack_env(dir, args, &env);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// `validate --json`: whether the stack is valid, and each diagnostic as `severity summary`.
fn validate(dir: &Path) -> (bool, Vec<String>) {
    let (_, out, err) = run(dir, &["validate", "--json"]);
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let diagnostics = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["severity"].as_str().unwrap(),
                d["summary"].as_str().unwrap()
            )
        })
        .collect();
    (report["valid"] == true, diagnostics)
}

const VERSIONS_TF: &str = r#"terraform {
  required_version = ">= 1.5.7, < 2.0.0"

  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.31"
    }
    helm = {
      source  = "registry.terraform.io/hashicorp/helm"
      version = ">= 2.12"
    }
    local = {
      source = "hashicorp/local"
    }
  }
}
"#;

/// What `terraform init` leaves in a stack: a lock file whose provider blocks gpustack would
/// refuse, were it read.
const LOCK_FILE: &str = r#"provider "registry.terraform.io/hashicorp/helm" {
  version     = "2.17.0"
  constraints = ">= 2.12.0"
  hashes = [
    "h1:kQMkcPVvHOguOqnxoEU2sm1ND9vCHiT8TvZ2x6v/Rsw=",
  ]
}
"#;

/// A stack of .tf files (a child module among them) validates; the lock file and .terraform/
/// that `terraform init` left are noted as ignored, and not read.
#[test]
fn a_stack_of_tf_files_validates_and_notes_what_of_terraforms_it_ignores() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        &[
            ("versions.tf", VERSIONS_TF),
            (".terraform.lock.hcl", LOCK_FILE),
            (".terraform/modules/modules.json", "{}"),
            (
                "main.tf",
                "module \"files\" {\n  source = \"./modules/files\"\n  names  = [\"a\", \"b\"]\n}\n\noutput \"written\" {\n  value = module.files.written\n}\n",
            ),
            (
                "modules/files/main.tf",
                "terraform {\n  required_version = \">= 1.3\"\n\n  required_providers {\n    local = {\n      source  = \"hashicorp/local\"\n      version = \"~> 2.4\"\n    }\n  }\n}\n\nvariable \"names\" {\n  type = list(string)\n}\n\nresource \"local_file\" \"f\" {\n  for_each = toset(var.names)\n  filename = \"out/${each.key}.txt\"\n  content  = each.key\n}\n\noutput \"written\" {\n  value = sort([for f in local_file.f : f.filename])\n}\n",
            ),
        ],
    );
    let (valid, diagnostics) = validate(d);
    assert!(valid, "{diagnostics:?}");
    assert_eq!(
        diagnostics,
        vec![
            "warning Terraform's dependency lock file is ignored",
            "warning Terraform's working directory is ignored",
        ]
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(d.join("out/b.txt")).unwrap(), "b");
}

/// `terraform { backend "local" }` keeps the state where its `path` says, in gpustack's
/// format, and is locked as gpustack's own local backend is.
#[test]
fn the_terraform_blocks_backend_keeps_the_state_where_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        &[
            (
                "backend.tf",
                "terraform {\n  backend \"local\" {\n    path = \"tfstate/gpu.json\"\n  }\n}\n",
            ),
            (
                "main.tf",
                "resource \"terraform_data\" \"a\" {\n  input = \"a\"\n}\n",
            ),
        ],
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("tfstate/gpu.json")).unwrap())
            .unwrap();
    assert_eq!(state["resources"][0]["address"], "terraform_data.a");
    assert!(!d.join(".gpustack/state.json").exists());
    let (code, out, err) = run(d, &["state", "list"]);
    assert_eq!((code, out.trim()), (0, "terraform_data.a"), "{err}");
}

/// Terraform's backend arguments under gpustack's names: renamed, defaulted as Terraform
/// defaults them, and what gpustack does not do warned about, never silently dropped.
#[test]
fn terraform_backend_arguments_are_read_as_gpustacks_own() {
    let backend = |block: &str| {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("backend.tf", block)]);
        let session = gpustack_engine::Session::open(
            gpustack::registry(),
            dir.path(),
            &gpustack_lang::config::Files::Disk,
            gpustack_engine::InputSource::Args(&Default::default()),
        );
        let config = session.backend_config().unwrap();
        let (_, diagnostics) = session.diagnostics();
        let warnings: Vec<String> = diagnostics
            .iter()
            .map(|d| format!("{:?} {}", d.severity, d.summary))
            .collect();
        (config, warnings)
    };
    let (config, warnings) = backend(
        "terraform {\n  backend \"kubernetes\" {\n    secret_suffix  = \"gpu\"\n    config_paths   = [\"/etc/kube/config\"]\n    config_context = \"kind-gpu\"\n    labels = {\n      team = \"ml\"\n    }\n  }\n}\n",
    );
    assert_eq!(
        config,
        gpustack_state::BackendConfig::Kubernetes(gpustack_state::KubernetesConfig {
            namespace: "default".into(),
            secret_suffix: "gpu".into(),
            config_path: Some("/etc/kube/config".into()),
            context: Some("kind-gpu".into()),
            in_cluster: None,
            lock_ttl: None,
        })
    );
    assert_eq!(warnings, vec!["Warning Backend argument ignored"]);
    let (config, warnings) = backend(
        "terraform {\n  backend \"s3\" {\n    bucket           = \"gpu-states\"\n    key              = \"gpu/terraform.tfstate\"\n    region           = \"eu-west-1\"\n    force_path_style = true\n    encrypt          = true\n    dynamodb_table   = \"terraform-locks\"\n    use_lockfile     = false\n    endpoints = {\n      s3 = \"https://s3.example.com\"\n    }\n  }\n}\n",
    );
    assert_eq!(
        config,
        gpustack_state::BackendConfig::S3(gpustack_state::S3Config {
            bucket: "gpu-states".into(),
            key: "gpu/terraform.tfstate".into(),
            region: Some("eu-west-1".into()),
            endpoint: Some("https://s3.example.com".into()),
            profile: None,
            use_path_style: Some(true),
            lock_ttl: None,
        })
    );
    assert_eq!(
        warnings,
        vec![
            "Warning Backend argument ignored",
            "Warning The state is locked all the same"
        ]
    );
}

/// OpenTofu's `terraform { encryption }` encrypts the state as gpustack's own block does.
#[test]
fn opentofus_encryption_in_the_terraform_block_seals_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        &[(
            "main.tf",
            r#"variable "passphrase" {
  type      = string
  sensitive = true
}

terraform {
  encryption {
    key_provider "pbkdf2" "main" {
      passphrase = var.passphrase
    }
    method "aes_gcm" "main" {
      keys = key_provider.pbkdf2.main
    }
    state {
      method = method.aes_gcm.main
    }
  }
}

resource "terraform_data" "marker" {
  input = "plain-marker"
}
"#,
        )],
    );
    let key = [("GPUSTACK_VAR_passphrase", "correct horse battery staple")];
    let (code, out, err) = run_env(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let sealed = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert!(sealed.starts_with("{\"gpustack_encryption\":1"), "{sealed}");
    assert!(!sealed.contains("plain-marker"), "{sealed}");
    let (code, pulled, err) = run_env(d, &["state", "pull"], &key);
    assert_eq!(code, 0, "{err}");
    assert!(pulled.contains("plain-marker"), "{pulled}");
}

/// `depends_on` as OpenTofu takes it: a variable in a module block (the issue's stack), a
/// module's output, a resource instance, a quoted reference with a warning; and the module's
/// `each.key` is not reported.
#[test]
fn depends_on_takes_what_opentofu_takes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        &[
            (
                "main.tf",
                r#"variable "ready" {
  type    = bool
  default = true
}

resource "terraform_data" "first" {
  count = 2
  input = count.index
}

module "base" {
  source = "./m"
  name   = "base"
}

module "pool" {
  for_each   = toset(["t4", "a100"])
  source     = "./m"
  name       = each.key
  depends_on = [var.ready, module.base.name, terraform_data.first[1], "terraform_data.first"]
}
"#,
            ),
            (
                "m/main.tf",
                "variable \"name\" {\n  type = string\n}\n\nresource \"terraform_data\" \"n\" {\n  input = var.name\n}\n\noutput \"name\" {\n  value = terraform_data.n.output\n}\n",
            ),
        ],
    );
    let (valid, diagnostics) = validate(d);
    assert!(valid, "{diagnostics:?}");
    assert_eq!(
        diagnostics,
        vec!["warning Quoted references are deprecated"]
    );
    let (code, dot, err) = run(d, &["graph"]);
    assert_eq!(code, 0, "{err}");
    // The instances of terraform_data.first are drawn as one cluster, from its first.
    for dependency in [
        "var.ready",
        "module.base.terraform_data.n",
        "terraform_data.first[0]",
    ] {
        assert!(
            dot.lines().any(|l| l.contains(&format!(
                "\"{dependency}\" -> \"module.pool[\\\"t4\\\"].terraform_data.n\""
            ))),
            "{dependency} orders the module's resources:\n{dot}"
        );
    }
}

const NATIVE: &str = r#"provider "test" {
  world = "world.json"
}

variable "pools" {
  type    = map(number)
  default = { t4 = 1, a100 = 4 }
}

locals {
  prefix = "gpu"
}

resource "test_group" "gpus" {
  name = "${local.prefix}-${length(var.pools)}"

  member {
    name   = "static"
    weight = 2
  }

  dynamic "member" {
    for_each = var.pools
    iterator = pool
    content {
      name   = pool.key
      weight = pool.value
    }
  }

  settings {
    mode = "spread"
  }

  lifecycle {
    ignore_changes = [settings]
  }
}

resource "test_object" "after" {
  count      = 2
  name       = "after-${count.index}"
  value      = "$${not interpolated} ${test_group.gpus.name}"
  depends_on = [test_group.gpus]
}

output "members" {
  value = test_group.gpus.member[*].name
}
"#;

const JSON: &str = r#"{
  "//": "The same stack in Terraform's JSON syntax.",
  "provider": {
    "test": {
      "world": "world.json"
    }
  },
  "variable": {
    "pools": {
      "type": "map(number)",
      "default": {"t4": 1, "a100": 4}
    }
  },
  "locals": {
    "prefix": "gpu"
  },
  "resource": {
    "test_group": {
      "gpus": {
        "name": "${local.prefix}-${length(var.pools)}",
        "member": [
          {"name": "static", "weight": 2}
        ],
        "dynamic": {
          "member": {
            "for_each": "${var.pools}",
            "iterator": "pool",
            "content": {"name": "${pool.key}", "weight": "${pool.value}"}
          }
        },
        "settings": {"mode": "spread"},
        "lifecycle": {"ignore_changes": ["settings"]}
      }
    },
    "test_object": {
      "after": {
        "count": 2,
        "name": "after-${count.index}",
        "value": "$${not interpolated} ${test_group.gpus.name}",
        "depends_on": ["test_group.gpus"]
      }
    }
  },
  "output": {
    "members": {"value": "${test_group.gpus.member[*].name}"}
  }
}
"#;

/// The same stack written in HCL and in Terraform's JSON syntax applies the same objects and
/// outputs, nested blocks, dynamic blocks, meta-arguments and templates included; its second
/// plan is empty.
#[test]
fn a_json_stack_applies_as_its_native_twin() {
    let mut results = Vec::new();
    for (name, text) in [("main.tf", NATIVE), ("main.tf.json", JSON)] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, &[(name, text)]);
        let (code, out, err) = run(d, &["apply", "--auto-approve"]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
        assert_eq!(
            code, 0,
            "{name}: a second plan has nothing to do: {out}{err}"
        );
        let (code, outputs, err) = run(d, &["output", "--json"]);
        assert_eq!(code, 0, "{err}");
        let world = std::fs::read_to_string(d.join("world.json")).unwrap();
        let mut world: serde_json::Value = serde_json::from_str(&world).unwrap();
        // Each stack marks its objects with a mark of its own.
        for object in world.as_object_mut().unwrap().values_mut() {
            object.as_object_mut().unwrap().remove("_owner");
        }
        results.push((
            world,
            serde_json::from_str::<serde_json::Value>(&outputs).unwrap(),
        ));
    }
    let (world, outputs) = &results[0];
    assert_eq!(
        world["gpu-2"]["member"].as_array().unwrap().len(),
        3,
        "{world}"
    );
    assert_eq!(
        world["after-1"]["value"], "${not interpolated} gpu-2",
        "{world}"
    );
    assert_eq!(
        outputs["members"]["value"],
        serde_json::json!(["static", "a100", "t4"])
    );
    assert_eq!(results[0], results[1]);
}

/// A mistake deep in a JSON file, found only against the provider's schema, is reported at
/// the JSON that makes it.
#[test]
fn a_json_mistake_found_against_the_schema_points_into_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = JSON.replace(
        r#"{"name": "static", "weight": 2}"#,
        r#"{"name": "static", "weight": "heavy"}"#,
    );
    write(d, &[("main.tf.json", &text)]);
    let (_, out, _) = run(d, &["validate", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let errors: Vec<&serde_json::Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{report}");
    let range = &errors[0]["range"];
    assert_eq!(range["filename"], "main.tf.json");
    let line = text.lines().position(|l| l.contains("\"heavy\"")).unwrap() + 1;
    let column = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .find("\"heavy\"")
        .unwrap()
        + 1;
    assert_eq!(
        (
            range["start"]["line"].as_u64(),
            range["start"]["column"].as_u64()
        ),
        (Some(line as u64), Some(column as u64)),
        "{report}"
    );
}

/// `fmt` formats a .tf file as a .hcl one and keeps its name; JSON files are left as they
/// are, as `terraform fmt` leaves them, and so is Terraform's lock file.
#[test]
fn fmt_formats_tf_files_in_place_and_leaves_json_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = "{\"locals\":{\"a\":1}}\n";
    let lock = "provider \"registry.terraform.io/hashicorp/helm\" {\nversion = \"2.17.0\"\n}\n";
    write(
        d,
        &[
            ("main.tf", "locals {\na = 1\n  bb = 2\n}\n"),
            ("other.tf.json", json),
            (".terraform.lock.hcl", lock),
        ],
    );
    let (code, out, err) = run(d, &["fmt", "--check", "."]);
    assert_eq!((code, out.trim()), (1, "./main.tf"), "{err}");
    let (code, _, err) = run(d, &["fmt", "."]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("main.tf")).unwrap(),
        "locals {\n  a  = 1\n  bb = 2\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("other.tf.json")).unwrap(),
        json
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".terraform.lock.hcl")).unwrap(),
        lock
    );
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// `gpustack version` says which Terraform language it implements, as `required_version`
/// checks it.
#[test]
fn version_names_the_terraform_language_it_implements() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = run(dir.path(), &["version"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("implements the Terraform language 1.11.0 (OpenTofu 1.11)"),
        "{out}"
    );
    let (code, out, _) = run(dir.path(), &["version", "--json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["terraform_version"], "1.11.0");
    for (constraint, valid) in [
        ("~> 1.11.0", true),
        (">= 1.5, < 2.0", true),
        ("~> 1.12", false),
    ] {
        write(
            dir.path(),
            &[(
                "versions.tf",
                &format!("terraform {{\n  required_version = \"{constraint}\"\n}}\n"),
            )],
        );
        assert_eq!(validate(dir.path()).0, valid, "{constraint}");
    }
}

const CLUSTER_STATE: &str = r#"{
  "version": 4,
  "terraform_version": "1.9.8",
  "serial": 7,
  "lineage": "5c1f7d9e-0a3b-4e51-9a6e-2b7d8c9f0e12",
  "outputs": {
    "cluster_name": {"value": "gpu-prod", "type": "string"},
    "gpu_subnets": {"value": ["subnet-a", "subnet-b"], "type": ["list", "string"]},
    "node_role": {"value": {"arn": "arn:aws:iam::1:role/gpu", "max_pods": 110}, "type": ["object", {"arn": "string", "max_pods": "number"}]},
    "kubeconfig_token": {"value": "tf-cluster-s3cr3t", "type": "string", "sensitive": true}
  },
  "resources": [
    {"mode": "managed", "type": "aws_eks_cluster", "name": "gpu", "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]", "instances": []}
  ],
  "check_results": null
}
"#;

const READS_CLUSTER: &str = r#"data "terraform_remote_state" "cluster" {
  backend = "local"
  config = {
    path = "${path.module}/../cluster/terraform.tfstate"
  }
  defaults = {
    region     = "us-east-1"
    gpu_subnets = []
  }
}

data "terraform_remote_state" "staging" {
  backend   = "local"
  workspace = "staging"
  config = {
    workspace_dir = "${path.module}/../cluster/terraform.tfstate.d"
  }
}

output "cluster" {
  value = data.terraform_remote_state.cluster.outputs.cluster_name
}

output "subnets" {
  value = data.terraform_remote_state.cluster.outputs.gpu_subnets
}

output "max_pods" {
  value = data.terraform_remote_state.cluster.outputs.node_role.max_pods + 0
}

output "region" {
  value = data.terraform_remote_state.cluster.outputs.region
}

output "staging" {
  value = data.terraform_remote_state.staging.outputs.cluster_name
}

resource "local_file" "token" {
  filename          = "out/token"
  sensitive_content = data.terraform_remote_state.cluster.outputs.kubeconfig_token
}
"#;

/// `terraform_remote_state` reads the root outputs of a Terraform state file (format 4), each
/// of its recorded type, over the defaults, from a workspace's file too; a sensitive output
/// reaches what uses it and nothing gpustack writes.
#[test]
fn terraform_remote_state_reads_a_local_terraform_state() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(
        r,
        &[
            ("cluster/terraform.tfstate", CLUSTER_STATE),
            (
                "cluster/terraform.tfstate.d/staging/terraform.tfstate",
                &CLUSTER_STATE.replace("gpu-prod", "gpu-staging"),
            ),
            ("gpu/main.tf", READS_CLUSTER),
        ],
    );
    let d = &r.join("gpu");
    let (code, out, err) = run(d, &["plan", "--out", "tf.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["apply", "tf.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, outputs, err) = run(d, &["output", "--json"]);
    assert_eq!(code, 0, "{err}");
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(outputs["cluster"]["value"], "gpu-prod");
    assert_eq!(
        outputs["subnets"]["value"],
        serde_json::json!(["subnet-a", "subnet-b"])
    );
    assert_eq!(outputs["max_pods"]["value"], 110);
    assert_eq!(outputs["region"]["value"], "us-east-1");
    assert_eq!(outputs["staging"]["value"], "gpu-staging");
    assert_eq!(
        std::fs::read_to_string(d.join("out/token")).unwrap(),
        "tf-cluster-s3cr3t"
    );
    for written in [".gpustack/state.json", "tf.plan"] {
        let text = String::from_utf8_lossy(&std::fs::read(d.join(written)).unwrap()).into_owned();
        assert!(
            !text.contains("tf-cluster-s3cr3t"),
            "{written} holds the secret"
        );
    }
    assert!(!out.contains("tf-cluster-s3cr3t") && !err.contains("tf-cluster-s3cr3t"));
}

/// What `terraform_remote_state` cannot read is reported at the block, with the reason: a
/// state that is not there, a gpustack state, a backend or argument gpustack does not read.
#[test]
fn terraform_remote_state_mistakes_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let case = |text: &str| {
        write(d, &[("main.tf", text)]);
        let (code, out, err) = run(d, &["plan"]);
        assert_eq!(code, 1, "{out}{err}");
        err
    };
    let err = case(
        "data \"terraform_remote_state\" \"c\" {\n  backend = \"local\"\n  config = {\n    path = \"missing.tfstate\"\n  }\n}\n",
    );
    assert!(
        err.contains("Unable to find remote state") && err.contains("main.tf:1"),
        "{err}"
    );
    write(
        d,
        &[(
            "gpustack-state.json",
            r#"{"format_version": 1, "resources": []}"#,
        )],
    );
    let err = case(
        "data \"terraform_remote_state\" \"c\" {\n  backend = \"local\"\n  config = {\n    path = \"gpustack-state.json\"\n  }\n}\n",
    );
    assert!(
        err.contains("this is a gpustack state") && err.contains("main.tf:"),
        "{err}"
    );
    let err =
        case("data \"terraform_remote_state\" \"c\" {\n  backend = \"gcs\"\n  config  = {}\n}\n");
    assert!(
        err.contains("Unsupported backend") && err.contains("main.tf:2"),
        "{err}"
    );
    let err = case(
        "data \"terraform_remote_state\" \"c\" {\n  backend = \"s3\"\n  config = {\n    bucket     = \"b\"\n    key        = \"k\"\n    access_key = \"AKIA\"\n  }\n}\n",
    );
    assert!(
        err.contains("access_key is refused") && err.contains("main.tf:6:5"),
        "{err}"
    );
}
