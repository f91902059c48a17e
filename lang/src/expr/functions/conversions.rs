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

/// Converts elements to the one type go-cty unifies them to, as it converts a tuple to a list
/// or an object to a map: primitives to strings when any is a string, and the attributes and
/// elements of nested values likewise (`[{a = 1}, {a = "x"}]` to `[{a = "1"}, {a = "x"}]`).
/// None when no single type fits.
pub(super) fn unify(items: &[Value]) -> Option<Vec<Value>> {
    let types: Vec<crate::expr::unify::Ty> =
        items.iter().map(crate::expr::unify::type_of).collect();
    if types.iter().all(|t| Some(t) == types.first()) {
        return Some(items.to_vec());
    }
    let target = crate::expr::unify::unify(&types, false)?;
    // A null beside structural values leaves the element type dynamic, which go-cty does not
    // convert a tuple to (`tolist([null, {a = 1}])` is an error; beside primitives the null
    // takes their type).
    if target == crate::expr::unify::Ty::Dynamic {
        return None;
    }
    let target = target.to_type();
    items.iter().map(|v| target.convert(v).ok()).collect()
}
