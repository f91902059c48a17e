//! Tests in the test world: kwok clusters with a real control plane, helm, moto, the AKS and
//! GKE fakes.

mod adopt;
mod aks;
mod backends;
mod collateral;
mod conformance;
mod dra;
mod drift_cronjob;
mod e2e;
mod eks;
mod encryption;
mod gke;
mod gpu_model;
mod karpenter;
mod moto;
mod policy;
mod requests;
mod review;
mod rollout;
mod terraform;
mod testworld;

/// The lines of a plan's GPU capacity section whose scope starts with `scope` (`node e2e-a100`,
/// `nodepool`): other tests' nodes on a shared cluster stay out.
pub(crate) fn capacity_lines<'a>(plan: &'a str, scope: &str) -> Vec<&'a str> {
    plan.lines()
        .skip_while(|l| l.trim() != "GPU capacity:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .filter(|l| l.starts_with(scope))
        .collect()
}

/// Checks the GPU capacity lines of `scope` in a plan's text against the snapshot `name`
/// (`world/snapshots/capacity/<name>.snap`). A plan without such lines fails.
#[track_caller]
pub(crate) fn assert_capacity_snapshot(name: &str, plan: &str, scope: &str) {
    let section = capacity_lines(plan, scope);
    assert!(
        !section.is_empty(),
        "no {scope} GPU capacity lines in:\n{plan}"
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/capacity");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, section.join("\n")));
}
