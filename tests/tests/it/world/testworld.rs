//! The test world: a real control plane (kube-apiserver, controller-manager, scheduler, etcd)
//! with kwok nodes, the real GPU Operator chart installed with the built helm, and the GPU
//! simulator playing NVIDIA's operands. kubectl — a real client — cross-checks everything.

use gpustack_tests::cluster::{TestCluster, cluster};
use std::sync::OnceLock;

const SHARING: &str = "gpustack-sharing";

/// The tests that restart device plugins and read what they reload: a restart of the whole
/// DaemonSet reaches every node.
static RESTARTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn time_slicing(replicas: u32, rename: bool) -> String {
    format!(
        "version: v1\n    flags:\n      migStrategy: none\n    sharing:\n      timeSlicing:\n        renameByDefault: {rename}\n        resources:\n        - name: nvidia.com/gpu\n          replicas: {replicas}"
    )
}

/// The sharing ConfigMap (one key per scenario, chosen per node by label) and the
/// ClusterPolicy pointing at it, as the time-slicing module does.
fn world() -> &'static TestCluster {
    static READY: OnceLock<()> = OnceLock::new();
    let c = cluster();
    READY.get_or_init(|| {
        c.apply_yaml(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {SHARING}\n  namespace: gpu-operator\ndata:\n  none: |\n    version: v1\n  ts-10: |\n    {}\n  ts-10-renamed: |\n    {}\n  ts-edit: |\n    {}\n",
            time_slicing(10, false),
            time_slicing(10, true),
            time_slicing(4, false)
        ));
        c.kubectl_ok(&[
            "patch", "clusterpolicy", "cluster-policy", "--type", "merge", "-p",
            &format!("{{\"spec\":{{\"devicePlugin\":{{\"config\":{{\"name\":\"{SHARING}\",\"default\":\"none\"}}}},\"mig\":{{\"strategy\":\"mixed\"}}}}}}"),
        ]);
    });
    c
}

fn allocatable(c: &TestCluster, node: &str, resource: &str) -> String {
    let escaped = resource.replace('.', "\\.");
    c.kubectl(&[
        "get",
        "node",
        node,
        "-o",
        &format!("jsonpath={{.status.allocatable.{escaped}}}"),
    ])
    .stdout
    .iter()
    .map(|b| *b as char)
    .collect()
}

fn label(c: &TestCluster, node: &str, key: &str) -> String {
    let escaped = key.replace('.', "\\.");
    c.kubectl(&[
        "get",
        "node",
        node,
        "-o",
        &format!("jsonpath={{.metadata.labels.{escaped}}}"),
    ])
    .stdout
    .iter()
    .map(|b| *b as char)
    .collect()
}

fn gpu_node(c: &TestCluster, name: &str, model: &str, count: u32, labels: &[&str]) {
    c.fake_gpu_node(name, model, count);
    if !labels.is_empty() {
        let mut args = vec!["label", "node", name, "--overwrite"];
        args.extend_from_slice(labels);
        c.kubectl_ok(&args);
    }
}

#[test]
fn real_clients_see_fake_gpu_nodes_and_real_versions() {
    let c = world();
    gpu_node(c, "tw-t4-plain", "Tesla T4", 1, &[]);
    c.eventually(
        30,
        || allocatable(c, "tw-t4-plain", "nvidia.com/gpu"),
        |v| v == "1",
    );
    let nodes = c.kubectl_ok(&["get", "nodes"]);
    assert!(
        nodes.contains("tw-t4-plain") && nodes.contains("Ready"),
        "{nodes}"
    );
    let version: serde_json::Value =
        serde_json::from_str(&c.kubectl_ok(&["version", "-o", "json"])).unwrap();
    let server = version["serverVersion"]["gitVersion"].as_str().unwrap();
    assert!(
        server.starts_with("v1.") && !server.contains("0.0.0"),
        "{version}"
    );
    assert_eq!(version["clientVersion"]["gitVersion"], server);
}

