use crate::cluster::{Cluster, api_error, duration};
use gpustack_protocol::nvidia::GPU_RESOURCE;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic, ObjectAttr,
    PlanResourceChangeRequest, PlanResourceChangeResponse, Provider, ProviderSchema,
    ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, set};
use gpustack_provider_sdk::family::Family;
use indexmap::IndexMap;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The devices allocated to the claims of a smoke test's pods (`pool/device`), by pod.
type ClaimDevices = Arc<std::sync::Mutex<std::collections::BTreeMap<String, Vec<String>>>>;

/// GPU smoke tests and capacity assertions on a cluster.
pub(crate) struct Gpu;

fn toleration_type() -> Type {
    Type::object([
        ("key", ObjectAttr::optional(Type::String)),
        ("operator", ObjectAttr::optional(Type::String)),
        ("value", ObjectAttr::optional(Type::String)),
        ("effect", ObjectAttr::optional(Type::String)),
    ])
}

#[async_trait::async_trait]
impl Family for Gpu {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("gpu", &["gpu_smoke_test"], &[])
    }

    fn schema(&self) -> ProviderSchema {
        let config = provider_config("GPU validation on a Kubernetes cluster.")
            .attr("config_path", Attribute::optional(Type::String))
            .attr("context", Attribute::optional(Type::String));
        let smoke = Schema::new(
            "Runs vectorAdd as a Job of N pods × M GPUs and checks where and how it ran.",
        )
        .attr(
            "node_selector",
            Attribute::optional(Type::map(Type::String)),
        )
        .attr(
            "tolerations",
            Attribute::optional_computed(Type::list(toleration_type()))
                .describe("Default: tolerate nvidia.com/gpu."),
        )
        .attr(
            "expect_allocatable",
            Attribute::optional(Type::map(Type::Number))
                .describe("Resource → allocatable each selected node must advertise."),
        )
        .attr("pods", Attribute::optional_computed(Type::Number))
        .attr("gpus_per_pod", Attribute::optional_computed(Type::Number))
        .attr(
            "resource_name",
            Attribute::optional_computed(Type::String).describe("Default nvidia.com/gpu."),
        )
        .attr(
            "resource_claim_template",
            Attribute::optional(Type::String).describe(
                "A ResourceClaimTemplate in the test's namespace: each pod asks for its GPUs through a claim made from it (DRA), not through resource_name; the result lists the devices the scheduler allocated to each pod.",
            ),
        )
        .attr("same_node", Attribute::optional(Type::Bool))
        .attr("image", Attribute::optional_computed(Type::String))
        .attr("namespace", Attribute::optional_computed(Type::String))
        .attr("timeout", Attribute::optional(Type::String))
        .attr(
            "triggers",
            Attribute::optional(Type::map(Type::String)).describe(
                "Values whose change runs the test again (a config hash, a chart version).",
            ),
        )
        .attr("passed", Attribute::computed(Type::Bool))
        .attr("result", Attribute::computed(Type::Any));
        ProviderSchema {
            name: "gpu".into(),
            config,
            resources: [("gpu_smoke_test".to_owned(), smoke)].into(),
            data_sources: Default::default(),
        }
    }

    fn check(&self, _: &str, check: &mut Checker<'_>) {
        check.range("pods", 1.0, 1000.0);
        check.range("gpus_per_pod", 1.0, 64.0);
        if check
            .get("resource_claim_template")
            .is_some_and(|t| !t.is_null())
        {
            for device_plugin in ["resource_name", "gpus_per_pod"] {
                if check.get(device_plugin).is_some_and(|v| !v.is_null()) {
                    check.error(
                        device_plugin,
                        "A smoke test asks for GPUs one way",
                        format!("{device_plugin} asks the device plugin for GPUs, resource_claim_template asks DRA: the template's requests say what each pod gets. Set one of them."),
                    );
                }
            }
        }
        if let Some(tolerations) = check.get("tolerations").and_then(|t| t.as_list()) {
            for (i, t) in tolerations.iter().enumerate() {
                if let Some(op) = t
                    .as_object()
                    .and_then(|o| o.get("operator"))
                    .and_then(|v| v.as_str())
                    && op != "Exists"
                    && op != "Equal"
                {
                    check.error(
                        &format!("tolerations[{i}].operator"),
                        "Invalid toleration",
                        format!("operator \"{op}\" must be Exists or Equal."),
                    );
                }
            }
        }
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let cluster = Cluster::connect(config).await.map_err(|d| vec![d])?;
        Ok(Arc::new(SmokeTests { cluster }))
    }
}

