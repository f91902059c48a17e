//! The simulator running against a cluster: it plays the GPU Operator's operands on every
//! node annotated `gpustack.dev/gpu-model` / `gpustack.dev/gpu-count`, reconciling whenever
//! something it reads changes (kube-runtime watchers) from what is on the cluster (ClusterPolicy `cluster-policy`, the ConfigMaps it names,
//! node labels, the device-plugin DaemonSet's restart annotation):
//!
//! - the device plugin loads the sharing config when it starts — on a node's first
//!   reconcile, when the ClusterPolicy or the node label points at another config, or when the
//!   DaemonSet is restarted; an in-place edit of the ConfigMap alone changes nothing, as on a
//!   real cluster;
//! - GFD labels and `nvidia.com/*` capacity/allocatable follow [`super::advertise`];
//! - the MIG manager applies `nvidia.com/mig.config` (pending → success | failed), keeping the
//!   old layout on failure;
//! - GPUs marked unhealthy (annotation `gpustack.dev/gpu-unhealthy`, a count) leave
//!   allocatable, as the device plugin's health check takes them out;
//! - the ClusterPolicy's `status.state` becomes `ready` once every GPU node is configured.

use super::catalog::{GpuModel, model};
use super::mig::{MigConfigs, MigLayout, MigStrategy};
use super::sharing::SharingConfig;
use super::{GpuNode, NodeConfig, advertise};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use std::collections::HashMap;
use std::time::Duration;

pub const NAMESPACE: &str = "gpu-operator";
pub const DEVICE_PLUGIN_DAEMONSET: &str = "nvidia-device-plugin-daemonset";
const MODEL_ANNOTATION: &str = "gpustack.dev/gpu-model";
const COUNT_ANNOTATION: &str = "gpustack.dev/gpu-count";
/// How many of the node's GPUs the device plugin reports unhealthy.
pub const UNHEALTHY_ANNOTATION: &str = "gpustack.dev/gpu-unhealthy";

/// What a node's device plugin loaded when it last started.
#[derive(Clone, PartialEq)]
struct Loaded {
    source: (String, String, String),
    config: Option<SharingConfig>,
}

#[derive(Default)]
struct NodeMemory {
    plugin: Option<Loaded>,
    mig: Option<(String, Option<MigLayout>)>,
    /// The geometry reported pending, applied on a later pass.
    mig_pending: Option<String>,
}

#[derive(Default)]
pub struct Simulator {
    nodes: HashMap<String, NodeMemory>,
    /// NVIDIA's default MIG geometries, which the operator publishes as the ConfigMap
    /// `default-mig-parted-config` once a ClusterPolicy exists.
    default_mig_config: Option<String>,
}

/// NVIDIA's default MIG geometries from the upstream data, as the operator publishes them.
pub fn upstream_default_mig_config() -> Option<String> {
    let path = crate::upstream("nvidia/default-mig-parted-config.yaml");
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.replace("FILLED BY THE OPERATOR", NAMESPACE))
}

fn cluster_policy_api(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy"),
        "clusterpolicies",
    );
    Api::all_with(client.clone(), &resource)
}

fn str_at<'a>(value: &'a serde_json::Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, step| v.get(step))
        .and_then(|v| v.as_str())
}

/// `Tesla T4` and `Tesla-T4` name the same model, as GFD's label does.
fn find_model(name: &str) -> Option<&'static GpuModel> {
    model(&name.replace(' ', "-"))
}

impl Simulator {
    /// Runs until the process ends: reconciles on every change of a node, a ConfigMap or
    /// DaemonSet of the operator's namespace, or the ClusterPolicy (kube-runtime watchers), and
    /// once a second besides.
    pub async fn run(client: kube::Client) {
        Self::run_with(client, upstream_default_mig_config()).await;
    }

    pub async fn run_with(client: kube::Client, default_mig_config: Option<String>) {
        use futures::{FutureExt, StreamExt};
        use kube::runtime::{WatchStreamExt, watcher};
        let nodes = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
            .default_backoff()
            .map(|_| ())
            .boxed();
        let config_maps = watcher(
            Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .default_backoff()
        .map(|_| ())
        .boxed();
        let daemon_sets = watcher(
            Api::<DaemonSet>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .default_backoff()
        .map(|_| ())
        .boxed();
        let policies = watcher(cluster_policy_api(&client), watcher::Config::default())
            .default_backoff()
            .map(|_| ())
            .boxed();
        let ticks = futures::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some(((), ()))
        })
        .boxed();
        let mut triggers =
            futures::stream::select_all([nodes, config_maps, daemon_sets, policies, ticks]);
        let mut simulator = Simulator {
            default_mig_config,
            ..Simulator::default()
        };
        while triggers.next().await.is_some() {
            // A burst of events costs one reconcile.
            while let Some(Some(())) = triggers.next().now_or_never() {}
            if let Err(e) = simulator.reconcile(&client).await {
                eprintln!("gpusim: {e}");
            }
        }
    }

