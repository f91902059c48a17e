//! An EKS managed node group as a [`CloudPool`]: its state as the API describes it, what the
//! configuration compares, and create, update and delete.

use crate::eks::{error, is_not_found};
use crate::{Aws, Connected};
use aws_sdk_eks::types::{
    AmiTypes, CapacityTypes, Nodegroup, NodegroupScalingConfig, Taint, TaintEffect,
    UpdateLabelsPayload, UpdateTaintsPayload,
};
use gpustack_protocol::{
    Diagnostic, GpuShape, PlanResourceChangeResponse, PoolShape, Schema, Value,
};
use gpustack_provider_sdk::check::{attribute, string_map, strings, text};
use gpustack_provider_sdk::family::resource_schema;
use gpustack_provider_sdk::normalize::{sort_maps, unset_empty};
use gpustack_provider_sdk::pool::{CloudPool, LivePool, PoolKey};
use indexmap::IndexMap;
use std::collections::{BTreeMap, HashMap};

/// The tag a node group is created with: the request's idempotency token.
const CREATION_TAG: &str = "gpustack.dev/creation-token";

/// A known number a state or configuration sets (not unknown, not null), as EKS takes it.
fn number(state: &Value, name: &str) -> Option<i32> {
    attribute(state, name)
        .and_then(Value::as_number)
        .map(|n| n as i32)
}

/// (key, value, effect) of each taint.
fn taints(state: &Value) -> Vec<(String, Option<String>, String)> {
    attribute(state, "taints")
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            Some((
                text(t, "key")?.to_owned(),
                text(t, "value").map(str::to_owned),
                text(t, "effect")?.to_owned(),
            ))
        })
        .collect()
}

fn sdk_taint((key, value, effect): &(String, Option<String>, String)) -> Taint {
    Taint::builder()
        .key(key)
        .set_value(value.clone())
        .effect(TaintEffect::from(effect.as_str()))
        .build()
}

/// The state of a node group as the API describes it.
fn state_of(group: &Nodegroup) -> Value {
    let mut subnets: Vec<String> = group.subnets().to_vec();
    subnets.sort();
    let scaling = group.scaling_config();
    let list = |items: Vec<String>| Value::List(items.into_iter().map(Value::String).collect());
    let optional = |s: Option<&str>| s.map_or(Value::Null, Value::string);
    let labels: IndexMap<String, Value> = group
        .labels()
        .map(|m| {
            let sorted: BTreeMap<&String, &String> = m.iter().collect();
            sorted
                .into_iter()
                .map(|(k, v)| (k.clone(), Value::string(v.clone())))
                .collect()
        })
        .unwrap_or_default();
    let mut sorted_taints: Vec<&Taint> = group.taints().iter().collect();
    sorted_taints.sort_by_key(|t| {
        (
            t.key().map(str::to_owned),
            t.effect().map(|e| e.as_str().to_owned()),
            t.value().map(str::to_owned),
        )
    });
    let taints: Vec<Value> = sorted_taints
        .into_iter()
        .map(|t| {
            Value::Object(IndexMap::from([
                ("key".to_owned(), optional(t.key())),
                ("value".to_owned(), optional(t.value())),
                (
                    "effect".to_owned(),
                    optional(t.effect().map(TaintEffect::as_str)),
                ),
            ]))
        })
        .collect();
    let size = |n: Option<i32>| n.map_or(Value::Null, |n| Value::number(f64::from(n)));
    Value::Object(IndexMap::from([
        ("cluster_name".to_owned(), optional(group.cluster_name())),
        (
            "nodegroup_name".to_owned(),
            optional(group.nodegroup_name()),
        ),
        ("node_role".to_owned(), optional(group.node_role())),
        ("subnets".to_owned(), list(subnets)),
        (
            "instance_types".to_owned(),
            list(group.instance_types().to_vec()),
        ),
        (
            "ami_type".to_owned(),
            optional(group.ami_type().map(AmiTypes::as_str)),
        ),
        (
            "capacity_type".to_owned(),
            optional(group.capacity_type().map(CapacityTypes::as_str)),
        ),
        ("disk_size".to_owned(), size(group.disk_size())),
        (
            "min_size".to_owned(),
            size(scaling.and_then(|s| s.min_size())),
        ),
        (
            "max_size".to_owned(),
            size(scaling.and_then(|s| s.max_size())),
        ),
        (
            "desired_size".to_owned(),
            size(scaling.and_then(|s| s.desired_size())),
        ),
        (
            "labels".to_owned(),
            if labels.is_empty() {
                Value::Null
            } else {
                Value::Object(labels)
            },
        ),
        (
            "taints".to_owned(),
            if taints.is_empty() {
                Value::Null
            } else {
                Value::List(taints)
            },
        ),
        ("kubernetes_version".to_owned(), optional(group.version())),
        (
            "release_version".to_owned(),
            optional(group.release_version()),
        ),
        ("tags".to_owned(), tags_state(group)),
        ("arn".to_owned(), optional(group.nodegroup_arn())),
        (
            "status".to_owned(),
            optional(group.status().map(|s| s.as_str())),
        ),
    ]))
}

