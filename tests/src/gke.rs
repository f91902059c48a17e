//! A fake of the GKE API (container.googleapis.com v1, REST/JSON) and of Google's OAuth token
//! endpoint, for the real google-cloud-container-v1 client to talk to.
//!
//! It follows the shapes of the Rust SDK's own types, which are the contract: node pools are
//! created, updated, resized, autoscaled and deleted through Operations that finish on their
//! own; the cluster's autoscaling (node auto-provisioning) is updated through
//! `desiredClusterAutoscaling`. As on GKE, a pool's size lives in its managed instance groups
//! (one per zone, listed in `instanceGroupUrls`, served by the Compute Engine API at
//! `/compute/v1/.../instanceGroupManagers/NAME` with its `targetSize`): `setSize` resizes them,
//! and `initialNodeCount` stays what the pool was created with. Compute Engine's
//! `acceleratorTypes.get` describes GPU types as GCE does (`NVIDIA A100 40GB`, `NVIDIA T4`: no
//! memory in the names of GPUs sold in one size), 404 for a type it lacks; unlike GCE, it
//! offers every type in every zone. It refuses what GKE refuses (a MIG partition size the
//! accelerator does not offer, an unknown resource type in a limit, a pool that exists) with
//! Google's error shape. Faults can be queued as for the AKS fake. Started with a kubeconfig
//! (`GkeFake::start_with`), it makes the pools' nodes as kwok nodes in that cluster, with GKE's
//! labels, as their instance groups say, and removes them with their pool (GKE deletes a pool's
//! nodes without respecting PodDisruptionBudgets; the fake simply deletes them).

use crate::http::{Answer, Fault, Traffic, dropped, json_response, serve};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const REFRESH_TOKEN: &str = "fake-refresh-token-do-not-print";

struct Operation {
    location: String,
    due: Instant,
    /// What happens to the world when the operation is done.
    finish: Box<dyn FnOnce(&mut World) + Send>,
    done: bool,
    kind: &'static str,
    target: String,
}

#[derive(Default)]
struct World {
    /// "projects/P/locations/L/clusters/C" → the cluster.
    clusters: BTreeMap<String, Json>,
    /// "projects/P/locations/L/clusters/C/nodePools/N" → the node pool.
    pools: BTreeMap<String, Json>,
    /// "projects/P/zones/Z/instanceGroupManagers/N" → the managed instance group.
    groups: BTreeMap<String, Json>,
    operations: BTreeMap<String, Operation>,
    traffic: Traffic,
    next: u64,
}

pub struct GkeFake {
    pub endpoint: String,
    pub credentials_file: PathBuf,
    world: Arc<Mutex<World>>,
    _dir: tempfile::TempDir,
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    json_response(
        status,
        &json!({"error": {"code": status.as_u16(), "message": message, "status": code}}),
        &[],
    )
}

/// GKE's MIG partition sizes per accelerator.
fn partitions(accelerator: &str) -> &'static [&'static str] {
    match accelerator {
        "nvidia-tesla-a100" => &["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"],
        "nvidia-a100-80gb" => &["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"],
        "nvidia-h100-80gb" => &["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"],
        _ => &[],
    }
}

const ACCELERATORS: &[&str] = &[
    "nvidia-tesla-t4",
    "nvidia-tesla-v100",
    "nvidia-tesla-p100",
    "nvidia-tesla-a100",
    "nvidia-a100-80gb",
    "nvidia-l4",
    "nvidia-h100-80gb",
];

impl GkeFake {
    /// Starts the fake with the clusters `projects/P/locations/L/clusters/C`.
    pub fn start(clusters: &[&str]) -> Self {
        Self::start_with(clusters, None)
    }

