use crate::value::{Value, format_number};
use indexmap::IndexMap;
use std::fmt;

/// A type constraint: what a variable declares and what a schema attribute accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Any,
    String,
    Number,
    Bool,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>),
    Tuple(Vec<Type>),
    Object(IndexMap<String, ObjectAttr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ObjectAttr {
    pub ty: Type,
    pub optional: bool,
    pub default: Option<Value>,
}

impl ObjectAttr {
    pub fn required(ty: Type) -> Self {
        Self {
            ty,
            optional: false,
            default: None,
        }
    }

    pub fn optional(ty: Type) -> Self {
        Self {
            ty,
            optional: true,
            default: None,
        }
    }
}

/// Why a value does not fit a type; `path` locates the offending element (`[0].name`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ConversionError {
    pub path: String,
    pub message: String,
}

impl ConversionError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            path: String::new(),
            message: message.into(),
        }
    }

    fn within(mut self, step: &str) -> Self {
        self.path = format!("{step}{}", self.path);
        self
    }
}

impl Type {
    pub fn list(of: Type) -> Self {
        Type::List(Box::new(of))
    }

    pub fn set(of: Type) -> Self {
        Type::Set(Box::new(of))
    }

    pub fn map(of: Type) -> Self {
        Type::Map(Box::new(of))
    }

    pub fn object<'a>(attrs: impl IntoIterator<Item = (&'a str, ObjectAttr)>) -> Self {
        Type::Object(attrs.into_iter().map(|(k, a)| (k.to_owned(), a)).collect())
    }

    /// Converts `value` to this type the way HCL does: numbers and bools become strings, numeric
    /// and boolean strings become numbers and bools, object attributes missing from an
    /// `optional(...)` attribute take its default. Null and unknown values fit every type.
    // Long by design: HCL's conversion table, one arm per target type.
    pub fn convert(&self, value: &Value) -> Result<Value, ConversionError> {
        if let Value::Sensitive(m) = value {
            return self
                .convert(&m.value)
                .map(|v| Value::marked(v, m.fragments.clone()));
        }
        if matches!(value, Value::Null | Value::Unknown) {
            return Ok(value.clone());
        }
        match self {
            Type::Any => Ok(value.clone()),
            Type::String => match value {
                Value::String(_) => Ok(value.clone()),
                Value::Number(n) => Ok(Value::String(format_number(n))),
                Value::Bool(b) => Ok(Value::String(b.to_string())),
                other => Err(mismatch("string", other)),
            },
            Type::Number => match value {
                Value::Number(_) => Ok(value.clone()),
                Value::String(s) => {
                    crate::Number::parse(s)
                        .ok()
                        .map(Value::Number)
                        .ok_or_else(|| {
                            ConversionError::new(format!(
                                "a number is required, got the string {value}"
                            ))
                        })
                }
                other => Err(mismatch("number", other)),
            },
            Type::Bool => match value {
                Value::Bool(_) => Ok(value.clone()),
                Value::String(s) if s == "true" => Ok(Value::Bool(true)),
                Value::String(s) if s == "false" => Ok(Value::Bool(false)),
                other => Err(mismatch("bool", other)),
            },
            Type::List(elem) | Type::Set(elem) => {
                let Value::List(items) = value else {
                    return Err(mismatch(&self.to_string(), value));
                };
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let converted = elem
                        .convert(item)
                        .map_err(|e| e.within(&format!("[{i}]")))?;
                    if matches!(self, Type::Set(_)) && out.contains(&converted) {
                        continue;
                    }
                    out.push(converted);
                }
                if matches!(self, Type::Set(_)) {
                    sort_set(&mut out);
                }
                Ok(Value::List(out))
            }
            Type::Map(elem) => {
                let Value::Object(map) = value else {
                    return Err(mismatch(&self.to_string(), value));
                };
                let mut out = IndexMap::with_capacity(map.len());
                for (k, v) in map {
                    let converted = elem
                        .convert(v)
                        .map_err(|e| e.within(&format!("[{}]", Value::string(k.clone()))))?;
                    out.insert(k.clone(), converted);
                }
                out.sort_unstable_keys();
                Ok(Value::Object(out))
            }
            Type::Tuple(elems) => {
                let Value::List(items) = value else {
                    return Err(mismatch(&self.to_string(), value));
                };
                if items.len() != elems.len() {
                    return Err(ConversionError::new(format!(
                        "a tuple of {} elements is required, got {}",
                        elems.len(),
                        items.len()
                    )));
                }
                let converted = elems
                    .iter()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (t, v))| t.convert(v).map_err(|e| e.within(&format!("[{i}]"))))
                    .collect::<Result<_, _>>()?;
                Ok(Value::List(converted))
            }
            Type::Object(attrs) => {
                let Value::Object(map) = value else {
                    return Err(mismatch("object", value));
                };
                let mut out = IndexMap::with_capacity(attrs.len());
                for (name, attr) in attrs {
                    match map.get(name) {
                        Some(v) if !v.is_null() => {
                            out.insert(
                                name.clone(),
                                attr.ty
                                    .convert(v)
                                    .map_err(|e| e.within(&format!(".{name}")))?,
                            );
                        }
                        _ if attr.optional => {
                            let default = attr.default.clone().unwrap_or(Value::Null);
                            out.insert(
                                name.clone(),
                                attr.ty
                                    .convert(&default)
                                    .map_err(|e| e.within(&format!(".{name}")))?,
                            );
                        }
                        Some(_) => {
                            out.insert(name.clone(), Value::Null);
                        }
                        None => {
                            return Err(ConversionError::new(format!(
                                "attribute \"{name}\" is required"
                            )));
                        }
                    }
                }
                out.sort_unstable_keys();
                Ok(Value::Object(out))
            }
        }
    }
}

