//! Plans and drift for people (terminal, pull requests) and machines (JSON).
//!
//! Sensitive values never appear: they are shown as `(sensitive value)` in every format.
//! Multi-line strings (YAML in ConfigMaps, Helm values) are shown as line diffs.

use crate::plan::{Action, Plan, PlanMode, ResourceChange};
use gpustack_protocol::SENSITIVE;
use std::fmt::Write as _;

const UNKNOWN: &str = "(known after apply)";

/// Starts the text a sensitive part is rendered from: its digest (so that two sides compare
/// equal exactly when the secret did not change) and, for a multi-line string that may be
/// shown with its secret lines masked, that masked text. Never printed as such.
const SECRET: char = '\u{1}';

fn secret_leaf(digest: &serde_json::Value, masked: Option<&str>) -> serde_json::Value {
    let digest = match digest {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    serde_json::Value::String(format!("{SECRET}{digest}{SECRET}{}", masked.unwrap_or("")))
}

/// (digest, masked text) of a rendered secret.
fn secret_parts(text: &str) -> Option<(&str, Option<&str>)> {
    let rest = text.strip_prefix(SECRET)?;
    let (digest, masked) = rest.split_once(SECRET)?;
    Some((digest, (!masked.is_empty()).then_some(masked)))
}

/// A side of a change with its sensitive parts replaced by rendered secrets.
fn with_secrets(
    value: &serde_json::Value,
    sensitive: &serde_json::Value,
    masked: &serde_json::Value,
) -> serde_json::Value {
    use serde_json::Value as J;
    match (value, sensitive) {
        (_, J::Bool(true)) => secret_leaf(value, masked.as_str()),
        (J::Object(map), J::Object(marks)) => J::Object(
            map.iter()
                .map(|(k, v)| {
                    let mark = marks.get(k).unwrap_or(&J::Bool(false));
                    let m = masked.get(k).unwrap_or(&J::Bool(false));
                    (k.clone(), with_secrets(v, mark, m))
                })
                .collect(),
        ),
        (J::Array(items), J::Array(marks)) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let mark = marks.get(i).unwrap_or(&J::Bool(false));
                    let m = masked.get(i).unwrap_or(&J::Bool(false));
                    with_secrets(v, mark, m)
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// The change as the text renderers show it: secrets rendered, never their digests.
fn displayed(change: &ResourceChange) -> ResourceChange {
    let mut shown = change.clone();
    shown.before = std::sync::Arc::new(with_secrets(
        &change.before,
        &change.before_sensitive,
        &change.before_masked,
    ));
    shown.after = std::sync::Arc::new(with_secrets(
        &change.after,
        &change.after_sensitive,
        &change.after_masked,
    ));
    shown.before_sensitive = serde_json::Value::Bool(false);
    shown.after_sensitive = serde_json::Value::Bool(false);
    shown
}

/// The text of a string as shown: masked text for a partly shown secret, `(sensitive value)`
/// for any other secret.
fn display_text(text: &str) -> &str {
    match secret_parts(text) {
        Some((_, Some(masked))) => masked,
        Some((_, None)) => SENSITIVE,
        None => text,
    }
}

struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn symbol(&self, actions: &[Action]) -> String {
        match actions {
            [Action::Create] => self.paint("32", "+"),
            [Action::Update] => self.paint("33", "~"),
            [Action::Delete] => self.paint("31", "-"),
            [Action::Delete, Action::Create] => self.paint("31;32", "-/+"),
            [Action::Create, Action::Delete] => self.paint("32;31", "+/-"),
            [Action::Read] => self.paint("36", "<="),
            _ => " ".into(),
        }
    }
}

fn describe(change: &ResourceChange) -> &'static str {
    match change.actions.as_slice() {
        [Action::Create] => "will be created",
        [Action::Update] => "will be updated in-place",
        [Action::Delete] => "will be destroyed",
        [Action::Delete, Action::Create] => "must be replaced",
        [Action::Create, Action::Delete] => "must be replaced (create before destroy)",
        [Action::Read] => "will be read during apply",
        [Action::Forget] => "will no longer be managed by gpustack (the object stays)",
        _ if change.importing.is_some() => "will be imported",
        _ if change.previous_address.is_some() => "has moved",
        _ => "has no changes",
    }
}

/// The lines under a change's header that say where it comes from: an import, a move.
fn provenance(change: &ResourceChange) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(previous) = &change.previous_address {
        lines.push(format!("  # (moved from {previous})"));
    }
    if let Some(importing) = &change.importing {
        let how = if importing.adopted {
            "adopted: this stack created it, and a run that stopped before recording it left it behind; imported"
        } else {
            "imported"
        };
        let id = serde_json::Value::String(importing.id.clone());
        lines.push(format!("  # ({how} from {id})"));
    }
    lines
}

/// How many of the objects a deletion takes with it a plan names; the rest are counted.
const COLLATERAL_SHOWN: usize = 10;

/// The lines under a deletion's header that name what it takes with it besides itself.
fn collateral_lines(change: &ResourceChange) -> Vec<String> {
    let Some(collateral) = &change.collateral else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let count = collateral.objects.len();
    if count > 0 {
        lines.push(format!(
            "  # (deleting {} also deletes {count} {} this stack does not manage:",
            collateral.describe,
            if count == 1 { "object" } else { "objects" }
        ));
        for object in collateral.objects.iter().take(COLLATERAL_SHOWN) {
            lines.push(format!("  #    {object}"));
        }
        if count > COLLATERAL_SHOWN {
            lines.push(format!("  #    ... and {} more", count - COLLATERAL_SHOWN));
        }
        if let Some(last) = lines.last_mut() {
            last.push(')');
        }
    }
    for unread in &collateral.unread {
        lines.push(format!(
            "  # (deleting {} also deletes what could not be listed: {unread})",
            collateral.describe
        ));
    }
    lines
}

fn reason(change: &ResourceChange) -> Option<String> {
    let reason = change.action_reason.as_deref()?;
    Some(match reason {
        "replace_by_request" => "(replaced because --replace asked for it)".to_owned(),
        "delete_because_no_resource_config" => {
            "(because it is no longer in the configuration)".to_owned()
        }
        "delete_because_no_instance" => {
            "(because its count or for_each no longer includes it)".to_owned()
        }
        "delete_because_destroy" => return None,
        "changed_outside_gpustack" => "(changed outside gpustack)".to_owned(),
        "deleted_outside_gpustack" => "(deleted outside gpustack)".to_owned(),
        other => {
            if let Some(attrs) = other.strip_prefix("replace_because_cannot_update: ") {
                format!("(because {attrs} cannot be changed in place)")
            } else if let Some(by) = other.strip_prefix("replace_by_triggers: ") {
                format!("(because of replace_triggered_by: {by} changes)")
            } else {
                format!("({other})")
            }
        }
    })
}

