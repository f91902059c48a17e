//! Terraform's JSON configuration syntax (`*.tf.json`, `*.hcl.json`), read into the same
//! configuration model as native files.
//!
//! A JSON file is translated into the HCL it stands for, as Terraform's JSON syntax defines
//! it: a top-level property is a block type, nested objects give its labels, a body's
//! properties are arguments or, where the schema says so, nested blocks (one object, or an
//! array of them); strings are templates, except where Terraform reads them as references
//! (`depends_on`, `provider`, `ignore_changes`, the targets of `import`, `moved` and
//! `removed`, a variable's `type`) or as literal values (a variable's `default`, a module's
//! `source`, `required_version`); `"//"` properties of a body are comments. The translation is
//! parsed as any native file is, and every byte of it remembers the byte of the JSON file it
//! was made from, so that each diagnostic points into the JSON as written
//! ([`SourceMap::add_translated`]).
//!
//! The JSON parser is this module's own: the translation needs every property of an object
//! in order with its duplicates (a repeated block), numbers as written (HCL's are of
//! arbitrary precision) and the offset of every character of a string behind its escapes,
//! which `serde_json` keeps none of.

use crate::address::is_identifier;
use crate::diag::suggest;
use gpustack_protocol::{Registry, Schema};
use std::ops::Range;

