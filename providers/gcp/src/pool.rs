//! A GKE node pool as a [`CloudPool`]: its state from GKE and Compute Engine, the request
//! that creates it, and create, update and delete.

use crate::gke::{describe, from_json, not_found, pool_json};
use crate::{Connected, Gcp, normalized};
use google_cloud_container_v1::model::{NodeLabels, NodePool, NodePoolAutoscaling, NodeTaints};
use gpustack_protocol::{
    CloudSharing, Diagnostic, GpuShape, PlanResourceChangeResponse, PoolShape, Schema, Value,
};
use gpustack_provider_sdk::check::{attribute, integer, text};
use gpustack_provider_sdk::family::resource_schema;
use gpustack_provider_sdk::pool::{CloudPool, LivePool, PoolKey};
use indexmap::IndexMap;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;

/// The resource label a pool is created with: tells a create whose answer was lost from
/// someone else's pool of the same name.
const CREATION_LABEL: &str = "gpustack-creation-token";

impl Connected {
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
        let taints = taints_state(config);
        let accelerator = accelerator_state(config);
        let autoscaling = p["autoscaling"]["enabled"] == true;
        // Proto3 JSON leaves zeros out.
        let size = |v: &Json| Value::number(v.as_f64().unwrap_or(0.0));
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
            ("node_count".to_owned(), Value::number(node_count)),
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
                "acceleratorCount": integer(a, "count").unwrap_or(1).to_string(),
            });
            if let Some(size) = text(a, "gpu_partition_size") {
                accelerator["gpuPartitionSize"] = json!(size);
            }
            if let Some(strategy) = text(a, "sharing_strategy") {
                accelerator["gpuSharingConfig"] = json!({
                    "gpuSharingStrategy": strategy,
                    "maxSharedClientsPerGpu": integer(a, "max_shared_clients_per_gpu").unwrap_or(2).to_string(),
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
            "initialNodeCount": integer(planned, "node_count").or(integer(planned, "min_node_count")).unwrap_or(1),
        });
        if let (Some(min), Some(max)) = (
            integer(planned, "min_node_count"),
            integer(planned, "max_node_count"),
        ) {
            pool["autoscaling"] =
                json!({"enabled": true, "minNodeCount": min, "maxNodeCount": max});
        }
        from_json(pool)
    }

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

#[async_trait::async_trait]
impl CloudPool for Connected {
    const KIND: &'static str = "GKE node pool";
    const ID_FORMAT: &'static str = "LOCATION/CLUSTER/POOL";
    const SCOPE_ATTRIBUTE: Option<&'static str> = Some("location");
    const CLUSTER_ATTRIBUTE: &'static str = "cluster";
    const NAME_ATTRIBUTE: &'static str = "name";
    const POOL_KIND: &'static str = "nodepool";
    const POOL_LABEL: &'static str = "cloud.google.com/gke-nodepool";
    const NODE_LABELS_ATTRIBUTE: &'static str = "labels";
    const DELETES_NODES: &'static str = "GKE deletes the pods of every node at once as it deletes the pool, PodDisruptionBudgets not respected";

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
        let (accelerator, count) = accelerator_of(state)?;
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
        shape_of(state, gpus)
    }

    fn schema(&self) -> Schema {
        resource_schema(&Gcp::default(), "gke_nodepool")
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
            &json!({"location": key.scope(), "cluster": key.cluster(), "name": key.name()}),
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
        let range = |s: &Value| (integer(s, "min_node_count"), integer(s, "max_node_count"));
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
            integer(planned, "node_count").filter(|c| Some(*c) != integer(prior, "node_count"))
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

/// The pool's taints as the state keeps them (an empty value is null).
fn taints_state(config: &Json) -> Vec<Value> {
    config["taints"]
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
        .collect()
}

/// The pool's first accelerator as the state keeps it (null when the pool has none).
fn accelerator_state(config: &Json) -> Value {
    config["accelerators"]
        .as_array()
        .and_then(|a| a.first())
        .map_or(Value::Null, |a| {
            let optional = |v: &Json| match v {
                Json::String(s) if !s.is_empty() => Value::string(s),
                Json::Number(n) => Value::number(n.as_f64().unwrap_or_default()),
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
                    Value::number(
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
                    clients.map_or(Value::Null, Value::number),
                ),
                (
                    "driver_version".to_owned(),
                    optional(&a["gpuDriverInstallationConfig"]["gpuDriverVersion"]),
                ),
            ]))
        })
}

/// A pool's accelerator type and GPUs per node.
fn accelerator_of(state: &Value) -> Option<(&str, u32)> {
    let a = attribute(state, "accelerator")?;
    Some((text(a, "type")?, u32::try_from(integer(a, "count")?).ok()?))
}

/// The machines of a pool whose GPUs per node are `gpus` (`None`: no one could name them).
fn shape_of(state: &Value, gpus: Option<GpuShape>) -> Option<PoolShape> {
    let a = attribute(state, "accelerator")?;
    let (min, max) = match (
        integer(state, "min_node_count"),
        integer(state, "max_node_count"),
    ) {
        (Some(min), Some(max)) => (min, max),
        _ => {
            let n = integer(state, "node_count")?;
            (n, n)
        }
    };
    let clients = text(a, "sharing_strategy").and_then(|s| {
        let n = integer(a, "max_shared_clients_per_gpu")?;
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

/// The machines of a pool from the built-in table alone (`gpustack review`, which reads no
/// cloud API), saying so.
pub(crate) fn table_shape(state: &Value) -> Option<PoolShape> {
    let (accelerator, count) = accelerator_of(state)?;
    let gpus =
        gpustack_provider_sdk::catalog::gke_accelerator(accelerator).map(|(model, memory_gb)| {
            GpuShape {
                count,
                model: model.to_owned(),
                memory_gb,
                source: format!(
                    "accelerator type {accelerator}, {} (a review reads no cloud API)",
                    gpustack_provider_sdk::catalog::BUILT_IN
                ),
            }
        });
    shape_of(state, gpus)
}
