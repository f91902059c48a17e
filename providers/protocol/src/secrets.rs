//! The secrets this process has seen, so that the text it prints can be scrubbed of them:
//! the last line of defence behind the marks, for the messages no mark reaches (an API
//! server's error that quotes a field, a log line of a client library).
//!
//! Every mark made with [`crate::Value::sensitive`] or [`crate::Value::marked`] remembers its
//! texts here.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

/// Texts shorter than this are never scrubbed from other text: hiding every "1" or "true"
/// would garble a report and protect nothing.
pub const MIN_LEN: usize = 4;

fn known() -> &'static Mutex<BTreeSet<String>> {
    static KNOWN: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| Mutex::new(BTreeSet::new()))
}

/// Remembers secret texts (and their JSON-escaped forms) for [`scrub`].
pub fn remember<'a>(texts: impl IntoIterator<Item = &'a String>) {
    let mut set = known().lock().unwrap_or_else(|e| e.into_inner());
    for text in texts {
        if text.len() < MIN_LEN {
            continue;
        }
        if !set.contains(text) {
            set.insert(text.clone());
            let escaped = serde_json::Value::String(text.clone()).to_string();
            let escaped = &escaped[1..escaped.len() - 1];
            if escaped != text {
                set.insert(escaped.to_owned());
            }
        }
    }
}

/// `text` with every remembered secret replaced by `(sensitive value)`.
pub fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    let set = known().lock().unwrap_or_else(|e| e.into_inner());
    if set.is_empty() || !set.iter().any(|s| text.contains(s.as_str())) {
        return std::borrow::Cow::Borrowed(text);
    }
    // Longest first, so that a secret containing another is replaced whole.
    let mut secrets: Vec<&String> = set.iter().collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), crate::SENSITIVE);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// True when `text` holds a remembered secret.
pub fn contains_any(text: &str) -> bool {
    let set = known().lock().unwrap_or_else(|e| e.into_inner());
    set.iter().any(|s| text.contains(s.as_str()))
}
