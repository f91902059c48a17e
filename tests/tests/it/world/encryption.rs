//! Encrypted states in remote backends: on s3 under an AWS KMS key (moto serves both), moved
//! there from a local state in clear; in a kubernetes Secret under a passphrase.

use base64::Engine as _;
use gpustack_tests::cluster::TestCluster;
use gpustack_tests::moto::Moto;
use gpustack_tests::{gpustack_env, stderr, stdout};
use std::path::Path;

const OBJECTS: &str = r#"
resource "local_file" "token" {
  filename          = "out/token.txt"
  sensitive_content = "s3cr3t-t0ken-in-a-remote-state"
}

resource "local_file" "notes" {
  filename = "out/notes.txt"
  content  = "NOTES"
}
"#;

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = gpustack_env(dir, args, env);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

/// Nothing of the stack is readable in the stored state: no object, lineage or digest.
fn assert_sealed(what: &str, text: &str, key_provider: &str) {
    assert!(
        text.starts_with("{\"gpustack_encryption\":1"),
        "{what} is not an envelope:\n{text}"
    );
    assert!(
        text.contains(&format!("\"key_provider\":\"{key_provider}\"")),
        "{what}: {text}"
    );
    for clear in ["local_file", "lineage", "hmac-sha256", "s3cr3t", "NOTES"] {
        assert!(
            !text.contains(clear),
            "{what} shows {clear} in clear:\n{text}"
        );
    }
}

