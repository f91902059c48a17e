//! Smoke-test results as JUnit XML, for CI systems that show test reports.

use gpustack_engine::ChangeResult;
use gpustack_state::State;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::path::Path;
use std::time::Duration;

/// The resource types whose apply is a test.
const TEST_TYPES: [&str; 1] = ["gpu_smoke_test"];

/// One test case per check of every smoke test that ran; a test that failed before it could
/// report its checks is one failed case with the error.
pub fn report(results: &[ChangeResult], state: &State) -> Report {
    let mut suite = TestSuite::new("gpustack smoke tests");
    for result in results
        .iter()
        .filter(|r| TEST_TYPES.contains(&r.type_name.as_str()))
    {
        let recorded = state
            .resources
            .iter()
            .find(|r| r.address == result.address)
            .map(|r| r.attributes.clone())
            .filter(|_| result.errors.is_empty());
        let Some(attributes) = recorded else {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(
                result
                    .errors
                    .first()
                    .map_or("failed", |e| e.lines().next().unwrap_or("failed")),
            );
            status.set_description(result.errors.join("\n"));
            let mut case = TestCase::new("smoke test", status);
            case.set_classname(result.address.as_str());
            suite.add_test_case(case);
            continue;
        };
        let seconds = attributes
            .pointer("/result/duration_seconds")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        let checks = attributes
            .pointer("/result/checks")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, check) in checks.iter().enumerate() {
            let name = check["name"].as_str().unwrap_or("check");
            let detail = check["detail"].as_str().unwrap_or_default();
            let status = if check["passed"] == true {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(detail);
                s
            };
            let mut case = TestCase::new(name, status);
            case.set_classname(result.address.as_str());
            case.set_system_out(detail);
            if i == 0 {
                case.set_time(Duration::from_secs_f64(seconds));
            }
            suite.add_test_case(case);
        }
    }
    let mut report = Report::new("gpustack");
    report.add_test_suite(suite);
    report
}

pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    let xml = report
        .to_string()
        .map_err(|e| format!("cannot render JUnit XML: {e}"))?;
    super::files::write_replacing(path, xml.as_bytes(), super::files::SHARED)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
