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
/// that `terraform init` left are noted as ignored, and not read; a module's `provider_meta`
/// is accepted with a note.
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
                "terraform {\n  required_version = \">= 1.3\"\n\n  required_providers {\n    local = {\n      source  = \"hashicorp/local\"\n      version = \"~> 2.4\"\n    }\n  }\n\n  provider_meta \"local\" {\n    module_name = \"blueprints/files/v1.0\"\n  }\n}\n\nvariable \"names\" {\n  type = list(string)\n}\n\nresource \"local_file\" \"f\" {\n  for_each = toset(var.names)\n  filename = \"out/${each.key}.txt\"\n  content  = each.key\n}\n\noutput \"written\" {\n  value = sort([for f in local_file.f : f.filename])\n}\n",
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
            "warning provider_meta is not sent",
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
        let config = session.backend_config(&serde_json::Map::new()).unwrap();
        let (_, diagnostics) = session.diagnostics();
        let warnings: Vec<String> = diagnostics
            .iter()
            .map(|d| format!("{:?} {}", d.severity, d.summary))
            .collect();
        (config, warnings)
    };
    let (config, warnings) = backend(
        "terraform {\n  backend \"kubernetes\" {\n    secret_suffix  = \"gpu\"\n    config_paths   = [\"/etc/kube/config\", \"/etc/kube/ci\"]\n    config_context = \"kind-gpu\"\n    config_context_auth_info = \"ci\"\n    labels = {\n      team = \"ml\"\n    }\n  }\n}\n",
    );
    assert_eq!(
        config,
        gpustack_state::BackendConfig::Kubernetes(gpustack_state::KubernetesConfig {
            namespace: "default".into(),
            secret_suffix: "gpu".into(),
            config_path: None,
            config_paths: vec!["/etc/kube/config".into(), "/etc/kube/ci".into()],
            context: Some("kind-gpu".into()),
            cluster: None,
            user: Some("ci".into()),
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
            workspace_key_prefix: None,
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
    let (code, out, err) = run(d, &["fmt", "-check", "."]);
    assert_eq!((code, out.trim()), (3, "./main.tf"), "{err}");
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
        out.contains("implements the Terraform language 1.15.0"),
        "{out}"
    );
    let (code, out, _) = run(dir.path(), &["version", "-json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["terraform_version"], "1.15.0");
    assert_eq!(json["terraform_outdated"], false);
    assert!(json["provider_selections"]["registry.terraform.io/hashicorp/helm"].is_string());
    for (constraint, valid) in [
        ("~> 1.15.0", true),
        (">= 1.12.2", true),
        (">= 1.5, < 2.0", true),
        ("~> 1.16", false),
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
        err.contains("gpustack-state.json is a gpustack state, not Terraform's")
            && err.contains("main.tf:"),
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

/// How gpustack treats one argument of a Terraform provider's schema.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    /// Honoured: it means what it means in Terraform.
    Honoured,
    /// Refused by name with the reason, when set to this value (HCL).
    Refused(&'static str),
}

use Verdict::{Honoured, Refused};

/// Every argument and block of the current schemas of Terraform's helm (v2 and v3),
/// kubernetes and kubectl (gavinbunney) providers, for the types gpustack serves: where it
/// lives (`provider.NAME`, `resource.TYPE`, `data.TYPE`), its path (blocks by name), and what
/// gpustack does with it.
const SCHEMA_TABLE: &[(&str, &str, Verdict)] = &[
    // hashicorp/helm: the provider.
    ("provider.helm", "kubernetes", Honoured),
    ("provider.helm", "kubernetes.host", Honoured),
    ("provider.helm", "kubernetes.username", Honoured),
    ("provider.helm", "kubernetes.password", Honoured),
    ("provider.helm", "kubernetes.insecure", Honoured),
    ("provider.helm", "kubernetes.tls_server_name", Honoured),
    ("provider.helm", "kubernetes.client_certificate", Honoured),
    ("provider.helm", "kubernetes.client_key", Honoured),
    (
        "provider.helm",
        "kubernetes.cluster_ca_certificate",
        Honoured,
    ),
    ("provider.helm", "kubernetes.config_paths", Honoured),
    ("provider.helm", "kubernetes.config_path", Honoured),
    ("provider.helm", "kubernetes.config_context", Honoured),
    (
        "provider.helm",
        "kubernetes.config_context_auth_info",
        Honoured,
    ),
    (
        "provider.helm",
        "kubernetes.config_context_cluster",
        Honoured,
    ),
    ("provider.helm", "kubernetes.token", Honoured),
    ("provider.helm", "kubernetes.proxy_url", Honoured),
    ("provider.helm", "kubernetes.exec", Honoured),
    ("provider.helm", "kubernetes.exec.api_version", Honoured),
    ("provider.helm", "kubernetes.exec.command", Honoured),
    ("provider.helm", "kubernetes.exec.args", Honoured),
    ("provider.helm", "kubernetes.exec.env", Honoured),
    ("provider.helm", "registry", Honoured),
    ("provider.helm", "registry.url", Honoured),
    ("provider.helm", "registry.username", Honoured),
    ("provider.helm", "registry.password", Honoured),
    ("provider.helm", "registries", Honoured),
    ("provider.helm", "registry_config_path", Honoured),
    ("provider.helm", "repository_config_path", Honoured),
    ("provider.helm", "repository_cache", Honoured),
    ("provider.helm", "helm_driver", Honoured),
    ("provider.helm", "debug", Honoured),
    ("provider.helm", "plugins_path", Honoured),
    ("provider.helm", "burst_limit", Honoured),
    ("provider.helm", "qps", Honoured),
    ("provider.helm", "experiments", Honoured),
    ("provider.helm", "experiments.manifest", Refused("true")),
    // hashicorp/helm: helm_release.
    ("resource.helm_release", "name", Honoured),
    ("resource.helm_release", "chart", Honoured),
    ("resource.helm_release", "repository", Honoured),
    ("resource.helm_release", "repository_key_file", Honoured),
    ("resource.helm_release", "repository_cert_file", Honoured),
    ("resource.helm_release", "repository_ca_file", Honoured),
    ("resource.helm_release", "repository_username", Honoured),
    ("resource.helm_release", "repository_password", Honoured),
    ("resource.helm_release", "pass_credentials", Honoured),
    ("resource.helm_release", "version", Honoured),
    ("resource.helm_release", "devel", Honoured),
    ("resource.helm_release", "verify", Honoured),
    ("resource.helm_release", "keyring", Honoured),
    ("resource.helm_release", "namespace", Honoured),
    ("resource.helm_release", "create_namespace", Honoured),
    ("resource.helm_release", "values", Honoured),
    ("resource.helm_release", "set", Honoured),
    ("resource.helm_release", "set.name", Honoured),
    ("resource.helm_release", "set.value", Honoured),
    ("resource.helm_release", "set.type", Honoured),
    ("resource.helm_release", "set_list", Honoured),
    ("resource.helm_release", "set_list.name", Honoured),
    ("resource.helm_release", "set_list.value", Honoured),
    ("resource.helm_release", "set_sensitive", Honoured),
    ("resource.helm_release", "set_sensitive.name", Honoured),
    ("resource.helm_release", "set_sensitive.value", Honoured),
    ("resource.helm_release", "set_sensitive.type", Honoured),
    ("resource.helm_release", "set_wo", Honoured),
    ("resource.helm_release", "set_wo_revision", Honoured),
    ("resource.helm_release", "timeout", Honoured),
    ("resource.helm_release", "disable_webhooks", Honoured),
    ("resource.helm_release", "disable_crd_hooks", Honoured),
    ("resource.helm_release", "reuse_values", Honoured),
    ("resource.helm_release", "reset_values", Honoured),
    ("resource.helm_release", "force_update", Honoured),
    ("resource.helm_release", "recreate_pods", Refused("true")),
    ("resource.helm_release", "cleanup_on_fail", Honoured),
    ("resource.helm_release", "max_history", Honoured),
    ("resource.helm_release", "atomic", Honoured),
    ("resource.helm_release", "skip_crds", Honoured),
    ("resource.helm_release", "render_subchart_notes", Honoured),
    (
        "resource.helm_release",
        "disable_openapi_validation",
        Honoured,
    ),
    ("resource.helm_release", "wait", Honoured),
    ("resource.helm_release", "wait_for_jobs", Honoured),
    ("resource.helm_release", "dependency_update", Honoured),
    ("resource.helm_release", "replace", Honoured),
    ("resource.helm_release", "description", Honoured),
    ("resource.helm_release", "postrender", Honoured),
    ("resource.helm_release", "postrender.binary_path", Honoured),
    ("resource.helm_release", "postrender.args", Honoured),
    ("resource.helm_release", "lint", Honoured),
    ("resource.helm_release", "upgrade_install", Honoured),
    ("resource.helm_release", "take_ownership", Honoured),
    ("resource.helm_release", "status", Honoured),
    ("resource.helm_release", "metadata", Honoured),
    ("resource.helm_release", "manifest", Honoured),
    // hashicorp/helm: data "helm_template" (v2 and v3).
    ("data.helm_template", "name", Honoured),
    ("data.helm_template", "chart", Honoured),
    ("data.helm_template", "repository", Honoured),
    ("data.helm_template", "repository_key_file", Honoured),
    ("data.helm_template", "repository_cert_file", Honoured),
    ("data.helm_template", "repository_ca_file", Honoured),
    ("data.helm_template", "repository_username", Honoured),
    ("data.helm_template", "repository_password", Honoured),
    ("data.helm_template", "pass_credentials", Honoured),
    ("data.helm_template", "version", Honoured),
    ("data.helm_template", "devel", Honoured),
    ("data.helm_template", "verify", Honoured),
    ("data.helm_template", "keyring", Honoured),
    ("data.helm_template", "namespace", Honoured),
    ("data.helm_template", "values", Honoured),
    ("data.helm_template", "set", Honoured),
    ("data.helm_template", "set.name", Honoured),
    ("data.helm_template", "set.value", Honoured),
    ("data.helm_template", "set.type", Honoured),
    ("data.helm_template", "set_list", Honoured),
    ("data.helm_template", "set_list.name", Honoured),
    ("data.helm_template", "set_list.value", Honoured),
    ("data.helm_template", "set_sensitive", Honoured),
    ("data.helm_template", "set_sensitive.name", Honoured),
    ("data.helm_template", "set_sensitive.value", Honoured),
    ("data.helm_template", "set_sensitive.type", Honoured),
    (
        "data.helm_template",
        "set_wo",
        Refused("[{ name = \"a\", value = \"b\" }]"),
    ),
    ("data.helm_template", "api_versions", Honoured),
    ("data.helm_template", "kube_version", Honoured),
    ("data.helm_template", "include_crds", Honoured),
    ("data.helm_template", "is_upgrade", Honoured),
    ("data.helm_template", "show_only", Honoured),
    ("data.helm_template", "skip_tests", Honoured),
    ("data.helm_template", "skip_crds", Honoured),
    ("data.helm_template", "validate", Honoured),
    ("data.helm_template", "disable_webhooks", Honoured),
    ("data.helm_template", "disable_openapi_validation", Honoured),
    ("data.helm_template", "disable_schema_validation", Honoured),
    ("data.helm_template", "render_subchart_notes", Honoured),
    ("data.helm_template", "dependency_update", Honoured),
    ("data.helm_template", "description", Honoured),
    ("data.helm_template", "atomic", Honoured),
    ("data.helm_template", "wait", Honoured),
    ("data.helm_template", "create_namespace", Honoured),
    ("data.helm_template", "replace", Honoured),
    ("data.helm_template", "reuse_values", Honoured),
    ("data.helm_template", "reset_values", Honoured),
    ("data.helm_template", "timeout", Honoured),
    ("data.helm_template", "timeouts", Honoured),
    ("data.helm_template", "timeouts.read", Honoured),
    ("data.helm_template", "postrender", Honoured),
    ("data.helm_template", "postrender.binary_path", Honoured),
    ("data.helm_template", "postrender.args", Honoured),
    ("data.helm_template", "id", Honoured),
    ("data.helm_template", "manifest", Honoured),
    ("data.helm_template", "manifests", Honoured),
    ("data.helm_template", "notes", Honoured),
    ("data.helm_template", "crds", Honoured),
    // hashicorp/kubernetes: the provider.
    ("provider.kubernetes", "host", Honoured),
    ("provider.kubernetes", "username", Honoured),
    ("provider.kubernetes", "password", Honoured),
    ("provider.kubernetes", "insecure", Honoured),
    ("provider.kubernetes", "tls_server_name", Honoured),
    ("provider.kubernetes", "client_certificate", Honoured),
    ("provider.kubernetes", "client_key", Honoured),
    ("provider.kubernetes", "cluster_ca_certificate", Honoured),
    ("provider.kubernetes", "config_paths", Honoured),
    ("provider.kubernetes", "config_path", Honoured),
    ("provider.kubernetes", "config_context", Honoured),
    ("provider.kubernetes", "config_context_auth_info", Honoured),
    ("provider.kubernetes", "config_context_cluster", Honoured),
    ("provider.kubernetes", "token", Honoured),
    ("provider.kubernetes", "proxy_url", Honoured),
    ("provider.kubernetes", "exec", Honoured),
    ("provider.kubernetes", "exec.api_version", Honoured),
    ("provider.kubernetes", "exec.command", Honoured),
    ("provider.kubernetes", "exec.args", Honoured),
    ("provider.kubernetes", "exec.env", Honoured),
    ("provider.kubernetes", "ignore_annotations", Honoured),
    ("provider.kubernetes", "ignore_labels", Honoured),
    ("provider.kubernetes", "experiments", Honoured),
    (
        "provider.kubernetes",
        "experiments.manifest_resource",
        Honoured,
    ),
    // hashicorp/kubernetes: kubernetes_manifest.
    ("resource.kubernetes_manifest", "manifest", Honoured),
    ("resource.kubernetes_manifest", "object", Honoured),
    ("resource.kubernetes_manifest", "computed_fields", Honoured),
    ("resource.kubernetes_manifest", "field_manager", Honoured),
    ("resource.kubernetes_manifest", "wait", Honoured),
    ("resource.kubernetes_manifest", "wait.rollout", Honoured),
    ("resource.kubernetes_manifest", "wait.fields", Honoured),
    ("resource.kubernetes_manifest", "wait.condition", Honoured),
    (
        "resource.kubernetes_manifest",
        "wait.condition.type",
        Honoured,
    ),
    (
        "resource.kubernetes_manifest",
        "wait.condition.status",
        Honoured,
    ),
    ("resource.kubernetes_manifest", "wait_for", Honoured),
    ("resource.kubernetes_manifest", "timeouts", Honoured),
    ("resource.kubernetes_manifest", "timeouts.create", Honoured),
    ("resource.kubernetes_manifest", "timeouts.update", Honoured),
    ("resource.kubernetes_manifest", "timeouts.delete", Honoured),
    // hashicorp/kubernetes: labels and annotations on objects of others.
    ("resource.kubernetes_labels", "api_version", Honoured),
    ("resource.kubernetes_labels", "kind", Honoured),
    ("resource.kubernetes_labels", "metadata", Honoured),
    ("resource.kubernetes_labels", "metadata.name", Honoured),
    ("resource.kubernetes_labels", "metadata.namespace", Honoured),
    ("resource.kubernetes_labels", "labels", Honoured),
    ("resource.kubernetes_labels", "field_manager", Honoured),
    ("resource.kubernetes_labels", "force", Honoured),
    ("resource.kubernetes_annotations", "api_version", Honoured),
    ("resource.kubernetes_annotations", "kind", Honoured),
    ("resource.kubernetes_annotations", "metadata", Honoured),
    ("resource.kubernetes_annotations", "metadata.name", Honoured),
    (
        "resource.kubernetes_annotations",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_annotations", "annotations", Honoured),
    (
        "resource.kubernetes_annotations",
        "template_annotations",
        Honoured,
    ),
    ("resource.kubernetes_annotations", "field_manager", Honoured),
    ("resource.kubernetes_annotations", "force", Honoured),
    // hashicorp/kubernetes: kubernetes_node_taint (no _v1 twin in Terraform).
    ("resource.kubernetes_node_taint", "metadata", Honoured),
    ("resource.kubernetes_node_taint", "metadata.name", Honoured),
    ("resource.kubernetes_node_taint", "taint", Honoured),
    ("resource.kubernetes_node_taint", "taint.key", Honoured),
    ("resource.kubernetes_node_taint", "taint.value", Honoured),
    ("resource.kubernetes_node_taint", "taint.effect", Honoured),
    ("resource.kubernetes_node_taint", "field_manager", Honoured),
    ("resource.kubernetes_node_taint", "force", Honoured),
    // hashicorp/kubernetes: typed resources (each also under its _v1 name, checked below).
    ("resource.kubernetes_namespace", "metadata.name", Honoured),
    (
        "resource.kubernetes_namespace",
        "metadata.generate_name",
        Refused("\"gpu-\""),
    ),
    ("resource.kubernetes_namespace", "metadata.labels", Honoured),
    (
        "resource.kubernetes_namespace",
        "metadata.annotations",
        Honoured,
    ),
    ("resource.kubernetes_namespace", "metadata.uid", Honoured),
    (
        "resource.kubernetes_namespace",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "resource.kubernetes_namespace",
        "metadata.generation",
        Honoured,
    ),
    (
        "resource.kubernetes_namespace",
        "wait_for_default_service_account",
        Honoured,
    ),
    ("resource.kubernetes_namespace", "timeouts.delete", Honoured),
    (
        "resource.kubernetes_config_map",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_config_map", "data", Honoured),
    ("resource.kubernetes_config_map", "binary_data", Honoured),
    ("resource.kubernetes_config_map", "immutable", Honoured),
    ("resource.kubernetes_secret", "data", Honoured),
    ("resource.kubernetes_secret", "binary_data", Honoured),
    ("resource.kubernetes_secret", "type", Honoured),
    ("resource.kubernetes_secret", "immutable", Honoured),
    ("resource.kubernetes_secret", "data_wo", Honoured),
    ("resource.kubernetes_secret", "data_wo_revision", Honoured),
    ("resource.kubernetes_secret", "binary_data_wo", Honoured),
    (
        "resource.kubernetes_secret",
        "binary_data_wo_revision",
        Honoured,
    ),
    ("resource.kubernetes_pod", "spec.container.env", Honoured),
    ("resource.kubernetes_pod", "spec.node_selector", Honoured),
    ("resource.kubernetes_pod", "target_state", Honoured),
    ("resource.kubernetes_pod", "timeouts.create", Honoured),
    (
        "resource.kubernetes_replication_controller",
        "spec.selector",
        Honoured,
    ),
    (
        "resource.kubernetes_replication_controller",
        "spec.replicas",
        Honoured,
    ),
    (
        "resource.kubernetes_replication_controller",
        "spec.template.spec.container.image",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoints",
        "subset.address.ip",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoints",
        "subset.not_ready_address.node_name",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoints",
        "subset.port.protocol",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoint_slice_v1",
        "address_type",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoint_slice_v1",
        "endpoint.condition.ready",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoint_slice_v1",
        "endpoint.target_ref.field_path",
        Honoured,
    ),
    (
        "resource.kubernetes_endpoint_slice_v1",
        "port.app_protocol",
        Honoured,
    ),
    (
        "resource.kubernetes_api_service",
        "spec.ca_bundle",
        Honoured,
    ),
    (
        "resource.kubernetes_api_service",
        "spec.group_priority_minimum",
        Honoured,
    ),
    (
        "resource.kubernetes_api_service",
        "spec.insecure_skip_tls_verify",
        Honoured,
    ),
    (
        "resource.kubernetes_api_service",
        "spec.service.port",
        Honoured,
    ),
    (
        "resource.kubernetes_config_map_v1_data",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_config_map_v1_data", "data", Honoured),
    ("resource.kubernetes_config_map_v1_data", "force", Honoured),
    (
        "resource.kubernetes_config_map_v1_data",
        "field_manager",
        Honoured,
    ),
    ("resource.kubernetes_secret_v1_data", "data", Honoured),
    ("resource.kubernetes_secret_v1_data", "force", Honoured),
    (
        "resource.kubernetes_secret_v1_data",
        "field_manager",
        Honoured,
    ),
    ("resource.kubernetes_env", "api_version", Honoured),
    ("resource.kubernetes_env", "kind", Honoured),
    ("resource.kubernetes_env", "container", Honoured),
    ("resource.kubernetes_env", "init_container", Honoured),
    ("resource.kubernetes_env", "metadata.namespace", Honoured),
    ("resource.kubernetes_env", "env.value", Honoured),
    (
        "resource.kubernetes_env",
        "env.value_from.secret_key_ref.optional",
        Honoured,
    ),
    (
        "resource.kubernetes_env",
        "env.value_from.resource_field_ref.divisor",
        Honoured,
    ),
    ("resource.kubernetes_env", "force", Honoured),
    ("resource.kubernetes_env", "field_manager", Honoured),
    (
        "resource.kubernetes_secret",
        "wait_for_service_account_token",
        Honoured,
    ),
    ("resource.kubernetes_service_account", "secret", Honoured),
    (
        "resource.kubernetes_service_account",
        "secret.name",
        Honoured,
    ),
    (
        "resource.kubernetes_service_account",
        "image_pull_secret",
        Honoured,
    ),
    (
        "resource.kubernetes_service_account",
        "image_pull_secret.name",
        Honoured,
    ),
    (
        "resource.kubernetes_service_account",
        "automount_service_account_token",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "storage_provisioner",
        Honoured,
    ),
    ("resource.kubernetes_storage_class", "parameters", Honoured),
    (
        "resource.kubernetes_storage_class",
        "reclaim_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "volume_binding_mode",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "allow_volume_expansion",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "mount_options",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "allowed_topologies",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "allowed_topologies.match_label_expressions",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "allowed_topologies.match_label_expressions.key",
        Honoured,
    ),
    (
        "resource.kubernetes_storage_class",
        "allowed_topologies.match_label_expressions.values",
        Honoured,
    ),
    ("resource.kubernetes_priority_class", "value", Honoured),
    (
        "resource.kubernetes_priority_class",
        "global_default",
        Honoured,
    ),
    (
        "resource.kubernetes_priority_class",
        "description",
        Honoured,
    ),
    (
        "resource.kubernetes_priority_class",
        "preemption_policy",
        Honoured,
    ),
    ("resource.kubernetes_resource_quota", "spec", Honoured),
    ("resource.kubernetes_resource_quota", "spec.hard", Honoured),
    (
        "resource.kubernetes_resource_quota",
        "spec.scopes",
        Honoured,
    ),
    (
        "resource.kubernetes_resource_quota",
        "spec.scope_selector",
        Honoured,
    ),
    (
        "resource.kubernetes_resource_quota",
        "spec.scope_selector.match_expression",
        Honoured,
    ),
    (
        "resource.kubernetes_resource_quota",
        "spec.scope_selector.match_expression.scope_name",
        Honoured,
    ),
    (
        "resource.kubernetes_resource_quota",
        "spec.scope_selector.match_expression.operator",
        Honoured,
    ),
    (
        "resource.kubernetes_resource_quota",
        "spec.scope_selector.match_expression.values",
        Honoured,
    ),
    ("resource.kubernetes_limit_range", "spec.limit", Honoured),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.type",
        Honoured,
    ),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.max",
        Honoured,
    ),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.min",
        Honoured,
    ),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.default",
        Honoured,
    ),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.default_request",
        Honoured,
    ),
    (
        "resource.kubernetes_limit_range",
        "spec.limit.max_limit_request_ratio",
        Honoured,
    ),
    ("resource.kubernetes_cluster_role", "rule", Honoured),
    (
        "resource.kubernetes_cluster_role",
        "rule.api_groups",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "rule.resources",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "rule.resource_names",
        Honoured,
    ),
    ("resource.kubernetes_cluster_role", "rule.verbs", Honoured),
    (
        "resource.kubernetes_cluster_role",
        "rule.non_resource_urls",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "aggregation_rule",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "aggregation_rule.cluster_role_selectors",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "aggregation_rule.cluster_role_selectors.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role",
        "aggregation_rule.cluster_role_selectors.match_expressions",
        Honoured,
    ),
    ("resource.kubernetes_role", "rule", Honoured),
    (
        "resource.kubernetes_cluster_role_binding",
        "role_ref",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "role_ref.api_group",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "role_ref.kind",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "role_ref.name",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "subject",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "subject.kind",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "subject.name",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "subject.namespace",
        Honoured,
    ),
    (
        "resource.kubernetes_cluster_role_binding",
        "subject.api_group",
        Honoured,
    ),
    ("resource.kubernetes_role_binding", "role_ref", Honoured),
    ("resource.kubernetes_role_binding", "subject", Honoured),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.access_modes",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.resources.requests",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.resources.limits",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.storage_class_name",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.volume_name",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.volume_mode",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "spec.selector",
        Honoured,
    ),
    (
        "resource.kubernetes_persistent_volume_claim",
        "wait_until_bound",
        Honoured,
    ),
    // hashicorp/kubernetes: the workload kinds (each also under its _v1 name), the pod
    // template in depth.
    ("resource.kubernetes_deployment", "metadata.name", Honoured),
    (
        "resource.kubernetes_deployment",
        "metadata.namespace",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "metadata.labels",
        Honoured,
    ),
    ("resource.kubernetes_deployment", "metadata.uid", Honoured),
    ("resource.kubernetes_daemonset", "metadata.name", Honoured),
    (
        "resource.kubernetes_daemonset",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_daemonset", "metadata.labels", Honoured),
    ("resource.kubernetes_daemonset", "metadata.uid", Honoured),
    (
        "resource.kubernetes_stateful_set",
        "metadata.name",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "metadata.namespace",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "metadata.labels",
        Honoured,
    ),
    ("resource.kubernetes_stateful_set", "metadata.uid", Honoured),
    ("resource.kubernetes_job", "metadata.name", Honoured),
    ("resource.kubernetes_job", "metadata.namespace", Honoured),
    ("resource.kubernetes_job", "metadata.labels", Honoured),
    ("resource.kubernetes_job", "metadata.uid", Honoured),
    ("resource.kubernetes_cron_job", "metadata.name", Honoured),
    (
        "resource.kubernetes_cron_job",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_cron_job", "metadata.labels", Honoured),
    ("resource.kubernetes_cron_job", "metadata.uid", Honoured),
    ("resource.kubernetes_service", "metadata.name", Honoured),
    (
        "resource.kubernetes_service",
        "metadata.namespace",
        Honoured,
    ),
    ("resource.kubernetes_service", "metadata.labels", Honoured),
    ("resource.kubernetes_service", "metadata.uid", Honoured),
    (
        "resource.kubernetes_pod_disruption_budget",
        "metadata.name",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "metadata.namespace",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "metadata.labels",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "metadata.uid",
        Honoured,
    ),
    ("resource.kubernetes_deployment", "spec", Honoured),
    ("resource.kubernetes_deployment", "spec.replicas", Honoured),
    (
        "resource.kubernetes_deployment",
        "spec.selector.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.selector.match_expressions.key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.strategy.type",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.strategy.rolling_update.max_surge",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.strategy.rolling_update.max_unavailable",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.min_ready_seconds",
        Honoured,
    ),
    ("resource.kubernetes_deployment", "spec.paused", Honoured),
    (
        "resource.kubernetes_deployment",
        "spec.progress_deadline_seconds",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.revision_history_limit",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.metadata.labels",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.metadata.annotations",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.image",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.image_pull_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.command",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.args",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.working_dir",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.port.container_port",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.port.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.port.protocol",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.port.host_ip",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.value",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.value_from.secret_key_ref.key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.value_from.config_map_key_ref.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.value_from.field_ref.field_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env.value_from.resource_field_ref.divisor",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env_from.config_map_ref.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env_from.secret_ref.optional",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.env_from.prefix",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.resources.limits",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.resources.requests",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.http_get.path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.http_get.port",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.http_get.http_header.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.readiness_probe.tcp_socket.port",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.startup_probe.exec.command",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.grpc.port",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.initial_delay_seconds",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.liveness_probe.failure_threshold",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.lifecycle.pre_stop.exec.command",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.lifecycle.post_start.http_get.port",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.privileged",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.capabilities.add",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.run_as_user",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.read_only_root_filesystem",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.se_linux_options.level",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.seccomp_profile.type",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.security_context.windows_options.run_as_username",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_mount.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_mount.mount_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_mount.read_only",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_mount.sub_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_mount.mount_propagation",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.volume_device.device_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.stdin",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.tty",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.container.termination_message_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.init_container.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.init_container.image",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.node_selector",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.service_account_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.automount_service_account_token",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.host_network",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.host_pid",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.host_ipc",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.dns_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.dns_config.nameservers",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.dns_config.option.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.dns_config.searches",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.priority_class_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.runtime_class_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.restart_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.scheduler_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.termination_grace_period_seconds",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.share_process_namespace",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.enable_service_links",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.host_aliases.hostnames",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.host_aliases.ip",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.readiness_gate.condition_type",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.image_pull_secrets.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.os.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.security_context.fs_group",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.security_context.run_as_non_root",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.security_context.supplemental_groups",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.security_context.sysctl.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.security_context.sysctl.value",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.toleration.key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.toleration.operator",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.toleration.effect",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.toleration.toleration_seconds",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.topology_spread_constraint.max_skew",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.topology_spread_constraint.topology_key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.topology_spread_constraint.when_unsatisfiable",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.topology_spread_constraint.label_selector.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_term.match_expressions.key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution.weight",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution.preference.match_expressions.values",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution.topology_key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution.pod_affinity_term.label_selector.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.config_map.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.config_map.default_mode",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.config_map.items.key",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.config_map.items.path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.config_map.items.mode",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.secret.secret_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.secret.default_mode",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.empty_dir.medium",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.empty_dir.size_limit",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.host_path.path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.host_path.type",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.persistent_volume_claim.claim_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.projected.sources.config_map.name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.projected.sources.service_account_token.path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.projected.sources.downward_api.items.field_ref.field_path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.downward_api.items.path",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.csi.driver",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.csi.volume_attributes",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.nfs.server",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.ephemeral.volume_claim_template.spec.access_modes",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.ceph_fs.monitors",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.rbd.ceph_monitors",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.rbd.rbd_image",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.rbd.rbd_pool",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.rbd.rados_user",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.glusterfs.endpoints_name",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.azure_disk.data_disk_uri",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.fc.target_ww_ns",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.iscsi.iqn",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "spec.template.spec.volume.git_repo.repository",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "wait_for_rollout",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "timeouts.create",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "timeouts.update",
        Honoured,
    ),
    (
        "resource.kubernetes_deployment",
        "timeouts.delete",
        Honoured,
    ),
    (
        "resource.kubernetes_daemonset",
        "spec.selector.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_daemonset",
        "spec.strategy.rolling_update.max_unavailable",
        Honoured,
    ),
    (
        "resource.kubernetes_daemonset",
        "spec.template.spec.container.resources.limits",
        Honoured,
    ),
    (
        "resource.kubernetes_daemonset",
        "spec.template.spec.toleration.key",
        Honoured,
    ),
    (
        "resource.kubernetes_daemonset",
        "wait_for_rollout",
        Honoured,
    ),
    ("resource.kubernetes_daemonset", "timeouts.create", Honoured),
    (
        "resource.kubernetes_stateful_set",
        "spec.service_name",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.replicas",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.pod_management_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.update_strategy.rolling_update.partition",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.volume_claim_template.metadata.name",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.volume_claim_template.spec.access_modes",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.volume_claim_template.spec.resources.requests",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.volume_claim_template.spec.storage_class_name",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.persistent_volume_claim_retention_policy.when_deleted",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "spec.template.spec.container.volume_mount.mount_path",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "wait_for_rollout",
        Honoured,
    ),
    (
        "resource.kubernetes_stateful_set",
        "timeouts.create",
        Honoured,
    ),
    ("resource.kubernetes_job", "spec.backoff_limit", Honoured),
    ("resource.kubernetes_job", "spec.completions", Honoured),
    ("resource.kubernetes_job", "spec.parallelism", Honoured),
    (
        "resource.kubernetes_job",
        "spec.active_deadline_seconds",
        Honoured,
    ),
    ("resource.kubernetes_job", "spec.completion_mode", Honoured),
    (
        "resource.kubernetes_job",
        "spec.ttl_seconds_after_finished",
        Honoured,
    ),
    ("resource.kubernetes_job", "spec.manual_selector", Honoured),
    (
        "resource.kubernetes_job",
        "spec.pod_failure_policy.rule.action",
        Honoured,
    ),
    (
        "resource.kubernetes_job",
        "spec.pod_failure_policy.rule.on_exit_codes.values",
        Honoured,
    ),
    (
        "resource.kubernetes_job",
        "spec.pod_failure_policy.rule.on_pod_condition.type",
        Honoured,
    ),
    (
        "resource.kubernetes_job",
        "spec.template.spec.container.resources.limits",
        Honoured,
    ),
    (
        "resource.kubernetes_job",
        "spec.template.spec.restart_policy",
        Honoured,
    ),
    ("resource.kubernetes_job", "wait_for_completion", Honoured),
    ("resource.kubernetes_job", "timeouts.create", Honoured),
    ("resource.kubernetes_cron_job", "spec.schedule", Honoured),
    ("resource.kubernetes_cron_job", "spec.timezone", Honoured),
    (
        "resource.kubernetes_cron_job",
        "spec.concurrency_policy",
        Honoured,
    ),
    ("resource.kubernetes_cron_job", "spec.suspend", Honoured),
    (
        "resource.kubernetes_cron_job",
        "spec.starting_deadline_seconds",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "spec.successful_jobs_history_limit",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "spec.failed_jobs_history_limit",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "spec.job_template.metadata.labels",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "spec.job_template.spec.backoff_limit",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "spec.job_template.spec.template.spec.container.image",
        Honoured,
    ),
    (
        "resource.kubernetes_cron_job",
        "timeouts.create",
        Refused("\"5m\""),
    ),
    ("resource.kubernetes_service", "spec.selector", Honoured),
    ("resource.kubernetes_service", "spec.type", Honoured),
    ("resource.kubernetes_service", "spec.port.name", Honoured),
    ("resource.kubernetes_service", "spec.port.port", Honoured),
    (
        "resource.kubernetes_service",
        "spec.port.target_port",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.port.node_port",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.port.protocol",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.port.app_protocol",
        Honoured,
    ),
    ("resource.kubernetes_service", "spec.cluster_ip", Honoured),
    ("resource.kubernetes_service", "spec.cluster_ips", Honoured),
    ("resource.kubernetes_service", "spec.external_ips", Honoured),
    (
        "resource.kubernetes_service",
        "spec.external_name",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.external_traffic_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.internal_traffic_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.load_balancer_ip",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.load_balancer_source_ranges",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.load_balancer_class",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.allocate_load_balancer_node_ports",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.session_affinity",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.session_affinity_config.client_ip.timeout_seconds",
        Honoured,
    ),
    ("resource.kubernetes_service", "spec.ip_families", Honoured),
    (
        "resource.kubernetes_service",
        "spec.ip_family_policy",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.publish_not_ready_addresses",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "spec.health_check_node_port",
        Honoured,
    ),
    (
        "resource.kubernetes_service",
        "wait_for_load_balancer",
        Honoured,
    ),
    ("resource.kubernetes_service", "timeouts.create", Honoured),
    (
        "resource.kubernetes_pod_disruption_budget",
        "spec.min_available",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "spec.max_unavailable",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "spec.selector.match_labels",
        Honoured,
    ),
    (
        "resource.kubernetes_pod_disruption_budget",
        "spec.unhealthy_pod_eviction_policy",
        Honoured,
    ),
    // hashicorp/kubernetes: the data sources of the served kinds, and of any kind.
    ("data.kubernetes_config_map", "metadata", Honoured),
    ("data.kubernetes_config_map", "metadata.name", Honoured),
    ("data.kubernetes_config_map", "metadata.labels", Honoured),
    (
        "data.kubernetes_config_map",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_config_map", "metadata.uid", Honoured),
    (
        "data.kubernetes_config_map",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_config_map",
        "metadata.generation",
        Honoured,
    ),
    ("data.kubernetes_config_map", "metadata.namespace", Honoured),
    ("data.kubernetes_config_map", "data", Honoured),
    ("data.kubernetes_config_map", "binary_data", Honoured),
    ("data.kubernetes_config_map", "immutable", Honoured),
    ("data.kubernetes_config_map_v1", "metadata", Honoured),
    ("data.kubernetes_config_map_v1", "metadata.name", Honoured),
    ("data.kubernetes_config_map_v1", "metadata.labels", Honoured),
    (
        "data.kubernetes_config_map_v1",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_config_map_v1", "metadata.uid", Honoured),
    (
        "data.kubernetes_config_map_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_config_map_v1",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_config_map_v1",
        "metadata.namespace",
        Honoured,
    ),
    ("data.kubernetes_config_map_v1", "data", Honoured),
    ("data.kubernetes_config_map_v1", "binary_data", Honoured),
    ("data.kubernetes_config_map_v1", "immutable", Honoured),
    ("data.kubernetes_namespace", "metadata", Honoured),
    ("data.kubernetes_namespace", "metadata.name", Honoured),
    ("data.kubernetes_namespace", "metadata.labels", Honoured),
    (
        "data.kubernetes_namespace",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_namespace", "metadata.uid", Honoured),
    (
        "data.kubernetes_namespace",
        "metadata.resource_version",
        Honoured,
    ),
    ("data.kubernetes_namespace", "metadata.generation", Honoured),
    ("data.kubernetes_namespace_v1", "metadata", Honoured),
    ("data.kubernetes_namespace_v1", "metadata.name", Honoured),
    ("data.kubernetes_namespace_v1", "metadata.labels", Honoured),
    (
        "data.kubernetes_namespace_v1",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_namespace_v1", "metadata.uid", Honoured),
    (
        "data.kubernetes_namespace_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_namespace_v1",
        "metadata.generation",
        Honoured,
    ),
    ("data.kubernetes_secret", "metadata", Honoured),
    ("data.kubernetes_secret", "metadata.name", Honoured),
    ("data.kubernetes_secret", "metadata.labels", Honoured),
    ("data.kubernetes_secret", "metadata.annotations", Honoured),
    ("data.kubernetes_secret", "metadata.uid", Honoured),
    (
        "data.kubernetes_secret",
        "metadata.resource_version",
        Honoured,
    ),
    ("data.kubernetes_secret", "metadata.generation", Honoured),
    ("data.kubernetes_secret", "metadata.namespace", Honoured),
    ("data.kubernetes_secret", "data", Honoured),
    ("data.kubernetes_secret", "binary_data", Honoured),
    ("data.kubernetes_secret", "type", Honoured),
    ("data.kubernetes_secret", "immutable", Honoured),
    ("data.kubernetes_secret_v1", "metadata", Honoured),
    ("data.kubernetes_secret_v1", "metadata.name", Honoured),
    ("data.kubernetes_secret_v1", "metadata.labels", Honoured),
    (
        "data.kubernetes_secret_v1",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_secret_v1", "metadata.uid", Honoured),
    (
        "data.kubernetes_secret_v1",
        "metadata.resource_version",
        Honoured,
    ),
    ("data.kubernetes_secret_v1", "metadata.generation", Honoured),
    ("data.kubernetes_secret_v1", "metadata.namespace", Honoured),
    ("data.kubernetes_secret_v1", "data", Honoured),
    ("data.kubernetes_secret_v1", "binary_data", Honoured),
    ("data.kubernetes_secret_v1", "type", Honoured),
    ("data.kubernetes_secret_v1", "immutable", Honoured),
    ("data.kubernetes_service", "metadata", Honoured),
    ("data.kubernetes_service", "metadata.name", Honoured),
    ("data.kubernetes_service", "metadata.labels", Honoured),
    ("data.kubernetes_service", "metadata.annotations", Honoured),
    ("data.kubernetes_service", "metadata.uid", Honoured),
    (
        "data.kubernetes_service",
        "metadata.resource_version",
        Honoured,
    ),
    ("data.kubernetes_service", "metadata.generation", Honoured),
    ("data.kubernetes_service", "metadata.namespace", Honoured),
    ("data.kubernetes_service", "spec", Honoured),
    ("data.kubernetes_service_v1", "metadata", Honoured),
    ("data.kubernetes_service_v1", "metadata.name", Honoured),
    ("data.kubernetes_service_v1", "metadata.labels", Honoured),
    (
        "data.kubernetes_service_v1",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_service_v1", "metadata.uid", Honoured),
    (
        "data.kubernetes_service_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_service_v1",
        "metadata.generation",
        Honoured,
    ),
    ("data.kubernetes_service_v1", "metadata.namespace", Honoured),
    ("data.kubernetes_service_v1", "spec", Honoured),
    ("data.kubernetes_service", "status", Honoured),
    ("data.kubernetes_service_v1", "status", Honoured),
    ("data.kubernetes_service_account", "metadata", Honoured),
    ("data.kubernetes_service_account", "metadata.name", Honoured),
    (
        "data.kubernetes_service_account",
        "metadata.labels",
        Honoured,
    ),
    (
        "data.kubernetes_service_account",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_service_account", "metadata.uid", Honoured),
    (
        "data.kubernetes_service_account",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_service_account",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_service_account",
        "metadata.namespace",
        Honoured,
    ),
    ("data.kubernetes_service_account", "secret", Honoured),
    (
        "data.kubernetes_service_account",
        "image_pull_secret",
        Honoured,
    ),
    (
        "data.kubernetes_service_account",
        "automount_service_account_token",
        Honoured,
    ),
    ("data.kubernetes_service_account_v1", "metadata", Honoured),
    (
        "data.kubernetes_service_account_v1",
        "metadata.name",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.labels",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.annotations",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.uid",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "metadata.namespace",
        Honoured,
    ),
    ("data.kubernetes_service_account_v1", "secret", Honoured),
    (
        "data.kubernetes_service_account_v1",
        "image_pull_secret",
        Honoured,
    ),
    (
        "data.kubernetes_service_account_v1",
        "automount_service_account_token",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.name",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.labels",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.annotations",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.uid",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim",
        "metadata.namespace",
        Honoured,
    ),
    ("data.kubernetes_persistent_volume_claim", "spec", Honoured),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.name",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.labels",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.annotations",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.uid",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "metadata.namespace",
        Honoured,
    ),
    (
        "data.kubernetes_persistent_volume_claim_v1",
        "spec",
        Honoured,
    ),
    ("data.kubernetes_storage_class", "metadata", Honoured),
    ("data.kubernetes_storage_class", "metadata.name", Honoured),
    ("data.kubernetes_storage_class", "metadata.labels", Honoured),
    (
        "data.kubernetes_storage_class",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_storage_class", "metadata.uid", Honoured),
    (
        "data.kubernetes_storage_class",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class",
        "storage_provisioner",
        Honoured,
    ),
    ("data.kubernetes_storage_class", "parameters", Honoured),
    ("data.kubernetes_storage_class", "reclaim_policy", Honoured),
    (
        "data.kubernetes_storage_class",
        "volume_binding_mode",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class",
        "allow_volume_expansion",
        Honoured,
    ),
    ("data.kubernetes_storage_class", "mount_options", Honoured),
    (
        "data.kubernetes_storage_class",
        "allowed_topologies",
        Honoured,
    ),
    ("data.kubernetes_storage_class_v1", "metadata", Honoured),
    (
        "data.kubernetes_storage_class_v1",
        "metadata.name",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "metadata.labels",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "metadata.annotations",
        Honoured,
    ),
    ("data.kubernetes_storage_class_v1", "metadata.uid", Honoured),
    (
        "data.kubernetes_storage_class_v1",
        "metadata.resource_version",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "metadata.generation",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "storage_provisioner",
        Honoured,
    ),
    ("data.kubernetes_storage_class_v1", "parameters", Honoured),
    (
        "data.kubernetes_storage_class_v1",
        "reclaim_policy",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "volume_binding_mode",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "allow_volume_expansion",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "mount_options",
        Honoured,
    ),
    (
        "data.kubernetes_storage_class_v1",
        "allowed_topologies",
        Honoured,
    ),
    ("data.kubernetes_resource", "api_version", Honoured),
    ("data.kubernetes_resource", "kind", Honoured),
    ("data.kubernetes_resource", "metadata", Honoured),
    ("data.kubernetes_resource", "metadata.name", Honoured),
    ("data.kubernetes_resource", "metadata.namespace", Honoured),
    ("data.kubernetes_resource", "object", Honoured),
    ("data.kubernetes_resources", "api_version", Honoured),
    ("data.kubernetes_resources", "kind", Honoured),
    ("data.kubernetes_resources", "namespace", Honoured),
    ("data.kubernetes_resources", "label_selector", Honoured),
    ("data.kubernetes_resources", "field_selector", Honoured),
    ("data.kubernetes_resources", "limit", Honoured),
    ("data.kubernetes_resources", "objects", Honoured),
    // gavinbunney/kubectl: the provider.
    ("provider.kubectl", "host", Honoured),
    ("provider.kubectl", "username", Honoured),
    ("provider.kubectl", "password", Honoured),
    ("provider.kubectl", "insecure", Honoured),
    ("provider.kubectl", "client_certificate", Honoured),
    ("provider.kubectl", "client_key", Honoured),
    ("provider.kubectl", "cluster_ca_certificate", Honoured),
    ("provider.kubectl", "config_paths", Honoured),
    ("provider.kubectl", "config_path", Honoured),
    ("provider.kubectl", "config_context", Honoured),
    ("provider.kubectl", "config_context_auth_info", Honoured),
    ("provider.kubectl", "config_context_cluster", Honoured),
    ("provider.kubectl", "token", Honoured),
    ("provider.kubectl", "proxy_url", Honoured),
    ("provider.kubectl", "exec", Honoured),
    ("provider.kubectl", "load_config_file", Honoured),
    ("provider.kubectl", "apply_retry_count", Honoured),
    ("provider.kubectl", "tls_server_name", Honoured),
    // gavinbunney/kubectl: kubectl_manifest and the document data sources.
    ("resource.kubectl_manifest", "yaml_body", Honoured),
    ("resource.kubectl_manifest", "yaml_body_parsed", Honoured),
    ("resource.kubectl_manifest", "yaml_incluster", Honoured),
    (
        "resource.kubectl_manifest",
        "live_manifest_incluster",
        Honoured,
    ),
    ("resource.kubectl_manifest", "sensitive_fields", Honoured),
    ("resource.kubectl_manifest", "force_new", Honoured),
    ("resource.kubectl_manifest", "server_side_apply", Honoured),
    ("resource.kubectl_manifest", "field_manager", Honoured),
    ("resource.kubectl_manifest", "force_conflicts", Honoured),
    ("resource.kubectl_manifest", "apply_only", Honoured),
    (
        "resource.kubectl_manifest",
        "ignore_fields",
        Refused("[\"metadata.annotations\"]"),
    ),
    ("resource.kubectl_manifest", "override_namespace", Honoured),
    ("resource.kubectl_manifest", "validate_schema", Honoured),
    ("resource.kubectl_manifest", "wait", Honoured),
    ("resource.kubectl_manifest", "wait_for_rollout", Honoured),
    ("resource.kubectl_manifest", "wait_for", Honoured),
    ("resource.kubectl_manifest", "wait_for.field", Honoured),
    ("resource.kubectl_manifest", "wait_for.field.key", Honoured),
    (
        "resource.kubectl_manifest",
        "wait_for.field.value",
        Honoured,
    ),
    (
        "resource.kubectl_manifest",
        "wait_for.field.value_type",
        Honoured,
    ),
    ("resource.kubectl_manifest", "wait_for.condition", Honoured),
    (
        "resource.kubectl_manifest",
        "wait_for.condition.type",
        Honoured,
    ),
    (
        "resource.kubectl_manifest",
        "wait_for.condition.status",
        Honoured,
    ),
    ("resource.kubectl_manifest", "delete_cascade", Honoured),
    ("resource.kubectl_manifest", "api_version", Honoured),
    ("resource.kubectl_manifest", "kind", Honoured),
    ("resource.kubectl_manifest", "name", Honoured),
    ("resource.kubectl_manifest", "namespace", Honoured),
    ("resource.kubectl_manifest", "uid", Honoured),
    ("resource.kubectl_manifest", "live_uid", Honoured),
    ("resource.kubectl_manifest", "timeouts", Honoured),
    ("resource.kubectl_manifest", "timeouts.create", Honoured),
    ("data.kubectl_file_documents", "content", Honoured),
    ("data.kubectl_file_documents", "documents", Honoured),
    ("data.kubectl_file_documents", "manifests", Honoured),
    ("data.kubectl_path_documents", "pattern", Honoured),
    ("data.kubectl_path_documents", "vars", Honoured),
    ("data.kubectl_path_documents", "sensitive_vars", Honoured),
    ("data.kubectl_path_documents", "disable_template", Honoured),
    ("data.kubectl_path_documents", "documents", Honoured),
    ("data.kubectl_path_documents", "manifests", Honoured),
];

/// Whether `schema` has the argument or block at `path` (blocks by name, dot-separated).
fn schema_has(schema: &gpustack_protocol::Schema, path: &str) -> bool {
    let mut schema = schema;
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        let last = steps.peek().is_none();
        if last && schema.attributes.contains_key(step) {
            return true;
        }
        match schema.blocks.get(step) {
            Some(nested) if last => {
                return nested.block.attributes.len() + nested.block.blocks.len() > 0;
            }
            Some(nested) => schema = &nested.block,
            None => return false,
        }
    }
    false
}

/// The HCL that sets `path` to `value` (blocks as blocks).
fn setting(schema: &gpustack_protocol::Schema, path: &str, value: &str) -> String {
    match path.split_once('.') {
        Some((block, rest)) if schema.blocks.contains_key(block) => format!(
            "{block} {{\n{}\n}}\n",
            setting(&schema.blocks[block].block, rest, value)
        ),
        _ => format!("{path} = {value}\n"),
    }
}

/// Every argument of the three providers' schemas is in gpustack's schema; each refused one is
/// refused by name, located, with its reason; the typed resources have their `_v1` twins.
#[test]
fn every_argument_of_the_three_providers_is_honoured_or_refused_by_name() {
    let registry = gpustack::registry();
    let schema_of = |scope: &str| -> gpustack_protocol::Schema {
        let (kind, name) = scope.split_once('.').unwrap();
        let provider = name.split('_').next().unwrap();
        assert!(registry.has_provider(provider), "no provider {provider}");
        if kind != "provider" {
            assert_eq!(registry.owner_of(name), Some(provider), "{scope}");
        }
        match kind {
            "provider" => registry.config_schema(provider).cloned(),
            "resource" => registry.resource_schema(name).cloned(),
            "data" => registry.data_source_schema(name).cloned(),
            _ => unreachable!(),
        }
        .unwrap_or_else(|| panic!("{scope} is not served"))
    };
    let mut missing = Vec::new();
    for (scope, path, _) in SCHEMA_TABLE {
        if !schema_has(&schema_of(scope), path) {
            missing.push(format!("{scope}: {path}"));
        }
        if let Some(typed) = scope.strip_prefix("resource.kubernetes_")
            && ![
                "manifest",
                "labels",
                "annotations",
                "node_taint",
                "config_map_v1_data",
                "secret_v1_data",
                "env",
                "endpoint_slice_v1",
            ]
            .contains(&typed)
        {
            // Terraform's one twin not named by the rule.
            let twin = if typed == "daemonset" {
                "resource.kubernetes_daemon_set_v1".to_owned()
            } else {
                format!("{scope}_v1")
            };
            if !schema_has(&schema_of(&twin), path) {
                missing.push(format!("{twin}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in gpustack's schemas:\n{}",
        missing.join("\n")
    );

    // The refused arguments, one stack per type: each refused at its own line, by name.
    let mut scopes: Vec<&str> = SCHEMA_TABLE.iter().map(|(s, _, _)| *s).collect();
    scopes.dedup();
    for scope in scopes {
        let refused: Vec<(&str, &str)> = SCHEMA_TABLE
            .iter()
            .filter(|(s, _, _)| *s == scope)
            .filter_map(|(_, path, verdict)| match verdict {
                Refused(value) => Some((*path, *value)),
                Honoured => None,
            })
            .collect();
        if refused.is_empty() {
            continue;
        }
        let schema = schema_of(scope);
        let (kind, name) = scope.split_once('.').unwrap();
        // One stack per refused argument: two of them may sit in one block of at most one.
        for (path, value) in &refused {
            let mut body = match name {
                "helm_release" | "helm_template" => "name = \"r\"\nchart = \"c\"\n".to_owned(),
                "kubectl_manifest" => {
                    "yaml_body = \"apiVersion: v1\\nkind: Namespace\\nmetadata:\\n  name: a\\n\"\n"
                        .to_owned()
                }
                _ => String::new(),
            };
            body.push_str(&setting(&schema, path, value));
            if kind == "resource"
                && name.starts_with("kubernetes_")
                && !path.starts_with("metadata.")
            {
                body.push_str("metadata {\n  name = \"a\"\n}\n");
            }
            let header = match kind {
                "provider" => format!("provider \"{name}\""),
                "data" => format!("data \"{name}\" \"x\""),
                _ => format!("resource \"{name}\" \"x\""),
            };
            let dir = tempfile::tempdir().unwrap();
            write(
                dir.path(),
                &[("main.tf", &format!("{header} {{\n{body}}}\n"))],
            );
            let (code, out, err) = run(dir.path(), &["validate"]);
            let text = format!("{out}{err}");
            let named = [
                path,
                path.rsplit('.').next().unwrap(),
                path.split('.').next().unwrap(),
            ]
            .iter()
            .any(|name| text.contains(&format!("does not honour {name}")));
            assert!(
                code == 1 && named,
                "{scope}: {path} is not refused by name:\n{text}"
            );
            assert!(
                text.contains("main.tf:"),
                "{scope}: {path} is not located:\n{text}"
            );
        }
    }
}

/// The workload kinds as public Terraform GPU stacks write them: a DaemonSet of a GPU agent,
/// a StatefulSet with claim templates, a Job and a CronJob on GPUs, a PodDisruptionBudget
/// and a LoadBalancer Service, in the provider's block names, validate as they are.
const WORKLOADS_TF: &str = r#"resource "kubernetes_daemonset" "dcgm" {
  metadata {
    name      = "dcgm-exporter"
    namespace = "gpu"
  }
  spec {
    selector {
      match_labels = { app = "dcgm" }
    }
    strategy {
      type = "RollingUpdate"
      rolling_update {
        max_unavailable = "1"
      }
    }
    template {
      metadata {
        labels = { app = "dcgm" }
      }
      spec {
        node_selector = { "nvidia.com/gpu.present" = "true" }
        toleration {
          key      = "nvidia.com/gpu"
          operator = "Exists"
          effect   = "NoSchedule"
        }
        host_network = true
        container {
          name  = "exporter"
          image = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04"
          security_context {
            run_as_non_root = false
            capabilities {
              add = ["SYS_ADMIN"]
            }
          }
          env {
            name = "NODE_NAME"
            value_from {
              field_ref {
                field_path = "spec.nodeName"
              }
            }
          }
          volume_mount {
            name       = "pod-resources"
            mount_path = "/var/lib/kubelet/pod-resources"
            read_only  = true
          }
        }
        volume {
          name = "pod-resources"
          host_path {
            path = "/var/lib/kubelet/pod-resources"
          }
        }
      }
    }
  }
  wait_for_rollout = false
}

resource "kubernetes_stateful_set_v1" "models" {
  metadata {
    name      = "models"
    namespace = "gpu"
  }
  spec {
    service_name = "models"
    replicas     = 1
    selector {
      match_labels = { app = "models" }
    }
    template {
      metadata {
        labels = { app = "models" }
      }
      spec {
        affinity {
          node_affinity {
            required_during_scheduling_ignored_during_execution {
              node_selector_term {
                match_expressions {
                  key      = "nvidia.com/gpu.product"
                  operator = "In"
                  values   = ["NVIDIA-A100-SXM4-80GB"]
                }
              }
            }
          }
        }
        container {
          name  = "server"
          image = "ghcr.io/huggingface/text-generation-inference:2.0"
          resources {
            limits = { "nvidia.com/gpu" = 2 }
          }
          readiness_probe {
            tcp_socket {
              port = 80
            }
          }
          volume_mount {
            name       = "data"
            mount_path = "/data"
          }
        }
        dns_config {
          option {
            name  = "ndots"
            value = "2"
          }
        }
      }
    }
    volume_claim_template {
      metadata {
        name = "data"
      }
      spec {
        access_modes = ["ReadWriteOnce"]
        resources {
          requests = { storage = "100Gi" }
        }
      }
    }
  }
  timeouts {
    create = "20m"
  }
}

resource "kubernetes_job_v1" "burn" {
  metadata {
    name      = "gpu-burn"
    namespace = "gpu"
  }
  spec {
    backoff_limit = 0
    template {
      metadata {}
      spec {
        restart_policy = "Never"
        container {
          name    = "burn"
          image   = "oguzpastirmaci/gpu-burn"
          command = ["/app/gpu_burn", "60"]
          resources {
            limits = { "nvidia.com/gpu" = 1 }
          }
        }
      }
    }
    pod_failure_policy {
      rule {
        action = "FailJob"
        on_exit_codes {
          operator = "In"
          values   = [42]
        }
      }
    }
  }
  wait_for_completion = false
}

resource "kubernetes_cron_job_v1" "smoke" {
  metadata {
    name      = "smoke"
    namespace = "gpu"
  }
  spec {
    schedule = "0 * * * *"
    timezone = "Etc/UTC"
    job_template {
      metadata {}
      spec {
        template {
          metadata {}
          spec {
            restart_policy = "OnFailure"
            container {
              name  = "smi"
              image = "nvidia/cuda:12.4.0-base-ubuntu22.04"
              args  = ["nvidia-smi"]
            }
            volume {
              name = "scripts"
              config_map {
                name         = "scripts"
                default_mode = "0755"
                items {
                  key  = "run.sh"
                  path = "run.sh"
                }
              }
            }
          }
        }
      }
    }
  }
}

resource "kubernetes_pod_disruption_budget_v1" "models" {
  metadata {
    name      = "models"
    namespace = "gpu"
  }
  spec {
    max_unavailable = "1"
    selector {
      match_labels = { app = "models" }
    }
  }
}

resource "kubernetes_service_v1" "models" {
  metadata {
    name      = "models"
    namespace = "gpu"
  }
  spec {
    type     = "LoadBalancer"
    selector = { app = "models" }
    session_affinity_config {
      client_ip {
        timeout_seconds = 300
      }
    }
    port {
      port        = 80
      target_port = "http"
    }
  }
  wait_for_load_balancer = false
}
"#;

/// The workload kinds validate as Terraform writes them; a block named as Kubernetes names it
/// (`containers`) is refused, located, by name.
#[test]
fn the_workload_kinds_validate_as_terraform_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("main.tf", WORKLOADS_TF)]);
    let (valid, diagnostics) = validate(dir.path());
    assert!(valid, "{diagnostics:?}");

    let plural = WORKLOADS_TF.replacen(
        "        container {\n          name  = \"exporter\"",
        "        containers {\n          name  = \"exporter\"",
        1,
    );
    write(dir.path(), &[("main.tf", &plural)]);
    let (code, out, err) = run(dir.path(), &["validate"]);
    let text = format!("{out}{err}");
    let line = plural
        .lines()
        .position(|l| l.contains("containers {"))
        .unwrap()
        + 1;
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("containers") && text.contains(&format!("main.tf:{line}:")),
        "not refused at line {line}:\n{text}"
    );
}

/// `kubernetes_node_taint` as Terraform stacks write it validates; an effect Kubernetes does not
/// have and a key given twice are refused, each at its own line.
#[test]
fn a_node_taint_validates_as_terraform_writes_it_and_a_bad_effect_or_a_twice_given_key_is_located()
{
    let dir = tempfile::tempdir().unwrap();
    let stack = r#"resource "kubernetes_node_taint" "gpu" {
  metadata {
    name = "gpu-node-1"
  }
  field_manager = "gpu-taints"
  force         = true
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NoSchedule"
  }
  taint {
    key    = "dedicated"
    value  = ""
    effect = "NoExecute"
  }
}

output "id" {
  value = kubernetes_node_taint.gpu.id
}
"#;
    write(dir.path(), &[("main.tf", stack)]);
    let (valid, diagnostics) = validate(dir.path());
    assert!(valid, "{diagnostics:?}");

    for (broken, line, named) in [
        (
            stack.replacen("\"NoExecute\"", "\"NoExecut\"", 1),
            15,
            "\"NoExecut\" is not one of",
        ),
        (
            stack.replacen("\"dedicated\"", "\"nvidia.com/gpu\"", 1),
            13,
            "\"nvidia.com/gpu\" is given twice",
        ),
    ] {
        write(dir.path(), &[("main.tf", &broken)]);
        let (code, out, err) = run(dir.path(), &["validate"]);
        let text = format!("{out}{err}");
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains(named) && text.contains(&format!("main.tf:{line}:")),
            "not refused at line {line}:\n{text}"
        );
    }
}

/// The kubernetes provider's data sources as Terraform stacks read them validate; a data
/// source of a kind Terraform has none for is refused by name with what reads it instead.
#[test]
fn the_kubernetes_data_sources_validate_and_an_unserved_one_says_what_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let stack = r#"data "kubernetes_namespace_v1" "gpu" {
  metadata {
    name = "gpu-operator"
  }
}

data "kubernetes_config_map_v1" "sharing" {
  metadata {
    name      = "time-slicing-config"
    namespace = data.kubernetes_namespace_v1.gpu.metadata[0].name
  }
}

data "kubernetes_secret" "token" {
  metadata {
    name      = "token"
    namespace = "gpu-operator"
  }
}

data "kubernetes_service_v1" "dcgm" {
  metadata {
    name      = "nvidia-dcgm-exporter"
    namespace = "gpu-operator"
  }
}

data "kubernetes_resource" "policy" {
  api_version = "nvidia.com/v1"
  kind        = "ClusterPolicy"
  metadata {
    name = "cluster-policy"
  }
}

data "kubernetes_resources" "gpu_pods" {
  api_version    = "v1"
  kind           = "Pod"
  namespace      = "gpu-operator"
  label_selector = "app=nvidia-device-plugin-daemonset"
  field_selector = "status.phase=Running"
  limit          = 10
}

output "sharing" {
  value = data.kubernetes_config_map_v1.sharing.data["any"]
}

output "port" {
  value = data.kubernetes_service_v1.dcgm.spec[0].port[0].port
}

output "pods" {
  value = length(data.kubernetes_resources.gpu_pods.objects)
}

output "mig" {
  value = data.kubernetes_resource.policy.object.spec.mig.strategy
}
"#;
    write(dir.path(), &[("main.tf", stack)]);
    let (valid, diagnostics) = validate(dir.path());
    assert!(valid, "{diagnostics:?}");

    write(
        dir.path(),
        &[(
            "main.tf",
            "data \"kubernetes_deployment_v1\" \"d\" {\n  metadata {\n    name = \"d\"\n  }\n}\n",
        )],
    );
    let (code, out, err) = run(dir.path(), &["validate"]);
    let text = format!("{out}{err}");
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("kubernetes_deployment_v1 is a data source")
            && text.contains("data \"kubernetes_resource\"")
            && text.contains("main.tf:1:"),
        "{text}"
    );
}

#[test]
fn import_terraform_refuses_a_file_that_is_not_a_version_4_state() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            (
                "main.tf",
                "resource \"test_thing\" \"a\" {\n  name = \"a\"\n}\n",
            ),
            ("v3.json", r#"{"version": 3, "modules": []}"#),
            ("plan.txt", "Plan: 1 to add, 0 to change, 0 to destroy.\n"),
            ("listed.json", r#"{"version": 4, "resources": {"a": 1}}"#),
        ],
    );
    for (file, says) in [
        (
            "v3.json",
            "v3.json is a Terraform state of format version 3 (Terraform 0.11 or older)",
        ),
        (
            "plan.txt",
            "plan.txt is not a JSON document (terraform state pull prints a state)",
        ),
        (
            "listed.json",
            "listed.json: the field resources is map, expected a sequence",
        ),
        ("absent.json", "absent.json: "),
    ] {
        let (code, out, err) = run(dir.path(), &["state", "import-terraform", file]);
        assert_eq!(code, 1, "{file}: {out}{err}");
        assert!(err.contains(says), "{file}: {err}");
        assert!(
            !dir.path().join(".gpustack/state.json").exists(),
            "{file}: a state was written"
        );
    }
}

/// The kubernetes provider's functions, as Terraform 1.8 calls them: reachable through the
/// module's `required_providers` entry, their values in the plan like any expression's; a
/// module that does not require the provider is refused at the call, as OpenTofu refuses it.
#[test]
fn the_kubernetes_providers_functions_evaluate_where_the_module_requires_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let manifests = r#"
locals {
  sharing = provider::kubernetes::manifest_decode_multi(<<-YAML
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: time-slicing-config
    data:
      any: |
        version: v1
        sharing:
          timeSlicing:
            resources:
            - name: nvidia.com/gpu
              replicas: 4
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: gpu-operator
  YAML
  )
}

output "names" {
  value = [for m in local.sharing : m.metadata.name]
}

output "yaml" {
  value = provider::kubernetes::manifest_encode(local.sharing[1])
}

output "one" {
  value = provider::kubernetes::manifest_decode(provider::kubernetes::manifest_encode(local.sharing[0])).data.any
}
"#;
    write(
        d,
        &[
            (
                "versions.tf",
                "terraform {\n  required_providers {\n    kubernetes = {\n      source = \"hashicorp/kubernetes\"\n    }\n  }\n}\n",
            ),
            ("main.tf", manifests),
        ],
    );
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, outputs, err) = run(d, &["output", "--json"]);
    assert_eq!(code, 0, "{err}");
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(
        outputs["names"]["value"],
        serde_json::json!(["time-slicing-config", "gpu-operator"])
    );
    assert_eq!(
        outputs["yaml"]["value"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n"
    );
    assert!(
        outputs["one"]["value"]
            .as_str()
            .is_some_and(|t| t.contains("replicas: 4")),
        "{outputs}"
    );

    // Without the entry: OpenTofu's error, at the call.
    std::fs::remove_file(d.join("versions.tf")).unwrap();
    let (code, out, err) = run(d, &["validate"]);
    let text = format!("{out}{err}");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("Unknown function provider"), "{text}");
    assert!(
        text.contains(
            "Provider \"kubernetes\" does not exist within the required_providers of this module"
        ),
        "{text}"
    );
    assert!(text.contains("main.tf:3"), "{text}");
}

