//! What the kubernetes provider reports to the GPU model (`gpustack-gpu`) of the objects a plan
//! writes: ConfigMaps with device-plugin or mig-parted configs, ClusterPolicy objects and
//! patches, node labels, Karpenter NodePool limits (the live cluster's side is
//! `gpustack_cluster::facts`). It reports texts and fields as they are; what they mean for
//! GPUs is the model's to decide.

use gpustack_cluster::facts::{is_gpu_config, string_map};
use gpustack_protocol::nvidia::{
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND, GPU_CLUSTER_API_VERSION, GPU_CLUSTER_KIND,
    GPU_RESOURCE,
};
use gpustack_protocol::{
    CeilingFact, ConfigMapFact, DeviceRequestFact, DeviceRequestKind, DraDriverFact,
    DraDriverSource, GpuFact, NodeLabelsFact, OperatorFact, OperatorSource, path,
};
use serde_json::Value as Json;

/// The GPU facts of one planned object (`desired`, with its prior state's object `before`).
pub(crate) fn object_facts(
    ty: crate::types::ObjectType,
    api_version: &str,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    desired: &Json,
    before: Option<&Json>,
) -> Vec<GpuFact> {
    use crate::types::ObjectType;
    let mut facts = Vec::new();
    match (ty, api_version, kind) {
        (ObjectType::Manifest, "v1", "ConfigMap") => {
            let data = string_map(desired.get("data"));
            let data_before = before.and_then(|b| string_map(b.get("data")));
            let relevant = data.as_ref().is_some_and(is_gpu_config)
                || data_before.as_ref().is_some_and(is_gpu_config);
            if relevant {
                facts.push(GpuFact::ConfigMap(ConfigMapFact {
                    namespace: namespace.unwrap_or("default").to_owned(),
                    name: name.to_owned(),
                    data,
                    data_before,
                    attribute: path(["manifest", "data"]),
                }));
            }
        }
        (_, CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND) => {
            let (source, attribute) = if ty == ObjectType::Manifest {
                (OperatorSource::ClusterPolicy, path(["manifest", "spec"]))
            } else {
                (OperatorSource::ClusterPolicyPatch, path(["patch", "spec"]))
            };
            facts.push(GpuFact::Operator(OperatorFact {
                source,
                namespace: None,
                settings: desired.get("spec").cloned(),
                settings_before: before.and_then(|b| b.get("spec").cloned()),
                attribute,
            }));
        }
        (ObjectType::Manifest, version, kind) if version.starts_with("resource.k8s.io/") => {
            if let Some(kind) = DeviceRequestKind::from_kind(kind) {
                // A template's claim spec is one level down.
                let (pointer, attribute) = if kind == DeviceRequestKind::ResourceClaimTemplate {
                    ("/spec/spec", path(["manifest", "spec", "spec"]))
                } else {
                    ("/spec", path(["manifest", "spec"]))
                };
                facts.push(GpuFact::DeviceRequest(DeviceRequestFact {
                    kind,
                    name: name.to_owned(),
                    namespace: namespace.map(str::to_owned),
                    spec: Some(desired.pointer(pointer).cloned().unwrap_or(Json::Null)),
                    attribute,
                }));
            }
        }
        (ObjectType::Manifest, GPU_CLUSTER_API_VERSION, GPU_CLUSTER_KIND) => {
            let driver = |object: &Json| {
                Some(
                    object
                        .pointer("/spec/draDriver")
                        .cloned()
                        .unwrap_or(Json::Null),
                )
            };
            facts.push(GpuFact::DraDriver(DraDriverFact {
                source: DraDriverSource::GpuCluster,
                release: format!("GPUCluster {name}"),
                values: driver(desired),
                values_before: before.and_then(driver),
                attribute: path(["manifest", "spec", "draDriver"]),
            }));
        }
        (ObjectType::Labels, "v1", "Node") => {
            let labels = string_map(desired.pointer("/metadata/labels")).unwrap_or_default();
            facts.push(GpuFact::NodeLabels(NodeLabelsFact {
                node: name.to_owned(),
                labels,
                labels_before: before
                    .and_then(|b| string_map(b.pointer("/metadata/labels")))
                    .unwrap_or_default(),
                attribute: path(["labels"]),
            }));
        }
        (ObjectType::Manifest, "karpenter.sh/v1", "NodePool") => {
            let limit = |object: &Json| {
                object
                    .pointer("/spec/limits")
                    .and_then(|l| l.get(GPU_RESOURCE))
                    .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
            };
            let after = limit(desired);
            let was = before.and_then(limit);
            if after.is_some() || was.is_some() {
                facts.push(GpuFact::Ceiling(CeilingFact {
                    scope: format!("karpenter nodepool {name}"),
                    resource: GPU_RESOURCE.to_owned(),
                    before: was,
                    after,
                    node_labels: string_map(desired.pointer("/spec/template/metadata/labels"))
                        .unwrap_or_default(),
                }));
            }
        }
        _ => {}
    }
    facts
}

/// Whether the live cluster matters to this object's GPU facts.
pub(crate) fn needs_cluster(facts: &[GpuFact]) -> bool {
    facts.iter().any(|f| !matches!(f, GpuFact::Ceiling(_)))
}
