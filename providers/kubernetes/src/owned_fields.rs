//! Terraform's resources that own some fields of an object someone else made: keys of a
//! ConfigMap's or a Secret's `data` (`kubernetes_config_map_v1_data`,
//! `kubernetes_secret_v1_data`), the variables of one container of a workload
//! (`kubernetes_env`, as `kubectl set env` sets them), and the settings of the service account
//! Kubernetes makes in every namespace (`kubernetes_default_service_account(_v1)`).
//!
//! Each is a `kubernetes_patch` of those fields under its own field manager, so that the
//! rules of partial ownership are the patch's alone: the object must exist (it is never
//! created), fields another manager owns conflict unless `force`, a refresh compares only
//! this resource's fields, and destroy drops only them. A ConfigMap's `data` and a
//! container's `env` are maps and keyed lists for server-side apply, so two such resources
//! with different managers share one object without removing each other's keys.

use crate::manifest::Objects;
use crate::typed::{fields_schema, first, from_json, one_block, to_json};
use crate::typed_fields::CORE_V1_ENV_VAR;
use base64::Engine as _;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    NestedBlock, PlanDeleteRequest, PlanDeleteResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::objects::project;
use gpustack_provider_sdk::resource::Resource;
use indexmap::IndexMap;
use serde_json::{Value as Json, json};

/// Where a variable's fields are named in [`crate::typed::RENAMES`]' terms.
const ENV_HOLDER: &str = "Container.env";

/// The kinds `kubernetes_env` sets variables of, as Terraform's provider accepts them
/// (compared without case); all but a CronJob hold their pod spec at `spec.template.spec`.
const ENV_KINDS: &[&str] = &[
    "CronJob",
    "Deployment",
    "DaemonSet",
    "ReplicationController",
    "StatefulSet",
    "ReplicaSet",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owned {
    ConfigMapData,
    SecretData,
    Env,
    DefaultServiceAccount,
}

/// The names of the resource types, with what each stands for.
pub(crate) const TYPES: [(&str, Owned); 5] = [
    ("kubernetes_config_map_v1_data", Owned::ConfigMapData),
    ("kubernetes_secret_v1_data", Owned::SecretData),
    ("kubernetes_env", Owned::Env),
    (
        "kubernetes_default_service_account",
        Owned::DefaultServiceAccount,
    ),
    (
        "kubernetes_default_service_account_v1",
        Owned::DefaultServiceAccount,
    ),
];

/// The service account's fields this resource sets, as a ServiceAccount names them.
const SERVICE_ACCOUNT_FIELDS: [(&str, &str); 2] = [
    ("secret", "secrets"),
    ("image_pull_secret", "imagePullSecrets"),
];

impl Owned {
    pub(crate) fn of(type_name: &str) -> Option<Self> {
        TYPES
            .iter()
            .find(|(name, _)| *name == type_name)
            .map(|(_, owned)| *owned)
    }

    fn type_name(self) -> &'static str {
        TYPES
            .iter()
            .find(|(_, owned)| *owned == self)
            .map_or("", |(name, _)| name)
    }

    /// The field manager when none is configured (Terraform's is "Terraform"): gpustack's, one
    /// per resource type, as for labels, patches and taints.
    fn default_field_manager(self) -> &'static str {
        match self {
            Self::ConfigMapData => "gpustack-config-map-data",
            Self::SecretData => "gpustack-secret-data",
            Self::Env => "gpustack-env",
            Self::DefaultServiceAccount => "gpustack-default-service-account",
        }
    }

    /// The object's apiVersion and kind: fixed, or for `kubernetes_env` as configured.
    fn api_version_and_kind(self, typed: &Value) -> (Option<String>, Option<String>) {
        match self {
            Self::ConfigMapData => (Some("v1".into()), Some("ConfigMap".into())),
            Self::SecretData => (Some("v1".into()), Some("Secret".into())),
            Self::DefaultServiceAccount => (Some("v1".into()), Some("ServiceAccount".into())),
            Self::Env => (
                text(typed, "api_version").map(str::to_owned),
                text(typed, "kind").map(|k| canonical_kind(k).to_owned()),
            ),
        }
    }
}

/// A workload kind as the API names it, whatever its case in the configuration (Terraform's
/// provider compares without case: `replicationcontroller`).
fn canonical_kind(kind: &str) -> &str {
    ENV_KINDS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(kind))
        .copied()
        .unwrap_or(kind)
}

