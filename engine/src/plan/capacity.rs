//! The capacity pass: combines what providers know about GPUs across layers into one line per
//! cloud pool — its machines from the cloud provider, the sharing its nodes will get from the
//! device-plugin config the kubernetes provider plans (DESIGN §1):
//! `nodepool gpupool: 1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 10 (time-slicing ×10; new pool)`.

use super::CapacityLine;
use gpustack_protocol::nvidia::{
    DEVICE_PLUGIN_CONFIG_LABEL as CONFIG_LABEL, GPU_RESOURCE, SHARED_GPU_RESOURCE,
};
use gpustack_protocol::{CapacityChange, GpuFact, PoolFact, PoolShape, SharingKey, format_number};
use std::collections::BTreeMap;

/// The device-plugin configs of the plan and which one, with which default key, the
/// ClusterPolicy makes the device plugin read.
struct Sharing<'a> {
    config: Option<&'a str>,
    planned_default: Option<&'a str>,
    configs: Vec<Config<'a>>,
}

/// One device-plugin config: its keys after and before the plan, and the live default key.
#[derive(Clone, Copy)]
struct Config<'a> {
    name: &'a str,
    keys: &'a BTreeMap<String, SharingKey>,
    before: Option<&'a BTreeMap<String, SharingKey>>,
    live_default: Option<&'a str>,
}

impl<'a> Sharing<'a> {
    fn of(facts: &'a [(String, GpuFact)]) -> Self {
        let mut sharing = Sharing {
            config: None,
            planned_default: None,
            configs: Vec::new(),
        };
        for (_, fact) in facts {
            match fact {
                GpuFact::DevicePluginConfig { name, default_key } => {
                    sharing.config = Some(name);
                    sharing.planned_default = default_key.as_deref();
                }
                GpuFact::SharingConfig {
                    name,
                    keys,
                    keys_before,
                    live_default,
                } => sharing.configs.push(Config {
                    name,
                    keys,
                    before: keys_before.as_ref(),
                    live_default: live_default.as_deref(),
                }),
                GpuFact::Pool(_) => {}
            }
        }
        sharing
    }

    /// How a node with `labels` shares each GPU, after the plan (`after`) or before it.
    fn for_node(&self, labels: &BTreeMap<String, String>, after: bool) -> Option<&'a SharingKey> {
        let config = match self.config {
            Some(name) => *self.configs.iter().find(|c| c.name == name)?,
            None => match self.configs.iter().find(|c| c.live_default.is_some()) {
                Some(c) => *c,
                None if self.configs.len() == 1 => self.configs[0],
                None => return None,
            },
        };
        let keys = if after { config.keys } else { config.before? };
        let default = if after {
            self.planned_default.or(config.live_default)
        } else {
            config.live_default
        };
        let key = labels
            .get(CONFIG_LABEL)
            .map(String::as_str)
            .or(default)
            .or_else(|| (keys.len() == 1).then(|| keys.keys().next().map(String::as_str))?)?;
        keys.get(key)
    }
}

fn nodes(shape: &PoolShape) -> String {
    if shape.min_nodes == shape.max_nodes {
        shape.min_nodes.to_string()
    } else {
        format!("{}–{}", shape.min_nodes, shape.max_nodes)
    }
}

/// GPUs a pool advertises at its largest, and under which resource name.
fn advertised(shape: &PoolShape, sharing: Option<&SharingKey>) -> (f64, f64, &'static str) {
    let physical = f64::from(shape.max_nodes) * f64::from(shape.gpus.count);
    let (factor, rename) = sharing.map_or((1.0, false), |s| (s.replicas, s.rename));
    let resource = if rename && factor > 1.0 {
        SHARED_GPU_RESOURCE
    } else {
        GPU_RESOURCE
    };
    (physical, physical * factor, resource)
}

fn line(address: &str, pool: &PoolFact, sharing: &Sharing<'_>) -> Option<CapacityLine> {
    let after_sharing = match pool.after.as_ref().and_then(|a| a.sharing.as_ref()) {
        Some(own) => Some(own),
        None => sharing.for_node(&pool.node_labels, true),
    };
    let before_sharing = match pool.before.as_ref().and_then(|b| b.sharing.as_ref()) {
        Some(own) => Some(own),
        None => sharing.for_node(&pool.node_labels, false),
    };
    let before = pool
        .before
        .as_ref()
        .filter(|_| !pool.new)
        .map(|b| advertised(b, before_sharing));
    let after = pool.after.as_ref().map(|a| advertised(a, after_sharing));
    let same_machines = pool.before.as_ref().map(|b| (&b.machine, &b.gpus))
        == pool.after.as_ref().map(|a| (&a.machine, &a.gpus));
    if !pool.new && same_machines && before.map(|b| b.1) == after.map(|a| a.1) {
        return None;
    }
    let shown = pool.after.as_ref().or(pool.before.as_ref())?;
    let (physical, _, resource) = after.or(before)?;
    let shown_sharing = if pool.after.is_some() {
        after_sharing
    } else {
        before_sharing
    };
    let how = match shown_sharing {
        Some(s) if s.replicas > 1.0 => format!("{} ×{}", s.strategy, format_number(s.replicas)),
        Some(s) => s.strategy.clone(),
        None => "no sharing".to_owned(),
    };
    let why = match (&pool.before, &pool.after, before) {
        (_, None, _) => "pool removed".to_owned(),
        (_, Some(_), _) if pool.new => {
            if pool.before.is_some() {
                "pool replaced".to_owned()
            } else {
                "new pool".to_owned()
            }
        }
        (Some(b), Some(_), _) if !same_machines => format!(
            "was {} × {} ({}× {})",
            nodes(b),
            b.machine,
            b.gpus.count,
            b.gpus.model
        ),
        (_, _, Some(b)) => format!("was {}", format_number(b.1)),
        _ => String::new(),
    };
    let mut detail = vec![how];
    detail.extend(Some(why).filter(|w| !w.is_empty()));
    if shown.min_nodes != shown.max_nodes {
        detail.push(format!("at {} nodes", shown.max_nodes));
    }
    detail.push(format!("{} GB per GPU", shown.gpus.memory_gb));
    Some(CapacityLine {
        address: address.to_owned(),
        change: CapacityChange {
            scope: format!(
                "{} {}: {} × {} ({}× {})",
                pool.kind,
                pool.name,
                nodes(shown),
                shown.machine,
                shown.gpus.count,
                shown.gpus.model
            ),
            resource: resource.to_owned(),
            before: before.map(|b| b.1),
            after: after.map(|a| a.1),
            detail: detail.join("; "),
            physical: Some(physical),
        },
    })
}