#[test]
fn time_slicing_multiplies_advertised_gpus() {
    let c = world();
    gpu_node(
        c,
        "tw-t4-ts",
        "Tesla T4",
        1,
        &["nvidia.com/device-plugin.config=ts-10"],
    );
    gpu_node(
        c,
        "tw-a100x8-ts",
        "NVIDIA-A100-SXM4-40GB",
        8,
        &["nvidia.com/device-plugin.config=ts-10"],
    );
    c.eventually(
        30,
        || allocatable(c, "tw-t4-ts", "nvidia.com/gpu"),
        |v| v == "10",
    );
    c.eventually(
        30,
        || allocatable(c, "tw-a100x8-ts", "nvidia.com/gpu"),
        |v| v == "80",
    );
    assert_eq!(
        label(c, "tw-t4-ts", "nvidia.com/gpu.product"),
        "Tesla-T4-SHARED"
    );
    assert_eq!(label(c, "tw-t4-ts", "nvidia.com/gpu.replicas"), "10");
    assert_eq!(
        label(c, "tw-t4-ts", "nvidia.com/gpu.sharing-strategy"),
        "time-slicing"
    );
}

#[test]
fn rename_by_default_advertises_shared_gpus() {
    let c = world();
    gpu_node(
        c,
        "tw-a100x8-rn",
        "NVIDIA-A100-SXM4-40GB",
        8,
        &["nvidia.com/device-plugin.config=ts-10-renamed"],
    );
    c.eventually(
        30,
        || allocatable(c, "tw-a100x8-rn", "nvidia.com/gpu.shared"),
        |v| v == "80",
    );
    assert_eq!(allocatable(c, "tw-a100x8-rn", "nvidia.com/gpu"), "0");
}

