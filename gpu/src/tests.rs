//! The model on the reference flows and on the ways a stack can get GPUs wrong.

use crate::{Model, Sourced};
use gpustack_protocol::{
    CeilingFact, CloudSharing, ClusterFact, ConfigMapFact, GpuFact, GpuShape, ManagedSoftware,
    NodeFact, NodeLabelsFact, OperatorFact, OperatorSource, PoolFact, PoolShape, path, path_text,
};
use serde_json::json;
use std::collections::BTreeMap;

const TS10: &str = "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n";
const TS1: &str = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n";
const TS4: &str = "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";
const UNSHARED: &str = "version: v1\nflags:\n  migStrategy: none\n";
const MPS4: &str = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n";

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn node(name: &str, labels: &[(&str, &str)], allocatable: &[(&str, f64)]) -> NodeFact {
    NodeFact {
        name: name.into(),
        labels: map(labels),
        allocatable: allocatable
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        dra_devices: vec![],
        dra_counters: BTreeMap::new(),
        gpu_pods: vec![],
        not_ready: false,
    }
}

fn cluster(
    nodes: Vec<NodeFact>,
    policy: Option<serde_json::Value>,
    maps: &[(&str, BTreeMap<String, String>)],
) -> GpuFact {
    GpuFact::Cluster(ClusterFact {
        nodes,
        policy,
        operator_namespace: Some("gpu-operator".into()),
        policy_release: None,
        config_maps: maps
            .iter()
            .map(|(n, d)| ((*n).to_owned(), d.clone()))
            .collect(),
        gpu_cluster: None,
        device_classes: BTreeMap::new(),
        dra_driver_release: None,
        device_plugin_releases: Vec::new(),
        unread: Vec::new(),
    })
}

/// A live cluster whose ClusterPolicy points the device plugin at `time-slicing-config`, which
/// gives every node 10 replicas under its `any` key.
fn time_sliced_cluster(nodes: Vec<NodeFact>) -> GpuFact {
    let policy =
        json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}});
    cluster(
        nodes,
        Some(policy),
        &[("time-slicing-config", map(&[("any", TS10)]))],
    )
}

fn config_map(name: &str, data: &[(&str, &str)], before: Option<&[(&str, &str)]>) -> GpuFact {
    GpuFact::ConfigMap(ConfigMapFact {
        namespace: "gpu-operator".into(),
        name: name.into(),
        data: Some(map(data)),
        data_before: before.map(map),
        attribute: path(["manifest", "data"]),
    })
}

fn operator(source: OperatorSource, settings: serde_json::Value) -> GpuFact {
    let attribute = match source {
        OperatorSource::HelmValues => path(["values"]),
        OperatorSource::ClusterPolicy => path(["manifest", "spec"]),
        OperatorSource::ClusterPolicyPatch => path(["patch", "spec"]),
    };
    GpuFact::Operator(OperatorFact {
        source,
        namespace: Some("gpu-operator".into()),
        settings: Some(settings),
        settings_before: None,
        attribute,
    })
}

fn labels(node: &str, set: &[(&str, &str)]) -> GpuFact {
    GpuFact::NodeLabels(NodeLabelsFact {
        node: node.into(),
        labels: map(set),
        labels_before: BTreeMap::new(),
        attribute: path(["labels"]),
    })
}

fn model(facts: &[(&str, GpuFact)]) -> Model {
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|(address, fact)| Sourced { address, fact })
        .collect();
    Model::build(&sourced)
}

fn drift_texts(facts: &[(&str, GpuFact)]) -> Vec<String> {
    model(facts)
        .drift()
        .iter()
        .map(crate::NodeDrift::text)
        .collect()
}

fn lines(facts: &[(&str, GpuFact)]) -> Vec<String> {
    model(facts)
        .capacity()
        .iter()
        .map(|(_, c)| c.text())
        .collect()
}

/// The errors the checks find (warnings are checked where they matter).
fn findings(facts: &[(&str, GpuFact)]) -> Vec<String> {
    model(facts)
        .findings()
        .iter()
        .filter(|f| f.severity == crate::Severity::Error)
        .map(|f| format!("{} at {}.{}", f.summary, f.address, path_text(&f.path)))
        .collect()
}

/// GFD's labels on a node with one A100 80 GB.
const A100_GFD: &[(&str, &str)] = &[
    ("nvidia.com/gpu.count", "1"),
    ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
];

const T4_GFD: &[(&str, &str)] = &[
    ("nvidia.com/gpu.count", "1"),
    ("nvidia.com/gpu.product", "Tesla-T4"),
];

/// The reference flow on a cluster without the operator: the node is known only by its
/// instance type, and joins the time-slicing key through a label set in the same plan.
fn reference_flow() -> Vec<(&'static str, GpuFact)> {
    vec![
        (
            "module.gpu_operator.helm_release.operator",
            operator(
                OperatorSource::HelmValues,
                json!({"driver": {"enabled": false}}),
            ),
        ),
        (
            "module.time_slicing.module.sharing.kubernetes_manifest.config",
            config_map(
                "time-slicing-config",
                &[("any", TS10), ("unshared", UNSHARED)],
                None,
            ),
        ),
        (
            "module.time_slicing.module.sharing.kubernetes_manifest.config",
            cluster(
                vec![
                    node(
                        "demo-gpu-0",
                        &[("node.kubernetes.io/instance-type", "Standard_NC4as_T4_v3")],
                        &[],
                    ),
                    node("demo-system", &[], &[]),
                ],
                None,
                &[],
            ),
        ),
        (
            "module.time_slicing.module.sharing.kubernetes_patch.cluster_policy",
            operator(
                OperatorSource::ClusterPolicyPatch,
                json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "unshared"}}}),
            ),
        ),
        (
            "module.time_slicing.module.sharing.kubernetes_labels.pool[\"demo-gpu-0\"]",
            labels("demo-gpu-0", &[("nvidia.com/device-plugin.config", "any")]),
        ),
    ]
}

#[test]
fn the_reference_flow_from_nothing_shows_the_nodes_shared_gpus() {
    let facts = reference_flow();
    assert_eq!(
        lines(&facts),
        [
            "node demo-gpu-0 (1× T4) → nvidia.com/gpu 1 → 10 (time-slicing ×10; joins time-slicing-config key any by label; the GPU Operator is installed by this plan; 1× T4 from instance type Standard_NC4as_T4_v3, built-in table)"
        ]
    );
    assert!(findings(&facts).is_empty(), "{:?}", findings(&facts));
}

