//! Human rendering of diagnostics with source excerpts (miette), on stderr.

use gpustack_lang::source::{SourceFile, SourceMap};
use gpustack_protocol::terminal::escape_controls;
use gpustack_protocol::{Diagnostic, Severity, SourceRange};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceSpan, SpanContents,
};
use std::fmt;

/// Fixed width when not on a terminal, so output is the same in CI logs and snapshots.
const WIDTH: usize = 100;

struct Report<'a> {
    diagnostic: &'a Diagnostic,
    source: Option<Shown<'a>>,
    span: Option<SourceSpan>,
}

/// What a diagnostic's excerpt is read from.
enum Shown<'a> {
    /// The file itself.
    File(Excerpted<'a>),
    /// A text standing for the excerpt: the location's line cut around the span, or
    /// `(sensitive value)`. `line` and `column` are the span's own (0-based).
    Standing {
        name: String,
        text: String,
        line: usize,
        column: usize,
    },
}

impl miette::SourceCode for Shown<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        match self {
            Shown::File(file) => file.read_span(span, context_lines_before, context_lines_after),
            Shown::Standing {
                name,
                text,
                line,
                column,
            } => Ok(Box::new(MietteSpanContents::new_named(
                name.clone(),
                text.as_bytes(),
                SourceSpan::new(0.into(), text.len()),
                *line,
                *column,
                1,
            ))),
        }
    }
}

/// Lines longer than this are shown cut around the span, as rustc does: a minified file's
/// one line would otherwise fill the terminal (and a column past 65,535 is past what the
/// renderer can pad to).
const MAX_SHOWN_LINE: usize = 160;
/// How much of a long line is shown on each side of the span.
const SHOWN_AROUND: usize = 60;

/// The excerpt of `range` in `file` when it cannot be shown as written: its location alone
/// when it would show a secret, its line cut around the span when that line is long.
fn standing_excerpt(
    file: &SourceFile,
    range: &SourceRange,
) -> Option<(Shown<'static>, SourceSpan)> {
    let (line, column) = (
        range.start.line.saturating_sub(1),
        range.start.column.saturating_sub(1),
    );
    let context = gpustack_lang::source::EXCERPT_CONTEXT_LINES;
    if file.hides_lines(
        range.start.line.saturating_sub(context),
        range.end.line + context,
    ) {
        let text = gpustack_protocol::SENSITIVE.to_owned();
        let span = SourceSpan::new(0.into(), text.len());
        let name = file.display_name.clone();
        return Some((
            Shown::Standing {
                name,
                text,
                line,
                column,
            },
            span,
        ));
    }
    let line_of = |n: usize| {
        let text = file.shown_text();
        let start = file.shown_offset(n, 1).min(text.len());
        text[start..]
            .split('\n')
            .next()
            .unwrap_or("")
            .trim_end_matches('\r')
    };
    // The lines the renderer would show: the span's and one on each side. A long one is cut,
    // and one holding characters that act on a terminal is shown escaped.
    let shown_lines = range.start.line.saturating_sub(1).max(1)..=range.end.line + 1;
    if shown_lines.into_iter().all(|n| {
        let line = line_of(n);
        line.len() <= MAX_SHOWN_LINE && !gpustack_protocol::terminal::has_controls(line)
    }) {
        return None;
    }
    let line_text = line_of(range.start.line);
    let chars: Vec<char> = line_text.chars().collect();
    let span_chars = if range.end.line == range.start.line {
        range.end.column.saturating_sub(range.start.column)
    } else {
        chars.len().saturating_sub(column)
    };
    let from = column.saturating_sub(SHOWN_AROUND).min(chars.len());
    let span_shown = span_chars.min(MAX_SHOWN_LINE - SHOWN_AROUND);
    let to = (column + span_shown + SHOWN_AROUND).min(chars.len());
    let shown = |part: &[char]| escape_controls(&part.iter().collect::<String>()).into_owned();
    let at = column.min(chars.len());
    let mut cut = String::new();
    if from > 0 {
        cut.push('…');
    }
    cut.push_str(&shown(&chars[from..at]));
    let offset = cut.len();
    cut.push_str(&shown(&chars[at..(column + span_shown).min(to).max(at)]));
    let len = cut.len() - offset;
    cut.push_str(&shown(&chars[(column + span_shown).min(to).max(at)..to]));
    if to < chars.len() {
        cut.push('…');
    }
    let name = file.display_name.clone();
    Some((
        Shown::Standing {
            name,
            text: cut,
            line,
            column,
        },
        SourceSpan::new(offset.into(), len),
    ))
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
            if let Some(standing) = standing_excerpt(file, range) {
                return Some(standing);
            }
            let len = range.end.byte.saturating_sub(range.start.byte);
            Some((
                Shown::File(Excerpted { file }),
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

/// Set by `-compact-warnings`: warnings are listed one line each after the errors, as
/// Terraform lists them.
static COMPACT_WARNINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn compact_warnings(on: bool) {
    COMPACT_WARNINGS.store(on, std::sync::atomic::Ordering::Relaxed);
}

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
        eprintln!("Error: {}", escape_controls(&message));
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
        let mut shown = scrubbed(diagnostics);
        // On a terminal, what a message quotes cannot act on it.
        for d in &mut shown {
            d.summary = escape_controls(&d.summary).into_owned();
            d.detail = escape_controls(&d.detail).into_owned();
        }
        let compact = COMPACT_WARNINGS.load(std::sync::atomic::Ordering::Relaxed);
        let (warnings, shown): (Vec<Diagnostic>, Vec<Diagnostic>) = shown
            .into_iter()
            .partition(|d| compact && d.severity == Severity::Warning);
        let mut text = to_string(sources, &shown, color);
        if !warnings.is_empty() {
            text.push_str("Warnings:\n");
            for w in &warnings {
                let at = w
                    .range
                    .as_ref()
                    .map(|r| format!(" ({}:{})", r.filename, r.start.line))
                    .unwrap_or_default();
                text.push_str(&format!("  - {}{at}\n", w.summary));
            }
            text.push_str(
                "To see the full warning notes, run the command without -compact-warnings.\n",
            );
        }
        eprint!("{}", gpustack_protocol::secrets::scrub(&text));
    }
}
