//! The kubernetes provider's data sources as Terraform's has them, besides `kubernetes_nodes`:
//! the typed ones (`data "kubernetes_config_map_v1"`, ...), `kubernetes_resource` and
//! `kubernetes_resources`. Each read is one request — a GET of the object by name, or one
//! LIST page — never a request per object; `kubernetes_resource(s)`, which name any kind,
//! find it through API discovery first (one request per apiVersion and run).

use crate::cluster::{Cluster, api_error};
use crate::typed::Kind;
use gpustack_protocol::{Attribute, Diagnostic, ReadDataSourceResponse, Schema, Type, Value};
use gpustack_provider_sdk::check::{attribute, set, text};
use gpustack_provider_sdk::resource::DataSource;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value as Json;
use std::sync::Arc;

/// What `kubectl apply` leaves on an object: the whole configuration it applied, a Secret's
/// data with it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn failed(diagnostic: Diagnostic) -> ReadDataSourceResponse {
    ReadDataSourceResponse {
        state: Value::Null,
        diagnostics: vec![diagnostic],
    }
}

fn read_error(what: &str, e: &kube::Error) -> Diagnostic {
    Diagnostic::error(format!("Cannot read {what}"), api_error(e))
}

/// A live object as a value, a Secret's `data` and `stringData` (and the configuration
/// `kubectl apply` recorded on it) sensitive as everywhere else.
pub(crate) fn object_value(object: &Json) -> Value {
    let mut value = Value::from_json(object);
    if object.get("kind").and_then(Json::as_str) != Some("Secret") {
        return value;
    }
    if let Value::Object(fields) = &mut value {
        for field in ["data", "stringData"] {
            if let Some(Value::Object(values)) = fields.get_mut(field) {
                for v in values.values_mut().filter(|v| !v.is_null()) {
                    *v = Value::sensitive(std::mem::take(v));
                }
            }
        }
        if let Some(Value::Object(metadata)) = fields.get_mut("metadata")
            && let Some(Value::Object(annotations)) = metadata.get_mut("annotations")
            && let Some(v) = annotations.get_mut(LAST_APPLIED)
        {
            *v = Value::sensitive(std::mem::take(v));
        }
    }
    value
}

/// The API of a typed kind, without discovery: its resource follows from the kind.
fn typed_api(cluster: &Cluster, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
    let (group, version) = kind
        .api_version
        .split_once('/')
        .unwrap_or(("", kind.api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind.kind));
    match namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(cluster.client.clone(), ns, &resource),
        _ => Api::all_with(cluster.client.clone(), &resource),
    }
}

/// `metadata[0]`'s attribute `key` of a configuration.
fn metadata_text<'a>(config: &'a Value, key: &str) -> Option<&'a str> {
    let metadata = attribute(config, "metadata")?;
    let block = metadata
        .as_list()
        .and_then(<[Value]>::first)
        .unwrap_or(metadata);
    text(block, key)
}

/// `data "kubernetes_config_map_v1"` and the other typed kinds: the object by name, in the
/// typed resource's shape (blocks as lists of objects); a missing object reads as null fields,
/// as in Terraform.
pub(crate) struct TypedData {
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) kind: &'static Kind,
}

#[async_trait::async_trait]
impl DataSource for TypedData {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let Some(name) = metadata_text(&config, "name") else {
            return failed(
                Diagnostic::error(
                    "Missing required argument",
                    "The data source needs metadata { name = \"...\" }.",
                )
                .with_attribute("metadata"),
            );
        };
        let namespace = metadata_text(&config, "namespace").unwrap_or("default");
        let api = typed_api(&self.cluster, self.kind, Some(namespace));
        let live = match self.cluster.get_json(&api, name).await {
            Ok(live) => live,
            Err(e) => return failed(read_error(&format!("{} {name}", self.kind.kind), &e)),
        };
        ReadDataSourceResponse {
            state: crate::typed::data_state(self.kind, config, live.as_ref()),
            diagnostics: Vec::new(),
        }
    }
}

/// The API of any kind, found through discovery; the diagnostic says which is not served.
async fn discovered_api(
    cluster: &Cluster,
    config: &Value,
    namespace: Option<&str>,
) -> Result<Api<DynamicObject>, Diagnostic> {
    let api_version = text(config, "api_version").unwrap_or_default();
    let kind_name = text(config, "kind").unwrap_or_default();
    let kind = cluster
        .kind(api_version, kind_name)
        .await
        .map_err(|e| read_error(&format!("the kinds of {api_version}"), &e))?
        .ok_or_else(|| {
            Diagnostic::error(
                "Kind not served",
                format!("The API server does not serve {kind_name} in {api_version}."),
            )
            .with_attribute("kind")
        })?;
    Ok(match namespace {
        Some(ns) if kind.namespaced => {
            Api::namespaced_with(cluster.client.clone(), ns, &kind.resource)
        }
        _ => Api::all_with(cluster.client.clone(), &kind.resource),
    })
}

