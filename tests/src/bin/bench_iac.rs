//! gpustack against OpenTofu, in one run, on the same synthetic graphs of `terraform_data`
//! resources (built into both: no provider to download or start).
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench-iac` builds the pinned OpenTofu into the
//! test world's cache on first use (`tests/cluster/build opentofu`; `GPUSTACK_BENCH_TOFU` names
//! another binary), then, for each size (`BENCH_SIZES`, default `1000,10000`: layers of 100, each
//! resource reading the output of one resource of the layer before), measures each tool's
//! `validate`, plan from nothing, apply from nothing and the plan with nothing to change, as
//! processes: wall time, CPU time (user + system) and peak resident memory, medians of
//! `BENCH_RUNS` (default 5), and the ratios OpenTofu ÷ gpustack (time) and gpustack ÷ OpenTofu
//! (memory). Both tools run with their defaults (OpenTofu's parallelism 10, gpustack's
//! `max_concurrency` 64).

use gpustack_tests::gpustack_bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of a process.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    peak_mib: f64,
}

/// Runs `command` to its end and measures it; panics unless it exits with `expect`. The
/// command runs under a copy of this program (`--measure`) that has no other child, so that
/// its `getrusage(RUSAGE_CHILDREN)` is the command's own CPU time and peak memory.
fn measure(command: &Command, expect: i32) -> Sample {
    let exe = std::env::current_exe().expect("current exe");
    let mut outer = Command::new(exe);
    outer.arg("--measure").arg(expect.to_string());
    if let Some(dir) = command.get_current_dir() {
        outer.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(v) => outer.env(key, v),
            None => outer.env_remove(key),
        };
    }
    outer.arg(command.get_program()).args(command.get_args());
    let out = outer.output().expect("run the measuring process");
    assert!(
        out.status.success(),
        "{command:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let numbers: Vec<f64> = text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [wall, cpu, peak] = numbers[..] else {
        panic!("the measuring process said {text:?}");
    };
    Sample {
        wall: Duration::from_secs_f64(wall),
        cpu: Duration::from_secs_f64(cpu),
        peak_mib: peak,
    }
}

/// `--measure EXPECT PROGRAM ARGS...`: runs the program, then prints its wall seconds, CPU
/// seconds and peak MiB.
fn measure_child(args: &[String]) {
    let expect: i32 = args[0].parse().expect("expected exit code");
    let started = Instant::now();
    let out = Command::new(&args[1])
        .args(&args[2..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("start the benchmarked process");
    let wall = started.elapsed();
    if out.status.code() != Some(expect) {
        eprintln!(
            "{:?} exited {:?}, not {expect}:\n{}",
            &args[1..],
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    // Linux reports ru_maxrss in KiB.
    println!(
        "{} {} {}",
        wall.as_secs_f64(),
        seconds(usage.user_time()) + seconds(usage.system_time()),
        usage.max_rss() as f64 / 1024.0
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Medians of wall, CPU (ms) and peak memory (MiB).
fn medians(samples: &[Sample]) -> (f64, f64, f64) {
    (
        median(
            samples
                .iter()
                .map(|s| s.wall.as_secs_f64() * 1000.0)
                .collect(),
        ),
        median(
            samples
                .iter()
                .map(|s| s.cpu.as_secs_f64() * 1000.0)
                .collect(),
        ),
        median(samples.iter().map(|s| s.peak_mib).collect()),
    )
}

/// `layers × width` terraform_data resources; each reads one of the layer before.
fn graph(layers: usize, width: usize) -> String {
    let mut text = String::new();
    for layer in 0..layers {
        for i in 0..width {
            let input = if layer == 0 {
                format!("\"seed-{i}\"")
            } else {
                format!("terraform_data.l{}_{i}.output", layer - 1)
            };
            text.push_str(&format!(
                "resource \"terraform_data\" \"l{layer}_{i}\" {{\n  input = {input}\n}}\n\n"
            ));
        }
    }
    text
}

/// The pinned OpenTofu: `GPUSTACK_BENCH_TOFU`, else built into the test world's cache.
fn tofu() -> PathBuf {
    if let Some(path) = std::env::var_os("GPUSTACK_BENCH_TOFU") {
        return PathBuf::from(path);
    }
    gpustack_tests::cluster::opentofu()
}

/// A tool's four phases on one directory, `runs` times each.
trait Tool {
    /// A command in `dir`.
    fn command(&self, dir: &Path, args: &[&str]) -> Command;
    fn prepare(&self, _dir: &Path) {}
    fn forget_state(&self, dir: &Path);
    fn validate(&self) -> &'static [&'static str];
    fn plan(&self) -> &'static [&'static str];
    fn apply(&self) -> &'static [&'static str];
}

struct Gpustack(PathBuf);
struct Tofu(PathBuf);

impl Tool for Gpustack {
    fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.0);
        c.current_dir(dir).args(args).env("NO_COLOR", "1");
        c
    }
    fn forget_state(&self, dir: &Path) {
        let _ = std::fs::remove_dir_all(dir.join(".gpustack"));
    }
    fn validate(&self) -> &'static [&'static str] {
        &["validate"]
    }
    fn plan(&self) -> &'static [&'static str] {
        &["plan", "--detailed-exitcode"]
    }
    fn apply(&self) -> &'static [&'static str] {
        &["apply", "--auto-approve"]
    }
}

impl Tool for Tofu {
    fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.0);
        c.current_dir(dir)
            .args(args)
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1");
        c
    }
    /// `tofu init` once per directory (not measured): only the built-in provider, no network.
    fn prepare(&self, dir: &Path) {
        measure(
            &self.command(dir, &["init", "-input=false", "-no-color"]),
            0,
        );
    }
    fn forget_state(&self, dir: &Path) {
        for file in ["terraform.tfstate", "terraform.tfstate.backup"] {
            let _ = std::fs::remove_file(dir.join(file));
        }
    }
    fn validate(&self) -> &'static [&'static str] {
        &["validate", "-no-color"]
    }
    fn plan(&self) -> &'static [&'static str] {
        &["plan", "-input=false", "-no-color", "-detailed-exitcode"]
    }
    fn apply(&self) -> &'static [&'static str] {
        &["apply", "-input=false", "-no-color", "-auto-approve"]
    }
}

const PHASES: [&str; 4] = ["validate", "plan from nothing", "apply", "no-change plan"];

/// Each phase's samples for one tool on one graph.
fn run_tool(tool: &dyn Tool, dir: &Path, file: &str, text: &str, runs: usize) -> [Vec<Sample>; 4] {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
    tool.prepare(dir);
    let mut out: [Vec<Sample>; 4] = Default::default();
    for _ in 0..runs {
        tool.forget_state(dir);
        out[0].push(measure(&tool.command(dir, tool.validate()), 0));
        // Changes to make: exit 2.
        out[1].push(measure(&tool.command(dir, tool.plan()), 2));
        out[2].push(measure(&tool.command(dir, tool.apply()), 0));
        out[3].push(measure(&tool.command(dir, tool.plan()), 0));
    }
    tool.forget_state(dir);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--measure") {
        measure_child(&args[1..]);
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let gpustack = Gpustack(gpustack_bin());
    let tofu_bin = tofu();
    let version = Command::new(&tofu_bin)
        .arg("version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.starts_with("OpenTofu v"))
                .unwrap_or("OpenTofu")
                .to_owned()
        })
        .unwrap_or_default();
    let tofu = Tofu(tofu_bin);
    println!(
        "gpustack vs {version}: terraform_data graphs in layers of 100, medians of {runs} runs, {} CPUs\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let root = tempfile::tempdir().unwrap();
    for n in sizes {
        let width = 100.min(n);
        let layers = n.div_ceil(width);
        let text = graph(layers, width);
        let ours = run_tool(
            &gpustack,
            &root.path().join(format!("gpustack-{n}")),
            "main.hcl",
            &text,
            runs,
        );
        let theirs = run_tool(
            &tofu,
            &root.path().join(format!("tofu-{n}")),
            "main.tf",
            &text,
            runs,
        );
        println!("{n} resources ({layers} layers × {width}):");
        println!(
            "  {:<18} {:>12} {:>12} {:>8} {:>11} {:>11} {:>9} {:>9} {:>8}",
            "phase",
            "gpustack ms",
            "OpenTofu ms",
            "speed-up",
            "gpustack CPU",
            "OpenTofu CPU",
            "gpustack",
            "OpenTofu",
            "memory"
        );
        for (i, phase) in PHASES.iter().enumerate() {
            let (g_wall, g_cpu, g_peak) = medians(&ours[i]);
            let (t_wall, t_cpu, t_peak) = medians(&theirs[i]);
            println!(
                "  {phase:<18} {g_wall:>12.0} {t_wall:>12.0} {:>7.1}× {g_cpu:>11.0} {t_cpu:>11.0} {g_peak:>7.0}MiB {t_peak:>7.0}MiB {:>7.2}×",
                t_wall / g_wall,
                g_peak / t_peak
            );
        }
        println!(
            "  (speed-up: OpenTofu's wall time ÷ gpustack's; memory: gpustack's peak ÷ OpenTofu's. Targets: ≥ 10× on plan, apply and the no-change plan, ≥ 1× on validate, memory ≤ 0.25×)\n"
        );
    }
}
