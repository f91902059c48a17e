//! `set`, `set_list` and `set_sensitive`: chart values at helm's dotted paths, typed as
//! `helm --set` types them.

use gpustack_protocol::Value;
use gpustack_provider_sdk::check::attribute;
use serde_json::Value as Json;

/// One step of a `--set` path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// `a.b\.c[0].d` → `a`, `b.c`, `0`, `d`, as helm reads a `--set` name; `Err` with the reason.
pub(crate) fn parse_path(name: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut key = String::new();
    let mut chars = name.chars().peekable();
    let mut after_index = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => key.push(escaped),
                None => return Err("ends in a lone backslash".into()),
            },
            '.' => {
                if key.is_empty() && !after_index {
                    return Err("has an empty key".into());
                }
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                after_index = false;
            }
            '[' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                let mut digits = String::new();
                loop {
                    match chars.next() {
                        Some(']') => break,
                        Some(d) if d.is_ascii_digit() => digits.push(d),
                        _ => return Err("has an index that is not [N]".into()),
                    }
                }
                let index = digits
                    .parse()
                    .map_err(|_| "has an index that is not [N]".to_owned())?;
                steps.push(Step::Index(index));
                after_index = true;
            }
            c => {
                if after_index {
                    return Err("has a key right after an index (write [N].key)".into());
                }
                key.push(c);
            }
        }
    }
    if !key.is_empty() {
        steps.push(Step::Key(key));
    } else if !after_index {
        return Err("has an empty key".into());
    }
    Ok(steps)
}

