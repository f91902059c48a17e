//! The pure built-in functions of the stack language, with Terraform's names, argument order and
//! error conditions.
//!
//! `try`, `can`, `file`, `templatefile` and `fileexists` are not here: they need lazy arguments or
//! the filesystem, so the evaluator implements them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use gpustack_protocol::{Type, Value, format_number};
use indexmap::IndexMap;
use sha2::{Digest, Sha256, Sha512};
use std::collections::HashSet;
use std::fmt;

/// Why a call failed; `arg` is the 0-based index of the argument at fault (None: the call as a
/// whole, e.g. wrong arity).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    pub arg: Option<usize>,
    pub message: String,
}

impl CallError {
    fn call(message: impl Into<String>) -> Self {
        Self {
            arg: None,
            message: message.into(),
        }
    }
}

type CallResult<T = Value> = Result<T, CallError>;

/// Longest list a function builds (`range`, `setproduct`): beyond it a typo would exhaust memory.
const MAX_ELEMENTS: usize = 1_000_000;
/// Widest padding `indent` and `format` produce, for the same reason.
const MAX_PADDING: usize = 10_000;
/// Longest string `indent` builds.
const MAX_STRING_BYTES: usize = 64 << 20;
/// The largest integer an f64 holds exactly.
const MAX_SAFE_INT: f64 = 9_007_199_254_740_992.0;

static NAMES: &[&str] = &[
    "abs",
    "alltrue",
    "anytrue",
    "base64decode",
    "base64encode",
    "base64sha256",
    "base64sha512",
    "ceil",
    "chomp",
    "chunklist",
    "coalesce",
    "coalescelist",
    "compact",
    "concat",
    "contains",
    "distinct",
    "element",
    "endswith",
    "flatten",
    "floor",
    "format",
    "formatlist",
    "indent",
    "index",
    "join",
    "jsondecode",
    "jsonencode",
    "keys",
    "length",
    "log",
    "lookup",
    "lower",
    "matchkeys",
    "max",
    "merge",
    "min",
    "one",
    "parseint",
    "pow",
    "range",
    "replace",
    "reverse",
    "setintersection",
    "setproduct",
    "setsubtract",
    "setunion",
    "sha256",
    "sha512",
    "signum",
    "slice",
    "sort",
    "split",
    "startswith",
    "strcontains",
    "strrev",
    "substr",
    "sum",
    "title",
    "tobool",
    "tolist",
    "tomap",
    "tonumber",
    "toset",
    "tostring",
    "transpose",
    "trim",
    "trimprefix",
    "trimspace",
    "trimsuffix",
    "upper",
    "urlencode",
    "values",
    "yamldecode",
    "yamlencode",
    "zipmap",
];

/// Names of every function, sorted (used for "did you mean" suggestions and docs).
pub fn names() -> &'static [&'static str] {
    NAMES
}

/// Calls a pure function. Returns None when no function has that name.
pub fn call(name: &str, args: &[Value]) -> Option<Result<Value, CallError>> {
    lookup_func(name).map(|func| func.call(name, args))
}

// ---------------------------------------------------------------------------------------------
// Signatures and dispatch

type Body = fn(&Args<'_>) -> CallResult;

struct Func {
    /// Parameter names for error messages; a variadic function's last name covers the rest.
    params: &'static [&'static str],
    min: usize,
    /// None: variadic.
    max: Option<usize>,
    /// The body handles unknown arguments itself instead of the call short-circuiting.
    sees_unknowns: bool,
    body: Body,
}

impl Func {
    fn fixed(params: &'static [&'static str], body: Body) -> Self {
        Self {
            params,
            min: params.len(),
            max: Some(params.len()),
            sees_unknowns: false,
            body,
        }
    }

    fn ranged(params: &'static [&'static str], min: usize, max: usize, body: Body) -> Self {
        Self {
            params,
            min,
            max: Some(max),
            sees_unknowns: false,
            body,
        }
    }

    fn variadic(params: &'static [&'static str], min: usize, body: Body) -> Self {
        Self {
            params,
            min,
            max: None,
            sees_unknowns: false,
            body,
        }
    }

    fn seeing_unknowns(self) -> Self {
        Self {
            sees_unknowns: true,
            ..self
        }
    }

    fn call(&self, name: &str, args: &[Value]) -> CallResult {
        let n = args.len();
        if n < self.min || self.max.is_some_and(|max| n > max) {
            return Err(CallError::call(format!(
                "Function \"{name}\" expects {}, got {n}.",
                self.arity()
            )));
        }
        if !self.sees_unknowns && !args.iter().all(Value::is_wholly_known) {
            return Ok(Value::Unknown);
        }
        (self.body)(&Args {
            params: self.params,
            values: args,
        })
    }

    fn arity(&self) -> String {
        let (count, last) = match self.max {
            None => (format!("at least {}", self.min), self.min),
            Some(max) if max == self.min => (max.to_string(), max),
            Some(max) if max == self.min + 1 => (format!("{} or {max}", self.min), max),
            Some(max) => (format!("{} to {max}", self.min), max),
        };
        format!("{count} argument{}", if last == 1 { "" } else { "s" })
    }
}

