//! The reference flows end to end: the examples applied with the gpustack binary to a real
//! control plane (its own cluster, see `e2e_cluster`), the real GPU Operator chart installed
//! by the helm provider, the GPU simulator playing NVIDIA's operands, and kubectl — a real
//! client — checking the result.

use gpustack_tests::aks::AksFake;
use gpustack_tests::cluster::{TestCluster, e2e_cluster};
use gpustack_tests::{gpustack_bin, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The flows that install the operator share one cluster-wide ClusterPolicy: one at a time.
pub(super) static OPERATOR: Mutex<()> = Mutex::new(());

pub(super) fn chart() -> String {
    gpustack_tests::upstream("charts/gpu-operator-v26.7.0.tgz")
        .canonicalize()
        .expect("the GPU Operator chart in the upstream data")
        .display()
        .to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of one example beside a copy of modules/, so that its `../../modules` sources and
/// its state stay inside a temporary directory.
pub(super) struct Stack {
    _root: tempfile::TempDir,
    pub(super) dir: PathBuf,
    cluster: &'static TestCluster,
    vars: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

/// Destroys a stack when dropped, also when its test fails part-way: what one test leaves
/// (the GPU Operator above all) would fail every later test that installs it.
pub(super) struct DestroyOnDrop<'a>(pub(super) &'a Stack);

impl Drop for DestroyOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.run("destroy", &["--auto-approve"]);
    }
}

impl Stack {
    /// A plan of the stack as it stands is empty (`--detailed-exitcode` 0).
    pub(super) fn assert_no_changes(&self) {
        let again = self.run("plan", &["--detailed-exitcode"]);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{}{}",
            String::from_utf8_lossy(&again.stdout),
            String::from_utf8_lossy(&again.stderr)
        );
    }

    pub(super) fn example(name: &str, vars: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        copy_dir(&repo_root().join("modules"), &root.path().join("modules"));
        let dir = root.path().join("examples").join(name);
        copy_dir(&repo_root().join("examples").join(name), &dir);
        Self::at(root, dir, vars)
    }

    pub(super) fn inline(main: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("stack");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.hcl"), main).unwrap();
        Self::at(root, dir, &[])
    }

    fn at(root: tempfile::TempDir, dir: PathBuf, vars: &[&str]) -> Self {
        let cluster = e2e_cluster();
        let mut all = vec![format!("kubeconfig={}", cluster.kubeconfig.display())];
        all.extend(vars.iter().map(|v| v.to_string()));
        Self {
            _root: root,
            dir,
            cluster,
            vars: all,
            env: Vec::new(),
        }
    }

    /// The same stack on another test cluster.
    pub(super) fn on(mut self, cluster: &'static TestCluster) -> Self {
        self.vars[0] = format!("kubeconfig={}", cluster.kubeconfig.display());
        self.cluster = cluster;
        self
    }

    /// The same stack with more `--var`s.
    pub(super) fn with_vars(mut self, vars: &[&str]) -> Self {
        self.vars.extend(vars.iter().map(|v| v.to_string()));
        self
    }

    pub(super) fn run(&self, command: &str, extra: &[&str]) -> Output {
        // Commands that only read the state take no variables.
        let vars: &[String] = if ["output", "state", "show"].contains(&command) {
            &[]
        } else {
            &self.vars
        };
        self.run_with(command, vars, extra)
    }

    /// The command with only the given `--var`s (a saved plan takes only ephemeral ones).
    pub(super) fn run_with(&self, command: &str, vars: &[String], extra: &[&str]) -> Output {
        self.command_with(command, vars, extra).output().unwrap()
    }

    /// The command [`Stack::run`] runs, to spawn (and kill) instead.
    pub(super) fn command(&self, command: &str, extra: &[&str]) -> Command {
        self.command_with(command, &self.vars, extra)
    }

    fn command_with(&self, command: &str, vars: &[String], extra: &[&str]) -> Command {
        let path = format!(
            "{}:{}",
            self.cluster.helm_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(gpustack_bin());
        cmd.current_dir(&self.dir).arg(command);
        for var in vars {
            cmd.args(["--var", var]);
        }
        cmd.args(extra)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG");
        cmd
    }

    pub(super) fn ok(&self, command: &str, extra: &[&str]) -> String {
        let out = self.run(command, extra);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "gpustack {command} {extra:?} failed:\n{text}"
        );
        text
    }
}

pub(super) fn allocatable(c: &TestCluster, node: &str, resource: &str) -> String {
    let escaped = resource.replace('.', "\\.");
    c.kubectl_ok(&[
        "get",
        "node",
        node,
        "-o",
        &format!("jsonpath={{.status.allocatable.{escaped}}}"),
    ])
}

pub(super) fn output(stack: &Stack, name: &str) -> serde_json::Value {
    let out = stack.run("output", &["--json"]);
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "output --json: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    all.get(name)
        .map(|o| o.get("value").cloned().unwrap_or_else(|| o.clone()))
        .unwrap_or(serde_json::Value::Null)
}

