//! Benchmarks of the static phases, with medians and ratios in the output.
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench` measures:
//! - `gpustack validate` of the reference example as a process (the user-visible number; target
//!   < 50 ms), against `gpustack version` run the same way: the process start-up floor, so the
//!   ratio shows what validation itself costs;
//! - in-process load → graph → evaluate of synthetic stacks of 1,000 and 10,000 resources with
//!   references between them, whose ratio shows how the passes scale (10× the size should cost
//!   about 10×, not 100×), with the peak resident memory of this process.

use gpustack::VariableArgs;
use gpustack::evaluate::EvalOptions;
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
            let loaded = gpustack::load(
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

fn main() {
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
}
