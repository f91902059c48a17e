//! What apply costs the API server: one request per created, changed or deleted object when
//! no one reads the plan (`apply --auto-approve`, `destroy --auto-approve`), counted from the
//! Kubernetes client's own log of its requests.

use gpustack_tests::{cluster, gpustack_command, stderr, stdout};

const OBJECTS: usize = 20;

fn stack(run: &str, generation: &str) -> String {
    format!(
        r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "config" {{
  count = {OBJECTS}
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = {{ name = "requests-{run}-${{count.index}}", namespace = "default" }}
    data       = {{ generation = "{generation}" }}
  }}
}}
"#
    )
}

/// Requests by verb: (total, server-side dry-runs) in the run's stderr.
fn requests(args: &[&str], dir: &std::path::Path) -> (usize, usize, String) {
    requests_with(args, dir, &[])
}

fn requests_with(
    args: &[&str],
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> (usize, usize, String) {
    let c = cluster::cluster();
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let mut all = args.to_vec();
    all.extend(["--var", &kubeconfig]);
    let mut env = env.to_vec();
    env.push(("GPUSTACK_LOG", "gpustack_connect=debug"));
    let out = gpustack_command(dir, &all, &[])
        .env_remove("KUBECONFIG")
        .env_remove("DISABLE_HTTP2")
        .envs(env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let log = stderr(&out);
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("requesting")).collect();
    let dry_runs = lines.iter().filter(|l| l.contains("dryRun")).count();
    (lines.len(), dry_runs, log)
}

/// The distinct HTTP versions of a run's responses, after checking that every one of its
/// `requests` logged its response's.
fn protocol_versions(log: &str, requests: usize) -> Vec<String> {
    let versions: Vec<String> = log
        .lines()
        .filter(|l| l.contains("stream closed"))
        .filter_map(|l| l.split("network.protocol.version=").nth(1))
        .filter_map(|rest| rest.split([' ', '}']).next())
        .map(|v| v.trim_matches('"').to_owned())
        .collect();
    assert_eq!(versions.len(), requests, "{log}");
    let mut distinct = versions;
    distinct.sort();
    distinct.dedup();
    distinct
}

#[test]
fn an_unread_apply_sends_one_request_per_created_changed_or_deleted_object() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Names of this run's own: the shared cluster keeps other runs' objects.
    let run = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros()
    );
    std::fs::write(d.join("main.hcl"), stack(&run, "1")).unwrap();
    // Creates: whether each object is already there is one metadata LIST for all of them.
    let (created, _, log) = requests(&["apply", "--auto-approve"], d);
    eprintln!("apply --auto-approve creating {OBJECTS} objects: {created} requests");
    assert!(created <= OBJECTS + 6, "{created} requests:\n{log}");

    std::fs::write(d.join("main.hcl"), stack(&run, "2")).unwrap();
    // A plan someone reads previews each change with a server-side dry-run.
    let (_, previews, _) = requests(&["plan"], d);
    assert_eq!(
        previews, OBJECTS,
        "one dry-run per changed object in a plan"
    );
    // An apply no one reviews does not: the refresh, then one write per object.
    let (total, dry_runs, log) = requests(&["apply", "--auto-approve"], d);
    assert_eq!(dry_runs, 0, "{log}");
    let writes = requested(&log).filter(|(m, _)| *m == "PATCH").count();
    assert_eq!(writes, OBJECTS, "{log}");
    // Without the strict second decode of each body that the server's default directive
    // asks for (`unknown_fields_are_rejected_without_the_servers_strict_decode`).
    let strict = requested(&log)
        .filter(|(m, url)| *m == "PATCH" && !url.contains("fieldValidation=Ignore"))
        .count();
    assert_eq!(strict, 0, "{log}");
    eprintln!(
        "apply --auto-approve of {OBJECTS} changed objects: {total} requests, {writes} writes"
    );
    // Over one multiplexed HTTP/2 connection, as kubectl talks to the API server, not a TLS
    // handshake for every request that finds no idle HTTP/1.1 connection.
    assert_eq!(protocol_versions(&log, total), ["2"], "{log}");
    // client-go's switch for proxies that break HTTP/2.
    let (total, _, log) = requests_with(&["plan"], d, &[("DISABLE_HTTP2", "1")]);
    assert_eq!(protocol_versions(&log, total), ["1.1"], "{log}");
    // Discovery and the refresh's reads by kind come on top, a few for all the objects.
    assert!(total <= OBJECTS + 6, "{total} requests:\n{log}");

    // A delete the API server finishes at once (no finalizers, no graceful deletion) is one
    // request: its answer says the object is gone, with nothing to wait for.
    let (total, _, log) = requests(&["destroy", "--auto-approve"], d);
    let deletes = requested(&log).filter(|(m, _)| *m == "DELETE").count();
    assert_eq!(deletes, OBJECTS, "{log}");
    eprintln!("destroy of {OBJECTS} objects: {total} requests, {deletes} deletes");
    assert!(total <= OBJECTS + 6, "{total} requests:\n{log}");
    let out = remaining_configmaps(&run);
    assert!(out.is_empty(), "left behind: {out}");
}