#[test]
fn reference_flow_time_slicing_from_install_to_destroy() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("e2e-t4", "Tesla T4", 1);
    c.fake_gpu_node("e2e-bystander", "Tesla T4", 1);
    let chart = format!("chart={}", chart());
    let stack = Stack::example(
        "time-slicing-existing-cluster",
        &[&chart, r#"node_names=["e2e-t4"]"#],
    );
    let _destroy = DestroyOnDrop(&stack);

    // Apply from nothing: the chart with driver and toolkit off, 10 replicas, the smoke test.
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(applied.contains("Apply complete!"), "{applied}");
    let values = c.kubectl_ok(&["get", "clusterpolicy", "cluster-policy", "-o", "json"]);
    let policy: serde_json::Value = serde_json::from_str(&values).unwrap();
    assert_eq!(policy["spec"]["driver"]["enabled"], false);
    assert_eq!(policy["spec"]["toolkit"]["enabled"], false);
    assert_eq!(
        policy["spec"]["devicePlugin"]["config"]["name"],
        "time-slicing-config"
    );
    let config = c.kubectl_ok(&[
        "get",
        "configmap",
        "time-slicing-config",
        "-n",
        "gpu-operator",
        "-o",
        "jsonpath={.data.any}",
    ]);
    let sharing: serde_json::Value = serde_yaml_ng::from_str(&config).unwrap();
    assert_eq!(
        sharing["sharing"]["timeSlicing"]["resources"][0]["replicas"], 10,
        "{config}"
    );
    assert_eq!(allocatable(c, "e2e-t4", "nvidia.com/gpu"), "10");
    // The other node keeps its whole GPU: only the named pool is shared.
    assert_eq!(allocatable(c, "e2e-bystander", "nvidia.com/gpu"), "1");
    assert_eq!(output(&stack, "smoke_test_passed"), true);
    let state = stack.ok("state", &["show", "gpu_smoke_test.vector_add"]);
    let result: serde_json::Value =
        serde_json::from_str(&state[state.find('{').unwrap()..]).unwrap();
    let pods = result["result"]["pods"].as_object().unwrap();
    assert_eq!(pods.len(), 4, "{result}");
    assert!(pods.values().all(|n| n == "e2e-t4"), "{result}");

    // The tests again, alone, as JUnit.
    let junit = stack.dir.join("smoke.xml");
    stack.ok("test", &["--junit", junit.to_str().unwrap()]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"tests="3""#) && xml.contains(r#"failures="0""#),
        "{xml}"
    );
    assert!(xml.contains("pods ran on e2e-t4"), "{xml}");

    // Nothing left to do.
    let again = stack.run("plan", &["--detailed-exitcode"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "second plan not empty:\n{}",
        String::from_utf8_lossy(&again.stdout)
    );

    // 10 → 4: the config, the restart it needs, the capacity line, and the test again.
    let plan = stack.ok("plan", &["--var", "replicas=4"]);
    assert!(
        plan.contains("node e2e-t4 (1× Tesla-T4): nvidia.com/gpu 10 → 4 (time-slicing ×4)"),
        "{plan}"
    );
    let changed: Vec<&str> = plan
        .lines()
        .filter(|l| l.starts_with("  # ") && l.contains(" will be "))
        .collect();
    assert_eq!(
        changed,
        [
            "  # gpu_smoke_test.vector_add will be updated in-place",
            "  # module.time_slicing.module.sharing.kubernetes_manifest.config will be updated in-place",
            "  # module.time_slicing.module.sharing.kubernetes_node_rollout.restart_device_plugin[0] will be updated in-place",
        ],
        "{plan}"
    );
    stack.ok("apply", &["--auto-approve", "--var", "replicas=4"]);
    assert_eq!(allocatable(c, "e2e-t4", "nvidia.com/gpu"), "4");
    let replicas = ["replicas=4".to_owned()];
    let vars: Vec<String> = stack.vars.iter().chain(&replicas).cloned().collect();
    assert_eq!(
        stack
            .run_with("plan", &vars, &["--detailed-exitcode"])
            .status
            .code(),
        Some(0)
    );

    // Capacity drift: the GPU falls off the bus; nothing gpustack manages changed, but the
    // node no longer advertises what the stack implies.
    c.kubectl_ok(&[
        "annotate",
        "node",
        "e2e-t4",
        "gpustack.dev/gpu-count=0",
        "--overwrite",
    ]);
    c.eventually(
        30,
        || allocatable(c, "e2e-t4", "nvidia.com/gpu"),
        |a| a == "0",
    );
    let lost = stack.run_with("drift", &vars, &[]);
    let report = String::from_utf8_lossy(&lost.stdout);
    assert_eq!(lost.status.code(), Some(2), "{report}");
    assert!(
        report.contains("gpu_smoke_test.vector_add has changed"),
        "{report}"
    );
    assert!(
        report.contains("e2e-t4: nvidia.com/gpu is 0, expected 4"),
        "{report}"
    );
    c.kubectl_ok(&[
        "annotate",
        "node",
        "e2e-t4",
        "gpustack.dev/gpu-count=1",
        "--overwrite",
    ]);
    c.eventually(
        30,
        || allocatable(c, "e2e-t4", "nvidia.com/gpu"),
        |a| a == "4",
    );
    assert_eq!(stack.run_with("drift", &vars, &[]).status.code(), Some(0));

    // Drift: a field gpustack does not manage is not drift; one it manages is.
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "time-slicing-config",
        "-n",
        "gpu-operator",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"someone-elses":"x"},"metadata":{"labels":{"team":"ml"}}}"#,
    ]);
    let quiet = stack.run_with("drift", &vars, &[]);
    assert_eq!(
        quiet.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&quiet.stdout)
    );
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "time-slicing-config",
        "-n",
        "gpu-operator",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"any":"version: v1\n"}}"#,
    ]);
    let drift = stack.run_with("drift", &vars, &[]);
    let report = String::from_utf8_lossy(&drift.stdout);
    assert_eq!(drift.status.code(), Some(2), "{report}");
    assert!(
        report
            .contains("module.time_slicing.module.sharing.kubernetes_manifest.config has changed"),
        "{report}"
    );
    assert!(report.contains("~ any = "), "{report}");
    assert!(!report.contains("someone-elses"), "{report}");

    // Destroy: everything the stack made goes, the nodes (not made by it) stay.
    stack.ok("destroy", &["--auto-approve"]);
    assert!(
        c.kubectl(&["get", "namespace", "gpu-operator"])
            .stdout
            .is_empty()
    );
    assert!(
        c.kubectl(&["get", "clusterpolicy", "cluster-policy"])
            .stdout
            .is_empty()
    );
    let label = c.kubectl_ok(&[
        "get",
        "node",
        "e2e-t4",
        "-o",
        r"jsonpath={.metadata.labels.nvidia\.com/device-plugin\.config}",
    ]);
    assert_eq!(label, "", "the pool label outlived destroy");
    c.kubectl_ok(&["get", "node", "e2e-t4", "e2e-bystander", "tw-system"]);
    let jobs = c.kubectl_ok(&["get", "jobs", "-n", "default", "-o", "name"]);
    assert_eq!(jobs.trim(), "", "smoke-test Jobs left behind");
}

#[test]
fn reference_flow_aks_from_nodepool_to_smoke_test() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let sub = "00000000-0000-0000-0000-000000000000";
    let fake = AksFake::start(
        &[(&format!("{sub}/ml-rg/ml-aks"), "1.34.2")],
        Some(c.kubeconfig.clone()),
    );
    let chart = format!("chart={}", chart());
    let endpoint = format!("azure_endpoint={}", fake.endpoint);
    let subscription = format!("subscription_id={sub}");
    let mut stack = Stack::example("aks-t4-time-slicing", &[&chart, &endpoint, &subscription]);
    stack.env = fake.env();
    let _destroy = DestroyOnDrop(&stack);

    // The plan says what the pool and time-slicing together give, before anything exists.
    let plan = stack.ok("plan", &[]);
    assert!(
        plan.contains("1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 10"),
        "{plan}"
    );

    // From nothing: the pool (its node appears in the cluster), the operator, time-slicing,
    // and four vectorAdd pods on that node.
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(applied.contains("Apply complete!"), "{applied}");
    let node = "aks-gpupool-31415926-vmss000000";
    let labels = c.kubectl_ok(&[
        "get",
        "node",
        node,
        "-o",
        r"jsonpath={.metadata.labels.kubernetes\.azure\.com/agentpool} {.metadata.labels.node\.kubernetes\.io/instance-type} {.spec.taints[0].key}",
    ]);
    assert_eq!(labels, "gpupool Standard_NC4as_T4_v3 nvidia.com/gpu");
    // The device plugin's DaemonSet restart is not waited for (it rolls on its own).
    c.eventually(60, || allocatable(c, node, "nvidia.com/gpu"), |a| a == "10");
    assert_eq!(output(&stack, "smoke_test_passed"), true);
    let state = stack.ok("state", &["show", "gpu_smoke_test.vector_add"]);
    let result: serde_json::Value =
        serde_json::from_str(&state[state.find('{').unwrap()..]).unwrap();
    let pods = result["result"]["pods"].as_object().unwrap();
    assert_eq!(pods.len(), 4, "{result}");
    assert!(pods.values().all(|n| n == node), "{result}");
    stack.assert_no_changes();

    // A second node is an update of the pool, and ten more GPUs.
    let plan = stack.ok("plan", &["--var", "node_count=2"]);
    assert!(
        plan.contains("aks_nodepool.t4 will be updated in-place"),
        "{plan}"
    );
    super::assert_capacity_snapshot("aks-time-slicing-pool-resized", &plan, "nodepool");

    // Destroy: the pool and its node go with the rest.
    stack.ok("destroy", &["--auto-approve"]);
    assert!(fake.pools().is_empty());
    assert!(c.kubectl(&["get", "node", node]).stdout.is_empty());
    assert!(
        c.kubectl(&["get", "namespace", "gpu-operator"])
            .stdout
            .is_empty()
    );
}

