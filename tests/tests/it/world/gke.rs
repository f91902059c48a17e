//! GKE through the official google-cloud-container-v1 client and Application Default
//! Credentials, against the GKE fake: examples/gke-a100-mig (an A100 pool split into 1g.5gb
//! MIG partitions) created under injected faults without a duplicate, relabelled in place,
//! resized, drift when scaled outside, and deleted; examples/gke-nap-gpu's node
//! auto-provisioning limits for T4, V100 and A100 set, read back, and turned off.

use gpustack_tests::aks::Fault;
use gpustack_tests::gke::{GkeFake, REFRESH_TOKEN};
use gpustack_tests::{repo_root, stderr, stdout};
use hyper::Method;
use serde_json::json;

const CLUSTER: &str = "projects/ml-project/locations/us-central1-c/clusters/ml-gke";

struct Stack<'f> {
    dir: tempfile::TempDir,
    fake: &'f GkeFake,
}

impl Stack<'_> {
    fn example<'a>(name: &str, fake: &'a GkeFake) -> Stack<'a> {
        let dir = tempfile::tempdir().unwrap();
        gpustack_tests::copy_dir(&repo_root().join("examples").join(name), dir.path());
        Stack { dir, fake }
    }

    fn command(&self, args: &[&str], vars: &[&str]) -> std::process::Command {
        let endpoint = format!("gcp_endpoint={}", self.fake.endpoint);
        let mut all: Vec<&str> = args.to_vec();
        for v in [
            endpoint.as_str(),
            "project=ml-project",
            "cluster=ml-gke",
            "location=us-central1-c",
        ]
        .into_iter()
        .chain(vars.iter().copied())
        {
            all.extend(["--var", v]);
        }
        let env = self.fake.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        gpustack_tests::gpustack_command(self.dir.path(), &all, &env)
    }

    fn run(&self, args: &[&str], vars: &[&str]) -> (i32, String, String) {
        let output = self.command(args, vars).output().unwrap();
        let (out, err) = (stdout(&output), stderr(&output));
        for secret in [REFRESH_TOKEN, "fake-gke-access-token"] {
            assert!(
                !out.contains(secret) && !err.contains(secret),
                "a credential reached the output:\n{out}{err}"
            );
        }
        (output.status.code().unwrap_or(-1), out, err)
    }
}

