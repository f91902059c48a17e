//! Encodings: JSON, base64 and YAML, as Terraform writes and reads them.

use super::*;

/// Compact JSON as Terraform's jsonencode writes it, escaping `<`, `>`, `&`, U+2028 and U+2029.
/// JSON as go-cty writes it: object keys in lexical order, numbers with every digit (an
/// infinity has no JSON), strings escaped as Go's `encoding/json` escapes them (`<`, `>`, `&`,
/// U+2028 and U+2029 too, so that the text is safe inside HTML and JavaScript).
pub(super) fn json_text(v: &Value) -> Result<String, String> {
    let mut out = String::new();
    write_json(v, &mut out)?;
    Ok(out)
}

fn write_json(v: &Value, out: &mut String) -> Result<(), String> {
    match v {
        Value::Sensitive(m) => write_json(&m.value, out)?,
        Value::Null | Value::Unknown => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_infinite() => {
            return Err("cannot serialize infinity as JSON".to_owned());
        }
        Value::Number(n) => out.push_str(&n.to_text()),
        Value::String(s) => write_json_string(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_json(&map[k], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

pub(super) fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JSON to a value with every digit of its numbers (read at 512 bits, as go-cty reads them)
/// and its keys in lexical order; a key given twice takes its last value.
pub(super) fn jsondecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let mut p = JsonParser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let value = p.value().map_err(|e| a.error(0, e))?;
    p.ws();
    if p.i != p.s.len() {
        return Err(a.error(
            0,
            format!("extraneous data after JSON object at offset {}", p.i),
        ));
    }
    Ok(value)
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err(&self, what: &str) -> String {
        format!("{what} at offset {}", self.i)
    }

    fn eat(&mut self, word: &[u8]) -> bool {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        if self.depth > crate::expr::limits::MAX_DEPTH {
            return Err(self.err(&format!(
                "JSON nested more than {} levels deep",
                crate::expr::limits::MAX_DEPTH
            )));
        }
        let Some(&c) = self.s.get(self.i) else {
            return Err(self.err("unexpected end of JSON input"));
        };
        match c {
            b'{' => {
                self.i += 1;
                self.depth += 1;
                let mut map = IndexMap::new();
                self.ws();
                if self.eat(b"}") {
                    self.depth -= 1;
                    return Ok(Value::Object(map));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self
                            .err("invalid character looking for beginning of object key string"));
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b":") {
                        return Err(self.err("invalid character after object key"));
                    }
                    let v = self.value()?;
                    map.shift_remove(&key);
                    map.insert(key, v);
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    if self.eat(b"}") {
                        break;
                    }
                    return Err(self.err("invalid character after object key:value pair"));
                }
                self.depth -= 1;
                map.sort_unstable_keys();
                Ok(Value::Object(map))
            }
            b'[' => {
                self.i += 1;
                self.depth += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b"]") {
                    self.depth -= 1;
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    if self.eat(b"]") {
                        break;
                    }
                    return Err(self.err("invalid character after array element"));
                }
                self.depth -= 1;
                Ok(Value::List(items))
            }
            b'"' => Ok(Value::String(self.string()?)),
            b't' if self.eat(b"true") => Ok(Value::Bool(true)),
            b'f' if self.eat(b"false") => Ok(Value::Bool(false)),
            b'n' if self.eat(b"null") => Ok(Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err("invalid character looking for beginning of value")),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - from
        };
        self.eat(b"-");
        if self.eat(b"0") {
            // No leading zeros.
        } else if digits(self) == 0 {
            return Err(self.err("invalid character in numeric literal"));
        }
        if self.eat(b".") && digits(self) == 0 {
            return Err(self.err("invalid character after decimal point in numeric literal"));
        }
        if self.s.get(self.i).is_some_and(|c| *c == b'e' || *c == b'E') {
            self.i += 1;
            if !self.eat(b"+") {
                self.eat(b"-");
            }
            if digits(self) == 0 {
                return Err(self.err("invalid character in exponent of numeric literal"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("0");
        Number::parse(text)
            .map(Value::Number)
            .map_err(|_| self.err("invalid number"))
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(self.err("unexpected end of JSON input"));
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("unexpected end of JSON input"));
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let first = self.hex4()?;
                            if (0xD800..0xDC00).contains(&first)
                                && self.s[self.i..].starts_with(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                let second = self.hex4()?;
                                if (0xDC00..0xE000).contains(&second) {
                                    char::from_u32(
                                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00),
                                    )
                                    .unwrap_or('\u{fffd}')
                                } else {
                                    self.i = save;
                                    '\u{fffd}'
                                }
                            } else {
                                char::from_u32(first).unwrap_or('\u{fffd}')
                            }
                        }
                        _ => return Err(self.err("invalid character in string escape code")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.err("invalid character in string literal")),
                c => out.push(c),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("invalid character in \\u hexadecimal character escape"))?;
        self.i += 4;
        Ok(h)
    }
}

