//! An AKS agent pool as a [`CloudPool`]: its state as ARM describes it, the body of a PUT,
//! the GPUs of its VM size from Resource SKUs, and create, update and delete.

use crate::arm::{ArmError, PoolId};
use crate::model::{AgentPool, GpuProfile};
use crate::{Azure, Connected};
use gpustack_protocol::{
    CloudSharing, Diagnostic, GpuShape, PlanResourceChangeResponse, PoolShape, Schema, Value,
};
use gpustack_provider_sdk::check::{attribute, integer, text};
use gpustack_provider_sdk::family::resource_schema;
use gpustack_provider_sdk::normalize::{sort_maps, unset_empty, unset_false};
use gpustack_provider_sdk::pool::{CloudPool, LivePool, PoolKey};
use indexmap::IndexMap;
use std::collections::BTreeMap;

/// The tag a pool is created with: tells a create whose answer was lost from someone
/// else's pool of the same name.
const CREATION_TAG: &str = "gpustack.dev/creation-token";

/// The label AKS puts on every node of a pool.
const POOL_LABEL: &str = "kubernetes.azure.com/agentpool";

impl Connected {
    /// How many GPUs Resource SKUs give `size` in the location of the pool's cluster.
    async fn sku_gpus(&self, state: &Value, size: &str) -> Result<u32, String> {
        let key = (
            text(state, "resource_group").unwrap_or_default().to_owned(),
            text(state, "cluster").unwrap_or_default().to_owned(),
        );
        let location = {
            let mut known = self.locations.lock().await;
            match known.get(&key) {
                Some(l) => l.clone(),
                None => {
                    let l = self
                        .arm
                        .cluster_location(&key.0, &key.1)
                        .await
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("cluster {} not found", key.1))?;
                    known.insert(key, l.clone());
                    l
                }
            }
        };
        let mut skus = self.skus.lock().await;
        if !skus.contains_key(&location) {
            let sizes = self
                .arm
                .vm_gpus(&location)
                .await
                .map_err(|e| e.to_string())?;
            skus.insert(location.clone(), sizes);
        }
        skus[&location]
            .get(size)
            .copied()
            .ok_or_else(|| format!("Resource SKUs list no {size} in {location}"))
    }
}

fn pool_id(state: &Value) -> PoolId {
    let part = |name| text(state, name).unwrap_or_default().to_owned();
    PoolId {
        resource_group: part("resource_group"),
        cluster: part("cluster"),
        name: part("name"),
    }
}

impl From<&PoolKey> for PoolId {
    fn from(key: &PoolKey) -> Self {
        PoolId {
            resource_group: key.scope().to_owned(),
            cluster: key.cluster().to_owned(),
            name: key.name().to_owned(),
        }
    }
}

fn failed(what: &str, id: &PoolId, e: &ArmError) -> Diagnostic {
    Diagnostic::error(format!("Cannot {what} AKS node pool {id}"), e.to_string())
}

fn flag(state: &Value, name: &str) -> bool {
    attribute(state, name).and_then(Value::as_bool) == Some(true)
}

/// A list attribute's strings; `None` where there are none.
fn strings(state: &Value, name: &str) -> Option<Vec<String>> {
    Some(gpustack_provider_sdk::check::strings(state, name)).filter(|l| !l.is_empty())
}

/// A map attribute's string entries; `None` where there are none.
fn string_map(state: &Value, name: &str) -> Option<BTreeMap<String, String>> {
    Some(gpustack_provider_sdk::check::string_map(state, name)).filter(|m| !m.is_empty())
}

