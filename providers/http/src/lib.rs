//! hashicorp/http: `data "http"`, an HTTP request made when the plan is made (as Terraform
//! reads it), its answer recorded in the plan. Not a 2xx status is no error (provider 3.x):
//! stacks check `status_code` in a postcondition.

pub mod chain;

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{attribute, provider_config, text};
use gpustack_provider_sdk::family::{Factory, Family};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy)]
pub(crate) struct Http;

/// `config` with `values` set on it.
fn with<const N: usize>(config: &Value, values: [(&str, Value); N]) -> Value {
    let mut out = match config {
        Value::Object(o) => o.clone(),
        _ => indexmap::IndexMap::new(),
    };
    for (name, value) in values {
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Http))
}

fn schemas() -> ProviderSchema {
    let retry = Schema::new("Retries of a request that fails to connect or answers 429 or 5xx.")
        .attr(
            "attempts",
            Attribute::optional(Type::Number).describe("How many retries (default 0)."),
        )
        .attr(
            "min_delay_ms",
            Attribute::optional(Type::Number).describe("The first wait (default 0)."),
        )
        .attr(
            "max_delay_ms",
            Attribute::optional(Type::Number).describe("The longest wait (default 0)."),
        );
    let data = Schema::new("An HTTP request, made when the plan is made.")
        .attr("url", Attribute::required(Type::String))
        .attr(
            "method",
            Attribute::optional(Type::String).describe("GET (the default), HEAD or POST."),
        )
        .attr(
            "request_headers",
            Attribute::optional(Type::map(Type::String)),
        )
        .attr("request_body", Attribute::optional(Type::String))
        .attr("request_timeout_ms", Attribute::optional(Type::Number))
        .attr("ca_cert_pem", Attribute::optional(Type::String))
        .attr("client_cert_pem", Attribute::optional(Type::String))
        .attr("client_key_pem", Attribute::optional(Type::String))
        .attr("insecure", Attribute::optional(Type::Bool))
        .attr("id", Attribute::computed(Type::String))
        .attr("response_body", Attribute::computed(Type::String))
        .attr(
            "body",
            Attribute::computed(Type::String).describe("Deprecated: response_body."),
        )
        .attr("response_body_base64", Attribute::computed(Type::String))
        .attr("status_code", Attribute::computed(Type::Number))
        .attr(
            "response_headers",
            Attribute::computed(Type::map(Type::String)),
        )
        .block("retry", BlockNesting::Single, retry);
    ProviderSchema {
        name: "http".into(),
        config: provider_config("hashicorp/http: HTTP requests as data sources."),
        resources: Default::default(),
        data_sources: [("http".to_owned(), data)].into(),
    }
}

#[async_trait::async_trait]
impl Family for Http {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("http", &[], &["http"])
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// A whole number of milliseconds from the configuration, 0 when unset.
fn millis(config: &Value, name: &str) -> u64 {
    attribute(config, name)
        .and_then(Value::as_number)
        .map_or(0, |n| n.max(0.0) as u64)
}

/// The client a request's TLS settings ask for.
fn client(config: &Value) -> Result<reqwest::Client, String> {
    gpustack_connect::install_ring();
    let mut builder = reqwest::Client::builder();
    if let Some(pem) = text(config, "ca_cert_pem") {
        for certificate in reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .map_err(|e| format!("ca_cert_pem: {}", gpustack_protocol::error_chain(&e)))?
        {
            builder = builder.add_root_certificate(certificate);
        }
    }
    match (
        text(config, "client_cert_pem"),
        text(config, "client_key_pem"),
    ) {
        (Some(cert), Some(key)) => {
            let identity = reqwest::Identity::from_pem(format!("{cert}\n{key}").as_bytes())
                .map_err(|e| {
                    format!(
                        "client_cert_pem and client_key_pem: {}",
                        gpustack_protocol::error_chain(&e)
                    )
                })?;
            builder = builder.identity(identity);
        }
        (None, None) => {}
        _ => return Err("client_cert_pem and client_key_pem go together: set both.".into()),
    }
    if attribute(config, "insecure").and_then(Value::as_bool) == Some(true) {
        builder = builder.danger_accept_invalid_certs(true);
    }
    let timeout = millis(config, "request_timeout_ms");
    if timeout > 0 {
        builder = builder.timeout(Duration::from_millis(timeout));
    }
    builder
        .build()
        .map_err(|e| gpustack_protocol::error_chain(&e))
}

/// Whether an answer is retried, as go-retryablehttp's default policy, which the provider
/// uses: too many requests, and server errors other than "not implemented".
fn retried(status: reqwest::StatusCode) -> bool {
    status == reqwest::StatusCode::TOO_MANY_REQUESTS
        || (status.is_server_error() && status != reqwest::StatusCode::NOT_IMPLEMENTED)
}

/// Whether a Content-Type is text, as the provider judges it (a body of another type is
/// still returned, with a warning).
fn is_text(content_type: &str) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media.starts_with("text/")
        || [
            "application/json",
            "application/xml",
            "application/x-yaml",
            "application/yaml",
            "application/x-www-form-urlencoded",
            "application/javascript",
        ]
        .contains(&media.as_str())
        || media.ends_with("+json")
        || media.ends_with("+xml")
}

