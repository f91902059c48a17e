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
//! - the plan that changes every object, gpustack over HTTP/2 (its default) against gpustack
//!   over HTTP/1.1 (`DISABLE_HTTP2`), alternating;
//! - destroy, gpustack alone (kubectl's objects are removed with their namespaces, unmeasured):
//!   its wall time and requests per deleted object;
//! - a plan with nothing to change of `BENCH_LARGE` ConfigMaps (default 10,000) from an existing
//!   state: gpustack's wall time and peak memory against the targets (≤ 10 s, ≤ 300 MB);
//!
//! Every measured create and apply starts 10 s after the command before it, once the
//! controllers are done with that command's Deployments.
//!
//! For each: wall time, CPU time and peak memory, and the API requests each tool made
//! (kubectl `-v=6` logs one line per response; gpustack's Kubernetes client logs one per
//! request at debug level). On a cluster of the test world, also the CPU time its processes
//! spent while the command ran (from their pid files and `/proc/PID/stat`): the API server and
//! etcd, and all of them with the controllers; from that, the shortest time in which any
//! client could have done the same work on this machine's CPUs. For a create or an apply,
//! also what they spent in the 10 s after it, while the controllers rolled out its
//! Deployments: with what they spent during the run, less idle, the whole cost of the
//! operation to the cluster, which a faster client moves out of its own window but does not
//! remove. The two tools work on
//! separate namespaces with the same objects, so that neither sees the other's.

use gpustack_tests::cluster::TestCluster;
use gpustack_tests::gpustack_bin;
use gpustack_tests::measure::{
    Medians, Sample, measure, median, medians, megabytes, serve_measure, verdict,
};
use std::path::{Path, PathBuf};
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

/// The processes of a test-world cluster, from the pid files beside its kubeconfig.
struct ClusterProcesses {
    pids: Vec<(String, PathBuf)>,
    ticks_per_second: f64,
}

/// CPU milliseconds the cluster's processes spent: the API server and etcd, etcd alone, and
/// all of them.
#[derive(Clone, Copy, Default)]
struct ClusterCpu {
    server_ms: f64,
    etcd_ms: f64,
    all_ms: f64,
}

impl ClusterCpu {
    fn minus(self, other: Self) -> Self {
        Self {
            server_ms: self.server_ms - other.server_ms,
            etcd_ms: self.etcd_ms - other.etcd_ms,
            all_ms: self.all_ms - other.all_ms,
        }
    }

    fn times(self, factor: f64) -> Self {
        Self {
            server_ms: self.server_ms * factor,
            etcd_ms: self.etcd_ms * factor,
            all_ms: self.all_ms * factor,
        }
    }
}

/// The components that serve a request; the others (controllers, scheduler, kwok) only react
/// to what was written.
const SERVING: [&str; 2] = ["kube-apiserver", "etcd"];

impl ClusterProcesses {
    /// `None` for a cluster that is not the test world's (no pid files beside the kubeconfig).
    fn of(kubeconfig: &Path) -> Option<Self> {
        let dir = kubeconfig.parent()?.join("pids");
        let mut pids = Vec::new();
        for entry in std::fs::read_dir(dir).ok()? {
            let path = entry.ok()?.path();
            let component = path.file_stem()?.to_str()?.to_owned();
            let pid: u32 = std::fs::read_to_string(&path).ok()?.trim().parse().ok()?;
            pids.push((component, PathBuf::from(format!("/proc/{pid}/stat"))));
        }
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
        (!pids.is_empty()).then_some(Self {
            pids,
            ticks_per_second: ticks as f64,
        })
    }

    fn cpu(&self) -> ClusterCpu {
        let mut total = ClusterCpu::default();
        for (component, stat) in &self.pids {
            let text = std::fs::read_to_string(stat)
                .unwrap_or_else(|e| panic!("the cluster's {component} is gone ({e})"));
            // utime and stime are fields 14 and 15; the command name before them may hold spaces.
            let fields: Vec<&str> = text
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .collect();
            let ticks: f64 =
                fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
            let ms = ticks * 1000.0 / self.ticks_per_second;
            total.all_ms += ms;
            if SERVING.contains(&component.as_str()) {
                total.server_ms += ms;
            }
            if component == "etcd" {
                total.etcd_ms += ms;
            }
        }
        total
    }
}

/// One measured command and what the cluster spent while it ran; for a create or an apply,
/// also what it spent in the [`SETTLE`] after it, while the controllers rolled out its
/// Deployments.
struct Run {
    sample: Sample,
    cluster: Option<ClusterCpu>,
    /// The cluster's CPU counters when the command ended.
    ended: Option<ClusterCpu>,
    after: Option<ClusterCpu>,
}

