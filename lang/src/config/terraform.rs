//! The `terraform` block, read as Terraform and OpenTofu read it: `required_version` checked
//! against the language version gpustack implements, `required_providers` against the
//! providers it serves, `backend "s3" | "kubernetes" | "local"` with each of Terraform's
//! arguments honoured, ignored with a warning or refused by name, OpenTofu's `encryption`, and
//! `cloud`, `provider_meta` and `experiments` refused with the reason.

use super::load::Decoder;
use super::version::meets;
use super::*;
use crate::diag::{Diag, Diags, suggest};
use gpustack_protocol::Registry;
use gpustack_protocol::terraform::{
    BackendArgument, LANGUAGE_VERSION, SERVED_PROVIDERS, backend_argument, backend_arguments,
    s3_endpoint,
};
use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::{Attribute, Block, Structure};
use hcl_edit::{Decorated, Ident, Span as _};

/// How `gpustack version` names the language it implements.
pub fn language_version() -> String {
    format!("Terraform language {LANGUAGE_VERSION} (with OpenTofu 1.11's additions)")
}

const BACKENDS: [&str; 3] = ["s3", "kubernetes", "local"];

impl Decoder<'_> {
    // Long by design: the terraform block's arguments and nested blocks, one paragraph each
    // (required_version, required_providers, backend, cloud, encryption, ...), in the order
    // Terraform's documentation lists them.
    pub(super) fn terraform(&mut self, module: &mut Module, block: &Block) {
        let span = self.header_span(block);
        if let Some(label) = block.labels.first() {
            self.diags.error(
                self.span(label.span()),
                "Extraneous label for terraform",
                "The terraform block takes no labels.",
            );
        }
        let body = &block.body;
        self.only(
            body,
            "a terraform block",
            &["required_version", "experiments"],
            &[
                "required_providers",
                "backend",
                "cloud",
                "provider_meta",
                "encryption",
            ],
        );
        module.terraform.get_or_insert_with(|| {
            Box::new(TerraformSettings {
                span,
                required_providers: Vec::new(),
                backend: None,
                encryption: None,
            })
        });
        if let Some(attr) = body.get_attribute("required_version") {
            let at = self.span(attr.value.span());
            if let Some(constraint) = self.literal_string(Some(attr)) {
                match meets(LANGUAGE_VERSION, &constraint) {
                    Ok(true) => {}
                    Ok(false) => self.diags.error(
                        at,
                        "Unsupported Terraform version",
                        format!(
                            "This module requires Terraform {constraint}; gpustack implements the {}.",
                            language_version()
                        ),
                    ),
                    Err(why) => self.diags.error(at, "Invalid version constraint", why.to_string()),
                }
            }
        }
        if let Some(attr) = body.get_attribute("experiments") {
            self.diags.error(
                self.span(attr.key.span()),
                "Experiments are not supported",
                "experiments turns on language features of a Terraform release that are not final; gpustack implements none of them.",
            );
        }
        // A module's metadata for a provider plugin (every terraform-google-modules module
        // has one): it changes nothing a provider does, so it is read past, and said once.
        if let Some(b) = body.get_blocks("provider_meta").next() {
            self.diags.push(Diag::warning(
                self.span(b.ident.span()),
                "provider_meta is not sent",
                "provider_meta sends a module's metadata (usage attribution) to a Terraform provider plugin; gpustack's providers are built in and take none, so it is accepted and changes nothing.",
            ));
        }
        for b in body.get_blocks("cloud") {
            self.diags.error(
                self.span(b.ident.span()),
                "HCP Terraform is not supported",
                "The cloud block runs plans in HCP Terraform (Terraform Cloud) and keeps the state there; gpustack plans and applies itself and keeps the state in a backend: use backend \"s3\", \"kubernetes\" or \"local\".",
            );
        }
        for b in body.get_blocks("required_providers") {
            let entries = self.required_providers(b);
            for entry in entries {
                let settings = module.terraform.as_mut().expect("inserted above");
                if settings
                    .required_providers
                    .iter()
                    .any(|p| p.name == entry.name)
                {
                    self.diags.error(
                        entry.span,
                        "Duplicate required provider",
                        format!(
                            "A provider named \"{}\" was already required in this module.",
                            entry.name
                        ),
                    );
                    continue;
                }
                settings.required_providers.push(entry);
            }
        }
        for b in body.get_blocks("encryption") {
            if let Some(label) = b.labels.first() {
                self.diags.error(
                    self.span(label.span()),
                    "Extraneous label for encryption",
                    "The encryption block takes no labels.",
                );
            }
            let settings = module.terraform.as_mut().expect("inserted above");
            if settings.encryption.is_some() {
                self.diags.error(
                    self.span(b.ident.span()),
                    "Duplicate encryption block",
                    "A stack has one encryption block.",
                );
                continue;
            }
            settings.encryption = Some(BodyRef {
                body: b.body.clone(),
                file: self.file,
                span: self.header_span(b),
            });
        }
        for b in body.get_blocks("backend") {
            let Some(labels) = self.labels(b, &["backend type"]) else {
                continue;
            };
            let kind = labels[0].clone();
            let kind_span = self.span(b.labels[0].span());
            if !module.path.is_empty() {
                self.diags.push(Diag::warning(
                    kind_span,
                    "Backend configuration ignored",
                    "A backend applies to the whole stack, so only the root module's is read; this module's is ignored, as Terraform ignores it.",
                ));
                continue;
            }
            if !BACKENDS.contains(&kind.as_str()) {
                self.diags.error(
                    kind_span,
                    "Unsupported backend",
                    format!(
                        "gpustack keeps state in the backends s3, kubernetes and local; it cannot use Terraform's \"{kind}\" backend.{}",
                        suggest(&kind, BACKENDS)
                    ),
                );
                continue;
            }
            let settings = module.terraform.as_mut().expect("inserted above");
            if settings.backend.is_some() {
                self.diags.error(
                    self.span(b.ident.span()),
                    "Duplicate backend configuration",
                    "A stack stores its state in one backend.",
                );
                continue;
            }
            let mapped = self.terraform_backend(&kind, b);
            let settings = module.terraform.as_mut().expect("inserted above");
            settings.backend = Some(BackendBlock {
                kind,
                kind_span,
                body: BodyRef {
                    body: mapped,
                    file: self.file,
                    span: self.header_span(b),
                },
            });
        }
    }

    /// The entries of one `required_providers` block.
    fn required_providers(&mut self, block: &Block) -> Vec<RequiredProvider> {
        let mut out = Vec::new();
        for structure in block.body.iter() {
            let attr = match structure {
                Structure::Attribute(attr) => attr,
                Structure::Block(b) => {
                    self.diags.error(
                        self.span(b.ident.span()),
                        "Unsupported block type",
                        "required_providers holds entries such as kubernetes = { source = \"hashicorp/kubernetes\", version = \"~> 2.0\" }.",
                    );
                    continue;
                }
            };
            let name = attr.key.as_str().to_owned();
            let span = self.span(attr.key.span());
            let mut source = None;
            let mut version = None;
            match &attr.value {
                // The form of Terraform 0.12: a version constraint alone.
                Expression::String(_) | Expression::StringTemplate(_) => {
                    version = crate::expr::literal::literal_str(&attr.value);
                }
                Expression::Object(object) => {
                    for (key, value) in object.iter() {
                        let key_name = match key {
                            ObjectKey::Ident(ident) => ident.as_str().to_owned(),
                            ObjectKey::Expression(Expression::String(s)) => s.value().clone(),
                            ObjectKey::Expression(other) => {
                                self.diags.error(
                                    self.span(other.span()),
                                    "Invalid required_providers entry",
                                    "Its keys are source, version and configuration_aliases.",
                                );
                                continue;
                            }
                        };
                        match key_name.as_str() {
                            "source" => match crate::expr::literal::literal_str(value.expr()) {
                                Some(text) => {
                                    source = Some((text, self.span(value.expr().span())));
                                }
                                None => self.diags.error(
                                    self.span(value.expr().span()),
                                    "Invalid value",
                                    "source must be a literal string such as \"hashicorp/kubernetes\".",
                                ),
                            },
                            // Terraform's plugin versions: gpustack's providers are built in,
                            // and the constraint is only shown (`providers`).
                            "version" => {
                                version = crate::expr::literal::literal_str(value.expr());
                            }
                            "configuration_aliases" => {}
                            other => self.diags.error(
                                self.span(key.span()),
                                "Invalid required_providers entry",
                                format!(
                                    "\"{other}\" is not an argument of a required provider: they are source, version and configuration_aliases.{}",
                                    suggest(other, ["source", "version", "configuration_aliases"])
                                ),
                            ),
                        }
                    }
                }
                other => {
                    self.diags.error(
                        self.span(other.span()),
                        "Invalid required_providers entry",
                        "An entry is an object such as { source = \"hashicorp/kubernetes\", version = \"~> 2.0\" }.",
                    );
                    continue;
                }
            }
            let (source, source_span) = match source {
                Some((text, at)) => match source_address(&text) {
                    Some(address) => (address, at),
                    None => {
                        self.diags.error(
                            at,
                            "Invalid provider source address",
                            format!(
                                "\"{text}\" is not a source address such as \"hashicorp/kubernetes\" or \"registry.terraform.io/hashicorp/kubernetes\"."
                            ),
                        );
                        continue;
                    }
                },
                // Terraform's default: the provider of that name in the hashicorp namespace.
                None => (format!("hashicorp/{}", name.to_lowercase()), span),
            };
            out.push(RequiredProvider {
                name,
                span,
                source,
                source_span,
                version,
            });
        }
        out
    }

    /// A `backend "KIND"` block's body with Terraform's arguments made gpustack's: each kept
    /// under gpustack's name (with its own spans), accepted, ignored with a warning or refused.
    fn terraform_backend(&mut self, kind: &str, block: &Block) -> Body {
        let mut body = Body::new();
        let mut in_cluster = false;
        let mut no_config_file = None;
        for structure in block.body.iter() {
            let attr = match structure {
                Structure::Attribute(attr) => attr,
                Structure::Block(b) => {
                    let name = b.ident.as_str();
                    let why = match backend_argument(kind, name) {
                        Some(BackendArgument::Refused(why)) => format!(": {why}"),
                        _ => ".".to_owned(),
                    };
                    self.diags.error(
                        self.span(b.ident.span()),
                        "Unsupported block type",
                        format!(
                            "Blocks of type \"{name}\" are not expected in the {kind} backend{why}"
                        ),
                    );
                    continue;
                }
            };
            let name = attr.key.as_str();
            let key_span = self.span(attr.key.span());
            match backend_argument(kind, name) {
                None => self.diags.error(
                    key_span,
                    "Unsupported argument",
                    format!(
                        "An argument named \"{name}\" is not expected in Terraform's {kind} backend.{}",
                        suggest(name, backend_arguments(kind).iter().copied())
                    ),
                ),
                Some(BackendArgument::Honoured(gpustack)) => body.push(renamed(attr, gpustack)),
                Some(BackendArgument::Accepted(_)) => {}
                Some(BackendArgument::Ignored(why)) => self.diags.push(Diag::warning(
                    key_span,
                    "Backend argument ignored",
                    format!("{name} is ignored: {why}."),
                )),
                Some(BackendArgument::Refused(why)) => self.diags.error(
                    key_span,
                    "Unsupported backend argument",
                    format!("{name} is refused: {why}."),
                ),
                Some(BackendArgument::Special) => match name {
                    "endpoints" => self.s3_endpoints(attr, &mut body),
                    "use_lockfile" if self.literal_bool(Some(attr)) == Some(false) => {
                        self.diags.push(Diag::warning(
                            self.span(attr.value.span()),
                            "The state is locked all the same",
                            "gpustack always locks an S3 state, with a lock object written only if absent (KEY.lock), which is what use_lockfile = true asks of Terraform.",
                        ));
                    }
                    "load_config_file" if self.literal_bool(Some(attr)) == Some(false) => {
                        no_config_file = Some(key_span);
                    }
                    _ => {}
                },
            }
            if name == "in_cluster_config" && attr.value.as_bool() == Some(true) {
                in_cluster = true;
            }
        }
        if let Some(at) = no_config_file.filter(|_| !in_cluster) {
            self.diags.error(
                at,
                "Unsupported backend argument",
                "load_config_file = false leaves the kubernetes backend only the cluster credentials written in the stack, which gpustack refuses: read a kubeconfig (config_path, config_context) or set in_cluster_config = true.",
            );
        }
        if kind == "kubernetes" && body.get_attribute("namespace").is_none() {
            // Terraform's default namespace; gpustack's own backend block requires one.
            body.push(Attribute::new(Ident::new("namespace"), "default"));
        }
        body
    }

    /// `endpoints = { s3 = "..." }`: S3's endpoint kept as gpustack's `endpoint`.
    fn s3_endpoints(&mut self, attr: &Attribute, body: &mut Body) {
        let Expression::Object(object) = &attr.value else {
            self.diags.error(
                self.span(attr.value.span()),
                "Invalid value",
                "endpoints is an object such as { s3 = \"https://s3.example.com\" }.",
            );
            return;
        };
        for (key, value) in object.iter() {
            let name = match key {
                ObjectKey::Ident(ident) => ident.as_str().to_owned(),
                ObjectKey::Expression(Expression::String(s)) => s.value().clone(),
                ObjectKey::Expression(_) => String::new(),
            };
            let at = self.span(key.span());
            match s3_endpoint(&name) {
                Some(BackendArgument::Honoured(gpustack)) => body.push(Attribute::new(
                    renamed_key(attr, gpustack),
                    value.expr().clone(),
                )),
                Some(BackendArgument::Ignored(why)) => self.diags.push(Diag::warning(
                    at,
                    "Backend argument ignored",
                    format!("endpoints.{name} is ignored: {why}."),
                )),
                Some(BackendArgument::Refused(why)) => self.diags.error(
                    at,
                    "Unsupported backend argument",
                    format!("endpoints.{name} is refused: {why}."),
                ),
                _ => self.diags.error(
                    at,
                    "Unsupported argument",
                    format!(
                        "\"{name}\" is not an endpoint of Terraform's s3 backend: they are s3, dynamodb, iam, sts and sso."
                    ),
                ),
            }
        }
    }
}

