//! hashicorp/tls (v4): `tls_private_key`, `tls_self_signed_cert`, `tls_locally_signed_cert`,
//! `tls_cert_request`, `data "tls_public_key"`, `data "tls_certificate"`, every argument as
//! the provider documents it.
//!
//! Terraform makes keys and certificates at apply; gpustack makes them when the plan is made,
//! from the plan's seed and time, so that the plan shows what apply records (sensitive values
//! masked) and a saved plan applies exactly: keys come from the seeded generator and every
//! signature is deterministic. Certificates start at the plan's time, written in UTC.

mod cert;
mod keys;

use crate::state_only::{attr, flag, integer, plan_made, text, unknown_computed, with};
use cert::{AltNames, Issuer, Template};
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, ResourceMode, Schema,
    Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config, strings};
use gpustack_provider_sdk::family::{Factory, Family};
use rand_chacha_06::rand_core::{RngCore, SeedableRng};
use std::sync::Arc;

/// Reads the certificates a TLS server presents, for `data "tls_certificate"`'s `url`: given
/// by the binary, so that this crate links no TLS client.
#[async_trait::async_trait]
pub trait ChainReader: Send + Sync {
    /// The chain the server at `url` (`https://` or `tls://`) sends, leaf first, DER. The
    /// error is shown with its causes.
    async fn chain(
        &self,
        url: &str,
        verify: bool,
    ) -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>>;
}

#[derive(Clone)]
pub(crate) struct Tls {
    chains: Option<Arc<dyn ChainReader>>,
}

/// The provider, for a registry; without a chain reader, `url` is refused.
pub fn provider() -> Arc<dyn ProviderFactory> {
    provider_with(None)
}

/// The provider, reading servers' chains with `chains`.
pub fn provider_with(chains: Option<Arc<dyn ChainReader>>) -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Tls { chains }))
}

fn replacing(ty: Type) -> Attribute {
    Attribute::optional(ty).force_new()
}

fn secret() -> Attribute {
    Attribute::computed(Type::String).drawn()
}

/// A list block of at most one, as the provider's `subject` and `proxy`.
fn at_most_one(mut schema: Schema, name: &str) -> Schema {
    if let Some(block) = schema.blocks.get_mut(name) {
        block.max_items = Some(1);
    }
    schema
}

fn subject_block() -> Schema {
    let mut subject = Schema::new("The subject's distinguished name.");
    for name in cert::SUBJECT_ATTRIBUTES {
        let ty = if name == "street_address" {
            Type::list(Type::String)
        } else {
            Type::String
        };
        subject = subject.attr(name, replacing(ty));
    }
    subject
}

fn public_key_attributes(schema: Schema) -> Schema {
    schema
        .attr("public_key_pem", Attribute::computed(Type::String))
        .attr("public_key_openssh", Attribute::computed(Type::String))
        .attr(
            "public_key_fingerprint_md5",
            Attribute::computed(Type::String),
        )
        .attr(
            "public_key_fingerprint_sha256",
            Attribute::computed(Type::String),
        )
        .attr("id", Attribute::computed(Type::String))
}

/// What certificates share: validity, uses, CA constraints, renewal, and what is computed.
fn certificate_schema(description: &str) -> Schema {
    Schema::new(description)
        .attr(
            "validity_period_hours",
            Attribute::required(Type::Number).force_new(),
        )
        .attr(
            "allowed_uses",
            Attribute::required(Type::list(Type::String)).force_new(),
        )
        .attr(
            "early_renewal_hours",
            Attribute::optional_computed(Type::Number)
                .describe("Renew this many hours before the end (default 0)."),
        )
        .attr(
            "is_ca_certificate",
            Attribute::optional_computed(Type::Bool).force_new(),
        )
        .attr(
            "max_path_length",
            Attribute::optional_computed(Type::Number).force_new(),
        )
        .attr(
            "set_subject_key_id",
            Attribute::optional_computed(Type::Bool).force_new(),
        )
        .attr("cert_pem", Attribute::computed(Type::String))
        .attr("ready_for_renewal", Attribute::computed(Type::Bool))
        .attr("validity_start_time", Attribute::computed(Type::String))
        .attr("validity_end_time", Attribute::computed(Type::String))
        .attr("id", Attribute::computed(Type::String))
}