/// The state of a pool as ARM describes it.
fn state_of(id: &PoolId, pool: &AgentPool) -> Value {
    let p = &pool.properties;
    let optional = |s: &Option<String>| s.clone().map_or(Value::Null, Value::String);
    let count = |n: Option<i64>| n.map_or(Value::Null, |n| Value::number(n as f64));
    let list = |l: &Option<Vec<String>>| {
        l.as_ref()
            .filter(|l| !l.is_empty())
            .map_or(Value::Null, |l| {
                Value::List(l.iter().cloned().map(Value::String).collect())
            })
    };
    let map = |m: Option<BTreeMap<String, String>>| {
        m.filter(|m| !m.is_empty()).map_or(Value::Null, |m| {
            Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
        })
    };
    let tags = p.tags.clone().map(|mut t| {
        t.remove(CREATION_TAG);
        t
    });
    let spot = p.scale_set_priority.as_deref() == Some("Spot");
    Value::Object(IndexMap::from([
        (
            "resource_group".to_owned(),
            Value::string(&id.resource_group),
        ),
        ("cluster".to_owned(), Value::string(&id.cluster)),
        (
            "name".to_owned(),
            Value::string(pool.name.clone().unwrap_or_else(|| id.name.clone())),
        ),
        ("vm_size".to_owned(), optional(&p.vm_size)),
        ("node_count".to_owned(), count(p.count)),
        (
            "auto_scaling".to_owned(),
            if p.enable_auto_scaling == Some(true) {
                Value::Bool(true)
            } else {
                Value::Null
            },
        ),
        ("min_count".to_owned(), count(p.min_count)),
        ("max_count".to_owned(), count(p.max_count)),
        ("mode".to_owned(), optional(&p.mode)),
        ("node_labels".to_owned(), map(p.node_labels.clone())),
        ("node_taints".to_owned(), list(&p.node_taints)),
        (
            "spot".to_owned(),
            if spot { Value::Bool(true) } else { Value::Null },
        ),
        (
            "spot_eviction_policy".to_owned(),
            if spot {
                optional(&p.scale_set_eviction_policy)
            } else {
                Value::Null
            },
        ),
        (
            "gpu_instance_profile".to_owned(),
            optional(&p.gpu_instance_profile),
        ),
        (
            "gpu_driver".to_owned(),
            optional(&p.gpu_profile.as_ref().and_then(|g| g.driver.clone())),
        ),
        (
            "gpu_management_mode".to_owned(),
            optional(
                &p.gpu_profile
                    .as_ref()
                    .and_then(|g| g.nvidia.as_ref())
                    .and_then(|n| n.management_mode.clone()),
            ),
        ),
        ("os_disk_size_gb".to_owned(), count(p.os_disk_size_gb)),
        ("zones".to_owned(), list(&p.availability_zones)),
        (
            "orchestrator_version".to_owned(),
            optional(&p.orchestrator_version),
        ),
        ("tags".to_owned(), map(tags)),
        ("id".to_owned(), optional(&pool.id)),
        (
            "node_image_version".to_owned(),
            optional(&p.node_image_version),
        ),
        (
            "provisioning_state".to_owned(),
            optional(&p.provisioning_state),
        ),
    ]))
}

/// The body of a PUT: the live pool (if any) with every managed property as planned, so
/// that what gpustack does not manage is sent back unchanged.
fn request_of(planned: &Value, live: Option<&AgentPool>) -> AgentPool {
    let mut pool = live.cloned().unwrap_or_default();
    pool.id = None;
    pool.name = None;
    pool.other.clear();
    let p = &mut pool.properties;
    // Read-only properties ARM reports but does not take.
    p.provisioning_state = None;
    p.current_orchestrator_version = None;
    p.node_image_version = None;
    p.e_tag = None;
    p.vm_size = text(planned, "vm_size").map(str::to_owned);
    p.os_type = p.os_type.take().or_else(|| Some("Linux".to_owned()));
    p.mode = text(planned, "mode")
        .map(str::to_owned)
        .or(p.mode.take())
        .or_else(|| Some("User".to_owned()));
    let autoscale = flag(planned, "auto_scaling");
    p.enable_auto_scaling = autoscale
        .then_some(true)
        .or(p.enable_auto_scaling.map(|_| false));
    p.min_count = integer(planned, "min_count");
    p.max_count = integer(planned, "max_count");
    // An autoscaled pool's count is the autoscaler's unless the configuration sets it.
    p.count = integer(planned, "node_count")
        .or(p.count)
        .or(p.min_count)
        .or(Some(1));
    p.node_labels = string_map(planned, "node_labels").or(live.map(|_| BTreeMap::new()));
    p.node_taints = strings(planned, "node_taints").or(live.map(|_| Vec::new()));
    if flag(planned, "spot") {
        p.scale_set_priority = Some("Spot".to_owned());
        p.scale_set_eviction_policy = text(planned, "spot_eviction_policy").map(str::to_owned);
    }
    p.gpu_instance_profile = text(planned, "gpu_instance_profile").map(str::to_owned);
    if let Some(driver) = text(planned, "gpu_driver") {
        p.gpu_profile.get_or_insert_with(GpuProfile::default).driver = Some(driver.to_owned());
    }
    if let Some(mode) = text(planned, "gpu_management_mode") {
        p.gpu_profile
            .get_or_insert_with(GpuProfile::default)
            .nvidia
            .get_or_insert_with(Default::default)
            .management_mode = Some(mode.to_owned());
    }
    if let Some(size) = integer(planned, "os_disk_size_gb") {
        p.os_disk_size_gb = Some(size);
    }
    p.availability_zones = strings(planned, "zones").or(p.availability_zones.take());
    if let Some(version) = text(planned, "orchestrator_version") {
        p.orchestrator_version = Some(version.to_owned());
    }
    let creation = p.tags.as_ref().and_then(|t| t.get(CREATION_TAG).cloned());
    let mut tags = string_map(planned, "tags").unwrap_or_default();
    if let Some(token) = creation {
        tags.insert(CREATION_TAG.to_owned(), token);
    }
    p.tags = (!tags.is_empty() || live.is_some()).then_some(tags);
    pool
}

