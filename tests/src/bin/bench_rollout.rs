//! A node-by-node MIG rollout on the GPU simulator: one node alone, then 20 nodes with a
//! budget of 4, each node taking `BENCH_RECONFIGURE_SECONDS` (default 3) to repartition.
//! The target: the 20 nodes take at most 1.1 × ⌈20/4⌉ × one node's time — no idle gap
//! between nodes, a node starting as soon as another finishes — and the rollout follows
//! nodes and pods with watches, not polls.
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench-rollout` (cluster:
//! `$GPUSTACK_BENCH_KUBECONFIG`, else `tests/cluster/up gpustack-rollout-bench`). Each run
//! flips the geometry (all-disabled ↔ all-1g.10gb) with `gpustack apply`, timed as a whole
//! process; a run that changes nothing gives the fixed cost of a process (load, refresh,
//! plan), which is taken off both before the ratio. Medians of `BENCH_RUNS` (default 3).
//! The requests are counted from gpustack's Kubernetes client log (one line per request).
//! A watch of the nodes in this process sees when MIG Manager (the simulator) reports
//! `success` and when a node advertises its new devices; beside the client log's PATCH times
//! that splits each node's time between gpustack's own steps and the cluster's work.

use futures::StreamExt;
use gpustack_tests::cluster::TestCluster;
use gpustack_tests::{gpustack_bin, repo_root, upstream};
use k8s_openapi::api::core::v1::Node;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const NODES: usize = 20;
const BUDGET: usize = 4;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn header() -> &'static str {
    "variable \"kubeconfig\" {\n  type = string\n}\n\nprovider \"kubernetes\" {\n  config_path = var.kubeconfig\n}\n\n"
}

fn rollout_stack(dir: &Path, nodes: &[String], budget: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let names = nodes
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        dir.join("main.hcl"),
        format!(
            "{}variable \"geometry\" {{\n  type    = string\n  default = \"all-disabled\"\n}}\n\nresource \"kubernetes_node_rollout\" \"geometry\" {{\n  name            = \"bench\"\n  nodes           = [{names}]\n  labels          = {{ \"nvidia.com/mig.config\" = var.geometry }}\n  settle          = \"mig\"\n  max_unavailable = \"{budget}\"\n  settle_timeout  = \"5m\"\n}}\n",
            header()
        ),
    )
    .unwrap();
}

/// CPU time in seconds, read from /proc (in USER_HZ, 100 per second on Linux): the whole
/// machine's busy and total time over all CPUs, and the time of this process's children that
/// have ended (gpustack's runs).
#[derive(Clone, Copy, Default)]
struct Cpu {
    busy: f64,
    total: f64,
    children: f64,
}

impl Cpu {
    fn now() -> Self {
        const HZ: f64 = 100.0;
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let fields: Vec<f64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        let total: f64 = fields.iter().take(8).sum();
        let idle = fields.get(3).copied().unwrap_or(0.0) + fields.get(4).copied().unwrap_or(0.0);
        let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // After the command's ")": fields 16 and 17 of the line (cutime, cstime) are the
        // 14th and 15th after it.
        let after: Vec<f64> = own
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let children =
            after.get(13).copied().unwrap_or(0.0) + after.get(14).copied().unwrap_or(0.0);
        Cpu {
            busy: (total - idle) / HZ,
            total: total / HZ,
            children: children / HZ,
        }
    }

    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            busy: self.busy - before.busy,
            total: self.total - before.total,
            children: self.children - before.children,
        }
    }
}

fn gpustack(dir: &Path, cluster: &TestCluster, args: &[&str]) -> (Duration, String) {
    let path = format!(
        "{}:{}",
        cluster.helm_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let out = Command::new(gpustack_bin())
        .current_dir(dir)
        .args(args)
        .args([
            "--var",
            &format!("kubeconfig={}", cluster.kubeconfig.display()),
        ])
        .env("PATH", path)
        .env("GPUSTACK_LOG", "gpustack_connect=debug")
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let wall = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "gpustack {args:?}:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    (wall, stderr)
}

/// Requests by kind: (method, node or pod, watch or not) → count.
fn requests(log: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in log.lines().filter(|l| l.contains("requesting")) {
        let field = |name: &str| {
            line.split(name)
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .unwrap_or("")
        };
        let (method, url) = (field("http.method="), field("http.url="));
        let path = url.split('?').next().unwrap_or("");
        let what = if path.contains("/pods") {
            "pods"
        } else if path.contains("/nodes") {
            "nodes"
        } else {
            "other"
        };
        let kind = match method {
            "GET" if url.contains("watch=true") => "WATCH",
            "GET" if path.ends_with("/nodes") || path.ends_with("/pods") => "LIST",
            m => m,
        };
        *counts.entry(format!("{kind} {what}")).or_default() += 1;
    }
    counts
}

/// Seconds since midnight of a log line's leading RFC 3339 timestamp.
fn stamp(line: &str) -> Option<f64> {
    let time = line
        .split_whitespace()
        .next()?
        .split('T')
        .nth(1)?
        .trim_end_matches('Z');
    let mut parts = time.split(':');
    let (h, m, s): (f64, f64, f64) = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    Some(h * 3600.0 + m * 60.0 + s)
}

/// Each node's span in a rollout, from its first PATCH (the cordon) to its last (the record
/// that it is done): (node, start, end), in seconds of the day.
fn spans(log: &str) -> Vec<(String, f64, f64)> {
    let mut by_node: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for line in log
        .lines()
        .filter(|l| l.contains("requesting") && l.contains("http.method=PATCH"))
    {
        let Some(node) = line
            .split("/api/v1/nodes/")
            .nth(1)
            .and_then(|rest| rest.split(['?', ' ']).next())
        else {
            continue;
        };
        let Some(at) = stamp(line) else {
            continue;
        };
        let span = by_node.entry(node.to_owned()).or_insert((at, at));
        span.0 = span.0.min(at);
        span.1 = span.1.max(at);
    }
    by_node.into_iter().map(|(n, (a, b))| (n, a, b)).collect()
}

/// Now, in seconds of the day (UTC), as the client log stamps its lines.
fn now_of_day() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        % 86_400.0
}

/// What the node watch saw: (node, "success" | "advertised", seconds of the day).
type Sightings = Arc<Mutex<Vec<(String, &'static str, f64)>>>;

/// Whether a node advertises what its `nvidia.com/mig.config` label gives (the benchmark's
/// two geometries on one A100 80GB).
fn advertises_its_geometry(node: &Node) -> bool {
    let label = |k: &str| {
        node.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(k))
            .cloned()
            .unwrap_or_default()
    };
    let allocatable = |k: &str| {
        node.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get(k))
            .map(|q| q.0.clone())
            .unwrap_or_default()
    };
    match label("nvidia.com/mig.config").as_str() {
        "all-1g.10gb" => allocatable("nvidia.com/mig-1g.10gb") == "7",
        "all-disabled" => allocatable("nvidia.com/gpu") == "1",
        _ => false,
    }
}

/// Watches every node until `stop`, noting when each reaches MIG Manager's `success` and when
/// it advertises its geometry (each a change from what the watch saw before).
fn watch_nodes(
    cluster: &'static TestCluster,
) -> (Sightings, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let seen: Sightings = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (seen2, stop2) = (seen.clone(), stop.clone());
    let handle = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let nodes: kube::Api<Node> = kube::Api::all(cluster.client().await);
            let mut stream = std::pin::pin!(kube::runtime::watcher(
                nodes,
                kube::runtime::watcher::Config::default()
            ));
            let mut last: BTreeMap<String, (bool, bool)> = BTreeMap::new();
            while !stop2.load(Ordering::SeqCst) {
                let event = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
                let Ok(Some(Ok(
                    kube::runtime::watcher::Event::Apply(n)
                    | kube::runtime::watcher::Event::InitApply(n),
                ))) = event
                else {
                    continue;
                };
                let at = now_of_day();
                let name = n.metadata.name.clone().unwrap_or_default();
                let success = n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("nvidia.com/mig.config.state"))
                    .is_some_and(|s| s == "success");
                let advertised = advertises_its_geometry(&n);
                let before = last.insert(name.clone(), (success, advertised));
                let mut seen = seen2.lock().unwrap();
                if success && before.is_some_and(|b| !b.0) {
                    seen.push((name.clone(), "success", at));
                }
                if advertised && before.is_some_and(|b| !b.1) {
                    seen.push((name, "advertised", at));
                }
            }
        });
    });
    (seen, stop, handle)
}

/// Per node of an apply: (gpustack's own seconds, the cluster's seconds). A node's five
/// PATCHes are its cordon, `draining`, the relabel (`reconfiguring`), `validating` and
/// `done`; the cluster's time runs from the relabel until the node both reports `success` and
/// advertises its geometry, gpustack's is the rest of the node's span (the steps before the
/// relabel, and from the node being ready to its `done`).
fn split(log: &str, seen: &[(String, &'static str, f64)]) -> Vec<(f64, f64)> {
    let mut patches: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in log
        .lines()
        .filter(|l| l.contains("requesting") && l.contains("http.method=PATCH"))
    {
        let node = line
            .split("/api/v1/nodes/")
            .nth(1)
            .and_then(|rest| rest.split(['?', ' ']).next());
        if let (Some(node), Some(at)) = (node, stamp(line)) {
            patches.entry(node.to_owned()).or_default().push(at);
        }
    }
    let mut out = Vec::new();
    for (node, mut at) in patches {
        at.sort_by(f64::total_cmp);
        let [cordon, _, relabel, _, done] = at[..] else {
            continue;
        };
        let first = |kind: &str| {
            seen.iter()
                .filter(|(n, k, t)| *n == node && *k == kind && *t >= relabel && *t <= done + 0.5)
                .map(|(_, _, t)| *t)
                .reduce(f64::min)
        };
        let (Some(success), Some(advertised)) = (first("success"), first("advertised")) else {
            continue;
        };
        let ready = success.max(advertised).min(done);
        out.push(((relabel - cordon) + (done - ready), ready - relabel));
    }
    out
}

fn median_of(mut samples: Vec<f64>) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    gpustack_tests::measure::serve_measure();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let reconfigure: u64 = std::env::var("BENCH_RECONFIGURE_SECONDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let cluster: &'static TestCluster = Box::leak(Box::new(TestCluster::start(
        "gpustack-rollout-bench",
        "GPUSTACK_BENCH_KUBECONFIG",
    )));
    cluster.fake_gpu_node("rb-system", "none", 0);
    cluster.start_simulator();
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("modules"), &root.path().join("modules"));
    let operator = root.path().join("stacks/operator");
    std::fs::create_dir_all(&operator).unwrap();
    let chart = upstream("charts/gpu-operator-v26.7.0.tgz")
        .canonicalize()
        .unwrap();
    std::fs::write(
        operator.join("main.hcl"),
        format!(
            "{}provider \"helm\" {{\n  config_path = var.kubeconfig\n}}\n\nmodule \"gpu_operator\" {{\n  source          = \"../../modules/gpu-operator\"\n  chart           = \"{}\"\n  driver_enabled  = false\n  toolkit_enabled = false\n  runtime_class   = \"nvidia-container-runtime\"\n  mig_strategy    = \"mixed\"\n}}\n",
            header(),
            chart.display()
        ),
    )
    .unwrap();
    let names: Vec<String> = (0..NODES).map(|i| format!("rb-{i}")).collect();
    let solo = vec!["rb-solo".to_owned()];
    let annotation = format!("gpusim.gpustack.dev/reconfigure-seconds={reconfigure}");
    for node in names.iter().chain(&solo) {
        cluster.fake_gpu_node(node, "NVIDIA A100-SXM4-80GB", 1);
        cluster.kubectl_ok(&["annotate", "node", node, "--overwrite", &annotation]);
    }
    gpustack(&operator, cluster, &["apply", "--auto-approve"]);
    let one = root.path().join("stacks/one");
    let many = root.path().join("stacks/many");
    rollout_stack(&one, &solo, 1);
    rollout_stack(&many, &names, BUDGET);
    let geometries = ["all-1g.10gb", "all-disabled"];
    // Every node starts from all-disabled.
    for dir in [&one, &many] {
        gpustack(
            dir,
            cluster,
            &["apply", "--auto-approve", "--var", "geometry=all-disabled"],
        );
    }
    let (mut t0, mut t1, mut t20) = (Vec::new(), Vec::new(), Vec::new());
    let mut counts = BTreeMap::new();
    let mut node_spans: Vec<(String, f64, f64)> = Vec::new();
    let (seen, stop, watch) = watch_nodes(cluster);
    let (mut alone_logs, mut many_logs) = (Vec::new(), Vec::new());
    let (mut cpu_one, mut cpu_many) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let geometry = format!("geometry={}", geometries[run % 2]);
        let args = ["apply", "--auto-approve", "--var", geometry.as_str()];
        let before = Cpu::now();
        let (wall, log) = gpustack(&one, cluster, &args);
        cpu_one.push(Cpu::now().since(before));
        t1.push(wall);
        alone_logs.push(log);
        let before = Cpu::now();
        let (wall, log) = gpustack(&many, cluster, &args);
        cpu_many.push(Cpu::now().since(before));
        t20.push(wall);
        counts = requests(&log);
        node_spans = spans(&log);
        many_logs.push(log);
        t0.push(gpustack(&many, cluster, &args).0);
    }
    // The watch in this process may trail gpustack's own: what it saw is read once it has
    // caught up with every run.
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    let _ = watch.join();
    let seen = seen.lock().unwrap();
    let alone_split: Vec<(f64, f64)> = alone_logs.iter().flat_map(|l| split(l, &seen)).collect();
    let many_split: Vec<(f64, f64)> = many_logs.iter().flat_map(|l| split(l, &seen)).collect();
    let (t0, t1, t20) = (median(t0), median(t1), median(t20));
    let waves = NODES.div_ceil(BUDGET) as f64;
    let node_time = seconds(t1.saturating_sub(t0));
    let ratio = seconds(t20.saturating_sub(t0)) / (waves * node_time);
    println!(
        "rollout on the simulator: {NODES} nodes, budget {BUDGET}, repartitioning {reconfigure} s per node, medians of {runs}"
    );
    println!(
        "  apply with nothing to change (fixed cost) {:>8.2} s",
        seconds(t0)
    );
    println!(
        "  one node                                 {:>8.2} s  ({node_time:.2} s without the fixed cost)",
        seconds(t1)
    );
    println!(
        "  {NODES} nodes, {BUDGET} at a time              {:>8.2} s  ({:.2} s without it)",
        seconds(t20),
        seconds(t20.saturating_sub(t0))
    );
    println!(
        "  ratio to {waves} × one node: {ratio:.3} (target ≤ 1.1: {})",
        gpustack_tests::measure::verdict(ratio <= 1.1)
    );
    if !node_spans.is_empty() {
        let first = node_spans.iter().map(|s| s.1).fold(f64::MAX, f64::min);
        let last = node_spans.iter().map(|s| s.2).fold(f64::MIN, f64::max);
        let busy: f64 = node_spans.iter().map(|s| s.2 - s.1).sum();
        let mean = busy / node_spans.len() as f64;
        println!(
            "  in the {NODES}-node apply (last run): a node took {mean:.2} s on average (alone: {node_time:.2} s, so {:.2}× under 4 at once); the {BUDGET} slots were busy {:.1}% of the rollout's {:.2} s, so {:.2} s of it was idle slots",
            mean / node_time,
            100.0 * busy / (BUDGET as f64 * (last - first)),
            last - first,
            (BUDGET as f64 * (last - first) - busy) / BUDGET as f64,
        );
    }
    for (what, samples) in [("alone", &alone_split), ("4 at once", &many_split)] {
        println!(
            "  a node {what} (median of {} nodes): gpustack's own steps {:.2} s (cordon to relabel, ready to done), the cluster's {:.2} s (relabel to success and its devices advertised)",
            samples.len(),
            median_of(samples.iter().map(|s| s.0).collect()),
            median_of(samples.iter().map(|s| s.1).collect()),
        );
    }
    // Where the CPU went: the machine's, all of it counted, against gpustack's own process.
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let many_label = format!("the {NODES}-node apply");
    for (what, samples) in [("one node", &cpu_one), (many_label.as_str(), &cpu_many)] {
        let busy = median_of(samples.iter().map(|c| c.busy / c.total).collect());
        let seconds_busy = median_of(samples.iter().map(|c| c.busy).collect());
        let own = median_of(samples.iter().map(|c| c.children).collect());
        println!(
            "  CPU during {what} (median of {}): the machine's {cpus} CPUs {:.0}% busy ({seconds_busy:.2} CPU-s), gpustack's process {own:.2} CPU-s of it ({:.1}%), the cluster and the simulator the rest",
            samples.len(),
            100.0 * busy,
            100.0 * own / seconds_busy.max(f64::EPSILON),
        );
    }
    println!("  requests of the {NODES}-node apply (last run):");
    for (kind, n) in &counts {
        println!("    {kind:<16} {n}");
    }
    // The cluster is left as it was found, so that the benchmark can run on it again.
    for dir in [&one, &many, &operator] {
        gpustack(dir, cluster, &["destroy", "--auto-approve"]);
    }
    let polls = counts.get("GET nodes").copied().unwrap_or(0)
        + counts.get("GET pods").copied().unwrap_or(0);
    println!("  single-object GETs of nodes or pods (polls): {polls}");
}