pub(crate) fn schema(owned: Owned) -> Schema {
    let mut metadata = Schema::new("The object whose fields this resource owns.").attr(
        "name",
        if owned == Owned::DefaultServiceAccount {
            Attribute::optional_computed(Type::String)
                .force_new()
                .describe("Default \"default\".")
        } else {
            Attribute::required(Type::String).force_new()
        },
    );
    metadata = metadata.attr(
        "namespace",
        Attribute::optional_computed(Type::String)
            .force_new()
            .describe(match owned {
                Owned::Env => "The object's namespace; none for a cluster-scoped kind.",
                _ => "Default \"default\".",
            }),
    );
    if owned == Owned::DefaultServiceAccount {
        metadata = metadata
            .attr("labels", Attribute::optional(Type::map(Type::String)))
            .attr("annotations", Attribute::optional(Type::map(Type::String)));
    }
    let mut schema = Schema::new(match owned {
        Owned::ConfigMapData => {
            "Keys of the data of a ConfigMap someone else made, applied server-side under this resource's field manager."
        }
        Owned::DefaultServiceAccount => {
            "The settings of the service account Kubernetes makes in a namespace (its labels, annotations, secrets, image pull secrets and token mounting), applied server-side under this resource's field manager once it exists."
        }
        Owned::SecretData => {
            "Keys of the data of a Secret someone else made, applied server-side under this resource's field manager."
        }
        Owned::Env => {
            "Environment variables of one container of a workload someone else made, as `kubectl set env` sets them."
        }
    });
    one_block(&mut schema, "metadata", metadata, true);
    schema = match owned {
        Owned::ConfigMapData => schema.attr("data", Attribute::required(Type::map(Type::String))),
        // Sensitive value by value (see `planned`), as a typed Secret's data: the state holds
        // a digest per key, and a refresh names the keys it reads back.
        Owned::SecretData => schema.attr(
            "data",
            Attribute::required(Type::map(Type::String))
                .describe("Values as text, each sensitive; sent base64-encoded."),
        ),
        Owned::Env => {
            let variable = fields_schema(Schema::new(""), ENV_HOLDER, CORE_V1_ENV_VAR);
            let mut schema = schema
                .attr("api_version", Attribute::required(Type::String).force_new())
                .attr("kind", Attribute::required(Type::String).force_new())
                .attr("container", Attribute::optional(Type::String).force_new())
                .attr(
                    "init_container",
                    Attribute::optional(Type::String).force_new(),
                );
            schema.blocks.insert(
                "env".to_owned(),
                NestedBlock {
                    nesting: BlockNesting::List,
                    min_items: 1,
                    max_items: None,
                    block: variable,
                    also_argument: false,
                },
            );
            schema
        }
        Owned::DefaultServiceAccount => {
            let name = Schema::new("").attr("name", Attribute::optional(Type::String));
            let mut schema = schema
                .attr(
                    "automount_service_account_token",
                    Attribute::optional(Type::Bool).describe("Default true, as in Terraform."),
                )
                .attr(
                    "default_secret_name",
                    Attribute::computed(Type::String).describe(
                        "The token Secret Kubernetes made for it; empty since Kubernetes 1.24 makes none.",
                    ),
                );
            for (block, _) in SERVICE_ACCOUNT_FIELDS {
                schema = schema.block(block, BlockNesting::List, name.clone());
            }
            schema.block(
                "timeouts",
                BlockNesting::Single,
                Schema::new("How long apply waits for the service account to be made.")
                    .attr("create", Attribute::optional(Type::String)),
            )
        }
    };
    schema
        .attr(
            "force",
            Attribute::optional(Type::Bool)
                .describe("Take over fields another field manager owns, instead of a conflict."),
        )
        .attr(
            "field_manager",
            Attribute::optional_computed(Type::String).describe(format!(
                "Server-side apply field manager, default \"{}\" (Terraform's: \"Terraform\").",
                owned.default_field_manager()
            )),
        )
}

