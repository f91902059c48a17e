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

const PASSPHRASE: &str = "correct horse battery staple";

const ENCRYPTED: &str = r#"variable "passphrase" {
  type      = string
  sensitive = true
}

gpustack {
  encryption {
    key_provider "pbkdf2" "main" {
      passphrase = var.passphrase
    }
    method "aes_gcm" "main" {
      keys = key_provider.pbkdf2.main
    }
    state {
      method = method.aes_gcm.main
    }
    plan {
      method   = method.aes_gcm.main
      enforced = true
    }
  }
}
"#;

const OBJECTS: &str = r#"
resource "local_file" "token" {
  filename          = "out/token.txt"
  sensitive_content = "s3cr3t-t0ken-at-rest"
}

resource "local_file" "notes" {
  filename = "out/notes.txt"
  content  = "nothing secret"
}
"#;

fn with_passphrase(passphrase: &str) -> [(&'static str, &str); 1] {
    [("GPUSTACK_VAR_passphrase", passphrase)]
}

fn state_bytes(d: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(d.join(".gpustack/state.json")).unwrap()).into_owned()
}

/// Nothing of the stack is readable in an encrypted file: no object, no lineage, no digest.
fn assert_sealed(what: &str, text: &str) {
    assert!(
        text.starts_with("{\"gpustack_encryption\":1"),
        "{what} is not an envelope:\n{text}"
    );
    for clear in [
        "local_file",
        "token",
        "lineage",
        "hmac-sha256",
        "s3cr3t",
        "digest_key",
    ] {
        assert!(
            !text.contains(clear),
            "{what} shows {clear} in clear:\n{text}"
        );
    }
    assert!(!text.contains(PASSPHRASE), "{what} holds the passphrase");
}

#[test]
fn an_encrypted_state_reads_only_with_its_key_and_is_never_taken_for_empty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let key = with_passphrase(PASSPHRASE);
    let (code, out, err) = run_env(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run_env(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let sealed = state_bytes(d);
    assert_sealed("the state", &sealed);
    assert_sealed(
        "the state's backup",
        &String::from_utf8_lossy(&std::fs::read(d.join(".gpustack/state.json.backup")).unwrap()),
    );
    let (code, pulled, err) = run_env(d, &["state", "pull"], &key);
    assert_eq!(code, 0, "{err}");
    assert!(pulled.contains("\"local_file.token\""), "{pulled}");
    assert!(!pulled.contains("digest_key"), "{pulled}");
    // Pulled in clear, pushed back: written encrypted, its digest key kept.
    std::fs::write(d.join("pulled.json"), &pulled).unwrap();
    let (code, out, err) = run_env(d, &["state", "push", "pulled.json"], &key);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("Warning"), "{err}");
    let sealed = state_bytes(d);
    assert_sealed("the pushed state", &sealed);
    let (code, out, err) = run_env(d, &["plan", "--detailed-exitcode"], &key);
    assert_eq!(code, 0, "{out}{err}");

    // Without the key, with another, or with no encryption configured: an error that says
    // why, never a plan from an empty state, and the state as it was.
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("var.passphrase, which has no value") && err.contains("main.hcl:9"),
        "{err}"
    );
    let (code, out, err) = run_env(
        d,
        &["apply", "--auto-approve"],
        &with_passphrase("another passphrase, wrong"),
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("cannot decrypt the state"), "{err}");
    assert!(!out.contains("will be created"), "{out}");
    std::fs::write(d.join("main.hcl"), OBJECTS).unwrap();
    for args in [&["state", "pull"][..], &["plan"], &["state", "list"]] {
        let (code, out, err) = run(d, args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            err.contains("the state is encrypted (method aes_gcm.main, key provider pbkdf2.main), and no encryption is configured"),
            "{args:?}: {err}"
        );
        assert!(!out.contains("will be created"), "{out}");
    }
    assert_eq!(state_bytes(d), sealed, "a refused run changed the state");
}

