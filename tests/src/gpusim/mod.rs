//! The GPU behaviour simulator's model: what NVIDIA's device plugin, GPU feature discovery
//! and MIG manager make of a node, given its GPUs and the configuration on the cluster — as
//! ../shared/GPU-FACTS.md documents them. Pure functions: the controller that applies them to
//! the test cluster's nodes (kube-runtime) is built on top.
//!
//! Invalid configuration is treated as the real components treat it: the node keeps what it
//! advertised and the state says failed — never silently accepted.

pub mod catalog;
pub mod controller;
pub mod dra;
pub mod mig;
pub mod sharing;

use catalog::GpuModel;
use indexmap::IndexMap;
use mig::{MigLayout, MigStrategy};
use sharing::{Sharing, SharingConfig};

/// A simulated node's GPUs.
#[derive(Debug, Clone)]
pub struct GpuNode {
    pub model: &'static GpuModel,
    pub count: u32,
}

/// What the node advertises: extended resources in allocatable, and GFD's labels.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Advertisement {
    pub allocatable: IndexMap<String, u64>,
    pub labels: IndexMap<String, String>,
}

/// Everything the plugin and GFD read for one node.
#[derive(Debug, Clone, Default)]
pub struct NodeConfig<'a> {
    /// The sharing config that applies to the node (the ConfigMap key chosen by the node's
    /// `nvidia.com/device-plugin.config` label, else the ClusterPolicy default), if any.
    pub sharing: Option<&'a SharingConfig>,
    /// The MIG layout the MIG manager applied (None: MIG disabled).
    pub mig: Option<&'a MigLayout>,
    pub mig_strategy: MigStrategy,
}