#[test]
fn changing_replicas_on_a_live_node_says_before_and_after() {
    let facts = vec![
        (
            "kubernetes_manifest.config",
            time_sliced_cluster(vec![node("gpu-0", T4_GFD, &[("nvidia.com/gpu", 10.0)])]),
        ),
        (
            "kubernetes_manifest.config",
            config_map(
                "time-slicing-config",
                &[("any", &TS10.replace("10", "4"))],
                Some(&[("any", TS10)]),
            ),
        ),
    ];
    assert_eq!(
        lines(&facts),
        ["node gpu-0 (1× Tesla-T4): nvidia.com/gpu 10 → 4 (time-slicing ×4)"]
    );
}

#[test]
fn a_node_leaving_a_config_by_label_goes_back_to_whole_gpus() {
    let policy =
        json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "unshared"}}});
    let live_labels: Vec<(&str, &str)> = T4_GFD
        .iter()
        .copied()
        .chain([("nvidia.com/device-plugin.config", "any")])
        .collect();
    let facts = vec![
        (
            "kubernetes_labels.pool",
            cluster(
                vec![node("gpu-0", &live_labels, &[("nvidia.com/gpu", 10.0)])],
                Some(policy),
                &[(
                    "time-slicing-config",
                    map(&[("any", TS10), ("unshared", UNSHARED)]),
                )],
            ),
        ),
        (
            "kubernetes_labels.pool",
            labels("gpu-0", &[("nvidia.com/device-plugin.config", "unshared")]),
        ),
    ];
    assert_eq!(
        lines(&facts),
        [
            "node gpu-0 (1× Tesla-T4): nvidia.com/gpu 10 → 1 (no sharing; joins time-slicing-config key unshared by label)"
        ]
    );
}

#[test]
fn the_same_bad_config_is_found_as_a_module_a_raw_config_map_or_helm_values() {
    let raw = vec![(
        "kubernetes_manifest.ts",
        config_map("ts", &[("any", TS1)], None),
    )];
    assert_eq!(
        findings(&raw),
        [
            "Sharing replicas below 2 at kubernetes_manifest.ts.manifest.data.any.sharing.timeSlicing.resources[0].replicas"
        ]
    );
    let helm = vec![(
        "helm_release.gpu_operator",
        operator(
            OperatorSource::HelmValues,
            json!({"devicePlugin": {"config": {"create": true, "name": "ts", "default": "any", "data": {"any": TS1}}}}),
        ),
    )];
    assert_eq!(
        findings(&helm),
        [
            "Sharing replicas below 2 at helm_release.gpu_operator.values.devicePlugin.config.data.any.sharing.timeSlicing.resources[0].replicas"
        ]
    );
}

#[test]
fn a_mig_profile_the_nodes_gpu_lacks_is_refused_whatever_the_module_was_told() {
    let h100: &[(&str, &str)] = &[
        ("nvidia.com/gpu.count", "8"),
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
        ("nvidia.com/gpu.memory", "81559"),
    ];
    let facts = vec![
        (
            "module.mig.kubernetes_labels.geometry[\"gpu-0\"]",
            cluster(
                vec![node("gpu-0", h100, &[("nvidia.com/gpu", 8.0)])],
                Some(json!({"mig": {"strategy": "mixed"}})),
                &[],
            ),
        ),
        (
            "module.mig.kubernetes_labels.geometry[\"gpu-0\"]",
            labels("gpu-0", &[("nvidia.com/mig.config", "all-1g.5gb")]),
        ),
    ];
    let found = model(&facts).findings();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].summary, "MIG profile the node's GPU lacks");
    assert_eq!(
        path_text(&found[0].path),
        "labels[\"nvidia.com/mig.config\"]"
    );
    assert!(
        found[0].detail.contains("NVIDIA-H100-80GB-HBM3"),
        "{}",
        found[0].detail
    );
}

