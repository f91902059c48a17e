//! The `gcp` provider: GKE node pools and node auto-provisioning through the official
//! google-cloud-container-v1 client and Application Default Credentials.

use google_cloud_container_v1::client::ClusterManager;
use google_cloud_container_v1::model::{
    ClusterUpdate, NodeLabels, NodePool, NodePoolAutoscaling, NodeTaints, Operation,
};
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, CloudSharing,
    Diagnostic, GpuShape, ObjectAttr, PlanResourceChangeRequest, PlanResourceChangeResponse,
    PoolShape, Provider, ProviderFactory, ProviderSchema, ReadResourcesRequest,
    ReadResourcesResponse, Schema, Type, Value, plan_from_schema,
};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, text};
use gpustack_provider_sdk::family::{Factory, Family, resource_schema};
use gpustack_provider_sdk::normalize::{sort_maps, split_id, unset_empty, unset_false};
use gpustack_provider_sdk::pool::{CloudPool, LivePool, Pools};
use gpustack_provider_sdk::resource::{Resource, Resources};
use gpustack_provider_sdk::taint_type;
use indexmap::IndexMap;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// GKE node pools and node auto-provisioning.
pub(crate) struct Gcp;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Gcp))
}

/// The resource label a pool is created with: tells a create whose answer was lost from
/// someone else's pool of the same name.
const CREATION_LABEL: &str = "gpustack-creation-token";

/// How long one operation may take.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(60 * 60);

#[async_trait::async_trait]
impl Family for Gcp {
    /// A pool is its name in its cluster and location; auto-provisioning is the cluster's.
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        let location = text(state, "location")?;
        let cluster = text(state, "cluster")?;
        match type_name {
            "gke_nodepool" => Some(format!("gke:{location}/{cluster}/{}", text(state, "name")?)),
            _ => Some(format!("gke-autoprovisioning:{location}/{cluster}")),
        }
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
        let pool = Schema::new("A GKE node pool.")
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
            .attr("id", Attribute::computed(Type::String))
            .attr(
                gpustack_provider_sdk::pool::CREATION_TOKEN,
                gpustack_provider_sdk::pool::creation_token_attribute(),
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
        // One TLS implementation in the binary: ring, as for AWS, Azure and kube.
        gpustack_connect::install_ring();
        let project = text(config, "project").unwrap_or_default().to_owned();
        let mut builder = ClusterManager::builder().with_retry_policy(
            google_cloud_gax::retry_policy::RetryPolicyExt::with_attempt_limit(Transient, 6),
        );
        if let Some(endpoint) = text(config, "endpoint") {
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
            endpoint: text(config, "endpoint")
                .unwrap_or("https://compute.googleapis.com")
                .trim_end_matches('/')
                .to_owned(),
            accelerators: Default::default(),
        };
        let connected = Arc::new(Connected {
            client,
            project,
            compute,
        });
        Ok(Arc::new(
            Resources::new()
                .resource("gke_nodepool", Pools(connected.clone()))
                .resource("gke_node_autoprovisioning", Autoprovisioning(connected)),
        ))
    }
}

/// Compute Engine, for the one thing GKE's API does not say: how many nodes a pool has now.
/// GKE keeps a pool's size in its managed instance groups; the pool's `initialNodeCount` is
/// what it was created with and never changes.
struct Compute {
    http: reqwest::Client,
    credentials: google_cloud_auth::credentials::AccessTokenCredentials,
    endpoint: String,
    /// Accelerator types by zone and name, as Compute Engine answered (`None`: it has no such
    /// type there). Failed lookups are not kept.
    accelerators: std::sync::Mutex<BTreeMap<(String, String), Option<String>>>,
}

/// An accelerator type's model and memory from its description (`NVIDIA A100 80GB`,
/// `NVIDIA H100 Mega 80GB`, `NVIDIA T4`); the memory from the built-in table where the
/// description gives none.
fn described_gpu(description: &str) -> Option<(String, u32, bool)> {
    let words: Vec<&str> = description
        .split_whitespace()
        .filter(|w| !w.eq_ignore_ascii_case("NVIDIA") && !w.eq_ignore_ascii_case("Tesla"))
        .collect();
    let model = (*words.first()?).to_owned();
    let memory = words
        .iter()
        .find_map(|w| w.strip_suffix("GB").and_then(|n| n.parse::<u32>().ok()));
    match memory {
        Some(gb) => Some((model, gb, false)),
        None => {
            let gb = gpustack_provider_sdk::catalog::memory_of_model(&model)?;
            Some((model, gb, true))
        }
    }
}