pub(super) fn base64decode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let bytes = BASE64
        .decode(text.as_bytes())
        .map_err(|e| a.error(0, format!("failed to decode base64 data: {e}")))?;
    String::from_utf8(bytes).map(Value::String).map_err(|_| {
        a.error(
            0,
            "the result of decoding the provided string is not valid UTF-8",
        )
    })
}

pub(super) fn yamlencode(a: &Args<'_>) -> CallResult {
    let mut e = YamlEmitter::default();
    e.node(a.get(0), Context::Root, -1)?;
    if !e.out.ends_with('\n') {
        e.out.push('\n');
    }
    if e.open_ended {
        e.out.push_str("...\n");
    }
    Ok(Value::String(e.out))
}

/// Where a node is written: libyaml's emitter decides scalar styles and indentation by it.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Root,
    /// A mapping's value or a sequence's item.
    Block,
    /// A key short and single-line enough to stand before `:`.
    SimpleKey,
}

/// A port of the parts of libyaml's emitter (in go-cty-yaml, Terraform's `yamlencode`) that
/// its documents use: block mappings with double-quoted keys, block sequences (not indented
/// inside a mapping), double-quoted strings folded past 80 columns, literal blocks for
/// multi-line text, `[]` and `{}` for empty collections, and `...` after a plain scalar that
/// is the whole document.
#[derive(Default)]
struct YamlEmitter {
    out: String,
    column: usize,
    open_ended: bool,
    /// The next collection's first entry goes on the current line (after a dash).
    inline_first: bool,
    /// go-yaml v2's choices instead of go-cty-yaml's: plain scalars where YAML 1.1 reads them
    /// back as the same string, and numbers as the doubles Kubernetes' encoder makes of them.
    plain: bool,
}

/// A Kubernetes manifest (a mapping) as go-yaml v2 writes it through sigs.k8s.io/yaml, as
/// the kubernetes provider's `manifest_encode` does: keys sorted, block mappings and block
/// sequences (not indented inside a mapping), plain scalars wherever YAML 1.1 reads them back
/// unchanged, quoted ones elsewhere, literal blocks for multi-line text. A string go-yaml
/// would single-quote is double-quoted here: the document decodes to the same object.
pub(super) fn go_yaml(v: &Value) -> CallResult<String> {
    let mut e = YamlEmitter {
        plain: true,
        ..YamlEmitter::default()
    };
    e.node(v, Context::Root, -1)?;
    if !e.out.ends_with('\n') {
        e.out.push('\n');
    }
    Ok(e.out)
}

/// A number as the double sigs.k8s.io/yaml's JSON step makes of it, written as go-yaml reads
/// it back: whole numbers as integers.
fn go_number(n: &Number) -> String {
    let f = n.to_f64();
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else if f.abs() >= 1e21 || (f != 0.0 && f.abs() < 1e-6) {
        format!("{f:e}")
    } else {
        format!("{f}")
    }
}

/// Whether go-yaml v2 may write `s` plain and read it back as the same string: libyaml's
/// rules for a plain scalar in block context, and YAML 1.1's resolution (Go's integer
/// prefixes, `_` in numbers and sexagesimal numbers included, which go-yaml reads as numbers).
fn plain_allowed(s: &str) -> bool {
    static NUMERIC: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^[-+]?(0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*(:[0-5]?[0-9])*(\.[0-9_]*)?([eE][-+]?[0-9]+)?|\.[0-9_]+([eE][-+]?[0-9]+)?)$",
        )
        .expect("a valid expression")
    });
    let chars: Vec<char> = s.chars().collect();
    let Some(&first) = chars.first() else {
        return false;
    };
    let blank_after = |i: usize| chars.get(i + 1).is_none_or(|c| *c == ' ');
    let indicator = matches!(
        first,
        '[' | ']'
            | '{'
            | '}'
            | ','
            | '#'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
    ) || (matches!(first, '-' | '?' | ':') && blank_after(0));
    let unsafe_char = chars.iter().enumerate().any(|(i, &c)| {
        !yaml_printable(c)
            || is_yaml_break(c)
            || (c == ':' && blank_after(i))
            || (c == '#' && i > 0 && chars[i - 1] == ' ')
    });
    !(indicator
        || unsafe_char
        || s.starts_with(' ')
        || s.ends_with(' ')
        || s.starts_with("---")
        || s.starts_with("...")
        || NUMERIC.is_match(s))
        && reads_as_string(s)
}