#[test]
fn a_state_moved_to_s3_under_a_kms_key_reads_only_through_that_key() {
    // The state's store and the key's service apart, so that the key can go while the state
    // stays reachable.
    let moto = Moto::start(&format!("sealed-s3-{}", std::process::id()));
    moto.boto3(r#"boto3.client("s3", **kw).create_bucket(Bucket="sealed")"#);
    let kms = Moto::start(&format!("sealed-kms-{}", std::process::id()));
    let key_id = kms
        .boto3(r#"print(boto3.client("kms", **kw).create_key(Description="gpustack state")["KeyMetadata"]["KeyId"])"#)
        .trim()
        .to_owned();
    let env: Vec<(&str, String)> = moto.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // A local state in clear first.
    std::fs::write(d.join("main.hcl"), OBJECTS).unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"], &env);
    assert_eq!(code, 0, "{out}{err}");

    let backend = format!(
        "  backend \"s3\" {{\n    bucket         = \"sealed\"\n    key            = \"prod/state.json\"\n    region         = \"us-east-1\"\n    endpoint       = \"{}\"\n    use_path_style = true\n  }}\n",
        moto.endpoint
    );
    let encryption = |fallback: bool| {
        format!(
            r#"  encryption {{
    key_provider "aws_kms" "main" {{
      kms_key_id = "{key_id}"
      key_spec   = "AES_256"
      region     = "us-east-1"
      endpoint   = "{endpoint}"
    }}
    method "aes_gcm" "main" {{
      keys = key_provider.aws_kms.main
    }}
    method "unencrypted" "migrate" {{}}
    state {{
      method = method.aes_gcm.main
{fallback}    }}
  }}
"#,
            endpoint = kms.endpoint,
            fallback = if fallback {
                "      fallback {\n        method = method.unencrypted.migrate\n      }\n"
            } else {
                ""
            }
        )
    };
    let stack = |encrypted: Option<bool>| {
        let encryption = encrypted.map(encryption).unwrap_or_default();
        format!("gpustack {{\n{backend}{encryption}}}\n{OBJECTS}")
    };
    let stored = || {
        moto.boto3(
            r#"import sys
sys.stdout.write(boto3.client("s3", **kw).get_object(Bucket="sealed", Key="prod/state.json")["Body"].read().decode())"#,
        )
    };

    // Moving the state in clear into an encrypting backend needs the unencrypted fallback.
    std::fs::write(d.join("main.hcl"), stack(Some(false))).unwrap();
    let (code, out, err) = run(d, &["init", "--migrate-state"], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("the state is not encrypted"), "{err}");
    std::fs::write(d.join("main.hcl"), stack(Some(true))).unwrap();
    let (code, out, err) = run(d, &["init", "--migrate-state"], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Copied the state"), "{out}");
    let sealed = stored();
    assert_sealed("the s3 object", &sealed, "aws_kms.main");
    let envelope: serde_json::Value = serde_json::from_str(&sealed).unwrap();
    assert_eq!(envelope["key_meta"]["kms_key_id"], key_id.as_str());
    let blob = base64::engine::general_purpose::STANDARD
        .decode(envelope["key_meta"]["ciphertext_blob"].as_str().unwrap())
        .unwrap();
    assert!(
        blob.len() > 32,
        "the data key is kept as the KMS encrypted it"
    );

    std::fs::write(d.join("main.hcl"), stack(Some(false))).unwrap();
    let (code, pulled, err) = run(d, &["state", "pull"], &env);
    assert_eq!(code, 0, "{err}");
    assert!(pulled.contains("\"local_file.token\""), "{pulled}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"], &env);
    assert_eq!(code, 0, "{out}{err}");

    // A change is written encrypted too.
    std::fs::write(
        d.join("main.hcl"),
        stack(Some(false)).replace("\"NOTES\"", "\"NOTES, v2\""),
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "--auto-approve"], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert_sealed("the s3 object after an apply", &stored(), "aws_kms.main");

    // Without the key: refused, and said why; without the KMS, too.
    std::fs::write(
        d.join("main.hcl"),
        format!("gpustack {{\n{backend}}}\n{OBJECTS}"),
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan"], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("the state is encrypted (method aes_gcm.main, key provider aws_kms.main)"),
        "{err}"
    );
    assert!(!out.contains("will be created"), "{out}");
    std::fs::write(
        d.join("main.hcl"),
        stack(Some(false)).replace("\"NOTES\"", "\"NOTES, v2\""),
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"], &env);
    assert_eq!(code, 0, "{out}{err}");
    drop(kms);
    let (code, out, err) = run(d, &["plan"], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("cannot decrypt the state") && err.contains("Decrypt failed"),
        "{err}"
    );
    assert!(!out.contains("will be created"), "{out}");
}

#[test]
fn a_kubernetes_state_under_a_passphrase_is_an_envelope_in_its_secret() {
    let cluster = TestCluster::start("gpustack-tests", "GPUSTACK_TEST_KUBECONFIG");
    let namespace = format!("sealed-{}", std::process::id());
    cluster.kubectl_ok(&["create", "namespace", &namespace]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stack = format!(
        r#"variable "passphrase" {{
  type      = string
  sensitive = true
}}

gpustack {{
  backend "kubernetes" {{
    namespace     = "{namespace}"
    secret_suffix = "sealed"
    config_path   = "{kubeconfig}"
  }}
  encryption {{
    key_provider "pbkdf2" "main" {{
      passphrase = var.passphrase
    }}
    method "aes_gcm" "main" {{
      keys = key_provider.pbkdf2.main
    }}
    state {{
      method   = method.aes_gcm.main
      enforced = true
    }}
  }}
}}
{OBJECTS}"#,
        kubeconfig = cluster.kubeconfig.display()
    );
    std::fs::write(d.join("main.hcl"), stack).unwrap();
    let key = [("GPUSTACK_VAR_passphrase", "a passphrase for the cluster")];
    let (code, out, err) = run(d, &["apply", "--auto-approve"], &key);
    assert_eq!(code, 0, "{out}{err}");
    let data = cluster.kubectl_ok(&[
        "get",
        "secret",
        "gpustack-state-sealed",
        "-n",
        &namespace,
        "-o",
        "jsonpath={.data.state}",
    ]);
    let stored = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .unwrap();
    assert_sealed(
        "the state Secret",
        &String::from_utf8_lossy(&stored),
        "pbkdf2.main",
    );
    let (code, list, err) = run(d, &["state", "list"], &key);
    assert_eq!(code, 0, "{err}");
    assert!(list.contains("local_file.token"), "{list}");
    let (code, _, err) = run(
        d,
        &["state", "list"],
        &[("GPUSTACK_VAR_passphrase", "not the passphrase of it")],
    );
    assert_eq!(code, 1);
    assert!(err.contains("cannot decrypt the state"), "{err}");
    let _ = cluster.kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}