fn is_sensitive(marks: &serde_json::Value, key: &str) -> bool {
    marks
        .get(key)
        .is_some_and(|m| *m == serde_json::Value::Bool(true))
}

fn is_unknown(marks: &serde_json::Value, key: &str) -> bool {
    marks
        .get(key)
        .is_some_and(|m| *m == serde_json::Value::Bool(true))
}

/// A value as `terraform console` prints it: HCL-like, secrets masked, unknowns said.
pub fn console_value(value: &gpustack_protocol::Value) -> String {
    let mut out = String::new();
    console_write(value, 0, &mut out);
    out
}

fn console_write(value: &gpustack_protocol::Value, indent: usize, out: &mut String) {
    use gpustack_protocol::Value as V;
    let pad = "  ".repeat(indent + 1);
    match value {
        V::Sensitive(_) => out.push_str(SENSITIVE),
        V::Unknown => out.push_str("(known after apply)"),
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Number(n) => out.push_str(&gpustack_protocol::format_number(*n)),
        V::String(s) => out.push_str(&serde_json::Value::String(s.clone()).to_string()),
        V::List(items) if items.is_empty() => out.push_str("[]"),
        V::List(items) => {
            out.push_str("[\n");
            for item in items {
                out.push_str(&pad);
                console_write(item, indent + 1, out);
                out.push_str(",\n");
            }
            out.push_str(&"  ".repeat(indent));
            out.push(']');
        }
        V::Object(map) if map.is_empty() => out.push_str("{}"),
        V::Object(map) => {
            out.push_str("{\n");
            for (k, v) in map {
                out.push_str(&pad);
                out.push_str(&serde_json::Value::String(k.clone()).to_string());
                out.push_str(" = ");
                console_write(v, indent + 1, out);
                out.push('\n');
            }
            out.push_str(&"  ".repeat(indent));
            out.push('}');
        }
    }
}

fn show(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) if secret_parts(s).is_some() => SENSITIVE.to_owned(),
        serde_json::Value::String(s) => serde_json::Value::String(s.clone()).to_string(),
        serde_json::Value::Object(_) | serde_json::Value::Array(_) if holds_secret(value) => {
            // Compact JSON of a value with secrets inside: each shown as (sensitive value).
            let shown = reveal_placeholders(value);
            shown.to_string()
        }
        other => other.to_string(),
    }
}

fn holds_secret(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => secret_parts(s).is_some(),
        serde_json::Value::Array(items) => items.iter().any(holds_secret),
        serde_json::Value::Object(map) => map.values().any(holds_secret),
        _ => false,
    }
}

fn reveal_placeholders(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(s) if secret_parts(s).is_some() => {
            serde_json::Value::String(SENSITIVE.into())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(reveal_placeholders).collect())
        }
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), reveal_placeholders(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn is_secret(value: &serde_json::Value) -> bool {
    value.as_str().is_some_and(|s| secret_parts(s).is_some())
}

/// True for a string shown as lines: multi-line text, or a secret with masked lines.
fn multi_line(value: &serde_json::Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| display_text(s).contains('\n'))
}

/// Field-level diff of one change, Terraform-style.
fn fields(out: &mut String, style: &Style, change: &ResourceChange) {
    let empty = serde_json::Map::new();
    let before = change.before.as_object().unwrap_or(&empty);
    let after = change.after.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    let rows: Vec<(String, String, String)> = keys
        .into_iter()
        .filter_map(|key| {
            let old = before.get(key).filter(|v| !v.is_null());
            let unknown = is_unknown(&change.after_unknown, key);
            let new = after.get(key).filter(|v| !v.is_null());
            let sensitive = is_sensitive(&change.before_sensitive, key)
                || is_sensitive(&change.after_sensitive, key);
            let shown = |v: &serde_json::Value| {
                if sensitive {
                    SENSITIVE.to_owned()
                } else {
                    show(v)
                }
            };
            let forces = change.replace_paths.iter().any(|p| p == key);
            let note = if forces {
                style.paint("31", " # forces replacement")
            } else {
                String::new()
            };
            match change.actions.as_slice() {
                [Action::Delete] => {
                    old.map(|o| (style.symbol(&[Action::Delete]), key.clone(), shown(o)))
                }
                [Action::Forget] => old.map(|o| (" ".to_owned(), key.clone(), shown(o))),
                _ => match (old, new, unknown) {
                    (None, None, false) => None,
                    (None, _, true) => Some((
                        style.symbol(&[Action::Create]),
                        key.clone(),
                        UNKNOWN.to_owned(),
                    )),
                    (None, Some(n), false) if !sensitive && n.is_object() => {
                        let mut block = String::from("{\n");
                        whole_value(&mut block, 10, &style.symbol(&[Action::Create]), n);
                        block.push_str("        }");
                        Some((style.symbol(&[Action::Create]), key.clone(), block))
                    }
                    (None, Some(n), false) if multi_line(n) && !sensitive => {
                        let text = heredoc(12, n.as_str().unwrap_or_default());
                        Some((style.symbol(&[Action::Create]), key.clone(), text))
                    }
                    (None, Some(n), false) => {
                        Some((style.symbol(&[Action::Create]), key.clone(), shown(n)))
                    }
                    (Some(o), _, true) => Some((
                        style.symbol(&[Action::Update]),
                        key.clone(),
                        format!("{} -> {UNKNOWN}{note}", abbreviated(&shown(o))),
                    )),
                    (Some(o), None, false) => Some((
                        style.symbol(&[Action::Delete]),
                        key.clone(),
                        format!("{} -> null{note}", shown(o)),
                    )),
                    (Some(o), Some(n), false) if o == n => {
                        if change.is_no_op()
                            || change.actions == [Action::Update]
                                && !matches!(o, serde_json::Value::String(_))
                        {
                            None
                        } else {
                            Some((" ".into(), key.clone(), shown(o)))
                        }
                    }
                    (Some(o), Some(n), false) if !sensitive && o.is_object() && n.is_object() => {
                        let mut block = String::from("{\n");
                        nested_diff(&mut block, style, 10, o, n);
                        block.push_str("        }");
                        Some((
                            style.symbol(&[Action::Update]),
                            key.clone(),
                            format!("{block}{note}"),
                        ))
                    }
                    (Some(o), Some(n), false) => {
                        if let (Some(a), Some(b)) = (o.as_str(), n.as_str())
                            && (multi_line(o) || multi_line(n))
                            && !sensitive
                        {
                            let diff = line_diff(style, 12, a, b);
                            return Some((
                                style.symbol(&[Action::Update]),
                                key.clone(),
                                format!("{diff}{note}"),
                            ));
                        }
                        if is_secret(o) && is_secret(n) {
                            // A secret that changed: that it changed is all a plan says.
                            return Some((
                                style.symbol(&[Action::Update]),
                                key.clone(),
                                format!("{SENSITIVE}{note}"),
                            ));
                        }
                        Some((
                            style.symbol(&[Action::Update]),
                            key.clone(),
                            format!("{} -> {}{note}", shown(o), shown(n)),
                        ))
                    }
                },
            }
        })
        .collect();
    let width = rows.iter().map(|(_, k, _)| k.len()).max().unwrap_or(0);
    for (symbol, key, text) in rows {
        let _ = writeln!(out, "      {symbol} {key:<width$} = {text}");
    }
}