#[test]
fn mig_geometry_applies_and_an_invalid_one_fails_without_change() {
    let c = world();
    // The chart's ServiceMonitor and the Karpenter CRDs are there for the stacks that use them.
    for crd in [
        "nodepools.karpenter.sh",
        "ec2nodeclasses.karpenter.k8s.aws",
        "servicemonitors.monitoring.coreos.com",
    ] {
        c.kubectl_ok(&["get", "crd", crd]);
    }
    gpu_node(
        c,
        "tw-a100-mig",
        "NVIDIA-A100-SXM4-80GB",
        1,
        &["nvidia.com/mig.config=all-1g.10gb"],
    );
    c.eventually(
        30,
        || allocatable(c, "tw-a100-mig", "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    assert_eq!(
        label(c, "tw-a100-mig", "nvidia.com/mig.config.state"),
        "success"
    );
    // 1g.5gb is an A100-40GB profile: the MIG manager refuses it on an 80 GB GPU.
    c.kubectl_ok(&[
        "label",
        "node",
        "tw-a100-mig",
        "--overwrite",
        "nvidia.com/mig.config=all-1g.5gb",
    ]);
    c.eventually(
        30,
        || label(c, "tw-a100-mig", "nvidia.com/mig.config.state"),
        |v| v == "failed",
    );
    // The GPUs keep their layout and the operands were never paused (another test's restart
    // of the device plugin's DaemonSet may take the plugin away for a moment).
    assert_eq!(
        annotation(c, "tw-a100-mig", "gpusim.gpustack.dev/mig-applied"),
        "all-1g.10gb",
        "a failed geometry must not change the node"
    );
    assert_eq!(
        label(c, "tw-a100-mig", "nvidia.com/gpu.deploy.device-plugin"),
        "true"
    );
    c.eventually(
        30,
        || allocatable(c, "tw-a100-mig", "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    c.kubectl_ok(&[
        "label",
        "node",
        "tw-a100-mig",
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(
        30,
        || label(c, "tw-a100-mig", "nvidia.com/mig.config.state"),
        |v| v == "success",
    );
}

#[test]
fn an_in_place_config_edit_takes_effect_only_after_the_device_plugin_restarts() {
    let _one = RESTARTS.lock().unwrap_or_else(|e| e.into_inner());
    let c = world();
    let set_replicas = |n: u32| {
        let patch = serde_json::json!({ "data": { "ts-edit": format!("{}\n", time_slicing(n, false).replace("\n    ", "\n")) } }).to_string();
        c.kubectl_ok(&[
            "patch",
            "configmap",
            SHARING,
            "-n",
            "gpu-operator",
            "--type",
            "merge",
            "-p",
            &patch,
        ]);
    };
    // The DaemonSet controller replaces the plugin's pods as its update strategy allows: the
    // restart has reached the node once another plugin pod runs there. Its uid.
    let restart = || {
        let before = c.eventually(60, || plugin_pod(c, "tw-t4-edit"), |uid| !uid.is_empty());
        c.kubectl_ok(&[
            "rollout",
            "restart",
            "daemonset/nvidia-device-plugin-daemonset",
            "-n",
            "gpu-operator",
        ]);
        c.eventually(
            60,
            || plugin_pod(c, "tw-t4-edit"),
            |uid| !uid.is_empty() && *uid != before,
        )
    };
    let advertised_by = |uid: &str, gpus: &str| advertised_by(c, "tw-t4-edit", uid, gpus);
    gpu_node(
        c,
        "tw-t4-edit",
        "Tesla T4",
        1,
        &["nvidia.com/device-plugin.config=ts-edit"],
    );
    // A known start, whatever an earlier run left: 4 replicas, loaded by a fresh plugin.
    set_replicas(4);
    let loaded = restart();
    advertised_by(&loaded, "4");
    set_replicas(6);
    std::thread::sleep(std::time::Duration::from_secs(2));
    // Other tests' nodes come and go, and with them the DaemonSet's pods: the edit is judged
    // only while the plugin pod that loaded 4 is the one running.
    let running = plugin_pod(c, "tw-t4-edit");
    let gpus = allocatable(c, "tw-t4-edit", "nvidia.com/gpu");
    if running == loaded && annotation(c, "tw-t4-edit", "gpusim.gpustack.dev/plugin-pod") == loaded
    {
        assert_eq!(gpus, "4", "the plugin does not watch its ConfigMap");
    }
    let reloaded = restart();
    advertised_by(&reloaded, "6");
}

#[test]
fn four_vector_add_pods_land_on_the_one_shared_node_and_succeed() {
    let c = world();
    gpu_node(
        c,
        "tw-t4-job",
        "Tesla T4",
        1,
        &[
            "nvidia.com/device-plugin.config=ts-10",
            "gpustack.dev/pool=job",
        ],
    );
    c.eventually(
        30,
        || allocatable(c, "tw-t4-job", "nvidia.com/gpu"),
        |v| v == "10",
    );
    c.apply_yaml(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: vector-add\n  namespace: default\nspec:\n  parallelism: 4\n  completions: 4\n  template:\n    spec:\n      restartPolicy: Never\n      nodeSelector:\n        gpustack.dev/pool: job\n      tolerations:\n      - key: nvidia.com/gpu\n        operator: Exists\n        effect: NoSchedule\n      containers:\n      - name: vector-add\n        image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04\n        resources:\n          limits:\n            nvidia.com/gpu: 1\n",
    );
    c.eventually(
        60,
        || {
            c.kubectl_ok(&[
                "get",
                "job",
                "vector-add",
                "-o",
                "jsonpath={.status.succeeded}",
            ])
        },
        |v| v == "4",
    );
    let nodes = c.kubectl_ok(&[
        "get",
        "pods",
        "-l",
        "job-name=vector-add",
        "-o",
        "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
    ]);
    let nodes: Vec<&str> = nodes.lines().collect();
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    assert!(nodes.iter().all(|n| *n == "tw-t4-job"), "{nodes:?}");
}

/// The ClusterPolicy is ready once every operand DaemonSet has rolled out on the nodes it
/// selects: on this shared cluster other tests add, drain and delete GPU nodes all along, each
/// making it notReady for a few seconds, so the state is read often (through the API, not a
/// process per look) and a ready moment within three minutes is the claim.
#[test]
fn the_chart_yields_a_cluster_policy_that_becomes_ready() {
    let c = world();
    gpu_node(c, "tw-l4", "NVIDIA-L4", 1, &[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let last = runtime.block_on(async {
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy"),
            "clusterpolicies",
        );
        let policies: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(c.client().await, &resource);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        loop {
            let state = policies
                .get("cluster-policy")
                .await
                .ok()
                .and_then(|p| p.data["status"]["state"].as_str().map(str::to_owned))
                .unwrap_or_default();
            if state == "ready" || std::time::Instant::now() >= deadline {
                return state;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    assert_eq!(
        last,
        "ready",
        "the operand DaemonSets as they stand:\n{}",
        c.kubectl_ok(&["get", "daemonsets", "-n", "gpu-operator", "-o", "wide"])
    );
}

#[test]
fn kubectl_and_kube_rs_see_the_same_objects() {
    let c = world();
    gpu_node(c, "tw-h100", "NVIDIA-H100-80GB-HBM3", 8, &[]);
    c.eventually(
        30,
        || allocatable(c, "tw-h100", "nvidia.com/gpu"),
        |v| v == "8",
    );
    let from_kubectl: serde_json::Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "nodes", "-o", "json"])).unwrap();
    let mut kubectl_names: Vec<String> = from_kubectl["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut kube_names, product) = runtime.block_on(async {
        let client = c.client().await;
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
        let list = nodes.list(&Default::default()).await.unwrap();
        let h100 = nodes.get("tw-h100").await.unwrap();
        let product = h100
            .metadata
            .labels
            .unwrap_or_default()
            .get("nvidia.com/gpu.product")
            .cloned()
            .unwrap_or_default();
        (
            list.items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect::<Vec<_>>(),
            product,
        )
    });
    kubectl_names.sort();
    kube_names.sort();
    // Other tests add nodes concurrently: every node kubectl saw first, kube-rs sees too.
    assert!(
        kubectl_names.iter().all(|n| kube_names.contains(n)),
        "kubectl {kubectl_names:?}, kube-rs {kube_names:?}"
    );
    assert_eq!(product, label(c, "tw-h100", "nvidia.com/gpu.product"));
    assert_eq!(product, "NVIDIA-H100-80GB-HBM3");
}

/// A stopped cluster whose component's port another process took meanwhile: `up` names the
/// port and makes the cluster afresh on free ones, and it answers (tests/cluster/README.md).
#[test]
fn up_makes_a_cluster_afresh_when_a_stopped_components_port_is_taken() {
    use gpustack_tests::repo_root;
    use std::process::Command;
    const NAME: &str = "gpustack-port-taken";
    struct Down;
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(repo_root().join("tests/cluster/down"))
                .arg(NAME)
                .output();
        }
    }
    let up = || {
        let out = Command::new(repo_root().join("tests/cluster/up"))
            .arg(NAME)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "up {NAME} failed: {stderr}");
        (
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            stderr,
        )
    };
    let _down = Down;
    let (kubeconfig, _) = up();
    let dir = std::path::Path::new(&kubeconfig).parent().unwrap();
    let record = std::fs::read_to_string(dir.join("kwok.yaml")).unwrap();
    let port: u16 = record
        .lines()
        .find_map(|l| l.trim().strip_prefix("kubeSchedulerPort: "))
        .expect("kwokctl records the scheduler's port")
        .parse()
        .unwrap();
    let pid = std::fs::read_to_string(dir.join("pids/kube-scheduler.pid")).unwrap();
    let pid = pid.trim();
    assert!(Command::new("kill").arg(pid).status().unwrap().success());
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    assert!(gone, "the scheduler {pid} did not stop");
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (_, stderr) = up();
    drop(listener);
    assert!(
        stderr.contains(&format!("kube-scheduler:{port}")) && stderr.contains("making it afresh"),
        "{stderr}"
    );
    let record = std::fs::read_to_string(dir.join("kwok.yaml")).unwrap();
    assert!(
        !record.contains(&format!("kubeSchedulerPort: {port}\n")),
        "the scheduler kept the taken port"
    );
    // Up again, as tests reach it: it is up, and its API answers.
    let remade = TestCluster::start(NAME, "GPUSTACK_TEST_PORT_TAKEN_KUBECONFIG");
    let ready = remade
        .kubectl_command()
        .args(["get", "--raw", "/readyz"])
        .output()
        .unwrap();
    assert!(
        ready.status.success(),
        "the cluster made afresh does not answer"
    );
}

fn annotation(c: &TestCluster, node: &str, key: &str) -> String {
    let escaped = key.replace('.', "\\.").replace('/', "\\/");
    c.kubectl_ok(&[
        "get",
        "node",
        node,
        "-o",
        &format!("jsonpath={{.metadata.annotations.{escaped}}}"),
    ])
}

fn ready(c: &TestCluster, node: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "node",
        node,
        "-o",
        r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
    ])
}