fn names(schema: Schema) -> Schema {
    schema
        .attr("dns_names", replacing(Type::list(Type::String)))
        .attr("ip_addresses", replacing(Type::list(Type::String)))
        .attr("uris", replacing(Type::list(Type::String)))
}

fn schemas() -> ProviderSchema {
    let private_key = public_key_attributes(
        Schema::new("A private key, made when the plan is made and kept in the state (sensitive).")
            .attr(
                "algorithm",
                Attribute::required(Type::String)
                    .force_new()
                    .describe("RSA, ECDSA or ED25519."),
            )
            .attr(
                "rsa_bits",
                Attribute::optional_computed(Type::Number)
                    .force_new()
                    .describe("RSA key size (default 2048)."),
            )
            .attr(
                "ecdsa_curve",
                Attribute::optional_computed(Type::String)
                    .force_new()
                    .describe("P224 (the default), P256, P384 or P521."),
            )
            .attr("private_key_pem", secret())
            .attr("private_key_openssh", secret())
            .attr("private_key_pem_pkcs8", secret()),
    );
    let self_signed = at_most_one(
        names(
            certificate_schema("A self-signed certificate.")
                .attr(
                    "private_key_pem",
                    Attribute::required(Type::String).sensitive().force_new(),
                )
                .attr(
                    "set_authority_key_id",
                    Attribute::optional_computed(Type::Bool).force_new(),
                )
                .attr("key_algorithm", Attribute::computed(Type::String)),
        )
        .block("subject", BlockNesting::List, subject_block()),
        "subject",
    );
    let locally_signed = certificate_schema("A certificate signed by a CA's key.")
        .attr(
            "cert_request_pem",
            Attribute::required(Type::String).force_new(),
        )
        .attr(
            "ca_private_key_pem",
            Attribute::required(Type::String).sensitive().force_new(),
        )
        .attr("ca_cert_pem", Attribute::required(Type::String).force_new())
        .attr("ca_key_algorithm", Attribute::computed(Type::String));
    let request = at_most_one(
        names(
            Schema::new("A certificate signing request (PKCS #10).")
                .attr(
                    "private_key_pem",
                    Attribute::required(Type::String).sensitive().force_new(),
                )
                .attr("key_algorithm", Attribute::computed(Type::String))
                .attr("cert_request_pem", Attribute::computed(Type::String))
                .attr("id", Attribute::computed(Type::String)),
        )
        .block("subject", BlockNesting::List, subject_block()),
        "subject",
    );
    let public_key = public_key_attributes(
        Schema::new("The public key of a private key.")
            .attr(
                "private_key_pem",
                Attribute::optional(Type::String).sensitive(),
            )
            .attr(
                "private_key_openssh",
                Attribute::optional(Type::String).sensitive(),
            )
            .attr("algorithm", Attribute::computed(Type::String)),
    );
    let certificate_fields = [
        ("signature_algorithm", Type::String),
        ("public_key_algorithm", Type::String),
        ("serial_number", Type::String),
        ("is_ca", Type::Bool),
        ("max_path_length", Type::Number),
        ("version", Type::Number),
        ("issuer", Type::String),
        ("subject", Type::String),
        ("not_before", Type::String),
        ("not_after", Type::String),
        ("sha1_fingerprint", Type::String),
        ("cert_pem", Type::String),
    ];
    let certificate = Schema::new(
        "The certificates of a TLS server (https:// or tls://) or of PEM content, read when the plan is made.",
    )
    .attr("url", Attribute::optional(Type::String))
    .attr("content", Attribute::optional(Type::String))
    .attr("verify_chain", Attribute::optional_computed(Type::Bool))
    .attr(
        "certificates",
        Attribute::computed(Type::list(Type::object(
            certificate_fields
                .iter()
                .map(|(n, t)| (*n, gpustack_protocol::ObjectAttr::required(t.clone()))),
        ))),
    )
    .attr("id", Attribute::computed(Type::String));
    let proxy = Schema::new("The proxy for data \"tls_certificate\" over https://.")
        .attr("url", Attribute::optional(Type::String))
        .attr("username", Attribute::optional(Type::String))
        .attr("password", Attribute::optional(Type::String).sensitive())
        .attr("from_env", Attribute::optional(Type::Bool));
    ProviderSchema {
        name: "tls".into(),
        config: at_most_one(
            provider_config("hashicorp/tls: keys and certificates.").block(
                "proxy",
                BlockNesting::List,
                proxy,
            ),
            "proxy",
        ),
        resources: [
            ("tls_private_key".to_owned(), private_key),
            ("tls_self_signed_cert".to_owned(), self_signed),
            ("tls_locally_signed_cert".to_owned(), locally_signed),
            ("tls_cert_request".to_owned(), request),
        ]
        .into(),
        data_sources: [
            ("tls_public_key".to_owned(), public_key),
            ("tls_certificate".to_owned(), certificate),
        ]
        .into(),
    }
}

