//! go-cty's type unification (`convert.Unify`, `convert.UnifyUnsafe`): the one type that
//! several values can all convert to, as a conditional's arms and the collection functions
//! need it (`true ? 1 : "a"` is `"1"`; `true ? 1 : true` is an error).
//!
//! Values carry no static type here: a value's type is inferred from what it is, a sequence
//! as a tuple of its elements' types and a mapping as an object of its attributes', nulls
//! and unknowns as the dynamic type. Unification over those follows go-cty's rules.

use gpustack_protocol::{ObjectAttr, Type, Value};
use std::collections::BTreeMap;

/// A value's type as go-cty would see the value of a literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Dynamic,
    String,
    Number,
    Bool,
    List(Box<Ty>),
    Map(Box<Ty>),
    Tuple(Vec<Ty>),
    Object(BTreeMap<String, Ty>),
}

pub fn type_of(v: &Value) -> Ty {
    match v.peel() {
        Value::Null | Value::Unknown | Value::Sensitive(_) => Ty::Dynamic,
        Value::String(_) => Ty::String,
        Value::Number(_) => Ty::Number,
        Value::Bool(_) => Ty::Bool,
        Value::List(items) => Ty::Tuple(items.iter().map(type_of).collect()),
        Value::Object(map) => {
            Ty::Object(map.iter().map(|(k, v)| (k.clone(), type_of(v))).collect())
        }
    }
}

impl Ty {
    /// The protocol type that converts a value to this one.
    pub fn to_type(&self) -> Type {
        match self {
            Ty::Dynamic => Type::Any,
            Ty::String => Type::String,
            Ty::Number => Type::Number,
            Ty::Bool => Type::Bool,
            Ty::List(e) => Type::list(e.to_type()),
            Ty::Map(e) => Type::map(e.to_type()),
            Ty::Tuple(es) => Type::Tuple(es.iter().map(Ty::to_type).collect()),
            Ty::Object(attrs) => Type::Object(
                attrs
                    .iter()
                    .map(|(k, t)| (k.clone(), ObjectAttr::required(t.to_type())))
                    .collect(),
            ),
        }
    }

    /// The name go-cty gives the kind of type, for messages.
    pub fn friendly(&self) -> &'static str {
        match self {
            Ty::Dynamic => "dynamic",
            Ty::String => "string",
            Ty::Number => "number",
            Ty::Bool => "bool",
            Ty::List(_) => "list",
            Ty::Map(_) => "map",
            Ty::Tuple(_) => "tuple",
            Ty::Object(_) => "object",
        }
    }
}

/// Whether go-cty has a conversion from `from` to `to` (`unsafe`: strings to numbers and
/// bools too, which may fail on the value).
fn convertible(from: &Ty, to: &Ty, unsafe_: bool) -> bool {
    match (from, to) {
        (a, b) if a == b => true,
        (Ty::Dynamic, _) | (_, Ty::Dynamic) => true,
        (Ty::Number | Ty::Bool, Ty::String) => true,
        (Ty::String, Ty::Number | Ty::Bool) => unsafe_,
        (Ty::Tuple(es), Ty::List(e)) => es.iter().all(|t| convertible(t, e, unsafe_)),
        (Ty::List(a), Ty::List(b)) | (Ty::Map(a), Ty::Map(b)) => convertible(a, b, unsafe_),
        (Ty::Tuple(a), Ty::Tuple(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| convertible(x, y, unsafe_))
        }
        (Ty::Object(attrs), Ty::Map(e)) => attrs.values().all(|t| convertible(t, e, unsafe_)),
        (Ty::Object(a), Ty::Object(b)) => {
            a.len() == b.len()
                && b.iter()
                    .all(|(k, t)| a.get(k).is_some_and(|s| convertible(s, t, unsafe_)))
        }
        _ => false,
    }
}

/// The type all of `types` convert to, as go-cty's `unify` chooses it; None when there is
/// none.
pub fn unify(types: &[Ty], unsafe_: bool) -> Option<Ty> {
    let first = types.first()?;
    if types.iter().all(|t| t == first) {
        return Some(first.clone());
    }
    let count = |f: fn(&Ty) -> bool| types.iter().filter(|t| f(t)).count();
    let maps = count(|t| matches!(t, Ty::Map(_)));
    let lists = count(|t| matches!(t, Ty::List(_)));
    let objects = count(|t| matches!(t, Ty::Object(_)));
    let tuples = count(|t| matches!(t, Ty::Tuple(_)));
    let dynamics = count(|t| matches!(t, Ty::Dynamic));
    let n = types.len();
    if maps > 0 && maps + dynamics == n {
        if dynamics > 0 {
            return Some(Ty::Dynamic);
        }
        let elems: Vec<Ty> = types.iter().filter_map(element).collect();
        return unify(&elems, unsafe_).map(|e| Ty::Map(Box::new(e)));
    }
    if lists > 0 && lists + dynamics == n {
        if dynamics > 0 {
            return Some(Ty::Dynamic);
        }
        let elems: Vec<Ty> = types.iter().filter_map(element).collect();
        return unify(&elems, unsafe_).map(|e| Ty::List(Box::new(e)));
    }
    if objects > 0 && objects + dynamics == n {
        if dynamics > 0 {
            return Some(Ty::Dynamic);
        }
        return unify_objects(types, unsafe_);
    }
    if tuples > 0 && tuples + dynamics == n {
        if dynamics > 0 {
            return Some(Ty::Dynamic);
        }
        return unify_tuples(types, unsafe_);
    }
    if maps > 0 && maps + objects + dynamics == n {
        let as_maps: Vec<Ty> = types
            .iter()
            .map(|t| object_as_map(t, unsafe_))
            .collect::<Option<_>>()?;
        return unify(&as_maps, unsafe_).filter(|t| matches!(t, Ty::Map(_)));
    }
    if lists > 0 && lists + tuples + dynamics == n {
        let as_lists: Vec<Ty> = types
            .iter()
            .map(|t| tuple_as_list(t, unsafe_))
            .collect::<Option<_>>()?;
        return unify(&as_lists, unsafe_).filter(|t| matches!(t, Ty::List(_)));
    }
    if objects > 0 && tuples > 0 {
        return None;
    }
    // Primitives: the most general type (strings before the others) that all convert to.
    let mut order: Vec<&Ty> = types.iter().filter(|t| matches!(t, Ty::String)).collect();
    order.extend(
        types
            .iter()
            .filter(|t| !matches!(t, Ty::String | Ty::Dynamic)),
    );
    order.extend(types.iter().filter(|t| matches!(t, Ty::Dynamic)));
    order
        .into_iter()
        .find(|want| types.iter().all(|t| convertible(t, want, unsafe_)))
        .cloned()
}

