//! The differential test's oracle: the pinned OpenTofu answers the language corpus as
//! `lang/tests/conformance/answers.json` recorded it, so that the language crate's short tier
//! (gpustack against the recorded answers) compares gpustack with OpenTofu itself.
//! `cargo run -p gpustack-tests --bin conformance -- record` rewrites the file.

use gpustack_tests::conformance::{self, Answer};

#[test]
fn the_pinned_opentofu_answers_the_corpus_as_recorded() {
    let tofu = gpustack_tests::cluster::opentofu();
    let recorded = conformance::read_answers();
    let fresh = conformance::record(&tofu);
    assert_eq!(
        fresh.opentofu, recorded.opentofu,
        "the answers were recorded from another OpenTofu: run `cargo run -p gpustack-tests --bin conformance -- record`"
    );
    let mut differing = Vec::new();
    for (expr, answer) in &fresh.answers {
        let same = match (answer, recorded.answers.get(expr)) {
            (Answer::Error(_), Some(Answer::Error(_))) => true,
            (a, Some(b)) => a == b,
            (_, None) => false,
        };
        if !same {
            differing.push(format!(
                "{expr}\n    now:      {answer:?}\n    recorded: {:?}",
                recorded.answers.get(expr)
            ));
        }
    }
    let stale: Vec<&String> = recorded
        .answers
        .keys()
        .filter(|e| !fresh.answers.contains_key(*e))
        .collect();
    assert!(
        differing.is_empty() && stale.is_empty(),
        "the recorded answers are not OpenTofu's (run `cargo run -p gpustack-tests --bin conformance -- record`):\n{}\nrecorded for no corpus line: {stale:?}",
        differing.join("\n")
    );
}
