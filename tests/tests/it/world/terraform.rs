//! Terraform's backends in the test world: `terraform_remote_state` reading the states a
//! Terraform stack keeps in a Kubernetes Secret and in S3 (moto), written here as Terraform's
//! backends write them; and a `terraform { backend }` block keeping gpustack's state with
//! gpustack's locks.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::moto::Moto;
use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;
use std::time::Instant;

/// A state as `terraform state pull` prints it, of the stack that made a GPU cluster.
fn cluster_state(name: &str) -> String {
    serde_json::json!({
        "version": 4,
        "terraform_version": "1.9.8",
        "serial": 4,
        "lineage": "0b3c2a1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "outputs": {
            "cluster_name": {"value": name, "type": "string"},
            "gpu_node_labels": {"value": {"nvidia.com/gpu.present": "true"}, "type": ["map", "string"]},
            "node_count": {"value": 3, "type": "number"},
            "ca_data": {"value": "tf-remote-s3cr3t-ca", "type": "string", "sensitive": true}
        },
        "resources": [],
        "check_results": null
    })
    .to_string()
}

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, env);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

/// The stack that reads the cluster's outputs from `backend` with `config`, its default
/// workspace and `staging`.
fn reading_stack(dir: &Path, backend: &str, config: &str) {
    std::fs::write(
        dir.join("main.tf"),
        format!(
            r#"data "terraform_remote_state" "cluster" {{
  backend = "{backend}"
  config = {{
{config}
  }}
}}

data "terraform_remote_state" "staging" {{
  backend   = "{backend}"
  workspace = "staging"
  config = {{
{config}
  }}
}}

output "cluster" {{
  value = data.terraform_remote_state.cluster.outputs.cluster_name
}}

output "labels" {{
  value = data.terraform_remote_state.cluster.outputs.gpu_node_labels
}}

output "nodes" {{
  value = data.terraform_remote_state.cluster.outputs.node_count * 2
}}

output "staging" {{
  value = data.terraform_remote_state.staging.outputs.cluster_name
}}

output "ca" {{
  value     = data.terraform_remote_state.cluster.outputs.ca_data
  sensitive = true
}}
"#
        ),
    )
    .unwrap();
}

/// Applies the reading stack and checks what it read; nothing it wrote holds the secret.
fn reads_the_cluster(dir: &Path, env: &[(&str, &str)]) {
    let (code, out, err) = run(dir, &["apply", "--auto-approve"], env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("tf-remote-s3cr3t") && !err.contains("tf-remote-s3cr3t"));
    let (code, outputs, err) = run(dir, &["output", "--json"], env);
    assert_eq!(code, 0, "{err}");
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(outputs["cluster"]["value"], "gpu-prod");
    assert_eq!(
        outputs["labels"]["value"],
        serde_json::json!({"nvidia.com/gpu.present": "true"})
    );
    assert_eq!(outputs["nodes"]["value"], 6);
    assert_eq!(outputs["staging"]["value"], "gpu-staging");
    assert_eq!(outputs["ca"]["sensitive"], true);
    let state = std::fs::read_to_string(dir.join(".gpustack/state.json")).unwrap();
    assert!(
        !state.contains("tf-remote-s3cr3t"),
        "the state holds the secret"
    );
}

/// A namespace of its own, deleted afterwards.
struct Namespace<'c> {
    cluster: &'c TestCluster,
    name: String,
}

impl<'c> Namespace<'c> {
    fn new(cluster: &'c TestCluster, prefix: &str) -> Self {
        let name = format!("{prefix}-{}", std::process::id());
        cluster.kubectl_ok(&["create", "namespace", &name]);
        Namespace { cluster, name }
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let _ = self
            .cluster
            .kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
    }
}

/// The Secret Terraform's kubernetes backend writes for a workspace: `tfstate-WORKSPACE-SUFFIX`,
/// its labels, and the state gzip-compressed under `tfstate`.
async fn put_terraform_secret(
    cluster: &TestCluster,
    namespace: &str,
    workspace: &str,
    state: &str,
) {
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::io::Write;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(state.as_bytes()).unwrap();
    let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client().await, namespace);
    let labels = [
        ("tfstate", "true"),
        ("tfstateSecretSuffix", "gpu-cluster"),
        ("tfstateWorkspace", workspace),
        ("app.kubernetes.io/managed-by", "terraform"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(format!("tfstate-{workspace}-gpu-cluster")),
            labels: Some(labels),
            annotations: Some([("encoding".to_owned(), "gzip".to_owned())].into()),
            ..Default::default()
        },
        data: Some([("tfstate".to_owned(), ByteString(gzip.finish().unwrap()))].into()),
        ..Default::default()
    };
    secrets.create(&Default::default(), &secret).await.unwrap();
}

/// `terraform_remote_state` with `backend = "kubernetes"` reads the Secret Terraform's
/// kubernetes backend keeps (gzip, base64 as every Secret's data), for the default workspace
/// and another; a suffix with no Secret is refused, located.
#[tokio::test(flavor = "multi_thread")]
async fn terraform_remote_state_reads_a_terraform_state_secret_on_kubernetes() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-remote-state");
    put_terraform_secret(
        &cluster,
        &namespace.name,
        "default",
        &cluster_state("gpu-prod"),
    )
    .await;
    put_terraform_secret(
        &cluster,
        &namespace.name,
        "staging",
        &cluster_state("gpu-staging"),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "    secret_suffix = \"gpu-cluster\"\n    namespace     = \"{}\"\n    config_path   = \"{}\"",
        namespace.name,
        cluster.kubeconfig.display()
    );
    reading_stack(dir.path(), "kubernetes", &config);
    let d = dir.path().to_owned();
    tokio::task::spawn_blocking(move || reads_the_cluster(&d, &[]))
        .await
        .unwrap();

    reading_stack(
        dir.path(),
        "kubernetes",
        &config.replace("gpu-cluster", "no-such-stack"),
    );
    let d = dir.path().to_owned();
    let (code, out, err) = tokio::task::spawn_blocking(move || run(&d, &["plan"], &[]))
        .await
        .unwrap();
    assert_eq!(code, 1, "{out}{err}");
    // The help text is wrapped: the Secret's name is looked for with the wrapping taken out.
    let unwrapped: String = err.split_whitespace().collect();
    assert!(
        err.contains("Unable to find remote state")
            && unwrapped.contains(&format!("{}/tfstate-default-no-such-stack", namespace.name))
            && err.contains("main.tf:1"),
        "{err}"
    );
}

/// `terraform_remote_state` with `backend = "s3"` reads the object at `key`, and a
/// workspace's under `env:/WORKSPACE/key`, on moto.
#[test]
fn terraform_remote_state_reads_a_terraform_state_object_on_s3() {
    let moto = Moto::start(&format!("tf-remote-state-{}", std::process::id()));
    moto.boto3(&format!(
        r#"s3 = boto3.client("s3", **kw)
s3.create_bucket(Bucket="cluster-states")
s3.put_object(Bucket="cluster-states", Key="gpu/terraform.tfstate", Body={prod})
s3.put_object(Bucket="cluster-states", Key="env:/staging/gpu/terraform.tfstate", Body={staging})"#,
        prod = serde_json::to_string(&cluster_state("gpu-prod")).unwrap(),
        staging = serde_json::to_string(&cluster_state("gpu-staging")).unwrap(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "    bucket         = \"cluster-states\"\n    key            = \"gpu/terraform.tfstate\"\n    region         = \"us-east-1\"\n    use_path_style = true\n    dynamodb_table = \"terraform-locks\"\n    endpoints = {{\n      s3 = \"{}\"\n    }}",
        moto.endpoint
    );
    reading_stack(dir.path(), "s3", &config);
    let env = moto.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    reads_the_cluster(dir.path(), &env);
}

/// A stack with a latency in every provider call, so that an apply holds the lock a while.
fn slow_stack(dir: &Path, backend: &str) {
    std::fs::write(
        dir.join("backend.tf"),
        format!("terraform {{\n{backend}\n}}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("main.tf"),
        "provider \"test\" {\n  latency_ms = 1500\n  world      = \"world.json\"\n}\n\nresource \"test_object\" \"slow\" {\n  name  = \"slow\"\n  value = \"v1\"\n}\n",
    )
    .unwrap();
}

/// Two applies start together on a `terraform { backend }`: one wins, the other fails fast
/// naming the winner, as with gpustack's own backend block; the state is gpustack's, where the
/// backend keeps it.
fn two_runs_race(dir: &Path, env: &[(&str, &str)]) {
    let mut env: Vec<(&str, &str)> = env.to_vec();
    env.push(("GPUSTACK_TEST_PROVIDER", "1"));
    let start = Instant::now();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let child = gpustack_tests::gpustack_command(dir, &["apply", "--auto-approve"], &env)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            std::thread::spawn(move || {
                let out = child.wait_with_output().unwrap();
                (pid, out, start.elapsed())
            })
        })
        .collect();
    let mut results: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    results.sort_by_key(|(_, out, _)| out.status.code());
    let (winner_pid, winner, winner_time) = &results[0];
    let (_, loser, loser_time) = &results[1];
    assert_eq!(winner.status.code(), Some(0), "{}", stderr(winner));
    assert_eq!(
        loser.status.code(),
        Some(1),
        "exactly one run may win:\n{}",
        stderr(loser)
    );
    let err = stderr(loser);
    assert!(
        err.contains("the state is locked by") && err.contains(&format!("(pid {winner_pid})")),
        "the loser must name the holder:\n{err}"
    );
    assert!(loser_time < winner_time, "the loser fails fast");
    let (code, listed, err) = run(dir, &["state", "list"], &env);
    assert_eq!((code, listed.trim()), (0, "test_object.slow"), "{err}");
    assert!(!dir.join(".gpustack/state.json").exists());
}

/// `terraform { backend "s3" }` with Terraform's arguments keeps gpustack's state at `key`
/// and locks it with gpustack's lock object, not DynamoDB.
#[test]
fn the_terraform_blocks_s3_backend_locks_as_gpustacks_own() {
    let moto = Moto::start(&format!("tf-backend-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="gpu-states")"#);
    let dir = tempfile::tempdir().unwrap();
    slow_stack(
        dir.path(),
        &format!(
            "  backend \"s3\" {{\n    bucket         = \"gpu-states\"\n    key            = \"gpu/terraform.tfstate\"\n    region         = \"us-east-1\"\n    use_lockfile   = true\n    dynamodb_table = \"terraform-locks\"\n    encrypt        = true\n    use_path_style = true\n    endpoints = {{\n      s3 = \"{}\"\n    }}\n  }}",
            moto.endpoint
        ),
    );
    let env = moto.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    two_runs_race(dir.path(), &env);
    let keys = moto.boto3(
        r#"print("\n".join(o["Key"] for o in boto3.client("s3", **kw).list_objects_v2(Bucket="gpu-states").get("Contents", [])))"#,
    );
    assert_eq!(
        keys.trim(),
        "gpu/terraform.tfstate",
        "no lock object is left: {keys}"
    );
}

/// `terraform { backend "kubernetes" }` keeps gpustack's state in its Secrets of the namespace
/// (never Terraform's tfstate Secret) and locks it with gpustack's Lease.
#[test]
fn the_terraform_blocks_kubernetes_backend_locks_as_gpustacks_own() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-backend");
    let dir = tempfile::tempdir().unwrap();
    slow_stack(
        dir.path(),
        &format!(
            "  backend \"kubernetes\" {{\n    secret_suffix = \"gpu\"\n    namespace     = \"{}\"\n    config_paths  = [\"{}\"]\n  }}",
            namespace.name,
            cluster.kubeconfig.display()
        ),
    );
    two_runs_race(dir.path(), &[]);
    let secrets = cluster.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert_eq!(secrets.trim(), "gpustack-state-gpu", "{secrets}");
    let holders = cluster.kubectl_ok(&[
        "get",
        "leases",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.items[*].spec.holderIdentity}",
    ]);
    assert!(holders.trim().is_empty(), "no Lease is held: {holders}");
}

/// The seed flow as a Terraform user writes it: the GPU Operator chart with `set {}` blocks, a
/// `kubernetes_config_map_v1` time-slicing config, `kubernetes_labels` on the node and a
/// `kubectl_manifest`, under a `terraform` block that pins the three providers.
const SEED_TF: &str = r#"terraform {
  required_version = ">= 1.5.0"

  required_providers {
    helm = {
      source  = "hashicorp/helm"
      version = "~> 2.17"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.35"
    }
    kubectl = {
      source  = "gavinbunney/kubectl"
      version = ">= 1.14.0"
    }
  }
}

variable "kubeconfig" {
  type = string
}

variable "chart" {
  type = string
}

variable "node_name" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

provider "helm" {
  kubernetes {
    config_path = var.kubeconfig
  }
}

provider "kubectl" {
  config_path      = var.kubeconfig
  load_config_file = true
}

resource "kubernetes_namespace_v1" "gpu_operator" {
  metadata {
    name = "gpu-operator"
  }
}

