//! Benchmarks of the static phases, with medians and ratios in the output.
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench` measures:
//! - `gpustack validate` of the reference example as a process (the user-visible number; target
//!   < 50 ms), against `gpustack version` run the same way: the process start-up floor, so the
//!   ratio shows what validation itself costs;
//! - in-process load → graph → evaluate of synthetic stacks of 1,000 and 10,000 resources with
//!   references between them, whose ratio shows how the passes scale (10× the size should cost
//!   about 10×, not 100×), with the peak resident memory of this process;
//! - the engine target of the design brief: planning a 10,000-resource stack whose provider
//!   answers every call after 20 ms, against the critical-path bound (depth × latency), with CPU
//!   time and peak memory of a process that does only that.

use gpustack_engine::VariableArgs;
use gpustack_engine::evaluate::EvalOptions;
use gpustack_tests::{gpustack_bin, repo_root};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time_process(args: &[&str], runs: usize) -> Duration {
    let bin = gpustack_bin();
    let samples = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let status = Command::new(&bin)
                .current_dir(repo_root())
                .args(args)
                .env("NO_COLOR", "1")
                .output()
                .expect("run gpustack")
                .status;
            let elapsed = start.elapsed();
            assert!(status.success(), "gpustack {args:?} failed");
            elapsed
        })
        .collect();
    median(samples)
}

/// A stack of `n` local_file resources in layers of 100: each file reads the id of one file of
/// the previous layer, plus a for_each resource, a module-free mix of locals and outputs.
fn synthetic_stack(dir: &Path, n: usize) {
    let mut text = String::from(
        "variable \"prefix\" {\n  default = \"f\"\n}\n\nlocals {\n  width = 100\n}\n\n",
    );
    for i in 0..n {
        let content = if i < 100 {
            "\"seed\"".to_owned()
        } else {
            format!("local_file.f{}.id", i - 100)
        };
        text.push_str(&format!(
            "resource \"local_file\" \"f{i}\" {{\n  filename = \"${{var.prefix}}-{i}.txt\"\n  content  = {content}\n}}\n\n"
        ));
    }
    text.push_str("output \"last\" {\n  value = local_file.f0.filename\n}\n");
    std::fs::create_dir_all(dir).expect("create synthetic stack dir");
    std::fs::write(dir.join("main.hcl"), text).expect("write synthetic stack");
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn time_load(dir: &Path, runs: usize) -> (Duration, usize) {
    let mut resources = 0;
    let samples = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let loaded = gpustack_engine::load(
                gpustack::registry(),
                dir,
                &VariableArgs::default(),
                EvalOptions {
                    allow_missing_inputs: true,
                },
            );
            let elapsed = start.elapsed();
            assert!(
                !loaded.has_errors(),
                "synthetic stack has errors: {:?}",
                loaded.diagnostics.first()
            );
            resources = loaded.evaluated.resources.len();
            elapsed
        })
        .collect();
    (median(samples), resources)
}

/// 10,000 test objects in 100 layers of 100; each object of a layer reads the id of one
/// object of the layer before, so the critical path is 100 provider calls deep.
fn engine_stack(dir: &Path, layers: usize, width: usize, latency_ms: u32) {
    let mut text = format!(
        "provider \"test\" {{\n  latency_ms      = {latency_ms}\n  max_concurrency = {}\n}}\n\n",
        width * 2
    );
    for layer in 0..layers {
        for i in 0..width {
            let value = if layer == 0 {
                "\"seed\"".to_owned()
            } else {
                format!("test_object.l{}_{i}.id", layer - 1)
            };
            text.push_str(&format!("resource \"test_object\" \"l{layer}_{i}\" {{\n  name  = \"l{layer}-{i}\"\n  value = {value}\n}}\n\n"));
        }
    }
    std::fs::create_dir_all(dir).expect("create engine stack dir");
    std::fs::write(dir.join("main.hcl"), text).expect("write engine stack");
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = fields
        .get(11)
        .and_then(|u| u.parse::<f64>().ok())
        .unwrap_or(0.0)
        + fields
            .get(12)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0);
    ticks / 100.0
}

/// Runs in a child process of its own, so that peak memory is the plan's alone.
fn engine_only() {
    let (layers, width, latency_ms) = (100, 100, 20);
    let dir = std::env::temp_dir().join(format!("gpustack-bench-engine-{}", std::process::id()));
    engine_stack(&dir, layers, width, latency_ms);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let session = gpustack_engine::Session::open(
        gpustack_protocol::Registry::new(vec![gpustack_provider_test::provider()]),
        &dir,
        &gpustack_engine::config::Files::Disk,
        gpustack_engine::InputSource::Args(&VariableArgs::default()),
    );
    let (plan, _, diagnostics) = runtime.block_on(gpustack_engine::plan(
        session,
        None,
        &gpustack_engine::plan::PlanOptions {
            refresh: true,
            ..Default::default()
        },
    ));
    let wall = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let plan = plan.unwrap_or_else(|| {
        panic!(
            "the synthetic stack did not plan: {:?}",
            diagnostics.first()
        )
    });
    let bound = Duration::from_millis(layers as u64 * latency_ms as u64);
    println!(
        "engine: plan of {} resources, {latency_ms} ms per provider call, depth {layers}",
        plan.resource_changes.len()
    );
    println!("  wall time            {:9.2} ms", ms(wall));
    println!(
        "  critical-path bound  {:9.2} ms  (depth × latency)",
        ms(bound)
    );
    println!(
        "  ratio                {:9.2}   (target ≤ 1.5, +1 s allowed: {})",
        wall.as_secs_f64() / bound.as_secs_f64(),
        if wall <= bound.mul_f64(1.5) + Duration::from_secs(1) {
            "met"
        } else {
            "MISSED"
        }
    );
    println!("  CPU time             {:9.2} ms", cpu * 1000.0);
    if let Some(peak) = peak_rss_mib() {
        println!(
            "  peak memory          {peak:9.1} MiB  (target < 300 MiB: {})",
            if peak < 300.0 { "met" } else { "MISSED" }
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if std::env::args().any(|a| a == "--engine-only") {
        engine_only();
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    println!("gpustack benchmark ({runs} runs each, medians)\n");

    let baseline = time_process(&["version"], runs);
    let validate = time_process(&["validate", "examples/aks-t4-time-slicing"], runs);
    println!(
        "process: gpustack version (start-up floor)        {:8.2} ms",
        ms(baseline)
    );
    println!(
        "process: gpustack validate aks-t4-time-slicing    {:8.2} ms  ({:.2}× the floor; target < 50 ms: {})",
        ms(validate),
        ms(validate) / ms(baseline),
        if ms(validate) < 50.0 { "met" } else { "MISSED" }
    );

    let tmp = std::env::temp_dir().join(format!("gpustack-bench-{}", std::process::id()));
    let small = tmp.join("n1000");
    let large = tmp.join("n10000");
    synthetic_stack(&small, 1_000);
    synthetic_stack(&large, 10_000);
    let (t_small, n_small) = time_load(&small, runs.min(10));
    let (t_large, n_large) = time_load(&large, runs.min(5));
    println!("\nin-process load → graph → evaluate:");
    println!("  {n_small:>6} resources  {:9.2} ms", ms(t_small));
    println!(
        "  {n_large:>6} resources  {:9.2} ms  ({:.2}× for 10× the resources; linear would be 10×)",
        ms(t_large),
        ms(t_large) / ms(t_small)
    );
    if let Some(peak) = peak_rss_mib() {
        println!("  peak resident memory of this process: {peak:.1} MiB");
    }
    let _ = std::fs::remove_dir_all(&tmp);

    println!();
    let exe = std::env::current_exe().expect("current exe");
    let status = Command::new(exe)
        .arg("--engine-only")
        .status()
        .expect("run the engine benchmark");
    assert!(status.success());
}
