//! The live cluster as the GPU components see it, for the providers whose objects configure
//! GPUs (the kubernetes provider's manifests and patches, a helm release of the GPU
//! Operator): nodes that have or may have GPUs, the ClusterPolicy and the ConfigMaps it points
//! at, NVIDIA's DRA devices. It reports texts and fields as they are; what they mean for GPUs
//! is the GPU model's to decide.

use crate::Cluster;
use gpustack_protocol::nvidia::{
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND, DEVICE_PLUGIN_CONFIG_LABEL, DRA_DRIVER,
    GPU_CLUSTER_API_VERSION, GPU_CLUSTER_KIND, GPU_COUNT_LABEL,
};
use gpustack_protocol::{ClusterFact, DraAttribute, DraDevice, NodeFact};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceSlice};
use kube::api::{Api, ListParams};
use serde_json::Value as Json;
use std::collections::BTreeMap;

const DEFAULT_MIG_CONFIG: &str = "default-mig-parted-config";
const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

pub fn string_map(value: Option<&Json>) -> Option<BTreeMap<String, String>> {
    Some(
        value?
            .as_object()?
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
    )
}

/// Whether a ConfigMap's data holds something the device plugin or MIG manager reads.
pub fn is_gpu_config(data: &BTreeMap<String, String>) -> bool {
    data.values().any(|text| {
        let Ok(doc) = crate::yaml::from_str(text) else {
            return false;
        };
        doc.get("version").and_then(Json::as_str) == Some("v1")
            && (doc.get("sharing").is_some()
                || doc.get("flags").is_some()
                || doc.get("mig-configs").is_some())
    })
}

/// The Helm release (`namespace/name`) an object's `meta.helm.sh` annotations name, if any.
fn helm_release(annotation: impl Fn(&str) -> Option<String>) -> Option<String> {
    let name = annotation("meta.helm.sh/release-name")?;
    let namespace = annotation("meta.helm.sh/release-namespace").unwrap_or_default();
    Some(format!("{namespace}/{name}"))
}

/// An object's annotation, by key.
fn meta_annotation(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> impl Fn(&str) -> Option<String> + '_ {
    |key| meta.annotations.as_ref()?.get(key).cloned()
}

fn nvidia_quantities(node: &Node) -> BTreeMap<String, f64> {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("nvidia.com/"))
        .filter_map(|(k, q)| Some((k.clone(), q.0.parse::<f64>().ok()?)))
        .collect()
}

