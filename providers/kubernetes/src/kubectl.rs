//! The `kubectl` provider as gavinbunney/kubectl (and alekc/kubectl) define it:
//! `kubectl_manifest` — an object given as YAML text, applied as a `kubernetes_manifest` of it
//! is, through the same server-side apply, identity (uid) and ownership rules, by translation
//! into a manifest resource and back — and the data sources that split YAML files into
//! documents (`kubectl_file_documents`, `kubectl_path_documents`).

use crate::cluster::Cluster;
use crate::connection::Connected;
use crate::manifest::Objects;
use crate::types::ObjectType;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    GpuFact, PathStep, PlanDeleteRequest, PlanDeleteResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderSchema, ReadDataSourceResponse,
    ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, provider_config, set, text};
use gpustack_provider_sdk::family::Family;
use gpustack_provider_sdk::objects::strip_nulls;
use gpustack_provider_sdk::resource::{DataSource, Resource, Resources};
use serde_json::Value as Json;
use sha2::Digest as _;
use std::sync::Arc;

pub(crate) struct Kubectl;

/// The arguments of `kubectl_manifest` gpustack refuses, with the reason.
pub const MANIFEST_REFUSED: &[(&str, &str)] = &[(
    "ignore_fields",
    "gpustack compares only the fields yaml_body sets, and manages all of them; leave a field out of yaml_body to leave it to others",
)];

/// What `kubectl_manifest` and the provider configuration accept and gpustack does
/// differently, stated in their descriptions: server_side_apply = false still applies
/// server-side (gpustack applies every object server-side, with its field manager).
const SERVER_SIDE: &str =
    "gpustack applies every object server-side; false is accepted and applies server-side too.";

const ROLLOUT_KINDS: [&str; 3] = ["Deployment", "DaemonSet", "StatefulSet"];

fn manifest_schema() -> Schema {
    let text = || Attribute::optional(Type::String);
    let flag = || Attribute::optional(Type::Bool);
    Schema::new("A Kubernetes object given as YAML, applied server-side.")
        .attr(
            "yaml_body",
            Attribute::required(Type::String).describe(
                "The object, as YAML (one document); sensitive when it is a Secret or sensitive_fields names any field.",
            ),
        )
        .attr(
            "yaml_body_parsed",
            Attribute::computed(Type::String)
                .describe("yaml_body with sensitive_fields (and a Secret's data) obfuscated."),
        )
        .attr(
            "yaml_incluster",
            Attribute::computed(Type::String)
                .describe("A fingerprint of the live values of the fields yaml_body sets."),
        )
        .attr(
            "live_manifest_incluster",
            Attribute::computed(Type::String)
                .describe("The same fingerprint, as the provider names it."),
        )
        .attr(
            "sensitive_fields",
            Attribute::optional(Type::list(Type::String)),
        )
        .attr(
            "force_new",
            flag().describe("Any change replaces the object."),
        )
        .attr("server_side_apply", flag().describe(SERVER_SIDE))
        .attr(
            "field_manager",
            text().describe("The server-side apply field manager; default \"kubectl\"."),
        )
        .attr("force_conflicts", flag())
        .attr(
            "apply_only",
            flag().describe("Never delete the object: a destroy leaves it."),
        )
        .attr(
            "ignore_fields",
            Attribute::optional(Type::list(Type::String)),
        )
        .attr("override_namespace", text())
        .attr(
            "validate_schema",
            flag()
                .describe("Accepted: the API server validates every apply, and plans dry-run it."),
        )
        .attr(
            "wait",
            flag().describe("Wait for the object to be gone on delete (gpustack always does)."),
        )
        .attr(
            "wait_for_rollout",
            flag().describe(
                "Wait for a Deployment, DaemonSet or StatefulSet to roll out (default true).",
            ),
        )
        .attr(
            "delete_cascade",
            text().describe("Background or Foreground."),
        )
        .attr("api_version", Attribute::computed(Type::String))
        .attr("kind", Attribute::computed(Type::String))
        .attr("name", Attribute::computed(Type::String))
        .attr("namespace", Attribute::computed(Type::String))
        .attr("uid", Attribute::computed(Type::String))
        .attr("live_uid", Attribute::computed(Type::String))
        .block(
            "wait_for",
            BlockNesting::Single,
            Schema::new("What to wait for after apply.")
                .block(
                    "field",
                    BlockNesting::List,
                    Schema::new("A field's expected value.")
                        .attr("key", Attribute::required(Type::String))
                        .attr("value", Attribute::required(Type::String))
                        .attr(
                            "value_type",
                            text().describe("\"eq\" (the default); \"regex\" is refused."),
                        ),
                )
                .block(
                    "condition",
                    BlockNesting::List,
                    Schema::new("A status condition.")
                        .attr("type", Attribute::required(Type::String))
                        .attr("status", Attribute::required(Type::String)),
                ),
        )
        .block(
            "timeouts",
            BlockNesting::Single,
            Schema::new("How long to wait for create.").attr("create", text()),
        )
}

