//! examples/drift-cronjob on the test cluster: the example installs the CronJob, its service
//! account and RBAC; the watched stack is applied with its state in the kubernetes backend;
//! then the Job's command runs as the Job would, with the service account's token, the stack
//! from the ConfigMap and the webhook URL from the Secret. The test cluster's nodes are kwok's
//! and run no containers, so the test runs the Job's command itself, with nothing else.

use base64::Engine;
use gpustack_tests::cluster::TestCluster;
use gpustack_tests::receiver::receiver;
use gpustack_tests::{copy_dir, gpustack_env, repo_root, stderr, stdout};
use std::path::{Path, PathBuf};

/// An example and the modules it uses, laid out as in the repository.
fn copy_example(root: &Path, name: &str) -> PathBuf {
    copy_dir(&repo_root().join("modules"), &root.join("modules"));
    let example = root.join("examples").join(name);
    copy_dir(&repo_root().join("examples").join(name), &example);
    example
}

fn json(cluster: &TestCluster, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&cluster.kubectl_ok(&all)).unwrap()
}

/// A kubeconfig that authenticates as `namespace/account`, with a token from the TokenRequest
/// API, as a pod of that service account would.
fn service_account_kubeconfig(
    cluster: &TestCluster,
    namespace: &str,
    account: &str,
    dir: &Path,
) -> PathBuf {
    let token = cluster.kubectl_ok(&[
        "create",
        "token",
        account,
        "-n",
        namespace,
        "--duration",
        "1h",
    ]);
    let server = cluster.kubectl_ok(&[
        "config",
        "view",
        "--raw",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);
    let ca = cluster.kubectl_ok(&[
        "config",
        "view",
        "--raw",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.certificate-authority-data}",
    ]);
    let ca_line = if ca.is_empty() {
        let file = cluster.kubectl_ok(&[
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority}",
        ]);
        if file.is_empty() {
            "insecure-skip-tls-verify: true".to_owned()
        } else {
            format!("certificate-authority: {file}")
        }
    } else {
        format!("certificate-authority-data: {ca}")
    };
    let path = dir.join("service-account.kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    {ca_line}\nusers:\n- name: {account}\n  user:\n    token: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: {account}\ncurrent-context: c\n",
            token.trim()
        ),
    )
    .unwrap();
    path
}

