//! hashicorp/tls: keys, a CA, a request signed by it and a self-signed certificate made when
//! the plan is made, as the plan shows them; certificates a TLS verifier (webpki) accepts;
//! the public key and certificate data sources; a second plan is empty.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack(dir, args);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

const STACK: &str = r#"variable "server" {
  type = string
}

resource "tls_private_key" "ca" {
  algorithm   = "ECDSA"
  ecdsa_curve = "P384"
}

resource "tls_self_signed_cert" "ca" {
  private_key_pem       = tls_private_key.ca.private_key_pem
  is_ca_certificate     = true
  validity_period_hours = 87600
  allowed_uses          = ["cert_signing", "crl_signing"]

  subject {
    common_name  = "GPU webhook CA"
    organization = "Example, Inc"
  }
}

resource "tls_private_key" "webhook" {
  algorithm = "RSA"
}

resource "tls_cert_request" "webhook" {
  private_key_pem = tls_private_key.webhook.private_key_pem
  dns_names       = ["webhook.gpu-operator.svc"]
  ip_addresses    = ["10.0.0.1"]

  subject {
    common_name = "webhook"
  }
}

resource "tls_locally_signed_cert" "webhook" {
  cert_request_pem      = tls_cert_request.webhook.cert_request_pem
  ca_private_key_pem    = tls_private_key.ca.private_key_pem
  ca_cert_pem           = tls_self_signed_cert.ca.cert_pem
  validity_period_hours = 8760
  allowed_uses          = ["digital_signature", "key_encipherment", "server_auth"]
}

resource "tls_private_key" "ssh" {
  algorithm = "ED25519"
}

data "tls_public_key" "ssh" {
  private_key_openssh = tls_private_key.ssh.private_key_openssh
}

data "tls_certificate" "ca" {
  content = tls_self_signed_cert.ca.cert_pem
}

data "tls_certificate" "server" {
  url          = var.server
  verify_chain = false
}

output "ca" {
  value = tls_self_signed_cert.ca.cert_pem
}

output "webhook" {
  value = tls_locally_signed_cert.webhook.cert_pem
}

output "same_key" {
  value = data.tls_public_key.ssh.id == tls_private_key.ssh.id
}

output "ssh" {
  value = tls_private_key.ssh.public_key_openssh
}

output "ca_subject" {
  value = data.tls_certificate.ca.certificates[0].subject
}

output "server_subject" {
  value = data.tls_certificate.server.certificates[0].subject
}
"#;

/// A TLS server on a free local port presenting a certificate for `served.example`; serves
/// until the process ends.
fn tls_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["served.example".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "served.example");
    let cert = params.self_signed(&key).unwrap();
    gpustack_connect_ring();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
    let config = std::sync::Arc::new(config);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(mut connection) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let _ = connection.complete_io(&mut stream);
        }
    });
    format!("tls://{address}")
}