/// The names of this run's ConfigMaps still in the cluster.
fn remaining_configmaps(run: &str) -> String {
    let out = cluster::cluster().kubectl(&["get", "configmaps", "-n", "default", "-o", "name"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .filter(|l| l.contains(&format!("requests-{run}-")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// More objects in one namespace than a refresh LIST's page (500).
const PAGED: usize = 1_001;

fn paged_stack(namespace: &str) -> String {
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
    metadata   = {{ name = "{namespace}" }}
  }}
}}

resource "kubernetes_manifest" "config" {{
  count = {PAGED}
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {{
      name      = format("paged-%04d", count.index)
      namespace = kubernetes_manifest.namespace.manifest.metadata.name
    }}
    data = {{ index = tostring(count.index) }}
  }}
}}
"#
    )
}

#[test]
fn a_refresh_reads_a_large_namespace_in_pages_without_a_request_per_object() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let namespace = format!(
        "paged-{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros()
    );
    std::fs::write(d.join("main.hcl"), paged_stack(&namespace)).unwrap();
    requests(&["apply", "--auto-approve"], d);

    let lists = |log: &str| {
        log.lines()
            .filter(|l| {
                l.contains("requesting")
                    && l.contains(&format!("/namespaces/{namespace}/configmaps?"))
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (total, _, log) = requests(&["plan", "--detailed-exitcode"], d);
    let pages = lists(&log);
    eprintln!("no-change plan of {PAGED} ConfigMaps: {total} requests, pages {pages:#?}");
    assert_eq!(pages.len(), PAGED.div_ceil(500), "{log}");
    assert!(pages.iter().all(|l| l.contains("limit=500")), "{pages:#?}");
    assert!(
        total <= pages.len() + 8,
        "a request per object, not per page: {total} requests:\n{log}"
    );

    // The last page is read too: an object deleted behind the stack's back is seen as gone.
    let c = cluster::cluster();
    let out = c.kubectl(&["delete", "configmap", "paged-1000", "-n", &namespace]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    let out = gpustack_command(
        d,
        &["plan", "--detailed-exitcode", "--var", &kubeconfig],
        &[],
    )
    .env_remove("KUBECONFIG")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("kubernetes_manifest.config[1000]") && text.contains("1 to add"),
        "{text}"
    );

    // The namespace outlives its DELETE while the namespace controller empties it: destroy
    // watches it by name (a LIST and a WATCH) instead of polling it with GETs.
    let (_, _, log) = requests(&["destroy", "--auto-approve"], d);
    let by_path = format!("/api/v1/namespaces/{namespace}");
    let by_name = format!("metadata.name%3D{namespace}");
    let on_namespace = |method: &str| {
        requested(&log)
            .filter(|(m, url)| {
                *m == method
                    && url
                        .split('?')
                        .next()
                        .is_some_and(|path| path.ends_with(&by_path))
            })
            .count()
    };
    assert_eq!(on_namespace("DELETE"), 1, "{log}");
    assert_eq!(on_namespace("GET"), 0, "the namespace was polled:\n{log}");
    let watched: Vec<&str> = requested(&log)
        .filter(|(method, url)| *method == "GET" && url.contains(&by_name))
        .map(|(_, url)| url)
        .collect();
    assert!(watched.len() <= 2, "{watched:#?}");
    let out = c.kubectl(&["get", "namespace", &namespace]);
    assert!(!out.status.success(), "the namespace is still there");
}

/// The method and URL of each request in a run's log.
fn requested(log: &str) -> impl Iterator<Item = (&str, &str)> {
    log.lines()
        .filter(|l| l.contains("requesting"))
        .filter_map(|l| {
            let field = |name: &str| l.split(name).nth(1)?.split_whitespace().next();
            Some((field("http.method=")?, field("http.url=")?))
        })
}

/// A Deployment whose spec has a misspelt field.
fn misspelt_stack(name: &str) -> String {
    format!(
        r#"variable "kubeconfig" {{
  type = string
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

resource "kubernetes_manifest" "app" {{
  manifest = {{
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata   = {{ name = "{name}", namespace = "default" }}
    spec = {{
      replica  = 2
      selector = {{ matchLabels = {{ app = "{name}" }} }}
      template = {{
        metadata = {{ labels = {{ app = "{name}" }} }}
        spec     = {{ containers = [{{ name = "app", image = "registry.k8s.io/pause:3.10" }}] }}
      }}
    }}
  }}
}}
"#
    )
}

/// gpustack's applies ask for no field validation (`fieldValidation=Ignore`): the server
/// still rejects a field its schema lacks, in the plan's dry-run and in an apply no one
/// reviews, and the error names the field. Nothing is created.
#[test]
fn unknown_fields_are_rejected_without_the_servers_strict_decode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!(
        "misspelt-{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros()
    );
    std::fs::write(d.join("main.hcl"), misspelt_stack(&name)).unwrap();
    let c = cluster::cluster();
    let kubeconfig = format!("kubeconfig={}", c.kubeconfig.display());
    for args in [&["plan"][..], &["apply", "--auto-approve"][..]] {
        let mut all = args.to_vec();
        all.extend(["--var", &kubeconfig]);
        let out = gpustack_command(d, &all, &[])
            .env_remove("KUBECONFIG")
            .env("GPUSTACK_LOG", "gpustack_connect=debug")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}{err}",
            stdout(&out)
        );
        assert!(
            err.contains(".spec.replica: field not declared in schema"),
            "{args:?}: {err}"
        );
        assert!(err.contains("fieldValidation=Ignore"), "{args:?}: {err}");
    }
    let out = c.kubectl(&["get", "deployment", &name, "-n", "default"]);
    assert!(!out.status.success(), "the misspelt Deployment was created");
}