    /// What the operator creates from a ClusterPolicy: the device-plugin DaemonSet and the
    /// default MIG geometries; created when missing, never overwritten.
    async fn publish_operands(
        &self,
        client: &kube::Client,
        policy: &DynamicObject,
    ) -> Result<(), kube::Error> {
        let params = PatchParams::apply("gpu-operator");
        // Owned by the ClusterPolicy, as the operator's operands are: they go when it goes.
        let owner = serde_json::json!([{
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "name": policy.metadata.name,
            "uid": policy.metadata.uid,
            "controller": true,
        }]);
        let daemon_sets = Api::<DaemonSet>::namespaced(client.clone(), NAMESPACE);
        if daemon_sets
            .get_opt(DEVICE_PLUGIN_DAEMONSET)
            .await?
            .is_none()
        {
            let body = serde_json::json!({
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": DEVICE_PLUGIN_DAEMONSET, "namespace": NAMESPACE, "ownerReferences": owner},
                "spec": {
                    "selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}},
                    "template": {
                        "metadata": {"labels": {"app": "nvidia-device-plugin-daemonset"}},
                        "spec": {
                            "nodeSelector": {"nvidia.com/gpu.present": "true"},
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "containers": [{"name": "nvidia-device-plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}],
                        },
                    },
                },
            });
            daemon_sets
                .patch(DEVICE_PLUGIN_DAEMONSET, &params, &Patch::Apply(&body))
                .await?;
        }
        if let Some(text) = &self.default_mig_config {
            let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE);
            if config_maps
                .get_opt("default-mig-parted-config")
                .await?
                .is_none()
            {
                let mut body: serde_json::Value =
                    serde_yaml_ng::from_str(text).unwrap_or_else(|_| serde_json::json!({}));
                if body.get("kind").is_some() {
                    // The operator sets its ClusterPolicy as the controller of every ConfigMap
                    // it makes (createConfigMap: SetControllerReference), as of its DaemonSets.
                    body["metadata"]["ownerReferences"] = owner.clone();
                    config_maps
                        .patch("default-mig-parted-config", &params, &Patch::Apply(&body))
                        .await?;
                }
            }
        }
        Ok(())
    }

    pub async fn reconcile(&mut self, client: &kube::Client) -> Result<(), kube::Error> {
        let policies = cluster_policy_api(client);
        let Some(policy) = policies.get_opt("cluster-policy").await? else {
            return Ok(());
        };
        let spec = policy.data.get("spec").cloned().unwrap_or_default();
        let plugin_config = str_at(&spec, &["devicePlugin", "config", "name"]).map(str::to_owned);
        let plugin_default = str_at(&spec, &["devicePlugin", "config", "default"])
            .unwrap_or("")
            .to_owned();
        let strategy = str_at(&spec, &["mig", "strategy"])
            .and_then(MigStrategy::parse)
            .unwrap_or_default();
        let mig_config_name = str_at(&spec, &["migManager", "config", "name"])
            .unwrap_or("default-mig-parted-config")
            .to_owned();

        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
        let plugin_cm = match &plugin_config {
            Some(name) => config_maps.get_opt(name).await?,
            None => None,
        };
        let mig_configs = config_maps
            .get_opt(&mig_config_name)
            .await?
            .and_then(|cm| cm.data.and_then(|d| d.get("config.yaml").cloned()))
            .map(|text| MigConfigs::parse(&text));
        self.publish_operands(client, &policy).await?;
        // Any change of the pod template rolls the DaemonSet's pods, as its controller does
        // (`kubectl rollout restart` and a config-hash annotation are both such changes).
        let restarted_at = Api::<DaemonSet>::namespaced(client.clone(), NAMESPACE)
            .get_opt(DEVICE_PLUGIN_DAEMONSET)
            .await?
            .and_then(|ds| ds.spec?.template.metadata?.annotations)
            .map(|annotations| format!("{annotations:?}"))
            .unwrap_or_default();

        let nodes: Api<Node> = Api::all(client.clone());
        let mut all_ready = true;
        for node in nodes.list(&ListParams::default()).await? {
            let Some(name) = node.metadata.name.clone() else {
                continue;
            };
            let annotations = node.metadata.annotations.clone().unwrap_or_default();
            let Some(gpu_model) = annotations
                .get(MODEL_ANNOTATION)
                .and_then(|m| find_model(m))
            else {
                continue;
            };
            let count: u32 = annotations
                .get(COUNT_ANNOTATION)
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let labels = node.metadata.labels.clone().unwrap_or_default();
            let memory = self.nodes.entry(name.clone()).or_default();

            // The device plugin: (re)loads its config only when it (re)starts.
            let key = labels
                .get("nvidia.com/device-plugin.config")
                .cloned()
                .unwrap_or_else(|| plugin_default.clone());
            let source = (
                plugin_config.clone().unwrap_or_default(),
                key.clone(),
                restarted_at.clone(),
            );
            if memory.plugin.as_ref().is_none_or(|l| l.source != source) {
                let text = plugin_cm
                    .as_ref()
                    .and_then(|cm| cm.data.as_ref())
                    .and_then(|d| d.get(&key));
                let config = match text.map(|t| SharingConfig::parse(t)) {
                    Some(Ok(config)) => Some(config),
                    // An invalid config: the plugin keeps serving what it had.
                    Some(Err(_)) => memory.plugin.as_ref().and_then(|l| l.config.clone()),
                    None => None,
                };
                memory.plugin = Some(Loaded { source, config });
            }

            // The MIG manager.
            let mut extra_labels: Vec<(String, String)> = Vec::new();
            let state = labels
                .get("nvidia.com/mig.config.state")
                .map(String::as_str);
            let changed = |wanted: &String| {
                memory
                    .mig
                    .as_ref()
                    .is_none_or(|(applied, _)| applied != wanted)
            };
            match labels.get("nvidia.com/mig.config") {
                // A new geometry is first reported pending, then applied on a later pass.
                Some(wanted) if changed(wanted) && memory.mig_pending.as_ref() != Some(wanted) => {
                    memory.mig_pending = Some(wanted.clone());
                    extra_labels.push(("nvidia.com/mig.config.state".into(), "pending".into()));
                    all_ready = false;
                }
                Some(wanted) if changed(wanted) && state == Some("pending") => {
                    memory.mig_pending = None;
                    let previous = memory.mig.as_ref().and_then(|(_, layout)| layout.clone());
                    let result = match &mig_configs {
                        Some(Ok(configs)) => configs.layout_for(wanted, gpu_model),
                        Some(Err(e)) => Err(e.clone()),
                        None => Err(format!("ConfigMap {mig_config_name} not found")),
                    };
                    match result {
                        Ok(layout) => {
                            let enabled = (!layout.devices.is_empty()).then_some(layout);
                            memory.mig = Some((wanted.clone(), enabled));
                            extra_labels
                                .push(("nvidia.com/mig.config.state".into(), "success".into()));
                        }
                        Err(_) => {
                            memory.mig = Some((wanted.clone(), previous));
                            extra_labels
                                .push(("nvidia.com/mig.config.state".into(), "failed".into()));
                            all_ready = false;
                        }
                    }
                }
                _ => {}
            }

            let gpu = GpuNode {
                model: gpu_model,
                count,
            };
            let layout = memory.mig.as_ref().and_then(|(_, l)| l.as_ref());
            let config = NodeConfig {
                sharing: memory.plugin.as_ref().and_then(|l| l.config.as_ref()),
                mig: layout,
                mig_strategy: if layout.is_some() {
                    strategy
                } else {
                    MigStrategy::None
                },
            };
            let mut ad = advertise(&gpu, &config);
            // GPUs the plugin's health check found unhealthy (an Xid 79, fallen off the bus)
            // leave allocatable, with every device carved from them; GFD still counts them.
            let unhealthy: u32 = annotations
                .get(UNHEALTHY_ANNOTATION)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0)
                .min(count);
            if unhealthy > 0 {
                for amount in ad.allocatable.values_mut() {
                    *amount = *amount * u64::from(count - unhealthy) / u64::from(count);
                }
            }

            let mut label_patch: serde_json::Map<String, serde_json::Value> = ad
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            for (k, v) in extra_labels {
                label_patch.insert(k, v.into());
            }
            // Resources the node no longer has are removed (a MIG profile that went away).
            let current = node
                .status
                .as_ref()
                .and_then(|s| s.allocatable.clone())
                .unwrap_or_default();
            let mut resources: serde_json::Map<String, serde_json::Value> = current
                .keys()
                .filter(|k| k.starts_with("nvidia.com/") && !ad.allocatable.contains_key(*k))
                .map(|k| (k.clone(), serde_json::Value::Null))
                .collect();
            for (k, v) in &ad.allocatable {
                resources.insert(k.clone(), v.to_string().into());
            }
            let needs_labels = label_patch.iter().any(|(k, v)| {
                labels.get(k).map(|l| serde_json::Value::String(l.clone())) != Some(v.clone())
            });
            if needs_labels {
                nodes
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({ "metadata": { "labels": label_patch } })),
                    )
                    .await?;
            }
            let needs_status = resources.iter().any(|(k, v)| {
                current
                    .get(k)
                    .map(|q| serde_json::Value::String(q.0.clone()))
                    != Some(v.clone()).filter(|v| !v.is_null())
            });
            if needs_status {
                let status = serde_json::json!({ "status": { "capacity": resources, "allocatable": resources } });
                nodes
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await?;
            }
        }
        let state = if all_ready { "ready" } else { "notReady" };
        if str_at(&policy.data, &["status", "state"]) != Some(state) {
            let patch = serde_json::json!({ "status": { "state": state } });
            policies
                .patch_status(
                    "cluster-policy",
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await
                .ok();
        }
        Ok(())
    }
}
