//! gpustack against kubectl on the same cluster, in one run: 1,010 objects (10 namespaces, 500
//! ConfigMaps and 500 Deployments), then gpustack alone on 10,010 (10 namespaces, 10,000
//! ConfigMaps).
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench-kubernetes` (cluster: `$GPUSTACK_BENCH_KUBECONFIG`,
//! else `tests/cluster/up gpustack-bench`) measures, with medians of `BENCH_RUNS` (default 5):
//! - create from nothing: `gpustack apply` vs `kubectl apply --server-side`;
//! - a plan with nothing to change: `gpustack plan` vs `kubectl diff --server-side`;
//! - a plan and an apply that change every object: the same pairs;
//! - a plan with nothing to change of `BENCH_LARGE` ConfigMaps (default 10,000) from an existing
//!   state: gpustack's wall time and peak memory against the targets (≤ 10 s, ≤ 300 MiB);
//!
//! Every measured create and apply starts 10 s after the command before it, once the
//! controllers are done with that command's Deployments.
//!
//! For each: wall time, CPU time and peak memory, and the API requests each tool made
//! (kubectl `-v=6` logs one line per response; gpustack's Kubernetes client logs one per
//! request at debug level). The two tools work on separate namespaces with the same objects,
//! so that neither sees the other's.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::gpustack_bin;
use gpustack_tests::measure::{Medians, Sample, measure, medians, serve_measure, verdict};
use std::path::Path;
use std::process::Command;

const NAMESPACES: usize = 10;
const PER_NAMESPACE: usize = 50;

/// The stack: `NAMESPACES` namespaces, `per_namespace` ConfigMaps in each, and as many
/// Deployments when `deployments`.
fn stack(prefix: &str, per_namespace: usize, deployments: bool) -> String {
    let mut text = format!(
        r#"variable "kubeconfig" {{
  type = string
}}

variable "generation" {{
  type    = string
  default = "1"
}}

provider "kubernetes" {{
  config_path = var.kubeconfig
}}

locals {{
  namespaces = [for i in range({NAMESPACES}) : "{prefix}-${{i}}"]
  objects = {{
    for pair in setproduct(local.namespaces, range({per_namespace})) :
    "${{pair[0]}}/${{pair[1]}}" => {{ namespace = pair[0], index = pair[1] }}
  }}
}}

resource "kubernetes_manifest" "namespace" {{
  for_each = toset(local.namespaces)
  manifest = {{
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = {{ name = each.value }}
  }}
}}

resource "kubernetes_manifest" "config" {{
  for_each = local.objects
  manifest = {{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata = {{
      name      = "config-${{each.value.index}}"
      namespace = kubernetes_manifest.namespace[each.value.namespace].manifest.metadata.name
    }}
    data = {{
      generation = var.generation
      index      = tostring(each.value.index)
    }}
  }}
}}
"#
    );
    if deployments {
        text.push_str(
            r#"
resource "kubernetes_manifest" "deployment" {
  for_each = local.objects
  manifest = {
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata = {
      name      = "app-${each.value.index}"
      namespace = kubernetes_manifest.namespace[each.value.namespace].manifest.metadata.name
    }
    spec = {
      replicas = 0
      selector = { matchLabels = { app = "app-${each.value.index}" } }
      template = {
        metadata = { labels = { app = "app-${each.value.index}" } }
        spec = {
          containers = [{
            name  = "app"
            image = "registry.k8s.io/pause:3.10"
            env   = [{ name = "GENERATION", value = var.generation }]
          }]
        }
      }
    }
  }
}
"#,
        );
    }
    text
}

/// The same objects as the 1,010-object stack, as one multi-document YAML file, for kubectl.
fn manifests(prefix: &str, generation: &str) -> String {
    let mut out = String::new();
    for n in 0..NAMESPACES {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {prefix}-{n}\n"
        ));
    }
    for n in 0..NAMESPACES {
        for i in 0..PER_NAMESPACE {
            out.push_str(&format!(
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{i}\n  namespace: {prefix}-{n}\ndata:\n  generation: \"{generation}\"\n  index: \"{i}\"\n"
            ));
            out.push_str(&format!(
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: {prefix}-{n}\nspec:\n  replicas: 0\n  selector:\n    matchLabels:\n      app: app-{i}\n  template:\n    metadata:\n      labels:\n        app: app-{i}\n    spec:\n      containers:\n      - name: app\n        image: registry.k8s.io/pause:3.10\n        env:\n        - name: GENERATION\n          value: \"{generation}\"\n"
            ));
        }
    }
    out
}

struct Tools<'a> {
    cluster: &'a TestCluster,
    yaml: &'a Path,
}

const GPUSTACK_REQUEST: &str = "requesting";
const KUBECTL_RESPONSE: &str = "\"Response\"";

impl Tools<'_> {
    fn gpustack(&self, dir: &Path, args: &[&str], generation: &str, expect: i32) -> Sample {
        let mut command = Command::new(gpustack_bin());
        command
            .current_dir(dir)
            .args(args)
            .args([
                "--var",
                &format!("kubeconfig={}", self.cluster.kubeconfig.display()),
            ])
            .args(["--var", &format!("generation={generation}")])
            .env("NO_COLOR", "1")
            .env("GPUSTACK_LOG", "kube_client=debug");
        measure(&command, expect, Some(GPUSTACK_REQUEST))
    }

    fn kubectl(&self, args: &[&str], generation: &str, expect: i32) -> Sample {
        std::fs::write(self.yaml, manifests("kctl", generation)).unwrap();
        let mut command = self.cluster.kubectl_command();
        command
            .args(args)
            .args(["-f", self.yaml.to_str().unwrap(), "-v=6"]);
        measure(&command, expect, Some(KUBECTL_RESPONSE))
    }

    /// Removes kubectl's objects by their namespaces (not measured): `kubectl delete -f`
    /// would wait for each of the 1,010 objects at kubectl's client-side rate limit.
    fn kubectl_clean(&self) {
        let namespaces: Vec<String> = (0..NAMESPACES).map(|n| format!("kctl-{n}")).collect();
        let mut command = self.cluster.kubectl_command();
        command
            .args(["delete", "namespace", "--wait=true", "--ignore-not-found"])
            .args(&namespaces);
        measure(&command, 0, None);
    }
}

/// Time for the cluster's controllers to finish with the last run's objects.
fn settle() {
    std::thread::sleep(std::time::Duration::from_secs(10));
}

fn row(what: &str, ours: &Medians, theirs: &Medians, peer: &str) -> f64 {
    let speedup = theirs.wall_ms / ours.wall_ms;
    println!(
        "{what:<28} gpustack {:6.0} ms (CPU {:5.0}) {:5.0} req {:4.0} MiB | {peer:<27} {:6.0} ms (CPU {:5.0}) {:5.0} req {:4.0} MiB | {speedup:4.1}× faster, {:4.1}× fewer requests",
        ours.wall_ms,
        ours.cpu_ms,
        ours.marked_lines,
        ours.peak_mib,
        theirs.wall_ms,
        theirs.cpu_ms,
        theirs.marked_lines,
        theirs.peak_mib,
        theirs.marked_lines / ours.marked_lines.max(1.0),
    );
    speedup
}

fn main() {
    serve_measure();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let large: usize = std::env::var("BENCH_LARGE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10_000);
    let cluster = TestCluster::start("gpustack-bench", "GPUSTACK_BENCH_KUBECONFIG");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("stack");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.hcl"), stack("gs", PER_NAMESPACE, true)).unwrap();
    let tools = Tools {
        cluster: &cluster,
        yaml: &tmp.path().join("objects.yaml"),
    };
    let objects = NAMESPACES + 2 * NAMESPACES * PER_NAMESPACE;
    let changed = 2 * NAMESPACES * PER_NAMESPACE;
    println!(
        "gpustack vs kubectl, {objects} objects ({} ConfigMaps and {} Deployments in {NAMESPACES} namespaces), medians of {runs} runs, {} CPUs\n",
        NAMESPACES * PER_NAMESPACE,
        NAMESPACES * PER_NAMESPACE,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let (mut create_ours, mut create_theirs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        settle();
        create_ours.push(tools.gpustack(&dir, &["apply", "--auto-approve"], "1", 0));
        settle();
        create_theirs.push(tools.kubectl(&["apply", "--server-side"], "1", 0));
        if run + 1 < runs {
            tools.gpustack(&dir, &["destroy", "--auto-approve"], "1", 0);
            tools.kubectl_clean();
        }
    }
    let (create_ours, create_theirs) = (medians(&create_ours), medians(&create_theirs));
    let create = row(
        "create from nothing",
        &create_ours,
        &create_theirs,
        "kubectl apply --server-side",
    );

    let plan_ours: Vec<_> = (0..runs)
        .map(|_| tools.gpustack(&dir, &["plan"], "1", 0))
        .collect();
    let plan_theirs: Vec<_> = (0..runs)
        .map(|_| tools.kubectl(&["diff", "--server-side"], "1", 0))
        .collect();
    row(
        "plan, nothing to change",
        &medians(&plan_ours),
        &medians(&plan_theirs),
        "kubectl diff --server-side",
    );

    let changed_ours: Vec<_> = (0..runs)
        .map(|_| tools.gpustack(&dir, &["plan", "--detailed-exitcode"], "2", 2))
        .collect();
    let changed_theirs: Vec<_> = (0..runs)
        .map(|_| tools.kubectl(&["diff", "--server-side"], "2", 1))
        .collect();
    let changed_plan = row(
        "plan, every object changed",
        &medians(&changed_ours),
        &medians(&changed_theirs),
        "kubectl diff --server-side",
    );

    // Each changed Deployment makes the controllers roll out a new ReplicaSet after the apply
    // returns: every measured apply starts once the previous one's rollouts are done, so
    // that neither tool pays for the other's.
    let (mut apply_ours, mut apply_theirs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let generation = (run + 2).to_string();
        settle();
        apply_ours.push(tools.gpustack(&dir, &["apply", "--auto-approve"], &generation, 0));
        settle();
        apply_theirs.push(tools.kubectl(&["apply", "--server-side"], &generation, 0));
    }
    let apply_ours = medians(&apply_ours);
    let apply = row(
        "apply, every object changed",
        &apply_ours,
        &medians(&apply_theirs),
        "kubectl apply --server-side",
    );
    tools.gpustack(&dir, &["destroy", "--auto-approve"], "1", 0);
    tools.kubectl_clean();

    let per_namespace = large.div_ceil(NAMESPACES);
    let large_dir = tmp.path().join("large");
    std::fs::create_dir_all(&large_dir).unwrap();
    std::fs::write(
        large_dir.join("main.hcl"),
        stack("gs-large", per_namespace, false),
    )
    .unwrap();
    let large_objects = NAMESPACES + NAMESPACES * per_namespace;
    let large_create = medians(&[tools.gpustack(&large_dir, &["apply", "--auto-approve"], "1", 0)]);
    let large_plan = medians(
        &(0..runs)
            .map(|_| tools.gpustack(&large_dir, &["plan", "--detailed-exitcode"], "1", 0))
            .collect::<Vec<_>>(),
    );
    tools.gpustack(&large_dir, &["destroy", "--auto-approve"], "1", 0);
    println!(
        "\ngpustack alone, {large_objects} objects ({} ConfigMaps in {NAMESPACES} namespaces):",
        NAMESPACES * per_namespace
    );
    println!(
        "create from nothing (1 run)  {:7.0} ms {:6.0} req {:5.0} MiB",
        large_create.wall_ms, large_create.marked_lines, large_create.peak_mib
    );
    println!(
        "plan, nothing to change      {:7.0} ms {:6.0} req {:5.0} MiB  (CPU {:.0} ms)",
        large_plan.wall_ms, large_plan.marked_lines, large_plan.peak_mib, large_plan.cpu_ms
    );

    let per_object = apply_ours.marked_lines / changed as f64;
    println!("\ntargets:");
    println!(
        "  apply of {changed} changed objects ≥ 5× kubectl apply --server-side: {apply:.1}× {}",
        verdict(apply >= 5.0)
    );
    println!(
        "  create ≥ 3× kubectl apply --server-side: {create:.1}× {}",
        verdict(create >= 3.0)
    );
    println!(
        "  requests per changed object ≤ 1.05: {per_object:.3} {}",
        verdict(per_object <= 1.05)
    );
    println!(
        "  plan with every object changed ≥ 5× kubectl diff --server-side: {changed_plan:.1}× {}",
        verdict(changed_plan >= 5.0)
    );
    println!(
        "  no-change plan of {large_objects} objects ≤ 10 s and ≤ 300 MiB: {:.1} s, {:.0} MiB {}",
        large_plan.wall_ms / 1000.0,
        large_plan.peak_mib,
        verdict(large_plan.wall_ms <= 10_000.0 && large_plan.peak_mib <= 300.0)
    );
}