fn element(t: &Ty) -> Option<Ty> {
    match t {
        Ty::List(e) | Ty::Map(e) => Some((**e).clone()),
        _ => None,
    }
}

fn tuple_as_list(t: &Ty, unsafe_: bool) -> Option<Ty> {
    match t {
        Ty::Tuple(es) => unify(es, unsafe_)
            .or_else(|| es.is_empty().then_some(Ty::Dynamic))
            .map(|e| Ty::List(Box::new(e))),
        other => Some(other.clone()),
    }
}

fn object_as_map(t: &Ty, unsafe_: bool) -> Option<Ty> {
    match t {
        Ty::Object(attrs) => {
            let attrs: Vec<Ty> = attrs.values().cloned().collect();
            unify(&attrs, unsafe_)
                .or_else(|| attrs.is_empty().then_some(Ty::Dynamic))
                .map(|e| Ty::Map(Box::new(e)))
        }
        other => Some(other.clone()),
    }
}

fn unify_tuples(types: &[Ty], unsafe_: bool) -> Option<Ty> {
    let rows: Vec<&Vec<Ty>> = types
        .iter()
        .filter_map(|t| match t {
            Ty::Tuple(es) => Some(es),
            _ => None,
        })
        .collect();
    let len = rows.first().map_or(0, |r| r.len());
    if rows.iter().any(|r| r.len() != len) {
        // Tuples of different lengths unify only as a list of one element type.
        let all: Vec<Ty> = rows.iter().flat_map(|r| r.iter().cloned()).collect();
        return unify(&all, unsafe_).map(|e| Ty::List(Box::new(e)));
    }
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        let across: Vec<Ty> = rows.iter().map(|r| r[i].clone()).collect();
        out.push(unify(&across, unsafe_)?);
    }
    Some(Ty::Tuple(out))
}

fn unify_objects(types: &[Ty], unsafe_: bool) -> Option<Ty> {
    let objects: Vec<&BTreeMap<String, Ty>> = types
        .iter()
        .filter_map(|t| match t {
            Ty::Object(a) => Some(a),
            _ => None,
        })
        .collect();
    let first = objects.first()?;
    let same_names = objects
        .iter()
        .all(|o| o.len() == first.len() && o.keys().all(|k| first.contains_key(k)));
    if same_names {
        let mut out = BTreeMap::new();
        let mut ok = true;
        for name in first.keys() {
            let across: Vec<Ty> = objects.iter().map(|o| o[name].clone()).collect();
            match unify(&across, unsafe_) {
                Some(t) => {
                    out.insert(name.clone(), t);
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            return Some(Ty::Object(out));
        }
        return None;
    }
    // Objects with different attributes unify only as a map of one element type.
    let all: Vec<Ty> = objects.iter().flat_map(|o| o.values().cloned()).collect();
    unify(&all, unsafe_).map(|e| Ty::Map(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_unify_to_string_or_not_at_all() {
        assert_eq!(unify(&[Ty::Number, Ty::String], false), Some(Ty::String));
        assert_eq!(unify(&[Ty::Number, Ty::Bool], true), None);
        assert_eq!(unify(&[Ty::Dynamic, Ty::Number], false), Some(Ty::Number));
    }

    #[test]
    fn structures_unify_element_by_element() {
        let t = |es: Vec<Ty>| Ty::Tuple(es);
        assert_eq!(
            unify(&[t(vec![Ty::Number]), t(vec![Ty::String])], true),
            Some(t(vec![Ty::String]))
        );
        assert_eq!(
            unify(&[t(vec![Ty::Number]), t(vec![Ty::Number, Ty::Bool])], true),
            None
        );
        assert_eq!(
            unify(
                &[t(vec![Ty::Number]), t(vec![Ty::Number, Ty::Number])],
                true
            ),
            Some(Ty::List(Box::new(Ty::Number)))
        );
    }
}
