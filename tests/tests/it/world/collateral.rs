//! What a deletion takes with it: a Namespace the objects in it, a CustomResourceDefinition
//! its custom resources. Objects the stack does not manage are named by the plan, and the
//! deletion is refused unless the resource says `force_destroy = true`; apply deletes no more
//! than the plan showed.

use gpustack_tests::cluster::{TestCluster, cluster};
use gpustack_tests::{gpustack_command, stderr, stdout};
use std::path::Path;

/// A stack of one Namespace (with `force_destroy` when `force`) and `rest`.
fn namespace_stack(ns: &str, force: bool, rest: &str) -> String {
    format!(
        r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "namespace" {{
  manifest = {{
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = {{ name = "{ns}" }}
  }}{}
}}
{rest}"#,
        if force {
            "\n  force_destroy = true"
        } else {
            ""
        }
    )
}

/// A ConfigMap of the stack in its namespace.
const MANAGED_CONFIG: &str = r#"
resource "kubernetes_manifest" "config" {
  manifest = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "managed", namespace = kubernetes_manifest.namespace.manifest.metadata.name }
    data       = { replicas = "4" }
  }
}
"#;

/// gpustack on the test cluster: (exit code, stdout and stderr without whitespace, since
/// diagnostics wrap to a fixed width, also inside a name). A saved plan is applied without
/// variables: it carries its own.
fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let c = cluster();
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let mut all = args.to_vec();
    if !args.iter().any(|a| a.ends_with(".plan")) || args.contains(&"--out") {
        all.extend(["--var", &kubeconfig]);
    }
    let out = gpustack_command(dir, &all, &[])
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    (out.status.code().unwrap_or(-1), squeezed(&text))
}

/// A text without its whitespace, to find a phrase in wrapped output.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect()
}

/// Whether squeezed output holds a phrase.
fn has(out: &str, phrase: &str) -> bool {
    out.contains(&squeezed(phrase))
}

/// gpustack's plan text as printed.
fn plan_text(dir: &Path, args: &[&str]) -> String {
    let c = cluster();
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let mut all = args.to_vec();
    all.extend(["--var", &kubeconfig]);
    let out = gpustack_command(dir, &all, &[])
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

fn exists(c: &TestCluster, args: &[&str]) -> bool {
    c.kubectl(&[&["get"], args].concat()).status.success()
}

/// Whether the namespace is there and not being deleted.
fn active(c: &TestCluster, ns: &str) -> bool {
    let out = c.kubectl(&["get", "namespace", ns, "-o", "jsonpath={.status.phase}"]);
    out.status.success() && String::from_utf8_lossy(&out.stdout) == "Active"
}

/// A namespace name of this run: the shared cluster keeps other runs' namespaces.
fn name(prefix: &str) -> String {
    format!("{prefix}-{}", std::process::id())
}

#[test]
fn a_namespace_holding_objects_made_by_hand_is_deleted_only_with_force_destroy() {
    let c = cluster();
    let ns = name("collateral");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.hcl"),
        namespace_stack(&ns, false, MANAGED_CONFIG),
    )
    .unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    // Someone else keeps things in the stack's namespace.
    c.kubectl_ok(&[
        "create",
        "configmap",
        "notes",
        "-n",
        &ns,
        "--from-literal=a=b",
    ]);
    c.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "token",
        "-n",
        &ns,
        "--from-literal=t=x",
    ]);

    // destroy names them and refuses, deleting nothing.
    let (code, out) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        has(
            &out,
            &format!(
                "deleting Namespace {ns} also deletes 2 objects that are not in this stack's state and do not carry its mark: ConfigMap {ns}/notes, Secret {ns}/token."
            )
        ),
        "{out}"
    );
    assert!(has(&out, "set force_destroy = true"), "{out}");
    // What the cluster makes in every namespace is not counted.
    assert!(
        !has(&out, "kube-root-ca.crt") && !has(&out, &format!("ServiceAccount {ns}/default")),
        "{out}"
    );
    assert!(active(c, &ns), "the namespace was deleted");
    assert!(exists(c, &["configmap", "managed", "-n", &ns]));
    assert!(exists(c, &["configmap", "notes", "-n", &ns]));

    // So does a plan that drops the namespace from the configuration.
    std::fs::write(
        d.join("main.hcl"),
        "variable \"kubeconfig\" {\n  type = string\n}\n\nprovider \"kubernetes\" {\n  config_path = var.kubeconfig\n}\n",
    )
    .unwrap();
    let (code, out) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        has(
            &out,
            &format!("kubernetes_manifest.namespace: deleting Namespace {ns}")
        ) && has(&out, &format!("ConfigMap {ns}/notes, Secret {ns}/token")),
        "{out}"
    );
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 1, "{out}");
    assert!(active(c, &ns) && exists(c, &["configmap", "notes", "-n", &ns]));

    // The resource says so, and that is applied first; then the plan names what goes with it.
    std::fs::write(
        d.join("main.hcl"),
        namespace_stack(&ns, true, MANAGED_CONFIG),
    )
    .unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    let plan = plan_text(d, &["plan", "--destroy"]);
    let shown: Vec<&str> = plan
        .lines()
        .filter(|l| l.trim_start().starts_with('#') || l.starts_with("Plan:"))
        .collect();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/collateral");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.add_filter(&regex_escape(&ns), "[namespace]");
    settings.bind(|| insta::assert_snapshot!("destroy-plan-with-force-destroy", shown.join("\n")));
    let json: serde_json::Value =
        serde_json::from_str(&plan_text(d, &["plan", "--destroy", "--json"])).unwrap();
    let namespace = json["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "kubernetes_manifest.namespace")
        .unwrap();
    assert_eq!(
        namespace["change"]["gpustack_collateral"]["objects"],
        serde_json::json!([
            format!("ConfigMap {ns}/notes"),
            format!("Secret {ns}/token")
        ])
    );
    let (code, out) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !exists(c, &["namespace", &ns]),
        "the namespace is still there"
    );
}

