//! What the utility providers (`random`, `null`, `time`) share: their objects live only in
//! the state, every argument as the provider documents it, and values chosen at random come
//! from the plan's seed, so that the plan shows what apply records.

use gpustack_protocol::{
    ApplyResourceChangeRequest, Attribute, PlanResourceChangeRequest, Schema, Type, Value,
};
use indexmap::IndexMap;
use rand::SeedableRng;

/// An attribute of an object value; null when absent.
pub(crate) fn attr(state: &Value, name: &str) -> Value {
    state
        .as_object()
        .and_then(|o| o.get(name))
        .cloned()
        .unwrap_or(Value::Null)
}

pub(crate) fn text(state: &Value, name: &str) -> Option<String> {
    match attr(state, name) {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A whole number argument; `default` when unset.
pub(crate) fn integer(state: &Value, name: &str, default: i64) -> i64 {
    match attr(state, name) {
        Value::Number(n) => n.to_i64().unwrap_or(default),
        _ => default,
    }
}

pub(crate) fn flag(state: &Value, name: &str, default: bool) -> bool {
    match attr(state, name) {
        Value::Bool(b) => b,
        _ => default,
    }
}

pub(crate) fn object(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<IndexMap<_, _>>(),
    )
}

/// `keepers` / `triggers`: a map of strings whose change replaces the object.
pub(crate) fn keepers(name: &str) -> Attribute {
    Attribute::optional(Type::map(Type::String))
        .force_new()
        .describe(match name {
            "keepers" => "Arbitrary values whose change makes a new value (a replacement).",
            _ => "Arbitrary values whose change replaces the resource.",
        })
}

/// The configured arguments that differ from the prior state and that the schema says
/// replace the object.
pub(crate) fn replaced_by(schema: &Schema, prior: &Value, config: &Value) -> Vec<String> {
    schema
        .attributes
        .iter()
        .filter(|(_, a)| a.force_new && a.is_configurable())
        // An optional computed argument left unset keeps what was computed.
        .filter(|(name, a)| !(a.computed && attr(config, name).is_null()))
        .filter(|(name, _)| attr(prior, name) != attr(config, name))
        .map(|(name, _)| name.clone())
        .collect()
}

/// A random generator only the plan's seed (and the stack's secret behind it) determines.
/// Called only where the request has a seed (see [`plan_made`]).
pub(crate) fn rng(request: &PlanResourceChangeRequest) -> rand_chacha::ChaCha20Rng {
    rand_chacha::ChaCha20Rng::from_seed(request.seed.unwrap_or_default())
}

/// The configuration with every computed attribute unknown: a plan without a seed.
pub(crate) fn unknown_computed(schema: &Schema, config: &Value) -> Value {
    let mut out = match config {
        Value::Object(o) => o.clone(),
        _ => IndexMap::new(),
    };
    for (name, a) in &schema.attributes {
        if a.computed && out.get(name).is_none_or(Value::is_null) {
            out.insert(name.clone(), Value::Unknown);
        }
    }
    Value::Object(out)
}

/// What apply records: the planned state, whose every value the plan already knew.
pub(crate) fn applied(request: &ApplyResourceChangeRequest) -> Option<Value> {
    request.planned_state.clone()
}

/// The apply of an object that lives only in the state: the planned state recorded.
pub(crate) fn apply_planned(
    request: &ApplyResourceChangeRequest,
) -> gpustack_protocol::ApplyResourceChangeResponse {
    gpustack_protocol::ApplyResourceChangeResponse {
        new_state: applied(request),
        diagnostics: vec![],
    }
}

/// The plan of a resource whose computed values all derive from its arguments and the seed:
/// kept from the prior state unless an argument that replaces it changed, else made anew by
/// `make` (the configuration in, the whole planned state out).
pub(crate) fn plan_made(
    schema: &Schema,
    request: &PlanResourceChangeRequest,
    make: impl FnOnce(&Value) -> Result<Value, String>,
) -> gpustack_protocol::PlanResourceChangeResponse {
    use gpustack_protocol::{Diagnostic, PlanResourceChangeResponse};
    // No seed: what would be made is unknown until a plan that will be applied.
    let make = |config: &Value| -> Result<Value, String> {
        if request.seed.is_none() {
            return Ok(unknown_computed(schema, config));
        }
        make(config)
    };
    if let Some(prior) = &request.prior_state {
        let requires_replace = replaced_by(schema, prior, &request.config);
        if requires_replace.is_empty() {
            // In-place arguments (none replace) take their configured values.
            let mut planned = prior.clone();
            if let (Value::Object(planned), Value::Object(config)) = (&mut planned, &request.config)
            {
                for (name, a) in &schema.attributes {
                    if let Some(value) = config
                        .get(name)
                        .filter(|_| a.is_configurable() && !a.computed)
                    {
                        planned.insert(name.clone(), value.clone());
                    }
                }
            }
            return PlanResourceChangeResponse {
                planned_state: planned,
                ..PlanResourceChangeResponse::default()
            };
        }
        return match make(&request.config) {
            Ok(planned) => PlanResourceChangeResponse {
                planned_state: planned,
                requires_replace,
                ..PlanResourceChangeResponse::default()
            },
            Err(e) => PlanResourceChangeResponse {
                planned_state: request.config.clone(),
                diagnostics: vec![Diagnostic::error("Invalid configuration", e)],
                ..PlanResourceChangeResponse::default()
            },
        };
    }
    match make(&request.config) {
        Ok(planned) => PlanResourceChangeResponse {
            planned_state: planned,
            ..PlanResourceChangeResponse::default()
        },
        Err(e) => PlanResourceChangeResponse {
            planned_state: request.config.clone(),
            diagnostics: vec![Diagnostic::error("Invalid configuration", e)],
            ..PlanResourceChangeResponse::default()
        },
    }
}

/// The configuration with the computed attributes set: what a `make` starts from.
pub(crate) fn with(
    config: &Value,
    computed: impl IntoIterator<Item = (&'static str, Value)>,
) -> Value {
    let mut out = match config {
        Value::Object(o) => o.clone(),
        _ => IndexMap::new(),
    };
    for (k, v) in computed {
        out.insert(k.to_owned(), v);
    }
    Value::Object(out)
}

/// An import's answer: the state, or why the ID cannot be imported.
pub(crate) fn import_answer(
    imported: Result<Value, String>,
) -> gpustack_protocol::ImportResourceResponse {
    use gpustack_protocol::{Diagnostic, ImportResourceResponse};
    match imported {
        Ok(state) => ImportResourceResponse {
            state: Some(state),
            diagnostics: vec![],
        },
        Err(e) => ImportResourceResponse {
            state: None,
            diagnostics: vec![Diagnostic::error("Cannot import", e)],
        },
    }
}

/// The answer of a provider without data sources to a read of one.
pub(crate) fn no_data_source(
    provider: &str,
    request: gpustack_protocol::ReadDataSourceRequest,
) -> gpustack_protocol::ReadDataSourceResponse {
    gpustack_protocol::ReadDataSourceResponse {
        state: request.config,
        diagnostics: vec![gpustack_protocol::Diagnostic::error(
            "Unknown data source",
            format!(
                "The {provider} provider has no data source \"{}\".",
                request.type_name
            ),
        )],
    }
}

/// A read of objects whose values the provider drew from the plan's seed: each state as it
/// is, with its `secrets` (kept in the state only as digests) drawn again by `make` (the type,
/// the state as the configuration, a request with the object's seed) where the request has
/// the seed. The engine keeps a value drawn again only where its digest is the state's.
pub(crate) fn redrawn(
    request: gpustack_protocol::ReadResourcesRequest,
    secrets: &[&str],
    make: impl Fn(&str, &Value, &PlanResourceChangeRequest) -> Result<Value, String>,
) -> gpustack_protocol::ReadResourcesResponse {
    let mut states = Vec::with_capacity(request.states.len());
    for (i, state) in request.states.into_iter().enumerate() {
        let Some(seed) = request.seeds.get(i).copied().flatten() else {
            states.push(Some(state));
            continue;
        };
        let again = PlanResourceChangeRequest {
            type_name: request.type_name.clone(),
            prior_state: None,
            config: state.clone(),
            for_apply: false,
            preview: false,
            sensitive_paths: vec![],
            owner: String::new(),
            seed: Some(seed),
            plan_time: String::new(),
        };
        let drawn = match make(&request.type_name, &state, &again) {
            Ok(drawn) => drawn,
            Err(_) => {
                states.push(Some(state));
                continue;
            }
        };
        let values: Vec<(String, Value)> = secrets
            .iter()
            .filter(|name| !attr(&drawn, name).is_unknown())
            .map(|name| ((*name).to_owned(), attr(&drawn, name)))
            .collect();
        let mut state = state;
        if let Value::Object(attributes) = &mut state {
            for (name, value) in values {
                if attributes.contains_key(&name) {
                    attributes.insert(name, value);
                }
            }
        }
        states.push(Some(state));
    }
    gpustack_protocol::ReadResourcesResponse {
        states,
        ..gpustack_protocol::ReadResourcesResponse::default()
    }
}

/// The answer of a provider without resources to a plan of one.
pub(crate) fn no_resource(
    provider: &str,
    request: PlanResourceChangeRequest,
) -> gpustack_protocol::PlanResourceChangeResponse {
    gpustack_protocol::PlanResourceChangeResponse {
        planned_state: request.config,
        diagnostics: vec![gpustack_protocol::Diagnostic::error(
            "Unknown resource type",
            format!(
                "The {provider} provider has no resource \"{}\".",
                request.type_name
            ),
        )],
        ..gpustack_protocol::PlanResourceChangeResponse::default()
    }
}
