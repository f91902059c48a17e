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
//! `max_concurrency` 128).

use gpustack_tests::gpustack_bin;
use gpustack_tests::measure::{Sample, measure, medians, serve_measure};
use std::path::{Path, PathBuf};
use std::process::Command;

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
            None,
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
        out[0].push(measure(&tool.command(dir, tool.validate()), 0, None));
        // Changes to make: exit 2.
        out[1].push(measure(&tool.command(dir, tool.plan()), 2, None));
        out[2].push(measure(&tool.command(dir, tool.apply()), 0, None));
        out[3].push(measure(&tool.command(dir, tool.plan()), 0, None));
    }
    tool.forget_state(dir);
    out
}

fn main() {
    serve_measure();
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
            let (g, t) = (medians(&ours[i]), medians(&theirs[i]));
            println!(
                "  {phase:<18} {:>12.0} {:>12.0} {:>7.1}× {:>11.0} {:>11.0} {:>7.0}MiB {:>7.0}MiB {:>7.2}×",
                g.wall_ms,
                t.wall_ms,
                t.wall_ms / g.wall_ms,
                g.cpu_ms,
                t.cpu_ms,
                g.peak_mib,
                t.peak_mib,
                g.peak_mib / t.peak_mib
            );
        }
        println!(
            "  (speed-up: OpenTofu's wall time ÷ gpustack's; memory: gpustack's peak ÷ OpenTofu's. Targets: ≥ 10× on plan, apply and the no-change plan, ≥ 1× on validate, memory ≤ 0.25×)\n"
        );
    }
}