impl Compute {
    /// The model and memory of an accelerator type in a zone, from Compute Engine's
    /// `acceleratorTypes.get`; `Ok(None)` when the zone has no such type.
    async fn accelerator(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<Option<(String, u32, bool)>, String> {
        let key = (zone.to_owned(), name.to_owned());
        if let Some(known) = self
            .accelerators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(known.as_deref().and_then(described_gpu));
        }
        let path = format!("projects/{project}/zones/{zone}/acceleratorTypes/{name}");
        let description = match self.get(&path).await {
            Ok(body) => body["description"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{path}: the answer has no description"))?,
            Err((Some(404), _)) => {
                self.accelerators
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, None);
                return Ok(None);
            }
            Err((_, why)) => return Err(why),
        };
        let gpu = described_gpu(&description);
        self.accelerators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Some(description));
        gpu.map(Some)
            .ok_or_else(|| format!("{path}: no GPU model in its description"))
    }

    /// The target size of one managed instance group, by the URL GKE gives for it
    /// (`https://www.googleapis.com/compute/v1/projects/P/zones/Z/instanceGroupManagers/N`).
    async fn target_size(&self, url: &str) -> Result<f64, String> {
        let path = url
            .split_once("/compute/v1/")
            .map(|(_, rest)| rest)
            .ok_or_else(|| format!("{url} is not a Compute Engine instance group URL"))?;
        let body = self.get(path).await.map_err(|(_, why)| why)?;
        body["targetSize"]
            .as_f64()
            .or_else(|| body["targetSize"].as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| format!("{path}: the answer has no targetSize"))
    }

    /// GET of a Compute Engine resource, retried on throttling, server errors and broken
    /// connections; an error with its HTTP status, if one came.
    async fn get(&self, path: &str) -> Result<Json, (Option<u16>, String)> {
        let token = self
            .credentials
            .access_token()
            .await
            .map_err(|e| (None, gpustack_protocol::error_chain(&e)))?;
        let address = format!("{}/compute/v1/{path}", self.endpoint);
        let mut delay = Duration::from_millis(500);
        for attempt in 1..=6 {
            let answer = self
                .http
                .get(&address)
                .bearer_auth(&token.token)
                .send()
                .await;
            let retry = match answer {
                Ok(r) if r.status().is_success() => {
                    return r.json().await.map_err(|e| (None, e.to_string()));
                }
                Ok(r) if matches!(r.status().as_u16(), 429 | 500 | 502 | 503 | 504) => {
                    format!("{path}: {}", r.status())
                }
                Ok(r) => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    return Err((Some(status.as_u16()), format!("{path}: {status}: {text}")));
                }
                Err(e) => gpustack_protocol::error_chain(&e),
            };
            if attempt == 6 {
                return Err((None, retry));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
        Err((None, format!("{path}: no answer")))
    }
}

/// Retries throttling, server errors and broken connections, also of calls that are not
/// idempotent: creates are recognised by their label when a retry finds the pool.
#[derive(Debug)]
struct Transient;

impl google_cloud_gax::retry_policy::RetryPolicy for Transient {
    fn on_error(
        &self,
        _: &google_cloud_gax::retry_state::RetryState,
        error: google_cloud_gax::error::Error,
    ) -> google_cloud_gax::retry_result::RetryResult {
        use google_cloud_gax::retry_result::RetryResult;
        let transient = error.is_io()
            || error.is_connect()
            || error.is_timeout()
            || matches!(error.http_status_code(), Some(429 | 500 | 502 | 503 | 504));
        if transient {
            RetryResult::Continue(error)
        } else {
            RetryResult::Permanent(error)
        }
    }
}

/// A `gcp` provider block, connected.
struct Connected {
    client: ClusterManager,
    project: String,
    compute: Compute,
}

type GkeError = google_cloud_gax::error::Error;

fn describe(e: &GkeError) -> String {
    match e.status() {
        Some(status) => format!("{:?}: {}", status.code, status.message),
        None => gpustack_protocol::error_chain(e),
    }
}

fn not_found(e: &GkeError) -> bool {
    e.http_status_code() == Some(404)
}

fn to_json<T: serde::Serialize>(v: &T) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// A node pool as JSON with its enums by name (the SDK writes them as numbers).
fn pool_json(pool: &NodePool) -> Json {
    let mut json = to_json(pool);
    json["status"] = json!(pool.status.name());
    if let Some(config) = &pool.config {
        for (i, taint) in config.taints.iter().enumerate() {
            json["config"]["taints"][i]["effect"] = json!(taint.effect.name());
        }
        for (i, accelerator) in config.accelerators.iter().enumerate() {
            if let Some(strategy) = accelerator
                .gpu_sharing_config
                .as_ref()
                .and_then(|g| g.gpu_sharing_strategy.as_ref())
            {
                json["config"]["accelerators"][i]["gpuSharingConfig"]["gpuSharingStrategy"] =
                    json!(strategy.name());
            }
            if let Some(version) = accelerator
                .gpu_driver_installation_config
                .as_ref()
                .and_then(|g| g.gpu_driver_version.as_ref())
            {
                json["config"]["accelerators"][i]["gpuDriverInstallationConfig"]["gpuDriverVersion"] =
                    json!(version.name());
            }
        }
    }
    json
}

fn from_json<T: serde::de::DeserializeOwned + Default>(v: Json) -> T {
    serde_json::from_value(v).unwrap_or_default()
}

fn number(state: &Value, name: &str) -> Option<i64> {
    attribute(state, name)
        .filter(|v| !v.is_unknown())
        .and_then(Value::as_number)
        .map(|n| n as i64)
}

impl Connected {
    fn cluster_path(&self, location: &str, cluster: &str) -> String {
        format!(
            "projects/{}/locations/{location}/clusters/{cluster}",
            self.project
        )
    }

