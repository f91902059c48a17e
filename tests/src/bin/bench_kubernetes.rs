//! gpustack against kubectl on the same cluster, in one run: 1,000 objects (500 ConfigMaps and
//! 500 Deployments across 10 namespaces).
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench-kubernetes` (cluster: `$GPUSTACK_BENCH_KUBECONFIG`,
//! else `tests/cluster/up gpustack-bench`) measures, with medians of `BENCH_RUNS` (default 5):
//! - create from nothing: `gpustack apply` vs `kubectl apply --server-side`;
//! - a plan with nothing to change: `gpustack plan` vs `kubectl diff --server-side`;
//! - a plan and an apply that change every object: the same pairs;
//!
//! and for each, the API requests each tool made (kubectl `-v=6` logs one line per response;
//! gpustack's Kubernetes client logs one per request at debug level). The two tools work on
//! separate namespaces with the same objects, so that neither sees the other's.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::gpustack_bin;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const NAMESPACES: usize = 10;
const PER_NAMESPACE: usize = 50;

fn stack(prefix: &str) -> String {
    format!(
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
    for pair in setproduct(local.namespaces, range({PER_NAMESPACE})) :
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

resource "kubernetes_manifest" "deployment" {{
  for_each = local.objects
  manifest = {{
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata = {{
      name      = "app-${{each.value.index}}"
      namespace = kubernetes_manifest.namespace[each.value.namespace].manifest.metadata.name
    }}
    spec = {{
      replicas = 0
      selector = {{ matchLabels = {{ app = "app-${{each.value.index}}" }} }}
      template = {{
        metadata = {{ labels = {{ app = "app-${{each.value.index}}" }} }}
        spec = {{
          containers = [{{
            name  = "app"
            image = "registry.k8s.io/pause:3.10"
            env   = [{{ name = "GENERATION", value = var.generation }}]
          }}]
        }}
      }}
    }}
  }}
}}
"#
    )
}

/// The same objects as one multi-document YAML file, for kubectl.
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

struct Sample {
    time: Duration,
    requests: usize,
}

/// Runs a command, timing it and counting the lines of its stderr that mark one API request.
fn measure(command: &mut Command, marker: &str, ok_codes: &[i32]) -> Sample {
    let start = Instant::now();
    let out = command.output().expect("run the command");
    let time = start.elapsed();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        ok_codes.contains(&code),
        "{command:?} exited {code}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.contains(marker))
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let requests = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(marker))
        .count();
    Sample { time, requests }
}

fn median(mut samples: Vec<Sample>) -> Sample {
    samples.sort_by_key(|s| s.time);
    samples.swap_remove(samples.len() / 2)
}

struct Tools<'a> {
    cluster: &'a TestCluster,
    dir: &'a Path,
    yaml: &'a Path,
}

const GPUSTACK_REQUEST: &str = "requesting";
const KUBECTL_RESPONSE: &str = "\"Response\"";

impl Tools<'_> {
    fn gpustack(&self, args: &[&str], generation: &str, ok: &[i32]) -> Sample {
        let mut command = Command::new(gpustack_bin());
        command
            .current_dir(self.dir)
            .args(args)
            .args([
                "--var",
                &format!("kubeconfig={}", self.cluster.kubeconfig.display()),
            ])
            .args(["--var", &format!("generation={generation}")])
            .env("NO_COLOR", "1")
            .env("GPUSTACK_LOG", "kube_client=debug");
        measure(&mut command, GPUSTACK_REQUEST, ok)
    }

    fn kubectl(&self, args: &[&str], generation: &str, ok: &[i32]) -> Sample {
        std::fs::write(self.yaml, manifests("kctl", generation)).unwrap();
        let mut command = self.cluster.kubectl_command();
        command
            .args(args)
            .args(["-f", self.yaml.to_str().unwrap(), "-v=6"]);
        measure(&mut command, KUBECTL_RESPONSE, ok)
    }
}

fn row(what: &str, ours: &Sample, theirs: &Sample, peer: &str) {
    println!(
        "{what:<34} gpustack {:8.0} ms {:6} requests | {peer:<30} {:8.0} ms {:6} requests | {:5.1}× faster, {:5.1}× fewer requests",
        ours.time.as_secs_f64() * 1000.0,
        ours.requests,
        theirs.time.as_secs_f64() * 1000.0,
        theirs.requests,
        theirs.time.as_secs_f64() / ours.time.as_secs_f64(),
        theirs.requests as f64 / ours.requests.max(1) as f64,
    );
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let cluster = TestCluster::start("gpustack-bench", "GPUSTACK_BENCH_KUBECONFIG");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("stack");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.hcl"), stack("gs")).unwrap();
    let tools = Tools {
        cluster: &cluster,
        dir: &dir,
        yaml: &tmp.path().join("objects.yaml"),
    };
    let objects = NAMESPACES + 2 * NAMESPACES * PER_NAMESPACE;
    println!(
        "gpustack vs kubectl, {objects} objects ({} ConfigMaps and {} Deployments in {NAMESPACES} namespaces), medians of {runs} runs\n",
        NAMESPACES * PER_NAMESPACE,
        NAMESPACES * PER_NAMESPACE
    );

    let create_ours = tools.gpustack(&["apply", "--auto-approve"], "1", &[0]);
    let create_theirs = tools.kubectl(&["apply", "--server-side"], "1", &[0]);
    row(
        "create from nothing (1 run)",
        &create_ours,
        &create_theirs,
        "kubectl apply --server-side",
    );

    let plan_ours = median(
        (0..runs)
            .map(|_| tools.gpustack(&["plan"], "1", &[0]))
            .collect(),
    );
    let plan_theirs = median(
        (0..runs)
            .map(|_| tools.kubectl(&["diff", "--server-side"], "1", &[0]))
            .collect(),
    );
    row(
        "plan, nothing to change",
        &plan_ours,
        &plan_theirs,
        "kubectl diff --server-side",
    );

    let changed_ours = median(
        (0..runs)
            .map(|_| tools.gpustack(&["plan", "--detailed-exitcode"], "2", &[2]))
            .collect(),
    );
    let changed_theirs = median(
        (0..runs)
            .map(|_| tools.kubectl(&["diff", "--server-side"], "2", &[1]))
            .collect(),
    );
    row(
        "plan, every object changed",
        &changed_ours,
        &changed_theirs,
        "kubectl diff --server-side",
    );

    let mut apply_ours = Vec::new();
    let mut apply_theirs = Vec::new();
    for run in 0..runs {
        let generation = (run + 2).to_string();
        apply_ours.push(tools.gpustack(&["apply", "--auto-approve"], &generation, &[0]));
        apply_theirs.push(tools.kubectl(&["apply", "--server-side"], &generation, &[0]));
    }
    row(
        "apply, every object changed",
        &median(apply_ours),
        &median(apply_theirs),
        "kubectl apply --server-side",
    );

    // Leave the cluster as it was.
    tools.gpustack(&["destroy", "--auto-approve"], "1", &[0]);
    tools.kubectl(&["delete", "--wait=true", "--ignore-not-found"], "1", &[0]);
}
