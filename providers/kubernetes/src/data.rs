//! The kubernetes provider's data sources as Terraform's has them: `kubernetes_nodes`, the
//! typed ones (`data "kubernetes_config_map_v1"`, ...), `kubernetes_resource` and
//! `kubernetes_resources`. Each read is one request — a GET of the object by name, or one
//! LIST page — never a request per object; `kubernetes_resource(s)`, which name any kind,
//! find it through API discovery first (one request per apiVersion and run).

use crate::cluster::{Cluster, api_error};
use crate::typed::{below, first, from_json, name_of, one_block};
use crate::typed_vocabulary::{F, Kind};
use gpustack_protocol::{Attribute, Diagnostic, ReadDataSourceResponse, Schema, Type, Value};
use gpustack_provider_sdk::check::{attribute, set, text};
use gpustack_provider_sdk::resource::DataSource;
use indexmap::IndexMap;
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
fn object_value(object: &Json) -> Value {
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
            state: typed_state(self.kind, config, live.as_ref()),
            diagnostics: Vec::new(),
        }
    }
}

/// What a data source reads of a kind besides the fields it applies (Terraform's data
/// `kubernetes_service_v1` has the Service's load balancer ingress as `status`).
fn read_only_fields(kind: &Kind) -> &'static [(&'static str, F)] {
    const SERVICE_STATUS: &[(&str, F)] = &[(
        "status",
        F::Obj(&[(
            "loadBalancer",
            F::Obj(&[(
                "ingress",
                F::Objs(&[("ip", F::Str), ("hostname", F::Str), ("ipMode", F::Str)]),
            )]),
        )]),
    )];
    if kind.kind == "Service" {
        SERVICE_STATUS
    } else {
        &[]
    }
}

/// A typed data source's schema: the metadata block that names the object, and every field
/// of the kind computed, blocks as lists of objects (`spec[0].port[0].port`).
pub(crate) fn typed_schema(kind: &Kind) -> Schema {
    let mut metadata = Schema::new("The object's name (and namespace); the rest as read.")
        .attr("name", Attribute::required(Type::String))
        .attr("labels", Attribute::computed(Type::map(Type::String)))
        .attr("annotations", Attribute::computed(Type::map(Type::String)))
        .attr("uid", Attribute::computed(Type::String))
        .attr("resource_version", Attribute::computed(Type::String))
        .attr("generation", Attribute::computed(Type::Number));
    if kind.namespaced {
        metadata = metadata.attr("namespace", Attribute::optional(Type::String));
    }
    let mut schema = Schema::new(format!(
        "A {} ({}) read by name: one GET.",
        kind.kind, kind.api_version
    ));
    one_block(&mut schema, "metadata", metadata, true);
    for (field, ty) in kind.fields.iter().chain(read_only_fields(kind)) {
        let attribute_type = match ty {
            F::Str | F::IntOrStr | F::Mode | F::Base64 => Type::String,
            F::Num => Type::Number,
            F::Bool => Type::Bool,
            F::Map | F::Base64Map => Type::map(Type::String),
            F::List => Type::list(Type::String),
            F::Nums => Type::list(Type::Number),
            F::Obj(_) | F::Objs(_) | F::Inline(_) => Type::Any,
        };
        schema = schema.attr(
            &name_of(kind.kind, field, ty),
            Attribute::computed(attribute_type),
        );
    }
    schema
}

