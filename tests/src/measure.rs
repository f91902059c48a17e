//! Measuring whole processes for the benchmarks: wall time, CPU time and peak memory.
//!
//! A benchmark program measures a command by running it under a copy of itself
//! (`--measure`), which has no other child, so that its `getrusage(RUSAGE_CHILDREN)` is the
//! command's own CPU time and peak resident memory. Every benchmark's `main` starts with
//! [`serve_measure`].

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The targets' memory limits are in megabytes (10^6 bytes); the measurements are in MiB.
pub fn megabytes(mib: f64) -> f64 {
    mib * 1_048_576.0 / 1_000_000.0
}

/// One run of a process.
#[derive(Clone, Debug)]
pub struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
    pub peak_mib: f64,
    /// The lines of its standard error that contained the marker it was measured with.
    pub marked_lines: usize,
}

/// Runs `command` to its end and measures it; panics unless it exits with `expect`.
/// `marker`, when given, counts the lines of the command's standard error that contain it.
pub fn measure(command: &Command, expect: i32, marker: Option<&str>) -> Sample {
    let exe = std::env::current_exe().expect("current exe");
    let stderr_file = tempfile::NamedTempFile::new().expect("a file for the command's stderr");
    let mut outer = Command::new(exe);
    outer
        .arg("--measure")
        .arg(expect.to_string())
        .arg(stderr_file.path());
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
    let stderr = std::fs::read_to_string(stderr_file.path()).unwrap_or_default();
    assert!(
        out.status.success(),
        "{command:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        tail(&stderr, marker, 30)
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
        marked_lines: marker.map_or(0, |m| stderr.lines().filter(|l| l.contains(m)).count()),
    }
}

/// The last `n` lines of a command's standard error, without the marked ones.
fn tail(stderr: &str, marker: Option<&str>, n: usize) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| marker.is_none_or(|m| !l.contains(m)))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// When this process was started as `--measure EXPECT STDERR PROGRAM ARGS...`: runs the
/// program with its standard error into the file STDERR, prints its wall seconds, CPU seconds
/// and peak MiB, and exits. Otherwise returns.
pub fn serve_measure() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("--measure") || args.len() < 4 {
        return;
    }
    let expect: i32 = args[1].parse().expect("expected exit code");
    let stderr = std::fs::File::create(&args[2]).expect("create the stderr file");
    let started = Instant::now();
    let status = Command::new(&args[3])
        .args(&args[4..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .status()
        .expect("start the benchmarked process");
    let wall = started.elapsed();
    if status.code() != Some(expect) {
        eprintln!("{:?} exited {:?}, not {expect}", &args[3..], status.code());
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
    std::process::exit(0);
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The medians of a set of runs: wall and CPU in milliseconds, peak memory in MiB, marked
/// lines.
#[derive(Clone, Copy, Debug)]
pub struct Medians {
    pub wall_ms: f64,
    pub cpu_ms: f64,
    pub peak_mib: f64,
    pub marked_lines: f64,
}

pub fn medians(samples: &[Sample]) -> Medians {
    let of = |f: &dyn Fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    Medians {
        wall_ms: of(&|s| s.wall.as_secs_f64() * 1000.0),
        cpu_ms: of(&|s| s.cpu.as_secs_f64() * 1000.0),
        peak_mib: of(&|s| s.peak_mib),
        marked_lines: of(&|s| s.marked_lines as f64),
    }
}

/// "met" or "MISSED", for a target line.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}