resource "kubernetes_config_map_v1" "time_slicing" {
  metadata {
    name      = "time-slicing-config"
    namespace = kubernetes_namespace_v1.gpu_operator.metadata[0].name
  }

  data = {
    any = <<-EOT
      version: v1
      sharing:
        timeSlicing:
          resources:
            - name: nvidia.com/gpu
              replicas: 10
    EOT
  }
}

resource "kubernetes_labels" "gpu_node" {
  api_version = "v1"
  kind        = "Node"

  metadata {
    name = var.node_name
  }

  labels = {
    "nvidia.com/device-plugin.config" = "any"
  }
}

resource "kubectl_manifest" "runtime_class" {
  yaml_body = <<-YAML
    apiVersion: node.k8s.io/v1
    kind: RuntimeClass
    metadata:
      name: nvidia-tf
    handler: nvidia
  YAML
}

resource "helm_release" "gpu_operator" {
  name      = "gpu-operator"
  namespace = kubernetes_namespace_v1.gpu_operator.metadata[0].name
  chart     = var.chart
  wait      = true
  timeout   = 600

  set {
    name  = "driver.enabled"
    value = "false"
  }

  set {
    name  = "toolkit.enabled"
    value = "false"
  }

  set {
    name  = "devicePlugin.config.name"
    value = kubernetes_config_map_v1.time_slicing.metadata[0].name
  }

  set {
    name  = "devicePlugin.config.default"
    value = "any"
  }

  depends_on = [kubernetes_labels.gpu_node, kubectl_manifest.runtime_class]
}
"#;

/// A copy of the seed stack as `main.tf`, with `replace` applied to its text.
fn seed_stack(node: &str, replace: (&str, &str)) -> super::e2e::Stack {
    let stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    std::fs::write(
        stack.dir.join("main.tf"),
        SEED_TF.replace(replace.0, replace.1),
    )
    .unwrap();
    let chart = format!("chart={}", super::e2e::chart());
    let node = format!("node_name={node}");
    stack.with_vars(&[&chart, &node])
}

use super::e2e::DestroyOnDrop as Destroy;

#[test]
fn a_terraform_seed_stack_applies_unchanged_and_the_node_advertises_ten() {
    let _one = super::e2e::OPERATOR
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let c = gpustack_tests::cluster::e2e_cluster();
    // A node of its own: the simulator keeps a node's sharing labels after a destroy, and the
    // plan's capacity line is about a node that does not advertise 10 yet.
    let node = format!("tf-t4-{}", std::process::id());
    let node = node.as_str();
    c.fake_gpu_node(node, "Tesla T4", 1);

    // replicas = 1 in the ConfigMap: refused at plan, at that line of main.tf.
    let one = seed_stack(node, ("replicas: 10", "replicas: 1"));
    let out = one.run("plan", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "not refused:\n{text}");
    assert!(text.contains("Sharing replicas below 2"), "{text}");
    let line = SEED_TF
        .lines()
        .position(|l| l.contains("replicas: 10"))
        .unwrap()
        + 1;
    assert!(
        text.contains(&format!("main.tf:{line}:")),
        "not at line {line}:\n{text}"
    );

    let stack = seed_stack(node, ("", ""));
    let _destroy = Destroy(&stack);
    // The plan shows the node's capacity as the stack makes it.
    let plan = stack.ok("plan", &[]);
    let lines = super::capacity_lines(&plan, &format!("node {node} "));
    assert!(
        lines.iter().any(|l| l.contains("nvidia.com/gpu 1 → 10")),
        "no capacity line for {node}:\n{plan}"
    );
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(applied.contains("Apply complete!"), "{applied}");
    c.eventually(
        60,
        || super::e2e::allocatable(c, node, "nvidia.com/gpu"),
        |a| a == "10",
    );
    let policy = c.kubectl_ok(&["get", "clusterpolicy", "cluster-policy", "-o", "json"]);
    let policy: serde_json::Value = serde_json::from_str(&policy).unwrap();
    assert_eq!(
        policy["spec"]["devicePlugin"]["config"]["name"],
        "time-slicing-config"
    );
    assert_eq!(policy["spec"]["driver"]["enabled"], false);
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "runtimeclass",
            "nvidia-tf",
            "-o",
            "jsonpath={.handler}"
        ]),
        "nvidia"
    );
    // Nothing left to do.
    let again = stack.run("plan", &["--detailed-exitcode"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "second plan not empty:\n{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
}

/// The stack that declares, as Terraform's kubernetes provider has them, a namespace and a
/// ConfigMap made outside gpustack.
fn takeover_stack(dir: &Path, namespace: &str) {
    std::fs::write(
        dir.join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_namespace_v1" "gpu" {{
  metadata {{
    name = "{namespace}"
  }}
}}

resource "kubernetes_config_map_v1" "sharing" {{
  metadata {{
    name      = "time-slicing"
    namespace = kubernetes_namespace_v1.gpu.metadata[0].name
  }}
  data = {{
    mode = "shared"
  }}
}}
"#
        ),
    )
    .unwrap();
}

/// A state as `terraform state pull` prints it, recording the namespace and the ConfigMap with
/// their uids, a data source, a type gpustack does not serve and an instance the stack does
/// not declare.
fn takeover_state(namespace: &str, namespace_uid: &str, config_map_uid: &str) -> String {
    let kubernetes = r#"provider["registry.terraform.io/hashicorp/kubernetes"]"#;
    serde_json::json!({
        "version": 4,
        "terraform_version": "1.9.8",
        "serial": 7,
        "lineage": "5d1e2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b",
        "outputs": {},
        "resources": [
            {"mode": "data", "type": "kubernetes_nodes", "name": "gpu", "provider": kubernetes,
             "instances": [{"schema_version": 0, "attributes": {"id": "x", "nodes": []}}]},
            {"mode": "managed", "type": "aws_iam_role", "name": "nodes",
             "provider": r#"provider["registry.terraform.io/hashicorp/aws"]"#,
             "instances": [{"schema_version": 0, "attributes": {"name": "gpu-nodes"}}]},
            {"mode": "managed", "type": "kubernetes_namespace_v1", "name": "gpu", "provider": kubernetes,
             "instances": [{"schema_version": 0, "attributes": {
                 "id": namespace, "timeouts": null, "wait_for_default_service_account": false,
                 "metadata": [{"name": namespace, "uid": namespace_uid, "labels": {}, "annotations": {},
                               "generate_name": "", "generation": 0, "resource_version": "1"}]}}]},
            {"mode": "managed", "type": "kubernetes_config_map_v1", "name": "sharing", "provider": kubernetes,
             "instances": [{"schema_version": 0, "attributes": {
                 "id": format!("{namespace}/time-slicing"), "data": {"mode": "shared"},
                 "binary_data": null, "immutable": false,
                 "metadata": [{"name": "time-slicing", "namespace": namespace, "uid": config_map_uid,
                               "labels": {}, "annotations": {}, "generate_name": "",
                               "generation": 0, "resource_version": "1"}]}}]},
            {"mode": "managed", "type": "kubernetes_config_map_v1", "name": "legacy", "provider": kubernetes,
             "instances": [{"schema_version": 0, "attributes": {
                 "metadata": [{"name": "legacy", "namespace": namespace, "uid": "0"}]}}]}
        ],
        "check_results": null
    })
    .to_string()
}

fn uid(cluster: &TestCluster, args: &[&str]) -> String {
    let mut all = vec!["get"];
    all.extend(args);
    all.extend(["-o", "jsonpath={.metadata.uid}"]);
    cluster.kubectl_ok(&all).trim().to_owned()
}

/// The namespace and ConfigMap made outside gpustack, the stack and the Terraform state that
/// records them: (stack directory, kubeconfig argument, namespace, ConfigMap uid).
fn made_outside(
    cluster: &TestCluster,
    prefix: &str,
) -> (tempfile::TempDir, String, String, String) {
    let namespace = format!("{prefix}-{}", std::process::id());
    let _ = cluster.kubectl(&["delete", "namespace", &namespace, "--wait=true"]);
    cluster.kubectl_ok(&["create", "namespace", &namespace]);
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "time-slicing",
        "-n",
        &namespace,
        "--from-literal=mode=shared",
    ]);
    let namespace_uid = uid(cluster, &["namespace", &namespace]);
    let config_map_uid = uid(cluster, &["configmap", "time-slicing", "-n", &namespace]);
    let dir = tempfile::tempdir().unwrap();
    takeover_stack(dir.path(), &namespace);
    std::fs::write(
        dir.path().join("tf.json"),
        takeover_state(&namespace, &namespace_uid, &config_map_uid),
    )
    .unwrap();
    let kubeconfig = format!("kubeconfig={}", cluster.kubeconfig.display());
    (dir, kubeconfig, namespace, config_map_uid)
}

#[test]
fn import_terraform_takes_over_a_terraform_states_objects_and_the_next_plan_is_empty() {
    let cluster = gpustack_tests::cluster::cluster();
    let (dir, kubeconfig, namespace, _) = made_outside(cluster, "imptf-take");
    let _cleanup = Namespace {
        cluster,
        name: namespace.clone(),
    };
    let (code, out, err) = run(
        dir.path(),
        &["state", "import-terraform", "tf.json", "--var", &kubeconfig],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "kubernetes_config_map_v1.sharing: imported from \"v1/ConfigMap/{namespace}/time-slicing\""
        )),
        "{out}"
    );
    assert!(
        out.contains("aws_iam_role.nodes: left to Terraform (gpustack does not serve this type)"),
        "{out}"
    );
    assert!(
        out.contains(
            "kubernetes_config_map_v1.legacy: left to Terraform (the stack does not declare it)"
        ),
        "{out}"
    );
    assert!(!out.contains("kubernetes_nodes"), "{out}");
    assert!(
        out.contains(
            "terraform state rm 'kubernetes_namespace_v1.gpu' 'kubernetes_config_map_v1.sharing'"
        ),
        "{out}"
    );
    let (code, listed, err) = run(dir.path(), &["state", "list"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        [
            "kubernetes_config_map_v1.sharing",
            "kubernetes_namespace_v1.gpu"
        ],
        "{listed}"
    );
    let (code, plan, err) = run(dir.path(), &["plan", "--var", &kubeconfig], &[]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(plan.contains("No changes."), "{plan}");
}

#[test]
fn import_terraform_refuses_an_object_replaced_since_terraform_recorded_it() {
    let cluster = gpustack_tests::cluster::cluster();
    let (dir, kubeconfig, namespace, recorded) = made_outside(cluster, "imptf-replaced");
    let _cleanup = Namespace {
        cluster,
        name: namespace.clone(),
    };
    // A state gpustack already keeps for this stack (the namespace, the object Terraform
    // recorded), which the refusal must leave as it is.
    let id = format!("v1/Namespace/{namespace}");
    let (code, out, err) = run(
        dir.path(),
        &[
            "import",
            "kubernetes_namespace_v1.gpu",
            &id,
            "--var",
            &kubeconfig,
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    cluster.kubectl_ok(&["delete", "configmap", "time-slicing", "-n", &namespace]);
    cluster.kubectl_ok(&[
        "create",
        "configmap",
        "time-slicing",
        "-n",
        &namespace,
        "--from-literal=mode=shared",
    ]);
    let now = uid(cluster, &["configmap", "time-slicing", "-n", &namespace]);
    assert_ne!(now, recorded);
    let before = std::fs::read(dir.path().join(".gpustack/state.json")).unwrap();
    let (code, out, err) = run(
        dir.path(),
        &["state", "import-terraform", "tf.json", "--var", &kubeconfig],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(&format!(
            "kubernetes_config_map_v1.sharing: replaced since Terraform recorded it (Terraform recorded uid {recorded}, the object there now has {now})"
        )),
        "{err}"
    );
    assert!(err.contains("nothing was imported"), "{err}");
    assert!(!err.contains("kubernetes_namespace_v1.gpu:"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join(".gpustack/state.json")).unwrap(),
        before,
        "the state changed"
    );
    let (_, listed, _) = run(dir.path(), &["state", "list"], &[]);
    assert_eq!(listed.trim(), "kubernetes_namespace_v1.gpu", "{listed}");
}

/// A GPU inference service as Terraform's kubernetes provider has it: a
/// `kubernetes_deployment_v1` whose container requests `nvidia.com/gpu`, and a
/// `kubernetes_service_v1` in front of it.
const WORKLOAD_TF: &str = r#"variable "kubeconfig" {
  type = string
}

variable "namespace" {
  type = string
}

variable "node" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_deployment_v1" "infer" {
  metadata {
    name      = "infer"
    namespace = var.namespace
    labels = {
      app = "infer"
    }
  }

  spec {
    replicas = 1

    selector {
      match_labels = {
        app = "infer"
      }
    }

    strategy {
      type = "Recreate"
    }

    template {
      metadata {
        labels = {
          app = "infer"
        }
      }

      spec {
        node_selector = {
          "kubernetes.io/hostname" = var.node
        }

        toleration {
          key      = "nvidia.com/gpu"
          operator = "Exists"
          effect   = "NoSchedule"
        }

        container {
          name  = "server"
          image = "vllm/vllm-openai:v0.6.3"
          args  = ["--model", "facebook/opt-125m"]

          port {
            container_port = 8000
            name           = "http"
          }

          env {
            name  = "HF_HOME"
            value = "/cache"
          }

          resources {
            limits = {
              "nvidia.com/gpu" = 1
            }
            requests = {
              cpu = "2"
            }
          }

          liveness_probe {
            http_get {
              path = "/health"
              port = 8000
            }
            initial_delay_seconds = 30
          }

          volume_mount {
            name       = "cache"
            mount_path = "/cache"
          }

          volume_mount {
            name       = "config"
            mount_path = "/etc/infer"
          }
        }

        volume {
          name = "cache"
          empty_dir {}
        }

        volume {
          name = "config"
          config_map {
            name         = "infer"
            default_mode = "0644"
            optional     = true
          }
        }
      }
    }
  }
}

resource "kubernetes_service_v1" "infer" {
  metadata {
    name      = "infer"
    namespace = var.namespace
  }

  spec {
    selector = kubernetes_deployment_v1.infer.spec[0].template[0].metadata[0].labels

    port {
      name        = "http"
      port        = 80
      target_port = "8000"
    }
  }
}
"#;

/// What reads the workload back: the Service, the Deployment's pods, a Secret made by hand.
const WORKLOAD_DATA_TF: &str = r#"data "kubernetes_service_v1" "infer" {
  metadata {
    name      = kubernetes_service_v1.infer.metadata[0].name
    namespace = var.namespace
  }
}

