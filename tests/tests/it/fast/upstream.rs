//! `tests/cluster/upstream`: the pinned upstream data is read where it lies, or fetched into
//! the cache and checked against its digests; a source that serves something else is refused.

use std::path::Path;
use std::process::Command;

fn upstream(lock: &Path, shared: &Path, cache: &Path) -> std::process::Output {
    Command::new(gpustack_tests::repo_root().join("tests/cluster/upstream"))
        .env("GPUSTACK_UPSTREAM_LOCK", lock)
        .env("GPUSTACK_UPSTREAM_SHARED", shared)
        .env("GPUSTACK_TESTWORLD_CACHE", cache)
        .output()
        .unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    let output = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(bytes)?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&output.stdout)[..64].to_owned()
}

#[test]
fn upstream_data_is_fetched_once_and_checked_against_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.yaml");
    std::fs::write(&source, "kind: CustomResourceDefinition\n").unwrap();
    let lock = dir.path().join("upstream.lock");
    let entry = |digest: &str| {
        format!(
            "# pinned\ncrds/thing.yaml\tfile\t{digest}\tfile://{}\n",
            source.display()
        )
    };
    std::fs::write(&lock, entry(&sha256(b"kind: CustomResourceDefinition\n"))).unwrap();
    let (shared, cache) = (dir.path().join("absent"), dir.path().join("cache"));

    let first = upstream(&lock, &shared, &cache);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert!(
        stderr.contains("fetched from the public sources"),
        "{stderr}"
    );
    let fetched = String::from_utf8_lossy(&first.stdout).trim().to_owned();
    assert!(fetched.starts_with(&cache.display().to_string()));
    assert_eq!(
        std::fs::read_to_string(Path::new(&fetched).join("crds/thing.yaml")).unwrap(),
        "kind: CustomResourceDefinition\n"
    );

    // The cache answers the second time, even with the source gone.
    std::fs::remove_file(&source).unwrap();
    let second = upstream(&lock, &shared, &cache);
    assert!(second.status.success());
    assert_eq!(String::from_utf8_lossy(&second.stdout).trim(), fetched);

    // Another pin is another cache entry, and a source that does not match it is refused.
    std::fs::write(&source, "kind: Something else\n").unwrap();
    std::fs::write(&lock, entry(&"0".repeat(64))).unwrap();
    let refused = upstream(&lock, &shared, &cache);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr.contains("not the pinned"), "{stderr}");
}

#[test]
fn a_shared_directory_is_used_where_it_lies_and_differences_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(shared.join("crds")).unwrap();
    std::fs::write(shared.join("crds/thing.yaml"), "changed\n").unwrap();
    let lock = dir.path().join("upstream.lock");
    std::fs::write(
        &lock,
        format!(
            "crds/thing.yaml\tfile\t{}\tfile:///nowhere\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let output = upstream(&lock, &shared, &dir.path().join("cache"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        shared.display().to_string()
    );
    assert!(
        stderr.contains("crds/thing.yaml: digest differs"),
        "{stderr}"
    );
}

/// What `upstream` pins for a chart directory: the digest of its files, by relative path.
fn directory_digest(dir: &Path) -> String {
    let output = Command::new("bash")
        .arg("-c")
        .arg(
            "find . -type f | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum | cut -d' ' -f1",
        )
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn a_chart_kept_as_a_directory_is_fetched_from_its_source_archive_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("src/repo-abc/deployments/helm/driver");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: driver\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("templates/a.yaml"), "kind: ConfigMap\n").unwrap();
    let archive = dir.path().join("source.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path().join("src"))
        .arg("repo-abc")
        .status()
        .unwrap();
    assert!(tar.success());
    let lock = dir.path().join("upstream.lock");
    std::fs::write(
        &lock,
        format!(
            "charts/driver\tchartdir\t{}\tfile://{}#repo-abc/deployments/helm/driver\n",
            directory_digest(&chart),
            archive.display()
        ),
    )
    .unwrap();
    let output = upstream(&lock, &dir.path().join("absent"), &dir.path().join("cache"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let fetched = Path::new(String::from_utf8_lossy(&output.stdout).trim()).join("charts/driver");
    assert_eq!(
        std::fs::read_to_string(fetched.join("templates/a.yaml")).unwrap(),
        "kind: ConfigMap\n"
    );
    // Checked where it lies too: the directory's files are what the lock pins.
    let check = Command::new(gpustack_tests::repo_root().join("tests/cluster/upstream"))
        .env("GPUSTACK_UPSTREAM_LOCK", &lock)
        .arg("check")
        .arg(fetched.parent().unwrap().parent().unwrap())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
