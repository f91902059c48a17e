//! How an object a Terraform state records for the kubernetes and kubectl providers' types is
//! taken over by `state import-terraform`: the ID gpustack's import takes
//! (`apiVersion/Kind/namespace/name`), and the uid Terraform recorded, which the imported
//! object must have.

use gpustack_protocol::{ImportIdError, TerraformTakeover};
use serde_json::Value as Json;

fn text(value: Option<&Json>) -> Option<String> {
    value
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn object_id(api_version: &str, kind: &str, namespace: Option<String>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{api_version}/{kind}/{ns}/{name}"),
        None => format!("{api_version}/{kind}/{name}"),
    }
}

/// `kubernetes_manifest` and the typed kinds (`kubernetes_config_map_v1`, ...).
pub(crate) fn kubernetes(
    type_name: &str,
    attributes: &Json,
) -> Option<Result<TerraformTakeover, &'static str>> {
    if type_name == "kubernetes_manifest" {
        let manifest = attributes.get("manifest").unwrap_or(&Json::Null);
        let object = attributes.get("object").unwrap_or(&Json::Null);
        let field = |p: &str| text(manifest.pointer(p)).or_else(|| text(object.pointer(p)));
        let (Some(api_version), Some(kind), Some(name)) = (
            field("/apiVersion"),
            field("/kind"),
            field("/metadata/name"),
        ) else {
            return Some(Err("its manifest names no apiVersion, kind and name"));
        };
        return Some(Ok(TerraformTakeover {
            id: object_id(&api_version, &kind, field("/metadata/namespace"), &name),
            uid: text(object.pointer("/metadata/uid")),
        }));
    }
    let kind = crate::typed::kind_of(type_name)?;
    let metadata = attributes.pointer("/metadata/0").unwrap_or(&Json::Null);
    let Some(name) = text(metadata.get("name")) else {
        return Some(Err("its metadata records no name"));
    };
    let namespace = kind
        .namespaced
        .then(|| text(metadata.get("namespace")).unwrap_or_else(|| "default".to_owned()));
    Some(Ok(TerraformTakeover {
        id: object_id(kind.api_version, kind.kind, namespace, &name),
        uid: text(metadata.get("uid")),
    }))
}

/// `kubectl_manifest`.
pub(crate) fn kubectl(
    type_name: &str,
    attributes: &Json,
) -> Option<Result<TerraformTakeover, &'static str>> {
    if type_name != "kubectl_manifest" {
        return None;
    }
    let at = |p: &str| text(attributes.pointer(p));
    let (Some(api_version), Some(kind), Some(name)) =
        (at("/api_version"), at("/kind"), at("/name"))
    else {
        return Some(Err("it records no api_version, kind and name"));
    };
    Some(Ok(TerraformTakeover {
        id: object_id(&api_version, &kind, at("/namespace"), &name),
        uid: at("/uid").or_else(|| at("/live_uid")),
    }))
}

/// The import ID an `import { identity = { api_version, kind, name, namespace } }` names, as
/// the kubernetes provider's resource identity has it (a typed kind knows its own apiVersion
/// and kind).
pub(crate) fn import_id_of_identity(
    type_name: &str,
    identity: &gpustack_protocol::Value,
) -> Option<Result<String, ImportIdError>> {
    let incomplete = |expected| {
        Some(Err(ImportIdError::Incomplete {
            type_name: type_name.to_owned(),
            expected,
        }))
    };
    let field = |name: &str| {
        identity
            .as_object()
            .and_then(|o| o.get(name))
            .and_then(gpustack_protocol::Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (api_version, kind, namespaced) = match type_name {
        "kubernetes_manifest" | "kubectl_manifest" => {
            let (Some(api_version), Some(kind)) = (field("api_version"), field("kind")) else {
                return incomplete(
                    "names its api_version, kind, name and namespace (for a namespaced object)",
                );
            };
            let namespaced = field("namespace").is_some();
            (api_version, kind, namespaced)
        }
        _ => {
            let kind = crate::typed::kind_of(type_name)?;
            (
                kind.api_version.to_owned(),
                kind.kind.to_owned(),
                kind.namespaced,
            )
        }
    };
    let Some(name) = field("name") else {
        return incomplete("names the object's name");
    };
    let namespace = namespaced.then(|| field("namespace").unwrap_or_else(|| "default".to_owned()));
    Some(Ok(object_id(&api_version, &kind, namespace, &name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_ids_from_a_terraform_states_attributes() {
        let manifest = serde_json::json!({
            "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}},
            "object": {"metadata": {"uid": "u1"}}});
        assert_eq!(
            kubernetes("kubernetes_manifest", &manifest),
            Some(Ok(TerraformTakeover {
                id: "v1/ConfigMap/n/c".into(),
                uid: Some("u1".into())
            }))
        );
        let typed = serde_json::json!({"metadata": [{"name": "gpu", "uid": "u2"}]});
        assert_eq!(
            kubernetes("kubernetes_namespace_v1", &typed),
            Some(Ok(TerraformTakeover {
                id: "v1/Namespace/gpu".into(),
                uid: Some("u2".into())
            }))
        );
        assert_eq!(kubernetes("aws_iam_role", &Json::Null), None);
        let kubectl_object = serde_json::json!({"api_version": "v1", "kind": "Secret", "name": "s", "namespace": "n", "uid": "u3"});
        assert_eq!(
            kubectl("kubectl_manifest", &kubectl_object),
            Some(Ok(TerraformTakeover {
                id: "v1/Secret/n/s".into(),
                uid: Some("u3".into())
            }))
        );
    }
}
