//! hashicorp/random (v3): `random_id`, `random_bytes`, `random_integer`, `random_password`,
//! `random_string`, `random_pet`, `random_shuffle`, `random_uuid`, `random_uuid4`,
//! `random_uuid7`, every argument as the provider documents it, each one replacing the value
//! when it changes (as `keepers` does).
//!
//! Terraform leaves the values unknown until apply; gpustack draws them when the plan is made,
//! from the plan's seed (a secret only the stack's state can derive), so that the plan shows
//! what apply records and a saved plan applies exactly. A `seed` argument (random_integer,
//! random_shuffle) makes the value depend on that argument alone, as in Terraform; the values
//! differ from Terraform's for the same seed (Terraform uses Go's generator).

use crate::state_only::{attr, flag, integer, keepers, object, plan_made, rng, text, with};
use base64::Engine;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(crate) struct Random;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Random))
}

const NUMERIC: &str = "0123456789";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
/// The provider's special characters when `override_special` is not set.
const SPECIAL: &str = "!@#$%&*()-_=+[]{}<>:?";

fn replacing(ty: Type) -> Attribute {
    Attribute::optional(ty).force_new()
}

fn string_schema(description: &str, password: bool) -> Schema {
    let flag =
        |what: &str| replacing(Type::Bool).describe(format!("Include {what} (default true)."));
    let minimum = |what: &str| {
        replacing(Type::Number).describe(format!("At least this many {what} (default 0)."))
    };
    let result = Attribute::computed(Type::String).describe("The generated string.");
    let mut schema = Schema::new(description)
        .attr("keepers", keepers("keepers"))
        .attr(
            "length",
            Attribute::required(Type::Number)
                .force_new()
                .describe("The length of the string."),
        )
        .attr("special", flag("special characters"))
        .attr("upper", flag("upper-case letters"))
        .attr("lower", flag("lower-case letters"))
        .attr("numeric", flag("digits"))
        .attr(
            "number",
            flag("digits").describe("Deprecated: numeric. Include digits (default true)."),
        )
        .attr("min_numeric", minimum("digits"))
        .attr("min_upper", minimum("upper-case letters"))
        .attr("min_lower", minimum("lower-case letters"))
        .attr("min_special", minimum("special characters"))
        .attr(
            "override_special",
            replacing(Type::String)
                .describe("The special characters to use instead of the default."),
        )
        .attr("result", if password { result.drawn() } else { result })
        .attr("id", Attribute::computed(Type::String));
    if password {
        schema = schema.attr(
            "bcrypt_hash",
            Attribute::computed(Type::String)
                .drawn()
                .describe("A bcrypt hash of the result."),
        );
    }
    schema
}

