//! Sensitive values at rest and on screen.
//!
//! Inside a run, secrets are values marked [`Value::Sensitive`] (from sensitive variables,
//! sensitive provider attributes, Secret data and `sensitive()`), and every operation carries
//! the mark to what it computes. Whatever leaves the run — plans, plan files, the state,
//! reports — holds a marked value only as a digest salted with the state's own key
//! ([`Salt`]), so that equal digests say "unchanged" and nothing else: a digest shown
//! anywhere cannot be looked up, nor compared with another stack's.
//!
//! **Invariant:** no marked value reaches JSON except through [`encode`], which digests it;
//! `Value::to_json` of a marked value is `"(sensitive value)"`.

use gpustack_protocol::{Path, PathStep, SENSITIVE, Value};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key of a state's digests: random, made with the state's lineage, kept in the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salt(Vec<u8>);

const DIGEST_PREFIX: &str = "hmac-sha256:";

/// Texts shorter than this are not hidden inside other text (a secret of "1" or "true"
/// would hide every count and flag of a plan); they are still hidden where they are marked.
pub const MIN_SCRUBBED_LEN: usize = 4;

impl Salt {
    pub fn new() -> Self {
        let bytes: Vec<u8> = (0..2)
            .flat_map(|_| *uuid::Uuid::new_v4().as_bytes())
            .collect();
        Salt(bytes)
    }

    pub fn from_hex(text: &str) -> Option<Self> {
        if !text.len().is_multiple_of(2) || text.is_empty() {
            return None;
        }
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()
            .map(Salt)
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The seed of what a provider chooses at random for the instance at `address`, in a plan
    /// made from the state of `serial` (see `PlanResourceChangeRequest::seed`): keyed by the
    /// state's secret, so that no one without the state can tell it.
    pub fn seed(&self, serial: u64, address: &str) -> [u8; 32] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable_mac());
        mac.update(b"gpustack instance seed\0");
        mac.update(&serial.to_le_bytes());
        mac.update(address.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The salted digest of a value (marks ignored), `hmac-sha256:…`.
    pub fn digest(&self, value: &Value) -> String {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable_mac());
        mac.update(canonical(value).as_bytes());
        let bytes = mac.finalize().into_bytes();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("{DIGEST_PREFIX}{hex}")
    }
}

impl Default for Salt {
    fn default() -> Self {
        Self::new()
    }
}

// HMAC takes keys of any length; this is never reached.
fn unreachable_mac() -> Hmac<Sha256> {
    #[allow(clippy::unwrap_used)]
    <Hmac<Sha256> as Mac>::new_from_slice(b"gpustack").unwrap()
}

/// True for the text a digest is stored as.
pub fn is_digest(value: &Value) -> bool {
    value.as_str().is_some_and(is_digest_text)
}

/// Whether `text` is a digest [`Salt::digest`] made.
pub fn is_digest_text(text: &str) -> bool {
    text.len() == DIGEST_PREFIX.len() + 64 && text.starts_with(DIGEST_PREFIX)
}

/// JSON with object keys sorted, so that equal values digest equally.
fn canonical(value: &Value) -> String {
    fn sorted(json: serde_json::Value) -> serde_json::Value {
        match json {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(
                    entries.into_iter().map(|(k, v)| (k, sorted(v))).collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.into_iter().map(sorted).collect())
            }
            other => other,
        }
    }
    sorted(value.to_json_revealed()).to_string()
}

/// A value as plans and the state hold it: JSON (unknowns null, sensitive values digests),
/// and trees marking the unknown and the sensitive parts (`true` for the part itself, an
/// object or array of trees for a part with some inside, `false` for none).
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub json: serde_json::Value,
    pub unknown: serde_json::Value,
    pub sensitive: serde_json::Value,
}

/// An object as the state keeps it, its sensitive parts already digests with their paths
/// beside them: the one place an object becomes a state entry (apply's ledger, import).
pub(crate) fn state_entry(
    address: &str,
    type_name: &str,
    provider: &str,
    json: serde_json::Value,
    sensitive: &serde_json::Value,
    dependencies: Vec<String>,
) -> gpustack_state::ResourceState {
    gpustack_state::ResourceState {
        address: address.to_owned(),
        mode: gpustack_state::ResourceMode::Managed,
        type_name: type_name.to_owned(),
        provider: provider.to_owned(),
        attributes: json,
        sensitive_paths: tree_paths(sensitive),
        dependencies,
        tainted: false,
        skip_destroy: false,
        seed_serial: None,
    }
}