/// The image of NVIDIA's vectorAdd sample, as in the reference flow.
pub const DEFAULT_IMAGE: &str = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04";

struct SmokeTests {
    cluster: Cluster,
}

fn default_if_unset(state: &mut Value, name: &str, value: Value) {
    if attribute(state, name).is_none() {
        set(state, name, value);
    }
}

/// One check of a run, as it goes into the result and into JUnit.
fn check(name: &str, passed: bool, detail: String) -> Json {
    json!({ "name": name, "passed": passed, "detail": detail })
}

/// A Kubernetes quantity as a count ("10", "2k" is not a GPU count).
fn count(quantity: &str) -> Option<f64> {
    quantity.parse().ok()
}

struct Spec {
    node_selector: IndexMap<String, String>,
    tolerations: Json,
    expect: IndexMap<String, f64>,
    pods: i32,
    gpus_per_pod: i64,
    resource: String,
    claim_template: Option<String>,
    same_node: bool,
    image: String,
    namespace: String,
    timeout: Duration,
}

impl Spec {
    fn of(state: &Value) -> Result<Self, String> {
        let text = |name: &str| {
            attribute(state, name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let number = |name: &str, default: f64| {
            attribute(state, name)
                .and_then(Value::as_number)
                .unwrap_or(default)
        };
        let map = |name: &str| -> IndexMap<String, Value> {
            attribute(state, name)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        Ok(Self {
            node_selector: map("node_selector")
                .into_iter()
                .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
                .collect(),
            tolerations: attribute(state, "tolerations")
                .map(|t| gpustack_provider_sdk::objects::strip_nulls(&t.to_json()))
                .unwrap_or(Json::Array(vec![])),
            expect: map("expect_allocatable")
                .into_iter()
                .filter_map(|(k, v)| Some((k, v.as_number()?)))
                .collect(),
            pods: number("pods", 1.0) as i32,
            gpus_per_pod: number("gpus_per_pod", 1.0) as i64,
            resource: text("resource_name"),
            claim_template: attribute(state, "resource_claim_template")
                .and_then(Value::as_str)
                .map(str::to_owned),
            same_node: attribute(state, "same_node").and_then(Value::as_bool) == Some(true),
            image: text("image"),
            namespace: text("namespace"),
            timeout: duration(
                attribute(state, "timeout").and_then(Value::as_str),
                Duration::from_secs(600),
            )
            .map_err(|e| gpustack_protocol::error_chain(&e))?,
        })
    }

    fn selector(&self) -> String {
        self.node_selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl SmokeTests {
    /// Waits until every selected node advertises what the test expects (the device plugin
    /// may still be restarting); returns the check and what the nodes advertised.
    async fn allocatable(&self, spec: &Spec, deadline: Instant) -> Result<(Json, Json), String> {
        let nodes: Api<Node> = Api::all(self.cluster.client.clone());
        let params = ListParams::default().labels(&spec.selector());
        loop {
            let list = nodes.list(&params).await.map_err(|e| api_error(&e))?;
            let mut seen = serde_json::Map::new();
            let mut wrong = Vec::new();
            for node in &list.items {
                let name = node.metadata.name.clone().unwrap_or_default();
                let allocatable = node
                    .status
                    .as_ref()
                    .and_then(|s| s.allocatable.clone())
                    .unwrap_or_default();
                let mut advertised = serde_json::Map::new();
                for (resource, expected) in &spec.expect {
                    let have = allocatable
                        .get(resource)
                        .and_then(|q| count(&q.0))
                        .unwrap_or(0.0);
                    advertised.insert(resource.clone(), json!(have));
                    if have != *expected {
                        wrong.push(format!("{name}: {resource} is {have}, expected {expected}"));
                    }
                }
                seen.insert(name, Json::Object(advertised));
            }
            let summary = if list.items.is_empty() {
                Some(format!("no node matches {}", spec.selector()))
            } else if !wrong.is_empty() {
                Some(wrong.join("; "))
            } else {
                None
            };
            match summary {
                None => {
                    let detail = format!(
                        "{} node(s) advertise {}",
                        list.items.len(),
                        spec.expect
                            .iter()
                            .map(|(k, v)| format!("{k}: {v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    return Ok((check("allocatable", true, detail), Json::Object(seen)));
                }
                Some(problem) if Instant::now() >= deadline => {
                    return Ok((check("allocatable", false, problem), Json::Object(seen)));
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// Watches the namespace's ResourceClaims from before the Job exists, and records the
    /// devices allocated to each claim a pod of the Job owns (`pool/device` by pod): a claim
    /// made from a template is deallocated and deleted as soon as its pod ends, which a
    /// one-off read after the pods finish would miss.
    async fn watch_claims(
        &self,
        namespace: &str,
        job_name: &str,
    ) -> (ClaimDevices, tokio::task::JoinHandle<()>) {
        use futures::StreamExt;
        use k8s_openapi::api::resource::v1::ResourceClaim;
        use kube::runtime::watcher;
        let seen: ClaimDevices = Arc::default();
        let (listed, ready) = tokio::sync::oneshot::channel();
        let mut listed = Some(listed);
        let claims: Api<ResourceClaim> = Api::namespaced(self.cluster.client.clone(), namespace);
        let prefix = format!("{job_name}-");
        let record = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            let mut events = watcher(claims, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let claim = match event {
                    Ok(watcher::Event::Apply(claim) | watcher::Event::InitApply(claim)) => claim,
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                        continue;
                    }
                    _ => continue,
                };
                let Some(pod) = claim
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.kind == "Pod" && o.name.starts_with(&prefix))
                    .map(|o| o.name.clone())
                else {
                    continue;
                };
                let results = claim
                    .status
                    .and_then(|s| s.allocation)
                    .and_then(|a| a.devices)
                    .and_then(|d| d.results)
                    .unwrap_or_default();
                if results.is_empty() {
                    continue;
                }
                if let Ok(mut seen) = record.lock() {
                    seen.insert(
                        pod,
                        results
                            .into_iter()
                            .map(|r| format!("{}/{}", r.pool, r.device))
                            .collect(),
                    );
                }
            }
        });
        // The Job starts once the watch has listed: no claim of its pods can come and go
        // unseen before.
        let _ = tokio::time::timeout(Duration::from_secs(30), ready).await;
        (seen, task)
    }

    // Long by design: a smoke test is one timed sequence (allocatable, the pods, their logs and
    // outcome, cleanup) under one deadline, each stage recording its check.
    async fn run(&self, name_hint: &str, spec: &Spec) -> Result<(bool, Json), String> {
        let started = Instant::now();
        let deadline = started + spec.timeout;
        let mut checks = Vec::new();
        let (allocatable_check, allocatable) = if spec.expect.is_empty() {
            (None, Json::Null)
        } else {
            let (c, seen) = self.allocatable(spec, deadline).await?;
            (Some(c), seen)
        };
        let capacity_missing = allocatable_check
            .as_ref()
            .is_some_and(|c| c["passed"] != json!(true));
        checks.extend(allocatable_check);
        if capacity_missing {
            // No pod could get what it asks for: a Job would only wait out the deadline.
            return Ok((
                false,
                json!({
                    "job": null,
                    "namespace": spec.namespace,
                    "duration_seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                    "allocatable": allocatable,
                    "checks": checks,
                }),
            ));
        }
        let job_name = format!("gpustack-smoke-{name_hint}");
        // Through DRA, each pod gets a claim of its own from the template; else the device
        // plugin's resource.
        let (claims, resources) = match &spec.claim_template {
            Some(template) => (
                json!([{"name": "gpu", "resourceClaimTemplateName": template}]),
                json!({"claims": [{"name": "gpu"}]}),
            ),
            None => (
                Json::Null,
                json!({"limits": {spec.resource.clone(): spec.gpus_per_pod.to_string()}}),
            ),
        };
        let jobs: Api<Job> = Api::namespaced(self.cluster.client.clone(), &spec.namespace);
        let job: Job = serde_json::from_value(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job_name,
                "labels": {"app.kubernetes.io/managed-by": "gpustack", "gpustack.dev/smoke-test": job_name},
            },
            "spec": {
                "parallelism": spec.pods,
                "completions": spec.pods,
                "backoffLimit": 0,
                "activeDeadlineSeconds": deadline.saturating_duration_since(Instant::now()).as_secs().max(1),
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/managed-by": "gpustack", "gpustack.dev/smoke-test": job_name}},
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": spec.node_selector,
                        "tolerations": spec.tolerations,
                        "resourceClaims": claims,
                        "containers": [{
                            "name": "vectoradd",
                            "image": spec.image,
                            "resources": resources,
                        }],
                    },
                },
            },
        }))
        .map_err(|e| e.to_string())?;
        let claim_watch = match spec.claim_template {
            Some(_) => Some(self.watch_claims(&spec.namespace, &job_name).await),
            None => None,
        };
        let created = jobs.create(&PostParams::default(), &job).await;
        if let Err(e) = created {
            if let Some((_, task)) = &claim_watch {
                task.abort();
            }
            return Err(api_error(&e));
        }
        let mut pods_failed = false;
        let outcome = loop {
            let status = jobs
                .get(&job_name)
                .await
                .map_err(|e| api_error(&e))?
                .status
                .unwrap_or_default();
            let succeeded = status.succeeded.unwrap_or(0);
            let failed = status.failed.unwrap_or(0);
            if succeeded >= spec.pods {
                break check(
                    "pods succeeded",
                    true,
                    format!("{succeeded} of {} pods succeeded", spec.pods),
                );
            }
            if failed > 0 {
                pods_failed = true;
                break check(
                    "pods succeeded",
                    false,
                    format!("{failed} pod(s) failed, {succeeded} succeeded"),
                );
            }
            if Instant::now() >= deadline {
                break check(
                    "pods succeeded",
                    false,
                    format!(
                        "{succeeded} of {} pods succeeded within {}",
                        spec.pods,
                        humantime::format_duration(spec.timeout)
                    ),
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        checks.push(outcome);
        // The devices the scheduler allocated to each pod's claim.
        let devices = match claim_watch {
            Some((seen, task)) => {
                task.abort();
                seen.lock().map(|s| s.clone()).unwrap_or_default()
            }
            None => Default::default(),
        };
        let pods: Api<Pod> = Api::namespaced(self.cluster.client.clone(), &spec.namespace);
        let list = pods
            .list(&ListParams::default().labels(&format!("job-name={job_name}")))
            .await
            .map_err(|e| api_error(&e))?;
        let mut placement = serde_json::Map::new();
        let mut log_results = Vec::new();
        for pod in &list.items {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            placement.insert(pod_name.clone(), json!(node));
            log_results.push(match pods.logs(&pod_name, &Default::default()).await {
                Ok(log) => Some(log.contains("Test PASSED")),
                Err(_) => None,
            });
        }
        let nodes: std::collections::BTreeSet<&str> = placement
            .values()
            .filter_map(Json::as_str)
            .filter(|n| !n.is_empty())
            .collect();
        if spec.same_node {
            checks.push(check(
                "same node",
                nodes.len() == 1,
                format!(
                    "pods ran on {}",
                    if nodes.is_empty() {
                        "no node".to_owned()
                    } else {
                        nodes.iter().copied().collect::<Vec<_>>().join(", ")
                    }
                ),
            ));
        }
        if spec.claim_template.is_some() {
            let without: Vec<&String> = placement
                .keys()
                .filter(|pod| devices.get(*pod).is_none_or(Vec::is_empty))
                .collect();
            let all: Vec<&String> = devices.values().flatten().collect();
            checks.push(check(
                "claims allocated",
                without.is_empty() && !placement.is_empty(),
                if without.is_empty() {
                    format!(
                        "{} pod(s) got {} device(s): {}",
                        placement.len(),
                        all.len(),
                        all.iter()
                            .map(|d| d.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    format!(
                        "no devices seen allocated to {}",
                        without
                            .iter()
                            .map(|p| p.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
            ));
        }
        let served = log_results.iter().filter(|r| r.is_some()).count();
        if served > 0 {
            let passed = log_results.iter().filter(|r| **r == Some(true)).count();
            checks.push(check(
                "Test PASSED in logs",
                passed == list.items.len(),
                format!("{passed} of {} pod logs say Test PASSED", list.items.len()),
            ));
        }
        let passed = checks.iter().all(|c| c["passed"] == json!(true));
        // A Job whose pods failed stays for inspection; any other is removed, so that no pod
        // keeps holding GPUs after the test.
        let keep = !passed && pods_failed;
        if !keep {
            let _ = jobs
                .delete(
                    &job_name,
                    &DeleteParams {
                        propagation_policy: Some(PropagationPolicy::Background),
                        ..Default::default()
                    },
                )
                .await;
        }
        let result = json!({
            "job": job_name,
            "kept": keep,
            "namespace": spec.namespace,
            "duration_seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            "pods": placement,
            "devices": if spec.claim_template.is_some() { json!(devices) } else { Json::Null },
            "nodes": nodes.iter().collect::<Vec<_>>(),
            "allocatable": allocatable,
            "logs": if served > 0 { "checked" } else { "not served by this cluster" },
            "checks": checks,
        });
        Ok((passed, result))
    }
}

#[async_trait::async_trait]
impl Provider for SmokeTests {
    /// A test's result is what happened when it ran, except for capacity: the nodes must
    /// still advertise what the test expects. A node that advertises less (a device plugin
    /// that lost its config, a GPU that fell off the bus) turns `passed` false, which drift
    /// reports and the next plan answers by running the test again.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let checks = request.states.iter().map(|state| async move {
            let passed = attribute(state, "passed").and_then(Value::as_bool) == Some(true);
            let spec = Spec::of(state)
                .ok()
                .filter(|s| passed && !s.expect.is_empty())?;
            let (check, seen) = self.allocatable(&spec, Instant::now()).await.ok()?;
            if check["passed"] == json!(true) {
                return None;
            }
            let mut drifted = state.clone();
            set(&mut drifted, "passed", Value::Bool(false));
            let mut result = attribute(state, "result")
                .map(Value::to_json)
                .unwrap_or(json!({}));
            result["capacity_drift"] = check["detail"].clone();
            result["allocatable"] = seen;
            set(&mut drifted, "result", Value::from_json(&result));
            Some(drifted)
        });
        let drifted = futures::future::join_all(checks).await;
        ReadResourcesResponse {
            states: request
                .states
                .into_iter()
                .zip(drifted)
                .map(|(state, drifted)| Some(drifted.unwrap_or(state)))
                .collect(),
            diagnostics: vec![],
            gpu_facts: vec![],
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let mut planned = request.config.clone();
        default_if_unset(
            &mut planned,
            "tolerations",
            Value::List(vec![Value::from_json(
                &json!({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule", "value": null}),
            )]),
        );
        default_if_unset(&mut planned, "pods", Value::number(1.0));
        // Through DRA the claim template says what a pod gets: no device-plugin defaults.
        if attribute(&planned, "resource_claim_template").is_none_or(Value::is_null) {
            default_if_unset(&mut planned, "gpus_per_pod", Value::number(1.0));
            default_if_unset(&mut planned, "resource_name", Value::string(GPU_RESOURCE));
        }
        default_if_unset(&mut planned, "image", Value::string(DEFAULT_IMAGE));
        default_if_unset(&mut planned, "namespace", Value::string("default"));
        let unchanged = request.prior_state.as_ref().is_some_and(|prior| {
            attribute(prior, "passed").and_then(Value::as_bool) == Some(true)
                && planned.as_object().is_some_and(|p| {
                    p.iter()
                        .filter(|(k, _)| *k != "passed" && *k != "result")
                        .all(|(k, v)| {
                            prior
                                .as_object()
                                .and_then(|o| o.get(k))
                                .unwrap_or(&Value::Null)
                                == v
                        })
                })
        });
        for name in ["passed", "result"] {
            let value = match &request.prior_state {
                Some(prior) if unchanged => attribute(prior, name).cloned().unwrap_or(Value::Null),
                _ => Value::Unknown,
            };
            set(&mut planned, name, value);
        }
        PlanResourceChangeResponse {
            existing: None,
            planned_state: planned,
            requires_replace: vec![],
            gpu_facts: vec![],
            diagnostics: vec![],
            order: Default::default(),
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        let Some(planned) = request.planned_state else {
            return ApplyResourceChangeResponse::default();
        };
        let spec = match Spec::of(&planned) {
            Ok(spec) => spec,
            Err(e) => {
                return ApplyResourceChangeResponse {
                    new_state: None,
                    diagnostics: vec![Diagnostic::error("Invalid smoke test", e)],
                };
            }
        };
        let hint = format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros())
                .unwrap_or(0)
                & 0xff_ffff
        );
        match self.run(&hint, &spec).await {
            Ok((true, result)) => {
                let mut state = planned;
                set(&mut state, "passed", Value::Bool(true));
                set(&mut state, "result", Value::from_json(&result));
                ApplyResourceChangeResponse {
                    new_state: Some(state),
                    diagnostics: vec![],
                }
            }
            Ok((false, result)) => {
                let failed: Vec<String> = result["checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["passed"] != json!(true))
                    .map(|c| {
                        format!(
                            "{}: {}",
                            c["name"].as_str().unwrap_or(""),
                            c["detail"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                ApplyResourceChangeResponse {
                    new_state: None,
                    diagnostics: vec![Diagnostic::error(
                        "GPU smoke test failed",
                        format!(
                            "{}{}",
                            failed.join("\n"),
                            if result["kept"] == json!(true) {
                                format!(
                                    "\nJob {}/{} is kept for inspection.",
                                    spec.namespace,
                                    result["job"].as_str().unwrap_or("")
                                )
                            } else {
                                String::new()
                            }
                        ),
                    )],
                }
            }
            Err(e) => ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: vec![Diagnostic::error("Cannot run the GPU smoke test", e)],
            },
        }
    }
}
