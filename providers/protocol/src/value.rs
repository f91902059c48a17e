pub use crate::number::Number;
use indexmap::IndexMap;
use std::fmt;

/// A dynamically typed value of the stack language.
///
/// Lists, sets and tuples share [`Value::List`]; maps and objects share [`Value::Object`]. The
/// distinction lives in [`crate::Type`], against which values are converted. `Unknown` is a value
/// that is only known after apply; it propagates through every operation that reads it.
/// `Sensitive` marks a value (or a part of one) as a secret: every operation that reads it
/// marks its result, and every renderer shows it as `(sensitive value)`. Marks never change
/// what a value is: equality and the accessors look through them.
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Unknown,
    Bool(bool),
    Number(Number),
    String(String),
    List(Vec<Value>),
    Object(IndexMap<String, Value>),
    Sensitive(Box<Marked>),
}

/// A sensitive value and the texts a renderer must hide wherever they appear in it.
#[derive(Debug, Clone)]
pub struct Marked {
    pub value: Value,
    /// The sensitive texts that went into `value` as they entered it (the interpolated part
    /// of a template, the secret leaves of a function's arguments). A multi-line string whose
    /// fragments can all be found in it may show its other lines; otherwise it shows nothing.
    pub fragments: Vec<String>,
}

impl PartialEq for Value {
    /// Marks are not part of a value: a secret equals the same value unmarked.
    fn eq(&self, other: &Self) -> bool {
        match (self.peel(), other.peel()) {
            (Value::Null, Value::Null) | (Value::Unknown, Value::Unknown) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            _ => false,
        }
    }
}

/// One step of a path into a value: an attribute or map key, or a list index.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(untagged)]
pub enum PathStep {
    Index(usize),
    Key(String),
}

/// A path into a value, such as `["manifest", "data", "password"]`.
pub type Path = Vec<PathStep>;

/// `manifest.data["tls.key"]`, `node_taints[1]`: a path as users write it.
/// `resource_limits[1].resource_type` as a path, the way providers name an attribute.
pub fn path_of_text(text: &str) -> Vec<PathStep> {
    let mut path = Vec::new();
    for part in text.split('.') {
        let mut pieces = part.split('[');
        if let Some(name) = pieces.next().filter(|n| !n.is_empty()) {
            path.push(PathStep::Key(name.to_owned()));
        }
        for index in pieces {
            match index.trim_end_matches(']').parse() {
                Ok(i) => path.push(PathStep::Index(i)),
                Err(_) => path.push(PathStep::Key(index.trim_end_matches(']').to_owned())),
            }
        }
    }
    path
}

pub fn path_text(path: &[PathStep]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            PathStep::Index(i) => out.push_str(&format!("[{i}]")),
            PathStep::Key(k) => {
                let bare = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                } else {
                    out.push_str(&format!("[{}]", serde_json::Value::String(k.clone())));
                }
            }
        }
    }
    out
}

impl Value {
    pub fn string(s: impl Into<String>) -> Self {
        Value::String(s.into())
    }

    /// The value marked sensitive, its scalar leaves the texts to hide; a marked value keeps
    /// its marks.
    pub fn sensitive(value: Value) -> Value {
        if matches!(value, Value::Sensitive(_)) {
            return value;
        }
        let mut fragments = Vec::new();
        value.leaf_texts(&mut fragments);
        crate::secrets::remember(&fragments);
        Value::Sensitive(Box::new(Marked { value, fragments }))
    }

    /// The value marked sensitive with the given fragments (merged with marks it has).
    pub fn marked(value: Value, mut fragments: Vec<String>) -> Value {
        crate::secrets::remember(&fragments);
        match value {
            Value::Sensitive(mut m) => {
                for f in fragments {
                    if !m.fragments.contains(&f) {
                        m.fragments.push(f);
                    }
                }
                Value::Sensitive(m)
            }
            value => {
                fragments.dedup();
                Value::Sensitive(Box::new(Marked { value, fragments }))
            }
        }
    }

