//! The plan's GPU capacity section from the model: per node, per pool and per autoscaler
//! ceiling, what is advertised before and after the plan, and why.

use crate::catalog;
use crate::model::{Model, Node, Physical, Prediction, Side};
use gpustack_protocol::nvidia::{DEVICE_PLUGIN_CONFIG_LABEL, GPU_RESOURCE};
use gpustack_protocol::{CapacityChange, PoolFact, PoolShape, format_number};
use std::collections::{BTreeMap, BTreeSet};

/// A capacity line and the resource instance it belongs to.
pub type Line = (String, CapacityChange);

pub(crate) fn lines(model: &Model) -> Vec<Line> {
    let mut out = Vec::new();
    for node in &model.nodes {
        out.extend(node_lines(model, node));
    }
    for (address, pool) in &model.pools {
        out.extend(pool_line(model, pool).map(|c| (address.clone(), c)));
    }
    out.extend(crate::dra::capacity(model));
    for (address, ceiling) in &model.ceilings {
        if ceiling.before == ceiling.after {
            continue;
        }
        let sharing = shared_factor(&model.after, &ceiling.node_labels);
        let mut detail =
            vec!["a ceiling on physical GPUs: the autoscaler does not count sharing".to_owned()];
        if let (Some(after), Some((factor, how))) = (ceiling.after, sharing)
            && factor > 1.0
        {
            detail.push(format!(
                "{how}: up to {} schedulable",
                format_number(after * factor)
            ));
        }
        out.push((
            address.clone(),
            CapacityChange {
                scope: ceiling.scope.clone(),
                resource: ceiling.resource.clone(),
                before: ceiling.before,
                after: ceiling.after,
                detail: detail.join("; "),
                physical: None,
            },
        ));
    }
    out
}

/// The resource instance a node's line belongs to: what the plan changes for it.
fn cause(model: &Model, node: &Node) -> String {
    if let Some(origin) = node.label_origins.values().next() {
        return origin.address.clone();
    }
    let settings = &model.after.settings;
    for candidate in [
        &settings.config,
        &settings.default_key,
        &settings.mig_config,
        &settings.mig_default,
    ] {
        if let Some(origin) = candidate.as_ref().and_then(|s| s.origin.as_ref()) {
            return origin.address.clone();
        }
    }
    model
        .config_maps
        .first()
        .map(|(a, _)| a.clone())
        .or_else(|| model.operators.first().map(|(a, _)| a.clone()))
        .unwrap_or_default()
}

/// How a MIG or sharing change reaches a node that no rollout takes: the label or config is
/// changed on every node together, and neither MIG Manager nor the device plugin drains them
/// first.
const AT_ONCE: &str = "all nodes at once, not drained first";