/// Every resource type and data source of the kubernetes (v2), helm, kubectl and utility
/// providers as their registry documents list them.
const PROVIDER_TYPES: &[(&str, &[&str], &[&str])] = &[
    (
        "hashicorp/kubernetes",
        gpustack_protocol::terraform::KUBERNETES_RESOURCES,
        gpustack_protocol::terraform::KUBERNETES_DATA_SOURCES,
    ),
    ("hashicorp/helm", &["helm_release"], &["helm_template"]),
    (
        "gavinbunney/kubectl",
        &["kubectl_manifest"],
        &[
            "kubectl_file_documents",
            "kubectl_filename_list",
            "kubectl_path_documents",
            "kubectl_server_version",
        ],
    ),
    (
        "hashicorp/random",
        &[
            "random_bytes",
            "random_id",
            "random_integer",
            "random_password",
            "random_pet",
            "random_shuffle",
            "random_string",
            "random_uuid",
            "random_uuid4",
            "random_uuid7",
        ],
        &[],
    ),
    ("hashicorp/null", &["null_resource"], &["null_data_source"]),
    (
        "hashicorp/time",
        &["time_offset", "time_rotating", "time_sleep", "time_static"],
        &[],
    ),
    ("hashicorp/http", &[], &["http"]),
    (
        "hashicorp/tls",
        &[
            "tls_cert_request",
            "tls_locally_signed_cert",
            "tls_private_key",
            "tls_self_signed_cert",
        ],
        &["tls_certificate", "tls_public_key"],
    ),
    ("hashicorp/external", &[], &["external"]),
    ("hashicorp/archive", &["archive_file"], &["archive_file"]),
    (
        "hashicorp/cloudinit",
        &["cloudinit_config"],
        &["cloudinit_config"],
    ),
    ("hashicorp/local", &["local_file"], &["local_file"]),
];

