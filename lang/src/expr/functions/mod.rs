//! The pure built-in functions of the stack language, with Terraform's names, argument order and
//! error conditions.
//!
//! `try`, `can`, `file`, `templatefile` and `fileexists` are not here: they need lazy arguments or
//! the filesystem, so the evaluator implements them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use gpustack_protocol::{Number, Type, Value, format_number};
use indexmap::IndexMap;
use sha2::{Digest, Sha256, Sha512};
use std::collections::{HashMap, HashSet};
use std::fmt;

mod collections;
mod conversions;
mod encodings;
mod kubernetes;
mod network;
mod numbers;
mod paths;
mod strings;
mod time;
mod yaml;

use collections::*;
use conversions::*;
use encodings::*;
use kubernetes::*;
use network::*;
use numbers::*;
pub use numbers::{modulo, multiply};
use paths::*;
use strings::*;
use time::*;
use yaml::*;

pub use time::plan_timestamp;

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

/// Longest list a function builds (`range`, `setproduct`) and longest string a function or a
/// template builds: the limits the providers' decoders hold to as well.
pub use gpustack_protocol::limits::{MAX_ELEMENTS, MAX_STRING_BYTES};
/// Widest padding `indent` and `format` produce: beyond it a typo would exhaust memory.
const MAX_PADDING: usize = 10_000;

static NAMES: &[&str] = &[
    "abs",
    "abspath",
    "alltrue",
    "anytrue",
    "base64decode",
    "base64encode",
    "base64gunzip",
    "base64gzip",
    "base64sha256",
    "base64sha512",
    "basename",
    "ceil",
    "chomp",
    "chunklist",
    "cidrcontains",
    "cidrhost",
    "cidrnetmask",
    "cidrsubnet",
    "cidrsubnets",
    "coalesce",
    "coalescelist",
    "compact",
    "concat",
    "contains",
    "csvdecode",
    "dirname",
    "distinct",
    "element",
    "endswith",
    "ephemeralasnull",
    "flatten",
    "floor",
    "format",
    "formatdate",
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
    "md5",
    "merge",
    "min",
    "one",
    "parseint",
    "pathexpand",
    "pow",
    "range",
    "regex",
    "regexall",
    "replace",
    "reverse",
    "rsadecrypt",
    "setintersection",
    "setproduct",
    "setsubtract",
    "setunion",
    "sha1",
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
    "textdecodebase64",
    "textencodebase64",
    "timeadd",
    "timecmp",
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
    "urldecode",
    "urlencode",
    "uuidv5",
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

/// The functions of the provider of `source` (`NAMESPACE/TYPE`, as `required_providers`
/// records it) that gpustack serves, sorted.
pub fn provider_functions(source: &str) -> &'static [&'static str] {
    match source {
        "hashicorp/kubernetes" => &[
            "manifest_decode",
            "manifest_decode_multi",
            "manifest_encode",
        ],
        "hashicorp/time" => &["duration_parse", "rfc3339_parse", "unix_timestamp_parse"],
        _ => &[],
    }
}