data "kubernetes_resources" "pods" {
  api_version    = "v1"
  kind           = "Pod"
  namespace      = var.namespace
  label_selector = "app=infer"
}

data "kubernetes_secret_v1" "token" {
  metadata {
    name      = "token"
    namespace = var.namespace
  }
}

output "cluster_ip" {
  value = data.kubernetes_service_v1.infer.spec[0].cluster_ip
}

output "target_port" {
  value = data.kubernetes_service_v1.infer.spec[0].port[0].target_port
}

output "ingress" {
  value = data.kubernetes_service_v1.infer.status[0].load_balancer[0].ingress
}

output "pod_gpus" {
  value = [for p in data.kubernetes_resources.pods.objects : p.spec.containers[0].resources.limits["nvidia.com/gpu"]]
}

output "token_read" {
  value = nonsensitive(data.kubernetes_secret_v1.token.data.token == "tf-typed-s3cret")
}
"#;

/// The GPU section of a plan's text: the capacity lines and the GPU checks' lines.
fn gpu_section(plan: &str) -> Vec<String> {
    plan.lines()
        .filter(|l| l.contains("GPU") || l.contains("nvidia.com/gpu"))
        .filter(|l| !l.contains("\"nvidia.com/gpu\"") && !l.contains("nvidia.com/gpu ="))
        .map(str::to_owned)
        .collect()
}

/// A typed Deployment requesting a GPU and a typed Service apply as Terraform writes them: the
/// apply waits for the rollout (Terraform's `wait_for_rollout` default), the objects are the
/// ones Kubernetes takes (ports as numbers, the mode from octal, the GPU limit), the plan's GPU
/// section is the one the same objects as `kubernetes_manifest` get, and a second plan is empty.
/// Data sources read them back: the Service as Terraform's data source has it (what the API
/// server filled in too), the Deployment's pods by label, and a Secret made by hand whose value
/// stays out of everything gpustack writes.
#[test]
fn a_typed_gpu_deployment_and_service_apply_data_sources_read_them_and_the_next_plan_is_empty() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-typed");
    // A node with one GPU for the pod: kwok runs it there.
    let node = format!("tf-typed-gpu-{}", std::process::id());
    cluster.fake_gpu_node(&node, "Tesla T4", 1);
    let _node = DeleteNode(&cluster, node.clone());
    cluster.kubectl_ok(&[
        "patch",
        "node",
        &node,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"capacity":{"nvidia.com/gpu":"1"},"allocatable":{"nvidia.com/gpu":"1"}}}"#,
    ]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "token",
        "-n",
        &namespace.name,
        "--from-literal=token=tf-typed-s3cret",
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.tf"), WORKLOAD_TF).unwrap();
    let kubeconfig = cluster.kubeconfig.display().to_string();
    let vars = [
        ("GPUSTACK_VAR_kubeconfig", kubeconfig.as_str()),
        ("GPUSTACK_VAR_namespace", namespace.name.as_str()),
        ("GPUSTACK_VAR_node", node.as_str()),
    ];

    let (code, plan, err) = run(dir.path(), &["plan"], &vars);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(
        plan.contains("kubernetes_deployment_v1.infer will be created")
            && plan.contains("kubernetes_service_v1.infer will be created"),
        "{plan}"
    );
    // The GPU model sees the typed objects as it sees their manifests.
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(
        manifests.path().join("main.tf"),
        manifest_twin(&namespace.name, &node, &kubeconfig),
    )
    .unwrap();
    let (code, twin, err) = run(manifests.path(), &["plan"], &[]);
    assert_eq!(code, 0, "{twin}{err}");
    assert_eq!(gpu_section(&plan), gpu_section(&twin), "{plan}\n{twin}");

    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    // Applied means rolled out: the pod runs on the GPU node.
    let deployment = cluster.kubectl_ok(&[
        "get",
        "deployment",
        "infer",
        "-n",
        &namespace.name,
        "-o",
        "json",
    ]);
    let deployment: serde_json::Value = serde_json::from_str(&deployment).unwrap();
    assert_eq!(deployment["status"]["availableReplicas"], 1, "{deployment}");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "1"
    );
    assert_eq!(pod["containers"][0]["ports"][0]["containerPort"], 8000);
    assert_eq!(
        pod["containers"][0]["livenessProbe"]["httpGet"]["port"],
        8000
    );
    assert_eq!(pod["volumes"][1]["configMap"]["defaultMode"], 420);
    assert_eq!(pod["tolerations"][0]["key"], "nvidia.com/gpu");
    let service = cluster.kubectl_ok(&[
        "get",
        "service",
        "infer",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.spec.ports[0].targetPort} {.spec.selector.app}",
    ]);
    assert_eq!(service, "8000 infer");

    let (code, out, err) = run(dir.path(), &["plan", "--detailed-exitcode"], &vars);
    assert_eq!(code, 0, "second plan not empty:\n{out}{err}");

    // Read back by data sources (a data source is read at plan: added once the objects are).
    std::fs::write(dir.path().join("data.tf"), WORKLOAD_DATA_TF).unwrap();
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("tf-typed-s3cret") && !err.contains("tf-typed-s3cret"));
    // Each data source is one request: a GET by name, or one LIST; no request per pod.
    let logged: Vec<(&str, &str)> = vars
        .iter()
        .copied()
        .chain([("GPUSTACK_LOG", "gpustack_connect=debug")])
        .collect();
    let (code, out, log) = run(dir.path(), &["plan", "--detailed-exitcode"], &logged);
    assert_eq!(
        code, 0,
        "plan after the data sources not empty:\n{out}{log}"
    );
    let requested: Vec<String> = log
        .lines()
        .filter(|l| l.contains("requesting"))
        .filter_map(|l| {
            let field = |name: &str| l.split(name).nth(1)?.split_whitespace().next();
            Some(format!(
                "{} {}",
                field("http.method=")?,
                field("http.url=")?
            ))
        })
        .collect();
    let namespaced = format!("/api/v1/namespaces/{}/", namespace.name);
    let count = |what: &str| {
        requested
            .iter()
            .filter(|r| r.contains(&format!("{namespaced}{what}")))
            .count()
    };
    assert_eq!(count("services/infer"), 1, "{requested:#?}");
    assert_eq!(count("secrets/token"), 1, "{requested:#?}");
    assert_eq!(count("pods"), 1, "{requested:#?}");

    let (code, outputs, err) = run(dir.path(), &["output", "--json"], &[]);
    assert_eq!(code, 0, "{err}");
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    let cluster_ip = cluster.kubectl_ok(&[
        "get",
        "service",
        "infer",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    assert_eq!(
        outputs["cluster_ip"]["value"],
        cluster_ip.as_str(),
        "{outputs}"
    );
    assert_eq!(outputs["target_port"]["value"], "8000", "{outputs}");
    // A ClusterIP Service has no load balancer ingress.
    assert_eq!(
        outputs["ingress"]["value"],
        serde_json::json!([]),
        "{outputs}"
    );
    assert_eq!(
        outputs["pod_gpus"]["value"],
        serde_json::json!(["1"]),
        "{outputs}"
    );
    assert_eq!(outputs["token_read"]["value"], true, "{outputs}");
    let state = std::fs::read_to_string(dir.path().join(".gpustack/state.json")).unwrap();
    assert!(
        !state.contains("tf-typed-s3cret") && !state.contains("dGYtdHlwZWQtczNjcmV0"),
        "the state holds the Secret's value"
    );
}

/// The workload stack's objects as `kubernetes_manifest`.
fn manifest_twin(namespace: &str, node: &str, kubeconfig: &str) -> String {
    format!(
        r#"provider "kubernetes" {{
  config_path = "{kubeconfig}"
}}

resource "kubernetes_manifest" "infer" {{
  manifest = {{
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata = {{
      name      = "infer-twin"
      namespace = "{namespace}"
    }}
    spec = {{
      replicas = 1
      selector = {{ matchLabels = {{ app = "infer" }} }}
      template = {{
        metadata = {{ labels = {{ app = "infer" }} }}
        spec = {{
          nodeSelector = {{ "kubernetes.io/hostname" = "{node}" }}
          containers = [{{
            name      = "server"
            image     = "vllm/vllm-openai:v0.6.3"
            resources = {{ limits = {{ "nvidia.com/gpu" = 1 }} }}
          }}]
        }}
      }}
    }}
  }}
}}

resource "kubernetes_manifest" "service" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Service"
    metadata = {{
      name      = "infer-twin"
      namespace = "{namespace}"
    }}
    spec = {{
      selector = {{ app = "infer" }}
      ports    = [{{ port = 80, targetPort = 8000 }}]
    }}
  }}
}}
"#
    )
}

/// Deletes a node made for one test, also when it fails.
struct DeleteNode<'c>(&'c TestCluster, String);

impl Drop for DeleteNode<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl(&["delete", "node", &self.1, "--wait=false"]);
    }
}

/// The workload kinds' field table (`providers/kubernetes/src/typed_fields.rs`) is what its
/// script makes of the OpenAPI documents the test world's kube-apiserver serves: a Kubernetes
/// version that adds, renames or retypes a field of the pod template fails here until the
/// table is made again (`typed_fields.py`, as its docstring says).
#[test]
fn the_typed_field_table_is_what_the_live_api_server_serves() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let dir = tempfile::tempdir().unwrap();
    let mut documents = Vec::new();
    for group in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/policy/v1",
        "apis/networking.k8s.io/v1",
        "apis/autoscaling/v2",
        "apis/storage.k8s.io/v1",
        "apis/admissionregistration.k8s.io/v1",
        "apis/autoscaling/v1",
        "apis/discovery.k8s.io/v1",
        "apis/apiregistration.k8s.io/v1",
    ] {
        let document = cluster.kubectl_ok(&["get", "--raw", &format!("/openapi/v3/{group}")]);
        let path = dir.path().join(format!("{}.json", group.replace('/', "_")));
        std::fs::write(&path, document).unwrap();
        documents.push(path);
    }
    let root = gpustack_tests::repo_root();
    let made = std::process::Command::new("python3")
        .arg(root.join("providers/kubernetes/typed_fields.py"))
        .args(&documents)
        .output()
        .expect("run python3");
    assert!(
        made.status.success(),
        "typed_fields.py: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let committed =
        std::fs::read_to_string(root.join("providers/kubernetes/src/typed_fields.rs")).unwrap();
    assert!(
        String::from_utf8_lossy(&made.stdout) == committed,
        "providers/kubernetes/src/typed_fields.rs is not what typed_fields.py makes of this API server's OpenAPI documents: make it again"
    );
}

/// A GPU node tainted as Terraform stacks taint theirs: two taints by `kubernetes_node_taint`.
fn taint_stack(dir: &Path, kubeconfig: &str, node: &str) {
    std::fs::write(
        dir.join("main.tf"),
        format!(
            r#"terraform {{
  required_providers {{
    kubernetes = {{
      source = "hashicorp/kubernetes"
    }}
  }}
}}

provider "kubernetes" {{
  config_path = "{kubeconfig}"
}}

resource "kubernetes_node_taint" "gpu" {{
  metadata {{
    name = "{node}"
  }}
  taint {{
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NoSchedule"
  }}
  taint {{
    key    = "gpu-only"
    value  = "true"
    effect = "PreferNoSchedule"
  }}
}}
"#
        ),
    )
    .unwrap();
}

