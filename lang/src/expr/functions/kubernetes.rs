//! The functions of Terraform's kubernetes provider (hashicorp/kubernetes, Terraform 1.8's
//! provider-defined functions), called as `provider::kubernetes::NAME(...)`:
//! `manifest_decode`, `manifest_decode_multi` and `manifest_encode`, with that provider's
//! rules — its document separator, the three fields every manifest has, its errors.

use super::*;

/// The provider's document separator: `---` at the start of the text or of a line, and the
/// blanks after it. An indented `---` (inside a block scalar) separates nothing.
fn documents(text: &str) -> Vec<&str> {
    static SEPARATOR: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(^|\s*\n)---\s*").expect("a valid expression")
    });
    SEPARATOR.split(text).collect()
}

/// Every manifest has `apiVersion`, `kind` and `metadata` (null counts: the key is there).
fn check_manifest(manifest: &IndexMap<String, Value>) -> CallResult<()> {
    for field in ["apiVersion", "kind", "metadata"] {
        if !manifest.contains_key(field) {
            return Err(CallError::call(format!(
                "Invalid Kubernetes manifest: missing field \"{field}\"."
            )));
        }
    }
    Ok(())
}

/// The manifests of a YAML text, in order; documents with nothing in them are skipped, as the
/// provider skips them. The limits on what decoding builds hold for the whole text: each
/// document within them is not enough, as a hundred documents of nested aliases each under
/// them together exhaust memory.
fn decode(a: &Args<'_>) -> CallResult<Vec<Value>> {
    let text = a.string(0)?;
    let mut manifests = Vec::new();
    let mut budget = gpustack_protocol::limits::DecodeCost::default();
    for (i, document) in documents(&text).into_iter().enumerate() {
        let value = decode_kubernetes(document, &mut budget).map_err(|e| {
            CallError::call(format!("Invalid YAML document: document {}: {e}.", i + 1))
        })?;
        match value {
            Value::Null => {}
            Value::Object(map) if map.is_empty() => {}
            Value::Object(map) => {
                check_manifest(&map)?;
                manifests.push(Value::Object(map));
            }
            other => {
                return Err(CallError::call(format!(
                    "Invalid YAML document: document {} is {}, not a mapping of a Kubernetes object.",
                    i + 1,
                    other.type_name()
                )));
            }
        }
    }
    Ok(manifests)
}

pub(super) fn manifest_decode(a: &Args<'_>) -> CallResult {
    let mut manifests = decode(a)?;
    match manifests.len() {
        0 => Err(CallError::call("Invalid manifest: YAML document is empty.")),
        1 => Ok(manifests.remove(0)),
        n => Err(CallError::call(format!(
            "YAML manifest contains multiple resources ({n}): use manifest_decode_multi to decode manifests containing more than one resource."
        ))),
    }
}

pub(super) fn manifest_decode_multi(a: &Args<'_>) -> CallResult {
    decode(a).map(Value::List)
}

/// One manifest (an object) as one YAML document; a list of them as documents each after
/// `---`.
pub(super) fn manifest_encode(a: &Args<'_>) -> CallResult {
    let encode = |manifest: &Value| -> CallResult<String> {
        match manifest.peel() {
            Value::Object(map) => {
                check_manifest(map)?;
                go_yaml(manifest)
            }
            other => Err(CallError::call(format!(
                "Invalid manifest: a manifest is an object, not {}.",
                other.type_name()
            ))),
        }
    };
    match a.value(0)?.peel() {
        Value::Object(_) => encode(a.get(0)).map(Value::String),
        Value::List(items) => {
            let mut text = String::new();
            for item in items {
                text.push_str("---\n");
                text.push_str(&encode(item)?);
            }
            Ok(Value::String(text))
        }
        other => Err(CallError::call(format!(
            "Invalid manifest: the value is {}, not a manifest (an object) or a list of them.",
            other.type_name()
        ))),
    }
}
