//! The GPU model: from the facts of a plan (what the stack sets) and of the live cluster (what
//! is there), each GPU node's and pool's physical GPUs, the operator settings and configs that
//! reach it before and after the plan, and what its device plugin will advertise.

use crate::catalog;
use crate::mig::{self, Layout};
use crate::sharing::{self, PluginConfig};
use gpustack_protocol::nvidia::{
    DEVICE_PLUGIN_CONFIG_LABEL, GPU_COUNT_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE,
};
use gpustack_protocol::{
    ClusterFact, ConfigMapFact, DeviceRequestFact, DraDriverFact, GpuFact, NodeFact, OperatorFact,
    OperatorSource, Path, PathStep, PoolFact,
};
use serde_json::Value as Json;
use std::collections::BTreeMap;

pub(crate) const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";
pub(crate) const MIG_STATE_LABEL: &str = "nvidia.com/mig.config.state";
pub(crate) const GPU_MEMORY_LABEL: &str = "nvidia.com/gpu.memory";
pub(crate) const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
pub(crate) const DRA_SOURCE: &str = "DRA ResourceSlices";
pub(crate) const DEVICE_PLUGIN_OPT_OUT: &str = "nvidia.com/gpu.deploy.device-plugin";
const DEFAULT_NAMESPACE: &str = "gpu-operator";
const DEFAULT_MIG_CONFIG: &str = "default-mig-parted-config";

/// A fact with the resource instance that reported it.
#[derive(Debug, Clone, Copy)]
pub struct Sourced<'a> {
    pub address: &'a str,
    pub fact: &'a GpuFact,
}

/// Where in the stack something is set: a resource instance and a path into its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub address: String,
    pub path: Path,
}

impl Origin {
    pub(crate) fn new(address: &str, path: &[PathStep]) -> Self {
        Self {
            address: address.to_owned(),
            path: path.to_vec(),
        }
    }

    pub(crate) fn join(&self, more: &[PathStep]) -> Self {
        Self {
            address: self.address.clone(),
            path: [self.path.as_slice(), more].concat(),
        }
    }
}

pub(crate) fn key(k: &str) -> PathStep {
    PathStep::Key(k.to_owned())
}

/// A node's physical GPUs and where gpustack learnt them.
#[derive(Debug, Clone, PartialEq)]
pub struct Physical {
    pub count: u32,
    pub model: String,
    pub memory_gb: u32,
    /// The product as the node names it (`NVIDIA-H100-80GB-HBM3`), or the model.
    pub product: String,
    /// `GFD labels`, `DRA ResourceSlices`, `instance type X, built-in table`.
    pub source: String,
}

impl Physical {
    pub(crate) fn from_node(node: &NodeFact) -> Option<Self> {
        let labels = &node.labels;
        if let (Some(count), Some(product)) = (
            labels
                .get(GPU_COUNT_LABEL)
                .and_then(|c| c.parse::<u32>().ok()),
            labels.get(GPU_PRODUCT_LABEL),
        ) {
            let memory = labels
                .get(GPU_MEMORY_LABEL)
                .and_then(|m| m.parse::<u64>().ok());
            if let Some((model, memory_gb)) = catalog::product(product, memory) {
                return Some(Self {
                    count,
                    model,
                    memory_gb,
                    product: product
                        .trim_end_matches("-SHARED")
                        .split("-MIG-")
                        .next()
                        .unwrap_or(product)
                        .to_owned(),
                    source: "GFD labels".into(),
                });
            }
        }
        let gpus: Vec<_> = node
            .dra_devices
            .iter()
            .filter(|d| d.kind == "gpu")
            .collect();
        if let Some(first) = gpus.first()
            && let Some((model, memory_gb)) = catalog::product(&first.product, first.memory_mib)
        {
            return Some(Self {
                count: u32::try_from(gpus.len()).unwrap_or(u32::MAX),
                model,
                memory_gb,
                product: first.product.replace(' ', "-"),
                source: DRA_SOURCE.into(),
            });
        }
        let instance_type = labels.get(INSTANCE_TYPE_LABEL)?;
        let gpus = catalog::gpus(instance_type)?;
        Some(Self {
            count: gpus.count,
            product: gpus.model.clone(),
            model: gpus.model,
            memory_gb: gpus.memory_gb,
            source: format!("instance type {instance_type}, {}", catalog::BUILT_IN),
        })
    }
}