pub(crate) fn check(owned: Owned, check: &mut Checker<'_>) {
    if owned != Owned::Env {
        return;
    }
    let container = check.get("container").is_some();
    let init = check.get("init_container").is_some();
    if container == init {
        check.error(
            "container",
            "Invalid combination of arguments",
            "Exactly one of container and init_container must be set: the container whose variables this resource sets.".into(),
        );
    }
    if let Some(kind) = check.get("kind").and_then(Value::as_str) {
        if kind.eq_ignore_ascii_case("Pod") {
            check.error(
                "kind",
                "Unsupported argument value",
                "A Pod's containers cannot change their env once it runs (the API server refuses it): set the variables where the pod is made, or on the workload that makes it.".into(),
            );
        } else if !ENV_KINDS.iter().any(|k| k.eq_ignore_ascii_case(kind)) {
            check.error(
                "kind",
                "Unsupported argument value",
                format!(
                    "kubernetes_env sets the variables of a workload's pod template: kind must be one of {}.",
                    ENV_KINDS.join(", ")
                ),
            );
        }
    }
}

/// The container the variables belong to, and the list it is in (`containers` or
/// `initContainers`).
fn container(typed: &Value) -> Option<(&str, &'static str)> {
    text(typed, "container")
        .map(|c| (c, "containers"))
        .or_else(|| text(typed, "init_container").map(|c| (c, "initContainers")))
}

/// Where a kind holds its pod spec.
fn pod_spec_path(kind: &str) -> &'static [&'static str] {
    if kind == "CronJob" {
        &["spec", "jobTemplate", "spec", "template", "spec"]
    } else {
        &["spec", "template", "spec"]
    }
}

/// The fields this resource owns, as server-side apply sends them; `None` while any is
/// unknown.
fn owned_fields(owned: Owned, typed: &Value) -> Option<Json> {
    match owned {
        Owned::ConfigMapData | Owned::SecretData => {
            let data = attribute(typed, "data").filter(|d| d.is_wholly_known())?;
            let data = data.to_json_revealed();
            let data = if owned == Owned::SecretData {
                let encoded = data
                    .as_object()?
                    .iter()
                    .map(|(k, v)| {
                        let text = v.as_str().unwrap_or_default();
                        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                        (k.clone(), Json::String(encoded))
                    })
                    .collect();
                Json::Object(encoded)
            } else {
                data
            };
            Some(json!({ "data": data }))
        }
        Owned::Env => {
            let variables = attribute(typed, "env").filter(|e| e.is_wholly_known())?;
            let (name, list) = container(typed)?;
            let (_, kind) = owned.api_version_and_kind(typed);
            let env: Vec<Json> = variables
                .as_list()?
                .iter()
                .map(|v| to_json(ENV_HOLDER, CORE_V1_ENV_VAR, v))
                .collect();
            let mut fields = json!({ list: [{ "name": name, "env": env }] });
            for step in pod_spec_path(&kind?).iter().rev() {
                fields = json!({ *step: fields });
            }
            Some(fields)
        }
        Owned::DefaultServiceAccount => {
            if !typed.is_wholly_known() {
                return None;
            }
            let metadata = first(attribute(typed, "metadata"));
            let mut meta = serde_json::Map::new();
            for key in ["labels", "annotations"] {
                if let Some(v) = metadata
                    .and_then(|m| attribute(m, key))
                    .filter(|v| !v.is_null())
                {
                    meta.insert(key.to_owned(), v.to_json_revealed());
                }
            }
            let mut fields = json!({
                "automountServiceAccountToken": attribute(typed, "automount_service_account_token")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            });
            if !meta.is_empty() {
                fields["metadata"] = Json::Object(meta);
            }
            for (block, field) in SERVICE_ACCOUNT_FIELDS {
                let names: Vec<Json> = attribute(typed, block)
                    .and_then(Value::as_list)
                    .into_iter()
                    .flatten()
                    .filter_map(|b| text(b, "name"))
                    .map(|n| json!({ "name": n }))
                    .collect();
                if !names.is_empty() {
                    fields[field] = Json::Array(names);
                }
            }
            Some(fields)
        }
    }
}