/// The node's taints as `key=value:effect`, sorted; the node lifecycle controller's own
/// (`node.kubernetes.io/...`) left out.
fn node_taints(cluster: &TestCluster, node: &str) -> Vec<String> {
    let out = cluster.kubectl_ok(&[
        "get",
        "node",
        node,
        "-o",
        r#"jsonpath={range .spec.taints[*]}{.key}={.value}:{.effect}{"\n"}{end}"#,
    ]);
    let mut taints: Vec<String> = out
        .lines()
        .filter(|t| !t.starts_with("node.kubernetes.io/"))
        .map(str::to_owned)
        .collect();
    taints.sort();
    taints
}

/// A GPU node of its own (deleted when the guard goes) and the taint stack on it.
fn taint_fixture<'c>(
    cluster: &'c TestCluster,
    prefix: &str,
) -> (String, tempfile::TempDir, DeleteNode<'c>) {
    let node = format!("{prefix}-{}", std::process::id());
    cluster.fake_gpu_node(&node, "Tesla T4", 1);
    let guard = DeleteNode(cluster, node.clone());
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cluster.kubeconfig.display().to_string();
    taint_stack(dir.path(), &kubeconfig, &node);
    (node, dir, guard)
}

/// `kubernetes_node_taint` puts its taints on a node someone else owns, leaves a taint added by
/// hand alone (the node's taint list is atomic for server-side apply, so it is merged with the
/// node as it is), plans nothing on a second run, and destroy removes only its own taints.
#[test]
fn a_node_taint_keeps_a_hand_made_taint_and_destroy_removes_only_its_own() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let (node, dir, _node) = taint_fixture(&cluster, "tf-taint-gpu");
    // A taint someone set before the stack: kept.
    cluster.kubectl_ok(&["taint", "node", &node, "before=kept:NoExecute"]);

    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        node_taints(&cluster, &node),
        [
            "before=kept:NoExecute",
            "gpu-only=true:PreferNoSchedule",
            "nvidia.com/gpu=present:NoSchedule",
        ],
    );
    let state = std::fs::read_to_string(dir.path().join(".gpustack/state.json")).unwrap();
    assert!(
        state.contains(&format!(
            "{node},nvidia.com/gpu=present:NoSchedule,gpu-only=true:PreferNoSchedule"
        )),
        "Terraform's id is not in the state:\n{state}"
    );

    // A taint added by hand after the apply: the next plan is empty and leaves it alone.
    cluster.kubectl_ok(&["taint", "node", &node, "by-hand=yes:NoSchedule"]);
    let (code, out, err) = run(dir.path(), &["plan"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No changes."), "{out}{err}");
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        node_taints(&cluster, &node).contains(&"by-hand=yes:NoSchedule".to_owned()),
        "{:?}",
        node_taints(&cluster, &node)
    );

    // Its own taint changed by hand is drift, put back by the next apply.
    cluster.kubectl_ok(&[
        "taint",
        "node",
        &node,
        "nvidia.com/gpu=absent:NoSchedule",
        "--overwrite",
    ]);
    let (code, out, err) = run(dir.path(), &["plan"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("will be updated in-place"), "{out}{err}");
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        node_taints(&cluster, &node).contains(&"nvidia.com/gpu=present:NoSchedule".to_owned()),
        "{:?}",
        node_taints(&cluster, &node)
    );

    // Imported under Terraform's id after the state forgot it: the next plan is empty; an id
    // naming a taint the node does not have is refused by name.
    let address = "kubernetes_node_taint.gpu";
    let (code, out, err) = run(dir.path(), &["state", "rm", address], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let missing = format!("{node},nvidia.com/gpu=other:NoSchedule");
    let (code, out, err) = run(dir.path(), &["import", address, &missing], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("has no taint nvidia.com/gpu=other:NoSchedule"),
        "{out}{err}"
    );
    let id = format!("{node},nvidia.com/gpu=present:NoSchedule,gpu-only=true:PreferNoSchedule");
    let (code, out, err) = run(dir.path(), &["import", address, &id], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["plan"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No changes."), "{out}{err}");

    let (code, out, err) = run(dir.path(), &["destroy", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        node_taints(&cluster, &node),
        ["before=kept:NoExecute", "by-hand=yes:NoSchedule"],
    );
}

/// A taint of the same key and effect that is already on the node and not the stack's is
/// refused by name without `force`, and nothing changes; with `force` it is taken over.
#[test]
fn a_node_taint_takes_over_someone_elses_taint_only_with_force() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let (node, dir, _node) = taint_fixture(&cluster, "tf-taint-force");
    cluster.kubectl_ok(&["taint", "node", &node, "nvidia.com/gpu=other:NoSchedule"]);

    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("already has the taint nvidia.com/gpu:NoSchedule") && err.contains("force"),
        "{out}{err}"
    );
    assert_eq!(
        node_taints(&cluster, &node),
        ["nvidia.com/gpu=other:NoSchedule"]
    );

    let main = std::fs::read_to_string(dir.path().join("main.tf")).unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        main.replace(
            "  taint {\n    key    = \"nvidia.com/gpu\"",
            "  force = true\n  taint {\n    key    = \"nvidia.com/gpu\"",
        ),
    )
    .unwrap();
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        node_taints(&cluster, &node),
        [
            "gpu-only=true:PreferNoSchedule",
            "nvidia.com/gpu=present:NoSchedule"
        ],
    );
}

/// Terraform's kubernetes and helm providers with empty blocks read their cluster from the
/// environment a CI job gives them (`KUBE_CONFIG_PATH`; no `KUBECONFIG`, no
/// `~/.kube/config`): a ConfigMap and a local chart's release apply, and are destroyed.
#[test]
fn empty_kubernetes_and_helm_provider_blocks_read_kube_config_path() {
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    let chart = stack.dir.join("chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  from: chart\n",
    )
    .unwrap();
    std::fs::write(
        stack.dir.join("main.tf"),
        r#"terraform {
  required_providers {
    kubernetes = {
      source = "hashicorp/kubernetes"
    }
    helm = {
      source = "hashicorp/helm"
    }
  }
}

variable "kubeconfig" {
  type = string
}

provider "kubernetes" {}

provider "helm" {}

resource "kubernetes_config_map_v1" "env" {
  metadata {
    name      = "kube-config-path"
    namespace = "default"
  }
  data = {
    from = "KUBE_CONFIG_PATH"
  }
}

resource "helm_release" "tiny" {
  name      = "kube-config-path-tiny"
  chart     = "./chart"
  namespace = "default"
}
"#,
    )
    .unwrap();
    let kubeconfig = gpustack_tests::cluster::e2e_cluster()
        .kubeconfig
        .display()
        .to_string();
    stack.env.push(("KUBE_CONFIG_PATH".into(), kubeconfig));
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["-auto-approve"]);
    let c = gpustack_tests::cluster::e2e_cluster();
    assert_eq!(
        config_map_value(c, "kube-config-path", "from"),
        "KUBE_CONFIG_PATH"
    );
    assert_eq!(
        config_map_value(c, "kube-config-path-tiny", "from"),
        "chart"
    );
    let out = stack.run("plan", &["-detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    stack.ok("destroy", &["-auto-approve"]);
}

/// The value of `key` in the ConfigMap `name` of `default`.
fn config_map_value(c: &TestCluster, name: &str, key: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "configmap",
        name,
        "-n",
        "default",
        "-o",
        &format!("jsonpath={{.data.{key}}}"),
    ])
    .trim()
    .to_owned()
}

/// `config_context_cluster` and `config_context_auth_info` (or `KUBE_CTX_CLUSTER` and
/// `KUBE_CTX_AUTH_INFO`) replace the cluster and user of the kubeconfig's context, for the
/// kubernetes provider and for the helm provider's `kubernetes` block alike: the kubeconfig
/// here has a current context whose cluster does not answer and whose user has a bogus token.
#[test]
fn a_context_s_user_and_cluster_are_replaced_as_the_provider_block_says() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    tiny_chart(&stack.dir);
    let view = |path: &str| {
        c.kubectl_ok(&[
            "config",
            "view",
            "--minify",
            "-o",
            &format!("jsonpath={path}"),
        ])
        .trim()
        .to_owned()
    };
    let (cluster, user) = (
        view("{.contexts[0].context.cluster}"),
        view("{.contexts[0].context.user}"),
    );
    let kubeconfig = stack.dir.join("kubeconfig");
    std::fs::copy(&c.kubeconfig, &kubeconfig).unwrap();
    let kubeconfig = kubeconfig.display().to_string();
    let config = |args: &[&str]| {
        // The copy's --kubeconfig, given after the cluster's own, is the one kubectl uses.
        let out = c
            .kubectl_command()
            .args(["--kubeconfig", &kubeconfig, "config"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    config(&["set-cluster", "nowhere", "--server=https://127.0.0.1:9"]);
    config(&["set-credentials", "nobody", "--token=not-a-token"]);
    config(&["set-context", "wrong", "--cluster=nowhere", "--user=nobody"]);
    config(&["use-context", "wrong"]);
    let unchosen = c
        .kubectl_command()
        .args([
            "--kubeconfig",
            &kubeconfig,
            "get",
            "ns",
            "--request-timeout=5s",
        ])
        .output()
        .unwrap();
    assert!(
        !unchosen.status.success(),
        "the current context reaches a cluster"
    );
    std::fs::write(
        stack.dir.join("main.tf"),
        format!(
            r#"terraform {{
  required_providers {{
    kubernetes = {{
      source = "hashicorp/kubernetes"
    }}
    helm = {{
      source = "hashicorp/helm"
    }}
  }}
}}

variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path            = "{kubeconfig}"
  config_context_cluster = "{cluster}"
}}

provider "helm" {{
  kubernetes {{
    config_path              = "{kubeconfig}"
    config_context_cluster   = "{cluster}"
    config_context_auth_info = "{user}"
  }}
}}

resource "kubernetes_config_map_v1" "chosen" {{
  metadata {{
    name      = "context-chosen"
    namespace = "default"
  }}
  data = {{
    user = "{user}"
  }}
}}

resource "helm_release" "chosen" {{
  name      = "context-chosen-tiny"
  chart     = "./chart"
  namespace = "default"
}}
"#
        ),
    )
    .unwrap();
    // The kubernetes provider's user from the environment, as Terraform's provider reads it.
    stack.env.push(("KUBE_CTX_AUTH_INFO".into(), user.clone()));
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(config_map_value(c, "context-chosen", "user"), user);
    assert_eq!(
        config_map_value(c, "context-chosen-tiny", "made"),
        "by hand"
    );
    let out = stack.run("plan", &["-detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    stack.ok("destroy", &["-auto-approve"]);
}

/// `config_paths` naming two kubeconfig files — the cluster and context in one, the user in
/// the other, whose same-named cluster and context and whose current context point nowhere —
/// reaches the cluster as kubectl does with `KUBECONFIG=a:b`: the first file to name a thing
/// decides it. The kubernetes provider, the helm provider and the kubernetes backend alike.
#[test]
fn several_kubeconfig_files_are_merged_as_kubectl_merges_them() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    tiny_chart(&stack.dir);
    let whole: serde_json::Value =
        serde_json::from_str(&c.kubectl_ok(&["config", "view", "--raw", "--minify", "-o", "json"]))
            .unwrap();
    let context = whole["contexts"][0].clone();
    let (context_name, cluster_name) = (
        context["name"].as_str().unwrap().to_owned(),
        context["context"]["cluster"].as_str().unwrap().to_owned(),
    );
    let first = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": whole["clusters"], "contexts": [context],
        "current-context": context_name,
    });
    let second = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{ "name": cluster_name, "cluster": { "server": "https://127.0.0.1:9" } }],
        "users": whole["users"],
        "contexts": [
            { "name": context_name, "context": { "cluster": cluster_name, "user": "nobody" } },
            { "name": "elsewhere", "context": { "cluster": cluster_name, "user": "nobody" } },
        ],
        "current-context": "elsewhere",
    });
    let (a, b) = (
        stack.dir.join("a.kubeconfig"),
        stack.dir.join("b.kubeconfig"),
    );
    std::fs::write(&a, first.to_string()).unwrap();
    std::fs::write(&b, second.to_string()).unwrap();
    let paths = format!("[\"{}\", \"{}\"]", a.display(), b.display());
    let suffix = format!("merged-{}", std::process::id());
    std::fs::write(
        stack.dir.join("main.tf"),
        format!(
            r#"terraform {{
  backend "kubernetes" {{
    secret_suffix = "{suffix}"
    namespace     = "default"
    config_paths  = {paths}
  }}
}}

variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_paths = {paths}
}}

provider "helm" {{
  kubernetes {{
    config_paths = {paths}
  }}
}}

resource "kubernetes_config_map_v1" "merged" {{
  metadata {{
    name      = "kubeconfigs-merged"
    namespace = "default"
  }}
  data = {{
    files = "2"
  }}
}}

