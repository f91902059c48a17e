//! A small Azure Resource Manager client for agent pools on azure_core's pipeline: bearer
//! tokens from azure_identity, retries of 429 (honouring Retry-After), 5xx and dropped
//! connections, and long-running operations polled to the end.

use super::model::{AgentPool, ErrorBody, OperationStatus};
use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::headers::{HeaderName, Headers};
use azure_core::http::policies::Policy;
use azure_core::http::policies::auth::BearerTokenAuthorizationPolicy;
use azure_core::http::{
    ClientOptions, Context, ExponentialRetryOptions, Method, Pipeline, PipelineSendOptions,
    RawResponse, Request, RetryOptions, StatusCode, Transport, Url,
};
use azure_identity::{
    AzureCliCredential, ClientSecretCredential, ClientSecretCredentialOptions,
    ManagedIdentityCredential, ManagedIdentityCredentialOptions, UserAssignedId,
    WorkloadIdentityCredential, WorkloadIdentityCredentialOptions,
};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const DEFAULT_ENDPOINT: &str = "https://management.azure.com";
pub(crate) const DEFAULT_API_VERSION: &str = "2026-08-01";
pub(crate) const SCOPE: &str = "https://management.azure.com/.default";
/// Microsoft.Compute's api-version for Resource SKUs.
const SKUS_API_VERSION: &str = "2021-07-01";

/// How long one pool operation (create, scale, delete) may take.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// How long to wait out a 409 because another operation on the pool or cluster is running.
const CONFLICT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Where an agent pool lives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoolId {
    pub resource_group: String,
    pub cluster: String,
    pub name: String,
}

impl std::fmt::Display for PoolId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.resource_group, self.cluster, self.name)
    }
}

/// A failed ARM call: the status, ARM's error code and message.
#[derive(Debug, Clone)]
pub(crate) struct ArmError {
    pub status: Option<u16>,
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for ArmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.status, self.code.is_empty()) {
            (Some(s), false) => write!(f, "{s} {}: {}", self.code, self.message),
            (Some(s), true) => write!(f, "{s}: {}", self.message),
            (None, _) => f.write_str(&self.message),
        }
    }
}

impl ArmError {
    fn transport(e: &azure_core::Error) -> Self {
        Self {
            status: None,
            code: String::new(),
            message: gpustack_protocol::error_chain(e),
        }
    }

    fn of(response: &RawResponse) -> Self {
        let body: ErrorBody = serde_json::from_slice(response.body()).unwrap_or_default();
        let status = u16::from(response.status());
        Self {
            status: Some(status),
            message: if body.error.message.is_empty() {
                format!("HTTP {status}")
            } else {
                body.error.message
            },
            code: body.error.code,
        }
    }

    /// ARM refuses a change while another operation on the pool or its cluster runs.
    fn is_busy(&self) -> bool {
        self.status == Some(409)
            && [
                "OperationNotAllowed",
                "AnotherOperationInProgress",
                "EtagMismatch",
            ]
            .contains(&self.code.as_str())
    }
}

/// AzureSettings of an `azure` provider block.
pub(crate) struct AzureSettings {
    pub subscription_id: String,
    pub tenant_id: Option<String>,
    pub client_id: Option<String>,
    pub use_msi: bool,
    /// A service principal's secret given in the provider block (else AZURE_CLIENT_SECRET).
    pub client_secret: Option<String>,
    pub endpoint: Option<String>,
    pub api_version: Option<String>,
}

pub(crate) struct Arm {
    pipeline: Pipeline,
    base: Url,
    subscription_id: String,
    api_version: String,
}

