//! Plans and drift for people (terminal, pull requests) and machines (JSON).
//!
//! Sensitive values never appear: they are shown as `(sensitive value)` in every format.
//! Multi-line strings (YAML in ConfigMaps, Helm values) are shown as line diffs.

use crate::plan::{Action, Plan, PlanMode, ResourceChange};
use gpustack_protocol::SENSITIVE;
use std::fmt::Write as _;

mod json;
mod markdown;
mod metrics;
mod review;
mod text;

pub use json::{drift_json, plan_json};
use markdown::summary;
pub use markdown::{drift_markdown, plan_markdown};
pub use metrics::drift_metrics;
pub use review::{review_json, review_markdown, review_text};
pub use text::{console_value, drift_text, plan_text};

pub(super) const UNKNOWN: &str = "(known after apply)";

/// Starts the text a sensitive part is rendered from: its digest (so that two sides compare
/// equal exactly when the secret did not change) and, for a multi-line string that may be
/// shown with its secret lines masked, that masked text. Never printed as such.
pub(super) const SECRET: char = '\u{1}';

pub(super) fn secret_leaf(digest: &serde_json::Value, masked: Option<&str>) -> serde_json::Value {
    let digest = match digest {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    serde_json::Value::String(format!("{SECRET}{digest}{SECRET}{}", masked.unwrap_or("")))
}

/// (digest, masked text) of a rendered secret.
pub(super) fn secret_parts(text: &str) -> Option<(&str, Option<&str>)> {
    let rest = text.strip_prefix(SECRET)?;
    let (digest, masked) = rest.split_once(SECRET)?;
    Some((digest, (!masked.is_empty()).then_some(masked)))
}

/// A side of a change with its sensitive parts replaced by rendered secrets.
pub(super) fn with_secrets(
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
pub(super) fn displayed(change: &ResourceChange) -> ResourceChange {
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
pub(super) fn display_text(text: &str) -> &str {
    match secret_parts(text) {
        Some((_, Some(masked))) => masked,
        Some((_, None)) => SENSITIVE,
        None => text,
    }
}

/// The colours the renderers paint with, the only escape sequences their output may hold.
const PAINTS: &[&str] = &["0", "1", "31", "32", "33", "36", "31;32", "32;31"];

/// `text` as it may reach a terminal or a pull request: every character that could act on a
/// terminal escaped (values come from modules, files and live objects), but the colours the
/// renderer painted with itself when `color`.
pub(super) fn for_terminal(text: &str, color: bool) -> String {
    if !color {
        return gpustack_protocol::terminal::escape_controls(text).into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&gpustack_protocol::terminal::escape_controls(&rest[..at]));
        let after = &rest[at + 1..];
        let painted = after.strip_prefix('[').and_then(|code| {
            let (code, _) = code.split_once('m')?;
            PAINTS.contains(&code).then_some(code.len() + 2)
        });
        match painted {
            Some(len) => {
                out.push('\x1b');
                out.push_str(&after[..len]);
                rest = &after[len..];
            }
            None => {
                out.push_str("\\u001b");
                rest = after;
            }
        }
    }
    out.push_str(&gpustack_protocol::terminal::escape_controls(rest));
    out
}

pub(super) struct Style {
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

pub(super) fn describe(change: &ResourceChange) -> &'static str {
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
pub(super) fn provenance(change: &ResourceChange) -> Vec<String> {
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
pub(super) const COLLATERAL_SHOWN: usize = 10;

/// The lines under a deletion's header that name what it takes with it besides itself.
/// The commands the change runs on this machine (provisioners), one line each.
pub(super) fn run_lines(change: &ResourceChange) -> Vec<String> {
    change
        .runs
        .iter()
        .map(|run| format!("  # (runs on this machine: {run})"))
        .collect()
}

pub(super) fn collateral_lines(change: &ResourceChange) -> Vec<String> {
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

pub(super) fn reason(change: &ResourceChange) -> Option<String> {
    let reason = change.action_reason.as_deref()?;
    Some(match reason {
        "replace_by_request" => "(replaced because --replace asked for it)".to_owned(),
        "replace_because_tainted" => "(tainted, so must be replaced)".to_owned(),
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

pub(super) fn is_sensitive(marks: &serde_json::Value, key: &str) -> bool {
    marks
        .get(key)
        .is_some_and(|m| *m == serde_json::Value::Bool(true))
}

pub(super) fn is_unknown(marks: &serde_json::Value, key: &str) -> bool {
    marks
        .get(key)
        .is_some_and(|m| *m == serde_json::Value::Bool(true))
}

pub(super) fn show(value: &serde_json::Value) -> String {
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

pub(super) fn holds_secret(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => secret_parts(s).is_some(),
        serde_json::Value::Array(items) => items.iter().any(holds_secret),
        serde_json::Value::Object(map) => map.values().any(holds_secret),
        _ => false,
    }
}

pub(super) fn reveal_placeholders(value: &serde_json::Value) -> serde_json::Value {
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

pub(super) fn is_secret(value: &serde_json::Value) -> bool {
    value.as_str().is_some_and(|s| secret_parts(s).is_some())
}

/// True for a string shown as lines: multi-line text, or a secret with masked lines.
pub(super) fn multi_line(value: &serde_json::Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| display_text(s).contains('\n'))
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
            timestamp: String::new(),
            workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
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
            gpu_disruption: vec![],
            snapshot: Default::default(),
        });
        assert!(markdown.contains("**Also deleted with `kubernetes_manifest.namespace`** (Namespace team), not managed by this stack: `ConfigMap team/c00`"), "{markdown}");
        assert!(
            markdown.contains("`ConfigMap team/c09` and 2 more."),
            "{markdown}"
        );
    }

    /// A plan whose MIG change stops the GPU software of two nodes, one running GPU pods:
    /// the disruption section in each rendering.
    #[test]
    fn the_disruption_section_in_text_markdown_and_json() {
        let line = |node: &str, pods: &[&str]| gpustack_gpu::Disruption {
            address: format!("module.mig.kubernetes_labels.geometry[\"{node}\"]"),
            node: node.to_owned(),
            change: "reconfigures MIG all-disabled → all-1g.10gb".to_owned(),
            effect: "MIG Manager stops every GPU operand of the node and needs its GPUs free"
                .to_owned(),
            pods: pods.iter().map(|p| (*p).to_owned()).collect(),
            rollout: "all nodes at once, not drained first".to_owned(),
            pods_known: true,
        };
        let change: ResourceChange = serde_json::from_value(serde_json::json!({
            "address": "module.mig.kubernetes_labels.geometry[\"gpu-0\"]",
            "config_address": "module.mig.kubernetes_labels.geometry",
            "mode": "managed",
            "type": "kubernetes_labels",
            "provider": "provider.kubernetes",
            "actions": ["update"],
            "before": {"labels": {"nvidia.com/mig.config": "all-disabled"}},
            "after": {"labels": {"nvidia.com/mig.config": "all-1g.10gb"}},
            "after_unknown": false,
        }))
        .unwrap();
        let plan = Plan {
            format_version: crate::plan::FORMAT_VERSION.into(),
            gpustack_version: "0.0.0-test".into(),
            mode: PlanMode::Normal,
            lineage: None,
            serial: 0,
            timestamp: String::new(),
            workspace: gpustack_state::DEFAULT_WORKSPACE.to_owned(),
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
            gpu_disruption: vec![
                line("gpu-0", &["ml/train-0", "ml/train-1"]),
                line("gpu-1", &[]),
            ],
            snapshot: Default::default(),
        };
        insta::assert_snapshot!("disruption_text", plan_text(&plan, false));
        insta::assert_snapshot!("disruption_markdown", plan_markdown(&plan));
        let json = serde_json::to_value(plan_json(&plan)).unwrap();
        insta::assert_json_snapshot!("disruption_json", json["gpu_disruption"]);
    }
}