    /// As [`GkeFake::start`]; the pools' nodes are made (and removed) as kwok nodes in the
    /// cluster of `kubeconfig`, with GKE's labels and the GPU annotations the GPU simulator
    /// reads, once the operation that sizes them is done.
    pub fn start_with(clusters: &[&str], kubeconfig: Option<PathBuf>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let credentials_file = dir.path().join("application_default_credentials.json");
        std::fs::write(
            &credentials_file,
            json!({
                "type": "authorized_user",
                "client_id": "fake-client.apps.googleusercontent.com",
                "client_secret": "fake-client-secret",
                "refresh_token": REFRESH_TOKEN,
                "token_uri": format!("{endpoint}/token"),
            })
            .to_string(),
        )
        .unwrap();
        let world = Arc::new(Mutex::new(World {
            clusters: clusters
                .iter()
                .map(|name| {
                    let location = name.split('/').nth(3).unwrap_or_default();
                    (
                        (*name).to_owned(),
                        json!({
                            "name": name.rsplit('/').next(),
                            "location": location,
                            "status": "RUNNING",
                            "currentMasterVersion": "1.34.1-gke.1000",
                            "autoscaling": {"enableNodeAutoprovisioning": false},
                        }),
                    )
                })
                .collect(),
            ..Default::default()
        }));
        let shared = world.clone();
        serve(listener, None, move || async move {
            let kube = match kubeconfig {
                Some(path) => Some(crate::aks::client(path).await),
                None => None,
            };
            move |request| {
                let (world, kube) = (shared.clone(), kube.clone());
                async move {
                    if let Some(kube) = &kube {
                        sync_nodes(&world, kube).await;
                    }
                    handle(request, &world).await
                }
            }
        });
        Self {
            endpoint,
            credentials_file,
            world,
            _dir: dir,
        }
    }

    /// The environment for Application Default Credentials that lead to the fake.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(
            "GOOGLE_APPLICATION_CREDENTIALS".to_owned(),
            self.credentials_file.display().to_string(),
        )]
    }

    pub fn inject(&self, method: Method, faults: &[Fault]) {
        self.world.lock().unwrap().traffic.inject(&method, faults);
    }

    pub fn log(&self) -> Vec<String> {
        self.world.lock().unwrap().traffic.log()
    }

    pub fn pool(&self, name: &str) -> Option<Json> {
        self.world.lock().unwrap().pools.get(name).cloned()
    }

    pub fn pools(&self) -> Vec<String> {
        self.world.lock().unwrap().pools.keys().cloned().collect()
    }

    pub fn cluster(&self, name: &str) -> Option<Json> {
        self.world.lock().unwrap().clusters.get(name).cloned()
    }

    /// Changes a pool as someone with gcloud would.
    pub fn edit(&self, name: &str, change: impl FnOnce(&mut Json)) {
        let mut world = self.world.lock().unwrap();
        change(world.pools.get_mut(name).expect("no such pool"));
    }

    /// Resizes a pool's instance groups to `per_zone` nodes each, as `gcloud container
    /// clusters resize` or the cluster autoscaler do: the pool's initialNodeCount stays.
    pub fn resize_outside(&self, pool: &str, per_zone: u64) {
        let mut world = self.world.lock().unwrap();
        set_group_sizes(&mut world, pool, per_zone);
    }

    /// The target sizes of a pool's instance groups.
    pub fn group_sizes(&self, pool: &str) -> Vec<u64> {
        let world = self.world.lock().unwrap();
        group_keys(&world, pool)
            .iter()
            .filter_map(|k| world.groups.get(k))
            .filter_map(|g| g["targetSize"].as_u64())
            .collect()
    }
}