/// The attribute under gpustack's name, keeping where its name and value were written.
fn renamed(attr: &Attribute, name: &str) -> Attribute {
    let mut attr = attr.clone();
    *attr.key.value_mut() = Ident::new(name);
    attr
}

fn renamed_key(attr: &Attribute, name: &str) -> Decorated<Ident> {
    let mut key = attr.key.clone();
    *key.value_mut() = Ident::new(name);
    key
}

/// `NAMESPACE/TYPE` of a provider source address (`[HOST/]NAMESPACE/TYPE`), lower case.
fn source_address(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.split('/').collect();
    let (namespace, ty) = match parts.as_slice() {
        [namespace, ty] | [_, namespace, ty] => (namespace, ty),
        _ => return None,
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    (valid(namespace) && valid(ty)).then(|| format!("{namespace}/{ty}").to_lowercase())
}

/// Checks every module's `required_providers` against the providers this build serves: each
/// entry must name a provider gpustack serves, under gpustack's name for it.
pub fn check_required_providers(stack: &Stack, registry: &Registry, diags: &mut Diags) {
    let served: Vec<String> = SERVED_PROVIDERS
        .iter()
        .filter(|(_, name)| registry.provider(name).is_some())
        .map(|(source, name)| match source.strip_prefix("builtin/") {
            Some(_) => format!("{name} (built in, terraform.io/{source})"),
            None => format!("{name} ({source})"),
        })
        .collect();
    for module in &stack.modules {
        // A module loaded once per instance is reported once.
        if module.instance.is_some() && !first_instance(stack, module) {
            continue;
        }
        let Some(settings) = &module.terraform else {
            continue;
        };
        for entry in &settings.required_providers {
            let serves = SERVED_PROVIDERS
                .iter()
                .find(|(source, _)| *source == entry.source)
                .map(|(_, name)| *name)
                .filter(|name| registry.provider(name).is_some());
            match serves {
                Some(name) if name == entry.name => {}
                Some(name) => diags.error(
                    entry.span,
                    "Provider under another name",
                    format!(
                        "gpustack serves {} under the name \"{name}\", which its resources use; name the entry {name}.",
                        entry.source
                    ),
                ),
                None => {
                    let infrastructure = gpustack_protocol::terraform::foreign_provider(&format!(
                        "{}_",
                        entry.source.rsplit('/').next().unwrap_or_default()
                    ))
                    .is_some_and(|p| p.infrastructure);
                    let advice = if infrastructure {
                        " Keep what it manages (the cluster, its identity, its networks) in its Terraform stack and read that stack's outputs here with data \"terraform_remote_state\"."
                    } else {
                        ""
                    };
                    diags.error(
                        entry.source_span,
                        "Provider not available",
                        format!(
                            "gpustack does not serve the provider {}.{advice} The providers it serves are {}.",
                            entry.source,
                            served.join(", ")
                        ),
                    );
                }
            }
        }
    }
}

/// Whether `module`, an instance of a repeated call, is its call's first instance.
fn first_instance(stack: &Stack, module: &Module) -> bool {
    let (Some(parent), Some(call)) = (module.parent, module.call_name()) else {
        return true;
    };
    stack.modules[parent]
        .instances
        .get(call)
        .and_then(|all| all.first())
        .is_none_or(|&first| std::ptr::eq(&stack.modules[first], module))
}