const ALLOWED_USES: [&str; 23] = [
    "any_extended",
    "cert_signing",
    "client_auth",
    "code_signing",
    "content_commitment",
    "crl_signing",
    "data_encipherment",
    "decipher_only",
    "digital_signature",
    "email_protection",
    "encipher_only",
    "ipsec_end_system",
    "ipsec_tunnel",
    "ipsec_user",
    "key_agreement",
    "key_encipherment",
    "microsoft_commercial_code_signing",
    "microsoft_kernel_code_signing",
    "microsoft_server_gated_crypto",
    "netscape_server_gated_crypto",
    "ocsp_signing",
    "server_auth",
    "timestamping",
];

#[async_trait::async_trait]
impl Family for Tls {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "tls",
            &[
                "tls_private_key",
                "tls_self_signed_cert",
                "tls_locally_signed_cert",
                "tls_cert_request",
            ],
            &["tls_public_key", "tls_certificate"],
        )
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        match type_name {
            "tls_private_key" => {
                check.one_of("algorithm", &keys::ALGORITHMS);
                check.one_of("ecdsa_curve", &keys::CURVES);
                check.range("rsa_bits", 1024.0, 16384.0);
            }
            "tls_self_signed_cert" | "tls_locally_signed_cert" => {
                check.range("validity_period_hours", 0.0, f64::from(i32::MAX));
                check.range("early_renewal_hours", 0.0, f64::from(i32::MAX));
                check.range("max_path_length", -1.0, 255.0);
                for (i, used) in strings(check.config(), "allowed_uses").iter().enumerate() {
                    if !ALLOWED_USES.contains(&used.as_str()) {
                        check.error(
                            &format!("allowed_uses[{i}]"),
                            "Invalid Attribute Value Match",
                            format!(
                                "\"{used}\" is not one of the uses the provider knows: {}.",
                                ALLOWED_USES.join(", ")
                            ),
                        );
                    }
                }
            }
            "tls_public_key" => {
                let given = ["private_key_pem", "private_key_openssh"]
                    .iter()
                    .filter(|n| check.get(n).is_some_and(|v| !v.is_null()))
                    .count();
                if given != 1 {
                    check.error(
                        "private_key_pem",
                        "Invalid Attribute Combination",
                        "Exactly one of private_key_pem and private_key_openssh must be set."
                            .into(),
                    );
                }
            }
            "tls_certificate" => {
                let given = ["url", "content"]
                    .iter()
                    .filter(|n| check.get(n).is_some_and(|v| !v.is_null()))
                    .count();
                if given != 1 {
                    check.error(
                        "url",
                        "Invalid Attribute Combination",
                        "Exactly one of url and content must be set.".into(),
                    );
                }
                if check.get("content").is_some_and(|v| !v.is_null())
                    && check.get("verify_chain").is_some_and(|v| !v.is_null())
                {
                    check.error(
                        "verify_chain",
                        "Invalid Attribute Combination",
                        "verify_chain applies to url only: content is not fetched.".into(),
                    );
                }
                if let Some(url) = check.str("url")
                    && !(url.starts_with("https://") || url.starts_with("tls://"))
                {
                    check.error(
                        "url",
                        "Invalid URL scheme",
                        format!("URL \"{url}\" expected to use scheme from [\"https\" \"tls\"]."),
                    );
                }
            }
            _ => {}
        }
    }

    /// A `proxy {}` for `tls_certificate`'s https:// reads is refused by name: the reads
    /// connect directly, and a proxy ignored in silence would reach another network.
    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let proxy = match attr(config, "proxy") {
            Value::List(items) => items.into_iter().next().unwrap_or(Value::Null),
            other => other,
        };
        if text(&proxy, "url").is_some() || flag(&proxy, "from_env", false) {
            return Err(vec![Diagnostic::error(
                "Proxy not honoured",
                "gpustack's tls provider reads TLS servers directly: it does not honour proxy { url } or proxy { from_env = true }. Read the certificate from a machine that reaches the server, or give it as content.",
            )]);
        }
        Ok(Arc::new(self.clone()))
    }
}