resource "helm_release" "merged" {{
  name      = "kubeconfigs-merged-tiny"
  chart     = "./chart"
  namespace = "default"
}}
"#
        ),
    )
    .unwrap();
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    stack.ok("init", &[]);
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(config_map_value(c, "kubeconfigs-merged", "files"), "2");
    assert_eq!(
        config_map_value(c, "kubeconfigs-merged-tiny", "made"),
        "by hand"
    );
    let secrets = c.kubectl_ok(&[
        "get",
        "secrets",
        "-n",
        "default",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert!(
        secrets.contains(&format!("gpustack-state-{suffix}")),
        "no state Secret: {secrets}"
    );
    let out = stack.run("plan", &["-detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    stack.ok("destroy", &["-auto-approve"]);
    c.kubectl_ok(&[
        "delete",
        "secret",
        "-n",
        "default",
        &format!("gpustack-state-{suffix}"),
        "--ignore-not-found",
    ]);
}

/// `replace = true` takes the name of a release that was uninstalled with its history kept,
/// as `helm install --replace` does; without it the plan refuses the name as another's.
#[test]
fn helm_release_replace_reuses_the_name_of_an_uninstalled_release() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    let chart = tiny_chart(&stack.dir);
    let helm = |args: &[&str]| {
        let out = std::process::Command::new(c.helm_dir().join("helm"))
            .args(args)
            .args(["-n", "default"])
            .env("KUBECONFIG", &c.kubeconfig)
            .output()
            .unwrap();
        assert!(out.status.success(), "helm {args:?}: {out:?}");
    };
    let chart_path = chart.display().to_string();
    helm(&["install", "replaced-by-name", &chart_path]);
    helm(&["uninstall", "replaced-by-name", "--keep-history"]);
    let tf = |replace: bool| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "helm" {{
  kubernetes {{
    config_path = var.kubeconfig
  }}
}}

resource "helm_release" "tiny" {{
  name      = "replaced-by-name"
  chart     = "./chart"
  namespace = "default"
  replace   = {replace}
  set {{
    name  = "made"
    value = "by gpustack"
  }}
}}
"#
        )
    };
    std::fs::write(stack.dir.join("main.tf"), tf(false)).unwrap();
    let out = stack.run("plan", &[]);
    let text = format!("{out:?}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("already exists"), "{text}");
    std::fs::write(stack.dir.join("main.tf"), tf(true)).unwrap();
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    let _destroy = Destroy(&stack);
    stack.ok("apply", &["-auto-approve"]);
    let made = c.kubectl_ok(&[
        "get",
        "configmap",
        "replaced-by-name",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.made}",
    ]);
    assert_eq!(made.trim(), "by gpustack");
    let out = stack.run("plan", &["-detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// A chart of one ConfigMap named after the release, whose `made` is the value `made` (else
/// "by hand"), in `dir`/chart.
fn tiny_chart(dir: &Path) -> std::path::PathBuf {
    let chart = dir.join("chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  made: {{ .Values.made | default \"by hand\" | quote }}\n",
    )
    .unwrap();
    chart
}

/// `reset_values = false` upgrades with helm's own rule, as Terraform's provider does: an
/// upgrade given no values keeps the previous release's; unset, gpustack resets them.
#[test]
fn helm_release_reset_values_false_keeps_the_previous_values_of_an_upgrade_given_none() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    tiny_chart(&stack.dir);
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    let tf = |body: &str| {
        format!(
            "variable \"kubeconfig\" {{\n  type = string\n}}\n\nprovider \"helm\" {{\n  kubernetes {{\n    config_path = var.kubeconfig\n  }}\n}}\n\nresource \"helm_release\" \"tiny\" {{\n  name      = \"reset-values-false\"\n  chart     = \"./chart\"\n  namespace = \"default\"\n{body}}}\n"
        )
    };
    let made = || {
        c.kubectl_ok(&[
            "get",
            "configmap",
            "reset-values-false",
            "-n",
            "default",
            "-o",
            "jsonpath={.data.made}",
        ])
        .trim()
        .to_owned()
    };
    let _destroy = Destroy(&stack);
    std::fs::write(
        stack.dir.join("main.tf"),
        tf("  set {\n    name  = \"made\"\n    value = \"first\"\n  }\n"),
    )
    .unwrap();
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(made(), "first");
    // No values and reset_values = false: helm keeps the previous release's values.
    std::fs::write(
        stack.dir.join("main.tf"),
        tf("  reset_values = false\n  description  = \"second\"\n"),
    )
    .unwrap();
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(made(), "first");
    // Unset: the values are exactly the stack's, none.
    std::fs::write(stack.dir.join("main.tf"), tf("  description = \"third\"\n")).unwrap();
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(made(), "by hand");
    // reuse_values = true: the new values merged into the previous release's.
    std::fs::write(
        stack.dir.join("main.tf"),
        tf("  set {\n    name  = \"made\"\n    value = \"fourth\"\n  }\n"),
    )
    .unwrap();
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(made(), "fourth");
    std::fs::write(
        stack.dir.join("main.tf"),
        tf("  reuse_values = true\n  set {\n    name  = \"other\"\n    value = \"x\"\n  }\n"),
    )
    .unwrap();
    stack.ok("apply", &["-auto-approve"]);
    assert_eq!(made(), "fourth", "the previous release's value is kept");
}

/// A server on a free local port answering every request with `body`, until the process ends.
fn manifest_server(body: &'static str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/manifest.yaml", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The utility providers a Terraform stack uses beside the cluster's, together: a
/// `random_password` in a Secret, a `null_resource` whose `local-exec` writes a file and
/// whose destroy-time one removes it, a `time_sleep` between two objects, a manifest read by
/// `data "http"` applied by `kubectl_manifest`, a `tls_self_signed_cert` in a TLS Secret.
/// It applies, a second plan is empty, and destroy runs the destroy-time command.
#[test]
fn the_utility_providers_of_a_terraform_stack_apply_together() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    let url = manifest_server(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-http\n  namespace: utility-world\ndata:\n  fetched: \"yes\"\n",
    );
    std::fs::write(
        stack.dir.join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

provider "kubectl" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_namespace_v1" "world" {{
  metadata {{
    name = "utility-world"
  }}
}}

resource "random_password" "db" {{
  length  = 20
  special = false
}}

resource "kubernetes_secret_v1" "db" {{
  metadata {{
    name      = "db"
    namespace = kubernetes_namespace_v1.world.metadata[0].name
  }}
  data = {{
    password = random_password.db.result
  }}
}}

resource "null_resource" "marker" {{
  triggers = {{
    namespace = kubernetes_namespace_v1.world.metadata[0].name
  }}

  provisioner "local-exec" {{
    command = "echo made > marker.txt"
  }}

  provisioner "local-exec" {{
    when    = destroy
    command = "rm -f marker.txt"
  }}
}}

resource "time_sleep" "settle" {{
  create_duration = "2s"
  depends_on      = [kubernetes_secret_v1.db]
}}

data "http" "manifest" {{
  url = "{url}"
}}

resource "kubectl_manifest" "from_http" {{
  yaml_body  = data.http.manifest.response_body
  depends_on = [time_sleep.settle]
}}

resource "tls_private_key" "webhook" {{
  algorithm   = "ECDSA"
  ecdsa_curve = "P256"
}}

resource "tls_self_signed_cert" "webhook" {{
  private_key_pem       = tls_private_key.webhook.private_key_pem
  validity_period_hours = 24
  allowed_uses          = ["digital_signature", "server_auth"]
  dns_names             = ["webhook.utility-world.svc"]

  subject {{
    common_name = "webhook.utility-world.svc"
  }}
}}

resource "kubernetes_secret_v1" "webhook_tls" {{
  metadata {{
    name      = "webhook-tls"
    namespace = kubernetes_namespace_v1.world.metadata[0].name
  }}
  type = "kubernetes.io/tls"
  data = {{
    "tls.crt" = tls_self_signed_cert.webhook.cert_pem
    "tls.key" = tls_private_key.webhook.private_key_pem
  }}
}}
"#
        ),
    )
    .unwrap();
    let _destroy = super::e2e::DestroyOnDrop(&stack);
    let started = Instant::now();
    stack.ok("apply", &["-auto-approve"]);
    assert!(started.elapsed().as_secs_f64() >= 2.0, "time_sleep waited");
    let get = |kind: &str, name: &str, path: &str| {
        c.kubectl_ok(&[
            "get",
            kind,
            name,
            "-n",
            "utility-world",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    use base64::Engine;
    let decode = |b64: String| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .unwrap(),
        )
        .unwrap()
    };
    let password = decode(get("secret", "db", "{.data.password}"));
    assert_eq!(password.len(), 20, "{password}");
    assert!(password.chars().all(char::is_alphanumeric), "{password}");
    let cert = decode(get("secret", "webhook-tls", "{.data.tls\\.crt}"));
    assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
    let key = decode(get("secret", "webhook-tls", "{.data.tls\\.key}"));
    assert!(
        key.starts_with("-----BEGIN EC PRIVATE KEY-----"),
        "the key itself, not a digest"
    );
    assert_eq!(
        get("configmap", "from-http", "{.data.fetched}").trim(),
        "yes"
    );
    assert_eq!(
        std::fs::read_to_string(stack.dir.join("marker.txt"))
            .unwrap()
            .trim(),
        "made"
    );
    let state = std::fs::read_to_string(stack.dir.join(".gpustack/state.json")).unwrap();
    assert!(!state.contains(&password) && !state.contains("PRIVATE KEY-----"));

    let out = stack.run("plan", &["-detailed-exitcode"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a second plan is empty: {out:?}"
    );

    stack.ok("destroy", &["-auto-approve"]);
    assert!(
        !stack.dir.join("marker.txt").exists(),
        "the destroy-time command ran"
    );
}

/// The plan says what apply would refuse for want of a namespace, at the object's line: a
/// ConfigMap into a namespace that only a chart's `create_namespace` makes, after it (the
/// chart depends on it: the public time-slicing module's order); one into a namespace nothing
/// makes; and, as a warning, one whose namespace is made by a release nothing orders first.
/// Ordered right, the plan says nothing.
#[test]
fn the_plan_refuses_an_object_applied_before_its_namespace_exists() {
    let stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    tiny_chart(&stack.dir);
    let tf = |config_map_extra: &str, release_extra: &str, namespace: &str| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

provider "helm" {{
  kubernetes {{
    config_path = var.kubeconfig
  }}
}}

resource "kubernetes_config_map_v1" "time_slicing" {{
  metadata {{
    name      = "time-slicing-config"
    namespace = "{namespace}"
  }}
  data = {{
    any = "version: v1"
  }}
  {config_map_extra}
}}

resource "helm_release" "operator" {{
  name             = "order-tiny"
  chart            = "./chart"
  namespace        = "order-world"
  create_namespace = true
  {release_extra}
}}
"#
        )
    };
    let plan = |text: String| {
        std::fs::write(stack.dir.join("main.tf"), text).unwrap();
        let out = stack.run("plan", &["-no-color"]);
        // Words as the diagnostic says them, whatever its lines' width.
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (
            out.status.code(),
            text.split_whitespace().collect::<Vec<_>>().join(" "),
        )
    };
    let (code, text) = plan(tf(
        "",
        "depends_on = [kubernetes_config_map_v1.time_slicing]",
        "order-world",
    ));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("Applied before what it needs")
            && text.contains("kubernetes_config_map_v1.time_slicing needs the namespace order-world, which helm_release.operator makes, but helm_release.operator applies after")
            && text.contains("main.tf:15"),
        "{text}"
    );
    let (code, text) = plan(tf("", "", "nowhere-made"));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("needs the namespace nowhere-made, which does not exist, and nothing in this plan makes it"),
        "{text}"
    );
    let (code, text) = plan(tf("", "", "order-world"));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("Nothing orders what it needs first")
            && text.contains("depends_on = [helm_release.operator]"),
        "{text}"
    );
    let (code, text) = plan(tf(
        "depends_on = [helm_release.operator]",
        "",
        "order-world",
    ));
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("needs the namespace"), "{text}");
}

/// A second GPU Operator into a cluster that runs one (installed by another Helm release) is
/// refused at plan, naming the release that owns the cluster's ClusterPolicy: helm would
/// refuse the other's cluster-scoped objects at apply, and two operators would fight.
#[test]
fn the_plan_refuses_a_second_gpu_operator() {
    let c = gpustack_tests::cluster::cluster();
    let dir = tempfile::tempdir().unwrap();
    let chart = tiny_chart(dir.path());
    std::fs::rename(&chart, dir.path().join("gpu-operator")).unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        r#"variable "kubeconfig" {
  type = string
}

provider "helm" {
  kubernetes {
    config_path = var.kubeconfig
  }
}

