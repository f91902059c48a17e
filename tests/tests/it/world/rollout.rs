//! Node-by-node rollouts of MIG and sharing changes on the simulator (GPU-FACTS "MIG"): the
//! budget holds, no node is reconfigured while its GPU pods run, a wedge stops the rollout
//! with the node cordoned and the next apply resumes after it, an admin's cordon stays, and
//! a killed apply resumes at the step the node recorded.

use super::e2e::{OPERATOR, Stack, allocatable, chart};
use futures::StreamExt;
use gpustack_tests::aks::AksFake;
use gpustack_tests::cluster::{TestCluster, e2e_cluster};
use gpustack_tests::gpusim::controller::{KILLED_PODS, RECONFIGURE_SECONDS, WEDGE};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::watcher;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const CORDONED_BY: &str = "gpustack.dev/cordoned-by";

fn stack_of(main: &str, mig_strategy: &str) -> Stack {
    let stack = Stack::example(
        "time-slicing-existing-cluster",
        &[&format!("chart={}", chart())],
    );
    for file in ["main.hcl", "outputs.hcl", "variables.hcl"] {
        std::fs::remove_file(stack.dir.join(file)).unwrap();
    }
    std::fs::write(
        stack.dir.join("main.hcl"),
        format!(
            "variable \"kubeconfig\" {{\n  type = string\n}}\n\nvariable \"chart\" {{\n  type = string\n}}\n\nprovider \"kubernetes\" {{\n  config_path = var.kubeconfig\n}}\n\nprovider \"helm\" {{\n  config_path = var.kubeconfig\n}}\n\nmodule \"gpu_operator\" {{\n  source          = \"../../modules/gpu-operator\"\n  chart           = var.chart\n  driver_enabled  = false\n  toolkit_enabled = false\n  runtime_class   = \"nvidia-container-runtime\"\n  mig_strategy    = \"{mig_strategy}\"\n}}\n\n{main}"
        ),
    )
    .unwrap();
    stack
}

/// A MIG module over `nodes` whose geometry and rollout come from variables.
fn mig_stack(nodes: &[&str], rollout: &str) -> Stack {
    let names = nodes
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    stack_of(
        &format!(
            r#"variable "geometry" {{
  type    = string
  default = "all-disabled"
}}

module "mig" {{
  source     = "../../modules/mig"
  operator   = module.gpu_operator
  gpu_model  = "A100-80GB"
  geometry   = var.geometry
  strategy   = "mixed"
  node_names = [{names}]
  rollout    = {rollout}
}}
"#
        ),
        "mixed",
    )
}

struct Destroy<'a>(&'a Stack, &'a [&'a str]);

impl Drop for Destroy<'_> {
    fn drop(&mut self) {
        let _ = self.0.run("destroy", &["--auto-approve"]);
        let c = e2e_cluster();
        for node in self.1 {
            let _ = c.kubectl(&["delete", "node", node, "--wait=false"]);
        }
    }
}

fn gpu_pod(name: &str, node: &str, pinned: bool) -> String {
    let placement = if pinned {
        format!("  nodeName: {node}\n")
    } else {
        format!("  nodeSelector:\n    kubernetes.io/hostname: {node}\n")
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    rollout-test: \"true\"\nspec:\n{placement}  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: train\n    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    )
}

/// Once each node advertises `advertised` GPUs, a GPU pod `<prefix>-<i>` runs on node `i`.
fn busy(c: &TestCluster, nodes: &[&str], prefix: &str, advertised: &str) {
    for (i, node) in nodes.iter().enumerate() {
        c.eventually(
            60,
            || allocatable(c, node, "nvidia.com/gpu"),
            |a| a == advertised,
        );
        c.apply_yaml(&gpu_pod(&format!("{prefix}-{i}"), node, false));
    }
    for i in 0..nodes.len() {
        c.eventually(
            60,
            || c.pod_phase(&format!("{prefix}-{i}")),
            |p| p == "Running",
        );
    }
}

fn node_field(c: &TestCluster, node: &str, path: &str) -> String {
    c.kubectl_ok(&["get", "node", node, "-o", &format!("jsonpath={path}")])
        .trim()
        .to_owned()
}

fn unschedulable(c: &TestCluster, node: &str) -> bool {
    node_field(c, node, "{.spec.unschedulable}") == "true"
}

fn mig_label(c: &TestCluster, node: &str, key: &str) -> String {
    node_field(
        c,
        node,
        &format!("{{.metadata.labels.{}}}", key.replace('.', "\\.")),
    )
}

fn record(c: &TestCluster, node: &str, rollout: &str) -> String {
    node_field(
        c,
        node,
        &format!("{{.metadata.annotations.rollout\\.gpustack\\.dev/{rollout}}}"),
    )
}

/// The steps one node's record passes through while a watch runs, in order, without repeats.
fn record_history(
    c: &'static TestCluster,
    node: &str,
    rollout: &str,
) -> (
    Arc<Mutex<Vec<String>>>,
    std::thread::JoinHandle<()>,
    Arc<std::sync::atomic::AtomicBool>,
) {
    let steps = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (steps2, stop2) = (steps.clone(), stop.clone());
    let (node, key) = (node.to_owned(), format!("rollout.gpustack.dev/{rollout}"));
    let handle = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let nodes: Api<Node> = Api::all(c.client().await);
            let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
            let mut stream = std::pin::pin!(watcher(nodes, config));
            while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                let event =
                    tokio::time::timeout(std::time::Duration::from_millis(200), stream.next())
                        .await;
                let Ok(Some(Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)))) = event
                else {
                    continue;
                };
                let step = n
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(&key))
                    .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok())
                    .and_then(|r| r["step"].as_str().map(str::to_owned));
                if let Some(step) = step {
                    let mut steps = steps2.lock().unwrap();
                    if steps.last() != Some(&step) {
                        steps.push(step);
                    }
                }
            }
        });
    });
    (steps, handle, stop)
}