fn lookup_func(name: &str) -> Option<Func> {
    let func = match name {
        // Numbers.
        "abs" => Func::fixed(&["num"], |a| ok_number(a.number(0)?.abs())),
        "ceil" => Func::fixed(&["num"], |a| ok_number(a.number(0)?.ceil())),
        "floor" => Func::fixed(&["num"], |a| ok_number(a.number(0)?.floor())),
        "log" => Func::fixed(&["num", "base"], |a| {
            ok_number(a.number(0)?.log(a.number(1)?))
        }),
        "max" => Func::variadic(&["numbers"], 1, |a| extremum(a, f64::max)),
        "min" => Func::variadic(&["numbers"], 1, |a| extremum(a, f64::min)),
        "parseint" => Func::fixed(&["number", "base"], parseint),
        "pow" => Func::fixed(&["num", "power"], |a| {
            ok_number(a.number(0)?.powf(a.number(1)?))
        }),
        "signum" => Func::fixed(&["num"], signum),
        "sum" => Func::fixed(&["list"], sum),

        // Strings.
        "chomp" => Func::fixed(&["str"], |a| {
            ok_string(a.string(0)?.trim_end_matches(['\r', '\n']))
        }),
        "endswith" => Func::fixed(&["str", "suffix"], |a| {
            Ok(Value::Bool(a.string(0)?.ends_with(&a.string(1)?)))
        }),
        "format" => Func::variadic(&["format", "args"], 1, format),
        "formatlist" => Func::variadic(&["format", "args"], 1, formatlist),
        "indent" => Func::fixed(&["spaces", "str"], indent),
        "join" => Func::fixed(&["separator", "list"], |a| {
            let separator = a.string(0)?;
            ok_string(a.strings(1)?.join(&separator))
        }),
        "lower" => Func::fixed(&["str"], |a| ok_string(a.string(0)?.to_lowercase())),
        "replace" => Func::fixed(&["str", "substr", "replace"], replace),
        "split" => Func::fixed(&["separator", "str"], split),
        "startswith" => Func::fixed(&["str", "prefix"], |a| {
            Ok(Value::Bool(a.string(0)?.starts_with(&a.string(1)?)))
        }),
        "strcontains" => Func::fixed(&["str", "substr"], |a| {
            Ok(Value::Bool(a.string(0)?.contains(&a.string(1)?)))
        }),
        "strrev" => Func::fixed(&["str"], |a| {
            ok_string(a.string(0)?.chars().rev().collect::<String>())
        }),
        "substr" => Func::fixed(&["str", "offset", "length"], substr),
        "title" => Func::fixed(&["str"], |a| ok_string(title(&a.string(0)?))),
        "trim" => Func::fixed(&["str", "cutset"], |a| {
            let cutset = a.string(1)?;
            ok_string(a.string(0)?.trim_matches(|c| cutset.contains(c)))
        }),
        "trimprefix" => Func::fixed(&["str", "prefix"], |a| {
            let (s, prefix) = (a.string(0)?, a.string(1)?);
            ok_string(s.strip_prefix(prefix.as_str()).unwrap_or(&s))
        }),
        "trimspace" => Func::fixed(&["str"], |a| ok_string(a.string(0)?.trim())),
        "trimsuffix" => Func::fixed(&["str", "suffix"], |a| {
            let (s, suffix) = (a.string(0)?, a.string(1)?);
            ok_string(s.strip_suffix(suffix.as_str()).unwrap_or(&s))
        }),
        "upper" => Func::fixed(&["str"], |a| ok_string(a.string(0)?.to_uppercase())),

        // Collections.
        "alltrue" => Func::fixed(&["list"], |a| {
            // Terraform counts a null element as false.
            let items = a.optional_elements(0, "bool", as_bool)?;
            Ok(Value::Bool(items.iter().all(|b| *b == Some(true))))
        }),
        "anytrue" => Func::fixed(&["list"], |a| {
            let items = a.optional_elements(0, "bool", as_bool)?;
            Ok(Value::Bool(items.contains(&Some(true))))
        }),
        "chunklist" => Func::fixed(&["list", "size"], chunklist),
        "coalesce" => Func::variadic(&["vals"], 0, coalesce).seeing_unknowns(),
        "coalescelist" => Func::variadic(&["vals"], 1, coalescelist),
        "compact" => Func::fixed(&["list"], |a| {
            let items = a.optional_elements(0, "string", as_string)?;
            Ok(Value::List(
                items
                    .into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .map(Value::String)
                    .collect(),
            ))
        }),
        "concat" => Func::variadic(&["seqs"], 1, |a| {
            let mut out = Vec::new();
            for i in 0..a.len() {
                out.extend_from_slice(a.list(i)?);
            }
            Ok(Value::List(out))
        }),
        "contains" => Func::fixed(&["list", "value"], |a| {
            let (items, value) = (a.list(0)?, a.value(1)?);
            Ok(Value::Bool(
                items.iter().any(|item| loosely_equal(item, value)),
            ))
        }),
        "distinct" => Func::fixed(&["list"], |a| Ok(Value::List(distinct(a.list(0)?)))),
        "element" => Func::fixed(&["list", "index"], element),
        "flatten" => Func::fixed(&["list"], |a| {
            let mut out = Vec::new();
            flatten_into(a.list(0)?, &mut out);
            Ok(Value::List(out))
        }),
        "index" => Func::fixed(&["list", "value"], |a| {
            let (items, value) = (a.list(0)?, a.value(1)?);
            match items.iter().position(|item| loosely_equal(item, value)) {
                Some(i) => ok_count(i),
                None => Err(CallError::call("item not found")),
            }
        }),
        "keys" => Func::fixed(&["inputMap"], |a| {
            Ok(Value::List(
                sorted_entries(a.object(0)?)
                    .into_iter()
                    .map(|(k, _)| Value::string(k.clone()))
                    .collect(),
            ))
        }),
        "length" => Func::fixed(&["value"], length).seeing_unknowns(),
        "lookup" => Func::ranged(&["inputMap", "key", "default"], 2, 3, lookup),
        "matchkeys" => Func::fixed(&["values", "keys", "searchset"], matchkeys),
        "merge" => Func::variadic(&["maps"], 0, merge),
        "one" => Func::fixed(&["list"], |a| match a.list(0)? {
            [] => Ok(Value::Null),
            [only] => Ok(only.clone()),
            _ => Err(a.error(
                0,
                "must be a list, set, or tuple value with either zero or one elements",
            )),
        }),
        "range" => Func::ranged(&["params"], 1, 3, range),
        "reverse" => Func::fixed(&["list"], |a| {
            Ok(Value::List(a.list(0)?.iter().rev().cloned().collect()))
        }),
        "setintersection" => Func::variadic(&["first_set", "other_sets"], 1, |a| {
            let others = (1..a.len())
                .map(|i| a.list(i).map(canonical_set))
                .collect::<CallResult<Vec<_>>>()?;
            let first = distinct(a.list(0)?);
            Ok(Value::List(
                first
                    .into_iter()
                    .filter(|v| others.iter().all(|set| set.contains(&canonical(v))))
                    .collect(),
            ))
        }),
        "setproduct" => Func::variadic(&["sets"], 2, setproduct),
        "setsubtract" => Func::fixed(&["a", "b"], |a| {
            let remove = canonical_set(a.list(1)?);
            let first = distinct(a.list(0)?);
            Ok(Value::List(
                first
                    .into_iter()
                    .filter(|v| !remove.contains(&canonical(v)))
                    .collect(),
            ))
        }),
        "setunion" => Func::variadic(&["first_set", "other_sets"], 1, |a| {
            let mut all = Vec::new();
            for i in 0..a.len() {
                all.extend_from_slice(a.list(i)?);
            }
            Ok(Value::List(distinct(&all)))
        }),
        "slice" => Func::fixed(&["list", "start_index", "end_index"], slice),
        "sort" => Func::fixed(&["list"], |a| {
            let mut items = a.strings(0)?;
            items.sort();
            Ok(Value::List(items.into_iter().map(Value::String).collect()))
        }),
        "transpose" => Func::fixed(&["values"], transpose),
        "values" => Func::fixed(&["mapping"], |a| {
            Ok(Value::List(
                sorted_entries(a.object(0)?)
                    .into_iter()
                    .map(|(_, v)| v.clone())
                    .collect(),
            ))
        }),
        "zipmap" => Func::fixed(&["keys", "values"], zipmap),

        // Type conversions: null converts to null.
        "tobool" => Func::fixed(&["v"], tobool),
        "tolist" => Func::fixed(&["v"], |a| to_sequence(a, false)),
        "tomap" => Func::fixed(&["v"], tomap),
        "tonumber" => Func::fixed(&["v"], tonumber),
        "toset" => Func::fixed(&["v"], |a| to_sequence(a, true)),
        "tostring" => Func::fixed(&["v"], tostring),

        // Encodings and hashes.
        "base64decode" => Func::fixed(&["str"], base64decode),
        "base64encode" => Func::fixed(&["str"], |a| ok_string(BASE64.encode(a.string(0)?))),
        "base64sha256" => Func::fixed(&["str"], |a| {
            ok_string(BASE64.encode(Sha256::digest(a.string(0)?)))
        }),
        "base64sha512" => Func::fixed(&["str"], |a| {
            ok_string(BASE64.encode(Sha512::digest(a.string(0)?)))
        }),
        "jsondecode" => Func::fixed(&["str"], jsondecode),
        "jsonencode" => Func::fixed(&["val"], |a| ok_string(json_text(a.get(0)))),
        "sha256" => Func::fixed(&["str"], |a| ok_string(hex(&Sha256::digest(a.string(0)?)))),
        "sha512" => Func::fixed(&["str"], |a| ok_string(hex(&Sha512::digest(a.string(0)?)))),
        "urlencode" => Func::fixed(&["str"], |a| ok_string(urlencode(&a.string(0)?))),
        "yamldecode" => Func::fixed(&["src"], yamldecode),
        "yamlencode" => Func::fixed(&["value"], yamlencode),

        _ => return None,
    };
    Some(func)
}

// ---------------------------------------------------------------------------------------------
// Argument extraction

static NULL: Value = Value::Null;

/// The arguments of one call, with the parameter names its errors cite.
struct Args<'a> {
    params: &'static [&'static str],
    values: &'a [Value],
}

impl<'a> Args<'a> {
    fn len(&self) -> usize {
        self.values.len()
    }

    fn get(&self, i: usize) -> &'a Value {
        self.values.get(i).unwrap_or(&NULL)
    }

    fn error(&self, i: usize, detail: impl fmt::Display) -> CallError {
        let param = self
            .params
            .get(i)
            .or(self.params.last())
            .copied()
            .unwrap_or("value");
        CallError {
            arg: Some(i),
            message: format!("Invalid value for \"{param}\" parameter: {detail}."),
        }
    }

    fn value(&self, i: usize) -> CallResult<&'a Value> {
        let v = self.get(i);
        if v.is_null() {
            Err(self.error(i, "argument must not be null"))
        } else {
            Ok(v)
        }
    }

    fn string(&self, i: usize) -> CallResult<String> {
        as_string(self.value(i)?).ok_or_else(|| self.error(i, "string required"))
    }

    fn number(&self, i: usize) -> CallResult<f64> {
        as_number(self.value(i)?).ok_or_else(|| self.error(i, "number required"))
    }

    /// A whole number that fits an f64 exactly.
    fn int(&self, i: usize) -> CallResult<i64> {
        let n = self.number(i)?;
        if !n.is_finite() || n.fract() != 0.0 {
            Err(self.error(i, "a whole number is required"))
        } else if n.abs() > MAX_SAFE_INT {
            Err(self.error(i, "number is too large"))
        } else {
            Ok(n as i64)
        }
    }

    fn count(&self, i: usize) -> CallResult<usize> {
        let n = self.int(i)?;
        usize::try_from(n).map_err(|_| self.error(i, "must not be negative"))
    }

    fn list(&self, i: usize) -> CallResult<&'a [Value]> {
        match self.value(i)? {
            Value::List(items) => Ok(items),
            _ => Err(self.error(i, "list required")),
        }
    }

    fn object(&self, i: usize) -> CallResult<&'a IndexMap<String, Value>> {
        match self.value(i)? {
            Value::Object(map) => Ok(map),
            _ => Err(self.error(i, "map or object required")),
        }
    }

    /// The elements of a list converted to `ty`; null elements come back as None.
    fn optional_elements<T>(
        &self,
        i: usize,
        ty: &str,
        convert: fn(&Value) -> Option<T>,
    ) -> CallResult<Vec<Option<T>>> {
        let Value::List(items) = self.value(i)? else {
            return Err(self.error(i, format!("list of {ty} required")));
        };
        items
            .iter()
            .map(|item| match item {
                Value::Null => Ok(None),
                v => convert(v)
                    .map(Some)
                    .ok_or_else(|| self.error(i, format!("list of {ty} required"))),
            })
            .collect()
    }

    fn elements<T>(
        &self,
        i: usize,
        ty: &str,
        convert: fn(&Value) -> Option<T>,
    ) -> CallResult<Vec<T>> {
        self.optional_elements(i, ty, convert)?
            .into_iter()
            .enumerate()
            .map(|(j, item)| item.ok_or_else(|| self.error(i, format!("element {j} is null"))))
            .collect()
    }

    fn strings(&self, i: usize) -> CallResult<Vec<String>> {
        self.elements(i, "string", as_string)
    }
}

