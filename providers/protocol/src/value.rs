use indexmap::IndexMap;
use std::fmt;

/// Numbers are IEEE doubles: exact for every integer a stack needs (counts, ports, replicas).
pub type Number = f64;

/// A dynamically typed value of the stack language.
///
/// Lists, sets and tuples share [`Value::List`]; maps and objects share [`Value::Object`]. The
/// distinction lives in [`crate::Type`], against which values are converted. `Unknown` is a value
/// that is only known after apply; it propagates through every operation that reads it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Unknown,
    Bool(bool),
    Number(Number),
    String(String),
    List(Vec<Value>),
    Object(IndexMap<String, Value>),
}

impl Value {
    pub fn string(s: impl Into<String>) -> Self {
        Value::String(s.into())
    }

    /// The name users see in type errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Unknown => "unknown value",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Object(_) => "object",
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }

    /// True when neither this value nor anything inside it is unknown.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(items) => items.iter().all(Value::is_wholly_known),
            Value::Object(map) => map.values().all(Value::is_wholly_known),
            _ => true,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<Number> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&IndexMap<String, Value>> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// JSON for values that are wholly known; unknowns become `null`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null | Value::Unknown => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => number_to_json(*n),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Object(map) => serde_json::Value::Object(
                map.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
            ),
        }
    }

    pub fn from_json(json: &serde_json::Value) -> Self {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(items) => {
                Value::List(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// Integers print without a fraction, as HCL and JSON users expect (`10`, not `10.0`).
pub fn format_number(n: Number) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn number_to_json(n: Number) -> serde_json::Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        serde_json::Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// Renders a value in HCL syntax, as `console` and diagnostics show it.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Unknown => f.write_str("(known after apply)"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => f.write_str(&format_number(*n)),
            Value::String(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Object(map) => {
                f.write_str("{")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} = {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_without_fraction() {
        assert_eq!(Value::Number(10.0).to_string(), "10");
        assert_eq!(Value::Number(1.5).to_string(), "1.5");
        assert_eq!(Value::Number(10.0).to_json(), serde_json::json!(10));
    }

    #[test]
    fn unknown_anywhere_makes_value_not_wholly_known() {
        let v = Value::List(vec![
            Value::Null,
            Value::Object([("a".into(), Value::Unknown)].into()),
        ]);
        assert!(!v.is_wholly_known());
        assert!(Value::List(vec![Value::Null]).is_wholly_known());
    }
}