/// What a watch of the nodes saw during a rollout, and what the observer did.
#[derive(Default)]
struct Seen {
    /// The most nodes of the pool cordoned by gpustack at once.
    most_cordoned: usize,
    /// Nodes relabelled (a new `nvidia.com/mig.config`) while a GPU pod still ran there.
    relabelled_busy: Vec<String>,
    /// The order in which nodes were first cordoned.
    cordon_order: Vec<String>,
}

/// Watches the pool's nodes while a rollout runs: counts the nodes cordoned by gpustack at
/// once, and on every relabel lists the node's pods (a fresh LIST, not the watch, so pod
/// deletions the node watch has not caught up with are seen). A node just cordoned has its
/// GPU pods finish one second later, as training jobs would.
fn observe(
    c: &'static TestCluster,
    nodes: &[&str],
    label: &'static str,
) -> (
    Arc<Mutex<Seen>>,
    std::thread::JoinHandle<()>,
    Arc<std::sync::atomic::AtomicBool>,
) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pool: BTreeSet<String> = nodes.iter().map(|n| n.to_string()).collect();
    let (seen2, done2) = (seen.clone(), done.clone());
    let handle = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let client = c.client().await;
            let nodes: Api<Node> = Api::all(client.clone());
            let pods: Api<Pod> = Api::all(client.clone());
            let mut stream = std::pin::pin!(watcher(nodes, watcher::Config::default()));
            let mut cordoned: BTreeSet<String> = BTreeSet::new();
            let mut labels: BTreeMap<String, String> = BTreeMap::new();
            while !done2.load(std::sync::atomic::Ordering::SeqCst) {
                let event =
                    tokio::time::timeout(std::time::Duration::from_millis(200), stream.next())
                        .await;
                let Ok(Some(Ok(event))) = event else {
                    continue;
                };
                let nodes: Vec<Node> = match event {
                    watcher::Event::Apply(n) | watcher::Event::InitApply(n) => vec![n],
                    _ => continue,
                };
                for node in nodes {
                    let name = node.metadata.name.clone().unwrap_or_default();
                    if !pool.contains(&name) {
                        continue;
                    }
                    let ours = node
                        .metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(CORDONED_BY))
                        && node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
                    let relabelled = {
                        let mut seen = seen2.lock().unwrap();
                        if ours && cordoned.insert(name.clone()) {
                            if !seen.cordon_order.contains(&name) {
                                seen.cordon_order.push(name.clone());
                            }
                            // The node's training job finishes a second after the cordon.
                            let pods = pods.clone();
                            let node_name = name.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                                let list = pods
                                    .list(
                                        &ListParams::default()
                                            .labels("rollout-test=true")
                                            .fields(&format!("spec.nodeName={node_name}")),
                                    )
                                    .await
                                    .unwrap();
                                for pod in list.items {
                                    let api: Api<Pod> =
                                        Api::namespaced(pods.clone().into_client(), "default");
                                    let _ = api
                                        .delete(
                                            pod.metadata.name.as_deref().unwrap_or_default(),
                                            &DeleteParams::default().grace_period(0),
                                        )
                                        .await;
                                }
                            });
                        } else if !ours {
                            cordoned.remove(&name);
                        }
                        seen.most_cordoned = seen.most_cordoned.max(cordoned.len());
                        let value = node
                            .metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(label))
                            .cloned()
                            .unwrap_or_default();
                        labels
                            .insert(name.clone(), value.clone())
                            .is_some_and(|before| before != value)
                    };
                    if relabelled {
                        let running = pods
                            .list(
                                &ListParams::default()
                                    .labels("rollout-test=true")
                                    .fields(&format!("spec.nodeName={name}")),
                            )
                            .await
                            .unwrap()
                            .items
                            .into_iter()
                            .filter(|p| p.metadata.deletion_timestamp.is_none())
                            .count();
                        if running > 0 {
                            seen2.lock().unwrap().relabelled_busy.push(name.clone());
                        }
                    }
                }
            }
        });
    });
    (seen, handle, done)
}

/// Applies with `var` under [`observe`]: the nodes were cordoned one at a time, in their
/// order, and `label` never changed on a node while a GPU pod ran there.
fn apply_one_node_at_a_time(
    c: &'static TestCluster,
    stack: &Stack,
    nodes: &[&str],
    label: &'static str,
    var: &str,
) {
    let (seen, watcher, done) = observe(c, nodes, label);
    let out = stack.ok("apply", &["--auto-approve", "--var", var]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    watcher.join().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.most_cordoned, 1, "{out}");
    assert_eq!(seen.cordon_order, nodes, "{out}");
    assert!(
        seen.relabelled_busy.is_empty(),
        "{label} changed with GPU pods running: {:?}",
        seen.relabelled_busy
    );
}

/// Three busy A100 nodes, `max_unavailable = 1` and `drain = "wait"`: the plan lists each
/// node's pods and the rollout; apply never has two nodes cordoned, never relabels a node
/// while its GPU pod runs (no pod is killed by MIG Manager), and leaves all three at the new
/// geometry, uncordoned; the next plan is empty.
#[test]
fn a_mig_rollout_takes_one_node_at_a_time_and_relabels_none_while_its_gpu_pods_run() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-wait-0", "ro-wait-1", "ro-wait-2"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
        c.kubectl_ok(&[
            "annotate",
            "node",
            node,
            "--overwrite",
            &format!("{RECONFIGURE_SECONDS}=1"),
        ]);
    }
    let stack = mig_stack(
        &nodes,
        r#"{ max_unavailable = "1", drain = "wait", settle_timeout = "2m" }"#,
    );
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    busy(c, &nodes, "ro-train", "1");
    let plan = stack.ok("plan", &["--var", "geometry=all-1g.10gb"]);
    for (i, node) in nodes.iter().enumerate() {
        let line = plan
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&format!("node {node}: reconfigures MIG")))
            .unwrap_or_else(|| panic!("no disruption line for {node}:\n{plan}"));
        assert!(
            line.contains(&format!("GPU pods running: default/ro-train-{i}")),
            "{line}"
        );
        assert!(
            line.contains("rollout: node by node by mig-geometry (at most 1 of 3 at once): cordons the node, waits up to 30m for its GPU pods to finish"),
            "{line}"
        );
    }
    apply_one_node_at_a_time(
        c,
        &stack,
        &nodes,
        "nvidia.com/mig.config",
        "geometry=all-1g.10gb",
    );
    for node in nodes {
        assert_eq!(allocatable(c, node, "nvidia.com/mig-1g.10gb"), "7");
        assert!(!unschedulable(c, node), "{node} is still cordoned");
        assert_eq!(
            node_field(
                c,
                node,
                &format!(
                    "{{.metadata.annotations.{}}}",
                    KILLED_PODS.replace('.', "\\.")
                )
            ),
            ""
        );
        assert!(record(c, node, "mig-geometry").contains("\"done\""));
    }
    let again = stack.ok("plan", &["--var", "geometry=all-1g.10gb"]);
    assert!(again.contains("No changes"), "{again}");
}