fn seeded(request: &PlanResourceChangeRequest) -> rand_chacha_06::ChaCha20Rng {
    rand_chacha_06::ChaCha20Rng::from_seed(request.seed.unwrap_or_default())
}

/// The plan's "now", in seconds since the epoch.
fn plan_now(request: &PlanResourceChangeRequest) -> Result<i64, String> {
    crate::time::parse_rfc3339(&request.plan_time)
        .map(|t| t.unix)
        .ok_or_else(|| format!("the plan's time \"{}\" is not RFC 3339", request.plan_time))
}

fn rfc3339(unix: i64) -> String {
    crate::time::format_rfc3339(crate::time::Instant { unix, offset: 0 })
}

/// A certificate is due for renewal when the plan's time has reached its end less
/// `early_renewal_hours` (as configured now).
fn renewal_due(prior: &Value, config: &Value, now: i64) -> bool {
    let Some(end) = text(prior, "validity_end_time").and_then(|t| crate::time::parse_rfc3339(&t))
    else {
        return false;
    };
    now >= end.unix - integer(config, "early_renewal_hours", 0) * 3600
}

/// The subject block's values: each attribute's strings.
fn subject_fields(config: &Value) -> Vec<(&'static str, Vec<String>)> {
    let subject = match attr(config, "subject") {
        Value::List(items) => items.into_iter().next().unwrap_or(Value::Null),
        other => other,
    };
    cert::SUBJECT_ATTRIBUTES
        .iter()
        .map(|name| {
            let values = match attr(&subject, name) {
                Value::String(s) => vec![s],
                Value::List(items) => items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                _ => vec![],
            };
            (*name, values)
        })
        .collect()
}

fn alt_names(config: &Value) -> Result<AltNames, String> {
    let mut ips = Vec::new();
    for ip in strings(config, "ip_addresses") {
        ips.push(
            ip.parse()
                .map_err(|_| format!("Invalid IP address: failed to parse \"{ip}\""))?,
        );
    }
    Ok(AltNames {
        dns: strings(config, "dns_names"),
        ips,
        uris: strings(config, "uris"),
    })
}

fn pem(label: &'static str, der: &[u8]) -> Result<String, String> {
    der::pem::encode_string(label, der::pem::LineEnding::LF, der).map_err(|e| e.to_string())
}

/// The computed values of a certificate made at `now` from `config`.
fn certificate_values(
    config: &Value,
    now: i64,
    serial: u128,
    der: &[u8],
) -> Result<Vec<(&'static str, Value)>, String> {
    let hours = integer(config, "validity_period_hours", 0);
    let early = integer(config, "early_renewal_hours", 0);
    Ok(vec![
        ("cert_pem", Value::String(pem("CERTIFICATE", der)?)),
        ("validity_start_time", Value::String(rfc3339(now))),
        (
            "validity_end_time",
            Value::String(rfc3339(now + hours * 3600)),
        ),
        (
            "ready_for_renewal",
            Value::Bool(hours == 0 || early >= hours),
        ),
        ("early_renewal_hours", Value::number(early)),
        (
            "is_ca_certificate",
            Value::Bool(flag(config, "is_ca_certificate", false)),
        ),
        (
            "set_subject_key_id",
            Value::Bool(flag(config, "set_subject_key_id", false)),
        ),
        (
            "max_path_length",
            match attr(config, "max_path_length") {
                Value::Number(n) => Value::Number(n),
                _ => Value::Null,
            },
        ),
        ("id", Value::String(serial.to_string())),
    ])
}

