//! Text as it may reach a reader's terminal.
//!
//! **Invariant:** every value gpustack prints for people (plan text, Markdown, diagnostics)
//! passes through [`escape_controls`]: a value from a module, a live object or a file cannot
//! move the cursor, rewrite lines already printed or reorder what is shown.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` could act on a terminal or on how text is laid out: C0 and C1 control
/// characters and DEL (line feeds and tabs excepted, which only lay text out), and the
/// bidirectional overrides and isolates.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `text` holds a character [`escape_controls`] would escape.
pub fn has_controls(text: &str) -> bool {
    text.chars().any(acts)
}

/// `text` with every character that could act on a terminal written as an escape: `\r`,
/// `\u001b`, `\u202e`. Line feeds and tabs stay.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if acts(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_layout_is_kept() {
        assert_eq!(escape_controls("a\tb\nc"), "a\tb\nc");
        assert_eq!(
            escape_controls("ok\x1b[2A\x1b[2Kdone\r\u{9b}\u{202e}"),
            "ok\\u001b[2A\\u001b[2Kdone\\r\\u009b\\u202e"
        );
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
    }
}
