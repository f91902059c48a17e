//! Benchmarks of the static phases, with medians and ratios in the output.
#![allow(clippy::panic, clippy::unwrap_used)]
//!
//! `cargo run --release -p gpustack-tests --bin bench` measures:
//! - `gpustack validate` of the reference example as a process (the user-visible number; target
//!   < 50 ms), against `gpustack version` run the same way and in alternation with it: the
//!   process start-up floor, so the ratio and the difference show what validation itself costs
//!   (target: at most 2 ms above the floor), with the page faults of each (a stale
//!   `cli/link/startup.order` shows there first); `BENCH_ONLY=validate` runs it alone;
//! - load → graph → evaluate of synthetic stacks of 1,000, 10,000 and 100,000 resources
//!   (`BENCH_STATIC_SIZES`) with references between them, timed in a fresh process for each
//!   sample, and how each size's time grows from the one before (target: at most 11× for 10×
//!   the resources), with each size's peak resident memory;
//! - the engine target of the design brief, as `gpustack plan` processes at the provider's
//!   default concurrency: a 10,000-resource stack whose provider answers every call after
//!   20 ms, planned from nothing and then, with a state of all 10,000, with nothing to change
//!   (a refresh of the whole state), each against its critical-path bound (the provider calls
//!   on the longest path × latency), with CPU time and peak memory;
//! - `gpustack apply` from nothing and `gpustack destroy` of 1,000 and 10,000 test objects
//!   whose provider answers at once, and how each grows with 10× the objects: what the engine
//!   itself spends recording each change in the state (a scan of the state per change made
//!   a 10,000-object destroy take 17 s, a 30,000-object one 230 s);
//! - `gpustack review` of a 10,000-change Terraform JSON plan, 1,000 of them GPU-relevant
//!   (target ≤ 1 s, ≤ 200 MB); `BENCH_ONLY=review` runs it alone;
//! - the plan-time DRA check of 100 claim selectors against 1,000 nodes of 8 GPUs (half of
//!   them with MIG on: 4 MIG devices per GPU), in process (target ≤ 1 s), against evaluating
//!   every selector on every device; `BENCH_ONLY=dra` runs it alone.

use gpustack_engine::EvalOptions;
use gpustack_engine::VariableArgs;
use gpustack_tests::measure::{measure, medians, megabytes, serve_measure, verdict};
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

/// One run of gpustack: its wall time, and the page faults it took (its first touches of
/// code, data and heap), from the children's usage before and after it.
fn time_once(args: &[&str]) -> (Duration, i64) {
    let faults = || {
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
            .map(|usage| usage.minor_page_faults())
            .unwrap_or_default()
    };
    let faults_before = faults();
    let start = Instant::now();
    let status = Command::new(gpustack_bin())
        .current_dir(repo_root())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run gpustack")
        .status;
    let elapsed = start.elapsed();
    assert!(status.success(), "gpustack {args:?} failed");
    (elapsed, faults() - faults_before)
}

