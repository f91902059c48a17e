//! Helpers for provider-side configuration checks. They read known values only: an unknown or
//! null attribute is left for plan time.

use gpustack_protocol::{Diagnostic, Schema, Value};
use std::collections::BTreeMap;

pub struct Checker<'a> {
    config: &'a Value,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    pub fn new(config: &'a Value) -> Self {
        Self {
            config,
            diagnostics: Vec::new(),
        }
    }

    /// The configuration being checked.
    pub fn config(&self) -> &'a Value {
        self.config
    }

    /// The value at `path`: names separated by dots, a list element as `name[N]`.
    pub fn get(&self, path: &str) -> Option<&'a Value> {
        let mut current = self.config;
        for step in path.split('.') {
            let (name, index) = match step.split_once('[') {
                Some((name, rest)) => (
                    name,
                    Some(rest.trim_end_matches(']').parse::<usize>().ok()?),
                ),
                None => (step, None),
            };
            current = current.as_object()?.get(name)?;
            if let Some(i) = index {
                current = current.as_list()?.get(i)?;
            }
        }
        (!current.is_null() && !current.is_unknown()).then_some(current)
    }

    pub fn str(&self, path: &str) -> Option<&'a str> {
        self.get(path).and_then(Value::as_str)
    }

    pub fn number(&self, path: &str) -> Option<f64> {
        self.get(path).and_then(Value::as_number)
    }

    pub fn error(&mut self, path: &str, summary: &str, detail: String) {
        self.diagnostics
            .push(Diagnostic::error(summary, detail).with_attribute(path));
    }

    pub fn one_of(&mut self, path: &str, allowed: &[&str]) {
        if let Some(v) = self.str(path)
            && !allowed.contains(&v)
        {
            self.error(
                path,
                "Invalid value",
                format!(
                    "\"{v}\" is not one of {}.",
                    allowed
                        .iter()
                        .map(|a| format!("\"{a}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }

    pub fn range(&mut self, path: &str, min: f64, max: f64) {
        if let Some(n) = self.number(path)
            && (n < min || n > max || n.fract() != 0.0)
        {
            self.error(
                path,
                "Value out of range",
                format!("{n} must be a whole number from {min} to {max}."),
            );
        }
    }

    /// An error on `min` where both are known and `min` is the greater: a size range that
    /// no pool can have.
    pub fn min_not_above_max(&mut self, min: &str, max: &str, summary: &str) {
        if let (Some(low), Some(high)) = (self.number(min), self.number(max))
            && low > high
        {
            self.error(
                min,
                summary,
                format!("{min} {low} is greater than {max} {high}."),
            );
        }
    }

    /// EKS and GKE spell taint effects in upper snake case.
    pub fn cloud_taint_effects(&mut self, path: &str, cloud: &str) {
        let Some(taints) = self.get(path).and_then(|t| t.as_list()) else {
            return;
        };
        for (i, taint) in taints.iter().enumerate() {
            if let Some(effect) = taint
                .as_object()
                .and_then(|o| o.get("effect"))
                .and_then(|e| e.as_str())
                && !["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"].contains(&effect)
            {
                self.error(
                    &format!("{path}[{i}].effect"),
                    "Invalid taint effect",
                    format!("\"{effect}\" must be NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE ({cloud} spelling)."),
                );
            }
        }
    }
}

/// Attributes every provider configuration accepts.
pub fn provider_config(description: &str) -> Schema {
    use gpustack_protocol::{Attribute, Type};
    Schema::new(description).attr(
        "max_concurrency",
        Attribute::optional(Type::Number)
            .describe("How many calls to this provider may run at once during refresh and apply."),
    )
}

/// RFC 1123 label: lower-case alphanumerics and '-', starting and ending alphanumeric.
pub fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// An attribute of a state or configuration object; `None` when absent or null.
pub fn attribute<'a>(state: &'a Value, name: &str) -> Option<&'a Value> {
    state
        .as_object()
        .and_then(|o| o.get(name))
        .filter(|v| !v.is_null())
}

/// A string attribute; `None` when absent, null or not a string.
pub fn text<'a>(state: &'a Value, name: &str) -> Option<&'a str> {
    attribute(state, name).and_then(Value::as_str)
}

/// A number attribute as a whole number, any fraction cut off; `None` when absent, null,
/// unknown or not a number.
pub fn integer(state: &Value, name: &str) -> Option<i64> {
    attribute(state, name)
        .and_then(Value::as_number)
        .map(|n| n as i64)
}

/// The strings of a list attribute (anything else in it passed over); empty when absent, null
/// or not a list.
pub fn strings(state: &Value, name: &str) -> Vec<String> {
    attribute(state, name)
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The string entries of a map attribute (anything else in it passed over), in key order;
/// empty when absent, null or not a map.
pub fn string_map(state: &Value, name: &str) -> BTreeMap<String, String> {
    attribute(state, name)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets an attribute of an object value (anything else is left as it is).
pub fn set(state: &mut Value, name: &str, value: Value) {
    if let Value::Object(o) = state {
        o.insert(name.to_owned(), value);
    }
}

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("\"{text}\" is not a duration such as \"90s\" or \"5m\"")]
pub struct ParseDurationError {
    pub text: String,
    #[source]
    pub source: humantime::DurationError,
}

/// Parses durations such as "5m", "90s", "1h30m".
pub fn duration(
    text: Option<&str>,
    default: std::time::Duration,
) -> Result<std::time::Duration, ParseDurationError> {
    match text {
        None => Ok(default),
        Some(t) => humantime::parse_duration(t).map_err(|source| ParseDurationError {
            text: t.to_owned(),
            source,
        }),
    }
}