/// Every type of those providers is served, or answered at its block, by name, with what to
/// write instead.
#[test]
fn every_type_of_the_served_providers_is_served_or_refused_by_name() {
    let registry = gpustack::registry();
    let mut unserved = Vec::new();
    for (source, resources, data) in PROVIDER_TYPES {
        for (kind, names) in [("resource", *resources), ("data", *data)] {
            for name in names {
                let served = match kind {
                    "resource" => registry.resource_schema(name).is_some(),
                    _ => registry.data_source_schema(name).is_some(),
                };
                if !served {
                    unserved.push((*source, kind, *name));
                }
            }
        }
    }
    // The utility providers are served whole.
    let utility: Vec<_> = unserved
        .iter()
        .filter(|(source, _, _)| !["hashicorp/kubernetes", "gavinbunney/kubectl"].contains(source))
        .collect();
    assert!(utility.is_empty(), "not served: {utility:?}");
    let dir = tempfile::tempdir().unwrap();
    let body: String = unserved
        .iter()
        .map(|(_, kind, name)| format!("{kind} \"{name}\" \"x\" {{}}\n"))
        .collect();
    write(dir.path(), &[("main.tf", &body)]);
    let (code, out, err) = run(dir.path(), &["validate", "-no-color"]);
    let text = format!("{out}{err}")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(code, 1, "{text}");
    for (source, kind, name) in &unserved {
        let what = if *kind == "data" {
            "data source"
        } else {
            "resource type"
        };
        // The renderer may break a line after a slash.
        let squash = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        // Not served yet, or its API gone from Kubernetes (with the release that removed it).
        let not_yet = squash(&format!(
            "{name} is a {what} of Terraform's {source} provider that gpustack does not serve yet:"
        ));
        let removed = squash(&format!("{name} of Terraform's {source} provider writes"));
        let squashed = squash(&text);
        let gone = squashed.contains(&removed) && squashed.contains("whichKubernetesremovedin");
        assert!(
            squashed.contains(&not_yet) || gone,
            "{kind} {name} is not refused by name:\n{text}"
        );
        // The kubernetes and kubectl providers are complete but for the types whose API
        // Kubernetes removed and v3's one resource of the plugin framework, whose schema
        // nests attributes where every other type has blocks (answered "not served yet",
        // with the kubernetes_manifest to write instead).
        let framework_only = *name == "kubernetes_validating_admission_policy_v1";
        assert!(
            gone || framework_only
                || !["hashicorp/kubernetes", "gavinbunney/kubectl"].contains(source),
            "{kind} {name} of {source} is not served yet"
        );
    }
}