/// Waits until `node` advertises `gpus` from the config that the plugin pod `uid` loaded (the
/// simulator names on the node the pod whose config it advertises). A count alone may still be
/// the previous pod's, and the next pod loads whatever the ConfigMap holds when it starts.
fn advertised_by(c: &TestCluster, node: &str, uid: &str, gpus: &str) {
    c.eventually(
        60,
        || {
            (
                annotation(c, node, "gpusim.gpustack.dev/plugin-pod"),
                allocatable(c, node, "nvidia.com/gpu"),
            )
        },
        |(seen, have)| seen == uid && have == gpus,
    );
}

/// The uid of the device plugin's pod running on a node and not being deleted (the oldest,
/// which the DaemonSet controller keeps when it made two); empty when there is none.
fn plugin_pod(c: &TestCluster, node: &str) -> String {
    let pods = c.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        "gpu-operator",
        "-l",
        "app=nvidia-device-plugin-daemonset",
        "--field-selector",
        &format!("spec.nodeName={node},status.phase=Running"),
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "jsonpath={range .items[*]}{.metadata.uid} {.metadata.deletionTimestamp}{\"\\n\"}{end}",
    ]);
    pods.lines()
        .map(str::trim)
        .find(|line| !line.contains(' '))
        .unwrap_or_default()
        .to_owned()
}

