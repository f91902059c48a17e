//! Human rendering of diagnostics with source excerpts (miette), on stderr.

use gpustack_lang::source::{SourceFile, SourceMap};
use gpustack_protocol::{Diagnostic, Severity};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceSpan, SpanContents,
};
use std::fmt;

/// Fixed width when not on a terminal, so output is the same in CI logs and snapshots.
const WIDTH: usize = 100;

struct Report<'a> {
    diagnostic: &'a Diagnostic,
    source: Option<Excerpted<'a>>,
    span: Option<SourceSpan>,
}

/// A source file as miette reads it, one excerpt at a time: miette's own reading of a whole
/// text starts at its first byte, which made rendering many diagnostics of one large file
/// quadratic. The file's line table finds the excerpt's lines; miette's reading runs on them.
struct Excerpted<'a> {
    file: &'a SourceFile,
}

impl miette::SourceCode for Excerpted<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let text = self.file.shown_text();
        let start = span.offset().min(text.len());
        let end = (start + span.len()).min(text.len());
        // One line more on each side than miette shows, so that its reading of the excerpt
        // sees the same neighbourhood as a reading of the whole file.
        let first_line = self
            .file
            .shown_pos(start)
            .line
            .saturating_sub(context_lines_before + 1)
            .max(1);
        let last_line = self.file.shown_pos(end).line + context_lines_after + 2;
        let from = self.file.shown_offset(first_line, 1).min(start);
        let to = self.file.shown_offset(last_line, 1).max(end);
        let excerpt = &text[from..to];
        let inner = excerpt.read_span(
            &SourceSpan::new((start - from).into(), end - start),
            context_lines_before,
            context_lines_after,
        )?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.file.display_name.clone(),
            inner.data(),
            SourceSpan::new((inner.span().offset() + from).into(), inner.span().len()),
            inner.line() + first_line - 1,
            inner.column(),
            inner.line_count(),
        )))
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.summary)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.summary)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        (!self.diagnostic.detail.is_empty())
            .then(|| Box::new(&self.diagnostic.detail) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some("here".into()),
            span,
        ))))
    }
}

/// Renders diagnostics as text: `file:line:col`, the source lines with the span underlined,
/// and the detail.
pub fn to_string(sources: &SourceMap, diagnostics: &[Diagnostic], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(WIDTH)
        .with_links(false);
    let mut out = String::new();
    for diagnostic in diagnostics {
        let located = diagnostic.range.as_ref().and_then(|range| {
            let (_, file) = sources
                .files()
                .find(|(_, f)| f.display_name == range.filename)?;
            let len = range.end.byte.saturating_sub(range.start.byte);
            Some((
                Excerpted { file },
                SourceSpan::new(range.start.byte.into(), len),
            ))
        });
        let (source, span) = located.map_or((None, None), |(s, sp)| (Some(s), Some(sp)));
        let report = Report {
            diagnostic,
            source,
            span,
        };
        let _ = handler.render_report(&mut out, &report);
        out.push('\n');
    }
    out
}

/// Diagnostics on stderr, scrubbed of every secret the run has seen (an API's error message
/// may quote what it was sent).
/// Set by a command run with `--json`: its errors are then one JSON document on stdout.
static JSON_ERRORS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn json_errors(on: bool) {
    JSON_ERRORS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// An error that ends a command: `Error: ...` on stderr, or for `--json` a diagnostics
/// document on stdout.
pub fn fail(message: &str) {
    let message = gpustack_protocol::secrets::scrub(message);
    if JSON_ERRORS.load(std::sync::atomic::Ordering::Relaxed) {
        println!(
            "{}",
            diagnostics_json(&[Diagnostic::error("Error", message.to_string())], 1)
        );
    } else {
        eprintln!("Error: {message}");
    }
}

/// The diagnostics with every known secret pattern scrubbed from their texts.
fn scrubbed(diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
    diagnostics
        .iter()
        .map(|d| {
            let mut d = d.clone();
            d.summary = gpustack_protocol::secrets::scrub(&d.summary).into_owned();
            d.detail = gpustack_protocol::secrets::scrub(&d.detail).into_owned();
            d
        })
        .collect()
}

/// `{"errored", "error_count", "warning_count", "diagnostics"}` with every secret scrubbed, as
/// `validate --json` reports them.
pub fn diagnostics_json(diagnostics: &[Diagnostic], errors: usize) -> String {
    let scrubbed = scrubbed(diagnostics);
    let report = serde_json::json!({
        "format_version": "1.0",
        "errored": errors > 0,
        "error_count": errors,
        "warning_count": diagnostics.len() - errors,
        "diagnostics": scrubbed,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

pub fn diagnostics(sources: &SourceMap, diagnostics: &[Diagnostic], color: bool) {
    if JSON_ERRORS.load(std::sync::atomic::Ordering::Relaxed) {
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        if !diagnostics.is_empty() {
            let text = diagnostics_json(diagnostics, errors);
            if errors > 0 {
                println!("{text}");
            } else {
                eprintln!("{text}");
            }
        }
        return;
    }
    if !diagnostics.is_empty() {
        // Before rendering too: the renderer wraps long lines, and a secret split across two
        // lines would no longer be found.
        let scrubbed = scrubbed(diagnostics);
        let text = to_string(sources, &scrubbed, color);
        eprint!("{}", gpustack_protocol::secrets::scrub(&text));
    }
}