pub fn encode(value: &Value, salt: &Salt) -> Encoded {
    let no = serde_json::Value::Bool(false);
    match value {
        Value::Sensitive(m) => {
            let (json, unknown) = if m.value.is_unknown() {
                (serde_json::Value::Null, serde_json::Value::Bool(true))
            } else if m.value.is_null() {
                (serde_json::Value::Null, no.clone())
            } else if is_digest(&m.value) {
                // Already a digest (from the state or a plan): it is its own encoding.
                (m.value.to_json_revealed(), no.clone())
            } else if m.value.is_wholly_known() {
                (serde_json::Value::String(salt.digest(&m.value)), no.clone())
            } else {
                // Partly unknown: nothing of it is shown or kept until it is known.
                (serde_json::Value::Null, serde_json::Value::Bool(true))
            };
            Encoded {
                json,
                unknown,
                sensitive: serde_json::Value::Bool(true),
            }
        }
        Value::Unknown => Encoded {
            json: serde_json::Value::Null,
            unknown: serde_json::Value::Bool(true),
            sensitive: no,
        },
        Value::List(items) => {
            let parts: Vec<Encoded> = items.iter().map(|v| encode(v, salt)).collect();
            let tree = |pick: fn(&Encoded) -> &serde_json::Value| {
                if parts
                    .iter()
                    .any(|p| *pick(p) != serde_json::Value::Bool(false))
                {
                    serde_json::Value::Array(parts.iter().map(|p| pick(p).clone()).collect())
                } else {
                    serde_json::Value::Bool(false)
                }
            };
            Encoded {
                unknown: tree(|p| &p.unknown),
                sensitive: tree(|p| &p.sensitive),
                json: serde_json::Value::Array(parts.into_iter().map(|p| p.json).collect()),
            }
        }
        Value::Object(map) => {
            let mut json = serde_json::Map::new();
            let mut unknown = serde_json::Map::new();
            let mut sensitive = serde_json::Map::new();
            for (k, v) in map {
                let part = encode(v, salt);
                if part.unknown != no {
                    unknown.insert(k.clone(), part.unknown);
                }
                if part.sensitive != no {
                    sensitive.insert(k.clone(), part.sensitive);
                }
                json.insert(k.clone(), part.json);
            }
            let tree = |m: serde_json::Map<String, serde_json::Value>| {
                if m.is_empty() {
                    serde_json::Value::Bool(false)
                } else {
                    serde_json::Value::Object(m)
                }
            };
            Encoded {
                json: serde_json::Value::Object(json),
                unknown: tree(unknown),
                sensitive: tree(sensitive),
            }
        }
        other => Encoded {
            json: other.to_json(),
            unknown: no.clone(),
            sensitive: no,
        },
    }
}