/// One setting with the fact that set it last.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Set<T> {
    pub value: T,
    pub origin: Option<Origin>,
}

/// The GPU Operator's settings on one side of the plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OperatorSettings {
    pub present: bool,
    pub device_plugin: bool,
    pub config: Option<Set<String>>,
    pub default_key: Option<Set<String>>,
    pub mig_strategy: String,
    pub mig_manager: bool,
    pub mig_config: Option<Set<String>>,
    pub mig_default: Option<Set<String>>,
    pub namespace: String,
}

impl OperatorSettings {
    fn absent(namespace: &str) -> Self {
        Self {
            present: false,
            device_plugin: true,
            config: None,
            default_key: None,
            mig_strategy: "single".into(),
            mig_manager: true,
            mig_config: None,
            mig_default: None,
            namespace: namespace.to_owned(),
        }
    }

    /// Lays the fields `spec` sets over these; `origin`: where `spec` is in the stack.
    /// Conflicting pointers are reported to `conflicts`.
    fn overlay(&mut self, spec: &Json, origin: Option<&Origin>, conflicts: &mut Vec<Conflict>) {
        self.present = true;
        let text = |pointer: &str| {
            spec.pointer(pointer)
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let at = |steps: &[&str]| {
            origin.map(|o| o.join(&steps.iter().map(|s| key(s)).collect::<Vec<_>>()))
        };
        if let Some(enabled) = spec
            .pointer("/devicePlugin/enabled")
            .and_then(Json::as_bool)
        {
            self.device_plugin = enabled;
        }
        if let Some(enabled) = spec.pointer("/migManager/enabled").and_then(Json::as_bool) {
            self.mig_manager = enabled;
        }
        if let Some(strategy) = text("/mig/strategy") {
            self.mig_strategy = strategy;
        }
        let mut pointer =
            |slot: &mut Option<Set<String>>, json: &str, steps: &[&str], what: &'static str| {
                if let Some(value) = text(json) {
                    let origin = at(steps);
                    if let Some(previous) = slot.as_ref()
                        && previous.value != value
                        && let (Some(first), Some(second)) = (&previous.origin, &origin)
                    {
                        conflicts.push(Conflict {
                            what,
                            first: (previous.value.clone(), first.clone()),
                            second: (value.clone(), second.clone()),
                        });
                    }
                    *slot = Some(Set { value, origin });
                }
            };
        pointer(
            &mut self.config,
            "/devicePlugin/config/name",
            &["devicePlugin", "config", "name"],
            "devicePlugin.config.name",
        );
        pointer(
            &mut self.default_key,
            "/devicePlugin/config/default",
            &["devicePlugin", "config", "default"],
            "devicePlugin.config.default",
        );
        pointer(
            &mut self.mig_config,
            "/migManager/config/name",
            &["migManager", "config", "name"],
            "migManager.config.name",
        );
        pointer(
            &mut self.mig_default,
            "/migManager/config/default",
            &["migManager", "config", "default"],
            "migManager.config.default",
        );
    }

    pub(crate) fn mig_config_name(&self) -> &str {
        self.mig_config
            .as_ref()
            .map_or(DEFAULT_MIG_CONFIG, |s| s.value.as_str())
    }
}

/// Two parts of the stack that point one ClusterPolicy field at different things.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Conflict {
    pub what: &'static str,
    pub first: (String, Origin),
    pub second: (String, Origin),
}

/// A ConfigMap's keys, with where each key's text is set in the stack (if it is).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ConfigMap {
    pub data: BTreeMap<String, String>,
    pub origin: Option<Origin>,
}

/// Everything on one side of the plan (before or after) that decides what nodes advertise.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    pub settings: OperatorSettings,
    /// ConfigMaps of the operator's namespace by name.
    pub config_maps: BTreeMap<String, ConfigMap>,
}

/// A node as the model sees it.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub live: NodeFact,
    pub physical: Option<Physical>,
    pub labels_after: BTreeMap<String, String>,
    /// The stack's resources that set this node's labels, by label.
    pub label_origins: BTreeMap<String, Origin>,
}

/// What a node's device plugin advertises under one side's configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prediction {
    pub resources: BTreeMap<String, f64>,
    /// `time-slicing ×10`, `MIG all-1g.10gb (mixed)`.
    pub how: Vec<String>,
    /// The config and key the plugin reads.
    pub config_key: Option<(String, String)>,
    pub plugin: Option<PluginConfig>,
    pub mig: Option<(String, Layout, mig::Origin)>,
}