/// A node group's tags without gpustack's creation mark, in key order; null when none.
fn tags_state(group: &Nodegroup) -> Value {
    let tags: BTreeMap<&String, &String> = group
        .tags()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != CREATION_TAG)
        .collect();
    if tags.is_empty() {
        return Value::Null;
    }
    Value::Object(
        tags.into_iter()
            .map(|(k, v)| (k.clone(), Value::string(v.clone())))
            .collect(),
    )
}

#[async_trait::async_trait]
impl CloudPool for Connected {
    const KIND: &'static str = "EKS node group";
    const ID_FORMAT: &'static str = "CLUSTER/NODEGROUP";
    const SCOPE_ATTRIBUTE: Option<&'static str> = None;
    const CLUSTER_ATTRIBUTE: &'static str = "cluster_name";
    const NAME_ATTRIBUTE: &'static str = "nodegroup_name";
    const POOL_KIND: &'static str = "nodegroup";
    const POOL_LABEL: &'static str = "eks.amazonaws.com/nodegroup";
    const NODE_LABELS_ATTRIBUTE: &'static str = "labels";
    const DELETES_NODES: &'static str = "EKS drains each node as it scales the group to zero, and terminates the node after a few minutes whether its pods left or not";

    /// With GPUs from EC2.
    async fn shape(&self, state: &Value) -> Option<PoolShape> {
        let machine = strings(state, "instance_types").into_iter().next()?;
        let found = self.gpus_of(&machine).await;
        shape_of(state, machine, found)
    }

    fn schema(&self) -> Schema {
        resource_schema(&Aws::default(), "eks_nodegroup")
    }

    /// The configuration's view of a state: unset optional attributes as the API reports them.
    fn normalize(config: &Value) -> Value {
        let mut config = config.clone();
        if let Value::Object(map) = &mut config {
            if let Some(Value::List(subnets)) = map.get_mut("subnets") {
                subnets.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            }
            unset_empty(map, &["labels", "taints", "tags"]);
            sort_maps(map, &["labels", "tags"]);
            // EKS keeps taints in its own order and has no empty values: compare them sorted,
            // with "" as absent.
            if let Some(Value::List(taints)) = map.get_mut("taints") {
                for taint in taints.iter_mut() {
                    if let Value::Object(t) = taint
                        && t.get("value").is_none_or(|v| v.as_str() == Some(""))
                    {
                        t.insert("value".to_owned(), Value::Null);
                    }
                }
                let key = |t: &Value| {
                    ["key", "effect", "value"].map(|k| text(t, k).unwrap_or_default().to_owned())
                };
                taints.sort_by_key(key);
            }
        }
        config
    }

