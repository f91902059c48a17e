//! `gpustack review` of a plan OpenTofu itself made: the pinned OpenTofu plans a stack whose
//! GPU pools and releases are written as `terraform_data` (their attributes as its `input`,
//! since no cloud provider runs offline), and the JSON plan `tofu show -json` prints, with
//! each such change given back its real type, is reviewed: OpenTofu's own nesting of blocks,
//! unknown values and sensitive marks, as a real plan has them.

use gpustack_tests::cluster::opentofu;
use serde_json::Value;
use std::process::Command;

const STACK: &str = r#"
variable "operator_values" {
  type      = string
  sensitive = true
  default   = "devicePlugin:\n  config:\n    name: s3cr3t-config\n"
}

resource "terraform_data" "suffix" {
  input = "x"
}

resource "terraform_data" "google_container_node_pool__a100" {
  input = {
    name           = "a100"
    cluster        = "ml"
    location       = "us-central1"
    node_locations = ["us-central1-c"]
    node_count     = 2
    node_config = [{
      machine_type = "a2-ultragpu-1g"
      labels       = { team = "research" }
      guest_accelerator = [{
        type               = "nvidia-a100-80gb"
        count              = 1
        gpu_partition_size = "1g.10gb"
        gpu_sharing_config = [{
          gpu_sharing_strategy       = "TIME_SHARING"
          max_shared_clients_per_gpu = 2
        }]
      }]
    }]
  }
}

resource "terraform_data" "google_container_node_pool__l4" {
  input = {
    name     = "l4-${terraform_data.suffix.output}"
    cluster  = "ml"
    location = "us-central1-a"
    autoscaling = [{ min_node_count = 0, max_node_count = 3 }]
    node_config = [{
      machine_type      = "g2-standard-8"
      guest_accelerator = [{ type = "nvidia-l4", count = 1, gpu_partition_size = "1g.5gb" }]
    }]
  }
}

resource "terraform_data" "helm_release__gpu_operator" {
  input = {
    name       = "gpu-operator"
    namespace  = "gpu-operator"
    repository = "https://helm.ngc.nvidia.com/nvidia"
    chart      = "gpu-operator"
    values     = [var.operator_values]
  }
}
"#;

/// Each `terraform_data` change named `TYPE__NAME` as the change of a `TYPE.NAME` whose
/// values are the `input`'s, marks included.
fn with_real_types(plan: &mut Value) {
    for change in plan["resource_changes"].as_array_mut().unwrap() {
        let name = change["name"].as_str().unwrap().to_owned();
        let Some((type_name, real_name)) = name.split_once("__") else {
            continue;
        };
        change["type"] = type_name.into();
        change["name"] = real_name.into();
        change["address"] = format!("{type_name}.{real_name}").into();
        let body = &mut change["change"];
        for side in [
            "before",
            "after",
            "after_unknown",
            "before_sensitive",
            "after_sensitive",
        ] {
            let input = body[side].get("input").cloned();
            body[side] = match (input, &body[side]) {
                (Some(input), _) => input,
                (None, Value::Object(_)) => Value::Object(Default::default()),
                (None, other) => other.clone(),
            };
        }
    }
}

#[test]
fn a_plan_opentofu_made_is_reviewed_with_its_unknown_and_sensitive_values() {
    let tofu = opentofu();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.tf"), STACK).unwrap();
    let rc = dir.path().join("tofurc");
    std::fs::write(&rc, "").unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(&tofu)
            .args(args)
            .current_dir(dir.path())
            .env("TF_CLI_CONFIG_FILE", &rc)
            .env("TF_IN_AUTOMATION", "1")
            .output()
            .expect("run tofu");
        assert!(
            output.status.success(),
            "tofu {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    run(&["init", "-no-color", "-input=false"]);
    run(&["plan", "-no-color", "-input=false", "-out=tfplan"]);
    let mut plan: Value = serde_json::from_slice(&run(&["show", "-json", "tfplan"])).unwrap();
    assert!(
        plan["format_version"].as_str().unwrap().starts_with("1."),
        "{plan}"
    );
    with_real_types(&mut plan);
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();

    let output = gpustack_tests::gpustack(
        dir.path(),
        &["review", "plan.json", "--json", "--config", "/nonexistent"],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("s3cr3t"), "{text}");
    let review: Value = serde_json::from_str(&text).expect("JSON");
    let line = |address: &str| {
        review["gpu_capacity"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["address"] == address)
            .cloned()
            .unwrap_or_else(|| panic!("no capacity line of {address}: {review:#}"))
    };
    let a100 = line("google_container_node_pool.a100");
    assert_eq!(a100["after"], 28.0, "{a100}");
    // The L4 pool's name is unknown at plan (OpenTofu's after_unknown), and L4s have no MIG.
    let l4 = line("google_container_node_pool.l4");
    assert!(
        l4["scope"]
            .as_str()
            .unwrap()
            .contains("(name known after apply)"),
        "{l4}"
    );
    // The operator's values are sensitive: read for the checks, never printed. Its device
    // plugin on GKE pools that run GKE's own is refused, as is MIG on L4s.
    let mut refused: Vec<(String, String)> = review["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            let detail = d["detail"].as_str().unwrap();
            let at = detail.rsplit_once("(at ").map_or("", |(_, at)| at);
            (
                d["summary"].as_str().unwrap().to_owned(),
                at.trim_end_matches(')').to_owned(),
            )
        })
        .collect();
    refused.sort();
    let expected: Vec<(String, String)> = [
        (
            "MIG on a GPU without MIG",
            "google_container_node_pool.l4.node_config[0].guest_accelerator[0].gpu_partition_size",
        ),
        (
            "Two device plugins on one pool",
            "google_container_node_pool.a100.node_config[0].guest_accelerator[0]",
        ),
        (
            "Two device plugins on one pool",
            "google_container_node_pool.l4.node_config[0].guest_accelerator[0]",
        ),
    ]
    .map(|(s, a)| (s.to_owned(), a.to_owned()))
    .into();
    assert_eq!(refused, expected, "{review:#}");
    assert_eq!(output.status.code(), Some(1));
}