/// The standard credential chain, chosen by what the environment offers: a service
/// principal's secret, a federated workload-identity token, a managed identity, else the
/// Azure CLI's login.
fn credential(
    settings: &AzureSettings,
    options: &ClientOptions,
) -> azure_core::Result<Arc<dyn TokenCredential>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let tenant = settings
        .tenant_id
        .clone()
        .or_else(|| env("AZURE_TENANT_ID"));
    let client = settings
        .client_id
        .clone()
        .or_else(|| env("AZURE_CLIENT_ID"));
    let secret = settings
        .client_secret
        .clone()
        .or_else(|| env("AZURE_CLIENT_SECRET"));
    if let (Some(secret), Some(tenant), Some(client)) = (secret, tenant.clone(), client.clone()) {
        return Ok(ClientSecretCredential::new(
            &tenant,
            client,
            Secret::new(secret),
            Some(ClientSecretCredentialOptions {
                client_options: options.clone(),
            }),
        )?);
    }
    if env("AZURE_FEDERATED_TOKEN_FILE").is_some() {
        let mut workload = WorkloadIdentityCredentialOptions {
            tenant_id: tenant,
            client_id: client,
            ..Default::default()
        };
        workload.credential_options.client_options = options.clone();
        return Ok(WorkloadIdentityCredential::new(Some(workload))?);
    }
    if settings.use_msi || env("IDENTITY_ENDPOINT").is_some() || env("MSI_ENDPOINT").is_some() {
        return Ok(ManagedIdentityCredential::new(Some(
            ManagedIdentityCredentialOptions {
                user_assigned_id: client.map(UserAssignedId::ClientId),
                client_options: options.clone(),
            },
        ))?);
    }
    Ok(AzureCliCredential::new(None)?)
}

