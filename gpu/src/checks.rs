//! The checks of GPU-FACTS run on the model, whichever way the stack expresses the config (a
//! module, a raw ConfigMap, the operator chart's values): each finding points at the part of
//! the stack that causes it.

use crate::mig::Layout;
use crate::model::Physical;
use crate::model::{Model, Origin, key};
use crate::sharing::{self, Strategy};
use crate::{Finding, Severity, catalog};
use gpustack_protocol::nvidia::DEVICE_PLUGIN_CONFIG_LABEL;
use gpustack_protocol::{NodeFact, OperatorSource, PathStep, PoolFact};

fn error(origin: Origin, summary: impl Into<String>, detail: impl Into<String>) -> Finding {
    Finding {
        address: origin.address,
        path: origin.path,
        severity: Severity::Error,
        summary: summary.into(),
        detail: detail.into(),
    }
}

pub(crate) fn run(model: &Model) -> Vec<Finding> {
    let mut findings = Vec::new();
    config_texts(model, &mut findings);
    for conflict in &model.conflicts {
        findings.push(error(
            conflict.second.1.clone(),
            "Two configs for one ClusterPolicy field",
            format!(
                "The ClusterPolicy has one {}: {} sets it to \"{}\" and {} to \"{}\"; the last apply wins and the other config is silently unused. Give both sharing setups one ConfigMap with a key each, and pick a key per node with the nvidia.com/device-plugin.config label.",
                conflict.what,
                conflict.first.1.address,
                conflict.first.0,
                conflict.second.1.address,
                conflict.second.0
            ),
        ));
    }
    nodes(model, &mut findings);
    pools(model, &mut findings);
    crate::dra::findings(model, &mut findings, true);
    for (address, what) in &model.unread {
        findings.push(Finding {
            address: address.clone(),
            path: Vec::new(),
            severity: Severity::Warning,
            summary: "Part of the cluster not read".into(),
            detail: format!("Cannot read {what}: the GPU model goes on without it, so its capacity lines and checks may miss what is there."),
        });
    }
    // Only a cluster read in full tells an absent ClusterPolicy from one not seen.
    if model.cluster_seen && model.unread.is_empty() {
        for origin in &model.patches_without_policy {
            findings.push(error(
                origin.clone(),
                "A ClusterPolicy patch with no ClusterPolicy",
                "This patch changes the GPU Operator's ClusterPolicy, but the cluster has none and nothing in this plan makes one (a GPU Operator release or a ClusterPolicy object): it would fail at apply, after the resources before it were changed. Install the GPU Operator first, or add the gpu-operator module to this stack and pass its `operator` output.",
            ));
        }
    }
    if !model.cluster_seen
        && let Some((address, o)) = model.operators.first()
    {
        findings.push(Finding {
            address: address.clone(),
            path: o.attribute.clone(),
            severity: Severity::Warning,
            summary: crate::NODES_NOT_READ.into(),
            detail: "Nothing in this stack reads the cluster's nodes (the kubernetes provider does for the objects it plans, the helm provider for a GPU Operator release): the GPU capacity section has no node lines and MIG geometries are not checked against the nodes' GPUs.".into(),
        });
    }
    findings
}

/// Every device-plugin config the stack writes, however it writes it.
fn config_texts(model: &Model, findings: &mut Vec<Finding>) {
    let mut texts: Vec<(Origin, &str)> = Vec::new();
    for (address, c) in &model.config_maps {
        for (k, text) in c.data.iter().flatten() {
            let unchanged = c
                .data_before
                .as_ref()
                .and_then(|b| b.get(k))
                .is_some_and(|b| b == text);
            if !unchanged {
                texts.push((Origin::new(address, &c.attribute).join(&[key(k)]), text));
            }
        }
    }
    for (address, o) in &model.operators {
        if o.source != OperatorSource::HelmValues {
            continue;
        }
        let data = o
            .settings
            .as_ref()
            .and_then(|s| s.pointer("/devicePlugin/config/data"))
            .and_then(|d| d.as_object());
        for (k, text) in data.into_iter().flatten() {
            if let Some(text) = text.as_str() {
                let at = [key("devicePlugin"), key("config"), key("data"), key(k)];
                texts.push((Origin::new(address, &o.attribute).join(&at), text));
            }
        }
    }
    for (origin, text) in texts {
        let Some((_, problems)) = sharing::parse(text) else {
            continue;
        };
        for p in problems {
            findings.push(error(origin.join(&p.path), p.summary, p.detail));
        }
    }
}