#[test]
fn mig_example_partitions_an_a100_and_rejects_a_profile_it_lacks() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("e2e-a100", "NVIDIA A100-SXM4-80GB", 1);
    let chart = format!("chart={}", chart());
    let stack = Stack::example("mig-a100", &[&chart, r#"node_names=["e2e-a100"]"#]);

    let rejected = stack.run("plan", &["--var", "geometry=all-1g.5gb"]);
    assert_eq!(rejected.status.code(), Some(1));
    let message = String::from_utf8_lossy(&rejected.stderr);
    assert!(
        message.contains("A100-80GB has no MIG profile 1g.5gb"),
        "{message}"
    );
    assert!(message.contains("variables.hcl"), "not located: {message}");

    // The geometry's capacity before it is applied: whole GPUs give way to partitions.
    let plan = stack.ok("plan", &[]);
    // (What the node advertised before depends on what ran on this shared cluster before.)
    let lines = super::capacity_lines(&plan, "node e2e-a100 ");
    assert!(
        lines.iter().any(|l| l.contains(
            ": nvidia.com/mig-1g.10gb 0 → 7 (MIG all-1g.10gb (mixed, built-in table geometry)"
        )),
        "{plan}"
    );
    stack.ok("apply", &["--auto-approve"]);
    assert_eq!(allocatable(c, "e2e-a100", "nvidia.com/mig-1g.10gb"), "7");
    let state = c.kubectl_ok(&[
        "get",
        "node",
        "e2e-a100",
        "-o",
        r"jsonpath={.metadata.labels.nvidia\.com/mig\.config\.state}",
    ]);
    assert_eq!(state, "success");
    assert_eq!(output(&stack, "smoke_test_passed"), true);
    assert_eq!(
        stack.run("plan", &["--detailed-exitcode"]).status.code(),
        Some(0)
    );
    stack.ok("destroy", &["--auto-approve"]);
    assert!(
        c.kubectl(&["get", "namespace", "gpu-operator"])
            .stdout
            .is_empty()
    );
}

#[test]
fn a_crd_and_an_object_of_it_apply_in_one_run() {
    let stack = Stack::inline(
        r#"
variable "kubeconfig" { type = string }

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_manifest" "crd" {
  manifest = {
    apiVersion = "apiextensions.k8s.io/v1"
    kind       = "CustomResourceDefinition"
    metadata   = { name = "gpubudgets.e2e.gpustack.dev" }
    spec = {
      group = "e2e.gpustack.dev"
      names = { kind = "GpuBudget", plural = "gpubudgets", singular = "gpubudget", listKind = "GpuBudgetList" }
      scope = "Namespaced"
      versions = [{
        name    = "v1"
        served  = true
        storage = true
        schema = { openAPIV3Schema = { type = "object", properties = { spec = { type = "object", properties = { gpus = { type = "integer" } } } } } }
      }]
    }
  }
}

resource "kubernetes_manifest" "budget" {
  manifest = {
    apiVersion = "e2e.gpustack.dev/v1"
    kind       = "GpuBudget"
    metadata   = { name = "team-a", namespace = "default" }
    spec       = { gpus = 8 }
  }
  depends_on = [kubernetes_manifest.crd]
}
"#,
    );
    let plan = stack.ok("plan", &[]);
    assert!(plan.contains("2 to add"), "{plan}");
    stack.ok("apply", &["--auto-approve"]);
    let gpus = stack.cluster.kubectl_ok(&[
        "get",
        "gpubudget",
        "team-a",
        "-n",
        "default",
        "-o",
        "jsonpath={.spec.gpus}",
    ]);
    assert_eq!(gpus, "8");
    assert_eq!(
        stack.run("plan", &["--detailed-exitcode"]).status.code(),
        Some(0)
    );
    stack.ok("destroy", &["--auto-approve"]);
    assert!(
        stack
            .cluster
            .kubectl(&["get", "crd", "gpubudgets.e2e.gpustack.dev"])
            .stdout
            .is_empty()
    );
}

#[test]
fn a_failing_smoke_test_fails_the_apply_and_the_junit_report() {
    let stack = Stack::inline(
        r#"
variable "kubeconfig" { type = string }

provider "gpu" {
  config_path = var.kubeconfig
}

resource "gpu_smoke_test" "no_gpus_here" {
  node_selector      = { "kubernetes.io/hostname" = "tw-system" }
  expect_allocatable = { "nvidia.com/gpu" = 1 }
  timeout            = "3s"
  namespace          = "kube-system"
}
"#,
    );
    let junit = stack.dir.join("smoke.xml");
    let out = stack.run(
        "apply",
        &["--auto-approve", "--junit", junit.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("GPU smoke test failed"), "{text}");
    assert!(
        text.contains("tw-system: nvidia.com/gpu is 0, expected 1"),
        "{text}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"failures="1""#), "{xml}");
    assert!(xml.contains("expected 1"), "{xml}");
    // Without the capacity no pod could run: no Job was started to hold anything.
    let jobs = stack.cluster.kubectl_ok(&[
        "get",
        "jobs",
        "-n",
        "kube-system",
        "-l",
        "app.kubernetes.io/managed-by=gpustack",
        "-o",
        "name",
    ]);
    assert_eq!(jobs.trim(), "", "a Job was left behind");
    // Nothing is recorded for a test that failed: the next apply runs it again.
    let list = stack.ok("state", &["list"]);
    assert!(!list.contains("gpu_smoke_test"), "{list}");
}

#[test]
fn mps_example_shares_a_gpu_among_four_clients() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    c.fake_gpu_node("e2e-mps", "Tesla T4", 1);
    let chart = format!("chart={}", chart());
    let stack = Stack::example("mps", &[&chart, r#"node_names=["e2e-mps"]"#]);
    stack.ok("apply", &["--auto-approve"]);
    assert_eq!(allocatable(c, "e2e-mps", "nvidia.com/gpu"), "4");
    let plan = stack.ok("plan", &["--var", "replicas=8"]);
    assert!(
        plan.contains("node e2e-mps (1× Tesla-T4): nvidia.com/gpu 4 → 8 (MPS ×8)"),
        "{plan}"
    );
    let strategy = c.kubectl_ok(&[
        "get",
        "node",
        "e2e-mps",
        "-o",
        r"jsonpath={.metadata.labels.nvidia\.com/gpu\.sharing-strategy}",
    ]);
    assert_eq!(strategy, "mps");
    assert_eq!(output(&stack, "smoke_test_passed"), true);
    stack.ok("destroy", &["--auto-approve"]);
    assert!(
        c.kubectl(&["get", "namespace", "gpu-operator"])
            .stdout
            .is_empty()
    );
}

#[test]
fn dcgm_monitoring_example_makes_a_service_monitor_for_the_exporter() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    // The Prometheus Operator's CRD, as a cluster with Prometheus has it.
    let crd = gpustack_tests::upstream("crds/monitoring.coreos.com_servicemonitors.yaml");
    c.kubectl_ok(&["apply", "--server-side", "-f", crd.to_str().unwrap()]);
    let chart = format!("chart={}", chart());
    let stack = Stack::example("dcgm-monitoring", &[&chart]);
    stack.ok("apply", &["--auto-approve"]);
    let monitors = c.kubectl_ok(&["get", "servicemonitors", "-A", "-o", "json"]);
    let monitors: serde_json::Value = serde_json::from_str(&monitors).unwrap();
    let monitor = &monitors["items"][0];
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"]["app"], "nvidia-dcgm-exporter",
        "{monitor}"
    );
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "gpu-metrics", "{monitor}");
    assert!(
        endpoint.to_string().contains("kubernetes_node"),
        "node name not relabelled: {endpoint}"
    );
    assert_eq!(
        stack.run("plan", &["--detailed-exitcode"]).status.code(),
        Some(0)
    );
    stack.ok("destroy", &["--auto-approve"]);
    let left = c.kubectl_ok(&["get", "servicemonitors", "-A", "-o", "name"]);
    assert_eq!(left.trim(), "");
}

#[test]
fn explicit_host_token_and_ca_reach_the_cluster_and_the_token_stays_out_of_state() {
    let c = e2e_cluster();
    c.apply_yaml(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: gpustack-e2e\n  namespace: default\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: gpustack-e2e\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: gpustack-e2e\n  namespace: default\n",
    );
    let token = c.kubectl_ok(&["create", "token", "gpustack-e2e", "-n", "default"]);
    let server = c.kubectl_ok(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);
    let ca_path = c.kubectl_ok(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.certificate-authority}",
    ]);
    let stack = Stack::inline(
        r#"
variable "kubeconfig" { type = string }
variable "host" { type = string }
variable "ca" { type = string }
variable "token" {
  type      = string
  sensitive = true
}

provider "kubernetes" {
  host                   = var.host
  token                  = var.token
  cluster_ca_certificate = var.ca
}

resource "kubernetes_manifest" "marker" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "gpustack-token-auth", namespace = "default" }
    data       = { via = "service account token" }
  }
}
"#,
    );
    let ca = std::fs::read_to_string(ca_path.trim()).unwrap();
    let mut stack = stack;
    stack.vars.extend([
        format!("host={server}"),
        format!("ca={ca}"),
        format!("token={}", token.trim()),
    ]);
    let applied = stack.ok("apply", &["--auto-approve"]);
    assert!(!applied.contains(token.trim()), "the token was printed");
    let via = c.kubectl_ok(&[
        "get",
        "configmap",
        "gpustack-token-auth",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.via}",
    ]);
    assert_eq!(via, "service account token");
    let state = std::fs::read_to_string(stack.dir.join(".gpustack/state.json")).unwrap();
    assert!(!state.contains(token.trim()), "the token reached the state");
    stack.ok("destroy", &["--auto-approve"]);
}

