//! The malformed-stack corpus: every case in tests/fixtures yields located diagnostics, exit 1,
//! the same locations in JSON as in `expected.txt`, and the rendered text of its snapshot.

use gpustack_tests::{fixtures_dir, gpustack};

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `file:line:column summary`, one line per diagnostic, from `validate --json`.
fn locations(case: &str) -> String {
    let output = gpustack(&fixtures_dir(), &["validate", "--json", case]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{case}: validate --json must exit 1"
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{case}: invalid JSON: {e}"));
    assert_eq!(report["valid"], false, "{case}");
    let diagnostics = report["diagnostics"].as_array().expect("diagnostics array");
    assert!(!diagnostics.is_empty(), "{case}: no diagnostics");
    diagnostics
        .iter()
        .map(|d| {
            assert_eq!(d["severity"], "error", "{case}: {d}");
            let range = &d["range"];
            assert!(
                range.is_object(),
                "{case}: diagnostic without a location: {d}"
            );
            for end in ["start", "end"] {
                for field in ["line", "column", "byte"] {
                    assert!(
                        range[end][field].is_u64(),
                        "{case}: range.{end}.{field} missing: {d}"
                    );
                }
            }
            format!(
                "{}:{}:{} {}",
                range["filename"].as_str().unwrap_or_default(),
                range["start"]["line"],
                range["start"]["column"],
                d["summary"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn corpus_is_large_enough() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} malformed stacks", cases.len());
    assert!(cases.iter().filter(|c| c.starts_with("multi-")).count() >= 3);
}

#[test]
fn every_malformed_stack_is_located() {
    let mut failures = Vec::new();
    for case in cases() {
        let expected_path = fixtures_dir().join(&case).join("expected.txt");
        let actual = locations(&case);
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected.trim_end() == actual => {}
            Ok(expected) => failures.push(format!(
                "{case}:\n  expected:\n{}\n  actual:\n{actual}",
                expected.trim_end()
            )),
            Err(_) if std::env::var_os("GPUSTACK_BLESS").is_some() => {
                std::fs::write(&expected_path, format!("{actual}\n")).expect("write expected.txt")
            }
            Err(_) => failures.push(format!(
                "{case}: no expected.txt (run with GPUSTACK_BLESS=1 to create it)"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn rendered_diagnostics_match_snapshots() {
    for case in cases() {
        let output = gpustack(&fixtures_dir(), &["validate", &case]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{case}: validate must exit 1"
        );
        assert!(
            output.stdout.is_empty(),
            "{case}: nothing on stdout when invalid"
        );
        let rendered = String::from_utf8_lossy(&output.stderr);
        insta::with_settings!({ snapshot_path => "snapshots/diagnostics", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(case.as_str(), rendered);
        });
    }
}
