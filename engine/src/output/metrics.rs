//! Drift as Prometheus metrics (the textfile collector's format).

use super::*;

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
    for d in plan.gpu_drift.iter().filter(|d| d.unfinished.is_none()) {
        let _ = writeln!(
            out,
            "gpustack_gpu_capacity_drift{{stack=\"{stack}\",node=\"{}\",resource=\"{}\"}} {}",
            d.node.replace('"', "\\\""),
            d.resource,
            gpustack_protocol::format_number(d.expected - d.allocatable)
        );
    }
    out.push_str("# HELP gpustack_rollout_unfinished 1 for each node a node-by-node rollout left part-way (cordoned until an apply finishes it), by node and step.\n# TYPE gpustack_rollout_unfinished gauge\n");
    for d in &plan.gpu_drift {
        if let Some(u) = &d.unfinished {
            let _ = writeln!(
                out,
                "gpustack_rollout_unfinished{{stack=\"{stack}\",node=\"{}\",rollout=\"{}\",step=\"{}\"}} 1",
                d.node.replace('"', "\\\""),
                u.rollout.replace('"', "\\\""),
                u.step
            );
        }
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
