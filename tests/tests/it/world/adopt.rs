//! Adopting a GPU Operator installed by hand with helm and kubectl, on a cluster of its own
//! (the operator's cluster-wide objects would meet the other tests' installs): import blocks
//! with `--generate-config-out` write configuration that validates and plans no change, and
//! examples/adopt-gpu-operator takes the installation in with an apply that changes nothing.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::{copy_dir, gpustack_command, repo_root, stderr, stdout};
use std::path::Path;
use std::process::Command;

const TIME_SLICING: &str = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";

/// The cluster, deleted when the test ends (unless the environment named one to use).
struct Own(TestCluster, bool);

impl Drop for Own {
    fn drop(&mut self) {
        if self.1 {
            let _ = Command::new(repo_root().join("tests/cluster/down"))
                .arg("gpustack-adopt")
                .output();
        }
    }
}

fn run(c: &TestCluster, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let mut all: Vec<&str> = args.to_vec();
    if !["validate", "state"].contains(&args[0]) {
        all.extend(["--var", &kubeconfig]);
    }
    let path = format!(
        "{}:{}",
        c.helm_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = gpustack_command(dir, &all, &[("PATH", path.as_str())])
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn revision(c: &TestCluster) -> String {
    let out = Command::new(c.helm_dir().join("helm"))
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(["status", "gpu-operator", "-n", "gpu-operator", "-o", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    status["version"].to_string()
}

#[test]
fn a_hand_installed_gpu_operator_is_adopted() {
    let own = std::env::var_os("GPUSTACK_TEST_ADOPT_KUBECONFIG").is_none();
    let cluster = Own(
        TestCluster::start("gpustack-adopt", "GPUSTACK_TEST_ADOPT_KUBECONFIG"),
        own,
    );
    let c = &cluster.0;
    let chart = gpustack_tests::upstream("charts/gpu-operator-v26.7.0.tgz");
    let installed = Command::new(c.helm_dir().join("helm"))
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(["upgrade", "--install", "gpu-operator"])
        .arg(&chart)
        .args([
            "-n",
            "gpu-operator",
            "--create-namespace",
            "--set",
            "driver.enabled=false",
            "--set",
            "toolkit.enabled=false",
        ])
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let sharing = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(sharing.path(), TIME_SLICING).unwrap();
    let _ = c.kubectl(&[
        "delete",
        "configmap",
        "time-slicing-config",
        "-n",
        "gpu-operator",
    ]);
    c.kubectl_ok(&[
        "create",
        "configmap",
        "time-slicing-config",
        "-n",
        "gpu-operator",
        &format!("--from-file=any={}", sharing.path().display()),
    ]);
    assert_eq!(revision(c), "1");

    // The import blocks alone: their resource blocks are written from what is installed.
    let example = repo_root().join("examples/adopt-gpu-operator/main.hcl");
    let text = std::fs::read_to_string(&example).unwrap();
    let imports_only = &text[..text
        .find("resource \"kubernetes_manifest\" \"namespace\"")
        .unwrap()];
    let generated = tempfile::tempdir().unwrap();
    std::fs::write(generated.path().join("main.hcl"), imports_only).unwrap();
    let (code, out, err) = run(
        c,
        generated.path(),
        &["plan", "--generate-config-out", "generated.hcl"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let written = std::fs::read_to_string(generated.path().join("generated.hcl")).unwrap();
    for block in [
        "resource \"helm_release\" \"gpu_operator\"",
        "resource \"kubernetes_manifest\" \"namespace\"",
        "resource \"kubernetes_manifest\" \"time_slicing\"",
    ] {
        assert!(written.contains(block), "{block}:\n{written}");
    }
    let (code, out, err) = run(c, generated.path(), &["validate"]);
    assert_eq!(
        code, 0,
        "the generated configuration validates:\n{out}{err}\n{written}"
    );
    let (code, plan, err) = run(c, generated.path(), &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{plan}{err}");
    assert!(
        plan.contains("3 to import, 0 to add, 0 to change, 0 to destroy"),
        "the generated configuration plans no change:\n{plan}\n{written}"
    );

    // The example: the installation taken in, nothing changed, and nothing to do after.
    let stack = tempfile::tempdir().unwrap();
    copy_dir(
        &repo_root().join("examples/adopt-gpu-operator"),
        stack.path(),
    );
    let (code, plan, err) = run(c, stack.path(), &["plan"]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(
        plan.contains("3 to import, 0 to add, 0 to change, 0 to destroy"),
        "{plan}"
    );
    let (code, out, err) = run(c, stack.path(), &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("3 imported, 0 added, 0 changed, 0 destroyed"),
        "{out}"
    );
    assert_eq!(revision(c), "1", "the release was not upgraded");
    let (code, plan, err) = run(c, stack.path(), &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{plan}{err}");
}