fn gpustack_connect_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn pem_der(text: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

#[test]
fn keys_and_certificates_are_made_at_plan_verify_and_replan_empty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.tf"), STACK).unwrap();
    let server = tls_server();
    let var = format!("server={server}");
    let (code, plan, err) = run(d, &["plan", "-out=p.plan", "-no-color", "-var", &var]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(plan.contains("Plan: 6 to add"), "{plan}");
    assert!(
        !plan.contains("BEGIN EC PRIVATE KEY"),
        "a key in the plan:\n{plan}"
    );
    let (code, out, err) = run(d, &["apply", "-no-color", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");

    // The certificates apply recorded are the ones the plan showed.
    let (_, ca, _) = run(d, &["output", "-raw", "ca"]);
    let (_, webhook, _) = run(d, &["output", "-raw", "webhook"]);
    let first_line = |pem: &str| pem.lines().nth(1).unwrap().to_owned();
    assert!(plan.contains(&first_line(&ca)), "{plan}");
    assert!(plan.contains(&first_line(&webhook)), "{plan}");

    // webpki accepts the webhook's certificate for its name, issued by the CA.
    let ca_der = rustls::pki_types::CertificateDer::from(pem_der(&ca));
    let anchor = webpki::anchor_from_trusted_cert(&ca_der).unwrap();
    let leaf_der = rustls::pki_types::CertificateDer::from(pem_der(&webhook));
    let leaf = webpki::EndEntityCert::try_from(&leaf_der).unwrap();
    let now = rustls::pki_types::UnixTime::now();
    leaf.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        now,
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .expect("the CA signed the webhook's certificate");
    let name = rustls::pki_types::ServerName::try_from("webhook.gpu-operator.svc").unwrap();
    leaf.verify_is_valid_for_subject_name(&name).unwrap();
    let ip = rustls::pki_types::ServerName::try_from("10.0.0.1").unwrap();
    leaf.verify_is_valid_for_subject_name(&ip).unwrap();

    let (_, same, _) = run(d, &["output", "-raw", "same_key"]);
    assert_eq!(same, "true");
    let (_, ssh, _) = run(d, &["output", "-raw", "ssh"]);
    assert!(
        ssh.starts_with("ssh-ed25519 AAAA") && ssh.ends_with('\n'),
        "{ssh:?}"
    );
    let (_, subject, _) = run(d, &["output", "-raw", "ca_subject"]);
    assert_eq!(subject, "CN=GPU webhook CA,O=Example\\, Inc");
    let (_, subject, _) = run(d, &["output", "-raw", "server_subject"]);
    assert_eq!(subject, "CN=served.example");

    // Keys are secrets: in no plan file, output or state but as digests.
    let plan_file = String::from_utf8_lossy(&std::fs::read(d.join("p.plan")).unwrap()).into_owned();
    assert!(
        !plan_file.contains("PRIVATE KEY-----"),
        "a key in the plan file"
    );
    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert!(!state.contains("PRIVATE KEY-----"), "a key in the state");

    let (code, out, err) = run(
        d,
        &["plan", "-detailed-exitcode", "-no-color", "-var", &var],
    );
    assert_eq!(code, 0, "a second plan is empty: {out}{err}");

    let (code, out, err) = run(d, &["destroy", "-auto-approve", "-no-color", "-var", &var]);
    assert_eq!(code, 0, "{out}{err}");
}

/// What the provider refuses, at its line: an algorithm it does not have, a use it does not
/// know, a CA without a subject, a proxy.
#[test]
fn what_the_provider_refuses_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"resource "tls_private_key" "k" {
  algorithm = "DSA"
}

resource "tls_self_signed_cert" "c" {
  private_key_pem       = "x"
  validity_period_hours = 1
  allowed_uses          = ["server_auth", "world_domination"]
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["validate", "-no-color"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("\"DSA\" is not one of \"RSA\", \"ECDSA\", \"ED25519\""),
        "{err}"
    );
    assert!(err.contains("main.tf:2"), "{err}");
    assert!(
        err.contains("\"world_domination\" is not one of the uses"),
        "{err}"
    );

    std::fs::write(
        d.join("main.tf"),
        r#"resource "tls_private_key" "k" {
  algorithm = "ED25519"
}

resource "tls_self_signed_cert" "c" {
  private_key_pem       = tls_private_key.k.private_key_pem
  validity_period_hours = 1
  is_ca_certificate     = true
  allowed_uses          = ["cert_signing"]
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan", "-out=p.plan", "-no-color"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Must contain at least one Distinguished Name"),
        "{err}"
    );

    // A proxy the reads would not go through is refused, not ignored.
    std::fs::write(
        d.join("main.tf"),
        "provider \"tls\" {\n  proxy {\n    url = \"http://proxy:3128\"\n  }\n}\n\nresource \"tls_private_key\" \"k\" {\n  algorithm = \"ED25519\"\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan", "-no-color"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Proxy not honoured"), "{err}");
}
