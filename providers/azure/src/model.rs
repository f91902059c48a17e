//! The AKS agent pool as Azure Resource Manager writes it (api-version 2026-08-01).
//!
//! Only the properties gpustack manages are typed; every other property is kept verbatim in
//! `other`, so that a read-modify-write (update) sends back what it did not change.
//! **Invariant:** deserialising and serialising any agent pool body gives the same JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentPool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub properties: Properties,
    #[serde(flatten)]
    pub other: Map<String, Json>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Properties {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_auto_scaling: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_set_priority: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_set_eviction_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_profile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_profile: Option<GpuProfile>,
    #[serde(rename = "osDiskSizeGB", skip_serializing_if = "Option::is_none")]
    pub os_disk_size_gb: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zones: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestrator_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_orchestrator_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_image_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(rename = "eTag", skip_serializing_if = "Option::is_none")]
    pub e_tag: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Json>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct GpuProfile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvidia: Option<NvidiaProfile>,
    #[serde(flatten)]
    pub other: Map<String, Json>,
}

/// `gpuProfile.nvidia`: who manages the GPU software of the pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NvidiaProfile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management_mode: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Json>,
}

/// The body of a failed ARM call: `{"error": {"code": ..., "message": ...}}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ErrorDetail {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
}

/// An Azure-AsyncOperation status resource.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct OperationStatus {
    pub status: String,
    #[serde(default)]
    pub error: Option<ErrorDetail>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn examples() -> Vec<(String, Json)> {
        // Where cargo runs the test from: a cached build may come from another clone.
        let dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
            .join("../../../shared/upstream/aks-2026-08-01");
        let mut all: Vec<(String, Json)> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|entry| {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                (
                    entry.file_name().to_string_lossy().into_owned(),
                    serde_json::from_str(&text).unwrap_or(Json::Null),
                )
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    #[test]
    fn every_official_example_round_trips() {
        let examples = examples();
        assert_eq!(examples.len(), 5, "the five official agentPools examples");
        let mut bodies = 0;
        for (file, example) in &examples {
            let request = example.pointer("/parameters/parameters").cloned();
            let responses = example["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(_, r)| r.get("body").cloned());
            for body in request.into_iter().chain(responses) {
                let pool: AgentPool =
                    serde_json::from_value(body.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
                assert_eq!(
                    serde_json::to_value(&pool).unwrap_or_default(),
                    body,
                    "{file}"
                );
                bodies += 1;
            }
        }
        assert_eq!(bodies, 10, "3 requests and 7 answers with a body");
    }

    #[test]
    fn typed_fields_read_what_the_examples_say() {
        let examples = examples();
        let managed = examples
            .iter()
            .find(|(f, _)| f == "AgentPoolsCreate_ManagedGPU.json")
            .map(|(_, e)| {
                e.pointer("/parameters/parameters")
                    .cloned()
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let pool: AgentPool = serde_json::from_value(managed).unwrap_or_default();
        assert_eq!(
            pool.properties.vm_size.as_deref(),
            Some("Standard_NC4as_T4_v3")
        );
        assert_eq!(
            pool.properties
                .gpu_profile
                .and_then(|g| g.driver)
                .as_deref(),
            Some("Install")
        );
        let spot = examples
            .iter()
            .find(|(f, _)| f == "AgentPoolsCreate_Update.json")
            .map(|(_, e)| {
                e.pointer("/parameters/parameters")
                    .cloned()
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let pool: AgentPool = serde_json::from_value(spot).unwrap_or_default();
        assert_eq!(pool.properties.scale_set_priority.as_deref(), Some("Spot"));
        assert_eq!(
            pool.properties.node_taints,
            Some(vec!["Key1=Value1:NoSchedule".to_owned()])
        );
    }
}