/// Everything gathered from the facts.
#[derive(Debug, Clone)]
pub struct Model {
    pub(crate) before: Side,
    pub(crate) after: Side,
    pub(crate) nodes: Vec<Node>,
    pub(crate) pools: Vec<(String, PoolFact)>,
    pub(crate) ceilings: Vec<(String, gpustack_protocol::CeilingFact)>,
    pub(crate) config_maps: Vec<(String, ConfigMapFact)>,
    pub(crate) operators: Vec<(String, OperatorFact)>,
    pub(crate) conflicts: Vec<Conflict>,
    /// Whether any fact came from a live cluster (else nodes are unknown, not absent).
    pub(crate) cluster_seen: bool,
    /// Parts of the live cluster that could not be read, with the object that tried.
    pub(crate) unread: Vec<(String, String)>,
    /// Patches of a ClusterPolicy that is neither live nor planned: they fail at apply.
    pub(crate) patches_without_policy: Vec<Origin>,
    /// How a node-by-node rollout takes each node it names.
    pub(crate) rollouts: BTreeMap<String, String>,
    /// Nodes a rollout left part-way: the rollout's address and the node's step.
    pub(crate) unfinished: BTreeMap<String, (String, String)>,
    /// What each GPU of a node is to advertise once a rollout is done with it
    /// (`expect_per_gpu`), with the rollout's address.
    pub(crate) rollout_expectations: BTreeMap<String, (String, BTreeMap<String, f64>)>,
    /// DeviceClasses, claims and DRA driver releases, planned and live.
    pub(crate) dra: DraInputs,
}

