//! Registry module sources, fetched by `gpustack init` from a registry that speaks the
//! Module Registry Protocol (the test world's, over TLS with a token): the version constraint
//! chooses, the lock pins the version and the digest, and a pinned module installed needs no
//! registry at all.

use gpustack_tests::registry::{RegistryFake, TOKEN};
use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = gpustack_env(dir, args, env);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn module(version: &str) -> Vec<(&'static str, String)> {
    vec![(
        "main.tf",
        format!(
            "variable \"name\" {{\n  type = string\n}}\n\noutput \"label\" {{\n  value = \"${{var.name}}-{version}\"\n}}\n"
        ),
    )]
}

#[test]
fn init_fetches_a_registry_module_by_constraint_and_a_pin_needs_no_registry() {
    let registry = RegistryFake::start();
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        let files = module(version);
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        registry.publish("acme/gpu-pool/kubernetes", version, &files);
    }
    let stack = tempfile::tempdir().unwrap();
    let d = stack.path();
    // The registry's host is a const variable, so that CI can point the stack at a mirror.
    std::fs::write(
        d.join("main.tf"),
        "terraform {\n  required_version = \">= 1.15\"\n}\n\nvariable \"registry\" {\n  type  = string\n  const = true\n}\n\nmodule \"pool\" {\n  source  = \"${var.registry}/acme/gpu-pool/kubernetes\"\n  version = \"~> 1.0\"\n  name    = \"t4\"\n}\n\noutput \"label\" {\n  value = module.pool.label\n}\n",
    )
    .unwrap();
    let cli_config = d.join("terraformrc");
    std::fs::write(
        &cli_config,
        format!(
            "credentials \"{}\" {{\n  token = \"{TOKEN}\"\n}}\n",
            registry.host
        ),
    )
    .unwrap();
    let host_var = format!("registry={}", registry.host);
    let env = [
        ("SSL_CERT_FILE", registry.ca_file.to_str().unwrap()),
        ("TF_CLI_CONFIG_FILE", cli_config.to_str().unwrap()),
    ];
    // Loading never fetches: until init, the module is missing.
    let (code, _, err) = run(d, &["validate", "-var", &host_var], &env);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Module not installed"), "{err}");
    // Without the token the registry refuses, and init says how to give one.
    let (code, _, err) = run(
        d,
        &["init", "-var", &host_var],
        &[("SSL_CERT_FILE", registry.ca_file.to_str().unwrap())],
    );
    assert_eq!(code, 1);
    assert!(err.contains("refused the credentials"), "{err}");
    let (code, out, err) = run(d, &["init", "-var", &host_var], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("version 1.1.0"), "the newest 1.x: {err}");
    let lock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("gpustack.modules.lock.json")).unwrap(),
    )
    .unwrap();
    let source = format!("{}/acme/gpu-pool/kubernetes", registry.host);
    assert_eq!(lock["modules"][&source]["version"], "1.1.0", "{lock}");
    assert_eq!(lock["modules"][&source]["constraint"], "~> 1.0", "{lock}");
    assert_eq!(
        lock["modules"][&source]["digest"].as_str().unwrap().len(),
        64,
        "{lock}"
    );
    let (code, out, err) = run(d, &["plan", "-var", &host_var], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("t4-1.1.0"), "{out}");
    // A newer 1.x appears; the pin keeps the stack on what was reviewed until -upgrade.
    let files = module("1.2.0");
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    registry.publish("acme/gpu-pool/kubernetes", "1.2.0", &files);
    // With the registry down, a second init uses the pin and what it installed.
    registry.stop();
    let before = registry.log().len();
    let (code, out, err) = run(d, &["init", "-var", &host_var], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(registry.log().len(), before, "the pin needed no registry");
    let (code, out, err) = run(d, &["plan", "-var", &host_var], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("t4-1.1.0"), "{out}");
    // -upgrade asks the registry again, which is down: an error, nothing changed.
    let (code, _, err) = run(d, &["init", "-upgrade", "-var", &host_var], &env);
    assert_eq!(code, 1, "{err}");
    let relock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("gpustack.modules.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(relock, lock);
}

#[test]
fn registry_sources_parse_as_terraform_reads_them() {
    let stack = tempfile::tempdir().unwrap();
    let d = stack.path();
    std::fs::write(
        d.join("main.tf"),
        "module \"eks\" {\n  source  = \"terraform-aws-modules/eks/aws\"\n  version = \"~> 20.0\"\n}\n\nmodule \"local\" {\n  source  = \"./m\"\n  version = \"1.0.0\"\n}\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("m")).unwrap();
    std::fs::write(d.join("m/main.tf"), "").unwrap();
    let (code, _, err) = run(d, &["validate"], &[]);
    assert_eq!(code, 1);
    assert!(
        err.contains("\"terraform-aws-modules/eks/aws\" is not installed: run gpustack init"),
        "{err}"
    );
    assert!(
        err.contains("only a registry module's call takes a version"),
        "{err}"
    );
}
