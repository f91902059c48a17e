//! A fake of Azure Resource Manager's AKS agentPools API (api-version 2026-08-01) and of the
//! Entra ID token endpoint, over HTTPS with a CA of its own, for the real azure_core and
//! azure_identity clients to talk to.
//!
//! It follows the published REST shapes (the official examples in
//! ../shared/upstream/aks-2026-08-01/): PUT answers 201 (create) or 200 (update) with
//! `Azure-AsyncOperation`, DELETE 202 with `Location`; operations finish after a few polls;
//! ETags with `If-Match` / `If-None-Match`; 409 while another operation on the pool runs; 400
//! for a change of an immutable property. Faults (429 with Retry-After, 500, a dropped
//! connection, a lost answer) can be queued. When an operation finishes, the pool's nodes are
//! made (or removed) as kwok nodes in a test cluster, with AKS's labels and taints and the
//! GPU annotations the GPU simulator reads.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub const API_VERSION: &str = "2026-08-01";
/// Microsoft.Compute's api-version for Resource SKUs.
pub const SKUS_API_VERSION: &str = "2021-07-01";
/// Where the fake's clusters run.
const LOCATION: &str = "eastus";
pub const TENANT: &str = "11111111-1111-1111-1111-111111111111";
pub const CLIENT_ID: &str = "22222222-2222-2222-2222-222222222222";
pub const CLIENT_SECRET: &str = "fake-client-secret-do-not-print";

#[derive(Debug, Clone)]
struct Operation {
    pool: String,
    /// When the operation is done, as AKS's finish on their own, polled or not.
    due: std::time::Instant,
    deleting: bool,
    status: &'static str,
}

#[derive(Default)]
struct World {
    /// "sub/rg/cluster" → Kubernetes version.
    clusters: BTreeMap<String, String>,
    /// "sub/rg/cluster/pool" → the agent pool as ARM stores it.
    pools: BTreeMap<String, Json>,
    operations: BTreeMap<String, Operation>,
    /// What reached the API (not the token endpoint), and the faults queued for it.
    traffic: Traffic,
    tokens: Vec<String>,
    etag: u64,
    /// How long an operation takes.
    duration: std::time::Duration,
}

pub struct AksFake {
    pub endpoint: String,
    pub ca_file: PathBuf,
    world: Arc<Mutex<World>>,
    _dir: tempfile::TempDir,
}

/// The fake's GPUs for a VM size, as the GPU simulator names them.
fn gpus(vm_size: &str) -> Option<(u32, &'static str)> {
    Some(match vm_size {
        "Standard_NC4as_T4_v3" | "Standard_NC8as_T4_v3" | "Standard_NC16as_T4_v3" => {
            (1, "Tesla T4")
        }
        "Standard_NC64as_T4_v3" => (4, "Tesla T4"),
        "Standard_NC24ads_A100_v4" => (1, "NVIDIA A100-SXM4-80GB"),
        "Standard_ND96asr_v4" => (8, "NVIDIA A100-SXM4-40GB"),
        _ => return None,
    })
}

pub use crate::http::Fault;
use crate::http::{Answer, Traffic, dropped, json_response, serve};

fn error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    json_response(
        status,
        &json!({"error": {"code": code, "message": message}}),
        &[],
    )
}

fn empty(status: StatusCode, headers: &[(&str, String)]) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    response.body(Full::new(Bytes::new())).unwrap()
}

