//! Records OpenTofu's answers to the language corpus: `cargo run -p gpustack-tests --bin
//! conformance -- record` (after a change to `lang/tests/conformance/corpus`). The pinned
//! OpenTofu is built into the test world's cache on first use; `GPUSTACK_TOFU` names another.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use gpustack_tests::conformance;

fn main() {
    let tofu = std::env::var_os("GPUSTACK_TOFU")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(gpustack_tests::cluster::opentofu);
    match std::env::args().nth(1).as_deref() {
        Some("record") => {
            let answers = conformance::record(&tofu);
            let errors = answers
                .answers
                .values()
                .filter(|a| matches!(a, conformance::Answer::Error(_)))
                .count();
            conformance::write_answers(&answers);
            println!(
                "{} answers ({} errors) from {} in {}",
                answers.answers.len(),
                errors,
                answers.opentofu,
                conformance::answers_path().display()
            );
        }
        _ => {
            eprintln!("usage: conformance record");
            std::process::exit(2);
        }
    }
}
