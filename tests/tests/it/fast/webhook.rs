//! `drift --webhook URL`: one POST when drift appears, changes or goes away, none while it
//! stays the same; a failed POST fails the run and is retried by the next one. The receiver
//! is a small HTTP server in this test; drift is made by editing the test provider's world.

use gpustack_tests::receiver::receiver;
use gpustack_tests::{gpustack_env, stderr};
use std::path::Path;

const ENV: &[(&str, &str)] = &[("GPUSTACK_TEST_PROVIDER", "1")];

const STACK: &str = r#"provider "test" {
  world = "world.json"
}

resource "test_object" "pool" {
  name  = "pool"
  value = "replicas: 10"
}
"#;

fn drift(dir: &Path, url: &str) -> (i32, String) {
    let out = gpustack_env(dir, &["drift", "--webhook", url], ENV);
    (out.status.code().unwrap(), stderr(&out))
}

fn set_world_value(dir: &Path, value: &str) {
    let path = dir.join("world.json");
    let mut world: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    world["pool"]["value"] = value.into();
    std::fs::write(&path, world.to_string()).unwrap();
}

#[test]
fn drift_is_posted_when_it_appears_changes_and_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), STACK).unwrap();
    assert!(
        gpustack_env(d, &["apply", "--auto-approve"], ENV)
            .status
            .success()
    );
    let hook = receiver();
    let posted = || hook.bodies.lock().unwrap().clone();

    assert_eq!(drift(d, &hook.url).0, 0);
    assert!(posted().is_empty(), "posted without drift: {:?}", posted());

    set_world_value(d, "replicas: 4");
    assert_eq!(drift(d, &hook.url).0, 2);
    assert_eq!(posted().len(), 1);
    assert_eq!(posted()[0]["event"], "drift_detected");
    assert_eq!(
        posted()[0]["drifted"],
        serde_json::json!(["test_object.pool"])
    );
    assert_eq!(posted()[0]["report"]["drift_count"], 1);

    // The same drift again: nothing new to say.
    assert_eq!(drift(d, &hook.url).0, 2);
    assert_eq!(posted().len(), 1);

    // The receiver is down: the run fails without showing the URL's secret path, and the
    // next run posts what this one could not.
    set_world_value(d, "replicas: 2");
    *hook.status.lock().unwrap() = 500;
    let (code, message) = drift(d, &hook.url);
    assert_eq!(code, 1, "{message}");
    assert!(message.contains("the next run tries again"), "{message}");
    assert!(!message.contains("secret-token"), "{message}");
    *hook.status.lock().unwrap() = 200;
    assert_eq!(drift(d, &hook.url).0, 2);
    assert_eq!(posted().len(), 2);
    assert_eq!(posted()[1]["event"], "drift_changed");

    // Back to the configuration: resolved, once.
    assert!(
        gpustack_env(d, &["apply", "--auto-approve"], ENV)
            .status
            .success()
    );
    assert_eq!(drift(d, &hook.url).0, 0);
    assert_eq!(posted().len(), 3);
    assert_eq!(posted()[2]["event"], "drift_resolved");
    assert_eq!(
        posted()[2]["previously_drifted"],
        serde_json::json!(["test_object.pool"])
    );
    assert_eq!(drift(d, &hook.url).0, 0);
    assert_eq!(posted().len(), 3);
}