#[test]
fn helm_releases_install_drift_and_uninstall_with_helm_3_and_helm_4() {
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("templates")).unwrap();
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: probe\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        chart.path().join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
    )
    .unwrap();
    let c = e2e_cluster();
    let helms = c.helm_binaries();
    assert_eq!(helms.len(), 2, "helm 3 and helm 4: {helms:?}");
    for helm in helms {
        let version = String::from_utf8_lossy(
            &Command::new(&helm)
                .args(["version", "--template", "{{.Version}}"])
                .output()
                .unwrap()
                .stdout,
        )
        .into_owned();
        let major = &version[..2];
        let release = format!("probe-{}", &version[1..2]);
        let stack = Stack::inline(&format!(
            r#"
variable "kubeconfig" {{ type = string }}
variable "replicas" {{
  type    = number
  default = 10
}}

provider "helm" {{
  config_path = var.kubeconfig
  helm_binary = "{helm}"
}}

resource "helm_release" "probe" {{
  name      = "{release}"
  chart     = "{chart}"
  namespace = "default"
  values    = {{ replicas = var.replicas }}
  atomic    = true
  wait      = true
  timeout   = "2m"
}}
"#,
            helm = helm.display(),
            chart = chart.path().display(),
        ));
        stack.ok("apply", &["--auto-approve"]);
        let data = |c: &TestCluster| {
            c.kubectl_ok(&[
                "get",
                "configmap",
                &release,
                "-n",
                "default",
                "-o",
                "jsonpath={.data.replicas}",
            ])
        };
        assert_eq!(data(c), "10", "{major}");
        let state = stack.ok("state", &["show", "helm_release.probe"]);
        assert!(state.contains(r#""revision": 1"#), "{major}: {state}");
        assert!(
            state.contains(r#""status": "deployed""#),
            "{major}: {state}"
        );
        assert_eq!(
            stack.run("plan", &["--detailed-exitcode"]).status.code(),
            Some(0),
            "{major}"
        );

        // Someone upgrades the release by hand: drift in its values and revision.
        let out = Command::new(&helm)
            .arg("--kubeconfig")
            .arg(&c.kubeconfig)
            .args([
                "upgrade",
                &release,
                chart.path().to_str().unwrap(),
                "-n",
                "default",
                "--reuse-values",
                "--set",
                "replicas=3",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let drift = stack.run("drift", &[]);
        let report = String::from_utf8_lossy(&drift.stdout);
        assert_eq!(drift.status.code(), Some(2), "{major}: {report}");
        assert!(report.contains("~ replicas = 10 -> 3"), "{major}: {report}");
        assert!(report.contains("~ revision"), "{major}: {report}");

        // Apply puts the stack's values back.
        stack.ok("apply", &["--auto-approve"]);
        assert_eq!(data(c), "10", "{major}");
        stack.ok("destroy", &["--auto-approve"]);
        assert!(
            c.kubectl(&["get", "configmap", &release, "-n", "default"])
                .stdout
                .is_empty(),
            "{major}"
        );
    }
}

/// Terraform's helm provider waits for a release unless told not to: a release written
/// without `wait` is planned with `wait = true`, and apply waits for its pods, so a Deployment
/// that can never be scheduled fails the apply at its timeout; `wait = false` installs it.
#[test]
fn a_release_without_wait_waits_for_its_pods_as_in_terraform() {
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("templates")).unwrap();
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: stuck\nversion: 0.1.0\n",
    )
    .unwrap();
    // No node has the label: its pod stays Pending, never ready.
    std::fs::write(
        chart.path().join("templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      nodeSelector: {gpustack.dev/nowhere: \"true\"}\n      containers:\n      - name: c\n        image: registry.k8s.io/pause:3.9\n",
    )
    .unwrap();
    let stack = |wait: &str| {
        Stack::inline(&format!(
            r#"
variable "kubeconfig" {{ type = string }}

provider "helm" {{
  config_path = var.kubeconfig
}}

resource "helm_release" "stuck" {{
  name      = "stuck-wait"
  chart     = "{chart}"
  namespace = "default"
  timeout   = 5
{wait}}}
"#,
            chart = chart.path().display(),
        ))
    };
    let waiting = stack("");
    let plan = waiting.ok("plan", &["--json"]);
    let plan: serde_json::Value = serde_json::from_str(&plan).expect("the plan as JSON");
    let after = &plan["resource_changes"][0]["change"]["after"];
    assert_eq!(after["wait"], serde_json::json!(true), "{plan}");
    let out = waiting.run("apply", &["--auto-approve"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the apply did not wait:\n{text}"
    );
    assert!(
        text.contains("helm upgrade --install stuck-wait failed"),
        "{text}"
    );
    let _ = waiting.run("destroy", &["--auto-approve"]);
    let _ = Command::new(waiting.cluster.helm_dir().join("helm"))
        .arg("--kubeconfig")
        .arg(&waiting.cluster.kubeconfig)
        .args(["uninstall", "stuck-wait", "-n", "default"])
        .output();

    let not_waiting = stack("  wait      = false\n");
    not_waiting.ok("apply", &["--auto-approve"]);
    not_waiting.ok("destroy", &["--auto-approve"]);
}

/// `data "helm_template"` renders a chart with helm template, as Terraform's helm provider
/// answers it: values, `set` and `set_sensitive`, the capabilities, `is_upgrade`,
/// `skip_tests`, `show_only`, `include_crds` and `validate` against the cluster; the
/// documents by template, the notes and the CRD files. A `set_sensitive` value reaches the
/// rendered Secret and nothing gpustack writes: plan, apply, the state, trace logs.
#[test]
fn helm_template_renders_a_chart_as_terraform_does_and_keeps_sensitive_values_out() {
    let chart = tempfile::tempdir().unwrap();
    let files = [
        (
            "Chart.yaml",
            "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
        ),
        ("values.yaml", "replicas: 1\npassword: \"\"\n"),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  gpu: {{ .Capabilities.APIVersions.Has \"gpu.example/v1\" | quote }}\n  upgrade: {{ .Release.IsUpgrade | quote }}\n",
        ),
        (
            "templates/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  password: {{ .Values.password | b64enc }}\n",
        ),
        (
            "templates/tests/probe.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers:\n  - name: t\n    image: registry.k8s.io/pause:3.9\n",
        ),
        (
            "templates/NOTES.txt",
            "Release {{ .Release.Name }} in {{ .Release.Namespace }}.\n",
        ),
        (
            "crds/widget.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.probe.gpustack.dev\nspec:\n  group: probe.gpustack.dev\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object}\n",
        ),
    ];
    for (path, text) in files {
        let path = chart.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let secret = "tpl-s3cr3t-value";
    let encoded = "dHBsLXMzY3IzdC12YWx1ZQ==";
    let mut stack = Stack::inline(&format!(
        r#"
variable "kubeconfig" {{ type = string }}
variable "password" {{
  type      = string
  sensitive = true
}}

provider "helm" {{
  config_path = var.kubeconfig
}}

data "helm_template" "probe" {{
  name         = "probe"
  chart        = "{chart}"
  namespace    = "gpu"
  values       = [yamlencode({{ replicas = 3 }})]
  kube_version = "1.31.0"
  api_versions = ["gpu.example/v1"]
  is_upgrade   = true
  skip_tests   = true
  wait         = true
  timeout      = 600

  set {{
    name  = "replicas"
    value = "4"
  }}

  set_sensitive {{
    name  = "password"
    value = var.password
  }}
}}

data "helm_template" "validated" {{
  name         = "validated"
  chart        = "{chart}"
  include_crds = true
  validate     = true
  show_only    = ["crds/widget.yaml", "templates/configmap.yaml"]
  timeouts = {{
    read = "2m"
  }}
}}

# What the render holds reaches a resource's plan and state only as a secret.
resource "terraform_data" "rendered" {{
  input = data.helm_template.probe.manifest
}}

output "config" {{
  value = nonsensitive(data.helm_template.probe.manifests["templates/configmap.yaml"])
}}

output "templates" {{
  value = nonsensitive(keys(data.helm_template.probe.manifests))
}}

output "notes" {{
  value = nonsensitive(data.helm_template.probe.notes)
}}

output "crds" {{
  value = data.helm_template.probe.crds
}}

output "secret_rendered" {{
  value = nonsensitive(strcontains(data.helm_template.probe.manifest, "{encoded}"))
}}

output "validated" {{
  value = data.helm_template.validated.manifests
}}
"#,
        chart = chart.path().display(),
    ))
    .with_vars(&[&format!("password={secret}")]);
    stack.env = vec![("GPUSTACK_LOG".into(), "trace".into())];
    let plan = stack.ok("plan", &[]);
    let json = stack.ok("plan", &["--json"]);
    let applied = stack.ok("apply", &["--auto-approve"]);
    let state = std::fs::read_to_string(stack.dir.join(".gpustack/state.json")).unwrap();
    for (what, text) in [
        ("plan", &plan),
        ("JSON plan", &json),
        ("apply", &applied),
        ("state", &state),
    ] {
        assert!(
            !text.contains(secret) && !text.contains(encoded),
            "the sensitive value reached the {what}:\n{text}"
        );
    }
    let out = stack.run("output", &["--json"]);
    let outputs: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the outputs as JSON");
    let value = |name: &str| outputs[name]["value"].clone();
    assert_eq!(value("secret_rendered"), serde_json::json!(true));
    assert_eq!(
        value("config"),
        "---\n# Source: probe/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  replicas: \"4\"\n  kube: \"v1.31.0\"\n  gpu: \"true\"\n  upgrade: \"true\"\n"
    );
    assert_eq!(
        value("templates"),
        serde_json::json!(["templates/configmap.yaml", "templates/secret.yaml"])
    );
    assert_eq!(value("notes"), "Release probe in gpu.\n");
    let crds = value("crds");
    assert_eq!(crds.as_array().map(Vec::len), Some(1), "{crds}");
    assert!(
        crds[0]
            .as_str()
            .unwrap()
            .contains("widgets.probe.gpustack.dev")
    );
    let validated = value("validated");
    let keys: Vec<&String> = validated.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["crds/widget.yaml", "templates/configmap.yaml"],
        "{validated}"
    );
}

/// Every place a run writes text or data, for the secrets test to search.
fn everything_written(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A sensitive variable routed into a Helm release's values, a ConfigMap's data (directly and
/// through a heredoc template), a local file, a Secret and a module output: its value reaches
/// the cluster and the file, and appears in no plan format, `show`, drift report, metrics file,
/// webhook body, apply output, error message, trace log, state file or saved plan file.
#[test]
fn a_sensitive_variable_reaches_the_cluster_and_files_but_nothing_gpustack_writes() {
    let secret = "s3cr3t-Registry!token";
    let encoded = "czNjcjN0LVJlZ2lzdHJ5IXRva2Vu";
    let rotated = "r0tated-Registry!token";
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("templates")).unwrap();
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: secretive\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.path().join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  token: {{ .Values.auth.token | quote }}\n  registry: {{ .Values.registry | quote }}\n",
    )
    .unwrap();
    let hook = gpustack_tests::receiver::receiver();
    let mut stack = Stack::inline(&format!(
        r#"
variable "kubeconfig" {{ type = string }}
variable "token" {{
  type      = string
  sensitive = true
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

provider "helm" {{
  config_path = var.kubeconfig
}}

locals {{
  values_yaml = <<-EOT
    registry: registry.example.com
    token: ${{var.token}}
    replicas: 2
  EOT
}}

module "wrap" {{
  source = "./wrap"
  token  = var.token
}}

resource "kubernetes_manifest" "config" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = {{ name = "gpustack-e2e-secretive-config", namespace = "default" }}
    data = {{
      token    = var.token
      config   = local.values_yaml
      visible  = "plain"
    }}
  }}
}}

resource "kubernetes_manifest" "pull" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Secret"
    metadata   = {{ name = "gpustack-e2e-secretive", namespace = "default" }}
    type       = "Opaque"
    data       = {{ token = base64encode(var.token) }}
  }}
}}

resource "local_file" "token" {{
  filename = "${{path.module}}/out/token.txt"
  content  = module.wrap.header
}}

resource "helm_release" "secretive" {{
  name      = "gpustack-e2e-secretive"
  chart     = "{chart}"
  namespace = "default"
  values = {{
    registry = "registry.example.com"
    auth     = {{ token = var.token }}
  }}
}}

output "header" {{
  value     = module.wrap.header
  sensitive = true
}}

output "visible" {{
  value = "plain"
}}
"#,
        chart = chart.path().display()
    ));
    std::fs::create_dir_all(stack.dir.join("wrap")).unwrap();
    std::fs::write(
        stack.dir.join("wrap/main.hcl"),
        "variable \"token\" { type = string }\n\noutput \"header\" {\n  value = \"Bearer ${var.token}\"\n}\n",
    )
    .unwrap();
    stack.vars.push(format!("token={secret}"));
    let hidden = |what: &str, text: &str| {
        for forbidden in [secret, encoded, rotated] {
            assert!(!text.contains(forbidden), "{what} shows a secret:\n{text}");
        }
    };

    let plan = stack.ok("plan", &["--out", "plan.bin"]);
    hidden("plan", &plan);
    assert!(plan.contains("(sensitive value)"), "{plan}");
    // The template's other lines are shown; its secret line is masked.
    assert!(plan.contains("registry: registry.example.com"), "{plan}");
    assert!(plan.contains("visible"), "{plan}");
    for format in ["--json", "--markdown"] {
        let out = stack.run("plan", &[format]);
        hidden(format, &everything_written(&out));
        assert!(out.status.success(), "{}", everything_written(&out));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&stack.run("plan", &["--json"]).stdout).unwrap();
    let config = json["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "kubernetes_manifest.config")
        .unwrap()
        .clone();
    assert_eq!(
        config["change"]["after_sensitive"]["manifest"]["data"]["token"], true,
        "{config}"
    );
    let saved = std::fs::read_to_string(stack.dir.join("plan.bin")).unwrap();
    hidden("the saved plan", &saved);
    for args in [
        vec!["plan.bin"],
        vec!["plan.bin", "--json"],
        vec!["plan.bin", "--markdown"],
    ] {
        let out = stack.run("show", &args);
        assert!(out.status.success(), "{}", everything_written(&out));
        hidden("show", &everything_written(&out));
    }

    // The saved plan holds only the variable's digest: apply wants it again, and the same.
    let apply_plan = |token: Option<&str>| {
        let mut cmd = Command::new(gpustack_bin());
        cmd.current_dir(&stack.dir)
            .args(["apply", "plan.bin"])
            .env("NO_COLOR", "1")
            .env("GPUSTACK_LOG", "trace")
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    stack.cluster.helm_dir().display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env_remove("KUBECONFIG");
        if let Some(token) = token {
            cmd.args(["--var", &format!("token={token}")]);
        }
        cmd.output().unwrap()
    };
    let missing = apply_plan(None);
    assert_eq!(
        missing.status.code(),
        Some(1),
        "{}",
        everything_written(&missing)
    );
    assert!(
        everything_written(&missing).contains("No value for sensitive variable"),
        "{}",
        everything_written(&missing)
    );
    let wrong = apply_plan(Some(rotated));
    assert_eq!(wrong.status.code(), Some(1));
    let wrong_text = everything_written(&wrong);
    assert!(wrong_text.contains("differs from the plan"), "{wrong_text}");
    hidden("a refused apply", &wrong_text);
    let applied = apply_plan(Some(secret));
    let applied_text = everything_written(&applied);
    assert!(applied.status.success(), "{applied_text}");
    hidden("apply output and its trace log", &applied_text);
    assert!(
        applied_text.contains("TRACE") || applied_text.contains("DEBUG"),
        "no log lines: {applied_text}"
    );

    // The value is where it was sent.
    let data = |key: &str| {
        stack.cluster.kubectl_ok(&[
            "get",
            "configmap",
            "gpustack-e2e-secretive-config",
            "-n",
            "default",
            "-o",
            &format!("jsonpath={{.data.{key}}}"),
        ])
    };
    assert_eq!(data("token"), secret);
    assert!(data("config").contains(&format!("token: {secret}")));
    assert_eq!(
        std::fs::read_to_string(stack.dir.join("out/token.txt")).unwrap(),
        format!("Bearer {secret}")
    );
    let released = stack.cluster.kubectl_ok(&[
        "get",
        "configmap",
        "gpustack-e2e-secretive",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.token}",
    ]);
    assert_eq!(released, secret);
    let state = std::fs::read_to_string(stack.dir.join(".gpustack/state.json")).unwrap();
    hidden("the state", &state);
    assert!(state.contains("hmac-sha256:"), "{state}");
    for command in [
        vec!["state", "show", "kubernetes_manifest.config"],
        vec!["output"],
        vec!["output", "header"],
    ] {
        let out = stack.run(command[0], &command[1..]);
        hidden("state commands", &everything_written(&out));
    }
    let again = stack.run("plan", &["--detailed-exitcode"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        everything_written(&again)
    );

    // A new value plans updates shown as (sensitive value), and nothing of either value.
    let rotated_var = format!("token={rotated}");
    let plan = stack.ok("plan", &["--var", &rotated_var]);
    hidden("a plan of a new value", &plan);
    assert!(plan.contains("will be updated in-place"), "{plan}");
    assert!(plan.contains("(sensitive value)"), "{plan}");

    // A hand edit elsewhere in the ConfigMap is drift; its report, metrics and webhook post
    // name the field, never the secret.
    stack.cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "gpustack-e2e-secretive-config",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"visible":"edited"}}"#,
    ]);
    let metrics = stack.dir.join("drift.prom");
    let drift = stack.run(
        "drift",
        &[
            "--metrics-file",
            metrics.to_str().unwrap(),
            "--webhook",
            &hook.url,
        ],
    );
    assert_eq!(
        drift.status.code(),
        Some(2),
        "{}",
        everything_written(&drift)
    );
    hidden("drift", &everything_written(&drift));
    hidden("metrics", &std::fs::read_to_string(&metrics).unwrap());
    for format in ["--json", "--markdown"] {
        let out = stack.run("drift", &[format]);
        hidden("drift", &everything_written(&out));
    }
    let posts = hook.bodies.lock().unwrap().clone();
    assert!(!posts.is_empty());
    hidden("webhook", &serde_json::to_string(&posts).unwrap());

    // An error from the API server that quotes the value (an invalid label) is scrubbed.
    let mut bad = Stack::inline(
        r#"
variable "kubeconfig" { type = string }
variable "token" {
  type      = string
  sensitive = true
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_manifest" "labelled" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {
      name      = "gpustack-e2e-labelled"
      namespace = "default"
      labels    = { token = var.token }
    }
  }
}
"#,
    );
    bad.vars.push(format!("token={secret}"));
    let refused = bad.run("apply", &["--auto-approve"]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "{}",
        everything_written(&refused)
    );
    hidden("an API error", &everything_written(&refused));
    assert!(
        everything_written(&refused).contains("Invalid value: \"(sensitive"),
        "{}",
        everything_written(&refused)
    );

    let out = stack.ok("destroy", &["--auto-approve"]);
    hidden("destroy", &out);
}