/// The live cluster as the GPU components see it: nodes that have or may have GPUs, the
/// ClusterPolicy and the ConfigMaps it points at, NVIDIA's DRA devices. Parts the cluster
/// does not serve (no ClusterPolicy CRD, no DRA API) are simply absent.
// Long by design: the reads run in the order each needs the one before (the policy names the
// operator's namespace, which names the ConfigMaps), each with its own "unread" note.
pub async fn cluster_fact(cluster: &Cluster) -> Result<ClusterFact, kube::Error> {
    let mut unread = Vec::new();
    let policy = match live_policy(cluster).await {
        Ok(policy) => policy,
        Err(e) => {
            unread.push(format!("the ClusterPolicy ({})", crate::api_error(&e)));
            None
        }
    };
    let spec = policy.as_ref().and_then(|p| p.get("spec").cloned());
    let annotation = |name: &str| {
        policy
            .as_ref()
            .and_then(|p| p.pointer("/metadata/annotations"))
            .and_then(|a| a.get(name))
            .and_then(Json::as_str)
            .map(str::to_owned)
    };
    let policy_release = helm_release(annotation);
    let operator_namespace = policy
        .as_ref()
        .and_then(|p| p.pointer("/status/namespace"))
        .and_then(Json::as_str)
        .map(str::to_owned);
    let mut dra: BTreeMap<String, Vec<DraDevice>> = BTreeMap::new();
    let mut dra_counters: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> =
        BTreeMap::new();
    let slices: Api<ResourceSlice> = Api::all(cluster.client.clone());
    let slices = match slices.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // A cluster without DRA serves no ResourceSlices: nothing to read, nothing missed.
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(e) => {
            unread.push(format!("DRA ResourceSlices ({})", crate::api_error(&e)));
            Vec::new()
        }
    };
    {
        for slice in slices {
            if slice.spec.driver != DRA_DRIVER {
                continue;
            }
            let Some(node) = slice.spec.node_name.clone() else {
                continue;
            };
            for set in slice.spec.shared_counters.into_iter().flatten() {
                dra_counters.entry(node.clone()).or_default().insert(
                    set.name,
                    set.counters
                        .into_iter()
                        .map(|(name, c)| (name, c.value.0))
                        .collect(),
                );
            }
            for device in slice.spec.devices.into_iter().flatten() {
                let attributes: BTreeMap<String, DraAttribute> = device
                    .attributes
                    .iter()
                    .flatten()
                    .filter_map(|(name, a)| {
                        let value = if let Some(s) = &a.string {
                            DraAttribute::String(s.clone())
                        } else if let Some(v) = &a.version {
                            DraAttribute::Version(v.clone())
                        } else if let Some(i) = a.int {
                            DraAttribute::Int(i)
                        } else {
                            DraAttribute::Bool(a.bool?)
                        };
                        Some((name.clone(), value))
                    })
                    .collect();
                let capacity: BTreeMap<String, String> = device
                    .capacity
                    .iter()
                    .flatten()
                    .map(|(name, c)| (name.clone(), c.value.0.clone()))
                    .collect();
                let string = |name: &str| match attributes.get(name) {
                    Some(DraAttribute::String(s)) => Some(s.clone()),
                    _ => None,
                };
                dra.entry(node.clone()).or_default().push(DraDevice {
                    kind: string("type").unwrap_or_else(|| "gpu".into()),
                    product: string("productName").unwrap_or_default(),
                    memory_mib: capacity
                        .get("memory")
                        .and_then(|c| parse_bytes(c))
                        .map(|bytes| bytes / (1024 * 1024)),
                    name: device.name.clone(),
                    attributes,
                    capacity,
                    consumes: device
                        .consumes_counters
                        .into_iter()
                        .flatten()
                        .map(|c| {
                            let counters = c
                                .counters
                                .into_iter()
                                .map(|(name, q)| (name, q.value.0))
                                .collect();
                            (c.counter_set, counters)
                        })
                        .collect(),
                });
            }
        }
    }
    let gpu_cluster = match live_gpu_cluster(cluster).await {
        Ok(name) => name,
        Err(e) => {
            unread.push(format!("the GPUCluster ({})", crate::api_error(&e)));
            None
        }
    };
    let classes: Api<DeviceClass> = Api::all(cluster.client.clone());
    let mut dra_driver_release = None;
    let device_classes = match classes.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|class| {
                if class.metadata.name.as_deref() == Some(DRA_DRIVER) {
                    dra_driver_release =
                        Some(helm_release(meta_annotation(&class.metadata)).unwrap_or_default());
                }
                Some((class.metadata.name?, serde_json::to_value(class.spec).ok()?))
            })
            .collect(),
        Err(kube::Error::Api(status)) if status.code == 404 => BTreeMap::new(),
        Err(e) => {
            unread.push(format!("DRA DeviceClasses ({})", crate::api_error(&e)));
            BTreeMap::new()
        }
    };
    let daemon_sets: Api<k8s_openapi::api::apps::v1::DaemonSet> = Api::all(cluster.client.clone());
    let device_plugin_releases = match daemon_sets
        .list(&ListParams::default().labels("app.kubernetes.io/name=nvidia-device-plugin"))
        .await
    {
        Ok(list) => list
            .items
            .iter()
            .map(|ds| {
                helm_release(meta_annotation(&ds.metadata)).unwrap_or_else(|| {
                    format!(
                        "{}/{}",
                        ds.metadata.namespace.clone().unwrap_or_default(),
                        ds.metadata.name.clone().unwrap_or_default()
                    )
                })
            })
            .collect(),
        Err(e) => {
            unread.push(format!(
                "the device plugin DaemonSets ({})",
                crate::api_error(&e)
            ));
            Vec::new()
        }
    };
    let mut gpu_pods: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let pods: Api<Pod> = Api::all(cluster.client.clone());
    match pods
        .list(&ListParams::default().fields("status.phase=Running"))
        .await
    {
        Ok(list) => {
            for pod in list.items.iter().filter(|p| holds_gpus(p)) {
                if let (Some(node), Some(namespace), Some(name)) = (
                    pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                    pod.metadata.namespace.as_deref(),
                    pod.metadata.name.as_deref(),
                ) {
                    gpu_pods
                        .entry(node)
                        .or_default()
                        .push(format!("{namespace}/{name}"));
                }
            }
        }
        Err(e) => unread.push(format!("the running pods ({})", crate::api_error(&e))),
    }
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let nodes = nodes
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|node| {
            let name = node.metadata.name.clone()?;
            let labels: BTreeMap<String, String> = node.metadata.labels.clone().unwrap_or_default();
            let allocatable = nvidia_quantities(&node);
            let dra_devices = dra.remove(&name).unwrap_or_default();
            let dra_counters = dra_counters.remove(&name).unwrap_or_default();
            let gpu_node = labels.contains_key(GPU_COUNT_LABEL)
                || labels.contains_key(DEVICE_PLUGIN_CONFIG_LABEL)
                || labels.keys().any(|k| k.starts_with("nvidia.com/"))
                || !allocatable.is_empty()
                || !dra_devices.is_empty()
                || labels
                    .get(INSTANCE_TYPE_LABEL)
                    .is_some_and(|t| gpustack_catalog::gpus(t).is_some());
            let mut gpu_pods = gpu_pods.remove(&name).unwrap_or_default();
            gpu_pods.sort();
            let not_ready = !node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            gpu_node.then_some(NodeFact {
                name,
                labels,
                allocatable,
                dra_devices,
                dra_counters,
                gpu_pods,
                not_ready,
            })
        })
        .collect();
    // One LIST of the operator's namespace: the configs the live policy names, and those a
    // planned policy may name next (device-plugin and mig-parted configs, by their content).
    let namespace = operator_namespace.as_deref().unwrap_or("gpu-operator");
    let named: Vec<&str> = ["/devicePlugin/config/name", "/migManager/config/name"]
        .iter()
        .filter_map(|p| spec.as_ref()?.pointer(p)?.as_str())
        .chain([DEFAULT_MIG_CONFIG])
        .collect();
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
    let config_maps = match maps.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|map| {
                let name = map.metadata.name?;
                let data = map.data.unwrap_or_default();
                (named.contains(&name.as_str()) || is_gpu_config(&data)).then_some((name, data))
            })
            .collect(),
        Err(e) => {
            unread.push(format!(
                "the ConfigMaps of namespace {namespace} ({})",
                crate::api_error(&e)
            ));
            BTreeMap::new()
        }
    };
    Ok(ClusterFact {
        nodes,
        policy_release,
        policy: spec,
        operator_namespace,
        config_maps,
        gpu_cluster,
        device_classes,
        dra_driver_release,
        device_plugin_releases,
        unread,
    })
}