/// The members of two objects that differ, one line each, nested objects as nested blocks;
/// the unchanged ones are counted, not shown.
fn nested_diff(
    out: &mut String,
    style: &Style,
    indent: usize,
    old: &serde_json::Value,
    new: &serde_json::Value,
) {
    let empty = serde_json::Map::new();
    let before = old.as_object().unwrap_or(&empty);
    let after = new.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.dedup();
    let mut seen = std::collections::HashSet::new();
    let mut unchanged = 0;
    let pad = " ".repeat(indent);
    for key in keys {
        if !seen.insert(key) {
            continue;
        }
        let shown_key = show_key(key);
        match (before.get(key), after.get(key)) {
            (Some(o), Some(n)) if o == n => unchanged += 1,
            (Some(o), Some(n)) if o.is_object() && n.is_object() => {
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {{",
                    style.symbol(&[Action::Update])
                );
                nested_diff(out, style, indent + 4, o, n);
                let _ = writeln!(out, "{pad}  }}");
            }
            (Some(o), Some(n)) if multi_line(o) || multi_line(n) => {
                let diff = line_diff(
                    style,
                    indent + 4,
                    o.as_str().unwrap_or(""),
                    n.as_str().unwrap_or(""),
                );
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {diff}",
                    style.symbol(&[Action::Update])
                );
            }
            (Some(o), Some(n)) if is_secret(o) && is_secret(n) => {
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {SENSITIVE}",
                    style.symbol(&[Action::Update]),
                );
            }
            (Some(o), Some(n)) => {
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {} -> {}",
                    style.symbol(&[Action::Update]),
                    show(o),
                    show(n)
                );
            }
            (None, Some(n)) => {
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {}",
                    style.symbol(&[Action::Create]),
                    show(n)
                );
            }
            (Some(o), None) => {
                let _ = writeln!(
                    out,
                    "{pad}{} {shown_key} = {} -> null",
                    style.symbol(&[Action::Delete]),
                    show(o)
                );
            }
            (None, None) => {}
        }
    }
    if unchanged > 0 {
        let _ = writeln!(
            out,
            "{pad}  # ({unchanged} unchanged {} hidden)",
            if unchanged == 1 {
                "attribute"
            } else {
                "attributes"
            }
        );
    }
}

/// A long object or list that is about to be recomputed: its old value is not worth a screen.
fn abbreviated(text: &str) -> String {
    match text.chars().next() {
        Some('{') if text.len() > 80 => "{ ... }".to_owned(),
        Some('[') if text.len() > 80 => "[ ... ]".to_owned(),
        _ => text.to_owned(),
    }
}

/// A heredoc of the lines that differ between two multi-line strings. Secret lines are shown
/// masked; when the secret changed, its masked lines are shown as changed.
fn line_diff(style: &Style, indent: usize, a: &str, b: &str) -> String {
    let pad = " ".repeat(indent);
    // A secret shown whole: a change of it can only be shown as a changed line.
    let whole = |s: &str| matches!(secret_parts(s), Some((_, None)));
    let secret_changed = (whole(a) || whole(b)) && a != b;
    let (a, b) = (display_text(a), display_text(b));
    let mut diff = String::from("<<-EOT\n");
    let mut lines: Vec<(similar::ChangeTag, String)> = Vec::new();
    for change in similar::TextDiff::from_lines(a, b).iter_all_changes() {
        let text = change.value().to_owned();
        if secret_changed
            && change.tag() == similar::ChangeTag::Equal
            && text.trim_end_matches('\n') == SENSITIVE
        {
            lines.push((similar::ChangeTag::Delete, text.clone()));
            lines.push((similar::ChangeTag::Insert, text));
        } else {
            lines.push((change.tag(), text));
        }
    }
    for (tag, value) in lines {
        // A masked line's hidden digest is for the comparison above, never for the reader.
        let value = match value.split_once(crate::sensitive::LINE_DIGEST) {
            Some((shown, rest)) if rest.ends_with('\n') => format!("{shown}\n"),
            Some((shown, _)) => shown.to_owned(),
            None => value,
        };
        let sign = match tag {
            similar::ChangeTag::Delete => style.paint("31", "-"),
            similar::ChangeTag::Insert => style.paint("32", "+"),
            similar::ChangeTag::Equal => " ".into(),
        };
        let _ = write!(diff, "{pad}{sign} {value}");
        if !value.ends_with('\n') {
            diff.push('\n');
        }
    }
    let _ = write!(diff, "{}EOT", " ".repeat(indent.saturating_sub(4)));
    diff
}

/// A multi-line string as a heredoc, its masked lines shown masked.
fn heredoc(indent: usize, text: &str) -> String {
    let mut out = String::from("<<-EOT\n");
    for line in display_text(text).lines() {
        let line = line
            .split_once(crate::sensitive::LINE_DIGEST)
            .map_or(line, |(shown, _)| shown);
        let _ = writeln!(out, "{}{line}", " ".repeat(indent));
    }
    let _ = write!(out, "{}EOT", " ".repeat(indent.saturating_sub(4)));
    out
}

/// Every member of an object that is created or destroyed, nested objects as nested blocks.
fn whole_value(out: &mut String, indent: usize, symbol: &str, value: &serde_json::Value) {
    let pad = " ".repeat(indent);
    for (key, v) in value.as_object().into_iter().flatten() {
        let shown_key = show_key(key);
        if v.is_object() {
            let _ = writeln!(out, "{pad}{symbol} {shown_key} = {{");
            whole_value(out, indent + 4, symbol, v);
            let _ = writeln!(out, "{pad}  }}");
        } else {
            if multi_line(v) {
                let text = heredoc(indent + 4, v.as_str().unwrap_or_default());
                let _ = writeln!(out, "{pad}{symbol} {shown_key} = {text}");
            } else {
                let _ = writeln!(out, "{pad}{symbol} {shown_key} = {}", show(v));
            }
        }
    }
}

/// Object keys as HCL writes them: bare when they are identifiers, quoted otherwise.
fn show_key(key: &str) -> String {
    let bare = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        serde_json::Value::String(key.to_owned()).to_string()
    }
}