/// An `ephemeral` block (Terraform 1.10) is refused by name, at its line, with what to write.
#[test]
fn an_ephemeral_block_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[(
            "main.tf",
            "ephemeral \"random_password\" \"db\" {\n  length = 16\n}\n",
        )],
    );
    let (code, out, err) = run(dir.path(), &["validate", "-no-color"]);
    let text = format!("{out}{err}");
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("Ephemeral resources are not served yet") && text.contains("main.tf:1"),
        "{text}"
    );
}

/// A type no provider serves stops plan as it stops validate: never a resource the plan
/// passes over with "No changes", nor an output that quietly goes with it.
#[test]
fn plan_refuses_a_type_no_provider_serves_as_validate_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        &[(
            "main.tf",
            "resource \"kubernetes_manifestt\" \"x\" {\n  manifest = {}\n}\n\nresource \"terraform_data\" \"y\" {\n  input = 1\n}\n\noutput \"o\" {\n  value = kubernetes_manifestt.x.manifest\n}\n",
        )],
    );
    for command in ["validate", "plan"] {
        let (code, out, err) = run(d, &[command]);
        assert_eq!(code, 1, "{command}: {out}{err}");
        assert!(
            err.contains("Unsupported resource type") && err.contains("main.tf:1:10"),
            "{command}: {err}"
        );
        assert!(
            err.contains("Did you mean") && err.contains("\"kubernetes_manifest\"?"),
            "{command}: {err}"
        );
    }
}