/// An error of a JSON file: where, a summary and why.
type JsonError = (Range<usize>, &'static str, String);

// ---------------------------------------------------------------------------------------------
// The JSON parser.

/// A JSON value with where it was written.
#[derive(Debug, Clone)]
struct JValue {
    kind: JKind,
    span: Range<usize>,
}

#[derive(Debug, Clone)]
enum JKind {
    Null,
    Bool(bool),
    /// As written.
    Number(String),
    String(JString),
    Array(Vec<JValue>),
    /// Every property, in order, duplicates kept.
    Object(Vec<(JString, JValue)>),
}

/// A string, unescaped, with the offset in the file of the character each of its bytes came
/// from (an escape's backslash for what an escape made), and one past its end.
#[derive(Debug, Clone)]
struct JString {
    value: String,
    offsets: Vec<usize>,
    span: Range<usize>,
}

impl JString {
    /// Where byte `i` of the value came from; the closing quote for the end.
    fn at(&self, i: usize) -> usize {
        self.offsets
            .get(i)
            .copied()
            .unwrap_or(self.span.end.saturating_sub(1))
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

/// The deepest nesting of arrays and objects read: a bound on the parser's recursion.
const MAX_DEPTH: usize = 128;

fn parse(text: &str) -> Result<JValue, JsonError> {
    let mut parser = Parser { text, at: 0 };
    parser.whitespace();
    let value = parser.value(0)?;
    parser.whitespace();
    if parser.at < text.len() {
        return Err(parser.error("Invalid JSON", "Extra characters after the JSON value."));
    }
    Ok(value)
}

impl Parser<'_> {
    fn error(&self, summary: &'static str, detail: &str) -> JsonError {
        let end = self.text[self.at..]
            .chars()
            .next()
            .map_or(self.at, |c| self.at + c.len_utf8());
        (self.at..end, summary, detail.to_owned())
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), JsonError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error("Invalid JSON", &format!("Expected {what}.")))
        }
    }

    fn value(&mut self, depth: usize) -> Result<JValue, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error(
                "Invalid JSON",
                &format!("Arrays and objects nest deeper than {MAX_DEPTH} levels."),
            ));
        }
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.whitespace();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.whitespace();
                        if self.peek() != Some(b'"') {
                            return Err(self.error(
                                "Invalid JSON",
                                "Expected a property name in double quotes.",
                            ));
                        }
                        let key = self.string()?;
                        self.whitespace();
                        self.expect(b':', "a colon after the property name")?;
                        self.whitespace();
                        let value = self.value(depth + 1)?;
                        members.push((key, value));
                        self.whitespace();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => {
                                return Err(self.error(
                                    "Invalid JSON",
                                    "Expected a comma or the end of the object.",
                                ));
                            }
                        }
                    }
                }
                JKind::Object(members)
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.whitespace();
                if self.peek() == Some(b']') {
                    self.at += 1;
                } else {
                    loop {
                        self.whitespace();
                        items.push(self.value(depth + 1)?);
                        self.whitespace();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => {
                                return Err(self.error(
                                    "Invalid JSON",
                                    "Expected a comma or the end of the array.",
                                ));
                            }
                        }
                    }
                }
                JKind::Array(items)
            }
            Some(b'"') => JKind::String(self.string()?),
            Some(b't') if self.text[self.at..].starts_with("true") => {
                self.at += 4;
                JKind::Bool(true)
            }
            Some(b'f') if self.text[self.at..].starts_with("false") => {
                self.at += 5;
                JKind::Bool(false)
            }
            Some(b'n') if self.text[self.at..].starts_with("null") => {
                self.at += 4;
                JKind::Null
            }
            Some(b'-' | b'0'..=b'9') => JKind::Number(self.number()?),
            None => return Err(self.error("Invalid JSON", "The file ends where a value should.")),
            Some(_) => return Err(self.error("Invalid JSON", "Expected a JSON value.")),
        };
        Ok(JValue {
            kind,
            span: start..self.at,
        })
    }

    fn number(&mut self) -> Result<String, JsonError> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = self.at;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let leading_zero = bytes.get(at) == Some(&b'0');
        if !digits(&mut at) || (leading_zero && at - start > 1 + usize::from(bytes[start] == b'-'))
        {
            self.at = at;
            return Err(self.error("Invalid JSON", "Invalid number."));
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            if !digits(&mut at) {
                self.at = at;
                return Err(self.error("Invalid JSON", "Expected digits after the decimal point."));
            }
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            if !digits(&mut at) {
                self.at = at;
                return Err(self.error("Invalid JSON", "Expected digits in the exponent."));
            }
        }
        self.at = at;
        Ok(self.text[start..at].to_owned())
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self.text.get(self.at..self.at + 4).unwrap_or("");
        match u32::from_str_radix(digits, 16) {
            Ok(n) if digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
                self.at += 4;
                Ok(n)
            }
            _ => Err(self.error(
                "Invalid JSON",
                "A \\u escape needs four hexadecimal digits.",
            )),
        }
    }

    fn string(&mut self) -> Result<JString, JsonError> {
        let start = self.at;
        self.at += 1;
        let mut value = String::new();
        let mut offsets = Vec::new();
        loop {
            let Some(c) = self.text[self.at..].chars().next() else {
                self.at = start;
                return Err(self.error("Invalid JSON", "This string is never closed."));
            };
            let here = self.at;
            match c {
                '"' => {
                    self.at += 1;
                    break;
                }
                '\\' => {
                    self.at += 1;
                    let escaped = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.at += 1;
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first) {
                                if !self.text[self.at..].starts_with("\\u") {
                                    return Err(self.error(
                                        "Invalid JSON",
                                        "A high surrogate must be followed by a \\u escape of a low one.",
                                    ));
                                }
                                self.at += 2;
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return Err(self.error(
                                        "Invalid JSON",
                                        "A high surrogate must be followed by a low one.",
                                    ));
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else {
                                first
                            };
                            let Some(c) = char::from_u32(code) else {
                                return Err(
                                    self.error("Invalid JSON", "A \\u escape names no character.")
                                );
                            };
                            offsets.extend(std::iter::repeat_n(here, c.len_utf8()));
                            value.push(c);
                            continue;
                        }
                        _ => {
                            return Err(self.error("Invalid JSON", "Invalid escape sequence."));
                        }
                    };
                    self.at += 1;
                    offsets.push(here);
                    value.push(escaped);
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.error(
                        "Invalid JSON",
                        "A control character must be escaped in a string (a line break as \\n).",
                    ));
                }
                c => {
                    self.at += c.len_utf8();
                    offsets.extend(here..self.at);
                    value.push(c);
                }
            }
        }
        Ok(JString {
            value,
            offsets,
            span: start..self.at,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Variables files.

/// The members of a JSON variables file (`terraform.tfvars.json`): each name with its value
/// as the JSON says it (strings are not templates there) and where the member was written.
pub(super) fn variables(
    text: &str,
) -> Result<Vec<(String, gpustack_protocol::Value, Range<usize>)>, JsonError> {
    let root = parse(text)?;
    let JKind::Object(members) = root.kind else {
        return Err((
            root.span.start..root.span.start + 1,
            "Invalid variables file",
            "A JSON variables file holds one object, whose properties are the variables' values."
                .into(),
        ));
    };
    members
        .into_iter()
        .map(|(key, value)| {
            let span = key.span.start..value.span.end;
            Ok((key.value, literal(value)?, span))
        })
        .collect()
}

fn literal(value: JValue) -> Result<gpustack_protocol::Value, JsonError> {
    use gpustack_protocol::Value;
    Ok(match value.kind {
        JKind::Null => Value::Null,
        JKind::Bool(b) => Value::Bool(b),
        JKind::Number(text) => match gpustack_protocol::Number::parse(&text) {
            Ok(n) => Value::Number(n),
            Err(_) => {
                return Err((
                    value.span,
                    "Invalid number",
                    format!("{text} is not a number."),
                ));
            }
        },
        JKind::String(s) => Value::String(s.value),
        JKind::Array(items) => {
            Value::List(items.into_iter().map(literal).collect::<Result<_, _>>()?)
        }
        JKind::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(k, v)| Ok((k.value, literal(v)?)))
                .collect::<Result<_, JsonError>>()?,
        ),
    })
}