/// The pods of the operator's operands on a node.
fn operand_pods(c: &TestCluster, node: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        "gpu-operator",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "jsonpath={range .items[*]}{.metadata.labels.app}{\" \"}{end}",
    ])
}

/// A long-running pod holding one GPU of the node, as a training job's would.
fn gpu_pod(c: &TestCluster, name: &str, node: &str, resource: &str) {
    c.apply_yaml(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  nodeSelector:\n    kubernetes.io/hostname: {node}\n  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: train\n    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04\n    resources:\n      limits:\n        {resource}: 1\n"
    ));
    c.eventually(60, || c.pod_phase(name), |phase| phase == "Running");
}

/// A MIG node of its own, advertising its one whole GPU before any geometry.
fn fresh_mig_node(c: &TestCluster, name: &str, annotations: &[&str]) {
    let _ = c.kubectl(&["delete", "node", name, "--wait=true"]);
    let _ = c.kubectl(&[
        "delete",
        "configmap",
        &format!("{name}-mig-config"),
        "-n",
        "gpu-operator",
    ]);
    gpu_node(c, name, "NVIDIA-A100-SXM4-80GB", 1, &[]);
    if !annotations.is_empty() {
        let mut args = vec!["annotate", "node", name, "--overwrite"];
        args.extend_from_slice(annotations);
        c.kubectl_ok(&args);
    }
    c.eventually(60, || allocatable(c, name, "nvidia.com/gpu"), |v| v == "1");
}