fn schemas() -> ProviderSchema {
    let id = Schema::new("Random bytes, for unique names: base64, hex and decimal forms.")
        .attr("keepers", keepers("keepers"))
        .attr(
            "byte_length",
            Attribute::required(Type::Number)
                .force_new()
                .describe("How many random bytes."),
        )
        .attr(
            "prefix",
            replacing(Type::String).describe("Put before b64_url, b64_std, hex and dec."),
        )
        .attr("id", Attribute::computed(Type::String))
        .attr("b64_url", Attribute::computed(Type::String))
        .attr("b64_std", Attribute::computed(Type::String))
        .attr("hex", Attribute::computed(Type::String))
        .attr("dec", Attribute::computed(Type::String));
    let bytes = Schema::new("Random bytes, as base64 and hex (sensitive).")
        .attr("keepers", keepers("keepers"))
        .attr(
            "length",
            Attribute::required(Type::Number)
                .force_new()
                .describe("How many random bytes."),
        )
        .attr("base64", Attribute::computed(Type::String).drawn())
        .attr("hex", Attribute::computed(Type::String).drawn())
        .attr("id", Attribute::computed(Type::String));
    let integer = Schema::new("A random integer between min and max, both included.")
        .attr("keepers", keepers("keepers"))
        .attr("min", Attribute::required(Type::Number).force_new())
        .attr("max", Attribute::required(Type::Number).force_new())
        .attr(
            "seed",
            replacing(Type::String).describe("The value depends on this seed alone."),
        )
        .attr("result", Attribute::computed(Type::Number))
        .attr("id", Attribute::computed(Type::String));
    let pet = Schema::new("A random pet name: adverb, adjective and animal words.")
        .attr("keepers", keepers("keepers"))
        .attr(
            "length",
            replacing(Type::Number).describe("How many words (default 2)."),
        )
        .attr("prefix", replacing(Type::String))
        .attr(
            "separator",
            replacing(Type::String).describe("Between the words (default \"-\")."),
        )
        .attr("id", Attribute::computed(Type::String));
    let shuffle = Schema::new("A random permutation of a list of strings.")
        .attr("keepers", keepers("keepers"))
        .attr(
            "input",
            Attribute::required(Type::list(Type::String)).force_new(),
        )
        .attr(
            "seed",
            replacing(Type::String).describe("The order depends on this seed alone."),
        )
        .attr(
            "result_count",
            replacing(Type::Number).describe("How many items (default: as many as input)."),
        )
        .attr("result", Attribute::computed(Type::list(Type::String)))
        .attr("id", Attribute::computed(Type::String));
    let uuid = |what: &str| {
        Schema::new(what)
            .attr("keepers", keepers("keepers"))
            .attr("result", Attribute::computed(Type::String))
            .attr("id", Attribute::computed(Type::String))
    };
    ProviderSchema {
        name: "random".into(),
        config: provider_config("hashicorp/random: values chosen at random, kept in the state."),
        resources: [
            ("random_id".to_owned(), id),
            ("random_bytes".to_owned(), bytes),
            ("random_integer".to_owned(), integer),
            (
                "random_password".to_owned(),
                string_schema("A random password (sensitive), with its bcrypt hash.", true),
            ),
            (
                "random_string".to_owned(),
                string_schema(
                    "A random string (not sensitive: use random_password for secrets).",
                    false,
                ),
            ),
            ("random_pet".to_owned(), pet),
            ("random_shuffle".to_owned(), shuffle),
            ("random_uuid".to_owned(), uuid("A random version 4 UUID.")),
            ("random_uuid4".to_owned(), uuid("A random version 4 UUID.")),
            (
                "random_uuid7".to_owned(),
                uuid("A version 7 UUID: the plan's time, then random bits."),
            ),
        ]
        .into(),
        data_sources: Default::default(),
    }
}

#[async_trait::async_trait]
impl Family for Random {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "random",
            &[
                "random_id",
                "random_bytes",
                "random_integer",
                "random_password",
                "random_string",
                "random_pet",
                "random_shuffle",
                "random_uuid",
                "random_uuid4",
                "random_uuid7",
            ],
            &[],
        )
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        match type_name {
            "random_id" => check.range("byte_length", 1.0, 1024.0 * 1024.0),
            "random_bytes" => check.range("length", 1.0, 1024.0 * 1024.0),
            "random_password" | "random_string" => {
                check.range("length", 1.0, 1024.0 * 1024.0);
                if let Err(e) = string_params(check.config()) {
                    check.error("length", "Invalid length", e);
                }
            }
            "random_integer" => {
                check.min_not_above_max("min", "max", "Invalid range");
            }
            "random_pet" => check.range("length", 1.0, 1024.0),
            "random_shuffle" => check.range("result_count", 0.0, 1024.0 * 1024.0),
            _ => {}
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// The character sets and minimums of random_password and random_string.
struct StringParams {
    length: usize,
    sets: Vec<(String, usize)>,
    all: String,
}

fn string_params(config: &Value) -> Result<StringParams, String> {
    let length = integer(config, "length", 0);
    let special = text(config, "override_special")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| SPECIAL.to_owned());
    let numeric = flag(config, "numeric", true) && flag(config, "number", true);
    let mut all = String::new();
    for (on, chars) in [
        (flag(config, "upper", true), UPPER),
        (flag(config, "lower", true), LOWER),
        (numeric, NUMERIC),
        (flag(config, "special", true), special.as_str()),
    ] {
        if on {
            all.push_str(chars);
        }
    }
    let sets = vec![
        (NUMERIC.to_owned(), integer(config, "min_numeric", 0)),
        (LOWER.to_owned(), integer(config, "min_lower", 0)),
        (UPPER.to_owned(), integer(config, "min_upper", 0)),
        (special.clone(), integer(config, "min_special", 0)),
    ];
    let minimums: i64 = sets.iter().map(|(_, n)| (*n).max(0)).sum();
    if length < minimums {
        return Err(format!(
            "length ({length}) must be at least min_upper + min_lower + min_numeric + min_special ({minimums})"
        ));
    }
    if all.is_empty() && length > minimums {
        return Err(
            "no character set is enabled: set one of upper, lower, numeric or special".into(),
        );
    }
    Ok(StringParams {
        length: usize::try_from(length).unwrap_or(0),
        sets: sets
            .into_iter()
            .map(|(chars, n)| (chars, usize::try_from(n.max(0)).unwrap_or(0)))
            .collect(),
        all,
    })
}