fn change_block(out: &mut String, style: &Style, change: &ResourceChange, verb: &str) {
    let change = &displayed(change);
    let header = match reason(change) {
        Some(r) => format!("  # {} {verb} {r}", change.address),
        None => format!("  # {} {verb}", change.address),
    };
    let _ = writeln!(out, "{}", style.paint("1", &header));
    for line in provenance(change)
        .into_iter()
        .chain(collateral_lines(change))
    {
        let _ = writeln!(out, "{line}");
    }
    let name = crate::address::Address::parse(&change.address)
        .ok()
        .and_then(|a| a.0.last().map(|s| s.name.clone()))
        .unwrap_or_default();
    let name = name.as_str();
    let _ = writeln!(
        out,
        "  {} resource \"{}\" \"{}\" {{",
        style.symbol(&change.actions),
        change.type_name,
        name.split('[').next().unwrap_or(name)
    );
    fields(out, style, change);
    let _ = writeln!(out, "    }}\n");
}

/// Each object changed outside gpustack, field by field.
fn drift_blocks(out: &mut String, style: &Style, plan: &Plan) {
    for change in &plan.resource_drift {
        let verb = if change.actions == [Action::Delete] {
            "has been deleted"
        } else {
            "has changed"
        };
        let mut shown = change.clone();
        shown.action_reason = None;
        change_block(out, style, &shown, verb);
    }
}

/// The plan as a person reads it in a terminal.
pub fn plan_text(plan: &Plan, color: bool) -> String {
    let style = Style { color };
    let mut out = String::new();
    if !plan.resource_drift.is_empty() {
        out.push_str("Objects have changed outside of gpustack:\n\n");
        drift_blocks(&mut out, &style, plan);
    }
    if plan.mode == PlanMode::RefreshOnly {
        if plan.resource_drift.is_empty() {
            out.push_str("No changes. The state matches the live objects.\n");
        } else {
            let _ = writeln!(
                out,
                "Applying this plan will update the state to match, changing no object.\n"
            );
        }
        return out;
    }
    let changes: Vec<&ResourceChange> = plan
        .resource_changes
        .iter()
        .filter(|c| !c.is_no_op() || c.importing.is_some() || c.previous_address.is_some())
        .collect();
    if changes.is_empty() && !plan.has_changes() {
        out.push_str("No changes. The infrastructure matches the configuration.\n");
        return out;
    }
    if !changes.is_empty() {
        out.push_str("gpustack will perform the following actions:\n\n");
        for change in changes {
            change_block(&mut out, &style, change, describe(change));
        }
    }
    if !plan.gpu_capacity.is_empty() {
        let _ = writeln!(out, "{}", style.paint("1", "GPU capacity:"));
        for line in &plan.gpu_capacity {
            let _ = writeln!(out, "  {}", line.text());
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{} {}", style.paint("1", "Plan:"), summary(plan));
    let outputs: Vec<_> = plan
        .output_changes
        .iter()
        .filter(|(_, o)| o.actions != [Action::NoOp])
        .collect();
    if !outputs.is_empty() {
        out.push_str("\nChanges to outputs:\n");
        for (name, o) in outputs {
            let value = if o.sensitive {
                SENSITIVE.to_owned()
            } else if o.after_unknown {
                UNKNOWN.to_owned()
            } else {
                show(&o.after)
            };
            let _ = writeln!(out, "  {} {name} = {value}", style.symbol(&o.actions));
        }
    }
    out
}

/// A side of a change for machines: each sensitive part `"(sensitive value)"`, at any depth.
fn mask(value: &serde_json::Value, marks: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match (value, marks) {
        (J::Null, J::Bool(true)) => J::Null,
        (_, J::Bool(true)) => J::String(SENSITIVE.into()),
        (J::Object(map), J::Object(m)) => J::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), mask(v, m.get(k).unwrap_or(&J::Bool(false)))))
                .collect(),
        ),
        (J::Array(items), J::Array(m)) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| mask(v, m.get(i).unwrap_or(&J::Bool(false))))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Terraform's JSON plan format version that [`plan_json`] follows.
pub const TERRAFORM_JSON_FORMAT: &str = "1.2";

/// Where an instance address sits: `module.a.module.b`, its resource's name and its key.
struct AddressParts {
    module: Option<String>,
    name: String,
    index: Option<serde_json::Value>,
}

fn address_parts(change: &ResourceChange) -> AddressParts {
    let config = change.config_address.as_str();
    let mut rest = config;
    let mut module = Vec::new();
    while let Some(after) = rest.strip_prefix("module.") {
        let (name, tail) = after.split_once('.').unwrap_or((after, ""));
        module.push(format!("module.{name}"));
        rest = tail;
    }
    let name = rest.rsplit('.').next().unwrap_or(rest).to_owned();
    let index = change
        .address
        .strip_prefix(config)
        .and_then(|key| key.strip_prefix('['))
        .and_then(|key| key.strip_suffix(']'))
        .and_then(|key| serde_json::from_str(key).ok());
    AddressParts {
        module: (!module.is_empty()).then(|| module.join(".")),
        name,
        index,
    }
}

/// The reason in Terraform's vocabulary, without gpustack's detail after the colon; None for
/// reasons Terraform has no name for.
fn terraform_reason(change: &ResourceChange) -> Option<&'static str> {
    let reason = change.action_reason.as_deref()?;
    let code = reason.split(':').next().unwrap_or(reason);
    Some(match code {
        "replace_because_cannot_update" => "replace_because_cannot_update",
        "replace_by_request" => "replace_by_request",
        "replace_by_triggers" => "replace_by_triggers",
        "delete_because_no_resource_config" => "delete_because_no_resource_config",
        "delete_because_no_instance" if change.address.ends_with("\"]") => {
            "delete_because_each_key"
        }
        "delete_because_no_instance" => "delete_because_count_index",
        _ => return None,
    })
}

/// Terraform writes `{}`, not `false`, for an object with no unknown or sensitive part.
fn marks_of(value: &serde_json::Value, marks: &serde_json::Value) -> serde_json::Value {
    match (value, marks) {
        (serde_json::Value::Object(_), serde_json::Value::Bool(false)) => serde_json::json!({}),
        _ => marks.clone(),
    }
}