// ---------------------------------------------------------------------------------------------
// The translation.

/// The HCL a JSON configuration stands for, with the offset in the JSON of each of its bytes
/// (and one past its end); or every error found.
pub(super) fn translate(
    text: &str,
    providers: Option<&Registry>,
) -> Result<(String, Vec<u32>), Vec<JsonError>> {
    if u32::try_from(text.len()).is_err() {
        return Err(vec![(
            0..0,
            "File too large",
            "A JSON configuration file must be smaller than 4 GiB.".into(),
        )]);
    }
    let root = parse(text).map_err(|e| vec![e])?;
    let mut w = Writer {
        out: String::with_capacity(text.len()),
        map: Vec::with_capacity(text.len() + 1),
        errors: Vec::new(),
        providers,
    };
    let JKind::Object(members) = &root.kind else {
        return Err(vec![(
            root.span.start..root.span.start + 1,
            "Invalid JSON configuration",
            "A JSON configuration file holds one object, whose properties are blocks such as \"resource\", \"variable\" and \"module\".".into(),
        )]);
    };
    for (key, value) in members {
        w.top_level(key, value);
    }
    let end = text.len() as u32;
    w.map.push(end);
    if w.errors.is_empty() {
        Ok((w.out, w.map))
    } else {
        Err(w.errors)
    }
}

/// How an argument's string values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A template: `${...}` interpolates (the default).
    Template,
    /// The value as written, nothing interpolated.
    Literal,
    /// An HCL expression (a reference, a keyword, a type).
    Expression,
    /// A list whose strings are expressions.
    Expressions,
    /// An object whose keys and string values are expressions (a module's `providers`).
    ExpressionMap,
}