/// The machines of a pool as a state describes them; `None` for sizes without GPUs or
/// values only apply can tell.
pub(crate) fn shape(state: &Value) -> Option<PoolShape> {
    let machine = text(state, "vm_size")?;
    let gpus = gpustack_provider_sdk::catalog::gpus(machine);
    if gpus.is_none() && !gpustack_provider_sdk::catalog::looks_like_gpu_machine(machine) {
        return None;
    }
    let count = integer(state, "node_count");
    let (min, max) = if flag(state, "auto_scaling") {
        (integer(state, "min_count")?, integer(state, "max_count")?)
    } else {
        (count?, count?)
    };
    Some(PoolShape {
        min_nodes: u32::try_from(min).ok()?,
        max_nodes: u32::try_from(max).ok()?,
        machine: machine.to_owned(),
        gpus: gpus.map(|gpus| GpuShape {
            count: gpus.count,
            model: gpus.model,
            memory_gb: gpus.memory_gb,
            source: gpustack_provider_sdk::catalog::BUILT_IN.to_owned(),
        }),
        // AKS's MIG profiles are named by slices (MIG1g): the model maps them to the GPU's
        // smallest profile of that many slices.
        sharing: text(state, "gpu_instance_profile").map(|profile| CloudSharing {
            mig_profile: Some(profile.trim_start_matches("MIG").to_owned()),
            clients: None,
        }),
    })
}

#[async_trait::async_trait]
impl CloudPool for Connected {
    const KIND: &'static str = "AKS node pool";
    const ID_FORMAT: &'static str = "RESOURCE_GROUP/CLUSTER/POOL";
    const SCOPE_ATTRIBUTE: Option<&'static str> = Some("resource_group");
    const CLUSTER_ATTRIBUTE: &'static str = "cluster";
    const NAME_ATTRIBUTE: &'static str = "name";
    const POOL_KIND: &'static str = "nodepool";
    const POOL_LABEL: &'static str = POOL_LABEL;
    const NODE_LABELS_ATTRIBUTE: &'static str = "node_labels";
    const DELETES_NODES: &'static str =
        "AKS deletes the nodes with their pods, with no cordon or drain";

    fn managed_gpu_software(state: &Value) -> Option<gpustack_protocol::ManagedSoftware> {
        (text(state, "gpu_management_mode") == Some("Managed")).then(|| {
            gpustack_protocol::ManagedSoftware {
                what: "AKS managed GPU mode".into(),
                attribute: gpustack_protocol::path(["gpu_management_mode"]),
                device_plugin: true,
            }
        })
    }

    /// The GPU count from Resource SKUs, the model and memory from the built-in table (Azure
    /// names no GPU model); the table alone when Resource SKUs cannot answer, saying why.
    async fn shape(&self, state: &Value) -> Option<PoolShape> {
        let mut shape = shape(state)?;
        let built_in = gpustack_provider_sdk::catalog::BUILT_IN;
        match self.sku_gpus(state, &shape.machine).await {
            Ok(0) => return None,
            Ok(count) => {
                if let Some(gpus) = &mut shape.gpus {
                    gpus.count = count;
                    gpus.source = format!(
                        "Azure Resource SKUs ({count} per VM), model and memory from the {built_in}"
                    );
                }
            }
            Err(why) => {
                if let Some(gpus) = &mut shape.gpus {
                    gpus.source = format!("{built_in} ({why})");
                }
            }
        }
        Some(shape)
    }

    fn schema(&self) -> Schema {
        resource_schema(&Azure::default(), "aks_nodepool")
    }

    /// The configuration's view of a state: unset optional attributes as ARM reports them.
    fn normalize(config: &Value) -> Value {
        let mut config = config.clone();
        if let Value::Object(map) = &mut config {
            unset_false(map, &["auto_scaling", "spot"]);
            unset_empty(map, &["node_labels", "node_taints", "zones", "tags"]);
            sort_maps(map, &["node_labels", "tags"]);
            // Without spot the eviction policy means nothing, and ARM does not report it.
            if map.get("spot").is_none_or(Value::is_null) {
                map.insert("spot_eviction_policy".to_owned(), Value::Null);
            }
        }
        config
    }

