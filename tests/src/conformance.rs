//! The differential test's oracle: OpenTofu's answers to the language corpus
//! (`lang/tests/conformance/corpus/*.txt`), recorded in `lang/tests/conformance/answers.json`.
//!
//! Every corpus line is one expression, and so is `local.NAME` for each local of the corpus's
//! `.hcl` files, the console's configuration; OpenTofu evaluates `base64encode(jsonencode(EXPR))`
//! in one `tofu console` process fed the whole corpus on its standard input (base64 so that
//! the console's Go quoting of strings needs no undoing). The console stops at the first error
//! in piped mode: the driver records that expression as an error and starts a new console on
//! the rest. A sentinel expression after each line tells which answer belongs to which line,
//! whatever the console printed.
//!
//! `cargo run -p gpustack-tests --bin conformance -- record` writes the answers file;
//! `world::conformance` checks that the recorded file is what the pinned OpenTofu answers, so
//! that the language crate's short tier (which compares gpustack with the file) compares it
//! with OpenTofu.

use base64::Engine as _;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What OpenTofu answered for one expression.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// `jsonencode(EXPR)`, as text.
    Json(String),
    /// The value is sensitive: the console prints no more than that.
    Sensitive,
    /// The value is not known (a function that is only known at apply).
    Unknown,
    /// An error; its summary, for the reader (only the fact of an error is compared).
    Error(String),
}

/// The answers file.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Answers {
    pub opentofu: String,
    pub answers: BTreeMap<String, Answer>,
}

pub fn conformance_dir() -> PathBuf {
    crate::repo_root().join("lang/tests/conformance")
}

pub fn answers_path() -> PathBuf {
    conformance_dir().join("answers.json")
}

fn corpus_files(extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(conformance_dir().join("corpus"))
        .expect("read the corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// Every corpus expression without duplicates: `local.NAME` for each local of the `.hcl`
/// files (the expressions a line cannot hold), then each line of the `.txt` files, in file
/// order (files by name).
pub fn corpus() -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for file in corpus_files("hcl") {
        let text = std::fs::read_to_string(&file).expect("read a corpus file");
        let body = hcl_edit::parser::parse_body(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for block in body.get_blocks("locals") {
            for attribute in block.body.attributes() {
                let expr = format!("local.{}", attribute.key.as_str());
                if seen.insert(expr.clone()) {
                    out.push(expr);
                }
            }
        }
    }
    for file in corpus_files("txt") {
        let text = std::fs::read_to_string(&file).expect("read a corpus file");
        for line in text.lines() {
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

const SENTINEL: &str = "\"@@\"";
const SENTINEL_OUT: &str = "\"@@\"";

/// OpenTofu's answer to every expression, in order.
pub fn ask_opentofu(tofu: &Path, exprs: &[String]) -> Vec<Answer> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cli_config = dir.path().join("tofurc");
    std::fs::write(&cli_config, "").expect("write an empty CLI configuration");
    // The console's configuration: the corpus's locals.
    for file in corpus_files("hcl") {
        let name = file.file_stem().expect("a file name").to_string_lossy();
        std::fs::copy(&file, dir.path().join(format!("corpus_{name}.tf")))
            .expect("copy a corpus file");
    }
    let mut answers = Vec::with_capacity(exprs.len());
    while answers.len() < exprs.len() {
        let rest = &exprs[answers.len()..];
        let mut input = String::new();
        for e in rest {
            input.push_str(&format!("base64encode(jsonencode({e}))\n{SENTINEL}\n"));
        }
        let mut child = Command::new(tofu)
            .args(["console", "-no-color"])
            .current_dir(dir.path())
            .env("TF_CLI_CONFIG_FILE", &cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", tofu.display()));
        let mut stdin = child.stdin.take().expect("console stdin");
        let writer = std::thread::spawn(move || {
            // The console may stop reading at an error: a broken pipe is expected then.
            let _ = stdin.write_all(input.as_bytes());
        });
        let out = child.wait_with_output().expect("wait for tofu console");
        let _ = writer.join();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut pending: Option<Answer> = None;
        let before = answers.len();
        for line in stdout.lines() {
            if line == SENTINEL_OUT {
                answers.push(pending.take().unwrap_or_else(|| {
                    Answer::Error("the console printed nothing for this line".into())
                }));
                continue;
            }
            pending = Some(parse_console_line(line));
        }
        if answers.len() >= exprs.len() {
            break;
        }
        if out.status.success() {
            // The console ran out of input without an error: a line left a bracket open and
            // swallowed what followed. Record it as an error and go on after it.
            answers.push(Answer::Error("the line leaves a bracket open".into()));
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            answers.push(Answer::Error(error_summary(&stderr)));
        }
        assert!(answers.len() > before, "the console made no progress");
    }
    answers.truncate(exprs.len());
    answers
}

fn parse_console_line(line: &str) -> Answer {
    match line {
        "(sensitive value)" => Answer::Sensitive,
        "(known after apply)" => Answer::Unknown,
        quoted => {
            let inner = quoted
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(quoted);
            match base64::engine::general_purpose::STANDARD.decode(inner) {
                Ok(bytes) => Answer::Json(String::from_utf8_lossy(&bytes).into_owned()),
                Err(_) => Answer::Error(format!("unexpected console output: {line}")),
            }
        }
    }
}

/// The first error of the console's diagnostics: its summary and detail on one line.
fn error_summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim_start_matches(['│', '╷', '╵', ' ']).trim_end())
        .collect();
    let Some(start) = lines.iter().position(|l| l.starts_with("Error: ")) else {
        return "error".into();
    };
    let mut text = lines[start].trim_start_matches("Error: ").to_owned();
    for line in &lines[start + 1..] {
        if line.starts_with("Error: ") || line.starts_with("Warning: ") {
            break;
        }
        if line.is_empty()
            || line.starts_with("on <console-input>")
            || line.starts_with("(source code not available)")
        {
            continue;
        }
        // A panic's stack holds addresses that differ from run to run.
        if line.starts_with("goroutine ") {
            break;
        }
        text.push_str(" | ");
        text.push_str(line);
    }
    text
}

/// The pinned OpenTofu's version line (`OpenTofu v1.12.6`).
pub fn opentofu_version(tofu: &Path) -> String {
    let out = Command::new(tofu)
        .arg("version")
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .output()
        .expect("tofu version");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("OpenTofu")
        .trim()
        .to_owned()
}

/// OpenTofu's answers to the whole corpus.
pub fn record(tofu: &Path) -> Answers {
    let exprs = corpus();
    let answers = ask_opentofu(tofu, &exprs);
    Answers {
        opentofu: opentofu_version(tofu),
        answers: exprs.into_iter().zip(answers).collect(),
    }
}

pub fn read_answers() -> Answers {
    let text = std::fs::read_to_string(answers_path()).expect("read the recorded answers");
    serde_json::from_str(&text).expect("parse the recorded answers")
}

pub fn write_answers(answers: &Answers) {
    let mut text = serde_json::to_string_pretty(answers).expect("serialize the answers");
    text.push('\n');
    std::fs::write(answers_path(), text).expect("write the answers");
}