/// `data "kubernetes_resource"`: one object of any kind by name, whole, as `object`; null when
/// there is none.
pub(crate) struct ResourceData(pub(crate) Arc<Cluster>);

#[async_trait::async_trait]
impl DataSource for ResourceData {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let Some(name) = metadata_text(&config, "name") else {
            return failed(
                Diagnostic::error(
                    "Missing required argument",
                    "kubernetes_resource needs metadata { name = \"...\" }.",
                )
                .with_attribute("metadata"),
            );
        };
        let namespace = metadata_text(&config, "namespace").unwrap_or("default");
        let api = match discovered_api(&self.0, &config, Some(namespace)).await {
            Ok(api) => api,
            Err(d) => return failed(d),
        };
        let object = match self.0.get_json(&api, name).await {
            Ok(object) => object.as_ref().map_or(Value::Null, object_value),
            Err(e) => return failed(read_error(name, &e)),
        };
        let mut state = config;
        set(&mut state, "object", object);
        ReadDataSourceResponse {
            state,
            diagnostics: Vec::new(),
        }
    }
}

/// `data "kubernetes_resources"`: the objects of a kind, in a namespace or all, by label and
/// field selector, at most `limit` of them: one LIST request.
pub(crate) struct ResourcesData(pub(crate) Arc<Cluster>);

#[async_trait::async_trait]
impl DataSource for ResourcesData {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let api = match discovered_api(&self.0, &config, text(&config, "namespace")).await {
            Ok(api) => api,
            Err(d) => return failed(d),
        };
        let mut params = ListParams::default();
        if let Some(selector) = text(&config, "label_selector") {
            params = params.labels(selector);
        }
        if let Some(selector) = text(&config, "field_selector") {
            params = params.fields(selector);
        }
        if let Some(limit) = attribute(&config, "limit").and_then(Value::as_number) {
            if limit < 1.0 || limit.fract() != 0.0 || limit > f64::from(u32::MAX) {
                return failed(
                    Diagnostic::error(
                        "Invalid limit",
                        format!("limit must be a whole number of at least 1, not {limit}."),
                    )
                    .with_attribute("limit"),
                );
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            {
                params = params.limit(limit as u32);
            }
        }
        let page = match self.0.list_json(&api, &params).await {
            Ok(page) => page,
            Err(e) => return failed(read_error("the objects", &e)),
        };
        let api_version = text(&config, "api_version").unwrap_or_default().to_owned();
        let kind = text(&config, "kind").unwrap_or_default().to_owned();
        let objects = page
            .items
            .into_iter()
            .map(|mut item| {
                // Items of a LIST carry no apiVersion and kind; Terraform's objects do.
                if let Json::Object(fields) = &mut item {
                    fields.insert("apiVersion".into(), Json::String(api_version.clone()));
                    fields.insert("kind".into(), Json::String(kind.clone()));
                }
                object_value(&item)
            })
            .collect();
        let mut state = config;
        set(&mut state, "objects", Value::List(objects));
        ReadDataSourceResponse {
            state,
            diagnostics: Vec::new(),
        }
    }
}

/// The typed kinds Terraform's provider has data sources for, under both names.
pub(crate) const TYPED_DATA_SOURCES: &[&str] = &[
    "kubernetes_config_map",
    "kubernetes_config_map_v1",
    "kubernetes_namespace",
    "kubernetes_namespace_v1",
    "kubernetes_secret",
    "kubernetes_secret_v1",
    "kubernetes_service",
    "kubernetes_service_v1",
    "kubernetes_service_account",
    "kubernetes_service_account_v1",
    "kubernetes_persistent_volume_claim",
    "kubernetes_persistent_volume_claim_v1",
    "kubernetes_storage_class",
    "kubernetes_storage_class_v1",
];

/// `data "kubernetes_resource"`'s schema, as Terraform's.
pub(crate) fn resource_schema() -> Schema {
    let mut schema = Schema::new("One object of any kind, by name.");
    crate::typed::one_block(
        &mut schema,
        "metadata",
        Schema::new("The object's name and namespace.")
            .attr("name", Attribute::required(Type::String))
            .attr("namespace", Attribute::optional(Type::String)),
        true,
    );
    schema
        .attr("api_version", Attribute::required(Type::String))
        .attr("kind", Attribute::required(Type::String))
        .attr(
            "object",
            Attribute::computed(Type::Any).describe("The whole object; null when there is none."),
        )
}

/// `data "kubernetes_resources"`'s schema, as Terraform's.
pub(crate) fn resources_schema() -> Schema {
    Schema::new("The objects of a kind, by namespace and selectors: one LIST request.")
        .attr("api_version", Attribute::required(Type::String))
        .attr("kind", Attribute::required(Type::String))
        .attr("namespace", Attribute::optional(Type::String))
        .attr("label_selector", Attribute::optional(Type::String))
        .attr("field_selector", Attribute::optional(Type::String))
        .attr("limit", Attribute::optional(Type::Number))
        .attr("objects", Attribute::computed(Type::list(Type::Any)))
}