#[test]
fn a_key_rotates_through_the_fallback_and_the_old_key_then_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let key = with_passphrase(PASSPHRASE);
    let (code, out, err) = run_env(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let new_key = r#"key_provider "pbkdf2" "next" {
  passphrase = "the passphrase of the next year"
}
method "aes_gcm" "next" {
  keys = key_provider.pbkdf2.next
}
"#;
    let rotating = format!(
        "{new_key}state {{\n  method = method.aes_gcm.next\n  fallback {{\n    method = method.aes_gcm.main\n  }}\n}}\n"
    );
    let rotated = format!("{new_key}state {{\n  method = method.aes_gcm.next\n}}\n");
    let env = |encryption: &str| {
        vec![
            ("GPUSTACK_VAR_passphrase", PASSPHRASE.to_owned()),
            ("GPUSTACK_ENCRYPTION", encryption.to_owned()),
        ]
    };
    let run_with = |args: &[&str], encryption: &str| {
        let env = env(encryption);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_env(d, args, &env)
    };
    // The new key alone cannot read what the old one wrote.
    let (code, _, err) = run_with(&["state", "list"], &rotated);
    assert_eq!(code, 1);
    assert!(err.contains("cannot decrypt the state"), "{err}");
    // With the old key as fallback, the first apply writes it with the new one, changes or not.
    let (code, out, err) = run_with(&["apply", "--auto-approve"], &rotating);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("now encrypted with method.aes_gcm.next"),
        "{err}"
    );
    assert!(state_bytes(d).contains("\"key_provider\":\"pbkdf2.next\""));
    let (code, list, err) = run_with(&["state", "list"], &rotated);
    assert_eq!(code, 0, "{err}");
    assert!(list.contains("local_file.token"), "{list}");
    // The old key no longer reads it.
    let (code, _, err) = run_env(d, &["state", "list"], &key);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "cannot decrypt the state (written with method aes_gcm.next, key provider pbkdf2.next)"
        ),
        "{err}"
    );
}