/// What a body holds: how its arguments are read and which of its properties are nested
/// blocks.
#[derive(Clone, Copy)]
enum BodyKind<'s> {
    Variable,
    Output,
    Locals,
    ModuleCall,
    Provider(Option<&'s Schema>),
    /// A resource or data source body, with its schema.
    Resource(Option<&'s Schema>),
    /// A nested block of a provider's schema, or `dynamic`'s `content`.
    Nested(Option<&'s Schema>),
    Dynamic(Option<&'s Schema>),
    Lifecycle,
    Condition,
    Check,
    Import,
    Moved,
    Removed,
    Terraform,
    RequiredProviders,
    Backend,
    Gpustack,
    Encryption,
    EncryptionTarget,
    EncryptionMethod,
    /// A block gpustack refuses (`provisioner`, `connection`, `cloud`, ...): its arguments as
    /// templates, for the decoder to report.
    Opaque,
}

impl<'s> BodyKind<'s> {
    fn mode(self, name: &str) -> Mode {
        use BodyKind::*;
        match (self, name) {
            (_, "depends_on") => Mode::Expressions,
            (Variable, "type") => Mode::Expression,
            (Variable, "default" | "description" | "sensitive" | "nullable" | "ephemeral") => {
                Mode::Literal
            }
            (Output, "description" | "sensitive" | "ephemeral") => Mode::Literal,
            (ModuleCall, "source" | "version") => Mode::Literal,
            (ModuleCall, "providers") => Mode::ExpressionMap,
            (Provider(_), "alias") => Mode::Literal,
            (Resource(_), "provider") => Mode::Expression,
            (Lifecycle, "ignore_changes" | "replace_triggered_by") => Mode::Expressions,
            (Lifecycle, "prevent_destroy") => Mode::Expression,
            (Lifecycle, "create_before_destroy" | "destroy") => Mode::Literal,
            (Dynamic(_), "iterator") => Mode::Expression,
            (Import, "to" | "provider") => Mode::Expression,
            (Moved, "from" | "to") | (Removed, "from") => Mode::Expression,
            (Terraform | Gpustack, "required_version") => Mode::Literal,
            (RequiredProviders, _) => Mode::Literal,
            (EncryptionTarget, "method") | (EncryptionMethod, "keys") => Mode::Expression,
            _ => Mode::Template,
        }
    }

    /// The nested block `name` of this body: how many labels it has and what its body is.
    fn block(self, name: &str) -> Option<(usize, BodyKind<'s>)> {
        use BodyKind::*;
        Some(match (self, name) {
            (Variable, "validation") => (0, Condition),
            (Output, "precondition") => (0, Condition),
            (Resource(_), "lifecycle") => (0, Lifecycle),
            (Resource(_), "provisioner") => (1, Opaque),
            (Resource(_), "connection") => (0, Opaque),
            (Resource(schema) | Provider(schema) | Nested(schema), "dynamic") => {
                (1, Dynamic(schema))
            }
            (Resource(schema) | Provider(schema) | Nested(schema), _) => {
                let nested = schema?.blocks.get(name)?;
                (0, Nested(Some(&nested.block)))
            }
            (Dynamic(schema), "content") => (0, Nested(schema)),
            (Lifecycle, "precondition" | "postcondition") => (0, Condition),
            (Check, "assert") => (0, Condition),
            (Check, "data") => (2, Resource(None)),
            (Removed, "lifecycle") => (0, Lifecycle),
            (Removed, "provisioner") => (1, Opaque),
            (Terraform, "required_providers") => (0, RequiredProviders),
            (Terraform | Gpustack, "backend") => (1, Backend),
            (Terraform, "cloud") => (0, Opaque),
            (Terraform, "provider_meta") => (1, Opaque),
            (Terraform | Gpustack, "encryption") => (0, Encryption),
            (Encryption, "key_provider") => (2, Opaque),
            (Encryption, "method") => (2, EncryptionMethod),
            (Encryption, "state" | "plan") => (0, EncryptionTarget),
            (EncryptionTarget, "fallback") => (0, EncryptionTarget),
            _ => return None,
        })
    }
}

struct Writer<'r> {
    out: String,
    map: Vec<u32>,
    errors: Vec<JsonError>,
    providers: Option<&'r Registry>,
}

/// The block types of a configuration file and their numbers of labels.
const TOP_LEVEL: &[(&str, usize)] = &[
    ("variable", 1),
    ("locals", 0),
    ("output", 1),
    ("provider", 1),
    ("resource", 2),
    ("data", 2),
    ("module", 1),
    ("terraform", 0),
    ("gpustack", 0),
    ("import", 0),
    ("moved", 0),
    ("removed", 0),
    ("check", 1),
];

impl<'r> Writer<'r> {
    /// Writes `text`, every byte of it made from the JSON at `at`.
    fn put(&mut self, text: &str, at: usize) {
        self.out.push_str(text);
        self.map.extend(std::iter::repeat_n(at as u32, text.len()));
    }

    fn error(&mut self, at: Range<usize>, summary: &'static str, detail: impl Into<String>) {
        self.errors.push((at, summary, detail.into()));
    }

    fn top_level(&mut self, key: &JString, value: &JValue) {
        let name = key.value.as_str();
        if name == "//" {
            return;
        }
        let Some(&(_, labels)) = TOP_LEVEL.iter().find(|(n, _)| *n == name) else {
            self.error(
                key.span.clone(),
                "Unsupported block type",
                format!(
                    "Blocks of type \"{name}\" are not expected here.{}",
                    suggest(name, TOP_LEVEL.iter().map(|(n, _)| *n))
                ),
            );
            return;
        };
        if name == "locals" {
            // Each property of each object is a local value.
            for body in self.bodies(value, "locals") {
                self.put("locals {\n", key.span.start);
                self.body(body, BodyKind::Locals);
                self.put("}\n", body.span.end.saturating_sub(1));
            }
            return;
        }
        self.blocks(key, value, labels, &mut Vec::new(), None);
    }

    /// The objects a block's value holds: one object, or an array of them.
    fn bodies<'v>(&mut self, value: &'v JValue, what: &str) -> Vec<&'v JValue> {
        match &value.kind {
            JKind::Object(_) => vec![value],
            JKind::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    if matches!(item.kind, JKind::Object(_)) {
                        out.push(item);
                    } else {
                        self.error(
                            item.span.clone(),
                            "Invalid JSON configuration",
                            format!("A {what} block's body is a JSON object."),
                        );
                    }
                }
                out
            }
            _ => {
                self.error(
                    value.span.clone(),
                    "Invalid JSON configuration",
                    format!("A {what} block is a JSON object (or an array of objects, for several blocks)."),
                );
                Vec::new()
            }
        }
    }

    /// The blocks of type `key` a value holds: `labels` levels of objects keyed by label (or
    /// arrays of such objects), then bodies. `kind` is the body's, when the caller knows it.
    fn blocks(
        &mut self,
        key: &JString,
        value: &JValue,
        labels: usize,
        written: &mut Vec<JString>,
        kind: Option<BodyKind<'r>>,
    ) {
        let name = key.value.as_str();
        if written.len() < labels {
            let levels: Vec<&JValue> = match &value.kind {
                JKind::Array(items) => items.iter().collect(),
                _ => vec![value],
            };
            for level in levels {
                let JKind::Object(members) = &level.kind else {
                    self.error(
                        level.span.clone(),
                        "Invalid JSON configuration",
                        format!(
                            "A {name} block's labels are the keys of nested objects: {} of them.",
                            labels
                        ),
                    );
                    continue;
                };
                for (label, inner) in members {
                    written.push(label.clone());
                    self.blocks(key, inner, labels, written, kind);
                    written.pop();
                }
            }
            return;
        }
        let kind = kind.unwrap_or_else(|| self.top_level_kind(name, written));
        for body in self.bodies(value, name) {
            self.put(name, key.at(0));
            for label in written.iter() {
                self.put(" ", label.span.start);
                self.quoted(label, Mode::Literal);
            }
            self.put(" {\n", body.span.start);
            self.body(body, kind);
            self.put("}\n", body.span.end.saturating_sub(1));
        }
    }

    fn top_level_kind(&self, name: &str, labels: &[JString]) -> BodyKind<'r> {
        let label = |i: usize| labels.get(i).map_or("", |l| l.value.as_str());
        match name {
            "variable" => BodyKind::Variable,
            "output" => BodyKind::Output,
            "module" => BodyKind::ModuleCall,
            "provider" => {
                BodyKind::Provider(self.providers.and_then(|r| r.config_schema(label(0))))
            }
            "resource" => {
                BodyKind::Resource(self.providers.and_then(|r| r.resource_schema(label(0))))
            }
            "data" => {
                BodyKind::Resource(self.providers.and_then(|r| r.data_source_schema(label(0))))
            }
            "check" => BodyKind::Check,
            "import" => BodyKind::Import,
            "moved" => BodyKind::Moved,
            "removed" => BodyKind::Removed,
            "terraform" => BodyKind::Terraform,
            "gpustack" => BodyKind::Gpustack,
            _ => BodyKind::Opaque,
        }
    }

    /// A body's properties: nested blocks where `kind` says so, arguments otherwise.
    fn body(&mut self, body: &JValue, kind: BodyKind<'r>) {
        let JKind::Object(members) = &body.kind else {
            return;
        };
        for (key, value) in members {
            let name = key.value.as_str();
            if name == "//" {
                continue;
            }
            // A check's data sources have their provider's schema.
            if let (BodyKind::Check, "data") = (kind, name) {
                self.check_data(key, value);
                continue;
            }
            if let Some((labels, nested)) = kind.block(name) {
                self.blocks(key, value, labels, &mut Vec::new(), Some(nested));
                continue;
            }
            if !is_identifier(name) {
                self.error(
                    key.span.clone(),
                    "Invalid argument name",
                    format!("\"{name}\" is not an argument name: it must start with a letter or underscore and hold only letters, digits, underscores and dashes."),
                );
                continue;
            }
            self.put_mapped(&key.value, &key.offsets);
            self.put(" = ", key.span.end);
            self.value(value, kind.mode(name));
            self.put("\n", value.span.end.saturating_sub(1));
        }
    }

    fn check_data(&mut self, key: &JString, value: &JValue) {
        // Two levels of labels, the type first; the body's schema is the type's.
        let levels: Vec<&JValue> = match &value.kind {
            JKind::Array(items) => items.iter().collect(),
            _ => vec![value],
        };
        for level in levels {
            let JKind::Object(types) = &level.kind else {
                self.error(
                    level.span.clone(),
                    "Invalid JSON configuration",
                    "A check's data blocks are objects keyed by type, then by name.",
                );
                continue;
            };
            for (ty, inner) in types {
                let schema = self.providers.and_then(|r| r.data_source_schema(&ty.value));
                let mut written = vec![ty.clone()];
                self.blocks(
                    key,
                    inner,
                    2,
                    &mut written,
                    Some(BodyKind::Resource(schema)),
                );
            }
        }
    }

    fn put_mapped(&mut self, text: &str, offsets: &[usize]) {
        self.out.push_str(text);
        let last = offsets.last().copied().unwrap_or(0);
        self.map
            .extend((0..text.len()).map(|i| offsets.get(i).copied().unwrap_or(last) as u32));
    }

    /// A value, its strings read as `mode` says.
    fn value(&mut self, value: &JValue, mode: Mode) {
        let at = value.span.start;
        match &value.kind {
            JKind::Null => self.put("null", at),
            JKind::Bool(b) => self.put(if *b { "true" } else { "false" }, at),
            JKind::Number(n) => {
                let n = n.clone();
                self.put(&n, at);
            }
            JKind::String(s) => match mode {
                Mode::Expression | Mode::Expressions | Mode::ExpressionMap => {
                    self.expression(s, true)
                }
                Mode::Literal => self.quoted(s, Mode::Literal),
                Mode::Template => match single_interpolation(&s.value) {
                    // `"${expr}"` is the expression's value itself, unconverted.
                    Some(inner) => {
                        self.put_mapped(&s.value[inner.clone()], &s.offsets[inner]);
                        self.put("\n", s.span.end.saturating_sub(1));
                    }
                    None => self.quoted(s, Mode::Template),
                },
            },
            JKind::Array(items) => {
                let inner = match mode {
                    Mode::Expressions => Mode::Expression,
                    other => other,
                };
                self.put("[\n", at);
                for item in items {
                    self.value(item, inner);
                    self.put(",\n", item.span.end.saturating_sub(1));
                }
                self.put("]", value.span.end.saturating_sub(1));
            }
            JKind::Object(members) => {
                self.put("{\n", at);
                for (key, item) in members {
                    match mode {
                        Mode::ExpressionMap => self.expression(key, false),
                        Mode::Literal => self.quoted(key, Mode::Literal),
                        _ => self.quoted(key, Mode::Template),
                    }
                    self.put(" = ", key.span.end);
                    let inner = match mode {
                        Mode::ExpressionMap => Mode::Expression,
                        Mode::Literal => Mode::Literal,
                        _ => Mode::Template,
                    };
                    self.value(item, inner);
                    self.put("\n", item.span.end.saturating_sub(1));
                }
                self.put("}", value.span.end.saturating_sub(1));
            }
        }
    }

    /// A string read as an HCL expression, written as it is; it must be one expression.
    /// `line_end`: a line break follows it (where one may: not before an object key's `=`).
    fn expression(&mut self, s: &JString, line_end: bool) {
        if let Err(err) = hcl_edit::parser::parse_expr(&s.value) {
            let at = offset_of(&s.value, err.location().line(), err.location().column());
            let at = s.at(at);
            self.error(
                at..at + 1,
                "Invalid expression",
                format!(
                    "In this context the string is read as an expression, such as a reference: {}.",
                    err.message()
                ),
            );
            return;
        }
        self.put_mapped(&s.value, &s.offsets);
        if line_end {
            // A comment at its end ends with it.
            self.put("\n", s.span.end.saturating_sub(1));
        }
    }

    /// A string in double quotes: a template, or a literal (`${` and `%{` escaped).
    fn quoted(&mut self, s: &JString, mode: Mode) {
        if mode == Mode::Template
            && let Err(err) = hcl_edit::parser::parse_template(&s.value)
        {
            let at = offset_of(&s.value, err.location().line(), err.location().column());
            let at = s.at(at);
            self.error(
                at..at + 1,
                "Invalid template",
                format!("{}.", capitalize(err.message())),
            );
            return;
        }
        self.put("\"", s.span.start);
        let literal = template_literals(&s.value, mode == Mode::Template);
        let bytes = s.value.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = s.value[i..].chars().next().unwrap_or('\0');
            let width = c.len_utf8();
            let at = s.at(i);
            if !literal[i] {
                self.put(&s.value[i..i + width], at);
            } else {
                match c {
                    '"' => self.put("\\\"", at),
                    '\\' => self.put("\\\\", at),
                    '\n' => self.put("\\n", at),
                    '\r' => self.put("\\r", at),
                    '\t' => self.put("\\t", at),
                    '$' | '%' if mode == Mode::Literal && bytes.get(i + 1) == Some(&b'{') => {
                        let doubled = if c == '$' { "$$" } else { "%%" };
                        self.put(doubled, at);
                    }
                    c if (c as u32) < 0x20 || c == '\u{7f}' => {
                        self.put(&format!("\\u{:04x}", c as u32), at);
                    }
                    _ => self.put(&s.value[i..i + width], at),
                }
            }
            i += width;
        }
        self.put("\"", s.span.end.saturating_sub(1));
    }
}