/// The paths a `*_sensitive` tree marks.
pub fn tree_paths(tree: &serde_json::Value) -> Vec<Path> {
    fn collect(tree: &serde_json::Value, at: &mut Path, out: &mut Vec<Path>) {
        match tree {
            serde_json::Value::Bool(true) => out.push(at.clone()),
            serde_json::Value::Array(items) => {
                for (i, t) in items.iter().enumerate() {
                    at.push(PathStep::Index(i));
                    collect(t, at, out);
                    at.pop();
                }
            }
            serde_json::Value::Object(map) => {
                for (k, t) in map {
                    at.push(PathStep::Key(k.clone()));
                    collect(t, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    collect(tree, &mut Vec::new(), &mut out);
    out
}

/// The inverse of [`encode`]: digests come back as marked strings.
pub fn decode(
    json: &serde_json::Value,
    unknown: &serde_json::Value,
    sensitive: &serde_json::Value,
) -> Value {
    crate::unknowns::with_unknowns(json, unknown).mark_paths(&tree_paths(sensitive))
}

/// A value whose sensitive parts are digests (from a plan or the state) with the plaintext
/// put back wherever the configuration holds a value with the same digest: what providers
/// compare and write is then the real value where one is known, and the digest only where
/// the configuration no longer has that secret (which is then a change).
pub fn rehydrate(prior: Value, config: &Value, salt: &Salt) -> Value {
    let paths = prior.sensitive_paths();
    if paths.is_empty() {
        return prior;
    }
    let mut candidates: Option<Vec<(String, Value)>> = None;
    let mut value = prior;
    for path in paths {
        let Some(stored) = value
            .at(&path)
            .filter(|v| is_digest(v))
            .and_then(|v| v.as_str().map(str::to_owned))
        else {
            continue;
        };
        let same_place = config
            .at(&path)
            .filter(|c| !c.is_null() && c.is_wholly_known() && salt.digest(c) == stored)
            .cloned();
        let found = same_place.or_else(|| {
            let candidates = candidates.get_or_insert_with(|| {
                let mut out = Vec::new();
                leaves_and_subtrees(config, salt, &mut out);
                out
            });
            candidates
                .iter()
                .find(|(d, _)| *d == stored)
                .map(|(_, v)| v.clone())
        });
        if let Some(plain) = found {
            value = replace_at(value, &path, Value::sensitive(plain));
        }
    }
    value
}

fn leaves_and_subtrees(value: &Value, salt: &Salt, out: &mut Vec<(String, Value)>) {
    if value.is_null() || !value.is_wholly_known() {
        if let Some(items) = value.as_list() {
            items.iter().for_each(|v| leaves_and_subtrees(v, salt, out));
        } else if let Some(map) = value.as_object() {
            map.values().for_each(|v| leaves_and_subtrees(v, salt, out));
        }
        return;
    }
    out.push((salt.digest(value), value.clone()));
    if let Some(items) = value.as_list() {
        items.iter().for_each(|v| leaves_and_subtrees(v, salt, out));
    } else if let Some(map) = value.as_object() {
        map.values().for_each(|v| leaves_and_subtrees(v, salt, out));
    }
}

/// `value` with the part at `path` replaced.
pub fn replace_at(value: Value, path: &[PathStep], new: Value) -> Value {
    let Some((first, rest)) = path.split_first() else {
        return new;
    };
    let (inner, mark) = value.unmark();
    let replaced = match (inner, first) {
        (Value::List(mut items), PathStep::Index(i)) if *i < items.len() => {
            let item = std::mem::take(&mut items[*i]);
            items[*i] = replace_at(item, rest, new);
            Value::List(items)
        }
        (Value::Object(mut map), PathStep::Key(k)) => {
            if let Some(slot) = map.get_mut(k) {
                let item = std::mem::take(slot);
                *slot = replace_at(item, rest, new);
            }
            Value::Object(map)
        }
        (other, _) => other,
    };
    match mark {
        Some(fragments) => Value::marked(replaced, fragments),
        None => replaced,
    }
}

/// Marks every string inside `value` that contains one of `fragments`: a provider that
/// copies a secret somewhere the configuration did not put it (a status field, an
/// annotation) does not show it.
pub fn mark_leaks(value: Value, fragments: &[String]) -> Value {
    let fragments: Vec<&String> = fragments
        .iter()
        .filter(|f| f.len() >= MIN_SCRUBBED_LEN)
        .collect();
    if fragments.is_empty() {
        return value;
    }
    fn mark_fragments(value: Value, fragments: &[&String]) -> Value {
        match value {
            Value::String(s) if fragments.iter().any(|f| s.contains(f.as_str())) => {
                Value::sensitive(Value::String(s))
            }
            Value::List(items) => Value::List(
                items
                    .into_iter()
                    .map(|v| mark_fragments(v, fragments))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, mark_fragments(v, fragments)))
                    .collect(),
            ),
            other => other,
        }
    }
    mark_fragments(value, &fragments)
}

/// A multi-line sensitive string shown with its sensitive lines masked: `None` when it must
/// not be shown at all (a fragment cannot be found in it, as after base64 or hashing, or the
/// mark asks for the whole value to be hidden).
pub fn masked_lines(text: &str, fragments: &[String], salt: &Salt) -> Option<String> {
    if !text.contains('\n') || fragments.is_empty() || fragments.iter().any(String::is_empty) {
        return None;
    }
    let mut hidden: Vec<std::ops::Range<usize>> = Vec::new();
    for fragment in fragments {
        let escaped = serde_json::Value::String(fragment.clone()).to_string();
        let escaped = &escaped[1..escaped.len() - 1];
        let mut found = false;
        for form in [fragment.as_str(), escaped] {
            let mut from = 0;
            while let Some(i) = text[from..].find(form) {
                hidden.push(from + i..from + i + form.len());
                found = true;
                from += i + form.len().max(1);
            }
        }
        if !found {
            return None;
        }
    }
    let mut out = String::new();
    let mut start = 0;
    let mut shown_any = false;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let masked = hidden.iter().any(|r| r.start < end && r.end > start);
        if masked {
            // The line's digest rides along, hidden, so that a renderer can tell an unchanged
            // secret line from a changed one.
            out.push_str(SENSITIVE);
            out.push(LINE_DIGEST);
            out.push_str(&salt.digest(&Value::string(line.trim_end_matches('\n'))));
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
            shown_any = true;
        }
        start = end;
    }
    shown_any.then_some(out)
}

/// Follows a masked line's `(sensitive value)`: the rest of the line is its digest, which
/// renderers compare and never print.
pub const LINE_DIGEST: char = '\u{2}';

/// The masked text of every partly displayable sensitive string of a value, as a tree in the
/// shape of `*_sensitive` with the masked text at each such string.
pub fn masked_texts(value: &Value, salt: &Salt) -> serde_json::Value {
    match value {
        Value::Sensitive(m) => match m
            .value
            .as_str()
            .and_then(|s| masked_lines(s, &m.fragments, salt))
        {
            Some(text) => serde_json::Value::String(text),
            None => serde_json::Value::Bool(false),
        },
        Value::List(items) => {
            let parts: Vec<_> = items.iter().map(|v| masked_texts(v, salt)).collect();
            if parts.iter().all(|p| *p == serde_json::Value::Bool(false)) {
                serde_json::Value::Bool(false)
            } else {
                serde_json::Value::Array(parts)
            }
        }
        Value::Object(map) => {
            let parts: serde_json::Map<_, _> = map
                .iter()
                .map(|(k, v)| (k.clone(), masked_texts(v, salt)))
                .filter(|(_, p)| *p != serde_json::Value::Bool(false))
                .collect();
            if parts.is_empty() {
                serde_json::Value::Bool(false)
            } else {
                serde_json::Value::Object(parts)
            }
        }
        _ => serde_json::Value::Bool(false),
    }
}

/// The paths of a schema's sensitive attributes, nested blocks' included.
pub fn sensitive_attributes(
    schema: Option<&gpustack_protocol::Schema>,
) -> Vec<gpustack_protocol::Path> {
    fn collect(
        schema: &gpustack_protocol::Schema,
        at: &mut gpustack_protocol::Path,
        out: &mut Vec<gpustack_protocol::Path>,
    ) {
        for (name, attribute) in &schema.attributes {
            if attribute.sensitive {
                let mut path = at.clone();
                path.push(gpustack_protocol::PathStep::Key(name.clone()));
                out.push(path);
            }
        }
        for (name, nested) in &schema.blocks {
            if nested.block.attributes.values().any(|a| a.sensitive)
                || !nested.block.blocks.is_empty()
            {
                at.push(gpustack_protocol::PathStep::Key(name.clone()));
                collect(&nested.block, at, out);
                at.pop();
            }
        }
    }
    let mut out = Vec::new();
    if let Some(schema) = schema {
        collect(schema, &mut Vec::new(), &mut out);
    }
    out
}

/// A value with the sensitive attributes of its schema marked. Paths into nested blocks
/// given as lists are marked in every element.
pub fn mark_schema(value: Value, paths: &[gpustack_protocol::Path]) -> Value {
    let mut value = value;
    for path in paths {
        value = mark_through_lists(value, path);
    }
    value
}

fn mark_through_lists(value: Value, path: &[gpustack_protocol::PathStep]) -> Value {
    use gpustack_protocol::PathStep;
    let Some((first, rest)) = path.split_first() else {
        return if value.is_null() {
            value
        } else {
            Value::sensitive(value)
        };
    };
    let (inner, mark) = value.unmark();
    if mark.is_some() {
        return Value::marked(inner, mark.unwrap_or_default());
    }
    match (inner, first) {
        (Value::List(items), _) => Value::List(
            items
                .into_iter()
                .map(|item| mark_through_lists(item, path))
                .collect(),
        ),
        (Value::Object(mut map), PathStep::Key(k)) => {
            if let Some(slot) = map.get_mut(k) {
                let item = std::mem::take(slot);
                *slot = mark_through_lists(item, rest);
            }
            Value::Object(map)
        }
        (other, _) => other,
    }
}

/// Whether a value sets (to anything but null) an attribute at one of `paths`, through lists
/// of nested blocks as [`mark_schema`] marks them: whether marking would make a secret.
pub fn sets_any(value: &Value, paths: &[gpustack_protocol::Path]) -> bool {
    fn sets(value: &Value, path: &[PathStep]) -> bool {
        let value = value.peel();
        let Some((first, rest)) = path.split_first() else {
            return !value.is_null();
        };
        match (value, first) {
            (Value::List(items), _) => items.iter().any(|item| sets(item, path)),
            (Value::Object(map), PathStep::Key(k)) => map.get(k).is_some_and(|v| sets(v, rest)),
            _ => false,
        }
    }
    paths.iter().any(|p| sets(value, p))
}

/// The digests the state holds at `paths` of `state`.
pub(crate) fn stored_digests(
    state: &Value,
    paths: &[gpustack_protocol::Path],
) -> Vec<(gpustack_protocol::Path, String)> {
    paths
        .iter()
        .filter_map(|path| {
            let digest = state.at(path)?.as_str()?;
            is_digest(&Value::string(digest)).then(|| (path.clone(), digest.to_owned()))
        })
        .collect()
}

/// `live` with each secret a provider drew again kept only where its digest is the one the
/// state holds: a value drawn otherwise (another generator, another version) is not the
/// object's, and the state's digest stays in its place.
pub(crate) fn keep_matching_secrets(
    mut live: Value,
    digests: &[(gpustack_protocol::Path, String)],
    salt: &Salt,
) -> Value {
    for (path, digest) in digests {
        let Some(value) = live.at(path) else { continue };
        if is_digest(value) || salt.digest(value) == *digest {
            continue;
        }
        live = replace_at(live, path, Value::String(digest.clone()));
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_salted_and_ignore_key_order() {
        let a = Salt::new();
        let b = Salt::new();
        let v = Value::string("s3cret");
        assert_ne!(a.digest(&v), b.digest(&v));
        assert!(is_digest(&Value::string(a.digest(&v))));
        let x = Value::Object([("a".into(), Value::number(1.0)), ("b".into(), Value::Null)].into());
        let y = Value::Object([("b".into(), Value::Null), ("a".into(), Value::number(1.0))].into());
        assert_eq!(a.digest(&x), a.digest(&y));
        assert_eq!(Salt::from_hex(&a.to_hex()), Some(a));
    }

    #[test]
    fn encoding_keeps_digests_and_marks_and_decodes_back() {
        let salt = Salt::new();
        let value = Value::Object(
            [
                ("name".into(), Value::string("x")),
                ("password".into(), Value::sensitive(Value::string("s3cret"))),
                ("later".into(), Value::sensitive(Value::Unknown)),
            ]
            .into(),
        );
        let encoded = encode(&value, &salt);
        assert!(!encoded.json.to_string().contains("s3cret"));
        assert_eq!(
            encoded.sensitive,
            serde_json::json!({"password": true, "later": true})
        );
        assert_eq!(encoded.unknown, serde_json::json!({"later": true}));
        let back = decode(&encoded.json, &encoded.unknown, &encoded.sensitive);
        let stored = back.as_object().unwrap()["password"].clone();
        assert!(stored.is_sensitive() && is_digest(&stored));
        let hydrated = rehydrate(back, &value, &salt);
        assert_eq!(
            hydrated.as_object().unwrap()["password"],
            Value::string("s3cret")
        );
    }

    #[test]
    fn a_secret_moved_elsewhere_by_a_provider_is_found_by_its_digest() {
        let salt = Salt::new();
        let config = Value::Object([("data".into(), Value::string("s3cret"))].into());
        let prior = Value::Object(
            [(
                "object".into(),
                Value::sensitive(Value::string(salt.digest(&Value::string("s3cret")))),
            )]
            .into(),
        );
        let hydrated = rehydrate(prior, &config, &salt);
        assert_eq!(
            hydrated.as_object().unwrap()["object"],
            Value::string("s3cret")
        );
    }

    #[test]
    fn multi_line_strings_show_the_lines_without_secrets() {
        let salt = Salt::new();
        let text = "a: 1\npassword: s3cret\nb: 2\n";
        let masked = masked_lines(text, &["s3cret".into()], &salt).unwrap();
        assert!(
            masked.starts_with("a: 1\n(sensitive value)\u{2}hmac-sha256:"),
            "{masked}"
        );
        assert!(
            masked.ends_with("\nb: 2\n") && !masked.contains("s3cret"),
            "{masked}"
        );
        assert_eq!(masked_lines(text, &["czNjcmV0".into()], &salt), None);
        assert_eq!(masked_lines("s3cret\n", &["s3cret".into()], &salt), None);
        let leaked = mark_leaks(Value::string("token=s3cret"), &["s3cret".into()]);
        assert!(leaked.is_sensitive());
    }
}