impl AksFake {
    /// Starts the fake with one cluster, `SUB/RG/CLUSTER` at Kubernetes `version`; pool
    /// nodes go to the cluster of `kubeconfig` when one is given.
    pub fn start(clusters: &[(&str, &str)], kubeconfig: Option<PathBuf>) -> Self {
        gpustack_connect::install_ring();
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "gpustack test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();

        let server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("https://{}", listener.local_addr().unwrap());
        let world = Arc::new(Mutex::new(World {
            clusters: clusters
                .iter()
                .map(|(id, version)| ((*id).to_owned(), (*version).to_owned()))
                .collect(),
            duration: std::time::Duration::from_millis(1500),
            ..Default::default()
        }));
        let shared = world.clone();
        let base = endpoint.clone();
        serve(listener, Some(acceptor), move || async move {
            let kube = match kubeconfig {
                Some(path) => Some(client(path).await),
                None => None,
            };
            move |request| {
                let (world, kube, base) = (shared.clone(), kube.clone(), base.clone());
                async move { handle(request, &world, kube.as_ref(), &base).await }
            }
        });
        Self {
            endpoint,
            ca_file,
            world,
            _dir: dir,
        }
    }

    /// The environment a gpustack run needs to reach the fake with the standard credential
    /// chain (a service principal's secret) and to trust its CA.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AZURE_TENANT_ID", TENANT.to_owned()),
            ("AZURE_CLIENT_ID", CLIENT_ID.to_owned()),
            ("AZURE_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
            ("AZURE_AUTHORITY_HOST", format!("{}/", self.endpoint)),
            ("SSL_CERT_FILE", self.ca_file.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Queues faults for the next requests with `method` to the API.
    pub fn inject(&self, method: Method, faults: &[Fault]) {
        self.world.lock().unwrap().traffic.inject(&method, faults);
    }

    /// "METHOD path" of the API requests so far.
    pub fn log(&self) -> Vec<String> {
        self.world.lock().unwrap().traffic.log()
    }

    /// The stored pool `SUB/RG/CLUSTER/POOL`.
    pub fn pool(&self, id: &str) -> Option<Json> {
        self.world.lock().unwrap().pools.get(id).cloned()
    }

    pub fn pools(&self) -> Vec<String> {
        self.world.lock().unwrap().pools.keys().cloned().collect()
    }

    /// Changes a pool as someone in the portal would (no nodes move: that is the autoscaler's
    /// or the next operation's business).
    pub fn edit(&self, id: &str, change: impl FnOnce(&mut Json)) {
        let mut world = self.world.lock().unwrap();
        world.etag += 1;
        let etag = format!("\"{}\"", world.etag);
        let pool = world.pools.get_mut(id).expect("no such pool");
        change(pool);
        pool["properties"]["eTag"] = json!(etag);
    }
}

pub(crate) async fn client(kubeconfig: PathBuf) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn handle(
    request: Request<Incoming>,
    world: &Mutex<World>,
    kube: Option<&kube::Client>,
    base: &str,
) -> Answer {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };

    // What AzureRM's metadata_host (Azure Stack Hub, a custom cloud) reads: the cloud's
    // endpoints, unauthenticated.
    if path == "/metadata/endpoints" && parts.method == Method::GET {
        return Ok(json_response(
            StatusCode::OK,
            &json!({
                "name": "AzureFake",
                "resourceManager": format!("{base}/"),
                "authentication": {
                    "loginEndpoint": format!("{base}/"),
                    "audiences": ["https://management.core.windows.net/", "https://management.azure.com/"],
                    "tenant": "common",
                    "identityProvider": "AAD"
                }
            }),
            &[],
        ));
    }
    if path.ends_with("/oauth2/v2.0/token") && parts.method == Method::POST {
        let form: BTreeMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
        if form.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET)
            || form.get("client_id").map(String::as_str) != Some(CLIENT_ID)
        {
            return Ok(json_response(
                StatusCode::UNAUTHORIZED,
                &json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."}),
                &[],
            ));
        }
        let mut w = world.lock().unwrap();
        let token = format!("fake-access-token-{}", w.tokens.len() + 1);
        w.tokens.push(token.clone());
        return Ok(json_response(
            StatusCode::OK,
            &json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}),
            &[],
        ));
    }

    let fault = world.lock().unwrap().traffic.record(&parts.method, &path);
    match fault {
        Some(Fault::Throttle(seconds)) => {
            return Ok(json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &json!({"error": {"code": "TooManyRequests", "message": "The request is being throttled."}}),
                &[("retry-after", seconds.to_string())],
            ));
        }
        Some(Fault::ServerError) => {
            return Ok(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                "An internal error occurred.",
            ));
        }
        Some(Fault::Busy) => {
            return Ok(error(
                StatusCode::CONFLICT,
                "OperationNotAllowed",
                "Operation is not allowed because there's an in progress upgrade node pool operation.",
            ));
        }
        Some(Fault::Drop) => return dropped(),
        _ => {}
    }

    let authorized = header("authorization")
        .and_then(|h| h.strip_prefix("Bearer ").map(str::to_owned))
        .is_some_and(|t| world.lock().unwrap().tokens.contains(&t));
    if !authorized {
        return Ok(error(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "The access token is invalid.",
        ));
    }
    // Resource SKUs belong to Microsoft.Compute, with its own api-version.
    let skus = path.ends_with("/providers/Microsoft.Compute/skus");
    let version = if skus { SKUS_API_VERSION } else { API_VERSION };
    if !query
        .split('&')
        .any(|p| p == format!("api-version={version}"))
    {
        return Ok(error(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            &format!(
                "No registered resource provider found for this api-version; supported: {version}."
            ),
        ));
    }

    advance(world, kube).await;
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let answer = match segments.as_slice() {
        ["subscriptions", _, "providers", "Microsoft.Compute", "skus"] => {
            let location = form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == "$filter")
                .and_then(|(_, f)| {
                    f.strip_prefix("location eq '")?
                        .strip_suffix('\'')
                        .map(str::to_owned)
                });
            json_response(
                StatusCode::OK,
                &json!({ "value": resource_skus(location.as_deref()) }),
                &[],
            )
        }
        [
            "subscriptions",
            sub,
            "resourceGroups",
            rg,
            "providers",
            "Microsoft.ContainerService",
            "managedClusters",
            cluster,
        ] if parts.method == Method::GET => {
            let cluster_id = format!("{sub}/{rg}/{cluster}");
            match world.lock().unwrap().clusters.get(&cluster_id) {
                Some(version) => json_response(
                    StatusCode::OK,
                    &json!({
                        "id": format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters/{cluster}"),
                        "name": cluster,
                        "type": "Microsoft.ContainerService/ManagedClusters",
                        "location": LOCATION,
                        "properties": { "kubernetesVersion": version, "provisioningState": "Succeeded" },
                    }),
                    &[],
                ),
                None => cluster_not_found(cluster),
            }
        }
        [
            "subscriptions",
            sub,
            "resourceGroups",
            rg,
            "providers",
            "Microsoft.ContainerService",
            "managedClusters",
            cluster,
            "agentPools",
            pool,
        ] => {
            let cluster_id = format!("{sub}/{rg}/{cluster}");
            let id = format!("{cluster_id}/{pool}");
            let arm_id = format!(
                "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters/{cluster}/agentPools/{pool}"
            );
            let operations = format!(
                "{base}/subscriptions/{sub}/providers/Microsoft.ContainerService/locations/eastus"
            );
            match parts.method {
                Method::GET => get(world, &cluster_id, &id),
                Method::PUT => put(
                    world,
                    &cluster_id,
                    &id,
                    pool,
                    &arm_id,
                    &operations,
                    &body,
                    header("if-match"),
                    header("if-none-match"),
                ),
                Method::DELETE => delete(world, &id, &operations),
                _ => error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "MethodNotAllowed",
                    "Not supported.",
                ),
            }
        }
        [
            "subscriptions",
            _,
            "providers",
            "Microsoft.ContainerService",
            "locations",
            _,
            kind @ ("operations" | "operationresults"),
            operation,
        ] => poll(world, operation, *kind == "operationresults"),
        _ => error(
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
            &format!("No route for {path}."),
        ),
    };
    if matches!(fault, Some(Fault::LoseAnswer)) {
        return dropped();
    }
    if matches!(fault, Some(Fault::Hang)) {
        tokio::time::sleep(crate::http::HANG).await;
    }
    Ok(answer)
}