pub(crate) fn disruptions(model: &Model) -> Vec<crate::Disruption> {
    let mut out = Vec::new();
    for node in &model.nodes {
        let Some(physical) = &node.physical else {
            continue;
        };
        let before = model.before.predict(&node.live.labels, physical);
        let after = model.after.predict(&node.labels_after, physical);
        // The device plugin runs on the node now and the plan stops it (what it advertises
        // now may not be known: a geometry the plan cannot read).
        let stops = model.before.plugin_runs(&node.live.labels) && after.is_none();
        let (Some(before), Some(after)) = (before, after) else {
            if stops && let Some(why) = model.after.plugin_off(&node.labels_after) {
                out.push(plugin_stops(model, node, why));
            }
            continue;
        };
        if before == after {
            continue;
        }
        let geometry = |p: &Prediction| {
            p.mig
                .as_ref()
                .map(|(name, layout, _)| (name.clone(), layout.clone()))
        };
        let (mig_before, mig_after) = (geometry(&before), geometry(&after));
        let enabled = |m: &Option<(String, crate::mig::Layout)>| {
            matches!(m, Some((_, crate::mig::Layout::Enabled(_))))
        };
        let (change, effect) =
            if mig_before.as_ref().map(|m| &m.0) != mig_after.as_ref().map(|m| &m.0) {
                let name = |m: &Option<(String, crate::mig::Layout)>| {
                    m.as_ref()
                        .map_or_else(|| "none".to_owned(), |(n, _)| n.clone())
                };
                let mut effect =
                    "MIG Manager stops every GPU operand of the node and needs its GPUs free"
                        .to_owned();
                if enabled(&mig_before) != enabled(&mig_after) {
                    effect.push_str(
                    "; MIG mode changes: the node reboots where MIG Manager runs with WITH_REBOOT",
                );
                }
                (
                    format!(
                        "reconfigures MIG {} → {}",
                        name(&mig_before),
                        name(&mig_after)
                    ),
                    effect,
                )
            } else {
                (
                    format!(
                        "restarts the device plugin ({} → {})",
                        how_text(&before),
                        how_text(&after)
                    ),
                    "the node's GPUs leave allocatable until the plugin is back".to_owned(),
                )
            };
        out.push(disruption(model, node, change, effect));
    }
    for (name, (address, step)) in &model.unfinished {
        let how = model.rollouts.get(name).cloned();
        let change = format!("finishes the rollout an earlier apply left at step {step}");
        let effect = "the rollout keeps the node cordoned until it has settled";
        if let Some(listed) = out.iter_mut().find(|d| &d.node == name) {
            listed.change = format!("{}; {change}", listed.change);
            continue;
        }
        out.push(crate::Disruption {
            address: address.clone(),
            node: name.clone(),
            change,
            effect: effect.to_owned(),
            pods: model
                .nodes
                .iter()
                .find(|n| &n.live.name == name)
                .map(|n| n.live.gpu_pods.clone())
                .unwrap_or_default(),
            rollout: how.unwrap_or_else(|| AT_ONCE.to_owned()),
            pods_known: true,
        });
    }
    out.extend(removals(model));
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// A node whose device plugin the plan stops, with its GPU pods: moved to the DRA driver, or
/// left without GPUs to offer.
fn plugin_stops(model: &Model, node: &Node, why: &str) -> crate::Disruption {
    let effect = match crate::dra::serving(model, &node.labels_after) {
        Some(driver) => format!(
            "its GPUs leave nvidia.com/gpu allocatable and {driver} publishes them for DRA claims: a pod still holding one is invisible to the scheduler, which may give the same GPU to a claim, so the node must be empty of GPU pods first"
        ),
        None => "its GPUs leave allocatable: no new pod that asks for nvidia.com/gpu goes there"
            .to_owned(),
    };
    disruption(
        model,
        node,
        format!("stops the device plugin ({why})"),
        effect,
    )
}

/// A change the plan makes to a live node, with its GPU pods and how it reaches the node.
fn disruption(model: &Model, node: &Node, change: String, effect: String) -> crate::Disruption {
    crate::Disruption {
        address: cause(model, node),
        node: node.live.name.clone(),
        change,
        effect,
        pods: node.live.gpu_pods.clone(),
        rollout: model
            .rollouts
            .get(&node.live.name)
            .cloned()
            .unwrap_or_else(|| AT_ONCE.to_owned()),
        pods_known: true,
    }
}

/// The live nodes a planned change removes with their pool (a replacement, or the end of one
/// an earlier apply could not finish), each with its GPU pods and how it is emptied first.
fn removals(model: &Model) -> Vec<crate::Disruption> {
    let mut out = Vec::new();
    for (address, pool) in &model.pools {
        let Some(removal) = &pool.removes else {
            continue;
        };
        let effect = "the node goes with its pool".to_owned();
        if let Some(nodes) = &removal.nodes {
            for (node, pods) in nodes {
                out.push(crate::Disruption {
                    address: address.clone(),
                    node: node.clone(),
                    change: removal.change.clone(),
                    effect: effect.clone(),
                    pods: pods.clone(),
                    rollout: removal.how.clone(),
                    pods_known: true,
                });
            }
            continue;
        }
        if !model.cluster_seen {
            out.push(crate::Disruption {
                address: address.clone(),
                node: format!(
                    "every node of {} (the cluster was not read)",
                    selector_text(&removal.selector)
                ),
                change: removal.change.clone(),
                effect,
                pods: Vec::new(),
                rollout: removal.how.clone(),
                pods_known: false,
            });
            continue;
        }
        for node in &model.nodes {
            let selected = removal
                .selector
                .iter()
                .all(|(k, v)| node.live.labels.get(k) == Some(v));
            if selected {
                out.push(crate::Disruption {
                    address: address.clone(),
                    node: node.live.name.clone(),
                    change: removal.change.clone(),
                    effect: effect.clone(),
                    pods: node.live.gpu_pods.clone(),
                    rollout: removal.how.clone(),
                    pods_known: true,
                });
            }
        }
    }
    out
}

fn selector_text(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn how_text(p: &Prediction) -> String {
    if p.how.is_empty() {
        "whole GPUs".to_owned()
    } else {
        p.how.join(", ")
    }
}

fn node_lines(model: &Model, node: &Node) -> Vec<Line> {
    let Some(physical) = &node.physical else {
        return Vec::new();
    };
    let before = model.before.predict(&node.live.labels, physical);
    let mut after = model.after.predict(&node.labels_after, physical);
    // No device plugin on the node: nothing advertised, for a reason the plan gives.
    if after.is_none()
        && let Some(why) = model.after.plugin_off(&node.labels_after)
    {
        let mut how = vec![format!("no device plugin: {why}")];
        if let Some(driver) = crate::dra::serving(model, &node.labels_after) {
            how.push(format!(
                "{driver} publishes its {} GPUs for DRA claims instead",
                physical.count
            ));
        }
        after = Some(Prediction {
            resources: BTreeMap::new(),
            how,
            config_key: None,
            plugin: None,
            mig: None,
        });
    }
    if before == after || (after.is_none() && model.after.settings.present) {
        return Vec::new();
    }
    let live = &node.live.allocatable;
    let advertises_nothing = live.values().all(|v| *v == 0.0);
    let empty = BTreeMap::new();
    let wanted = after.as_ref().map_or(&empty, |p| &p.resources);
    let resources: BTreeSet<&String> = live
        .iter()
        .filter(|(_, v)| **v != 0.0)
        .map(|(k, _)| k)
        .chain(wanted.keys())
        .collect();
    let mut detail = match &after {
        Some(p) => p.how.clone(),
        None => vec!["GPU Operator removed: no device plugin".to_owned()],
    };
    let before_key = before.as_ref().and_then(|p| p.config_key.clone());
    let after_key = after.as_ref().and_then(|p| p.config_key.clone());
    if before_key != after_key
        && node.label_origins.contains_key(DEVICE_PLUGIN_CONFIG_LABEL)
        && let Some((config, key)) = &after_key
    {
        if node.labels_after.contains_key(DEVICE_PLUGIN_CONFIG_LABEL) {
            detail.push(format!("joins {config} key {key} by label"));
        } else {
            detail.push(format!(
                "label removed: back to {config} key {key}, the default"
            ));
        }
    }
    if before.is_none() && !model.before.settings.present {
        detail.push("the GPU Operator is installed by this plan".to_owned());
    }
    if physical.source != "GFD labels" {
        detail.push(format!(
            "{}× {} from {}",
            physical.count, physical.model, physical.source
        ));
    }
    let scope = format!(
        "node {} ({}× {})",
        node.live.name, physical.count, physical.product
    );
    let address = cause(model, node);
    resources
        .into_iter()
        .filter_map(|resource| {
            let was = live.get(resource).copied().unwrap_or(0.0);
            let will = wanted.get(resource).copied().unwrap_or(0.0);
            if was == will && !advertises_nothing {
                return None;
            }
            if advertises_nothing && will == 0.0 {
                return None;
            }
            Some((
                address.clone(),
                CapacityChange {
                    scope: scope.clone(),
                    resource: resource.clone(),
                    before: live.get(resource).copied(),
                    after: Some(will),
                    detail: detail.join("; "),
                    physical: (advertises_nothing && resource == GPU_RESOURCE)
                        .then_some(f64::from(physical.count)),
                },
            ))
        })
        .collect()
}

/// The sharing factor and its description that nodes with `labels` get from the config.
fn shared_factor(side: &Side, labels: &BTreeMap<String, String>) -> Option<(f64, String)> {
    let physical = Physical {
        count: 1,
        model: "GPU".into(),
        memory_gb: 0,
        product: "GPU".into(),
        source: String::new(),
    };
    let p = side.predict(labels, &physical)?;
    let (total, _) = advertised_of(&p);
    Some((total, p.how.join("; ")))
}

/// All GPU resources a prediction advertises, and under which resource name the most.
fn advertised_of(p: &Prediction) -> (f64, String) {
    let total = p.resources.values().sum();
    let name = p
        .resources
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(GPU_RESOURCE.to_owned(), |(k, _)| k.clone());
    (total, name)
}

fn nodes(shape: &PoolShape) -> String {
    if shape.min_nodes == shape.max_nodes {
        shape.min_nodes.to_string()
    } else {
        format!("{}–{}", shape.min_nodes, shape.max_nodes)
    }
}

/// What one node of a pool advertises, its resource, and how.
fn per_node(side: &Side, pool: &PoolFact, shape: &PoolShape) -> Option<(f64, String, String)> {
    let gpus = shape.gpus.as_ref()?;
    if let Some(cloud) = &shape.sharing {
        let partitions = cloud.mig_profile.as_ref().map(|p| {
            let profile = if p.contains('.') {
                p.as_str()
            } else {
                catalog::profile_by_slices(&gpus.model, gpus.memory_gb, p).unwrap_or(p)
            };
            match catalog::partitions_per_gpu(&gpus.model, gpus.memory_gb, profile) {
                Some(n) => (f64::from(n), format!("MIG {profile} ×{n}")),
                None => (
                    1.0,
                    format!(
                        "MIG {profile}, partitions per GPU unknown to the built-in table for {} {} GB: counted as 1",
                        gpus.model, gpus.memory_gb
                    ),
                ),
            }
        });
        let clients = cloud
            .clients
            .as_ref()
            .map(|(s, n)| (*n, format!("{s} ×{}", format_number(*n))));
        let factor =
            partitions.as_ref().map_or(1.0, |p| p.0) * clients.as_ref().map_or(1.0, |c| c.0);
        let how = [partitions.map(|p| p.1), clients.map(|c| c.1)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" + ");
        return Some((f64::from(gpus.count) * factor, GPU_RESOURCE.to_owned(), how));
    }
    let physical = Physical {
        count: gpus.count,
        model: gpus.model.clone(),
        memory_gb: gpus.memory_gb,
        product: gpus.model.clone(),
        source: String::new(),
    };
    match side.predict(&pool.node_labels, &physical) {
        Some(p) => {
            let (total, name) = advertised_of(&p);
            Some((total, name, p.how.join("; ")))
        }
        None => Some((
            f64::from(gpus.count),
            GPU_RESOURCE.to_owned(),
            "no sharing".into(),
        )),
    }
}

fn pool_line(model: &Model, pool: &PoolFact) -> Option<CapacityChange> {
    // A replaced pool keeps its before side: the plan shows what the old machines gave.
    let before = pool
        .before
        .as_ref()
        .and_then(|b| Some((b, per_node(&model.before, pool, b)?)));
    let after = pool
        .after
        .as_ref()
        .and_then(|a| Some((a, per_node(&model.after, pool, a)?)));
    let total =
        |(shape, (n, _, _)): &(&PoolShape, (f64, String, String))| f64::from(shape.max_nodes) * n;
    let same_machines = pool.before.as_ref().map(|b| (&b.machine, &b.gpus))
        == pool.after.as_ref().map(|a| (&a.machine, &a.gpus));
    if !pool.new && same_machines && before.as_ref().map(total) == after.as_ref().map(total) {
        return None;
    }
    let (shape, (_, resource, how)) = after.as_ref().or(before.as_ref())?;
    let gpus = shape.gpus.as_ref()?;
    let was = |b: &PoolShape| match &b.gpus {
        Some(g) => format!(
            "was {} × {} ({}× {})",
            nodes(b),
            b.machine,
            g.count,
            g.model
        ),
        None => format!("was {} × {}", nodes(b), b.machine),
    };
    let why = match (&pool.before, &pool.after) {
        (_, None) => "pool removed".to_owned(),
        (Some(b), Some(_)) if pool.new && !same_machines => {
            format!("pool replaced, {}", was(b))
        }
        (Some(_), Some(_)) if pool.new => "pool replaced".to_owned(),
        (None, Some(_)) => "new pool".to_owned(),
        (Some(b), Some(_)) if !same_machines => was(b),
        (Some(b), Some(a)) => format!("{} → {} nodes", nodes(b), nodes(a)),
    };
    let mut detail = vec![how.clone(), why];
    if shape.min_nodes != shape.max_nodes {
        detail.push(format!("at {} nodes", shape.max_nodes));
    }
    detail.push(format!("{} GB per GPU", gpus.memory_gb));
    if gpus.source.contains(catalog::BUILT_IN) {
        detail.push(format!("GPUs from the {}", gpus.source));
    }
    let physical = f64::from(shape.max_nodes) * f64::from(gpus.count);
    Some(CapacityChange {
        scope: format!(
            "{} {}: {} × {} ({}× {})",
            pool.kind,
            pool.name,
            nodes(shape),
            shape.machine,
            gpus.count,
            gpus.model
        ),
        resource: resource.clone(),
        before: before.as_ref().map(total),
        after: after.as_ref().map(total),
        detail: detail.join("; "),
        // A pool that did not exist shows its physical GPUs and what they will advertise; one
        // that did shows what it advertised before and after.
        physical: before.is_none().then_some(physical),
    })
}