/// MIG Manager as mig-parted runs it: pending, the operands paused and waited for, the GPUs
/// repartitioned — killing the pod left on them, since it never waits for user pods — the
/// operands back, success.
/// Held by the tests that install NVIDIA's DRA driver on the shared cluster and by the MIG
/// Manager test below: with the driver installed beside it, that test's pod is seen Running
/// after its kill (found, cause not yet known), so the two do not run at once.
pub(super) static DRA_BESIDE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn mig_manager_pauses_the_operands_and_kills_a_gpu_pod_left_on_the_node() {
    // MIG Manager acts on the shared ClusterPolicy's settings, which the operator tests change:
    // it runs apart from them (their lock first, as the DRA tests take both).
    let _operator = super::e2e::OPERATOR
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let _alone = DRA_BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let c = world();
    let node = "tw-mig-kill";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/reconfigure-seconds=3"]);
    for operand in ["device-plugin", "gpu-feature-discovery", "dcgm-exporter"] {
        assert_eq!(
            label(c, node, &format!("nvidia.com/gpu.deploy.{operand}")),
            "true"
        );
    }
    c.eventually(
        60,
        || operand_pods(c, node),
        |p| p.contains("nvidia-device-plugin-daemonset"),
    );
    let _ = c.kubectl(&[
        "delete",
        "pod",
        "tw-mig-victim",
        "-n",
        "default",
        "--wait=true",
    ]);
    gpu_pod(c, "tw-mig-victim", node, "nvidia.com/gpu");
    // Running first, as a training job would be: kwok's own Running, arriving after the
    // simulator's kill, would otherwise overwrite the Failed.
    c.eventually(60, || c.pod_phase("tw-mig-victim"), |p| p == "Running");

    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(
        10,
        || label(c, node, "nvidia.com/gpu.deploy.device-plugin"),
        |v| v == "paused-for-mig-change",
    );
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "pending");
    assert_eq!(
        label(c, node, "nvidia.com/gpu.deploy.gpu-feature-discovery"),
        "paused-for-mig-change"
    );
    // The operands go, and with the device plugin the node's healthy GPUs.
    c.eventually(60, || operand_pods(c, node), |p| p.trim().is_empty());
    c.eventually(10, || allocatable(c, node, "nvidia.com/gpu"), |v| v == "0");
    // With what the simulator recorded beside the phase, should it not come.
    c.eventually(
        120,
        || {
            (
                c.pod_phase("tw-mig-victim"),
                annotation(c, node, "gpusim.gpustack.dev/killed-pods"),
                label(c, node, "nvidia.com/mig.config.state"),
            )
        },
        |(phase, _, _)| phase == "Failed",
    );
    let reason = c.kubectl_ok(&[
        "get",
        "pod",
        "tw-mig-victim",
        "-n",
        "default",
        "-o",
        "jsonpath={.status.reason}",
    ]);
    assert_eq!(reason, "GPUReconfigured");
    assert_eq!(
        annotation(c, node, "gpusim.gpustack.dev/killed-pods"),
        "default/tw-mig-victim"
    );
    c.eventually(
        60,
        || label(c, node, "nvidia.com/mig.config.state"),
        |v| v == "success",
    );
    assert_eq!(
        label(c, node, "nvidia.com/gpu.deploy.device-plugin"),
        "true"
    );
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    c.kubectl_ok(&["delete", "pod", "tw-mig-victim", "-n", "default"]);
}

/// Since v26.3.0 MIG Manager generates `<node>-mig-config` from NVML: the geometries of the
/// node's own GPU, which it uses in place of NVIDIA's static default.
#[test]
fn mig_manager_generates_and_uses_a_per_node_config() {
    let c = world();
    let node = "tw-mig-pernode";
    fresh_mig_node(c, node, &[]);
    let config = c.eventually(
        60,
        || {
            String::from_utf8_lossy(
                &c.kubectl(&[
                    "get",
                    "configmap",
                    &format!("{node}-mig-config"),
                    "-n",
                    "gpu-operator",
                    "-o",
                    r"jsonpath={.data.config\.yaml}",
                ])
                .stdout,
            )
            .into_owned()
        },
        |text| !text.is_empty(),
    );
    assert!(config.contains("all-1g.10gb:"), "{config}");
    assert!(config.contains("\"7g.80gb\": 1"), "{config}");
    assert!(
        !config.contains("1g.5gb"),
        "an A100 80GB has no 1g.5gb: {config}"
    );
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-3g.40gb",
    ]);
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-3g.40gb"),
        |v| v == "2",
    );
}

