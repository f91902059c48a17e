//! `yamldecode` with the rules of Terraform's decoder (go-cty-yaml, a port of libyaml and
//! go-yaml v2): YAML 1.1 scalars (`yes`, `on`, `y` are true; `01` and `0x1F` are numbers;
//! timestamps become RFC 3339 text), `<<` merge keys, the last of duplicate keys, keys
//! resolved as scalars and then taken as text (`y:` is the key `"true"`), exactly one
//! document, and nothing for empty input.

use super::*;
use gpustack_protocol::limits::DecodeCost;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

const TAG_PREFIX: &str = "tag:yaml.org,2002:";

pub(super) fn yamldecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    decode(&text).map_err(CallError::call)
}

struct Decoder<'a> {
    parser: Parser<std::str::Chars<'a>>,
    /// Each anchored value with what it costs to copy it where an alias names it.
    anchors: HashMap<usize, (Value, DecodeCost)>,
    /// What the decoded value holds so far, aliases expanded: a few bytes of nested aliases
    /// ("billion laughs") would otherwise expand to more than memory holds.
    built: DecodeCost,
    /// How deep the collections being decoded nest.
    depth: usize,
    /// A timestamp stays the text it is written as (go-yaml v2 decoding into an interface,
    /// as sigs.k8s.io/yaml does), rather than becoming RFC 3339 text (go-cty-yaml).
    timestamps_as_written: bool,
}

fn decode(text: &str) -> Result<Value, String> {
    decode_with(text, false, &mut DecodeCost::default())
}

/// One YAML document as Kubernetes' own decoder (sigs.k8s.io/yaml on go-yaml v2) reads it:
/// YAML 1.1's scalars, as `yamldecode`, but timestamps kept as written. `budget` is what the
/// call decoded before this document: the limits hold for all the documents of one call.
pub(super) fn decode_kubernetes(text: &str, budget: &mut DecodeCost) -> Result<Value, String> {
    decode_with(text, true, budget)
}

/// Whether YAML 1.1 reads `text`, written plain, back as the same string (not a bool, a
/// number, null or a timestamp).
pub(super) fn reads_as_string(text: &str) -> bool {
    matches!(resolve("", text, TScalarStyle::Plain, false), Ok(Value::String(s)) if s == text)
}

fn decode_with(
    text: &str,
    timestamps_as_written: bool,
    budget: &mut DecodeCost,
) -> Result<Value, String> {
    // An empty text is one newline to the parser, as go-cty-yaml feeds it.
    let text = if text.is_empty() { "\n" } else { text };
    let mut d = Decoder {
        parser: Parser::new_from_str(text),
        anchors: HashMap::new(),
        built: *budget,
        depth: 0,
        timestamps_as_written,
    };
    if !matches!(d.next()?, Event::StreamStart) {
        return Err("missing stream start token".to_owned());
    }
    match d.next()? {
        Event::DocumentStart => {}
        // A text of blanks and comments: sigs.k8s.io/yaml reads nothing from it.
        Event::StreamEnd if timestamps_as_written => return Ok(Value::Null),
        _ => return Err("missing start of document".to_owned()),
    }
    let value = d.value();
    *budget = d.built;
    let value = value?;
    match d.next()? {
        Event::DocumentEnd => {}
        Event::DocumentStart => return Err("only a single document is allowed".to_owned()),
        _ => return Err("unexpected extra content after value".to_owned()),
    }
    match d.next()? {
        Event::StreamEnd => Ok(value),
        Event::DocumentStart => Err("only a single document is allowed".to_owned()),
        _ => Err("unexpected extra content after value".to_owned()),
    }
}

fn full_tag(tag: Option<&Tag>) -> String {
    tag.map_or_else(String::new, |t| format!("{}{}", t.handle, t.suffix))
}