resource "helm_release" "operator" {
  name             = "second-operator"
  chart            = "./gpu-operator"
  namespace        = "second-operator"
  create_namespace = true
}
"#,
    )
    .unwrap();
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let (code, out, err) = run(
        dir.path(),
        &["plan", "-no-color", "-var", &kubeconfig],
        &[("PATH", &helm_path(c))],
    );
    let text = format!("{out}{err}")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(code, 1, "{text}");
    // The renderer may break a line at a hyphen.
    let squashed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        text.contains("Second GPU Operator")
            && squashed.contains("belongstotheHelmreleasegpu-operator/gpu-operator")
            && text.contains("main.tf:11"),
        "{text}"
    );
}

/// NVIDIA's standalone device plugin chart where the GPU Operator's device plugin already
/// serves the GPU nodes is refused at plan; placed on other nodes with a nodeSelector, it
/// plans.
#[test]
fn the_plan_refuses_a_second_device_plugin() {
    let c = gpustack_tests::cluster::cluster();
    let dir = tempfile::tempdir().unwrap();
    let chart = tiny_chart(dir.path());
    std::fs::rename(&chart, dir.path().join("nvidia-device-plugin")).unwrap();
    let tf = |values: &str| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "helm" {{
  kubernetes {{
    config_path = var.kubeconfig
  }}
}}

resource "helm_release" "plugin" {{
  name             = "standalone-plugin"
  chart            = "./nvidia-device-plugin"
  namespace        = "standalone-plugin"
  create_namespace = true
  {values}
}}
"#
        )
    };
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let plan = || {
        let (code, out, err) = run(
            dir.path(),
            &["plan", "-no-color", "-var", &kubeconfig],
            &[("PATH", &helm_path(c))],
        );
        (
            code,
            format!("{out}{err}")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    };
    std::fs::write(dir.path().join("main.tf"), tf("")).unwrap();
    let (code, text) = plan();
    assert_eq!(code, 1, "{text}");
    let squashed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        text.contains("Second device plugin")
            && squashed.contains("theGPUOperator'sdeviceplugin(ClusterPolicycluster-policy")
            && text.contains("main.tf:11"),
        "{text}"
    );
    std::fs::write(
        dir.path().join("main.tf"),
        tf(r#"values = { nodeSelector = { "gpustack.dev/standalone-plugin" = "true" } }"#),
    )
    .unwrap();
    let (code, text) = plan();
    assert_eq!(code, 0, "{text}");
}

fn helm_path(c: &TestCluster) -> String {
    format!(
        "{}:{}",
        c.helm_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `lint = true` lints the chart with the release's values at plan, as the Terraform
/// provider does: a chart whose template fails is an error at the release, with helm's
/// finding; a sound chart plans.
#[test]
fn helm_release_lint_reports_the_charts_findings_at_plan() {
    let stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    let chart = tiny_chart(&stack.dir);
    let tf = r#"variable "kubeconfig" {
  type = string
}

provider "helm" {
  kubernetes {
    config_path = var.kubeconfig
  }
}

resource "helm_release" "linted" {
  name      = "linted"
  chart     = "./chart"
  namespace = "default"
  lint      = true
}
"#;
    std::fs::write(stack.dir.join("main.tf"), tf).unwrap();
    let out = stack.run("plan", &["-no-color"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    std::fs::write(
        chart.join("templates/broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.key }}\n",
    )
    .unwrap();
    let out = stack.run("plan", &["-no-color"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Chart lint failed")
            && text.contains("broken.yaml")
            && text.contains("main.tf:11"),
        "{text}"
    );
}

/// A version the chart repository does not list is refused at plan, at `version`, from
/// helm's own lookup in the repository's index; a listed one plans.
#[test]
fn a_chart_version_the_repository_does_not_list_is_refused_at_plan() {
    let c = gpustack_tests::cluster::e2e_cluster();
    let mut stack = super::e2e::Stack::inline("");
    std::fs::remove_file(stack.dir.join("main.hcl")).unwrap();
    let chart = tiny_chart(&stack.dir);
    // A chart repository: the packaged chart and helm's index of it, served over HTTP.
    let repo = stack.dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let helm = |args: &[&str]| {
        let out = std::process::Command::new(c.helm_dir().join("helm"))
            .args(args)
            .env("HOME", &stack.dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "helm {args:?}: {out:?}");
    };
    helm(&[
        "package",
        chart.to_str().unwrap(),
        "-d",
        repo.to_str().unwrap(),
    ]);
    helm(&["repo", "index", repo.to_str().unwrap(), "--url", &url]);
    let served = repo.clone();
    gpustack_tests::http::serve(listener, None, move || async move {
        move |request: hyper::Request<hyper::body::Incoming>| {
            let file = served.join(request.uri().path().trim_start_matches('/'));
            async move {
                let body = std::fs::read(&file).unwrap_or_default();
                Ok(hyper::Response::builder()
                    .status(if body.is_empty() { 404 } else { 200 })
                    .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
                    .unwrap())
            }
        }
    });
    let tf = |version: &str| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "helm" {{
  kubernetes {{
    config_path = var.kubeconfig
  }}
}}

resource "helm_release" "tiny" {{
  name       = "from-a-repository"
  chart      = "tiny"
  repository = "{url}"
  version    = "{version}"
  namespace  = "default"
}}
"#
        )
    };
    stack
        .env
        .push(("HOME".into(), stack.dir.display().to_string()));
    std::fs::write(stack.dir.join("main.tf"), tf("9.9.9")).unwrap();
    let out = stack.run("plan", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Chart version not in the repository")
            && text.contains("main.tf:15")
            && text.contains("version 9.9.9 of tiny"),
        "{text}"
    );
    std::fs::write(stack.dir.join("main.tf"), tf("0.1.0")).unwrap();
    let out = stack.run("plan", &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Terraform's typed network policy, ingress (a path's type defaulted as Terraform's provider
/// does) and ingress class, autoscalers (v1, and v2 on a DCGM metric), CSI
/// driver, admission webhooks (a CA bundle as text), persistent volumes (their source in
/// Terraform's `persistent_volume_source` block) and runtime class, as its provider's schema spells them (a rule's `ports` stays plural, an
/// autoscaler's `metric` and `policy` are singular), apply as the objects they describe;
/// the next plan is empty and destroy removes them.
#[test]
fn typed_network_policy_ingress_class_autoscaler_and_runtime_class_apply_as_terraform_writes_them()
{
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-netpol");
    let id = std::process::id();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_network_policy_v1" "gpu_jobs" {{
  metadata {{
    name      = "gpu-jobs"
    namespace = "{ns}"
  }}
  spec {{
    pod_selector {{
      match_labels = {{
        app = "trainer"
      }}
    }}
    ingress {{
      ports {{
        port     = "8080"
        protocol = "TCP"
      }}
      ports {{
        port     = "metrics"
        protocol = "TCP"
      }}
      from {{
        namespace_selector {{
          match_expressions {{
            key      = "team"
            operator = "In"
            values   = ["ml"]
          }}
        }}
      }}
      from {{
        ip_block {{
          cidr   = "10.0.0.0/8"
          except = ["10.1.0.0/16"]
        }}
      }}
    }}
    egress {{
      ports {{
        port     = "443"
        protocol = "TCP"
        end_port = 8443
      }}
    }}
    policy_types = ["Ingress", "Egress"]
  }}
}}

resource "kubernetes_ingress_class_v1" "internal" {{
  metadata {{
    name = "internal-{id}"
  }}
  spec {{
    controller = "example.com/ingress-controller"
    parameters {{
      api_group = "k8s.example.com"
      kind      = "IngressParameters"
      name      = "internal"
      scope     = "Cluster"
    }}
  }}
}}

resource "kubernetes_horizontal_pod_autoscaler_v2" "inference" {{
  metadata {{
    name      = "inference"
    namespace = "{ns}"
  }}
  spec {{
    min_replicas = 1
    max_replicas = 4
    scale_target_ref {{
      api_version = "apps/v1"
      kind        = "Deployment"
      name        = "inference"
    }}
    metric {{
      type = "Pods"
      pods {{
        metric {{
          name = "DCGM_FI_DEV_GPU_UTIL"
        }}
        target {{
          type          = "AverageValue"
          average_value = "80"
        }}
      }}
    }}
    behavior {{
      scale_down {{
        stabilization_window_seconds = 300
        select_policy                = "Min"
        policy {{
          type           = "Pods"
          value          = 1
          period_seconds = 60
        }}
      }}
    }}
  }}
}}

resource "kubernetes_horizontal_pod_autoscaler_v1" "cpu" {{
  metadata {{
    name      = "cpu"
    namespace = "{ns}"
  }}
  spec {{
    max_replicas                      = 3
    target_cpu_utilization_percentage = 70
    scale_target_ref {{
      api_version = "apps/v1"
      kind        = "Deployment"
      name        = "inference"
    }}
  }}
}}

resource "kubernetes_csi_driver_v1" "local" {{
  metadata {{
    name = "csi-{id}.example.com"
  }}
  spec {{
    attach_required        = false
    pod_info_on_mount      = true
    volume_lifecycle_modes = ["Ephemeral"]
  }}
}}

resource "kubernetes_validating_webhook_configuration_v1" "policy" {{
  metadata {{
    name = "policy-{id}"
  }}
  webhook {{
    name                      = "policy-{id}.example.com"
    admission_review_versions = ["v1"]
    side_effects              = "None"
    failure_policy            = "Ignore"
    client_config {{
      ca_bundle = "-----BEGIN CERTIFICATE-----\nnot-a-real-one\n-----END CERTIFICATE-----\n"
      service {{
        namespace = "{ns}"
        name      = "policy"
        port      = 8443
      }}
    }}
    rule {{
      api_groups   = ["example.com"]
      api_versions = ["v1"]
      operations   = ["CREATE"]
      resources    = ["gadgets"]
      scope        = "Namespaced"
    }}
  }}
}}

resource "kubernetes_mutating_webhook_configuration_v1" "inject" {{
  metadata {{
    name = "inject-{id}"
  }}
  webhook {{
    name                      = "inject-{id}.example.com"
    admission_review_versions = ["v1"]
    side_effects              = "None"
    failure_policy            = "Ignore"
    reinvocation_policy       = "IfNeeded"
    client_config {{
      url = "https://inject.example.com/mutate"
    }}
    rule {{
      api_groups   = ["example.com"]
      api_versions = ["v1"]
      operations   = ["CREATE"]
      resources    = ["gadgets"]
    }}
  }}
}}

resource "kubernetes_persistent_volume_v1" "models" {{
  metadata {{
    name = "models-{id}"
  }}
  spec {{
    capacity = {{
      storage = "100Gi"
    }}
    access_modes       = ["ReadOnlyMany"]
    storage_class_name = "models"
    mount_options      = ["nconnect=8"]
    persistent_volume_source {{
      csi {{
        driver        = "csi-{id}.example.com"
        volume_handle = "models"
        read_only     = true
        volume_attributes = {{
          share = "/models"
        }}
        node_publish_secret_ref {{
          name      = "models-creds"
          namespace = "{ns}"
        }}
      }}
    }}
    node_affinity {{
      required {{
        node_selector_term {{
          match_expressions {{
            key      = "nvidia.com/gpu.present"
            operator = "In"
            values   = ["true"]
          }}
        }}
      }}
    }}
    claim_ref {{
      namespace = "{ns}"
      name      = "models"
    }}
  }}
}}

resource "kubernetes_persistent_volume" "scratch" {{
  metadata {{
    name = "scratch-{id}"
  }}
  spec {{
    capacity = {{
      storage = "10Gi"
    }}
    access_modes = ["ReadWriteOnce"]
    persistent_volume_source {{
      host_path {{
        path = "/mnt/scratch"
        type = "DirectoryOrCreate"
      }}
    }}
    claim_ref {{
      name = "scratch"
    }}
  }}
}}

resource "kubernetes_ingress_v1" "inference" {{
  metadata {{
    name      = "inference"
    namespace = "{ns}"
  }}
  spec {{
    ingress_class_name = "internal-{id}"
    default_backend {{
      service {{
        name = "inference"
        port {{
          number = 8000
        }}
      }}
    }}
    rule {{
      host = "inference.example.com"
      http {{
        path {{
          path = "/v1"
          backend {{
            service {{
              name = "inference"
              port {{
                name = "http"
              }}
            }}
          }}
        }}
      }}
    }}
    tls {{
      hosts       = ["inference.example.com"]
      secret_name = "inference-tls"
    }}
  }}
}}

resource "kubernetes_runtime_class_v1" "nvidia" {{
  metadata {{
    name = "nvidia-{id}"
  }}
  handler = "nvidia"
}}
"#,
            ns = namespace.name
        ),
    )
    .unwrap();
    let vars = [(
        "GPUSTACK_VAR_kubeconfig",
        cluster.kubeconfig.to_str().unwrap(),
    )];
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let policy = cluster.kubectl_ok(&[
        "get",
        "networkpolicy",
        "gpu-jobs",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.spec.ingress[0].ports[*].port} {.spec.ingress[0].from[1].ipBlock.except[0]} {.spec.egress[0].ports[0].endPort} {.spec.podSelector.matchLabels.app}",
    ]);
    assert_eq!(policy.trim(), "8080 metrics 10.1.0.0/16 8443 trainer");
    let class = cluster.kubectl_ok(&[
        "get",
        "ingressclass",
        &format!("internal-{id}"),
        "-o",
        "jsonpath={.spec.controller} {.spec.parameters.apiGroup}",
    ]);
    assert_eq!(
        class.trim(),
        "example.com/ingress-controller k8s.example.com"
    );
    let hpa = cluster.kubectl_ok(&[
        "get",
        "hpa",
        "inference",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.spec.metrics[0].pods.metric.name} {.spec.behavior.scaleDown.policies[0].periodSeconds} {.spec.scaleTargetRef.name}",
    ]);
    assert_eq!(hpa.trim(), "DCGM_FI_DEV_GPU_UTIL 60 inference");
    let cpu: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(&[
        "get",
        "--raw",
        &format!(
            "/apis/autoscaling/v1/namespaces/{}/horizontalpodautoscalers/cpu",
            namespace.name
        ),
    ]))
    .unwrap();
    assert_eq!(cpu["spec"]["targetCPUUtilizationPercentage"], 70, "{cpu}");
    assert_eq!(cpu["spec"]["maxReplicas"], 3, "{cpu}");
    let csi = cluster.kubectl_ok(&[
        "get",
        "csidriver",
        &format!("csi-{id}.example.com"),
        "-o",
        "jsonpath={.spec.attachRequired} {.spec.podInfoOnMount} {.spec.volumeLifecycleModes[0]}",
    ]);
    assert_eq!(csi.trim(), "false true Ephemeral");
    let webhook = cluster.kubectl_ok(&[
        "get",
        "validatingwebhookconfiguration",
        &format!("policy-{id}"),
        "-o",
        "jsonpath={.webhooks[0].clientConfig.caBundle} {.webhooks[0].rules[0].resources[0]} {.webhooks[0].clientConfig.service.port}",
    ]);
    let fields: Vec<&str> = webhook.split_whitespace().collect();
    use base64::Engine as _;
    assert_eq!(
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(fields[0])
                .unwrap()
        )
        .unwrap(),
        "-----BEGIN CERTIFICATE-----\nnot-a-real-one\n-----END CERTIFICATE-----\n",
        "the CA bundle is held base64-encoded, as Terraform's provider sends it"
    );
    assert_eq!(&fields[1..], ["gadgets", "8443"]);
    let mutating = cluster.kubectl_ok(&[
        "get",
        "mutatingwebhookconfiguration",
        &format!("inject-{id}"),
        "-o",
        "jsonpath={.webhooks[0].reinvocationPolicy} {.webhooks[0].clientConfig.url}",
    ]);
    assert_eq!(
        mutating.trim(),
        "IfNeeded https://inject.example.com/mutate"
    );
    let volume = cluster.kubectl_ok(&[
        "get",
        "pv",
        &format!("models-{id}"),
        "-o",
        "jsonpath={.spec.csi.volumeHandle} {.spec.csi.nodePublishSecretRef.name} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key} {.spec.claimRef.name} {.spec.capacity.storage}",
    ]);
    assert_eq!(
        volume.trim(),
        "models models-creds nvidia.com/gpu.present models 100Gi"
    );
    let scratch = cluster.kubectl_ok(&[
        "get",
        "pv",
        &format!("scratch-{id}"),
        "-o",
        "jsonpath={.spec.hostPath.path} {.spec.persistentVolumeReclaimPolicy} {.spec.claimRef.namespace}",
    ]);
    // A claim named without a namespace is in `default`, as Terraform's provider sends it.
    assert_eq!(scratch.trim(), "/mnt/scratch Retain default");
    let ingress = cluster.kubectl_ok(&[
        "get",
        "ingress",
        "inference",
        "-n",
        &namespace.name,
        "-o",
        "jsonpath={.spec.rules[0].http.paths[0].pathType} {.spec.rules[0].http.paths[0].backend.service.port.name} {.spec.defaultBackend.service.port.number} {.spec.tls[0].secretName}",
    ]);
    // A path without path_type is ImplementationSpecific, as Terraform's provider sends it.
    assert_eq!(
        ingress.trim(),
        "ImplementationSpecific http 8000 inference-tls"
    );
    let runtime = cluster.kubectl_ok(&[
        "get",
        "runtimeclass",
        &format!("nvidia-{id}"),
        "-o",
        "jsonpath={.handler}",
    ]);
    assert_eq!(runtime.trim(), "nvidia");
    let (code, out, err) = run(dir.path(), &["plan", "-detailed-exitcode"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["destroy", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let left = cluster.kubectl(&["get", "runtimeclass", &format!("nvidia-{id}")]);
    assert!(!left.status.success(), "the runtime class is left");
}

/// A pod (apply waits for its `target_state`, `Running` by default), a replication controller
/// (apply waits for its labelled replicas, as Terraform's provider always does), endpoints, an
/// endpoint slice and an aggregated API service, written as Terraform writes them, and the
/// provider's other waits (a namespace's default service account when asked, a service account
/// token, a claim bound): each object is what the provider would send, the second plan is
/// empty and destroy removes them.
#[test]
fn typed_pod_replication_controller_endpoints_and_api_service_apply_as_terraform_writes_them() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-pods");
    let id = std::process::id();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_pod_v1" "probe" {{
  metadata {{
    name      = "probe"
    namespace = "{ns}"
    labels = {{
      app = "probe"
    }}
  }}
  spec {{
    container {{
      name  = "probe"
      image = "busybox:1.36"
      args  = ["sleep", "infinity"]
      port {{
        container_port = 8080
        name           = "http"
      }}
    }}
  }}
}}

