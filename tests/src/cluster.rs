//! The local test cluster (tests/cluster): one per test process, shared by its tests, with the
//! GPU Operator chart installed and the GPU simulator running against it.
//!
//! `GPUSTACK_TEST_KUBECONFIG` names a running cluster (CI starts one); otherwise the cluster
//! `gpustack-tests` is started, or reused, with `tests/cluster/up`.

use crate::gpusim::controller::{NAMESPACE, Simulator};
use crate::repo_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub struct TestCluster {
    pub kubeconfig: PathBuf,
    bin: PathBuf,
    helm: PathBuf,
}

/// The pinned versions of tests/cluster/versions.env.
pub fn versions() -> std::collections::HashMap<String, String> {
    let text = std::fs::read_to_string(repo_root().join("tests/cluster/versions.env"))
        .expect("tests/cluster/versions.env");
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.trim_start().starts_with('#'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

fn cache_root() -> PathBuf {
    std::env::var_os("GPUSTACK_TESTWORLD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/gpustack-testworld")
        })
}

/// A pinned Go tool of the test world, built into its cache on first use
/// (`tests/cluster/build COMPONENT`).
fn built_tool(component: &str, version_key: &str, binary: &str) -> PathBuf {
    let path = cache_root()
        .join(format!("{component}-{}", versions()[version_key]))
        .join("bin")
        .join(binary);
    if !path.is_file() {
        let out = Command::new(repo_root().join("tests/cluster/build"))
            .arg(component)
            .output()
            .unwrap_or_else(|e| panic!("run tests/cluster/build {component}: {e}"));
        assert!(
            out.status.success() && path.is_file(),
            "tests/cluster/build {component} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    path
}

/// The pinned OPA binary (CI builds it before the suite).
pub fn opa() -> PathBuf {
    built_tool("opa", "OPA_VERSION", "opa")
}

/// The pinned OpenTofu: the peer of the bench-iac benchmark and the oracle of the language's
/// differential test (`world::conformance`).
pub fn opentofu() -> PathBuf {
    built_tool("opentofu", "OPENTOFU_VERSION", "tofu")
}

/// The shared cluster, started and prepared on first use.
pub fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
        cluster.prepare();
        cluster.start_simulator();
        cluster
    })
}

/// A cluster of its own for the end-to-end flows, which install the GPU Operator with
/// gpustack: it has only a node for system pods, and the simulator playing NVIDIA's operands.
pub fn e2e_cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let cluster = TestCluster::start("gpustack-e2e", "GPUSTACK_TEST_E2E_KUBECONFIG");
        cluster.fake_gpu_node("tw-system", "none", 0);
        cluster.start_simulator();
        cluster
    })
}