/// A typed data source's state: its configuration with every field of the kind as the live
/// object has it (null where it has none, all of it null when there is no object), and the
/// object's metadata.
fn typed_state(kind: &Kind, config: Value, live: Option<&Json>) -> Value {
    let mut state = config;
    let empty = Json::Object(Default::default());
    let object = live.unwrap_or(&empty);
    from_json(kind.kind, kind.fields, object, &mut state);
    from_json(kind.kind, read_only_fields(kind), object, &mut state);
    fill_absent(kind.kind, kind.fields, &mut state);
    fill_absent(kind.kind, read_only_fields(kind), &mut state);
    let mut metadata = first(attribute(&state, "metadata"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let meta = live
        .map(object_value)
        .and_then(|o| attribute(&o, "metadata").cloned());
    for (key, field) in [
        ("labels", "labels"),
        ("annotations", "annotations"),
        ("uid", "uid"),
        ("resource_version", "resourceVersion"),
        ("generation", "generation"),
    ] {
        let value = meta
            .as_ref()
            .and_then(|m| attribute(m, field))
            .cloned()
            .unwrap_or(Value::Null);
        set(&mut metadata, key, value);
    }
    set(&mut state, "metadata", Value::List(vec![metadata]));
    state
}

/// Every field a data source's value has, at every depth: an absent block an empty list, an
/// absent value null, so that `status[0].load_balancer[0].ingress` is `[]` rather than an
/// error.
fn fill_absent(holder: &str, fields: &[(&str, F)], value: &mut Value) {
    for (field, ty) in fields {
        let name = name_of(holder, field, ty);
        let present = value.as_object().and_then(|o| o.get(&name)).cloned();
        let filled = match (ty, present) {
            (F::Obj(inner) | F::Objs(inner) | F::Inline(inner), Some(Value::List(blocks))) => {
                Value::List(
                    blocks
                        .into_iter()
                        .map(|mut block| {
                            fill_absent(&below(holder, field), inner, &mut block);
                            block
                        })
                        .collect(),
                )
            }
            (F::Obj(_) | F::Objs(_) | F::Inline(_), None | Some(Value::Null)) => {
                Value::List(Vec::new())
            }
            (_, Some(present)) => present,
            (_, None) => Value::Null,
        };
        if let Value::Object(map) = value {
            map.insert(name, filled);
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

/// `data "kubernetes_nodes"`.
pub(crate) struct Nodes(pub(crate) Arc<Cluster>);

impl Nodes {
    async fn nodes(&self, config: &Value) -> Result<Value, Vec<Diagnostic>> {
        let api: kube::Api<k8s_openapi::api::core::v1::Node> =
            kube::Api::all(self.0.client.clone());
        let mut params = ListParams::default();
        if let Some(selector) = text(config, "label_selector") {
            params = params.labels(selector);
        }
        let list = api
            .list(&params)
            .await
            .map_err(|e| vec![Diagnostic::error("Cannot list nodes", api_error(&e))])?;
        let quantities = |q: Option<
            &std::collections::BTreeMap<
                String,
                k8s_openapi::apimachinery::pkg::api::resource::Quantity,
            >,
        >| {
            Value::Object(
                q.into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), Value::string(v.0.clone())))
                    .collect(),
            )
        };
        let nodes = list
            .items
            .iter()
            .map(|n| {
                let status = n.status.as_ref();
                Value::Object(IndexMap::from([
                    (
                        "name".to_owned(),
                        Value::string(n.metadata.name.clone().unwrap_or_default()),
                    ),
                    (
                        "labels".to_owned(),
                        Value::Object(
                            n.metadata
                                .labels
                                .iter()
                                .flatten()
                                .map(|(k, v)| (k.clone(), Value::string(v.clone())))
                                .collect(),
                        ),
                    ),
                    (
                        "allocatable".to_owned(),
                        quantities(status.and_then(|s| s.allocatable.as_ref())),
                    ),
                    (
                        "capacity".to_owned(),
                        quantities(status.and_then(|s| s.capacity.as_ref())),
                    ),
                ]))
            })
            .collect();
        let mut state = config.clone();
        set(&mut state, "nodes", Value::List(nodes));
        Ok(state)
    }
}

#[async_trait::async_trait]
impl DataSource for Nodes {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        match self.nodes(&config).await {
            Ok(state) => ReadDataSourceResponse {
                state,
                diagnostics: vec![],
            },
            Err(diagnostics) => ReadDataSourceResponse {
                state: Value::Null,
                diagnostics,
            },
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
    "kubernetes_endpoint_slice_v1",
    "kubernetes_endpoints_v1",
    "kubernetes_ingress_v1",
    "kubernetes_mutating_webhook_configuration_v1",
    "kubernetes_persistent_volume_v1",
    "kubernetes_pod",
    "kubernetes_pod_v1",
];

/// `data "kubernetes_resource"`'s schema, as Terraform's.
pub(crate) fn resource_schema() -> Schema {
    let mut schema = Schema::new("One object of any kind, by name.");
    one_block(
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(name: &str) -> &'static Kind {
        crate::typed::kind_of(name).unwrap()
    }

    /// A typed data source holds the object in the resource's shape, a Secret's values (and
    /// the configuration kubectl recorded on it) sensitive; a missing object reads as nulls.
    #[test]
    fn a_data_source_reads_the_object_in_the_typed_shape_and_conceals_a_secret() {
        let config = Value::from_json(&json!({
            "metadata": [{"name": "token", "namespace": "gpu"}],
            "data": null, "binary_data": null, "type": null, "immutable": null
        }));
        let live = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "token", "namespace": "gpu", "uid": "u-1", "resourceVersion": "7",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"token\":\"czNjcmV0\"}}"}
            },
            "type": "Opaque",
            "data": {"token": "czNjcmV0"}
        });
        let secret = kind("kubernetes_secret_v1");
        let state = typed_state(secret, config.clone(), Some(&live));
        let token = attribute(&state, "data")
            .and_then(|d| attribute(d, "token"))
            .unwrap();
        assert!(token.is_sensitive(), "{token:?}");
        assert_eq!(token.to_json_revealed(), json!("s3cret"));
        assert_eq!(attribute(&state, "type"), Some(&Value::string("Opaque")));
        let metadata = first(attribute(&state, "metadata")).unwrap();
        assert_eq!(attribute(metadata, "uid"), Some(&Value::string("u-1")));
        let recorded = attribute(metadata, "annotations")
            .and_then(|a| attribute(a, "kubectl.kubernetes.io/last-applied-configuration"))
            .unwrap();
        assert!(recorded.is_sensitive());

        let missing = typed_state(secret, config, None);
        assert_eq!(attribute(&missing, "data"), None);
        assert_eq!(
            attribute(first(attribute(&missing, "metadata")).unwrap(), "uid"),
            None
        );
    }
}
