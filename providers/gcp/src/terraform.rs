//! The Google provider's `google_container_node_pool` read as a GKE node pool of gpustack's
//! own schema: served on `gke_nodepool`'s flow (`google.rs`), and `gpustack review` of a
//! change to it, with the same shape, checks and GPU fact.

use crate::{Connected, Gcp};
use gpustack_protocol::{Diagnostic, ForeignChange, Reviewed, Value};
use gpustack_provider_sdk::check::{Checker, attribute, integer, set, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::terraform_pool::TerraformPool;

pub(crate) static NODE_POOL: TerraformPool = TerraformPool {
    type_name: "google_container_node_pool",
    renames: &[
        ("location", "location"),
        ("cluster", "cluster"),
        ("name", "name"),
        ("node_count", "node_count"),
        ("node_locations", "node_locations"),
        ("min_node_count", "autoscaling.0.min_node_count"),
        ("max_node_count", "autoscaling.0.max_node_count"),
        ("total_min_node_count", "autoscaling.0.total_min_node_count"),
        ("total_max_node_count", "autoscaling.0.total_max_node_count"),
        ("machine_type", "node_config.0.machine_type"),
        ("spot", "node_config.0.spot"),
        ("labels", "node_config.0.labels"),
        ("taints", "node_config.0.taint"),
        ("accelerator.type", "node_config.0.guest_accelerator.0.type"),
        (
            "accelerator.count",
            "node_config.0.guest_accelerator.0.count",
        ),
        (
            "accelerator.gpu_partition_size",
            "node_config.0.guest_accelerator.0.gpu_partition_size",
        ),
        (
            "accelerator.sharing_strategy",
            "node_config.0.guest_accelerator.0.gpu_sharing_config.0.gpu_sharing_strategy",
        ),
        (
            "accelerator.max_shared_clients_per_gpu",
            "node_config.0.guest_accelerator.0.gpu_sharing_config.0.max_shared_clients_per_gpu",
        ),
        (
            "accelerator.driver_version",
            "node_config.0.guest_accelerator.0.gpu_driver_installation_config.0.gpu_driver_version",
        ),
    ],
    own_import_id,
    terraform_import_id: str::to_owned,
    tags: None,
    derived: None,
    import_formats: "projects/PROJECT/locations/LOCATION/clusters/CLUSTER/nodePools/NAME, PROJECT/LOCATION/CLUSTER/NAME or LOCATION/CLUSTER/NAME",
};

/// `LOCATION/CLUSTER/NAME` of any of the Google provider's import IDs of a node pool.
fn own_import_id(id: &str) -> Option<String> {
    let parts: Vec<&str> = id.split('/').collect();
    let (location, cluster, name) = match parts[..] {
        ["projects", _, "locations", l, "clusters", c, "nodePools", n] => (l, c, n),
        [_, l, c, n] | [l, c, n] => (l, c, n),
        _ => return None,
    };
    [location, cluster, name]
        .iter()
        .all(|p| !p.is_empty())
        .then(|| format!("{location}/{cluster}/{name}"))
}

/// How many zones a pool's `node_count` and per-zone autoscaling limits count for: its
/// `node_locations`, or its location when that is a zone; `None` for a regional pool whose
/// zones are the cluster's, which the plan does not hold.
fn zones(own: &Value) -> Option<i64> {
    if let Some(list) = attribute(own, "node_locations").and_then(Value::as_list) {
        return i64::try_from(list.len()).ok().filter(|n| *n > 0);
    }
    let location = text(own, "location")?;
    (location.matches('-').count() >= 2).then_some(1)
}

/// The pool's node counts for the whole pool: GKE counts `node_count` and the autoscaling
/// limits per zone, `total_*` for the pool.
fn whole_pool(own: &Value) -> Value {
    let mut own = own.clone();
    let per_zone = zones(&own).unwrap_or(1);
    for name in ["node_count", "min_node_count", "max_node_count"] {
        if let Some(n) = integer(&own, name) {
            set(&mut own, name, Value::number(n * per_zone));
        }
    }
    // The provider records an unset total as 0 beside the per-zone limits it conflicts with.
    let per_zone_set = integer(&own, "max_node_count").is_some_and(|n| n > 0);
    for (total, name) in [
        ("total_min_node_count", "min_node_count"),
        ("total_max_node_count", "max_node_count"),
    ] {
        if let Some(n) = attribute(&own, total).cloned()
            && !(per_zone_set && integer(&own, total) == Some(0))
        {
            set(&mut own, name, n);
        }
    }
    own
}

pub(crate) fn review(gcp: &Gcp, change: &ForeignChange<'_>) -> Option<Reviewed> {
    NODE_POOL.review::<Connected>(
        change,
        |own| crate::pool::table_shape(&whole_pool(own)),
        |own| {
            let mut check = Checker::new(own);
            gcp.check("gke_nodepool", &mut check);
            let mut diagnostics = check.diagnostics;
            if attribute(own, "accelerator").is_some() && zones(own).is_none() {
                diagnostics.push(
                    Diagnostic::warning(
                        "Zones of a regional pool not known",
                        format!(
                            "GKE counts node_count per zone, and the pool's zones are its cluster's, which this plan does not hold: the GPUs are counted for one zone. Set node_locations to count them all (location {}).",
                            text(own, "location").unwrap_or("unset")
                        ),
                    )
                    .with_attribute("node_count"),
                );
            }
            diagnostics
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_import_id_of_the_google_provider_names_location_cluster_and_pool() {
        for id in [
            "projects/p/locations/us-central1-c/clusters/ml/nodePools/a100",
            "p/us-central1-c/ml/a100",
            "us-central1-c/ml/a100",
        ] {
            assert_eq!(
                own_import_id(id).as_deref(),
                Some("us-central1-c/ml/a100"),
                "{id}"
            );
        }
        assert_eq!(own_import_id("ml/a100"), None);
        assert_eq!(own_import_id("us-central1-c//a100"), None);
    }
}
