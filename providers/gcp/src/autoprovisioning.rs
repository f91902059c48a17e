//! `gke_node_autoprovisioning`: node auto-provisioning, a setting of the cluster, with the
//! GPU ceilings it allows and a warning for accelerator types no one can name.

use crate::gke::{describe, from_json, not_found, to_json};
use crate::{Connected, Gcp, normalized};
use google_cloud_container_v1::model::ClusterUpdate;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, PlanResourceChangeRequest,
    PlanResourceChangeResponse, ReadResourcesRequest, ReadResourcesResponse, Value,
    plan_from_schema,
};
use gpustack_provider_sdk::check::{attribute, integer, text};
use gpustack_provider_sdk::family::resource_schema;
use gpustack_provider_sdk::resource::Resource;
use indexmap::IndexMap;
use serde_json::{Value as Json, json};
use std::sync::Arc;

impl Connected {
    async fn get_autoprovisioning(&self, state: &Value) -> Result<Option<Value>, Diagnostic> {
        let location = text(state, "location").unwrap_or_default();
        let cluster = text(state, "cluster").unwrap_or_default();
        let name = self.cluster_path(location, cluster);
        let live = match self.client.get_cluster().set_name(&name).send().await {
            Ok(c) => to_json(&c),
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => {
                return Err(Diagnostic::error(
                    format!("Cannot read GKE cluster {name}"),
                    describe(&e),
                ));
            }
        };
        let autoscaling = &live["autoscaling"];
        if autoscaling["enableNodeAutoprovisioning"] != true {
            return Ok(None);
        }
        let limits: Vec<Value> = autoscaling["resourceLimits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                let n = |v: &Json| {
                    v.as_str()
                        .and_then(|s| s.parse::<f64>().ok())
                        .or(v.as_f64())
                };
                Value::Object(IndexMap::from([
                    (
                        "resource_type".to_owned(),
                        Value::string(l["resourceType"].as_str().unwrap_or_default()),
                    ),
                    (
                        "minimum".to_owned(),
                        n(&l["minimum"]).map_or(Value::Null, Value::number),
                    ),
                    (
                        "maximum".to_owned(),
                        n(&l["maximum"]).map_or(Value::Null, Value::number),
                    ),
                ]))
            })
            .collect();
        let locations: Vec<Value> = autoscaling["autoprovisioningLocations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(Value::string))
            .collect();
        Ok(Some(Value::Object(IndexMap::from([
            ("location".to_owned(), Value::string(location)),
            ("cluster".to_owned(), Value::string(cluster)),
            ("enabled".to_owned(), Value::Bool(true)),
            ("resource_limits".to_owned(), Value::List(limits)),
            (
                "locations".to_owned(),
                if locations.is_empty() {
                    Value::Null
                } else {
                    Value::List(locations)
                },
            ),
        ]))))
    }

    /// A warning for each NVIDIA accelerator type in the limits that neither the built-in
    /// table nor Compute Engine (in the zones auto-provisioning may use) knows: such a
    /// ceiling allows GPUs auto-provisioning can never bring.
    async fn unknown_accelerators(&self, planned: &Value) -> Vec<Diagnostic> {
        let mut zones: Vec<&str> = attribute(planned, "locations")
            .and_then(Value::as_list)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let location = text(planned, "location").unwrap_or_default();
        if zones.is_empty() && location.matches('-').count() >= 2 {
            zones.push(location);
        }
        let limits = attribute(planned, "resource_limits").and_then(Value::as_list);
        let mut warnings = Vec::new();
        for (i, limit) in limits.into_iter().flatten().enumerate() {
            let Some(ty) = text(limit, "resource_type").filter(|t| t.starts_with("nvidia-")) else {
                continue;
            };
            if gpustack_provider_sdk::catalog::gke_accelerator(ty).is_some() {
                continue;
            }
            let mut failures = Vec::new();
            let mut offered = false;
            for zone in &zones {
                match self.compute.accelerator(&self.project, zone, ty).await {
                    Ok(Some(_)) => {
                        offered = true;
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => failures.push(e),
                }
            }
            if offered {
                continue;
            }
            let why = if zones.is_empty() {
                format!(
                    "{location} is a region and no auto-provisioning locations are set, so Compute Engine was not asked (accelerator types are listed per zone)"
                )
            } else if failures.is_empty() {
                format!("Compute Engine offers no such type in {}", zones.join(", "))
            } else {
                format!("Compute Engine could not be asked: {}", failures.join("; "))
            };
            warnings.push(
                Diagnostic::warning(
                    "Unknown accelerator type",
                    format!("{ty} is not in the {} and {why}: its ceiling counts GPUs that node auto-provisioning may never bring.", gpustack_provider_sdk::catalog::BUILT_IN),
                )
                .with_attribute(format!("resource_limits[{i}].resource_type")),
            );
        }
        warnings
    }

    /// Sets the cluster's autoscaling to the planned limits (`None`: auto-provisioning off).
    async fn set_autoprovisioning(
        &self,
        state: &Value,
        planned: Option<&Value>,
    ) -> Result<(), Diagnostic> {
        let location = text(state, "location").unwrap_or_default();
        let name = self.cluster_path(location, text(state, "cluster").unwrap_or_default());
        let autoscaling = match planned {
            Some(planned) => {
                let limits: Vec<Json> = attribute(planned, "resource_limits")
                    .and_then(Value::as_list)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| {
                        let mut limit = json!({"resourceType": text(l, "resource_type"), "maximum": integer(l, "maximum").unwrap_or(0).to_string()});
                        if let Some(min) = integer(l, "minimum") {
                            limit["minimum"] = json!(min.to_string());
                        }
                        limit
                    })
                    .collect();
                let locations: Vec<Json> = attribute(planned, "locations")
                    .and_then(Value::as_list)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|l| l.as_str().map(|s| json!(s)))
                    .collect();
                json!({
                    "enableNodeAutoprovisioning": attribute(planned, "enabled").and_then(Value::as_bool).unwrap_or(true),
                    "resourceLimits": limits,
                    "autoprovisioningLocations": locations,
                })
            }
            None => json!({"enableNodeAutoprovisioning": false}),
        };
        let failed = |m: String| {
            Diagnostic::error(
                format!("Cannot set node auto-provisioning of GKE cluster {name}"),
                m,
            )
        };
        let update: ClusterUpdate = from_json(json!({"desiredClusterAutoscaling": autoscaling}));
        let operation = self
            .client
            .update_cluster()
            .set_name(&name)
            .set_update(update)
            .send()
            .await
            .map_err(|e| failed(describe(&e)))?;
        self.wait(location, &operation).await.map_err(failed)
    }
}