impl Model {
    // Long by design: one pass over the facts with one arm per fact kind, each arm a few lines
    // that file the fact where the model reads it; the rest is the order the model needs
    // (configs before nodes, nodes before pools), which reads best in one place.
    pub fn build(facts: &[Sourced<'_>]) -> Self {
        let mut cluster = ClusterFact::default();
        let mut live_nodes: BTreeMap<String, NodeFact> = BTreeMap::new();
        let mut unread = Vec::new();
        let mut cluster_seen = false;
        let mut pools = Vec::new();
        let mut ceilings = Vec::new();
        let mut config_maps = Vec::new();
        let mut operators = Vec::new();
        let mut labels = Vec::new();
        let mut rollouts = BTreeMap::new();
        let mut unfinished = BTreeMap::new();
        let mut rollout_expectations = BTreeMap::new();
        let mut dra = DraInputs::default();
        for Sourced { address, fact } in facts {
            let address = (*address).to_owned();
            match fact {
                GpuFact::Cluster(c) => {
                    cluster_seen = true;
                    for what in &c.unread {
                        if !unread.iter().any(|(_, w)| w == what) {
                            unread.push((address.clone(), what.clone()));
                        }
                    }
                    // Every object of one provider reports the same snapshot: merge by name.
                    for node in &c.nodes {
                        live_nodes.insert(node.name.clone(), node.clone());
                    }
                    cluster.policy = cluster.policy.take().or_else(|| c.policy.clone());
                    cluster.operator_namespace = cluster
                        .operator_namespace
                        .take()
                        .or_else(|| c.operator_namespace.clone());
                    for (name, data) in &c.config_maps {
                        cluster.config_maps.insert(name.clone(), data.clone());
                    }
                    for (name, spec) in &c.device_classes {
                        dra.live_classes.insert(name.clone(), spec.clone());
                    }
                    dra.live_read |= !c.unread.iter().any(|u| u.starts_with("DRA"));
                    dra.live_gpu_cluster = dra
                        .live_gpu_cluster
                        .take()
                        .or_else(|| c.gpu_cluster.clone());
                }
                GpuFact::DeviceRequest(r) => dra.requests.push((address, r.clone())),
                GpuFact::DraDriver(d) => dra.drivers.push((address, d.clone())),
                GpuFact::Pool(p) => pools.push((address, p.clone())),
                GpuFact::Ceiling(c) => ceilings.push((address, c.clone())),
                GpuFact::ConfigMap(c) => config_maps.push((address, c.clone())),
                GpuFact::Operator(o) => operators.push((address, o.clone())),
                GpuFact::NodeLabels(l) => labels.push((address, l.clone())),
                GpuFact::Rollout(r) => {
                    for node in &r.nodes {
                        rollouts.insert(node.clone(), r.how.clone());
                    }
                    for (node, step) in &r.unfinished {
                        unfinished.insert(node.clone(), (address.clone(), step.clone()));
                    }
                    if !r.expect_per_gpu.is_empty() {
                        for node in &r.nodes {
                            rollout_expectations
                                .insert(node.clone(), (address.clone(), r.expect_per_gpu.clone()));
                        }
                    }
                }
            }
        }
        cluster.nodes = live_nodes.into_values().collect();
        let namespace = cluster
            .operator_namespace
            .clone()
            .or_else(|| operators.iter().find_map(|(_, o)| o.namespace.clone()))
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());

        // Before: what is live.
        let mut ignored = Vec::new();
        let mut before = Side {
            settings: OperatorSettings::absent(&namespace),
            config_maps: cluster
                .config_maps
                .iter()
                .map(|(name, data)| {
                    (
                        name.clone(),
                        ConfigMap {
                            data: data.clone(),
                            origin: None,
                        },
                    )
                })
                .collect(),
        };
        if let Some(policy) = &cluster.policy {
            before.settings.overlay(policy, None, &mut ignored);
        }
        for (_, c) in &config_maps {
            if c.namespace == namespace
                && let Some(data) = &c.data_before
            {
                before.config_maps.entry(c.name.clone()).or_default().data = data.clone();
            }
        }

        // After: the live settings with what the stack sets laid over them, the chart first,
        // then whole ClusterPolicies, then patches, as apply leaves them.
        let mut conflicts = Vec::new();
        let mut patches_without_policy = Vec::new();
        let mut after = before.clone();
        let order = |o: &OperatorFact| match o.source {
            OperatorSource::HelmValues => 0,
            OperatorSource::ClusterPolicy => 1,
            OperatorSource::ClusterPolicyPatch => 2,
        };
        let mut ordered: Vec<&(String, OperatorFact)> = operators.iter().collect();
        ordered.sort_by_key(|(_, o)| order(o));
        let removed = ordered
            .iter()
            .any(|(_, o)| o.source != OperatorSource::ClusterPolicyPatch && o.settings.is_none());
        if removed {
            after.settings = OperatorSettings::absent(&namespace);
        }
        for (address, o) in ordered {
            let Some(settings) = &o.settings else {
                continue;
            };
            if o.source == OperatorSource::HelmValues {
                let deploys = |cr: &str, default: bool| {
                    settings
                        .pointer(&format!("/{cr}/deployCR"))
                        .and_then(Json::as_bool)
                        .unwrap_or(default)
                };
                let cluster_policy = deploys("clusterPolicy", true);
                if deploys("gpuCluster", false) {
                    dra.chart_gpu_clusters.push(ChartGpuCluster {
                        origin: Origin::new(address, &o.attribute)
                            .join(&[key("gpuCluster"), key("deployCR")]),
                        dra_driver: settings.get("draDriver").cloned().unwrap_or(Json::Null),
                        cluster_policy_too: cluster_policy,
                    });
                }
                if !cluster_policy {
                    // The release renders no ClusterPolicy: it sets nothing of one.
                    continue;
                }
            }
            if o.source == OperatorSource::ClusterPolicyPatch && !after.settings.present {
                // A patch of a ClusterPolicy that nothing creates fails at apply; it sets nothing.
                patches_without_policy.push(Origin::new(address, &o.attribute));
                continue;
            }
            let origin = Origin::new(address, &o.attribute);
            after
                .settings
                .overlay(settings, Some(&origin), &mut conflicts);
            // The chart makes the device plugin's and the MIG manager's ConfigMaps itself
            // from `config.create` and `config.data`.
            for component in ["devicePlugin", "migManager"] {
                let config = settings.get(component).and_then(|c| c.get("config"));
                if o.source == OperatorSource::HelmValues
                    && let Some(config) = config
                    && config.get("create").and_then(Json::as_bool) == Some(true)
                    && let Some(name) = config.get("name").and_then(Json::as_str)
                    && let Some(data) = config.get("data").and_then(Json::as_object)
                    && !data.is_empty()
                {
                    after.config_maps.insert(
                        name.to_owned(),
                        ConfigMap {
                            data: data
                                .iter()
                                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                                .collect(),
                            origin: Some(origin.join(&[
                                key(component),
                                key("config"),
                                key("data"),
                            ])),
                        },
                    );
                }
            }
        }
        for (address, c) in &config_maps {
            if c.namespace != namespace {
                continue;
            }
            match &c.data {
                Some(data) => {
                    after.config_maps.insert(
                        c.name.clone(),
                        ConfigMap {
                            data: data.clone(),
                            origin: Some(Origin::new(address, &c.attribute)),
                        },
                    );
                }
                None => {
                    after.config_maps.remove(&c.name);
                }
            }
        }

        let nodes = cluster
            .nodes
            .iter()
            .map(|live| {
                let mut labels_after = live.labels.clone();
                let mut label_origins = BTreeMap::new();
                for (address, l) in labels.iter().filter(|(_, l)| l.node == live.name) {
                    for gone in l
                        .labels_before
                        .keys()
                        .filter(|k| !l.labels.contains_key(*k))
                    {
                        labels_after.remove(gone);
                        label_origins.insert(gone.clone(), Origin::new(address, &l.attribute));
                    }
                    for (k, v) in &l.labels {
                        labels_after.insert(k.clone(), v.clone());
                        label_origins.insert(
                            k.clone(),
                            Origin::new(address, &l.attribute).join(&[key(k)]),
                        );
                    }
                }
                Node {
                    physical: Physical::from_node(live),
                    live: live.clone(),
                    labels_after,
                    label_origins,
                }
            })
            .collect();
        Self {
            before,
            after,
            nodes,
            pools,
            ceilings,
            config_maps,
            operators,
            conflicts,
            cluster_seen,
            unread,
            patches_without_policy,
            rollouts,
            unfinished,
            rollout_expectations,
            dra,
        }
    }
}