fn template(
    config: &Value,
    subject: x509_cert::name::Name,
    names: AltNames,
    public_key: &spki::SubjectPublicKeyInfoOwned,
    now: i64,
    serial: u128,
) -> Result<Template, String> {
    let is_ca = flag(config, "is_ca_certificate", false);
    if is_ca && subject.0.is_empty() {
        return Err(
            "Must contain at least one Distinguished Name when creating Certificate Authority (CA)"
                .into(),
        );
    }
    let subject_key_id = (is_ca || flag(config, "set_subject_key_id", false))
        .then(|| keys::subject_key_id(public_key))
        .transpose()?;
    Ok(Template {
        serial,
        not_before: now,
        not_after: now + integer(config, "validity_period_hours", 0) * 3600,
        subject,
        names,
        allowed_uses: strings(config, "allowed_uses"),
        is_ca,
        max_path_length: match attr(config, "max_path_length") {
            Value::Number(n) => n.to_i64(),
            _ => None,
        },
        subject_key_id,
        authority_key_id: None,
    })
}

/// Whether every value `names` name in `config` is known: what a certificate is made from.
fn known(config: &Value, names: &[&str]) -> bool {
    names.iter().all(|n| attr(config, n).is_wholly_known())
}

fn make(
    type_name: &str,
    request: &PlanResourceChangeRequest,
    config: &Value,
) -> Result<Value, String> {
    let schema = schemas()
        .into_type(ResourceMode::Managed, type_name)
        .unwrap_or_default();
    let inputs: &[&str] = match type_name {
        "tls_self_signed_cert" => &[
            "private_key_pem",
            "subject",
            "dns_names",
            "ip_addresses",
            "uris",
        ],
        "tls_locally_signed_cert" => &["cert_request_pem", "ca_private_key_pem", "ca_cert_pem"],
        "tls_cert_request" => &[
            "private_key_pem",
            "subject",
            "dns_names",
            "ip_addresses",
            "uris",
        ],
        _ => &[],
    };
    if !known(config, inputs) {
        return Ok(unknown_computed(&schema, config));
    }
    let mut rng = seeded(request);
    match type_name {
        "tls_private_key" => {
            let algorithm = text(config, "algorithm").unwrap_or_default();
            let bits = integer(config, "rsa_bits", 2048);
            let curve = text(config, "ecdsa_curve").unwrap_or_else(|| "P224".into());
            let key = keys::generate(&algorithm, bits, &curve, &mut rng)?;
            let mut values = vec![
                ("rsa_bits", Value::number(bits)),
                ("ecdsa_curve", Value::String(curve)),
                ("private_key_pem", Value::String(key.private_pem()?)),
                ("private_key_pem_pkcs8", Value::String(key.pkcs8_pem()?)),
                ("private_key_openssh", Value::String(key.private_openssh()?)),
            ];
            values.extend(
                key.public_attributes()?
                    .into_iter()
                    .map(|(n, v)| (n, Value::String(v))),
            );
            Ok(with(config, values))
        }
        "tls_self_signed_cert" => {
            let now = plan_now(request)?;
            let key = keys::parse_pem(&text(config, "private_key_pem").unwrap_or_default())
                .map_err(|e| format!("Failed to parse private key PEM: {e}"))?;
            let serial = serial(&mut rng);
            let subject = cert::subject_name(&subject_fields(config))?;
            let public_key = key.spki()?;
            let mut template = template(
                config,
                subject.clone(),
                alt_names(config)?,
                &public_key,
                now,
                serial,
            )?;
            if flag(config, "set_authority_key_id", false) {
                template.authority_key_id = Some(template.subject_key_id.clone().ok_or(
                    "Could not determine Authority Key Identifier: set is_ca_certificate or set_subject_key_id as well",
                )?);
            }
            let issuer = Issuer {
                name: subject,
                key: &key,
                certificate_key: key.public_der()?,
                subject_key_id: template.subject_key_id.clone(),
            };
            let der = cert::create(&template, public_key, &issuer)
                .map_err(|e| format!("Failed to create certificate: {e}"))?;
            let mut values = certificate_values(config, now, serial, &der)?;
            values.push(("key_algorithm", Value::string(key.algorithm())));
            values.push((
                "set_authority_key_id",
                Value::Bool(flag(config, "set_authority_key_id", false)),
            ));
            Ok(with(config, values))
        }
        "tls_locally_signed_cert" => {
            let now = plan_now(request)?;
            let (subject, names, public_key) =
                cert::read_request(&text(config, "cert_request_pem").unwrap_or_default())
                    .map_err(|e| format!("Failed to parse certificate request PEM: {e}"))?;
            let ca_key = keys::parse_pem(&text(config, "ca_private_key_pem").unwrap_or_default())
                .map_err(|e| format!("Failed to parse CA private key PEM: {e}"))?;
            let ca = cert::read_certificate(&text(config, "ca_cert_pem").unwrap_or_default())
                .map_err(|e| format!("Failed to parse CA certificate PEM: {e}"))?;
            let serial = serial(&mut rng);
            let template = template(config, subject, names, &public_key, now, serial)?;
            let certificate_key = der::Encode::to_der(&ca.tbs_certificate.subject_public_key_info)
                .map_err(|e| e.to_string())?;
            let issuer = Issuer {
                name: ca.tbs_certificate.subject.clone(),
                key: &ca_key,
                certificate_key,
                subject_key_id: cert::subject_key_id(&ca),
            };
            let der = cert::create(&template, public_key, &issuer)
                .map_err(|e| format!("Failed to create certificate: {e}"))?;
            let mut values = certificate_values(config, now, serial, &der)?;
            values.push(("ca_key_algorithm", Value::string(ca_key.algorithm())));
            Ok(with(config, values))
        }
        "tls_cert_request" => {
            let key = keys::parse_pem(&text(config, "private_key_pem").unwrap_or_default())
                .map_err(|e| format!("Failed to parse private key PEM: {e}"))?;
            let subject = cert::subject_name(&subject_fields(config))?;
            let der = cert::request(subject, &alt_names(config)?, &key)
                .map_err(|e| format!("Error creating certificate request: {e}"))?;
            Ok(with(
                config,
                [
                    ("key_algorithm", Value::string(key.algorithm())),
                    (
                        "cert_request_pem",
                        Value::String(pem("CERTIFICATE REQUEST", &der)?),
                    ),
                    ("id", Value::String(keys::hash_for_state(&der))),
                ],
            ))
        }
        other => Err(format!("the tls provider has no resource \"{other}\"")),
    }
}

