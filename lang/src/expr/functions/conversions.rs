//! Type conversions: `tostring`, `tonumber`, `tobool`, `tolist`, `toset`, `tomap`.

use super::*;

pub(super) fn tostring(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v => as_string(v)
            .map(Value::String)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to string", v.type_name()))),
    }
}

pub(super) fn tonumber(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v @ Value::String(_) => as_number(v).map(Value::Number).ok_or_else(|| {
            a.error(
                0,
                format!("cannot convert {v} to number; given string must be a decimal representation of a number"),
            )
        }),
        v => as_number(v)
            .map(Value::Number)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to number", v.type_name()))),
    }
}

pub(super) fn tobool(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v @ Value::String(_) => as_bool(v).map(Value::Bool).ok_or_else(|| {
            a.error(
                0,
                format!(
                    "cannot convert {v} to bool; only the strings \"true\" or \"false\" are allowed"
                ),
            )
        }),
        v => as_bool(v)
            .map(Value::Bool)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to bool", v.type_name()))),
    }
}

pub(super) fn to_sequence(a: &Args<'_>, set: bool) -> CallResult {
    let kind = if set { "set" } else { "list" };
    let items = match a.get(0) {
        Value::Null => return Ok(Value::Null),
        Value::List(items) => items,
        v => {
            return Err(a.error(
                0,
                format!(
                    "cannot convert {} to {kind} of any single type",
                    v.type_name()
                ),
            ));
        }
    };
    let items = unify(items).ok_or_else(|| {
        a.error(
            0,
            format!("cannot convert list to {kind} of any single type"),
        )
    })?;
    Ok(Value::List(if set { set_of(&items) } else { items }))
}

pub(super) fn tomap(a: &Args<'_>) -> CallResult {
    let map = match a.get(0) {
        Value::Null => return Ok(Value::Null),
        Value::Object(map) => map,
        v => {
            return Err(a.error(
                0,
                format!("cannot convert {} to map of any single type", v.type_name()),
            ));
        }
    };
    let values: Vec<Value> = map.values().cloned().collect();
    let values = unify(&values)
        .ok_or_else(|| a.error(0, "cannot convert object to map of any single type"))?;
    Ok(Value::Object(map.keys().cloned().zip(values).collect()))
}

/// Converts elements to one type the way HCL unifies a tuple into a list: a mix of primitives
/// becomes strings when any is a string. None when no single type fits.
pub(super) fn unify(items: &[Value]) -> Option<Vec<Value>> {
    let kinds: HashSet<&str> = items
        .iter()
        .filter(|v| !v.is_null())
        .map(Value::type_name)
        .collect();
    if kinds.len() <= 1 {
        return Some(items.to_vec());
    }
    let primitive = kinds
        .iter()
        .all(|k| matches!(*k, "string" | "number" | "bool"));
    if !(primitive && kinds.contains("string")) {
        return None;
    }
    items
        .iter()
        .map(|v| {
            if v.is_null() {
                Some(Value::Null)
            } else {
                as_string(v).map(Value::String)
            }
        })
        .collect()
}