/// insta filters are regular expressions.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|ch| {
            let special = "\\.+*?()|[]{}^$-".contains(ch);
            special.then_some('\\').into_iter().chain([ch])
        })
        .collect()
}

#[test]
fn an_object_made_between_plan_and_apply_stops_the_namespaces_deletion() {
    let c = cluster();
    let ns = name("collateral-late");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), namespace_stack(&ns, false, "")).unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    // The plan saw an empty namespace.
    let (code, out) = run(d, &["plan", "--destroy", "--out", "saved.plan"]);
    assert_eq!(code, 0, "{out}");
    assert!(!has(&out, "also deletes"), "{out}");
    c.kubectl_ok(&["create", "configmap", "late", "-n", &ns]);
    let (code, out) = run(d, &["apply", "saved.plan"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        has(&out, &format!("Refusing to delete Namespace {ns}"))
            && has(
                &out,
                &format!(
                    "It now holds an object that was not there when the plan was made, and that this stack does not manage: ConfigMap {ns}/late."
                )
            )
            && has(&out, "Nothing was deleted."),
        "{out}"
    );
    assert!(active(c, &ns), "the namespace was deleted");
    assert!(exists(c, &["configmap", "late", "-n", &ns]));

    // With force_destroy the plan names what it saw, and apply takes no more than that.
    std::fs::write(d.join("main.hcl"), namespace_stack(&ns, true, "")).unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(d, &["plan", "--destroy", "--out", "saved.plan"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        has(
            &out,
            &format!(
                "(deleting Namespace {ns} also deletes 1 object this stack does not manage: # ConfigMap {ns}/late)"
            )
        ),
        "{out}"
    );
    c.kubectl_ok(&["create", "configmap", "later", "-n", &ns]);
    let (code, out) = run(d, &["apply", "saved.plan"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        has(&out, &format!("does not manage: ConfigMap {ns}/later.")),
        "{out}"
    );
    assert!(active(c, &ns), "the namespace was deleted");
    // What the plan showed, it deletes.
    c.kubectl_ok(&["delete", "configmap", "later", "-n", &ns]);
    let (code, out) = run(d, &["apply", "saved.plan"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !exists(c, &["namespace", &ns]),
        "the namespace is still there"
    );
}

#[test]
fn a_crd_whose_custom_resources_were_made_by_hand_is_deleted_only_with_force_destroy() {
    let c = cluster();
    let group = format!("collateral{}.example.com", std::process::id());
    let ns = name("collateral-crd");
    c.kubectl_ok(&["create", "namespace", &ns]);
    let stack = |force: bool| {
        format!(
            r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "crd" {{
  manifest = {{
    apiVersion = "apiextensions.k8s.io/v1"
    kind       = "CustomResourceDefinition"
    metadata   = {{ name = "widgets.{group}" }}
    spec = {{
      group = "{group}"
      names = {{ kind = "Widget", plural = "widgets", singular = "widget", listKind = "WidgetList" }}
      scope = "Namespaced"
      versions = [{{
        name    = "v1"
        served  = true
        storage = true
        schema  = {{ openAPIV3Schema = {{ type = "object", x-kubernetes-preserve-unknown-fields = true }} }}
      }}]
    }}
  }}{}
}}

resource "kubernetes_manifest" "widget" {{
  manifest = {{
    apiVersion = "{group}/v1"
    kind       = "Widget"
    metadata   = {{ name = "managed", namespace = "{ns}" }}
  }}
  depends_on = [kubernetes_manifest.crd]
}}
"#,
            if force {
                "\n  force_destroy = true"
            } else {
                ""
            }
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), stack(false)).unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    c.apply_yaml(&format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: by-hand\n  namespace: {ns}\n"
    ));
    let (code, out) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        has(
            &out,
            &format!(
                "deleting CustomResourceDefinition widgets.{group} also deletes 1 object that is not in this stack's state and does not carry its mark: Widget {ns}/by-hand."
            )
        ),
        "{out}"
    );
    assert!(exists(c, &["crd", &format!("widgets.{group}")]));
    assert!(exists(
        c,
        &[&format!("widgets.{group}"), "by-hand", "-n", &ns]
    ));

    std::fs::write(d.join("main.hcl"), stack(true)).unwrap();
    let (code, out) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(d, &["destroy", "--auto-approve"]);
    assert_eq!(code, 0, "{out}");
    assert!(!exists(c, &["crd", &format!("widgets.{group}")]));
    let _ = c.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
}
