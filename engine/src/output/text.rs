//! Plans, drift and console values as text for a terminal: field diffs, line diffs of
//! multi-line strings, the GPU capacity section.

use super::*;

/// A value as `terraform console` prints it: HCL-like, secrets masked, unknowns said.
pub fn console_value(value: &gpustack_protocol::Value) -> String {
    let mut out = String::new();
    console_write(value, 0, &mut out);
    for_terminal(&out, false)
}

pub(super) fn console_write(value: &gpustack_protocol::Value, indent: usize, out: &mut String) {
    use gpustack_protocol::Value as V;
    let pad = "  ".repeat(indent + 1);
    match value {
        V::Sensitive(_) => out.push_str(SENSITIVE),
        V::Unknown => out.push_str("(known after apply)"),
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Number(n) => out.push_str(&gpustack_protocol::format_number(n)),
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

/// Field-level diff of one change, Terraform-style.
pub(super) fn fields(out: &mut String, style: &Style, change: &ResourceChange) {
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
                        whole_value(
                            &mut block,
                            10,
                            &style.symbol(&[Action::Create]),
                            n,
                            change.after_unknown.get(key),
                        );
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
                        } else if o.is_object() && !sensitive {
                            let mut block = String::from("{\n");
                            whole_value(&mut block, 10, " ", o, None);
                            block.push_str("        }");
                            Some((" ".into(), key.clone(), block))
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
pub(super) fn nested_diff(
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
pub(super) fn abbreviated(text: &str) -> String {
    match text.chars().next() {
        Some('{') if text.len() > 80 => "{ ... }".to_owned(),
        Some('[') if text.len() > 80 => "[ ... ]".to_owned(),
        _ => text.to_owned(),
    }
}

/// A heredoc of the lines that differ between two multi-line strings. Secret lines are shown
/// masked; when the secret changed, its masked lines are shown as changed.
pub(super) fn line_diff(style: &Style, indent: usize, a: &str, b: &str) -> String {
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
pub(super) fn heredoc(indent: usize, text: &str) -> String {
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
pub(super) fn whole_value(
    out: &mut String,
    indent: usize,
    symbol: &str,
    value: &serde_json::Value,
    unknown: Option<&serde_json::Value>,
) {
    let pad = " ".repeat(indent);
    for (key, v) in value.as_object().into_iter().flatten() {
        let shown_key = show_key(key);
        let marks = unknown.and_then(|m| m.get(key));
        if marks.is_some_and(|m| *m == serde_json::Value::Bool(true)) {
            let _ = writeln!(out, "{pad}{symbol} {shown_key} = {UNKNOWN}");
        } else if v.is_object() {
            let _ = writeln!(out, "{pad}{symbol} {shown_key} = {{");
            whole_value(out, indent + 4, symbol, v, marks);
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
pub(super) fn show_key(key: &str) -> String {
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

pub(super) fn change_block(out: &mut String, style: &Style, change: &ResourceChange, verb: &str) {
    let change = &displayed(change);
    let header = match reason(change) {
        Some(r) => format!("  # {} {verb} {r}", change.address),
        None => format!("  # {} {verb}", change.address),
    };
    let _ = writeln!(out, "{}", style.paint("1", &header));
    for line in provenance(change)
        .into_iter()
        .chain(run_lines(change))
        .chain(collateral_lines(change))
    {
        let _ = writeln!(out, "{line}");
    }
    let name = gpustack_lang::address::Address::parse(&change.address)
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
pub(super) fn drift_blocks(out: &mut String, style: &Style, plan: &Plan) {
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
    for_terminal(&plan_text_unescaped(plan, color), color)
}

fn plan_text_unescaped(plan: &Plan, color: bool) -> String {
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
    gpu_sections(&mut out, &style, &plan.gpu_capacity, &plan.gpu_disruption);
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

/// Drift as a person reads it: which objects changed outside gpustack, field by field.
pub fn drift_text(plan: &Plan, color: bool) -> String {
    for_terminal(&drift_text_unescaped(plan, color), color)
}

fn drift_text_unescaped(plan: &Plan, color: bool) -> String {
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
    let (unfinished, capacity): (Vec<_>, Vec<_>) =
        plan.gpu_drift.iter().partition(|d| d.unfinished.is_some());
    if !unfinished.is_empty() {
        if !plan.resource_drift.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{} nodes a rollout left part-way:",
            style.paint("1", "Unfinished rollout:")
        );
        for d in &unfinished {
            let _ = writeln!(out, "  {}", d.text());
        }
        out.push_str(
            "Run gpustack apply to finish the rollout (a failed step says why in its record).\n",
        );
    }
    if !capacity.is_empty() {
        if !plan.resource_drift.is_empty() || !unfinished.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{} GPU capacity below what the configuration gives:",
            style.paint("1", "Capacity drift:")
        );
        for d in &capacity {
            let _ = writeln!(out, "  {}", d.text());
        }
        out.push_str("No apply restores a GPU that is gone: check the node (nvidia-smi, the device plugin's log, MIG manager's state).\n");
    }
    out
}

/// The GPU capacity and disruption sections of a plan or a review.
pub(super) fn gpu_sections(
    out: &mut String,
    style: &Style,
    capacity: &[crate::plan::CapacityLine],
    disruption: &[gpustack_gpu::Disruption],
) {
    if !capacity.is_empty() {
        let _ = writeln!(out, "{}", style.paint("1", "GPU capacity:"));
        for line in capacity {
            let _ = writeln!(out, "  {}", line.text());
        }
        out.push('\n');
    }
    if !disruption.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.paint("1", "GPU disruption (what this plan stops on live nodes):")
        );
        for line in disruption {
            let _ = writeln!(out, "  {}", line.text());
        }
        out.push('\n');
    }
}
