//! What plan and apply share about resource instances: expanding a block by count/for_each,
//! shaping instance values the way references see them, and reporting provider diagnostics.

use crate::evaluate::{EvalContext, Expansion, Repetition};
use gpustack_lang::address::strip_instance_key;
use gpustack_lang::config::{Lifecycle, Resource};
use gpustack_lang::diag::{Diag, Diags};
use gpustack_lang::source::Span;
use gpustack_protocol::{Diagnostic, Value};
use gpustack_state::ResourceState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstanceKey {
    Single,
    Index(usize),
    Key(String),
}

impl InstanceKey {
    /// The key an instance address ends with (`""`, `[0]`, `["a"]`).
    pub(crate) fn of_suffix(suffix: &str) -> Self {
        let Some(inner) = suffix.strip_prefix('[').and_then(|s| s.strip_suffix(']')) else {
            return InstanceKey::Single;
        };
        match inner.parse::<usize>() {
            Ok(index) => InstanceKey::Index(index),
            Err(_) => serde_json::from_str(inner).map_or(InstanceKey::Single, InstanceKey::Key),
        }
    }

    /// `count.index` or `each.key` of the instance (`each.value` unknown here).
    pub(crate) fn repetition(&self) -> Repetition {
        let mut repetition = Repetition::default();
        match self {
            InstanceKey::Single => {}
            InstanceKey::Index(i) => repetition.count_index = Some(Value::number(*i as f64)),
            InstanceKey::Key(k) => {
                repetition.each = Some((Value::String(k.clone()), Value::Unknown));
            }
        }
        repetition
    }

    /// `""`, `[0]` or `["a"]`, as instance addresses end.
    pub(crate) fn suffix(&self) -> String {
        match self {
            InstanceKey::Single => String::new(),
            InstanceKey::Index(i) => format!("[{i}]"),
            InstanceKey::Key(k) => format!("[{}]", Value::string(k.clone())),
        }
    }
}

/// One instance of a resource block: its key, full address and repetition bindings.
pub(crate) struct Instance {
    pub(crate) key: InstanceKey,
    pub(crate) address: String,
    pub(crate) repetition: Option<Repetition>,
}

/// The instances a resource block expands to; `None`, with an error, when count or for_each
/// is not known (a plan must know how many instances there are).
pub(crate) fn expand(
    walk: &mut EvalContext<'_>,
    module: usize,
    r: &Resource,
    config_address: &str,
) -> Option<Vec<Instance>> {
    let instance = |key: InstanceKey, repetition: Option<Repetition>| Instance {
        address: format!("{config_address}{}", key.suffix()),
        key,
        repetition,
    };
    match walk.expansion(module, r) {
        Expansion::Single => Some(vec![instance(InstanceKey::Single, None)]),
        Expansion::Disabled => Some(Vec::new()),
        Expansion::Count(n) => Some(
            (0..n)
                .map(|i| {
                    instance(
                        InstanceKey::Index(i),
                        Some(Repetition {
                            count_index: Some(Value::number(i as f64)),
                            each: None,
                            ..Default::default()
                        }),
                    )
                })
                .collect(),
        ),
        Expansion::ForEach(items) => Some(
            items
                .into_iter()
                .map(|(k, v)| {
                    instance(
                        InstanceKey::Key(k.clone()),
                        Some(Repetition {
                            count_index: None,
                            each: Some((Value::String(k), v)),
                            ..Default::default()
                        }),
                    )
                })
                .collect(),
        ),
        Expansion::Invalid => None,
        Expansion::Unknown => {
            let what = if r.count.is_some() {
                "count"
            } else if r.lifecycle().enabled.is_some() {
                "enabled"
            } else {
                "for_each"
            };
            let span = r
                .count
                .as_deref()
                .or(r.for_each.as_deref())
                .or(r.lifecycle().enabled.as_ref())
                .map(|e| e.span());
            walk.diags.push(Diag::error(
                span,
                format!("Invalid {what} argument"),
                format!("The {what} value depends on values that are known only after apply; gpustack must know how many instances to plan. Use --target to apply what it depends on first."),
            ));
            None
        }
    }
}

/// The value references see: one object, a list (count) or a map (for_each); null for a
/// resource that `enabled` turned off.
pub(crate) fn assemble<'k>(
    r: &Resource,
    instances: impl IntoIterator<Item = (&'k InstanceKey, Value)>,
) -> Value {
    let instances: Vec<(&InstanceKey, Value)> = instances.into_iter().collect();
    match instances.first().map(|(k, _)| *k) {
        None if r.lifecycle().enabled.is_some() => Value::Null,
        None => Value::List(Vec::new()),
        Some(InstanceKey::Single) => instances
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or(Value::Null),
        Some(InstanceKey::Index(_)) => Value::List(instances.into_iter().map(|(_, v)| v).collect()),
        Some(InstanceKey::Key(_)) => Value::Object(
            instances
                .into_iter()
                .filter_map(|(k, v)| match k {
                    InstanceKey::Key(k) => Some((k.clone(), v)),
                    _ => None,
                })
                .collect(),
        ),
    }
}