    /// The value without its top-level marks.
    pub fn peel(&self) -> &Value {
        let mut v = self;
        while let Value::Sensitive(m) = v {
            v = &m.value;
        }
        v
    }

    /// True when the value itself is marked sensitive.
    pub fn is_sensitive(&self) -> bool {
        matches!(self, Value::Sensitive(_))
    }

    /// True when the value or anything inside it is marked sensitive.
    pub fn contains_sensitive(&self) -> bool {
        match self {
            Value::Sensitive(_) => true,
            Value::List(items) => items.iter().any(Value::contains_sensitive),
            Value::Object(map) => map.values().any(Value::contains_sensitive),
            _ => false,
        }
    }

    /// The value without its top-level mark, and the mark's fragments if it had one.
    pub fn unmark(self) -> (Value, Option<Vec<String>>) {
        match self {
            Value::Sensitive(m) => {
                let Marked {
                    value,
                    mut fragments,
                } = *m;
                let (value, inner) = value.unmark();
                fragments.extend(inner.into_iter().flatten());
                (value, Some(fragments))
            }
            value => (value, None),
        }
    }

    /// The value with every mark removed, and the paths that were marked (outermost only).
    pub fn unmark_deep(self) -> (Value, Vec<Path>) {
        if !self.contains_sensitive() {
            return (self, Vec::new());
        }
        let mut paths = Vec::new();
        let value = self.unmark_at(&mut Vec::new(), &mut paths);
        (value, paths)
    }

