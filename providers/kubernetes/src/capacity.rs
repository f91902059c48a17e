//! The GPU capacity a device-plugin sharing ConfigMap gives the nodes that use it
//! (GPU-FACTS: allocatable = physical GPUs × replicas; a node picks its key with the label
//! `nvidia.com/device-plugin.config`, else the ClusterPolicy's default).

use crate::cluster::Cluster;
use gpustack_protocol::{CapacityChange, GpuFact, SharingKey};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use serde_json::Value as Json;
use std::collections::BTreeMap;

use gpustack_protocol::nvidia::{
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND, DEVICE_PLUGIN_CONFIG_LABEL as CONFIG_LABEL,
    GPU_COUNT_LABEL as COUNT_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE, SHARED_GPU_RESOURCE,
};

/// One key of a device-plugin config: how each physical GPU is advertised.
#[derive(Debug, PartialEq)]
pub(crate) struct Sharing {
    strategy: &'static str,
    replicas: f64,
    rename: bool,
}

/// Reads a device-plugin config (`version: v1`); `None` for any other text.
pub(crate) fn parse(text: &str) -> Option<Sharing> {
    let doc: Json = serde_yaml_ng::from_str(text).ok()?;
    if doc.get("version")?.as_str()? != "v1"
        || (doc.get("sharing").is_none() && doc.get("flags").is_none())
    {
        return None;
    }
    for (key, strategy) in [("timeSlicing", "time-slicing"), ("mps", "MPS")] {
        let Some(policy) = doc.pointer(&format!("/sharing/{key}")) else {
            continue;
        };
        let replicas = policy
            .get("resources")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .find(|r| r.get("name").and_then(Json::as_str) == Some(GPU_RESOURCE))
            .and_then(|r| r.get("replicas"))
            .and_then(Json::as_f64)?;
        return Some(Sharing {
            strategy,
            replicas,
            rename: policy.get("renameByDefault").and_then(Json::as_bool) == Some(true),
        });
    }
    Some(Sharing {
        strategy: "no sharing",
        replicas: 1.0,
        rename: false,
    })
}

/// Whether any value of a ConfigMap's data is a device-plugin config.
pub(crate) fn is_sharing_config(data: &Json) -> bool {
    data.as_object().is_some_and(|d| {
        d.values()
            .filter_map(Json::as_str)
            .any(|t| parse(t).is_some())
    })
}

/// The live ClusterPolicy `cluster-policy` (null when there is none).
pub(crate) async fn live_policy(cluster: &Cluster) -> Json {
    let policy = match cluster
        .kind(CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND)
        .await
    {
        Ok(Some(kind)) => cluster
            .api(&kind, None)
            .get_opt("cluster-policy")
            .await
            .ok()
            .flatten(),
        _ => None,
    };
    policy
        .and_then(|p| serde_json::to_value(p).ok())
        .unwrap_or(Json::Null)
}

/// The key a ClusterPolicy makes the default of config `name`, if it points there.
fn policy_default<'a>(policy: &'a Json, name: &str) -> Option<&'a str> {
    (policy
        .pointer("/spec/devicePlugin/config/name")
        .and_then(Json::as_str)
        == Some(name))
    .then(|| {
        policy
            .pointer("/spec/devicePlugin/config/default")
            .and_then(Json::as_str)
    })
    .flatten()
}

fn sharing_keys(data: &Json) -> Option<BTreeMap<String, SharingKey>> {
    Some(
        data.as_object()?
            .iter()
            .filter_map(|(key, text)| {
                let sharing = parse(text.as_str()?)?;
                Some((
                    key.clone(),
                    SharingKey {
                        strategy: sharing.strategy.to_owned(),
                        replicas: sharing.replicas,
                        rename: sharing.rename,
                    },
                ))
            })
            .collect(),
    )
}

