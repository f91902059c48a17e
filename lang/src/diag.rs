//! Diagnostics as the engine collects them: with spans, resolved to lines and columns only when
//! they leave the engine.

use crate::source::{SourceMap, Span};
use gpustack_protocol::{Diagnostic, Severity};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    pub severity: Severity,
    pub summary: String,
    pub detail: String,
    pub span: Option<Span>,
}

impl Diag {
    pub fn error(
        span: impl Into<Option<Span>>,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Error,
            summary: summary.into(),
            detail: detail.into(),
            span: span.into(),
        }
    }

    pub fn warning(
        span: impl Into<Option<Span>>,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(span, summary, detail)
        }
    }

    /// The diagnostic as it leaves the engine: located, and, near a secret
    /// ([`SourceMap::is_sensitive`]), with every quoted token of its texts masked.
    pub fn to_diagnostic(&self, sources: &SourceMap) -> Diagnostic {
        let near_secret = self.span.is_some_and(|s| sources.is_sensitive(s));
        let shown = |text: &str| {
            if near_secret {
                redact_quoted(text)
            } else {
                text.to_owned()
            }
        };
        Diagnostic {
            severity: self.severity,
            summary: shown(&self.summary),
            detail: shown(&self.detail),
            range: self.span.map(|s| sources.range(s)),
            attribute: None,
        }
    }
}

/// All problems of one run. Every phase adds to it and keeps going, so users see them together.
#[derive(Debug, Default)]
pub struct Diags(pub Vec<Diag>);

impl Diags {
    pub fn push(&mut self, diag: Diag) {
        self.0.push(diag);
    }

    pub fn error(
        &mut self,
        span: impl Into<Option<Span>>,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) {
        self.push(Diag::error(span, summary, detail));
    }

    /// How many errors so far: a step failed when this grew across it (a warning, such as a
    /// deprecated variable's, never stops what depends on the step).
    pub fn error_count(&self) -> usize {
        self.0
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }

    /// In source order (file, then offset), errors before warnings at the same place; duplicates
    /// dropped, since one mistake can be reached along two paths.
    pub fn into_sorted(mut self, sources: &SourceMap) -> Vec<Diagnostic> {
        self.0.sort_by_key(|d| {
            (
                d.span
                    .map(|s| (sources.file(s.file).display_name.clone(), s.start, s.end)),
                d.severity,
            )
        });
        self.0.dedup();
        self.0.iter().map(|d| d.to_diagnostic(sources)).collect()
    }
}

/// `text` with every double-quoted token (escapes included) replaced by `(sensitive value)`:
/// what a diagnostic may say of input that holds a secret.
pub fn redact_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let mut escaped = false;
        let close = after.char_indices().find_map(|(i, c)| match c {
            _ if escaped => {
                escaped = false;
                None
            }
            '\\' => {
                escaped = true;
                None
            }
            '"' => Some(i),
            _ => None,
        });
        out.push_str(gpustack_protocol::SENSITIVE);
        match close {
            Some(close) => rest = &after[close + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The candidate closest to a misspelt name, when one is close enough.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min()
        .map(|(_, c)| c)
}

/// " Did you mean "x"?" for a misspelt name, or nothing.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates).map_or_else(String::new, |c| format!(" Did you mean \"{c}\"?"))
}