#[test]
fn a_mig_geometry_change_moves_gpus_to_mig_resources() {
    let a100 = A100_GFD;
    let facts = vec![
        (
            "kubernetes_labels.geometry",
            cluster(
                vec![node("gpu-0", a100, &[("nvidia.com/gpu", 1.0)])],
                Some(json!({"mig": {"strategy": "mixed"}})),
                &[],
            ),
        ),
        (
            "kubernetes_labels.geometry",
            labels("gpu-0", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
    ];
    assert_eq!(
        lines(&facts),
        [
            "node gpu-0 (1× NVIDIA-A100-SXM4-80GB): nvidia.com/gpu 1 → 0 (MIG all-1g.10gb (mixed, built-in table geometry))",
            "node gpu-0 (1× NVIDIA-A100-SXM4-80GB): nvidia.com/mig-1g.10gb 0 → 7 (MIG all-1g.10gb (mixed, built-in table geometry))"
        ]
    );
}

#[test]
fn time_slicing_of_mig_devices_multiplies_them() {
    let a100 = A100_GFD;
    let ts_mig = "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n";
    let policy = json!({"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "ts", "default": "mig"}}});
    let facts = vec![
        (
            "kubernetes_manifest.ts",
            cluster(
                vec![node("gpu-0", a100, &[("nvidia.com/gpu", 1.0)])],
                Some(policy),
                &[],
            ),
        ),
        (
            "kubernetes_manifest.ts",
            config_map("ts", &[("mig", ts_mig)], None),
        ),
        (
            "kubernetes_labels.geometry",
            labels("gpu-0", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
    ];
    let found = lines(&facts);
    assert!(
        found
            .iter()
            .any(|l| l.contains("nvidia.com/mig-1g.10gb 0 → 14 (time-slicing ×2; MIG all-1g.10gb")),
        "{found:?}"
    );
}

#[test]
fn two_configs_for_one_pointer_and_mps_on_mig_nodes_are_refused() {
    let a100 = A100_GFD;
    let policy = json!({"mig": {"strategy": "single"}});
    let facts = vec![
        (
            "module.ts.kubernetes_manifest.config",
            cluster(
                vec![node("gpu-0", a100, &[("nvidia.com/gpu", 1.0)])],
                Some(policy),
                &[],
            ),
        ),
        (
            "module.ts.kubernetes_manifest.config",
            config_map("time-slicing-config", &[("any", TS10)], None),
        ),
        (
            "module.mps.kubernetes_manifest.config",
            config_map("mps-config", &[("any", MPS4)], None),
        ),
        (
            "module.ts.kubernetes_patch.cluster_policy",
            operator(
                OperatorSource::ClusterPolicyPatch,
                json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}}),
            ),
        ),
        (
            "module.mps.kubernetes_patch.cluster_policy",
            operator(
                OperatorSource::ClusterPolicyPatch,
                json!({"devicePlugin": {"config": {"name": "mps-config", "default": "any"}}}),
            ),
        ),
        (
            "module.mig.kubernetes_labels.geometry",
            labels("gpu-0", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
    ];
    assert_eq!(
        findings(&facts),
        [
            "Two configs for one ClusterPolicy field at module.mps.kubernetes_patch.cluster_policy.patch.spec.devicePlugin.config.name",
            "MPS and MIG on the same node at module.mig.kubernetes_labels.geometry.labels[\"nvidia.com/mig.config\"]"
        ]
    );
}

#[test]
fn drift_names_a_node_below_what_its_config_gives() {
    let facts = vec![(
        "kubernetes_manifest.config",
        time_sliced_cluster(vec![
            node("gpu-0", T4_GFD, &[("nvidia.com/gpu", 10.0)]),
            node("gpu-1", T4_GFD, &[("nvidia.com/gpu", 0.0)]),
        ]),
    )];
    assert_eq!(
        drift_texts(&facts),
        [
            "node gpu-1 advertises nvidia.com/gpu 0, the GPU model expects 10 (time-slicing ×10; 1× Tesla-T4 from GFD labels)"
        ]
    );
}

fn pool(
    kind: &str,
    name: &str,
    label: (&str, &str),
    before: Option<PoolShape>,
    after: Option<PoolShape>,
    new: bool,
) -> GpuFact {
    GpuFact::Pool(PoolFact {
        kind: kind.into(),
        name: name.into(),
        node_labels: map(&[label]),
        labels_attribute: path(["node_labels"]),
        before,
        after,
        new,
        managed_gpu_software: None,
        removes: None,
    })
}

fn shape(
    nodes: u32,
    machine: &str,
    count: u32,
    model: &str,
    memory_gb: u32,
    source: &str,
) -> PoolShape {
    PoolShape {
        min_nodes: nodes,
        max_nodes: nodes,
        machine: machine.into(),
        gpus: Some(GpuShape {
            count,
            model: model.into(),
            memory_gb,
            source: source.into(),
        }),
        sharing: None,
    }
}

#[test]
fn pools_of_the_three_clouds_with_sharing_mig_and_scaling() {
    let t4 = |n| shape(n, "Standard_NC4as_T4_v3", 1, "T4", 16, "built-in table");
    let aks = vec![
        (
            "aks_nodepool.t4",
            pool(
                "nodepool",
                "gpupool",
                ("kubernetes.azure.com/agentpool", "gpupool"),
                None,
                Some(t4(1)),
                true,
            ),
        ),
        (
            "kubernetes_manifest.config",
            config_map("time-slicing-config", &[("any", TS10)], None),
        ),
        (
            "helm_release.operator",
            operator(
                OperatorSource::HelmValues,
                json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}}),
            ),
        ),
    ];
    assert_eq!(
        lines(&aks),
        [
            "nodepool gpupool: 1 × Standard_NC4as_T4_v3 (1× T4) → nvidia.com/gpu 1 → 10 (time-slicing ×10; new pool; 16 GB per GPU; GPUs from the built-in table)"
        ]
    );
    let g4 = |n| shape(n, "g4dn.xlarge", 1, "T4", 16, "EC2 DescribeInstanceTypes");
    let eks = vec![(
        "eks_nodegroup.gpu",
        pool(
            "nodegroup",
            "gpu",
            ("eks.amazonaws.com/nodegroup", "gpu"),
            Some(g4(2)),
            Some(g4(3)),
            false,
        ),
    )];
    assert_eq!(
        lines(&eks),
        [
            "nodegroup gpu: 3 × g4dn.xlarge (1× T4): nvidia.com/gpu 2 → 3 (no sharing; 2 → 3 nodes; 16 GB per GPU)"
        ]
    );
    let mut h100 = shape(1, "a3-highgpu-8g", 8, "H100", 80, "accelerator type");
    h100.sharing = Some(CloudSharing {
        mig_profile: Some("1g.20gb".into()),
        clients: None,
    });
    let gke = vec![(
        "gke_nodepool.h100",
        pool(
            "nodepool",
            "h100",
            ("cloud.google.com/gke-nodepool", "h100"),
            None,
            Some(h100),
            true,
        ),
    )];
    assert_eq!(
        lines(&gke),
        [
            "nodepool h100: 1 × a3-highgpu-8g (8× H100) → nvidia.com/gpu 8 → 32 (MIG 1g.20gb ×4; new pool; 80 GB per GPU)"
        ]
    );
    let removed = vec![(
        "aks_nodepool.t4",
        pool(
            "nodepool",
            "gpupool",
            ("kubernetes.azure.com/agentpool", "gpupool"),
            Some(t4(2)),
            None,
            false,
        ),
    )];
    assert_eq!(
        lines(&removed),
        [
            "nodepool gpupool: 2 × Standard_NC4as_T4_v3 (1× T4): nvidia.com/gpu 2 → 0 (no sharing; pool removed; 16 GB per GPU; GPUs from the built-in table)"
        ]
    );
}

#[test]
fn a_new_pools_nodes_are_checked_against_its_machines_gpus() {
    let h100 = shape(1, "p5.48xlarge", 8, "H100", 80, "EC2 DescribeInstanceTypes");
    let mut mig_pool = pool(
        "nodegroup",
        "mig",
        ("eks.amazonaws.com/nodegroup", "mig"),
        None,
        Some(h100),
        true,
    );
    if let GpuFact::Pool(p) = &mut mig_pool {
        p.node_labels
            .insert("nvidia.com/mig.config".into(), "all-1g.5gb".into());
        p.node_labels
            .insert("nvidia.com/device-plugin.config".into(), "mps".into());
    }
    let facts = vec![
        ("eks_nodegroup.mig", mig_pool),
        (
            "kubernetes_manifest.config",
            config_map("sharing", &[("mps", MPS4)], None),
        ),
        (
            "helm_release.operator",
            operator(
                OperatorSource::HelmValues,
                json!({"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "sharing"}}}),
            ),
        ),
    ];
    assert_eq!(
        findings(&facts),
        [
            "MIG profile the node's GPU lacks at eks_nodegroup.mig.node_labels[\"nvidia.com/mig.config\"]",
            "MPS and MIG on the same node at eks_nodegroup.mig.node_labels[\"nvidia.com/device-plugin.config\"]",
        ]
    );
    // A pool whose nodes are live is checked through its nodes, once.
    let mut live = facts.clone();
    live.push((
        "eks_nodegroup.mig",
        cluster(
            vec![node(
                "ip-10-0-0-1",
                &[
                    ("eks.amazonaws.com/nodegroup", "mig"),
                    ("nvidia.com/mig.config", "all-1g.5gb"),
                    ("nvidia.com/device-plugin.config", "mps"),
                    ("nvidia.com/gpu.count", "8"),
                    ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
                ],
                &[],
            )],
            None,
            &[],
        ),
    ));
    // A pool whose nodes are live is checked through its nodes, once: the MPS config the
    // stack writes is what changes there.
    assert_eq!(
        findings(&live),
        ["MPS and MIG on the same node at kubernetes_manifest.config.manifest.data.mps"]
    );
}

#[test]
fn a_mig_pool_whose_partitions_the_table_lacks_says_so() {
    let mut nvl = shape(
        1,
        "Standard_NC40ads_H100_v5",
        1,
        "H100",
        94,
        "built-in table",
    );
    nvl.sharing = Some(CloudSharing {
        mig_profile: Some("1g.12gb".into()),
        clients: None,
    });
    let facts = vec![(
        "aks_nodepool.nvl",
        pool(
            "nodepool",
            "nvl",
            ("kubernetes.azure.com/agentpool", "nvl"),
            None,
            Some(nvl),
            true,
        ),
    )];
    let warnings: Vec<String> = model(&facts)
        .findings()
        .iter()
        .map(|f| format!("{:?} {} at {}", f.severity, f.summary, f.address))
        .collect();
    assert_eq!(
        warnings,
        ["Warning MIG partitions unknown at aks_nodepool.nvl"]
    );
    assert_eq!(
        lines(&facts),
        [
            "nodepool nvl: 1 × Standard_NC40ads_H100_v5 (1× H100) → nvidia.com/gpu 1 → 1 (MIG 1g.12gb, partitions per GPU unknown to the built-in table for H100 94 GB: counted as 1; new pool; 94 GB per GPU; GPUs from the built-in table)"
        ]
    );
}

#[test]
fn the_clouds_own_device_plugin_and_the_operators_on_one_pool_are_refused() {
    let t4 = shape(1, "Standard_NC4as_T4_v3", 1, "T4", 16, "built-in table");
    let mut managed = pool(
        "nodepool",
        "gpupool",
        ("kubernetes.azure.com/agentpool", "gpupool"),
        None,
        Some(t4),
        true,
    );
    if let GpuFact::Pool(p) = &mut managed {
        p.managed_gpu_software = Some(ManagedSoftware {
            what: "AKS managed GPU mode".into(),
            attribute: path(["gpu_management_mode"]),
            device_plugin: true,
        });
    }
    let facts = vec![
        ("aks_nodepool.t4", managed),
        (
            "helm_release.operator",
            operator(OperatorSource::HelmValues, json!({})),
        ),
    ];
    assert_eq!(
        findings(&facts),
        ["Two device plugins on one pool at aks_nodepool.t4.gpu_management_mode"]
    );
}

#[test]
fn karpenter_ceilings_count_physical_gpus() {
    let facts = vec![
        (
            "kubernetes_manifest.nodepool",
            GpuFact::Ceiling(CeilingFact {
                scope: "karpenter nodepool gpu".into(),
                resource: "nvidia.com/gpu".into(),
                before: Some(8.0),
                after: Some(16.0),
                node_labels: BTreeMap::new(),
            }),
        ),
        (
            "kubernetes_manifest.config",
            config_map("time-slicing-config", &[("any", TS10)], None),
        ),
        (
            "helm_release.operator",
            operator(
                OperatorSource::HelmValues,
                json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}}),
            ),
        ),
    ];
    assert_eq!(
        lines(&facts),
        [
            "karpenter nodepool gpu: nvidia.com/gpu 8 → 16 (a ceiling on physical GPUs: the autoscaler does not count sharing; time-slicing ×10: up to 160 schedulable)"
        ]
    );
}

#[test]
fn a_gpu_size_the_table_lacks_is_reported_not_silently_left_out() {
    let mut unknown = shape(1, "Standard_NC6s_v3", 1, "V100", 16, "built-in table");
    unknown.gpus = None;
    let facts = vec![(
        "aks_nodepool.v100",
        pool(
            "nodepool",
            "v100",
            ("kubernetes.azure.com/agentpool", "v100"),
            None,
            Some(unknown),
            true,
        ),
    )];
    assert!(lines(&facts).is_empty());
    let found = model(&facts).findings();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].severity, crate::Severity::Warning);
    assert!(
        found[0].detail.contains("Standard_NC6s_v3"),
        "{}",
        found[0].detail
    );
}

