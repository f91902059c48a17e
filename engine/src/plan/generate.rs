//! `plan --generate-config-out`: HCL for objects that import blocks take in and the stack has
//! no resource block for yet, written from what the provider's import reads.
//!
//! **Invariant:** generated configuration never holds a secret: a sensitive attribute is
//! written as a comment that says to set it (from a variable), never as its value.

use gpustack_protocol::{BlockNesting, Schema, Value, format_number};
use std::fmt::Write as _;

/// One generated resource block: its address and text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Generated {
    pub address: String,
    pub text: String,
}

/// `resource "TYPE" "NAME" { ... }` for an imported object: every configurable attribute
/// that has a value, nested blocks as blocks.
pub fn resource_block(
    type_name: &str,
    name: &str,
    id: &str,
    schema: &Schema,
    state: &Value,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Imported from {} by gpustack plan --generate-config-out: review it, then plan again.",
        serde_json::Value::String(id.to_owned())
    );
    let _ = writeln!(out, "resource \"{type_name}\" \"{name}\" {{");
    body(&mut out, schema, state, 1);
    out.push_str("}\n");
    // Aligned and indented the way `gpustack fmt` writes it.
    gpustack_lang::fmt::format_hcl(&out).unwrap_or(out)
}

fn body(out: &mut String, schema: &Schema, state: &Value, depth: usize) {
    let pad = "  ".repeat(depth);
    let object = state.as_object();
    for (name, attribute) in &schema.attributes {
        if !attribute.is_configurable() {
            continue;
        }
        let Some(value) = object.and_then(|o| o.get(name)) else {
            continue;
        };
        if value.is_null() || value.is_unknown() {
            continue;
        }
        if attribute.sensitive || value.contains_sensitive() {
            let _ = writeln!(
                out,
                "{pad}# {name} is sensitive: set it here (from a sensitive variable); its value is not written."
            );
            continue;
        }
        let _ = writeln!(out, "{pad}{name} = {}", literal(value, depth));
    }
    for (name, nested) in &schema.blocks {
        let Some(value) = object.and_then(|o| o.get(name)) else {
            continue;
        };
        let items: Vec<&Value> = match (nested.nesting, value) {
            (_, v) if v.is_null() => vec![],
            (BlockNesting::List, Value::List(items)) => items.iter().collect(),
            (_, v) => vec![v],
        };
        for item in items {
            let _ = writeln!(out, "{pad}{name} {{");
            body(out, &nested.block, item, depth + 1);
            let _ = writeln!(out, "{pad}}}");
        }
    }
}

/// A value as an HCL literal: strings escaped for templates (`${` and `%{` doubled).
pub fn literal(value: &Value, depth: usize) -> String {
    let pad = "  ".repeat(depth);
    match value {
        Value::Null | Value::Unknown => "null".to_owned(),
        Value::Sensitive(_) => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format_number(n),
        Value::String(s) => heredoc(s, depth).unwrap_or_else(|| string(s)),
        Value::List(items) if items.is_empty() => "[]".to_owned(),
        Value::List(items) => {
            let inner: Vec<String> = items.iter().map(|v| literal(v, depth + 1)).collect();
            let one_line = format!("[{}]", inner.join(", "));
            if one_line.len() <= 80 && !one_line.contains('\n') {
                one_line
            } else {
                let mut out = String::from("[\n");
                for item in inner {
                    let _ = writeln!(out, "{pad}  {item},");
                }
                let _ = write!(out, "{pad}]");
                out
            }
        }
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(map) => {
            let mut out = String::from("{\n");
            for (k, v) in map {
                let _ = writeln!(out, "{pad}  {} = {}", key(k), literal(v, depth + 1));
            }
            let _ = write!(out, "{pad}}}");
            out
        }
    }
}

/// A multi-line string as a heredoc, where it can be one: ends with a newline, has no line
/// that would end it, and nothing a template would read (`${`, `%{`).
fn heredoc(s: &str, depth: usize) -> Option<String> {
    let body = s.strip_suffix('\n')?;
    if !body.contains('\n')
        || s.contains("${")
        || s.contains("%{")
        || body.lines().any(|l| l.trim() == "EOT")
        || s.contains('\r')
        || body
            .lines()
            .any(|l| l.starts_with(char::is_whitespace) && l.trim().is_empty())
    {
        return None;
    }
    let pad = "  ".repeat(depth + 1);
    let mut out = String::from("<<-EOT\n");
    for line in body.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
    let _ = write!(out, "{}EOT", "  ".repeat(depth));
    Some(out)
}

fn key(k: &str) -> String {
    let bare = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_owned() } else { string(k) }
}

fn string(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_owned()).to_string();
    quoted.replace("${", "$${").replace("%{", "%%{")
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpustack_protocol::{Attribute, Type};

    #[test]
    fn imported_objects_become_resource_blocks_without_secrets() {
        let schema = Schema::new("x")
            .attr("name", Attribute::required(Type::String))
            .attr("values", Attribute::optional(Type::Any))
            .attr("token", Attribute::optional(Type::String).sensitive())
            .attr("revision", Attribute::computed(Type::Number));
        let state = Value::from_json(&serde_json::json!({
            "name": "gpu-operator",
            "values": {"driver": {"enabled": false}, "tmpl": "${x}", "dotted.key": [1, 2]},
            "token": "s3cret",
            "revision": 3
        }));
        let text = resource_block(
            "helm_release",
            "operator",
            "ns/gpu-operator",
            &schema,
            &state,
        );
        assert!(
            text.contains("resource \"helm_release\" \"operator\" {"),
            "{text}"
        );
        assert!(text.contains("enabled = false"), "{text}");
        assert!(text.contains("\"$${x}\""), "{text}");
        assert!(text.contains("\"dotted.key\" = [1, 2]"), "{text}");
        assert!(
            !text.contains("s3cret") && text.contains("# token is sensitive"),
            "{text}"
        );
        assert!(!text.contains("revision"), "{text}");
        let parsed = hcl_edit::parser::parse_body(&text);
        assert!(parsed.is_ok(), "{text}");
    }
}