    fn pool_path(&self, state: &Value) -> String {
        format!(
            "{}/nodePools/{}",
            self.cluster_path(
                text(state, "location").unwrap_or_default(),
                text(state, "cluster").unwrap_or_default()
            ),
            text(state, "name").unwrap_or_default()
        )
    }

    async fn get_pool(&self, state: &Value) -> Result<Option<NodePool>, Diagnostic> {
        let name = self.pool_path(state);
        match self.client.get_node_pool().set_name(&name).send().await {
            Ok(pool) => Ok(Some(pool)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(Diagnostic::error(
                format!("Cannot read GKE node pool {name}"),
                describe(&e),
            )),
        }
    }

    /// Polls an operation until it is DONE; its error, if any, is the result.
    async fn wait(&self, location: &str, operation: &Operation) -> Result<(), String> {
        let name = format!(
            "projects/{}/locations/{location}/operations/{}",
            self.project, operation.name
        );
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        let mut delay = Duration::from_millis(500);
        let mut current = operation.clone();
        loop {
            if current.status == google_cloud_container_v1::model::operation::Status::Done {
                return match &current.error {
                    Some(e) if e.code != 0 || !e.message.is_empty() => Err(e.message.clone()),
                    _ => Ok(()),
                };
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "operation {} did not finish within {} minutes",
                    operation.name,
                    OPERATION_TIMEOUT.as_secs() / 60
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
            current = self
                .client
                .get_operation()
                .set_name(&name)
                .send()
                .await
                .map_err(|e| describe(&e))?;
        }
    }

    /// The pool as it is now, with its live size.
    async fn read_pool(&self, state: &Value) -> Result<Option<Value>, Diagnostic> {
        let Some(key) = <Self as CloudPool>::key(state) else {
            return Ok(None);
        };
        Ok(CloudPool::get(self, &key).await?.map(|live| live.state))
    }

    /// Nodes per zone, as GKE counts `node_count`: the sum of the target sizes of the pool's
    /// instance groups (one per zone) over their number. A pool still being created has no
    /// groups yet: it is getting the size it was created with.
    async fn node_count(&self, pool: &NodePool) -> Result<f64, String> {
        if pool.instance_group_urls.is_empty() {
            return Ok(f64::from(pool.initial_node_count));
        }
        let sizes = futures::future::join_all(
            pool.instance_group_urls
                .iter()
                .map(|url| self.compute.target_size(url)),
        )
        .await;
        let mut total = 0.0;
        for size in sizes {
            total += size?;
        }
        Ok((total / pool.instance_group_urls.len() as f64).floor())
    }

    fn pool_state(&self, state: &Value, pool: &NodePool, node_count: f64) -> Value {
        let p = pool_json(pool);
        let config = &p["config"];
        let string_map = |m: &Json| {
            let map: IndexMap<String, Value> = m
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), Value::string(v.as_str().unwrap_or_default())))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect();
            if map.is_empty() {
                Value::Null
            } else {
                Value::Object(map)
            }
        };
        let taints: Vec<Value> = config["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                Value::Object(IndexMap::from([
                    (
                        "key".to_owned(),
                        Value::string(t["key"].as_str().unwrap_or_default()),
                    ),
                    (
                        "value".to_owned(),
                        t["value"]
                            .as_str()
                            .filter(|v| !v.is_empty())
                            .map_or(Value::Null, Value::string),
                    ),
                    (
                        "effect".to_owned(),
                        Value::string(t["effect"].as_str().unwrap_or_default()),
                    ),
                ]))
            })
            .collect();
        let accelerator = config["accelerators"]
            .as_array()
            .and_then(|a| a.first())
            .map_or(Value::Null, |a| {
                let optional = |v: &Json| match v {
                    Json::String(s) if !s.is_empty() => Value::string(s),
                    Json::Number(n) => Value::Number(n.as_f64().unwrap_or_default()),
                    _ => Value::Null,
                };
                let clients = a["gpuSharingConfig"]["maxSharedClientsPerGpu"]
                    .as_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .or(a["gpuSharingConfig"]["maxSharedClientsPerGpu"].as_f64());
                Value::Object(IndexMap::from([
                    ("type".to_owned(), optional(&a["acceleratorType"])),
                    (
                        "count".to_owned(),
                        Value::Number(
                            a["acceleratorCount"]
                                .as_str()
                                .and_then(|s| s.parse().ok())
                                .or(a["acceleratorCount"].as_f64())
                                .unwrap_or(0.0),
                        ),
                    ),
                    (
                        "gpu_partition_size".to_owned(),
                        optional(&a["gpuPartitionSize"]),
                    ),
                    (
                        "sharing_strategy".to_owned(),
                        optional(&a["gpuSharingConfig"]["gpuSharingStrategy"]),
                    ),
                    (
                        "max_shared_clients_per_gpu".to_owned(),
                        clients.map_or(Value::Null, Value::Number),
                    ),
                    (
                        "driver_version".to_owned(),
                        optional(&a["gpuDriverInstallationConfig"]["gpuDriverVersion"]),
                    ),
                ]))
            });
        let autoscaling = p["autoscaling"]["enabled"] == true;
        // Proto3 JSON leaves zeros out.
        let size = |v: &Json| Value::Number(v.as_f64().unwrap_or(0.0));
        let mut labels = config["labels"].clone();
        if let Some(l) = labels.as_object_mut() {
            l.remove(CREATION_LABEL);
        }
        Value::Object(IndexMap::from([
            (
                "location".to_owned(),
                Value::string(text(state, "location").unwrap_or_default()),
            ),
            (
                "cluster".to_owned(),
                Value::string(text(state, "cluster").unwrap_or_default()),
            ),
            ("name".to_owned(), Value::string(pool.name.clone())),
            (
                "machine_type".to_owned(),
                Value::string(config["machineType"].as_str().unwrap_or_default()),
            ),
            ("node_count".to_owned(), Value::Number(node_count)),
            (
                "min_node_count".to_owned(),
                if autoscaling {
                    size(&p["autoscaling"]["minNodeCount"])
                } else {
                    Value::Null
                },
            ),
            (
                "max_node_count".to_owned(),
                if autoscaling {
                    size(&p["autoscaling"]["maxNodeCount"])
                } else {
                    Value::Null
                },
            ),
            (
                "spot".to_owned(),
                if config["spot"] == true {
                    Value::Bool(true)
                } else {
                    Value::Null
                },
            ),
            ("labels".to_owned(), string_map(&labels)),
            (
                "taints".to_owned(),
                if taints.is_empty() {
                    Value::Null
                } else {
                    Value::List(taints)
                },
            ),
            ("id".to_owned(), Value::string(pool.self_link.clone())),
            ("accelerator".to_owned(), accelerator),
        ]))
    }

    fn pool_request(planned: &Value, token: &str) -> NodePool {
        let labels: serde_json::Map<String, Json> = attribute(planned, "labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), json!(v.as_str())))
                    .collect()
            })
            .unwrap_or_default();
        let taints: Vec<Json> = attribute(planned, "taints")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .map(|t| json!({"key": text(t, "key"), "value": text(t, "value").unwrap_or_default(), "effect": text(t, "effect")}))
            .collect();
        let mut config = json!({
            "machineType": text(planned, "machine_type"),
            "labels": labels,
            "taints": taints,
            "resourceLabels": {CREATION_LABEL: token},
        });
        if attribute(planned, "spot").and_then(Value::as_bool) == Some(true) {
            config["spot"] = json!(true);
        }
        if let Some(a) = attribute(planned, "accelerator") {
            let mut accelerator = json!({
                "acceleratorType": text(a, "type"),
                "acceleratorCount": number(a, "count").unwrap_or(1).to_string(),
            });
            if let Some(size) = text(a, "gpu_partition_size") {
                accelerator["gpuPartitionSize"] = json!(size);
            }
            if let Some(strategy) = text(a, "sharing_strategy") {
                accelerator["gpuSharingConfig"] = json!({
                    "gpuSharingStrategy": strategy,
                    "maxSharedClientsPerGpu": number(a, "max_shared_clients_per_gpu").unwrap_or(2).to_string(),
                });
            }
            if let Some(driver) = text(a, "driver_version") {
                accelerator["gpuDriverInstallationConfig"] = json!({"gpuDriverVersion": driver});
            }
            config["accelerators"] = json!([accelerator]);
        }
        let mut pool = json!({
            "name": text(planned, "name"),
            "config": config,
            "initialNodeCount": number(planned, "node_count").or(number(planned, "min_node_count")).unwrap_or(1),
        });
        if let (Some(min), Some(max)) = (
            number(planned, "min_node_count"),
            number(planned, "max_node_count"),
        ) {
            pool["autoscaling"] =
                json!({"enabled": true, "minNodeCount": min, "maxNodeCount": max});
        }
        from_json(pool)
    }

    /// Polls the pool until it is RUNNING (when its operation is not known).
    async fn wait_pool_running(&self, state: &Value) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        let mut delay = Duration::from_millis(500);
        loop {
            let pool = self.get_pool(state).await.map_err(|d| d.detail)?;
            let status = pool
                .as_ref()
                .and_then(|p| p.status.name().map(str::to_owned));
            match status.as_deref() {
                Some("RUNNING") => return Ok(()),
                Some("ERROR") => return Err("the node pool is in state ERROR".to_owned()),
                None => return Err("the node pool disappeared".to_owned()),
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err("the node pool did not become RUNNING".to_owned());
                }
                _ => {}
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
        }
    }

    async fn get_autoprovisioning(&self, state: &Value) -> Result<Option<Value>, Diagnostic> {
        let location = text(state, "location").unwrap_or_default();
        let cluster = text(state, "cluster").unwrap_or_default();
        let name = self.cluster_path(location, cluster);
        let live = match self.client.get_cluster().set_name(&name).send().await {
            Ok(c) => to_json(&c),
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => {
                return Err(Diagnostic::error(
                    format!("Cannot read GKE cluster {name}"),
                    describe(&e),
                ));
            }
        };
        let autoscaling = &live["autoscaling"];
        if autoscaling["enableNodeAutoprovisioning"] != true {
            return Ok(None);
        }
        let limits: Vec<Value> = autoscaling["resourceLimits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                let n = |v: &Json| {
                    v.as_str()
                        .and_then(|s| s.parse::<f64>().ok())
                        .or(v.as_f64())
                };
                Value::Object(IndexMap::from([
                    (
                        "resource_type".to_owned(),
                        Value::string(l["resourceType"].as_str().unwrap_or_default()),
                    ),
                    (
                        "minimum".to_owned(),
                        n(&l["minimum"]).map_or(Value::Null, Value::Number),
                    ),
                    (
                        "maximum".to_owned(),
                        n(&l["maximum"]).map_or(Value::Null, Value::Number),
                    ),
                ]))
            })
            .collect();
        let locations: Vec<Value> = autoscaling["autoprovisioningLocations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(Value::string))
            .collect();
        Ok(Some(Value::Object(IndexMap::from([
            ("location".to_owned(), Value::string(location)),
            ("cluster".to_owned(), Value::string(cluster)),
            ("enabled".to_owned(), Value::Bool(true)),
            ("resource_limits".to_owned(), Value::List(limits)),
            (
                "locations".to_owned(),
                if locations.is_empty() {
                    Value::Null
                } else {
                    Value::List(locations)
                },
            ),
        ]))))
    }

    /// A warning for each NVIDIA accelerator type in the limits that neither the built-in
    /// table nor Compute Engine (in the zones auto-provisioning may use) knows: such a
    /// ceiling allows GPUs auto-provisioning can never bring.
    async fn unknown_accelerators(&self, planned: &Value) -> Vec<Diagnostic> {
        let mut zones: Vec<&str> = attribute(planned, "locations")
            .and_then(Value::as_list)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let location = text(planned, "location").unwrap_or_default();
        if zones.is_empty() && location.matches('-').count() >= 2 {
            zones.push(location);
        }
        let limits = attribute(planned, "resource_limits").and_then(Value::as_list);
        let mut warnings = Vec::new();
        for (i, limit) in limits.into_iter().flatten().enumerate() {
            let Some(ty) = text(limit, "resource_type").filter(|t| t.starts_with("nvidia-")) else {
                continue;
            };
            if gpustack_provider_sdk::catalog::gke_accelerator(ty).is_some() {
                continue;
            }
            let mut failures = Vec::new();
            let mut offered = false;
            for zone in &zones {
                match self.compute.accelerator(&self.project, zone, ty).await {
                    Ok(Some(_)) => {
                        offered = true;
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => failures.push(e),
                }
            }
            if offered {
                continue;
            }
            let why = if zones.is_empty() {
                format!(
                    "{location} is a region and no auto-provisioning locations are set, so Compute Engine was not asked (accelerator types are listed per zone)"
                )
            } else if failures.is_empty() {
                format!("Compute Engine offers no such type in {}", zones.join(", "))
            } else {
                format!("Compute Engine could not be asked: {}", failures.join("; "))
            };
            warnings.push(
                Diagnostic::warning(
                    "Unknown accelerator type",
                    format!("{ty} is not in the {} and {why}: its ceiling counts GPUs that node auto-provisioning may never bring.", gpustack_provider_sdk::catalog::BUILT_IN),
                )
                .with_attribute(format!("resource_limits[{i}].resource_type")),
            );
        }
        warnings
    }

    /// Sets the cluster's autoscaling to the planned limits (`None`: auto-provisioning off).
    async fn set_autoprovisioning(
        &self,
        state: &Value,
        planned: Option<&Value>,
    ) -> Result<(), Diagnostic> {
        let location = text(state, "location").unwrap_or_default();
        let name = self.cluster_path(location, text(state, "cluster").unwrap_or_default());
        let autoscaling = match planned {
            Some(planned) => {
                let limits: Vec<Json> = attribute(planned, "resource_limits")
                    .and_then(Value::as_list)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| {
                        let mut limit = json!({"resourceType": text(l, "resource_type"), "maximum": number(l, "maximum").unwrap_or(0).to_string()});
                        if let Some(min) = number(l, "minimum") {
                            limit["minimum"] = json!(min.to_string());
                        }
                        limit
                    })
                    .collect();
                let locations: Vec<Json> = attribute(planned, "locations")
                    .and_then(Value::as_list)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|l| l.as_str().map(|s| json!(s)))
                    .collect();
                json!({
                    "enableNodeAutoprovisioning": attribute(planned, "enabled").and_then(Value::as_bool).unwrap_or(true),
                    "resourceLimits": limits,
                    "autoprovisioningLocations": locations,
                })
            }
            None => json!({"enableNodeAutoprovisioning": false}),
        };
        let failed = |m: String| {
            Diagnostic::error(
                format!("Cannot set node auto-provisioning of GKE cluster {name}"),
                m,
            )
        };
        let update: ClusterUpdate = from_json(json!({"desiredClusterAutoscaling": autoscaling}));
        let operation = self
            .client
            .update_cluster()
            .set_name(&name)
            .set_update(update)
            .send()
            .await
            .map_err(|e| failed(describe(&e)))?;
        self.wait(location, &operation).await.map_err(failed)
    }
}