#[test]
fn the_drift_cronjob_example_reports_drift_with_a_read_only_service_account() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let id = std::process::id();
    let state_ns = format!("drift-cron-{id}");
    let watched_ns = format!("drift-gpu-{id}");
    let work = tempfile::tempdir().unwrap();
    let example = copy_example(work.path(), "drift-cronjob");
    let watched_file = example.join("watched/main.hcl");
    let watched = std::fs::read_to_string(&watched_file)
        .unwrap()
        .replace("\"gpustack-system\"", &format!("\"{state_ns}\""))
        .replace("\"gpu-operator\"", &format!("\"{watched_ns}\""));
    std::fs::write(&watched_file, watched).unwrap();
    cluster.kubectl_ok(&["create", "namespace", &watched_ns]);
    let admin = cluster.kubeconfig.display().to_string();
    let admin_env = [("KUBECONFIG", admin.as_str())];
    let hook = receiver();

    // Install the cron.
    let vars = [
        format!("kubeconfig={admin}"),
        format!("namespace={state_ns}"),
        format!("webhook_url={}", hook.url),
    ];
    let mut args = vec!["apply", "--auto-approve"];
    for v in &vars {
        args.extend(["--var", v.as_str()]);
    }
    let out = gpustack_env(&example, &args, &admin_env);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        !stdout(&out).contains("secret-token") && !stderr(&out).contains("secret-token"),
        "the webhook URL is a secret"
    );

    // The platform team applies the watched stack; its state goes to the cron's namespace.
    let watched_dir = example.join("watched");
    let out = gpustack_env(&watched_dir, &["apply", "--auto-approve"], &admin_env);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(!watched_dir.join(".gpustack/state.json").exists());

    // The Job, as the CronJob defines it.
    let cronjob = json(
        &cluster,
        &["get", "cronjob", "gpustack-drift", "-n", &state_ns],
    );
    let pod = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "gpustack-drift");
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    let secret = json(
        &cluster,
        &["get", "secret", "gpustack-drift-webhook", "-n", &state_ns],
    );
    let url = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(secret["data"]["url"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(url, hook.url);
    let files = json(
        &cluster,
        &["get", "configmap", "gpustack-drift-stack", "-n", &state_ns],
    );
    let pod_root = work.path().join("pod");
    let stack_mount = pod_root.join("stack");
    let metrics_mount = pod_root.join("metrics");
    std::fs::create_dir_all(&stack_mount).unwrap();
    std::fs::create_dir_all(&metrics_mount).unwrap();
    for (name, content) in files["data"].as_object().unwrap() {
        std::fs::write(stack_mount.join(name), content.as_str().unwrap()).unwrap();
    }
    let job_args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("$(WEBHOOK_URL)", &url)
                .replace("/stack", stack_mount.to_str().unwrap())
                .replace("/metrics", metrics_mount.to_str().unwrap())
        })
        .collect();
    assert!(job_args.iter().any(|a| a == "--webhook"), "{job_args:?}");
    let account = service_account_kubeconfig(&cluster, &state_ns, "gpustack-drift", work.path());
    let account = account.display().to_string();
    let home = pod_root.display().to_string();
    let job_env = [("KUBECONFIG", account.as_str()), ("HOME", home.as_str())];
    let run_job = || {
        let args: Vec<&str> = job_args.iter().map(String::as_str).collect();
        gpustack_env(&pod_root, &args, &job_env)
    };
    let metrics = || std::fs::read_to_string(metrics_mount.join("gpustack-drift.prom")).unwrap();

    // Least privilege: the account reads, and cannot change what it watches.
    let as_account = format!("system:serviceaccount:{state_ns}:gpustack-drift");
    for (verb, resource, ns, expect) in [
        ("list", "configmaps", watched_ns.as_str(), "yes"),
        ("update", "configmaps", watched_ns.as_str(), "no"),
        ("delete", "configmaps", watched_ns.as_str(), "no"),
        ("update", "secrets", state_ns.as_str(), "no"),
        ("delete", "secrets", state_ns.as_str(), "no"),
    ] {
        let out = cluster.kubectl(&[
            "auth",
            "can-i",
            verb,
            resource,
            "-n",
            ns,
            "--as",
            &as_account,
        ]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            expect,
            "can the cron {verb} {resource} in {ns}?"
        );
    }

    let out = run_job();
    assert_eq!(
        out.status.code(),
        Some(0),
        "no drift yet:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        metrics().contains("gpustack_drift_resources{stack=\"stack\"} 0"),
        "{}",
        metrics()
    );
    assert!(
        hook.bodies.lock().unwrap().is_empty(),
        "nothing to report yet"
    );

    // Someone edits the managed configuration by hand.
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "time-slicing-config",
        "-n",
        &watched_ns,
        "--type",
        "merge",
        "-p",
        r#"{"data":{"any":"version: v1\nsharing: {}\n"}}"#,
    ]);
    let out = run_job();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["resource_drift"][0]["address"], "kubernetes_manifest.sharing",
        "{report}"
    );
    assert!(
        metrics().contains("gpustack_drift_resources{stack=\"stack\"} 1"),
        "{}",
        metrics()
    );
    assert!(metrics().contains("address=\"kubernetes_manifest.sharing\""));
    {
        let posted = hook.bodies.lock().unwrap();
        assert_eq!(posted.len(), 1, "{posted:?}");
        assert_eq!(posted[0]["event"], "drift_detected");
        assert_eq!(posted[0]["drifted"][0], "kubernetes_manifest.sharing");
    }
    // The next run, from a fresh pod, remembers what it reported: no second post.
    std::fs::remove_file(metrics_mount.join("gpustack-drift.prom")).unwrap();
    let out = run_job();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        hook.bodies.lock().unwrap().len(),
        1,
        "the same drift is posted once"
    );

    // Clean up: the watched stack, then the cron.
    let out = gpustack_env(&watched_dir, &["destroy", "--auto-approve"], &admin_env);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut args = vec!["destroy", "--auto-approve"];
    for v in &vars {
        args.extend(["--var", v.as_str()]);
    }
    let out = gpustack_env(&example, &args, &admin_env);
    assert!(out.status.success(), "{}", stderr(&out));
    let _ = cluster.kubectl(&[
        "delete",
        "namespace",
        &watched_ns,
        &state_ns,
        "--wait=false",
    ]);
}

/// examples/fleet-jobs: one CronJob per stack of the fleet, each with its stack mounted under
/// its own name, sharing one read-only service account.
#[test]
fn the_fleet_jobs_example_makes_one_cronjob_per_stack() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = format!("fleet-{}", std::process::id());
    let work = tempfile::tempdir().unwrap();
    let example = copy_example(work.path(), "fleet-jobs");
    let admin = cluster.kubeconfig.display().to_string();
    let vars = [
        format!("kubeconfig={admin}"),
        format!("namespace={namespace}"),
    ];
    let with_vars = |command: &[&'static str]| {
        let mut args: Vec<&str> = command.to_vec();
        for v in &vars {
            args.extend(["--var", v.as_str()]);
        }
        gpustack_env(&example, &args, &[])
    };
    let out = with_vars(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    for stack in ["east", "west"] {
        let cronjob = json(
            &cluster,
            &[
                "get",
                "cronjob",
                &format!("gpustack-fleet-drift-{stack}"),
                "-n",
                &namespace,
            ],
        );
        let pod = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], "gpustack-fleet-drift");
        assert_eq!(
            pod["containers"][0]["args"],
            serde_json::json!(["drift", format!("/stacks/{stack}"), "--json"])
        );
        let files = json(
            &cluster,
            &[
                "get",
                "configmap",
                &format!("gpustack-fleet-drift-{stack}"),
                "-n",
                &namespace,
            ],
        );
        assert!(
            files["data"]["main.hcl"]
                .as_str()
                .unwrap()
                .contains(&format!("secret_suffix = \"{stack}\""))
        );
    }
    let out = with_vars(&["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