/// What a device-plugin config says for nodes that do not exist yet: the sharing of each key,
/// planned (`data`) and before (`before`, `None` for a new config).
pub(crate) fn sharing_fact(
    name: &str,
    data: &Json,
    before: Option<&Json>,
    policy: &Json,
) -> Option<GpuFact> {
    Some(GpuFact::SharingConfig {
        name: name.to_owned(),
        keys: sharing_keys(data)?,
        keys_before: before.and_then(sharing_keys),
        live_default: policy_default(policy, name).map(str::to_owned),
    })
}

/// The config and default key a ClusterPolicy object (planned) gives the device plugin.
pub(crate) fn device_plugin_fact(policy: &Json) -> Option<GpuFact> {
    let config = policy.pointer("/spec/devicePlugin/config")?;
    Some(GpuFact::DevicePluginConfig {
        name: config.get("name")?.as_str()?.to_owned(),
        default_key: config
            .get("default")
            .and_then(Json::as_str)
            .map(str::to_owned),
    })
}

/// What applying `data` to ConfigMap `name` does to each GPU node that uses one of its keys.
pub(crate) async fn of_sharing_config(
    cluster: &Cluster,
    name: &str,
    data: &Json,
    policy: &Json,
) -> Vec<CapacityChange> {
    let Some(keys) = data.as_object() else {
        return Vec::new();
    };
    let default_key = policy_default(policy, name).map(str::to_owned).or_else(|| {
        (keys.len() == 1)
            .then(|| keys.keys().next().cloned())
            .flatten()
    });
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let Ok(list) = nodes.list(&ListParams::default().labels(COUNT_LABEL)).await else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    for node in list.items {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let Some(key) = labels
            .get(CONFIG_LABEL)
            .cloned()
            .or_else(|| default_key.clone())
        else {
            continue;
        };
        let Some(sharing) = keys.get(&key).and_then(Json::as_str).and_then(parse) else {
            continue;
        };
        let physical: f64 = labels
            .get(COUNT_LABEL)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0.0);
        let product = labels
            .get(GPU_PRODUCT_LABEL)
            .map(|p| p.trim_end_matches("-SHARED").to_owned())
            .unwrap_or_else(|| "GPU".to_owned());
        let allocatable = node.status.and_then(|s| s.allocatable).unwrap_or_default();
        let live = |resource: &str| {
            allocatable
                .get(resource)
                .and_then(|q| q.0.parse::<f64>().ok())
        };
        let scope = format!(
            "node {} ({}× {product})",
            node.metadata.name.unwrap_or_default(),
            physical
        );
        let shared = physical * sharing.replicas;
        let detail = if sharing.replicas > 1.0 {
            format!(
                "{} ×{}",
                sharing.strategy,
                gpustack_protocol::format_number(sharing.replicas)
            )
        } else {
            sharing.strategy.to_owned()
        };
        let wanted = if sharing.rename {
            [(GPU_RESOURCE, 0.0), (SHARED_GPU_RESOURCE, shared)]
        } else {
            [(GPU_RESOURCE, shared), (SHARED_GPU_RESOURCE, 0.0)]
        };
        for (resource, after) in wanted {
            let before = live(resource);
            if before.unwrap_or(0.0) != after {
                changes.push(CapacityChange {
                    scope: scope.clone(),
                    resource: resource.to_owned(),
                    before,
                    after: Some(after),
                    detail: detail.clone(),
                    physical: None,
                });
            }
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_time_slicing_mps_and_plain_configs() {
        let ts = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n";
        assert_eq!(
            parse(ts),
            Some(Sharing {
                strategy: "time-slicing",
                replicas: 10.0,
                rename: false
            })
        );
        let mps = "version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";
        assert_eq!(
            parse(mps),
            Some(Sharing {
                strategy: "MPS",
                replicas: 4.0,
                rename: true
            })
        );
        assert_eq!(
            parse("version: v1\nflags:\n  migStrategy: none\n").map(|s| s.replicas),
            Some(1.0)
        );
        assert_eq!(parse("a: b"), None);
        assert_eq!(parse("not: [yaml"), None);
    }
}
