//! Functions over lists, sets and maps.

use super::*;

pub(super) fn length(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Unknown => Ok(Value::Unknown),
        Value::Null => Err(a.error(0, "argument must not be null")),
        Value::String(s) => ok_count(grapheme_count(s)),
        Value::List(items) => ok_count(items.len()),
        Value::Object(map) => ok_count(map.len()),
        _ => Err(a.error(
            0,
            "argument must be a string, a collection type, or a structural type",
        )),
    }
}

pub(super) fn coalesce(a: &Args<'_>) -> CallResult {
    // Terraform unifies the arguments' types: with any string among them, the result is a string.
    let any_string = a.values.iter().any(|v| matches!(v, Value::String(_)));
    for v in a.values {
        if !v.is_wholly_known() {
            return Ok(Value::Unknown);
        }
        match v {
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            Value::Number(_) | Value::Bool(_) if any_string => {
                return Ok(as_string(v).map_or(Value::Null, Value::String));
            }
            _ => return Ok(v.clone()),
        }
    }
    Err(CallError::call("no non-null, non-empty-string arguments"))
}

pub(super) fn coalescelist(a: &Args<'_>) -> CallResult {
    for i in 0..a.len() {
        let items = a.list(i)?;
        if !items.is_empty() {
            return Ok(Value::List(items.to_vec()));
        }
    }
    Err(CallError::call("no non-null arguments"))
}

pub(super) fn chunklist(a: &Args<'_>) -> CallResult {
    let items = a.list(0)?;
    let Ok(size) = usize::try_from(a.int(1)?) else {
        return Err(a.error(1, "the size argument must be positive"));
    };
    if size == 0 {
        return Ok(Value::List(vec![Value::List(items.to_vec())]));
    }
    Ok(Value::List(
        items
            .chunks(size)
            .map(|chunk| Value::List(chunk.to_vec()))
            .collect(),
    ))
}

pub(super) fn element(a: &Args<'_>) -> CallResult {
    let items = a.list(0)?;
    let index = a.int(1)?;
    if items.is_empty() {
        return Err(a.error(0, "cannot use element function with an empty list"));
    }
    // A negative index counts from the end, as OpenTofu's element has it.
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let index = usize::try_from(index.rem_euclid(len)).unwrap_or(0);
    items
        .get(index)
        .cloned()
        .ok_or_else(|| a.error(1, "index out of range"))
}

pub(super) fn flatten_into(items: &[Value], out: &mut Vec<Value>) {
    for item in items {
        match item {
            Value::List(inner) => flatten_into(inner, out),
            other => out.push(other.clone()),
        }
    }
}

pub(super) fn lookup(a: &Args<'_>) -> CallResult {
    let map = a.object(0)?;
    let key = a.string(1)?;
    match map.get(&key) {
        Some(v) => Ok(v.clone()),
        None if a.len() == 3 => Ok(a.get(2).clone()),
        None => Err(a.error(
            1,
            format!("lookup failed to find key {}", Value::String(key)),
        )),
    }
}

pub(super) fn matchkeys(a: &Args<'_>) -> CallResult {
    let (values, keys, search) = (a.list(0)?, a.list(1)?, a.list(2)?);
    if values.len() != keys.len() {
        return Err(CallError::call("length of keys and values should be equal"));
    }
    let picked = values
        .iter()
        .zip(keys)
        .filter(|(_, key)| search.iter().any(|s| loosely_equal(key, s)))
        .map(|(v, _)| v.clone())
        .collect();
    Ok(Value::List(picked))
}