    fn refine(prior: &Value, _: &Value, response: &mut PlanResourceChangeResponse) {
        if matches!(text(prior, "provisioning_state"), Some("Failed")) {
            // A pool whose creation failed is made again rather than patched.
            response
                .requires_replace
                .push("provisioning_state".to_owned());
        }
        if !response.requires_replace.is_empty() {
            return;
        }
        // An update keeps the pool: its ID, and the node image unless the version moves.
        let version_moves = text(&response.planned_state, "orchestrator_version")
            != text(prior, "orchestrator_version");
        for kept in ["id", "provisioning_state", "node_image_version"] {
            if kept == "node_image_version" && version_moves {
                continue;
            }
            if let Some(value) = attribute(prior, kept) {
                gpustack_provider_sdk::check::set(&mut response.planned_state, kept, value.clone());
            }
        }
    }

    async fn get(&self, key: &PoolKey) -> Result<Option<LivePool>, Diagnostic> {
        let id = PoolId::from(key);
        let live = self
            .arm
            .get(&id)
            .await
            .map_err(|e| failed("read", &id, &e))?;
        Ok(live.map(|pool| LivePool {
            state: state_of(&id, &pool),
            mark: pool
                .properties
                .tags
                .as_ref()
                .and_then(|t| t.get(CREATION_TAG))
                .cloned(),
        }))
    }

    async fn create(
        &self,
        planned: &Value,
        owner: &str,
    ) -> Result<Value, (Option<Value>, Diagnostic)> {
        let id = pool_id(planned);
        let mut pool = request_of(planned, None);
        // This stack's mark: a retried create, and a later run after a crash that lost the
        // state write, know the pool as this stack's.
        let token = if owner.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            owner.to_owned()
        };
        pool.properties
            .tags
            .get_or_insert_with(BTreeMap::new)
            .insert(CREATION_TAG.to_owned(), token.clone());
        // If-None-Match: never take over a pool of the same name that someone else made. A
        // create whose answer was lost is retried by the pipeline and then finds the pool: the
        // token says whether it is ours.
        let result = match self
            .arm
            .put(&id, &pool, ("if-none-match", "*".to_owned()))
            .await
        {
            Err(e) if e.status == Some(412) => match self.arm.get(&id).await {
                Ok(Some(live))
                    if live
                        .properties
                        .tags
                        .as_ref()
                        .and_then(|t| t.get(CREATION_TAG))
                        == Some(&token) =>
                {
                    self.arm.wait(&id).await
                }
                _ => Err(ArmError {
                    status: Some(412),
                    code: "AlreadyExists".into(),
                    message: format!(
                        "cluster {} already has an agent pool named {}; import it (gpustack import ADDRESS {}) to manage it",
                        id.cluster, id.name, id
                    ),
                }),
            },
            other => other,
        };
        let live = self.arm.get(&id).await.ok().flatten();
        let state = live.as_ref().map(|p| state_of(&id, p));
        match result {
            Ok(()) => Ok(state.unwrap_or(Value::Null)),
            Err(e) => Err((state, failed("create", &id, &e))),
        }
    }

    async fn update(&self, prior: &Value, planned: &Value) -> Result<Value, Diagnostic> {
        let id = pool_id(prior);
        // Read-modify-write under the pool's ETag: a change made in between is not lost, the
        // write is redone on the new version.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let live = self
                .arm
                .get(&id)
                .await
                .map_err(|e| failed("read", &id, &e))?
                .ok_or_else(|| {
                    Diagnostic::error(
                        format!("AKS node pool {id} is gone"),
                        "It was deleted outside gpustack; plan again to create it.",
                    )
                })?;
            let condition = match &live.properties.e_tag {
                Some(tag) => ("if-match", tag.clone()),
                None => ("if-match", "*".to_owned()),
            };
            match self
                .arm
                .put(&id, &request_of(planned, Some(&live)), condition)
                .await
            {
                Ok(()) => break,
                Err(e) if e.status == Some(412) && attempts < 5 => continue,
                Err(e) => return Err(failed("update", &id, &e)),
            }
        }
        let live = self
            .arm
            .get(&id)
            .await
            .map_err(|e| failed("read", &id, &e))?;
        Ok(live.map_or(Value::Null, |p| state_of(&id, &p)))
    }

    async fn delete(&self, prior: &Value) -> Result<(), Diagnostic> {
        let id = pool_id(prior);
        self.arm
            .delete(&id)
            .await
            .map_err(|e| failed("delete", &id, &e))
    }
}