/// The positions of each resource block's instances among a state's objects, in their order.
pub(crate) fn positions_by_config(
    objects: &[gpustack_state::ResourceState],
) -> std::collections::HashMap<String, Vec<usize>> {
    let mut by_config: std::collections::HashMap<String, Vec<usize>> =
        std::collections::HashMap::new();
    for (i, r) in objects.iter().enumerate() {
        by_config
            .entry(strip_instance_key(&r.address))
            .or_default()
            .push(i);
    }
    by_config
}

/// What recorded objects say of a resource, shaped like its configuration; unknown when none
/// exists yet.
pub(crate) fn recorded<'s>(
    objects: impl Iterator<Item = &'s ResourceState>,
    config_address: &str,
    r: &Resource,
    value_of: impl Fn(&ResourceState) -> Value,
) -> Value {
    let instances: Vec<&ResourceState> = objects
        .filter(|s| strip_instance_key(&s.address) == config_address)
        .collect();
    if r.count.is_some() {
        Value::List(instances.iter().map(|s| value_of(s)).collect())
    } else if r.for_each.is_some() {
        Value::Object(
            instances
                .iter()
                .filter_map(|s| {
                    let address = gpustack_lang::address::Address::parse(&s.address).ok()?;
                    match address.instance_key() {
                        Some(gpustack_lang::address::Key::Name(key)) => {
                            Some((key.clone(), value_of(s)))
                        }
                        _ => None,
                    }
                })
                .collect(),
        )
    } else {
        instances.first().map_or(Value::Unknown, |s| value_of(s))
    }
}

/// Reports a provider's diagnostics at the block they are about; true when any is an error.
/// A check's data source: what its provider reports are the check's warnings, so that a
/// failed read never stops a plan or an apply (as Terraform treats a check-scoped data block).
pub(crate) fn as_check_warnings(r: &Resource, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let Some(check) = &r.check else {
        return diagnostics;
    };
    diagnostics
        .into_iter()
        .map(|d| {
            if d.is_error() {
                Diagnostic::warning(format!("Check block \"{check}\": {}", d.summary), d.detail)
            } else {
                d
            }
        })
        .collect()
}

pub(crate) fn report(diags: &mut Diags, span: Option<Span>, diagnostics: &[Diagnostic]) -> bool {
    report_at(diags, span, diagnostics, |_| None)
}

/// As `report`, with a diagnostic that names an attribute put at `at`'s span for it.
pub(crate) fn report_at(
    diags: &mut Diags,
    span: Option<Span>,
    diagnostics: &[Diagnostic],
    at: impl Fn(&str) -> Option<Span>,
) -> bool {
    for d in diagnostics {
        let located = d.attribute.as_deref().and_then(&at);
        // An attribute that has no place in the source is named in words.
        let detail = match (&d.attribute, located) {
            (Some(a), None) => format!("{} (attribute {a})", d.detail),
            _ => d.detail.clone(),
        };
        diags.push(Diag {
            severity: d.severity,
            summary: d.summary.clone(),
            detail,
            span: located.or(span),
        });
    }
    diagnostics.iter().any(Diagnostic::is_error)
}

/// `lifecycle.ignore_changes`: the ignored attributes keep their prior values, so they never
/// cause a change (`all`: nothing configured does).
pub(crate) fn keep_ignored(config: &mut Value, prior: &Value, lifecycle: &Lifecycle) {
    let (Value::Object(attrs), Some(old)) = (config, prior.as_object()) else {
        return;
    };
    if lifecycle.ignore_all_changes {
        *attrs = old.clone();
        return;
    }
    for (path, _) in &lifecycle.ignore_changes {
        let [gpustack_protocol::PathStep::Key(name), rest @ ..] = path.as_slice() else {
            continue;
        };
        match (old.get(name), attrs.get_mut(name)) {
            (Some(value), _) if rest.is_empty() => {
                attrs.insert(name.clone(), value.clone());
            }
            (Some(value), Some(configured)) => keep_at(configured, value, rest),
            _ => {}
        }
    }
}

/// Puts the prior value at `path` into the configured one; where the prior has nothing there
/// (a map key it lacked), the configured entry goes too, so that the path stays as it was.
fn keep_at(configured: &mut Value, prior: &Value, path: &[gpustack_protocol::PathStep]) {
    use gpustack_protocol::PathStep;
    let Some((step, rest)) = path.split_first() else {
        *configured = prior.clone();
        return;
    };
    match (step, configured, prior) {
        (PathStep::Key(k), Value::Object(now), Value::Object(before)) => {
            match (before.get(k), now.get_mut(k)) {
                (Some(b), Some(n)) if !rest.is_empty() => keep_at(n, b, rest),
                (Some(b), _) if rest.is_empty() => {
                    now.insert(k.clone(), b.clone());
                }
                (None, _) if rest.is_empty() => {
                    now.shift_remove(k);
                }
                _ => {}
            }
        }
        (PathStep::Index(i), Value::List(now), Value::List(before)) => {
            if let (Some(n), Some(b)) = (now.get_mut(*i), before.get(*i)) {
                keep_at(n, b, rest);
            }
        }
        _ => {}
    }
}