pub(super) fn merge(a: &Args<'_>) -> CallResult {
    let mut out = IndexMap::new();
    for (i, v) in a.values.iter().enumerate() {
        match v {
            // Terraform skips null arguments.
            Value::Null => {}
            Value::Object(map) => out.extend(map.iter().map(|(k, v)| (k.clone(), v.clone()))),
            other => {
                return Err(a.error(
                    i,
                    format!(
                        "arguments must be maps or objects, got {}",
                        other.type_name()
                    ),
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

pub(super) fn setproduct(a: &Args<'_>) -> CallResult {
    let sets = (0..a.len())
        .map(|i| a.unified_lists(i..i + 1).map(|l| distinct(&l.concat())))
        .collect::<CallResult<Vec<_>>>()?;
    let total = sets
        .iter()
        .try_fold(1usize, |n, set| n.checked_mul(set.len()));
    if total.is_none_or(|n| n > MAX_ELEMENTS) {
        return Err(CallError::call(format!(
            "the product would have more than {MAX_ELEMENTS} elements"
        )));
    }
    let mut rows: Vec<Vec<Value>> = vec![Vec::new()];
    for set in &sets {
        rows = rows
            .iter()
            .flat_map(|row| {
                set.iter().map(move |item| {
                    let mut next = row.clone();
                    next.push(item.clone());
                    next
                })
            })
            .collect();
    }
    Ok(Value::List(rows.into_iter().map(Value::List).collect()))
}

pub(super) fn slice(a: &Args<'_>) -> CallResult {
    let items = a.list(0)?;
    let (start, end) = (a.int(1)?, a.int(2)?);
    let Ok(start) = usize::try_from(start) else {
        return Err(a.error(1, "start index must not be less than zero"));
    };
    let Ok(end) = usize::try_from(end) else {
        return Err(a.error(2, "end index must not be less than zero"));
    };
    if end > items.len() {
        return Err(a.error(
            2,
            "end index must not be greater than the length of the list",
        ));
    }
    match items.get(start..end) {
        Some(part) => Ok(Value::List(part.to_vec())),
        None => Err(a.error(1, "start index must not be greater than end index")),
    }
}

pub(super) fn transpose(a: &Args<'_>) -> CallResult {
    let mut out: IndexMap<String, Vec<Value>> = IndexMap::new();
    for (key, v) in sorted_entries(a.object(0)?) {
        let Value::List(items) = v else {
            return Err(a.error(0, "map of list of string required"));
        };
        for item in items {
            let target = match item {
                Value::Null => None,
                v => as_string(v),
            };
            let target = target.ok_or_else(|| a.error(0, "map of list of string required"))?;
            out.entry(target)
                .or_default()
                .push(Value::string(key.clone()));
        }
    }
    out.sort_keys();
    Ok(Value::Object(
        out.into_iter().map(|(k, v)| (k, Value::List(v))).collect(),
    ))
}

pub(super) fn zipmap(a: &Args<'_>) -> CallResult {
    let (keys, values) = (a.strings(0)?, a.list(1)?);
    if keys.len() != values.len() {
        return Err(CallError::call(format!(
            "number of keys ({}) does not match number of values ({})",
            keys.len(),
            values.len()
        )));
    }
    Ok(Value::Object(
        keys.into_iter().zip(values.iter().cloned()).collect(),
    ))
}

/// An object's entries in lexicographic key order, as Terraform's `keys` and `values` list them.
pub(super) fn sorted_entries(map: &IndexMap<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|x, y| x.0.cmp(y.0));
    entries
}

/// Equality as after HCL's conversion to a common type: `"1"` matches `1`, `"true"` matches `true`.
pub(super) fn loosely_equal(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::String(_), Value::Number(_) | Value::Bool(_))
        | (Value::Number(_) | Value::Bool(_), Value::String(_)) => as_string(x) == as_string(y),
        _ => x == y,
    }
}

/// A set's elements in the order Terraform gives them: without repeats, strings in lexical
/// and numbers in numeric order (cty's set order), others as they first occur.
pub(super) fn set_of(items: &[Value]) -> Vec<Value> {
    let mut set = distinct(items);
    gpustack_protocol::sort_set(&mut set);
    set
}

/// The elements without repeats, in first-occurrence order.
pub(super) fn distinct(items: &[Value]) -> Vec<Value> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter(|v| seen.insert(canonical(v)))
        .cloned()
        .collect()
}

pub(super) fn canonical_set(items: &[Value]) -> HashSet<String> {
    items.iter().map(canonical).collect()
}

/// A string equal for equal values (objects compare regardless of key order, as `Value`'s `==`
/// does), so sets can be hashed.
pub(super) fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Sensitive(m) => write(&m.value, out),
            Value::Null => out.push('N'),
            Value::Unknown => out.push('U'),
            Value::Bool(b) => out.push(if *b { 'T' } else { 'F' }),
            Value::Number(n) => {
                out.push('n');
                out.push_str(&format_number(n));
                out.push(';');
            }
            Value::String(s) => write_str(s, out),
            Value::List(items) => {
                out.push('[');
                items.iter().for_each(|item| write(item, out));
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (k, v) in sorted_entries(map) {
                    write_str(k, out);
                    write(v, out);
                }
                out.push('}');
            }
        }
    }
    fn write_str(s: &str, out: &mut String) {
        out.push('s');
        out.push_str(&s.len().to_string());
        out.push(':');
        out.push_str(s);
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}