/// A serial number below 2¹²⁸, as the provider draws it.
fn serial(rng: &mut rand_chacha_06::ChaCha20Rng) -> u128 {
    let mut bytes = [0u8; 16];
    rng.fill_bytes(&mut bytes);
    u128::from_be_bytes(bytes)
}

#[async_trait::async_trait]
impl Provider for Tls {
    /// A private key is drawn again from the object's seed: the state keeps it only as a
    /// digest, and what refers to it (a certificate's renewal, `data "tls_public_key"`) needs it.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let secrets: &[&str] = if request.type_name == "tls_private_key" {
            &[
                "private_key_pem",
                "private_key_openssh",
                "private_key_pem_pkcs8",
            ]
        } else {
            &[]
        };
        crate::state_only::redrawn(request, secrets, |type_name, config, request| {
            make(type_name, request, config)
        })
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let type_name = request.type_name.clone();
        let schema = schemas()
            .into_type(ResourceMode::Managed, &type_name)
            .unwrap_or_default();
        let certificate = matches!(
            type_name.as_str(),
            "tls_self_signed_cert" | "tls_locally_signed_cert"
        );
        let due = certificate
            && request.prior_state.as_ref().is_some_and(|prior| {
                plan_now(&request).is_ok_and(|now| renewal_due(prior, &request.config, now))
            });
        let mut response = plan_made(&schema, &request, |config| {
            make(&type_name, &request, config)
        });
        if due
            && response.requires_replace.is_empty()
            && !response.diagnostics.iter().any(Diagnostic::is_error)
        {
            // Due for renewal: a new certificate replaces the old, as the provider plans it.
            response = match make(&type_name, &request, &request.config) {
                Ok(planned) => PlanResourceChangeResponse {
                    planned_state: planned,
                    requires_replace: vec!["ready_for_renewal".into()],
                    ..PlanResourceChangeResponse::default()
                },
                Err(e) => PlanResourceChangeResponse {
                    planned_state: request.config.clone(),
                    diagnostics: vec![Diagnostic::error("Invalid configuration", e)],
                    ..PlanResourceChangeResponse::default()
                },
            };
        }
        if type_name == "tls_locally_signed_cert"
            && response.requires_replace.is_empty() == request.prior_state.is_none()
            && let Some(ca) = text(&request.config, "ca_cert_pem")
            && cert::read_certificate(&ca).is_ok_and(|c| !cert::is_ca(&c))
        {
            response.diagnostics.push(Diagnostic::warning(
                "Potentially Invalid Certificate Authority",
                "Certificate provided as Authority does not appear to be a valid Certificate Authority. The resulting certificate might fail certificate validation.",
            ));
        }
        response
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        crate::state_only::apply_planned(&request)
    }

    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        ImportResourceResponse {
            state: None,
            diagnostics: vec![Diagnostic::error(
                "Resource Import Not Implemented",
                format!(
                    "{} cannot be imported: the provider implements no import, as in Terraform.",
                    request.type_name
                ),
            )],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        let result = match request.type_name.as_str() {
            "tls_public_key" => read_public_key(&request.config),
            "tls_certificate" => read_certificates(&request.config, self.chains.as_deref()).await,
            _ => {
                return crate::state_only::no_data_source("tls", request);
            }
        };
        match result {
            Ok(state) => ReadDataSourceResponse {
                state,
                diagnostics: vec![],
            },
            Err((summary, detail)) => ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![Diagnostic::error(summary, detail)],
            },
        }
    }
}