/// As the provider makes it: the minimums of each set first, the rest from every enabled set,
/// then shuffled.
fn random_string(params: &StringParams, rng: &mut impl Rng) -> String {
    let pick = |chars: &str, n: usize, rng: &mut dyn RngCore| -> Vec<char> {
        let chars: Vec<char> = chars.chars().collect();
        (0..n)
            .filter_map(|_| chars.get(rng.random_range(0..chars.len().max(1))).copied())
            .collect()
    };
    let mut out: Vec<char> = Vec::with_capacity(params.length);
    for (chars, n) in &params.sets {
        out.extend(pick(chars, *n, rng));
    }
    let rest = params.length.saturating_sub(out.len());
    out.extend(pick(&params.all, rest, rng));
    out.shuffle(rng);
    out.into_iter().collect()
}

/// The provider's cost: Go's `bcrypt.DefaultCost`.
const GO_DEFAULT_COST: u32 = 10;

/// A bcrypt hash whose salt comes from the plan's generator, so that the final plan at apply
/// hashes the same way.
fn bcrypt_of(password: &str, rng: &mut impl Rng) -> Result<String, String> {
    let mut salt = [0u8; 16];
    rng.fill_bytes(&mut salt);
    bcrypt::hash_with_salt(password, GO_DEFAULT_COST, salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("bcrypt: {e}"))
}

/// A generator that depends on a `seed` argument alone, where one is set.
fn seeded(config: &Value, request: &PlanResourceChangeRequest) -> rand_chacha::ChaCha20Rng {
    match text(config, "seed") {
        Some(seed) => {
            use sha2::Digest;
            rand_chacha::ChaCha20Rng::from_seed(sha2::Sha256::digest(seed.as_bytes()).into())
        }
        None => rng(request),
    }
}