#[test]
fn devices_published_by_nvidias_dra_driver_count_as_the_nodes_gpus() {
    let mut dra = node("dra-0", &[], &[]);
    dra.dra_devices = (0..2)
        .map(|i| gpustack_protocol::DraDevice {
            attributes: BTreeMap::new(),
            capacity: BTreeMap::new(),
            consumes: BTreeMap::new(),
            name: format!("gpu-{i}"),
            kind: "gpu".into(),
            product: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: Some(81559),
        })
        .collect();
    let facts = vec![
        (
            "kubernetes_labels.geometry",
            cluster(vec![dra], Some(json!({})), &[]),
        ),
        (
            "kubernetes_labels.geometry",
            labels("dra-0", &[("nvidia.com/mig.config", "all-1g.5gb")]),
        ),
    ];
    let found = model(&facts).findings();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].detail.contains("from DRA ResourceSlices"),
        "{}",
        found[0].detail
    );
}

#[test]
fn the_device_plugin_planned_onto_a_dra_node_is_refused() {
    let mut dra = node("dra-0", &[], &[]);
    dra.dra_devices = vec![gpustack_protocol::DraDevice {
        attributes: BTreeMap::new(),
        capacity: BTreeMap::new(),
        consumes: BTreeMap::new(),
        name: "gpu-0".into(),
        kind: "gpu".into(),
        product: "NVIDIA H100 80GB HBM3".into(),
        memory_mib: Some(81559),
    }];
    let mut opted_out = dra.clone();
    opted_out.name = "dra-1".into();
    opted_out
        .labels
        .insert("nvidia.com/gpu.deploy.device-plugin".into(), "false".into());
    let facts = vec![
        (
            "helm_release.operator",
            cluster(vec![dra, opted_out], None, &[]),
        ),
        (
            "helm_release.operator",
            operator(OperatorSource::HelmValues, json!({})),
        ),
    ];
    assert_eq!(
        findings(&facts),
        ["Device plugin and DRA driver on one node at helm_release.operator.values"]
    );
}

