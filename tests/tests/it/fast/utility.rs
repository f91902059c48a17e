//! The utility providers a Terraform stack also uses (`random`, `null`, `time`): what the
//! plan shows is what apply records, a saved plan applies exactly, and a second plan is empty.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack(dir, args);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

const STACK: &str = r#"variable "rotation" {
  type    = string
  default = "1"
}

resource "random_password" "db" {
  length      = 24
  min_special = 2
  keepers     = { rotation = var.rotation }
}

resource "random_pet" "name" {
  length = 3
}

resource "random_id" "suffix" {
  byte_length = 4
  prefix      = "gpu-"
}

resource "random_integer" "port" {
  min  = 30000
  max  = 32767
  seed = "fixed"
}

resource "null_resource" "rotated" {
  triggers = { hash = random_password.db.bcrypt_hash }
}

resource "time_static" "made" {}

resource "time_offset" "expiry" {
  offset_days = 30
}

resource "time_sleep" "settle" {
  create_duration = "1s"
  depends_on      = [null_resource.rotated]
}

output "pet" {
  value = random_pet.name.id
}

output "suffix" {
  value = random_id.suffix.hex
}

output "port" {
  value = random_integer.port.result
}

output "expiry" {
  value = time_offset.expiry.rfc3339
}

output "password" {
  value     = random_password.db.result
  sensitive = true
}
"#;

fn planned_output(plan: &str, name: &str) -> String {
    plan.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("+ {name} = ")))
        .unwrap_or_else(|| panic!("no output {name} in:\n{plan}"))
        .to_owned()
}