/// gpu-operator#2833: the state stays pending, the operands paused and no GPU advertised,
/// with no error; it goes on once the wedge is cleared.
#[test]
fn a_stuck_pending_wedge_advertises_nothing_until_it_is_cleared() {
    let c = world();
    let node = "tw-mig-stuck";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/wedge=stuck-pending"]);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(60, || allocatable(c, node, "nvidia.com/gpu"), |v| v == "0");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "pending");
    assert_eq!(
        label(c, node, "nvidia.com/gpu.deploy.device-plugin"),
        "paused-for-mig-change"
    );
    assert_eq!(allocatable(c, node, "nvidia.com/gpu"), "0");
    c.kubectl_ok(&["annotate", "node", node, "gpusim.gpustack.dev/wedge-"]);
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "success");
}

/// gpu-operator#2415: the kubelet restarted by the reconfiguration does not come back and the
/// node is NotReady; the kubelet's return lets MIG Manager finish.
#[test]
fn a_kubelet_that_does_not_come_back_leaves_the_node_not_ready() {
    let c = world();
    let node = "tw-mig-kubelet";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/wedge=kubelet-restart"]);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(60, || ready(c, node), |v| v == "False");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        ready(c, node),
        "False",
        "kwok must not play a kubelet that is down"
    );
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "pending");
    c.kubectl_ok(&["annotate", "node", node, "gpusim.gpustack.dev/wedge-"]);
    c.eventually(60, || ready(c, node), |v| v == "True");
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "success");
}

/// The two other signs of a wedge: success with the operands left paused, and success with
/// nothing advertised.
#[test]
fn a_success_can_leave_the_operands_paused_or_nothing_advertised() {
    let c = world();
    let node = "tw-mig-paused";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/wedge=paused-left"]);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(
        60,
        || label(c, node, "nvidia.com/mig.config.state"),
        |v| v == "success",
    );
    assert_eq!(
        label(c, node, "nvidia.com/gpu.deploy.device-plugin"),
        "paused-for-mig-change"
    );
    assert_eq!(allocatable(c, node, "nvidia.com/mig-1g.10gb"), "0");
    // A node whose operands stay paused keeps the operator notReady: gone, it holds no one up.
    c.kubectl_ok(&["delete", "node", node]);

    let node = "tw-mig-zero";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/wedge=zero-after-success"]);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(
        60,
        || label(c, node, "nvidia.com/mig.config.state"),
        |v| v == "success",
    );
    c.eventually(
        60,
        || operand_pods(c, node),
        |p| p.contains("nvidia-device-plugin-daemonset"),
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        label(c, node, "nvidia.com/gpu.deploy.device-plugin"),
        "true"
    );
    assert_eq!(allocatable(c, node, "nvidia.com/mig-1g.10gb"), "0");
    c.kubectl_ok(&["annotate", "node", node, "gpusim.gpustack.dev/wedge-"]);
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
}

