//! Encodings: JSON, base64 and YAML, as Terraform writes and reads them.

use super::*;

/// Compact JSON as Terraform's jsonencode writes it, escaping `<`, `>`, `&`, U+2028 and U+2029.
pub(super) fn json_text(v: &Value) -> String {
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

pub(super) fn jsondecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| a.error(0, e))?;
    Ok(Value::from_json(&json))
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

pub(super) fn yamldecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let mut yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| a.error(0, e))?;
    yaml.apply_merge().map_err(|e| a.error(0, e))?;
    from_yaml(yaml).map_err(|e| a.error(0, e))
}

pub(super) fn from_yaml(yaml: serde_yaml_ng::Value) -> Result<Value, String> {
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

pub(super) fn yamlencode(a: &Args<'_>) -> CallResult {
    let mut out = String::new();
    yaml_block(a.get(0), 0, &mut out);
    Ok(Value::String(out))
}

/// Writes `v` as YAML in block style, its lines starting at `indent`. serde_yaml_ng's emitter
/// is not used because it leaves YAML 1.1 booleans such as `on` and `yes` unquoted, which
/// Kubernetes' YAML 1.1 parsers then read as bools.
pub(super) fn yaml_block(v: &Value, indent: usize, out: &mut String) {
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
pub(super) fn yaml_nested_item(item: &Value, indent: usize, out: &mut String) {
    let mut nested = String::new();
    yaml_block(item, indent + 2, &mut nested);
    out.push(' ');
    out.push_str(nested.get(indent + 2..).unwrap_or(&nested));
}

pub(super) fn yaml_inline_line(v: &Value, indent: usize, out: &mut String) {
    out.push(' ');
    out.push_str(&yaml_inline(v, indent));
    out.push('\n');
}

pub(super) fn yaml_inline(v: &Value, indent: usize) -> String {
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
pub(super) fn yaml_string(s: &str, indent: usize, allow_literal: bool) -> String {
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

pub(super) fn yaml_literal_fits(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n'])
        && s.chars()
            .all(|c| c == '\n' || c == '\t' || !yaml_needs_escape(c))
}

pub(super) fn yaml_plain_fits(s: &str) -> bool {
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
pub(super) fn yaml_needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}')
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

/// CSV with a header line, as Terraform's `csvdecode`: a list of objects whose attributes are
/// the header's names, every value a string; every record must have the header's fields.
pub(super) fn csvdecode(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
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
