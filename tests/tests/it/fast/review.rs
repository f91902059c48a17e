//! `gpustack review` on JSON plans in Terraform's documented format (`tests/review/<case>/`:
//! the stack's `.tf` files and `plan.json`): the GPU-relevant changes, the capacity lines and
//! the findings located in the `.tf` files, snapshot-tested with the exit code; Markdown and
//! JSON; unknown and sensitive values; and the files it refuses to read as plans.

use gpustack_tests::{gpustack, repo_root};
use std::path::PathBuf;

fn case_dir(case: &str) -> PathBuf {
    repo_root().join("tests").join("review").join(case)
}

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("tests").join("review"))
        .expect("tests/review exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("plan.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn review(case: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["review", "plan.json", "--no-color"];
    args.extend_from_slice(extra);
    let output = gpustack(&case_dir(case), &args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn each_plan_is_reviewed_with_its_findings_located_in_the_tf_files() {
    let cases = cases();
    assert!(cases.len() >= 5, "{cases:?}");
    for case in cases {
        let (code, stdout, stderr) = review(&case, &[]);
        insta::assert_snapshot!(
            format!("review_{case}"),
            format!("exit {code:?}\n--- stdout\n{stdout}--- stderr\n{stderr}")
        );
    }
}

#[test]
fn gke_time_sharing_on_mig_partitions_plans_and_a_partition_the_gpu_lacks_is_refused_at_its_line() {
    let (code, stdout, stderr) = review("gke-mig", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("nvidia.com/gpu 2 → 28 (MIG 1g.10gb ×7 + GKE time-sharing ×2"),
        "{stdout}"
    );
    let (code, _, stderr) = review("gke-mig-refused", &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("Unknown MIG partition"), "{stderr}");
    assert!(stderr.contains("main.tf:33:28"), "{stderr}");
    assert!(stderr.contains("MPS on MIG partitions"), "{stderr}");
    assert!(stderr.contains("main.tf:36:38"), "{stderr}");
}

#[test]
fn the_markdown_review_is_a_pull_request_comment_with_each_finding_and_its_line() {
    let (code, stdout, _) = review("gke-mig-refused", &["--markdown"]);
    assert_eq!(code, Some(1));
    insta::assert_snapshot!("review_markdown_gke_mig_refused", stdout);
}

#[test]
fn the_json_review_carries_capacity_lines_and_located_diagnostics() {
    let (code, stdout, _) = review("aks-mig", &["--json"]);
    assert_eq!(code, Some(1));
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(json["errored"], true);
    let capacity = json["gpu_capacity"].as_array().expect("capacity lines");
    let a100 = capacity
        .iter()
        .find(|l| l["address"] == "azurerm_kubernetes_cluster_node_pool.a100")
        .expect("the A100 pool's line");
    assert_eq!(a100["after"], 21.0);
    let diagnostics = json["diagnostics"].as_array().expect("diagnostics");
    let mig = diagnostics
        .iter()
        .find(|d| d["summary"] == "MIG on a GPU without MIG")
        .expect("the T4 pool's MIG finding");
    assert_eq!(mig["range"]["filename"], "main.tf");
    assert_eq!(mig["range"]["start"]["line"], 18);
    insta::assert_json_snapshot!("review_json_aks_mig", json);
}

#[test]
fn detailed_exitcode_says_whether_gpu_capacity_changes() {
    let (code, _, stderr) = review("eks-time-slicing", &["--detailed-exitcode"]);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, stderr) = review("eks-time-slicing", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.json"),
        r#"{"format_version":"1.2","resource_changes":[{"address":"aws_iam_role.r","mode":"managed","type":"aws_iam_role","name":"r","change":{"actions":["create"],"before":null,"after":{"name":"r"},"after_unknown":{"arn":true}}}]}"#,
    )
    .unwrap();
    let output = gpustack(dir.path(), &["review", "plan.json", "--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("0 of the plan's 1 resource changes"),
        "{output:?}"
    );
}

#[test]
fn sensitive_values_of_the_plan_never_reach_the_review() {
    for format in [&[][..], &["--markdown"], &["--json"]] {
        let (_, stdout, stderr) = review("unknown-and-sensitive", format);
        assert!(!stdout.contains("s3cr3t"), "{stdout}");
        assert!(!stderr.contains("s3cr3t"), "{stderr}");
    }
}

#[test]
fn files_that_are_no_json_plan_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &[u8]| std::fs::write(dir.path().join(name), text).unwrap();
    write("tfplan", b"PK\x03\x04binary plan");
    write(
        "state.json",
        br#"{"format_version":"1.0","values":{"root_module":{}}}"#,
    );
    write(
        "future.json",
        br#"{"format_version":"2.0","resource_changes":[]}"#,
    );
    write(
        "broken.json",
        br#"{"format_version":"1.2","resource_changes":["#,
    );
    for (file, says) in [
        ("tfplan", "is a binary plan file"),
        ("state.json", "is a JSON state, not a plan"),
        ("future.json", "format_version 2.0"),
        ("broken.json", "is not a JSON plan"),
        ("missing.json", "cannot read"),
    ] {
        let output = gpustack(dir.path(), &["review", file]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{file}: {stderr}");
        assert!(stderr.contains(says), "{file}: {stderr}");
    }
}

#[test]
fn the_benchmarks_synthetic_plan_is_reviewed_whole() {
    let dir = tempfile::tempdir().unwrap();
    gpustack_tests::terraform_plan::write(dir.path(), 1000, 100);
    let output = gpustack(dir.path(), &["review", "plan.json", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["resource_changes"], 1000);
    assert_eq!(json["gpu_changes"].as_array().unwrap().len(), 100);
    let errors: Vec<&serde_json::Value> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(
        errors.len(),
        gpustack_tests::terraform_plan::expected_errors(99),
        "{errors:#?}"
    );
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn the_review_example_reviews_its_sample_plan() {
    let dir = repo_root().join("examples").join("terraform-review");
    let output = gpustack(
        &dir,
        &[
            "review",
            "sample-plan.json",
            "--config",
            "terraform",
            "--detailed-exitcode",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("nodepool inference: 2 × g2-standard-8 (1× L4) → nvidia.com/gpu 2 → 8 (GKE time-sharing ×4; new pool;"),
        "{stdout}"
    );
    assert!(
        stdout.contains("nodepool training: 0–4 × a2-ultragpu-1g (1× A100): nvidia.com/gpu 6 → 12 (MIG 2g.20gb ×3; 0–2 → 0–4 nodes;"),
        "{stdout}"
    );
    // The README's exercise: a partition size of the 40 GB A100 on the 80 GB one.
    let copy = tempfile::tempdir().unwrap();
    let plan = std::fs::read_to_string(dir.join("sample-plan.json"))
        .unwrap()
        .replace("\"2g.20gb\"", "\"1g.5gb\"");
    std::fs::write(copy.path().join("plan.json"), plan).unwrap();
    std::fs::create_dir(copy.path().join("terraform")).unwrap();
    let tf = std::fs::read_to_string(dir.join("terraform/main.tf"))
        .unwrap()
        .replace("\"2g.20gb\"", "\"1g.5gb\"");
    std::fs::write(copy.path().join("terraform/main.tf"), &tf).unwrap();
    let output = gpustack(
        copy.path(),
        &["review", "plan.json", "--config", "terraform", "--no-color"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let line = tf.lines().position(|l| l.contains("1g.5gb")).unwrap() + 1;
    assert!(stderr.contains(&format!("main.tf:{line}:")), "{stderr}");
}

#[test]
fn dra_claims_and_driver_settings_of_a_terraform_plan_are_checked_at_their_lines() {
    let (code, _, stderr) = review("dra-claims", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("The API server refuses this selector") && stderr.contains("main.tf:37:32"),
        "{stderr}"
    );
    assert!(
        stderr.contains("DRA driver feature gates refused together")
            && stderr.contains("main.tf:11:20"),
        "{stderr}"
    );
    assert!(stderr.contains("devices were not read"), "{stderr}");
}