/// With `WITH_REBOOT=true` in the MIG Manager's environment, a change of MIG mode reboots the
/// node: state rebooting and the node NotReady, then pending again, then success.
#[test]
fn with_reboot_a_mig_mode_change_reboots_the_node() {
    let c = world();
    let node = "tw-mig-reboot";
    fresh_mig_node(c, node, &["gpusim.gpustack.dev/reboot-seconds=3"]);
    let env = |value: &str| {
        c.kubectl_ok(&[
            "patch",
            "clusterpolicy",
            "cluster-policy",
            "--type",
            "merge",
            "-p",
            &format!(r#"{{"spec":{{"migManager":{{"env":{value}}}}}}}"#),
        ]);
    };
    struct Restore<F: Fn(&str)>(F);
    impl<F: Fn(&str)> Drop for Restore<F> {
        fn drop(&mut self) {
            (self.0)("[]");
        }
    }
    env(r#"[{"name":"WITH_REBOOT","value":"true"}]"#);
    let _restore = Restore(env);
    c.kubectl_ok(&[
        "label",
        "node",
        node,
        "--overwrite",
        "nvidia.com/mig.config=all-1g.10gb",
    ]);
    c.eventually(
        60,
        || {
            (
                label(c, node, "nvidia.com/mig.config.state"),
                ready(c, node),
            )
        },
        |(state, ready)| state == "rebooting" && ready == "False",
    );
    c.eventually(
        60,
        || allocatable(c, node, "nvidia.com/mig-1g.10gb"),
        |v| v == "7",
    );
    assert_eq!(ready(c, node), "True");
    assert_eq!(label(c, node, "nvidia.com/mig.config.state"), "success");
}

/// gpu-operator#304 and #536: the operator uncordons nodes whoever cordoned them.
#[test]
fn the_operator_uncordons_a_node_on_its_own_schedule() {
    let c = world();
    let node = "tw-uncordon";
    gpu_node(c, node, "NVIDIA-L4", 1, &[]);
    c.kubectl_ok(&[
        "annotate",
        "node",
        node,
        "--overwrite",
        "gpusim.gpustack.dev/operator-uncordon-seconds=2",
    ]);
    c.kubectl_ok(&["cordon", node]);
    let schedulable =
        || c.kubectl_ok(&["get", "node", node, "-o", "jsonpath={.spec.unschedulable}"]);
    assert_eq!(schedulable(), "true");
    c.eventually(15, schedulable, |v| v.is_empty() || v == "false");
}

/// The device plugin of one node loads an edited config when its own pod is replaced, and
/// only that node's: the restart is per node.
#[test]
fn a_device_plugin_pod_replaced_on_one_node_reloads_only_that_node() {
    let _one = RESTARTS.lock().unwrap_or_else(|e| e.into_inner());
    let c = world();
    let set_replicas = |n: u32| {
        let patch = serde_json::json!({ "data": { "ts-pernode": format!("{}\n", time_slicing(n, false).replace("\n    ", "\n")) } }).to_string();
        c.kubectl_ok(&[
            "patch",
            "configmap",
            SHARING,
            "-n",
            "gpu-operator",
            "--type",
            "merge",
            "-p",
            &patch,
        ]);
    };
    // Replaces the node's plugin pod, and waits until another one runs.
    let restart = |node: &str| {
        let before = c.eventually(60, || plugin_pod(c, node), |uid| !uid.is_empty());
        c.kubectl_ok(&[
            "delete",
            "pod",
            "-n",
            "gpu-operator",
            "-l",
            "app=nvidia-device-plugin-daemonset",
            "--field-selector",
            &format!("spec.nodeName={node}"),
        ]);
        c.eventually(
            60,
            || plugin_pod(c, node),
            |uid| !uid.is_empty() && *uid != before,
        )
    };
    set_replicas(4);
    let mut loaded_b = String::new();
    for node in ["tw-pernode-a", "tw-pernode-b"] {
        gpu_node(
            c,
            node,
            "Tesla T4",
            1,
            &["nvidia.com/device-plugin.config=ts-pernode"],
        );
        let uid = restart(node);
        advertised_by(c, node, &uid, "4");
        loaded_b = uid;
    }
    set_replicas(6);
    let reloaded_a = restart("tw-pernode-a");
    advertised_by(c, "tw-pernode-a", &reloaded_a, "6");
    assert_eq!(
        (
            annotation(c, "tw-pernode-b", "gpusim.gpustack.dev/plugin-pod"),
            allocatable(c, "tw-pernode-b", "nvidia.com/gpu"),
        ),
        (loaded_b, "4".to_owned()),
        "the other node's plugin reloaded"
    );
}
