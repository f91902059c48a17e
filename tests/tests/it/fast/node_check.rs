//! `gpustack node-check` where NVML cannot be loaded: a clear error and exit 1, in both
//! output formats. (On a GPU machine, `gpustack node-check` reads the real NVML.)

use gpustack_tests::{gpustack_env, repo_root, stderr, stdout};

const MISSING: &str = "/nonexistent/libnvidia-ml.so.1";

#[test]
fn missing_nvml_is_a_clear_error() {
    let out = gpustack_env(
        &repo_root(),
        &["node-check", "--expect-gpus", "1"],
        &[("GPUSTACK_NVML_LIB", MISSING)],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains("NVML is not available on this machine"),
        "{text}"
    );
    assert!(text.contains("libnvidia-ml.so.1"), "{text}");
    assert!(text.contains("run it on a GPU node"), "{text}");
}

#[test]
fn missing_nvml_in_json_is_an_object_with_the_error() {
    let out = gpustack_env(
        &repo_root(),
        &["node-check", "--json"],
        &[("GPUSTACK_NVML_LIB", MISSING)],
    );
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["passed"], false);
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("NVML is not available")
    );
}