/// The instance groups of a pool, by the keys of `World::groups`.
fn group_keys(w: &World, pool: &str) -> Vec<String> {
    w.pools
        .get(pool)
        .and_then(|p| p["instanceGroupUrls"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|u| u.as_str())
        .filter_map(|u| u.split_once("/compute/v1/").map(|(_, k)| k.to_owned()))
        .collect()
}

fn set_group_sizes(w: &mut World, pool: &str, per_zone: u64) {
    for key in group_keys(w, pool) {
        if let Some(group) = w.groups.get_mut(&key) {
            group["targetSize"] = json!(per_zone);
        }
    }
}

/// The zones a pool's nodes go to: its own locations, else the cluster's zone, else (a
/// regional cluster) three zones of its region.
fn pool_zones(location: &str, pool: &Json) -> Vec<String> {
    if let Some(locations) = pool["locations"].as_array().filter(|l| !l.is_empty()) {
        return locations
            .iter()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect();
    }
    if location.matches('-').count() >= 2 {
        return vec![location.to_owned()];
    }
    ["a", "b", "c"]
        .iter()
        .map(|z| format!("{location}-{z}"))
        .collect()
}

async fn handle(request: Request<Incoming>, world: &Mutex<World>) -> Answer {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    if path == "/token" && parts.method == Method::POST {
        let form = String::from_utf8_lossy(&body).into_owned();
        if !form.contains(REFRESH_TOKEN) {
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "invalid_grant", "error_description": "Bad Request"}),
                &[],
            ));
        }
        return Ok(json_response(
            StatusCode::OK,
            &json!({"access_token": "fake-gke-access-token", "expires_in": 3599, "token_type": "Bearer", "scope": "https://www.googleapis.com/auth/cloud-platform"}),
            &[],
        ));
    }
    let fault = world.lock().unwrap().traffic.record(&parts.method, &path);
    match fault {
        Some(Fault::Throttle(_)) => {
            return Ok(error(
                StatusCode::TOO_MANY_REQUESTS,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Requests'.",
            ));
        }
        Some(Fault::ServerError) => {
            return Ok(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "Internal error encountered.",
            ));
        }
        Some(Fault::Busy) => {
            return Ok(error(
                StatusCode::BAD_REQUEST,
                "FAILED_PRECONDITION",
                "Cluster is running incompatible operation.",
            ));
        }
        Some(Fault::Drop) => return dropped(),
        _ => {}
    }
    if parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        != Some("Bearer fake-gke-access-token")
    {
        return Ok(error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials.",
        ));
    }
    let request: Json = serde_json::from_slice(&body).unwrap_or(Json::Null);
    if let Some(resource) = path.strip_prefix("/compute/v1/")
        && let ["projects", project, "zones", zone, "acceleratorTypes", name] =
            resource.split('/').collect::<Vec<_>>()[..]
    {
        return Ok(match accelerator_description(name) {
            Some((description, max)) if parts.method == Method::GET => json_response(
                StatusCode::OK,
                &json!({
                    "kind": "compute#acceleratorType",
                    "name": name,
                    "description": description,
                    "zone": format!("https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}"),
                    "selfLink": format!("https://www.googleapis.com/compute/v1/{resource}"),
                    "maximumCardsPerInstance": max,
                }),
                &[],
            ),
            _ => error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("The resource '{resource}' was not found"),
            ),
        });
    }
    if let Some(group) = path.strip_prefix("/compute/v1/") {
        let w = world.lock().unwrap();
        return Ok(match (parts.method.clone(), w.groups.get(group)) {
            (Method::GET, Some(g)) => json_response(StatusCode::OK, g, &[]),
            _ => error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("The resource 'projects/{group}' was not found"),
            ),
        });
    }
    let answer = route(world, &parts.method, &path, &request);
    if matches!(fault, Some(Fault::LoseAnswer)) {
        return dropped();
    }
    if matches!(fault, Some(Fault::Hang)) {
        tokio::time::sleep(crate::http::HANG).await;
    }
    Ok(answer)
}