#[test]
fn random_null_and_time_apply_as_planned_and_replan_empty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.tf"), STACK).unwrap();
    let (code, plan, err) = run(d, &["plan", "-out=p.plan", "-no-color"]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(plan.contains("Plan: 8 to add"), "{plan}");
    let (code, out, err) = run(d, &["apply", "-no-color", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    // What the plan showed is what apply recorded.
    for name in ["pet", "suffix", "port", "expiry"] {
        let (code, value, err) = run(d, &["output", "-json", name]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(value.trim(), planned_output(&plan, name), "{name}");
    }
    let (_, pet, _) = run(d, &["output", "-raw", "pet"]);
    assert_eq!(pet.split('-').count(), 3, "{pet}");
    // The password is in no plan file and no output, only as a digest in the state.
    let (_, state, _) = run(d, &["state", "show", "random_password.db"]);
    assert!(state.contains("(sensitive value)"), "{state}");
    let plan_file = std::fs::read(d.join("p.plan")).unwrap();
    assert!(!String::from_utf8_lossy(&plan_file).contains("\"result\":\""));
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(code, 0, "a second plan is empty: {out}{err}");
    // A keeper's change makes a new password, and what it triggers follows.
    let (code, out, err) = run(
        d,
        &[
            "plan",
            "-var",
            "rotation=2",
            "-detailed-exitcode",
            "-no-color",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("random_password.db must be replaced"), "{out}");
    assert!(
        out.contains("null_resource.rotated must be replaced"),
        "{out}"
    );
    // A seed argument alone decides the value.
    let (_, port, _) = run(d, &["output", "-raw", "port"]);
    let again = tempfile::tempdir().unwrap();
    std::fs::write(again.path().join("main.tf"), STACK).unwrap();
    let (code, out, err) = run(again.path(), &["apply", "-auto-approve"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, other_port, _) = run(again.path(), &["output", "-raw", "port"]);
    let (_, other_pet, _) = run(again.path(), &["output", "-raw", "pet"]);
    assert_eq!(port, other_port);
    assert_ne!(pet, other_pet, "another stack's state, another seed");
    let (code, out, err) = run(d, &["destroy", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("8 destroyed"), "{out}");
}

/// A server on a free local port answering each request by its path: `/manifest.yaml` a YAML
/// manifest, `/echo` the request's method, `X-Token` header and body, `/flaky` 503 on the first
/// request and the text afterwards. Serves `requests` requests, then stops.
fn http_server(requests: usize) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut flaky_seen = false;
        for stream in listener.incoming().take(requests) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let (method, path) = (
                parts.next().unwrap_or_default().to_owned(),
                parts.next().unwrap_or_default().to_owned(),
            );
            let (mut length, mut token) = (0usize, String::new());
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap_or_default();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "x-token" => token = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let (status, content_type, answer) = match path.as_str() {
                "/manifest.yaml" => (
                    "200 OK",
                    "application/yaml",
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n".to_owned(),
                ),
                "/echo" => (
                    "201 Created",
                    "text/plain",
                    format!("{method} {token} {}", String::from_utf8_lossy(&body)),
                ),
                "/flaky" if !flaky_seen => {
                    flaky_seen = true;
                    ("503 Service Unavailable", "text/plain", "later".to_owned())
                }
                "/flaky" => ("200 OK", "text/plain", "now".to_owned()),
                _ => ("404 Not Found", "text/plain", "no".to_owned()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (base, handle)
}

/// `data "http"` as hashicorp/http reads it, when the plan is made: the body, status and
/// headers; a POST with headers and a body; retries of a 503; a 404 is no error.
#[test]
fn data_http_reads_at_plan_with_retries_and_no_error_for_a_404() {
    let (base, server) = http_server(5);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        format!(
            r#"data "http" "manifest" {{
  url = "{base}/manifest.yaml"
}}

data "http" "echo" {{
  url             = "{base}/echo"
  method          = "POST"
  request_headers = {{ X-Token = "t0k" }}
  request_body    = "hello"
}}

data "http" "flaky" {{
  url = "{base}/flaky"
  retry {{
    attempts     = 2
    min_delay_ms = 10
  }}
}}

data "http" "missing" {{
  url = "{base}/missing"
}}

output "kind" {{
  value = yamldecode(data.http.manifest.response_body).kind
}}

output "type" {{
  value = data.http.manifest.response_headers["Content-Type"]
}}

output "echo" {{
  value = "${{data.http.echo.status_code}} ${{data.http.echo.response_body}}"
}}

output "flaky" {{
  value = data.http.flaky.response_body
}}

output "missing" {{
  value = data.http.missing.status_code
}}
"#
        ),
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    server.join().unwrap();
    let output = |name: &str| run(d, &["output", "-raw", name]).1;
    assert_eq!(output("kind"), "Namespace");
    assert_eq!(output("type"), "application/yaml");
    assert_eq!(output("echo"), "201 POST t0k hello");
    assert_eq!(output("flaky"), "now");
    assert_eq!(output("missing"), "404");
}

/// A secret a provider drew from the plan's seed is kept in the state only as a digest, and
/// drawn again when a later plan or apply needs its value: a file replaced for another reason
/// gets the same password, not its digest.
#[test]
fn a_drawn_secret_reaches_a_replacement_made_by_a_later_apply() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("main.tf"),
        r#"variable "mode" {
  type    = string
  default = "0600"
}

resource "random_password" "p" {
  length = 16
}

resource "local_file" "f" {
  filename          = "p.txt"
  sensitive_content = random_password.p.result
  file_permission   = var.mode
}
"#,
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "-auto-approve", "-no-color"]);
    assert_eq!(code, 0, "{out}{err}");
    let first = std::fs::read_to_string(d.join("p.txt")).unwrap();
    assert_eq!(first.len(), 16, "{first}");
    let state = std::fs::read_to_string(d.join(".gpustack/state.json")).unwrap();
    assert!(!state.contains(&first), "the password is in the state");
    for (var, how) in [("mode=0640", "apply"), ("mode=0644", "plan file")] {
        let (code, out, err) = if how == "apply" {
            run(d, &["apply", "-auto-approve", "-no-color", "-var", var])
        } else {
            let (code, out, err) = run(d, &["plan", "-out=p.plan", "-no-color", "-var", var]);
            assert_eq!(code, 0, "{out}{err}");
            run(d, &["apply", "-no-color", "p.plan"])
        };
        assert_eq!(code, 0, "{how}: {out}{err}");
        assert!(out.contains("1 added, 0 changed, 1 destroyed"), "{out}");
        let now = std::fs::read_to_string(d.join("p.txt")).unwrap();
        assert_eq!(now, first, "{how}: the replacement has the same password");
    }
    let (code, out, err) = run(
        d,
        &[
            "plan",
            "-detailed-exitcode",
            "-no-color",
            "-var",
            "mode=0644",
        ],
    );
    assert_eq!(code, 0, "a second plan is empty: {out}{err}");
}

const MACHINE_STACK: &str = r##"data "external" "echo" {
  program = ["sed", "s/name/echo/"]
  query   = { name = "gpu" }
}

