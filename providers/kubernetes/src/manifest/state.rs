//! What a resource's state says: the fields it manages, how they are applied (field manager,
//! force, waits) and deleted (force_destroy); and the state refreshed from the live object.

use crate::types::ObjectType;
use gpustack_protocol::Value;
use gpustack_provider_sdk::check::{attribute, set, text};
use gpustack_provider_sdk::objects::{project, strip_nulls};
use serde_json::Value as Json;

pub(super) const DEFAULT_FIELD_MANAGER: &str = "gpustack";

/// What a resource type sends with server-side apply, and which part of the live object it
/// compares with (its `object` or `live` attribute).
/// `None` while the configured fields are not all known yet.
pub(super) fn desired(ty: ObjectType, state: &Value) -> Option<Json> {
    let (name, wrap): (&str, fn(Json) -> Json) = match ty {
        ObjectType::Manifest => ("manifest", |m| m),
        ObjectType::Labels => (
            "labels",
            |l| serde_json::json!({ "metadata": { "labels": l } }),
        ),
        ObjectType::Patch => ("patch", |p| p),
        ObjectType::Annotations => {
            let known = |name| attribute(state, name).is_none_or(Value::is_wholly_known);
            if !known("annotations") || !known("template_annotations") {
                return None;
            }
            let mut object = serde_json::json!({});
            if let Some(a) = attribute(state, "annotations") {
                object["metadata"] =
                    serde_json::json!({ "annotations": strip_nulls(&a.to_json()) });
            }
            if let Some(t) = attribute(state, "template_annotations") {
                object["spec"] = serde_json::json!({
                    "template": { "metadata": { "annotations": strip_nulls(&t.to_json()) } }
                });
            }
            return Some(object);
        }
    };
    attribute(state, name)
        .filter(|v| v.is_wholly_known())
        .map(|v| wrap(strip_nulls(&v.to_json())))
}

/// A Secret's `data` and `stringData` are marked sensitive wherever they appear (the manifest
/// and the live view), whatever the configuration marked: the engine then shows and stores
/// them only as digests.
pub(super) fn conceal_secret(ty: ObjectType, state: &mut Value) {
    if ty != ObjectType::Manifest {
        return;
    }
    let is_secret = attribute(state, "manifest")
        .and_then(|m| attribute(m, "kind"))
        .and_then(Value::as_str)
        == Some("Secret");
    if !is_secret {
        return;
    }
    let Value::Object(attributes) = state else {
        return;
    };
    for name in ["manifest", "object"] {
        let Some(Value::Object(object)) = attributes.get_mut(name) else {
            continue;
        };
        for field in ["data", "stringData"] {
            if let Some(Value::Object(values)) = object.get_mut(field) {
                for value in values.values_mut() {
                    if !value.is_null() {
                        *value = Value::sensitive(std::mem::take(value));
                    }
                }
            }
        }
    }
}

/// The attribute that records what the cluster holds of the managed fields.
pub(super) fn live_attribute(ty: ObjectType) -> &'static str {
    if ty == ObjectType::Manifest {
        "object"
    } else {
        "live"
    }
}

/// The managed part of a live object, as the `object`/`live` attribute holds it.
pub(super) fn live_view(ty: ObjectType, desired: &Json, object: &Json) -> Value {
    let projected = project(desired, object);
    if ty == ObjectType::Labels {
        Value::from_json(
            projected
                .pointer("/metadata/labels")
                .unwrap_or(&Json::Object(Default::default())),
        )
    } else {
        Value::from_json(&projected)
    }
}

/// The uid of the object a state records (a `kubernetes_manifest` made or imported); `None`
/// for the types that manage fields of someone else's object, and for states written before
/// uids were recorded.
pub(super) fn recorded_uid(state: &Value) -> Option<&str> {
    attribute(state, "uid").and_then(Value::as_str)
}

/// A resource's state refreshed from its live object: the live view of what it manages, the
/// object's uid, secrets concealed.
pub(super) fn live_state(ty: ObjectType, mut state: Value, object: &Json) -> Value {
    if let Some(desired) = desired(ty, &state) {
        set(
            &mut state,
            live_attribute(ty),
            live_view(ty, &desired, object),
        );
    }
    if ty == ObjectType::Manifest
        && let Some(uid) = object.pointer("/metadata/uid").and_then(Json::as_str)
    {
        set(&mut state, "uid", Value::string(uid));
    }
    conceal_secret(ty, &mut state);
    state
}

/// The configured field manager; by default one per resource type, so that labels and a
/// patch on the same object never remove each other's fields.
pub(super) fn field_manager(ty: ObjectType, state: &Value) -> String {
    text(state, "field_manager")
        .or_else(|| attribute(state, "field_manager").and_then(|f| text(f, "name")))
        .map(str::to_owned)
        .unwrap_or_else(|| match ty {
            ObjectType::Labels => format!("{DEFAULT_FIELD_MANAGER}-labels"),
            ObjectType::Annotations => format!("{DEFAULT_FIELD_MANAGER}-annotations"),
            ObjectType::Patch => format!("{DEFAULT_FIELD_MANAGER}-patch"),
            ObjectType::Manifest => DEFAULT_FIELD_MANAGER.to_owned(),
        })
}

pub(super) fn force(state: &Value) -> bool {
    ["force_conflicts", "force"]
        .iter()
        .any(|k| attribute(state, k).and_then(Value::as_bool) == Some(true))
        || attribute(state, "field_manager")
            .and_then(|f| attribute(f, "force_conflicts"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// The `wait` block with what Terraform's forms add to it: `wait_for { fields }`, and the
/// `timeouts` of the operation (`create`, `update`, `delete`) where `wait` names no timeout.
pub(super) fn effective_wait(state: &Value, operation: &str) -> Option<Value> {
    let mut wait = attribute(state, "wait").cloned();
    if let Some(fields) = attribute(state, "wait_for")
        .and_then(|w| attribute(w, "fields"))
        .filter(|f| f.as_object().is_some())
    {
        let mut block = wait.unwrap_or_else(|| Value::Object(Default::default()));
        let mut merged = attribute(&block, "fields")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in fields.as_object().into_iter().flatten() {
            merged.insert(k.clone(), v.clone());
        }
        set(&mut block, "fields", Value::Object(merged));
        wait = Some(block);
    }
    if let Some(timeout) = attribute(state, "timeouts").and_then(|t| attribute(t, operation)) {
        let mut block = wait.unwrap_or_else(|| Value::Object(Default::default()));
        if attribute(&block, "timeout").is_none() {
            set(&mut block, "timeout", timeout.clone());
        }
        wait = Some(block);
    }
    wait
}

/// The state says its deletion may take objects this stack does not manage with it.
pub(super) fn force_destroy(state: &Value) -> bool {
    attribute(state, "force_destroy").and_then(Value::as_bool) == Some(true)
}