/// Two commands timed in alternation, so that both share the machine's drift: the medians of
/// each, and of their page faults.
fn time_paired(first: &[&str], second: &[&str], runs: usize) -> [(Duration, i64); 2] {
    let (a, b): (Vec<_>, Vec<_>) = (0..runs)
        .map(|_| (time_once(first), time_once(second)))
        .unzip();
    [a, b].map(|runs| {
        let (times, mut faults): (Vec<_>, Vec<_>) = runs.into_iter().unzip();
        faults.sort_unstable();
        (median(times), faults[faults.len() / 2])
    })
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

/// The static phases of the stack in `dir`, as `validate` runs them.
fn load(dir: &Path) -> gpustack_engine::Loaded {
    gpustack_engine::load(
        gpustack::registry(),
        dir,
        &VariableArgs::default(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    )
}

/// One load → graph → evaluate of the stack in `dir`, timed in this process: its time (the
/// result's drop excluded) and how many resource instances it evaluated.
fn time_load(dir: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let loaded = load(dir);
    let elapsed = start.elapsed();
    assert!(
        !loaded.has_errors(),
        "synthetic stack has errors: {:?}",
        loaded.diagnostics.first()
    );
    let instances = loaded.resource_count();
    // As a command ends: the process exits without dropping the result.
    std::mem::forget(loaded);
    (elapsed, instances)
}

/// When this process was started as `--static-sample WARM DIR`: loads the one-resource stack
/// in WARM untimed, so that what every load does once (schemas, first use of the code) is not
/// in any size's time, then times one [`time_load`] of DIR, prints its nanoseconds, the
/// instances it evaluated and this process's peak MiB, and exits.
fn serve_static_sample() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("--static-sample") || args.len() != 3 {
        return;
    }
    drop(load(Path::new(&args[1])));
    let (time, instances) = time_load(Path::new(&args[2]));
    println!(
        "{} {instances} {}",
        time.as_nanos(),
        peak_rss_mib().unwrap_or(f64::NAN)
    );
    std::process::exit(0);
}

/// One static sample in a process of its own, started as a command is: an empty heap and no
/// pages of an earlier sample. In one process, the allocator kept the pages a smaller stack's
/// earlier sample had freed and handed them out again without a page fault, while a stack of
/// 100,000 resources, beyond what it keeps, faulted in all of its 500 MiB every time; the
/// ratio between sizes measured that difference as well as the engine's.
fn static_sample(warm: &Path, dir: &Path) -> (Duration, usize, f64) {
    let out = Command::new(std::env::current_exe().expect("this benchmark's path"))
        .arg("--static-sample")
        .arg(warm)
        .arg(dir)
        .output()
        .expect("start a static sample");
    assert!(
        out.status.success(),
        "static sample of {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("a sample's output is UTF-8");
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [nanos, instances, peak] = fields[..] else {
        panic!("a static sample printed {text:?}");
    };
    (
        Duration::from_nanos(nanos.parse().expect("nanoseconds")),
        instances.parse().expect("instances"),
        peak.parse().expect("peak MiB"),
    )
}

/// `layers × width` test objects; each object of a layer reads the id of one object of the
/// layer before, so that a plan's critical path is `layers` provider calls deep. The provider
/// runs at its defaults (`max_concurrency` 128) with the latency and world the variables give.
fn engine_stack(dir: &Path, layers: usize, width: usize) {
    let mut text = String::from(
        "variable \"latency_ms\" {\n  type    = number\n  default = 0\n}\n\nvariable \"world\" {\n  type    = string\n  default = null\n}\n\nprovider \"test\" {\n  latency_ms = var.latency_ms\n  world      = var.world\n}\n\n",
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

fn gpustack_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(gpustack_bin());
    command
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env("GPUSTACK_TEST_PROVIDER", "1");
    command
}

/// The world file of the test provider holding every object of the stack's state, as an
/// earlier apply would have left it (written at once: the provider rewrites the whole file on
/// each change, which would make 10,000 creates quadratic).
fn world_from_state(dir: &Path, world: &Path) {
    let text = std::fs::read_to_string(dir.join(".gpustack/state.json")).expect("read the state");
    let state: serde_json::Value = serde_json::from_str(&text).expect("parse the state");
    let objects: serde_json::Map<String, serde_json::Value> = state["resources"]
        .as_array()
        .expect("the state's resources")
        .iter()
        .map(|r| {
            let attributes = r["attributes"].clone();
            let name = attributes["name"].as_str().expect("a name").to_owned();
            (name, attributes)
        })
        .collect();
    std::fs::write(world, serde_json::to_vec(&objects).unwrap()).expect("write the world");
}

/// The design brief's engine target at 20 ms per provider call, default concurrency, as
/// processes: a plan from nothing, and a plan with nothing to change that refreshes a state
/// of the same resources, each against its critical-path bound.
fn engine(runs: usize) {
    let (layers, width, latency_ms) = (100usize, 100usize, 20u64);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("engine");
    engine_stack(&dir, layers, width);
    let world = dir.join("world.json");
    let latency = format!("latency_ms={latency_ms}");
    let world_var = format!("world={}", world.display());
    let vars = ["--var", &latency, "--var", &world_var];

    let plans = |expect: i32| -> Vec<_> {
        let mut args = vec!["plan", "--detailed-exitcode"];
        args.extend(vars);
        (0..runs)
            .map(|_| measure(&gpustack_in(&dir, &args), expect, None))
            .collect()
    };
    // Changes to make: exit 2; nothing to change: 0.
    let from_nothing = plans(2);
    // The state, made at no latency and without a world file; then the world it describes.
    let status = gpustack_in(&dir, &["apply", "--auto-approve"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run gpustack apply");
    assert!(status.success(), "the engine stack did not apply");
    world_from_state(&dir, &world);
    let no_change = plans(0);

    let n = layers * width;
    println!(
        "\nengine: {n} test objects, {latency_ms} ms per provider call, depth {layers}, default concurrency, medians of {runs} runs:"
    );
    // Plan from nothing: one plan call per layer on the path. Refresh: one batched read of
    // the state's objects, then the same.
    for (what, samples, calls) in [
        ("plan from nothing", &from_nothing, layers),
        (
            "no-change plan of a 10,000-resource state",
            &no_change,
            layers + 1,
        ),
    ] {
        let m = medians(samples);
        let bound_ms = (calls as u64 * latency_ms) as f64;
        let target_ms = 1.5 * bound_ms + 1000.0;
        println!("  {what}:");
        println!("    wall time            {:9.0} ms", m.wall_ms);
        println!("    critical-path bound  {bound_ms:9.0} ms  ({calls} calls × {latency_ms} ms)");
        println!(
            "    ratio                {:9.2}   (target ≤ 1.5 × bound + 1 s = {target_ms:.0} ms: {})",
            m.wall_ms / bound_ms,
            verdict(m.wall_ms <= target_ms)
        );
        println!("    CPU time             {:9.0} ms", m.cpu_ms);
        println!(
            "    peak memory          {:9.1} MiB = {:.0} MB  (target < 300 MB: {})",
            m.peak_mib,
            megabytes(m.peak_mib),
            verdict(megabytes(m.peak_mib) < 300.0)
        );
    }
}

/// Apply from nothing and destroy of `sizes` test objects at no provider latency and without a
/// world file, so that the time is the engine's own: evaluation, the state kept and written
/// as changes finish, and the output. Between them, the plan of the applied state with nothing
/// to change, as text and as JSON (`--json` writes its document as it serializes it).
fn changes(runs: usize, sizes: &[usize]) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    println!(
        "\napply from nothing, no-change plan as text and as --json, and destroy, test objects answered at once, medians of {runs} runs:"
    );
    let mut before: Option<(usize, f64, f64)> = None;
    for &n in sizes {
        let dir = tmp.path().join(format!("changes{n}"));
        engine_stack(&dir, n.div_ceil(100), 100.min(n));
        let (mut applies, mut destroys) = (Vec::new(), Vec::new());
        let (mut texts, mut jsons) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            applies.push(measure(
                &gpustack_in(&dir, &["apply", "--auto-approve"]),
                0,
                None,
            ));
            texts.push(measure(&gpustack_in(&dir, &["plan"]), 0, None));
            jsons.push(measure(&gpustack_in(&dir, &["plan", "--json"]), 0, None));
            destroys.push(measure(
                &gpustack_in(&dir, &["destroy", "--auto-approve"]),
                0,
                None,
            ));
        }
        let (apply, destroy) = (medians(&applies), medians(&destroys));
        let growth = match before {
            Some((m, a, d)) => format!(
                "  growth for {:.0}× the objects: apply {:.2}×, destroy {:.2}×",
                n as f64 / m as f64,
                apply.wall_ms / a,
                destroy.wall_ms / d
            ),
            None => String::new(),
        };
        println!(
            "  {n:>7} objects  apply {:7.0} ms ({:5.1} MiB)  destroy {:7.0} ms ({:5.1} MiB){growth}",
            apply.wall_ms, apply.peak_mib, destroy.wall_ms, destroy.peak_mib
        );
        let (text, json) = (medians(&texts), medians(&jsons));
        // The JSON is written as it is serialized, never held whole: its peak stays that of
        // the plan itself, as the text's does (the README's claim).
        let streamed = json.peak_mib <= 1.1 * text.peak_mib;
        println!(
            "  {n:>7} objects  plan {:7.0} ms ({:5.1} MiB)  plan --json {:7.0} ms ({:5.1} MiB, {:.2}× the text's peak; streamed, ≤ 1.1×: {})",
            text.wall_ms,
            text.peak_mib,
            json.wall_ms,
            json.peak_mib,
            json.peak_mib / text.peak_mib,
            verdict(streamed)
        );
        before = Some((n, apply.wall_ms, destroy.wall_ms));
    }
}

fn main() {
    serve_measure();
    serve_static_sample();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    println!("gpustack benchmark ({runs} runs each, medians)\n");
    // One measurement alone: `BENCH_ONLY=review`.
    if std::env::var("BENCH_ONLY").as_deref() == Ok("review") {
        review(runs.clamp(1, 10));
        return;
    }
    if std::env::var("BENCH_ONLY").as_deref() == Ok("dra") {
        dra(runs.clamp(1, 10));
        return;
    }

    // The floor and validate in alternation, ten times the runs: the difference is a fraction
    // of either, and the machine's drift between two blocks of runs would enter it.
    let [(baseline, baseline_faults), (validate, validate_faults)] = time_paired(
        &["version"],
        &["validate", "examples/aks-t4-time-slicing"],
        runs * 10,
    );
    println!(
        "process: gpustack version (start-up floor)        {:8.2} ms",
        ms(baseline)
    );
    println!(
        "process: gpustack validate aks-t4-time-slicing    {:8.2} ms  ({:.2}× the floor; target < 50 ms: {})",
        ms(validate),
        ms(validate) / ms(baseline),
        verdict(ms(validate) < 50.0)
    );
    let above = ms(validate) - ms(baseline);
    println!(
        "process: validate above the floor (paired)        {above:8.2} ms  (target ≤ 2 ms: {})",
        verdict(above <= 2.0)
    );
    // cli/link/startup.order keeps the code validate runs together; a file gone stale (another
    // compiler or dependencies) shows as a hundred more faults here.
    println!(
        "process: page faults, version / validate           {baseline_faults:5} / {validate_faults}  (+{}; about +150 with the start-up order, +200 or more without)",
        validate_faults - baseline_faults
    );
    if std::env::var("BENCH_ONLY").as_deref() == Ok("validate") {
        return;
    }

    // The static phases at each size, and how each grows from the size before (target: at
    // most 11× for 10× the resources).
    let sizes: Vec<usize> = std::env::var("BENCH_STATIC_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dirs: Vec<_> = sizes
        .iter()
        .map(|&n| {
            let dir = tmp.path().join(format!("n{n}"));
            synthetic_stack(&dir, n);
            dir
        })
        .collect();
    let warm = tmp.path().join("warm");
    synthetic_stack(&warm, 1);
    // Rounds of one sample of every size, smallest first, each sample in a process of its
    // own: each starts after another size's run, as a command starts with caches that hold
    // none of its data, and the sizes' samples share the machine's drift, which in a block of
    // one size's samples after another's would enter the ratio. A size above 10,000
    // resources, seconds a sample, takes part in the first five rounds only.
    const LARGE_ROUNDS: usize = 5;
    let rounds = runs.max(10);
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); sizes.len()];
    let mut peaks: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut resources = vec![0; sizes.len()];
    for round in 0..rounds {
        for (i, dir) in dirs.iter().enumerate() {
            if sizes[i] > 10_000 && round >= LARGE_ROUNDS {
                continue;
            }
            let (time, instances, peak) = static_sample(&warm, dir);
            times[i].push(time);
            peaks[i].push(peak);
            resources[i] = instances;
        }
    }
    println!(
        "\nload → graph → evaluate, each sample in a fresh process, medians of {rounds} rounds of one sample of each size (above 10,000 resources: {LARGE_ROUNDS} rounds):"
    );
    let mut before: Option<(usize, Duration)> = None;
    for (i, &n) in sizes.iter().enumerate() {
        let time = median(std::mem::take(&mut times[i]));
        let peak = gpustack_tests::measure::median(std::mem::take(&mut peaks[i]));
        let line = format!(
            "  {:>7} resources  {:9.2} ms  {peak:6.1} MiB peak",
            resources[i],
            ms(time)
        );
        match before {
            Some((m, previous)) => {
                let growth = ms(time) / ms(previous);
                let allowed = 1.1 * n as f64 / m as f64;
                println!(
                    "{line}  ({growth:.2}× for {:.0}× the resources; target ≤ {allowed:.0}×: {})",
                    n as f64 / m as f64,
                    verdict(growth <= allowed)
                );
            }
            None => println!("{line}"),
        }
        before = Some((n, time));
    }

    engine(runs.clamp(1, 5));
    changes(runs.clamp(1, 5), &[1_000, 10_000]);
    review(runs.clamp(1, 10));
}

/// `gpustack review` of a 10,000-change Terraform JSON plan, 1,000 of them GPU-relevant, with
/// its findings located in the 10,000 resource blocks of its `.tf` file (target: ≤ 1 s and
/// ≤ 200 MB).
/// A device as NVIDIA's DRA driver publishes it, unique per node and GPU.
fn dra_device(node: usize, gpu: usize, mig: Option<(&str, usize)>) -> gpustack_protocol::DraDevice {
    use gpustack_protocol::DraAttribute::{String as S, Version as V};
    let uuid = format!("GPU-{node:08x}-{gpu:04x}-4000-8000-000000000000");
    let mut attributes: std::collections::BTreeMap<String, gpustack_protocol::DraAttribute> = [
        ("type", S(if mig.is_some() { "mig" } else { "gpu" }.into())),
        ("productName", S("NVIDIA H100 80GB HBM3".into())),
        ("brand", S("Nvidia".into())),
        ("architecture", S("Hopper".into())),
        ("cudaComputeCapability", V("9.0.0".into())),
        ("driverVersion", V("580.65.6".into())),
        ("cudaDriverVersion", V("13.0.0".into())),
        (
            "resource.kubernetes.io/pciBusID",
            S(format!("0000:{:02x}:00.0", 0x10 + gpu)),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut capacity = std::collections::BTreeMap::new();
    let name = match mig {
        None => {
            attributes.insert("uuid".into(), S(uuid));
            capacity.insert("memory".to_owned(), "81559Mi".to_owned());
            format!("gpu-{gpu}")
        }
        Some((profile, start)) => {
            attributes.insert("parentUUID".into(), S(uuid.clone()));
            attributes.insert("uuid".into(), S(format!("MIG-{uuid}-{start}")));
            attributes.insert("profile".into(), S(profile.into()));
            let (sms, mib) = match profile {
                "3g.40gb" => (60, 40320),
                "2g.20gb" => (32, 20096),
                _ => (16, 9984),
            };
            capacity.insert("multiprocessors".to_owned(), sms.to_string());
            capacity.insert("memory".to_owned(), format!("{mib}Mi"));
            format!("gpu-{gpu}-mig-{}-{start}", profile.replace('.', ""))
        }
    };
    gpustack_protocol::DraDevice {
        name,
        kind: if mig.is_some() { "mig" } else { "gpu" }.into(),
        product: "NVIDIA H100 80GB HBM3".into(),
        memory_mib: None,
        attributes,
        capacity,
        consumes: Default::default(),
    }
}

fn dra(runs: usize) {
    use gpustack_protocol::{ClusterFact, DeviceRequestFact, DeviceRequestKind, GpuFact, NodeFact};
    let balanced = [
        ("3g.40gb", 4),
        ("2g.20gb", 2),
        ("1g.10gb", 0),
        ("1g.10gb", 1),
    ];
    let nodes: Vec<NodeFact> = (0..1000)
        .map(|n| NodeFact {
            name: format!("gpu-{n:04}"),
            dra_devices: (0..8)
                .flat_map(|g| {
                    if n % 2 == 0 {
                        vec![dra_device(n, g, None)]
                    } else {
                        balanced
                            .iter()
                            .map(|&m| dra_device(n, g, Some(m)))
                            .collect()
                    }
                })
                .collect(),
            ..NodeFact::default()
        })
        .collect();
    let devices: usize = nodes.iter().map(|n| n.dra_devices.len()).sum();
    let class = |kind: &str| serde_json::json!({"selectors": [{"cel": {"expression": format!("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'")}}]});
    let cluster = GpuFact::Cluster(ClusterFact {
        nodes,
        device_classes: [
            ("gpu.nvidia.com".to_owned(), class("gpu")),
            ("mig.nvidia.com".to_owned(), class("mig")),
        ]
        .into(),
        ..ClusterFact::default()
    });
    // 100 distinct selectors of the kinds the driver's docs and tests write.
    let selectors: Vec<(&str, String)> = (0..100)
        .map(|i| {
            let a = |name: &str| format!("device.attributes['gpu.nvidia.com'].{name}");
            match i % 10 {
                0 => ("gpu.nvidia.com", format!("{}.startsWith('NVIDIA H{}')", a("productName"), 100 + i)),
                1 => ("gpu.nvidia.com", format!("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('{}Gi'))", i % 80)),
                2 => ("gpu.nvidia.com", format!("{}.compareTo(semver('{}.0.0')) >= 0", a("driverVersion"), 500 + i)),
                3 => ("gpu.nvidia.com", format!("{}.isGreaterThan(semver('{}.0.0'))", a("cudaComputeCapability"), i % 9)),
                4 => ("gpu.nvidia.com", format!("{}.lowerAscii().matches('^.*h{}.*$')", a("productName"), 100 + i % 3)),
                5 => ("mig.nvidia.com", format!("{} == '{}'", a("profile"), ["1g.10gb", "2g.20gb", "3g.40gb"][i % 3])),
                6 => ("mig.nvidia.com", format!("device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity('{}'))", i % 50)),
                7 => ("gpu.nvidia.com", format!("{} == 'Hopper' && {} == 'Nvidia' && {} != 'x{i}'", a("architecture"), a("brand"), a("productName"))),
                8 => ("gpu.nvidia.com", format!("device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:{:02x}')", 0x10 + i % 8)),
                _ => ("gpu.nvidia.com", format!("{}.startsWith('GPU-') && {i} > 0", a("uuid"))),
            }
        })
        .collect();
    let mut facts = vec![cluster];
    for (i, (class, selector)) in selectors.iter().enumerate() {
        facts.push(GpuFact::DeviceRequest(DeviceRequestFact {
            kind: DeviceRequestKind::ResourceClaimTemplate,
            name: format!("claim-{i}"),
            namespace: Some("default".into()),
            spec: Some(
                serde_json::json!({"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": class,
                    "selectors": [{"cel": {"expression": selector}}],
                }}]}}),
            ),
            attribute: gpustack_protocol::path(["manifest", "spec", "spec"]),
        }));
    }
    let sourced: Vec<gpustack_gpu::Sourced<'_>> = facts
        .iter()
        .map(|fact| gpustack_gpu::Sourced {
            address: "kubernetes_manifest.claims",
            fact,
        })
        .collect();
    let mut times = Vec::new();
    let mut builds = Vec::new();
    let mut stats = None;
    let mut refused = 0;
    for _ in 0..runs {
        let started = Instant::now();
        let model = gpustack_gpu::Model::build(&sourced);
        builds.push(started.elapsed());
        let (findings, s) = model.dra_findings();
        times.push(started.elapsed());
        stats = Some(s);
        refused = findings.len();
    }
    let stats = stats.unwrap();
    let time = median(times);
    let build = median(builds);
    println!(
        "\nplan-time DRA check: 100 claim selectors against 1,000 nodes × 8 GPUs ({devices} devices, half of the nodes MIG all-balanced), model and check in process, medians of {runs} runs:"
    );
    println!(
        "  {:8.1} ms (of which the GPU model's build {:.1} ms); {} expressions compiled once each, {} CEL evaluations ({:.2} per selector and device), {refused} claims refused (target ≤ 1,000 ms: {})",
        ms(time),
        ms(build),
        stats.compiled,
        stats.evaluated,
        stats.evaluated as f64 / (100.0 * devices as f64),
        verdict(ms(time) <= 1000.0)
    );
    // The peer: every selector on every device, the way a check without the memo of what
    // each selector reads would go (timed on one selector, scaled to 100).
    let one = &sourced[..2];
    let started = Instant::now();
    let model = gpustack_gpu::Model::build(one);
    let (_, s) = model.dra_findings_without_memo();
    let per_selector = started.elapsed();
    println!(
        "  every selector on every device instead: {:8.1} ms for one selector ({} evaluations), {:8.1} ms for 100 (the memo: {:.0}× faster)",
        ms(per_selector),
        s.evaluated,
        ms(per_selector) * 100.0,
        ms(per_selector) * 100.0 / ms(time)
    );
}

