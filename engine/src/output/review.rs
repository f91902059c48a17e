//! A review of another tool's plan (`gpustack review`) as text, Markdown for a pull-request
//! comment, and JSON: the GPU-relevant changes, the GPU capacity and disruption sections as a
//! plan has them, and (Markdown and JSON) the findings with where they are written.

use super::*;
use crate::review::Review;
use gpustack_protocol::{Diagnostic, Severity};

fn made_by(review: &Review) -> String {
    review
        .made_by
        .as_deref()
        .map_or_else(String::new, |v| format!(" (Terraform/OpenTofu {v})"))
}

fn action_symbol(actions: &[String]) -> &'static str {
    let has = |a: &str| actions.iter().any(|x| x == a);
    match (has("create"), has("delete")) {
        (true, true) => "-/+",
        (true, false) => "+",
        (false, true) => "-",
        _ if has("update") => "~",
        _ => " ",
    }
}

fn headline(review: &Review) -> String {
    format!(
        "{} of the plan's {} resource changes matter to GPUs{}.",
        review.gpu_changes.len(),
        review.changes,
        made_by(review)
    )
}

/// The review for a terminal; its findings go to stderr as diagnostics, as a plan's do.
pub fn review_text(review: &Review, color: bool) -> String {
    let style = Style { color };
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", headline(review));
    for change in &review.gpu_changes {
        let _ = writeln!(
            out,
            "  {} {} ({})",
            action_symbol(&change.actions),
            change.address,
            change.actions.join(", ")
        );
    }
    if !review.gpu_changes.is_empty() {
        out.push('\n');
    }
    text::gpu_sections(&mut out, &style, &review.capacity, &review.disruption);
    if review.capacity.is_empty() && !review.gpu_changes.is_empty() {
        out.push_str("The GPU capacity does not change.\n");
    }
    for_terminal(&out, color)
}

fn place(d: &Diagnostic) -> String {
    d.range.as_ref().map_or_else(String::new, |r| {
        format!("`{}:{}`", r.filename, r.start.line)
    })
}

/// The review as a pull-request comment.
pub fn review_markdown(review: &Review) -> String {
    let mut out = String::from("### gpustack review\n\n");
    let errors = review.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = review.diagnostics.len() - errors;
    let _ = writeln!(out, "{}", headline(review));
    if errors > 0 {
        let _ = writeln!(
            out,
            "\n**{errors} GPU error(s)**: apply would leave GPUs unusable or be refused."
        );
    }
    if !review.gpu_changes.is_empty() {
        out.push_str("\n| Action | Resource |\n|---|---|\n");
        for change in &review.gpu_changes {
            let _ = writeln!(
                out,
                "| {} | `{}` |",
                change.actions.join(", "),
                change.address
            );
        }
    }
    if !review.diagnostics.is_empty() {
        let _ = writeln!(
            out,
            "\n**Findings** ({errors} error(s), {warnings} warning(s))\n\n| | Finding | Where |\n|---|---|---|"
        );
        for d in &review.diagnostics {
            let mark = match d.severity {
                Severity::Error => "❌",
                Severity::Warning => "⚠️",
            };
            let _ = writeln!(
                out,
                "| {mark} | **{}**: {} | {} |",
                d.summary,
                d.detail.replace('|', "\\|").replace('\n', " "),
                place(d)
            );
        }
    }
    markdown::gpu_sections(&mut out, &review.capacity, &review.disruption);
    for_terminal(&out, false)
}

/// The review as JSON: `format_version` 1.0, its changes, `gpu_capacity`, `gpu_disruption`
/// and `diagnostics` as `gpustack plan -json` has them.
pub fn review_json(review: &Review) -> serde_json::Value {
    serde_json::json!({
        "format_version": "1.0",
        "plan_made_by": review.made_by,
        "resource_changes": review.changes,
        "gpu_changes": review.gpu_changes,
        "gpu_capacity": review.capacity,
        "gpu_disruption": review.disruption,
        "diagnostics": review.diagnostics,
        "errored": review.has_errors(),
    })
}