const BEST_INDENT: i64 = 2;
const BEST_WIDTH: usize = 80;

impl YamlEmitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        if c == '\n' {
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    fn put_str(&mut self, s: &str) {
        for c in s.chars() {
            self.put(c);
        }
    }

    /// A new line, then spaces to `indent`, unless already there.
    fn indent_to(&mut self, indent: i64) {
        let indent = usize::try_from(indent.max(0)).unwrap_or(0);
        if self.column > indent || !self.out.is_empty() && !self.out.ends_with('\n') {
            self.put('\n');
        }
        while self.column < indent {
            self.put(' ');
        }
    }

    fn node(&mut self, v: &Value, context: Context, indent: i64) -> Result<(), CallError> {
        match v {
            Value::Sensitive(m) => self.node(&m.value, context, indent),
            Value::Unknown => Err(CallError::call("cannot serialize unknown value as YAML")),
            Value::List(items) if items.is_empty() => {
                self.space_before();
                self.put_str("[]");
                Ok(())
            }
            Value::Object(map) if map.is_empty() => {
                self.space_before();
                self.put_str("{}");
                Ok(())
            }
            Value::List(items) => {
                let indent = if context == Context::Root { 0 } else { indent };
                for (i, item) in items.iter().enumerate() {
                    if !(i == 0 && self.inline_first) {
                        self.indent_to(indent);
                    }
                    self.inline_first = false;
                    self.put_str("-");
                    self.block_child(item, indent)?;
                }
                Ok(())
            }
            Value::Object(map) => {
                let indent = if context == Context::Root { 0 } else { indent };
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for (i, key) in keys.into_iter().enumerate() {
                    if !(i == 0 && self.inline_first) {
                        self.indent_to(indent);
                    }
                    self.inline_first = false;
                    let simple = !key.contains(is_yaml_break) && key.len() <= 128;
                    if simple {
                        self.scalar_string(key, Context::SimpleKey, indent);
                        self.put(':');
                    } else {
                        self.put_str("?");
                        self.scalar_string(key, Context::Block, indent);
                        self.indent_to(indent);
                        self.put(':');
                    }
                    let value = &map[key];
                    match value.peel() {
                        // A sequence in a mapping is not indented; a mapping is.
                        Value::List(items) if !items.is_empty() => {
                            self.node(value, Context::Block, indent)?
                        }
                        Value::Object(inner) if !inner.is_empty() => {
                            self.node(value, Context::Block, indent + BEST_INDENT)?
                        }
                        _ => self.node(value, Context::Block, indent)?,
                    }
                }
                Ok(())
            }
            scalar => {
                self.open_ended = false;
                match scalar {
                    Value::String(s) => self.scalar_string(s, context, indent),
                    other => {
                        self.space_before();
                        let text = match other {
                            Value::Bool(b) => b.to_string(),
                            Value::Number(n) if self.plain => go_number(n),
                            Value::Number(n) => n.to_text(),
                            _ => "null".to_owned(),
                        };
                        self.put_str(&text);
                        self.open_ended = context == Context::Root;
                    }
                }
                Ok(())
            }
        }
    }

    /// A sequence item after its dash: a collection starts on the dash's line.
    fn block_child(&mut self, item: &Value, indent: i64) -> Result<(), CallError> {
        match item.peel() {
            Value::List(inner) if !inner.is_empty() => {
                self.put(' ');
                self.inline_first = true;
                self.node(item, Context::Block, indent + BEST_INDENT)
            }
            Value::Object(inner) if !inner.is_empty() => {
                self.put(' ');
                self.inline_first = true;
                self.node(item, Context::Block, indent + BEST_INDENT)
            }
            _ => self.node(item, Context::Block, indent),
        }
    }

    fn space_before(&mut self) {
        if !(self.out.is_empty() || self.out.ends_with([' ', '\n'])) {
            self.put(' ');
        }
    }

