//! The simulator running against a cluster: it plays the GPU Operator and its operands on every
//! node annotated `gpustack.dev/gpu-model` / `gpustack.dev/gpu-count`, reconciling whenever
//! something it reads changes (kube-runtime reflectors over nodes, pods, the operator's
//! ConfigMaps and DaemonSets and the ClusterPolicy `cluster-policy`), and when a delay it
//! plays (a reconfiguration, a reboot) runs out:
//!
//! - the operator: the operand DaemonSets (device plugin, GFD, dcgm-exporter), each selecting
//!   the nodes labelled `nvidia.com/gpu.deploy.<operand>=true`, which it sets on every GPU node
//!   that has no such label; NVIDIA's default MIG geometries; the per-node MIG config
//!   `<node>-mig-config` that MIG Manager generates from NVML since v26.3.0; the ClusterPolicy's
//!   `status.state`. The real kube-controller-manager runs the DaemonSets' pods on the kwok
//!   nodes;
//! - the device plugin loads the sharing config when its pod on the node starts (a new pod),
//!   and when the ClusterPolicy or the node's `nvidia.com/device-plugin.config` label points at
//!   another config (its config-manager restarts it); an in-place edit of the ConfigMap
//!   changes nothing until the pod is replaced, as on a real cluster. While no plugin pod runs
//!   on a node, the kubelet has no healthy devices there: `nvidia.com/*` allocatable is 0;
//! - GFD labels and `nvidia.com/*` capacity/allocatable follow [`super::advertise`];
//! - MIG Manager, as mig-parted's `reconfigure.go`: a changed `nvidia.com/mig.config` (or a
//!   missing `nvidia.com/mig.config.state`) is validated against the config (`failed` when it
//!   does not fit the GPU, the old layout kept), `success` at once when the GPUs already hold
//!   it; otherwise `pending`, the operands paused (`nvidia.com/gpu.deploy.*` set to
//!   `paused-for-mig-change`) and waited for until their pods are gone (5 minutes, then
//!   `failed`), then the GPUs repartitioned — it never cordons, drains or waits for user pods:
//!   a user pod still holding a GPU of the node is killed (phase `Failed`, reason
//!   [`KILLED_REASON`], and named in the node's [`KILLED_PODS`] annotation) — with a reboot
//!   (`rebooting`, the node NotReady for [`REBOOT_SECONDS`]) when MIG mode changes and the
//!   ClusterPolicy sets `WITH_REBOOT=true` in `migManager.env`, then the operands restored and
//!   `success`. The geometry the GPUs hold survives the simulator (annotation [`MIG_APPLIED`]);
//! - the ClusterPolicy's `status.state` is `ready` once the operand DaemonSets have rolled out
//!   on the nodes they select and no reconfiguration is under way;
//! - GPUs marked unhealthy (annotation `gpustack.dev/gpu-unhealthy`, a count) leave
//!   allocatable, as the device plugin's health check takes them out.
//!
//! Tests steer it with node annotations: [`RECONFIGURE_SECONDS`] (how long repartitioning
//! takes, default 0), [`REBOOT_SECONDS`] (default 5), [`OPERATOR_UNCORDON_SECONDS`] (the
//! operator uncordons the node that long after it was cordoned, whoever cordoned it, as
//! gpu-operator#304 and #536 report), and [`WEDGE`], a known way for a reconfiguration to hang
//! until the annotation is removed: `stuck-pending` (the state stays `pending` with the
//! operands paused and 0 GPUs advertised, gpu-operator#2833), `kubelet-restart` (after
//! repartitioning the node stays NotReady, gpu-operator#2415), `paused-left` (`success`, but
//! the operands are left paused), `zero-after-success` (`success`, but the plugin advertises
//! nothing).
//!
//! A NotReady node is one kwok stops playing: the simulator takes its `kwok.x-k8s.io/node`
//! annotation away (tests/cluster/up has kwok manage only nodes that carry it), sets its
//! `Ready` condition to False, and gives the annotation back when the node recovers.

use super::catalog::{GpuModel, model};
use super::mig::{MigConfigs, MigLayout, MigStrategy, generated_config};
use super::sharing::SharingConfig;
use super::{GpuNode, NodeConfig, advertise};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub const NAMESPACE: &str = "gpu-operator";
pub const DEVICE_PLUGIN_DAEMONSET: &str = "nvidia-device-plugin-daemonset";
const MODEL_ANNOTATION: &str = "gpustack.dev/gpu-model";
const COUNT_ANNOTATION: &str = "gpustack.dev/gpu-count";
/// How many of the node's GPUs the device plugin reports unhealthy.
pub const UNHEALTHY_ANNOTATION: &str = "gpustack.dev/gpu-unhealthy";
/// Seconds MIG Manager takes to repartition the node's GPUs (default 0).
pub const RECONFIGURE_SECONDS: &str = "gpusim.gpustack.dev/reconfigure-seconds";
/// Seconds a reboot takes (default 5).
pub const REBOOT_SECONDS: &str = "gpusim.gpustack.dev/reboot-seconds";
/// A wedge to inject: `stuck-pending`, `kubelet-restart`, `paused-left`, `zero-after-success`.
pub const WEDGE: &str = "gpusim.gpustack.dev/wedge";
/// The operator uncordons the node this many seconds after it was cordoned.
pub const OPERATOR_UNCORDON_SECONDS: &str = "gpusim.gpustack.dev/operator-uncordon-seconds";
/// The geometry the node's GPUs hold: hardware state, which outlives MIG Manager's pod.
pub const MIG_APPLIED: &str = "gpusim.gpustack.dev/mig-applied";
/// The pods MIG Manager killed on the node by repartitioning their GPUs (`ns/name`, comma-separated).
pub const KILLED_PODS: &str = "gpusim.gpustack.dev/killed-pods";
/// The uid of the device-plugin pod whose config the node advertises.
pub const PLUGIN_POD: &str = "gpusim.gpustack.dev/plugin-pod";
/// The reason of a pod killed by a reconfiguration of its GPU.
pub const KILLED_REASON: &str = "GPUReconfigured";
pub const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";
pub const MIG_STATE_LABEL: &str = "nvidia.com/mig.config.state";
pub const DEPLOY_LABEL_PREFIX: &str = "nvidia.com/gpu.deploy.";
/// What MIG Manager sets an operand's deploy label to while it repartitions the GPUs.
pub const PAUSED: &str = "paused-for-mig-change";
const KWOK_ANNOTATION: &str = "kwok.x-k8s.io/node";
const DEFAULT_MIG_CONFIG: &str = "default-mig-parted-config";
/// How long MIG Manager waits for the operands to stop (mig-parted's `waitForPodsToBeDeleted`).
const OPERAND_STOP_TIMEOUT: Duration = Duration::from_secs(300);

