//! JSON helpers for Kubernetes objects: what gpustack manages of an object is the set of
//! fields its configuration names, so comparisons project live objects onto that shape.

use serde_json::Value as Json;

/// Drops null members of objects, at every depth: HCL writes `x = null` for "not set", which
/// server-side apply would read as "remove this field".
pub fn strip_nulls(value: &Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The fields of `live` that `template` names. Lists are taken element by element, with
/// elements beyond the template's taken whole; a field the live object lacks is left out.
pub fn project(template: &Json, live: &Json) -> Json {
    match (template, live) {
        (Json::Object(t), Json::Object(l)) => Json::Object(
            t.iter()
                .filter_map(|(k, tv)| l.get(k).map(|lv| (k.clone(), project(tv, lv))))
                .collect(),
        ),
        (Json::Array(t), Json::Array(l)) => Json::Array(
            l.iter()
                .enumerate()
                .map(|(i, lv)| t.get(i).map_or_else(|| lv.clone(), |tv| project(tv, lv)))
                .collect(),
        ),
        (_, live) => live.clone(),
    }
}

/// Follows a kubectl-style JSONPath of fields and indexes: `{.status.state}`,
/// `.metadata.labels.nvidia\.com/mig\.config\.state`, `status.conditions[0].type`.
pub fn json_path<'a>(value: &'a Json, path: &str) -> Option<&'a Json> {
    let mut current = value;
    for step in path_steps(path) {
        current = match step {
            Step::Field(name) => current.get(name.as_str())?,
            Step::Index(i) => current.get(i)?,
        };
    }
    Some(current)
}

enum Step {
    Field(String),
    Index(usize),
}

fn path_steps(path: &str) -> Vec<Step> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('.').unwrap_or(path);
    let mut steps = Vec::new();
    let mut field = String::new();
    let mut chars = path.chars().peekable();
    let flush = |field: &mut String, steps: &mut Vec<Step>| {
        if !field.is_empty() {
            steps.push(Step::Field(std::mem::take(field)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    field.push(next);
                }
            }
            '.' => flush(&mut field, &mut steps),
            '[' => {
                flush(&mut field, &mut steps);
                let mut index = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    index.push(d);
                }
                let index = index.trim_matches(|q| q == '\'' || q == '"');
                match index.parse() {
                    Ok(i) => steps.push(Step::Index(i)),
                    Err(_) => steps.push(Step::Field(index.to_owned())),
                }
            }
            other => field.push(other),
        }
    }
    flush(&mut field, &mut steps);
    steps
}

/// How a value reads in a JSONPath comparison: strings bare, everything else as JSON.
pub fn scalar_text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn projection_keeps_only_named_fields() {
        let template = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let live = json!({
            "metadata": {"name": "a", "uid": "u", "labels": {"x": "2", "y": "3"}},
            "data": {"k": "v", "other": "o"}
        });
        assert_eq!(
            project(&template, &live),
            json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn projection_takes_extra_list_elements_whole() {
        let template = json!({"items": [{"a": 1}]});
        let live = json!({"items": [{"a": 1, "b": 2}, {"a": 3}]});
        assert_eq!(
            project(&template, &live),
            json!({"items": [{"a": 1}, {"a": 3}]})
        );
    }

    #[test]
    fn json_paths_follow_escapes_and_indexes() {
        let object = json!({
            "metadata": {"labels": {"nvidia.com/mig.config.state": "success"}},
            "status": {"conditions": [{"type": "Ready"}]}
        });
        assert_eq!(
            json_path(
                &object,
                "{.metadata.labels.nvidia\\.com/mig\\.config\\.state}"
            ),
            Some(&json!("success"))
        );
        assert_eq!(
            json_path(&object, ".status.conditions[0].type"),
            Some(&json!("Ready"))
        );
        assert_eq!(json_path(&object, "status.missing"), None);
    }

    #[test]
    fn nulls_are_dropped_at_every_depth() {
        assert_eq!(
            strip_nulls(&json!({"a": null, "b": {"c": null, "d": [ {"e": null} ]}})),
            json!({"b": {"d": [{}]}})
        );
    }
}