data "archive_file" "script" {
  type                    = "zip"
  source_content          = "#!/bin/sh\necho ready\n"
  source_content_filename = "ready.sh"
  output_path             = "build/script.zip"
}

resource "archive_file" "chart" {
  type        = "tar.gz"
  source_dir  = "chart"
  excludes    = ["**/*.bak"]
  output_path = "build/chart.tgz"
}

data "cloudinit_config" "node" {
  gzip          = false
  base64_encode = false

  part {
    content_type = "text/x-shellscript"
    content      = "nvidia-smi"
  }
}

output "echo" {
  value = data.external.echo.result.echo
}

output "script_size" {
  value = data.archive_file.script.output_size
}

output "chart_sha" {
  value = archive_file.chart.output_sha
}

output "cloud_init" {
  value = data.cloudinit_config.node.rendered
}
"##;

/// `data "external"`, `archive_file` and `data "cloudinit_config"` as their providers have
/// them: the program's answer, archives written (the data source's at plan, the resource's
/// by apply, with the hashes the plan showed), the MIME document; a second plan is empty and
/// a changed source replaces the archive; a failing program's error output is reported.
#[test]
fn external_archive_and_cloudinit_apply_as_planned() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("main.tf"), MACHINE_STACK).unwrap();
    std::fs::create_dir_all(d.join("chart/templates")).unwrap();
    std::fs::write(d.join("chart/Chart.yaml"), "name: gpu\n").unwrap();
    std::fs::write(d.join("chart/templates/ds.yaml"), "kind: DaemonSet\n").unwrap();
    std::fs::write(d.join("chart/templates/old.bak"), "old\n").unwrap();
    let (code, plan, err) = run(d, &["plan", "-out=p.plan", "-no-color"]);
    assert_eq!(code, 0, "{plan}{err}");
    assert!(
        d.join("build/script.zip").exists(),
        "the data source writes at plan"
    );
    assert!(
        !d.join("build/chart.tgz").exists(),
        "the resource waits for apply"
    );
    let (code, out, err) = run(d, &["apply", "-no-color", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, echo, _) = run(d, &["output", "-raw", "echo"]);
    assert_eq!(echo, "gpu");
    let (_, sha, _) = run(d, &["output", "-raw", "chart_sha"]);
    assert_eq!(planned_output(&plan, "chart_sha"), format!("\"{sha}\""));
    let tgz = std::fs::read(d.join("build/chart.tgz")).unwrap();
    let digest: String = <sha1::Sha1 as sha1::Digest>::digest(&tgz)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, sha, "the file is the archive the plan showed");
    let mut names: Vec<String> = tar::Archive::new(flate2::read::GzDecoder::new(&tgz[..]))
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["Chart.yaml", "templates/ds.yaml"]);
    let (_, rendered, _) = run(d, &["output", "-raw", "cloud_init"]);
    assert!(
        rendered.starts_with("Content-Type: multipart/mixed; boundary=\"MIMEBOUNDARY\"\nMIME-Version: 1.0\r\n")
            && rendered.contains("Content-Type: text/x-shellscript\r\nMime-Version: 1.0\r\n\r\nnvidia-smi\r\n--MIMEBOUNDARY--\r\n"),
        "{rendered:?}"
    );
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(code, 0, "a second plan is empty: {out}{err}");
    std::fs::write(d.join("chart/Chart.yaml"), "name: gpu\nversion: 2\n").unwrap();
    let (code, out, err) = run(d, &["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("archive_file.chart must be replaced"), "{out}");

    std::fs::write(
        d.join("main.tf"),
        "data \"external\" \"fails\" {\n  program = [\"sh\", \"-c\", \"echo no credentials >&2; exit 3\"]\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan", "-no-color"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("External Program Execution Failed")
            && err.contains("no credentials")
            && err.contains("main.tf:1"),
        "{err}"
    );
}