fn mismatch(expected: &str, got: &Value) -> ConversionError {
    ConversionError::new(format!("{expected} required, got {}", got.type_name()))
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => f.write_str("any"),
            Type::String => f.write_str("string"),
            Type::Number => f.write_str("number"),
            Type::Bool => f.write_str("bool"),
            Type::List(t) => write!(f, "list({t})"),
            Type::Set(t) => write!(f, "set({t})"),
            Type::Map(t) => write!(f, "map({t})"),
            Type::Tuple(ts) => {
                f.write_str("tuple([")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str("])")
            }
            Type::Object(attrs) => {
                f.write_str("object({")?;
                for (i, (k, a)) in attrs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if a.optional {
                        write!(f, "{k} = optional({})", a.ty)?;
                    } else {
                        write!(f, "{k} = {}", a.ty)?;
                    }
                }
                f.write_str("})")
            }
        }
    }
}

/// A set's elements in cty's order, as Terraform holds a set: strings lexically (by bytes),
/// numbers numerically, false before true; sets of other elements keep their order.
pub fn sort_set(set: &mut [Value]) {
    if set.iter().all(|v| matches!(v, Value::String(_))) {
        set.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    } else if set.iter().all(|v| matches!(v, Value::Number(_))) {
        set.sort_by(|a, b| match (a.as_exact_number(), b.as_exact_number()) {
            (Some(a), Some(b)) => a.cmp_value(b),
            _ => std::cmp::Ordering::Equal,
        });
    } else if set.iter().all(|v| matches!(v, Value::Bool(_))) {
        set.sort_by_key(|v| matches!(v, Value::Bool(true)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_convert_like_hcl() {
        assert_eq!(
            Type::String.convert(&Value::number(3)),
            Ok(Value::string("3"))
        );
        assert_eq!(
            Type::Number.convert(&Value::string("10")),
            Ok(Value::number(10))
        );
        assert_eq!(
            Type::Bool.convert(&Value::string("true")),
            Ok(Value::Bool(true))
        );
        assert!(Type::Number.convert(&Value::string("ten")).is_err());
        assert!(Type::String.convert(&Value::List(vec![])).is_err());
    }

    #[test]
    fn errors_locate_the_element() {
        let t = Type::list(Type::object([(
            "replicas",
            ObjectAttr::required(Type::Number),
        )]));
        let v = Value::List(vec![Value::Object(
            [("replicas".into(), Value::string("x"))].into(),
        )]);
        let err = t.convert(&v).unwrap_err();
        assert_eq!(err.path, "[0].replicas");
    }

    #[test]
    fn optional_attributes_take_defaults() {
        let t = Type::object([(
            "replicas",
            ObjectAttr {
                ty: Type::Number,
                optional: true,
                default: Some(Value::number(2)),
            },
        )]);
        let out = t.convert(&Value::Object(IndexMap::new())).unwrap();
        assert_eq!(out.as_object().unwrap()["replicas"], Value::number(2));
    }

    #[test]
    fn sets_drop_duplicates_and_unknowns_pass() {
        let v = Value::List(vec![Value::string("a"), Value::string("a")]);
        assert_eq!(
            Type::set(Type::String).convert(&v).unwrap(),
            Value::List(vec![Value::string("a")])
        );
        assert_eq!(Type::Number.convert(&Value::Unknown), Ok(Value::Unknown));
    }
}