fn make(
    type_name: &str,
    config: &Value,
    request: &PlanResourceChangeRequest,
) -> Result<Value, String> {
    let mut rng = rng(request);
    match type_name {
        "random_id" => {
            let n = integer(config, "byte_length", 0);
            let mut bytes =
                vec![0u8; usize::try_from(n).map_err(|_| "byte_length must be at least 1")?];
            rng.fill_bytes(&mut bytes);
            let prefix = text(config, "prefix").unwrap_or_default();
            let b64_url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
            let b64_std = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let dec = decimal(&bytes);
            Ok(with(
                config,
                [
                    ("id", Value::String(b64_url.clone())),
                    ("b64_url", Value::String(format!("{prefix}{b64_url}"))),
                    ("b64_std", Value::String(format!("{prefix}{b64_std}"))),
                    ("hex", Value::String(format!("{prefix}{hex}"))),
                    ("dec", Value::String(format!("{prefix}{dec}"))),
                ],
            ))
        }
        "random_bytes" => {
            let n = usize::try_from(integer(config, "length", 0))
                .map_err(|_| "length must be at least 1")?;
            let mut bytes = vec![0u8; n];
            rng.fill_bytes(&mut bytes);
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            Ok(with(
                config,
                [
                    (
                        "base64",
                        Value::sensitive(Value::String(
                            base64::engine::general_purpose::STANDARD.encode(&bytes),
                        )),
                    ),
                    ("hex", Value::sensitive(Value::String(hex))),
                    ("id", Value::string("none")),
                ],
            ))
        }
        "random_integer" => {
            let (min, max) = (integer(config, "min", 0), integer(config, "max", 0));
            if min > max {
                return Err(format!("min ({min}) is greater than max ({max})"));
            }
            let result = seeded(config, request).random_range(min..=max);
            Ok(with(
                config,
                [
                    ("result", Value::number(result as f64)),
                    ("id", Value::String(result.to_string())),
                ],
            ))
        }
        "random_password" | "random_string" => {
            let params = string_params(config)?;
            let result = random_string(&params, &mut rng);
            if type_name == "random_string" {
                return Ok(with(
                    config,
                    [
                        ("result", Value::String(result.clone())),
                        ("id", Value::String(result)),
                    ],
                ));
            }
            let hash = bcrypt_of(&result, &mut rng)?;
            Ok(with(
                config,
                [
                    ("result", Value::sensitive(Value::String(result))),
                    ("bcrypt_hash", Value::sensitive(Value::String(hash))),
                    ("id", Value::string("none")),
                ],
            ))
        }
        "random_pet" => {
            let length = integer(config, "length", 2).max(1);
            let separator = text(config, "separator").unwrap_or_else(|| "-".to_owned());
            let mut words: Vec<String> = text(config, "prefix").into_iter().collect();
            let mut word = |list: &[&str]| list[rng.random_range(0..list.len())].to_owned();
            let adverbs = usize::try_from(length.saturating_sub(2)).unwrap_or(0);
            for _ in 0..adverbs {
                words.push(word(crate::words::ADVERBS));
            }
            if length >= 2 {
                words.push(word(crate::words::ADJECTIVES));
            }
            words.push(word(crate::words::NAMES));
            Ok(with(
                config,
                [("id", Value::String(words.join(&separator)))],
            ))
        }
        "random_shuffle" => {
            let input: Vec<Value> = match attr(config, "input") {
                Value::List(items) => items,
                _ => Vec::new(),
            };
            let count = match attr(config, "result_count") {
                Value::Number(n) => usize::try_from(n.to_i64().unwrap_or(0)).unwrap_or(0),
                _ => input.len(),
            };
            let mut rng = seeded(config, request);
            let mut result = Vec::with_capacity(count);
            // More than the input repeats it, each round in a new order.
            while result.len() < count && !input.is_empty() {
                let mut round = input.clone();
                round.shuffle(&mut rng);
                let take = (count - result.len()).min(round.len());
                result.extend(round.into_iter().take(take));
            }
            Ok(with(
                config,
                [("result", Value::List(result)), ("id", Value::string("-"))],
            ))
        }
        "random_uuid" | "random_uuid4" => {
            let mut bytes = [0u8; 16];
            rng.fill_bytes(&mut bytes);
            let uuid = uuid::Builder::from_random_bytes(bytes)
                .into_uuid()
                .to_string();
            Ok(with(
                config,
                [
                    ("result", Value::String(uuid.clone())),
                    ("id", Value::String(uuid)),
                ],
            ))
        }
        "random_uuid7" => {
            // RFC 9562's layout: 48 bits of milliseconds, then random bits.
            let mut bytes = [0u8; 16];
            rng.fill_bytes(&mut bytes);
            let millis = plan_millis(&request.plan_time).to_be_bytes();
            bytes[..6].copy_from_slice(&millis[2..]);
            let uuid = uuid::Builder::from_bytes(bytes)
                .with_version(uuid::Version::SortRand)
                .with_variant(uuid::Variant::RFC4122)
                .into_uuid()
                .to_string();
            Ok(with(
                config,
                [
                    ("result", Value::String(uuid.clone())),
                    ("id", Value::String(uuid)),
                ],
            ))
        }
        other => Err(format!(
            "the random provider has no resource type \"{other}\""
        )),
    }
}