fn as_string(v: &Value) -> Option<String> {
    match Type::String.convert(v) {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match Type::Number.convert(v) {
        Ok(Value::Number(n)) => Some(n),
        _ => None,
    }
}

fn as_bool(v: &Value) -> Option<bool> {
    match Type::Bool.convert(v) {
        Ok(Value::Bool(b)) => Some(b),
        _ => None,
    }
}

fn ok_string(s: impl Into<String>) -> CallResult {
    Ok(Value::String(s.into()))
}

/// Terraform's numbers cannot be NaN: an operation that yields one fails instead.
fn ok_number(n: f64) -> CallResult {
    if n.is_nan() {
        Err(CallError::call("the result is not a number"))
    } else {
        Ok(Value::Number(n))
    }
}

fn ok_count(n: usize) -> CallResult {
    Ok(Value::Number(n as f64))
}

// ---------------------------------------------------------------------------------------------
// Numbers

fn extremum(a: &Args<'_>, pick: fn(f64, f64) -> f64) -> CallResult {
    let mut best = a.number(0)?;
    for i in 1..a.len() {
        best = pick(best, a.number(i)?);
    }
    ok_number(best)
}

fn signum(a: &Args<'_>) -> CallResult {
    let n = a.number(0)?;
    // f64::signum gives 1 for +0.
    ok_number(if n == 0.0 { 0.0 } else { n.signum() })
}

fn sum(a: &Args<'_>) -> CallResult {
    let items = a.elements(0, "number", as_number)?;
    if items.is_empty() {
        return Err(a.error(0, "cannot sum an empty list"));
    }
    ok_number(items.iter().sum())
}

fn parseint(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let base = a.int(1)?;
    let Some(base) = u32::try_from(base).ok().filter(|b| (2..=62).contains(b)) else {
        return Err(a.error(1, "base must be a whole number between 2 and 62 inclusive"));
    };
    let cannot = || {
        a.error(
            0,
            format!(
                "cannot parse {} as a base {base} integer",
                Value::string(text.as_str())
            ),
        )
    };
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    if digits.is_empty() {
        return Err(cannot());
    }
    let mut value: u128 = 0;
    for c in digits.chars() {
        // Up to base 36 letters are case-insensitive; above it, A-Z are the digits 36..61.
        let digit = match c {
            '0'..='9' => u32::from(c) - u32::from('0'),
            'a'..='z' => u32::from(c) - u32::from('a') + 10,
            'A'..='Z' if base <= 36 => u32::from(c) - u32::from('A') + 10,
            'A'..='Z' => u32::from(c) - u32::from('A') + 36,
            _ => return Err(cannot()),
        };
        if digit >= base {
            return Err(cannot());
        }
        value = value
            .checked_mul(u128::from(base))
            .and_then(|v| v.checked_add(u128::from(digit)))
            .ok_or_else(|| a.error(0, "number is too large"))?;
    }
    let n = value as f64;
    ok_number(if negative { -n } else { n })
}

fn range(a: &Args<'_>) -> CallResult {
    let mut nums = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        let n = a.number(i)?;
        if !n.is_finite() {
            return Err(a.error(i, "must be a finite number"));
        }
        nums.push(n);
    }
    let (start, limit, step) = match nums[..] {
        [limit] => (0.0, limit, 1.0),
        [start, limit] => (start, limit, if start <= limit { 1.0 } else { -1.0 }),
        [start, limit, step] => (start, limit, step),
        _ => return Err(CallError::call("range expects 1 to 3 arguments")),
    };
    if step == 0.0 {
        return Err(a.error(2, "step must not be zero"));
    }
    let too_many = || {
        CallError::call(format!(
            "more than {MAX_ELEMENTS} values would be generated; decrease the difference between start and limit or use a larger step"
        ))
    };
    if ((limit - start) / step).ceil() > MAX_ELEMENTS as f64 {
        return Err(too_many());
    }
    let mut out = Vec::new();
    let mut v = start;
    while (step > 0.0 && v < limit) || (step < 0.0 && v > limit) {
        if out.len() >= MAX_ELEMENTS {
            return Err(too_many());
        }
        out.push(Value::Number(v));
        let next = v + step;
        if next == v {
            return Err(a.error(
                nums.len() - 1,
                "step is too small for the magnitude of the range",
            ));
        }
        v = next;
    }
    Ok(Value::List(out))
}

// ---------------------------------------------------------------------------------------------
// Strings

