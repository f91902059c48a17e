//! Values to and from the plan's and the state's JSON, where an unknown value is `null` beside
//! a tree that marks it: what plan and the sensitive encoding share, with no module of theirs
//! importing the other for it.

use gpustack_protocol::Value;

#[cfg(test)]
/// Splits a value into JSON (unknowns as null) and a tree marking the unknowns: `true` for an
/// unknown value, an object/array of such trees for a partly unknown one, `false` otherwise.
pub(crate) fn split_unknowns(value: &Value) -> (serde_json::Value, serde_json::Value) {
    match value {
        Value::Unknown => (serde_json::Value::Null, serde_json::Value::Bool(true)),
        Value::List(items) => {
            let (values, unknowns): (Vec<_>, Vec<_>) = items.iter().map(split_unknowns).unzip();
            let any = unknowns
                .iter()
                .any(|u| *u != serde_json::Value::Bool(false));
            (
                serde_json::Value::Array(values),
                if any {
                    serde_json::Value::Array(unknowns)
                } else {
                    serde_json::Value::Bool(false)
                },
            )
        }
        Value::Object(map) => {
            let mut values = serde_json::Map::new();
            let mut unknowns = serde_json::Map::new();
            for (k, v) in map {
                let (json, unknown) = split_unknowns(v);
                values.insert(k.clone(), json);
                if unknown != serde_json::Value::Bool(false) {
                    unknowns.insert(k.clone(), unknown);
                }
            }
            let marks = if unknowns.is_empty() {
                serde_json::Value::Bool(false)
            } else {
                serde_json::Value::Object(unknowns)
            };
            (serde_json::Value::Object(values), marks)
        }
        other => (other.to_json(), serde_json::Value::Bool(false)),
    }
}

/// The inverse of [`split_unknowns`].
pub(crate) fn with_unknowns(json: &serde_json::Value, unknown: &serde_json::Value) -> Value {
    match unknown {
        serde_json::Value::Bool(true) => Value::Unknown,
        serde_json::Value::Array(marks) => match json {
            serde_json::Value::Array(items) => Value::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        with_unknowns(
                            item,
                            marks.get(i).unwrap_or(&serde_json::Value::Bool(false)),
                        )
                    })
                    .collect(),
            ),
            other => Value::from_json(other),
        },
        serde_json::Value::Object(marks) => match json {
            serde_json::Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            with_unknowns(
                                v,
                                marks.get(k).unwrap_or(&serde_json::Value::Bool(false)),
                            ),
                        )
                    })
                    .collect(),
            ),
            other => Value::from_json(other),
        },
        _ => Value::from_json(json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    #[test]
    fn unknowns_round_trip_through_json() {
        let value = Value::Object(IndexMap::from([
            ("a".to_owned(), Value::string("x")),
            ("b".to_owned(), Value::Unknown),
            (
                "c".to_owned(),
                Value::List(vec![Value::number(1.0), Value::Unknown]),
            ),
        ]));
        let (json, unknown) = split_unknowns(&value);
        assert_eq!(unknown, serde_json::json!({"b": true, "c": [false, true]}));
        assert_eq!(with_unknowns(&json, &unknown), value);
    }
}