impl Side {
    /// The device-plugin config a node with `labels` reads: (ConfigMap, key, its text).
    pub(crate) fn plugin_config(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Option<(String, String, Option<&str>)> {
        let name = &self.settings.config.as_ref()?.value;
        let data = self.config_maps.get(name).map(|c| &c.data);
        let key = labels
            .get(DEVICE_PLUGIN_CONFIG_LABEL)
            .cloned()
            .or_else(|| self.settings.default_key.as_ref().map(|s| s.value.clone()))
            .or_else(|| {
                let data = data?;
                (data.len() == 1).then(|| data.keys().next().cloned())?
            })?;
        let text = data.and_then(|d| d.get(&key)).map(String::as_str);
        Some((name.clone(), key, text))
    }

    /// The MIG geometry a node with `labels` gets on `physical`, and its layout.
    pub(crate) fn mig(
        &self,
        labels: &BTreeMap<String, String>,
        physical: &Physical,
    ) -> Option<(String, Option<Layout>, mig::Origin)> {
        if !self.settings.mig_manager {
            return None;
        }
        // The operator gives the default geometry to MIG-capable nodes only.
        let geometry = labels.get(MIG_CONFIG_LABEL).cloned().or_else(|| {
            catalog::mig_capable(&physical.model)
                .then(|| self.settings.mig_default.as_ref().map(|s| s.value.clone()))?
        })?;
        let name = self.settings.mig_config_name();
        if let Some(set) = self
            .config_maps
            .get(name)
            .and_then(|c| c.data.get("config.yaml"))
            .and_then(|t| mig::ConfigSet::parse(t))
        {
            let layout = set.layout(&geometry, &physical.model, physical.memory_gb);
            return Some((geometry, layout, mig::Origin::ConfigMap));
        }
        let layout = mig::built_in(&geometry, &physical.model, physical.memory_gb);
        Some((geometry, layout, mig::Origin::BuiltIn))
    }

    /// Whether the operator's device plugin runs on a node with `labels`.
    pub(crate) fn plugin_runs(&self, labels: &BTreeMap<String, String>) -> bool {
        self.settings.present && self.plugin_off(labels).is_none()
    }

    /// Why no device plugin of the operator runs on a node with `labels` (the operator is
    /// there), if none does.
    pub(crate) fn plugin_off(&self, labels: &BTreeMap<String, String>) -> Option<&'static str> {
        if !self.settings.present {
            None
        } else if !self.settings.device_plugin {
            Some("devicePlugin.enabled is false")
        } else if labels.get(DEVICE_PLUGIN_OPT_OUT).map(String::as_str) == Some("false") {
            Some(
                "the node opts out of the device plugin (nvidia.com/gpu.deploy.device-plugin=false)",
            )
        } else {
            None
        }
    }