/// Proto3 JSON takes an enum by name or by number; GKE answers with names.
fn enum_names(pool: &mut Json) {
    fn name(value: &mut Json, names: &[&str]) {
        if let Some(n) = value.as_u64() {
            *value = json!(names.get(n as usize).copied().unwrap_or("UNSPECIFIED"));
        }
    }
    for taint in pool["config"]["taints"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        name(
            &mut taint["effect"],
            &[
                "EFFECT_UNSPECIFIED",
                "NO_SCHEDULE",
                "PREFER_NO_SCHEDULE",
                "NO_EXECUTE",
            ],
        );
    }
    for accelerator in pool["config"]["accelerators"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if accelerator["gpuSharingConfig"].is_object() {
            name(
                &mut accelerator["gpuSharingConfig"]["gpuSharingStrategy"],
                &["GPU_SHARING_STRATEGY_UNSPECIFIED", "TIME_SHARING", "MPS"],
            );
        }
        if accelerator["gpuDriverInstallationConfig"].is_object() {
            name(
                &mut accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"],
                &[
                    "GPU_DRIVER_VERSION_UNSPECIFIED",
                    "INSTALLATION_DISABLED",
                    "DEFAULT",
                    "LATEST",
                ],
            );
        }
    }
}

/// A kwok node of a pool, as GKE makes it.
struct NodeSpec {
    pool: String,
    index: usize,
    machine: String,
    /// The accelerator type and how many per node.
    accelerator: Option<(String, u64)>,
    labels: BTreeMap<String, String>,
    taints: Vec<Json>,
}

/// The GPU product GFD reports for a GKE accelerator type.
fn product(accelerator: &str) -> Option<&'static str> {
    Some(match accelerator {
        "nvidia-tesla-t4" => "Tesla T4",
        "nvidia-l4" => "NVIDIA L4",
        "nvidia-tesla-a100" => "NVIDIA A100-SXM4-40GB",
        "nvidia-a100-80gb" => "NVIDIA A100-SXM4-80GB",
        "nvidia-h100-80gb" => "NVIDIA H100 80GB HBM3",
        _ => return None,
    })
}

/// The nodes the pools' instance groups hold, once their operations are done.
fn node_specs(w: &World) -> Vec<NodeSpec> {
    let mut out = Vec::new();
    for (key, pool) in &w.pools {
        let name = key.rsplit('/').next().unwrap_or_default().to_owned();
        let count: u64 = group_keys(w, key)
            .iter()
            .filter_map(|k| w.groups.get(k))
            .filter_map(|g| g["targetSize"].as_u64())
            .sum();
        let config = &pool["config"];
        let accelerator = config["accelerators"]
            .as_array()
            .and_then(|a| a.first())
            .map(|a| {
                let count = a["acceleratorCount"]
                    .as_u64()
                    .or_else(|| a["acceleratorCount"].as_str()?.parse().ok())
                    .unwrap_or(1);
                (
                    a["acceleratorType"].as_str().unwrap_or_default().to_owned(),
                    count,
                )
            });
        let labels: BTreeMap<String, String> = config["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect();
        let taints: Vec<Json> = config["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let effect = match t["effect"].as_str().unwrap_or_default() {
                    "NO_EXECUTE" => "NoExecute",
                    "PREFER_NO_SCHEDULE" => "PreferNoSchedule",
                    _ => "NoSchedule",
                };
                json!({"key": t["key"], "value": t["value"], "effect": effect})
            })
            .collect();
        for index in 0..count as usize {
            out.push(NodeSpec {
                pool: name.clone(),
                index,
                machine: config["machineType"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                accelerator: accelerator.clone(),
                labels: labels.clone(),
                taints: taints.clone(),
            });
        }
    }
    out
}

const POOL_LABEL: &str = "cloud.google.com/gke-nodepool";