    fn scalar_string(&mut self, s: &str, context: Context, container: i64) {
        // A scalar's own lines are indented one step past its container (2 at the root).
        let indent = if container < 0 {
            BEST_INDENT
        } else {
            container + BEST_INDENT
        };
        self.space_before();
        if self.plain && plain_allowed(s) {
            self.put_str(s);
        } else if s.contains('\n') && context != Context::SimpleKey && yaml_block_allowed(s) {
            self.literal(s, indent);
        } else {
            self.double_quoted(s, indent, context != Context::SimpleKey);
        }
    }

    fn literal(&mut self, s: &str, indent: i64) {
        self.put('|');
        if s.starts_with([' ']) || s.starts_with(is_yaml_break) {
            self.put_str(&BEST_INDENT.to_string());
        }
        let chars: Vec<char> = s.chars().collect();
        let chomp = match chars.as_slice() {
            [] => Some('-'),
            [.., last] if !is_yaml_break(*last) => Some('-'),
            [_] => Some('+'),
            [.., before, _] if is_yaml_break(*before) => Some('+'),
            _ => None,
        };
        if let Some(c) = chomp {
            self.put(c);
        }
        self.put('\n');
        let mut breaks = true;
        for &c in &chars {
            if is_yaml_break(c) {
                if c == '\n' {
                    self.put('\n');
                } else {
                    self.out.push(c);
                    self.column = 0;
                }
                breaks = true;
            } else {
                if breaks {
                    while self.column < usize::try_from(indent).unwrap_or(0) {
                        self.put(' ');
                    }
                }
                self.put(c);
                breaks = false;
            }
        }
    }

    fn double_quoted(&mut self, s: &str, indent: i64, allow_breaks: bool) {
        self.put('"');
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !yaml_printable(c) || c == '\u{feff}' || is_yaml_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let v = u32::from(c);
                        let text = if v <= 0xff {
                            format!("x{v:02X}")
                        } else if v <= 0xffff {
                            format!("u{v:04X}")
                        } else {
                            format!("U{v:08X}")
                        };
                        self.put_str(&text);
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < chars.len() - 1
                {
                    self.put('\n');
                    while self.column < usize::try_from(indent).unwrap_or(0) {
                        self.put(' ');
                    }
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            i += 1;
        }
        self.put('"');
    }
}

fn is_yaml_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's printable characters (its byte test leaves out everything past U+FFFF, which it
/// then escapes as `\UXXXXXXXX`).
fn yaml_printable(c: char) -> bool {
    matches!(u32::from(c), 0x0A | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD) && c != '\u{feff}'
}

/// Whether libyaml may write the text as a literal block: no space before a line break, no
/// trailing space, nothing that needs an escape.
fn yaml_block_allowed(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() || chars.last() == Some(&' ') {
        return false;
    }
    let special = chars.iter().any(|&c| !yaml_printable(c) || c == '\u{feff}');
    let space_break = chars.windows(2).any(|w| w[0] == ' ' && is_yaml_break(w[1]));
    !(special || space_break)
}

/// Gzip, then base64, as Terraform's `base64gzip`: for payloads (cloud-init, user data) that
/// must be small. The compressed bytes may differ from Terraform's (another deflate
/// implementation); what they decompress to is the same.
pub(super) fn base64gzip(a: &Args<'_>) -> CallResult {
    use std::io::Write as _;
    let text = a.string(0)?;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(text.as_bytes())
        .and_then(|()| encoder.finish())
        .map(|bytes| Value::String(BASE64.encode(bytes)))
        .map_err(|e| CallError::call(format!("cannot compress: {e}")))
}

/// OpenTofu's `base64gunzip`: the text that `base64gzip` compressed.
pub(super) fn base64gunzip(a: &Args<'_>) -> CallResult {
    use std::io::Read as _;
    let text = a.string(0)?;
    let bytes = BASE64
        .decode(text.as_bytes())
        .map_err(|_| CallError::call("failed to decode base64 data"))?;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .take(u64::try_from(MAX_STRING_BYTES).unwrap_or(u64::MAX) + 1)
        .read_to_end(&mut out)
        .map_err(|e| CallError::call(format!("failed to gunzip bytestream: {e}")))?;
    if out.len() > MAX_STRING_BYTES {
        return Err(CallError::call(format!(
            "the result would be longer than {} MiB",
            MAX_STRING_BYTES >> 20
        )));
    }
    ok_string(String::from_utf8_lossy(&out))
}

/// Go's `url.QueryUnescape`, as OpenTofu's `urldecode` uses: `%XX` and `+` for a space.
pub(super) fn urldecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                let Some(byte) = hex else {
                    let end = (i + 3).min(bytes.len());
                    return Err(CallError::call(format!(
                        "failed to decode URL: invalid URL escape {:?}",
                        String::from_utf8_lossy(&bytes[i..end])
                    )));
                };
                out.push(byte);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    ok_string(String::from_utf8_lossy(&out))
}