/// The node's advertisement under a configuration that has been validated for it.
pub fn advertise(node: &GpuNode, config: &NodeConfig<'_>) -> Advertisement {
    let mut ad = Advertisement::default();
    let model = node.model;
    let mut product = model.product.to_owned();
    let sharing = config.sharing.and_then(SharingConfig::sharing);
    // Resources before sharing: whole GPUs, or MIG devices.
    let mut resources: IndexMap<String, u64> = IndexMap::new();
    match (config.mig, config.mig_strategy) {
        (Some(layout), MigStrategy::Mixed) => {
            for (profile, per_gpu) in &layout.devices {
                let name = format!("nvidia.com/mig-{}", profile.replace('+', "."));
                *resources.entry(name).or_default() += u64::from(*per_gpu) * u64::from(node.count);
            }
            resources.insert("nvidia.com/gpu".into(), 0);
        }
        (Some(layout), MigStrategy::Single) => {
            let per_gpu: u32 = layout.devices.values().sum();
            resources.insert(
                "nvidia.com/gpu".into(),
                u64::from(per_gpu) * u64::from(node.count),
            );
            if let Some(profile) = layout.devices.keys().next() {
                product = format!("{}-MIG-{profile}", model.product);
            }
        }
        _ => {
            resources.insert("nvidia.com/gpu".into(), u64::from(node.count));
        }
    }
    let mut replicas = 1;
    let mut strategy = "none";
    if let Some(Sharing {
        kind,
        rename_by_default,
        resources: shared,
        ..
    }) = sharing
    {
        strategy = kind.label();
        for shared_resource in shared {
            let Some(physical) = resources.get(&shared_resource.name).copied() else {
                continue;
            };
            replicas = shared_resource.replicas;
            let total = physical * u64::from(shared_resource.replicas);
            if *rename_by_default {
                resources.insert(shared_resource.name.clone(), 0);
                resources.insert(format!("{}.shared", shared_resource.name), total);
            } else {
                resources.insert(shared_resource.name.clone(), total);
                product = format!("{product}-SHARED");
            }
        }
    }
    ad.allocatable = resources;
    let labels = &mut ad.labels;
    labels.insert("nvidia.com/gpu.present".into(), "true".into());
    labels.insert("nvidia.com/gpu.product".into(), product);
    labels.insert("nvidia.com/gpu.count".into(), node.count.to_string());
    labels.insert("nvidia.com/gpu.memory".into(), model.memory_mib.to_string());
    labels.insert("nvidia.com/gpu.replicas".into(), replicas.to_string());
    labels.insert("nvidia.com/gpu.sharing-strategy".into(), strategy.into());
    labels.insert(
        "nvidia.com/mig.capable".into(),
        (!model.mig_profiles.is_empty()).to_string(),
    );
    labels.insert(
        "nvidia.com/mps.capable".into(),
        (strategy == "mps").to_string(),
    );
    labels.insert(
        "nvidia.com/mig.strategy".into(),
        config.mig_strategy.label().into(),
    );
    ad
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalog::model;

    fn time_slicing(replicas: u32, rename: bool) -> SharingConfig {
        SharingConfig::parse(&format!(
            "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    renameByDefault: {rename}\n    resources:\n    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
        ))
        .unwrap()
    }

    #[test]
    fn a_t4_node_with_ten_replicas_advertises_ten() {
        let node = GpuNode {
            model: model("Tesla-T4").unwrap(),
            count: 1,
        };
        let config = time_slicing(10, false);
        let ad = advertise(
            &node,
            &NodeConfig {
                sharing: Some(&config),
                ..Default::default()
            },
        );
        assert_eq!(ad.allocatable["nvidia.com/gpu"], 10);
        assert_eq!(ad.labels["nvidia.com/gpu.product"], "Tesla-T4-SHARED");
        assert_eq!(ad.labels["nvidia.com/gpu.replicas"], "10");
        assert_eq!(ad.labels["nvidia.com/gpu.sharing-strategy"], "time-slicing");
        assert_eq!(ad.labels["nvidia.com/gpu.count"], "1");
    }

    #[test]
    fn eight_a100s_with_ten_replicas_advertise_eighty_and_rename_moves_them() {
        let node = GpuNode {
            model: model("NVIDIA-A100-SXM4-40GB").unwrap(),
            count: 8,
        };
        let config = time_slicing(10, false);
        assert_eq!(
            advertise(
                &node,
                &NodeConfig {
                    sharing: Some(&config),
                    ..Default::default()
                }
            )
            .allocatable["nvidia.com/gpu"],
            80
        );
        let renamed = time_slicing(10, true);
        let ad = advertise(
            &node,
            &NodeConfig {
                sharing: Some(&renamed),
                ..Default::default()
            },
        );
        assert_eq!(ad.allocatable["nvidia.com/gpu"], 0);
        assert_eq!(ad.allocatable["nvidia.com/gpu.shared"], 80);
        assert_eq!(ad.labels["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-40GB");
    }

    #[test]
    fn without_sharing_a_node_advertises_its_gpus() {
        let node = GpuNode {
            model: model("NVIDIA-A10G").unwrap(),
            count: 4,
        };
        let ad = advertise(&node, &NodeConfig::default());
        assert_eq!(ad.allocatable["nvidia.com/gpu"], 4);
        assert_eq!(ad.labels["nvidia.com/gpu.sharing-strategy"], "none");
        assert_eq!(ad.labels["nvidia.com/mig.capable"], "false");
    }

    #[test]
    fn mig_mixed_and_single_strategies() {
        let node = GpuNode {
            model: model("NVIDIA-A100-SXM4-80GB").unwrap(),
            count: 1,
        };
        let configs = mig::MigConfigs::parse(
            &std::fs::read_to_string(mig::tests::default_config_path()).unwrap(),
        )
        .unwrap();
        let layout = configs.layout_for("all-1g.10gb", node.model).unwrap();
        let mixed = advertise(
            &node,
            &NodeConfig {
                mig: Some(&layout),
                mig_strategy: MigStrategy::Mixed,
                ..Default::default()
            },
        );
        assert_eq!(mixed.allocatable["nvidia.com/mig-1g.10gb"], 7);
        assert_eq!(mixed.labels["nvidia.com/mig.strategy"], "mixed");
        let single = advertise(
            &node,
            &NodeConfig {
                mig: Some(&layout),
                mig_strategy: MigStrategy::Single,
                ..Default::default()
            },
        );
        assert_eq!(single.allocatable["nvidia.com/gpu"], 7);
        assert_eq!(
            single.labels["nvidia.com/gpu.product"],
            "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"
        );
    }
}