#[test]
fn gke_a100_mig_pool_lifecycle() {
    let fake = GkeFake::start(&[CLUSTER]);
    let stack = Stack::example("gke-a100-mig", &fake);
    let pool = format!("{CLUSTER}/nodePools/a100-mig");

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    super::assert_capacity_snapshot("gke-a100-mig-new-pool", &out, "nodepool");

    // Throttled, failed, dropped, and answered-but-lost: one pool, ours.
    fake.inject(
        Method::POST,
        &[
            Fault::Throttle(0),
            Fault::ServerError,
            Fault::Drop,
            Fault::LoseAnswer,
        ],
    );
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let creates = fake
        .log()
        .iter()
        .filter(|l| l.starts_with("POST ") && l.ends_with("/nodePools"))
        .count();
    assert_eq!(creates, 5, "{:?}", fake.log());
    assert_eq!(fake.pools(), std::slice::from_ref(&pool));
    let live = fake.pool(&pool).unwrap();
    assert_eq!(live["status"], "RUNNING");
    let accelerator = &live["config"]["accelerators"][0];
    assert_eq!(accelerator["acceleratorType"], "nvidia-tesla-a100");
    assert_eq!(accelerator["gpuPartitionSize"], "1g.5gb");
    assert_eq!(
        accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"],
        "LATEST"
    );
    assert_eq!(live["config"]["spot"], true);
    assert_eq!(live["config"]["taints"][0]["effect"], "NO_SCHEDULE");
    assert_eq!(live["autoscaling"]["maxNodeCount"], 4);

    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");

    // Scaled with gcloud, which resizes the pool's instance group (GKE never changes
    // initialNodeCount): drift names the field; the next apply sets it back.
    let created_with = fake.pool(&pool).unwrap()["initialNodeCount"].clone();
    fake.resize_outside(&pool, 3);
    let (code, out, err) = stack.run(&["drift"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("gke_nodepool.a100_mig has changed"), "{out}");
    assert!(out.contains("node_count"), "{out}");
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &["node_count=2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(fake.group_sizes(&pool), vec![2]);
    assert_eq!(fake.pool(&pool).unwrap()["initialNodeCount"], created_with);
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &["node_count=2"]);
    assert_eq!(
        code, 0,
        "after the resize, the next plan is empty:\n{out}{err}"
    );

    // A machine change replaces the pool: its line keeps the old machines.
    let main = stack.dir.path().join("main.hcl");
    let text = std::fs::read_to_string(&main)
        .unwrap()
        .replace(r#""a2-highgpu-1g""#, r#""a2-highgpu-2g""#)
        .replace("count              = 1", "count              = 2");
    std::fs::write(&main, text).unwrap();
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &["node_count=2"]);
    assert_eq!(code, 2, "{out}{err}");
    super::assert_capacity_snapshot("gke-a100-mig-machine-changed", &out, "nodepool");

    let (code, out, err) = stack.run(&["destroy", "--auto-approve"], &["node_count=2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(fake.pools().is_empty());
}

/// A limit for an accelerator type the built-in table lacks: Compute Engine says whether the
/// auto-provisioning zones offer it; a type nobody knows is a warning at its line.
#[test]
fn gke_node_autoprovisioning_limits_for_types_the_table_lacks() {
    let fake = GkeFake::start(&[CLUSTER]);
    let stack = Stack::example("gke-nap-gpu", &fake);
    let main = stack.dir.path().join("main.hcl");
    let text = std::fs::read_to_string(&main).unwrap().replace(
        r#"    { resource_type = "nvidia-tesla-a100", maximum = var.max_gpus["a100"] },"#,
        r#"    { resource_type = "nvidia-tesla-a100", maximum = var.max_gpus["a100"] },
    { resource_type = "nvidia-tesla-p4", maximum = 2 },
    { resource_type = "nvidia-tesla-q9", maximum = 3 },"#,
    );
    std::fs::write(&main, &text).unwrap();
    let zones = r#"zones=["us-central1-a","us-central1-c"]"#;
    let (code, out, err) = stack.run(&["plan"], &[zones]);
    assert_eq!(code, 0, "{out}{err}");
    let all = format!("{out}{err}");
    // P4: offered by Compute Engine, not in the table; its ceiling counts and nothing warns.
    assert!(
        out.contains("gke node auto-provisioning nvidia-tesla-p4: nvidia.com/gpu 0 → 2"),
        "{out}"
    );
    assert!(!all.contains("nvidia-tesla-p4 is not"), "{all}");
    // Q9: no such type.
    assert!(
        out.contains("gke node auto-provisioning nvidia-tesla-q9: nvidia.com/gpu 0 → 3"),
        "{out}"
    );
    assert!(all.contains("Unknown accelerator type"), "{all}");
    let squashed: String = all.split_whitespace().collect();
    assert!(
        squashed.contains("nvidia-tesla-q9isnotinthebuilt-intableandComputeEngineoffersnosuchtypeinus-central1-a,us-central1-c"),
        "{all}"
    );
    let line = text
        .lines()
        .position(|l| l.contains("nvidia-tesla-q9"))
        .unwrap()
        + 1;
    assert!(
        all.contains(&format!("main.hcl:{line}:")),
        "not at line {line}:\n{all}"
    );
}

#[test]
fn gke_node_autoprovisioning_limits_for_t4_v100_and_a100() {
    let fake = GkeFake::start(&[CLUSTER]);
    let stack = Stack::example("gke-nap-gpu", &fake);
    let zones = r#"zones=["us-central1-a","us-central1-c"]"#;

    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[zones]);
    assert_eq!(code, 0, "{out}{err}");
    // The GPU ceilings, one line per accelerator type.
    super::assert_capacity_snapshot("gke-nap-ceilings", &out, "gke node auto-provisioning");
    let autoscaling = fake.cluster(CLUSTER).unwrap()["autoscaling"].clone();
    assert_eq!(autoscaling["enableNodeAutoprovisioning"], true);
    let limits: Vec<(String, String)> = autoscaling["resourceLimits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["resourceType"].as_str().unwrap().to_owned(),
                l["maximum"].to_string().trim_matches('"').to_owned(),
            )
        })
        .collect();
    assert_eq!(
        limits,
        [
            ("cpu".to_owned(), "256".to_owned()),
            ("memory".to_owned(), "1024".to_owned()),
            ("nvidia-tesla-t4".to_owned(), "8".to_owned()),
            ("nvidia-tesla-v100".to_owned(), "4".to_owned()),
            ("nvidia-tesla-a100".to_owned(), "4".to_owned()),
        ]
    );
    assert_eq!(
        autoscaling["autoprovisioningLocations"],
        json!(["us-central1-a", "us-central1-c"])
    );
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[zones]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");

    // A new A100 limit is an update in place.
    let more = r#"max_gpus={t4=8, v100=4, a100=8}"#;
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[zones, more]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 changed"), "{out}");

    let (code, out, err) = stack.run(&["destroy", "--auto-approve"], &[zones, more]);
    assert_eq!(code, 0, "{out}{err}");
    // Proto3 JSON leaves a false out.
    assert_ne!(
        fake.cluster(CLUSTER).unwrap()["autoscaling"]["enableNodeAutoprovisioning"],
        true
    );
}