/// Whether a pod holds GPUs: a container asks for an `nvidia.com/*` resource, or the pod
/// has DRA claims.
pub fn holds_gpus(pod: &Pod) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    let asks = |c: &k8s_openapi::api::core::v1::Container| {
        c.resources.as_ref().is_some_and(|r| {
            r.limits
                .iter()
                .chain(r.requests.iter())
                .flatten()
                .any(|(k, q)| k.starts_with("nvidia.com/") && q.0 != "0")
        })
    };
    spec.containers.iter().any(asks)
        || spec.init_containers.iter().flatten().any(asks)
        || spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty())
}

/// A byte quantity (`80Gi`, `81920Mi`, `85899345920`).
fn parse_bytes(quantity: &str) -> Option<u64> {
    let split = quantity
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(quantity.len());
    let (number, unit) = quantity.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match unit {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0_f64.powi(4),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    Some((number * factor) as u64)
}

/// The live ClusterPolicy `cluster-policy`, if the CRD and the object exist.
/// The live ClusterPolicy; `None` when the cluster has none (or not even its kind). An error
/// is one that leaves this unknown, which a check that an absent policy fails must not take
/// for an absent one.
/// The live GPUCluster's name (GPU Operator's DRA stack), if its CRD is served and one exists.
async fn live_gpu_cluster(cluster: &Cluster) -> Result<Option<String>, kube::Error> {
    let Some(kind) = cluster
        .kind(GPU_CLUSTER_API_VERSION, GPU_CLUSTER_KIND)
        .await?
    else {
        return Ok(None);
    };
    let list = cluster
        .api(&kind, None)
        .list(&ListParams::default())
        .await?;
    Ok(list.items.into_iter().find_map(|o| o.metadata.name))
}

async fn live_policy(cluster: &Cluster) -> Result<Option<Json>, kube::Error> {
    let Some(kind) = cluster
        .kind(CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND)
        .await?
    else {
        return Ok(None);
    };
    let policy = cluster.api(&kind, None).get_opt("cluster-policy").await?;
    Ok(policy.and_then(|p| serde_json::to_value(p).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_byte_quantities() {
        assert_eq!(parse_bytes("80Gi"), Some(80 * 1024 * 1024 * 1024));
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("x"), None);
    }

    #[test]
    fn knows_gpu_configs_from_other_config_maps() {
        let config = |text: &str| BTreeMap::from([("any".to_owned(), text.to_owned())]);
        assert!(is_gpu_config(&config(
            "version: v1\nflags:\n  migStrategy: none\n"
        )));
        assert!(is_gpu_config(&config("version: v1\nmig-configs: {}\n")));
        assert!(!is_gpu_config(&config("a: b")));
    }
}