/// What node pools and auto-provisioning compare: empty collections as unset, `spot = false`
/// as unset, labels in order.
impl Connected {
    /// The model and memory of a pool's accelerator type, and where they came from: Compute
    /// Engine's description of the type in the pool's zone, else the built-in table by the
    /// type's name (saying why). The pool's accelerator count is the count.
    async fn accelerator_gpu(
        &self,
        state: &Value,
        accelerator: &str,
    ) -> Option<(String, u32, String)> {
        let location = text(state, "location").unwrap_or_default();
        // Accelerator types are zonal (`us-central1-c`); a regional pool names a region.
        let asked = if location.matches('-').count() >= 2 {
            self.compute
                .accelerator(&self.project, location, accelerator)
                .await
        } else {
            Err(format!(
                "{location} is a region, and accelerator types are listed per zone"
            ))
        };
        let why = match asked {
            Ok(Some((model, memory_gb, memory_from_table))) => {
                let mut source = format!("Compute Engine acceleratorTypes ({accelerator})");
                if memory_from_table {
                    source.push_str(&format!(
                        ", its memory from the {}",
                        gpustack_provider_sdk::catalog::BUILT_IN
                    ));
                }
                return Some((model, memory_gb, source));
            }
            Ok(None) => format!("Compute Engine has no {accelerator} in {location}"),
            Err(e) => format!("acceleratorTypes failed: {e}"),
        };
        let (model, memory_gb) = gpustack_provider_sdk::catalog::gke_accelerator(accelerator)?;
        Some((
            model.to_owned(),
            memory_gb,
            format!(
                "accelerator type {accelerator}, {} ({why})",
                gpustack_provider_sdk::catalog::BUILT_IN
            ),
        ))
    }
}