/// Every capacity line of the cases above in one snapshot, as a plan prints them.
#[test]
fn capacity_lines_snapshot() {
    let a100 = A100_GFD;
    let t4 = |n| shape(n, "Standard_NC4as_T4_v3", 1, "T4", 16, "built-in table");
    let mut h100 = shape(
        2,
        "a3-highgpu-8g",
        8,
        "H100",
        80,
        "accelerator type nvidia-h100-80gb, built-in table",
    );
    h100.sharing = Some(CloudSharing {
        mig_profile: Some("1g.20gb".into()),
        clients: None,
    });
    let mut mig_aks = shape(
        1,
        "Standard_NC24ads_A100_v4",
        1,
        "A100",
        80,
        "built-in table",
    );
    mig_aks.sharing = Some(CloudSharing {
        mig_profile: Some("1g".into()),
        clients: None,
    });
    let g5 = |n| shape(n, "g5.xlarge", 1, "A10G", 24, "EC2 DescribeInstanceTypes");
    let mut all = reference_flow();
    all.extend([
        (
            "kubernetes_labels.geometry",
            cluster(
                vec![node("mig-0", a100, &[("nvidia.com/gpu", 1.0)])],
                Some(json!({"mig": {"strategy": "mixed"}})),
                &[],
            ),
        ),
        (
            "kubernetes_labels.geometry",
            labels("mig-0", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
        (
            "aks_nodepool.t4",
            pool(
                "nodepool",
                "gpupool",
                ("kubernetes.azure.com/agentpool", "gpupool"),
                Some(t4(1)),
                Some(t4(3)),
                false,
            ),
        ),
        (
            "aks_nodepool.mig",
            pool(
                "nodepool",
                "migpool",
                ("kubernetes.azure.com/agentpool", "migpool"),
                None,
                Some(mig_aks),
                true,
            ),
        ),
        (
            "gke_nodepool.h100",
            pool(
                "nodepool",
                "h100",
                ("cloud.google.com/gke-nodepool", "h100"),
                None,
                Some(h100),
                true,
            ),
        ),
        (
            "eks_nodegroup.a10g",
            pool(
                "nodegroup",
                "a10g",
                ("eks.amazonaws.com/nodegroup", "a10g"),
                Some(g5(2)),
                Some(shape(
                    2,
                    "g4dn.xlarge",
                    1,
                    "T4",
                    16,
                    "EC2 DescribeInstanceTypes",
                )),
                true,
            ),
        ),
        (
            "gke_node_autoprovisioning.gpu",
            GpuFact::Ceiling(CeilingFact {
                scope: "gke node auto-provisioning nvidia-tesla-t4".into(),
                resource: "nvidia.com/gpu".into(),
                before: None,
                after: Some(8.0),
                node_labels: map(&[("cloud.google.com/gke-accelerator", "nvidia-tesla-t4")]),
            }),
        ),
    ]);
    insta::assert_snapshot!(lines(&all).join("\n"));
}

#[test]
fn correct_mig_stacks_are_not_refused() {
    let a100_40: &[(&str, &str)] = &[
        ("nvidia.com/gpu.count", "8"),
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
    ];
    // NVIDIA's default set lists the 80 GB entry of all-1g.10gb first.
    let set = "version: v1\nmig-configs:\n  all-1g.10gb:\n  - device-filter: [\"0x20B210DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices:\n      \"1g.10gb\": 7\n  - device-filter: [\"0x20B010DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices:\n      \"1g.10gb\": 4\n";
    let policy = json!({"mig": {"strategy": "mixed"}, "migManager": {"config": {"name": "default-mig-parted-config", "default": "all-disabled"}}});
    let facts = vec![
        (
            "kubernetes_labels.geometry",
            cluster(
                vec![
                    node("a100", a100_40, &[("nvidia.com/gpu", 8.0)]),
                    node("t4", T4_GFD, &[("nvidia.com/gpu", 1.0)]),
                ],
                Some(policy),
                &[("default-mig-parted-config", map(&[("config.yaml", set)]))],
            ),
        ),
        (
            "kubernetes_labels.geometry",
            labels("a100", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
        // A default geometry reaches MIG-capable nodes only: the T4 keeps its GPU.
        (
            "kubernetes_patch.mig",
            operator(
                OperatorSource::ClusterPolicyPatch,
                json!({"migManager": {"config": {"default": "all-1g.10gb"}}}),
            ),
        ),
    ];
    assert!(findings(&facts).is_empty(), "{:?}", findings(&facts));
    let found = lines(&facts);
    assert!(
        found
            .iter()
            .any(|l| l.contains("nvidia.com/mig-1g.10gb 0 → 32")),
        "{found:?}"
    );
    assert!(!found.iter().any(|l| l.starts_with("node t4")), "{found:?}");
}

#[test]
fn time_slicing_mig_devices_follows_the_clusterpolicys_strategy() {
    let a100 = A100_GFD;
    let ts_mig = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n";
    let facts = |strategy: &str| {
        vec![
            (
                "kubernetes_manifest.ts",
                cluster(
                    vec![node("gpu-0", a100, &[("nvidia.com/gpu", 1.0)])],
                    Some(
                        json!({"mig": {"strategy": strategy}, "devicePlugin": {"config": {"name": "ts", "default": "mig"}}}),
                    ),
                    &[],
                ),
            ),
            (
                "kubernetes_manifest.ts",
                config_map("ts", &[("mig", ts_mig)], None),
            ),
        ]
    };
    assert!(
        findings(&facts("mixed")).is_empty(),
        "{:?}",
        findings(&facts("mixed"))
    );
    assert_eq!(
        findings(&facts("single")),
        [
            "Time-slicing a MIG resource without the mixed strategy at kubernetes_manifest.ts.manifest.data.mig"
        ]
    );
}

#[test]
fn a_mig_gpu_the_table_lacks_is_a_warning_and_an_opted_out_node_goes_to_zero() {
    let b200: &[(&str, &str)] = &[
        ("nvidia.com/gpu.count", "8"),
        ("nvidia.com/gpu.product", "NVIDIA-B200"),
        ("nvidia.com/gpu.memory", "183359"),
    ];
    let facts = vec![
        (
            "kubernetes_labels.geometry",
            cluster(
                vec![node("b200", b200, &[("nvidia.com/gpu", 8.0)])],
                Some(json!({})),
                &[],
            ),
        ),
        (
            "kubernetes_labels.geometry",
            labels("b200", &[("nvidia.com/mig.config", "all-1g.23gb")]),
        ),
    ];
    let found = model(&facts).findings();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].severity, crate::Severity::Warning);
    assert_eq!(found[0].summary, "MIG geometry not checked");

    let facts = vec![
        (
            "kubernetes_labels.off",
            cluster(
                vec![node("gpu-0", T4_GFD, &[("nvidia.com/gpu", 1.0)])],
                Some(json!({})),
                &[],
            ),
        ),
        (
            "kubernetes_labels.off",
            labels("gpu-0", &[("nvidia.com/gpu.deploy.device-plugin", "false")]),
        ),
    ];
    assert_eq!(
        lines(&facts),
        [
            "node gpu-0 (1× Tesla-T4): nvidia.com/gpu 1 → 0 (no device plugin: the node opts out of the device plugin (nvidia.com/gpu.deploy.device-plugin=false))"
        ]
    );
    let disruptions = model(&facts).disruptions();
    assert_eq!(disruptions.len(), 1, "{disruptions:?}");
    assert_eq!(
        disruptions[0].change,
        "stops the device plugin (the node opts out of the device plugin (nvidia.com/gpu.deploy.device-plugin=false))"
    );
    assert!(
        disruptions[0]
            .effect
            .starts_with("its GPUs leave allocatable"),
        "{disruptions:?}"
    );
}

#[test]
fn a_node_whose_label_resource_is_deleted_leaves_its_config() {
    let policy =
        json!({"devicePlugin": {"config": {"name": "time-slicing-config", "default": "unshared"}}});
    let live_labels: Vec<(&str, &str)> = T4_GFD
        .iter()
        .copied()
        .chain([("nvidia.com/device-plugin.config", "any")])
        .collect();
    let deleted = labels("gpu-0", &[("nvidia.com/device-plugin.config", "any")])
        .removed()
        .expect("labels go with their resource");
    let facts = vec![
        (
            "kubernetes_labels.pool[\"gpu-0\"]",
            cluster(
                vec![node("gpu-0", &live_labels, &[("nvidia.com/gpu", 10.0)])],
                Some(policy),
                &[(
                    "time-slicing-config",
                    map(&[("any", TS10), ("unshared", UNSHARED)]),
                )],
            ),
        ),
        ("kubernetes_labels.pool[\"gpu-0\"]", deleted),
    ];
    assert_eq!(
        lines(&facts),
        [
            "node gpu-0 (1× Tesla-T4): nvidia.com/gpu 10 → 1 (no sharing; label removed: back to time-slicing-config key unshared, the default)"
        ]
    );
}

#[test]
fn mig_on_a_t4_several_profiles_under_single_an_unknown_geometry_and_a_missing_key() {
    let geometry = |gfd: &[(&str, &str)], strategy: &str, name: &str| {
        vec![
            (
                "kubernetes_labels.g",
                cluster(
                    vec![node("n", gfd, &[("nvidia.com/gpu", 1.0)])],
                    Some(json!({"mig": {"strategy": strategy}})),
                    &[],
                ),
            ),
            (
                "kubernetes_labels.g",
                labels("n", &[("nvidia.com/mig.config", name)]),
            ),
        ]
    };
    assert_eq!(
        findings(&geometry(T4_GFD, "single", "all-1g.10gb")),
        ["MIG on a GPU without MIG at kubernetes_labels.g.labels[\"nvidia.com/mig.config\"]"]
    );
    assert_eq!(
        findings(&geometry(A100_GFD, "single", "all-balanced")),
        [
            "Several MIG profiles under the single strategy at kubernetes_labels.g.labels[\"nvidia.com/mig.config\"]"
        ]
    );
    assert_eq!(
        findings(&geometry(A100_GFD, "mixed", "my-geometry")),
        ["Unknown MIG geometry at kubernetes_labels.g.labels[\"nvidia.com/mig.config\"]"]
    );
    let missing = vec![
        (
            "kubernetes_labels.pool",
            time_sliced_cluster(vec![node("n", T4_GFD, &[("nvidia.com/gpu", 1.0)])]),
        ),
        (
            "kubernetes_labels.pool",
            labels("n", &[("nvidia.com/device-plugin.config", "ts-20")]),
        ),
    ];
    assert_eq!(
        findings(&missing),
        [
            "Config key missing at kubernetes_labels.pool.labels[\"nvidia.com/device-plugin.config\"]"
        ]
    );
}

#[test]
fn a_part_of_the_cluster_that_could_not_be_read_is_a_warning() {
    let mut fact = cluster(
        vec![node("n", T4_GFD, &[("nvidia.com/gpu", 1.0)])],
        None,
        &[],
    );
    if let GpuFact::Cluster(c) = &mut fact {
        c.unread.push("DRA ResourceSlices (403 Forbidden)".into());
    }
    let found = model(&[
        ("kubernetes_manifest.config", fact.clone()),
        ("kubernetes_labels.pool", fact),
    ])
    .findings();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].severity, crate::Severity::Warning);
    assert!(
        found[0]
            .detail
            .contains("DRA ResourceSlices (403 Forbidden)")
    );
}