    fn refine(prior: &Value, config: &Value, response: &mut PlanResourceChangeResponse) {
        // A node group whose creation failed cannot be repaired in place.
        if text(prior, "status") == Some("CREATE_FAILED") {
            response.requires_replace.push("status".to_owned());
        }
        // A new Kubernetes version comes with a new AMI release, unless one is configured.
        if text(&response.planned_state, "kubernetes_version") != text(prior, "kubernetes_version")
            && attribute(config, "release_version").is_none()
        {
            gpustack_provider_sdk::check::set(
                &mut response.planned_state,
                "release_version",
                Value::Unknown,
            );
        }
    }

    async fn get(&self, key: &PoolKey) -> Result<Option<LivePool>, Diagnostic> {
        let group = self.describe_group(key.cluster(), key.name()).await?;
        Ok(group.map(|group| LivePool {
            state: state_of(&group),
            mark: group.tags().and_then(|t| t.get(CREATION_TAG)).cloned(),
        }))
    }

    /// On failure, the node group as it stands if it was created (so the state keeps it).
    async fn create(
        &self,
        planned: &Value,
        owner: &str,
    ) -> Result<Value, (Option<Value>, Diagnostic)> {
        let cluster = text(planned, "cluster_name").unwrap_or_default();
        let name = text(planned, "nodegroup_name").unwrap_or_default();
        let min = number(planned, "min_size");
        let mut request = self
            .eks
            .create_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .node_role(text(planned, "node_role").unwrap_or_default())
            .set_subnets(Some(strings(planned, "subnets")))
            .set_instance_types(Some(strings(planned, "instance_types")))
            .scaling_config(
                NodegroupScalingConfig::builder()
                    .set_min_size(min)
                    .set_max_size(number(planned, "max_size"))
                    .set_desired_size(number(planned, "desired_size").or(min))
                    .build(),
            )
            .set_labels(
                Some(string_map(planned, "labels").into_iter().collect())
                    .filter(|l: &HashMap<_, _>| !l.is_empty()),
            )
            .set_taints(
                Some(taints(planned).iter().map(sdk_taint).collect())
                    .filter(|t: &Vec<_>| !t.is_empty()),
            );
        for (key, value) in string_map(planned, "tags") {
            request = request.tags(key, value);
        }
        if let Some(ami) = text(planned, "ami_type") {
            request = request.ami_type(AmiTypes::from(ami));
        }
        if let Some(capacity) = text(planned, "capacity_type") {
            request = request.capacity_type(CapacityTypes::from(capacity));
        }
        if let Some(disk) = number(planned, "disk_size") {
            request = request.disk_size(disk);
        }
        if let Some(version) = text(planned, "kubernetes_version") {
            request = request.version(version);
        }
        if let Some(release) = text(planned, "release_version") {
            request = request.release_version(release);
        }
        // The SDK retries a create whose answer was lost; EKS answers the retry with
        // ResourceInUseException. The tag, this stack's mark, tells our own node group from
        // someone else's, then and in a later run after a crash that lost the state write.
        let token = uuid::Uuid::new_v4().to_string();
        let mark = if owner.is_empty() {
            token.clone()
        } else {
            owner.to_owned()
        };
        request = request
            .client_request_token(&token)
            .tags(CREATION_TAG, &mark);
        if let Err(e) = request.send().await {
            let in_use = e
                .as_service_error()
                .and_then(|s| aws_sdk_eks::error::ProvideErrorMetadata::code(s))
                == Some("ResourceInUseException");
            let ours = in_use
                && self
                    .describe_group(cluster, name)
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|g| g.tags().and_then(|t| t.get(CREATION_TAG)) == Some(&mark));
            if !ours {
                return Err((
                    None,
                    error(
                        &format!("Cannot create EKS node group {cluster}/{name}"),
                        gpustack_protocol::error_chain(&e),
                    ),
                ));
            }
        }
        // From here the node group exists: whatever happens, the state must know it.
        match self.wait_for(cluster, name, false).await {
            Ok(group) => Ok(group.as_ref().map(state_of).unwrap_or(Value::Null)),
            Err(d) => {
                let existing = self.describe_group(cluster, name).await.ok().flatten();
                Err((existing.as_ref().map(state_of), d))
            }
        }
    }

    async fn update(&self, prior: &Value, planned: &Value) -> Result<Value, Diagnostic> {
        let cluster = text(prior, "cluster_name").unwrap_or_default();
        let name = text(prior, "nodegroup_name").unwrap_or_default();
        let failed =
            |e: String| error(&format!("Cannot update EKS node group {cluster}/{name}"), e);
        let (before_labels, after_labels) =
            (string_map(prior, "labels"), string_map(planned, "labels"));
        let add_labels: HashMap<String, String> = after_labels
            .iter()
            .filter(|(k, v)| before_labels.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let remove_labels: Vec<String> = before_labels
            .keys()
            .filter(|k| !after_labels.contains_key(*k))
            .cloned()
            .collect();
        let (before_taints, after_taints) = (taints(prior), taints(planned));
        let add_taints: Vec<Taint> = after_taints
            .iter()
            .filter(|t| !before_taints.contains(t))
            .map(sdk_taint)
            .collect();
        let remove_taints: Vec<Taint> = before_taints
            .iter()
            .filter(|(k, _, e)| !after_taints.iter().any(|(k2, _, e2)| k2 == k && e2 == e))
            .map(sdk_taint)
            .collect();
        let scaling_changed = ["min_size", "max_size", "desired_size"]
            .iter()
            .any(|k| number(planned, k).is_some_and(|n| Some(n) != number(prior, k)));
        let min = number(planned, "min_size").or(number(prior, "min_size"));
        let max = number(planned, "max_size").or(number(prior, "max_size"));
        // The desired size moves only when the configuration moves it, or when the new range
        // leaves it outside (EKS rejects that): otherwise the autoscaler's choice stands.
        let desired = number(planned, "desired_size")
            .filter(|d| Some(*d) != number(prior, "desired_size"))
            .or_else(|| {
                let current = number(prior, "desired_size")?;
                let low = min.unwrap_or(current);
                let clamped = current.clamp(low, max.unwrap_or(current).max(low));
                (clamped != current).then_some(clamped)
            });
        let mut request = self
            .eks
            .update_nodegroup_config()
            .cluster_name(cluster)
            .nodegroup_name(name);
        let mut any = false;
        if !add_labels.is_empty() || !remove_labels.is_empty() {
            any = true;
            request = request.labels(
                UpdateLabelsPayload::builder()
                    .set_add_or_update_labels(Some(add_labels).filter(|l| !l.is_empty()))
                    .set_remove_labels(Some(remove_labels).filter(|l| !l.is_empty()))
                    .build(),
            );
        }
        if !add_taints.is_empty() || !remove_taints.is_empty() {
            any = true;
            request = request.taints(
                UpdateTaintsPayload::builder()
                    .set_add_or_update_taints(Some(add_taints).filter(|t| !t.is_empty()))
                    .set_remove_taints(Some(remove_taints).filter(|t| !t.is_empty()))
                    .build(),
            );
        }
        if scaling_changed {
            any = true;
            request = request.scaling_config(
                NodegroupScalingConfig::builder()
                    .set_min_size(min)
                    .set_max_size(max)
                    .set_desired_size(desired)
                    .build(),
            );
        }
        if any {
            let out = request
                .send()
                .await
                .map_err(|e| failed(gpustack_protocol::error_chain(&e)))?;
            self.wait_update(cluster, name, out.update()).await?;
        }
        self.retag(prior, planned).await.map_err(failed)?;
        let version_changed = ["kubernetes_version", "release_version"]
            .iter()
            .any(|k| text(planned, k).is_some_and(|v| Some(v) != text(prior, k)));
        if version_changed {
            let out = self
                .eks
                .update_nodegroup_version()
                .cluster_name(cluster)
                .nodegroup_name(name)
                .set_version(text(planned, "kubernetes_version").map(str::to_owned))
                // The prior release belongs to the prior version: send one only when the
                // plan names a new one.
                .set_release_version(
                    text(planned, "release_version")
                        .filter(|r| Some(*r) != text(prior, "release_version"))
                        .map(str::to_owned),
                )
                .send()
                .await
                .map_err(|e| failed(gpustack_protocol::error_chain(&e)))?;
            self.wait_update(cluster, name, out.update()).await?;
        }
        let group = self.describe_group(cluster, name).await?;
        Ok(group.as_ref().map(state_of).unwrap_or(Value::Null))
    }

    async fn delete(&self, prior: &Value) -> Result<(), Diagnostic> {
        let cluster = text(prior, "cluster_name").unwrap_or_default();
        let name = text(prior, "nodegroup_name").unwrap_or_default();
        match self
            .eks
            .delete_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => {
                // A retried delete whose first attempt went through finds it deleting.
                let deleting = self
                    .describe_group(cluster, name)
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|g| g.status().is_some_and(|s| s.as_str() == "DELETING"));
                if !deleting {
                    return Err(error(
                        &format!("Cannot delete EKS node group {cluster}/{name}"),
                        gpustack_protocol::error_chain(&e),
                    ));
                }
            }
        }
        self.wait_for(cluster, name, true).await.map(|_| ())
    }
}