/// ARM's answer for a managed cluster that does not exist.
fn cluster_not_found(cluster: &str) -> Response<Full<Bytes>> {
    error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        &format!(
            "The Resource 'Microsoft.ContainerService/managedClusters/{cluster}' was not found."
        ),
    )
}

fn get(world: &Mutex<World>, cluster_id: &str, id: &str) -> Response<Full<Bytes>> {
    let w = world.lock().unwrap();
    if !w.clusters.contains_key(cluster_id) {
        return cluster_not_found(cluster_id.rsplit('/').next().unwrap_or_default());
    }
    match w.pools.get(id) {
        Some(pool) => json_response(StatusCode::OK, pool, &[]),
        None => error(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!(
                "Agent pool {} not found.",
                id.rsplit('/').next().unwrap_or_default()
            ),
        ),
    }
}

fn busy(w: &World, id: &str) -> bool {
    w.operations
        .values()
        .any(|o| o.pool == id && o.status == "InProgress")
}

/// Properties AKS does not let an existing pool change.
const IMMUTABLE: &[&str] = &[
    "vmSize",
    "osType",
    "scaleSetPriority",
    "scaleSetEvictionPolicy",
    "gpuInstanceProfile",
    "gpuProfile",
    "osDiskSizeGB",
    "availabilityZones",
    "maxPods",
];