fn normalized(config: &Value) -> Value {
    let mut config = config.clone();
    if let Value::Object(map) = &mut config {
        unset_empty(map, &["labels", "taints", "locations"]);
        unset_false(map, &["spot"]);
        sort_maps(map, &["labels"]);
    }
    config
}

/// A node pool's key: its location, cluster and name.
struct PoolKey {
    location: String,
    cluster: String,
    name: String,
}

impl std::fmt::Display for PoolKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.location, self.cluster, self.name)
    }
}

#[async_trait::async_trait]
impl CloudPool for Connected {
    type Key = PoolKey;
    const KIND: &'static str = "GKE node pool";
    const ID_FORMAT: &'static str = "LOCATION/CLUSTER/POOL";
    const POOL_KIND: &'static str = "nodepool";
    const POOL_LABEL: &'static str = "cloud.google.com/gke-nodepool";
    const NODE_LABELS_ATTRIBUTE: &'static str = "labels";

    fn name(state: &Value) -> Option<&str> {
        text(state, "name")
    }

    fn node_labels(state: &Value) -> BTreeMap<String, String> {
        attribute(state, "labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// GKE runs its own NVIDIA device plugin on GPU nodes unless the pool's nodes carry
    /// `gke-no-default-nvidia-gpu-device-plugin=true` (GPU-FACTS, GKE).
    fn managed_gpu_software(state: &Value) -> Option<gpustack_protocol::ManagedSoftware> {
        attribute(state, "accelerator").filter(|a| !a.is_null())?;
        let own = Self::node_labels(state)
            .get("gke-no-default-nvidia-gpu-device-plugin")
            .map(String::as_str)
            == Some("true");
        (!own).then(|| gpustack_protocol::ManagedSoftware {
            what:
                "GKE's NVIDIA device plugin (no gke-no-default-nvidia-gpu-device-plugin=true label)"
                    .into(),
            attribute: gpustack_protocol::path(["accelerator"]),
            device_plugin: true,
        })
    }

    async fn shape(&self, state: &Value) -> Option<PoolShape> {
        let a = attribute(state, "accelerator")?;
        let accelerator = text(a, "type")?;
        let count = u32::try_from(number(a, "count")?).ok()?;
        // An accelerator type no one could name still makes a pool line's warning.
        let gpus =
            self.accelerator_gpu(state, accelerator)
                .await
                .map(|(model, memory_gb, source)| GpuShape {
                    count,
                    model,
                    memory_gb,
                    source,
                });
        let (min, max) = match (
            number(state, "min_node_count"),
            number(state, "max_node_count"),
        ) {
            (Some(min), Some(max)) => (min, max),
            _ => {
                let n = number(state, "node_count")?;
                (n, n)
            }
        };
        let clients = text(a, "sharing_strategy").and_then(|s| {
            let n = number(a, "max_shared_clients_per_gpu")?;
            Some((
                format!("GKE {}", s.to_lowercase().replace('_', "-")),
                n as f64,
            ))
        });
        let mig_profile = text(a, "gpu_partition_size").map(str::to_owned);
        let sharing = (mig_profile.is_some() || clients.is_some()).then_some(CloudSharing {
            mig_profile,
            clients,
        });
        Some(PoolShape {
            min_nodes: u32::try_from(min).ok()?,
            max_nodes: u32::try_from(max).ok()?,
            machine: text(state, "machine_type")?.to_owned(),
            gpus,
            sharing,
        })
    }

    fn schema(&self) -> Schema {
        resource_schema(&Gcp, "gke_nodepool")
    }

    fn key(state: &Value) -> Option<PoolKey> {
        Some(PoolKey {
            location: text(state, "location")?.to_owned(),
            cluster: text(state, "cluster")?.to_owned(),
            name: text(state, "name")?.to_owned(),
        })
    }

    fn parse_id(id: &str) -> Option<PoolKey> {
        let [location, cluster, name] = split_id(id)?;
        Some(PoolKey {
            location: location.to_owned(),
            cluster: cluster.to_owned(),
            name: name.to_owned(),
        })
    }

    fn normalize(config: &Value) -> Value {
        normalized(config)
    }

    fn refine(prior: &Value, _: &Value, response: &mut PlanResourceChangeResponse) {
        // The accelerator block cannot change on a live pool.
        if attribute(prior, "accelerator") != attribute(&response.planned_state, "accelerator")
            && !response.requires_replace.iter().any(|r| r == "accelerator")
        {
            response.requires_replace.push("accelerator".to_owned());
        }
        if response.requires_replace.is_empty()
            && let Some(id) = attribute(prior, "id")
        {
            gpustack_provider_sdk::check::set(&mut response.planned_state, "id", id.clone());
        }
    }

    async fn get(&self, key: &PoolKey) -> Result<Option<LivePool>, Diagnostic> {
        let state = Value::from_json(
            &json!({"location": key.location, "cluster": key.cluster, "name": key.name}),
        );
        let Some(pool) = self.get_pool(&state).await? else {
            return Ok(None);
        };
        let size = self.node_count(&pool).await.map_err(|m| {
            Diagnostic::error(format!("Cannot read the size of GKE node pool {key}"), m)
        })?;
        Ok(Some(LivePool {
            state: self.pool_state(&state, &pool, size),
            mark: pool
                .config
                .as_ref()
                .and_then(|c| c.resource_labels.get(CREATION_LABEL))
                .cloned(),
        }))
    }

    async fn create(
        &self,
        planned: &Value,
        owner: &str,
    ) -> Result<Value, (Option<Value>, Diagnostic)> {
        let location = text(planned, "location").unwrap_or_default();
        let parent = self.cluster_path(location, text(planned, "cluster").unwrap_or_default());
        // This stack's mark, for a retried create and for a run after a crash.
        let token = if owner.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            owner.to_owned()
        };
        let failed = |m: String| {
            Diagnostic::error(
                format!("Cannot create GKE node pool {}", self.pool_path(planned)),
                m,
            )
        };
        let started = self
            .client
            .create_node_pool()
            .set_parent(&parent)
            .set_node_pool(Self::pool_request(planned, &token))
            .send()
            .await;
        let result = match started {
            Ok(operation) => self.wait(location, &operation).await,
            // A retry of a create that went through finds the pool: ours if it has our token.
            Err(e) if e.http_status_code() == Some(409) => match self.get_pool(planned).await {
                Ok(Some(pool))
                    if pool
                        .config
                        .as_ref()
                        .and_then(|c| c.resource_labels.get(CREATION_LABEL))
                        == Some(&token) =>
                {
                    self.wait_pool_running(planned).await
                }
                _ => Err(format!(
                    "the cluster already has a node pool named {}; import it to manage it",
                    text(planned, "name").unwrap_or_default()
                )),
            },
            Err(e) => Err(describe(&e)),
        };
        let state = self.read_pool(planned).await.ok().flatten();
        match result {
            Ok(()) => Ok(state.unwrap_or(Value::Null)),
            Err(m) => Err((state, failed(m))),
        }
    }

    async fn update(&self, prior: &Value, planned: &Value) -> Result<Value, Diagnostic> {
        let name = self.pool_path(prior);
        let location = text(prior, "location").unwrap_or_default();
        let failed =
            |m: String| Diagnostic::error(format!("Cannot update GKE node pool {name}"), m);
        let live = self.get_pool(prior).await?.ok_or_else(|| {
            failed("it was deleted outside gpustack; plan again to create it".into())
        })?;
        if attribute(prior, "labels") != attribute(planned, "labels")
            || attribute(prior, "taints") != attribute(planned, "taints")
        {
            let request = Self::pool_request(planned, "");
            let live_json = pool_json(&live);
            let operation = self
                .client
                .update_node_pool()
                .set_name(&name)
                .set_node_version(live_json["version"].as_str().unwrap_or("-"))
                .set_image_type(live_json["config"]["imageType"].as_str().unwrap_or("-"))
                .set_labels(
                    NodeLabels::new().set_labels(
                        request
                            .config
                            .as_ref()
                            .map(|c| c.labels.clone())
                            .unwrap_or_default(),
                    ),
                )
                .set_taints(
                    NodeTaints::new().set_taints(
                        request
                            .config
                            .as_ref()
                            .map(|c| c.taints.clone())
                            .unwrap_or_default(),
                    ),
                )
                .send()
                .await
                .map_err(|e| failed(describe(&e)))?;
            self.wait(location, &operation).await.map_err(failed)?;
        }
        let range = |s: &Value| (number(s, "min_node_count"), number(s, "max_node_count"));
        if range(prior) != range(planned) {
            let autoscaling = match range(planned) {
                (Some(min), Some(max)) => {
                    json!({"enabled": true, "minNodeCount": min, "maxNodeCount": max})
                }
                _ => json!({"enabled": false}),
            };
            let operation = self
                .client
                .set_node_pool_autoscaling()
                .set_name(&name)
                .set_autoscaling(from_json::<NodePoolAutoscaling>(autoscaling))
                .send()
                .await
                .map_err(|e| failed(describe(&e)))?;
            self.wait(location, &operation).await.map_err(failed)?;
        }
        if let Some(count) =
            number(planned, "node_count").filter(|c| Some(*c) != number(prior, "node_count"))
        {
            let operation = self
                .client
                .set_node_pool_size()
                .set_name(&name)
                .set_node_count(i32::try_from(count).unwrap_or(i32::MAX))
                .send()
                .await
                .map_err(|e| failed(describe(&e)))?;
            self.wait(location, &operation).await.map_err(failed)?;
        }
        Ok(self.read_pool(prior).await?.unwrap_or(Value::Null))
    }

    async fn delete(&self, prior: &Value) -> Result<(), Diagnostic> {
        let name = self.pool_path(prior);
        let location = text(prior, "location").unwrap_or_default();
        let failed =
            |m: String| Diagnostic::error(format!("Cannot delete GKE node pool {name}"), m);
        match self.client.delete_node_pool().set_name(&name).send().await {
            Ok(operation) => self.wait(location, &operation).await.map_err(failed),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(failed(describe(&e))),
        }
    }
}

/// The GPU ceiling of each accelerator type node auto-provisioning may bring, before and after.
fn nap_ceilings(prior: Option<&Value>, planned: Option<&Value>) -> Vec<gpustack_protocol::GpuFact> {
    let limits = |state: Option<&Value>| -> std::collections::BTreeMap<String, f64> {
        state
            .and_then(|s| attribute(s, "resource_limits"))
            .and_then(Value::as_list)
            .into_iter()
            .flatten()
            .filter_map(|l| {
                // Every NVIDIA accelerator type is `nvidia-…`; the others are cpu, memory and
                // TPUs, which are not nvidia.com/gpu.
                let ty = text(l, "resource_type").filter(|t| t.starts_with("nvidia-"))?;
                Some((ty.to_owned(), attribute(l, "maximum")?.as_number()?))
            })
            .collect()
    };
    let (before, after) = (limits(prior), limits(planned));
    let types: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    types
        .into_iter()
        .map(|ty| {
            gpustack_protocol::GpuFact::Ceiling(gpustack_protocol::CeilingFact {
                scope: format!("gke node auto-provisioning {ty}"),
                resource: "nvidia.com/gpu".into(),
                before: before.get(ty).copied(),
                after: after.get(ty).copied(),
                node_labels: std::collections::BTreeMap::from([(
                    "cloud.google.com/gke-accelerator".to_owned(),
                    ty.clone(),
                )]),
            })
        })
        .collect()
}

/// `gke_node_autoprovisioning`: a setting of the cluster, not an object of its own.
struct Autoprovisioning(Arc<Connected>);

#[async_trait::async_trait]
impl Resource for Autoprovisioning {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let reads = request
            .states
            .iter()
            .map(|state| self.0.get_autoprovisioning(state));
        ReadResourcesResponse::collect(&request.states, futures::future::join_all(reads).await)
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let mut response = plan_from_schema(
            &resource_schema(&Gcp, "gke_node_autoprovisioning"),
            request.prior_state.as_ref(),
            &normalized(&request.config),
        );
        response.gpu_facts = nap_ceilings(
            request.prior_state.as_ref(),
            (!response.planned_state.is_null()).then_some(&response.planned_state),
        );
        if !response.planned_state.is_null() {
            let unknown = self.0.unknown_accelerators(&response.planned_state).await;
            response.diagnostics.extend(unknown);
        }
        response
    }