/// The plan's time in milliseconds since the epoch (0 when it cannot be read).
fn plan_millis(plan_time: &str) -> u64 {
    crate::time::parse_rfc3339(plan_time)
        .map(|t| u64::try_from(t.unix).unwrap_or(0) * 1000)
        .unwrap_or(0)
}

/// Big-endian bytes as a decimal number.
fn decimal(bytes: &[u8]) -> String {
    // Repeated division by ten of the base-256 digits.
    let mut digits: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if digits.is_empty() {
        return "0".to_owned();
    }
    let mut out = Vec::new();
    while !digits.is_empty() {
        let mut remainder = 0u32;
        let mut next = Vec::with_capacity(digits.len());
        for d in &digits {
            let acc = remainder * 256 + u32::from(*d);
            let q = acc / 10;
            remainder = acc % 10;
            if !(next.is_empty() && q == 0) {
                next.push(u8::try_from(q).unwrap_or(0));
            }
        }
        out.push(char::from(b'0' + u8::try_from(remainder).unwrap_or(0)));
        digits = next;
    }
    out.iter().rev().collect()
}

#[async_trait::async_trait]
impl Provider for Random {
    /// The secret values (a password, its hash, bytes) drawn again from the object's seed.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        crate::state_only::redrawn(request, &["result", "bcrypt_hash", "base64", "hex"], make)
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = schemas()
            .into_type(gpustack_protocol::ResourceMode::Managed, &request.type_name)
            .unwrap_or_default();
        let type_name = request.type_name.clone();
        plan_made(&schema, &request, |config| {
            make(&type_name, config, &request)
        })
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        crate::state_only::apply_planned(&request)
    }

    /// As the provider imports: a password or string by its value, an id by its base64url
    /// form (`prefix,b64url` with a prefix), an integer as `result,min,max[,seed]`, a UUID by
    /// itself. What the import cannot know (length, character sets) is read from the value.
    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        crate::state_only::import_answer(import(&request.type_name, &request.id))
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        crate::state_only::no_data_source("random", request)
    }
}