resource "kubernetes_replication_controller_v1" "legacy" {{
  metadata {{
    name      = "legacy"
    namespace = "{ns}"
  }}
  spec {{
    replicas = 2
    selector = {{
      app = "legacy"
    }}
    template {{
      metadata {{
        labels = {{
          app = "legacy"
        }}
      }}
      spec {{
        container {{
          name  = "legacy"
          image = "busybox:1.36"
        }}
      }}
    }}
  }}
}}

resource "kubernetes_endpoints_v1" "external" {{
  metadata {{
    name      = "external"
    namespace = "{ns}"
  }}
  subset {{
    address {{
      ip       = "10.0.0.4"
      hostname = "gpu-a"
    }}
    not_ready_address {{
      ip = "10.0.0.5"
    }}
    port {{
      name     = "http"
      port     = 80
      protocol = "TCP"
    }}
  }}
}}

resource "kubernetes_endpoint_slice_v1" "external" {{
  metadata {{
    name      = "external-a"
    namespace = "{ns}"
    labels = {{
      "kubernetes.io/service-name" = "external"
    }}
  }}
  address_type = "IPv4"
  endpoint {{
    addresses = ["10.0.0.4"]
    hostname  = "gpu-a"
    condition {{
      ready = true
    }}
    target_ref {{
      kind      = "Pod"
      name      = "probe"
      namespace = "{ns}"
    }}
  }}
  port {{
    name         = "http"
    port         = "80"
    protocol     = "TCP"
    app_protocol = "http"
  }}
}}

resource "kubernetes_namespace_v1" "jobs" {{
  metadata {{
    name = "jobs-{id}"
  }}
  wait_for_default_service_account = true
}}

resource "kubernetes_service_account_v1" "ci" {{
  metadata {{
    name      = "ci"
    namespace = kubernetes_namespace_v1.jobs.metadata[0].name
  }}
}}

resource "kubernetes_secret_v1" "ci_token" {{
  metadata {{
    name      = "ci-token"
    namespace = kubernetes_namespace_v1.jobs.metadata[0].name
    annotations = {{
      "kubernetes.io/service-account.name" = kubernetes_service_account_v1.ci.metadata[0].name
    }}
  }}
  type = "kubernetes.io/service-account-token"
}}

resource "kubernetes_persistent_volume_v1" "cache" {{
  metadata {{
    name = "cache-{id}"
  }}
  spec {{
    capacity = {{
      storage = "1Gi"
    }}
    access_modes       = ["ReadWriteOnce"]
    storage_class_name = "manual-{id}"
    persistent_volume_source {{
      host_path {{
        path = "/mnt/cache"
      }}
    }}
  }}
}}

resource "kubernetes_persistent_volume_claim_v1" "cache" {{
  metadata {{
    name      = "cache"
    namespace = "{ns}"
  }}
  spec {{
    access_modes       = ["ReadWriteOnce"]
    storage_class_name = "manual-{id}"
    volume_name        = kubernetes_persistent_volume_v1.cache.metadata[0].name
    resources {{
      requests = {{
        storage = "1Gi"
      }}
    }}
  }}
}}

resource "kubernetes_api_service_v1" "metrics" {{
  metadata {{
    name = "v1alpha{id}.metrics.example.com"
  }}
  spec {{
    group                    = "metrics.example.com"
    version                  = "v1alpha{id}"
    group_priority_minimum   = 1000
    version_priority         = 15
    insecure_skip_tls_verify = true
    service {{
      name      = "metrics"
      namespace = "{ns}"
      port      = 443
    }}
  }}
}}
"#,
            ns = namespace.name
        ),
    )
    .unwrap();
    let vars = [(
        "GPUSTACK_VAR_kubeconfig",
        cluster.kubeconfig.to_str().unwrap(),
    )];
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let get = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-n", &namespace.name]);
        cluster.kubectl_ok(&all).trim().to_owned()
    };
    // Apply returned only once the pod ran and the controller's replicas were labelled.
    assert_eq!(
        get(&[
            "get",
            "pod",
            "probe",
            "-o",
            "jsonpath={.status.phase} {.spec.containers[0].ports[0].name}"
        ]),
        "Running http"
    );
    assert_eq!(
        get(&[
            "get",
            "rc",
            "legacy",
            "-o",
            "jsonpath={.status.fullyLabeledReplicas} {.spec.selector.app}"
        ]),
        "2 legacy"
    );
    assert_eq!(
        get(&[
            "get",
            "endpoints",
            "external",
            "-o",
            "jsonpath={.subsets[0].addresses[0].hostname} {.subsets[0].notReadyAddresses[0].ip} {.subsets[0].ports[0].port}"
        ]),
        "gpu-a 10.0.0.5 80"
    );
    assert_eq!(
        get(&[
            "get",
            "endpointslice",
            "external-a",
            "-o",
            "jsonpath={.addressType} {.endpoints[0].conditions.ready} {.endpoints[0].targetRef.name} {.ports[0].port} {.ports[0].appProtocol}"
        ]),
        "IPv4 true probe 80 http"
    );
    assert_eq!(
        cluster
            .kubectl_ok(&[
                "get",
                "apiservice",
                &format!("v1alpha{id}.metrics.example.com"),
                "-o",
                "jsonpath={.spec.service.name} {.spec.groupPriorityMinimum} {.spec.insecureSkipTLSVerify}",
            ])
            .trim(),
        "metrics 1000 true"
    );
    // Apply waited, as Terraform's provider does, for the namespace's default service
    // account, the token controller's token, and the claim to be bound.
    let token_namespace = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(format!("jobs-{id}"))
    };
    assert_eq!(
        cluster
            .kubectl_ok(&[
                "get",
                "secret",
                "ci-token",
                "-n",
                &format!("jobs-{id}"),
                "-o",
                "jsonpath={.type} {.data.namespace}",
            ])
            .trim(),
        format!("kubernetes.io/service-account-token {token_namespace}")
    );
    assert_eq!(
        get(&["get", "pvc", "cache", "-o", "jsonpath={.status.phase}"]),
        "Bound"
    );
    // The kinds' data sources read what the stack made.
    std::fs::write(
        dir.path().join("read.tf"),
        format!(
            r#"data "kubernetes_pod_v1" "probe" {{
  metadata {{
    name      = "probe"
    namespace = "{ns}"
  }}
}}

data "kubernetes_endpoints_v1" "external" {{
  metadata {{
    name      = "external"
    namespace = "{ns}"
  }}
}}

data "kubernetes_endpoint_slice_v1" "external" {{
  metadata {{
    name      = "external-a"
    namespace = "{ns}"
  }}
}}

data "kubernetes_persistent_volume_v1" "cache" {{
  metadata {{
    name = "cache-{id}"
  }}
}}

data "kubernetes_all_namespaces" "all" {{}}

data "kubernetes_server_version" "api" {{}}

provider "kubectl" {{
  config_path = var.kubeconfig
}}

data "kubectl_server_version" "api" {{}}

