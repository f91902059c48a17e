//! examples/drift-cronjob on the test cluster: the example installs the CronJob, its service
//! account and RBAC; the watched stack is applied with its state in the kubernetes backend, in
//! a state namespace no stack owns; then the Job's command runs as the Job would, with the
//! service account's token, the stack from the ConfigMap and the webhook URL from the Secret.
//! The test cluster's nodes are kwok's and run no containers, so the test runs the Job's
//! command itself, with nothing else.

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

/// What a kubeconfig's account may do in `namespace`, as `kubectl auth can-i --list` prints it
/// (the API server's SelfSubjectRulesReview), one rule a line, words one space apart.
fn abilities(
    cluster: &TestCluster,
    kubeconfig: &Path,
    namespace: &str,
) -> std::collections::BTreeSet<String> {
    let out = std::process::Command::new(kubectl_of(cluster))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["auth", "can-i", "--list", "-n", namespace])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// The kubectl binary the cluster's own commands run.
fn kubectl_of(cluster: &TestCluster) -> PathBuf {
    PathBuf::from(
        cluster
            .kubectl_command()
            .get_program()
            .to_string_lossy()
            .into_owned(),
    )
}

/// The drift example with its namespaces: the cron's, the watched stack's state namespace
/// and the namespace of what it manages.
struct DriftExample {
    _work: tempfile::TempDir,
    root: PathBuf,
    example: PathBuf,
    watched_dir: PathBuf,
    vars: Vec<String>,
    admin: String,
}

impl DriftExample {
    fn new(
        cluster: &TestCluster,
        cron_ns: &str,
        state_ns: &str,
        watched_ns: &str,
        webhook: Option<&str>,
    ) -> Self {
        let work = tempfile::tempdir().unwrap();
        let example = copy_example(work.path(), "drift-cronjob");
        let watched_file = example.join("watched/main.hcl");
        let watched = std::fs::read_to_string(&watched_file)
            .unwrap()
            .replace("\"gpustack-system\"", &format!("\"{state_ns}\""))
            .replace("\"gpu-operator\"", &format!("\"{watched_ns}\""));
        std::fs::write(&watched_file, watched).unwrap();
        let admin = cluster.kubeconfig.display().to_string();
        let mut vars = vec![
            format!("kubeconfig={admin}"),
            format!("namespace={cron_ns}"),
            format!("state_namespace={state_ns}"),
            format!(
                r#"watched_namespaces={{"{watched_ns}" = [{{ api_groups = [""], resources = ["configmaps"] }}]}}"#
            ),
        ];
        if let Some(url) = webhook {
            vars.push(format!("webhook_url={url}"));
        }
        Self {
            root: work.path().to_owned(),
            watched_dir: example.join("watched"),
            _work: work,
            example,
            vars,
            admin,
        }
    }

    /// gpustack on the cron's stack, with its variables.
    fn cron(&self, command: &[&str]) -> std::process::Output {
        let mut args = command.to_vec();
        for v in &self.vars {
            args.extend(["--var", v.as_str()]);
        }
        gpustack_env(&self.example, &args, &[("KUBECONFIG", self.admin.as_str())])
    }

    /// gpustack on the watched stack, as the platform team runs it.
    fn watched(&self, command: &[&str]) -> std::process::Output {
        gpustack_env(
            &self.watched_dir,
            command,
            &[("KUBECONFIG", self.admin.as_str())],
        )
    }
}