/// CSV with a header line, as Terraform's `csvdecode`: a list of objects whose attributes are
/// the header's names, every value a string; every record must have the header's fields.
pub(super) fn csvdecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    csv_quotes_strict(&text).map_err(CallError::call)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| CallError::call(csv_error(&e)))?
        .clone();
    if headers.is_empty() {
        return Err(CallError::call("missing header line"));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = headers.iter().find(|h| !seen.insert(*h)) {
        return Err(CallError::call(format!(
            "duplicate column name \"{twice}\""
        )));
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| CallError::call(csv_error(&e)))?;
        if out.len() >= MAX_ELEMENTS {
            return Err(CallError::call("too many records"));
        }
        out.push(Value::Object(
            headers
                .iter()
                .zip(record.iter())
                .map(|(k, v)| (k.to_owned(), Value::string(v)))
                .collect(),
        ));
    }
    Ok(Value::List(out))
}

/// Go's `encoding/csv` refuses quotes the `csv` crate accepts: one inside a field that did
/// not start with a quote, and one in a quoted field not doubled nor closing it.
fn csv_quotes_strict(text: &str) -> Result<(), String> {
    let mut line = 1;
    let mut chars = text.chars().peekable();
    let mut at_field_start = true;
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                }
                '"' => {
                    quoted = false;
                    if !matches!(chars.peek(), None | Some(',' | '\n' | '\r')) {
                        return Err(format!(
                            "CSV parse error on line {line}: extraneous or missing \" in quoted-field"
                        ));
                    }
                }
                '\n' => line += 1,
                _ => {}
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            '"' => {
                return Err(format!(
                    "CSV parse error on line {line}: bare \" in non-quoted-field"
                ));
            }
            ',' => at_field_start = true,
            '\n' => {
                line += 1;
                at_field_start = true;
            }
            _ => at_field_start = false,
        }
    }
    Ok(())
}

fn csv_error(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { pos, .. } => format!(
            "record on line {}: wrong number of fields",
            pos.as_ref().map_or(0, |p| p.line())
        ),
        _ => e.to_string(),
    }
}

/// A name-based UUID (RFC 4122 version 5) in a namespace: `dns`, `url`, `oid`, `x500` or a
/// UUID.
pub(super) fn uuidv5(a: &Args<'_>) -> CallResult {
    let (namespace, name) = (a.string(0)?, a.string(1)?);
    let namespace = match namespace.as_str() {
        "dns" => uuid::Uuid::NAMESPACE_DNS,
        "url" => uuid::Uuid::NAMESPACE_URL,
        "oid" => uuid::Uuid::NAMESPACE_OID,
        "x500" => uuid::Uuid::NAMESPACE_X500,
        other => uuid::Uuid::parse_str(other).map_err(|e| {
            a.error(
                0,
                format!("must be \"dns\", \"url\", \"oid\", \"x500\" or a UUID: {e}"),
            )
        })?,
    };
    ok_string(uuid::Uuid::new_v5(&namespace, name.as_bytes()).to_string())
}