/// The operands MIG Manager pauses: (DaemonSet and pod label `app`, deploy-label suffix).
const OPERANDS: [(&str, &str); 3] = [
    (DEVICE_PLUGIN_DAEMONSET, "device-plugin"),
    ("gpu-feature-discovery", "gpu-feature-discovery"),
    ("nvidia-dcgm-exporter", "dcgm-exporter"),
];

/// What a node's device plugin loaded when it last started: (config name, key, pod uid).
#[derive(Clone, PartialEq)]
struct Loaded {
    source: (String, String, String),
    config: Option<SharingConfig>,
}

/// One reconfiguration by MIG Manager, as far as it got.
struct MigRun {
    wanted: String,
    layout: Option<MigLayout>,
    phase: Phase,
    /// The deploy labels it paused, to restore.
    paused: Vec<String>,
}

enum Phase {
    /// Operands paused; waiting for their pods to go.
    Pausing {
        since: Instant,
    },
    Rebooting {
        until: Instant,
    },
    Repartitioning {
        until: Instant,
    },
    /// Repartitioned, and the kubelet restart left the node NotReady.
    KubeletDown,
}

#[derive(Default)]
struct NodeMemory {
    plugin: Option<Loaded>,
    /// What each plugin pod on the node loaded, by pod uid.
    plugin_pods: HashMap<String, Loaded>,
    /// The geometry the GPUs hold (name, layout; `None` layout: MIG disabled).
    mig: Option<(String, Option<MigLayout>)>,
    /// The `nvidia.com/mig.config` value MIG Manager last acted on.
    handled: Option<String>,
    run: Option<MigRun>,
    cordoned_since: Option<Instant>,
    /// Whether the simulator holds the node NotReady (a reboot, a kubelet that did not return).
    down: bool,
    /// A reconfiguration succeeded under the `zero-after-success` wedge: the plugin advertises
    /// nothing until the wedge is cleared.
    advertises_nothing: bool,
    /// The uids of the pods a repartitioning killed, while they exist.
    killed_uids: std::collections::HashSet<String>,
}

#[derive(Default)]
pub struct Simulator {
    /// By node uid.
    nodes: HashMap<String, NodeMemory>,
    /// NVIDIA's default MIG geometries, which the operator publishes as the ConfigMap
    /// `default-mig-parted-config` once a ClusterPolicy exists.
    default_mig_config: Option<String>,
    /// The devices last published in each node's DRA ResourceSlice, by node name.
    dra_published: HashMap<String, serde_json::Value>,
    /// Whether the DRA slices were listed once since the simulator started.
    dra_listed: bool,
}

/// What the simulator reads, as reflectors keep it.
struct Stores {
    nodes: Store<Node>,
    pods: Store<Pod>,
    config_maps: Store<ConfigMap>,
    daemon_sets: Store<DaemonSet>,
    policies: Store<DynamicObject>,
}

/// NVIDIA's default MIG geometries from the upstream data, as the operator publishes them.
pub fn upstream_default_mig_config() -> Option<String> {
    let path = crate::upstream("nvidia/default-mig-parted-config.yaml");
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.replace("FILLED BY THE OPERATOR", NAMESPACE))
}

fn cluster_policy_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy"),
        "clusterpolicies",
    )
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

fn seconds(annotations: &BTreeMap<String, String>, key: &str, default: f64) -> Duration {
    let seconds = annotations
        .get(key)
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(seconds)
}

/// Whether a pod holds GPUs: a container asks for an `nvidia.com/*` resource, or the pod has
/// DRA claims.
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

/// Marks a user pod killed by the repartitioning of its GPUs; its `ns/name`.
async fn kill(client: &kube::Client, pod: &Pod, node: &str) -> Result<String, kube::Error> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = serde_json::json!({"status": {
        "phase": "Failed",
        "reason": KILLED_REASON,
        "message": format!("MIG Manager repartitioned the GPUs of node {node} under this pod"),
        "conditions": [{"type": "Ready", "status": "False", "reason": KILLED_REASON}],
    }});
    Api::<Pod>::namespaced(client.clone(), &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::Strategic(status))
        .await?;
    Ok(format!("{namespace}/{name}"))
}

fn terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