/// A chart of one ConfigMap, for tests of releases rather than of what they install.
fn probe_chart() -> tempfile::TempDir {
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("templates")).unwrap();
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.path().join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-probe\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
    )
    .unwrap();
    chart
}

fn helm(c: &TestCluster, args: &[&str]) -> String {
    let helm = c.helm_dir().join("helm");
    let out = Command::new(&helm)
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "helm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn revision(c: &TestCluster, release: &str, namespace: &str) -> String {
    let status: serde_json::Value = serde_json::from_str(&helm(
        c,
        &["status", release, "-n", namespace, "-o", "json"],
    ))
    .unwrap();
    status["version"].to_string()
}

/// A namespace holding a ConfigMap and a Helm release, made by hand, then declared by a stack:
/// the plan refuses each with the import that takes it in, and changes nothing; with import
/// blocks the plan imports them, the apply adopts them, and the next plan is empty.
#[test]
fn objects_made_by_hand_are_refused_until_imported() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-by-hand";
    let chart = probe_chart();
    c.kubectl_ok(&["create", "namespace", ns]);
    c.kubectl_ok(&[
        "create",
        "configmap",
        "sharing",
        "-n",
        ns,
        "--from-literal=replicas=4",
    ]);
    helm(
        c,
        &[
            "install",
            "probe",
            &chart.path().display().to_string(),
            "-n",
            ns,
            "--set",
            "replicas=2",
        ],
    );
    let declared = format!(
        r#"
variable "kubeconfig" {{ type = string }}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

provider "helm" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "namespace" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = {{ name = "{ns}" }}
  }}
}}