/// Makes the cluster's kwok nodes match the pools' instance groups: the operations that are
/// due finish first, then the nodes come or go, before the request that sees them done.
async fn sync_nodes(world: &Mutex<World>, kube: &kube::Client) {
    let wanted = {
        let mut w = world.lock().unwrap();
        advance(&mut w);
        node_specs(&w)
    };
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(kube.clone());
    let node_name =
        |spec: &NodeSpec| format!("gke-ml-gke-{}-1a2b3c4d-{:04}", spec.pool, spec.index);
    let names: std::collections::BTreeSet<String> = wanted.iter().map(node_name).collect();
    let existing = nodes
        .list(&kube::api::ListParams::default().labels(POOL_LABEL))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let mut have = std::collections::BTreeSet::new();
    for node in existing {
        let name = node.metadata.name.clone().unwrap_or_default();
        let ours = node
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("gpustack.dev/gke-fake"));
        if ours && !names.contains(&name) {
            let _ = nodes.delete(&name, &Default::default()).await;
        } else {
            have.insert(name);
        }
    }
    for spec in &wanted {
        let name = node_name(spec);
        if have.contains(&name) {
            continue;
        }
        let mut labels = json!({
            "type": "kwok",
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name,
            POOL_LABEL: spec.pool,
            "node.kubernetes.io/instance-type": spec.machine,
        });
        for (k, v) in &spec.labels {
            labels[k] = json!(v);
        }
        let mut annotations = json!({
            "kwok.x-k8s.io/node": "fake",
            "node.alpha.kubernetes.io/ttl": "0",
            "gpustack.dev/gke-fake": "true",
        });
        if let Some((accelerator, count)) = &spec.accelerator {
            labels["cloud.google.com/gke-accelerator"] = json!(accelerator);
            if let Some(model) = product(accelerator) {
                annotations["gpustack.dev/gpu-model"] = json!(model);
                annotations["gpustack.dev/gpu-count"] = json!(count.to_string());
            }
        }
        let object = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"taints": spec.taints},
            "status": {
                "capacity": {"cpu": "12", "memory": "85Gi", "pods": "110"},
                "allocatable": {"cpu": "12", "memory": "85Gi", "pods": "110"},
                "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
            },
        });
        let _ = nodes
            .patch(
                &name,
                &kube::api::PatchParams::apply("gke-fake").force(),
                &kube::api::Patch::Apply(&object),
            )
            .await;
    }
}

fn advance(w: &mut World) {
    let now = Instant::now();
    let due: Vec<String> = w
        .operations
        .iter()
        .filter(|(_, o)| !o.done && o.due <= now)
        .map(|(k, _)| k.clone())
        .collect();
    for name in due {
        let finish = {
            let op = w.operations.get_mut(&name).unwrap();
            op.done = true;
            std::mem::replace(&mut op.finish, Box::new(|_| {}))
        };
        finish(w);
    }
}

fn operation_json(name: &str, op: &Operation) -> Json {
    json!({
        "name": name,
        "zone": op.location,
        "operationType": op.kind,
        "status": if op.done { "DONE" } else { "RUNNING" },
        "targetLink": op.target,
    })
}

fn start(
    w: &mut World,
    location: &str,
    kind: &'static str,
    target: &str,
    finish: impl FnOnce(&mut World) + Send + 'static,
) -> Response<Full<Bytes>> {
    w.next += 1;
    let name = format!("operation-{}", w.next);
    let op = Operation {
        location: location.to_owned(),
        due: Instant::now() + Duration::from_millis(1200),
        finish: Box::new(finish),
        done: false,
        kind,
        target: target.to_owned(),
    };
    let body = operation_json(&name, &op);
    w.operations.insert(name, op);
    json_response(StatusCode::OK, &body, &[])
}

