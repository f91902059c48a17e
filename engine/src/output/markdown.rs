//! Plans and drift as Markdown, for pull-request comments.

use super::*;

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
    for_terminal(&plan_markdown_unescaped(plan), false)
}

fn plan_markdown_unescaped(plan: &Plan) -> String {
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
    gpu_sections(&mut out, &plan.gpu_capacity, &plan.gpu_disruption);
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
    let text = plan_text(plan, false);
    // A fence longer than any run of backticks in the plan, so that no value closes it.
    let fence = "`".repeat(longest_run(&text, '`').max(2) + 1);
    let _ = write!(
        out,
        "\n<details><summary>Full plan</summary>\n\n{fence}diff\n{text}{fence}\n\n</details>\n"
    );
    out
}

pub fn drift_markdown(plan: &Plan) -> String {
    for_terminal(&drift_markdown_unescaped(plan), false)
}

fn drift_markdown_unescaped(plan: &Plan) -> String {
    let mut out = String::from("### gpustack drift\n\n");
    if plan.resource_drift.is_empty() && plan.gpu_drift.is_empty() {
        out.push_str("No drift.\n");
        return out;
    }
    if !plan.gpu_drift.is_empty() {
        out.push_str("| Node | Resource | Allocatable | Expected | Why |\n|---|---|---|---|---|\n");
        for d in &plan.gpu_drift {
            if let Some(u) = &d.unfinished {
                let _ = writeln!(
                    out,
                    "| `{}` | left at step `{}` by `{}`, cordoned | | | {} |",
                    d.node, u.step, u.rollout, d.detail
                );
                continue;
            }
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

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    text.split(|ch| ch != c).map(str::len).max().unwrap_or(0)
}

/// The GPU capacity and disruption tables of a plan or a review.
pub(super) fn gpu_sections(
    out: &mut String,
    capacity: &[crate::plan::CapacityLine],
    disruption: &[gpustack_gpu::Disruption],
) {
    if !capacity.is_empty() {
        out.push_str("\n**GPU capacity**\n\n| Where | Resource | Before | After | Why |\n|---|---|---|---|---|\n");
        for line in capacity {
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
    if !disruption.is_empty() {
        out.push_str("\n**GPU disruption** (what this plan stops on live nodes)\n\n| Node | Change | Effect | GPU pods running | Rollout |\n|---|---|---|---|---|\n");
        for line in disruption {
            let pods = if !line.pods_known {
                "not known".to_owned()
            } else if line.pods.is_empty() {
                "none".to_owned()
            } else {
                line.pods
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                line.node, line.change, line.effect, pods, line.rollout
            );
        }
    }
}