fn documents_schema(path: bool) -> Schema {
    let schema = Schema::new(if path {
        "The YAML documents of the files a glob pattern matches, templated with vars."
    } else {
        "The YAML documents of a text."
    })
    .attr("documents", Attribute::computed(Type::list(Type::String)))
    .attr("manifests", Attribute::computed(Type::map(Type::String)));
    if path {
        schema
            .attr("pattern", Attribute::required(Type::String))
            .attr("vars", Attribute::optional(Type::map(Type::String)))
            .attr(
                "sensitive_vars",
                Attribute::optional(Type::map(Type::String)).sensitive(),
            )
            .attr("disable_template", Attribute::optional(Type::Bool))
    } else {
        schema.attr("content", Attribute::required(Type::String))
    }
}

#[async_trait::async_trait]
impl Family for Kubectl {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "kubectl",
            &["kubectl_manifest"],
            &[
                "kubectl_file_documents",
                "kubectl_path_documents",
                crate::cluster_info::KUBECTL_SERVER_VERSION,
                "kubectl_filename_list",
            ],
        )
    }

    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<gpustack_protocol::TerraformTakeover, &'static str>> {
        crate::takeover::kubectl(type_name, attributes)
    }

    fn import_id_of_identity(
        &self,
        type_name: &str,
        identity: &gpustack_protocol::Value,
    ) -> Option<Result<String, gpustack_protocol::ImportIdError>> {
        (type_name == "kubectl_manifest")
            .then(|| crate::takeover::import_id_of_identity(type_name, identity))
            .flatten()
    }

    /// A `kubectl_manifest`'s change is reviewed as the object its `yaml_body` holds; a body
    /// that is no one object is reported where it is written.
    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        let (type_name, before, after) = (change.type_name, change.before, change.after);
        if type_name != "kubectl_manifest" {
            return None;
        }
        let mut diagnostics = Vec::new();
        let mut object = |state: &gpustack_protocol::Value| match manifest_of(state) {
            Ok(manifest) => manifest.as_ref().map(manifest_wrapper),
            Err(why) => {
                diagnostics
                    .push(Diagnostic::error("Invalid yaml_body", why).with_attribute("yaml_body"));
                None
            }
        };
        let before = before.and_then(&mut object);
        let after = after.and_then(&mut object);
        let facts = crate::manifest::reviewed_facts(
            crate::types::ObjectType::Manifest,
            before.as_ref(),
            after.as_ref(),
        );
        Some(gpustack_protocol::Reviewed {
            facts: facts.into_iter().map(kubectl_fact).collect(),
            diagnostics,
        })
    }

    fn schema(&self) -> ProviderSchema {
        let config =
            provider_config("A Kubernetes cluster, as the kubectl provider configures one.")
                .attr("config_path", Attribute::optional(Type::String))
                .attr("context", Attribute::optional(Type::String))
                .attr("in_cluster", Attribute::optional(Type::Bool))
                .attr("host", Attribute::optional(Type::String))
                .attr("token", Attribute::optional(Type::String).sensitive())
                .attr("cluster_ca_certificate", Attribute::optional(Type::String))
                .attr(
                    "load_config_file",
                    Attribute::optional(Type::Bool)
                        .describe("false: only host and credentials; the kubeconfig is not read."),
                )
                .attr(
                    "apply_retry_count",
                    Attribute::optional(Type::Number)
                        .describe("Accepted: gpustack retries what the API server asks it to."),
                );
        let config = crate::connection::terraform_config(config);
        ProviderSchema {
            name: "kubectl".into(),
            config,
            resources: [("kubectl_manifest".to_owned(), manifest_schema())].into(),
            data_sources: [
                ("kubectl_file_documents".to_owned(), documents_schema(false)),
                ("kubectl_path_documents".to_owned(), documents_schema(true)),
                (
                    crate::cluster_info::KUBECTL_SERVER_VERSION.to_owned(),
                    crate::cluster_info::server_version_schema(true),
                ),
                (
                    "kubectl_filename_list".to_owned(),
                    Schema::new("The files a glob pattern matches.")
                        .attr("pattern", Attribute::required(Type::String))
                        .attr("matches", Attribute::computed(Type::list(Type::String)))
                        .attr("basenames", Attribute::computed(Type::list(Type::String))),
                ),
            ]
            .into(),
        }
    }

    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        (type_name == "kubectl_manifest")
            .then(|| manifest_of(state).ok().flatten())
            .flatten()
            .and_then(|m| {
                let state = manifest_wrapper(&m);
                crate::manifest::identity_of_manifest(&state)
            })
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == gpustack_protocol::PROVIDER_CONFIG {
            crate::connection::check_config(check);
            return;
        }
        if type_name != "kubectl_manifest" {
            return;
        }
        if check.get("yaml_body").is_some()
            && let Err(why) = manifest_of(check.config())
        {
            check.error("yaml_body", "Invalid yaml_body", why);
        }
        for (name, reason) in MANIFEST_REFUSED {
            if check
                .get(name)
                .is_some_and(|v| v.as_list().is_none_or(|l| !l.is_empty()))
            {
                check.error(
                    name,
                    "Unsupported argument",
                    format!("gpustack does not honour {name}: {reason}."),
                );
            }
        }
        let fields = check
            .get("wait_for")
            .and_then(|w| attribute(w, "field"))
            .and_then(Value::as_list)
            .map_or(0, <[Value]>::len);
        for i in 0..fields {
            if check
                .str(&format!("wait_for.field[{i}].value_type"))
                .is_some_and(|t| t != "eq")
            {
                check.error(
                    &format!("wait_for.field[{i}].value_type"),
                    "Unsupported argument value",
                    "gpustack waits for a field's exact value (value_type = \"eq\"); it does not match regular expressions.".into(),
                );
            }
        }
        check.one_of("delete_cascade", &["Background", "Foreground"]);
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let mut config = config.clone();
        if attribute(&config, "load_config_file").and_then(Value::as_bool) == Some(false) {
            set(&mut config, "config_path", Value::Null);
        }
        let cluster = Cluster::connect(&config).await.map_err(|d| vec![d])?;
        let cluster = Arc::new(cluster);
        let connected = Connected::new(cluster.clone());
        Ok(Arc::new(
            Resources::new()
                .resource(
                    "kubectl_manifest",
                    KubectlManifest {
                        inner: Objects {
                            connected,
                            ty: ObjectType::Manifest,
                        },
                    },
                )
                .data_source(
                    crate::cluster_info::KUBECTL_SERVER_VERSION,
                    crate::cluster_info::ServerVersion {
                        cluster,
                        kubectl: true,
                    },
                )
                .data_source("kubectl_file_documents", Documents)
                .data_source("kubectl_path_documents", PathDocuments)
                .data_source("kubectl_filename_list", FilenameList),
        ))
    }
}

