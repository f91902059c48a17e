//! The helm provider without helm: a clear error that names what to install, exit 1.

use gpustack_tests::{gpustack_env, stderr};

const STACK: &str = r#"
provider "helm" {}

resource "helm_release" "operator" {
  name       = "gpu-operator"
  chart      = "gpu-operator"
  repository = "https://helm.ngc.nvidia.com/nvidia"
  namespace  = "gpu-operator"
}
"#;

#[test]
fn planning_a_release_without_helm_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.hcl"), STACK).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = gpustack_env(
        dir.path(),
        &["plan"],
        &[("PATH", empty.path().to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(text.contains("helm is not installed"), "{text}");
    assert!(
        text.contains("https://helm.sh/docs/intro/install/"),
        "{text}"
    );
    assert!(
        text.contains("main.hcl:2"),
        "not located at the provider block: {text}"
    );
}

#[test]
fn a_helm_binary_that_cannot_run_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.hcl"),
        STACK.replace(
            r#"provider "helm" {}"#,
            r#"provider "helm" { helm_binary = "/nonexistent/helm" }"#,
        ),
    )
    .unwrap();
    let out = gpustack_env(dir.path(), &["plan"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(text.contains("Cannot run helm"), "{text}");
    assert!(text.contains("/nonexistent/helm"), "{text}");
}