resource "kubernetes_manifest" "sharing" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = {{ name = "sharing", namespace = "{ns}" }}
    data       = {{ replicas = "4" }}
  }}
}}

resource "helm_release" "probe" {{
  name      = "probe"
  chart     = "{chart}"
  namespace = "{ns}"
  values    = {{ replicas = 2 }}
}}
"#,
        chart = chart.path().display()
    );
    let stack = Stack::inline(&declared);
    let out = stack.run("plan", &[]);
    let text = everything_written(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("Object already exists").count(), 3, "{text}");
    for (address, id) in [
        (
            "kubernetes_manifest.namespace",
            format!("v1/Namespace/{ns}"),
        ),
        (
            "kubernetes_manifest.sharing",
            format!("v1/ConfigMap/{ns}/sharing"),
        ),
        ("helm_release.probe", format!("{ns}/probe")),
    ] {
        assert!(
            text.contains(&format!("to = {address}")) && text.contains(&id),
            "{address}: {text}"
        );
    }
    let out = stack.run("apply", &["--auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(revision(c, "probe", ns), "1", "the release is untouched");

    let imports = format!(
        "import {{\n  to = kubernetes_manifest.namespace\n  id = \"v1/Namespace/{ns}\"\n}}\n\nimport {{\n  to = kubernetes_manifest.sharing\n  id = \"v1/ConfigMap/{ns}/sharing\"\n}}\n\nimport {{\n  to = helm_release.probe\n  id = \"{ns}/probe\"\n}}\n"
    );
    std::fs::write(stack.dir.join("imports.hcl"), imports).unwrap();
    let plan = stack.ok("plan", &[]);
    assert!(plan.contains("3 to import"), "{plan}");
    assert!(plan.contains("(imported from \"v1/ConfigMap/"), "{plan}");
    let out = stack.ok("apply", &["--auto-approve"]);
    assert!(out.contains("3 imported"), "{out}");
    let again = stack.run("plan", &["--detailed-exitcode"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        everything_written(&again)
    );
    stack.ok("destroy", &["--auto-approve"]);
}

/// A command's output as its words one space apart: diagnostics wrap to the terminal's width.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An empty namespace made by hand. The cluster is kept between runs, and a run that failed
/// may have left the namespace (or left it terminating).
fn fresh_namespace(c: &TestCluster, ns: &str) {
    c.kubectl_ok(&[
        "delete",
        "namespace",
        ns,
        "--ignore-not-found",
        "--timeout=2m",
    ]);
    c.kubectl_ok(&["create", "namespace", ns]);
}

/// What the stack recorded is gone and someone else made another of its name: the plan
/// refuses to take it over, an apply that skips the refresh (still naming the recorded one)
/// fails with `refused`, and a destroy that skips it succeeds and leaves the other one with
/// `left`; `untouched` checks the other one after each. The destroy's output, words one space
/// apart.
fn left_alone(s: &Stack, changed: &str, refused: &str, left: &str, untouched: impl Fn()) -> String {
    let out = s.run("plan", &[]);
    let text = flat(&everything_written(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("Object already exists"), "{text}");
    assert!(
        text.contains("The object this stack recorded is gone (deleted outside gpustack)"),
        "{text}"
    );
    untouched();

    std::fs::write(s.dir.join("main.hcl"), changed).unwrap();
    let out = s.run("apply", &["--auto-approve", "--refresh=false"]);
    let text = flat(&everything_written(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(refused), "{text}");
    untouched();

    let out = s.run("apply", &["--destroy", "--auto-approve", "--refresh=false"]);
    let text = flat(&everything_written(&out));
    assert!(out.status.success(), "{text}");
    assert!(text.contains(left), "{text}");
    untouched();
    let state = s.ok("state", &["list"]);
    assert_eq!(state.trim(), "", "the state still records it: {state}");
    text
}

/// A stack of one ConfigMap, `settings` in `ns`, whose `mode` is `mode`.
fn settings_stack(ns: &str, mode: &str) -> String {
    format!(
        r#"
variable "kubeconfig" {{ type = string }}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "settings" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = {{ name = "settings", namespace = "{ns}" }}
    data       = {{ mode = "{mode}" }}
  }}
}}
"#
    )
}