    /// What the device plugin of a node with `labels` and `physical` GPUs advertises; `None`
    /// when no device plugin of the operator runs there, or what it reads cannot be known.
    pub(crate) fn predict(
        &self,
        labels: &BTreeMap<String, String>,
        physical: &Physical,
    ) -> Option<Prediction> {
        let settings = &self.settings;
        if !settings.present
            || !settings.device_plugin
            || labels.get(DEVICE_PLUGIN_OPT_OUT).map(String::as_str) == Some("false")
        {
            return None;
        }
        let count = f64::from(physical.count);
        let mut how = Vec::new();
        let mut resources = BTreeMap::new();
        let mig = self.mig(labels, physical);
        let mut mig_taken = None;
        match &mig {
            Some((geometry, Some(Layout::Enabled(devices)), origin))
                if settings.mig_strategy != "none" =>
            {
                let from = match origin {
                    mig::Origin::ConfigMap => String::new(),
                    mig::Origin::BuiltIn => format!(", {} geometry", catalog::BUILT_IN),
                };
                how.push(format!("MIG {geometry} ({}{from})", settings.mig_strategy));
                if settings.mig_strategy == "mixed" {
                    resources.insert(GPU_RESOURCE.to_owned(), 0.0);
                    for (profile, n) in devices {
                        *resources.entry(mig::resource(profile)).or_insert(0.0) +=
                            count * f64::from(*n);
                    }
                } else {
                    let per_gpu: u32 = devices.values().sum();
                    resources.insert(GPU_RESOURCE.to_owned(), count * f64::from(per_gpu));
                }
                mig_taken = Some((
                    geometry.clone(),
                    Layout::Enabled(devices.clone()),
                    origin.clone(),
                ));
            }
            Some((_, None, _)) => return None,
            Some((geometry, Some(layout), origin)) => {
                resources.insert(GPU_RESOURCE.to_owned(), count);
                mig_taken = Some((geometry.clone(), layout.clone(), origin.clone()));
            }
            None => {
                resources.insert(GPU_RESOURCE.to_owned(), count);
            }
        }
        let mut plugin = None;
        let config_key = match self.plugin_config(labels) {
            Some((name, key, Some(text))) => {
                let (config, _) = sharing::parse(text)?;
                for shared in &config.shared {
                    if let Some(amount) = resources.get(&shared.resource).copied() {
                        let replicated = amount * shared.replicas;
                        if shared.rename {
                            resources.insert(shared.resource.clone(), 0.0);
                            resources.insert(format!("{}.shared", shared.resource), replicated);
                        } else {
                            resources.insert(shared.resource.clone(), replicated);
                        }
                    }
                }
                if config.strategy.is_some() {
                    how.insert(0, config.describe());
                }
                plugin = Some(config);
                Some((name, key))
            }
            // A key the config lacks: the plugin fails to start on that node.
            Some((_, _, None)) => return None,
            None => None,
        };
        if how.is_empty() {
            how.push("no sharing".into());
        }
        Some(Prediction {
            resources,
            how,
            config_key,
            plugin,
            mig: mig_taken,
        })
    }
}

/// The DRA side of the stack, gathered with the rest of the model.
#[derive(Debug, Clone, Default)]
pub(crate) struct DraInputs {
    pub requests: Vec<(String, DeviceRequestFact)>,
    pub drivers: Vec<(String, DraDriverFact)>,
    /// The live DeviceClasses by name.
    pub live_classes: BTreeMap<String, Json>,
    /// Whether the live DRA objects were read (else absent means unknown).
    pub live_read: bool,
    /// The live GPUCluster, if any.
    pub live_gpu_cluster: Option<String>,
    /// GPUClusters the GPU Operator chart's values deploy (`gpuCluster.deployCR`), with
    /// their `draDriver` settings, and whether the same values keep the ClusterPolicy.
    pub chart_gpu_clusters: Vec<ChartGpuCluster>,
}

#[derive(Debug, Clone)]
pub(crate) struct ChartGpuCluster {
    pub origin: Origin,
    pub dra_driver: Json,
    pub cluster_policy_too: bool,
}