/// The machines of a node group of `machine`s with `found` GPUs each (and where that came
/// from); `None` for a size without GPUs, or a size only apply can tell.
fn shape_of(
    state: &Value,
    machine: String,
    found: Option<(gpustack_provider_sdk::catalog::Gpus, String)>,
) -> Option<PoolShape> {
    // A GPU size neither EC2 nor the table can name still makes a pool line's warning.
    if found.is_none() && !gpustack_provider_sdk::catalog::looks_like_gpu_machine(&machine) {
        return None;
    }
    // The desired size is the node count; where only apply can tell it, the range.
    let (min, max) = match number(state, "desired_size") {
        Some(n) => (n, n),
        None => (number(state, "min_size")?, number(state, "max_size")?),
    };
    Some(PoolShape {
        min_nodes: u32::try_from(min).ok()?,
        max_nodes: u32::try_from(max).ok()?,
        machine,
        gpus: found.map(|(gpus, source)| GpuShape {
            count: gpus.count,
            model: gpus.model,
            memory_gb: gpus.memory_gb,
            source,
        }),
        sharing: None,
    })
}

/// The machines of a node group from the built-in table alone (`gpustack review`, which
/// reads no cloud API), saying so.
pub(crate) fn table_shape(state: &Value) -> Option<PoolShape> {
    let machine = strings(state, "instance_types").into_iter().next()?;
    let found = gpustack_provider_sdk::catalog::gpus(&machine).map(|g| {
        (
            g,
            format!(
                "{} (a review reads no cloud API)",
                gpustack_provider_sdk::catalog::BUILT_IN
            ),
        )
    });
    shape_of(state, machine, found)
}

impl Connected {
    /// Sets the node group's tags to the planned ones (TagResource, UntagResource); the
    /// creation mark is never touched.
    async fn retag(&self, prior: &Value, planned: &Value) -> Result<(), String> {
        let (before, after) = (string_map(prior, "tags"), string_map(planned, "tags"));
        if before == after {
            return Ok(());
        }
        let Some(arn) = text(prior, "arn") else {
            return Err(
                "the node group's ARN is not recorded, so its tags cannot be changed".into(),
            );
        };
        let removed: Vec<String> = before
            .keys()
            .filter(|k| !after.contains_key(*k) && k.as_str() != CREATION_TAG)
            .cloned()
            .collect();
        if !removed.is_empty() {
            self.eks
                .untag_resource()
                .resource_arn(arn)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| gpustack_protocol::error_chain(&e))?;
        }
        let added: HashMap<String, String> = after
            .into_iter()
            .filter(|(k, v)| before.get(k) != Some(v))
            .collect();
        if !added.is_empty() {
            self.eks
                .tag_resource()
                .resource_arn(arn)
                .set_tags(Some(added))
                .send()
                .await
                .map_err(|e| gpustack_protocol::error_chain(&e))?;
        }
        Ok(())
    }
}