/// A character encoding by its IANA name, as Terraform's text*base64 functions take it.
enum TextEncoding {
    /// ISO-8859-1 and US-ASCII as IANA defines them: the WHATWG labels that encoding_rs
    /// follows make both windows-1252, which differs in 0x80–0x9F (and above 0x7F for ASCII).
    Bytes {
        name: &'static str,
        max: u32,
    },
    Other(&'static encoding_rs::Encoding),
}

fn text_encoding(a: &Args<'_>, i: usize) -> CallResult<TextEncoding> {
    let name = a.string(i)?;
    let label = name.trim().to_ascii_uppercase();
    match label.as_str() {
        "ISO-8859-1" | "ISO_8859-1" | "LATIN1" | "L1" => Ok(TextEncoding::Bytes {
            name: "ISO-8859-1",
            max: 0xFF,
        }),
        "US-ASCII" | "ASCII" => Ok(TextEncoding::Bytes {
            name: "US-ASCII",
            max: 0x7F,
        }),
        // IANA's name for Microsoft's GBK, which the WHATWG labels lack.
        "CP936" => Ok(TextEncoding::Other(encoding_rs::GBK)),
        _ => encoding_rs::Encoding::for_label(label.as_bytes())
            .map(TextEncoding::Other)
            .ok_or_else(|| a.error(i, format!("invalid encoding name \"{name}\""))),
    }
}

/// A string encoded in another character encoding, as base64 (`textencodebase64`).
pub(super) fn textencodebase64(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let encoding = match text_encoding(a, 1)? {
        TextEncoding::Bytes { name, max } => {
            let bytes = text
                .chars()
                .map(|c| {
                    u8::try_from(u32::from(c))
                        .ok()
                        .filter(|b| u32::from(*b) <= max)
                })
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| {
                    a.error(
                        0,
                        format!("the string has characters that {name} cannot encode"),
                    )
                })?;
            return ok_string(BASE64.encode(bytes));
        }
        TextEncoding::Other(encoding) => encoding,
    };
    // encoding_rs encodes UTF-16 as UTF-8 (the WHATWG rule for forms); Terraform's is real.
    let bytes: Vec<u8> = if encoding == encoding_rs::UTF_16LE {
        text.encode_utf16().flat_map(u16::to_le_bytes).collect()
    } else if encoding == encoding_rs::UTF_16BE {
        text.encode_utf16().flat_map(u16::to_be_bytes).collect()
    } else {
        let (bytes, _, unmappable) = encoding.encode(&text);
        if unmappable {
            return Err(a.error(
                0,
                format!(
                    "the string has characters that {} cannot encode",
                    encoding.name()
                ),
            ));
        }
        bytes.into_owned()
    };
    ok_string(BASE64.encode(bytes))
}

/// Base64 of text in another character encoding, as a string (`textdecodebase64`).
pub(super) fn textdecodebase64(a: &Args<'_>) -> CallResult {
    let encoded = a.string(0)?;
    let encoding = text_encoding(a, 1)?;
    let bytes = BASE64
        .decode(encoded.as_bytes())
        .map_err(|e| a.error(0, format!("the string is not valid base64: {e}")))?;
    let encoding = match encoding {
        TextEncoding::Bytes { name, max } => {
            if bytes.iter().any(|b| u32::from(*b) > max) {
                return Err(a.error(0, format!("the bytes are not valid {name}")));
            }
            return ok_string(bytes.iter().map(|b| char::from(*b)).collect::<String>());
        }
        TextEncoding::Other(encoding) => encoding,
    };
    // Bytes the Windows code pages leave undefined: WHATWG maps them to C1 controls, Go's
    // charmap (Terraform's) to nothing.
    let undefined: &[u8] = if encoding == encoding_rs::WINDOWS_1250 {
        &[0x81, 0x83, 0x88, 0x90, 0x98]
    } else if encoding == encoding_rs::WINDOWS_1251 {
        &[0x98]
    } else if encoding == encoding_rs::WINDOWS_1252 {
        &[0x81, 0x8D, 0x8F, 0x90, 0x9D]
    } else {
        &[]
    };
    if bytes.iter().any(|b| undefined.contains(b)) {
        return Err(a.error(
            0,
            format!(
                "the given string contains symbols that are not defined for {}",
                encoding.name().to_ascii_lowercase()
            ),
        ));
    }
    let (text, malformed) = encoding.decode_without_bom_handling(&bytes);
    if malformed {
        return Err(a.error(0, format!("the bytes are not valid {}", encoding.name())));
    }
    ok_string(text.into_owned())
}

/// A ciphertext (base64) decrypted with an RSA private key in PEM, PKCS #1 v1.5 padding, as
/// Terraform's `rsadecrypt`.
pub(super) fn rsadecrypt(a: &Args<'_>) -> CallResult {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    let (ciphertext, pem) = (a.string(0)?, a.string(1)?);
    let ciphertext = BASE64
        .decode(ciphertext.as_bytes())
        .map_err(|e| a.error(0, format!("the ciphertext is not valid base64: {e}")))?;
    let key = rsa::RsaPrivateKey::from_pkcs1_pem(&pem)
        .or_else(|_| rsa::RsaPrivateKey::from_pkcs8_pem(&pem))
        .map_err(|_| {
            a.error(
                1,
                "not an unencrypted RSA private key in PEM (PKCS #1 or PKCS #8)",
            )
        })?;
    let plain = key
        .decrypt(rsa::Pkcs1v15Encrypt, &ciphertext)
        .map_err(|e| CallError::call(format!("failed to decrypt: {e}")))?;
    String::from_utf8(plain)
        .map(Value::String)
        .map_err(|_| CallError::call("the decrypted text is not UTF-8"))
}
