//! Terraform's resources that ask the API server for something once and keep the answer:
//! `kubernetes_certificate_signing_request(_v1)` (a certificate, the request approved by the
//! resource itself unless `auto_approve = false`, then deleted, as the provider deletes it) and
//! `kubernetes_token_request_v1` (a service account's token). Each is made at create and
//! kept as the state records it: there is nothing left in the cluster to read or delete, so a
//! refresh keeps the state and destroy forgets it, and any change of an argument makes a new
//! one, as in the provider.

use crate::cluster::api_error;
use crate::connection::Connected;
use crate::typed::one_block;
use base64::Engine as _;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    PlanResourceChangeRequest, PlanResourceChangeResponse, ReadResourcesRequest,
    ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::resource::Resource;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const CSR_TYPES: [&str; 2] = [
    "kubernetes_certificate_signing_request",
    "kubernetes_certificate_signing_request_v1",
];
pub(crate) const TOKEN_REQUEST: &str = "kubernetes_token_request_v1";

/// What Terraform's provider records as the approval it gives.
const APPROVAL_REASON: &str = "TerraformAutoApprove";
const APPROVAL_MESSAGE: &str = "This CertificateSigningRequest was auto-approved by gpustack";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OneShot {
    CertificateSigningRequest,
    TokenRequest,
}

impl OneShot {
    pub(crate) fn of(type_name: &str) -> Option<Self> {
        if CSR_TYPES.contains(&type_name) {
            Some(Self::CertificateSigningRequest)
        } else if type_name == TOKEN_REQUEST {
            Some(Self::TokenRequest)
        } else {
            None
        }
    }

    /// The arguments a change of which makes a new one (every argument).
    fn arguments(self) -> &'static [&'static str] {
        match self {
            Self::CertificateSigningRequest => &["metadata", "spec", "auto_approve"],
            Self::TokenRequest => &["metadata", "spec"],
        }
    }
}

fn metadata_block(namespaced: bool) -> Schema {
    let mut block = Schema::new("The request's metadata.")
        .attr("name", Attribute::optional(Type::String).force_new())
        .attr(
            "generate_name",
            Attribute::optional(Type::String).force_new(),
        )
        .attr(
            "labels",
            Attribute::optional(Type::map(Type::String)).force_new(),
        )
        .attr(
            "annotations",
            Attribute::optional(Type::map(Type::String)).force_new(),
        );
    if namespaced {
        block = block.attr("namespace", Attribute::optional(Type::String).force_new());
    }
    block
}

pub(crate) fn schema(one_shot: OneShot) -> Schema {
    let timeouts = Schema::new("Terraform's operation timeouts.")
        .attr("create", Attribute::optional(Type::String));
    match one_shot {
        OneShot::CertificateSigningRequest => {
            let mut schema = Schema::new(
                "A certificate, asked for with a CertificateSigningRequest that this resource approves (unless auto_approve = false), waits to be signed and then deletes.",
            )
            .attr(
                "auto_approve",
                Attribute::optional(Type::Bool)
                    .force_new()
                    .describe("Approve the request, as its signer requires; default true."),
            )
            .attr(
                "certificate",
                Attribute::computed(Type::String).describe("The signed certificate, PEM."),
            );
            one_block(&mut schema, "metadata", metadata_block(false), true);
            let spec = Schema::new("The request.")
                .attr(
                    "expiration_seconds",
                    Attribute::optional(Type::Number).force_new(),
                )
                .attr(
                    "request",
                    Attribute::required(Type::String)
                        .force_new()
                        .describe("The PEM certificate request."),
                )
                .attr("signer_name", Attribute::required(Type::String).force_new())
                .attr(
                    "usages",
                    Attribute::optional(Type::list(Type::String)).force_new(),
                );
            one_block(&mut schema, "spec", spec, true);
            schema.block("timeouts", BlockNesting::Single, timeouts)
        }
        OneShot::TokenRequest => {
            let mut schema = Schema::new(
                "A token of the service account metadata.name names, from its token subresource.",
            )
            .attr(
                "token",
                Attribute::computed(Type::String)
                    .sensitive()
                    .describe("The bearer token."),
            );
            one_block(&mut schema, "metadata", metadata_block(true), true);
            let bound = Schema::new("The object the token is bound to (a Pod or a Secret).")
                .attr("api_version", Attribute::optional(Type::String).force_new())
                .attr("kind", Attribute::optional(Type::String).force_new())
                .attr("name", Attribute::optional(Type::String).force_new())
                .attr("uid", Attribute::optional(Type::String).force_new());
            let mut spec = Schema::new("What the token is for.")
                .attr(
                    "audiences",
                    Attribute::optional(Type::list(Type::String)).force_new(),
                )
                .attr(
                    "expiration_seconds",
                    Attribute::optional(Type::Number).force_new(),
                );
            one_block(&mut spec, "bound_object_ref", bound, false);
            one_block(&mut schema, "spec", spec, false);
            schema.block("timeouts", BlockNesting::Single, timeouts)
        }
    }
}