fn indent(a: &Args<'_>) -> CallResult {
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

fn replace(a: &Args<'_>) -> CallResult {
    let (s, substr, replacement) = (a.string(0)?, a.string(1)?, a.string(2)?);
    if substr.len() >= 2 && substr.starts_with('/') && substr.ends_with('/') {
        return Err(a.error(
            1,
            "regular expression patterns (\"/.../\") are not supported; use a plain substring",
        ));
    }
    ok_string(s.replace(&substr, &replacement))
}

fn split(a: &Args<'_>) -> CallResult {
    let (separator, s) = (a.string(0)?, a.string(1)?);
    // Like Go's strings.Split, an empty separator splits after each character.
    let parts: Vec<Value> = if separator.is_empty() {
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(&separator).map(Value::string).collect()
    };
    Ok(Value::List(parts))
}

fn substr(a: &Args<'_>) -> CallResult {
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
fn title(s: &str) -> String {
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
fn urlencode(s: &str) -> String {
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// format and formatlist

fn format(a: &Args<'_>) -> CallResult {
    let spec = a.string(0)?;
    let values = a.values.get(1..).unwrap_or_default();
    sprintf(&spec, values)
        .map(Value::String)
        .map_err(|e| e.into_call_error(a))
}

fn formatlist(a: &Args<'_>) -> CallResult {
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
struct FormatError {
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
struct Directive {
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

const VERBS: &str = "vstqdboxXeEfFgG";

/// Formats like Terraform's `format`, whose verbs follow Go's fmt.
fn sprintf(spec: &str, values: &[Value]) -> Result<String, FormatError> {
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

fn parse_directive(
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
fn parse_digits(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> Option<usize> {
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

fn format_value(d: &Directive, v: &Value) -> Result<String, String> {
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

fn format_numeric(d: &Directive, n: f64) -> Result<String, String> {
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
fn scientific(rust: &str, upper: bool) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{e}{sign}{:02}", exp.unsigned_abs())
}

/// Go's `%g`: the shortest representation (or `precision` significant digits), in exponent form
/// when the exponent is below -4 or at least the precision.
fn general(x: f64, precision: Option<usize>, upper: bool) -> String {
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

fn pad(d: &Directive, head: &str, body: &str) -> String {
    let len = head.chars().count() + body.chars().count();
    let fill = " ".repeat(d.width.saturating_sub(len));
    if d.minus {
        format!("{head}{body}{fill}")
    } else {
        format!("{fill}{head}{body}")
    }
}

// ---------------------------------------------------------------------------------------------
// Collections

fn length(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Unknown => Ok(Value::Unknown),
        Value::Null => Err(a.error(0, "argument must not be null")),
        Value::String(s) => ok_count(s.chars().count()),
        Value::List(items) => ok_count(items.len()),
        Value::Object(map) => ok_count(map.len()),
        _ => Err(a.error(
            0,
            "argument must be a string, a collection type, or a structural type",
        )),
    }
}

fn coalesce(a: &Args<'_>) -> CallResult {
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

fn coalescelist(a: &Args<'_>) -> CallResult {
    for i in 0..a.len() {
        let items = a.list(i)?;
        if !items.is_empty() {
            return Ok(Value::List(items.to_vec()));
        }
    }
    Err(CallError::call("no non-null arguments"))
}

fn chunklist(a: &Args<'_>) -> CallResult {
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

fn element(a: &Args<'_>) -> CallResult {
    let items = a.list(0)?;
    let index = a.int(1)?;
    if items.is_empty() {
        return Err(a.error(0, "cannot use element function with an empty list"));
    }
    let Ok(index) = usize::try_from(index) else {
        return Err(a.error(1, "cannot use element function with a negative index"));
    };
    items
        .get(index % items.len())
        .cloned()
        .ok_or_else(|| a.error(1, "index out of range"))
}

fn flatten_into(items: &[Value], out: &mut Vec<Value>) {
    for item in items {
        match item {
            Value::List(inner) => flatten_into(inner, out),
            other => out.push(other.clone()),
        }
    }
}

fn lookup(a: &Args<'_>) -> CallResult {
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

fn matchkeys(a: &Args<'_>) -> CallResult {
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

fn merge(a: &Args<'_>) -> CallResult {
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

fn setproduct(a: &Args<'_>) -> CallResult {
    let sets = (0..a.len())
        .map(|i| a.list(i).map(distinct))
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

fn slice(a: &Args<'_>) -> CallResult {
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

fn transpose(a: &Args<'_>) -> CallResult {
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

fn zipmap(a: &Args<'_>) -> CallResult {
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
fn sorted_entries(map: &IndexMap<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|x, y| x.0.cmp(y.0));
    entries
}

/// Equality as after HCL's conversion to a common type: `"1"` matches `1`, `"true"` matches `true`.
fn loosely_equal(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::String(_), Value::Number(_) | Value::Bool(_))
        | (Value::Number(_) | Value::Bool(_), Value::String(_)) => as_string(x) == as_string(y),
        _ => x == y,
    }
}

/// The elements without repeats, in first-occurrence order.
fn distinct(items: &[Value]) -> Vec<Value> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter(|v| seen.insert(canonical(v)))
        .cloned()
        .collect()
}

fn canonical_set(items: &[Value]) -> HashSet<String> {
    items.iter().map(canonical).collect()
}

/// A string equal for equal values (objects compare regardless of key order, as `Value`'s `==`
/// does), so sets can be hashed.
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Sensitive(m) => write(&m.value, out),
            Value::Null => out.push('N'),
            Value::Unknown => out.push('U'),
            Value::Bool(b) => out.push(if *b { 'T' } else { 'F' }),
            Value::Number(n) => {
                out.push('n');
                out.push_str(&format_number(*n));
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

// ---------------------------------------------------------------------------------------------
// Type conversions

fn tostring(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v => as_string(v)
            .map(Value::String)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to string", v.type_name()))),
    }
}

fn tonumber(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v @ Value::String(_) => as_number(v).map(Value::Number).ok_or_else(|| {
            a.error(
                0,
                format!("cannot convert {v} to number; given string must be a decimal representation of a number"),
            )
        }),
        v => as_number(v)
            .map(Value::Number)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to number", v.type_name()))),
    }
}

fn tobool(a: &Args<'_>) -> CallResult {
    match a.get(0) {
        Value::Null => Ok(Value::Null),
        v @ Value::String(_) => as_bool(v).map(Value::Bool).ok_or_else(|| {
            a.error(
                0,
                format!(
                    "cannot convert {v} to bool; only the strings \"true\" or \"false\" are allowed"
                ),
            )
        }),
        v => as_bool(v)
            .map(Value::Bool)
            .ok_or_else(|| a.error(0, format!("cannot convert {} to bool", v.type_name()))),
    }
}

fn to_sequence(a: &Args<'_>, set: bool) -> CallResult {
    let kind = if set { "set" } else { "list" };
    let items = match a.get(0) {
        Value::Null => return Ok(Value::Null),
        Value::List(items) => items,
        v => {
            return Err(a.error(
                0,
                format!(
                    "cannot convert {} to {kind} of any single type",
                    v.type_name()
                ),
            ));
        }
    };
    let items = unify(items).ok_or_else(|| {
        a.error(
            0,
            format!("cannot convert list to {kind} of any single type"),
        )
    })?;
    Ok(Value::List(if set { distinct(&items) } else { items }))
}

fn tomap(a: &Args<'_>) -> CallResult {
    let map = match a.get(0) {
        Value::Null => return Ok(Value::Null),
        Value::Object(map) => map,
        v => {
            return Err(a.error(
                0,
                format!("cannot convert {} to map of any single type", v.type_name()),
            ));
        }
    };
    let values: Vec<Value> = map.values().cloned().collect();
    let values = unify(&values)
        .ok_or_else(|| a.error(0, "cannot convert object to map of any single type"))?;
    Ok(Value::Object(map.keys().cloned().zip(values).collect()))
}

/// Converts elements to one type the way HCL unifies a tuple into a list: a mix of primitives
/// becomes strings when any is a string. None when no single type fits.
fn unify(items: &[Value]) -> Option<Vec<Value>> {
    let kinds: HashSet<&str> = items
        .iter()
        .filter(|v| !v.is_null())
        .map(Value::type_name)
        .collect();
    if kinds.len() <= 1 {
        return Some(items.to_vec());
    }
    let primitive = kinds
        .iter()
        .all(|k| matches!(*k, "string" | "number" | "bool"));
    if !(primitive && kinds.contains("string")) {
        return None;
    }
    items
        .iter()
        .map(|v| {
            if v.is_null() {
                Some(Value::Null)
            } else {
                as_string(v).map(Value::String)
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Encodings

/// Compact JSON as Terraform's jsonencode writes it, escaping `<`, `>`, `&`, U+2028 and U+2029.
fn json_text(v: &Value) -> String {
    let raw = v.to_json().to_string();
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            // These only occur inside JSON strings, where an escape means the same character.
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn jsondecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| a.error(0, e))?;
    Ok(Value::from_json(&json))
}

fn base64decode(a: &Args<'_>) -> CallResult {
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

fn yamldecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let mut yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| a.error(0, e))?;
    yaml.apply_merge().map_err(|e| a.error(0, e))?;
    from_yaml(yaml).map_err(|e| a.error(0, e))
}

fn from_yaml(yaml: serde_yaml_ng::Value) -> Result<Value, String> {
    use serde_yaml_ng::Value as Y;
    Ok(match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => Value::Number(f),
            _ => return Err(format!("the number {n} cannot be represented")),
        },
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            Value::List(items.into_iter().map(from_yaml).collect::<Result<_, _>>()?)
        }
        Y::Mapping(mapping) => {
            let mut map = IndexMap::with_capacity(mapping.len());
            for (k, v) in mapping {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".to_owned(),
                    _ => return Err("mapping keys must be strings, numbers or bools".to_owned()),
                };
                map.insert(key, from_yaml(v)?);
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => from_yaml(tagged.value)?,
    })
}

fn yamlencode(a: &Args<'_>) -> CallResult {
    let mut out = String::new();
    yaml_block(a.get(0), 0, &mut out);
    Ok(Value::String(out))
}

/// Writes `v` as YAML in block style, its lines starting at `indent`. serde_yaml_ng's emitter
/// is not used because it leaves YAML 1.1 booleans such as `on` and `yes` unquoted, which
/// Kubernetes' YAML 1.1 parsers then read as bools.
fn yaml_block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                out.push_str(&" ".repeat(indent));
                out.push_str(&yaml_string(key, indent, false));
                out.push(':');
                match value {
                    Value::Object(inner) if !inner.is_empty() => {
                        out.push('\n');
                        yaml_block(value, indent + 2, out);
                    }
                    // Sequences in a mapping are not indented, as go-yaml writes them.
                    Value::List(items) if !items.is_empty() => {
                        out.push('\n');
                        yaml_block(value, indent, out);
                    }
                    scalar => yaml_inline_line(scalar, indent, out),
                }
            }
        }
        Value::List(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&" ".repeat(indent));
                out.push('-');
                match item {
                    Value::Object(inner) if !inner.is_empty() => {
                        yaml_nested_item(item, indent, out)
                    }
                    Value::List(inner) if !inner.is_empty() => yaml_nested_item(item, indent, out),
                    scalar => yaml_inline_line(scalar, indent, out),
                }
            }
        }
        scalar => {
            out.push_str(&" ".repeat(indent));
            out.push_str(&yaml_inline(scalar, indent));
            out.push('\n');
        }
    }
}

/// A collection inside a sequence starts on the dash's line: `- a: 1` or `- - x`.
fn yaml_nested_item(item: &Value, indent: usize, out: &mut String) {
    let mut nested = String::new();
    yaml_block(item, indent + 2, &mut nested);
    out.push(' ');
    out.push_str(nested.get(indent + 2..).unwrap_or(&nested));
}

fn yaml_inline_line(v: &Value, indent: usize, out: &mut String) {
    out.push(' ');
    out.push_str(&yaml_inline(v, indent));
    out.push('\n');
}

fn yaml_inline(v: &Value, indent: usize) -> String {
    match v {
        Value::Sensitive(m) => yaml_inline(&m.value, indent),
        Value::Null | Value::Unknown => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_nan() => ".nan".to_owned(),
        Value::Number(n) if n.is_infinite() => if *n > 0.0 { ".inf" } else { "-.inf" }.to_owned(),
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => format_number(*n),
        // Debug is the shortest round-trip form, with an exponent for very large or small values.
        Value::Number(n) => format!("{n:?}"),
        Value::String(s) => yaml_string(s, indent, true),
        Value::List(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// A string scalar: plain when no YAML parser (1.1 or 1.2) could read it as anything else, a
/// literal block for multi-line text, quoted otherwise.
fn yaml_string(s: &str, indent: usize, allow_literal: bool) -> String {
    if allow_literal && yaml_literal_fits(s) {
        let body = s.trim_end_matches('\n');
        let chomp = match s.len() - body.len() {
            0 => "-",
            1 => "",
            _ => "+",
        };
        let pad = " ".repeat(indent + 2);
        let mut out = format!("|{chomp}");
        for line in body.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&pad);
                out.push_str(line);
            }
        }
        // Keep-chomping: the trailing newlines beyond the first are empty lines of the block.
        for _ in 1..s.len() - body.len() {
            out.push('\n');
        }
        return out;
    }
    if yaml_plain_fits(s) {
        return s.to_owned();
    }
    if !s.chars().any(yaml_needs_escape) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if yaml_needs_escape(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn yaml_literal_fits(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n'])
        && s.chars()
            .all(|c| c == '\n' || c == '\t' || !yaml_needs_escape(c))
}

fn yaml_plain_fits(s: &str) -> bool {
    const RESERVED: [&str; 14] = [
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf",
        ".nan",
    ];
    let Some(first) = s.chars().next() else {
        return false;
    };
    !(s.trim() != s
        || RESERVED.contains(&s.to_lowercase().as_str())
        // Numbers, and what YAML 1.1 reads as numbers or dates: 0x1f, 1_000, 1:30, 2024-01-01.
        || first.is_ascii_digit()
        || s.parse::<f64>().is_ok()
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.chars().any(yaml_needs_escape))
}

/// Characters a YAML scalar can only hold as an escape in double quotes.
fn yaml_needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::string(x)
    }

    fn n(x: f64) -> Value {
        Value::Number(x)
    }

    fn list(items: &[Value]) -> Value {
        Value::List(items.to_vec())
    }

    fn strs(items: &[&str]) -> Value {
        Value::List(items.iter().map(|x| s(x)).collect())
    }

    fn nums(items: &[f64]) -> Value {
        Value::List(items.iter().map(|x| n(*x)).collect())
    }

    fn obj(pairs: &[(&str, Value)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    fn ok(name: &str, args: &[Value]) -> Value {
        match call(name, args) {
            Some(Ok(v)) => v,
            Some(Err(e)) => panic!("{name}({args:?}) failed: {e}"),
            None => panic!("no function {name}"),
        }
    }

    fn err(name: &str, args: &[Value]) -> CallError {
        match call(name, args) {
            Some(Err(e)) => e,
            Some(Ok(v)) => panic!("{name}({args:?}) returned {v:?}, expected an error"),
            None => panic!("no function {name}"),
        }
    }

    #[test]
    fn names_are_sorted_unique_and_all_callable() {
        assert!(
            names().windows(2).all(|w| w[0] < w[1]),
            "names() must be sorted and unique"
        );
        for name in names() {
            assert!(
                lookup_func(name).is_some(),
                "{name} is listed but not dispatched"
            );
        }
        assert!(call("nosuchfunction", &[]).is_none());
        for excluded in ["try", "can", "file", "templatefile", "fileexists"] {
            assert!(
                call(excluded, &[]).is_none(),
                "{excluded} belongs to the evaluator"
            );
        }
    }

    #[test]
    fn arity_errors_name_the_function_and_counts() {
        let e = err("join", &[s(",")]);
        assert_eq!(
            e,
            CallError {
                arg: None,
                message: "Function \"join\" expects 2 arguments, got 1.".into()
            }
        );
        assert_eq!(
            err("upper", &[]).message,
            "Function \"upper\" expects 1 argument, got 0."
        );
        assert_eq!(
            err("concat", &[]).message,
            "Function \"concat\" expects at least 1 argument, got 0."
        );
        assert_eq!(
            err("setproduct", &[list(&[])]).message,
            "Function \"setproduct\" expects at least 2 arguments, got 1."
        );
        assert_eq!(
            err("lookup", &[obj(&[])]).message,
            "Function \"lookup\" expects 2 or 3 arguments, got 1."
        );
        assert_eq!(
            err("range", &[n(1.0), n(2.0), n(3.0), n(4.0)]).message,
            "Function \"range\" expects 1 to 3 arguments, got 4."
        );
    }

    #[test]
    fn unknown_arguments_make_unknown_results() {
        assert_eq!(ok("upper", &[Value::Unknown]), Value::Unknown);
        assert_eq!(
            ok("join", &[s(","), list(&[s("a"), Value::Unknown])]),
            Value::Unknown
        );
        assert_eq!(
            ok("merge", &[obj(&[("a", Value::Unknown)])]),
            Value::Unknown
        );
        assert_eq!(ok("jsonencode", &[list(&[Value::Unknown])]), Value::Unknown);
        // Arity is still checked.
        assert!(
            err("upper", &[Value::Unknown, Value::Unknown])
                .arg
                .is_none()
        );
    }

    #[test]
    fn length_counts_even_with_unknown_elements() {
        assert_eq!(ok("length", &[list(&[Value::Unknown, n(1.0)])]), n(2.0));
        assert_eq!(ok("length", &[obj(&[("a", Value::Unknown)])]), n(1.0));
        assert_eq!(ok("length", &[Value::Unknown]), Value::Unknown);
        assert_eq!(ok("length", &[s("héllo")]), n(5.0));
        assert_eq!(err("length", &[Value::Null]).arg, Some(0));
        assert!(
            err("length", &[n(3.0)])
                .message
                .contains("a string, a collection type")
        );
    }

    #[test]
    fn coalesce_skips_nulls_and_empty_strings_until_an_unknown() {
        assert_eq!(
            ok("coalesce", &[Value::Null, s(""), s("a"), s("b")]),
            s("a")
        );
        assert_eq!(ok("coalesce", &[s("a"), Value::Unknown]), s("a"));
        assert_eq!(
            ok("coalesce", &[Value::Null, Value::Unknown, s("a")]),
            Value::Unknown
        );
        assert_eq!(ok("coalesce", &[n(1.0), n(2.0)]), n(1.0));
        assert_eq!(ok("coalesce", &[s(""), n(1.0)]), s("1"));
        assert!(
            err("coalesce", &[Value::Null, s("")])
                .message
                .contains("no non-null")
        );
    }

    #[test]
    fn null_arguments_are_rejected_with_their_position() {
        let e = err("upper", &[Value::Null]);
        assert_eq!(e.arg, Some(0));
        assert_eq!(
            e.message,
            "Invalid value for \"str\" parameter: argument must not be null."
        );
        assert_eq!(err("join", &[s(","), Value::Null]).arg, Some(1));
        assert_eq!(err("concat", &[list(&[]), Value::Null]).arg, Some(1));
        assert_eq!(
            err("join", &[s(","), list(&[s("a"), Value::Null])]).message,
            "Invalid value for \"list\" parameter: element 1 is null."
        );
    }

    #[test]
    fn type_errors_name_the_parameter() {
        let e = err("join", &[s(","), s("abc")]);
        assert_eq!(
            e,
            CallError {
                arg: Some(1),
                message: "Invalid value for \"list\" parameter: list of string required.".into()
            }
        );
        assert_eq!(err("join", &[s(","), list(&[list(&[])])]).arg, Some(1));
        assert_eq!(
            err("upper", &[list(&[])]).message,
            "Invalid value for \"str\" parameter: string required."
        );
        assert_eq!(
            err("abs", &[s("x")]).message,
            "Invalid value for \"num\" parameter: number required."
        );
        assert_eq!(err("keys", &[list(&[])]).arg, Some(0));
    }

    #[test]
    fn primitives_convert_like_hcl() {
        assert_eq!(ok("upper", &[n(12.0)]), s("12"));
        assert_eq!(
            ok(
                "join",
                &[s("-"), list(&[n(1.0), Value::Bool(true), s("x")])]
            ),
            s("1-true-x")
        );
        assert_eq!(ok("abs", &[s("-3")]), n(3.0));
        assert_eq!(ok("max", &[n(1.0), s("7"), n(3.0)]), n(7.0));
    }

    #[test]
    fn merge_overrides_left_to_right_and_skips_nulls() {
        let merged = ok(
            "merge",
            &[
                obj(&[("a", n(1.0)), ("b", n(2.0))]),
                Value::Null,
                obj(&[("b", n(3.0)), ("c", n(4.0))]),
            ],
        );
        assert_eq!(merged, obj(&[("a", n(1.0)), ("b", n(3.0)), ("c", n(4.0))]));
        assert_eq!(ok("merge", &[]), obj(&[]));
        assert_eq!(err("merge", &[obj(&[]), s("x")]).arg, Some(1));
    }

    #[test]
    fn concat_flatten_distinct_reverse() {
        assert_eq!(
            ok("concat", &[strs(&["a"]), strs(&["b", "c"]), list(&[])]),
            strs(&["a", "b", "c"])
        );
        assert_eq!(err("concat", &[strs(&["a"]), s("b")]).arg, Some(1));
        assert_eq!(
            ok(
                "flatten",
                &[list(&[s("a"), list(&[s("b"), list(&[s("c")])]), list(&[])])]
            ),
            strs(&["a", "b", "c"])
        );
        assert_eq!(
            ok("distinct", &[strs(&["a", "b", "a", "c", "b"])]),
            strs(&["a", "b", "c"])
        );
        assert_eq!(
            ok("distinct", &[list(&[n(1.0), s("1"), n(1.0)])]),
            list(&[n(1.0), s("1")])
        );
        assert_eq!(
            ok("reverse", &[nums(&[1.0, 2.0, 3.0])]),
            nums(&[3.0, 2.0, 1.0])
        );
    }

    #[test]
    fn lookup_with_and_without_default() {
        let m = obj(&[("a", s("x"))]);
        assert_eq!(ok("lookup", &[m.clone(), s("a")]), s("x"));
        assert_eq!(ok("lookup", &[m.clone(), s("b"), s("d")]), s("d"));
        assert_eq!(ok("lookup", &[m.clone(), s("b"), Value::Null]), Value::Null);
        let e = err("lookup", &[m, s("b")]);
        assert_eq!(e.arg, Some(1));
        assert!(e.message.contains("lookup failed to find key \"b\""));
    }

    #[test]
    fn keys_and_values_are_in_lexicographic_order() {
        let m = obj(&[("b", n(2.0)), ("a", n(1.0)), ("c", n(3.0))]);
        assert_eq!(ok("keys", std::slice::from_ref(&m)), strs(&["a", "b", "c"]));
        assert_eq!(ok("values", &[m]), nums(&[1.0, 2.0, 3.0]));
        assert_eq!(err("values", &[Value::Null]).arg, Some(0));
    }

    #[test]
    fn format_verbs() {
        let f = |spec: &str, args: &[Value]| {
            let mut all = vec![s(spec)];
            all.extend_from_slice(args);
            ok("format", &all)
        };
        assert_eq!(f("Hello, %s!", &[s("world")]), s("Hello, world!"));
        assert_eq!(f("%d items", &[n(42.0)]), s("42 items"));
        assert_eq!(
            f("%.2f|%8.3f|%-6.1f|", &[n(1.23456), n(2.5), n(1.0)]),
            s("1.23|   2.500|1.0   |")
        );
        assert_eq!(
            f("%5d|%-5d|%05d|%+d", &[n(42.0), n(42.0), n(-42.0), n(7.0)]),
            s("   42|42   |-0042|+7")
        );
        assert_eq!(
            f(
                "%x %X %o %b %#x",
                &[n(255.0), n(255.0), n(8.0), n(5.0), n(255.0)]
            ),
            s("ff FF 10 101 0xff")
        );
        assert_eq!(
            f("%e %E", &[n(1234.5678), n(0.000123)]),
            s("1.234568e+03 1.230000E-04")
        );
        assert_eq!(
            f("%g %g %g", &[n(100000.0), n(1e21), n(0.00001)]),
            s("100000 1e+21 1e-05")
        );
        assert_eq!(
            f("%t %v %v", &[Value::Bool(true), n(1.5), s("x")]),
            s("true 1.5 x")
        );
        assert_eq!(
            f("%v", &[obj(&[("a", nums(&[1.0, 2.0]))])]),
            s("{\"a\":[1,2]}")
        );
        assert_eq!(f("%q", &[s("a\"b")]), s("\"a\\\"b\""));
        assert_eq!(f("100%%", &[]), s("100%"));
        assert_eq!(f("%[2]s %[1]s", &[s("a"), s("b")]), s("b a"));
        assert_eq!(
            f("%.2s|%6s|%-4s|", &[s("héllo"), s("ab"), s("c")]),
            s("hé|    ab|c   |")
        );
        assert_eq!(f("%d", &[s("12")]), s("12"));
        assert_eq!(f("%d", &[n(1e20)]), s("100000000000000000000"));
    }

    #[test]
    fn format_errors() {
        let e = err("format", &[s("%d"), n(1.5)]);
        assert_eq!(e.arg, Some(1));
        assert!(
            e.message.contains("an integer is required"),
            "{}",
            e.message
        );
        let e = err("format", &[s("%s and %s"), s("a")]);
        assert_eq!(e.arg, None);
        assert!(
            e.message
                .contains("not enough arguments for \"%s\" at position 7"),
            "{}",
            e.message
        );
        assert!(
            err("format", &[s("%s"), s("a"), s("b")])
                .message
                .contains("too many arguments")
        );
        assert!(
            err("format", &[s("%z"), s("a")])
                .message
                .contains("unrecognized format verb")
        );
        assert!(
            err("format", &[s("%s"), Value::Null])
                .message
                .contains("null value cannot be formatted")
        );
        assert!(
            err("format", &[s("%s"), list(&[])])
                .message
                .contains("string required")
        );
        assert!(
            err("format", &[s("abc %")])
                .message
                .contains("missing verb")
        );
        assert!(
            err("format", &[s("%99999999999999999999999d"), n(1.0)])
                .message
                .contains("must not exceed")
        );
    }

    #[test]
    fn formatlist_iterates_lists_in_step() {
        assert_eq!(
            ok("formatlist", &[s("%s=%s"), strs(&["a", "b"]), s("x")]),
            strs(&["a=x", "b=x"])
        );
        assert_eq!(
            ok(
                "formatlist",
                &[s("%s-%d"), strs(&["a", "b"]), nums(&[1.0, 2.0])]
            ),
            strs(&["a-1", "b-2"])
        );
        assert_eq!(ok("formatlist", &[s("%s"), s("x")]), strs(&["x"]));
        let e = err("formatlist", &[s("%s%s"), strs(&["a", "b"]), strs(&["c"])]);
        assert_eq!(e.arg, Some(2));
        assert!(e.message.contains("inconsistent"));
    }

    #[test]
    fn join_and_split() {
        assert_eq!(ok("join", &[s(", "), strs(&["a", "b", "c"])]), s("a, b, c"));
        assert_eq!(ok("join", &[s(","), list(&[])]), s(""));
        assert_eq!(
            ok("split", &[s(","), s("a,b,,c")]),
            strs(&["a", "b", "", "c"])
        );
        assert_eq!(ok("split", &[s(","), s("")]), strs(&[""]));
        assert_eq!(ok("split", &[s(""), s("hé")]), strs(&["h", "é"]));
    }

    #[test]
    fn replace_is_plain_and_refuses_regex() {
        assert_eq!(
            ok("replace", &[s("1 + 2 + 3"), s("+"), s("-")]),
            s("1 - 2 - 3")
        );
        assert_eq!(ok("replace", &[s("a/b"), s("/"), s("_")]), s("a_b"));
        let e = err("replace", &[s("abc"), s("/b/"), s("x")]);
        assert_eq!(e.arg, Some(1));
        assert!(e.message.contains("not supported"));
    }

    #[test]
    fn case_and_trimming() {
        assert_eq!(ok("lower", &[s("HÉLLO")]), s("héllo"));
        assert_eq!(ok("upper", &[s("héllo")]), s("HÉLLO"));
        assert_eq!(
            ok("title", &[s("hello world-foo_bar élan")]),
            s("Hello World-Foo_bar Élan")
        );
        assert_eq!(ok("trimspace", &[s("  \t a b \n")]), s("a b"));
        assert_eq!(ok("trim", &[s("?!hello?!"), s("!?")]), s("hello"));
        assert_eq!(ok("trim", &[s("ééaéé"), s("é")]), s("a"));
        assert_eq!(ok("trimprefix", &[s("helloworld"), s("hello")]), s("world"));
        assert_eq!(
            ok("trimprefix", &[s("helloworld"), s("x")]),
            s("helloworld")
        );
        assert_eq!(ok("trimsuffix", &[s("helloworld"), s("world")]), s("hello"));
        assert_eq!(ok("chomp", &[s("hello\r\n\n")]), s("hello"));
        assert_eq!(ok("chomp", &[s("a\nb")]), s("a\nb"));
    }

    #[test]
    fn indent_pads_every_line_but_the_first() {
        assert_eq!(ok("indent", &[n(2.0), s("a\nb\nc")]), s("a\n  b\n  c"));
        assert_eq!(err("indent", &[n(-1.0), s("a")]).arg, Some(0));
        assert_eq!(err("indent", &[n(1.5), s("a")]).arg, Some(0));
        assert_eq!(err("indent", &[n(1e300), s("a")]).arg, Some(0));
    }

    #[test]
    fn substr_counts_characters() {
        assert_eq!(ok("substr", &[s("hello world"), n(1.0), n(4.0)]), s("ello"));
        assert_eq!(ok("substr", &[s("🤔🤷"), n(0.0), n(1.0)]), s("🤔"));
        assert_eq!(
            ok("substr", &[s("hello world"), n(-5.0), n(-1.0)]),
            s("world")
        );
        assert_eq!(ok("substr", &[s("hello"), n(-50.0), n(2.0)]), s("he"));
        assert_eq!(ok("substr", &[s("hello"), n(10.0), n(2.0)]), s(""));
        assert_eq!(ok("substr", &[s("hello"), n(1.0), n(100.0)]), s("ello"));
        assert_eq!(err("substr", &[s("hello"), n(0.5), n(1.0)]).arg, Some(1));
    }

    #[test]
    fn string_predicates_and_reversal() {
        assert_eq!(ok("strrev", &[s("héllo")]), s("olléh"));
        assert_eq!(ok("startswith", &[s("hello"), s("he")]), Value::Bool(true));
        assert_eq!(ok("endswith", &[s("hello"), s("he")]), Value::Bool(false));
        assert_eq!(ok("strcontains", &[s("hello"), s("ll")]), Value::Bool(true));
    }

    #[test]
    fn conversions() {
        assert_eq!(ok("tostring", &[n(5.0)]), s("5"));
        assert_eq!(ok("tostring", &[Value::Bool(true)]), s("true"));
        assert_eq!(ok("tostring", &[Value::Null]), Value::Null);
        assert_eq!(err("tostring", &[list(&[])]).arg, Some(0));
        assert_eq!(ok("tonumber", &[s("1.5")]), n(1.5));
        assert_eq!(ok("tonumber", &[Value::Null]), Value::Null);
        assert!(
            err("tonumber", &[s("abc")])
                .message
                .contains("cannot convert \"abc\" to number")
        );
        assert_eq!(ok("tobool", &[s("false")]), Value::Bool(false));
        assert!(
            err("tobool", &[s("yes")])
                .message
                .contains("cannot convert \"yes\" to bool")
        );
        assert_eq!(err("tobool", &[n(1.0)]).arg, Some(0));
    }

    #[test]
    fn collection_conversions() {
        assert_eq!(
            ok("tolist", &[list(&[s("a"), n(1.0), Value::Bool(true)])]),
            strs(&["a", "1", "true"])
        );
        assert!(
            err("tolist", &[obj(&[("a", n(1.0))])])
                .message
                .contains("cannot convert object to list")
        );
        assert_eq!(err("tolist", &[list(&[n(1.0), list(&[])])]).arg, Some(0));
        assert_eq!(
            ok("toset", &[strs(&["b", "a", "b", "c", "a"])]),
            strs(&["b", "a", "c"])
        );
        assert_eq!(ok("toset", &[list(&[s("1"), n(1.0)])]), strs(&["1"]));
        let m = obj(&[("a", s("x")), ("b", n(2.0))]);
        assert_eq!(ok("tomap", &[m]), obj(&[("a", s("x")), ("b", s("2"))]));
        assert_eq!(ok("tomap", &[obj(&[("a", n(1.0))])]), obj(&[("a", n(1.0))]));
        assert!(
            err("tomap", &[list(&[])])
                .message
                .contains("cannot convert list to map")
        );
    }

    #[test]
    fn jsonencode_is_compact_and_ordered() {
        let v = obj(&[
            ("b", n(1.0)),
            ("a", list(&[n(1.5), Value::Bool(true), Value::Null, s("x")])),
        ]);
        assert_eq!(
            ok("jsonencode", &[v]),
            s("{\"b\":1,\"a\":[1.5,true,null,\"x\"]}")
        );
        assert_eq!(
            ok("jsonencode", &[s("<a & b>")]),
            s("\"\\u003ca \\u0026 b\\u003e\"")
        );
        assert_eq!(ok("jsonencode", &[Value::Null]), s("null"));
    }

    #[test]
    fn jsondecode_round_trips_and_reports_parse_errors() {
        let v = ok("jsondecode", &[s("{\"z\":1,\"a\":[true,null,\"x\",2.5]}")]);
        assert_eq!(
            v,
            obj(&[
                ("z", n(1.0)),
                ("a", list(&[Value::Bool(true), Value::Null, s("x"), n(2.5)]))
            ])
        );
        assert_eq!(
            ok("jsonencode", &[v]),
            s("{\"z\":1,\"a\":[true,null,\"x\",2.5]}")
        );
        let e = err("jsondecode", &[s("{\"a\":")]);
        assert_eq!(e.arg, Some(0));
        assert!(e.message.contains("EOF"), "{}", e.message);
    }

    #[test]
    fn yaml_encode_and_decode() {
        let v = obj(&[
            ("name", s("gpu")),
            ("replicas", n(2.0)),
            ("ratio", n(0.5)),
            ("tags", strs(&["a", "true", ""])),
            ("empty", obj(&[])),
        ]);
        let text = ok("yamlencode", std::slice::from_ref(&v));
        assert_eq!(
            text,
            s("name: gpu\nreplicas: 2\nratio: 0.5\ntags:\n- a\n- 'true'\n- ''\nempty: {}\n")
        );
        assert_eq!(ok("yamldecode", &[text]), v);
        assert_eq!(
            ok("yamldecode", &[s("a: 1\nb: [x, 2]\n3: yes\n")]),
            obj(&[
                ("a", n(1.0)),
                ("b", list(&[s("x"), n(2.0)])),
                ("3", s("yes"))
            ])
        );
        let e = err("yamldecode", &[s("a: [1")]);
        assert_eq!(e.arg, Some(0));
        assert!(
            err("yamldecode", &[s("a: 1\n---\nb: 2\n")])
                .message
                .contains("more than one document")
        );
    }

    #[test]
    fn yamlencode_quotes_only_what_a_parser_would_misread() {
        let text = |v: Value| match ok("yamlencode", &[v]) {
            Value::String(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(s("plain text")), "plain text\n");
        assert_eq!(text(s("on")), "'on'\n");
        assert_eq!(text(s("Yes")), "'Yes'\n");
        assert_eq!(text(s("535.104.05")), "'535.104.05'\n");
        assert_eq!(text(s("a: b")), "'a: b'\n");
        assert_eq!(text(s("it's")), "it's\n");
        assert_eq!(text(s("'q'")), "'''q'''\n");
        assert_eq!(text(s("tab\there\r")), "\"tab\\there\\r\"\n");
        assert_eq!(text(s("line1\nline2\n")), "|\n  line1\n  line2\n");
        assert_eq!(text(Value::Null), "null\n");
        assert_eq!(text(n(1e20)), "1e20\n");
        assert_eq!(
            text(obj(&[(
                "yes",
                list(&[
                    obj(&[("a", n(1.0)), ("b", nums(&[2.0]))]),
                    strs(&["x", "z"])
                ])
            )])),
            "'yes':\n- a: 1\n  b:\n  - 2\n- - x\n  - z\n"
        );
        // Whatever the emitter writes, the parser reads back the same value.
        let tricky = obj(&[
            (
                "multi",
                list(&[
                    s("a\n\n"),
                    s("a\nb"),
                    s(" lead\nx"),
                    s("x\n  y\n"),
                    s("\n"),
                    s("é\u{2028}"),
                ]),
            ),
            (
                "scalars",
                list(&[
                    s(""),
                    s("~"),
                    s("-"),
                    s("- x"),
                    s("#"),
                    s("0x1F"),
                    s("1_000"),
                    s(".5"),
                    s("@x"),
                    s("a #b"),
                    s("x:"),
                ]),
            ),
            ("numbers", nums(&[0.1, -3.0, 1e-7, 123456789012345680000.0])),
            (
                "nested",
                obj(&[("deep", obj(&[("er", list(&[list(&[]), obj(&[])]))]))]),
            ),
            ("null key", Value::Null),
            ("", Value::Bool(false)),
        ]);
        let encoded = ok("yamlencode", std::slice::from_ref(&tricky));
        assert_eq!(
            ok("yamldecode", std::slice::from_ref(&encoded)),
            tricky,
            "{encoded}"
        );
    }

    #[test]
    fn base64_and_hashes() {
        assert_eq!(
            ok("base64encode", &[s("Hello World")]),
            s("SGVsbG8gV29ybGQ=")
        );
        assert_eq!(
            ok("base64decode", &[s("SGVsbG8gV29ybGQ=")]),
            s("Hello World")
        );
        assert_eq!(err("base64decode", &[s("not base64!")]).arg, Some(0));
        assert!(
            err("base64decode", &[s("/w==")])
                .message
                .contains("not valid UTF-8")
        );
        assert_eq!(
            ok("sha256", &[s("hello world")]),
            s("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
        );
        assert_eq!(
            ok("base64sha256", &[s("hello world")]),
            s("uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=")
        );
        assert_eq!(ok("urlencode", &[s("a b&c/é")]), s("a+b%26c%2F%C3%A9"));
    }

    #[test]
    fn coalescelist_and_compact() {
        assert_eq!(
            ok("coalescelist", &[list(&[]), strs(&["a"]), strs(&["b"])]),
            strs(&["a"])
        );
        assert!(
            err("coalescelist", &[list(&[]), list(&[])])
                .message
                .contains("no non-null")
        );
        assert_eq!(err("coalescelist", &[list(&[]), Value::Null]).arg, Some(1));
        assert_eq!(
            ok("compact", &[list(&[s("a"), s(""), Value::Null, s("b")])]),
            strs(&["a", "b"])
        );
    }

    #[test]
    fn contains_and_index() {
        assert_eq!(
            ok("contains", &[strs(&["a", "b"]), s("b")]),
            Value::Bool(true)
        );
        assert_eq!(
            ok("contains", &[strs(&["1", "2"]), n(2.0)]),
            Value::Bool(true)
        );
        assert_eq!(ok("contains", &[strs(&["a"]), s("c")]), Value::Bool(false));
        assert_eq!(ok("index", &[strs(&["a", "b", "c"]), s("b")]), n(1.0));
        assert!(
            err("index", &[strs(&["a"]), s("z")])
                .message
                .contains("item not found")
        );
    }

    #[test]
    fn range_follows_terraform() {
        assert_eq!(ok("range", &[n(3.0)]), nums(&[0.0, 1.0, 2.0]));
        assert_eq!(ok("range", &[n(1.0), n(4.0)]), nums(&[1.0, 2.0, 3.0]));
        assert_eq!(ok("range", &[n(4.0), n(1.0)]), nums(&[4.0, 3.0, 2.0]));
        assert_eq!(
            ok("range", &[n(0.0), n(10.0), n(4.0)]),
            nums(&[0.0, 4.0, 8.0])
        );
        assert_eq!(ok("range", &[n(1.0), n(4.0), n(-1.0)]), nums(&[]));
        assert_eq!(ok("range", &[n(0.0)]), nums(&[]));
        assert_eq!(
            ok("range", &[n(0.0), n(1.0), n(0.25)]),
            nums(&[0.0, 0.25, 0.5, 0.75])
        );
        assert_eq!(err("range", &[n(0.0), n(1.0), n(0.0)]).arg, Some(2));
        assert!(err("range", &[n(2e6)]).message.contains("1000000"));
        assert!(
            err("range", &[n(1e17), n(1e17 + 1000.0), n(1.0)])
                .message
                .contains("too small")
        );
        assert_eq!(
            ok("range", &[n(1e6)]).as_list().map(<[Value]>::len),
            Some(1_000_000)
        );
    }

    #[test]
    fn min_max_abs_ceil_floor_sum() {
        assert_eq!(ok("min", &[n(3.0), n(1.0), n(2.0)]), n(1.0));
        assert_eq!(ok("max", &[n(3.0), n(-1.0)]), n(3.0));
        assert!(err("max", &[]).message.contains("at least 1 argument"));
        assert_eq!(ok("abs", &[n(-2.5)]), n(2.5));
        assert_eq!(ok("ceil", &[n(1.2)]), n(2.0));
        assert_eq!(ok("floor", &[n(-1.2)]), n(-2.0));
        assert_eq!(ok("sum", &[list(&[n(1.0), s("2"), n(3.5)])]), n(6.5));
        assert!(err("sum", &[list(&[])]).message.contains("empty"));
        assert_eq!(ok("pow", &[n(2.0), n(10.0)]), n(1024.0));
        assert_eq!(ok("signum", &[n(-3.0)]), n(-1.0));
        assert_eq!(ok("log", &[n(8.0), n(2.0)]), n(3.0));
        assert!(
            err("log", &[n(-1.0), n(10.0)])
                .message
                .contains("not a number")
        );
        assert_eq!(ok("parseint", &[s("FF"), n(16.0)]), n(255.0));
        assert_eq!(ok("parseint", &[s("-101"), n(2.0)]), n(-5.0));
        assert_eq!(err("parseint", &[s("12"), n(1.0)]).arg, Some(1));
        assert_eq!(err("parseint", &[s("19"), n(8.0)]).arg, Some(0));
    }

    #[test]
    fn element_wraps_around() {
        let l = strs(&["a", "b", "c"]);
        assert_eq!(ok("element", &[l.clone(), n(1.0)]), s("b"));
        assert_eq!(ok("element", &[l.clone(), n(5.0)]), s("c"));
        assert_eq!(ok("element", &[l.clone(), n(9e15)]), s("a"));
        assert_eq!(err("element", &[l, n(-1.0)]).arg, Some(1));
        assert_eq!(err("element", &[list(&[]), n(0.0)]).arg, Some(0));
    }

    #[test]
    fn slice_checks_bounds() {
        let l = strs(&["a", "b", "c", "d"]);
        assert_eq!(ok("slice", &[l.clone(), n(1.0), n(3.0)]), strs(&["b", "c"]));
        assert_eq!(ok("slice", &[l.clone(), n(2.0), n(2.0)]), strs(&[]));
        assert_eq!(err("slice", &[l.clone(), n(3.0), n(1.0)]).arg, Some(1));
        assert_eq!(err("slice", &[l.clone(), n(0.0), n(5.0)]).arg, Some(2));
        assert_eq!(err("slice", &[l, n(-1.0), n(2.0)]).arg, Some(1));
    }

    #[test]
    fn sort_zipmap_one() {
        assert_eq!(
            ok("sort", &[list(&[s("b"), s("a"), n(10.0), n(9.0)])]),
            strs(&["10", "9", "a", "b"])
        );
        assert_eq!(
            ok("zipmap", &[strs(&["a", "b"]), nums(&[1.0, 2.0])]),
            obj(&[("a", n(1.0)), ("b", n(2.0))])
        );
        assert!(
            err("zipmap", &[strs(&["a"]), list(&[])])
                .message
                .contains("does not match")
        );
        assert_eq!(ok("one", &[list(&[])]), Value::Null);
        assert_eq!(ok("one", &[strs(&["x"])]), s("x"));
        assert_eq!(err("one", &[strs(&["x", "y"])]).arg, Some(0));
    }

    #[test]
    fn alltrue_anytrue() {
        assert_eq!(
            ok("alltrue", &[list(&[Value::Bool(true), s("true")])]),
            Value::Bool(true)
        );
        assert_eq!(ok("alltrue", &[list(&[])]), Value::Bool(true));
        assert_eq!(
            ok("alltrue", &[list(&[Value::Bool(true), Value::Null])]),
            Value::Bool(false)
        );
        assert_eq!(
            ok("anytrue", &[list(&[Value::Bool(false), Value::Bool(true)])]),
            Value::Bool(true)
        );
        assert_eq!(ok("anytrue", &[list(&[])]), Value::Bool(false));
        assert_eq!(err("anytrue", &[strs(&["maybe"])]).arg, Some(0));
    }

    #[test]
    fn set_operations_keep_first_occurrence_order() {
        assert_eq!(
            ok(
                "setunion",
                &[strs(&["a", "b"]), strs(&["b", "c"]), strs(&["d"])]
            ),
            strs(&["a", "b", "c", "d"])
        );
        assert_eq!(
            ok(
                "setintersection",
                &[
                    strs(&["a", "b", "c"]),
                    strs(&["b", "c", "d"]),
                    strs(&["c", "b"])
                ]
            ),
            strs(&["b", "c"])
        );
        assert_eq!(
            ok("setsubtract", &[strs(&["a", "b", "c"]), strs(&["a", "c"])]),
            strs(&["b"])
        );
        assert_eq!(
            ok("setproduct", &[strs(&["a", "b"]), nums(&[1.0, 2.0])]),
            list(&[
                list(&[s("a"), n(1.0)]),
                list(&[s("a"), n(2.0)]),
                list(&[s("b"), n(1.0)]),
                list(&[s("b"), n(2.0)]),
            ])
        );
        // Objects are equal regardless of key order.
        let x = obj(&[("a", n(1.0)), ("b", n(2.0))]);
        let y = obj(&[("b", n(2.0)), ("a", n(1.0))]);
        assert_eq!(ok("distinct", &[list(&[x.clone(), y])]), list(&[x]));
    }

    #[test]
    fn chunklist_transpose_matchkeys() {
        assert_eq!(
            ok("chunklist", &[strs(&["a", "b", "c"]), n(2.0)]),
            list(&[strs(&["a", "b"]), strs(&["c"])])
        );
        assert_eq!(
            ok("chunklist", &[strs(&["a"]), n(0.0)]),
            list(&[strs(&["a"])])
        );
        assert_eq!(err("chunklist", &[strs(&["a"]), n(-1.0)]).arg, Some(1));
        let m = obj(&[("b", strs(&["1", "2"])), ("a", strs(&["2", "3"]))]);
        assert_eq!(
            ok("transpose", &[m]),
            obj(&[
                ("1", strs(&["b"])),
                ("2", strs(&["a", "b"])),
                ("3", strs(&["a"]))
            ])
        );
        assert_eq!(
            ok(
                "matchkeys",
                &[
                    strs(&["i-1", "i-2", "i-3"]),
                    strs(&["us", "eu", "us"]),
                    strs(&["us"])
                ]
            ),
            strs(&["i-1", "i-3"])
        );
    }

    #[test]
    fn conversions_pass_null_and_unknown_through() {
        for name in ["tostring", "tonumber", "tobool", "tolist", "toset", "tomap"] {
            assert_eq!(ok(name, &[Value::Null]), Value::Null, "{name}(null)");
            assert_eq!(
                ok(name, &[Value::Unknown]),
                Value::Unknown,
                "{name}(unknown)"
            );
        }
        assert_eq!(
            ok("tolist", &[list(&[Value::Null, n(1.0)])]),
            list(&[Value::Null, n(1.0)])
        );
    }

    #[test]
    fn format_numbers_like_go() {
        let f = |spec: &str, x: f64| ok("format", &[s(spec), n(x)]);
        assert_eq!(f("%.3g", 1234.5), s("1.23e+03"));
        assert_eq!(f("%.3g", 0.00012345), s("0.000123"));
        assert_eq!(f("%g", 123456789.0), s("1.23456789e+08"));
        assert_eq!(f("%08.2f", -1.23456), s("-0001.23"));
        assert_eq!(f("%.3d", 7.0), s("007"));
        assert_eq!(f("% d", 5.0), s(" 5"));
        assert_eq!(f("%x", -255.0), s("-ff"));
        assert_eq!(f("%v", 0.1), s("0.1"));
        assert!(
            err("format", &[s("%x"), n(1e300)])
                .message
                .contains("too large")
        );
    }

    #[test]
    fn sha512_digests() {
        assert_eq!(
            ok("sha512", &[s("hello world")]),
            s(
                "309ecc489c12d6eb4cc40f50c902f2b4d0ed77ee511a7c7a9bcd3ca86d4cd86f989dd35bc5ff499670da34255b45b0cfd830e81f605dcf7dc5542e93ae9cd76f"
            )
        );
        assert_eq!(
            ok("base64sha512", &[s("")]).as_str().map(str::len),
            Some(88)
        );
    }

    fn sweep_inputs() -> Vec<Vec<Value>> {
        let nested = list(&[
            list(&[list(&[s("deep"), Value::Null])]),
            obj(&[("k", list(&[n(1.0)]))]),
            Value::Bool(false),
        ]);
        let unicode = s("héllo wörld 🎉\n  ﬃ\u{301}\r\n");
        vec![
            vec![],
            vec![Value::Null],
            vec![Value::Unknown],
            vec![Value::Null, Value::Null, Value::Null],
            vec![n(f64::MAX), n(-f64::MAX), n(1e308)],
            vec![n(f64::NAN)],
            vec![n(f64::NAN), n(f64::NAN), n(f64::NAN)],
            vec![n(f64::INFINITY), n(f64::NEG_INFINITY)],
            vec![unicode.clone(), n(-1.0), n(3.0)],
            vec![s(""), s(""), s("")],
            vec![nested.clone(), n(9e15)],
            vec![obj(&[("a", s("x")), ("b", nested.clone())]), s("a"), s("z")],
            vec![
                s("%d %s %v %q %[5]x %-08.3f %#v %"),
                n(1.5),
                nested.clone(),
                obj(&[]),
                Value::Null,
            ],
            vec![nums(&[1.0, 2.0, 3.0]), n(-1e300), n(1e300)],
            vec![list(&[]), n(0.0)],
            vec![s("a"), s("/a/"), s("b")],
            vec![list(&[Value::Unknown]), n(1.0)],
            vec![Value::Bool(true), Value::Bool(false), Value::Bool(true)],
            vec![s("{\"a\":[1,2,{}]}")],
            vec![s("a: [1, {b: c}]\n---\nx"), nested.clone()],
            vec![
                list(&[strs(&["a"]), Value::Null]),
                list(&[Value::Null]),
                n(2.0),
            ],
            vec![n(-0.5), n(0.5), n(-0.0)],
            vec![s("🎉é"), n(-100.0), n(1e18)],
            vec![
                s("%[0]d %[99999999999999999999]d %.99999999999f %9999999999999999d"),
                n(1.0),
            ],
            vec![
                nums(&[f64::NAN, f64::NAN, 1.0]),
                nums(&[f64::NAN]),
                list(&[n(f64::INFINITY)]),
            ],
            vec![
                obj(&[("x", nested.clone()), ("y", Value::Null)]),
                obj(&[("x", n(f64::NAN))]),
            ],
            vec![unicode.clone(), unicode, s("é"), s("é")],
            vec![n(1e6), n(-1e6), n(1e-300)],
            vec![s("-"), nested, n(0.0), n(1.0), s("x")],
        ]
    }

    #[test]
    fn no_function_panics_on_assorted_arguments() {
        for name in names() {
            for args in sweep_inputs() {
                let result = std::panic::catch_unwind(|| call(name, &args));
                match result {
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("{name} is listed but not callable"),
                    Err(_) => panic!("{name}({args:?}) panicked"),
                }
            }
        }
    }

    #[test]
    fn no_panics_on_pairwise_argument_combinations() {
        let atoms = [
            Value::Null,
            Value::Unknown,
            n(f64::NAN),
            n(-1.0),
            n(1e300),
            n(2.5),
            s(""),
            s("é🎉\n"),
            s("%"),
            list(&[]),
            list(&[s("a"), n(1.0), Value::Null]),
            obj(&[("a", list(&[]))]),
            Value::Bool(true),
        ];
        for name in names() {
            for x in &atoms {
                for y in &atoms {
                    for args in [
                        vec![x.clone()],
                        vec![x.clone(), y.clone()],
                        vec![x.clone(), y.clone(), x.clone()],
                    ] {
                        assert!(
                            std::panic::catch_unwind(|| call(name, &args)).is_ok(),
                            "{name}({args:?}) panicked"
                        );
                    }
                }
            }
        }
    }
}