fn dra_gpus(count: usize, kind: &str) -> Vec<gpustack_protocol::DraDevice> {
    (0..count)
        .map(|i| gpustack_protocol::DraDevice {
            attributes: BTreeMap::new(),
            capacity: BTreeMap::new(),
            consumes: BTreeMap::new(),
            name: format!("{kind}-{i}"),
            kind: kind.into(),
            product: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: Some(81559),
        })
        .collect()
}

#[test]
fn drift_names_a_dra_node_that_publishes_fewer_gpus_than_it_has() {
    let h100 = [
        ("nvidia.com/gpu.count", "8"),
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
    ];
    let mut short = node("dra-short", &h100, &[]);
    short.dra_devices = dra_gpus(7, "gpu");
    let mut whole = node("dra-whole", &h100, &[]);
    whole.dra_devices = dra_gpus(8, "gpu");
    // Known by its instance type only: Azure's ND96isr_H100_v5 has 8.
    let mut sized = node(
        "dra-sized",
        &[(
            "node.kubernetes.io/instance-type",
            "Standard_ND96isr_H100_v5",
        )],
        &[],
    );
    sized.dra_devices = dra_gpus(6, "gpu");
    // MIG devices instead of full GPUs: not counted as lost.
    let mut mig = node("dra-mig", &h100, &[]);
    mig.dra_devices = dra_gpus(14, "mig");
    let facts = vec![(
        "kubernetes_manifest.probe",
        cluster(vec![short, whole, sized, mig], None, &[]),
    )];
    assert_eq!(
        drift_texts(&facts),
        [
            "node dra-short advertises gpu.nvidia.com devices (DRA) 7, the GPU model expects 8 (full GPUs in the node's ResourceSlices; 8× NVIDIA-H100-80GB-HBM3 from GFD labels)",
            "node dra-sized advertises gpu.nvidia.com devices (DRA) 6, the GPU model expects 8 (full GPUs in the node's ResourceSlices; 8× H100 from instance type Standard_ND96isr_H100_v5, built-in table)",
        ]
    );
}