/// gpu-operator#2833 injected on the second node: the rollout stops there with exit 1, the
/// node cordoned and named with the cause, the third node untouched; once the wedge clears,
/// the next apply finishes the second node and goes on to the third.
#[test]
fn a_wedged_node_stops_the_rollout_cordoned_and_the_next_apply_resumes_after_it() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-wedge-0", "ro-wedge-1", "ro-wedge-2"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let stack = mig_stack(&nodes, r#"{ settle_timeout = "6s" }"#);
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    c.kubectl_ok(&[
        "annotate",
        "node",
        "ro-wedge-1",
        "--overwrite",
        &format!("{WEDGE}=stuck-pending"),
    ]);
    let out = stack.run(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Rollout mig-geometry stopped at node ro-wedge-1"),
        "{text}"
    );
    assert!(
        text.contains("nvidia.com/mig.config.state is still pending"),
        "{text}"
    );
    assert!(text.contains("not started: ro-wedge-2"), "{text}");
    assert!(unschedulable(c, "ro-wedge-1"));
    assert!(!unschedulable(c, "ro-wedge-0"));
    assert_eq!(allocatable(c, "ro-wedge-0", "nvidia.com/mig-1g.10gb"), "7");
    assert_eq!(
        mig_label(c, "ro-wedge-2", "nvidia.com/mig.config"),
        "all-disabled"
    );
    assert!(record(c, "ro-wedge-1", "mig-geometry").contains("\"failed\""));
    let plan = stack.ok("plan", &["--var", "geometry=all-1g.10gb"]);
    assert!(
        plan.contains("ro-wedge-1 = \"failed\" -> \"done\""),
        "{plan}"
    );
    assert!(
        plan.contains("ro-wedge-2 = \"pending\" -> \"done\""),
        "{plan}"
    );

    c.kubectl_ok(&["annotate", "node", "ro-wedge-1", &format!("{WEDGE}-")]);
    stack.ok(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    for node in nodes {
        assert!(!unschedulable(c, node), "{node} is still cordoned");
        assert_eq!(allocatable(c, node, "nvidia.com/mig-1g.10gb"), "7");
    }
}