impl TestCluster {
    /// The cluster a variable names, else the named one from tests/cluster/up.
    pub fn start(name: &str, variable: &str) -> Self {
        let v = versions();
        let bin = cache_root()
            .join(format!("kubernetes-{}", v["KUBERNETES_VERSION"]))
            .join("bin");
        let helm = cache_root()
            .join(format!("helm-{}", v["HELM_VERSION"]))
            .join("bin/helm");
        let kubeconfig = match std::env::var_os(variable) {
            Some(path) => PathBuf::from(path),
            None => {
                let out = Command::new(repo_root().join("tests/cluster/up"))
                    .arg(name)
                    .output()
                    .expect("run tests/cluster/up");
                assert!(
                    out.status.success(),
                    "tests/cluster/up {name} failed:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
            }
        };
        TestCluster {
            kubeconfig,
            bin,
            helm,
        }
    }

    /// Every helm the test world builds: helm 3 (`HELM_VERSION`) and helm 4 (`HELM4_VERSION`).
    pub fn helm_binaries(&self) -> Vec<PathBuf> {
        let v = versions();
        ["HELM_VERSION", "HELM4_VERSION"]
            .iter()
            .filter_map(|key| v.get(*key))
            .map(|version| {
                cache_root()
                    .join(format!("helm-{version}"))
                    .join("bin/helm")
            })
            .collect()
    }

    /// The directory of the built helm, for a PATH on which gpustack finds it.
    pub fn helm_dir(&self) -> &Path {
        self.helm.parent().unwrap_or(Path::new("."))
    }

    /// kubectl for this cluster, to add arguments to.
    pub fn kubectl_command(&self) -> Command {
        let mut command = Command::new(self.bin.join("kubectl"));
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        command
    }

    /// The phase of pod `name` in `default` (empty while it does not exist).
    pub fn pod_phase(&self, name: &str) -> String {
        let args = [
            "get",
            "pod",
            name,
            "-n",
            "default",
            "-o",
            "jsonpath={.status.phase}",
        ];
        String::from_utf8_lossy(&self.kubectl(&args).stdout).into_owned()
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(self.bin.join("kubectl"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .expect("run kubectl")
    }

    /// kubectl that must succeed; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn apply_yaml(&self, yaml: &str) {
        let mut child = Command::new(self.bin.join("kubectl"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["apply", "--server-side", "--force-conflicts", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run kubectl apply");
        std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), yaml.as_bytes())
            .expect("write manifest");
        let out = child.wait_with_output().expect("kubectl apply");
        assert!(
            out.status.success(),
            "kubectl apply: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn fake_gpu_node(&self, name: &str, model: &str, count: u32) {
        self.fake_gpu_node_labelled(name, model, count, &[]);
    }

    /// A fake GPU node with `labels` from its creation on, before the simulator sees it.
    pub fn fake_gpu_node_labelled(&self, name: &str, model: &str, count: u32, labels: &[&str]) {
        let out = Command::new(repo_root().join("tests/cluster/fake-gpu-node"))
            .args([name, model, &count.to_string()])
            .env("GPUSTACK_FAKE_NODE_LABELS", labels.join(","))
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .expect("run fake-gpu-node");
        assert!(
            out.status.success(),
            "fake-gpu-node: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub async fn client(&self) -> kube::Client {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("read kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("kubeconfig");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Polls until `check` holds (or panics after `seconds`), returning its last value.
    pub fn eventually<T: std::fmt::Debug>(
        &self,
        seconds: u64,
        mut probe: impl FnMut() -> T,
        check: impl Fn(&T) -> bool,
    ) -> T {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        loop {
            let value = probe();
            if check(&value) {
                return value;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "condition not met within {seconds}s; last: {value:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The GPU Operator from the real chart (driver and toolkit left to the cloud, as in the
    /// reference flow), NVIDIA's MIG geometries, and operand DaemonSets that roll on every node
    /// at once.
    fn prepare(&self) {
        let shared = crate::upstream("");
        for crd in [
            "monitoring.coreos.com_servicemonitors",
            "karpenter.sh_nodepools",
            "karpenter.sh_nodeclaims",
            "karpenter.k8s.aws_ec2nodeclasses",
        ] {
            self.kubectl_ok(&[
                "apply",
                "--server-side",
                "-f",
                path(&shared.join(format!("crds/{crd}.yaml"))),
            ]);
        }
        // A node without GPUs (the simulator ignores models it does not know) for the
        // operator's own pods: `helm install --wait` needs somewhere to schedule them.
        self.fake_gpu_node("tw-system", "none", 0);
        let installed = Command::new(&self.helm)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["status", "gpu-operator", "-n", NAMESPACE])
            .output()
            .expect("run helm");
        if !installed.status.success() {
            let out = Command::new(&self.helm)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args([
                    "install",
                    "gpu-operator",
                    path(&shared.join("charts/gpu-operator-v26.7.0.tgz")),
                    "-n",
                    NAMESPACE,
                    "--create-namespace",
                ])
                .args([
                    "--set",
                    "driver.enabled=false",
                    "--set",
                    "toolkit.enabled=false",
                    "--set",
                    "operator.runtimeClass=nvidia-container-runtime",
                ])
                .args(["--wait", "--timeout", "5m"])
                .output()
                .expect("run helm install");
            assert!(
                out.status.success(),
                "helm install gpu-operator: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mig = std::fs::read_to_string(shared.join("nvidia/default-mig-parted-config.yaml"))
            .expect("default MIG config")
            .replace("FILLED BY THE OPERATOR", NAMESPACE);
        self.apply_yaml(&mig);
        // The operand DaemonSets (the simulator makes them, as the operator would) roll on
        // every node at once: a restart is not paced by the nodes other tests have made.
        self.kubectl_ok(&[
            "patch",
            "clusterpolicy",
            "cluster-policy",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"daemonsets":{"rollingUpdate":{"maxUnavailable":"100%"}}}}"#,
        ]);
    }

    pub fn start_simulator(&self) {
        let kubeconfig = self.kubeconfig.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let cluster = TestCluster {
                    kubeconfig,
                    bin: PathBuf::new(),
                    helm: PathBuf::new(),
                };
                Simulator::run(cluster.client().await).await;
            });
        });
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}