impl Decoder<'_> {
    fn next(&mut self) -> Result<Event, String> {
        self.parser
            .next_token()
            .map(|(event, _)| event)
            .map_err(|e| e.to_string())
    }

    fn value(&mut self) -> Result<Value, String> {
        let event = self.next()?;
        self.value_from(event)
    }

    /// Counts what the value being built gains, against the limits of every decoded value.
    fn count(&mut self, cost: DecodeCost) -> Result<(), String> {
        self.built.add(cost).map_err(|limit| limit.to_string())
    }

    /// Keeps an anchored value, with what it cost to build since `from`.
    fn remember(&mut self, anchor: usize, value: &Value, from: DecodeCost) {
        if anchor > 0 {
            let cost = self.built.since(from);
            self.anchors.insert(anchor, (value.clone(), cost));
        }
    }

    /// Enters a collection: nesting is bounded as every evaluation's is.
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > crate::expr::limits::MAX_DEPTH {
            return Err(format!(
                "the document nests more than {} levels deep",
                crate::expr::limits::MAX_DEPTH
            ));
        }
        self.count(DecodeCost::ONE_ELEMENT)
    }

    fn value_from(&mut self, event: Event) -> Result<Value, String> {
        let from = self.built;
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.count(DecodeCost::scalar(text.len()))?;
                let value = resolve(
                    &full_tag(tag.as_ref()),
                    &text,
                    style,
                    self.timestamps_as_written,
                )?;
                self.remember(anchor, &value, from);
                Ok(value)
            }
            Event::Alias(anchor) => {
                let (value, cost) = self
                    .anchors
                    .get(&anchor)
                    .ok_or_else(|| "unknown anchor".to_owned())?;
                let (value, cost) = (value.clone(), *cost);
                self.count(cost)?;
                Ok(value)
            }
            Event::SequenceStart(anchor, tag) => {
                let tag = full_tag(tag.as_ref());
                if !tag.is_empty() && tag != format!("{TAG_PREFIX}seq") {
                    return Err(format!("can't interpret sequence as {tag}"));
                }
                self.enter()?;
                let mut items = Vec::new();
                loop {
                    match self.next()? {
                        Event::SequenceEnd => break,
                        event => items.push(self.value_from(event)?),
                    }
                }
                self.depth -= 1;
                let value = Value::List(items);
                self.remember(anchor, &value, from);
                Ok(value)
            }
            Event::MappingStart(anchor, tag) => {
                let tag = full_tag(tag.as_ref());
                if !tag.is_empty() && tag != format!("{TAG_PREFIX}map") {
                    return Err(format!("can't interpret mapping as {tag}"));
                }
                self.enter()?;
                let value = Value::Object(self.mapping()?);
                self.depth -= 1;
                self.remember(anchor, &value, from);
                Ok(value)
            }
            Event::StreamEnd => Err("expecting value but found end of stream".to_owned()),
            Event::DocumentStart => Err("only a single document is allowed".to_owned()),
            _ => Err("unexpected parser event".to_owned()),
        }
    }

    fn mapping(&mut self) -> Result<IndexMap<String, Value>, String> {
        let mut map = IndexMap::new();
        loop {
            let key = match self.next()? {
                Event::MappingEnd => {
                    map.sort_unstable_keys();
                    return Ok(map);
                }
                Event::Scalar(text, style, _, tag) if tag.is_none() && text == "<<" => {
                    let _ = style;
                    self.merge(&mut map)?;
                    continue;
                }
                Event::Scalar(text, _, _, Some(tag))
                    if full_tag(Some(&tag)) == format!("{TAG_PREFIX}merge") =>
                {
                    let _ = text;
                    self.merge(&mut map)?;
                    continue;
                }
                Event::Scalar(text, style, _, tag) => {
                    self.count(DecodeCost {
                        elements: 0,
                        bytes: text.len(),
                    })?;
                    match resolve(
                        &full_tag(tag.as_ref()),
                        &text,
                        style,
                        self.timestamps_as_written,
                    )? {
                        Value::Null => return Err("mapping key cannot be null".to_owned()),
                        Value::String(s) => s,
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => format_number(&n),
                        _ => return Err("only strings are allowed as mapping keys".to_owned()),
                    }
                }
                _ => return Err("only strings are allowed as mapping keys".to_owned()),
            };
            let value = self.value()?;
            map.insert(key, value);
        }
    }

    /// A `<<` key: the entries of a mapping, or of each mapping of a sequence, set in order.
    fn merge(&mut self, map: &mut IndexMap<String, Value>) -> Result<(), String> {
        match self.value()? {
            Value::Object(from) => map.extend(from),
            Value::List(items) => {
                for item in items {
                    match item {
                        Value::Object(from) => map.extend(from),
                        other => {
                            return Err(format!(
                                "cannot merge {} (from sequence) into mapping",
                                other.type_name()
                            ));
                        }
                    }
                }
            }
            other => return Err(format!("cannot merge {} into mapping", other.type_name())),
        }
        Ok(())
    }
}