/// A stack that holds only the rollout (the GPU Operator installed by another): drift still
/// compares each node with what the live configuration gives its labels, and names the node
/// MIG Manager left pending with nothing advertised.
#[test]
fn drift_names_a_wedged_node_with_only_the_rollout_in_the_stack() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-drift-0", "ro-drift-1"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let operator = stack_of("", "mixed");
    let _operator = Destroy(&operator, &nodes);
    operator.ok("apply", &["--auto-approve"]);
    let rollout = Stack::inline(
        r#"variable "kubeconfig" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_node_rollout" "geometry" {
  name           = "mig-drift"
  nodes          = ["ro-drift-0", "ro-drift-1"]
  labels         = { "nvidia.com/mig.config" = "all-1g.10gb" }
  settle         = "mig"
  expect_per_gpu = { "nvidia.com/mig-1g.10gb" = 7 }
  settle_timeout = "6s"
}
"#,
    );
    let _rollout = Destroy(&rollout, &[]);
    c.kubectl_ok(&[
        "annotate",
        "node",
        "ro-drift-1",
        "--overwrite",
        &format!("{WEDGE}=stuck-pending"),
    ]);
    let out = rollout.run("apply", &["--auto-approve"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(allocatable(c, "ro-drift-0", "nvidia.com/mig-1g.10gb"), "7");
    let out = rollout.run("drift", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("ro-drift-1"), "{text}");
    assert!(
        text.contains("MIG reconfiguration pending with nothing advertised"),
        "{text}"
    );
    assert!(
        !text.contains("ro-drift-0"),
        "the done node is not drift: {text}"
    );
    c.kubectl_ok(&["annotate", "node", "ro-drift-1", &format!("{WEDGE}-")]);
}

/// A stack that holds only the rollout, stopped at a node whose GPU pod `drain = "fail"` will
/// not move: drift names that node with the step it was left at, still cordoned, and not the
/// node the rollout finished; the next apply, once the pod is gone, finishes it and drift is
/// clean.
#[test]
fn drift_names_the_node_a_failed_rollout_left_cordoned() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-left-0", "ro-left-1"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let operator = stack_of("", "mixed");
    let _operator = Destroy(&operator, &nodes);
    operator.ok("apply", &["--auto-approve"]);
    busy(c, &["ro-left-1"], "ro-left-pod", "1");
    let rollout = Stack::inline(
        r#"variable "kubeconfig" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_node_rollout" "geometry" {
  name           = "mig-left"
  nodes          = ["ro-left-0", "ro-left-1"]
  labels         = { "nvidia.com/mig.config" = "all-1g.10gb" }
  settle         = "mig"
  drain          = "fail"
  expect_per_gpu = { "nvidia.com/mig-1g.10gb" = 7 }
}
"#,
    );
    let _rollout = Destroy(&rollout, &[]);
    let out = rollout.run("apply", &["--auto-approve"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        unschedulable(c, "ro-left-1"),
        "the failed node stays cordoned"
    );
    let drift = |args: &[&str]| {
        let out = rollout.run("drift", args);
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (code, text) = drift(&[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("node ro-left-1 was left at step failed by kubernetes_node_rollout.geometry and stays cordoned"),
        "{text}"
    );
    assert!(
        !text.contains("ro-left-0"),
        "the done node is not drift: {text}"
    );
    let (_, json) = drift(&["--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        report["gpu_capacity_drift"][0]["unfinished"]["step"], "failed",
        "{report}"
    );
    c.kubectl_ok(&["delete", "pod", "ro-left-pod-0", "--wait=true"]);
    rollout.ok("apply", &["--auto-approve"]);
    assert!(!unschedulable(c, "ro-left-1"));
    // Other tests' nodes share the cluster: only these two are this test's to judge.
    let (_, text) = drift(&[]);
    assert!(!text.contains("ro-left"), "{text}");
}

/// The rollout of docs/gpu.md alone in a stack, its first apply SIGKILLed with one node done
/// and one reconfiguring: the state never recorded it, yet the next plan adopts it from its
/// records on the nodes, shows each node's real step, and lists the half-done node, still
/// cordoned, in the disruption section; the next apply finishes it and a plan after is empty.
#[test]
fn a_first_apply_killed_mid_rollout_is_adopted_with_each_nodes_step() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-first-0", "ro-first-1", "ro-first-2"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
        c.kubectl_ok(&[
            "annotate",
            "node",
            node,
            "--overwrite",
            &format!("{RECONFIGURE_SECONDS}=8"),
        ]);
    }
    let operator = stack_of("", "mixed");
    let _operator = Destroy(&operator, &nodes);
    operator.ok("apply", &["--auto-approve"]);
    let rollout = Stack::inline(
        r#"variable "kubeconfig" {
  type = string
}

provider "kubernetes" {
  config_path = var.kubeconfig
}

resource "kubernetes_node_rollout" "geometry" {
  name           = "mig-first"
  nodes          = ["ro-first-0", "ro-first-1", "ro-first-2"]
  labels         = { "nvidia.com/mig.config" = "all-1g.10gb" }
  settle         = "mig"
  expect_per_gpu = { "nvidia.com/mig-1g.10gb" = 7 }
  drain          = "evict"
  settle_timeout = "2m"
}
"#,
    );
    let _rollout = Destroy(&rollout, &[]);
    let mut child = rollout
        .command("apply", &["--auto-approve"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    c.eventually(
        120,
        || record(c, "ro-first-1", "mig-first"),
        |r| r.contains("\"reconfiguring\""),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(record(c, "ro-first-0", "mig-first").contains("\"done\""));
    assert!(unschedulable(c, "ro-first-1"));
    let list = rollout.run("state", &["list"]);
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains("kubernetes_node_rollout"),
        "the killed apply recorded the rollout: this test needs it unrecorded"
    );
    let plan = rollout.ok("plan", &[]);
    assert!(
        plan.contains("Plan: 1 to import, 0 to add, 1 to change"),
        "{plan}"
    );
    assert!(
        !plan.contains("ro-first-0 = \""),
        "the done node is unchanged: {plan}"
    );
    assert!(
        plan.contains("ro-first-1 = \"reconfiguring\" -> \"done\""),
        "{plan}"
    );
    assert!(
        plan.contains("ro-first-2 = \"pending\" -> \"done\""),
        "{plan}"
    );
    let half_done = disruption_line(&plan, "ro-first-1");
    assert!(
        half_done.contains("finishes the rollout an earlier apply left at step reconfiguring")
            && half_done.contains("cordoned"),
        "{plan}"
    );
    assert!(
        disruption_line(&plan, "ro-first-2").contains("reconfigures MIG"),
        "{plan}"
    );
    rollout.ok("apply", &["--auto-approve"]);
    for node in nodes {
        assert!(!unschedulable(c, node), "{node} is still cordoned");
        assert_eq!(allocatable(c, node, "nvidia.com/mig-1g.10gb"), "7");
    }
    let out = rollout.run("plan", &["-detailed-exitcode"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// An admin's cordon is never lifted; a SIGKILL in the middle of a node's reconfiguration
/// leaves the step recorded on the node, and the next apply resumes there: the node's record
/// goes on from `reconfiguring` without being cordoned or drained again.
#[test]
fn an_admin_cordon_stays_and_a_killed_apply_resumes_at_the_nodes_recorded_step() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-kill-0", "ro-kill-1"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let stack = mig_stack(&nodes, r#"{ drain = "fail", settle_timeout = "2m" }"#);
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    c.kubectl_ok(&["cordon", "ro-kill-0"]);
    for node in nodes {
        c.kubectl_ok(&[
            "annotate",
            "node",
            node,
            "--overwrite",
            &format!("{RECONFIGURE_SECONDS}=8"),
        ]);
    }
    let mut child = {
        stack
            .command(
                "apply",
                &["--auto-approve", "--var", "geometry=all-1g.10gb"],
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // The admin-cordoned node takes no new pods already, so it goes first.
    c.eventually(
        60,
        || record(c, "ro-kill-0", "mig-geometry"),
        |r| r.contains("\"reconfiguring\""),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(record(c, "ro-kill-0", "mig-geometry").contains("\"reconfiguring\""));
    assert!(unschedulable(c, "ro-kill-0"));
    assert_eq!(
        node_field(
            c,
            "ro-kill-0",
            "{.metadata.annotations.gpustack\\.dev/cordoned-by}"
        ),
        ""
    );
    let plan = stack.ok("plan", &["--var", "geometry=all-1g.10gb"]);
    assert!(
        plan.contains("ro-kill-0 = \"reconfiguring\" -> \"done\""),
        "{plan}"
    );
    let (steps, history, stop) = record_history(c, "ro-kill-0", "mig-geometry");
    stack.ok(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    history.join().unwrap();
    let steps = steps.lock().unwrap().clone();
    assert_eq!(
        steps.first().map(String::as_str),
        Some("reconfiguring"),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| s == "cordoned" || s == "draining"),
        "the node was drained again: {steps:?}"
    );
    assert_eq!(steps.last().map(String::as_str), Some("done"), "{steps:?}");
    for node in nodes {
        assert_eq!(mig_label(c, node, "nvidia.com/mig.config.state"), "success");
        assert!(record(c, node, "mig-geometry").contains("\"done\""));
    }
    assert!(
        unschedulable(c, "ro-kill-0"),
        "the admin's cordon was lifted"
    );
    assert!(!unschedulable(c, "ro-kill-1"));
}

/// Time-slicing 10 → 4 on a named pool: the plan lists the device-plugin restart of each
/// node with the rollout; apply restarts the plugin one node at a time, and every node ends
/// advertising 4, uncordoned.
#[test]
fn a_sharing_change_restarts_the_device_plugin_one_node_at_a_time() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-ts-0", "ro-ts-1", "ro-ts-2"];
    for node in nodes {
        c.fake_gpu_node(node, "Tesla T4", 1);
    }
    let stack = stack_of(
        r#"variable "replicas" {
  type    = number
  default = 10
}

module "time_slicing" {
  source     = "../../modules/time-slicing"
  operator   = module.gpu_operator
  replicas   = var.replicas
  node_names = ["ro-ts-0", "ro-ts-1", "ro-ts-2"]
  rollout    = { settle_timeout = "2m" }
}
"#,
        "none",
    );
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    busy(c, &nodes, "ro-infer", "10");
    let plan = stack.ok("plan", &["--var", "replicas=4"]);
    for node in nodes {
        let line = plan
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&format!("node {node}: restarts the device plugin")))
            .unwrap_or_else(|| panic!("no disruption line for {node}:\n{plan}"));
        assert!(
            line.contains("rollout: node by node by time-slicing-config (at most 1 of 3 at once)"),
            "{line}"
        );
    }
    apply_one_node_at_a_time(c, &stack, &nodes, "nvidia.com/gpu.replicas", "replicas=4");
    for node in nodes {
        assert_eq!(allocatable(c, node, "nvidia.com/gpu"), "4");
        assert!(!unschedulable(c, node), "{node} is still cordoned");
    }
    let again = stack.ok("plan", &["--var", "replicas=4"]);
    assert!(again.contains("No changes"), "{again}");
}

/// Ctrl-C during a rollout: the node in progress is finished and uncordoned, no other node
/// starts, apply exits 1 saying which nodes were not started, and the next apply does them.
#[test]
fn ctrl_c_finishes_the_node_in_progress_and_starts_no_other() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-int-0", "ro-int-1"];
    for node in nodes {
        c.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
    }
    let stack = mig_stack(&nodes, r#"{ settle_timeout = "2m" }"#);
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    for node in nodes {
        c.kubectl_ok(&[
            "annotate",
            "node",
            node,
            "--overwrite",
            &format!("{RECONFIGURE_SECONDS}=5"),
        ]);
    }
    let child = stack
        .command(
            "apply",
            &["--auto-approve", "--var", "geometry=all-1g.10gb"],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.eventually(
        60,
        || record(c, "ro-int-0", "mig-geometry"),
        |r| r.contains("\"reconfiguring\""),
    );
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("Rollout mig-geometry interrupted"), "{text}");
    assert!(text.contains("not started: ro-int-1"), "{text}");
    assert!(record(c, "ro-int-0", "mig-geometry").contains("\"done\""));
    assert!(!unschedulable(c, "ro-int-0"));
    assert_eq!(allocatable(c, "ro-int-0", "nvidia.com/mig-1g.10gb"), "7");
    assert_eq!(
        mig_label(c, "ro-int-1", "nvidia.com/mig.config"),
        "all-disabled"
    );
    assert!(!unschedulable(c, "ro-int-1"));
    stack.ok(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    assert_eq!(allocatable(c, "ro-int-1", "nvidia.com/mig-1g.10gb"), "7");
}

/// `drain = "evict"` goes through the Eviction API: a PodDisruptionBudget that allows no
/// disruption keeps the pod, and the rollout stops at the drain with the node cordoned and
/// not relabelled; without the budget, the next apply evicts the pod and goes on.
#[test]
fn evict_respects_a_pod_disruption_budget_and_stops_at_the_drain() {
    let _one = OPERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let c = e2e_cluster();
    let nodes = ["ro-evict-0"];
    c.fake_gpu_node(nodes[0], "NVIDIA A100-SXM4-80GB", 1);
    let stack = mig_stack(&nodes, r#"{ drain = "evict", drain_timeout = "8s" }"#);
    let _destroy = Destroy(&stack, &nodes);
    stack.ok("apply", &["--auto-approve"]);
    busy(c, &nodes, "ro-evict", "1");
    c.apply_yaml(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: ro-evict\n  namespace: default\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      rollout-test: \"true\"\n",
    );
    let out = stack.run(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    let squashed: String = text.split_whitespace().collect();
    assert!(
        squashed.contains("Nodero-evict-0failedwhiledraining")
            && squashed.contains("GPUpodswerenotevicted:default/ro-evict-0"),
        "{text}"
    );
    assert_eq!(c.pod_phase("ro-evict-0"), "Running");
    assert!(unschedulable(c, "ro-evict-0"));
    assert_eq!(
        mig_label(c, "ro-evict-0", "nvidia.com/mig.config"),
        "all-disabled"
    );

    c.kubectl_ok(&["delete", "pdb", "ro-evict", "-n", "default"]);
    stack.ok(
        "apply",
        &["--auto-approve", "--var", "geometry=all-1g.10gb"],
    );
    assert_ne!(
        c.pod_phase("ro-evict-0"),
        "Running",
        "the pod was not evicted"
    );
    assert!(!unschedulable(c, "ro-evict-0"));
    assert_eq!(allocatable(c, "ro-evict-0", "nvidia.com/mig-1g.10gb"), "7");
}

/// What a watch saw while a pool was replaced, in order: `ready <node>` (a node of the new
/// pool first Ready), `cordon <node>` (an old node cordoned by gpustack), `gone <pod>` (a GPU
/// pod of the test deleted or evicted), `deleted <node>` (a node removed).
fn pool_timeline(
    c: &'static TestCluster,
    label: &'static str,
    old_pool: &'static str,
    new_pool: &'static str,
) -> (
    Arc<Mutex<Vec<String>>>,
    std::thread::JoinHandle<()>,
    Arc<std::sync::atomic::AtomicBool>,
) {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (seen2, done2) = (seen.clone(), done.clone());
    let handle = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let client = c.client().await;
            let mut nodes = std::pin::pin!(watcher(
                Api::<Node>::all(client.clone()),
                watcher::Config::default().labels(label),
            ));
            let mut pods = std::pin::pin!(watcher(
                Api::<Pod>::namespaced(client, "default"),
                watcher::Config::default().labels("pool-test=true"),
            ));
            let note = |line: String| {
                let mut seen = seen2.lock().unwrap();
                if !seen.contains(&line) {
                    seen.push(line);
                }
            };
            while !done2.load(std::sync::atomic::Ordering::SeqCst) {
                let tick = tokio::time::sleep(std::time::Duration::from_millis(200));
                tokio::select! {
                    Some(Ok(event)) = nodes.next() => match event {
                        watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                            let name = n.metadata.name.clone().unwrap_or_default();
                            let pool = n
                                .metadata
                                .labels
                                .as_ref()
                                .and_then(|l| l.get(label))
                                .cloned()
                                .unwrap_or_default();
                            let ready = n
                                .status
                                .as_ref()
                                .and_then(|s| s.conditions.as_ref())
                                .into_iter()
                                .flatten()
                                .any(|c| c.type_ == "Ready" && c.status == "True");
                            if pool == new_pool && ready {
                                note(format!("ready {name}"));
                            }
                            let ours = n
                                .metadata
                                .annotations
                                .as_ref()
                                .is_some_and(|a| a.contains_key(CORDONED_BY))
                                && n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
                            if pool == old_pool && ours {
                                note(format!("cordon {name}"));
                            }
                        }
                        watcher::Event::Delete(n) => {
                            note(format!("deleted {}", n.metadata.name.unwrap_or_default()));
                        }
                        _ => {}
                    },
                    Some(Ok(event)) = pods.next() => match event {
                        watcher::Event::Apply(p) if p.metadata.deletion_timestamp.is_some() => {
                            note(format!("gone {}", p.metadata.name.unwrap_or_default()));
                        }
                        watcher::Event::Delete(p) => {
                            note(format!("gone {}", p.metadata.name.unwrap_or_default()));
                        }
                        _ => {}
                    },
                    () = tick => {}
                }
            }
        });
    });
    (seen, handle, done)
}

/// The line of a plan's disruption section about `node`.
fn disruption_line<'p>(plan: &'p str, node: &str) -> &'p str {
    plan.lines()
        .map(str::trim)
        .find(|l| l.starts_with(&format!("node {node}:")))
        .unwrap_or_else(|| panic!("no disruption line for {node}:\n{plan}"))
}