/// Calls the function `name` of the provider of `source`; `None` when gpustack serves no such
/// function.
pub fn call_provider(source: &str, name: &str, args: &[Value]) -> Option<Result<Value, CallError>> {
    let func = match (source, name) {
        ("hashicorp/kubernetes", "manifest_decode") => Func::fixed(&["manifest"], manifest_decode),
        ("hashicorp/kubernetes", "manifest_decode_multi") => {
            Func::fixed(&["manifest"], manifest_decode_multi)
        }
        ("hashicorp/kubernetes", "manifest_encode") => Func::fixed(&["manifest"], manifest_encode),
        ("hashicorp/time", "duration_parse") => Func::fixed(&["duration"], time::duration_parse),
        ("hashicorp/time", "rfc3339_parse") => Func::fixed(&["timestamp"], time::rfc3339_parse),
        ("hashicorp/time", "unix_timestamp_parse") => {
            Func::fixed(&["unix_timestamp"], time::unix_timestamp_parse)
        }
        _ => return None,
    };
    Some(func.call(name, args))
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

// Long by design: the library's index, one arm per function, each arm its arity and body;
// grouped by Terraform's documentation sections so that a function is found where its docs are.
fn lookup_func(name: &str) -> Option<Func> {
    let func = match name {
        // Numbers.
        "abs" => Func::fixed(&["num"], |a| ok_number(a.number(0)?.abs())),
        "ceil" => Func::fixed(&["num"], |a| ceil_floor(a, true)),
        "floor" => Func::fixed(&["num"], |a| ceil_floor(a, false)),
        "log" => Func::fixed(&["num", "base"], |a| {
            float_result(a, a.float(0)?.ln() / a.float(1)?.ln())
        }),
        "max" => Func::variadic(&["numbers"], 1, |a| {
            extremum(a, std::cmp::Ordering::Greater)
        }),
        "min" => Func::variadic(&["numbers"], 1, |a| extremum(a, std::cmp::Ordering::Less)),
        "parseint" => Func::fixed(&["number", "base"], parseint),
        "pow" => Func::fixed(&["num", "power"], |a| {
            float_result(a, a.float(0)?.powf(a.float(1)?))
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
        // go-cty's join takes any number of lists and joins all their elements.
        "join" => Func::variadic(&["separator", "lists"], 2, |a| {
            let separator = a.string(0)?;
            let mut parts = Vec::new();
            for i in 1..a.len() {
                parts.extend(a.strings(i)?);
            }
            strings::within_string_limit(
                parts.iter().map(String::len).sum(),
                parts.len(),
                separator.len(),
            )?;
            ok_string(parts.join(&separator))
        }),
        "lower" => Func::fixed(&["str"], |a| ok_string(go_lower(&a.string(0)?))),
        "replace" => Func::fixed(&["str", "substr", "replace"], replace),
        "split" => Func::fixed(&["separator", "str"], split),
        "startswith" => Func::fixed(&["str", "prefix"], |a| {
            Ok(Value::Bool(a.string(0)?.starts_with(&a.string(1)?)))
        }),
        "strcontains" => Func::fixed(&["str", "substr"], |a| {
            Ok(Value::Bool(a.string(0)?.contains(&a.string(1)?)))
        }),
        "strrev" => Func::fixed(&["str"], |a| {
            use unicode_segmentation::UnicodeSegmentation as _;
            ok_string(a.string(0)?.graphemes(true).rev().collect::<String>())
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
        "upper" => Func::fixed(&["str"], |a| ok_string(go_upper(&a.string(0)?))),
        "regex" => Func::fixed(&["pattern", "string"], regex),
        "regexall" => Func::fixed(&["pattern", "string"], regexall),

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
        // go-cty compares without converting: `contains([1], "1")` is false.
        "contains" => Func::fixed(&["list", "value"], |a| {
            let (items, value) = (a.list(0)?, a.value(1)?);
            Ok(Value::Bool(items.iter().any(|item| item == value)))
        }),
        "distinct" => Func::fixed(&["list"], |a| {
            let items = a.unified_lists(0..1)?.concat();
            Ok(Value::List(distinct(&items)))
        }),
        "element" => Func::fixed(&["list", "index"], element),
        "flatten" => Func::fixed(&["list"], |a| {
            let mut out = Vec::new();
            flatten_into(a.list(0)?, &mut out);
            Ok(Value::List(out))
        }),
        "index" => Func::fixed(&["list", "value"], |a| {
            let (items, value) = (a.list(0)?, a.value(1)?);
            match items.iter().position(|item| item == value) {
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
            let lists = a.unified_lists(0..a.len())?;
            let others: Vec<_> = lists[1..].iter().map(|l| canonical_set(l)).collect();
            let first = set_of(&lists[0]);
            Ok(Value::List(
                first
                    .into_iter()
                    .filter(|v| others.iter().all(|set| set.contains(&canonical(v))))
                    .collect(),
            ))
        }),
        "setproduct" => Func::variadic(&["sets"], 2, setproduct),
        "setsubtract" => Func::fixed(&["a", "b"], |a| {
            let lists = a.unified_lists(0..2)?;
            let remove = canonical_set(&lists[1]);
            let first = set_of(&lists[0]);
            Ok(Value::List(
                first
                    .into_iter()
                    .filter(|v| !remove.contains(&canonical(v)))
                    .collect(),
            ))
        }),
        "setunion" => Func::variadic(&["first_set", "other_sets"], 1, |a| {
            let all = a.unified_lists(0..a.len())?.concat();
            Ok(Value::List(set_of(&all)))
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
        "jsonencode" => Func::fixed(&["val"], |a| {
            json_text(a.get(0))
                .map(Value::String)
                .map_err(CallError::call)
        }),
        "sha256" => Func::fixed(&["str"], |a| ok_string(hex(&Sha256::digest(a.string(0)?)))),
        "sha512" => Func::fixed(&["str"], |a| ok_string(hex(&Sha512::digest(a.string(0)?)))),
        "urlencode" => Func::fixed(&["str"], |a| ok_string(urlencode(&a.string(0)?))),
        "yamldecode" => Func::fixed(&["src"], yamldecode),
        "yamlencode" => Func::fixed(&["value"], yamlencode),
        "base64gzip" => Func::fixed(&["str"], base64gzip),
        "base64gunzip" => Func::fixed(&["str"], base64gunzip),
        "urldecode" => Func::fixed(&["str"], urldecode),
        "csvdecode" => Func::fixed(&["str"], csvdecode),
        "md5" => Func::fixed(&["str"], |a| {
            ok_string(hex(&md5::Md5::digest(a.string(0)?)))
        }),
        "sha1" => Func::fixed(&["str"], |a| {
            ok_string(hex(&sha1::Sha1::digest(a.string(0)?)))
        }),
        "uuidv5" => Func::fixed(&["namespace", "name"], uuidv5),
        "textencodebase64" => Func::fixed(&["string", "encoding_name"], textencodebase64),
        "textdecodebase64" => Func::fixed(&["source", "encoding_name"], textdecodebase64),
        "rsadecrypt" => Func::fixed(&["ciphertext", "privatekey"], rsadecrypt),
        // gpustack has no ephemeral values: every value comes through as it is.
        "ephemeralasnull" => Func::fixed(&["value"], |a| Ok(a.get(0).clone())),

        // IP networks.
        "cidrhost" => Func::fixed(&["prefix", "hostnum"], cidrhost),
        "cidrnetmask" => Func::fixed(&["prefix"], cidrnetmask),
        "cidrcontains" => Func::fixed(
            &["containing_prefix", "contained_ip_or_prefix"],
            cidrcontains,
        ),
        "cidrsubnet" => Func::fixed(&["prefix", "newbits", "netnum"], cidrsubnet),
        "cidrsubnets" => Func::variadic(&["prefix", "newbits"], 1, cidrsubnets),

        // Dates and times.
        "formatdate" => Func::fixed(&["spec", "timestamp"], formatdate),
        "timeadd" => Func::fixed(&["timestamp", "duration"], timeadd),
        "timecmp" => Func::fixed(&["timestamp_a", "timestamp_b"], timecmp),

        // Paths.
        "abspath" => Func::fixed(&["path"], abspath),
        "basename" => Func::fixed(&["path"], basename),
        "dirname" => Func::fixed(&["path"], dirname),
        "pathexpand" => Func::fixed(&["path"], pathexpand),

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

    /// The elements of the list arguments `range`, converted to the one element type they
    /// all unify to, as go-cty converts tuples to lists and sets (`[1, "a"]` to `["1", "a"]`).
    fn unified_lists(&self, range: std::ops::Range<usize>) -> CallResult<Vec<Vec<Value>>> {
        let lists = range
            .clone()
            .map(|i| self.list(i))
            .collect::<CallResult<Vec<_>>>()?;
        let types: Vec<crate::expr::unify::Ty> = lists
            .iter()
            .flat_map(|l| l.iter().map(crate::expr::unify::type_of))
            .collect();
        if types.is_empty() || types.iter().all(|t| *t == types[0]) {
            return Ok(lists.into_iter().map(<[Value]>::to_vec).collect());
        }
        let Some(ty) = crate::expr::unify::unify(&types, false) else {
            return Err(self.error(
                range.start,
                "all elements must be of the same type, or convert to one",
            ));
        };
        let target = ty.to_type();
        lists
            .into_iter()
            .map(|l| {
                l.iter()
                    .map(|v| target.convert(v).map_err(|e| self.error(range.start, e)))
                    .collect()
            })
            .collect()
    }

    /// An error of the call as a whole (no parameter to blame).
    fn call_error(&self, message: impl Into<String>) -> CallError {
        CallError::call(message)
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

    fn number(&self, i: usize) -> CallResult<Number> {
        as_number(self.value(i)?).ok_or_else(|| self.error(i, "number required"))
    }

    /// The argument as the nearest double, for the functions that compute in doubles.
    fn float(&self, i: usize) -> CallResult<f64> {
        Ok(self.number(i)?.to_f64())
    }

    /// A whole number that fits in 64 bits.
    fn int(&self, i: usize) -> CallResult<i64> {
        let n = self.number(i)?;
        if !n.is_integer() {
            Err(self.error(i, "a whole number is required"))
        } else {
            n.to_i64()
                .ok_or_else(|| self.error(i, "number is too large"))
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

fn as_number(v: &Value) -> Option<Number> {
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

fn ok_number(n: Number) -> CallResult {
    Ok(Value::Number(n))
}

fn ok_count(n: usize) -> CallResult {
    Ok(Value::number(n))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::string(x)
    }

    fn n(x: f64) -> Value {
        Value::number(x)
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
                message: "Function \"join\" expects at least 2 arguments, got 1.".into()
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
            "Invalid value for \"lists\" parameter: element 1 is null."
        );
    }

    #[test]
    fn type_errors_name_the_parameter() {
        let e = err("join", &[s(","), s("abc")]);
        assert_eq!(
            e,
            CallError {
                arg: Some(1),
                message: "Invalid value for \"lists\" parameter: list of string required.".into()
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
        // The elements unify to one type first, as go-cty converts a tuple to a list.
        assert_eq!(
            ok("distinct", &[list(&[n(1.0), s("1"), n(1.0)])]),
            list(&[s("1")])
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
    fn replace_is_plain_unless_the_substring_is_in_slashes() {
        assert_eq!(
            ok("replace", &[s("1 + 2 + 3"), s("+"), s("-")]),
            s("1 - 2 - 3")
        );
        assert_eq!(ok("replace", &[s("a/b"), s("/"), s("_")]), s("a_b"));
        assert_eq!(
            ok("replace", &[s("hello world"), s("/w.*d/"), s("everybody")]),
            s("hello everybody")
        );
        assert_eq!(
            ok(
                "replace",
                &[s("k=v"), s("/(?P<k>\\w)=(\\w)/"), s("$2=${k}")]
            ),
            s("v=k")
        );
        let e = err("replace", &[s("abc"), s("/(/"), s("x")]);
        assert_eq!(e.arg, Some(1));
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
            strs(&["a", "b", "c"])
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
            s("{\"a\":[1.5,true,null,\"x\"],\"b\":1}")
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
        // Keys come back in lexical order, as go-cty writes them.
        assert_eq!(
            ok("jsonencode", &[v]),
            s("{\"a\":[true,null,\"x\",2.5],\"z\":1}")
        );
        let e = err("jsondecode", &[s("{\"a\":")]);
        assert_eq!(e.arg, Some(0));
        assert!(e.message.contains("end of JSON input"), "{}", e.message);
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
        // Terraform's encoder: keys in lexical order, every string double-quoted.
        assert_eq!(
            text,
            s(
                "\"empty\": {}\n\"name\": \"gpu\"\n\"ratio\": 0.5\n\"replicas\": 2\n\"tags\":\n- \"a\"\n- \"true\"\n- \"\"\n"
            )
        );
        assert_eq!(ok("yamldecode", &[text]), v);
        assert_eq!(
            ok("yamldecode", &[s("a: 1\nb: [x, 2]\n3: yes\n")]),
            obj(&[
                ("3", Value::Bool(true)),
                ("a", n(1.0)),
                ("b", list(&[s("x"), n(2.0)])),
            ])
        );
        let e = err("yamldecode", &[s("a: [1")]);
        assert!(!e.message.is_empty());
        assert!(
            err("yamldecode", &[s("a: 1\n---\nb: 2\n")])
                .message
                .contains("only a single document")
        );
    }

    #[test]
    fn yamlencode_writes_as_terraform_and_reads_back() {
        let text = |v: Value| match ok("yamlencode", &[v]) {
            Value::String(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(s("plain text")), "\"plain text\"\n");
        assert_eq!(text(s("on")), "\"on\"\n");
        assert_eq!(text(s("tab\there\r")), "\"tab\\there\\r\"\n");
        assert_eq!(text(s("line1\nline2\n")), "|\n  line1\n  line2\n");
        // A plain scalar alone is an open-ended document.
        assert_eq!(text(Value::Null), "null\n...\n");
        assert_eq!(text(n(1e20)), "100000000000000000000\n...\n");
        assert_eq!(
            text(obj(&[(
                "yes",
                list(&[
                    obj(&[("a", n(1.0)), ("b", nums(&[2.0]))]),
                    strs(&["x", "z"])
                ])
            )])),
            "\"yes\":\n- \"a\": 1\n  \"b\":\n  - 2\n- - \"x\"\n  - \"z\"\n"
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
            ("numbers", nums(&[0.1, -3.0, 1e-7, 1e20])),
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
        // No conversion: a number is not among strings.
        assert_eq!(
            ok("contains", &[strs(&["1", "2"]), n(2.0)]),
            Value::Bool(false)
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
        assert!(
            err("range", &[n(1.0), n(4.0), n(-1.0)])
                .message
                .contains("end must be less")
        );
        assert_eq!(ok("range", &[n(0.0)]), nums(&[]));
        assert_eq!(
            ok("range", &[n(0.0), n(1.0), n(0.25)]),
            nums(&[0.0, 0.25, 0.5, 0.75])
        );
        assert_eq!(err("range", &[n(0.0), n(1.0), n(0.0)]).arg, Some(2));
        assert!(
            err("range", &[n(1025.0)])
                .message
                .contains("more than 1024")
        );
        // Big numbers step exactly where doubles would stall.
        let big = |t: &str| Value::Number(Number::parse(t).unwrap());
        assert_eq!(
            ok("range", &[big("1e17"), big("100000000000000002"), n(1.0)]),
            list(&[big("1e17"), big("100000000000000001")])
        );
        assert_eq!(
            ok("range", &[n(1024.0)]).as_list().map(<[Value]>::len),
            Some(1024)
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
        // A negative index counts from the end (OpenTofu's rule).
        assert_eq!(ok("element", &[l.clone(), n(-1.0)]), s("c"));
        assert_eq!(ok("element", &[l, n(-4.0)]), s("c"));
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
    fn set_operations_order_strings_lexically_as_terraform() {
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
        // Whole numbers of any size, as Go's big.Int prints them.
        assert_eq!(f("%x", 2f64.powi(80)), s("100000000000000000000"));
        assert!(
            err("format", &[s("%x"), n(0.5)])
                .message
                .contains("integer")
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
