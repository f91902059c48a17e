//! Every example validates, every .hcl file in the repository is formatted, and the reference
//! example's graph orders nodepool → operator → time-slicing → smoke test.

use gpustack_tests::{gpustack, hcl_files, repo_root};
use std::path::PathBuf;

/// The directories directly inside `examples/` or `modules/`, sorted.
fn subdirs(name: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo_root().join(name))
        .unwrap_or_else(|e| panic!("{name}/: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every directory validates, and says so on stdout.
fn validates(dirs: Vec<PathBuf>) {
    assert!(!dirs.is_empty());
    for dir in dirs {
        let output = gpustack(
            &repo_root(),
            &["validate", dir.to_str().unwrap_or_default()],
        );
        assert!(
            output.status.success(),
            "{} does not validate:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(String::from_utf8_lossy(&output.stdout).starts_with("Success!"));
    }
}

/// Every directory under `dir` that holds .hcl files: a stack (examples nest some, such as
/// the stack a drift cron watches, or a GitOps repository's stacks).
fn stacks_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = hcl_files(dir)
        .into_iter()
        .filter_map(|f| f.parent().map(PathBuf::from))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Stacks that stay on Terraform: gpustack reviews their plans (`gpustack review`) and runs
/// none of them; `fast::review::the_review_example_reviews_its_sample_plan` keeps them.
const REVIEWED_ONLY: &[&str] = &["terraform-review/terraform"];

#[test]
fn every_example_validates() {
    let examples = subdirs("examples");
    let run_by_gpustack = |dir: &PathBuf| {
        !REVIEWED_ONLY
            .iter()
            .any(|r| *dir == repo_root().join("examples").join(r))
    };
    for example in &examples {
        assert!(
            !stacks_under(example).is_empty(),
            "{} holds no stack",
            example.display()
        );
    }
    validates(
        examples
            .iter()
            .flat_map(|e| stacks_under(e))
            .filter(run_by_gpustack)
            .collect(),
    );
}

#[test]
fn every_hcl_file_is_formatted() {
    let output = gpustack(
        &repo_root(),
        &["fmt", "--check", "--recursive", "examples", "modules"],
    );
    assert!(
        output.status.success(),
        "unformatted files:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The corpus of malformed stacks is formatted too, except for the ones that cannot parse.
    for file in hcl_files(&repo_root().join("tests").join("fixtures")) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let Ok(formatted) = gpustack_lang::fmt::format_hcl(&text) {
            assert_eq!(formatted, text, "{} is not formatted", file.display());
        }
    }
}

/// Whether `to` is reachable from `from` following DOT edges.
fn reaches(dot: &str, from: &str, to: &str) -> bool {
    let edges: Vec<(String, String)> = dot
        .lines()
        .filter_map(|l| {
            let (a, rest) = l.trim().split_once(" -> ")?;
            let b = rest.split([' ', ';']).next()?;
            Some((
                a.trim_matches('"').to_owned(),
                b.trim_matches('"').to_owned(),
            ))
        })
        .collect();
    let mut seen = vec![from.to_owned()];
    let mut i = 0;
    while i < seen.len() {
        let current = seen[i].clone();
        for (a, b) in &edges {
            if *a == current && !seen.contains(b) {
                seen.push(b.clone());
            }
        }
        i += 1;
    }
    seen.iter().any(|s| s == to)
}

#[test]
fn reference_example_graph_orders_the_flow() {
    let output = gpustack(&repo_root(), &["graph", "examples/aks-t4-time-slicing"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dot = String::from_utf8_lossy(&output.stdout);
    assert!(dot.starts_with("digraph gpustack {"));
    let flow = [
        "aks_nodepool.t4",
        "module.gpu_operator.helm_release.operator",
        "module.time_slicing.module.sharing.kubernetes_manifest.config",
        "module.time_slicing.module.sharing.kubernetes_patch.cluster_policy",
        "gpu_smoke_test.vector_add",
    ];
    for pair in flow.windows(2) {
        assert!(
            reaches(&dot, pair[0], pair[1]),
            "{} does not come before {}:\n{dot}",
            pair[0],
            pair[1]
        );
        assert!(
            !reaches(&dot, pair[1], pair[0]),
            "{} must not depend on {}",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn render_manifests_example_applies_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let stack = tmp.path().join("render-manifests");
    std::fs::create_dir_all(&stack).unwrap();
    std::fs::copy(
        repo_root().join("examples/render-manifests/main.hcl"),
        stack.join("main.hcl"),
    )
    .unwrap();
    let out = gpustack(tmp.path(), &["apply", "--auto-approve", "render-manifests"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = std::fs::read_to_string(stack.join("rendered/time-slicing-config.yaml")).unwrap();
    assert!(
        config.contains("\"replicas\": 10") && config.contains("\"name\": \"time-slicing-config\""),
        "{config}"
    );
    let plan = gpustack(
        tmp.path(),
        &["plan", "--detailed-exitcode", "render-manifests"],
    );
    assert_eq!(plan.status.code(), Some(0));
    let replan = gpustack(
        tmp.path(),
        &[
            "plan",
            "--detailed-exitcode",
            "--var",
            "replicas=4",
            "render-manifests",
        ],
    );
    assert_eq!(replan.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&replan.stdout).contains("+           \"replicas\": 4"));
    let invalid = gpustack(
        tmp.path(),
        &["plan", "--var", "replicas=1", "render-manifests"],
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("at least 2"));
}

#[test]
fn every_module_validates_on_its_own() {
    validates(subdirs("modules"));
}