/// Why the ARM client could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArmClientError {
    #[error("cannot build the HTTP client")]
    Http(#[source] reqwest::Error),
    #[error("cannot make the credential")]
    Credential(#[source] azure_core::Error),
    /// The URL parser's error as azure_core wraps it: this crate does not depend on `url`.
    #[error("endpoint \"{endpoint}\" is not a URL")]
    Endpoint {
        endpoint: String,
        #[source]
        source: azure_core::Error,
    },
}

impl Arm {
    pub fn new(settings: &AzureSettings) -> Result<Self, ArmClientError> {
        // One TLS implementation in the binary: the AWS SDK and kube use ring too.
        gpustack_connect::install_ring();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(ArmClientError::Http)?;
        let options = ClientOptions {
            transport: Some(Transport::new(Arc::new(http))),
            retry: RetryOptions::exponential(ExponentialRetryOptions {
                initial_delay: azure_core::time::Duration::milliseconds(500),
                max_retries: 6,
                max_total_elapsed: azure_core::time::Duration::minutes(5),
                max_delay: azure_core::time::Duration::seconds(30),
            }),
            ..Default::default()
        };
        let credential = credential(settings, &options).map_err(ArmClientError::Credential)?;
        let auth: Arc<dyn Policy> =
            Arc::new(BearerTokenAuthorizationPolicy::new(credential, [SCOPE]));
        let endpoint = settings.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT);
        let base = Url::parse(endpoint).map_err(|e| ArmClientError::Endpoint {
            endpoint: endpoint.to_owned(),
            source: e.into(),
        })?;
        Ok(Self {
            pipeline: Pipeline::new(
                Some("gpustack"),
                Some(env!("CARGO_PKG_VERSION")),
                options,
                Vec::new(),
                vec![auth],
                None,
            ),
            base,
            subscription_id: settings.subscription_id.clone(),
            api_version: settings
                .api_version
                .clone()
                .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned()),
        })
    }

    /// `base/subscriptions/SUB/...segments?api-version=VERSION`.
    fn url(&self, segments: &[&str], api_version: &str) -> Result<Url, ArmError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| ArmError {
                status: None,
                code: String::new(),
                message: format!("endpoint \"{}\" cannot carry a path", self.base),
            })?
            .pop_if_empty()
            .extend(["subscriptions", &self.subscription_id])
            .extend(segments);
        url.query_pairs_mut()
            .clear()
            .append_pair("api-version", api_version);
        Ok(url)
    }

    /// A GET's answer as `T`; `None` when ARM says the resource does not exist.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: Url,
    ) -> Result<Option<T>, ArmError> {
        let response = self.send(Method::Get, url, None, &[]).await?;
        match response.status() {
            StatusCode::Ok => serde_json::from_slice(response.body())
                .map(Some)
                .map_err(|e| ArmError {
                    status: Some(200),
                    code: "InvalidResponse".into(),
                    message: e.to_string(),
                }),
            StatusCode::NotFound => Ok(None),
            _ => Err(ArmError::of(&response)),
        }
    }

    /// The location of a managed cluster; `None` when ARM has no such cluster.
    pub async fn cluster_location(
        &self,
        resource_group: &str,
        cluster: &str,
    ) -> Result<Option<String>, ArmError> {
        let url = self.url(
            &[
                "resourceGroups",
                resource_group,
                "providers",
                "Microsoft.ContainerService",
                "managedClusters",
                cluster,
            ],
            &self.api_version,
        )?;
        Ok(self
            .get_json::<serde_json::Value>(url)
            .await?
            .and_then(|c| c["location"].as_str().map(str::to_owned)))
    }

    /// The GPUs of each virtual machine size offered in `location`, from Resource SKUs (the
    /// `GPUs` capability; 0 for a size without one).
    pub async fn vm_gpus(
        &self,
        location: &str,
    ) -> Result<std::collections::BTreeMap<String, u32>, ArmError> {
        let mut url = self.url(
            &["providers", "Microsoft.Compute", "skus"],
            SKUS_API_VERSION,
        )?;
        url.query_pairs_mut()
            .append_pair("$filter", &format!("location eq '{location}'"));
        let body: serde_json::Value = self.get_json(url).await?.unwrap_or_default();
        Ok(body["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|sku| sku["resourceType"] == "virtualMachines")
            .filter_map(|sku| {
                let gpus = sku["capabilities"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["name"] == "GPUs")
                    .and_then(|c| c["value"].as_str()?.parse().ok())
                    .unwrap_or(0);
                Some((sku["name"].as_str()?.to_owned(), gpus))
            })
            .collect())
    }

    fn pool_url(&self, id: &PoolId) -> Result<Url, ArmError> {
        self.url(
            &[
                "resourceGroups",
                &id.resource_group,
                "providers",
                "Microsoft.ContainerService",
                "managedClusters",
                &id.cluster,
                "agentPools",
                &id.name,
            ],
            &self.api_version,
        )
    }

    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
        headers: &[(&'static str, String)],
    ) -> Result<RawResponse, ArmError> {
        let mut request = Request::new(url, method);
        request.insert_header("accept", "application/json");
        for (name, value) in headers {
            request.insert_header(HeaderName::from_static(name), value.clone());
        }
        if let Some(body) = body {
            request.insert_header("content-type", "application/json");
            request.set_body(body);
        }
        self.pipeline
            .send(
                &Context::new(),
                &mut request,
                Some(PipelineSendOptions {
                    skip_checks: true,
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| ArmError::transport(&e))
    }

    /// The pool with its ETag, or `None` when ARM says it does not exist.
    pub async fn get(&self, id: &PoolId) -> Result<Option<AgentPool>, ArmError> {
        self.get_json(self.pool_url(id)?).await
    }

    /// PUT (create or update) and wait for the operation; `condition` is `If-Match: ETAG` or
    /// `If-None-Match: *`. A 409 because something else is running is waited out.
    pub async fn put(
        &self,
        id: &PoolId,
        pool: &AgentPool,
        condition: (&'static str, String),
    ) -> Result<(), ArmError> {
        let body = serde_json::to_vec(pool).map_err(|e| ArmError {
            status: None,
            code: String::new(),
            message: e.to_string(),
        })?;
        let url = self.pool_url(id)?;
        let response = self
            .while_busy(|| {
                self.send(
                    Method::Put,
                    url.clone(),
                    Some(body.clone()),
                    std::slice::from_ref(&condition),
                )
            })
            .await?;
        match response.status() {
            StatusCode::Ok | StatusCode::Created => {
                self.finish(id, response.headers(), false).await
            }
            _ => Err(ArmError::of(&response)),
        }
    }

    pub async fn delete(&self, id: &PoolId) -> Result<(), ArmError> {
        let url = self.pool_url(id)?;
        let response = self
            .while_busy(|| self.send(Method::Delete, url.clone(), None, &[]))
            .await?;
        match response.status() {
            StatusCode::NoContent | StatusCode::NotFound => Ok(()),
            StatusCode::Ok | StatusCode::Accepted => {
                self.finish(id, response.headers(), true).await
            }
            _ => Err(ArmError::of(&response)),
        }
    }

    /// Repeats a call while ARM answers 409 because another operation is running.
    async fn while_busy<F, Fut>(&self, call: F) -> Result<RawResponse, ArmError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<RawResponse, ArmError>>,
    {
        let deadline = tokio::time::Instant::now() + CONFLICT_TIMEOUT;
        let mut delay = Duration::from_secs(1);
        loop {
            let response = call().await?;
            if response.status() != StatusCode::Conflict {
                return Ok(response);
            }
            let error = ArmError::of(&response);
            if !error.is_busy() || tokio::time::Instant::now() >= deadline {
                return Err(error);
            }
            tracing::info!("AKS is busy ({error}); trying again in {delay:?}");
            tokio::time::sleep(retry_after(response.headers()).unwrap_or(delay)).await;
            delay = (delay * 2).min(Duration::from_secs(30));
        }
    }

    /// Waits until the pool's provisioning state is final.
    pub async fn wait(&self, id: &PoolId) -> Result<(), ArmError> {
        self.finish(id, &Headers::new(), false).await
    }

    /// Follows a long-running operation to its end: the Azure-AsyncOperation status, else
    /// the Location, else the pool's own provisioning state.
    async fn finish(&self, id: &PoolId, started: &Headers, deleting: bool) -> Result<(), ArmError> {
        let header = |name: &'static str| {
            started
                .get_optional_str(&HeaderName::from_static(name))
                .and_then(|u| Url::parse(u).ok())
        };
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        let mut delay = retry_after(started).unwrap_or(Duration::from_secs(1));
        let (async_operation, location) = (header("azure-asyncoperation"), header("location"));
        loop {
            if let Some(url) = &async_operation {
                let response = self.send(Method::Get, url.clone(), None, &[]).await?;
                if response.status() != StatusCode::Ok {
                    return Err(ArmError::of(&response));
                }
                let status: OperationStatus =
                    serde_json::from_slice(response.body()).map_err(|e| ArmError {
                        status: Some(200),
                        code: "InvalidResponse".into(),
                        message: e.to_string(),
                    })?;
                match status.status.as_str() {
                    "Succeeded" => return Ok(()),
                    "Failed" | "Canceled" => {
                        let detail = status.error.unwrap_or_default();
                        return Err(ArmError {
                            status: None,
                            code: detail.code,
                            message: format!(
                                "the operation {}: {}",
                                status.status.to_lowercase(),
                                detail.message
                            ),
                        });
                    }
                    _ => {}
                }
                delay = retry_after(response.headers()).unwrap_or(delay);
            } else if let Some(url) = &location {
                let response = self.send(Method::Get, url.clone(), None, &[]).await?;
                match response.status() {
                    StatusCode::Accepted => {
                        delay = retry_after(response.headers()).unwrap_or(delay);
                    }
                    status if status.is_success() => return Ok(()),
                    _ => return Err(ArmError::of(&response)),
                }
            } else {
                match (self.get(id).await?, deleting) {
                    (None, true) => return Ok(()),
                    (None, false) => {
                        return Err(ArmError {
                            status: Some(404),
                            code: "NotFound".into(),
                            message: format!(
                                "agent pool {id} disappeared while it was being changed"
                            ),
                        });
                    }
                    (Some(pool), false) => match pool.properties.provisioning_state.as_deref() {
                        Some("Succeeded") | None => return Ok(()),
                        Some("Failed" | "Canceled") => {
                            return Err(ArmError {
                                status: None,
                                code: "ProvisioningFailed".into(),
                                message: format!(
                                    "agent pool {id} is in provisioning state {}",
                                    pool.properties.provisioning_state.unwrap_or_default()
                                ),
                            });
                        }
                        _ => {}
                    },
                    (Some(_), true) => {}
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ArmError {
                    status: None,
                    code: "Timeout".into(),
                    message: format!(
                        "agent pool {id}: the operation did not finish within {} minutes",
                        OPERATION_TIMEOUT.as_secs() / 60
                    ),
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).clamp(Duration::from_millis(200), Duration::from_secs(30));
        }
    }
}

/// `Retry-After` in seconds (ARM does not send dates for these).
fn retry_after(headers: &Headers) -> Option<Duration> {
    headers
        .get_optional_str(&HeaderName::from_static("retry-after"))
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}