/// Where a node's setting comes from: the label the stack sets, else `fallback`.
fn label_or(node: &crate::model::Node, label: &str, fallback: Option<&Origin>) -> Option<Origin> {
    node.label_origins
        .get(label)
        .cloned()
        .or_else(|| fallback.cloned())
}

fn nodes(model: &Model, findings: &mut Vec<Finding>) {
    for node in &model.nodes {
        node_checks(model, node, findings);
    }
}

/// The checks of one node (a live one, or the nodes a new pool will bring).
// Long by design: one paragraph per check of a node, each reading the same bindings (the
// node's labels after the plan, its physical GPUs, the config it joins); split apart they
// would each re-derive them.
fn node_checks(model: &Model, node: &crate::model::Node, findings: &mut Vec<Finding>) {
    let after = &model.after;
    let Some(physical) = &node.physical else {
        return;
    };
    let labels = &node.labels_after;
    let changed = |label: &str| node.label_origins.contains_key(label);
    // The node's config key must exist in the config it reads: blame the label the stack
    // sets, else the ConfigMap it writes, else the default it points at.
    if after.plugin_off(labels).is_none()
        && let Some((config, key_name, None)) = after.plugin_config(labels)
        && after.config_maps.contains_key(&config)
        && let Some(origin) = label_or(
            node,
            DEVICE_PLUGIN_CONFIG_LABEL,
            after.config_maps[&config].origin.as_ref().or(after
                .settings
                .default_key
                .as_ref()
                .and_then(|s| s.origin.as_ref())),
        )
    {
        findings.push(error(
                origin,
                "Config key missing",
                format!(
                    "Node {} reads key \"{key_name}\" of ConfigMap {config}, which has only {}: its device plugin would fail to start.",
                    node.live.name,
                    after.config_maps[&config].data.keys().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ")
                ),
            ));
    }
    let mig = after.mig(labels, physical);
    let mig_origin = label_or(
        node,
        crate::model::MIG_CONFIG_LABEL,
        after
            .settings
            .mig_default
            .as_ref()
            .and_then(|s| s.origin.as_ref()),
    );
    let touched = changed(crate::model::MIG_CONFIG_LABEL)
        || mig_origin.is_some()
        || model
            .config_maps
            .iter()
            .any(|(_, c)| Some(c.name.as_str()) == Some(after.settings.mig_config_name()));
    if let (Some((geometry, layout, _)), true) = (&mig, touched) {
        let origin = mig_origin.clone().or_else(|| {
            model
                .config_maps
                .iter()
                .find(|(_, c)| c.name == after.settings.mig_config_name())
                .map(|(a, c)| Origin::new(a, &c.attribute))
        });
        let profiles = catalog::mig_profiles(&physical.model, physical.memory_gb);
        let what = format!(
            "node {}'s GPUs are {} ({} {} GB, from {})",
            node.live.name, physical.product, physical.model, physical.memory_gb, physical.source
        );
        match (layout, profiles) {
            (Some(Layout::Enabled(_)), None) if catalog::mig_capable(&physical.model) => {
                if let Some(origin) = origin.clone() {
                    findings.push(Finding {
                            address: origin.address,
                            path: origin.path,
                            severity: Severity::Warning,
                            summary: "MIG geometry not checked".into(),
                            detail: format!("Geometry {geometry} is planned on node {}, whose GPUs are {} ({} {} GB, from {}): gpustack's built-in table has no MIG profiles for that model, so the geometry is not checked and its capacity not predicted.", node.live.name, physical.product, physical.model, physical.memory_gb, physical.source),
                        });
                }
            }
            (Some(Layout::Enabled(_)), None) => {
                if let Some(origin) = origin.clone() {
                    findings.push(error(
                            origin,
                            "MIG on a GPU without MIG",
                            format!("Geometry {geometry} is planned, but {what}, which have no MIG: share it with time-slicing or MPS instead."),
                        ));
                }
            }
            (Some(Layout::Enabled(devices)), Some(profiles)) => {
                for (profile, n) in devices {
                    let max =
                        catalog::partitions_per_gpu(&physical.model, physical.memory_gb, profile);
                    let problem = match max {
                        None => Some(format!(
                            "Geometry {geometry} makes {profile} instances, but {what}, which have no {profile} profile; its profiles are {}.",
                            profiles
                                .iter()
                                .filter(|(p, _)| !p.contains('+'))
                                .map(|(p, n)| format!("{p}×{n}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                        Some(max) if *n > max || *n == 0 => Some(format!(
                            "Geometry {geometry} asks for {n} × {profile} per GPU, but {what}, which fit at most {max}."
                        )),
                        _ => None,
                    };
                    if let (Some(detail), Some(origin)) = (problem, origin.clone()) {
                        findings.push(error(origin, "MIG profile the node's GPU lacks", detail));
                    }
                }
                if after.settings.mig_strategy == "single"
                    && devices.len() > 1
                    && let Some(origin) = origin.clone()
                {
                    findings.push(error(
                            origin,
                            "Several MIG profiles under the single strategy",
                            format!("Geometry {geometry} makes {} profiles on node {}, which the single strategy cannot advertise as one nvidia.com/gpu; use mig.strategy mixed.", devices.len(), node.live.name),
                        ));
                }
            }
            (None, _) => {
                if let Some(origin) = origin.clone() {
                    findings.push(error(
                            origin,
                            "Unknown MIG geometry",
                            format!("Node {} is given geometry {geometry}, which the mig-parted config set {} does not define; the MIG manager would report failed.", node.live.name, after.settings.mig_config_name()),
                        ));
                }
            }
            _ => {}
        }
    }
    if node.physical.is_some() {
        mig_resources_without_mixed(model, node, findings);
        device_plugin_on_a_dra_node(model, node, findings);
    }
    // MPS and MIG on the same node.
    if let Some((_, Some(Layout::Enabled(_)), _)) = &mig
        && let Some((config, key_name, Some(text))) = after.plugin_config(labels)
        && let Some((plugin, _)) = sharing::parse(text)
        && plugin.strategy == Some(Strategy::Mps)
    {
        let origin = label_or(node, DEVICE_PLUGIN_CONFIG_LABEL, None)
            .or_else(|| mig_origin.clone())
            .or_else(|| {
                after
                    .config_maps
                    .get(&config)
                    .and_then(|c| c.origin.clone())
                    .map(|o| o.join(&[PathStep::Key(key_name.clone())]))
            });
        if let Some(origin) = origin {
            findings.push(error(
                    origin,
                    "MPS and MIG on the same node",
                    format!("Node {} gets MIG geometry and the MPS config {config}/{key_name}: MPS never runs on MIG devices. Keep MPS and MIG on different nodes.", node.live.name),
                ));
        }
    }
}

/// The operator's device plugin planned onto a node whose GPUs NVIDIA's DRA driver already
/// publishes (GPU-FACTS: never both on one node; the scheduler cannot see the plugin's
/// allocations). Blamed on the operator settings the stack writes.
fn device_plugin_on_a_dra_node(
    model: &Model,
    node: &crate::model::Node,
    findings: &mut Vec<Finding>,
) {
    let after = &model.after;
    if node.live.dra_devices.is_empty()
        || !after.settings.present
        || !after.settings.device_plugin
        || after.plugin_off(&node.labels_after).is_some()
    {
        return;
    }
    let Some((address, operator)) = model.operators.first() else {
        return;
    };
    findings.push(error(
        Origin::new(address, &operator.attribute),
        "Device plugin and DRA driver on one node",
        format!(
            "Node {}'s GPUs are published by NVIDIA's DRA driver (gpu.nvidia.com ResourceSlices), and the GPU Operator's device plugin would serve the node too: the scheduler cannot see one's allocations in the other. Give the node nvidia.com/gpu.deploy.device-plugin=false, or serve it with the device plugin only.",
            node.live.name
        ),
    ));
}

/// A config that shares MIG resources on a node where the strategy does not make them.
fn mig_resources_without_mixed(
    model: &Model,
    node: &crate::model::Node,
    findings: &mut Vec<Finding>,
) {
    let after = &model.after;
    if after.settings.mig_strategy == "mixed" {
        return;
    }
    let Some((config, key_name, Some(text))) = after.plugin_config(&node.labels_after) else {
        return;
    };
    let Some(origin) = after
        .config_maps
        .get(&config)
        .and_then(|c| c.origin.clone())
    else {
        return;
    };
    let Some((plugin, _)) = sharing::parse(text) else {
        return;
    };
    if let Some(shared) = plugin
        .shared
        .iter()
        .find(|s| s.resource.starts_with("nvidia.com/mig-"))
    {
        findings.push(error(
            origin.join(&[PathStep::Key(key_name.clone())]),
            "Time-slicing a MIG resource without the mixed strategy",
            format!(
                "{config}/{key_name} shares {}, which exists only under mig.strategy mixed; node {} gets strategy {}.",
                shared.resource, node.live.name, after.settings.mig_strategy
            ),
        ));
    }
}

fn pools(model: &Model, findings: &mut Vec<Finding>) {
    let settings = &model.after.settings;
    for (address, pool) in &model.pools {
        if let Some(node) = pool_nodes(model, address, pool) {
            node_checks(model, &node, findings);
        }
        if let Some(shape) = &pool.after
            && let (Some(gpus), Some(profile)) = (
                &shape.gpus,
                shape.sharing.as_ref().and_then(|s| s.mig_profile.as_ref()),
            )
            && catalog::mig_profiles(&gpus.model, gpus.memory_gb).is_none()
            && catalog::mig_capable(&gpus.model)
        {
            findings.push(Finding {
                address: address.clone(),
                path: Vec::new(),
                severity: Severity::Warning,
                summary: "MIG partitions unknown".into(),
                detail: format!(
                    "{} {} partitions its {} {} GB GPUs as {profile}, but gpustack's built-in table has no MIG profiles for that model: the profile is not checked and the capacity section counts one partition per GPU.",
                    pool.kind, pool.name, gpus.model, gpus.memory_gb
                ),
            });
        }
        if let Some(shape) = pool.after.as_ref().filter(|s| s.gpus.is_none()) {
            findings.push(Finding {
                address: address.clone(),
                path: Vec::new(),
                severity: Severity::Warning,
                summary: "GPUs of the machine type unknown".into(),
                detail: format!(
                    "{} {} uses {}, which looks like a GPU machine, but neither the cloud's answer nor gpustack's built-in table names its GPUs: the GPU capacity section leaves this pool out.",
                    pool.kind, pool.name, shape.machine
                ),
            });
        }
        let Some(managed) = &pool.managed_gpu_software else {
            continue;
        };
        let opted_out = pool
            .node_labels
            .get(crate::model::DEVICE_PLUGIN_OPT_OUT)
            .map(String::as_str)
            == Some("false");
        if managed.device_plugin
            && settings.present
            && settings.device_plugin
            && !opted_out
            && pool.after.is_some()
        {
            findings.push(error(
                Origin::new(address, &managed.attribute),
                "Two device plugins on one pool",
                format!(
                    "{} {} runs {}, which brings its own device plugin, and the GPU Operator's device plugin is enabled too: both would advertise the same GPUs. Turn the cloud's GPU software off for this pool, or give its nodes the label nvidia.com/gpu.deploy.device-plugin=false.",
                    pool.kind, pool.name, managed.what
                ),
            ));
        }
    }
}

/// The nodes a pool will bring, as one node for the checks: its machine's GPUs and the labels
/// the pool gives them. `None` for a pool without GPUs, one being removed, and one whose
/// nodes are live (they are checked as nodes).
fn pool_nodes(model: &Model, address: &str, pool: &PoolFact) -> Option<crate::model::Node> {
    let shape = pool.after.as_ref()?;
    let gpus = shape.gpus.as_ref()?;
    let live = model.nodes.iter().any(|n| {
        pool.node_labels
            .iter()
            .all(|(k, v)| n.live.labels.get(k) == Some(v))
    });
    if live {
        return None;
    }
    let label_origins = pool
        .node_labels
        .keys()
        .map(|label| {
            (
                label.clone(),
                Origin::new(address, &pool.labels_attribute).join(&[key(label)]),
            )
        })
        .collect();
    Some(crate::model::Node {
        live: NodeFact {
            name: format!("in {} {}", pool.kind, pool.name),
            labels: pool.node_labels.clone(),
            ..Default::default()
        },
        physical: Some(Physical {
            count: gpus.count,
            model: gpus.model.clone(),
            memory_gb: gpus.memory_gb,
            product: gpus.model.clone(),
            source: gpus.source.clone(),
        }),
        labels_after: pool.node_labels.clone(),
        label_origins,
    })
}