fn is_integer_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |t: &[u8], f: fn(&u8) -> bool| !t.is_empty() && t.iter().all(f);
    let unsigned = b.strip_prefix(b"+").or(b.strip_prefix(b"-")).unwrap_or(b);
    digits(unsigned, u8::is_ascii_digit)
        || b.strip_prefix(b"0o")
            .is_some_and(|t| digits(t, |c| (b'0'..=b'7').contains(c)))
        || b.strip_prefix(b"0x")
            .is_some_and(|t| digits(t, u8::is_ascii_hexdigit))
}

fn is_float_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let b = b.strip_prefix(b"+").or(b.strip_prefix(b"-")).unwrap_or(b);
    let (mantissa, exponent) = match b.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    let mantissa_ok = match mantissa.iter().position(|&c| c == b'.') {
        Some(0) => mantissa.len() > 1 && mantissa[1..].iter().all(u8::is_ascii_digit),
        Some(i) => {
            mantissa[..i].iter().all(u8::is_ascii_digit)
                && mantissa[i + 1..].iter().all(u8::is_ascii_digit)
        }
        None => !mantissa.is_empty() && mantissa.iter().all(u8::is_ascii_digit),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(b"+").or(e.strip_prefix(b"-")).unwrap_or(e);
        !e.is_empty() && e.iter().all(u8::is_ascii_digit)
    });
    mantissa_ok && exponent_ok
}

fn keyword(s: &str) -> Option<Value> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Value::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Value::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            Value::Number(Number::infinity(false))
        }
        "-.inf" | "-.Inf" | "-.INF" => Value::Number(Number::infinity(true)),
        _ => return None,
    })
}