fn change_json(change: &ResourceChange) -> serde_json::Value {
    let parts = address_parts(change);
    let after_marks = if change.after.is_null() {
        serde_json::json!({})
    } else {
        marks_of(&change.after, &change.after_unknown)
    };
    // Terraform's replace_paths are attribute paths; gpustack's reasons say more, under a key
    // of their own.
    let replace_paths: Vec<serde_json::Value> = change
        .replace_paths
        .iter()
        .map(|p| serde_json::json!([p.split([' ', '.']).next().unwrap_or(p)]))
        .collect();
    let mut json = serde_json::json!({
        "address": change.address,
        "mode": change.mode,
        "type": change.type_name,
        "name": parts.name,
        "provider_name": change.provider,
        "change": {
            "actions": change.actions,
            "before": mask(&change.before, &change.before_sensitive),
            "after": mask(&change.after, &change.after_sensitive),
            "after_unknown": after_marks,
            "before_sensitive": marks_of(&change.before, &change.before_sensitive),
            "after_sensitive": marks_of(&change.after, &change.after_sensitive),
            "replace_paths": replace_paths,
            "gpustack_replace_attributes": change.replace_paths,
        },
    });
    if let Some(module) = parts.module {
        json["module_address"] = module.into();
    }
    if let Some(index) = parts.index {
        json["index"] = index;
    }
    if let Some(reason) = terraform_reason(change) {
        json["action_reason"] = reason.into();
    }
    if let Some(reason) = &change.action_reason {
        json["gpustack_action_reason"] = reason.clone().into();
    }
    // Terraform's names: `change.importing.id`, `previous_address`.
    if let Some(importing) = &change.importing {
        json["change"]["importing"] =
            serde_json::json!({ "id": importing.id, "adopted": importing.adopted });
    }
    if let Some(previous) = &change.previous_address {
        json["previous_address"] = previous.clone().into();
    }
    // gpustack's own: what the deletion takes with it that the stack does not manage.
    if let Some(collateral) = change
        .collateral
        .as_ref()
        .filter(|c| !c.objects.is_empty() || !c.unread.is_empty())
    {
        json["change"]["gpustack_collateral"] = serde_json::json!({
            "describe": collateral.describe,
            "objects": collateral.objects,
            "unread": collateral.unread,
        });
    }
    json
}

