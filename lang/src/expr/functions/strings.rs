//! String functions, `format` and `formatlist` with Terraform's verbs.

use super::*;
use unicode_segmentation::UnicodeSegmentation as _;

pub(super) fn indent(a: &Args<'_>) -> CallResult {
    let spaces = a.count(0)?;
    if spaces > MAX_PADDING {
        return Err(a.error(0, format!("must not exceed {MAX_PADDING}")));
    }
    let s = a.string(1)?;
    let lines = s.matches('\n').count();
    if lines.saturating_mul(spaces).saturating_add(s.len()) > MAX_STRING_BYTES {
        return Err(CallError::call("the indented string would be too large"));
    }
    ok_string(s.replace('\n', &format!("\n{}", " ".repeat(spaces))))
}

pub(super) fn replace(a: &Args<'_>) -> CallResult {
    let (s, substr, replacement) = (a.string(0)?, a.string(1)?, a.string(2)?);
    // A substring in slashes is a regular expression, and the replacement may name its
    // groups ($1, ${name}), as in Terraform.
    if substr.len() >= 2 && substr.starts_with('/') && substr.ends_with('/') {
        let re = pattern(a, 1, &substr[1..substr.len() - 1])?;
        // Matches do not overlap, so each `$` group reference of the replacement adds at
        // most the whole string across all matches.
        let references = replacement.matches('$').count();
        let matches = re.find_iter(&s).count();
        within_string_limit(
            s.len().saturating_mul(references.saturating_add(1)),
            matches,
            replacement.len(),
        )?;
        return ok_string(re.replace_all(&s, replacement.as_str()));
    }
    let matches = if substr.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(&substr).count()
    };
    within_string_limit(s.len(), matches, replacement.len())?;
    ok_string(s.replace(&substr, &replacement))
}

/// Refuses before building a string of `len` bytes plus `times` insertions of up to `each`
/// bytes that would pass [`MAX_STRING_BYTES`].
pub(super) fn within_string_limit(len: usize, times: usize, each: usize) -> CallResult<()> {
    if times.saturating_mul(each).saturating_add(len) > MAX_STRING_BYTES {
        return Err(CallError::call(format!(
            "the result would be longer than {} MiB",
            MAX_STRING_BYTES >> 20
        )));
    }
    Ok(())
}

pub(super) fn split(a: &Args<'_>) -> CallResult {
    let (separator, s) = (a.string(0)?, a.string(1)?);
    // Like Go's strings.Split, an empty separator splits after each character.
    let parts: Vec<Value> = if separator.is_empty() {
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(&separator).map(Value::string).collect()
    };
    Ok(Value::List(parts))
}

/// go-cty's `substr`, in grapheme clusters, quirks included: a negative offset counts from
/// the end (and still starts at the beginning when it reaches before it), an offset past the
/// end gives "", and a zero length after a negative offset takes the rest.
pub(super) fn substr(a: &Args<'_>) -> CallResult {
    let s = a.string(0)?;
    let (mut offset, length) = (a.int(1)?, a.int(2)?);
    let clusters: Vec<&str> = s.graphemes(true).collect();
    let total = i64::try_from(clusters.len()).unwrap_or(i64::MAX);
    if offset < 0 {
        offset += total;
    } else if length == 0 {
        return ok_string("");
    }
    let start = if offset > 0 {
        if offset > total {
            return ok_string("");
        }
        usize::try_from(offset).unwrap_or(0)
    } else {
        0
    };
    let rest = &clusters[start..];
    let taken = match usize::try_from(length) {
        Ok(n) if n > 0 => &rest[..n.min(rest.len())],
        _ => rest,
    };
    ok_string(taken.concat())
}

/// The number of grapheme clusters, as Terraform counts a string's length.
pub(super) fn grapheme_count(s: &str) -> usize {
    if s.is_ascii() {
        // Only CR LF joins two ASCII characters into one cluster.
        return s.len() - s.matches("\r\n").count();
    }
    s.graphemes(true).count()
}

/// Go's `unicode.ToUpper` of each character: the simple mapping, so `ß` stays.
pub(super) fn go_upper(s: &str) -> String {
    s.chars().map(go_upper_char).collect()
}