/// The `kubernetes_patch` state `typed` stands for.
fn patch_state(owned: Owned, typed: &Value) -> Value {
    let metadata = first(attribute(typed, "metadata"));
    let named = |key: &str| {
        metadata
            .and_then(|m| attribute(m, key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (api_version, kind) = owned.api_version_and_kind(typed);
    let known = |v: Option<String>| v.map_or(Value::Unknown, Value::string);
    let force = attribute(typed, "force").and_then(Value::as_bool) == Some(true);
    Value::Object(
        [
            ("api_version", known(api_version)),
            ("kind", known(kind)),
            ("name", Value::Null),
            ("namespace", Value::Null),
            (
                "metadata",
                Value::List(vec![Value::Object(IndexMap::from([
                    ("name".to_owned(), named("name")),
                    ("namespace".to_owned(), named("namespace")),
                ]))]),
            ),
            (
                "patch",
                owned_fields(owned, typed).map_or(Value::Unknown, |f| Value::from_json(&f)),
            ),
            ("live", Value::Null),
            ("field_manager", Value::string(field_manager(owned, typed))),
            ("force", Value::Null),
            ("force_conflicts", Value::Bool(force)),
            ("wait", Value::Null),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

fn field_manager(owned: Owned, typed: &Value) -> String {
    text(typed, "field_manager")
        .unwrap_or(owned.default_field_manager())
        .to_owned()
}

/// `typed` with the values its fields have in a patch state's live view: a key or a variable
/// no longer there is left out, so that the next plan puts it back.
fn with_live(owned: Owned, mut typed: Value, patch_state: &Value) -> Value {
    let live = attribute(patch_state, "live")
        .map(Value::to_json_revealed)
        .unwrap_or(Json::Null);
    match owned {
        Owned::ConfigMapData | Owned::SecretData => {
            let data = live
                .get("data")
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let text = v.as_str().unwrap_or_default();
                    let value = if owned == Owned::SecretData {
                        let decoded = base64::engine::general_purpose::STANDARD
                            .decode(text)
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default();
                        Value::sensitive(Value::string(decoded))
                    } else {
                        Value::string(text)
                    };
                    (k.clone(), value)
                })
                .collect();
            set(&mut typed, "data", Value::Object(data));
        }
        Owned::DefaultServiceAccount => {
            if let Some(Value::List(blocks)) = attribute(&typed, "metadata").cloned()
                && let Some(mut metadata) = blocks.into_iter().next()
            {
                for key in ["labels", "annotations"] {
                    if attribute(&metadata, key).is_some_and(|v| !v.is_null()) {
                        let value = live
                            .pointer(&format!("/metadata/{key}"))
                            .map_or_else(|| Value::Object(Default::default()), Value::from_json);
                        set(&mut metadata, key, value);
                    }
                }
                set(&mut typed, "metadata", Value::List(vec![metadata]));
            }
            if let Some(automount) = live
                .get("automountServiceAccountToken")
                .and_then(Json::as_bool)
            {
                set(
                    &mut typed,
                    "automount_service_account_token",
                    Value::Bool(automount),
                );
            }
            for (block, field) in SERVICE_ACCOUNT_FIELDS {
                let names: Vec<Value> = live
                    .get(field)
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.get("name").and_then(Json::as_str))
                    .map(|n| Value::Object(IndexMap::from([("name".to_owned(), Value::string(n))])))
                    .collect();
                set(&mut typed, block, Value::List(names));
            }
        }
        Owned::Env => {
            let Some((name, list)) = container(&typed) else {
                return typed;
            };
            let (_, kind) = owned.api_version_and_kind(&typed);
            let spec = pod_spec_path(kind.as_deref().unwrap_or_default())
                .iter()
                .try_fold(&live, |at, step| at.get(*step));
            let live_env: Vec<Json> = spec
                .and_then(|s| s.get(list))
                .and_then(Json::as_array)
                .and_then(|cs| cs.iter().find(|c| c.get("name") == Some(&json!(name))))
                .and_then(|c| c.get("env"))
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            let configured = attribute(&typed, "env")
                .and_then(Value::as_list)
                .map(<[Value]>::to_vec)
                .unwrap_or_default();
            let env = configured
                .into_iter()
                .filter_map(|mut variable| {
                    let name = text(&variable, "name")?.to_owned();
                    let found = live_env
                        .iter()
                        .find(|l| l.get("name").and_then(Json::as_str) == Some(&name))?;
                    // Only what the variable sets: the live list is compared by name, not by
                    // position, so the defaults the API server adds (a field_ref's
                    // api_version) are left out here.
                    let wanted = to_json(ENV_HOLDER, CORE_V1_ENV_VAR, &variable);
                    let found = project(&wanted, found);
                    from_json(ENV_HOLDER, CORE_V1_ENV_VAR, &found, &mut variable);
                    Some(variable)
                })
                .collect();
            set(&mut typed, "env", Value::List(env));
        }
    }
    typed
}

/// The configuration as planned: the field manager and a data resource's namespace filled in
/// (a default service account's name and token mounting too), a Secret's values sensitive.
fn planned(owned: Owned, config: Value) -> Value {
    let mut planned = config;
    let manager = field_manager(owned, &planned);
    set(&mut planned, "field_manager", Value::string(manager));
    if owned == Owned::DefaultServiceAccount {
        if attribute(&planned, "automount_service_account_token").is_none_or(Value::is_null) {
            set(
                &mut planned,
                "automount_service_account_token",
                Value::Bool(true),
            );
        }
        // Kubernetes makes no token Secret for a service account since 1.24.
        set(&mut planned, "default_secret_name", Value::string(""));
        for (block, _) in SERVICE_ACCOUNT_FIELDS {
            if attribute(&planned, block).is_none_or(Value::is_null) {
                set(&mut planned, block, Value::List(Vec::new()));
            }
        }
        if let Some(Value::List(blocks)) = attribute(&planned, "metadata").cloned()
            && let Some(mut metadata) = blocks.into_iter().next()
            && attribute(&metadata, "name").is_none_or(Value::is_null)
        {
            set(&mut metadata, "name", Value::string("default"));
            set(&mut planned, "metadata", Value::List(vec![metadata]));
        }
    }
    if owned != Owned::Env
        && let Some(Value::List(blocks)) = attribute(&planned, "metadata").cloned()
        && let Some(mut metadata) = blocks.into_iter().next()
    {
        if attribute(&metadata, "namespace").is_none_or(Value::is_null) {
            set(&mut metadata, "namespace", Value::string("default"));
        }
        set(&mut planned, "metadata", Value::List(vec![metadata]));
    }
    if owned == Owned::Env
        && let Some(Value::List(blocks)) = attribute(&planned, "metadata").cloned()
        && let Some(mut metadata) = blocks.into_iter().next()
        && attribute(&metadata, "namespace").is_none()
    {
        set(&mut metadata, "namespace", Value::Null);
        set(&mut planned, "metadata", Value::List(vec![metadata]));
    }
    if owned == Owned::SecretData {
        crate::typed::conceal_values(&mut planned, "data");
    }
    planned
}

/// One of the resource types, through the `kubernetes_patch` resource.
pub(crate) struct OwnedFields {
    pub(crate) inner: Objects,
    pub(crate) owned: Owned,
}

impl OwnedFields {
    /// Waits until Kubernetes has made the namespace's service account (a namespace made in
    /// the same apply gets it a moment later), as Terraform's provider waits.
    async fn made(&self, typed: &Value) -> Result<(), String> {
        let metadata = first(attribute(typed, "metadata"));
        let named = |key: &str, default: &str| {
            metadata
                .and_then(|m| text(m, key))
                .unwrap_or(default)
                .to_owned()
        };
        let (name, namespace) = (named("name", "default"), named("namespace", "default"));
        let limit = crate::cluster::duration(
            attribute(typed, "timeouts")
                .and_then(|t| attribute(t, "create"))
                .and_then(Value::as_str),
            std::time::Duration::from_secs(30),
        )
        .map_err(|e| gpustack_protocol::error_chain(&e))?;
        let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
            kube::Api::namespaced(self.inner.connected.cluster().client.clone(), &namespace);
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match accounts.get_opt(&name).await {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Ok(None) => {
                    return Err(format!(
                        "Namespace {namespace} has no service account {name} after {}.",
                        humantime::format_duration(limit)
                    ));
                }
                Err(e) => return Err(crate::cluster::api_error(&e)),
            }
        }
    }
}

#[async_trait::async_trait]
impl Resource for OwnedFields {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        crate::manifest::patch_read(
            &self.inner,
            request,
            |s| patch_state(self.owned, s),
            |typed, patch| with_live(self.owned, typed, patch),
        )
        .await
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let planned = planned(self.owned, request.config.clone());
        let inner = PlanResourceChangeRequest {
            type_name: "kubernetes_patch".into(),
            prior_state: request
                .prior_state
                .as_ref()
                .map(|p| patch_state(self.owned, p)),
            config: patch_state(self.owned, &planned),
            ..request
        };
        let response = self.inner.plan(inner).await;
        crate::manifest::patch_plan(
            planned,
            response,
            "metadata (name or namespace), api_version or kind",
        )
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let planned = request.planned_state.clone();
        let prior = request.prior_state.clone();
        if self.owned == Owned::DefaultServiceAccount
            && prior.is_none()
            && let Some(planned) = &planned
            && let Err(why) = self.made(planned).await
        {
            return ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: vec![Diagnostic::error("No default service account", why)],
            };
        }
        let inner = ApplyResourceChangeRequest {
            type_name: "kubernetes_patch".into(),
            prior_state: prior.as_ref().map(|p| patch_state(self.owned, p)),
            planned_state: planned.as_ref().map(|p| patch_state(self.owned, p)),
            sensitive_paths: Vec::new(),
            ..request
        };
        let response = self.inner.apply(inner).await;
        let new_state = match (response.new_state, planned) {
            (Some(state), Some(planned)) => Some(with_live(self.owned, planned, &state)),
            // A failed delete keeps the prior state as it was.
            (Some(_), None) => prior,
            (None, _) => None,
        };
        ApplyResourceChangeResponse {
            new_state,
            diagnostics: response.diagnostics,
        }
    }

    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let inner = PlanDeleteRequest {
            type_name: "kubernetes_patch".into(),
            prior_state: patch_state(self.owned, &request.prior_state),
            ..request
        };
        self.inner.plan_delete(inner).await
    }

    async fn import(&self, _id: &str) -> Result<Value, Vec<Diagnostic>> {
        Err(vec![Diagnostic::error(
            "Import not supported",
            format!(
                "{} owns fields of an object someone else made; there is nothing of its own to import: write it and apply (force = true takes over fields another manager owns).",
                self.owned.type_name()
            ),
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(hcl_like: Json) -> Value {
        Value::from_json(&hcl_like)
    }

    #[test]
    fn env_is_applied_into_the_named_container_of_the_pod_template() {
        let env = typed(json!({
            "metadata": [{"name": "train", "namespace": "ml"}],
            "api_version": "batch/v1",
            "kind": "cronjob",
            "container": "trainer",
            "env": [{"name": "NCCL_DEBUG", "value": "INFO", "value_from": null}],
        }));
        let fields = owned_fields(Owned::Env, &env).unwrap();
        assert_eq!(
            fields,
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "trainer", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}
            ]}}}}}})
        );
        let state = patch_state(Owned::Env, &env);
        assert_eq!(text(&state, "kind"), Some("CronJob"));
    }

    #[test]
    fn a_refresh_keeps_only_the_resources_own_variables_and_keys() {
        let env = typed(json!({
            "metadata": [{"name": "infer"}],
            "api_version": "apps/v1",
            "kind": "Deployment",
            "init_container": "fetch",
            "env": [
                {"name": "B", "value": "2", "value_from": null},
                {"name": "GONE", "value": "x", "value_from": null},
            ],
        }));
        let live = typed(
            json!({"live": {"spec": {"template": {"spec": {"initContainers": [
                {"name": "other", "env": [{"name": "B", "value": "other's"}]},
                {"name": "fetch", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]},
            ]}}}}}),
        );
        let refreshed = with_live(Owned::Env, env, &live);
        let names: Vec<_> = attribute(&refreshed, "env")
            .and_then(Value::as_list)
            .unwrap()
            .iter()
            .map(|v| (text(v, "name").unwrap(), text(v, "value").unwrap()))
            .collect();
        assert_eq!(names, [("B", "3")]);

        let secret = typed(json!({"metadata": [{"name": "creds"}], "data": {"token": "s3cret"}}));
        let fields = owned_fields(Owned::SecretData, &secret).unwrap();
        assert_eq!(fields, json!({"data": {"token": "czNjcmV0"}}));
        let live = typed(json!({"live": {"data": {"token": "bmV3"}}}));
        let refreshed = with_live(Owned::SecretData, secret, &live);
        let token = attribute(&refreshed, "data")
            .and_then(|d| attribute(d, "token"))
            .unwrap();
        assert!(token.is_sensitive());
        assert_eq!(token.to_json_revealed(), json!("new"));
    }
}