/// A value with its unknown parts left out, as `planned_values` holds it.
fn known_part(value: &serde_json::Value, unknown: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match (value, unknown) {
        (J::Object(map), J::Object(u)) => J::Object(
            map.iter()
                .filter(|(k, _)| u.get(*k) != Some(&J::Bool(true)))
                .map(|(k, v)| {
                    (
                        k.clone(),
                        known_part(v, u.get(k).unwrap_or(&J::Bool(false))),
                    )
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Terraform's `configuration`: the plan's own snapshot of the stack, per module (not per
/// instance): its resources and module calls with their expressions, each a `constant_value`
/// or the `references` it makes.
fn configuration(plan: &Plan) -> serde_json::Value {
    let root = std::path::PathBuf::from(&plan.snapshot.stack_dir);
    let files = crate::config::Files::Snapshot {
        root: root.clone(),
        files: std::sync::Arc::new(plan.snapshot.files.clone()),
    };
    let mut sources = crate::source::SourceMap::new(&root);
    let mut diags = crate::diag::Diags::default();
    let stack = crate::config::load_stack_from(&files, &root, &mut sources, &mut diags);
    if stack.modules.is_empty() {
        return serde_json::json!({});
    }
    // What holds a secret, by configuration address: its attributes' marks in the changes.
    let mut marks: std::collections::HashMap<&str, &serde_json::Value> =
        std::collections::HashMap::new();
    for c in plan.resource_changes.iter().chain(&plan.resource_drift) {
        for side in [&c.after_sensitive, &c.before_sensitive] {
            let entry = marks.entry(c.config_address.as_str()).or_insert(side);
            if !any_mark(entry) {
                *entry = side;
            }
        }
    }
    configured_module(&stack, 0, &marks)
}

type Marks<'p> = std::collections::HashMap<&'p str, &'p serde_json::Value>;

fn configured_module(
    stack: &crate::config::Stack,
    index: usize,
    marks: &Marks<'_>,
) -> serde_json::Value {
    let m = &stack.modules[index];
    let prefix = m.prefix();
    let unmarked = serde_json::Value::Bool(true);
    let resources: Vec<serde_json::Value> = m
        .resources
        .values()
        .chain(m.data.values())
        .map(|r| {
            let mut resource = serde_json::json!({
                "address": r.local_address(),
                "mode": match r.mode {
                    crate::config::ResourceMode::Managed => "managed",
                    crate::config::ResourceMode::Data => "data",
                },
                "type": r.type_name,
                "name": r.name,
                "provider_config_key": r
                    .provider
                    .as_ref()
                    .map_or_else(|| r.type_name.split('_').next().unwrap_or_default().to_owned(), |p| p.key()),
                "expressions": body_expressions(
                    &r.body.body,
                    // A resource the plan does not cover (--target) has no marks to go by:
                    // none of its literals is shown.
                    marks
                        .get(format!("{prefix}{}", r.local_address()).as_str())
                        .copied()
                        .unwrap_or(&unmarked),
                ),
                "schema_version": 0,
            });
            if let Some(count) = &r.count {
                resource["count_expression"] = expression_json(&count.expr, false);
            }
            if let Some(for_each) = &r.for_each {
                resource["for_each_expression"] = expression_json(&for_each.expr, false);
            }
            resource
        })
        .collect();
    let mut json = serde_json::json!({ "resources": resources });
    let calls: serde_json::Map<String, serde_json::Value> = m
        .calls
        .values()
        .map(|call| {
            let mut entry = serde_json::json!({
                "source": call.source,
                "expressions": call
                    .args
                    .iter()
                    .map(|(k, (e, _))| {
                        // An argument for a sensitive variable is a secret, whatever it is.
                        let secret = m.children.get(&call.name).is_some_and(|&child| {
                            stack.modules[child].variables.get(k).is_some_and(|v| v.sensitive)
                        });
                        (k.clone(), expression_json(&e.expr, secret))
                    })
                    .collect::<serde_json::Map<_, _>>(),
            });
            if let Some(&child) = m.children.get(&call.name) {
                entry["module"] = configured_module(stack, child, marks);
            }
            if let Some(count) = &call.count {
                entry["count_expression"] = expression_json(&count.expr, false);
            }
            if let Some(for_each) = &call.for_each {
                entry["for_each_expression"] = expression_json(&for_each.expr, false);
            }
            (call.name.clone(), entry)
        })
        .collect();
    if !calls.is_empty() {
        json["module_calls"] = calls.into();
    }
    json
}

/// Whether a value's marks hold a secret anywhere.
fn any_mark(marks: &serde_json::Value) -> bool {
    match marks {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Array(items) => items.iter().any(any_mark),
        serde_json::Value::Object(map) => map.values().any(any_mark),
        _ => false,
    }
}

/// A body's attributes as expressions, and its nested blocks as lists of bodies; the literal
/// of an attribute that holds a secret is left out.
fn body_expressions(
    body: &hcl_edit::structure::Body,
    marks: &serde_json::Value,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    let no_marks = serde_json::Value::Bool(false);
    for structure in body.iter() {
        match structure {
            hcl_edit::structure::Structure::Attribute(a) => {
                let key = a.key.as_str();
                let secret = any_mark(marks)
                    && (*marks == serde_json::Value::Bool(true)
                        || marks.get(key).is_some_and(any_mark));
                out.insert(key.to_owned(), expression_json(&a.value, secret));
            }
            hcl_edit::structure::Structure::Block(b) => {
                let key = b.ident.as_str();
                let inner = marks
                    .get(key)
                    .map(|m| m.get(0).unwrap_or(m))
                    .unwrap_or(&no_marks);
                let entry = out
                    .entry(key.to_owned())
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let Some(list) = entry.as_array_mut() {
                    list.push(body_expressions(&b.body, inner));
                }
            }
        }
    }
    serde_json::Value::Object(out)
}

/// `{"constant_value": ...}` for a literal, else `{"references": [...]}` with each reference
/// and its shorter prefixes, as Terraform lists them (`aws_instance.a.id`, `aws_instance.a`).
fn expression_json(expression: &hcl_edit::expr::Expression, secret: bool) -> serde_json::Value {
    if let Some(value) = crate::lang::literal::literal_value(expression) {
        let json = value.to_json();
        // A literal secret (a sensitive attribute's, or one that looks like a credential) is
        // said to be there, never shown.
        if secret || gpustack_protocol::secrets::contains_any(&json.to_string()) {
            return serde_json::json!({ "sensitive": true });
        }
        return serde_json::json!({ "constant_value": json });
    }
    let mut references: Vec<String> = Vec::new();
    for r in crate::lang::refs::references(expression) {
        let names = r.names();
        let shortest = match names.first() {
            Some(&"data") => 3,
            _ => 2,
        };
        for n in (shortest.min(names.len())..=names.len()).rev() {
            let text = names[..n].join(".");
            if !references.contains(&text) {
                references.push(text);
            }
        }
    }
    serde_json::json!({ "references": references })
}

fn resource_values(
    change: &ResourceChange,
    values: serde_json::Value,
    sensitive: &serde_json::Value,
) -> serde_json::Value {
    let parts = address_parts(change);
    let mut resource = serde_json::json!({
        "address": change.address,
        "mode": change.mode,
        "type": change.type_name,
        "name": parts.name,
        "provider_name": change.provider,
        "schema_version": 0,
        "values": values,
        "sensitive_values": marks_of(&change.after, sensitive),
    });
    if let Some(index) = parts.index {
        resource["index"] = index;
    }
    resource
}

/// A resource as `planned_values` holds it: its value after the change, known parts only.
fn planned_resource(change: &ResourceChange) -> serde_json::Value {
    let values = known_part(
        &mask(&change.after, &change.after_sensitive),
        &change.after_unknown,
    );
    resource_values(change, values, &change.after_sensitive)
}

/// A resource as `prior_state` holds it.
fn prior_resource(change: &ResourceChange) -> serde_json::Value {
    let values = mask(&change.before, &change.before_sensitive);
    resource_values(change, values, &change.before_sensitive)
}

/// Serializes the items its function's iterator makes one at a time: a large array is
/// written as it is made, never held whole.
struct Streamed<F>(F);

impl<F, I> serde::Serialize for Streamed<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// The plan in Terraform's documented JSON plan format (format_version 1.2: `planned_values`,
/// `prior_state`, `configuration`, `resource_changes`, `resource_drift`, `output_changes`),
/// with sensitive values masked, so that tools written for Terraform plans (OPA, conftest,
/// checkov, cost estimators) read it; gpustack's own parts are under keys of their own
/// (`gpustack_*`, `gpu_capacity`, `summary`).
///
/// It serializes as it is written: each resource's part is made, written and dropped in turn,
/// so that the JSON of a plan of many thousands of resources is never held in memory whole.
pub fn plan_json(plan: &Plan) -> PlanJson<'_> {
    PlanJson(plan)
}

/// [`plan_json`]'s document.
pub struct PlanJson<'p>(&'p Plan);

impl serde::Serialize for PlanJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let plan = self.0;
        let (add, change, destroy) = plan.counts();
        let output_values: serde_json::Map<_, _> = plan
            .output_changes
            .iter()
            .filter(|(_, o)| !o.after_unknown && !o.actions.contains(&Action::Delete))
            .map(|(name, o)| {
                (
                    name.clone(),
                    serde_json::json!({ "sensitive": o.sensitive, "value": shown_after(o) }),
                )
            })
            .collect();
        let planned = ModuleTree::of(
            plan.resource_changes
                .iter()
                .filter(|c| !c.after.is_null() && c.actions != [Action::Forget]),
            planned_resource,
        );
        // The providers the changes use, by configuration key.
        let mut providers = serde_json::Map::new();
        for c in &plan.resource_changes {
            let key = c.provider.trim_start_matches("provider.").to_owned();
            providers.entry(key.clone()).or_insert_with(|| {
                serde_json::json!({ "name": key.split('.').next().unwrap_or(&key), "full_name": key })
            });
        }
        let output_changes: serde_json::Map<_, _> = plan
            .output_changes
            .iter()
            .map(|(name, o)| {
                (
                    name.clone(),
                    serde_json::json!({
                        "actions": o.actions,
                        "after": shown_after(o),
                        "after_unknown": o.after_unknown,
                        "before_sensitive": o.sensitive,
                        "after_sensitive": o.sensitive,
                    }),
                )
            })
            .collect();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("format_version", TERRAFORM_JSON_FORMAT)?;
        map.serialize_entry("gpustack_format_version", &crate::plan::FORMAT_VERSION)?;
        map.serialize_entry("gpustack_version", &plan.gpustack_version)?;
        map.serialize_entry("mode", &plan.mode)?;
        map.serialize_entry("lineage", &plan.lineage)?;
        map.serialize_entry("serial", &plan.serial)?;
        map.serialize_entry("config_hash", &plan.config_hash)?;
        map.serialize_entry(
            "planned_values",
            &PlannedValues {
                root_module: planned,
                outputs: (!output_values.is_empty()).then_some(output_values),
            },
        )?;
        map.serialize_entry(
            "resource_changes",
            &Streamed(|| plan.resource_changes.iter().map(change_json)),
        )?;
        map.serialize_entry(
            "resource_drift",
            &Streamed(|| plan.resource_drift.iter().map(change_json)),
        )?;
        map.serialize_entry("output_changes", &output_changes)?;
        map.serialize_entry(
            "configuration",
            &serde_json::json!({
                "provider_config": providers,
                "root_module": configuration(plan),
            }),
        )?;
        map.serialize_entry("gpu_capacity", &plan.gpu_capacity)?;
        map.serialize_entry(
            "summary",
            &serde_json::json!({
                "import": plan.resource_changes.iter().filter(|c| c.importing.is_some()).count(),
                "add": add, "change": change, "destroy": destroy,
                "forget": plan.resource_changes.iter().filter(|c| c.actions == [Action::Forget]).count(),
                "drifted": plan.resource_drift.len(),
            }),
        )?;
        map.serialize_entry("applyable", &plan.has_changes())?;
        map.serialize_entry("complete", &true)?;
        map.serialize_entry("errored", &false)?;
        map.serialize_entry("has_changes", &plan.has_changes())?;
        let prior = ModuleTree::of(
            plan.resource_changes.iter().filter(|c| !c.before.is_null()),
            prior_resource,
        );
        if !prior.is_empty() {
            map.serialize_entry(
                "prior_state",
                &PriorState {
                    format_version: "1.0",
                    values: RootModule { root_module: prior },
                },
            )?;
        }
        map.end()
    }
}

/// An output's value after the change as the JSON plan shows it: masked when sensitive.
fn shown_after(output: &crate::plan::OutputChange) -> serde_json::Value {
    if output.sensitive {
        serde_json::Value::String(SENSITIVE.into())
    } else {
        output.after.clone()
    }
}

#[derive(serde::Serialize)]
struct PlannedValues<'p> {
    root_module: ModuleTree<'p>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outputs: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(serde::Serialize)]
struct PriorState<'p> {
    format_version: &'static str,
    values: RootModule<'p>,
}

#[derive(serde::Serialize)]
struct RootModule<'p> {
    root_module: ModuleTree<'p>,
}