fn read_public_key(config: &Value) -> Result<Value, (&'static str, String)> {
    let key = match (
        text(config, "private_key_pem"),
        text(config, "private_key_openssh"),
    ) {
        (Some(pem), _) => keys::parse_pem(&pem),
        (None, Some(openssh)) => keys::parse_openssh(&openssh),
        (None, None) => Err("set private_key_pem or private_key_openssh".into()),
    }
    .map_err(|e| ("Unable to parse private key", e))?;
    let mut values = vec![("algorithm", Value::string(key.algorithm()))];
    values.extend(
        key.public_attributes()
            .map_err(|e| ("Unable to parse private key", e))?
            .into_iter()
            .map(|(n, v)| (n, Value::String(v))),
    );
    Ok(with(config, values))
}

async fn read_certificates(
    config: &Value,
    chains: Option<&dyn ChainReader>,
) -> Result<Value, (&'static str, String)> {
    let ders: Vec<Vec<u8>> = if let Some(content) = text(config, "content") {
        let Some((label, _)) = keys::first_pem_block(&content) else {
            return Err((
                "Failed to decoded PEM",
                "Value is not a valid PEM encoding of a certificate".into(),
            ));
        };
        if label != "CERTIFICATE" {
            return Err((
                "Unexpected PEM preamble",
                format!("Certificate PEM should be \"CERTIFICATE\", got \"{label}\""),
            ));
        }
        vec![
            cert::decode_pem(&content, "CERTIFICATE")
                .map_err(|e| ("Unable to parse certificate", e))?,
        ]
    } else {
        let url = text(config, "url").unwrap_or_default();
        let verify = flag(config, "verify_chain", true);
        let Some(chains) = chains else {
            return Err((
                "Failed to identify fetch peer certificates",
                "this build of gpustack reads no TLS servers: give the certificate as content"
                    .into(),
            ));
        };
        let mut chain = chains.chain(&url, verify).await.map_err(|e| {
            (
                "Failed to identify fetch peer certificates",
                gpustack_protocol::error_chain(&*e),
            )
        })?;
        // As the provider lists them: the last the server sent first.
        chain.reverse();
        chain
    };
    let mut described = Vec::new();
    for der in &ders {
        let certificate = <x509_cert::Certificate as der::Decode>::from_der(der)
            .map_err(|e| ("Unable to parse certificate", e.to_string()))?;
        described
            .push(cert::describe(&certificate).map_err(|e| ("Unable to parse certificate", e))?);
    }
    let id = cert::certificates_id(&described);
    let certificates = Value::List(
        described
            .into_iter()
            .map(|fields| {
                Value::Object(fields.into_iter().map(|(n, v)| (n.to_owned(), v)).collect())
            })
            .collect(),
    );
    let verify_chain = match attr(config, "verify_chain") {
        Value::Bool(b) => Value::Bool(b),
        _ if text(config, "url").is_some() => Value::Bool(true),
        _ => Value::Null,
    };
    Ok(with(
        config,
        [
            ("certificates", certificates),
            ("verify_chain", verify_chain),
            ("id", Value::String(id)),
        ],
    ))
}