fn route(
    world: &Mutex<World>,
    method: &Method,
    path: &str,
    request: &Json,
) -> Response<Full<Bytes>> {
    let mut w = world.lock().unwrap();
    advance(&mut w);
    let Some(rest) = path.strip_prefix("/v1/") else {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "No such method.");
    };
    let (resource, verb) = match rest.split_once(':') {
        Some((r, v)) => (r.to_owned(), Some(v.to_owned())),
        None => (rest.to_owned(), None),
    };
    let segments: Vec<&str> = resource.split('/').collect();
    match (method.clone(), segments.as_slice(), verb.as_deref()) {
        (Method::GET, ["projects", _, "locations", _, "operations", op], None) => {
            match w.operations.get(*op) {
                Some(o) => json_response(StatusCode::OK, &operation_json(op, o), &[]),
                None => error(StatusCode::NOT_FOUND, "NOT_FOUND", "Operation not found."),
            }
        }
        (Method::GET, ["projects", _, "locations", _, "clusters", _], None) => {
            match w.clusters.get(&resource) {
                Some(c) => json_response(StatusCode::OK, c, &[]),
                None => error(StatusCode::NOT_FOUND, "NOT_FOUND", "Cluster not found."),
            }
        }
        (Method::PUT, ["projects", _, "locations", location, "clusters", _], None) => {
            if !w.clusters.contains_key(&resource) {
                return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Cluster not found.");
            }
            let desired = request["update"]["desiredClusterAutoscaling"].clone();
            for limit in desired["resourceLimits"].as_array().into_iter().flatten() {
                let kind = limit["resourceType"].as_str().unwrap_or_default();
                if !["cpu", "memory"].contains(&kind) && !ACCELERATORS.contains(&kind) {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "INVALID_ARGUMENT",
                        &format!("Invalid resource type \"{kind}\" in resource limits."),
                    );
                }
            }
            let location = (*location).to_owned();
            let key = resource.clone();
            start(&mut w, &location, "UPDATE_CLUSTER", &resource, move |w| {
                if let Some(c) = w.clusters.get_mut(&key) {
                    c["autoscaling"] = desired;
                }
            })
        }
        (
            Method::POST,
            [
                "projects",
                _,
                "locations",
                location,
                "clusters",
                _,
                "nodePools",
            ],
            None,
        ) => {
            if !w.clusters.contains_key(&segments[..6].join("/")) {
                return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Cluster not found.");
            }
            let mut pool = request["nodePool"].clone();
            enum_names(&mut pool);
            let name = pool["name"].as_str().unwrap_or_default().to_owned();
            let key = format!("{resource}/{name}");
            if w.pools.contains_key(&key) {
                return error(
                    StatusCode::CONFLICT,
                    "ALREADY_EXISTS",
                    &format!("Already exists: {key}."),
                );
            }
            for accelerator in pool["config"]["accelerators"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let kind = accelerator["acceleratorType"].as_str().unwrap_or_default();
                if let Some(size) = accelerator["gpuPartitionSize"].as_str()
                    && !partitions(kind).contains(&size)
                {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "INVALID_ARGUMENT",
                        &format!("GPU partition size \"{size}\" is not supported for {kind}."),
                    );
                }
            }
            pool["status"] = json!("PROVISIONING");
            pool["version"] = json!("1.34.1-gke.1000");
            pool["config"]["imageType"] = json!("COS_CONTAINERD");
            pool["selfLink"] = json!(format!("https://container.googleapis.com/v1/{key}"));
            let zones = pool_zones(location, &pool);
            let size = pool["initialNodeCount"].as_u64().unwrap_or(0);
            let project = segments[1].to_owned();
            let cluster = segments[5].to_owned();
            w.pools.insert(key.clone(), pool);
            let location = (*location).to_owned();
            let target = key.clone();
            // The instance groups exist once the pool is provisioned, as on GKE.
            start(&mut w, &location, "CREATE_NODE_POOL", &target, move |w| {
                let mut urls = Vec::new();
                for zone in &zones {
                    let group = format!(
                        "projects/{project}/zones/{zone}/instanceGroupManagers/gke-{cluster}-{name}-grp"
                    );
                    w.groups.insert(
                        group.clone(),
                        json!({"name": group.rsplit('/').next(), "zone": zone, "targetSize": size}),
                    );
                    urls.push(json!(format!(
                        "https://www.googleapis.com/compute/v1/{group}"
                    )));
                }
                if let Some(p) = w.pools.get_mut(&key) {
                    p["status"] = json!("RUNNING");
                    p["instanceGroupUrls"] = json!(urls);
                }
            })
        }
        (
            _,
            [
                "projects",
                _,
                "locations",
                location,
                "clusters",
                _,
                "nodePools",
                _,
            ],
            verb,
        ) => {
            let location = (*location).to_owned();
            let Some(pool) = w.pools.get(&resource).cloned() else {
                return error(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    &format!("Not found: {resource}."),
                );
            };
            let key = resource.clone();
            match (method.clone(), verb) {
                (Method::GET, None) => json_response(StatusCode::OK, &pool, &[]),
                (Method::DELETE, None) => {
                    w.pools.get_mut(&key).unwrap()["status"] = json!("STOPPING");
                    start(&mut w, &location, "DELETE_NODE_POOL", &resource, move |w| {
                        for group in group_keys(w, &key) {
                            w.groups.remove(&group);
                        }
                        w.pools.remove(&key);
                    })
                }
                (Method::PUT, None) => {
                    let labels = request["labels"]["labels"].clone();
                    let mut wrapped =
                        json!({"config": {"taints": request["taints"]["taints"].clone()}});
                    enum_names(&mut wrapped);
                    let taints = wrapped["config"]["taints"].clone();
                    start(&mut w, &location, "UPDATE_NODE_POOL", &resource, move |w| {
                        if let Some(p) = w.pools.get_mut(&key) {
                            if !labels.is_null() {
                                p["config"]["labels"] = labels;
                            }
                            if !taints.is_null() {
                                p["config"]["taints"] = taints;
                            }
                        }
                    })
                }
                (Method::POST, Some("setSize")) => {
                    let count = request["nodeCount"].clone();
                    start(
                        &mut w,
                        &location,
                        "SET_NODE_POOL_SIZE",
                        &resource,
                        move |w| {
                            set_group_sizes(w, &key, count.as_u64().unwrap_or(0));
                        },
                    )
                }
                (Method::POST, Some("setAutoscaling")) => {
                    let autoscaling = request["autoscaling"].clone();
                    start(
                        &mut w,
                        &location,
                        "SET_NODE_POOL_AUTOSCALING",
                        &resource,
                        move |w| {
                            if let Some(p) = w.pools.get_mut(&key) {
                                p["autoscaling"] = autoscaling;
                            }
                        },
                    )
                }
                _ => error(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    "Unsupported call.",
                ),
            }
        }
        _ => error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            &format!("No route for {path}."),
        ),
    }
}

/// GCE's accelerator types as `gcloud compute accelerator-types list` describes them, with the
/// most cards one VM takes.
fn accelerator_description(name: &str) -> Option<(&'static str, u32)> {
    Some(match name {
        "nvidia-tesla-t4" => ("NVIDIA T4", 4),
        "nvidia-tesla-v100" => ("NVIDIA V100", 8),
        "nvidia-tesla-p100" => ("NVIDIA P100", 4),
        "nvidia-tesla-p4" => ("NVIDIA P4", 4),
        "nvidia-l4" => ("NVIDIA L4", 8),
        "nvidia-tesla-a100" => ("NVIDIA A100 40GB", 16),
        "nvidia-a100-80gb" => ("NVIDIA A100 80GB", 8),
        "nvidia-h100-80gb" => ("NVIDIA H100 80GB", 8),
        "nvidia-h100-mega-80gb" => ("NVIDIA H100 Mega 80GB", 8),
        "nvidia-h200-141gb" => ("NVIDIA H200 141GB", 8),
        "nvidia-b200" => ("NVIDIA B200", 8),
        _ => return None,
    })
}