#[test]
fn a_state_in_clear_is_encrypted_only_through_an_unencrypted_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), OBJECTS).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let clear = state_bytes(d);
    assert!(clear.contains("local_file.token"));

    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let key = with_passphrase(PASSPHRASE);
    let (code, out, err) = run_env(d, &["plan"], &key);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("the state is not encrypted") && err.contains("method.unencrypted"),
        "{err}"
    );
    assert_eq!(state_bytes(d), clear);

    let migrating = format!("{ENCRYPTED}{OBJECTS}").replace(
        "    state {\n      method = method.aes_gcm.main\n    }",
        "    method \"unencrypted\" \"migrate\" {}\n    state {\n      method = method.aes_gcm.main\n      fallback {\n        method = method.unencrypted.migrate\n      }\n    }",
    );
    assert_ne!(migrating, format!("{ENCRYPTED}{OBJECTS}"));
    std::fs::write(d.join("main.hcl"), &migrating).unwrap();
    let (code, out, err) = run_env(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    assert_sealed("the migrated state", &state_bytes(d));
    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let (code, out, err) = run_env(d, &["plan", "--detailed-exitcode"], &key);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn an_encrypted_plan_file_holds_nothing_in_clear_and_applies_only_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let key = with_passphrase(PASSPHRASE);
    let (code, out, err) = run_env(d, &["plan", "--out", "p.plan"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let sealed = String::from_utf8_lossy(&std::fs::read(d.join("p.plan")).unwrap()).into_owned();
    assert_sealed("the plan file", &sealed);
    assert!(!sealed.contains("nothing secret"), "{sealed}");

    let (code, _, err) = run(d, &["show", "p.plan"]);
    assert_eq!(code, 1);
    assert!(err.contains("var.passphrase"), "{err}");
    let (code, shown, err) = run_env(d, &["show", "p.plan"], &key);
    assert_eq!(code, 0, "{err}");
    assert!(
        shown.contains("local_file.token will be created"),
        "{shown}"
    );
    let (code, _, err) = run_env(
        d,
        &["apply", "p.plan"],
        &with_passphrase("another passphrase, wrong"),
    );
    assert_eq!(code, 1);
    assert!(err.contains("cannot decrypt the plan"), "{err}");
    assert!(!d.join("out").exists());
    let (code, out, err) = run_env(d, &["apply", "p.plan"], &key);
    assert_eq!(code, 0, "{out}{err}");
    assert!(d.join("out/token.txt").exists());

    // Plans are encrypted and enforced: the same plan decrypted and saved in clear is refused.
    let (code, out, err) = run_env(d, &["plan", "--out", "next.plan"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let config = gpustack_state::EncryptionConfig {
        key_providers: [(
            "pbkdf2.main".to_owned(),
            gpustack_state::encryption::KeyProviderConfig::Pbkdf2(
                gpustack_state::encryption::Pbkdf2Config::new(
                    gpustack_state::encryption::Passphrase::new(PASSPHRASE.to_owned()),
                ),
            ),
        )]
        .into_iter()
        .collect(),
        methods: [(
            "aes_gcm.main".to_owned(),
            gpustack_state::encryption::MethodConfig::AesGcm {
                keys: "pbkdf2.main".to_owned(),
            },
        )]
        .into_iter()
        .collect(),
        state: None,
        plan: Some(gpustack_state::encryption::TargetConfig {
            method: "aes_gcm.main".to_owned(),
            fallback: None,
            enforced: true,
        }),
    };
    let plans = gpustack_state::Encryptions::new(&config, &|_, _| Err("none".into())).unwrap();
    let clear = futures::executor::block_on(
        plans
            .plan
            .open(&std::fs::read(d.join("next.plan")).unwrap()),
    )
    .unwrap();
    std::fs::write(d.join("clear.plan"), clear).unwrap();
    let (code, out, err) = run_env(d, &["apply", "clear.plan"], &key);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("the plan is not encrypted"), "{err}");
    let (code, out, err) = run_env(d, &["apply", "next.plan"], &key);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn encryption_configuration_errors_point_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let broken = ENCRYPTED
        .replace(
            "keys = key_provider.pbkdf2.main",
            "keys = key_provider.pbkdf2.mian",
        )
        .replace("key_provider \"pbkdf2\"", "key_provider \"pbkfd2\"");
    std::fs::write(d.join("main.hcl"), format!("{broken}{OBJECTS}")).unwrap();
    let (code, out, err) = run(d, &["validate"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Unknown key_provider type") && err.contains("main.hcl:8"),
        "{err}"
    );
    assert!(err.contains("Did you mean \"pbkdf2\"?"), "{err}");
    // The passphrase is on the line after the mistake: the excerpt would show it.
    assert!(!err.contains("passphrase"), "{err}");
    assert!(
        err.contains("Reference to undeclared key provider") && err.contains("main.hcl:12"),
        "{err}"
    );
    // One mistake, one error: what refers to the method it broke says nothing more.
    assert!(err.contains("2 errors found"), "{err}");

    std::fs::write(d.join("main.hcl"), format!("{ENCRYPTED}{OBJECTS}")).unwrap();
    let environment = "key_provider \"pbkdf2\" \"main\" {\n  passphrase = \"hunter22\"\n}\n\nmethod \"aes_gcm\" \"main\" {\n  keys = key_provider.pbkdf2.main\n}\n";
    let (code, out, err) = run_env(d, &["plan"], &[("GPUSTACK_ENCRYPTION", environment)]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Passphrase too short") && err.contains("GPUSTACK_ENCRYPTION:2"),
        "{err}"
    );
    assert!(
        !err.contains("hunter22"),
        "the passphrase was quoted: {err}"
    );
}

#[test]
fn a_passphrase_reaches_no_plan_and_only_a_sensitive_variable_may_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // States encrypted, plans not: the plan file is readable, and holds no passphrase.
    let states_only = ENCRYPTED.replace(
        "    plan {\n      method   = method.aes_gcm.main\n      enforced = true\n    }\n",
        "",
    );
    assert_ne!(states_only, ENCRYPTED);
    std::fs::write(
        d.join("main.hcl"),
        format!(
            "{}{OBJECTS}",
            states_only.replace("  sensitive = true\n", "")
        ),
    )
    .unwrap();
    let (code, out, err) = run_env(d, &["validate"], &with_passphrase(PASSPHRASE));
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Variable must be sensitive") && err.contains("main.hcl:8"),
        "{err}"
    );

    std::fs::write(d.join("main.hcl"), format!("{states_only}{OBJECTS}")).unwrap();
    let from_environment =
        "key_provider \"pbkdf2\" \"main\" {\n  passphrase = \"a passphrase given in CI only\"\n}\n";
    for env in [
        vec![("GPUSTACK_VAR_passphrase", PASSPHRASE)],
        vec![
            (
                "GPUSTACK_VAR_passphrase",
                "a value the environment's key replaces",
            ),
            ("GPUSTACK_ENCRYPTION", from_environment),
        ],
    ] {
        let _ = std::fs::remove_dir_all(d.join(".gpustack"));
        let _ = std::fs::remove_dir_all(d.join("out"));
        let (code, out, err) = run_env(d, &["plan", "--out", "p.plan"], &env);
        assert_eq!(code, 0, "{out}{err}");
        let saved = std::fs::read_to_string(d.join("p.plan")).unwrap();
        assert!(
            saved.contains("\"snapshot\""),
            "plans are not encrypted here"
        );
        for secret in [
            PASSPHRASE,
            "a passphrase given in CI only",
            "GPUSTACK_ENCRYPTION",
        ] {
            assert!(!saved.contains(secret), "the plan holds {secret}:\n{saved}");
            assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
        }
        let (code, out, err) = run_env(d, &["apply", "p.plan"], &env);
        assert_eq!(code, 0, "{out}{err}");
        assert_sealed("the state", &state_bytes(d));
    }
}