async fn fetch(config: &Value) -> Result<(Value, Vec<Diagnostic>), String> {
    use base64::Engine as _;
    let url = text(config, "url").unwrap_or_default().to_owned();
    let method = match text(config, "method").unwrap_or("GET") {
        "GET" => reqwest::Method::GET,
        "HEAD" => reqwest::Method::HEAD,
        "POST" => reqwest::Method::POST,
        other => {
            return Err(format!("method must be GET, HEAD or POST, not {other:?}."));
        }
    };
    let client = client(config)?;
    let retry = attribute(config, "retry");
    let attempts = retry.map_or(0, |r| millis(r, "attempts"));
    let min_delay = retry.map_or(0, |r| millis(r, "min_delay_ms"));
    let max_delay = retry
        .map_or(0, |r| millis(r, "max_delay_ms"))
        .max(min_delay);
    let mut tries = 0;
    let response = loop {
        let mut builder = client.request(method.clone(), &url);
        for (name, value) in attribute(config, "request_headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(value) = value.as_str() {
                builder = builder.header(name, value);
            }
        }
        if let Some(body) = text(config, "request_body") {
            builder = builder.body(body.to_owned());
        }
        let answer = builder.send().await;
        let again = match &answer {
            Ok(response) => retried(response.status()),
            Err(_) => true,
        };
        if !again || tries >= attempts {
            break answer.map_err(|e| {
                format!(
                    "Error making request to {url}: {}",
                    gpustack_protocol::error_chain(&e)
                )
            })?;
        }
        // Exponential from min_delay_ms, at most max_delay_ms, as go-retryablehttp waits.
        let wait = min_delay.saturating_mul(1 << tries.min(16)).min(max_delay);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        tries += 1;
    };
    let status = response.status().as_u16();
    let mut headers = indexmap::IndexMap::new();
    for name in response.headers().keys() {
        let values: Vec<&str> = response
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        // Go's canonical form, as the provider's map keys are.
        let canonical: String = name
            .as_str()
            .split('-')
            .map(|part| {
                let mut chars = part.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_uppercase().to_string() + chars.as_str()
                })
            })
            .collect::<Vec<_>>()
            .join("-");
        headers.insert(canonical, Value::string(values.join(", ")));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = response.bytes().await.map_err(|e| {
        format!(
            "Error reading the response body of {url}: {}",
            gpustack_protocol::error_chain(&e)
        )
    })?;
    let mut diagnostics = Vec::new();
    if let Some(content_type) = content_type.as_deref().filter(|t| !is_text(t)) {
        diagnostics.push(Diagnostic::warning(
            "Content-Type is not recognized as a text type",
            format!("{url} answered Content-Type {content_type}: response_body may not be what it sent; response_body_base64 is exact."),
        ));
    }
    let body = String::from_utf8_lossy(&bytes).into_owned();
    let state = with(
        config,
        [
            ("id", Value::string(url.clone())),
            ("response_body", Value::string(body.clone())),
            ("body", Value::string(body)),
            (
                "response_body_base64",
                Value::string(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            ),
            ("status_code", Value::number(f64::from(status))),
            ("response_headers", Value::Object(headers)),
        ],
    );
    Ok((state, diagnostics))
}

#[async_trait::async_trait]
impl Provider for Http {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        ReadResourcesResponse {
            states: request.states.into_iter().map(Some).collect(),
            ..ReadResourcesResponse::default()
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        PlanResourceChangeResponse {
            planned_state: request.config,
            diagnostics: vec![Diagnostic::error(
                "Unsupported resource type",
                "hashicorp/http has data sources only.",
            )],
            ..PlanResourceChangeResponse::default()
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        ApplyResourceChangeResponse {
            new_state: request.prior_state,
            diagnostics: vec![],
        }
    }

    async fn import_resource(&self, _: ImportResourceRequest) -> ImportResourceResponse {
        ImportResourceResponse {
            state: None,
            diagnostics: vec![Diagnostic::error(
                "Import not supported",
                "hashicorp/http has data sources only.",
            )],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        match fetch(&request.config).await {
            Ok((state, diagnostics)) => ReadDataSourceResponse { state, diagnostics },
            Err(e) => ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![Diagnostic::error("Error making request", e)],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_the_providers_policy() {
        assert!(retried(reqwest::StatusCode::SERVICE_UNAVAILABLE));
        assert!(retried(reqwest::StatusCode::TOO_MANY_REQUESTS));
        assert!(!retried(reqwest::StatusCode::NOT_IMPLEMENTED));
        assert!(!retried(reqwest::StatusCode::NOT_FOUND));
    }

    #[test]
    fn text_types_are_those_the_provider_reads_as_text() {
        assert!(is_text("text/plain; charset=utf-8"));
        assert!(is_text("application/json"));
        assert!(is_text("application/vnd.api+json"));
        assert!(!is_text("application/octet-stream"));
        assert!(!is_text("image/png"));
    }
}
