//! Crash safety: SIGKILL at random moments while applying 200 objects. After every kill the
//! state parses and the lock the killed run held is gone with it (the next run starts at
//! once); after all of them one more apply converges with every object exactly once.

use gpustack_tests::{gpustack_bin, gpustack_env, stderr, stdout};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OBJECTS: usize = 200;
const TRIALS: usize = 20;

fn config(generation: usize) -> String {
    format!(
        "provider \"test\" {{\n  latency_ms = 2\n  world      = \"world.json\"\n}}\n\nresource \"test_object\" \"o\" {{\n  count = {OBJECTS}\n  name  = \"o${{count.index}}\"\n  value = \"generation-{generation}\"\n}}\n"
    )
}

/// A small deterministic generator, so failures reproduce from the printed seed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

#[test]
fn killed_applies_never_corrupt_state_and_the_next_apply_converges() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Lcg(seed);
    let mut killed_mid_apply = 0;
    for trial in 0..TRIALS {
        std::fs::write(d.join("main.hcl"), config(trial)).unwrap();
        let mut child = Command::new(gpustack_bin())
            .current_dir(d)
            .args(["apply", "--auto-approve"])
            .env("GPUSTACK_TEST_PROVIDER", "1")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_millis(20 + rng.next(400));
        let started = Instant::now();
        while started.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed_mid_apply += 1;
        }
        child.wait().unwrap();
        if let Ok(bytes) = std::fs::read(d.join(".gpustack/state.json")) {
            gpustack_state::State::decode(&bytes).unwrap_or_else(|e| {
                panic!("seed {seed} trial {trial}: state does not parse after SIGKILL: {e}")
            });
        }
    }
    assert!(
        killed_mid_apply >= TRIALS / 2,
        "seed {seed}: only {killed_mid_apply} kills landed during an apply"
    );

    let out = gpustack_env(
        d,
        &["apply", "--auto-approve"],
        &[("GPUSTACK_TEST_PROVIDER", "1")],
    );
    assert!(
        out.status.success(),
        "seed {seed}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    let plan = gpustack_env(
        d,
        &["plan", "--detailed-exitcode"],
        &[("GPUSTACK_TEST_PROVIDER", "1")],
    );
    assert_eq!(
        plan.status.code(),
        Some(0),
        "seed {seed}: not converged:\n{}",
        stdout(&plan)
    );

    let world: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("world.json")).unwrap()).unwrap();
    let objects = world.as_object().unwrap();
    assert_eq!(
        objects.len(),
        OBJECTS,
        "seed {seed}: duplicate or lost objects in the world"
    );
    assert!(
        objects
            .values()
            .all(|o| o["value"] == format!("generation-{}", TRIALS - 1))
    );
    let state =
        gpustack_state::State::decode(&std::fs::read(d.join(".gpustack/state.json")).unwrap())
            .unwrap();
    let mut addresses: Vec<&str> = state.resources.iter().map(|r| r.address.as_str()).collect();
    addresses.dedup();
    assert_eq!(
        addresses.len(),
        OBJECTS,
        "seed {seed}: duplicate or lost objects in the state"
    );
}