fn set_state(patch: &mut serde_json::Map<String, serde_json::Value>, state: &str) {
    patch.insert(MIG_STATE_LABEL.into(), state.into());
}

fn on_node(pod: &Pod, node: &str) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
}

fn app_of(pod: &Pod) -> Option<&str> {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .map(String::as_str)
}

impl Simulator {
    /// Runs until the process ends.
    pub async fn run(client: kube::Client) {
        Self::run_with(client, upstream_default_mig_config()).await;
    }

    pub async fn run_with(client: kube::Client, default_mig_config: Option<String>) {
        use futures::{FutureExt, StreamExt};
        use kube::runtime::{WatchStreamExt, watcher};
        fn watch<K>(
            api: Api<K>,
            writer: reflector::store::Writer<K>,
        ) -> futures::stream::BoxStream<'static, ()>
        where
            K: kube::Resource
                + Clone
                + serde::de::DeserializeOwned
                + std::fmt::Debug
                + Send
                + Sync
                + 'static,
            K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
        {
            reflector::reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff()
                .map(|_| ())
                .boxed()
        }
        let (nodes, nodes_writer) = reflector::store();
        let (pods, pods_writer) = reflector::store();
        let (config_maps, config_maps_writer) = reflector::store();
        let (daemon_sets, daemon_sets_writer) = reflector::store();
        let policies_writer =
            reflector::store::Writer::<DynamicObject>::new(cluster_policy_resource());
        let policies = policies_writer.as_reader();
        let streams = vec![
            watch(Api::<Node>::all(client.clone()), nodes_writer),
            watch(Api::<Pod>::all(client.clone()), pods_writer),
            watch(
                Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE),
                config_maps_writer,
            ),
            // Every namespace's: the operator's operands, and the DRA driver chart's plugin.
            watch(Api::<DaemonSet>::all(client.clone()), daemon_sets_writer),
            watch(
                Api::all_with(client.clone(), &cluster_policy_resource()),
                policies_writer,
            ),
        ];
        let mut triggers = futures::stream::select_all(streams);
        let stores = Stores {
            nodes,
            pods,
            config_maps,
            daemon_sets,
            policies,
        };
        let mut simulator = Simulator {
            default_mig_config,
            ..Simulator::default()
        };
        // Until every store has listed once, a reconcile would act on a partial cluster.
        let ready = async {
            let _ = stores.nodes.wait_until_ready().await;
            let _ = stores.pods.wait_until_ready().await;
            let _ = stores.config_maps.wait_until_ready().await;
            let _ = stores.daemon_sets.wait_until_ready().await;
        };
        tokio::pin!(ready);
        loop {
            tokio::select! {
                _ = &mut ready => break,
                event = triggers.next() => if event.is_none() { return },
            }
        }
        let mut next: Option<Instant> = None;
        loop {
            // Whatever else happens, a pass a second: the ClusterPolicy's CRD may appear late,
            // and its store only then starts to fill.
            let wake = next
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(1))
                .min(Instant::now() + Duration::from_secs(1));
            tokio::select! {
                event = triggers.next() => if event.is_none() { return },
                () = tokio::time::sleep_until(wake) => {},
            }
            // A burst of events costs one reconcile.
            while let Some(Some(())) = triggers.next().now_or_never() {}
            match simulator.reconcile(&client, &stores).await {
                Ok(deadline) => next = deadline,
                Err(e) => {
                    eprintln!("gpusim: {e}");
                    next = None;
                }
            }
            if let Err(e) = simulator.publish_dra(&client, &stores).await {
                eprintln!("gpusim: DRA: {e}");
            }
        }
    }

    /// NVIDIA's DRA driver's kubelet plugin, and node-feature-discovery's PCI label it needs:
    /// on every GPU node where a pod of the driver chart's kubelet plugin runs, the node's
    /// ResourceSlice ([`super::dra`]), owned by the node as the driver's is; elsewhere none. A
    /// node the device plugin serves too gets its slice all the same, as a real one would (its
    /// GPUs offered twice), and the simulator says so.
    async fn publish_dra(
        &mut self,
        client: &kube::Client,
        stores: &Stores,
    ) -> Result<(), kube::Error> {
        use k8s_openapi::api::resource::v1::ResourceSlice;
        use kube::api::{DeleteParams, ListParams};
        let (plugin_key, plugin_value) = super::dra::PLUGIN_LABEL;
        let plugin_sets: Vec<_> = stores
            .daemon_sets
            .state()
            .into_iter()
            .filter(|ds| {
                ds.spec
                    .as_ref()
                    .and_then(|s| s.selector.match_labels.as_ref())
                    .and_then(|l| l.get(plugin_key))
                    .map(String::as_str)
                    == Some(plugin_value)
            })
            .collect();
        let driver_installed = !plugin_sets.is_empty();
        // The chart passes its featureGates to the plugin as FEATURE_GATES=Gate=true,...
        let dynamic_mig = plugin_sets.iter().any(|ds| {
            ds.spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .into_iter()
                .flat_map(|s| &s.containers)
                .flat_map(|c| c.env.iter().flatten())
                .filter(|e| e.name == "FEATURE_GATES")
                .filter_map(|e| e.value.as_deref())
                .any(|gates| gates.split(',').any(|g| g.trim() == "DynamicMIG=true"))
        });
        // Without the driver, slices are read only while some are known to be left over (and
        // once, for those an earlier run of the simulator left).
        if !driver_installed && self.dra_published.is_empty() && self.dra_listed {
            return Ok(());
        }
        self.dra_listed = true;
        let slices_api: Api<ResourceSlice> = Api::all(client.clone());
        let slices = match slices_api
            .list(&ListParams::default().fields(&format!("spec.driver={}", super::dra::DRIVER)))
            .await
        {
            // Only the slices the plugin published: a test's own slices are left alone.
            Ok(list) => {
                list.items
                    .into_iter()
                    .filter(|s| {
                        s.metadata.name.as_deref().is_some_and(|n| {
                            n.starts_with(&format!("00000-{}-", super::dra::DRIVER))
                        })
                    })
                    .collect::<Vec<_>>()
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        if !driver_installed && slices.is_empty() {
            self.dra_published.clear();
            return Ok(());
        }
        let pods = stores.pods.state();
        let running_on = |node: &str, matches: &dyn Fn(&Pod) -> bool| {
            pods.iter().any(|p| {
                on_node(p, node)
                    && matches(p)
                    && p.metadata.deletion_timestamp.is_none()
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
        };
        let node_api: Api<Node> = Api::all(client.clone());
        let mut wanted: HashMap<String, (serde_json::Value, String)> = HashMap::new();
        for node in stores.nodes.state() {
            let (Some(name), Some(uid)) = (node.metadata.name.clone(), node.metadata.uid.clone())
            else {
                continue;
            };
            let annotations = node.metadata.annotations.clone().unwrap_or_default();
            let Some(gpu_model) = annotations
                .get(MODEL_ANNOTATION)
                .and_then(|m| find_model(m))
            else {
                continue;
            };
            let labels = node.metadata.labels.clone().unwrap_or_default();
            if driver_installed && !labels.contains_key(super::dra::NFD_NVIDIA_LABEL) {
                node_api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({"metadata": {"labels": {
                            super::dra::NFD_NVIDIA_LABEL: "true"
                        }}})),
                    )
                    .await?;
            }
            let dra_plugin = running_on(&name, &|p: &Pod| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(plugin_key))
                    .map(String::as_str)
                    == Some(plugin_value)
            });
            let device_plugin = running_on(&name, &|p: &Pod| {
                p.metadata.namespace.as_deref() == Some(NAMESPACE)
                    && app_of(p) == Some(DEVICE_PLUGIN_DAEMONSET)
            });
            if !dra_plugin {
                continue;
            }
            if device_plugin {
                // As on a real node: both serve the same GPUs, each unaware of the other.
                eprintln!(
                    "gpusim: DRA: node {name} runs both the device plugin and the DRA driver's kubelet plugin: its GPUs are offered twice"
                );
            }
            let count: u32 = annotations
                .get(COUNT_ANNOTATION)
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let layout = annotations.get(MIG_APPLIED).and_then(|geometry| {
                let configs = MigConfigs::parse(self.default_mig_config.as_deref()?).ok()?;
                configs.layout_for(geometry, gpu_model).ok()
            });
            let pool = super::dra::pool(&name, gpu_model, count, layout.as_ref(), dynamic_mig);
            wanted.insert(name, (serde_json::Value::Array(pool), uid));
        }
        let mut live: HashMap<String, Vec<&ResourceSlice>> = HashMap::new();
        for slice in &slices {
            let node = slice.spec.node_name.clone().unwrap_or_default();
            live.entry(node).or_default().push(slice);
        }
        for (node, existing) in live {
            let wanted_pool = wanted.remove(&node);
            if let Some((pool, _)) = &wanted_pool
                && self.dra_published.get(&node) == Some(pool)
            {
                continue;
            }
            let generation = existing
                .iter()
                .map(|s| s.spec.pool.generation)
                .max()
                .unwrap_or(0)
                + 1;
            // A pool of one slice before and after is patched, as the driver's helper does;
            // otherwise its slices are made again.
            if let Some((pool, _)) = &wanted_pool
                && let ([slice], [contents]) = (
                    existing.as_slice(),
                    pool.as_array().map_or(&[][..], Vec::as_slice),
                )
                && let Some(slice_name) = slice.metadata.name.clone()
            {
                let spec = super::dra::slice_spec(&node, contents, generation, 1);
                slices_api
                    .patch(
                        &slice_name,
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({"spec": spec})),
                    )
                    .await?;
                self.dra_published.insert(node, pool.clone());
                continue;
            }
            for slice in &existing {
                if let Some(slice_name) = &slice.metadata.name {
                    slices_api
                        .delete(slice_name, &DeleteParams::default())
                        .await?;
                }
            }
            self.dra_published.remove(&node);
            if let Some((pool, uid)) = wanted_pool {
                self.create_pool(&slices_api, &node, &uid, pool, generation)
                    .await?;
            }
        }
        for (node, (pool, uid)) in wanted {
            self.create_pool(&slices_api, &node, &uid, pool, 1).await?;
        }
        Ok(())
    }

    /// Creates the slices of a node's pool, owned by the node.
    async fn create_pool(
        &mut self,
        slices_api: &Api<k8s_openapi::api::resource::v1::ResourceSlice>,
        node: &str,
        uid: &str,
        pool: serde_json::Value,
        generation: i64,
    ) -> Result<(), kube::Error> {
        use k8s_openapi::api::resource::v1::ResourceSlice;
        use kube::api::PostParams;
        let contents = pool.as_array().cloned().unwrap_or_default();
        for slice in &contents {
            let spec = super::dra::slice_spec(node, slice, generation, contents.len());
            let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {
                    "generateName": format!("00000-{}-{node}-", super::dra::DRIVER),
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Node", "name": node, "uid": uid,
                        "controller": true,
                    }],
                },
                "spec": spec,
            }))
            .map_err(kube::Error::SerdeError)?;
            slices_api.create(&PostParams::default(), &slice).await?;
        }
        self.dra_published.insert(node.to_owned(), pool);
        Ok(())
    }

    /// What the operator creates from a ClusterPolicy: the operand DaemonSets (made again as
    /// the operator wants them when they differ) and the default MIG geometries (created when
    /// missing, never overwritten).
    async fn publish_operands(
        &self,
        client: &kube::Client,
        stores: &Stores,
        policy: &DynamicObject,
    ) -> Result<(), kube::Error> {
        let params = PatchParams::apply("gpu-operator").force();
        // Owned by the ClusterPolicy, as the operator's operands are: they go when it goes.
        let owner = serde_json::json!([{
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "name": policy.metadata.name,
            "uid": policy.metadata.uid,
            "controller": true,
        }]);
        let spec = policy.data.get("spec").cloned().unwrap_or_default();
        let max_unavailable = spec
            .pointer("/daemonsets/rollingUpdate/maxUnavailable")
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "1".into());
        let daemon_sets = Api::<DaemonSet>::namespaced(client.clone(), NAMESPACE);
        for (name, operand) in OPERANDS {
            if operand == "dcgm-exporter"
                && spec.pointer("/dcgmExporter/enabled") == Some(&serde_json::Value::Bool(false))
            {
                continue;
            }
            let deploy = format!("{DEPLOY_LABEL_PREFIX}{operand}");
            let current = stores.daemon_sets.state().into_iter().find(|ds| {
                ds.metadata.namespace.as_deref() == Some(NAMESPACE)
                    && ds.metadata.name.as_deref() == Some(name)
            });
            let matches = current.as_ref().is_some_and(|ds| {
                let spec = ds.spec.as_ref();
                let selector = spec
                    .and_then(|s| s.template.spec.as_ref())
                    .and_then(|s| s.node_selector.as_ref())
                    .and_then(|s| s.get(&deploy))
                    .map(String::as_str);
                let unavailable = spec
                    .and_then(|s| s.update_strategy.as_ref())
                    .and_then(|u| u.rolling_update.as_ref())
                    .and_then(|r| r.max_unavailable.as_ref())
                    .map(|m| match m {
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => {
                            i.to_string()
                        }
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => {
                            s.clone()
                        }
                    });
                selector == Some("true") && unavailable.as_deref() == Some(&max_unavailable)
            });
            if matches {
                continue;
            }
            let max: serde_json::Value = max_unavailable
                .parse::<i64>()
                .map(serde_json::Value::from)
                .unwrap_or_else(|_| max_unavailable.clone().into());
            let body = serde_json::json!({
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": owner},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "nodeSelector": {deploy: "true"},
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "containers": [{"name": operand, "image": format!("nvcr.io/nvidia/{operand}:sim")}],
                        },
                    },
                },
            });
            daemon_sets
                .patch(name, &params, &Patch::Apply(&body))
                .await?;
        }
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE);
        if let Some(text) = &self.default_mig_config
            && self.config_map(stores, DEFAULT_MIG_CONFIG).is_none()
        {
            let mut body: serde_json::Value =
                serde_yaml_ng::from_str(text).unwrap_or_else(|_| serde_json::json!({}));
            if body.get("kind").is_some() {
                // The operator sets its ClusterPolicy as the controller of every ConfigMap
                // it makes (createConfigMap: SetControllerReference), as of its DaemonSets.
                body["metadata"]["ownerReferences"] = owner.clone();
                config_maps
                    .patch(DEFAULT_MIG_CONFIG, &params, &Patch::Apply(&body))
                    .await?;
            }
        }
        Ok(())
    }

    fn config_map(&self, stores: &Stores, name: &str) -> Option<Arc<ConfigMap>> {
        stores
            .config_maps
            .state()
            .into_iter()
            .find(|cm| cm.metadata.name.as_deref() == Some(name))
    }

    /// One pass over every GPU node; returns when the next delay it plays runs out.
    async fn reconcile(
        &mut self,
        client: &kube::Client,
        stores: &Stores,
    ) -> Result<Option<Instant>, kube::Error> {
        let Some(policy) = stores
            .policies
            .state()
            .into_iter()
            .find(|p| p.metadata.name.as_deref() == Some("cluster-policy"))
        else {
            return Ok(None);
        };
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut wake_at = |at: Instant| {
            next = Some(next.map_or(at, |n: Instant| n.min(at)));
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
            .unwrap_or(DEFAULT_MIG_CONFIG)
            .to_owned();
        let with_reboot = spec
            .pointer("/migManager/env")
            .and_then(|e| e.as_array())
            .is_some_and(|env| {
                env.iter().any(|v| {
                    v.get("name").and_then(|n| n.as_str()) == Some("WITH_REBOOT")
                        && v.get("value").and_then(|n| n.as_str()) == Some("true")
                })
            });

        let plugin_cm = plugin_config
            .as_ref()
            .and_then(|name| self.config_map(stores, name));
        let named_mig_configs = self
            .config_map(stores, &mig_config_name)
            .and_then(|cm| cm.data.as_ref()?.get("config.yaml").cloned())
            .map(|text| MigConfigs::parse(&text));
        self.publish_operands(client, stores, &policy).await?;

        let node_api: Api<Node> = Api::all(client.clone());
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
        let pods = stores.pods.state();
        let mut all_ready = true;
        for node in stores.nodes.state() {
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
            let wedge = annotations.get(WEDGE).map(String::as_str);
            let mut label_patch: serde_json::Map<String, serde_json::Value> =
                serde_json::Map::new();
            let mut annotation_patch: serde_json::Map<String, serde_json::Value> =
                serde_json::Map::new();

            // MIG Manager's per-node config, generated from what NVML reports (v26.3.0+).
            let per_node_name = format!("{name}-mig-config");
            let per_node = if gpu_model.mig_profiles.is_empty() {
                None
            } else {
                let text = generated_config(gpu_model);
                if self.config_map(stores, &per_node_name).is_none() {
                    // Made by the operator's MIG Manager: the ClusterPolicy is its controller,
                    // as of every object the operator makes.
                    let body = serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": per_node_name, "namespace": NAMESPACE,
                                     "labels": {"nvidia.com/mig-config.node": name},
                                     "ownerReferences": [{
                                         "apiVersion": "nvidia.com/v1",
                                         "kind": "ClusterPolicy",
                                         "name": policy.metadata.name,
                                         "uid": policy.metadata.uid,
                                         "controller": true,
                                     }]},
                        "data": {"config.yaml": text},
                    });
                    config_maps
                        .patch(
                            &per_node_name,
                            &PatchParams::apply("gpu-operator").force(),
                            &Patch::Apply(&body),
                        )
                        .await?;
                }
                Some(MigConfigs::parse(&text))
            };
            // The per-node config stands in for NVIDIA's default; a custom set is used as named.
            let mig_configs = match (&per_node, mig_config_name.as_str()) {
                (Some(generated), DEFAULT_MIG_CONFIG) => Some(generated.clone()),
                _ => named_mig_configs.clone(),
            };

            // By uid: a node deleted and made again under its name is another machine.
            let uid = node.metadata.uid.clone().unwrap_or_default();
            let memory = self.nodes.entry(uid).or_default();
            if memory.mig.is_none() {
                // The GPUs' own state, which the simulator's restart does not change.
                let applied = annotations.get(MIG_APPLIED).cloned();
                memory.mig = Some(match applied {
                    Some(geometry) => {
                        let layout = match &mig_configs {
                            Some(Ok(configs)) => configs
                                .layout_for(&geometry, gpu_model)
                                .ok()
                                .filter(|l| !l.devices.is_empty()),
                            _ => None,
                        };
                        (geometry, layout)
                    }
                    None => (String::new(), None),
                });
                // A reconfiguration a previous simulator finished is not done again; one it
                // left halfway (pending, rebooting) starts over, as MIG Manager's pod does.
                let state = labels.get(MIG_STATE_LABEL).map(String::as_str);
                if matches!(state, Some("success" | "failed")) {
                    memory.handled = labels.get(MIG_CONFIG_LABEL).cloned();
                }
            }

            // The operator labels every GPU node for each operand it deploys.
            for (_, operand) in OPERANDS {
                let key = format!("{DEPLOY_LABEL_PREFIX}{operand}");
                if !labels.contains_key(&key) {
                    label_patch.insert(key, "true".into());
                }
            }

            // MIG Manager.
            let state = labels.get(MIG_STATE_LABEL).map(String::as_str);
            let wanted = labels.get(MIG_CONFIG_LABEL).cloned();
            if memory.run.is_none()
                && let Some(wanted) = &wanted
                && (memory.handled.as_ref() != Some(wanted) || state.is_none())
            {
                memory.handled = Some(wanted.clone());
                let layout = match &mig_configs {
                    Some(Ok(configs)) => configs.layout_for(wanted, gpu_model),
                    Some(Err(e)) => Err(e.clone()),
                    None => Err(format!("ConfigMap {mig_config_name} not found")),
                };
                match layout {
                    Err(_) => set_state(&mut label_patch, "failed"),
                    Ok(layout) => {
                        let layout = (!layout.devices.is_empty()).then_some(layout);
                        let held = memory.mig.as_ref();
                        if held.is_some_and(|(g, l)| g == wanted && *l == layout) {
                            set_state(&mut label_patch, "success");
                        } else {
                            set_state(&mut label_patch, "pending");
                            let mut paused = Vec::new();
                            for (_, operand) in OPERANDS {
                                let key = format!("{DEPLOY_LABEL_PREFIX}{operand}");
                                if labels.get(&key).map(String::as_str) != Some("false") {
                                    label_patch.insert(key.clone(), PAUSED.into());
                                    paused.push(key);
                                }
                            }
                            memory.run = Some(MigRun {
                                wanted: wanted.clone(),
                                layout,
                                phase: Phase::Pausing { since: now },
                                paused,
                            });
                        }
                    }
                }
            }
            // kwok may report a killed pod Running again (its own status, arriving late): a pod
            // whose GPUs were taken from it stays Failed.
            memory
                .killed_uids
                .retain(|uid| pods.iter().any(|p| p.metadata.uid.as_deref() == Some(uid)));
            for pod in pods.iter().filter(|p| {
                on_node(p, &name)
                    && p.metadata
                        .uid
                        .as_ref()
                        .is_some_and(|u| memory.killed_uids.contains(u))
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Failed")
            }) {
                kill(client, pod, &name).await?;
            }
            let mut killed: Vec<String> = Vec::new();
            let mut outcome = None;
            if let Some(run) = &mut memory.run {
                all_ready = false;
                match run.phase {
                    Phase::Pausing { since } => {
                        let operands_left = pods.iter().any(|p| {
                            on_node(p, &name)
                                && p.metadata.namespace.as_deref() == Some(NAMESPACE)
                                && app_of(p)
                                    .is_some_and(|app| OPERANDS.iter().any(|(a, _)| *a == app))
                        });
                        if wedge == Some("stuck-pending") {
                            // Hangs where gpu-operator#2833 hangs: pending, operands paused.
                        } else if operands_left {
                            if now.duration_since(since) > OPERAND_STOP_TIMEOUT {
                                outcome = Some("failed");
                            } else {
                                wake_at(since + OPERAND_STOP_TIMEOUT);
                            }
                        } else {
                            // Repartitioning takes the GPUs from whatever still runs on them.
                            for pod in &pods {
                                if on_node(pod, &name) && holds_gpus(pod) && !terminal(pod) {
                                    killed.push(kill(client, pod, &name).await?);
                                    memory.killed_uids.extend(pod.metadata.uid.clone());
                                }
                            }
                            let held_enabled =
                                memory.mig.as_ref().is_some_and(|(_, l)| l.is_some());
                            let mode_change = held_enabled != run.layout.is_some();
                            if mode_change && with_reboot {
                                set_state(&mut label_patch, "rebooting");
                                memory.down = true;
                                let until = now + seconds(&annotations, REBOOT_SECONDS, 5.0);
                                run.phase = Phase::Rebooting { until };
                                wake_at(until);
                            } else {
                                let until = now + seconds(&annotations, RECONFIGURE_SECONDS, 0.0);
                                run.phase = Phase::Repartitioning { until };
                                wake_at(until);
                            }
                        }
                    }
                    Phase::Rebooting { until } => {
                        if now >= until {
                            memory.down = false;
                            // Back from the reboot, MIG Manager starts again: pending, then on.
                            set_state(&mut label_patch, "pending");
                            let until = now + seconds(&annotations, RECONFIGURE_SECONDS, 0.0);
                            run.phase = Phase::Repartitioning { until };
                            wake_at(until);
                        } else {
                            wake_at(until);
                        }
                    }
                    Phase::Repartitioning { until } => {
                        if now >= until {
                            memory.mig = Some((run.wanted.clone(), run.layout.clone()));
                            annotation_patch.insert(MIG_APPLIED.into(), run.wanted.clone().into());
                            if wedge == Some("kubelet-restart") {
                                memory.down = true;
                                run.phase = Phase::KubeletDown;
                            } else {
                                outcome = Some("success");
                            }
                        } else {
                            wake_at(until);
                        }
                    }
                    Phase::KubeletDown => {
                        if wedge != Some("kubelet-restart") {
                            memory.down = false;
                            outcome = Some("success");
                        }
                    }
                }
            }
            if let Some(state) = outcome
                && let Some(run) = memory.run.take()
            {
                // MIG Manager restores the operands before it reports the outcome.
                if state == "failed" || wedge != Some("paused-left") {
                    for key in &run.paused {
                        label_patch.insert(key.clone(), "true".into());
                    }
                }
                set_state(&mut label_patch, state);
                memory.advertises_nothing = wedge == Some("zero-after-success");
            }
            if wedge != Some("zero-after-success") {
                memory.advertises_nothing = false;
            }
            if !killed.is_empty() {
                let mut all: Vec<String> = annotations
                    .get(KILLED_PODS)
                    .map(|k| {
                        k.split(',')
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                all.extend(killed);
                annotation_patch.insert(KILLED_PODS.into(), all.join(",").into());
            }

            // The device plugin: (re)loads its config when its pod (re)starts, or its
            // config-manager sees another config named.
            // A DaemonSet controller that lags can run two plugin pods on a node for a moment;
            // it keeps the oldest, and so does the simulator.
            let plugin_pod = pods
                .iter()
                .filter(|p| {
                    on_node(p, &name)
                        && p.metadata.namespace.as_deref() == Some(NAMESPACE)
                        && app_of(p) == Some(DEVICE_PLUGIN_DAEMONSET)
                        && p.metadata.deletion_timestamp.is_none()
                        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                })
                .min_by_key(|p| {
                    (
                        p.metadata.creation_timestamp.clone().map(|t| t.0),
                        p.metadata.name.clone(),
                    )
                });
            let plugin_running = plugin_pod.is_some() && !memory.down;

            if let Some(pod) = plugin_pod {
                let key = labels
                    .get("nvidia.com/device-plugin.config")
                    .cloned()
                    .unwrap_or_else(|| plugin_default.clone());
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let source = (
                    plugin_config.clone().unwrap_or_default(),
                    key.clone(),
                    uid.clone(),
                );
                // Each plugin pod loads the config once, when it starts, and again only when
                // its config-manager sees another config named: a pod seen before keeps what
                // it loaded, whichever pod the simulator looked at in between.
                let known = memory
                    .plugin_pods
                    .get(&uid)
                    .filter(|l| l.source == source)
                    .cloned();
                let loaded = match known {
                    Some(loaded) => loaded,
                    None => {
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
                        let loaded = Loaded { source, config };
                        memory.plugin_pods.insert(uid.clone(), loaded.clone());
                        loaded
                    }
                };
                // Pods gone from the node are forgotten.
                let live: Vec<&str> = pods
                    .iter()
                    .filter(|p| on_node(p, &name))
                    .filter_map(|p| p.metadata.uid.as_deref())
                    .collect();
                memory.plugin_pods.retain(|u, _| live.contains(&u.as_str()));
                memory.plugin = Some(loaded);
                annotation_patch.insert(PLUGIN_POD.into(), uid.into());
            }

            // The operator's own uncordon (gpu-operator#304, #536).
            let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
            let mut uncordon = false;
            if unschedulable {
                let since = *memory.cordoned_since.get_or_insert(now);
                if annotations.contains_key(OPERATOR_UNCORDON_SECONDS) {
                    let at = since + seconds(&annotations, OPERATOR_UNCORDON_SECONDS, 0.0);
                    if now >= at {
                        uncordon = true;
                        memory.cordoned_since = None;
                    } else {
                        wake_at(at);
                    }
                }
            } else {
                memory.cordoned_since = None;
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
            // No plugin running: the kubelet holds no healthy device of the node.
            let zero = !plugin_running || memory.advertises_nothing;

            for (k, v) in &ad.labels {
                label_patch
                    .entry(k.clone())
                    .or_insert_with(|| v.clone().into());
            }
            let current = node
                .status
                .as_ref()
                .and_then(|s| s.allocatable.clone())
                .unwrap_or_default();
            // Resources the node no longer has are removed (a MIG profile that went away).
            let mut resources: serde_json::Map<String, serde_json::Value> = current
                .keys()
                .filter(|k| k.starts_with("nvidia.com/") && !ad.allocatable.contains_key(*k))
                .map(|k| (k.clone(), serde_json::Value::Null))
                .collect();
            for (k, v) in &ad.allocatable {
                let amount = if zero { 0 } else { *v };
                resources.insert(k.clone(), amount.to_string().into());
            }
            // The labels MIG Manager sets are written whatever the store shows: a pass that
            // follows the one that paused the operands may still see them `true`, and a
            // restore dropped as "unchanged" would leave them paused for good.
            label_patch.retain(|k, v| {
                k == MIG_STATE_LABEL
                    || k.starts_with(DEPLOY_LABEL_PREFIX)
                    || labels.get(k).map(|l| serde_json::Value::String(l.clone()))
                        != Some(v.clone())
            });
            annotation_patch.retain(|k, v| {
                annotations
                    .get(k)
                    .map(|l| serde_json::Value::String(l.clone()))
                    != Some(v.clone())
            });
            // A node the simulator holds down is one kwok stops playing (see the module docs).
            let kwok_plays = annotations.contains_key(KWOK_ANNOTATION);
            if memory.down && kwok_plays {
                annotation_patch.insert(KWOK_ANNOTATION.into(), serde_json::Value::Null);
            } else if !memory.down && !kwok_plays {
                annotation_patch.insert(KWOK_ANNOTATION.into(), "fake".into());
            }
            let mut metadata = serde_json::Map::new();
            if !label_patch.is_empty() {
                metadata.insert("labels".into(), label_patch.into());
            }
            if !annotation_patch.is_empty() {
                metadata.insert("annotations".into(), annotation_patch.into());
            }
            let mut body = serde_json::Map::new();
            if !metadata.is_empty() {
                body.insert("metadata".into(), metadata.into());
            }
            if uncordon {
                body.insert("spec".into(), serde_json::json!({"unschedulable": false}));
            }
            if !body.is_empty() {
                node_api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::Value::Object(body)),
                    )
                    .await?;
            }
            let ready = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .map(|c| c.status == "True");
            let mut status = serde_json::Map::new();
            let needs_resources = resources.iter().any(|(k, v)| {
                current
                    .get(k)
                    .map(|q| serde_json::Value::String(q.0.clone()))
                    != Some(v.clone()).filter(|v| !v.is_null())
            });
            if needs_resources {
                status.insert("allocatable".into(), resources.clone().into());
                let capacity: serde_json::Map<String, serde_json::Value> = resources
                    .iter()
                    .map(|(k, v)| {
                        let physical = ad.allocatable.get(k).map(|n| n.to_string().into());
                        (k.clone(), physical.unwrap_or_else(|| v.clone()))
                    })
                    .collect();
                status.insert("capacity".into(), capacity.into());
            }
            if memory.down && ready != Some(false) {
                status.insert(
                    "conditions".into(),
                    serde_json::json!([{
                        "type": "Ready",
                        "status": "False",
                        "reason": "KubeletNotReady",
                        "message": "the kubelet has not come back since it was restarted",
                    }]),
                );
            }
            if !status.is_empty() {
                node_api
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Strategic(serde_json::json!({ "status": status })),
                    )
                    .await?;
            }
        }
        // The operator is ready once each operand's DaemonSet has rolled out on the nodes it
        // selects (paused nodes are not selected).
        for ds in stores.daemon_sets.state() {
            let operand = ds.metadata.namespace.as_deref() == Some(NAMESPACE)
                && OPERANDS
                    .iter()
                    .any(|(n, _)| ds.metadata.name.as_deref() == Some(*n));
            let Some(status) = ds.status.as_ref().filter(|_| operand) else {
                continue;
            };
            let desired = status.desired_number_scheduled;
            if status.observed_generation != ds.metadata.generation
                || status.number_available.unwrap_or(0) != desired
                || status.updated_number_scheduled.unwrap_or(0) != desired
            {
                all_ready = false;
            }
        }
        let state = if all_ready { "ready" } else { "notReady" };
        if str_at(&policy.data, &["status", "state"]) != Some(state) {
            let patch = serde_json::json!({ "status": { "state": state } });
            Api::<DynamicObject>::all_with(client.clone(), &cluster_policy_resource())
                .patch_status(
                    "cluster-policy",
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await
                .ok();
        }
        Ok(next)
    }
}
