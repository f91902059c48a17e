//! Secrets at rest from the command line: files that reach a secret are kept out of saved
//! plans, `state pull` leaves out the digest key, and states and plans encrypted with a key
//! from a passphrase.

use base64::Engine as _;
use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_env(dir, args, &[])
}

fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, env);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

/// A private key of its own per call, so that no test can pass on another's text.
fn key_text(name: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let body: String = (0..8)
        .map(|_| {
            let random = std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish();
            format!("{random:016x}")
        })
        .collect();
    format!("-----BEGIN PRIVATE KEY-----\n{name}{body}\n-----END PRIVATE KEY-----\n")
}

/// Every form a file's text could take in a plan file or its JSON.
fn forms(text: &str) -> Vec<String> {
    let base64 = base64::engine::general_purpose::STANDARD.encode(text);
    let escaped = serde_json::Value::String(text.to_owned()).to_string();
    let line = text.lines().nth(1).unwrap_or_default().to_owned();
    vec![
        base64,
        escaped[1..escaped.len() - 1].to_owned(),
        line.clone(),
        line.to_uppercase(),
    ]
}

fn assert_absent(what: &str, haystack: &str, secret: &str) {
    for form in forms(secret) {
        assert!(
            !haystack.contains(&form),
            "{what} holds a secret file's text ({form}):\n{haystack}"
        );
    }
}

const LEAKY: &str = r#"locals {
  via_local = file("third.key")
}

resource "local_file" "wrapped" {
  filename = "out/tls.key.b64"
  content  = sensitive(filebase64("tls.key"))
}

resource "local_file" "encoded" {
  filename          = "out/other.key.b64"
  sensitive_content = base64encode(file("other.key"))
}

resource "local_file" "through_a_local" {
  filename          = "out/third.key.upper"
  sensitive_content = upper(local.via_local)
}

resource "local_file" "plain" {
  filename = "out/plain.txt"
  content  = file("plain.txt")
}
"#;

#[test]
fn a_file_that_reaches_a_secret_is_kept_out_of_the_saved_plan_and_read_again_at_apply() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), LEAKY).unwrap();
    let keys = [
        ("tls.key", key_text("tls")),
        ("other.key", key_text("other")),
        ("third.key", key_text("third")),
    ];
    for (name, text) in &keys {
        std::fs::write(d.join(name), text).unwrap();
    }
    std::fs::write(d.join("plain.txt"), "nothing secret here\n").unwrap();

    let (code, out, err) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let saved = std::fs::read_to_string(d.join("p.plan")).unwrap();
    let (code, json, err) = run(d, &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let (code, shown, err) = run(d, &["show", "p.plan"]);
    assert_eq!(code, 0, "{err}");
    let (code, shown_json, err) = run(d, &["show", "--json", "p.plan"]);
    assert_eq!(code, 0, "{err}");
    for (name, text) in &keys {
        assert_absent(&format!("the saved plan ({name})"), &saved, text);
        assert_absent("plan --json", &json, text);
        assert_absent("show", &shown, text);
        assert_absent("show --json", &shown_json, text);
        assert_absent("plan's output", &out, text);
    }
    // Only what reached a secret is kept as a digest: the plain file's text is the plan's.
    let plan: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let inputs = &plan["snapshot"]["inputs"];
    assert_eq!(
        inputs["plain.txt"]["content"], "nothing secret here\n",
        "{inputs}"
    );
    for (name, _) in &keys {
        assert!(
            inputs[name]["digest"]
                .as_str()
                .is_some_and(|d| d.starts_with("hmac-sha256:")),
            "{name} is not kept as a digest: {inputs}"
        );
    }

    // Applying reads the secret files again; the plain one comes from the plan.
    std::fs::write(d.join("plain.txt"), "changed since the plan\n").unwrap();
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
    assert_eq!(
        std::fs::read_to_string(d.join("out/tls.key.b64")).unwrap(),
        b64(&keys[0].1)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/other.key.b64")).unwrap(),
        b64(&keys[1].1)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/third.key.upper")).unwrap(),
        keys[2].1.to_uppercase()
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/plain.txt")).unwrap(),
        "nothing secret here\n"
    );
}