fn import(type_name: &str, id: &str) -> Result<Value, String> {
    match type_name {
        "random_password" | "random_string" => {
            let length = id.chars().count();
            let has = |set: &str| id.chars().filter(|c| set.contains(*c)).count();
            let special = id.chars().any(|c| !c.is_ascii_alphanumeric());
            let result = if type_name == "random_password" {
                Value::sensitive(Value::string(id))
            } else {
                Value::string(id)
            };
            let mut pairs = vec![
                ("length", Value::number(length as f64)),
                ("special", Value::Bool(special)),
                ("upper", Value::Bool(has(UPPER) > 0)),
                ("lower", Value::Bool(has(LOWER) > 0)),
                ("numeric", Value::Bool(has(NUMERIC) > 0)),
                ("number", Value::Bool(has(NUMERIC) > 0)),
                ("min_numeric", Value::number(0.0)),
                ("min_upper", Value::number(0.0)),
                ("min_lower", Value::number(0.0)),
                ("min_special", Value::number(0.0)),
                ("override_special", Value::Null),
                ("keepers", Value::Null),
                ("result", result),
            ];
            if type_name == "random_password" {
                // An import makes no plan: the hash's salt comes from the system.
                let mut seed = [0u8; 32];
                seed[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                seed[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                let mut rng = rand_chacha::ChaCha20Rng::from_seed(seed);
                pairs.push((
                    "bcrypt_hash",
                    Value::sensitive(Value::String(bcrypt_of(id, &mut rng)?)),
                ));
                pairs.push(("id", Value::string("none")));
            } else {
                pairs.push(("id", Value::string(id)));
            }
            Ok(object(pairs))
        }
        "random_id" => {
            let (prefix, b64) = match id.split_once(',') {
                Some((prefix, b64)) => (prefix, b64),
                None => ("", id),
            };
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(b64)
                .map_err(|e| format!("\"{b64}\" is not base64url: {e}"))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            Ok(object([
                ("keepers", Value::Null),
                ("byte_length", Value::number(bytes.len() as f64)),
                (
                    "prefix",
                    if prefix.is_empty() {
                        Value::Null
                    } else {
                        Value::string(prefix)
                    },
                ),
                ("id", Value::string(b64)),
                ("b64_url", Value::String(format!("{prefix}{b64}"))),
                (
                    "b64_std",
                    Value::String(format!(
                        "{prefix}{}",
                        base64::engine::general_purpose::STANDARD.encode(&bytes)
                    )),
                ),
                ("hex", Value::String(format!("{prefix}{hex}"))),
                ("dec", Value::String(format!("{prefix}{}", decimal(&bytes)))),
            ]))
        }
        "random_integer" => {
            let parts: Vec<&str> = id.split(',').collect();
            let number = |s: &str| {
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("\"{id}\" is not result,min,max[,seed]"))
            };
            let [result, min, max, rest @ ..] = parts.as_slice() else {
                return Err(format!("\"{id}\" is not result,min,max[,seed]"));
            };
            let result = number(result)?;
            Ok(object([
                ("keepers", Value::Null),
                ("min", Value::number(number(min)? as f64)),
                ("max", Value::number(number(max)? as f64)),
                (
                    "seed",
                    rest.first().map_or(Value::Null, |s| Value::string(*s)),
                ),
                ("result", Value::number(result as f64)),
                ("id", Value::String(result.to_string())),
            ]))
        }
        "random_uuid" | "random_uuid4" | "random_uuid7" => {
            let uuid =
                uuid::Uuid::parse_str(id).map_err(|e| format!("\"{id}\" is not a UUID: {e}"))?;
            let uuid = uuid.to_string();
            Ok(object([
                ("keepers", Value::Null),
                ("result", Value::String(uuid.clone())),
                ("id", Value::String(uuid)),
            ]))
        }
        other => Err(format!(
            "{other} cannot be imported (the provider does not import it either)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(type_name: &str, config: Value, seed: u8) -> PlanResourceChangeRequest {
        PlanResourceChangeRequest {
            type_name: type_name.into(),
            prior_state: None,
            config,
            for_apply: false,
            preview: true,
            sensitive_paths: vec![],
            owner: String::new(),
            seed: Some([seed; 32]),
            plan_time: "2026-12-05T10:00:00Z".into(),
        }
    }

    fn plan(type_name: &str, config: Value, seed: u8) -> Value {
        let response = futures::executor::block_on(
            Random.plan_resource_change(request(type_name, config, seed)),
        );
        assert!(
            response.diagnostics.is_empty(),
            "{:?}",
            response.diagnostics
        );
        response.planned_state
    }

    #[test]
    fn a_password_follows_its_arguments_and_the_seed_alone() {
        let config = object([
            ("length", Value::number(24.0)),
            ("min_special", Value::number(3.0)),
            ("min_numeric", Value::number(2.0)),
            ("override_special", Value::string("#!")),
            ("upper", Value::Bool(false)),
        ]);
        let planned = plan("random_password", config.clone(), 7);
        let result = attr(&planned, "result").unmark_deep().0;
        let Value::String(password) = result else {
            panic!("{planned:?}")
        };
        assert_eq!(password.chars().count(), 24);
        assert!(
            password.chars().filter(|c| "#!".contains(*c)).count() >= 3,
            "{password}"
        );
        assert!(
            password.chars().filter(char::is_ascii_digit).count() >= 2,
            "{password}"
        );
        assert!(
            !password.chars().any(|c| c.is_ascii_uppercase()),
            "{password}"
        );
        assert!(
            password
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "#!".contains(c))
        );
        let Value::String(hash) = attr(&planned, "bcrypt_hash").unmark_deep().0 else {
            panic!()
        };
        assert!(bcrypt::verify(&password, &hash).unwrap());
        // The same seed, the same plan (plan and apply agree); another seed, another value.
        assert_eq!(plan("random_password", config.clone(), 7), planned);
        assert_ne!(
            attr(&plan("random_password", config, 8), "result"),
            attr(&planned, "result")
        );
    }

    #[test]
    fn minimums_beyond_the_length_are_refused() {
        let config = object([
            ("length", Value::number(2.0)),
            ("min_upper", Value::number(3.0)),
        ]);
        assert!(string_params(&config).is_err());
    }

    #[test]
    fn an_id_has_its_forms_and_a_seeded_integer_its_seed_alone() {
        let planned = plan(
            "random_id",
            object([
                ("byte_length", Value::number(8.0)),
                ("prefix", Value::string("p-")),
            ]),
            1,
        );
        let Value::String(hex) = attr(&planned, "hex") else {
            panic!()
        };
        assert_eq!(hex.len(), 2 + 16);
        let Value::String(id) = attr(&planned, "id") else {
            panic!()
        };
        assert_eq!(attr(&planned, "b64_url"), Value::String(format!("p-{id}")));
        let seeded = object([
            ("min", Value::number(1.0)),
            ("max", Value::number(1000.0)),
            ("seed", Value::string("s")),
        ]);
        assert_eq!(
            attr(&plan("random_integer", seeded.clone(), 1), "result"),
            attr(&plan("random_integer", seeded, 2), "result")
        );
        assert_eq!(decimal(&[1, 0]), "256");
        assert_eq!(decimal(&[0, 0]), "0");
    }

    #[test]
    fn a_shuffle_keeps_the_items_and_a_pet_its_words() {
        let input = Value::List(["a", "b", "c", "d"].map(Value::string).to_vec());
        let planned = plan("random_shuffle", object([("input", input)]), 3);
        let Value::List(mut items) = attr(&planned, "result") else {
            panic!()
        };
        items.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(items, ["a", "b", "c", "d"].map(Value::string).to_vec());
        let pet = plan(
            "random_pet",
            object([
                ("length", Value::number(3.0)),
                ("separator", Value::string("_")),
            ]),
            3,
        );
        let Value::String(name) = attr(&pet, "id") else {
            panic!()
        };
        assert_eq!(name.split('_').count(), 3, "{name}");
    }

    #[test]
    fn a_changed_argument_replaces_and_an_unchanged_one_keeps_the_value() {
        let config = object([("length", Value::number(8.0))]);
        let first = plan("random_string", config.clone(), 1);
        let mut again = request("random_string", config, 2);
        again.prior_state = Some(first.clone());
        let kept = futures::executor::block_on(Random.plan_resource_change(again.clone()));
        assert_eq!(kept.planned_state, first);
        again.config = object([("length", Value::number(9.0))]);
        let replaced = futures::executor::block_on(Random.plan_resource_change(again));
        assert_eq!(replaced.requires_replace, vec!["length".to_owned()]);
    }

    #[test]
    fn imports_read_the_value() {
        let state = import("random_integer", "15,1,20").unwrap();
        assert_eq!(attr(&state, "result"), Value::number(15.0));
        assert!(import("random_integer", "15").is_err());
        let state = import("random_string", "abcDEF12").unwrap();
        assert_eq!(attr(&state, "length"), Value::number(8.0));
        assert_eq!(attr(&state, "special"), Value::Bool(false));
    }
}