#[test]
fn a_cluster_policy_patch_with_no_cluster_policy_live_or_planned_is_refused() {
    let patch = || {
        (
            "module.mig.kubernetes_patch.cluster_policy",
            operator(
                OperatorSource::ClusterPolicyPatch,
                json!({"mig": {"strategy": "mixed"}}),
            ),
        )
    };
    let live = |policy: Option<serde_json::Value>| {
        (
            "module.mig.kubernetes_patch.cluster_policy",
            cluster(vec![node("gpu-0", A100_GFD, &[])], policy, &[]),
        )
    };
    assert_eq!(
        findings(&[live(None), patch()]),
        [
            "A ClusterPolicy patch with no ClusterPolicy at module.mig.kubernetes_patch.cluster_policy.patch.spec"
        ]
    );
    // A live ClusterPolicy, or a GPU Operator release in the same plan, makes one to patch.
    assert!(findings(&[live(Some(json!({}))), patch()]).is_empty());
    let release = (
        "module.gpu_operator.helm_release.operator",
        operator(OperatorSource::HelmValues, json!({})),
    );
    assert!(findings(&[live(None), release, patch()]).is_empty());
    // A cluster not read, or read in part, cannot tell an absent policy from an unseen one.
    assert!(findings(&[patch()]).is_empty());
    let mut partial = cluster(vec![], None, &[]);
    if let GpuFact::Cluster(c) = &mut partial {
        c.unread.push("the ClusterPolicy (403 Forbidden)".into());
    }
    assert!(
        findings(&[
            ("module.mig.kubernetes_patch.cluster_policy", partial),
            patch()
        ])
        .is_empty()
    );
}

#[test]
fn a_mig_geometry_change_lists_each_node_and_its_gpu_pods_as_a_disruption() {
    let mut busy = node("gpu-0", A100_GFD, &[("nvidia.com/gpu", 1.0)]);
    busy.gpu_pods = vec!["ml/train-0".into()];
    let idle = node("gpu-1", A100_GFD, &[("nvidia.com/gpu", 1.0)]);
    let untouched = node("gpu-2", A100_GFD, &[("nvidia.com/gpu", 1.0)]);
    let facts = vec![
        (
            "module.mig.kubernetes_labels.geometry",
            cluster(
                vec![busy, idle, untouched],
                Some(json!({"mig": {"strategy": "mixed"}})),
                &[],
            ),
        ),
        (
            "module.mig.kubernetes_labels.geometry[\"gpu-0\"]",
            labels("gpu-0", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
        (
            "module.mig.kubernetes_labels.geometry[\"gpu-1\"]",
            labels("gpu-1", &[("nvidia.com/mig.config", "all-1g.10gb")]),
        ),
    ];
    let texts: Vec<String> = model(&facts)
        .disruptions()
        .iter()
        .map(crate::Disruption::text)
        .collect();
    assert_eq!(
        texts,
        [
            "node gpu-0: reconfigures MIG none → all-1g.10gb (MIG Manager stops every GPU operand of the node and needs its GPUs free; MIG mode changes: the node reboots where MIG Manager runs with WITH_REBOOT); GPU pods running: ml/train-0; rollout: all nodes at once, not drained first",
            "node gpu-1: reconfigures MIG none → all-1g.10gb (MIG Manager stops every GPU operand of the node and needs its GPUs free; MIG mode changes: the node reboots where MIG Manager runs with WITH_REBOOT); no GPU pods running; rollout: all nodes at once, not drained first",
        ]
    );
    assert_eq!(
        model(&facts).disruptions()[0].address,
        "module.mig.kubernetes_labels.geometry[\"gpu-0\"]"
    );
}

/// A replaced pool's old nodes are listed with their GPU pods from the cluster's nodes, from
/// the nodes the pool's rollout read itself, or, with neither, as unread.
#[test]
fn a_pool_replacement_lists_the_old_pools_nodes_and_their_gpu_pods() {
    let label = "kubernetes.azure.com/agentpool";
    let mut old = node("aks-t4-0", &[(label, "t4")], &[("nvidia.com/gpu", 1.0)]);
    old.gpu_pods = vec!["ml/train-0".into()];
    let other = node(
        "aks-other-0",
        &[(label, "other")],
        &[("nvidia.com/gpu", 1.0)],
    );
    let replaced = |nodes: Option<Vec<(String, Vec<String>)>>| {
        let mut fact = pool(
            "nodepool",
            "a100",
            (label, "a100"),
            Some(shape(1, "Standard_NC4as_T4_v3", 1, "T4", 16, "table")),
            Some(shape(1, "Standard_NC24ads_A100_v4", 1, "A100", 80, "table")),
            true,
        );
        if let GpuFact::Pool(p) = &mut fact {
            p.removes = Some(gpustack_protocol::NodeRemoval {
                selector: map(&[(label, "t4")]),
                change: "nodepool t4 replaced by nodepool a100".into(),
                how: "none: AKS deletes the nodes with their pods".into(),
                nodes,
            });
        }
        ("aks_nodepool.gpu", fact)
    };
    let texts = |facts: &[(&str, GpuFact)]| -> Vec<String> {
        model(facts)
            .disruptions()
            .iter()
            .map(crate::Disruption::text)
            .collect()
    };
    let from_cluster = texts(&[
        (
            "kubernetes_manifest.config",
            cluster(vec![old, other], None, &[]),
        ),
        replaced(None),
    ]);
    assert_eq!(
        from_cluster,
        [
            "node aks-t4-0: nodepool t4 replaced by nodepool a100 (the node goes with its pool); GPU pods running: ml/train-0; rollout: none: AKS deletes the nodes with their pods"
        ]
    );
    let from_rollout = texts(&[replaced(Some(vec![(
        "aks-t4-0".into(),
        vec!["ml/train-1".into()],
    )]))]);
    assert_eq!(
        from_rollout,
        [
            "node aks-t4-0: nodepool t4 replaced by nodepool a100 (the node goes with its pool); GPU pods running: ml/train-1; rollout: none: AKS deletes the nodes with their pods"
        ]
    );
    let unread = texts(&[replaced(None)]);
    assert_eq!(unread.len(), 1);
    assert!(
        unread[0].starts_with(
            "node every node of kubernetes.azure.com/agentpool=t4 (the cluster was not read)"
        ) && unread[0].contains("GPU pods not known"),
        "{unread:?}"
    );
}

#[test]
fn a_sharing_change_lists_a_device_plugin_restart_and_no_change_lists_nothing() {
    let mut live = node("t4-0", T4_GFD, &[("nvidia.com/gpu", 10.0)]);
    live.gpu_pods = vec!["default/infer".into()];
    let cluster_fact = || {
        (
            "kubernetes_manifest.config",
            time_sliced_cluster(vec![live.clone()]),
        )
    };
    let edited = config_map(
        "time-slicing-config",
        &[("any", TS4)],
        Some(&[("any", TS10)]),
    );
    let texts: Vec<String> = model(&[cluster_fact(), ("kubernetes_manifest.config", edited)])
        .disruptions()
        .iter()
        .map(crate::Disruption::text)
        .collect();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].starts_with(
            "node t4-0: restarts the device plugin (time-slicing ×10 → time-slicing ×4)"
        ),
        "{texts:?}"
    );
    assert!(
        texts[0].contains("GPU pods running: default/infer"),
        "{texts:?}"
    );
    let same = config_map(
        "time-slicing-config",
        &[("any", TS10)],
        Some(&[("any", TS10)]),
    );
    assert!(
        model(&[cluster_fact(), ("kubernetes_manifest.config", same)])
            .disruptions()
            .is_empty()
    );
}

