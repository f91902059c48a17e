//! The checks on how a stack runs NVIDIA's DRA driver (GPU-FACTS, "Dynamic Resource
//! Allocation"), each with its source:
//!
//! - the driver's feature gates that its plugins refuse together at start
//!   (`pkg/featuregates/featuregates.go`, `ValidateFeatureGates`): the kubelet plugin
//!   crash-loops;
//! - the driver chart's own refusal of `resources.gpus.enabled` without
//!   `gpuResourcesEnabledOverride` (`templates/validation.yaml`);
//! - the device plugin and the DRA driver on one node: the scheduler cannot see one's
//!   allocations in the other (the chart's note on KEP 5004);
//! - a GPUCluster and a ClusterPolicy in one cluster (GPU Operator 26.7's
//!   `templates/validations.yaml`: "only one CR can exist"; no in-place migration);
//! - GKE's own GPU sharing or MIG on a DRA pool (GKE's DRA documentation), and Karpenter's
//!   dynamic provisioning, which does not provision for pods that ask for GPUs only through
//!   claims (aws/karpenter-provider-aws#9519).

use crate::model::{DEVICE_PLUGIN_OPT_OUT, Model, Origin, key};
use crate::{Finding, Severity};
use gpustack_protocol::{DeviceRequestKind, DraDriverSource};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The driver's feature-gate rules: (gate, other gate, the other must be on (`requires`) or
/// off (`excludes`)).
const GATE_RULES: &[(&str, &str, bool)] = &[
    ("DynamicMIG", "PassthroughSupport", false),
    ("DynamicMIG", "NVMLDeviceHealthCheck", false),
    ("DynamicMIG", "MPSSupport", false),
    ("PassthroughSupport", "NVMLDeviceHealthCheck", false),
    ("DeviceMetadata", "PassthroughSupport", true),
    ("ComputeDomainCliques", "IMEXDaemonsWithDNSNames", true),
];

/// The gates on by default in the driver's release.
const DEFAULT_ON: &[&str] = &[
    "IMEXDaemonsWithDNSNames",
    "ComputeDomainCliques",
    "CrashOnNVLinkFabricErrors",
];

/// One way the stack runs the driver: its settings in the chart's shape, and where they are.
struct Driver<'a> {
    what: String,
    settings: &'a Json,
    origin: Origin,
    source: DraDriverSource,
}

fn error(origin: &Origin, summary: &str, detail: String) -> Finding {
    Finding {
        address: origin.address.clone(),
        path: origin.path.clone(),
        severity: Severity::Error,
        summary: summary.into(),
        detail,
    }
}

fn drivers(model: &Model) -> Vec<Driver<'_>> {
    let mut drivers: Vec<Driver<'_>> = model
        .dra
        .drivers
        .iter()
        .filter_map(|(address, d)| {
            Some(Driver {
                what: match d.source {
                    DraDriverSource::Chart => format!("the DRA driver release {}", d.release),
                    DraDriverSource::GpuCluster => d.release.clone(),
                },
                settings: d.values.as_ref()?,
                origin: Origin::new(address, &d.attribute),
                source: d.source,
            })
        })
        .collect();
    for planned in &model.dra.chart_gpu_clusters {
        let mut origin = planned.origin.clone();
        origin.path.truncate(origin.path.len().saturating_sub(2));
        drivers.push(Driver {
            what: format!("the GPUCluster of {}", planned.origin.address),
            settings: &planned.dra_driver,
            origin: origin.join(&[key("draDriver")]),
            source: DraDriverSource::GpuCluster,
        });
    }
    drivers
}

pub(crate) fn run(model: &Model, findings: &mut Vec<Finding>) {
    let drivers = drivers(model);
    for driver in &drivers {
        feature_gates(driver, findings);
        if driver.source == DraDriverSource::Chart {
            let gpus = driver
                .settings
                .pointer("/resources/gpus/enabled")
                .and_then(Json::as_bool)
                .unwrap_or(true);
            let overridden = driver
                .settings
                .get("gpuResourcesEnabledOverride")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            if gpus && !overridden {
                findings.push(error(
                    &driver.origin,
                    "The DRA driver chart refuses to install",
                    format!(
                        "{} serves GPUs (resources.gpus.enabled, true by default) without gpuResourcesEnabledOverride = true: the chart fails the install, because the driver must not run beside the device plugin on one node. Turn the device plugin off on the nodes the driver serves, then set gpuResourcesEnabledOverride = true.",
                        driver.what
                    ),
                ));
            }
        }
        beside_the_device_plugin(model, driver, findings);
    }
    gpu_cluster_and_cluster_policy(model, &drivers, findings);
    clouds(model, !drivers.is_empty(), findings);
}