    /// Set (whether new or changed) or off.
    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let kept = request.prior_state.clone();
        let result = match (&request.prior_state, &request.planned_state) {
            (_, Some(planned)) => match self.0.set_autoprovisioning(planned, Some(planned)).await {
                Ok(()) => self
                    .0
                    .get_autoprovisioning(planned)
                    .await
                    .map_err(|d| (kept, d)),
                Err(d) => Err((kept, d)),
            },
            (Some(prior), None) => self
                .0
                .set_autoprovisioning(prior, None)
                .await
                .map(|()| None)
                .map_err(|d| (kept, d)),
            (None, None) => Ok(None),
        };
        ApplyResourceChangeResponse::from_result(result)
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let Some((location, cluster)) = id.split_once('/').filter(|(_, c)| !c.contains('/')) else {
            return Err(vec![Diagnostic::error(
                "Invalid import ID",
                format!("\"{id}\" is not LOCATION/CLUSTER."),
            )]);
        };
        let state = Value::from_json(&json!({"location": location, "cluster": cluster}));
        match self.0.get_autoprovisioning(&state).await {
            Ok(Some(state)) => Ok(state),
            Ok(None) => Err(vec![Diagnostic::error(
                "Not found",
                format!("GKE has no cluster {cluster} in {location}."),
            )]),
            Err(d) => Err(vec![d]),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::described_gpu;

    #[test]
    fn an_accelerator_types_description_names_its_gpu() {
        assert_eq!(
            described_gpu("NVIDIA A100 80GB"),
            Some(("A100".into(), 80, false))
        );
        assert_eq!(
            described_gpu("NVIDIA H100 Mega 80GB"),
            Some(("H100".into(), 80, false))
        );
        assert_eq!(described_gpu("NVIDIA T4"), Some(("T4".into(), 16, true)));
        assert_eq!(
            described_gpu("NVIDIA Tesla V100"),
            Some(("V100".into(), 16, true))
        );
        assert_eq!(described_gpu("NVIDIA X9"), None);
    }
}