pub(crate) fn check(one_shot: OneShot, check: &mut Checker<'_>) {
    if one_shot == OneShot::TokenRequest && crate::typed::metadata_without_name(check) {
        check.error(
            "metadata",
            "Missing required argument",
            "metadata.name names the service account whose token this is.".into(),
        );
    }
}

/// The first block of a list block.
fn block<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    attribute(value, name)
        .and_then(Value::as_list)
        .and_then(<[Value]>::first)
}

fn metadata_json(typed: &Value, namespaced: bool) -> Json {
    let mut meta = serde_json::Map::new();
    let metadata = block(typed, "metadata");
    for (key, field) in [
        ("name", "name"),
        ("generate_name", "generateName"),
        ("labels", "labels"),
        ("annotations", "annotations"),
        ("namespace", "namespace"),
    ] {
        if key == "namespace" && !namespaced {
            continue;
        }
        if let Some(value) = metadata
            .and_then(|m| attribute(m, key))
            .filter(|v| !v.is_null())
        {
            meta.insert(field.to_owned(), value.to_json_revealed());
        }
    }
    Json::Object(meta)
}

fn timeout(typed: &Value) -> Result<Duration, String> {
    crate::cluster::duration(
        attribute(typed, "timeouts")
            .and_then(|t| attribute(t, "create"))
            .and_then(Value::as_str),
        Duration::from_secs(300),
    )
    .map_err(|e| gpustack_protocol::error_chain(&e))
}

/// One of the resource types on a connected cluster.
pub(crate) struct OneShots {
    pub(crate) connected: Arc<Connected>,
    pub(crate) one_shot: OneShot,
}

impl OneShots {
    async fn certificate(&self, typed: &Value) -> Result<String, String> {
        let client = self.connected.cluster().client.clone();
        let api: Api<CertificateSigningRequest> = Api::all(client);
        let spec = block(typed, "spec").ok_or("the request has no spec")?;
        let field = |name: &str| attribute(spec, name).filter(|v| !v.is_null());
        let mut spec_json = json!({
            "request": base64::engine::general_purpose::STANDARD
                .encode(text(spec, "request").unwrap_or_default()),
            "signerName": text(spec, "signer_name").unwrap_or_default(),
        });
        if let Some(seconds) = field("expiration_seconds").and_then(Value::as_number) {
            spec_json["expirationSeconds"] = json!(seconds as i64);
        }
        if let Some(usages) = field("usages") {
            spec_json["usages"] = usages.to_json_revealed();
        }
        let request: CertificateSigningRequest = serde_json::from_value(json!({
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": metadata_json(typed, false),
            "spec": spec_json,
        }))
        .map_err(|e| format!("the request is not a CertificateSigningRequest: {e}"))?;
        let made = api
            .create(&PostParams::default(), &request)
            .await
            .map_err(|e| {
                format!(
                    "Cannot create the CertificateSigningRequest: {}",
                    api_error(&e)
                )
            })?;
        let name = made.metadata.name.clone().unwrap_or_default();
        let outcome = self.signed(&api, &name, typed).await;
        // The provider keeps only the certificate: the request goes whatever happened.
        let _ = api.delete(&name, &DeleteParams::default()).await;
        outcome
    }

