//! The benchmark's static sample, as README's benchmark section describes it: one load of a
//! stack in a process of its own, after an untimed load of a one-resource stack, reporting the
//! time, the resource instances it evaluated and the process's peak memory.

use std::path::Path;
use std::process::{Command, Output};

fn stack(dir: &Path, resources: usize) {
    let mut text = String::new();
    for i in 0..resources {
        let content = if i == 0 {
            "\"seed\"".to_owned()
        } else {
            format!("local_file.f{}.id", i - 1)
        };
        text.push_str(&format!(
            "resource \"local_file\" \"f{i}\" {{\n  filename = \"f-{i}.txt\"\n  content  = {content}\n}}\n\n"
        ));
    }
    std::fs::create_dir_all(dir).expect("create the stack's directory");
    std::fs::write(dir.join("main.hcl"), text).expect("write the stack");
}

fn sample(warm: &Path, measured: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("--static-sample")
        .args([warm, measured])
        .output()
        .expect("run a static sample")
}

#[test]
fn a_static_sample_reports_the_load_it_timed_in_a_process_of_its_own() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (warm, measured) = (tmp.path().join("warm"), tmp.path().join("measured"));
    stack(&warm, 1);
    stack(&measured, 7);
    let output = sample(&warm, &measured);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [nanos, instances, peak] = fields[..] else {
        panic!("a static sample printed {text:?}");
    };
    assert!(nanos.parse::<u64>().expect("nanoseconds") > 0);
    assert_eq!(
        instances, "7",
        "the sample timed the measured stack, not the warm one"
    );
    let peak: f64 = peak.parse().expect("peak MiB");
    assert!(peak > 1.0, "peak memory {peak} MiB");
}

#[test]
fn a_static_sample_of_a_stack_with_errors_fails() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (warm, broken) = (tmp.path().join("warm"), tmp.path().join("broken"));
    stack(&warm, 1);
    std::fs::create_dir_all(&broken).expect("create the stack's directory");
    std::fs::write(
        broken.join("main.hcl"),
        "resource \"local_file\" \"f\" {\n  filename = \n}\n",
    )
    .expect("write the stack");
    let output = sample(&warm, &broken);
    assert!(!output.status.success(), "a stack with errors was timed");
}