#[allow(clippy::too_many_arguments)]
fn put(
    world: &Mutex<World>,
    cluster_id: &str,
    id: &str,
    name: &str,
    arm_id: &str,
    operations: &str,
    body: &[u8],
    if_match: Option<String>,
    if_none_match: Option<String>,
) -> Response<Full<Bytes>> {
    let mut w = world.lock().unwrap();
    let Some(version) = w.clusters.get(cluster_id).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            "The managed cluster was not found.",
        );
    };
    let Ok(request) = serde_json::from_slice::<Json>(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidRequestContent",
            "The request content was invalid and could not be deserialized.",
        );
    };
    let valid_name = name.len() <= 12
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !valid_name {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            &format!("Agent pool name '{name}' must match ^[a-z][a-z0-9]{{0,11}}$."),
        );
    }
    let mut properties = request
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if properties.get("vmSize").and_then(Json::as_str).is_none() {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            "The value of parameter agentPoolProfile.vmSize is invalid.",
        );
    }
    let count = properties.get("count").and_then(Json::as_i64).unwrap_or(1);
    if !(0..=1000).contains(&count) {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            "The value of parameter agentPoolProfile.count must be from 0 to 1000.",
        );
    }
    let existing = w.pools.get(id).cloned();
    let etag = existing
        .as_ref()
        .and_then(|p| p.pointer("/properties/eTag"))
        .and_then(Json::as_str)
        .map(str::to_owned);
    if if_none_match.as_deref() == Some("*") && existing.is_some() {
        return error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "The agent pool already exists.",
        );
    }
    if let Some(expected) = &if_match
        && expected != "*"
        && Some(expected) != etag.as_ref()
    {
        return error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "The agent pool was changed since it was read (ETag mismatch).",
        );
    }
    if busy(&w, id) {
        return error(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            "Operation is not allowed because there's an in progress create node pool operation.",
        );
    }
    if let Some(old) = &existing {
        for key in IMMUTABLE {
            let (before, after) = (old["properties"].get(*key), properties.get(*key));
            if after.is_some() && before != after {
                return error(
                    StatusCode::BAD_REQUEST,
                    "PropertyChangeNotAllowed",
                    &format!("Changing property '{key}' is not allowed."),
                );
            }
        }
    }
    // What ARM fills in.
    let requested_version = properties
        .get("orchestratorVersion")
        .and_then(Json::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let version = requested_version.unwrap_or(version);
    let object = properties.as_object_mut().unwrap();
    object.remove("eTag");
    object.remove("provisioningState");
    object.insert("orchestratorVersion".into(), json!(version));
    object.insert("currentOrchestratorVersion".into(), json!(version));
    object.entry("maxPods").or_insert(json!(110));
    object.entry("osType").or_insert(json!("Linux"));
    object.entry("mode").or_insert(json!("User"));
    object.entry("count").or_insert(json!(1));
    if let Some(image) = existing
        .as_ref()
        .and_then(|p| p.pointer("/properties/nodeImageVersion"))
    {
        object.insert("nodeImageVersion".into(), image.clone());
    }
    let creating = existing.is_none();
    object.insert(
        "provisioningState".into(),
        json!(if creating { "Creating" } else { "Updating" }),
    );
    w.etag += 1;
    object.insert("eTag".into(), json!(format!("\"{}\"", w.etag)));
    let pool = json!({
        "id": arm_id,
        "name": name,
        "type": "Microsoft.ContainerService/managedClusters/agentPools",
        "properties": properties,
    });
    w.pools.insert(id.to_owned(), pool.clone());
    let operation = uuid();
    let due = std::time::Instant::now() + w.duration;
    w.operations.insert(
        operation.clone(),
        Operation {
            pool: id.to_owned(),
            due,
            deleting: false,
            status: "InProgress",
        },
    );
    json_response(
        if creating {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        &pool,
        &[
            (
                "azure-asyncoperation",
                format!("{operations}/operations/{operation}?api-version={API_VERSION}"),
            ),
            ("retry-after", "1".to_owned()),
        ],
    )
}

fn delete(world: &Mutex<World>, id: &str, operations: &str) -> Response<Full<Bytes>> {
    let mut w = world.lock().unwrap();
    if !w.pools.contains_key(id) {
        return empty(StatusCode::NO_CONTENT, &[]);
    }
    if busy(&w, id) {
        return error(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            "Operation is not allowed because there's an in progress operation on the node pool.",
        );
    }
    if let Some(pool) = w.pools.get_mut(id) {
        pool["properties"]["provisioningState"] = json!("Deleting");
    }
    let operation = uuid();
    let due = std::time::Instant::now() + w.duration;
    w.operations.insert(
        operation.clone(),
        Operation {
            pool: id.to_owned(),
            due,
            deleting: true,
            status: "InProgress",
        },
    );
    empty(
        StatusCode::ACCEPTED,
        &[
            (
                "location",
                format!("{operations}/operationresults/{operation}?api-version={API_VERSION}"),
            ),
            (
                "azure-asyncoperation",
                format!("{operations}/operations/{operation}?api-version={API_VERSION}"),
            ),
            ("retry-after", "1".to_owned()),
        ],
    )
}

/// Finishes the operations that are due: the nodes come (or go) first, then the pool and
/// the operation say Succeeded, as AKS's do.
async fn advance(world: &Mutex<World>, kube: Option<&kube::Client>) {
    let due: Vec<(String, Operation)> = {
        let w = world.lock().unwrap();
        let now = std::time::Instant::now();
        w.operations
            .iter()
            .filter(|(_, o)| o.status == "InProgress" && o.due <= now)
            .map(|(id, o)| (id.clone(), o.clone()))
            .collect()
    };
    for (id, op) in due {
        let pool = world.lock().unwrap().pools.get(&op.pool).cloned();
        if let (Some(kube), Some(pool)) = (kube, &pool) {
            sync_nodes(kube, pool, op.deleting).await;
        }
        let mut w = world.lock().unwrap();
        if op.deleting {
            w.pools.remove(&op.pool);
        } else if let Some(pool) = w.pools.get_mut(&op.pool) {
            pool["properties"]["provisioningState"] = json!("Succeeded");
            pool["properties"]["nodeImageVersion"] =
                json!("AKSUbuntu-2204gen2containerd-202611.01.0");
        }
        if let Some(stored) = w.operations.get_mut(&id) {
            stored.status = "Succeeded";
        }
    }
}

fn poll(world: &Mutex<World>, operation: &str, result: bool) -> Response<Full<Bytes>> {
    let w = world.lock().unwrap();
    let Some(op) = w.operations.get(operation) else {
        return error(StatusCode::NOT_FOUND, "NotFound", "Operation not found.");
    };
    if result {
        return if op.status == "InProgress" {
            empty(StatusCode::ACCEPTED, &[("retry-after", "1".to_owned())])
        } else {
            empty(StatusCode::NO_CONTENT, &[])
        };
    }
    json_response(
        StatusCode::OK,
        &json!({"name": operation, "status": op.status}),
        &[("retry-after", "1".to_owned())],
    )
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "00000000-0000-4000-8000-{:012x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes the pool's kwok nodes match its count (none when it is deleted).
async fn sync_nodes(kube: &kube::Client, pool: &Json, deleting: bool) {
    let name = pool["name"].as_str().unwrap_or_default();
    let p = &pool["properties"];
    let count = if deleting {
        0
    } else {
        p["count"].as_u64().unwrap_or(0)
    };
    let nodes: Api<Node> = Api::all(kube.clone());
    let selector = format!("kubernetes.azure.com/agentpool={name}");
    let existing = nodes
        .list(&ListParams::default().labels(&selector))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let node_name = |i: u64| format!("aks-{name}-31415926-vmss{i:06}");
    for node in &existing {
        let node_name_of = node.metadata.name.clone().unwrap_or_default();
        let index = node_name_of
            .rsplit("vmss")
            .next()
            .and_then(|i| i.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        if index >= count {
            let _ = nodes.delete(&node_name_of, &DeleteParams::default()).await;
        }
    }
    let vm_size = p["vmSize"].as_str().unwrap_or_default();
    let mut labels = json!({
        "type": "kwok",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.azure.com/agentpool": name,
        "agentpool": name,
        "kubernetes.azure.com/mode": p["mode"].as_str().unwrap_or("User").to_lowercase(),
        "node.kubernetes.io/instance-type": vm_size,
        "kubernetes.azure.com/role": "agent",
    });
    let mut taints: Vec<Json> = p["nodeTaints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .filter_map(|t| {
            let (kv, effect) = t.rsplit_once(':')?;
            let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
            Some(json!({"key": key, "value": value, "effect": effect}))
        })
        .collect();
    if p["scaleSetPriority"] == "Spot" {
        labels["kubernetes.azure.com/scalesetpriority"] = json!("spot");
        taints.push(json!({"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}));
    }
    if let Some(extra) = p["nodeLabels"].as_object() {
        for (k, v) in extra {
            labels[k] = v.clone();
        }
    }
    let mut annotations = json!({
        "kwok.x-k8s.io/node": "fake",
        "node.alpha.kubernetes.io/ttl": "0",
    });
    if let Some((gpu_count, model)) = gpus(vm_size) {
        labels["kubernetes.azure.com/accelerator"] = json!("nvidia");
        annotations["gpustack.dev/gpu-model"] = json!(model);
        annotations["gpustack.dev/gpu-count"] = json!(gpu_count.to_string());
    }
    for i in 0..count {
        let node = node_name(i);
        let mut node_labels = labels.clone();
        node_labels["kubernetes.io/hostname"] = json!(node);
        let object = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node, "labels": node_labels, "annotations": annotations},
            "spec": {"taints": taints},
            "status": {
                "capacity": {"cpu": "4", "memory": "28Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "28Gi", "pods": "110"},
                "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
            },
        });
        let _ = nodes
            .patch(
                &node,
                &PatchParams::apply("aks-fake").force(),
                &Patch::Apply(&object),
            )
            .await;
    }
}

impl AksFake {
    /// One API call as a plain HTTPS client (with a token of its own): status, headers, body.
    pub fn call(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Json>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, hyper::HeaderMap, Json) {
        let token = {
            let mut w = self.world.lock().unwrap();
            let token = format!("fake-access-token-test-{}", w.tokens.len() + 1);
            w.tokens.push(token.clone());
            token
        };
        let url = if path_and_query.starts_with("https://") {
            path_and_query.to_owned()
        } else {
            format!("{}{path_and_query}", self.endpoint)
        };
        let uri: hyper::Uri = url.parse().unwrap();
        let ca = std::fs::read(&self.ca_file).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        let mut reader = std::io::BufReader::new(ca.as_slice());
        for cert in rustls::pki_types::pem::PemObject::pem_reader_iter(&mut reader) {
            roots.add(cert.unwrap()).unwrap();
        }
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = Request::builder()
            .method(method)
            .uri(uri.clone())
            .header("host", uri.authority().unwrap().as_str())
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let tcp = tokio::net::TcpStream::connect(format!(
                "{}:{}",
                uri.host().unwrap(),
                uri.port_u16().unwrap()
            ))
            .await
            .unwrap();
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
                .connect(name, tcp)
                .await
                .unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            let response = sender.send_request(request).await.unwrap();
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            let json = if bytes.is_empty() {
                Json::Null
            } else {
                serde_json::from_slice(&bytes).unwrap()
            };
            (parts.status, parts.headers, json)
        })
    }
}

/// Resource SKUs of the virtual machine sizes the tests use, as Azure lists them in a location:
/// `GPUs` is a capability of GPU sizes only, and no SKU names its GPU model.
fn resource_skus(location: Option<&str>) -> Vec<Json> {
    const SIZES: &[(&str, &str, u32, u32)] = &[
        ("Standard_D4s_v5", "standardDSv5Family", 4, 0),
        ("Standard_NC4as_T4_v3", "Standard NCASv3_T4 Family", 4, 1),
        ("Standard_NC8as_T4_v3", "Standard NCASv3_T4 Family", 8, 1),
        ("Standard_NC16as_T4_v3", "Standard NCASv3_T4 Family", 16, 1),
        ("Standard_NC64as_T4_v3", "Standard NCASv3_T4 Family", 64, 4),
        (
            "Standard_NC24ads_A100_v4",
            "StandardNCADSA100v4Family",
            24,
            1,
        ),
        (
            "Standard_NC48ads_A100_v4",
            "StandardNCADSA100v4Family",
            48,
            2,
        ),
        (
            "Standard_NC96ads_A100_v4",
            "StandardNCADSA100v4Family",
            96,
            4,
        ),
        ("Standard_ND96asr_v4", "Standard NDASv4_A100 Family", 96, 8),
        (
            "Standard_ND96amsr_A100_v4",
            "StandardNDAMSv4_A100Family",
            96,
            8,
        ),
        (
            "Standard_NC40ads_H100_v5",
            "StandardNCadsH100v5Family",
            40,
            1,
        ),
        (
            "Standard_NC80adis_H100_v5",
            "StandardNCadsH100v5Family",
            80,
            2,
        ),
        (
            "Standard_ND96isr_H100_v5",
            "StandardNDISRH100v5Family",
            96,
            8,
        ),
    ];
    let location = location.unwrap_or(LOCATION);
    if location != LOCATION {
        return Vec::new();
    }
    SIZES
        .iter()
        .map(|(name, family, cpus, gpus)| {
            let mut capabilities = vec![json!({"name": "vCPUs", "value": cpus.to_string()})];
            if *gpus > 0 {
                capabilities.push(json!({"name": "GPUs", "value": gpus.to_string()}));
            }
            json!({
                "resourceType": "virtualMachines",
                "name": name,
                "tier": "Standard",
                "size": name.trim_start_matches("Standard_"),
                "family": family,
                "locations": [location],
                "locationInfo": [{"location": location, "zones": ["1", "2", "3"]}],
                "capabilities": capabilities,
                "restrictions": [],
            })
        })
        .collect()
}