#[test]
fn the_drift_cronjob_example_reports_drift_with_a_read_only_service_account() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let id = std::process::id();
    let cron_ns = format!("drift-cron-{id}");
    let state_ns = format!("drift-state-{id}");
    let watched_ns = format!("drift-gpu-{id}");
    // The state namespace is made once, before the watched stack's first run, by no stack.
    cluster.kubectl_ok(&["create", "namespace", &watched_ns]);
    cluster.kubectl_ok(&["create", "namespace", &state_ns]);
    let hook = receiver();
    let drift = DriftExample::new(&cluster, &cron_ns, &state_ns, &watched_ns, Some(&hook.url));

    // Install the cron.
    let out = drift.cron(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        !stdout(&out).contains("secret-token") && !stderr(&out).contains("secret-token"),
        "the webhook URL is a secret"
    );

    // The platform team applies the watched stack; its state goes to its state namespace.
    let out = drift.watched(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(!drift.watched_dir.join(".gpustack/state.json").exists());

    // The Job, as the CronJob defines it.
    let cronjob = json(
        &cluster,
        &["get", "cronjob", "gpustack-drift", "-n", &cron_ns],
    );
    let pod = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "gpustack-drift");
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    let secret = json(
        &cluster,
        &["get", "secret", "gpustack-drift-webhook", "-n", &cron_ns],
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
        &["get", "configmap", "gpustack-drift-stack", "-n", &cron_ns],
    );
    let pod_root = drift.root.join("pod");
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
    let account_path =
        service_account_kubeconfig(&cluster, &cron_ns, "gpustack-drift", &drift.root);
    let account = account_path.display().to_string();
    let home = pod_root.display().to_string();
    let job_env = [("KUBECONFIG", account.as_str()), ("HOME", home.as_str())];
    let run_job = || {
        let args: Vec<&str> = job_args.iter().map(String::as_str).collect();
        gpustack_env(&pod_root, &args, &job_env)
    };
    let metrics = || std::fs::read_to_string(metrics_mount.join("gpustack-drift.prom")).unwrap();

    // Least privilege: every rule the cron's account has, in each namespace, is one of these
    // or one that every account has (an account bound to nothing shows which). Writes name
    // their object; nothing can be created, so no token can be minted.
    let nobody_dir = drift.root.join("nobody");
    std::fs::create_dir_all(&nobody_dir).unwrap();
    let nobody = service_account_kubeconfig(&cluster, &cron_ns, "default", &nobody_dir);
    let cluster_wide = [
        "clusterpolicies.nvidia.com [] [] [get list]",
        "nodes [] [] [get list]",
    ];
    let state_rules = [
        "leases.coordination.k8s.io [] [gpustack-lock-gpu] [get update]",
        "secrets [] [gpustack-note-gpu-drift-webhook-json] [get patch]",
        "secrets [] [gpustack-state-gpu] [get]",
    ];
    for (ns, own) in [
        (cron_ns.as_str(), &[][..]),
        (state_ns.as_str(), &state_rules[..]),
        (watched_ns.as_str(), &["configmaps [] [] [get list]"][..]),
        ("default", &[][..]),
    ] {
        let everyone = abilities(&cluster, &nobody, ns);
        // What every account has: reading discovery and health URLs, and asking what it
        // may do itself.
        for rule in &everyone {
            let own = rule.starts_with("self") && rule.ends_with("[] [] [create]");
            assert!(
                (rule.starts_with("[/") && rule.ends_with("] [] [get]")) || own,
                "every account of the cluster may {rule}"
            );
        }
        let has = abilities(&cluster, &account_path, ns);
        assert!(everyone.is_subset(&has), "{ns}: {everyone:#?} {has:#?}");
        let extra: Vec<&str> = has.difference(&everyone).map(String::as_str).collect();
        let mut expected: Vec<&str> = own.iter().chain(&cluster_wide).copied().collect();
        expected.sort();
        assert_eq!(extra, expected, "what the cron's account may do in {ns}");
    }
    for ns in [&cron_ns, &state_ns, &watched_ns] {
        for (verb, resource) in [
            ("create", "secrets"),
            ("create", "serviceaccounts/token"),
            ("create", "pods"),
            ("update", "configmaps"),
        ] {
            let out = std::process::Command::new(kubectl_of(&cluster))
                .arg("--kubeconfig")
                .arg(&account_path)
                .args(["auth", "can-i", verb, resource, "-n", ns])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                "no",
                "can the cron {verb} {resource} in {ns}?"
            );
        }
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

    // Destroying the cron leaves the watched stack's state and lock where they are.
    let out = drift.cron(&["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    for kind in ["secret/gpustack-state-gpu", "lease/gpustack-lock-gpu"] {
        let out = cluster.kubectl(&["get", kind, "-n", &state_ns]);
        assert!(out.status.success(), "{kind} was deleted: {}", stderr(&out));
    }
    let out = drift.watched(&["plan", "--detailed-exitcode"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    // Clean up: the watched stack, then the namespaces no stack owns.
    let out = drift.watched(&["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _ = cluster.kubectl(&[
        "delete",
        "namespace",
        &watched_ns,
        &state_ns,
        "--wait=false",
    ]);
}

/// The layout the example had: the cron's namespace is also the watched stack's state
/// namespace. Destroying the cron would delete the namespace and with it the watched stack's
/// state and lock: the plan names them and refuses.
#[test]
fn destroying_a_cron_whose_namespace_holds_the_watched_state_is_refused() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let id = std::process::id();
    let shared_ns = format!("drift-shared-{id}");
    let watched_ns = format!("drift-shared-gpu-{id}");
    cluster.kubectl_ok(&["create", "namespace", &watched_ns]);
    let drift = DriftExample::new(&cluster, &shared_ns, &shared_ns, &watched_ns, None);
    let out = drift.cron(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = drift.watched(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));

    let out = drift.cron(&["destroy", "--auto-approve"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        flat.contains(&format!(
            "deleting Namespace {shared_ns} also deletes 2 objects that are not in this stack's state and do not carry its mark: Lease {shared_ns}/gpustack-lock-gpu, Secret {shared_ns}/gpustack-state-gpu."
        )),
        "{text}"
    );
    for kind in ["secret/gpustack-state-gpu", "lease/gpustack-lock-gpu"] {
        let out = cluster.kubectl(&["get", kind, "-n", &shared_ns]);
        assert!(out.status.success(), "{kind} was deleted: {}", stderr(&out));
    }
    let out = drift.watched(&["plan", "--detailed-exitcode"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    let out = drift.watched(&["destroy", "--auto-approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _ = cluster.kubectl(&[
        "delete",
        "namespace",
        &watched_ns,
        &shared_ns,
        "--wait=false",
    ]);
}

/// examples/fleet-jobs: one CronJob per stack of the fleet, each with its stack mounted under
/// its own name, sharing one read-only service account.
#[test]
fn the_fleet_jobs_example_makes_one_cronjob_per_stack() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = format!("fleet-{}", std::process::id());
    let state_ns = format!("fleet-state-{}", std::process::id());
    cluster.kubectl_ok(&["create", "namespace", &state_ns]);
    let work = tempfile::tempdir().unwrap();
    let example = copy_example(work.path(), "fleet-jobs");
    let admin = cluster.kubeconfig.display().to_string();
    let vars = [
        format!("kubeconfig={admin}"),
        format!("namespace={namespace}"),
        format!("state_namespace={state_ns}"),
        "watched_namespaces={}".to_owned(),
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
    let _ = cluster.kubectl(&["delete", "namespace", &state_ns, "--wait=false"]);
}
