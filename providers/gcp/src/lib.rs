//! The `gcp` provider: GKE node pools and node auto-provisioning through the official
//! google-cloud-container-v1 client and Application Default Credentials.
//!
//! Split by kind: this file is the family (the schema, the checks, connecting); `gke.rs`
//! the GKE API's calls, errors and operations; `compute.rs` Compute Engine, for a pool's live
//! size and its accelerator types; `pool.rs` the node pool as a
//! [`CloudPool`](gpustack_provider_sdk::pool::CloudPool); `autoprovisioning.rs` node
//! auto-provisioning, a setting of the cluster.

mod autoprovisioning;
mod compute;
mod gke;
pub mod google;
mod pool;
mod terraform;

use autoprovisioning::Autoprovisioning;
use compute::Compute;
use gke::Transient;
use google_cloud_container_v1::client::ClusterManager;
use gpustack_protocol::{
    Attribute, BlockNesting, Diagnostic, ObjectAttr, Provider, ProviderSchema, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::normalize::{sort_maps, unset_empty, unset_false};
use gpustack_provider_sdk::pool::{CloudPool, NodeDrainer, Pools};
use gpustack_provider_sdk::resource::Resources;
use gpustack_provider_sdk::taint_type;
use std::sync::Arc;
use std::time::Duration;

/// GKE node pools and node auto-provisioning.
#[derive(Default)]
pub(crate) struct Gcp {
    drainer: Option<Arc<dyn NodeDrainer>>,
}

gpustack_provider_sdk::cloud_entry_points!(Gcp { drainer });

#[async_trait::async_trait]
impl Family for Gcp {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "gcp",
            &["gke_nodepool", "gke_node_autoprovisioning"],
            &[],
        )
    }

    /// A pool is its name in its cluster and location; auto-provisioning is the cluster's.
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        match type_name {
            "gke_nodepool" => Connected::key(state).map(|key| format!("gke:{key}")),
            _ => Some(format!(
                "gke-autoprovisioning:{}/{}",
                text(state, "location")?,
                text(state, "cluster")?
            )),
        }
    }

    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        terraform::review(self, change)
    }

    fn schema(&self) -> ProviderSchema {
        let config = provider_config("Google Cloud, with Application Default Credentials.")
            .attr("project", Attribute::required(Type::String))
            .attr(
                "endpoint",
                Attribute::optional(Type::String).describe("Endpoint override for tests."),
            );
        let accelerator = Schema::new("The GPUs of each node.")
            .attr("type", Attribute::required(Type::String).force_new())
            .attr("count", Attribute::required(Type::Number).force_new())
            .attr(
                "gpu_partition_size",
                Attribute::optional(Type::String)
                    .force_new()
                    .describe("MIG profile, e.g. 1g.5gb."),
            )
            .attr(
                "sharing_strategy",
                Attribute::optional(Type::String).force_new(),
            )
            .attr(
                "max_shared_clients_per_gpu",
                Attribute::optional(Type::Number).force_new(),
            )
            .attr(
                "driver_version",
                Attribute::optional(Type::String).force_new(),
            );
        let pool = gpustack_provider_sdk::pool::pool_schema(
            Schema::new("A GKE node pool.")
                .attr("location", Attribute::required(Type::String).force_new())
                .attr("cluster", Attribute::required(Type::String).force_new())
                .attr("name", Attribute::required(Type::String).force_new())
                .attr(
                    "machine_type",
                    Attribute::required(Type::String).force_new(),
                )
                .attr("node_count", Attribute::optional_computed(Type::Number))
                .attr("min_node_count", Attribute::optional(Type::Number))
                .attr("max_node_count", Attribute::optional(Type::Number))
                .attr("spot", Attribute::optional(Type::Bool).force_new())
                .attr("labels", Attribute::optional(Type::map(Type::String)))
                .attr("taints", Attribute::optional(Type::list(taint_type())))
                .attr("id", Attribute::computed(Type::String)),
        )
        .block("accelerator", BlockNesting::Single, accelerator);
        let limit = Type::object([
            ("resource_type", ObjectAttr::required(Type::String)),
            ("minimum", ObjectAttr::optional(Type::Number)),
            ("maximum", ObjectAttr::required(Type::Number)),
        ]);
        let nap = Schema::new("Cluster-wide node auto-provisioning with per-accelerator limits.")
            .attr("location", Attribute::required(Type::String).force_new())
            .attr("cluster", Attribute::required(Type::String).force_new())
            .attr("enabled", Attribute::optional_computed(Type::Bool))
            .attr("resource_limits", Attribute::required(Type::list(limit)))
            .attr("locations", Attribute::optional(Type::list(Type::String)));
        ProviderSchema {
            name: "gcp".into(),
            config,
            resources: [
                ("gke_nodepool".to_owned(), pool),
                ("gke_node_autoprovisioning".to_owned(), nap),
            ]
            .into(),
            data_sources: Default::default(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == "gke_nodepool" {
            gpustack_provider_sdk::pool::check_rollout(check);
            check.one_of("accelerator.sharing_strategy", &["TIME_SHARING", "MPS"]);
            check.range("accelerator.max_shared_clients_per_gpu", 2.0, 48.0);
            check.one_of(
                "accelerator.driver_version",
                &["INSTALLATION_DISABLED", "DEFAULT", "LATEST"],
            );
            if check.get("accelerator.sharing_strategy").is_some()
                && check
                    .get("accelerator.max_shared_clients_per_gpu")
                    .is_none()
            {
                check.error(
                    "accelerator.max_shared_clients_per_gpu",
                    "Missing attribute",
                    "GPU sharing needs max_shared_clients_per_gpu.".into(),
                );
            }
            check.cloud_taint_effects("taints", "GKE");
            if let Some(partition) = check.str("accelerator.gpu_partition_size") {
                let accelerator = check.str("accelerator.type").unwrap_or_default();
                match mig_partitions(accelerator) {
                    None => check.error(
                        "accelerator.gpu_partition_size",
                        "MIG on a GPU without MIG",
                        format!(
                            "{accelerator} cannot be partitioned with MIG; MIG needs nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb or nvidia-h200-141gb."
                        ),
                    ),
                    Some(sizes) if !sizes.iter().any(|(p, _)| *p == partition) => check.error(
                        "accelerator.gpu_partition_size",
                        "Unknown MIG partition",
                        format!(
                            "{accelerator} has the partition sizes {}, not {partition}.",
                            sizes.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ")
                        ),
                    ),
                    Some(_) => {}
                }
                if check.str("accelerator.sharing_strategy") == Some("MPS") {
                    check.error(
                        "accelerator.sharing_strategy",
                        "MPS on MIG partitions",
                        "GKE does not run MPS on MIG partitions: use TIME_SHARING, or drop gpu_partition_size.".into(),
                    );
                }
            }
            let own_plugin = check
                .get("labels")
                .and_then(|l| l.as_object())
                .and_then(|l| l.get("gke-no-default-nvidia-gpu-device-plugin"))
                .and_then(|v| v.as_str())
                == Some("true");
            if own_plugin && check.get("accelerator.sharing_strategy").is_some() {
                check.error(
                    "accelerator.sharing_strategy",
                    "GKE GPU sharing without GKE's device plugin",
                    "sharing_strategy is carried out by GKE's device plugin, which the label gke-no-default-nvidia-gpu-device-plugin=true turns off for NVIDIA's; share GPUs with NVIDIA's plugin instead (modules/time-slicing or modules/mps), or remove the label.".into(),
                );
            }
        }
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let endpoint = text(config, "endpoint");
        let connected = Arc::new(
            Connected::new(
                text(config, "project").unwrap_or_default(),
                endpoint,
                endpoint,
            )
            .await?,
        );
        Ok(Arc::new(
            Resources::new()
                .resource(
                    "gke_nodepool",
                    Pools(connected.clone(), self.drainer.clone()),
                )
                .resource("gke_node_autoprovisioning", Autoprovisioning(connected)),
        ))
    }
}

impl Connected {
    /// The clients of one provider block: GKE's at `container_endpoint`, Compute Engine's at
    /// `compute_endpoint` (the public ones by default), with Application Default Credentials.
    pub(crate) async fn new(
        project: &str,
        container_endpoint: Option<&str>,
        compute_endpoint: Option<&str>,
    ) -> Result<Self, Vec<Diagnostic>> {
        // One TLS implementation in the binary: ring, as for AWS, Azure and kube.
        gpustack_connect::install_ring();
        let mut builder = ClusterManager::builder().with_retry_policy(
            google_cloud_gax::retry_policy::RetryPolicyExt::with_attempt_limit(Transient, 6),
        );
        if let Some(endpoint) = container_endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let client = builder.build().await.map_err(|e| {
            vec![Diagnostic::error(
                "Cannot set up the GKE client",
                gpustack_protocol::error_chain(&e),
            )]
        })?;
        let credentials = google_cloud_auth::credentials::Builder::default()
            .with_scopes(["https://www.googleapis.com/auth/cloud-platform"])
            .build_access_token_credentials()
            .map_err(|e| {
                vec![Diagnostic::error(
                    "Cannot set up Google Cloud credentials",
                    gpustack_protocol::error_chain(&e),
                )]
            })?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| {
                vec![Diagnostic::error(
                    "Cannot set up the Compute Engine client",
                    gpustack_protocol::error_chain(&e),
                )]
            })?;
        let compute = Compute {
            http,
            credentials,
            endpoint: compute_endpoint
                .unwrap_or("https://compute.googleapis.com")
                .trim_end_matches('/')
                .to_owned(),
            accelerators: Default::default(),
        };
        Ok(Connected {
            client,
            project: project.to_owned(),
            compute,
        })
    }
}