/// The object `yaml_body` holds (with `override_namespace`); `Ok(None)` while unknown.
pub(crate) fn manifest_of(state: &Value) -> Result<Option<Json>, String> {
    let Some(body) = attribute(state, "yaml_body") else {
        return Ok(None);
    };
    if !body.is_wholly_known() {
        return Ok(None);
    }
    let text = body.as_str().unwrap_or_default();
    let documents = split_documents(text);
    let [document] = &documents[..] else {
        return Err(format!(
            "yaml_body holds {} YAML documents; a kubectl_manifest is one object (split a file with data \"kubectl_file_documents\" and for_each over its manifests).",
            documents.len()
        ));
    };
    let mut object = gpustack_cluster::yaml::from_str(document)
        .map_err(|e| format!("yaml_body is not YAML: {e}"))?;
    for field in ["apiVersion", "kind"] {
        if object.get(field).and_then(Json::as_str).is_none() {
            return Err(format!("the object in yaml_body has no {field}."));
        }
    }
    if object
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .is_none()
    {
        return Err("the object in yaml_body has no metadata.name.".into());
    }
    if let Some(namespace) = text_of(state, "override_namespace") {
        object["metadata"]["namespace"] = namespace.into();
    }
    // A Secret's stringData is applied as the data the API server turns it into, so that the
    // live object shows what was applied.
    if object.get("kind").and_then(Json::as_str) == Some("Secret")
        && let Some(Json::Object(strings)) =
            object.as_object_mut().and_then(|o| o.remove("stringData"))
    {
        use base64::Engine as _;
        let data = object.as_object_mut().map(|o| {
            o.entry("data")
                .or_insert_with(|| Json::Object(Default::default()))
        });
        if let Some(Json::Object(data)) = data {
            for (key, value) in strings {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                data.insert(
                    key,
                    Json::String(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
    Ok(Some(strip_nulls(&object)))
}

fn text_of(state: &Value, name: &str) -> Option<String> {
    text(state, name).map(str::to_owned)
}

/// The YAML documents of a text, empty ones left out, as the kubectl provider splits them.
pub(crate) fn split_documents(text: &str) -> Vec<String> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            documents.push(std::mem::take(&mut current));
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    documents.push(current);
    documents
        .into_iter()
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .collect()
}

fn manifest_wrapper(manifest: &Json) -> Value {
    Value::Object(
        [("manifest".to_owned(), Value::from_json(manifest))]
            .into_iter()
            .collect(),
    )
}

/// A fingerprint of an object's fields: what `yaml_incluster` records.
fn fingerprint(object: &Json) -> String {
    let digest = sha2::Sha256::digest(object.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `yaml_body` as the plan shows it: `sensitive_fields` and a Secret's data obfuscated.
fn parsed(manifest: &Json, state: &Value) -> String {
    let mut shown = manifest.clone();
    let mut hidden: Vec<String> = attribute(state, "sensitive_fields")
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if manifest.get("kind").and_then(Json::as_str) == Some("Secret") {
        hidden.extend(["data".to_owned(), "stringData".to_owned()]);
    }
    for path in hidden {
        let pointer = format!("/{}", path.replace('.', "/"));
        if let Some(value) = shown.pointer_mut(&pointer) {
            *value = match value {
                Json::Object(map) => Json::Object(
                    map.keys()
                        .map(|k| (k.clone(), Json::String("(sensitive value)".into())))
                        .collect(),
                ),
                _ => Json::String("(sensitive value)".into()),
            };
        }
    }
    serde_yaml_ng::to_string(&shown).unwrap_or_default()
}

/// The `kubernetes_manifest` state a `kubectl_manifest` state stands for. `live` is the prior's
/// live view: the manifest itself while `yaml_incluster` says the live fields match it.
fn manifest_state(state: &Value, prior: bool) -> Value {
    // A sensitive yaml_body is held as a digest: the object is then named by what the state
    // records of it, which is enough to read, refresh and delete it.
    let manifest = manifest_of(state)
        .ok()
        .flatten()
        .or_else(|| prior.then(|| recorded_identity(state)).flatten());
    let manifest_value = manifest.as_ref().map_or(Value::Unknown, Value::from_json);
    let object = match &manifest {
        Some(m) if prior && text(state, "yaml_incluster") == Some(fingerprint(m).as_str()) => {
            Value::from_json(m)
        }
        Some(_) if prior => Value::Object(Default::default()),
        _ => Value::Unknown,
    };
    let kind = manifest
        .as_ref()
        .and_then(|m| m.get("kind").and_then(Json::as_str).map(str::to_owned));
    let rollout = kind.as_deref().is_some_and(|k| ROLLOUT_KINDS.contains(&k))
        && attribute(state, "wait_for_rollout").and_then(Value::as_bool) != Some(false);
    let wait_for = attribute(state, "wait_for");
    let fields: indexmap::IndexMap<String, Value> = wait_for
        .and_then(|w| attribute(w, "field"))
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(|f| Some((text(f, "key")?.to_owned(), Value::string(text(f, "value")?))))
        .collect();
    let conditions = wait_for
        .and_then(|w| attribute(w, "condition"))
        .cloned()
        .unwrap_or(Value::List(Vec::new()));
    let wait =
        if rollout || !fields.is_empty() || conditions.as_list().is_some_and(|c| !c.is_empty()) {
            Value::Object(
                [
                    ("rollout", Value::Bool(rollout)),
                    ("fields", Value::Object(fields)),
                    (
                        "timeout",
                        attribute(state, "timeouts")
                            .and_then(|t| attribute(t, "create"))
                            .cloned()
                            .unwrap_or(Value::Null),
                    ),
                    ("condition", conditions),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            )
        } else {
            Value::Null
        };
    Value::Object(
        [
            ("manifest", manifest_value),
            (
                "field_manager",
                Value::string(text(state, "field_manager").unwrap_or("kubectl")),
            ),
            (
                "force_conflicts",
                attribute(state, "force_conflicts")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            (
                "delete_propagation",
                attribute(state, "delete_cascade")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            ("force_destroy", Value::Null),
            ("object", object),
            (
                "uid",
                attribute(state, "uid").cloned().unwrap_or(Value::Null),
            ),
            ("wait", wait),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

/// The object a state names by its computed api_version, kind, name and namespace.
fn recorded_identity(state: &Value) -> Option<Json> {
    let mut metadata = serde_json::json!({ "name": text(state, "name")? });
    if let Some(namespace) = text(state, "namespace") {
        metadata["namespace"] = namespace.into();
    }
    Some(serde_json::json!({
        "apiVersion": text(state, "api_version")?,
        "kind": text(state, "kind")?,
        "metadata": metadata,
    }))
}

/// A `kubectl_manifest` state with what the manifest resource answered: the live fingerprint
/// and the object's uid.
fn with_live(mut state: Value, manifest_state: &Value) -> Value {
    if let Some(object) = attribute(manifest_state, "object").filter(|o| o.is_wholly_known()) {
        let print = Value::string(fingerprint(&object.to_json_revealed()));
        set(&mut state, "yaml_incluster", print.clone());
        set(&mut state, "live_manifest_incluster", print);
    }
    let uid = attribute(manifest_state, "uid")
        .cloned()
        .unwrap_or(Value::Null);
    set(&mut state, "uid", uid.clone());
    set(&mut state, "live_uid", uid);
    state
}

/// The computed attributes a configuration gets from its yaml_body.
fn described(mut state: Value) -> Value {
    let manifest = manifest_of(&state).ok().flatten();
    let field = |pointer: &str| {
        manifest.as_ref().map_or(Value::Unknown, |m| {
            m.pointer(pointer)
                .and_then(Json::as_str)
                .map_or(Value::Null, Value::string)
        })
    };
    for (name, pointer) in [
        ("api_version", "/apiVersion"),
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
    ] {
        let value = field(pointer);
        set(&mut state, name, value);
    }
    let shown = manifest
        .as_ref()
        .map_or(Value::Unknown, |m| Value::string(parsed(m, &state)));
    set(&mut state, "yaml_body_parsed", shown);
    let secret = manifest
        .as_ref()
        .is_some_and(|m| m.get("kind").and_then(Json::as_str) == Some("Secret"))
        || attribute(&state, "sensitive_fields")
            .and_then(Value::as_list)
            .is_some_and(|l| !l.is_empty());
    if secret && let Some(body) = attribute(&state, "yaml_body").cloned() {
        set(&mut state, "yaml_body", Value::sensitive(body));
    }
    state
}

fn kubectl_path(path: &gpustack_protocol::Path) -> gpustack_protocol::Path {
    match path.first() {
        Some(PathStep::Key(root)) if root == "manifest" => vec![PathStep::Key("yaml_body".into())],
        _ => path.clone(),
    }
}

fn kubectl_fact(fact: GpuFact) -> GpuFact {
    match fact {
        GpuFact::ConfigMap(mut c) => {
            c.attribute = kubectl_path(&c.attribute);
            GpuFact::ConfigMap(c)
        }
        GpuFact::Operator(mut o) => {
            o.attribute = kubectl_path(&o.attribute);
            GpuFact::Operator(o)
        }
        GpuFact::DeviceRequest(mut r) => {
            r.attribute = kubectl_path(&r.attribute);
            GpuFact::DeviceRequest(r)
        }
        GpuFact::DraDriver(mut d) => {
            d.attribute = kubectl_path(&d.attribute);
            GpuFact::DraDriver(d)
        }
        other => other,
    }
}

fn kubectl_diagnostics(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics
        .into_iter()
        .map(|mut d| {
            if d.attribute
                .as_deref()
                .is_some_and(|a| a.starts_with("manifest"))
            {
                d.attribute = Some("yaml_body".into());
            }
            d
        })
        .collect()
}

/// `kubectl_manifest`: the manifest resource of its object, translated.
pub(crate) struct KubectlManifest {
    inner: Objects,
}

#[async_trait::async_trait]
impl Resource for KubectlManifest {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let states = request.states.clone();
        let inner = ReadResourcesRequest {
            type_name: "kubernetes_manifest".into(),
            states: states.iter().map(|s| manifest_state(s, true)).collect(),
            sensitive_paths: vec![Vec::new(); states.len()],
            seeds: vec![],
        };
        let mut response = self.inner.read(inner).await;
        response.states = response
            .states
            .into_iter()
            .zip(&states)
            .map(|(m, s)| {
                m.map(|m| {
                    if matches!(manifest_of(s), Ok(Some(_))) {
                        with_live(s.clone(), &m)
                    } else {
                        // A yaml_body held as a digest: the object is there; what its fields
                        // hold is not compared (the state cannot say what they should be).
                        s.clone()
                    }
                })
            })
            .collect();
        response.gpu_facts = response
            .gpu_facts
            .into_iter()
            .map(|(i, f)| (i, kubectl_fact(f)))
            .collect();
        response.diagnostics = kubectl_diagnostics(response.diagnostics);
        response
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let config = request.config.clone();
        let prior = request.prior_state.clone();
        let inner = PlanResourceChangeRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: prior.as_ref().map(|p| manifest_state(p, true)),
            config: manifest_state(&config, false),
            ..request
        };
        let response = self.inner.plan(inner).await;
        let mut planned = described(config);
        let manifest = manifest_of(&planned).ok().flatten();
        let print = manifest
            .as_ref()
            .map_or(Value::Unknown, |m| Value::string(fingerprint(m)));
        set(&mut planned, "yaml_incluster", print.clone());
        set(&mut planned, "live_manifest_incluster", print);
        let uid = attribute(&response.planned_state, "uid")
            .cloned()
            .unwrap_or(Value::Unknown);
        set(&mut planned, "uid", uid.clone());
        set(&mut planned, "live_uid", uid);
        let mut requires_replace = if response.requires_replace.is_empty() {
            Vec::new()
        } else {
            vec!["yaml_body (apiVersion, kind, metadata.name or metadata.namespace)".to_owned()]
        };
        if requires_replace.is_empty()
            && attribute(&planned, "force_new").and_then(Value::as_bool) == Some(true)
            && let Some(prior) = &prior
            && (manifest_of(prior).ok().flatten() != manifest
                || text(prior, "yaml_incluster") != text(&planned, "yaml_incluster"))
        {
            requires_replace.push("yaml_body (force_new = true)".to_owned());
        }
        PlanResourceChangeResponse {
            planned_state: planned,
            requires_replace,
            gpu_facts: response.gpu_facts.into_iter().map(kubectl_fact).collect(),
            existing: response.existing,
            diagnostics: kubectl_diagnostics(response.diagnostics),
            order: response.order,
        }
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let planned = request.planned_state.clone();
        let prior = request.prior_state.clone();
        // apply_only: a destroy forgets the object and leaves it in the cluster.
        if planned.is_none()
            && prior
                .as_ref()
                .and_then(|p| attribute(p, "apply_only"))
                .and_then(Value::as_bool)
                == Some(true)
        {
            return ApplyResourceChangeResponse::default();
        }
        let inner = ApplyResourceChangeRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: prior.as_ref().map(|p| manifest_state(p, true)),
            planned_state: planned.as_ref().map(|p| manifest_state(p, false)),
            sensitive_paths: Vec::new(),
            ..request
        };
        let response = self.inner.apply(inner).await;
        let new_state = match (response.new_state, planned) {
            (Some(state), Some(planned)) => Some(with_live(described(planned), &state)),
            (Some(_), None) => prior,
            (None, _) => None,
        };
        ApplyResourceChangeResponse {
            new_state,
            diagnostics: kubectl_diagnostics(response.diagnostics),
        }
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let state = self.inner.import(id).await?;
        let manifest = attribute(&state, "manifest")
            .map(Value::to_json_revealed)
            .unwrap_or(Json::Null);
        let schema = manifest_schema();
        let mut imported = Value::Object(
            schema
                .attributes
                .keys()
                .map(|k| (k.clone(), Value::Null))
                .chain(schema.blocks.keys().map(|k| (k.clone(), Value::Null)))
                .collect(),
        );
        set(
            &mut imported,
            "yaml_body",
            Value::string(serde_yaml_ng::to_string(&manifest).unwrap_or_default()),
        );
        Ok(with_live(described(imported), &state))
    }

    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        if attribute(&request.prior_state, "apply_only").and_then(Value::as_bool) == Some(true) {
            return PlanDeleteResponse::default();
        }
        let inner = PlanDeleteRequest {
            type_name: "kubernetes_manifest".into(),
            prior_state: manifest_state(&request.prior_state, true),
            ..request
        };
        self.inner.plan_delete(inner).await
    }
}

fn documents_value(texts: Vec<String>) -> (Value, Value) {
    let mut manifests = indexmap::IndexMap::new();
    let mut budget = gpustack_protocol::limits::DecodeCost::default();
    for document in &texts {
        let object =
            gpustack_cluster::yaml::from_str_within(document, &mut budget).unwrap_or(Json::Null);
        let get = |p: &str| object.pointer(p).and_then(Json::as_str).unwrap_or_default();
        let group = get("/apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        let mut key = format!(
            "/apis/{}/{}",
            get("/apiVersion"),
            get("/kind").to_lowercase()
        );
        if group.is_empty() {
            key = format!(
                "/api/{}/{}",
                get("/apiVersion"),
                get("/kind").to_lowercase()
            );
        }
        if let Some(ns) = object.pointer("/metadata/namespace").and_then(Json::as_str) {
            key = format!("{key}s/{ns}");
        } else {
            key.push('s');
        }
        key = format!("{key}/{}", get("/metadata/name"));
        manifests.insert(key, Value::string(document.clone()));
    }
    (
        Value::List(texts.into_iter().map(Value::string).collect()),
        Value::Object(manifests),
    )
}

struct Documents;

#[async_trait::async_trait]
impl DataSource for Documents {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let texts = split_documents(text(&config, "content").unwrap_or_default());
        let (documents, manifests) = documents_value(texts);
        let mut state = config;
        set(&mut state, "documents", documents);
        set(&mut state, "manifests", manifests);
        ReadDataSourceResponse {
            state,
            diagnostics: vec![],
        }
    }
}

/// The files a pattern matches, sorted: `*` and `?` within a name, `**` across directories.
fn glob(pattern: &str) -> Result<Vec<std::path::PathBuf>, String> {
    let (base, rest) = match pattern.find(['*', '?', '[']) {
        Some(i) => {
            let cut = pattern[..i].rfind('/').map_or(0, |j| j + 1);
            (&pattern[..cut], &pattern[cut..])
        }
        None => {
            return Ok(vec![std::path::PathBuf::from(pattern)]
                .into_iter()
                .filter(|p| p.is_file())
                .collect());
        }
    };
    let base = if base.is_empty() {
        "."
    } else {
        base.trim_end_matches('/')
    };
    let mut found = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(base)];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path
                    .strip_prefix(base)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                if matches(rest, &relative) {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Glob matching: `**/` any directories, `*` any run within a name, `?` one character.
fn matches(pattern: &str, name: &str) -> bool {
    if let Some(rest) = pattern.strip_prefix("**/") {
        return matches(rest, name)
            || name
                .split_once('/')
                .is_some_and(|(_, tail)| matches(pattern, tail));
    }
    let (mut p, mut n) = (pattern.chars().peekable(), name);
    while let Some(c) = p.next() {
        match c {
            '*' => {
                let rest: String = p.collect();
                return (0..=n.len())
                    .filter(|i| n.is_char_boundary(*i))
                    .take_while(|i| !n[..*i].contains('/'))
                    .any(|i| matches(&rest, &n[i..]));
            }
            '?' => {
                let mut chars = n.chars();
                match chars.next() {
                    Some(ch) if ch != '/' => n = chars.as_str(),
                    _ => return false,
                }
            }
            c => match n.strip_prefix(c) {
                Some(rest) => n = rest,
                None => return false,
            },
        }
    }
    n.is_empty()
}

/// `${name}` replaced by its value, as the kubectl provider templates a file.
fn template(text: &str, vars: &indexmap::IndexMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars {
        out = out.replace(&format!("${{{name}}}"), value);
    }
    out
}

struct PathDocuments;

#[async_trait::async_trait]
impl DataSource for PathDocuments {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let pattern = text(&config, "pattern").unwrap_or_default();
        let files = match glob(pattern) {
            Ok(files) => files,
            Err(e) => {
                return ReadDataSourceResponse {
                    state: Value::Null,
                    diagnostics: vec![
                        Diagnostic::error("Cannot read the files", e).with_attribute("pattern"),
                    ],
                };
            }
        };
        let mut vars = indexmap::IndexMap::new();
        for name in ["vars", "sensitive_vars"] {
            for (k, v) in attribute(&config, name)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                vars.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
            }
        }
        let raw = attribute(&config, "disable_template").and_then(Value::as_bool) == Some(true);
        let mut texts = Vec::new();
        for file in files {
            // As file() reads: a regular file only, at most what a string may hold.
            let limit = gpustack_protocol::limits::MAX_STRING_BYTES as u64;
            match gpustack_fs::read_text_bounded(&file, limit) {
                Ok(content) => {
                    let content = if raw {
                        content
                    } else {
                        template(&content, &vars)
                    };
                    texts.extend(split_documents(&content));
                }
                Err(e) => {
                    return ReadDataSourceResponse {
                        state: Value::Null,
                        diagnostics: vec![
                            Diagnostic::error(
                                "Cannot read the files",
                                format!("{}: {e}", file.display()),
                            )
                            .with_attribute("pattern"),
                        ],
                    };
                }
            }
        }
        let (documents, manifests) = documents_value(texts);
        let sensitive = attribute(&config, "sensitive_vars")
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty());
        let mark = |v: Value| if sensitive { Value::sensitive(v) } else { v };
        let mut state = config;
        set(&mut state, "documents", mark(documents));
        set(&mut state, "manifests", mark(manifests));
        ReadDataSourceResponse {
            state,
            diagnostics: vec![],
        }
    }
}

struct FilenameList;

#[async_trait::async_trait]
impl DataSource for FilenameList {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let pattern = text(&config, "pattern").unwrap_or_default();
        match glob(pattern) {
            Ok(files) => {
                let mut state = config;
                set(
                    &mut state,
                    "matches",
                    Value::List(
                        files
                            .iter()
                            .map(|f| Value::string(f.display().to_string()))
                            .collect(),
                    ),
                );
                set(
                    &mut state,
                    "basenames",
                    Value::List(
                        files
                            .iter()
                            .filter_map(|f| f.file_name())
                            .map(|n| Value::string(n.to_string_lossy()))
                            .collect(),
                    ),
                );
                ReadDataSourceResponse {
                    state,
                    diagnostics: vec![],
                }
            }
            Err(e) => ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![
                    Diagnostic::error("Cannot read the files", e).with_attribute("pattern"),
                ],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_yaml_ng stops nested aliases at a hundred times the document's events, and
    /// nesting at 128 levels: a hostile `yaml_body` is an error, not an exhausted memory.
    #[test]
    fn a_yaml_body_of_nested_aliases_or_deep_nesting_is_refused() {
        let mut laughs = vec![
            "apiVersion: v1".to_owned(),
            "kind: ConfigMap".to_owned(),
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"
                .to_owned(),
        ];
        for i in 1..12u8 {
            let (prev, cur) = ((b'a' + i - 1) as char, (b'a' + i) as char);
            laughs.push(format!(
                "{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]"
            ));
        }
        let deep = format!(
            "apiVersion: v1\nkind: ConfigMap\ndata: {}{}\n",
            "[".repeat(200),
            "]".repeat(200)
        );
        for body in [laughs.join("\n"), deep] {
            let state = Value::Object(
                [("yaml_body".to_owned(), Value::String(body))]
                    .into_iter()
                    .collect(),
            );
            let err = manifest_of(&state).unwrap_err();
            assert!(
                err.contains("repetition limit") || err.contains("recursion limit"),
                "{err}"
            );
        }
    }

    /// serde_yaml_ng's own limits count aliases, not what they copy: one 2 MB scalar named
    /// by 3,000 aliases stays under them and would build 6 GB.
    #[test]
    fn a_yaml_body_whose_aliases_copy_a_long_scalar_is_refused_at_the_text_limit() {
        let aliases: Vec<String> = (0..3000).map(|i| format!("k{i}: *a")).collect();
        let body = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x: &a \"{}\"\ndata: {{{}}}\n",
            "x".repeat(2_000_000),
            aliases.join(",")
        );
        let state = Value::Object(
            [("yaml_body".to_owned(), Value::String(body))]
                .into_iter()
                .collect(),
        );
        let err = manifest_of(&state).unwrap_err();
        assert!(err.contains("more than 64 MiB of text"), "{err}");
        assert!(err.contains("at line 6"), "{err}");
    }

    #[test]
    fn documents_split_as_the_kubectl_provider_splits_them() {
        let text = "# header\n---\na: 1\n---\n\n---\nb: 2\n--- \n";
        assert_eq!(split_documents(text), ["a: 1\n", "b: 2\n"]);
    }

    #[test]
    fn globs_match_names_and_directories() {
        assert!(matches("*.yaml", "a.yaml"));
        assert!(!matches("*.yaml", "d/a.yaml"));
        assert!(matches("**/*.yaml", "d/e/a.yaml"));
        assert!(matches("**/*.yaml", "a.yaml"));
        assert!(matches("a?.yml", "ab.yml"));
    }

    #[test]
    fn yaml_body_is_one_named_object() {
        let state = |body: &str| {
            Value::Object(
                [("yaml_body".to_owned(), Value::string(body))]
                    .into_iter()
                    .collect(),
            )
        };
        assert!(
            manifest_of(&state("kind: A\napiVersion: v1\nmetadata: {name: x}\n"))
                .unwrap()
                .is_some()
        );
        assert!(
            manifest_of(&state("kind: A\napiVersion: v1\n"))
                .unwrap_err()
                .contains("metadata.name")
        );
        assert!(
            manifest_of(&state("a: 1\n---\nb: 2\n"))
                .unwrap_err()
                .contains("2 YAML documents")
        );
    }
}