fn go_upper_char(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `unicode.ToLower` of each character: no final sigma, `İ` to `i`.
pub(super) fn go_lower(s: &str) -> String {
    s.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// Go's `unicode.ToTitle`: the upper case, except for the four digraphs that have a title case.
fn go_title_char(c: char) -> char {
    match c {
        'Ǆ' | 'ǅ' | 'ǆ' => 'ǅ',
        'Ǉ' | 'ǈ' | 'ǉ' => 'ǈ',
        'Ǌ' | 'ǋ' | 'ǌ' => 'ǋ',
        'Ǳ' | 'ǲ' | 'ǳ' => 'ǲ',
        c => go_upper_char(c),
    }
}

/// Go's strings.Title: title-cases every letter that follows a separator.
pub(super) fn title(s: &str) -> String {
    let is_separator = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else if c.is_alphabetic() || c.is_numeric() {
            false
        } else {
            c.is_whitespace()
        }
    };
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    for c in s.chars() {
        if is_separator(prev) {
            out.push(go_title_char(c));
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// Go's url.QueryEscape, as Terraform's urlencode uses.
pub(super) fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn format(a: &Args<'_>) -> CallResult {
    let spec = a.string(0)?;
    let values = a.values.get(1..).unwrap_or_default();
    sprintf(&spec, values)
        .map(Value::String)
        .map_err(|e| e.into_call_error(a))
}

pub(super) fn formatlist(a: &Args<'_>) -> CallResult {
    let spec = a.string(0)?;
    let values = a.values.get(1..).unwrap_or_default();
    // List arguments are iterated in step; the others repeat on every row.
    let mut rows: Option<(usize, usize)> = None;
    for (k, v) in values.iter().enumerate() {
        if let Value::List(items) = v {
            match rows {
                None => rows = Some((k, items.len())),
                Some((first, n)) if n != items.len() => {
                    return Err(a.error(
                        k + 1,
                        format!(
                            "argument {} has length {}, which is inconsistent with argument {} of length {n}",
                            k + 1,
                            items.len(),
                            first + 1
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    let rows = rows.map_or(1, |(_, n)| n);
    let mut out = Vec::with_capacity(rows);
    for row in 0..rows {
        let row_values: Vec<Value> = values
            .iter()
            .map(|v| match v {
                Value::List(items) => items.get(row).cloned().unwrap_or(Value::Null),
                other => other.clone(),
            })
            .collect();
        let s = sprintf(&spec, &row_values).map_err(|e| e.into_call_error(a))?;
        out.push(Value::String(s));
    }
    Ok(Value::List(out))
}

/// A `format` failure; `arg` indexes the values after the format string.
pub(super) struct FormatError {
    arg: Option<usize>,
    message: String,
}

impl FormatError {
    fn into_call_error(self, a: &Args<'_>) -> CallError {
        match self.arg {
            Some(k) => a.error(k + 1, self.message),
            None => CallError::call(self.message),
        }
    }
}

#[derive(Default)]
pub(super) struct Directive {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    sharp: bool,
    /// 1-based, from `%[n]v`.
    index: Option<usize>,
    width: usize,
    precision: Option<usize>,
    verb: char,
}

pub(super) const VERBS: &str = "vstqdboxXeEfFgG";

/// Formats like Terraform's `format`, whose verbs follow Go's fmt.
pub(super) fn sprintf(spec: &str, values: &[Value]) -> Result<String, FormatError> {
    let mut out = String::with_capacity(spec.len());
    let mut chars = spec.char_indices().peekable();
    let mut next = 0;
    let mut used = 0;
    let mut verbs = 0;
    while let Some((start, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let position = spec.get(..start).map_or(0, |s| s.chars().count());
        let fail = |message: String| FormatError {
            arg: None,
            message: format!("{message} at position {position}"),
        };
        let d = parse_directive(&mut chars).map_err(fail)?;
        let end = chars.peek().map_or(spec.len(), |(i, _)| *i);
        let text = spec.get(start..end).unwrap_or("%");
        if d.verb == '%' {
            out.push('%');
            continue;
        }
        if !VERBS.contains(d.verb) {
            return Err(FormatError {
                arg: None,
                message: format!("unrecognized format verb \"{text}\" at position {position}"),
            });
        }
        let index = match d.index {
            Some(0) => return Err(fail(format!("invalid argument index in \"{text}\""))),
            Some(n) => n - 1,
            None => next,
        };
        next = index + 1;
        used = used.max(next);
        verbs += 1;
        let Some(value) = values.get(index) else {
            return Err(FormatError {
                arg: None,
                message: format!(
                    "not enough arguments for \"{text}\" at position {position}: need {} but have {}",
                    index + 1,
                    values.len()
                ),
            });
        };
        let formatted = format_value(&d, value).map_err(|m| FormatError {
            arg: Some(index),
            message: format!("unsupported value for \"{text}\" at position {position}: {m}"),
        })?;
        out.push_str(&formatted);
    }
    if used < values.len() {
        let message = if verbs == 0 {
            "too many arguments; no verbs in format string".to_owned()
        } else {
            format!("too many arguments; only {used} used by format string")
        };
        return Err(FormatError {
            arg: Some(used),
            message,
        });
    }
    Ok(out)
}

pub(super) fn parse_directive(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> Result<Directive, String> {
    let mut d = Directive::default();
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => d.minus = true,
            '+' => d.plus = true,
            ' ' => d.space = true,
            '0' => d.zero = true,
            '#' => d.sharp = true,
            _ => break,
        }
        chars.next();
    }
    if chars.peek().is_some_and(|&(_, c)| c == '[') {
        chars.next();
        let n = parse_digits(chars).ok_or("invalid argument index")?;
        if chars.next().map(|(_, c)| c) != Some(']') {
            return Err("unterminated argument index".to_owned());
        }
        d.index = Some(n);
    }
    d.width = parse_digits(chars).unwrap_or(0);
    if chars.peek().is_some_and(|&(_, c)| c == '.') {
        chars.next();
        d.precision = Some(parse_digits(chars).unwrap_or(0));
    }
    if d.width > MAX_PADDING || d.precision.is_some_and(|p| p > MAX_PADDING) {
        return Err(format!("width and precision must not exceed {MAX_PADDING}"));
    }
    d.verb = chars.next().map(|(_, c)| c).ok_or("missing verb")?;
    Ok(d)
}

/// Reads a decimal number, saturating rather than overflowing; None when there are no digits.
pub(super) fn parse_digits(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(digit) = chars.peek().and_then(|&(_, c)| c.to_digit(10)) {
        chars.next();
        n = Some(
            n.unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(digit as usize),
        );
    }
    n
}

pub(super) fn format_value(d: &Directive, v: &Value) -> Result<String, String> {
    if v.is_null() && d.verb != 'v' {
        return Err("null value cannot be formatted".to_owned());
    }
    // A precision cuts a string to that many grapheme clusters.
    let cut = |s: String| match d.precision {
        Some(p) if p > 0 => s.graphemes(true).take(p).collect(),
        _ => s,
    };
    let text = match d.verb {
        'v' if d.sharp || v.is_null() => json_text(v)?,
        'v' => match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.text('g', -1),
            Value::Bool(b) => b.to_string(),
            _ => json_text(v)?,
        },
        's' => cut(as_string(v).ok_or("string required")?),
        'q' => json_text(&Value::String(cut(as_string(v).ok_or("string required")?)))?,
        't' => as_bool(v).ok_or("bool required")?.to_string(),
        _ => return format_numeric(d, as_number(v).ok_or("number required")?),
    };
    Ok(pad(d, "", &text))
}

pub(super) fn format_numeric(d: &Directive, n: Number) -> Result<String, String> {
    if matches!(d.verb, 'd' | 'b' | 'o' | 'x' | 'X') {
        return format_integer(d, &n);
    }
    // Go's big.Float formatting: `%e`/`%f` default to 6 digits, `%g` to the shortest.
    let verb = match d.verb {
        'F' => 'f',
        other => other,
    };
    let prec = match (verb, d.precision) {
        (_, Some(p)) => i64::try_from(p).unwrap_or(0),
        ('g' | 'G', None) => -1,
        (_, None) => 6,
    };
    let text = n.text(verb, prec);
    let (sign, body) = if let Some(rest) = text.strip_prefix('-') {
        ("-", rest)
    } else if let Some(rest) = text.strip_prefix('+') {
        (if d.space { " " } else { "+" }, rest)
    } else if d.plus {
        ("+", text.as_str())
    } else if d.space {
        (" ", text.as_str())
    } else {
        ("", text.as_str())
    };
    let len = sign.len() + body.len();
    let padding = d.width.saturating_sub(len);
    Ok(if d.zero && n.is_finite() {
        format!("{sign}{}{body}", "0".repeat(padding))
    } else if d.minus {
        format!("{sign}{body}{}", " ".repeat(padding))
    } else {
        format!("{}{sign}{body}", " ".repeat(padding))
    })
}

/// Go's big.Int formatting of a whole number.
fn format_integer(d: &Directive, n: &Number) -> Result<String, String> {
    let Some((negative, magnitude)) = n.trunc_parts().filter(|_| n.is_integer()) else {
        return Err("an integer is required".to_owned());
    };
    let mut prefix = "";
    let body = match d.verb {
        'd' => magnitude.to_str_radix(10),
        'b' | 'o' | 'x' | 'X' => {
            let (digits, alt) = match d.verb {
                'b' => (magnitude.to_str_radix(2), "0b"),
                'o' => (magnitude.to_str_radix(8), "0"),
                'x' => (magnitude.to_str_radix(16), "0x"),
                _ => (magnitude.to_str_radix(16).to_uppercase(), "0X"),
            };
            if d.sharp {
                prefix = alt;
            }
            digits
        }
        _ => return Err("an integer is required".to_owned()),
    };
    // For integers Go's precision is a minimum number of digits.
    let body = match d.precision {
        Some(p) if body.len() < p => format!("{}{body}", "0".repeat(p - body.len())),
        _ => body,
    };
    let sign = if negative {
        "-"
    } else if d.plus {
        "+"
    } else if d.space {
        " "
    } else {
        ""
    };
    let head = format!("{sign}{prefix}");
    let len = head.chars().count() + body.chars().count();
    if d.zero && !d.minus && d.width > len {
        return Ok(format!("{head}{}{body}", "0".repeat(d.width - len)));
    }
    Ok(pad(d, &head, &body))
}

/// Pads to the width in grapheme clusters, with zeros under the `0` flag (strings too, as
/// go-cty pads them).
pub(super) fn pad(d: &Directive, head: &str, body: &str) -> String {
    let len = grapheme_count(head) + grapheme_count(body);
    let fill = (if d.zero { "0" } else { " " }).repeat(d.width.saturating_sub(len));
    if d.minus {
        format!("{head}{body}{fill}")
    } else {
        format!("{fill}{head}{body}")
    }
}

/// A pattern compiled with the RE2 syntax Terraform uses (the `regex` crate is RE2-compatible
/// and runs in linear time, so no pattern can make a plan hang).
fn pattern(a: &Args<'_>, i: usize, source: &str) -> CallResult<regex::Regex> {
    regex::Regex::new(source).map_err(|e| a.error(i, format!("invalid regular expression: {e}")))
}

/// One match as Terraform's `regex` returns it: the matched text without capture groups, the
/// groups as a list when unnamed, as a map when named (an unmatched group is null).
fn match_value(a: &Args<'_>, re: &regex::Regex, captures: &regex::Captures<'_>) -> CallResult {
    let names: Vec<Option<&str>> = re.capture_names().skip(1).collect();
    if names.is_empty() {
        return ok_string(captures.get(0).map_or("", |m| m.as_str()));
    }
    let text = |i: usize| {
        captures
            .get(i)
            .map_or(Value::Null, |m| Value::string(m.as_str()))
    };
    let named = names.iter().filter(|n| n.is_some()).count();
    if named == 0 {
        return Ok(Value::List((1..=names.len()).map(text).collect()));
    }
    if named < names.len() {
        return Err(a.error(0, "named and unnamed capture groups cannot be mixed"));
    }
    Ok(Value::Object(
        names
            .iter()
            .enumerate()
            .filter_map(|(i, name)| Some(((*name)?.to_owned(), text(i + 1))))
            .collect(),
    ))
}

pub(super) fn regex(a: &Args<'_>) -> CallResult {
    let (source, s) = (a.string(0)?, a.string(1)?);
    let re = pattern(a, 0, &source)?;
    match re.captures(&s) {
        Some(captures) => match_value(a, &re, &captures),
        None => Err(CallError::call(
            "pattern did not match any part of the given string",
        )),
    }
}

pub(super) fn regexall(a: &Args<'_>) -> CallResult {
    let (source, s) = (a.string(0)?, a.string(1)?);
    let re = pattern(a, 0, &source)?;
    let mut out = Vec::new();
    for captures in re.captures_iter(&s) {
        if out.len() >= MAX_ELEMENTS {
            return Err(CallError::call("too many matches"));
        }
        out.push(match_value(a, &re, &captures)?);
    }
    Ok(Value::List(out))
}