/// One line per cloud pool whose advertised GPUs the plan changes.
pub(crate) fn pool_lines(facts: &[(String, GpuFact)]) -> Vec<CapacityLine> {
    let sharing = Sharing::of(facts);
    facts
        .iter()
        .filter_map(|(address, fact)| match fact {
            GpuFact::Pool(pool) => line(address, pool, &sharing),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpustack_protocol::GpuShape;

    fn t4(nodes: u32) -> PoolShape {
        PoolShape {
            min_nodes: nodes,
            max_nodes: nodes,
            machine: "Standard_NC4as_T4_v3".into(),
            gpus: GpuShape {
                count: 1,
                model: "T4".into(),
                memory_gb: 16,
            },
            sharing: None,
        }
    }

    fn pool(before: Option<PoolShape>, after: Option<PoolShape>, new: bool) -> GpuFact {
        GpuFact::Pool(PoolFact {
            kind: "nodepool".into(),
            name: "gpupool".into(),
            node_labels: BTreeMap::from([(
                "kubernetes.azure.com/agentpool".into(),
                "gpupool".into(),
            )]),
            before,
            after,
            new,
        })
    }

    fn time_slicing(replicas: f64) -> BTreeMap<String, SharingKey> {
        BTreeMap::from([(
            "any".into(),
            SharingKey {
                strategy: "time-slicing".into(),
                replicas,
                rename: false,
            },
        )])
    }

    fn texts(facts: Vec<GpuFact>) -> Vec<String> {
        let facts: Vec<(String, GpuFact)> = facts
            .into_iter()
            .map(|f| ("aks_nodepool.t4".to_owned(), f))
            .collect();
        pool_lines(&facts).iter().map(CapacityLine::text).collect()
    }

    #[test]
    fn a_new_pool_with_time_slicing_shows_physical_and_shared_gpus() {
        let lines = texts(vec![
            pool(None, Some(t4(1)), true),
            GpuFact::SharingConfig {
                name: "time-slicing-config".into(),
                keys: time_slicing(10.0),
                keys_before: None,
                live_default: None,
            },
            GpuFact::DevicePluginConfig {
                name: "time-slicing-config".into(),
                default_key: Some("any".into()),
            },
        ]);
        assert_eq!(
            lines,
            [
                "nodepool gpupool: 1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 10 (time-slicing ×10; new pool; 16 GB per GPU)"
            ]
        );
    }

    #[test]
    fn scaling_a_shared_pool_says_what_it_was() {
        let sharing = GpuFact::SharingConfig {
            name: "time-slicing-config".into(),
            keys: time_slicing(10.0),
            keys_before: Some(time_slicing(10.0)),
            live_default: Some("any".into()),
        };
        let lines = texts(vec![pool(Some(t4(1)), Some(t4(2)), false), sharing.clone()]);
        assert_eq!(
            lines,
            [
                "nodepool gpupool: 2 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 2 → 20 (time-slicing ×10; was 10; 16 GB per GPU)"
            ]
        );
        // Nothing changes: no line.
        assert!(texts(vec![pool(Some(t4(1)), Some(t4(1)), false), sharing]).is_empty());
    }

    #[test]
    fn changing_only_the_sharing_changes_the_pool_line() {
        let lines = texts(vec![
            pool(Some(t4(1)), Some(t4(1)), false),
            GpuFact::SharingConfig {
                name: "time-slicing-config".into(),
                keys: time_slicing(4.0),
                keys_before: Some(time_slicing(10.0)),
                live_default: Some("any".into()),
            },
        ]);
        assert_eq!(
            lines,
            [
                "nodepool gpupool: 1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 4 (time-slicing ×4; was 10; 16 GB per GPU)"
            ]
        );
    }

    #[test]
    fn a_pool_without_sharing_and_a_removed_pool() {
        assert_eq!(
            texts(vec![pool(None, Some(t4(3)), true)]),
            [
                "nodepool gpupool: 3 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 3 → 3 (no sharing; new pool; 16 GB per GPU)"
            ]
        );
        assert_eq!(
            texts(vec![pool(Some(t4(2)), None, false)]),
            [
                "nodepool gpupool: 2 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 2 → 0 (no sharing; pool removed; 16 GB per GPU)"
            ]
        );
    }
}