/// Applies with `args` under [`pool_timeline`], until `last_old` is gone: the timeline and
/// the apply's output.
fn apply_watching_pools(
    c: &'static TestCluster,
    stack: &Stack,
    args: &[&str],
    pools: (&'static str, &'static str, &'static str),
    last_old: &str,
) -> (Vec<String>, String) {
    let (label, old_pool, new_pool) = pools;
    let (seen, watch, done) = pool_timeline(c, label, old_pool, new_pool);
    let out = stack.ok("apply", &[&["--auto-approve"][..], args].concat());
    c.eventually(
        30,
        || c.kubectl(&["get", "node", last_old]).stdout.is_empty(),
        |gone| *gone,
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    watch.join().unwrap();
    let timeline = seen.lock().unwrap().clone();
    (timeline, out)
}

fn pool_gpu_pod(name: &str, node: &str) -> String {
    gpu_pod(name, node, true).replace("rollout-test: \"true\"", "pool-test: \"true\"")
}

fn position(timeline: &[String], line: &str) -> usize {
    timeline
        .iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no \"{line}\" in {timeline:#?}"))
}

/// A GPU pool replaced with `create_before_destroy` and a rollout (GPU-FACTS "AKS"): the plan
/// lists the old pool's nodes and their GPU pods; apply makes the new pool, and only once a
/// node of it is Ready cordons every old node, evicts their GPU pods one node at a time, and
/// then deletes the old pool. A drain that cannot finish (`drain = "fail"` with a pod
/// running) fails the apply with the node and pod named, keeps the new pool in the state
/// with the old one to finish, leaves the old nodes cordoned; the next plan shows the rest,
/// and the next apply finishes it. A pool whose block is removed is listed and drained the
/// same way before it is deleted, and kept while its drain fails.
#[test]
fn a_pool_replacement_surges_drains_the_old_nodes_in_the_budget_and_resumes_after_a_failure() {
    let c = e2e_cluster();
    let sub = "00000000-0000-0000-0000-000000000000";
    let fake = AksFake::start(
        &[(&format!("{sub}/ml-rg/ml-aks"), "1.34.2")],
        Some(c.kubeconfig.clone()),
    );
    let main = r#"variable "kubeconfig" {
  type = string
}