/// Terraform's module tree of resource values (`planned_values`, `prior_state`): the root
/// module's resources, and each module's under `child_modules`, in the order the changes
/// first name them. It holds references; each resource's JSON is made as it is written.
struct ModuleTree<'p> {
    root: Vec<&'p ResourceChange>,
    children: indexmap::IndexMap<String, Vec<&'p ResourceChange>>,
    values: fn(&ResourceChange) -> serde_json::Value,
}

impl<'p> ModuleTree<'p> {
    fn of(
        changes: impl Iterator<Item = &'p ResourceChange>,
        values: fn(&ResourceChange) -> serde_json::Value,
    ) -> Self {
        let mut tree = Self {
            root: Vec::new(),
            children: indexmap::IndexMap::new(),
            values,
        };
        for change in changes {
            match address_parts(change).module {
                None => tree.root.push(change),
                Some(m) => tree.children.entry(m).or_default().push(change),
            }
        }
        tree
    }

    fn is_empty(&self) -> bool {
        self.root.is_empty() && self.children.is_empty()
    }
}

impl serde::Serialize for ModuleTree<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        fn resources<'a>(
            changes: &'a [&'a ResourceChange],
            values: fn(&ResourceChange) -> serde_json::Value,
        ) -> impl serde::Serialize + 'a {
            Streamed(move || changes.iter().map(move |c| values(c)))
        }
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("resources", &resources(&self.root, self.values))?;
        if !self.children.is_empty() {
            map.serialize_entry(
                "child_modules",
                &Streamed(|| {
                    self.children.iter().map(|(address, changes)| ChildModule {
                        address,
                        resources: resources(changes, self.values),
                    })
                }),
            )?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct ChildModule<'a, R> {
    address: &'a str,
    resources: R,
}

/// `1 to import, 0 to add, 1 to change, 0 to destroy.` (imports and forgets only when there are
/// some, as Terraform writes it).
pub fn summary(plan: &Plan) -> String {
    let (add, change, destroy) = plan.counts();
    let imports = plan
        .resource_changes
        .iter()
        .filter(|c| c.importing.is_some())
        .count();
    let forgets = plan
        .resource_changes
        .iter()
        .filter(|c| c.actions == [Action::Forget])
        .count();
    let mut text = String::new();
    if imports > 0 {
        let _ = write!(text, "{imports} to import, ");
    }
    let _ = write!(
        text,
        "{add} to add, {change} to change, {destroy} to destroy"
    );
    if forgets > 0 {
        let _ = write!(text, ", {forgets} to forget");
    }
    text.push('.');
    text
}

