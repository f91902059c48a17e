//! The test world: a real control plane (kube-apiserver, controller-manager, scheduler, etcd)
//! with kwok nodes, the real GPU Operator chart installed with the built helm, and the GPU
//! simulator playing NVIDIA's operands. kubectl — a real client — cross-checks everything.

use gpustack_tests::cluster::{TestCluster, cluster};
use std::sync::OnceLock;

const SHARING: &str = "gpustack-sharing";

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
    assert_eq!(
        allocatable(c, "tw-a100-mig", "nvidia.com/mig-1g.10gb"),
        "7",
        "a failed geometry must not change the node"
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
    let restart = || {
        c.kubectl_ok(&[
            "rollout",
            "restart",
            "daemonset/nvidia-device-plugin-daemonset",
            "-n",
            "gpu-operator",
        ])
    };
    gpu_node(
        c,
        "tw-t4-edit",
        "Tesla T4",
        1,
        &["nvidia.com/device-plugin.config=ts-edit"],
    );
    // A known start, whatever an earlier run left: 4 replicas, loaded by a fresh plugin.
    set_replicas(4);
    restart();
    c.eventually(
        30,
        || allocatable(c, "tw-t4-edit", "nvidia.com/gpu"),
        |v| v == "4",
    );
    set_replicas(6);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        allocatable(c, "tw-t4-edit", "nvidia.com/gpu"),
        "4",
        "the plugin does not watch its ConfigMap"
    );
    restart();
    c.eventually(
        30,
        || allocatable(c, "tw-t4-edit", "nvidia.com/gpu"),
        |v| v == "6",
    );
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

#[test]
fn the_chart_yields_a_cluster_policy_that_becomes_ready() {
    let c = world();
    gpu_node(c, "tw-l4", "NVIDIA-L4", 1, &[]);
    c.eventually(
        60,
        || {
            c.kubectl_ok(&[
                "get",
                "clusterpolicy",
                "cluster-policy",
                "-o",
                "jsonpath={.status.state}",
            ])
        },
        |v| v == "ready",
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
