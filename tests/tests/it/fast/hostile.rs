//! Hostile input the loader's corpus (tests/fixtures/hostile-*) cannot show: files and links
//! planted where gpustack writes.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gpustack(dir, args);
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Every file gpustack writes beside the stack replaces a symlink planted at its path (or at
/// the temporary name it used to write through) instead of following it to another file, and
/// the ones that can hold secrets are 0600.
#[cfg(unix)]
#[test]
fn outputs_replace_links_and_keep_secrets_private() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::write(
        d.join("main.hcl"),
        r#"provider "local" {}

resource "local_file" "key" {
  filename          = "out/key.pem"
  sensitive_content = "-----BEGIN KEY-----"
}

import {
  to = local_file.adopted
  id = "out/adopted.txt"
}
"#,
    )
    .unwrap();
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::write(d.join("out/adopted.txt"), "adopted\n").unwrap();
    for link in ["plan.out", "drift.prom", "drift.prom.tmp"] {
        symlink(&victim, d.join(link)).unwrap();
    }
    // A dangling link is a path that does not exist yet; writing through it would create a
    // file wherever it points.
    let elsewhere = d.join("elsewhere.hcl");
    symlink(&elsewhere, d.join("generated.hcl")).unwrap();
    let (code, out, err) = run(d, &["plan", "--generate-config-out", "generated.hcl"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!elsewhere.exists(), "written through a link");
    assert!(!d.join("generated.hcl").is_symlink());
    assert_eq!(mode(&d.join("generated.hcl")), 0o600);
    assert!(
        std::fs::read_to_string(d.join("generated.hcl"))
            .unwrap()
            .contains("resource \"local_file\" \"adopted\"")
    );

    // A link at a local_file's path is a file the stack did not make: the plan refuses it.
    symlink(&victim, d.join("out/key.pem")).unwrap();
    let (code, out, err) = run(d, &["plan", "--out", "plan.out"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("already exists"), "{err}");
    std::fs::remove_file(d.join("out/key.pem")).unwrap();

    let (code, out, err) = run(d, &["plan", "--out", "plan.out"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!d.join("plan.out").is_symlink());
    assert_eq!(mode(&d.join("plan.out")), 0o600);

    let (code, out, err) = run(d, &["apply", "plan.out"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!d.join("out/key.pem").is_symlink());
    assert_eq!(
        std::fs::read_to_string(d.join("out/key.pem")).unwrap(),
        "-----BEGIN KEY-----"
    );

    let (code, out, err) = run(d, &["drift", "--metrics-file", "drift.prom"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!d.join("drift.prom").is_symlink());
    assert!(
        std::fs::read_to_string(d.join("drift.prom"))
            .unwrap()
            .contains("gpustack_drift")
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // No temporary file is left behind.
    let leftovers: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .chain(std::fs::read_dir(d.join("out")).unwrap())
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n != "drift.prom.tmp" || n.contains("gpustack-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `fileset` over a directory that links to itself lists each file once and ends.
#[cfg(unix)]
#[test]
fn fileset_follows_no_link_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("files/a")).unwrap();
    std::fs::write(d.join("files/a/x.txt"), "x").unwrap();
    std::os::unix::fs::symlink("..", d.join("files/a/up")).unwrap();
    std::os::unix::fs::symlink(".", d.join("files/a/self")).unwrap();
    std::fs::write(
        d.join("main.hcl"),
        "output \"files\" {\n  value = fileset(\"${path.module}/files\", \"**\")\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(d, &["plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("a/x.txt"), "{out}");
}