/// The GPU ceiling of each accelerator type node auto-provisioning may bring, before and after.
fn nap_ceilings(prior: Option<&Value>, planned: Option<&Value>) -> Vec<gpustack_protocol::GpuFact> {
    let limits = |state: Option<&Value>| -> std::collections::BTreeMap<String, f64> {
        state
            .and_then(|s| attribute(s, "resource_limits"))
            .and_then(Value::as_list)
            .into_iter()
            .flatten()
            .filter_map(|l| {
                // Every NVIDIA accelerator type is `nvidia-…`; the others are cpu, memory and
                // TPUs, which are not nvidia.com/gpu.
                let ty = text(l, "resource_type").filter(|t| t.starts_with("nvidia-"))?;
                Some((ty.to_owned(), attribute(l, "maximum")?.as_number()?))
            })
            .collect()
    };
    let (before, after) = (limits(prior), limits(planned));
    let types: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    types
        .into_iter()
        .map(|ty| {
            gpustack_protocol::GpuFact::Ceiling(gpustack_protocol::CeilingFact {
                scope: format!("gke node auto-provisioning {ty}"),
                resource: "nvidia.com/gpu".into(),
                before: before.get(ty).copied(),
                after: after.get(ty).copied(),
                node_labels: std::collections::BTreeMap::from([(
                    "cloud.google.com/gke-accelerator".to_owned(),
                    ty.clone(),
                )]),
            })
        })
        .collect()
}

/// `gke_node_autoprovisioning`: a setting of the cluster, not an object of its own.
pub(crate) struct Autoprovisioning(pub(crate) Arc<Connected>);

#[async_trait::async_trait]
impl Resource for Autoprovisioning {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let reads = request
            .states
            .iter()
            .map(|state| self.0.get_autoprovisioning(state));
        ReadResourcesResponse::collect(&request.states, futures::future::join_all(reads).await)
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let mut response = plan_from_schema(
            &resource_schema(&Gcp::default(), "gke_node_autoprovisioning"),
            request.prior_state.as_ref(),
            &normalized(&request.config),
        );
        response.gpu_facts = nap_ceilings(
            request.prior_state.as_ref(),
            (!response.planned_state.is_null()).then_some(&response.planned_state),
        );
        if !response.planned_state.is_null() {
            let unknown = self.0.unknown_accelerators(&response.planned_state).await;
            response.diagnostics.extend(unknown);
        }
        response
    }

    /// Set (whether new or changed) or off.
    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let kept = request.prior_state.clone();
        let result = match (&request.prior_state, &request.planned_state) {
            (_, Some(planned)) => match self.0.set_autoprovisioning(planned, Some(planned)).await {
                Ok(()) => self
                    .0
                    .get_autoprovisioning(planned)
                    .await
                    .map_err(|d| (kept, d)),
                Err(d) => Err((kept, d)),
            },
            (Some(prior), None) => self
                .0
                .set_autoprovisioning(prior, None)
                .await
                .map(|()| None)
                .map_err(|d| (kept, d)),
            (None, None) => Ok(None),
        };
        ApplyResourceChangeResponse::from_result(result)
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let Some((location, cluster)) = id.split_once('/').filter(|(_, c)| !c.contains('/')) else {
            return Err(vec![Diagnostic::error(
                "Invalid import ID",
                format!("\"{id}\" is not LOCATION/CLUSTER."),
            )]);
        };
        let state = Value::from_json(&json!({"location": location, "cluster": cluster}));
        match self.0.get_autoprovisioning(&state).await {
            Ok(Some(state)) => Ok(state),
            Ok(None) => Err(vec![Diagnostic::error(
                "Not found",
                format!("GKE has no cluster {cluster} in {location}."),
            )]),
            Err(d) => Err(vec![d]),
        }
    }
}