variable "azure_endpoint" {
  type = string
}

variable "pool" {
  type = string
}

variable "size" {
  type = string
}

variable "drain" {
  type = string
}

variable "cluster" {
  type    = string
  default = "ml-aks"
}

provider "azure" {
  subscription_id = "00000000-0000-0000-0000-000000000000"
  endpoint        = var.azure_endpoint
}

resource "aks_nodepool" "gpu" {
  resource_group = "ml-rg"
  cluster        = var.cluster
  name           = var.pool
  vm_size        = var.size
  node_count     = 2
  mode           = "User"

  rollout {
    config_path     = var.kubeconfig
    max_unavailable = "1"
    drain           = var.drain
    drain_timeout   = "20s"
    ready_timeout   = "60s"
  }

  lifecycle {
    create_before_destroy = true
  }
}
"#;
    let mut stack = Stack::inline(main).with_vars(&[
        &format!("azure_endpoint={}", fake.endpoint),
        "pool=poolt4",
        "size=Standard_NC4as_T4_v3",
        "drain=evict",
    ]);
    stack.env = fake.env();
    stack.ok("apply", &["--auto-approve"]);
    let old = [
        "aks-poolt4-31415926-vmss000000",
        "aks-poolt4-31415926-vmss000001",
    ];
    let new = [
        "aks-poola100-31415926-vmss000000",
        "aks-poola100-31415926-vmss000001",
    ];
    let _cleanup = Destroy(&stack, &[]);
    for (i, node) in old.iter().enumerate() {
        c.eventually(
            30,
            || node_field(c, node, "{.metadata.name}"),
            |n| n == node,
        );
        c.apply_yaml(&pool_gpu_pod(&format!("pool-{i}"), node));
        c.eventually(60, || c.pod_phase(&format!("pool-{i}")), |p| p == "Running");
    }
    let to_a100 = [
        "--var",
        "pool=poola100",
        "--var",
        "size=Standard_NC24ads_A100_v4",
    ];

    let elsewhere = stack.run(
        "plan",
        &[&to_a100[..], &["--var", "cluster=other-aks"]].concat(),
    );
    assert_eq!(elsewhere.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&elsewhere.stderr).contains("into another cluster"),
        "{}",
        String::from_utf8_lossy(&elsewhere.stderr)
    );

    // The plan names each old node, its GPU pod and how it is emptied.
    let plan = stack.ok("plan", &to_a100);
    assert!(
        plan.contains("must be replaced (create before destroy)"),
        "{plan}"
    );
    for (i, node) in old.iter().enumerate() {
        let line = disruption_line(&plan, node);
        assert!(
            line.contains("nodepool poolt4 replaced by nodepool poola100")
                && line.contains(&format!("default/pool-{i}"))
                && line.contains("every node cordoned, then drained 1 at a time, GPU pods evicted")
                && line.contains("once the new pool's nodes are Ready"),
            "{line}"
        );
    }

    // Apply: the new pool first, then every old node cordoned, then one node's pod at a
    // time, then the old nodes go.
    let (timeline, out) = apply_watching_pools(
        c,
        &stack,
        &to_a100,
        ("kubernetes.azure.com/agentpool", "poolt4", "poola100"),
        old[1],
    );
    let first_ready = new
        .iter()
        .map(|n| position(&timeline, &format!("ready {n}")))
        .min()
        .unwrap();
    let cordons: Vec<usize> = old
        .iter()
        .map(|n| position(&timeline, &format!("cordon {n}")))
        .collect();
    let gone: Vec<usize> = (0..2)
        .map(|i| position(&timeline, &format!("gone pool-{i}")))
        .collect();
    let deleted: Vec<usize> = old
        .iter()
        .map(|n| position(&timeline, &format!("deleted {n}")))
        .collect();
    assert!(
        cordons.iter().all(|c| *c > first_ready),
        "an old node was cordoned before the new pool was Ready: {timeline:#?}\n{out}"
    );
    assert!(
        gone.iter().all(|g| cordons.iter().all(|c| c < g)),
        "a pod went before every old node was cordoned: {timeline:#?}"
    );
    assert!(gone[0] < gone[1], "{timeline:#?}");
    assert!(
        deleted.iter().all(|d| gone.iter().all(|g| g < d)),
        "an old node was deleted with its GPU pod: {timeline:#?}"
    );
    assert_eq!(
        fake.pools(),
        [format!("{sub}/ml-rg/ml-aks/poola100")],
        "{out}"
    );
    assert_eq!(
        stack
            .run("plan", &[&["--detailed-exitcode"][..], &to_a100].concat())
            .status
            .code(),
        Some(0)
    );

    // A drain that cannot finish: the new pool stays recorded with the old one to finish.
    c.apply_yaml(&pool_gpu_pod("pool-stuck", new[0]));
    c.eventually(60, || c.pod_phase("pool-stuck"), |p| p == "Running");
    let to_nd96 = [
        "--var",
        "pool=poolnd96",
        "--var",
        "size=Standard_ND96asr_v4",
        "--var",
        "drain=fail",
    ];
    let failed = stack.run("apply", &[&["--auto-approve"][..], &to_nd96].concat());
    let stderr = String::from_utf8_lossy(&failed.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("node {}", new[0]))
            && stderr.contains("drain = \"fail\"")
            && stderr.contains("default/pool-stuck")
            && stderr.contains("the next apply drains what is left and deletes the pool")
            && stderr.contains("1 added, 0 changed, 0 destroyed before the errors above"),
        "{stderr}"
    );
    let mut pools = fake.pools();
    pools.sort();
    assert_eq!(
        pools,
        [
            format!("{sub}/ml-rg/ml-aks/poola100"),
            format!("{sub}/ml-rg/ml-aks/poolnd96")
        ]
    );
    assert!(unschedulable(c, new[0]) && unschedulable(c, new[1]));
    let state = stack.ok("state", &["show", "aks_nodepool.gpu"]);
    assert!(
        state.contains("\"replacing\": \"poola100\"") && state.contains("\"name\": \"poolnd96\""),
        "{state}"
    );
    let plan = stack.ok("plan", &to_nd96);
    assert!(
        plan.contains(
            "nodepool poola100 deleted: the rest of its replacement by nodepool poolnd96"
        ),
        "{plan}"
    );
    // One unfinished replacement at a time, and never into another cluster.
    let again = stack.run(
        "plan",
        &[&to_nd96[..], &["--var", "pool=poolh100"]].concat(),
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("still has to finish replacing nodepool poola100"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    c.kubectl_ok(&[
        "delete",
        "pod",
        "pool-stuck",
        "-n",
        "default",
        "--grace-period=0",
    ]);
    stack.ok("apply", &[&["--auto-approve"][..], &to_nd96].concat());
    assert_eq!(fake.pools(), [format!("{sub}/ml-rg/ml-aks/poolnd96")]);
    assert_eq!(
        stack
            .run("plan", &[&["--detailed-exitcode"][..], &to_nd96].concat())
            .status
            .code(),
        Some(0)
    );

    // The pool's block removed: its deletion drains first, by the rollout it was applied with.
    let last = "aks-poolnd96-31415926-vmss000000";
    c.apply_yaml(&pool_gpu_pod("pool-last", last));
    c.eventually(60, || c.pod_phase("pool-last"), |p| p == "Running");
    let without = main[..main.find("resource \"aks_nodepool\"").unwrap()].to_owned();
    std::fs::write(stack.dir.join("main.hcl"), without).unwrap();
    let plan = stack.ok("plan", &to_nd96);
    let line = disruption_line(&plan, last);
    assert!(
        line.contains("nodepool poolnd96 deleted")
            && line.contains("default/pool-last")
            && line.contains("stops if GPU pods run"),
        "{line}"
    );
    let failed = stack.run("apply", &[&["--auto-approve"][..], &to_nd96].concat());
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(fake.pools(), [format!("{sub}/ml-rg/ml-aks/poolnd96")]);
    assert!(stack.ok("state", &["list"]).contains("aks_nodepool.gpu"));
    c.kubectl_ok(&[
        "delete",
        "pod",
        "pool-last",
        "-n",
        "default",
        "--grace-period=0",
    ]);
    stack.ok("apply", &[&["--auto-approve"][..], &to_nd96].concat());
    assert!(fake.pools().is_empty());
}

/// The same surge on GKE, whose fake makes the pools' nodes too: the new pool's node Ready
/// before the old node is cordoned, the old node's GPU pod evicted before the node goes.
#[test]
fn a_gke_pool_replacement_surges_and_drains_before_the_old_pool_goes() {
    let c = e2e_cluster();
    let cluster = "projects/ml-project/locations/us-central1-c/clusters/ml-gke";
    let fake = gpustack_tests::gke::GkeFake::start_with(&[cluster], Some(c.kubeconfig.clone()));
    let main = r#"variable "kubeconfig" {
  type = string
}

variable "gcp_endpoint" {
  type = string
}

variable "pool" {
  type = string
}

variable "machine" {
  type = string
}

variable "accelerator" {
  type = string
}

provider "gcp" {
  project  = "ml-project"
  endpoint = var.gcp_endpoint
}

resource "gke_nodepool" "gpu" {
  location     = "us-central1-c"
  cluster      = "ml-gke"
  name         = var.pool
  machine_type = var.machine
  node_count   = 1

  accelerator {
    type  = var.accelerator
    count = 1
  }

  rollout {
    config_path   = var.kubeconfig
    drain         = "evict"
    drain_timeout = "20s"
    ready_timeout = "60s"
  }

  lifecycle {
    create_before_destroy = true
  }
}
"#;
    let mut stack = Stack::inline(main).with_vars(&[
        &format!("gcp_endpoint={}", fake.endpoint),
        "pool=gke-t4",
        "machine=n1-standard-4",
        "accelerator=nvidia-tesla-t4",
    ]);
    stack.env = fake.env();
    stack.ok("apply", &["--auto-approve"]);
    let _cleanup = Destroy(&stack, &[]);
    let old = "gke-ml-gke-gke-t4-1a2b3c4d-0000";
    let new = "gke-ml-gke-gke-l4-1a2b3c4d-0000";
    c.eventually(30, || node_field(c, old, "{.metadata.name}"), |n| n == old);
    c.apply_yaml(&pool_gpu_pod("gke-pool-0", old));
    c.eventually(60, || c.pod_phase("gke-pool-0"), |p| p == "Running");
    let to_l4 = [
        "--var",
        "pool=gke-l4",
        "--var",
        "machine=g2-standard-4",
        "--var",
        "accelerator=nvidia-l4",
    ];
    let plan = stack.ok("plan", &to_l4);
    let line = disruption_line(&plan, old);
    assert!(
        plan.lines().any(|l| l.trim() == "drain = \"evict\""),
        "the unchanged rollout block is shown as a block:\n{plan}"
    );
    assert!(
        line.contains("nodepool gke-t4 replaced by nodepool gke-l4")
            && line.contains("default/gke-pool-0")
            && line.contains("GPU pods evicted"),
        "{line}"
    );
    let (timeline, out) = apply_watching_pools(
        c,
        &stack,
        &to_l4,
        ("cloud.google.com/gke-nodepool", "gke-t4", "gke-l4"),
        old,
    );
    let (ready, cordon, gone, deleted) = (
        position(&timeline, &format!("ready {new}")),
        position(&timeline, &format!("cordon {old}")),
        position(&timeline, "gone gke-pool-0"),
        position(&timeline, &format!("deleted {old}")),
    );
    assert!(
        ready < cordon && cordon < gone && gone < deleted,
        "{timeline:#?}\n{out}"
    );
    assert_eq!(
        fake.pools(),
        [format!("{cluster}/nodePools/gke-l4")],
        "{out}"
    );

    // A destroy plan lists what the pool's deletion takes, and how it is emptied first.
    c.apply_yaml(&pool_gpu_pod("gke-pool-1", new));
    c.eventually(60, || c.pod_phase("gke-pool-1"), |p| p == "Running");
    let plan = stack.ok("plan", &[&["--destroy"][..], &to_l4].concat());
    let line = disruption_line(&plan, new);
    assert!(
        line.contains("nodepool gke-l4 deleted")
            && line.contains("default/gke-pool-1")
            && line.contains("GPU pods evicted"),
        "{line}"
    );
}
