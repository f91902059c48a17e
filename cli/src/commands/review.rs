//! `gpustack review PLAN.json`: the GPU view of a Terraform or OpenTofu plan, through the
//! engine's `review`, with the live cluster read where a kubeconfig is given.

use std::path::PathBuf;
use std::process::ExitCode;

pub struct ReviewArgs {
    pub plan: PathBuf,
    pub config: PathBuf,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub json: bool,
    pub markdown: bool,
    pub detailed_exitcode: bool,
    pub color: bool,
}

/// The live cluster's GPU facts, or why they could not be read.
type LiveCluster =
    Option<Result<gpustack_protocol::ClusterFact, Box<dyn std::error::Error + Send + Sync>>>;

#[cfg(feature = "kubernetes")]
fn live_cluster(args: &ReviewArgs) -> LiveCluster {
    let path = args.kubeconfig.as_ref()?.to_string_lossy().into_owned();
    Some(super::backend::runtime().block_on(async {
        Ok(gpustack_cluster::gpu_cluster(Some(&path), args.context.as_deref()).await?)
    }))
}

/// A kubeconfig given to a build that cannot read a cluster.
#[cfg(not(feature = "kubernetes"))]
#[derive(Debug, thiserror::Error)]
#[error("this build has no Kubernetes client")]
struct NoKubernetesClient;

#[cfg(not(feature = "kubernetes"))]
fn live_cluster(args: &ReviewArgs) -> LiveCluster {
    args.kubeconfig
        .as_ref()
        .map(|_| Err(Box::new(NoKubernetesClient) as _))
}

pub fn review(args: &ReviewArgs) -> ExitCode {
    let cluster = live_cluster(args);
    let review = match gpustack_engine::review(
        &crate::registry(),
        &args.plan,
        Some(&args.config),
        cluster,
    ) {
        Ok(review) => review,
        Err(e) => {
            super::report::fail(&gpustack_protocol::error_chain(&e));
            return ExitCode::from(1);
        }
    };
    if args.json {
        if let Err(e) = super::print_json(&gpustack_engine::review_json(&review)) {
            super::report::fail(&format!("cannot write the review: {e}"));
            return ExitCode::from(1);
        }
    } else if args.markdown {
        print!("{}", gpustack_engine::review_markdown(&review));
    } else {
        print!("{}", gpustack_engine::review_text(&review, args.color));
        super::report::diagnostics(&review.sources, &review.diagnostics, args.color);
    }
    if review.has_errors() {
        ExitCode::from(1)
    } else if args.detailed_exitcode && review.changes_capacity() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