/// kill -9 between the create of a pool and the state write: the next apply adopts the pool
/// by its creation label — no duplicate, and no "import it".
#[test]
fn a_pool_created_by_a_run_killed_before_recording_it_is_adopted() {
    let fake = GkeFake::start(&[CLUSTER]);
    let stack = Stack::example("gke-a100-mig", &fake);
    fake.inject(Method::POST, &[Fault::Hang]);
    gpustack_tests::kill_when(stack.command(&["apply", "--auto-approve"], &[]), || {
        !fake.pools().is_empty()
    });
    gpustack_tests::force_unlock_local(stack.dir.path());
    let (code, out, err) = stack.run(&["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("adopted: this stack created it"), "{out}");
    assert!(!err.contains("import it"), "{err}");
    assert_eq!(fake.pools().len(), 1, "no duplicate");
    let creates = fake
        .log()
        .iter()
        .filter(|l| l.starts_with("POST ") && l.ends_with("/nodePools"))
        .count();
    assert_eq!(creates, 1, "{:?}", fake.log());
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A 1g profile with twice the memory slice fits 4 times on a GPU, not 7 (GPU-FACTS): an H100
/// pool in `1g.20gb` partitions, and an H200 pool in `1g.35gb`, plan 4 per GPU.
#[test]
fn gke_mig_capacity_counts_partitions_per_gpu_model() {
    let fake = GkeFake::start(&[CLUSTER]);
    for (machine, accelerator, partition, line) in [
        (
            "a3-highgpu-1g",
            "nvidia-h100-80gb",
            "1g.20gb",
            "nodepool a100-mig: 0–4 × a3-highgpu-1g (1× H100) → nvidia.com/gpu 4 → 16 (MIG 1g.20gb ×4; new pool; at 4 nodes; 80 GB per GPU)",
        ),
        (
            "a3-highgpu-1g",
            "nvidia-h100-80gb",
            "1g.10gb",
            "nodepool a100-mig: 0–4 × a3-highgpu-1g (1× H100) → nvidia.com/gpu 4 → 28 (MIG 1g.10gb ×7; new pool; at 4 nodes; 80 GB per GPU)",
        ),
        (
            "a3-ultragpu-1g",
            "nvidia-h200-141gb",
            "1g.35gb",
            "nodepool a100-mig: 0–4 × a3-ultragpu-1g (1× H200) → nvidia.com/gpu 4 → 16 (MIG 1g.35gb ×4; new pool; at 4 nodes; 141 GB per GPU)",
        ),
    ] {
        let stack = Stack::example("gke-a100-mig", &fake);
        let main = stack.dir.path().join("main.hcl");
        let text = std::fs::read_to_string(&main)
            .unwrap()
            .replace("\"a2-highgpu-1g\"", &format!("\"{machine}\""))
            .replace("\"nvidia-tesla-a100\"", &format!("\"{accelerator}\""))
            .replace("\"1g.5gb\"", &format!("\"{partition}\""));
        std::fs::write(&main, text).unwrap();
        let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(out.contains(line), "{partition} on {accelerator}:\n{out}");
    }
    // An accelerator type neither Compute Engine nor the built-in table knows: a warning,
    // not a pool silently left out of the capacity section.
    let stack = Stack::example("gke-a100-mig", &fake);
    let main = stack.dir.path().join("main.hcl");
    let text = std::fs::read_to_string(&main)
        .unwrap()
        .replace("\"nvidia-tesla-a100\"", "\"nvidia-x900\"")
        .replace("gpu_partition_size = \"1g.5gb\"", "");
    std::fs::write(&main, text).unwrap();
    let (code, out, err) = stack.run(&["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("GPUs of the machine type unknown"),
        "{out}{err}"
    );
}

/// A Terraform stack's `google_container_node_pool`, as it is, on the GKE fake: an A100 80GB
/// pool split by GKE into 1g.10gb MIG devices and time-shared, planned with its capacity,
/// applied, refreshed without a change, scaled outside (drift), and destroyed.
#[test]
fn a_terraform_google_container_node_pool_applies_drifts_and_is_destroyed() {
    let fake = GkeFake::start(&[CLUSTER]);
    let dir = tempfile::tempdir().unwrap();
    let pool = format!("{CLUSTER}/nodePools/a100");
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"terraform {{
  required_providers {{
    google = {{
      source  = "hashicorp/google"
      version = "~> 6.0"
    }}
  }}
}}

variable "node_count" {{
  type    = number
  default = 2
}}

provider "google" {{
  project                   = "ml-project"
  region                    = "us-central1"
  container_custom_endpoint = "{endpoint}"
  compute_custom_endpoint   = "{endpoint}"
}}

resource "google_container_node_pool" "a100" {{
  name       = "a100"
  cluster    = "ml-gke"
  location   = "us-central1-c"
  node_count = var.node_count

  node_config {{
    machine_type = "a2-ultragpu-1g"
    labels = {{
      team = "research"
    }}

    taint {{
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }}

    guest_accelerator {{
      type               = "nvidia-a100-80gb"
      count              = 1
      gpu_partition_size = "1g.10gb"

      gpu_sharing_config {{
        gpu_sharing_strategy       = "TIME_SHARING"
        max_shared_clients_per_gpu = 2
      }}

      gpu_driver_installation_config {{
        gpu_driver_version = "LATEST"
      }}
    }}
  }}

  timeouts {{
    create = "30m"
  }}
}}
"#,
            endpoint = fake.endpoint
        ),
    )
    .unwrap();
    let env = fake.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = |args: &[&str]| {
        let output = gpustack_tests::gpustack_command(dir.path(), args, &env)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            stdout(&output),
            stderr(&output),
        )
    };

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    let lines = super::capacity_lines(&out, "nodepool a100");
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("nodepool a100: 2 × a2-ultragpu-1g (1× A100) → nvidia.com/gpu 2 → 28 (MIG 1g.10gb ×7 + GKE time-sharing ×2; new pool;"),
        "{out}"
    );
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let live = fake.pool(&pool).unwrap();
    let accelerator = &live["config"]["accelerators"][0];
    assert_eq!(accelerator["acceleratorType"], "nvidia-a100-80gb");
    assert_eq!(accelerator["gpuPartitionSize"], "1g.10gb");
    assert_eq!(
        accelerator["gpuSharingConfig"]["gpuSharingStrategy"],
        "TIME_SHARING"
    );
    assert_eq!(live["config"]["labels"]["team"], "research");
    assert_eq!(live["config"]["taints"][0]["effect"], "NO_SCHEDULE");

    let (code, out, err) = run(&["plan", "-detailed-exitcode"]);
    assert_eq!(code, 0, "a second plan finds nothing to do:\n{out}{err}");
    let (code, out, err) = run(&["state", "show", "google_container_node_pool.a100"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gpu_partition_size"), "{out}");

    fake.resize_outside(&pool, 3);
    let (code, out, err) = run(&["drift"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("google_container_node_pool.a100 has changed"),
        "{out}"
    );
    assert!(out.contains("node_count"), "{out}");
    let (code, out, err) = run(&["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(fake.group_sizes(&pool), vec![2]);

    let (code, out, err) = run(&["destroy", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(fake.pools().is_empty());
}