/// A `gcp` provider block, connected.
pub(crate) struct Connected {
    client: ClusterManager,
    project: String,
    compute: Compute,
}

/// What node pools and auto-provisioning compare: empty collections as unset, `spot = false`
/// as unset, labels in order.
pub(crate) fn normalized(config: &Value) -> Value {
    let mut config = config.clone();
    if let Value::Object(map) = &mut config {
        unset_empty(map, &["labels", "taints", "locations"]);
        unset_false(map, &["spot"]);
        sort_maps(map, &["labels"]);
    }
    config
}

/// The MIG partition sizes GKE offers per accelerator, with how many fit on one GPU; `None`
/// for GPUs without MIG.
fn mig_partitions(accelerator: &str) -> Option<&'static [(&'static str, u32)]> {
    match accelerator {
        "nvidia-tesla-a100" => Some(&[
            ("1g.5gb", 7),
            ("2g.10gb", 3),
            ("3g.20gb", 2),
            ("7g.40gb", 1),
        ]),
        "nvidia-a100-80gb" => Some(&[
            ("1g.10gb", 7),
            ("2g.20gb", 3),
            ("3g.40gb", 2),
            ("7g.80gb", 1),
        ]),
        "nvidia-h100-80gb" | "nvidia-h100-mega-80gb" => Some(&[
            ("1g.10gb", 7),
            ("1g.20gb", 4),
            ("2g.20gb", 3),
            ("3g.40gb", 2),
            ("7g.80gb", 1),
        ]),
        "nvidia-h200-141gb" => Some(&[
            ("1g.18gb", 7),
            ("1g.35gb", 4),
            ("2g.35gb", 3),
            ("3g.71gb", 2),
            ("4g.71gb", 1),
            ("7g.141gb", 1),
        ]),
        _ => None,
    }
}