/// A pull-request comment: summary table, then the plain-text plan in a collapsible block.
pub fn plan_markdown(plan: &Plan) -> String {
    let mut out = String::from("### gpustack plan\n\n");
    if !plan.has_changes() {
        out.push_str("**No changes.** The infrastructure matches the configuration.\n");
    } else {
        let _ = writeln!(out, "**{}**\n", summary(plan));
        out.push_str("| Action | Resource | Reason |\n|---|---|---|\n");
        for c in plan
            .resource_changes
            .iter()
            .filter(|c| !c.is_no_op() || c.importing.is_some() || c.previous_address.is_some())
        {
            let action = match c.actions.as_slice() {
                _ if c.importing.is_some() && c.actions == [Action::NoOp] => "📥 import",
                [Action::NoOp] => "➡️ move",
                [Action::Create] => "➕ create",
                [Action::Update] if c.importing.is_some() => "📥 import and update",
                [Action::Update] => "🔄 update",
                [Action::Delete] => "🗑️ destroy",
                [Action::Forget] => "👋 forget",
                _ => "♻️ replace",
            };
            let _ = writeln!(
                out,
                "| {action} | `{}` | {} |",
                c.address,
                reason(c)
                    .unwrap_or_default()
                    .trim_matches(|ch| ch == '(' || ch == ')')
            );
        }
    }
    for c in &plan.resource_changes {
        let Some(collateral) = c.collateral.as_ref().filter(|c| !c.objects.is_empty()) else {
            continue;
        };
        let shown: Vec<String> = collateral
            .objects
            .iter()
            .take(COLLATERAL_SHOWN)
            .map(|o| format!("`{o}`"))
            .collect();
        let more = collateral.objects.len().saturating_sub(COLLATERAL_SHOWN);
        let _ = writeln!(
            out,
            "\n**Also deleted with `{}`** ({}), not managed by this stack: {}{}.",
            c.address,
            collateral.describe,
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    if !plan.gpu_capacity.is_empty() {
        out.push_str("\n**GPU capacity**\n\n| Where | Resource | Before | After | Why |\n|---|---|---|---|---|\n");
        for line in &plan.gpu_capacity {
            let amount =
                |n: Option<f64>| n.map_or_else(|| "0".to_owned(), gpustack_protocol::format_number);
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} |",
                line.change.scope,
                line.change.resource,
                amount(line.change.before),
                amount(line.change.after),
                line.change.detail
            );
        }
    }
    if !plan.resource_drift.is_empty() {
        let _ = writeln!(
            out,
            "\n**Drift:** {} object(s) changed outside gpustack: {}.",
            plan.resource_drift.len(),
            plan.resource_drift
                .iter()
                .map(|c| format!("`{}`", c.address))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = write!(
        out,
        "\n<details><summary>Full plan</summary>\n\n```diff\n{}```\n\n</details>\n",
        plan_text(plan, false)
    );
    out
}

/// Drift as a person reads it: which objects changed outside gpustack, field by field.
pub fn drift_text(plan: &Plan, color: bool) -> String {
    let style = Style { color };
    let mut out = String::new();
    if plan.resource_drift.is_empty() && plan.gpu_drift.is_empty() {
        out.push_str("No drift: every object matches the state and every GPU node advertises what the GPU model expects.\n");
        return out;
    }
    if !plan.resource_drift.is_empty() {
        let _ = writeln!(
            out,
            "Drift: {} object(s) changed outside gpustack.\n",
            plan.resource_drift.len()
        );
        drift_blocks(&mut out, &style, plan);
        out.push_str("Run gpustack apply to bring them back to the configuration.\n");
    }
    if !plan.gpu_drift.is_empty() {
        if !plan.resource_drift.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{} GPU capacity below what the configuration gives:",
            style.paint("1", "Capacity drift:")
        );
        for d in &plan.gpu_drift {
            let _ = writeln!(out, "  {}", d.text());
        }
        out.push_str("No apply restores a GPU that is gone: check the node (nvidia-smi, the device plugin's log, MIG manager's state).\n");
    }
    out
}

pub fn drift_json(plan: &Plan) -> serde_json::Value {
    serde_json::json!({
        "format_version": crate::plan::FORMAT_VERSION,
        "drifted": !plan.resource_drift.is_empty() || !plan.gpu_drift.is_empty(),
        "drift_count": plan.resource_drift.len(),
        "resource_drift": plan.resource_drift.iter().map(change_json).collect::<Vec<_>>(),
        "gpu_capacity_drift": plan.gpu_drift,
    })
}

pub fn drift_markdown(plan: &Plan) -> String {
    let mut out = String::from("### gpustack drift\n\n");
    if plan.resource_drift.is_empty() && plan.gpu_drift.is_empty() {
        out.push_str("No drift.\n");
        return out;
    }
    if !plan.gpu_drift.is_empty() {
        out.push_str("| Node | Resource | Allocatable | Expected | Why |\n|---|---|---|---|---|\n");
        for d in &plan.gpu_drift {
            let _ = writeln!(
                out,
                "| `{}` | `{}` | {} | {} | {} |",
                d.node,
                d.resource,
                gpustack_protocol::format_number(d.allocatable),
                gpustack_protocol::format_number(d.expected),
                d.detail
            );
        }
        out.push('\n');
    }
    if plan.resource_drift.is_empty() {
        return out;
    }
    out.push_str("| Resource | What happened |\n|---|---|\n");
    for c in &plan.resource_drift {
        let _ = writeln!(
            out,
            "| `{}` | {} |",
            c.address,
            reason(c)
                .unwrap_or_default()
                .trim_matches(|ch| ch == '(' || ch == ')')
        );
    }
    let _ = write!(
        out,
        "\n<details><summary>Details</summary>\n\n```diff\n{}```\n\n</details>\n",
        drift_text(plan, false)
    );
    out
}

/// Prometheus text format for a drift run (node-exporter textfile collector).
pub fn drift_metrics(plan: &Plan, stack: &str, now_seconds: u64, errored: bool) -> String {
    let stack = stack.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::new();
    out.push_str("# HELP gpustack_drift_resources Objects that changed outside gpustack at the last drift run.\n# TYPE gpustack_drift_resources gauge\n");
    let _ = writeln!(
        out,
        "gpustack_drift_resources{{stack=\"{stack}\"}} {}",
        plan.resource_drift.len()
    );
    out.push_str("# HELP gpustack_drift_resource 1 for each object that drifted, by address.\n# TYPE gpustack_drift_resource gauge\n");
    for c in &plan.resource_drift {
        let _ = writeln!(
            out,
            "gpustack_drift_resource{{stack=\"{stack}\",address=\"{}\",type=\"{}\"}} 1",
            c.address.replace('"', "\\\""),
            c.type_name
        );
    }
    out.push_str("# HELP gpustack_gpu_capacity_drift GPU resources a node advertises below what the GPU model expects, by node and resource (the shortfall).\n# TYPE gpustack_gpu_capacity_drift gauge\n");
    for d in &plan.gpu_drift {
        let _ = writeln!(
            out,
            "gpustack_gpu_capacity_drift{{stack=\"{stack}\",node=\"{}\",resource=\"{}\"}} {}",
            d.node.replace('"', "\\\""),
            d.resource,
            gpustack_protocol::format_number(d.expected - d.allocatable)
        );
    }
    out.push_str("# HELP gpustack_drift_last_run_timestamp_seconds When the last drift run finished.\n# TYPE gpustack_drift_last_run_timestamp_seconds gauge\n");
    let _ = writeln!(
        out,
        "gpustack_drift_last_run_timestamp_seconds{{stack=\"{stack}\"}} {now_seconds}"
    );
    out.push_str("# HELP gpustack_drift_last_run_success 1 if the last drift run completed without error.\n# TYPE gpustack_drift_last_run_success gauge\n");
    let _ = writeln!(
        out,
        "gpustack_drift_last_run_success{{stack=\"{stack}\"}} {}",
        u8::from(!errored)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_names_the_first_objects_it_takes_with_it_and_counts_the_rest() {
        let objects: Vec<String> = (0..12).map(|i| format!("ConfigMap team/c{i:02}")).collect();
        let change: ResourceChange = serde_json::from_value(serde_json::json!({
            "address": "kubernetes_manifest.namespace",
            "config_address": "kubernetes_manifest.namespace",
            "mode": "managed",
            "type": "kubernetes_manifest",
            "provider": "provider.kubernetes",
            "actions": ["delete"],
            "before": {},
            "after": null,
            "after_unknown": false,
            "collateral": {
                "describe": "Namespace team",
                "objects": objects,
                "unread": ["v1 resourcequotas (forbidden)"],
            },
        }))
        .unwrap();
        let mut expected = vec![
            "  # (deleting Namespace team also deletes 12 objects this stack does not manage:"
                .to_owned(),
        ];
        expected.extend((0..10).map(|i| format!("  #    ConfigMap team/c{i:02}")));
        expected.push("  #    ... and 2 more)".to_owned());
        expected.push(
            "  # (deleting Namespace team also deletes what could not be listed: v1 resourcequotas (forbidden))"
                .to_owned(),
        );
        assert_eq!(collateral_lines(&change), expected);
        let markdown = plan_markdown(&Plan {
            format_version: crate::plan::FORMAT_VERSION.into(),
            gpustack_version: crate::version::VERSION.into(),
            mode: PlanMode::Destroy,
            lineage: None,
            serial: 0,
            config_hash: String::new(),
            digest_key: None,
            new_lineage: None,
            moved: vec![],
            generated: vec![],
            resource_changes: vec![change],
            resource_drift: vec![],
            output_changes: Default::default(),
            gpu_capacity: vec![],
            gpu_drift: vec![],
            snapshot: Default::default(),
        });
        assert!(markdown.contains("**Also deleted with `kubernetes_manifest.namespace`** (Namespace team), not managed by this stack: `ConfigMap team/c00`"), "{markdown}");
        assert!(
            markdown.contains("`ConfigMap team/c09` and 2 more."),
            "{markdown}"
        );
    }
}