#[test]
fn a_saved_plan_whose_secret_file_changed_or_went_missing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), LEAKY).unwrap();
    for name in ["tls.key", "other.key", "third.key"] {
        std::fs::write(d.join(name), key_text(name)).unwrap();
    }
    std::fs::write(d.join("plain.txt"), "plain\n").unwrap();
    let (code, out, err) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");

    std::fs::write(d.join("tls.key"), key_text("rotated")).unwrap();
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("\"tls.key\" went into a secret") && err.contains("now differs"),
        "{err}"
    );
    std::fs::remove_file(d.join("tls.key")).unwrap();
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("but it is missing"), "{err}");
    assert!(
        !d.join("out").exists(),
        "a refused plan must change nothing"
    );
}

#[test]
fn an_impure_value_that_reaches_a_secret_is_kept_as_a_digest_and_made_again_only_if_it_can_be() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("keys")).unwrap();
    let keys = [key_text("a"), key_text("b")];
    std::fs::write(d.join("keys/a.key"), &keys[0]).unwrap();
    std::fs::write(d.join("keys/b.key"), &keys[1]).unwrap();
    let listed = r#"resource "local_file" "keys" {
  for_each          = fileset(".", "keys/*.key")
  filename          = "out/${each.value}"
  sensitive_content = file(each.value)
}
"#;
    let random = r#"resource "local_file" "token" {
  filename          = "out/token"
  sensitive_content = uuid()
}
"#;
    std::fs::write(d.join("main.hcl"), format!("{listed}\n{random}")).unwrap();
    let (code, out, err) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("p.plan")).unwrap()).unwrap();
    let inputs = plan["snapshot"]["inputs"].as_object().unwrap();
    assert!(!inputs.is_empty());
    for (key, record) in inputs {
        assert!(
            record.get("digest").is_some(),
            "{key} reached a secret but is kept whole: {record}"
        );
    }
    // A random value cannot be made again: refused before any change.
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("cannot make the same value again"), "{err}");
    assert!(
        !d.join("out").exists(),
        "a refused plan must change nothing"
    );

    // A listing of files is made again, and checked.
    std::fs::write(d.join("main.hcl"), listed).unwrap();
    let (code, out, err) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("out/keys/b.key")).unwrap(),
        keys[1]
    );
}

const TOKEN: &str = r#"resource "local_file" "token" {
  filename          = "out/token.txt"
  sensitive_content = "s3cr3t-t0ken-of-the-pull-test"
}

resource "local_file" "plain" {
  filename = "out/plain.txt"
  content  = "plain"
}
"#;

#[test]
fn state_pull_leaves_out_the_digest_key_and_a_pushed_pull_keeps_the_states_own() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), TOKEN).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join(".gpustack/state.json")).unwrap()).unwrap();
    let key = stored["digest_key"].as_str().unwrap().to_owned();

    let (code, pulled, err) = run(d, &["state", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !pulled.contains("digest_key") && !pulled.contains(&key),
        "state pull printed the digest key:\n{pulled}"
    );
    assert!(pulled.contains("hmac-sha256:"), "{pulled}");

    std::fs::write(d.join("pulled.json"), &pulled).unwrap();
    let (code, out, err) = run(d, &["state", "push", "pulled.json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("Warning"), "{err}");
    let pushed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join(".gpustack/state.json")).unwrap()).unwrap();
    assert_eq!(pushed["digest_key"].as_str(), Some(key.as_str()));
    // The digests still check: nothing to change.
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "{out}{err}");

    // Pushed where no state of its lineage is, it says what the missing key costs.
    std::fs::remove_file(d.join(".gpustack/state.json")).unwrap();
    let (code, out, err) = run(d, &["state", "push", "pulled.json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("has no digest key"), "{err}");
}