    async fn signed(
        &self,
        api: &Api<CertificateSigningRequest>,
        name: &str,
        typed: &Value,
    ) -> Result<String, String> {
        if attribute(typed, "auto_approve").and_then(Value::as_bool) != Some(false) {
            let mut pending = api
                .get(name)
                .await
                .map_err(|e| format!("Cannot read the request back: {}", api_error(&e)))?;
            let mut status = pending.status.take().unwrap_or_default();
            status.conditions.get_or_insert_with(Vec::new).push(
                serde_json::from_value(json!({
                    "type": "Approved",
                    "status": "True",
                    "reason": APPROVAL_REASON,
                    "message": APPROVAL_MESSAGE,
                }))
                .map_err(|e| e.to_string())?,
            );
            pending.status = Some(status);
            api.replace_subresource("approval", name, &PostParams::default(), &pending)
                .await
                .map_err(|e| format!("Cannot approve the request: {}", api_error(&e)))?;
        }
        let limit = timeout(typed)?;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let current = api
                .get(name)
                .await
                .map_err(|e| format!("Cannot read the request: {}", api_error(&e)))?;
            let status = current.status.unwrap_or_default();
            let conditions = status.conditions.unwrap_or_default();
            if let Some(denied) = conditions
                .iter()
                .find(|c| c.type_ == "Denied" || c.type_ == "Failed")
            {
                return Err(format!(
                    "The request was {}: {}",
                    denied.type_.to_lowercase(),
                    denied.message.clone().unwrap_or_default()
                ));
            }
            let approved = conditions.iter().any(|c| c.type_ == "Approved");
            if let Some(certificate) = status.certificate.filter(|c| approved && !c.0.is_empty()) {
                return Ok(String::from_utf8_lossy(&certificate.0).into_owned());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "No certificate after {}: the request is {} and its signer has not signed it.",
                    humantime::format_duration(limit),
                    if approved { "approved" } else { "not approved" }
                ));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    async fn token(&self, typed: &Value) -> Result<String, String> {
        let metadata = metadata_json(typed, true);
        let namespace = metadata
            .get("namespace")
            .and_then(Json::as_str)
            .unwrap_or("default")
            .to_owned();
        let name = metadata
            .get("name")
            .and_then(Json::as_str)
            .ok_or("metadata.name names no service account")?
            .to_owned();
        let spec = block(typed, "spec");
        let field = |name: &str| {
            spec.and_then(|s| attribute(s, name))
                .filter(|v| !v.is_null())
        };
        let mut spec_json = json!({});
        if let Some(audiences) = field("audiences") {
            spec_json["audiences"] = audiences.to_json_revealed();
        }
        if let Some(seconds) = field("expiration_seconds").and_then(Value::as_number) {
            spec_json["expirationSeconds"] = json!(seconds as i64);
        }
        if let Some(bound) = spec.and_then(|s| block(s, "bound_object_ref")) {
            let mut reference = serde_json::Map::new();
            for (key, json_key) in [
                ("api_version", "apiVersion"),
                ("kind", "kind"),
                ("name", "name"),
                ("uid", "uid"),
            ] {
                if let Some(v) = text(bound, key) {
                    reference.insert(json_key.to_owned(), v.into());
                }
            }
            spec_json["boundObjectRef"] = Json::Object(reference);
        }
        let request = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"namespace": namespace},
            "spec": spec_json,
        });
        let api: Api<ServiceAccount> =
            Api::namespaced(self.connected.cluster().client.clone(), &namespace);
        let answer: Json = api
            .create_subresource("token", &name, &PostParams::default(), &request)
            .await
            .map_err(|e| {
                format!(
                    "Cannot request a token of service account {namespace}/{name}: {}",
                    api_error(&e)
                )
            })?;
        answer
            .pointer("/status/token")
            .and_then(Json::as_str)
            .map(str::to_owned)
            .ok_or_else(|| "The API server answered without a token.".to_owned())
    }
}

#[async_trait::async_trait]
impl Resource for OneShots {
    /// Nothing in the cluster holds what the state records: it stays as it is.
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        ReadResourcesResponse {
            states: request.states.into_iter().map(Some).collect(),
            diagnostics: Vec::new(),
            gpu_facts: Vec::new(),
        }
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let mut planned = request.config.clone();
        if self.one_shot == OneShot::CertificateSigningRequest
            && attribute(&planned, "auto_approve").is_none_or(Value::is_null)
        {
            set(&mut planned, "auto_approve", Value::Bool(true));
        }
        let answer = match self.one_shot {
            OneShot::CertificateSigningRequest => "certificate",
            OneShot::TokenRequest => "token",
        };
        let changed: Vec<String> = match &request.prior_state {
            Some(prior) => self
                .one_shot
                .arguments()
                .iter()
                .filter(|a| {
                    let revealed =
                        |state: &Value| attribute(state, a).map(|v| v.clone().unmark_deep().0);
                    revealed(prior) != revealed(&planned)
                })
                .map(|a| (*a).to_owned())
                .collect(),
            None => Vec::new(),
        };
        let kept = request
            .prior_state
            .as_ref()
            .filter(|_| changed.is_empty())
            .and_then(|p| attribute(p, answer))
            .cloned();
        set(&mut planned, answer, kept.unwrap_or(Value::Unknown));
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace: changed,
            gpu_facts: Vec::new(),
            existing: None,
            diagnostics: Vec::new(),
            order: Default::default(),
        }
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let Some(mut planned) = request.planned_state else {
            // Destroy forgets what the state recorded; the provider deletes nothing either.
            return ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: Vec::new(),
            };
        };
        if request.prior_state.is_some() {
            // No argument changed (a change replaces): the plan kept the answer.
            return ApplyResourceChangeResponse {
                new_state: Some(planned),
                diagnostics: Vec::new(),
            };
        }
        let answer = match self.one_shot {
            OneShot::CertificateSigningRequest => self
                .certificate(&planned)
                .await
                .map(|c| ("certificate", Value::string(c))),
            OneShot::TokenRequest => self
                .token(&planned)
                .await
                .map(|t| ("token", Value::sensitive(Value::string(t)))),
        };
        match answer {
            Ok((name, value)) => {
                set(&mut planned, name, value);
                ApplyResourceChangeResponse {
                    new_state: Some(planned),
                    diagnostics: Vec::new(),
                }
            }
            Err(why) => ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: vec![Diagnostic::error(
                    match self.one_shot {
                        OneShot::CertificateSigningRequest => "No certificate",
                        OneShot::TokenRequest => "No token",
                    },
                    why,
                )],
            },
        }
    }
}
