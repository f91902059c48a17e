//! The differential test's short tier: gpustack's answer to every expression of the corpus
//! (`conformance/corpus/*.txt`, translated from OpenTofu's, go-cty's and HCL's test tables,
//! one expression a line; and `local.NAME` for each local of `conformance/corpus/*.hcl`, the
//! expressions a line cannot hold, such as heredocs)
//! against OpenTofu's, recorded in `conformance/answers.json` by
//! `cargo run -p gpustack-tests --bin conformance -- record`. Each side evaluates
//! `jsonencode(EXPR)` and the texts must be equal byte for byte (key order, number formatting,
//! escaping); two errors are equal whatever they say. `world::conformance` checks the recorded
//! file against the pinned OpenTofu itself.
//!
//! Every difference left is a named deviation in `conformance/deviations.txt` (the README's
//! table lists them): an expression that differs and is not listed fails, and so does a listed
//! one that no longer differs.

#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout)]

use gpustack_lang::expr::eval::{EmptyScope, EvalError, Evaluator, Scope};
use gpustack_protocol::Value;
use hcl_edit::expr::Expression;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Range;
use std::path::PathBuf;

fn dir() -> PathBuf {
    // Where cargo runs the test from: a cached test binary may have been built in another clone.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("tests/conformance")
}

fn corpus_files(extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir().join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// The locals of the corpus's `.hcl` files, by name.
fn locals() -> Vec<(String, Expression)> {
    let mut out = Vec::new();
    for file in corpus_files("hcl") {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut body = hcl_edit::parser::parse_body(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // As the configuration loader parses a file.
        gpustack_lang::expr::whitespace::mark_flush_heredocs(&mut body, &text);
        for block in body.get_blocks("locals") {
            for attribute in block.body.attributes() {
                out.push((attribute.key.as_str().to_owned(), attribute.value.clone()));
            }
        }
    }
    out
}

fn corpus() -> Vec<String> {
    let files = corpus_files("txt");
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (name, _) in locals() {
        assert!(seen.insert(format!("local.{name}")), "local.{name} twice");
        out.push(format!("local.{name}"));
    }
    for file in files {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            if seen.insert(line.to_owned()) {
                out.push(line.to_owned());
            }
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Json(String),
    Sensitive,
    Unknown,
    Error(String),
}

impl Answer {
    fn agrees(&self, other: &Answer) -> bool {
        match (self, other) {
            (Answer::Error(_), Answer::Error(_)) => true,
            (a, b) => a == b,
        }
    }
}

#[derive(serde::Deserialize)]
struct Answers {
    answers: BTreeMap<String, Answer>,
}

/// The corpus's locals, as OpenTofu's console sees them in its configuration.
struct Locals(BTreeMap<String, Expression>);

impl Scope for Locals {
    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize), EvalError> {
        match names {
            ["local", name, ..] if self.0.contains_key(*name) => {
                let value = Evaluator::new(&EmptyScope).eval(&self.0[*name])?;
                Ok((Cow::Owned(value), 2))
            }
            _ => EmptyScope.lookup(names, range),
        }
    }
}

/// gpustack's answer, as the oracle's is taken.
fn ask_gpustack(locals: &Locals, expr: &str) -> Answer {
    let src = format!("jsonencode({expr})");
    let parsed = match hcl_edit::parser::parse_expr(&src) {
        Ok(e) => e,
        Err(e) => return Answer::Error(format!("parse: {e}")),
    };
    match Evaluator::new(locals).eval(&parsed) {
        Ok(Value::Sensitive(_)) => Answer::Sensitive,
        Ok(Value::Unknown) => Answer::Unknown,
        Ok(Value::String(s)) => Answer::Json(s),
        Ok(other) => Answer::Error(format!("jsonencode gave {other}")),
        Err(e) => Answer::Error(format!("{}: {}", e.summary, e.detail)),
    }
}

/// The named deviations: `## name: reason` headers, each followed by its expressions.
fn deviations() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir().join("deviations.txt")).unwrap();
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("## ") {
            let name = header.split(':').next().unwrap().trim().to_owned();
            current = Some(name);
        } else if line.trim().is_empty() || line.starts_with('#') {
            continue;
        } else {
            let name = current
                .clone()
                .unwrap_or_else(|| panic!("deviations.txt: {line:?} is under no `## name:`"));
            out.insert(line.to_owned(), name);
        }
    }
    out
}

#[test]
fn every_corpus_expression_answers_as_opentofu_does_or_is_a_named_deviation() {
    let corpus = corpus();
    let recorded = serde_json::from_str::<Answers>(
        &std::fs::read_to_string(dir().join("answers.json")).unwrap(),
    )
    .unwrap()
    .answers;
    let unrecorded: Vec<&String> = corpus
        .iter()
        .filter(|e| !recorded.contains_key(*e))
        .collect();
    assert!(
        unrecorded.is_empty(),
        "corpus lines without a recorded answer (run `cargo run -p gpustack-tests --bin \
         conformance -- record`):\n{}",
        unrecorded
            .iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let listed = deviations();
    let locals = Locals(locals().into_iter().collect());
    let mut differing = BTreeSet::new();
    let mut report = Vec::new();
    for expr in &corpus {
        let theirs = &recorded[expr];
        let ours = ask_gpustack(&locals, expr);
        if !ours.agrees(theirs) {
            differing.insert(expr.clone());
            if !listed.contains_key(expr) {
                report.push(format!(
                    "{expr}\n    opentofu: {theirs:?}\n    gpustack: {ours:?}"
                ));
            }
        }
    }
    let fixed: Vec<&String> = listed.keys().filter(|e| !differing.contains(*e)).collect();
    println!(
        "{} expressions, {} agree, {} named deviations",
        corpus.len(),
        corpus.len() - differing.len(),
        listed.len()
    );
    assert!(
        report.is_empty(),
        "{} of {} expressions answer otherwise than OpenTofu and are not named deviations:\n{}",
        report.len(),
        corpus.len(),
        report.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "named deviations that now agree with OpenTofu (remove them from deviations.txt):\n{}",
        fixed
            .iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        listed.len() * 100 <= corpus.len(),
        "{} deviations: more than 1% of the corpus",
        listed.len()
    );
}