/// A `--set` value as helm types it: `true`/`false`, `null` and whole numbers become what they
/// say (`type = "string"` keeps the text).
pub(crate) fn typed(text: &str, as_string: bool) -> Json {
    if as_string {
        return Json::String(text.to_owned());
    }
    if text.eq_ignore_ascii_case("true") {
        return Json::Bool(true);
    }
    if text.eq_ignore_ascii_case("false") {
        return Json::Bool(false);
    }
    if text == "null" {
        return Json::Null;
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && let Ok(n) = text.parse::<i64>()
    {
        return Json::from(n);
    }
    Json::String(text.to_owned())
}

/// Puts `value` at `path` in `root`, making the objects and lists on the way (a list grows
/// with nulls to the index, as helm's does).
pub(crate) fn put(root: &mut Json, path: &[Step], value: Json) {
    let Some((first, rest)) = path.split_first() else {
        *root = value;
        return;
    };
    let slot = match first {
        Step::Key(key) => {
            if !root.is_object() {
                *root = Json::Object(Default::default());
            }
            let Json::Object(map) = root else {
                return;
            };
            map.entry(key.clone()).or_insert(Json::Null)
        }
        Step::Index(i) => {
            if !root.is_array() {
                *root = Json::Array(Vec::new());
            }
            let Json::Array(items) = root else {
                return;
            };
            if items.len() <= *i {
                items.resize(*i + 1, Json::Null);
            }
            &mut items[*i]
        }
    };
    put(slot, rest, value);
}

/// Removes what `path` names from `root` (a refreshed release's values, whose sensitive ones
/// the state never holds).
pub(crate) fn remove(root: &mut Json, path: &[Step]) {
    match path {
        [] => {}
        [Step::Key(key)] => {
            if let Json::Object(map) = root {
                map.remove(key);
            }
        }
        [Step::Index(i)] => {
            if let Json::Array(items) = root
                && let Some(item) = items.get_mut(*i)
            {
                *item = Json::Null;
            }
        }
        [first, rest @ ..] => {
            let next = match (first, root) {
                (Step::Key(key), Json::Object(map)) => map.get_mut(key),
                (Step::Index(i), Json::Array(items)) => items.get_mut(*i),
                _ => None,
            };
            if let Some(next) = next {
                remove(next, rest);
            }
        }
    }
}

/// The entries of one of the `set` block types, in order: (index, name, value as helm types it).
pub(crate) fn entries(config: &Value, kind: &str) -> Vec<(usize, String, Json)> {
    let Some(blocks) = attribute(config, kind).and_then(Value::as_list) else {
        return Vec::new();
    };
    blocks
        .iter()
        .enumerate()
        .filter_map(|(i, block)| {
            let name = attribute(block, "name")?.as_str()?.to_owned();
            let value = attribute(block, "value");
            let json = if kind == "set_list" {
                Json::Array(
                    value
                        .and_then(Value::as_list)
                        .unwrap_or_default()
                        .iter()
                        .map(|v| v.as_str().map_or(Json::Null, |s| typed(s, false)))
                        .collect(),
                )
            } else {
                let as_string = attribute(block, "type").and_then(Value::as_str) == Some("string");
                value
                    .and_then(Value::as_str)
                    .map_or(Json::Null, |s| typed(s, as_string))
            };
            Some((i, name, json))
        })
        .collect()
}

/// Applies `set` and `set_list` to chart values, in helm's order (every `--set` after every
/// `-f`, the provider's `set` before `set_list`).
pub(crate) fn apply_sets(values: &mut Json, config: &Value) {
    for kind in ["set", "set_list"] {
        for (_, name, value) in entries(config, kind) {
            if let Ok(path) = parse_path(&name) {
                put(values, &path, value);
            }
        }
    }
}

/// The `set_sensitive` values, then the write-only `set_wo` ones (present only while a change
/// is applied), as chart values of their own (a second values file).
pub(crate) fn sensitive_values(config: &Value) -> Option<Json> {
    let mut found = entries(config, "set_sensitive");
    found.extend(entries(config, "set_wo"));
    let entries = found;
    if entries.is_empty() {
        return None;
    }
    let mut values = Json::Object(Default::default());
    for (_, name, value) in entries {
        if let Ok(path) = parse_path(&name) {
            put(&mut values, &path, value);
        }
    }
    Some(values)
}

/// Takes the `set_sensitive` and `set_wo` paths out of values helm reports.
pub(crate) fn strip_sensitive(values: &mut Json, config: &Value) {
    let mut hidden: Vec<String> = entries(config, "set_sensitive")
        .into_iter()
        .chain(entries(config, "set_wo"))
        .map(|(_, name, _)| name)
        .collect();
    hidden.extend(
        attribute(config, "set_wo_paths")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned)),
    );
    for name in hidden {
        if let Ok(path) = parse_path(&name) {
            remove(values, &path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_read_as_helm_reads_them() {
        assert_eq!(
            parse_path("devicePlugin.config.name").unwrap(),
            [
                Step::Key("devicePlugin".into()),
                Step::Key("config".into()),
                Step::Key("name".into())
            ]
        );
        assert_eq!(
            parse_path(r"nodeSelector.nvidia\.com/gpu\.present").unwrap(),
            [
                Step::Key("nodeSelector".into()),
                Step::Key("nvidia.com/gpu.present".into())
            ]
        );
        assert_eq!(
            parse_path("tolerations[1].key").unwrap(),
            [
                Step::Key("tolerations".into()),
                Step::Index(1),
                Step::Key("key".into())
            ]
        );
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a[x]").is_err());
    }

    #[test]
    fn values_are_typed_as_helm_types_them() {
        assert_eq!(typed("true", false), json!(true));
        assert_eq!(typed("false", true), json!("false"));
        assert_eq!(typed("10", false), json!(10));
        assert_eq!(typed("010", false), json!("010"));
        assert_eq!(typed("1.5", false), json!("1.5"));
        assert_eq!(typed("null", false), Json::Null);
        assert_eq!(typed("any", false), json!("any"));
    }

    #[test]
    fn a_set_builds_the_objects_and_lists_on_its_way() {
        let mut values = json!({"driver": {"enabled": true}});
        put(
            &mut values,
            &parse_path("driver.enabled").unwrap(),
            json!(false),
        );
        put(
            &mut values,
            &parse_path("tolerations[1].key").unwrap(),
            json!("k"),
        );
        assert_eq!(
            values,
            json!({"driver": {"enabled": false}, "tolerations": [null, {"key": "k"}]})
        );
        remove(&mut values, &parse_path("tolerations[1].key").unwrap());
        assert_eq!(
            values,
            json!({"driver": {"enabled": false}, "tolerations": [null, {}]})
        );
    }
}