    fn unmark_at(self, at: &mut Path, paths: &mut Vec<Path>) -> Value {
        let (value, mark) = self.unmark();
        let marked = mark.is_some();
        if marked {
            paths.push(at.clone());
        }
        match value {
            Value::List(items) => Value::List(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        at.push(PathStep::Index(i));
                        let v = if marked {
                            item.unmark_deep().0
                        } else {
                            item.unmark_at(at, paths)
                        };
                        at.pop();
                        v
                    })
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, item)| {
                        at.push(PathStep::Key(k.clone()));
                        let v = if marked {
                            item.unmark_deep().0
                        } else {
                            item.unmark_at(at, paths)
                        };
                        at.pop();
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    /// The texts every mark inside this value hides: what a result computed from it must hide.
    pub fn sensitive_fragments(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_fragments(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_fragments(&self, out: &mut Vec<String>) {
        match self {
            Value::Sensitive(m) => {
                m.value.leaf_texts(out);
                out.extend(m.fragments.iter().cloned());
            }
            Value::List(items) => items.iter().for_each(|v| v.collect_fragments(out)),
            Value::Object(map) => map.values().for_each(|v| v.collect_fragments(out)),
            _ => {}
        }
    }

    /// The text of every known scalar inside (strings as they are, numbers and bools as
    /// templates write them).
    fn leaf_texts(&self, out: &mut Vec<String>) {
        match self {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(format_number(n)),
            Value::Bool(b) => out.push(b.to_string()),
            Value::List(items) => items.iter().for_each(|v| v.leaf_texts(out)),
            Value::Object(map) => map.values().for_each(|v| v.leaf_texts(out)),
            Value::Sensitive(m) => m.value.leaf_texts(out),
            Value::Null | Value::Unknown => {}
        }
    }

    /// The value with the given paths marked sensitive; paths that do not exist are ignored.
    pub fn mark_paths(self, paths: &[Path]) -> Value {
        paths.iter().fold(self, |v, p| v.mark_path_with(p, &[]))
    }

    /// Every outermost mark in this value: its path and the texts it hides.
    pub fn sensitive_marks(&self) -> Vec<(Path, Vec<String>)> {
        fn walk(v: &Value, at: &mut Path, out: &mut Vec<(Path, Vec<String>)>) {
            match v {
                Value::Sensitive(m) => out.push((at.clone(), m.fragments.clone())),
                Value::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        at.push(PathStep::Index(i));
                        walk(item, at, out);
                        at.pop();
                    }
                }
                Value::Object(map) => {
                    for (k, item) in map {
                        at.push(PathStep::Key(k.clone()));
                        walk(item, at, out);
                        at.pop();
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        if self.contains_sensitive() {
            walk(self, &mut Vec::new(), &mut out);
        }
        out
    }

    /// The value with marks put back where [`Value::sensitive_marks`] found them (a value
    /// that went to a provider unmarked and came back).
    pub fn mark_with(self, marks: &[(Path, Vec<String>)]) -> Value {
        marks.iter().fold(self, |v, (path, fragments)| {
            v.mark_path_with(path, fragments)
        })
    }

    /// Marks the part at `path` (not a part already marked, nor a null, which hides nothing)
    /// with `fragments` where they are all still in it, else as a whole.
    fn mark_path_with(self, path: &[PathStep], fragments: &[String]) -> Value {
        let Some((first, rest)) = path.split_first() else {
            return match self {
                Value::Null => Value::Null,
                // The texts of the mark the value had before it went out, if it is the same
                // value; otherwise (a provider changed it) its own texts.
                Value::Sensitive(m) => Value::Sensitive(m),
                value => {
                    let mut own = Vec::new();
                    value.leaf_texts(&mut own);
                    let keeps = fragments
                        .iter()
                        .all(|f| f.is_empty() || own.iter().any(|o| o.contains(f.as_str())));
                    if keeps && !fragments.is_empty() {
                        Value::marked(value, fragments.to_vec())
                    } else {
                        Value::sensitive(value)
                    }
                }
            };
        };
        match (self, first) {
            (Value::Sensitive(m), _) => Value::Sensitive(m),
            (Value::List(mut items), PathStep::Index(i)) if *i < items.len() => {
                let item = std::mem::take(&mut items[*i]);
                items[*i] = item.mark_path_with(rest, fragments);
                Value::List(items)
            }
            (Value::Object(mut map), PathStep::Key(k)) => {
                if let Some(slot) = map.get_mut(k) {
                    let item = std::mem::take(slot);
                    *slot = item.mark_path_with(rest, fragments);
                }
                Value::Object(map)
            }
            (other, _) => other,
        }
    }

    /// The paths of every outermost mark in this value.
    pub fn sensitive_paths(&self) -> Vec<Path> {
        if !self.contains_sensitive() {
            return Vec::new();
        }
        self.clone().unmark_deep().1
    }

    /// The value at a path, looking through marks.
    pub fn at(&self, path: &[PathStep]) -> Option<&Value> {
        let Some((first, rest)) = path.split_first() else {
            return Some(self);
        };
        match (self.peel(), first) {
            (Value::List(items), PathStep::Index(i)) => items.get(*i)?.at(rest),
            (Value::Object(map), PathStep::Key(k)) => map.get(k)?.at(rest),
            _ => None,
        }
    }

    /// The name users see in type errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Sensitive(m) => m.value.type_name(),
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
        matches!(self.peel(), Value::Null)
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self.peel(), Value::Unknown)
    }

    /// True when neither this value nor anything inside it is unknown.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(items) => items.iter().all(Value::is_wholly_known),
            Value::Object(map) => map.values().all(Value::is_wholly_known),
            Value::Sensitive(m) => m.value.is_wholly_known(),
            _ => true,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self.peel() {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.peel() {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as the nearest double: what a provider's settings (counts, sizes) need.
    pub fn as_number(&self) -> Option<f64> {
        self.as_exact_number().map(Number::to_f64)
    }

    /// The number itself, every digit.
    pub fn as_exact_number(&self) -> Option<&Number> {
        match self.peel() {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// A number value from a double (53 bits of precision, as Go's `SetFloat64`).
    pub fn number(n: impl Into<Number>) -> Value {
        Value::Number(n.into())
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self.peel() {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&IndexMap<String, Value>> {
        match self.peel() {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// JSON for values that are wholly known; unknowns become `null`, and sensitive values
    /// `"(sensitive value)"`: what is written anywhere never holds a secret by accident.
    /// [`Value::to_json_revealed`] is for the one place a secret must go: its API.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Sensitive(_) => serde_json::Value::String(SENSITIVE.into()),
            Value::Null | Value::Unknown => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => number_to_json(n),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Object(map) => serde_json::Value::Object(
                map.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
            ),
        }
    }

    /// JSON with sensitive values as they are.
    pub fn to_json_revealed(&self) -> serde_json::Value {
        match self {
            Value::Sensitive(m) => m.value.to_json_revealed(),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json_revealed).collect())
            }
            Value::Object(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), v.to_json_revealed()))
                    .collect(),
            ),
            other => other.to_json(),
        }
    }

    pub fn from_json(json: &serde_json::Value) -> Self {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(
                Number::parse(&n.to_string())
                    .unwrap_or_else(|_| Number::from(n.as_f64().unwrap_or_default())),
            ),
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

/// How every renderer shows a sensitive value.
pub const SENSITIVE: &str = "(sensitive value)";

/// A number as Terraform writes it in templates and JSON: the shortest decimal that reads
/// back to it, never an exponent (`10`, `0.3`, `18446744073709550000`).
pub fn format_number(n: impl Into<Number>) -> String {
    n.into().to_text()
}

/// A number in a `serde_json` document: integers of 64 bits exactly, other numbers as the
/// nearest double (`serde_json` holds no more), infinities as null. The language's own
/// `jsonencode` writes every digit.
fn number_to_json(n: &Number) -> serde_json::Value {
    if let Some(i) = n.to_i64() {
        return serde_json::Value::from(i);
    }
    if n.is_integer()
        && let Some((false, m)) = n.trunc_parts()
        && let Some(u) = num_traits::ToPrimitive::to_u64(&m)
    {
        return serde_json::Value::from(u);
    }
    serde_json::Number::from_f64(n.to_f64())
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Renders a value in HCL syntax, as `console` and diagnostics show it.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Sensitive(_) => f.write_str(SENSITIVE),
            Value::Null => f.write_str("null"),
            Value::Unknown => f.write_str("(known after apply)"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => f.write_str(&format_number(n)),
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
        assert_eq!(Value::number(10).to_string(), "10");
        assert_eq!(Value::number(1.5).to_string(), "1.5");
        assert_eq!(Value::number(10).to_json(), serde_json::json!(10));
    }

    #[test]
    fn marks_are_invisible_to_equality_and_accessors_but_never_printed() {
        let secret = Value::sensitive(Value::string("s3cret"));
        assert_eq!(secret, Value::string("s3cret"));
        assert_eq!(secret.as_str(), Some("s3cret"));
        assert_eq!(secret.to_string(), "(sensitive value)");
        assert_eq!(secret.to_json(), serde_json::json!("(sensitive value)"));
        assert_eq!(secret.to_json_revealed(), serde_json::json!("s3cret"));
    }

    #[test]
    fn deep_marks_come_off_with_their_paths_and_go_back_on() {
        let value = Value::Object(
            [
                ("a".to_owned(), Value::string("x")),
                (
                    "b".to_owned(),
                    Value::List(vec![Value::Null, Value::sensitive(Value::number(1))]),
                ),
            ]
            .into(),
        );
        let (plain, paths) = value.clone().unmark_deep();
        assert!(!plain.contains_sensitive());
        assert_eq!(
            paths,
            vec![vec![PathStep::Key("b".into()), PathStep::Index(1)]]
        );
        assert_eq!(path_text(&paths[0]), "b[1]");
        let marked = plain.mark_paths(&paths);
        assert!(marked.at(&paths[0]).is_some_and(Value::is_sensitive));
        assert_eq!(marked.sensitive_fragments(), vec!["1".to_owned()]);
        assert_eq!(serde_json::to_string(&paths[0]).unwrap(), r#"["b",1]"#);
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