/// Where the expression of a template that is one interpolation and nothing else (no text, no
/// strip markers) is: Terraform takes such a template's value to be the expression's own.
fn single_interpolation(text: &str) -> Option<Range<usize>> {
    let template = hcl_edit::parser::parse_template(text).ok()?;
    let mut elements = template.iter();
    let (Some(hcl_edit::template::Element::Interpolation(interpolation)), None) =
        (elements.next(), elements.next())
    else {
        return None;
    };
    if interpolation.strip != hcl_edit::template::Strip::default()
        || !text.starts_with("${")
        || !text.ends_with('}')
    {
        return None;
    }
    let inner = &text[2..text.len() - 1];
    let start = 2 + (inner.len() - inner.trim_start().len());
    Some(start..text.len() - 1)
}

/// For each byte of a template, whether it is literal text (to be escaped in a quoted string)
/// rather than inside an interpolation or directive (written as it is). With
/// `template == false`, every byte is literal.
fn template_literals(text: &str, template: bool) -> Vec<bool> {
    let bytes = text.as_bytes();
    let mut literal = vec![true; bytes.len()];
    if !template {
        return literal;
    }
    // What encloses the position: an interpolation's braces, or a string inside one.
    enum Frame {
        Braces(usize),
        Str,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        match stack.last_mut() {
            None => {
                // `$${` and `%%{` are literal `${` and `%{`.
                if (b == b'$' || b == b'%') && next == Some(b) && bytes.get(i + 2) == Some(&b'{') {
                    i += 3;
                    continue;
                }
                if (b == b'$' || b == b'%') && next == Some(b'{') {
                    literal[i] = false;
                    literal[i + 1] = false;
                    stack.push(Frame::Braces(1));
                    i += 2;
                    continue;
                }
            }
            Some(Frame::Braces(depth)) => {
                literal[i] = false;
                match b {
                    b'{' => *depth += 1,
                    b'}' => {
                        *depth -= 1;
                        if *depth == 0 {
                            stack.pop();
                        }
                    }
                    b'"' => stack.push(Frame::Str),
                    _ => {}
                }
            }
            Some(Frame::Str) => {
                literal[i] = false;
                match b {
                    b'\\' => {
                        if i + 1 < bytes.len() {
                            literal[i + 1] = false;
                        }
                        i += 2;
                        continue;
                    }
                    b'"' => {
                        stack.pop();
                    }
                    b'$' | b'%' if next == Some(b'{') => {
                        literal[i + 1] = false;
                        stack.push(Frame::Braces(1));
                        i += 2;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    literal
}

/// The byte offset of a 1-based line and column in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match text[line_start..].find('\n') {
            Some(n) => line_start += n + 1,
            None => return text.len(),
        }
    }
    text[line_start..]
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(text.len(), |(i, _)| line_start + i)
}

fn capitalize(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => "Invalid template".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hcl(json: &str) -> String {
        let (text, map) = translate(json, None).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(map.len(), text.len() + 1);
        text
    }

    fn errors(json: &str) -> Vec<(String, &'static str)> {
        translate(json, None)
            .expect_err("an error")
            .into_iter()
            .map(|(at, summary, _)| (json[at].to_owned(), summary))
            .collect()
    }

    #[test]
    fn strings_keep_the_offsets_of_what_they_were_written_as() {
        let text = r#""a\n\u00e9\"b""#;
        let s = Parser { text, at: 0 }.string().unwrap();
        assert_eq!(s.value, "a\né\"b");
        assert_eq!(s.offsets, vec![1, 2, 4, 4, 10, 12]);
        let pair = r#""\ud83d\ude00""#;
        let s = Parser { text: pair, at: 0 }.string().unwrap();
        assert_eq!(s.value, "😀");
    }

    #[test]
    fn the_parser_keeps_duplicates_and_numbers_as_written() {
        let value = parse(r#"{"a": 1.50e3, "a": [true, null, -0]}"#).unwrap();
        let JKind::Object(members) = value.kind else {
            panic!()
        };
        assert_eq!(members.len(), 2);
        assert!(matches!(&members[0].1.kind, JKind::Number(n) if n == "1.50e3"));
        for bad in [
            "{",
            "[1,]",
            "01",
            "\"a",
            "{\"a\" 1}",
            "1 2",
            "\"\\x\"",
            "\"\u{1}\"",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn templates_are_quoted_with_their_literal_text_escaped() {
        let out = hcl(r#"{"locals": {"a": "x\"${upper(\"b}\")}\\ $${y}", "b": "${var.list}"}}"#);
        assert!(out.contains(r#"a = "x\"${upper("b}")}\\ $${y}""#), "{out}");
        assert!(out.contains("b = var.list\n"), "{out}");
    }

    #[test]
    fn references_types_and_literals_are_read_as_terraform_reads_them() {
        let out = hcl(
            r#"{"variable": {"v": {"type": "list(string)", "default": ["${x}"]}},
                "resource": {"t": {"n": {"depends_on": ["t.m"], "count": "${var.n}",
                  "lifecycle": {"ignore_changes": ["tags"]}}}}}"#,
        );
        assert!(out.contains("type = list(string)\n"), "{out}");
        assert!(out.contains(r#""$${x}""#), "{out}");
        assert!(out.contains("depends_on = [\nt.m\n,\n]"), "{out}");
        assert!(
            out.contains("lifecycle {\nignore_changes = [\ntags\n,\n]"),
            "{out}"
        );
        assert!(out.contains("count = var.n\n"), "{out}");
    }

    #[test]
    fn blocks_nest_by_label_and_repeat_as_arrays() {
        let out = hcl(
            r#"{"resource": {"t": {"a": [{"x": 1}, {"x": 2}], "b": {"x": 3}}},
                "output": [{"o": {"value": 1}}], "//": "a comment"}"#,
        );
        assert_eq!(out.matches("resource \"t\" \"a\" {").count(), 2, "{out}");
        assert!(out.contains("resource \"t\" \"b\" {\nx = 3\n}"), "{out}");
        assert!(out.contains("output \"o\" {\nvalue = 1\n}"), "{out}");
        assert!(!out.contains("//"), "{out}");
    }

    #[test]
    fn mistakes_are_located_in_the_json() {
        assert_eq!(
            errors(r#"{"resorce": {}}"#),
            vec![("\"resorce\"".to_owned(), "Unsupported block type")]
        );
        assert_eq!(
            errors(r#"{"locals": {"a": "${x"}}"#),
            vec![("\"".to_owned(), "Invalid template")]
        );
        assert_eq!(
            errors(r#"{"output": {"o": {"depends_on": ["a b"]}}}"#),
            vec![(" ".to_owned(), "Invalid expression")]
        );
        assert_eq!(
            errors("[1]"),
            vec![("[".to_owned(), "Invalid JSON configuration")]
        );
        assert_eq!(errors(r#"{"locals": {"a": 1,}}"#)[0].1, "Invalid JSON");
    }
}
