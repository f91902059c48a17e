//! String functions, `format` and `formatlist` with Terraform's verbs.

use super::*;

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

pub(super) fn substr(a: &Args<'_>) -> CallResult {
    let s = a.string(0)?;
    let (offset, length) = (a.int(1)?, a.int(2)?);
    let total = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
    let start = if offset < 0 {
        offset.saturating_add(total).max(0)
    } else {
        offset
    };
    let rest = s.chars().skip(usize::try_from(start).unwrap_or(usize::MAX));
    // A negative length means "to the end", as in Terraform.
    let out: String = match usize::try_from(length) {
        Ok(length) => rest.take(length).collect(),
        Err(_) => rest.collect(),
    };
    ok_string(out)
}

/// Go's strings.Title: upper-cases every letter that follows a separator.
pub(super) fn title(s: &str) -> String {
    let is_separator = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else {
            !c.is_alphanumeric() && c.is_whitespace()
        }
    };
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    for c in s.chars() {
        if is_separator(prev) {
            out.extend(c.to_uppercase());
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
    if v.is_null() {
        return Err("null value cannot be formatted".to_owned());
    }
    let text = match d.verb {
        'v' if d.sharp => json_text(v),
        'v' => match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => format_number(*n),
            Value::Bool(b) => b.to_string(),
            _ => json_text(v),
        },
        's' => {
            let s = as_string(v).ok_or("string required")?;
            match d.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s,
            }
        }
        'q' => Value::String(as_string(v).ok_or("string required")?).to_string(),
        't' => as_bool(v).ok_or("bool required")?.to_string(),
        _ => return format_numeric(d, as_number(v).ok_or("number required")?),
    };
    Ok(pad(d, "", &text))
}

pub(super) fn format_numeric(d: &Directive, n: f64) -> Result<String, String> {
    let negative = n < 0.0;
    let x = n.abs();
    let integer_verb = matches!(d.verb, 'd' | 'b' | 'o' | 'x' | 'X');
    if integer_verb && !(x.is_finite() && x.fract() == 0.0) {
        return Err("an integer is required".to_owned());
    }
    let mut prefix = "";
    let body = match d.verb {
        _ if x.is_nan() => "NaN".to_owned(),
        _ if x.is_infinite() => "Inf".to_owned(),
        // `{:.0}` prints every digit of a whole f64, however large.
        'd' => format!("{x:.0}"),
        'b' | 'o' | 'x' | 'X' => {
            if x >= 2f64.powi(128) {
                return Err("integer is too large for this verb".to_owned());
            }
            let u = x as u128;
            let (digits, alt) = match d.verb {
                'b' => (format!("{u:b}"), "0b"),
                'o' => (format!("{u:o}"), "0"),
                'x' => (format!("{u:x}"), "0x"),
                _ => (format!("{u:X}"), "0X"),
            };
            if d.sharp {
                prefix = alt;
            }
            digits
        }
        'e' | 'E' => scientific(
            &format!("{:.*e}", d.precision.unwrap_or(6), x),
            d.verb == 'E',
        ),
        'f' | 'F' => format!("{:.*}", d.precision.unwrap_or(6), x),
        _ => general(x, d.precision, d.verb == 'G'),
    };
    // For integers Go's precision is a minimum number of digits.
    let body = match d.precision {
        Some(p) if integer_verb && body.len() < p => {
            format!("{}{body}", "0".repeat(p - body.len()))
        }
        _ => body,
    };
    let sign = if negative {
        "-"
    } else if d.plus || x.is_infinite() {
        "+"
    } else if d.space {
        " "
    } else {
        ""
    };
    let head = format!("{sign}{prefix}");
    let len = head.chars().count() + body.chars().count();
    if d.zero && !d.minus && x.is_finite() && d.width > len {
        return Ok(format!("{head}{}{body}", "0".repeat(d.width - len)));
    }
    Ok(pad(d, &head, &body))
}

/// Rewrites Rust's `1.5e3` exponent as Go's `1.5e+03`.
pub(super) fn scientific(rust: &str, upper: bool) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{e}{sign}{:02}", exp.unsigned_abs())
}

/// Go's `%g`: the shortest representation (or `precision` significant digits), in exponent form
/// when the exponent is below -4 or at least the precision.
pub(super) fn general(x: f64, precision: Option<usize>, upper: bool) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    let rust = match precision {
        Some(p) => format!("{:.*e}", p.max(1) - 1, x),
        None => format!("{x:e}"),
    };
    let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = match digits.trim_end_matches('0') {
        "" => "0",
        trimmed => trimmed,
    };
    let eprec = precision.map_or(6, |p| p.max(1));
    if exp < -4 || exp >= i64::try_from(eprec).unwrap_or(i64::MAX) {
        let mut chars = digits.chars();
        let first: String = chars.next().into_iter().collect();
        let rest: String = chars.collect();
        let mantissa = if rest.is_empty() {
            first
        } else {
            format!("{first}.{rest}")
        };
        return scientific(&format!("{mantissa}e{exp}"), upper);
    }
    match usize::try_from(exp) {
        Ok(e) => {
            let int: String = digits.chars().take(e + 1).collect();
            let zeros = (e + 1).saturating_sub(digits.len());
            let frac: String = digits.chars().skip(e + 1).collect();
            let int = format!("{int}{}", "0".repeat(zeros));
            if frac.is_empty() {
                int
            } else {
                format!("{int}.{frac}")
            }
        }
        Err(_) => {
            let leading = usize::try_from(-exp - 1).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(leading))
        }
    }
}

pub(super) fn pad(d: &Directive, head: &str, body: &str) -> String {
    let len = head.chars().count() + body.chars().count();
    let fill = " ".repeat(d.width.saturating_sub(len));
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