output "read" {{
  value = [
    data.kubernetes_pod_v1.probe.spec[0].container[0].image,
    data.kubernetes_endpoints_v1.external.subset[0].address[0].ip,
    data.kubernetes_endpoint_slice_v1.external.endpoint[0].target_ref[0].name,
    data.kubernetes_persistent_volume_v1.cache.spec[0].storage_class_name,
    contains(data.kubernetes_all_namespaces.all.namespaces, "{ns}"),
    startswith(data.kubernetes_server_version.api.version, "1."),
    data.kubectl_server_version.api.major == data.kubernetes_server_version.api.major,
  ]
}}
"#,
            ns = namespace.name
        ),
    )
    .unwrap();
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["output", "-json", "read"], &vars);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        serde_json::json!([
            "busybox:1.36",
            "10.0.0.4",
            "probe",
            format!("manual-{id}"),
            true,
            true,
            true
        ])
    );
    let (code, out, err) = run(dir.path(), &["plan", "-detailed-exitcode"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["destroy", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let left = cluster.kubectl(&[
        "get",
        "apiservice",
        &format!("v1alpha{id}.metrics.example.com"),
    ]);
    assert!(!left.status.success(), "the API service is left");
}

/// Keys of a ConfigMap and a Secret, variables of one container of a Deployment and the
/// settings of a namespace's default service account, all made by someone else, owned as
/// Terraform's `kubernetes_config_map_v1_data`, `kubernetes_secret_v1_data`, `kubernetes_env`
/// and `kubernetes_default_service_account_v1` own them: the others' keys and variables
/// stay, a value changed by hand is drift the next plan puts back, and destroy takes away only
/// this stack's.
#[test]
fn config_map_and_secret_data_and_env_own_only_their_fields() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-owned");
    let ns = namespace.name.clone();
    cluster.apply_yaml(&format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {ns}
data:
  theirs: kept
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: {ns}
stringData:
  theirs: kept
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
  namespace: {ns}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: infer
  template:
    metadata:
      labels:
        app: infer
    spec:
      containers:
        - name: sidecar
          image: busybox:1.36
        - name: server
          image: busybox:1.36
          env:
            - name: THEIRS
              value: kept
"#
    ));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_config_map_v1_data" "settings" {{
  metadata {{
    name      = "settings"
    namespace = "{ns}"
  }}
  data = {{
    "sharing.yaml" = "version: v1\n"
  }}
}}

resource "kubernetes_secret_v1_data" "creds" {{
  metadata {{
    name      = "creds"
    namespace = "{ns}"
  }}
  data = {{
    token = "s3cret-token"
  }}
}}

resource "kubernetes_default_service_account_v1" "default" {{
  metadata {{
    namespace = "{ns}"
    labels = {{
      team = "ml"
    }}
  }}
  image_pull_secret {{
    name = "regcred"
  }}
  automount_service_account_token = false
}}

resource "kubernetes_env" "server" {{
  api_version = "apps/v1"
  kind        = "Deployment"
  container   = "server"
  metadata {{
    name      = "infer"
    namespace = "{ns}"
  }}
  env {{
    name  = "NCCL_DEBUG"
    value = "INFO"
  }}
  env {{
    name = "POD_IP"
    value_from {{
      field_ref {{
        field_path = "status.podIP"
      }}
    }}
  }}
}}
"#
        ),
    )
    .unwrap();
    let vars = [(
        "GPUSTACK_VAR_kubeconfig",
        cluster.kubeconfig.to_str().unwrap(),
    )];
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !out.contains("s3cret-token") && !err.contains("s3cret-token"),
        "{out}{err}"
    );
    let get = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-n", ns.as_str()]);
        cluster.kubectl_ok(&all).trim().to_owned()
    };
    assert_eq!(
        get(&[
            "get",
            "configmap",
            "settings",
            "-o",
            "jsonpath={.data.theirs} {.data.sharing\\.yaml}"
        ]),
        "kept version: v1"
    );
    use base64::Engine as _;
    let token = get(&[
        "get",
        "secret",
        "creds",
        "-o",
        "jsonpath={.data.token} {.data.theirs}",
    ]);
    let decoded: Vec<String> = token
        .split_whitespace()
        .map(|t| {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(t).unwrap()).unwrap()
        })
        .collect();
    assert_eq!(decoded, ["s3cret-token", "kept"]);
    assert_eq!(
        get(&[
            "get",
            "deployment",
            "infer",
            "-o",
            "jsonpath={.spec.template.spec.containers[1].env[*].name} {.spec.template.spec.containers[1].env[2].valueFrom.fieldRef.fieldPath} {.spec.template.spec.containers[0].env}",
        ]),
        "THEIRS NCCL_DEBUG POD_IP status.podIP"
    );
    assert_eq!(
        get(&[
            "get",
            "serviceaccount",
            "default",
            "-o",
            "jsonpath={.imagePullSecrets[0].name} {.automountServiceAccountToken} {.metadata.labels.team}",
        ]),
        "regcred false ml"
    );
    let state = std::fs::read_to_string(dir.path().join(".gpustack/state.json")).unwrap();
    assert!(
        !state.contains("s3cret-token"),
        "the secret is in the state"
    );
    let (code, out, err) = run(dir.path(), &["plan", "-detailed-exitcode"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    // A value changed by hand is drift, put back by the next apply.
    cluster.kubectl_ok(&[
        "set",
        "env",
        "deployment/infer",
        "-c",
        "server",
        "NCCL_DEBUG=WARN",
        "-n",
        &ns,
    ]);
    let (code, out, err) = run(dir.path(), &["plan", "-detailed-exitcode"], &vars);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("kubernetes_env.server will be updated"),
        "{out}"
    );
    // Whoever changed it owns the field now: taking it back is a conflict, as in Terraform,
    // until the resource says force.
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("conflict with \"kubectl-set\""), "{err}");
    let main = std::fs::read_to_string(dir.path().join("main.tf")).unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        main.replace(
            "container   = \"server\"",
            "container   = \"server\"\n  force       = true",
        ),
    )
    .unwrap();
    let (code, out, err) = run(dir.path(), &["apply", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        get(&[
            "get",
            "deployment",
            "infer",
            "-o",
            "jsonpath={.spec.template.spec.containers[1].env[1].value}"
        ]),
        "INFO"
    );
    let (code, out, err) = run(dir.path(), &["destroy", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        get(&["get", "configmap", "settings", "-o", "jsonpath={.data}"]),
        r#"{"theirs":"kept"}"#
    );
    assert_eq!(
        get(&["get", "secret", "creds", "-o", "jsonpath={.data.token}"]),
        ""
    );
    assert_eq!(
        get(&[
            "get",
            "deployment",
            "infer",
            "-o",
            "jsonpath={.spec.template.spec.containers[1].env[*].name}"
        ]),
        "THEIRS"
    );
    // The service account Kubernetes made stays, without the settings this stack gave it.
    assert_eq!(
        get(&[
            "get",
            "serviceaccount",
            "default",
            "-o",
            "jsonpath={.imagePullSecrets}"
        ]),
        ""
    );
}

/// A Secret's write-only data, as Terraform 1.11's `data_wo`: applied when the Secret is made,
/// again only when `data_wo_revision` changes, and in no file gpustack writes; the keys it set
/// stay while the Secret's other fields change.
#[test]
fn a_secrets_write_only_data_is_applied_by_revision_and_written_nowhere() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-wo");
    let dir = tempfile::tempdir().unwrap();
    let stack = |revision: u32, label: &str| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

variable "token" {{
  type      = string
  ephemeral = true
  sensitive = true
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_secret_v1" "registry" {{
  metadata {{
    name      = "registry"
    namespace = "{ns}"
    labels = {{
      tier = "{label}"
    }}
  }}
  data_wo = {{
    token = var.token
  }}
  data_wo_revision = {revision}
}}
"#,
            ns = namespace.name
        )
    };
    let vars = |token: &'static str| {
        [
            (
                "GPUSTACK_VAR_kubeconfig",
                cluster.kubeconfig.to_str().unwrap(),
            ),
            ("TF_VAR_token", token),
        ]
    };
    let token = || {
        use base64::Engine as _;
        let data = cluster.kubectl_ok(&[
            "get",
            "secret",
            "registry",
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.data.token}",
        ]);
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .unwrap(),
        )
        .unwrap()
    };
    std::fs::write(dir.path().join("main.tf"), stack(1, "a")).unwrap();
    let (code, out, err) = run(
        dir.path(),
        &["plan", "-out=tfplan"],
        &vars("first-w0-token"),
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["apply", "tfplan"], &vars("first-w0-token"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(token(), "first-w0-token");
    // A new value without a new revision changes nothing, as in Terraform.
    let (code, out, err) = run(
        dir.path(),
        &["plan", "-detailed-exitcode"],
        &vars("second-w0-token"),
    );
    assert_eq!(code, 0, "{out}{err}");
    // Another field's change keeps the keys the write-only data set.
    std::fs::write(dir.path().join("main.tf"), stack(1, "b")).unwrap();
    let (code, out, err) = run(
        dir.path(),
        &["apply", "--auto-approve"],
        &vars("second-w0-token"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(token(), "first-w0-token");
    std::fs::write(dir.path().join("main.tf"), stack(2, "b")).unwrap();
    let (code, out, err) = run(
        dir.path(),
        &["plan", "-out=tfplan"],
        &vars("second-w0-token"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("data_wo_revision"), "{out}");
    let (code, out, err) = run(dir.path(), &["apply", "tfplan"], &vars("second-w0-token"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(token(), "second-w0-token");
    let (code, out, err) = run(
        dir.path(),
        &["plan", "-detailed-exitcode"],
        &vars("second-w0-token"),
    );
    assert_eq!(code, 0, "{out}{err}");
    for entry in walkdir(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("w0-token"),
            "{} holds the write-only value",
            entry.display()
        );
    }
}

/// Every file below `dir`.
fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// A certificate asked for with `kubernetes_certificate_signing_request_v1` (the resource
/// approves its own request, a signer of the test's signs it, the request is deleted) and a
/// service account's token from `kubernetes_token_request_v1`: both kept as the state records
/// them (the token only as a digest), the second plan empty, destroy forgetting them.
#[test]
fn a_signed_certificate_and_a_token_are_asked_for_once_and_kept() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = Namespace::new(&cluster, "tf-csr");
    let id = std::process::id();
    let signer = format!("gpustack.test/signer-{id}");
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec![format!("gpu-{id}.example")]).unwrap();
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let issued = params.self_signed(&key).unwrap().pem();
    // The signer: it signs this test's approved requests, as an external signer does.
    let done = std::sync::atomic::AtomicBool::new(false);
    let sign = || {
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let list: serde_json::Value =
                serde_json::from_slice(&cluster.kubectl(&["get", "csr", "-o", "json"]).stdout)
                    .unwrap_or_default();
            for csr in list["items"].as_array().into_iter().flatten() {
                let approved = csr["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Approved"));
                if csr["spec"]["signerName"] == signer.as_str()
                    && approved
                    && csr["status"]["certificate"].is_null()
                {
                    use base64::Engine as _;
                    let certificate = base64::engine::general_purpose::STANDARD.encode(&issued);
                    cluster.kubectl(&[
                        "patch",
                        "csr",
                        csr["metadata"]["name"].as_str().unwrap(),
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        &format!(r#"{{"status":{{"certificate":"{certificate}"}}}}"#),
                    ]);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_certificate_signing_request_v1" "serving" {{
  metadata {{
    name = "serving-{id}"
  }}
  spec {{
    request     = <<-EOT
{request}EOT
    signer_name = "{signer}"
    usages      = ["digital signature", "key encipherment", "server auth"]
  }}
}}

resource "kubernetes_service_account_v1" "ci" {{
  metadata {{
    name      = "ci"
    namespace = "{ns}"
  }}
}}

resource "kubernetes_token_request_v1" "ci" {{
  metadata {{
    name      = kubernetes_service_account_v1.ci.metadata[0].name
    namespace = "{ns}"
  }}
  spec {{
    audiences          = ["https://kubernetes.default.svc"]
    expiration_seconds = 3600
  }}
}}

output "certificate" {{
  value = kubernetes_certificate_signing_request_v1.serving.certificate
}}

output "token" {{
  value     = kubernetes_token_request_v1.ci.token
  sensitive = true
}}
"#,
            ns = namespace.name
        ),
    )
    .unwrap();
    let vars = [(
        "GPUSTACK_VAR_kubeconfig",
        cluster.kubeconfig.to_str().unwrap(),
    )];
    let (code, out, err) = std::thread::scope(|scope| {
        scope.spawn(sign);
        let applied = run(dir.path(), &["apply", "--auto-approve"], &vars);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        applied
    });
    assert_eq!(code, 0, "{out}{err}");
    let (code, certificate, err) = run(dir.path(), &["output", "-raw", "certificate"], &vars);
    assert_eq!(code, 0, "{err}");
    assert_eq!(certificate, issued);
    // The request is gone, as the provider deletes it once it has the certificate.
    assert!(
        !cluster
            .kubectl(&["get", "csr", &format!("serving-{id}")])
            .status
            .success()
    );
    let state = std::fs::read_to_string(dir.path().join(".gpustack/state.json")).unwrap();
    let token = state
        .split("\"token\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned();
    assert!(token.starts_with("hmac-sha256:"), "{token}");
    let (code, out, err) = run(dir.path(), &["plan", "-detailed-exitcode"], &vars);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(dir.path(), &["destroy", "--auto-approve"], &vars);
    assert_eq!(code, 0, "{out}{err}");
}