/// go-cty-yaml's `resolveScalar`: what a scalar of this tag, text and style is.
fn resolve(
    tag: &str,
    src: &str,
    style: TScalarStyle,
    timestamps_as_written: bool,
) -> Result<Value, String> {
    let tag = tag
        .strip_prefix(TAG_PREFIX)
        .map_or_else(|| tag.to_owned(), |short| format!("!!{short}"));
    if !matches!(
        tag.as_str(),
        "" | "!!str" | "!!bool" | "!!int" | "!!float" | "!!null" | "!!timestamp" | "!!binary"
    ) {
        return Err(format!("unsupported tag {tag:?}"));
    }
    // The first character says what the scalar may be: a sign or digit a number or a
    // timestamp, one of `yYnNtTfFoO~` a keyword, `.` a float; anything else is text.
    let hint = match src.bytes().next() {
        None => Some('N'),
        Some(b'+' | b'-') => Some('S'),
        Some(b'0'..=b'9') => Some('D'),
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {
            Some('M')
        }
        Some(b'.') => Some('.'),
        Some(_) => None,
    };
    let mut tag = tag;
    if let Some(hint) = hint
        && tag != "!!str"
        && tag != "!!binary"
    {
        if matches!(
            style,
            TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted
        ) {
            return Ok(Value::string(src));
        }
        if let Some(v) = keyword(src) {
            return Ok(v);
        }
        if tag.is_empty() && matches!(src, ".nan" | ".NaN" | ".NAN") {
            return Err("floating point NaN is not supported".to_owned());
        }
        match hint {
            '.' => {
                if let Ok(n) = Number::parse(src) {
                    return Ok(Value::Number(n));
                }
            }
            'D' | 'S' => {
                if (tag.is_empty() || tag == "!!timestamp")
                    && let Some(t) = timestamp(src)
                {
                    return Ok(if timestamps_as_written {
                        Value::string(src)
                    } else {
                        Value::String(t)
                    });
                }
                if is_integer_literal(src) {
                    tag = "!!int".to_owned();
                } else if is_float_literal(src) {
                    tag = "!!float".to_owned();
                }
            }
            _ => {}
        }
    }
    match tag.as_str() {
        "!!str" => Ok(Value::string(src)),
        "!!binary" => BASE64
            .decode(src.as_bytes())
            .map(|_| Value::string(src))
            .map_err(|_| format!("cannot parse {src:?} as !!binary: not valid base64")),
        "!!bool" => match keyword(src) {
            Some(v @ Value::Bool(_)) => Ok(v),
            _ => Err(format!("cannot parse {src:?} as {tag}")),
        },
        "!!int" | "!!float" => {
            let plain = src.replace('_', "");
            if let Ok(n) = Number::parse(&plain) {
                return Ok(Value::Number(n));
            }
            go_parse_int(&plain)
                .map(Value::Number)
                .ok_or_else(|| format!("cannot parse {src:?} as {tag}"))
        }
        "!!timestamp" => timestamp(src)
            .map(Value::String)
            .ok_or_else(|| format!("cannot parse {src:?} as {tag}")),
        "!!null" => Ok(Value::Null),
        _ => Ok(Value::string(src)),
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` then `ParseUint`: a sign, then `0x`, `0o`, `0b` or a
/// leading `0` (octal) prefix.
fn go_parse_int(s: &str) -> Option<Number> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        let v = 0i64.checked_sub_unsigned(magnitude)?;
        Some(Number::from_i64(v))
    } else if let Ok(v) = i64::try_from(magnitude) {
        Some(Number::from_i64(v))
    } else {
        Some(Number::from_u64(magnitude))
    }
}

/// A YAML timestamp in one of the forms Terraform's decoder accepts, as RFC 3339 text (whole
/// seconds): `2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10` (UTC), `2002-12-14`.
fn timestamp(s: &str) -> Option<String> {
    let b = s.as_bytes();
    // Four digits of year, then `-`.
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return None;
    }
    let mut rest = s;
    let year: i64 = take_digits(&mut rest, 4, 4)?;
    expect(&mut rest, '-')?;
    let month: u32 = take_digits(&mut rest, 1, 2)?;
    expect(&mut rest, '-')?;
    let day: u32 = take_digits(&mut rest, 1, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let date = format!("{year:04}-{month:02}-{day:02}");
    if rest.is_empty() {
        return Some(format!("{date}T00:00:00Z"));
    }
    let zoned = match rest.as_bytes()[0] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return None,
    };
    rest = &rest[1..];
    let hour: u32 = take_digits(&mut rest, 1, 2)?;
    expect(&mut rest, ':')?;
    let minute: u32 = take_digits(&mut rest, 1, 2)?;
    expect(&mut rest, ':')?;
    let second: u32 = take_digits(&mut rest, 1, 2)?;
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        rest = &frac[n..];
    }
    let time = format!("{date}T{hour:02}:{minute:02}:{second:02}");
    if !zoned {
        return rest.is_empty().then(|| format!("{time}Z"));
    }
    if rest == "Z" {
        return Some(format!("{time}Z"));
    }
    let sign = rest.chars().next().filter(|c| *c == '+' || *c == '-')?;
    rest = &rest[1..];
    let oh: u32 = take_digits(&mut rest, 2, 2)?;
    expect(&mut rest, ':')?;
    let om: u32 = take_digits(&mut rest, 2, 2)?;
    if !rest.is_empty() || oh > 23 || om > 59 {
        return None;
    }
    if oh == 0 && om == 0 {
        return Some(format!("{time}Z"));
    }
    Some(format!("{time}{sign}{oh:02}:{om:02}"))
}

fn take_digits<T: std::str::FromStr>(rest: &mut &str, min: usize, max: usize) -> Option<T> {
    let n = rest
        .bytes()
        .take(max)
        .take_while(u8::is_ascii_digit)
        .count();
    if n < min {
        return None;
    }
    let v = rest[..n].parse().ok()?;
    *rest = &rest[n..];
    Some(v)
}

fn expect(rest: &mut &str, c: char) -> Option<()> {
    *rest = rest.strip_prefix(c)?;
    Some(())
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_resolve_as_yaml_1_1() {
        let plain = TScalarStyle::Plain;
        assert_eq!(resolve("", "yes", plain, false), Ok(Value::Bool(true)));
        assert_eq!(resolve("", "Off", plain, false), Ok(Value::Bool(false)));
        assert_eq!(resolve("", "01", plain, false), Ok(Value::number(1)));
        assert_eq!(resolve("", "0x1F", plain, false), Ok(Value::number(31)));
        assert_eq!(
            resolve("", "1_000", plain, false),
            Ok(Value::string("1_000"))
        );
        assert_eq!(
            resolve("", "0b101", plain, false),
            Ok(Value::string("0b101"))
        );
        assert_eq!(
            resolve("", "yes", TScalarStyle::DoubleQuoted, false),
            Ok(Value::string("yes"))
        );
        assert_eq!(
            resolve("", "2002-12-14", plain, false),
            Ok(Value::string("2002-12-14T00:00:00Z"))
        );
    }
}