/// The medians of a tool's runs.
struct Side {
    tool: Medians,
    cluster: Option<ClusterCpu>,
    after: Option<ClusterCpu>,
}

fn side(runs: &[Run]) -> Side {
    let samples: Vec<Sample> = runs.iter().map(|r| r.sample.clone()).collect();
    let of = |pick: fn(&Run) -> Option<ClusterCpu>| {
        let cpu: Vec<ClusterCpu> = runs.iter().filter_map(pick).collect();
        (cpu.len() == runs.len() && !cpu.is_empty()).then(|| ClusterCpu {
            server_ms: median(cpu.iter().map(|c| c.server_ms).collect()),
            etcd_ms: median(cpu.iter().map(|c| c.etcd_ms).collect()),
            all_ms: median(cpu.iter().map(|c| c.all_ms).collect()),
        })
    };
    Side {
        tool: medians(&samples),
        cluster: of(|r| r.cluster),
        after: of(|r| r.after),
    }
}

struct Tools<'a> {
    cluster: &'a TestCluster,
    processes: Option<ClusterProcesses>,
    yaml: &'a Path,
}

const GPUSTACK_REQUEST: &str = "requesting";
const KUBECTL_RESPONSE: &str = "\"Response\"";

impl Tools<'_> {
    fn measured(&self, command: &Command, expect: i32, marker: &str) -> Run {
        let cpu = || self.processes.as_ref().map(ClusterProcesses::cpu);
        let before = cpu();
        let sample = measure(command, expect, Some(marker));
        let ended = cpu();
        Run {
            sample,
            cluster: ended.zip(before).map(|(ended, before)| ended.minus(before)),
            ended,
            after: None,
        }
    }

    /// `run`, with what the cluster spends in the [`SETTLE`] after it.
    fn settled(&self, mut run: Run) -> Run {
        settle();
        let settled = self.processes.as_ref().map(ClusterProcesses::cpu);
        run.after = settled
            .zip(run.ended)
            .map(|(settled, ended)| settled.minus(ended));
        run
    }

    fn gpustack(&self, dir: &Path, args: &[&str], generation: &str, expect: i32) -> Run {
        self.gpustack_with(dir, args, generation, expect, &[])
    }

    fn gpustack_with(
        &self,
        dir: &Path,
        args: &[&str],
        generation: &str,
        expect: i32,
        env: &[(&str, &str)],
    ) -> Run {
        let mut command = Command::new(gpustack_bin());
        // The protocol is the benchmark's choice, not the caller's shell's.
        command
            .env_remove("DISABLE_HTTP2")
            .envs(env.iter().copied());
        command
            .current_dir(dir)
            .args(args)
            .args([
                "--var",
                &format!("kubeconfig={}", self.cluster.kubeconfig.display()),
            ])
            .args(["--var", &format!("generation={generation}")])
            .env("NO_COLOR", "1")
            .env("GPUSTACK_LOG", "gpustack_connect=debug");
        self.measured(&command, expect, GPUSTACK_REQUEST)
    }

    fn kubectl(&self, args: &[&str], generation: &str, expect: i32) -> Run {
        std::fs::write(self.yaml, manifests("kctl", generation)).unwrap();
        let mut command = self.cluster.kubectl_command();
        command
            .args(args)
            .args(["-f", self.yaml.to_str().unwrap(), "-v=6"]);
        self.measured(&command, expect, KUBECTL_RESPONSE)
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
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

fn settle() {
    std::thread::sleep(SETTLE);
}

/// What the cluster's processes spent on a create or an apply, above idle: while it ran and
/// in the [`SETTLE`] after it, when the controllers rolled out what it changed.
fn whole(side: &Side, idle: ClusterCpu) -> Option<ClusterCpu> {
    let seconds = side.tool.wall_ms / 1000.0 + SETTLE.as_secs_f64();
    let spent = side.cluster?;
    let after = side.after?;
    Some(
        ClusterCpu {
            server_ms: spent.server_ms + after.server_ms,
            etcd_ms: spent.etcd_ms + after.etcd_ms,
            all_ms: spent.all_ms + after.all_ms,
        }
        .minus(idle.times(seconds)),
    )
}

fn row(what: &str, ours: &Side, theirs: &Side, peer: &str, idle: Option<ClusterCpu>) -> f64 {
    let (o, t) = (&ours.tool, &theirs.tool);
    let speedup = t.wall_ms / o.wall_ms;
    println!(
        "{what:<28} gpustack {:6.0} ms (CPU {:5.0}) {:5.0} req {:4.0} MiB | {peer:<27} {:6.0} ms (CPU {:5.0}) {:5.0} req {:4.0} MiB | {speedup:4.1}× faster, {:4.1}× fewer requests",
        o.wall_ms,
        o.cpu_ms,
        o.marked_lines,
        o.peak_mib,
        t.wall_ms,
        t.cpu_ms,
        t.marked_lines,
        t.peak_mib,
        t.marked_lines / o.marked_lines.max(1.0),
    );
    if let (Some(oc), Some(tc)) = (ours.cluster, theirs.cluster) {
        println!(
            "{:<28} cluster CPU meanwhile: API server and etcd {:5.0} ms, with the controllers {:5.0} ms | {:5.0} ms, {:5.0} ms",
            "", oc.server_ms, oc.all_ms, tc.server_ms, tc.all_ms
        );
    }
    if let Some((o, t)) = idle.and_then(|idle| whole(ours, idle).zip(whole(theirs, idle))) {
        println!(
            "{:<28} cluster CPU for the run and the {} s after it, above idle:       {:5.0} ms, {:5.0} ms | {:5.0} ms, {:5.0} ms  (etcd's part: {:.0} | {:.0} ms)",
            "",
            SETTLE.as_secs(),
            o.server_ms,
            o.all_ms,
            t.server_ms,
            t.all_ms,
            o.etcd_ms,
            t.etcd_ms
        );
    }
    speedup
}

/// The shortest time in which any client could have sent gpustack's requests here: the CPU
/// the API server and etcd spent on them (what they spent during gpustack's run, less what
/// they spend idle in as long) and gpustack's own, spread over every CPU of the machine they
/// share; and the speed-up over the peer that leaves.
fn floor(ours: &Side, theirs: &Side, idle_ms_per_s: f64, cpus: f64) -> Option<(f64, f64)> {
    let idle = idle_ms_per_s * ours.tool.wall_ms / 1000.0;
    let server = (ours.cluster?.server_ms - idle).max(0.0);
    let floor_ms = (server + ours.tool.cpu_ms) / cpus;
    Some((floor_ms, theirs.tool.wall_ms / floor_ms))
}

/// CPU milliseconds per second the cluster's processes spend with no client.
fn idle_cpu(processes: &ClusterProcesses) -> ClusterCpu {
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(5);
    let before = processes.cpu();
    std::thread::sleep(WINDOW);
    processes
        .cpu()
        .minus(before)
        .times(1.0 / WINDOW.as_secs_f64())
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
        processes: ClusterProcesses::of(&cluster.kubeconfig),
        yaml: &tmp.path().join("objects.yaml"),
    };
    let objects = NAMESPACES + 2 * NAMESPACES * PER_NAMESPACE;
    let changed = 2 * NAMESPACES * PER_NAMESPACE;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "gpustack vs kubectl, {objects} objects ({} ConfigMaps and {} Deployments in {NAMESPACES} namespaces), medians of {runs} runs, {cpus} CPUs\n",
        NAMESPACES * PER_NAMESPACE,
        NAMESPACES * PER_NAMESPACE,
    );
    let idle = tools.processes.as_ref().map(idle_cpu);
    match idle {
        Some(idle) => println!(
            "the API server and etcd spend {:.0} ms of CPU per second idle, with the controllers {:.0} ms\n",
            idle.server_ms, idle.all_ms
        ),
        None => println!(
            "(the cluster's CPU is not measured: no pid files beside {}, not a cluster of the test world)\n",
            cluster.kubeconfig.display()
        ),
    }

    let (mut create_ours, mut create_theirs) = (Vec::new(), Vec::new());
    let mut destroys = Vec::new();
    for run in 0..runs {
        settle();
        let ours = tools.gpustack(&dir, &["apply", "--auto-approve"], "1", 0);
        create_ours.push(tools.settled(ours));
        let theirs = tools.kubectl(&["apply", "--server-side"], "1", 0);
        create_theirs.push(tools.settled(theirs));
        if run + 1 < runs {
            destroys.push(tools.gpustack(&dir, &["destroy", "--auto-approve"], "1", 0));
            tools.kubectl_clean();
        }
    }
    let (create_ours, create_theirs) = (side(&create_ours), side(&create_theirs));
    let create = row(
        "create from nothing",
        &create_ours,
        &create_theirs,
        "kubectl apply --server-side",
        idle,
    );

    let plan_ours: Vec<_> = (0..runs)
        .map(|_| tools.gpustack(&dir, &["plan"], "1", 0))
        .collect();
    let plan_theirs: Vec<_> = (0..runs)
        .map(|_| tools.kubectl(&["diff", "--server-side"], "1", 0))
        .collect();
    row(
        "plan, nothing to change",
        &side(&plan_ours),
        &side(&plan_theirs),
        "kubectl diff --server-side",
        idle,
    );

    let changed_ours: Vec<_> = (0..runs)
        .map(|_| tools.gpustack(&dir, &["plan", "--detailed-exitcode"], "2", 2))
        .collect();
    let changed_theirs: Vec<_> = (0..runs)
        .map(|_| tools.kubectl(&["diff", "--server-side"], "2", 1))
        .collect();
    let (changed_ours, changed_theirs) = (side(&changed_ours), side(&changed_theirs));
    let changed_plan = row(
        "plan, every object changed",
        &changed_ours,
        &changed_theirs,
        "kubectl diff --server-side",
        idle,
    );

    // The same plan over HTTP/1.1 (client-go's DISABLE_HTTP2 switch), alternating with
    // HTTP/2: what one multiplexed connection saves the client and the API server.
    let (mut over_h2, mut over_h1) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        over_h2.push(tools.gpustack(&dir, &["plan", "--detailed-exitcode"], "2", 2));
        over_h1.push(tools.gpustack_with(
            &dir,
            &["plan", "--detailed-exitcode"],
            "2",
            2,
            &[("DISABLE_HTTP2", "1")],
        ));
    }
    row(
        "changed plan: HTTP/2 vs 1.1",
        &side(&over_h2),
        &side(&over_h1),
        "gpustack over HTTP/1.1",
        idle,
    );

    // Each changed Deployment makes the controllers roll out a new ReplicaSet after the apply
    // returns: every measured apply starts once the previous one's rollouts are done, so
    // that neither tool pays for the other's.
    let (mut apply_ours, mut apply_theirs) = (Vec::new(), Vec::new());
    settle();
    for run in 0..runs {
        let generation = (run + 2).to_string();
        let ours = tools.gpustack(&dir, &["apply", "--auto-approve"], &generation, 0);
        apply_ours.push(tools.settled(ours));
        let theirs = tools.kubectl(&["apply", "--server-side"], &generation, 0);
        apply_theirs.push(tools.settled(theirs));
    }
    let (apply_ours, apply_theirs) = (side(&apply_ours), side(&apply_theirs));
    let apply = row(
        "apply, every object changed",
        &apply_ours,
        &apply_theirs,
        "kubectl apply --server-side",
        idle,
    );
    destroys.push(tools.gpustack(&dir, &["destroy", "--auto-approve"], "1", 0));
    tools.kubectl_clean();
    let destroyed = side(&destroys).tool;
    println!(
        "{:<28} gpustack {:6.0} ms (CPU {:5.0}) {:5.0} req {:4.0} MiB, {:.3} requests per deleted object (gpustack alone: kubectl's objects go with their namespaces)",
        "destroy",
        destroyed.wall_ms,
        destroyed.cpu_ms,
        destroyed.marked_lines,
        destroyed.peak_mib,
        destroyed.marked_lines / objects as f64,
    );

    let per_namespace = large.div_ceil(NAMESPACES);
    let large_dir = tmp.path().join("large");
    std::fs::create_dir_all(&large_dir).unwrap();
    std::fs::write(
        large_dir.join("main.hcl"),
        stack("gs-large", per_namespace, false),
    )
    .unwrap();
    let large_objects = NAMESPACES + NAMESPACES * per_namespace;
    let large_create =
        side(&[tools.gpustack(&large_dir, &["apply", "--auto-approve"], "1", 0)]).tool;
    let large_plan = side(
        &(0..runs)
            .map(|_| tools.gpustack(&large_dir, &["plan", "--detailed-exitcode"], "1", 0))
            .collect::<Vec<_>>(),
    )
    .tool;
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

    let per_object = apply_ours.tool.marked_lines / changed as f64;
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
        "  no-change plan of {large_objects} objects ≤ 10 s and ≤ 300 MB: {:.1} s, {:.0} MB ({:.0} MiB) {}",
        large_plan.wall_ms / 1000.0,
        megabytes(large_plan.peak_mib),
        large_plan.peak_mib,
        verdict(large_plan.wall_ms <= 10_000.0 && megabytes(large_plan.peak_mib) <= 300.0)
    );

    println!(
        "\nthe floor of this machine (the API server's and etcd's CPU for gpustack's requests above idle, and gpustack's own, over {cpus} CPUs):"
    );
    for (what, ours, theirs, target) in [
        ("apply", &apply_ours, &apply_theirs, 5.0),
        ("create", &create_ours, &create_theirs, 3.0),
        (
            "plan with every object changed",
            &changed_ours,
            &changed_theirs,
            5.0,
        ),
    ] {
        match idle.and_then(|idle| floor(ours, theirs, idle.server_ms, cpus as f64)) {
            Some((floor_ms, best)) => println!(
                "  {what}: no client takes less than {floor_ms:.0} ms here, at most {best:.1}× the peer's {:.0} ms (target {target:.0}×{})",
                theirs.tool.wall_ms,
                if best < target {
                    ": out of reach on this machine"
                } else {
                    ""
                }
            ),
            None => println!("  {what}: not measured (the cluster's processes are not known)"),
        }
    }
}