/// A ConfigMap the stack made, deleted by hand and made again by hand under the same name, is
/// another object (another uid): the refresh finds the stack's object gone, the plan refuses to
/// take over the new one, and neither an apply nor a destroy that skips the refresh changes or
/// deletes it: the API server refuses an apply or a delete that names the recorded uid.
#[test]
fn an_object_made_again_by_hand_is_neither_adopted_nor_deleted() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-made-again";
    fresh_namespace(c, ns);
    let stack = |mode: &str| settings_stack(ns, mode);
    let s = Stack::inline(&stack("shared"));
    s.ok("apply", &["--auto-approve"]);
    let uid = |c: &TestCluster| {
        c.kubectl_ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
    };
    let recorded = uid(c);
    c.kubectl_ok(&["delete", "configmap", "settings", "-n", ns]);
    c.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        ns,
        "--from-literal=mode=theirs",
    ]);
    let theirs = uid(c);
    assert_ne!(recorded, theirs);
    let untouched = |c: &TestCluster| {
        assert_eq!(uid(c), theirs, "the hand-made ConfigMap was deleted");
        let data = c.kubectl_ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            ns,
            "-o",
            "jsonpath={.data}",
        ]);
        assert_eq!(
            data, r#"{"mode":"theirs"}"#,
            "the hand-made ConfigMap was changed"
        );
        let managers = c.kubectl_ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            ns,
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ]);
        assert!(!managers.contains("gpustack"), "{managers}");
    };

    let text = left_alone(
        &s,
        &stack("changed"),
        "was replaced by another object of the same name since it was read",
        "ConfigMap gpustack-e2e-made-again/settings was not deleted",
        || untouched(c),
    );
    // The uid may wrap at a hyphen.
    assert!(
        text.replace("- ", "-").contains(&format!(
            "(uid {recorded}) is gone; the one of that name now is another"
        )),
        "{text}"
    );
    c.kubectl_ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// The same for a Helm release, which has no uid: a release uninstalled and installed again by
/// hand under the same name was first deployed at another time, which the state records.
#[test]
fn a_release_installed_again_by_hand_is_neither_adopted_nor_uninstalled() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-installed-again";
    fresh_namespace(c, ns);
    let chart = probe_chart();
    let stack = |replicas: u32| {
        format!(
            r#"
variable "kubeconfig" {{ type = string }}

provider "helm" {{
  config_path = var.kubeconfig
}}

resource "helm_release" "probe" {{
  name      = "probe"
  chart     = "{chart}"
  namespace = "{ns}"
  values    = {{ replicas = {replicas} }}
}}
"#,
            chart = chart.path().display()
        )
    };
    let s = Stack::inline(&stack(2));
    s.ok("apply", &["--auto-approve"]);
    // A state written before it was recorded is refreshed without it: no drift.
    let state_path = s.dir.join(".gpustack").join("state.json");
    let recorded = std::fs::read_to_string(&state_path).unwrap();
    assert!(recorded.contains("\"first_deployed\": \"20"), "{recorded}");
    std::fs::write(
        &state_path,
        gpustack_tests::unrecorded(&recorded, "first_deployed"),
    )
    .unwrap();
    let out = s.run("drift", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", everything_written(&out));
    std::fs::write(&state_path, &recorded).unwrap();
    helm(c, &["uninstall", "probe", "-n", ns, "--wait"]);
    let path = chart.path().display().to_string();
    helm(
        c,
        &["install", "probe", &path, "-n", ns, "--set", "replicas=9"],
    );
    let untouched = |c: &TestCluster| {
        assert_eq!(
            revision(c, "probe", ns),
            "1",
            "the hand-installed release was upgraded"
        );
        let values = helm(c, &["get", "values", "probe", "-n", ns, "-o", "json"]);
        assert_eq!(values.trim(), r#"{"replicas":9}"#);
    };

    left_alone(
        &s,
        &stack(3),
        "uninstalled and installed again by someone else since it was read",
        &format!("Helm release {ns}/probe was not uninstalled"),
        || untouched(c),
    );
    helm(c, &["uninstall", "probe", "-n", ns]);
    c.kubectl_ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// A destroy that timed out on a namespace still being emptied (an object in it holds a
/// finalizer), run again: the API server answers the second DELETE with 409, and the destroy
/// waits for that same namespace again rather than taking it for another object. The object
/// is made by hand, so the namespace says it may be deleted with what it holds.
#[test]
fn a_namespace_still_terminating_is_waited_for_again() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-terminating";
    let stack = Stack::inline(&format!(
        r#"
variable "kubeconfig" {{ type = string }}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "namespace" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = {{ name = "{ns}" }}
  }}
  force_destroy = true
  wait {{
    timeout = "3s"
  }}
}}
"#
    ));
    stack.ok("apply", &["--auto-approve"]);
    c.kubectl_ok(&["create", "configmap", "hold", "-n", ns]);
    let hold = |finalizers: &str| {
        c.kubectl_ok(&[
            "patch",
            "configmap",
            "hold",
            "-n",
            ns,
            "--type",
            "merge",
            "-p",
            &format!(r#"{{"metadata":{{"finalizers":{finalizers}}}}}"#),
        ])
    };
    hold(r#"["gpustack.dev/test-hold"]"#);
    for attempt in ["first", "second"] {
        let out = stack.run("destroy", &["--auto-approve"]);
        let text = flat(&everything_written(&out));
        assert_eq!(out.status.code(), Some(1), "{attempt}: {text}");
        assert!(text.contains("is still being deleted"), "{attempt}: {text}");
        assert!(!text.contains("was not deleted"), "{attempt}: {text}");
    }
    // Released, the namespace goes when the namespace controller next retries (it backs off
    // longer than the state's 3 s).
    hold("null");
    c.kubectl_ok(&[
        "wait",
        "--for=delete",
        &format!("namespace/{ns}"),
        "--timeout=3m",
    ]);
    stack.ok("destroy", &["--auto-approve"]);
}

/// A plan saved to create a ConfigMap, applied after someone made a ConfigMap of that name by
/// hand: the apply asks the API server again just before the create, and stops.
#[test]
fn a_saved_plan_does_not_take_over_an_object_made_since() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-made-since";
    fresh_namespace(c, ns);
    let s = Stack::inline(&settings_stack(ns, "ours"));
    s.ok("plan", &["--out", "reviewed.plan"]);
    c.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        ns,
        "--from-literal=mode=theirs",
    ]);
    // A saved plan holds its variables.
    let out = Command::new(gpustack_bin())
        .current_dir(&s.dir)
        .args(["apply", "reviewed.plan"])
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let text = flat(&everything_written(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("which was made since the plan, and not by this stack"),
        "{text}"
    );
    let data = c.kubectl_ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        ns,
        "-o",
        "jsonpath={.data}",
    ]);
    assert_eq!(
        data, r#"{"mode":"theirs"}"#,
        "the hand-made ConfigMap was changed"
    );
    c.kubectl_ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// A Helm release moved into a module with a `moved` block: no change, and the release keeps