fn review(runs: usize) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("review");
    gpustack_tests::terraform_plan::write(&dir, 10_000, 1_000);
    let size = std::fs::metadata(dir.join("plan.json")).map_or(0, |m| m.len());
    let samples: Vec<_> = (0..runs)
        .map(|_| measure(&gpustack_in(&dir, &["review", "plan.json"]), 1, None))
        .collect();
    let m = medians(&samples);
    println!(
        "\ngpustack review of a Terraform JSON plan of 10,000 changes ({:.1} MB), 1,000 GPU-relevant, findings located in its .tf, medians of {runs} runs:",
        size as f64 / 1e6
    );
    println!(
        "  {:8.1} ms wall, {:8.1} ms CPU, {:6.1} MB peak (target ≤ 1,000 ms and ≤ 200 MB: {})",
        m.wall_ms,
        m.cpu_ms,
        megabytes(m.peak_mib),
        verdict(m.wall_ms <= 1000.0 && megabytes(m.peak_mib) <= 200.0)
    );
    // The floor of reading the plan at all: jq selecting its GPU-relevant changes.
    let mut jq = Command::new("jq");
    jq.current_dir(&dir).args([
        "[.resource_changes[] | select(.type | test(\"node_pool|node_group|helm_release|config_map\"))] | length",
        "plan.json",
    ]);
    if Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let floor = medians(&(0..runs).map(|_| measure(&jq, 0, None)).collect::<Vec<_>>());
        println!(
            "  jq selecting the GPU-relevant changes alone: {:8.1} ms wall, {:6.1} MB peak (review: {:.2}× its time)",
            floor.wall_ms,
            megabytes(floor.peak_mib),
            m.wall_ms / floor.wall_ms
        );
    } else {
        println!("  (jq is not installed: no reading floor measured)");
    }
}