#[test]
fn drift_gives_a_wedged_mig_manager_as_the_cause() {
    let mig_node = |name: &str, state: &str, paused: bool, advertised: f64| {
        let mut labels: Vec<(&str, &str)> = A100_GFD.to_vec();
        labels.push(("nvidia.com/mig.config", "all-1g.10gb"));
        labels.push(("nvidia.com/mig.config.state", state));
        labels.push((
            "nvidia.com/gpu.deploy.device-plugin",
            if paused {
                "paused-for-mig-change"
            } else {
                "true"
            },
        ));
        node(name, &labels, &[("nvidia.com/mig-1g.10gb", advertised)])
    };
    let facts = vec![(
        "module.mig.kubernetes_labels.geometry",
        cluster(
            vec![
                mig_node("left-paused", "success", true, 0.0),
                mig_node("zero", "success", false, 0.0),
                mig_node("stuck", "pending", true, 0.0),
                mig_node("healthy", "success", false, 7.0),
                NodeFact {
                    not_ready: true,
                    ..mig_node("kubelet-down", "success", false, 0.0)
                },
            ],
            Some(json!({"mig": {"strategy": "mixed"}})),
            &[],
        ),
    )];
    let texts = drift_texts(&facts);
    assert_eq!(texts.len(), 4, "{texts:#?}");
    let of = |node: &str| {
        texts
            .iter()
            .find(|t| t.starts_with(&format!("node {node} ")))
            .unwrap_or_else(|| panic!("no drift for {node}: {texts:#?}"))
            .clone()
    };
    assert!(
        of("left-paused").contains("wedged: MIG Manager left nvidia.com/gpu.deploy.device-plugin at paused-for-mig-change after state success"),
        "{texts:#?}"
    );
    assert!(
        of("zero").contains(
            "wedged: MIG Manager reported success but the device plugin advertises nothing"
        ),
        "{texts:#?}"
    );
    assert!(
        of("stuck").contains("MIG reconfiguration pending with nothing advertised, nvidia.com/gpu.deploy.device-plugin paused: wedged if it stays so"),
        "{texts:#?}"
    );
    assert!(
        of("kubelet-down").contains("the node is NotReady with nvidia.com/mig.config.state=success: a kubelet restart during the MIG reconfiguration that did not come back (gpu-operator#2415)"),
        "{texts:#?}"
    );
}

/// A rollout alone tells drift what it promised: a node it left part-way is named with its
/// step, and a node it is done with that advertises less than `expect_per_gpu` is held to
/// it where the labels (a geometry of the node's own MIG config) give no prediction.
#[test]
fn drift_names_a_node_a_rollout_left_part_way_and_one_short_of_its_promise() {
    let mig =
        json!({"mig": {"strategy": "mixed"}, "migManager": {"config": {"name": "custom-mig"}}});
    let geometry = [
        ("nvidia.com/gpu.count", "1"),
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
        ("nvidia.com/mig.config", "site-geometry"),
    ];
    let facts = vec![
        (
            "kubernetes_node_rollout.geometry",
            cluster(
                vec![
                    node("gpu-0", &geometry, &[("nvidia.com/mig-1g.10gb", 3.0)]),
                    node("gpu-1", A100_GFD, &[("nvidia.com/gpu", 1.0)]),
                ],
                Some(mig),
                &[],
            ),
        ),
        (
            "kubernetes_node_rollout.geometry",
            rollout_left_gpu_1_at("failed"),
        ),
    ];
    assert_eq!(
        drift_texts(&facts),
        [
            "node gpu-1 was left at step failed by kubernetes_node_rollout.geometry and stays cordoned until an apply finishes it (node by node, at most 1 unavailable; it advertises nvidia.com/gpu 1)",
            "node gpu-0 advertises nvidia.com/mig-1g.10gb 3, the GPU model expects 7 (7 per GPU as expect_per_gpu of kubernetes_node_rollout.geometry says; 1× NVIDIA-A100-SXM4-80GB from GFD labels)",
        ]
    );
}

/// The record of a rollout over gpu-0 and gpu-1 to 7 `1g.10gb` per GPU that left gpu-1 at
/// `step`.
fn rollout_left_gpu_1_at(step: &str) -> GpuFact {
    GpuFact::Rollout(gpustack_protocol::RolloutFact {
        nodes: vec!["gpu-0".into(), "gpu-1".into()],
        how: "node by node, at most 1 unavailable".into(),
        unfinished: [("gpu-1".to_owned(), step.to_owned())].into(),
        expect_per_gpu: [("nvidia.com/mig-1g.10gb".to_owned(), 7.0)].into(),
    })
}

/// A node a killed apply left mid-reconfiguration (its record at `reconfiguring`, nothing
/// advertised while MIG Manager works) is named as left part-way, beside what it lacks.
#[test]
fn drift_names_a_node_a_killed_rollout_left_reconfiguring() {
    let geometry = [
        ("nvidia.com/gpu.count", "1"),
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
        ("nvidia.com/mig.config", "all-1g.10gb"),
    ];
    let facts = vec![
        (
            "kubernetes_node_rollout.geometry",
            cluster(
                vec![
                    node("gpu-0", &geometry, &[("nvidia.com/mig-1g.10gb", 7.0)]),
                    node("gpu-1", &geometry, &[]),
                ],
                Some(json!({"mig": {"strategy": "mixed"}})),
                &[],
            ),
        ),
        (
            "kubernetes_node_rollout.geometry",
            rollout_left_gpu_1_at("reconfiguring"),
        ),
    ];
    assert_eq!(
        drift_texts(&facts),
        [
            "node gpu-1 was left at step reconfiguring by kubernetes_node_rollout.geometry and stays cordoned until an apply finishes it (node by node, at most 1 unavailable; it advertises no GPU)",
            "node gpu-1 advertises nvidia.com/mig-1g.10gb 0, the GPU model expects 7 (MIG all-1g.10gb (mixed, built-in table geometry); 1× NVIDIA-A100-SXM4-80GB from GFD labels)",
        ]
    );
}