/// its revision; without the block, the plan refuses to install it again and uninstall it.
#[test]
fn a_release_moved_into_a_module_is_kept() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-moved";
    let chart = probe_chart();
    let release = |within: &str| {
        format!(
            r#"
resource "helm_release" "gpu_operator" {{
  name             = "gpu-operator"
  chart            = "{chart}"
  namespace        = "{ns}"
  create_namespace = true
  values           = {{ replicas = 3 }}
}}
{within}"#,
            chart = chart.path().display()
        )
    };
    let providers = "variable \"kubeconfig\" { type = string }\n\nprovider \"helm\" {\n  config_path = var.kubeconfig\n}\n";
    let stack = Stack::inline(&format!("{providers}{}", release("")));
    stack.ok("apply", &["--auto-approve"]);
    assert_eq!(revision(c, "gpu-operator", ns), "1");

    std::fs::create_dir_all(stack.dir.join("operator")).unwrap();
    std::fs::write(
        stack.dir.join("operator/main.hcl"),
        format!("variable \"kubeconfig\" {{ type = string }}\n\nprovider \"helm\" {{\n  config_path = var.kubeconfig\n}}\n{}", release("")),
    )
    .unwrap();
    let module = "variable \"kubeconfig\" { type = string }\n\nmodule \"operator\" {\n  source     = \"./operator\"\n  kubeconfig = var.kubeconfig\n}\n";
    std::fs::write(stack.dir.join("main.hcl"), module).unwrap();
    let refused = stack.run("plan", &[]);
    let text = everything_written(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(text.contains("Create and destroy of one object"), "{text}");
    assert!(
        text.contains("from = helm_release.gpu_operator")
            && text.contains("to   = module.operator.helm_release.gpu_operator"),
        "{text}"
    );
    assert_eq!(revision(c, "gpu-operator", ns), "1");

    std::fs::write(
        stack.dir.join("main.hcl"),
        format!("{module}\nmoved {{\n  from = helm_release.gpu_operator\n  to   = module.operator.helm_release.gpu_operator\n}}\n"),
    )
    .unwrap();
    let plan = stack.ok("plan", &[]);
    assert!(
        plan.contains("0 to add, 0 to change, 0 to destroy"),
        "{plan}"
    );
    assert!(
        plan.contains("(moved from helm_release.gpu_operator)"),
        "{plan}"
    );
    stack.ok("apply", &["--auto-approve"]);
    assert_eq!(
        revision(c, "gpu-operator", ns),
        "1",
        "the release was not touched"
    );
    let again = stack.run("plan", &["--detailed-exitcode"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        everything_written(&again)
    );
    stack.ok("destroy", &["--auto-approve"]);
}

/// A custom resource whose delete never finishes (a finalizer nobody removes): destroy exits 1
/// and keeps what it depends on — its CRD, the operator release and the namespace.
#[test]
fn a_stuck_delete_keeps_the_crd_release_and_namespace() {
    let c = e2e_cluster();
    let ns = "gpustack-e2e-stuck";
    let chart = probe_chart();
    let stack = Stack::inline(&format!(
        r#"
variable "kubeconfig" {{ type = string }}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

provider "helm" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "namespace" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = {{ name = "{ns}" }}
  }}
}}

resource "kubernetes_manifest" "crd" {{
  manifest = {{
    apiVersion = "apiextensions.k8s.io/v1"
    kind       = "CustomResourceDefinition"
    metadata   = {{ name = "widgets.stuck.gpustack.dev" }}
    spec = {{
      group = "stuck.gpustack.dev"
      scope = "Namespaced"
      names = {{ plural = "widgets", singular = "widget", kind = "Widget" }}
      versions = [{{
        name    = "v1"
        served  = true
        storage = true
        schema = {{ openAPIV3Schema = {{ type = "object", "x-kubernetes-preserve-unknown-fields" = true }} }}
      }}]
    }}
  }}
}}

resource "helm_release" "operator" {{
  name       = "operator"
  chart      = "{chart}"
  namespace  = "{ns}"
  values     = {{ replicas = 1 }}
  depends_on = [kubernetes_manifest.namespace]
}}

resource "kubernetes_manifest" "widget" {{
  manifest = {{
    apiVersion = "stuck.gpustack.dev/v1"
    kind       = "Widget"
    metadata = {{
      name       = "stuck"
      namespace  = "{ns}"
      finalizers = ["stuck.gpustack.dev/never"]
    }}
  }}
  wait {{
    timeout = "3s"
  }}
  depends_on = [kubernetes_manifest.crd, helm_release.operator, kubernetes_manifest.namespace]
}}
"#,
        chart = chart.path().display()
    ));
    stack.ok("apply", &["--auto-approve"]);
    let out = stack.run("destroy", &["--auto-approve"]);
    let text = everything_written(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for kept in [
        "kubernetes_manifest.crd was kept",
        "helm_release.operator was kept",
        "kubernetes_manifest.namespace was kept",
    ] {
        assert!(text.contains(kept), "{kept}: {text}");
    }
    c.kubectl_ok(&["get", "crd", "widgets.stuck.gpustack.dev"]);
    c.kubectl_ok(&["get", "namespace", ns]);
    assert_eq!(revision(c, "operator", ns), "1");
    // Once the finalizer is gone, destroy finishes.
    c.kubectl_ok(&[
        "patch",
        "widget.stuck.gpustack.dev",
        "stuck",
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    stack.ok("destroy", &["--auto-approve"]);
}

/// Terraform 1.15's language on a real release: a const variable chooses a module by its
/// source, a deprecated variable warns, convert() types a value, and an ephemeral variable
/// reaches the chart only through a write-only `set_wo`: the release has it, and nothing
/// gpustack writes (a saved plan, the state) does. A second plan is empty.
#[test]
fn an_ephemeral_value_reaches_a_release_through_set_wo_and_nothing_gpustack_writes() {
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("templates")).unwrap();
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: wo\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.path().join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n  password: {{ .Values.password | quote }}\n",
    )
    .unwrap();
    let stack = Stack::inline(&format!(
        r#"terraform {{
  required_version = ">= 1.15"
}}

variable "kubeconfig" {{
  type = string
}}

variable "db_password" {{
  type      = string
  ephemeral = true
}}

variable "flavor" {{
  type    = string
  default = "settings"
  const   = true
}}

module "settings" {{
  source = "./modules/${{var.flavor}}"
  size   = 3
}}

provider "helm" {{
  config_path = var.kubeconfig
}}

resource "helm_release" "wo" {{
  name            = "ephemeral-wo"
  chart           = "{chart}"
  namespace       = "default"
  wait            = false
  set             = [{{ name = "replicas", value = convert(module.settings.replicas, string) }}]
  set_wo          = [{{ name = "password", value = var.db_password }}]
  set_wo_revision = 1
}}
"#,
        chart = chart.path().display(),
    ));
    std::fs::create_dir_all(stack.dir.join("modules/settings")).unwrap();
    std::fs::write(
        stack.dir.join("modules/settings/main.hcl"),
        "variable \"size\" {\n  type       = number\n  default    = 1\n  deprecated = \"set replicas in the chart's values instead\"\n}\n\noutput \"replicas\" {\n  value = var.size\n}\n",
    )
    .unwrap();
    let secret = "ephemeral-w0-secret";
    let stack = stack.with_vars(&[&format!("db_password={secret}")]);
    let planned = stack.ok("plan", &["--out", "wo.plan"]);
    assert!(planned.contains("Deprecated variable"), "{planned}");
    let applied = stack.run_with("apply", &[format!("db_password={secret}")], &["wo.plan"]);
    let applied = format!(
        "{}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );
    assert!(applied.contains("1 added"), "{applied}");
    assert!(!applied.contains(secret), "{applied}");
    let data = stack.cluster.kubectl_ok(&[
        "get",
        "configmap",
        "ephemeral-wo",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.password}/{.data.replicas}",
    ]);
    assert_eq!(data, format!("{secret}/3"), "set_wo reached the chart");
    for file in [".gpustack/state.json", "wo.plan"] {
        let text = std::fs::read_to_string(stack.dir.join(file)).unwrap();
        assert!(!text.contains(secret), "{file} holds the ephemeral value");
    }
    stack.assert_no_changes();
    stack.ok("destroy", &["--auto-approve"]);
}