fn feature_gates(driver: &Driver<'_>, findings: &mut Vec<Finding>) {
    let gates: BTreeMap<&str, bool> = driver
        .settings
        .get("featureGates")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_bool()?)))
        .collect();
    let on = |gate: &str| {
        gates
            .get(gate)
            .copied()
            .unwrap_or(DEFAULT_ON.contains(&gate))
    };
    for (gate, other, requires) in GATE_RULES {
        if !on(gate) || on(other) == *requires {
            continue;
        }
        // Blame the gate the stack set; a default that the stack did not touch is named.
        let at = if gates.contains_key(gate) {
            gate
        } else {
            other
        };
        let message = if *requires {
            format!("feature gate {gate} requires {other} to also be enabled")
        } else {
            format!("feature gate {gate} is currently mutually exclusive with {other}")
        };
        findings.push(error(
            &driver
                .origin
                .join(&[key("featureGates"), key(at)]),
            "DRA driver feature gates refused together",
            format!(
                "{} sets feature gates the driver refuses at start (\"{message}\"): its kubelet plugin crash-loops and no node publishes devices.",
                driver.what
            ),
        ));
    }
}

/// Nodes and pools the driver's kubelet plugin would serve where the device plugin runs too.
/// The node selector of the driver's kubelet plugin (a GPUCluster's: none, every GPU node).
fn plugin_selector(driver: &Driver<'_>) -> BTreeMap<String, String> {
    driver
        .settings
        .pointer("/kubeletPlugin/nodeSelector")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

/// The planned DRA driver whose kubelet plugin will run on a GPU node with `labels`, if one
/// will (`the DRA driver release nvidia-dra-driver-gpu`).
pub(crate) fn serving(model: &Model, labels: &BTreeMap<String, String>) -> Option<String> {
    drivers(model)
        .into_iter()
        .find(|driver| {
            plugin_selector(driver)
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        })
        .map(|driver| driver.what)
}

/// Whether the planned DRA driver serving a node with `labels` runs with its DynamicMIG gate.
pub(crate) fn dynamic_mig(model: &Model, labels: &BTreeMap<String, String>) -> bool {
    drivers(model).into_iter().any(|driver| {
        plugin_selector(&driver)
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && driver
                .settings
                .pointer("/featureGates/DynamicMIG")
                .and_then(Json::as_bool)
                .unwrap_or(false)
    })
}

fn beside_the_device_plugin(model: &Model, driver: &Driver<'_>, findings: &mut Vec<Finding>) {
    let selector = plugin_selector(driver);
    let selected =
        |labels: &BTreeMap<String, String>| selector.iter().all(|(k, v)| labels.get(k) == Some(v));
    let operator_plugin = |labels: &BTreeMap<String, String>| model.after.plugin_runs(labels);
    let mut both = Vec::new();
    for (_, pool) in &model.pools {
        let Some(after) = &pool.after else { continue };
        if after.gpus.is_none() || !selected(&pool.node_labels) {
            continue;
        }
        let managed = pool
            .managed_gpu_software
            .as_ref()
            .filter(|m| m.device_plugin)
            .map(|m| m.what.clone());
        if let Some(plugin) = managed.or_else(|| {
            operator_plugin(&pool.node_labels).then(|| "the GPU Operator's device plugin".into())
        }) {
            both.push(format!("{} {} ({plugin})", pool.kind, pool.name));
        }
    }
    for node in &model.nodes {
        // A node already publishing DRA devices is the model's own check's (checks.rs).
        if node.physical.is_none()
            || !node.live.dra_devices.is_empty()
            || !selected(&node.labels_after)
            || !operator_plugin(&node.labels_after)
        {
            continue;
        }
        both.push(format!(
            "node {} (the GPU Operator's device plugin)",
            node.live.name
        ));
    }
    if both.is_empty() {
        return;
    }
    let at = if selector.is_empty() {
        driver.origin.clone()
    } else {
        driver
            .origin
            .join(&[key("kubeletPlugin"), key("nodeSelector")])
    };
    findings.push(error(
        &at,
        "The device plugin and the DRA driver on one node",
        format!(
            "{} runs its kubelet plugin on every GPU node its node selector allows, and the device plugin serves some of them too: {}. The scheduler cannot see one's allocations in the other, so a GPU can be handed out twice. Give those nodes nvidia.com/gpu.deploy.device-plugin=false (or no managed device plugin), or keep the driver off them with kubeletPlugin.nodeSelector.",
            driver.what,
            both.join(", ")
        ),
    ));
}

fn gpu_cluster_and_cluster_policy(
    model: &Model,
    drivers: &[Driver<'_>],
    findings: &mut Vec<Finding>,
) {
    for planned in &model.dra.chart_gpu_clusters {
        if planned.cluster_policy_too {
            findings.push(error(
                &planned.origin,
                "A GPUCluster and a ClusterPolicy in one cluster",
                "The GPU Operator chart's values deploy a GPUCluster (gpuCluster.deployCR = true) and keep the ClusterPolicy (clusterPolicy.deployCR, true by default): the chart fails (\"clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true; only one CR can exist\"). Set clusterPolicy.deployCR = false.".into(),
            ));
        }
    }
    let planned_policy = model
        .operators
        .iter()
        .find(|(_, o)| {
            o.settings.is_some()
                && o.source != gpustack_protocol::OperatorSource::ClusterPolicyPatch
        })
        .filter(|_| model.after.settings.present);
    let live_policy = model.before.settings.present;
    for driver in drivers
        .iter()
        .filter(|d| d.source == DraDriverSource::GpuCluster)
    {
        let other = if live_policy {
            Some("the cluster runs a ClusterPolicy (cluster-policy)".to_owned())
        } else {
            planned_policy.map(|(address, _)| format!("{address} plans a ClusterPolicy"))
        };
        if let Some(other) = other {
            findings.push(error(
                &driver.origin,
                "A GPUCluster and a ClusterPolicy in one cluster",
                format!(
                    "{} runs GPU Operator's DRA stack, but {other}: a cluster has a GPUCluster or a ClusterPolicy, never both, and there is no in-place migration. Remove the ClusterPolicy's operator first (its pods leave the nodes), then apply the GPUCluster.",
                    driver.what
                ),
            ));
        }
    }
    if let (Some(live), Some((address, operator))) = (&model.dra.live_gpu_cluster, planned_policy) {
        findings.push(error(
            &Origin::new(address, &operator.attribute),
            "A GPUCluster and a ClusterPolicy in one cluster",
            format!(
                "This plans a ClusterPolicy, but the cluster runs GPU Operator's DRA stack (GPUCluster {live}): a cluster has one or the other, never both, and there is no in-place migration."
            ),
        ));
    }
}

fn clouds(model: &Model, driver_runs: bool, findings: &mut Vec<Finding>) {
    let claims = model
        .dra
        .requests
        .iter()
        .any(|(_, r)| r.kind != DeviceRequestKind::DeviceClass && r.spec.is_some());
    if driver_runs {
        for (address, pool) in &model.pools {
            let Some(after) = &pool.after else { continue };
            let Some(sharing) = &after.sharing else {
                continue;
            };
            let dra = pool
                .node_labels
                .get(DEVICE_PLUGIN_OPT_OUT)
                .is_some_and(|v| v == "false");
            if !dra {
                continue;
            }
            let what = match (&sharing.mig_profile, &sharing.clients) {
                (Some(profile), _) => format!("MIG partitions {profile}"),
                (None, Some((how, _))) => how.clone(),
                (None, None) => continue,
            };
            findings.push(error(
                &Origin::new(address, &[]),
                "Cloud GPU sharing on a DRA pool",
                format!(
                    "{} {} opts out of the device plugin for NVIDIA's DRA driver, but the cloud sets up {what} on it: DRA pools cannot use the cloud's own GPU sharing or MIG (GKE's DRA excludes them); partition and share through the driver instead.",
                    pool.kind, pool.name
                ),
            ));
        }
    }
    if claims {
        for (address, ceiling) in &model.ceilings {
            if !ceiling.scope.starts_with("karpenter") {
                continue;
            }
            findings.push(Finding {
                address: address.clone(),
                path: Vec::new(),
                severity: Severity::Warning,
                summary: "Karpenter does not provision for DRA claims".into(),
                detail: format!(
                    "The stack's pods may ask for GPUs through ResourceClaims, and {} provisions nodes dynamically: Karpenter does not provision for pods that ask for GPUs only through claims (aws/karpenter-provider-aws#9519). Serve the claims from static capacity (a managed node group, or a static NodePool).",
                    ceiling.scope
                ),
            });
        }
    }
}
