//! Plans in Terraform's JSON plan format (1.2), written as they serialize, and drift as JSON.

use super::*;

/// A side of a change for machines: each sensitive part `"(sensitive value)"`, at any depth.
pub(super) fn mask(value: &serde_json::Value, marks: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match (value, marks) {
        (J::Null, J::Bool(true)) => J::Null,
        (_, J::Bool(true)) => J::String(SENSITIVE.into()),
        (J::Object(map), J::Object(m)) => J::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), mask(v, m.get(k).unwrap_or(&J::Bool(false)))))
                .collect(),
        ),
        (J::Array(items), J::Array(m)) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| mask(v, m.get(i).unwrap_or(&J::Bool(false))))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Terraform's JSON plan format version that [`plan_json`] follows.
pub const TERRAFORM_JSON_FORMAT: &str = "1.2";

/// Where an instance address sits: `module.a.module.b`, its resource's name and its key.
pub(super) struct AddressParts {
    module: Option<String>,
    name: String,
    index: Option<serde_json::Value>,
}

pub(super) fn address_parts(change: &ResourceChange) -> AddressParts {
    let config = change.config_address.as_str();
    let mut rest = config;
    let mut module = Vec::new();
    while let Some(after) = rest.strip_prefix("module.") {
        let (name, tail) = after.split_once('.').unwrap_or((after, ""));
        module.push(format!("module.{name}"));
        rest = tail;
    }
    let name = rest.rsplit('.').next().unwrap_or(rest).to_owned();
    let index = change
        .address
        .strip_prefix(config)
        .and_then(|key| key.strip_prefix('['))
        .and_then(|key| key.strip_suffix(']'))
        .and_then(|key| serde_json::from_str(key).ok());
    AddressParts {
        module: (!module.is_empty()).then(|| module.join(".")),
        name,
        index,
    }
}

/// The reason in Terraform's vocabulary, without gpustack's detail after the colon; None for
/// reasons Terraform has no name for.
pub(super) fn terraform_reason(change: &ResourceChange) -> Option<&'static str> {
    let reason = change.action_reason.as_deref()?;
    let code = reason.split(':').next().unwrap_or(reason);
    Some(match code {
        "replace_because_cannot_update" => "replace_because_cannot_update",
        "replace_by_request" => "replace_by_request",
        "replace_because_tainted" => "replace_because_tainted",
        "replace_by_triggers" => "replace_by_triggers",
        "delete_because_no_resource_config" => "delete_because_no_resource_config",
        "delete_because_no_instance" if change.address.ends_with("\"]") => {
            "delete_because_each_key"
        }
        "delete_because_no_instance" => "delete_because_count_index",
        _ => return None,
    })
}

/// Terraform writes `{}`, not `false`, for an object with no unknown or sensitive part.
pub(super) fn marks_of(value: &serde_json::Value, marks: &serde_json::Value) -> serde_json::Value {
    match (value, marks) {
        (serde_json::Value::Object(_), serde_json::Value::Bool(false)) => serde_json::json!({}),
        _ => marks.clone(),
    }
}

pub(super) fn change_json(change: &ResourceChange) -> serde_json::Value {
    let parts = address_parts(change);
    let after_marks = if change.after.is_null() {
        serde_json::json!({})
    } else {
        marks_of(&change.after, &change.after_unknown)
    };
    // Terraform's replace_paths are attribute paths; gpustack's reasons say more, under a key
    // of their own.
    let replace_paths: Vec<serde_json::Value> = change
        .replace_paths
        .iter()
        .map(|p| serde_json::json!([p.split([' ', '.']).next().unwrap_or(p)]))
        .collect();
    let mut json = serde_json::json!({
        "address": change.address,
        "mode": change.mode,
        "type": change.type_name,
        "name": parts.name,
        "provider_name": change.provider,
        "change": {
            "actions": change.actions,
            "before": mask(&change.before, &change.before_sensitive),
            "after": mask(&change.after, &change.after_sensitive),
            "after_unknown": after_marks,
            "before_sensitive": marks_of(&change.before, &change.before_sensitive),
            "after_sensitive": marks_of(&change.after, &change.after_sensitive),
            "replace_paths": replace_paths,
            "gpustack_replace_attributes": change.replace_paths,
        },
    });
    if let Some(module) = parts.module {
        json["module_address"] = module.into();
    }
    if let Some(index) = parts.index {
        json["index"] = index;
    }
    if let Some(reason) = terraform_reason(change) {
        json["action_reason"] = reason.into();
    }
    if let Some(reason) = &change.action_reason {
        json["gpustack_action_reason"] = reason.clone().into();
    }
    // Terraform's names: `change.importing.id`, `previous_address`.
    if let Some(importing) = &change.importing {
        json["change"]["importing"] =
            serde_json::json!({ "id": importing.id, "adopted": importing.adopted });
    }
    if let Some(previous) = &change.previous_address {
        json["previous_address"] = previous.clone().into();
    }
    // gpustack's own: what the deletion takes with it that the stack does not manage.
    if let Some(collateral) = change
        .collateral
        .as_ref()
        .filter(|c| !c.objects.is_empty() || !c.unread.is_empty())
    {
        json["change"]["gpustack_collateral"] = serde_json::json!({
            "describe": collateral.describe,
            "objects": collateral.objects,
            "unread": collateral.unread,
        });
    }
    json
}

/// A value with its unknown parts left out, as `planned_values` holds it.
pub(super) fn known_part(
    value: &serde_json::Value,
    unknown: &serde_json::Value,
) -> serde_json::Value {
    use serde_json::Value as J;
    match (value, unknown) {
        (J::Object(map), J::Object(u)) => J::Object(
            map.iter()
                .filter(|(k, _)| u.get(*k) != Some(&J::Bool(true)))
                .map(|(k, v)| {
                    (
                        k.clone(),
                        known_part(v, u.get(k).unwrap_or(&J::Bool(false))),
                    )
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Terraform's `configuration`: the plan's own snapshot of the stack, per module (not per
/// instance): its resources and module calls with their expressions, each a `constant_value`
/// or the `references` it makes.
pub(super) fn configuration(plan: &Plan) -> serde_json::Value {
    let root = std::path::PathBuf::from(&plan.snapshot.stack_dir);
    let files = gpustack_lang::config::Files::Snapshot {
        root: root.clone(),
        files: std::sync::Arc::new(plan.snapshot.files.clone()),
    };
    let mut sources = gpustack_lang::source::SourceMap::new(&root);
    let mut diags = gpustack_lang::diag::Diags::default();
    let stack = gpustack_lang::config::load_stack_from(&files, &root, &mut sources, &mut diags);
    if stack.modules.is_empty() {
        return serde_json::json!({});
    }
    // What holds a secret, by configuration address: its attributes' marks in the changes.
    let mut marks: std::collections::HashMap<&str, &serde_json::Value> =
        std::collections::HashMap::new();
    for c in plan.resource_changes.iter().chain(&plan.resource_drift) {
        for side in [&c.after_sensitive, &c.before_sensitive] {
            let entry = marks.entry(c.config_address.as_str()).or_insert(side);
            if !any_mark(entry) {
                *entry = side;
            }
        }
    }
    configured_module(&stack, 0, &marks)
}

pub(super) type Marks<'p> = std::collections::HashMap<&'p str, &'p serde_json::Value>;

pub(super) fn configured_module(
    stack: &gpustack_lang::config::Stack,
    index: usize,
    marks: &Marks<'_>,
) -> serde_json::Value {
    let m = &stack.modules[index];
    let prefix = m.prefix();
    let unmarked = serde_json::Value::Bool(true);
    let resources: Vec<serde_json::Value> = m
        .resources
        .values()
        .chain(m.data.values())
        .map(|r| {
            let mut resource = serde_json::json!({
                "address": r.local_address(),
                "mode": match r.mode {
                    gpustack_lang::config::ResourceMode::Managed => "managed",
                    gpustack_lang::config::ResourceMode::Data => "data",
                },
                "type": r.type_name,
                "name": r.name,
                "provider_config_key": r
                    .provider
                    .as_ref()
                    .map_or_else(|| r.type_name.split('_').next().unwrap_or_default().to_owned(), |p| p.key()),
                "expressions": body_expressions(
                    &r.body.body,
                    // A resource the plan does not cover (--target) has no marks to go by:
                    // none of its literals is shown.
                    marks
                        .get(format!("{prefix}{}", r.local_address()).as_str())
                        .copied()
                        .unwrap_or(&unmarked),
                ),
                "schema_version": 0,
            });
            if let Some(count) = &r.count {
                resource["count_expression"] = expression_json(&count.expr, false);
            }
            if let Some(for_each) = &r.for_each {
                resource["for_each_expression"] = expression_json(&for_each.expr, false);
            }
            resource
        })
        .collect();
    let mut json = serde_json::json!({ "resources": resources });
    let calls: serde_json::Map<String, serde_json::Value> = m
        .calls
        .values()
        .map(|call| {
            let mut entry = serde_json::json!({
                "source": call.source,
                "expressions": call
                    .args
                    .iter()
                    .map(|(k, (e, _))| {
                        // An argument for a sensitive variable is a secret, whatever it is.
                        let secret = m.children.get(&call.name).is_some_and(|&child| {
                            stack.modules[child].variables.get(k).is_some_and(|v| v.sensitive)
                        });
                        (k.clone(), expression_json(&e.expr, secret))
                    })
                    .collect::<serde_json::Map<_, _>>(),
            });
            if let Some(&child) = m.children.get(&call.name) {
                entry["module"] = configured_module(stack, child, marks);
            }
            if let Some(count) = &call.count {
                entry["count_expression"] = expression_json(&count.expr, false);
            }
            if let Some(for_each) = &call.for_each {
                entry["for_each_expression"] = expression_json(&for_each.expr, false);
            }
            (call.name.clone(), entry)
        })
        .collect();
    if !calls.is_empty() {
        json["module_calls"] = calls.into();
    }
    json
}

/// Whether a value's marks hold a secret anywhere.
pub(super) fn any_mark(marks: &serde_json::Value) -> bool {
    match marks {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Array(items) => items.iter().any(any_mark),
        serde_json::Value::Object(map) => map.values().any(any_mark),
        _ => false,
    }
}

/// A body's attributes as expressions, and its nested blocks as lists of bodies; the literal
/// of an attribute that holds a secret is left out.
pub(super) fn body_expressions(
    body: &hcl_edit::structure::Body,
    marks: &serde_json::Value,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    let no_marks = serde_json::Value::Bool(false);
    for structure in body.iter() {
        match structure {
            hcl_edit::structure::Structure::Attribute(a) => {
                let key = a.key.as_str();
                let secret = any_mark(marks)
                    && (*marks == serde_json::Value::Bool(true)
                        || marks.get(key).is_some_and(any_mark));
                out.insert(key.to_owned(), expression_json(&a.value, secret));
            }
            hcl_edit::structure::Structure::Block(b) => {
                let key = b.ident.as_str();
                let inner = marks
                    .get(key)
                    .map(|m| m.get(0).unwrap_or(m))
                    .unwrap_or(&no_marks);
                let entry = out
                    .entry(key.to_owned())
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let Some(list) = entry.as_array_mut() {
                    list.push(body_expressions(&b.body, inner));
                }
            }
        }
    }
    serde_json::Value::Object(out)
}

/// `{"constant_value": ...}` for a literal, else `{"references": [...]}` with each reference
/// and its shorter prefixes, as Terraform lists them (`aws_instance.a.id`, `aws_instance.a`).
pub(super) fn expression_json(
    expression: &hcl_edit::expr::Expression,
    secret: bool,
) -> serde_json::Value {
    if let Some(value) = gpustack_lang::expr::literal::literal_value(expression) {
        let json = value.to_json();
        // A literal secret (a sensitive attribute's, or one that looks like a credential) is
        // said to be there, never shown.
        if secret || gpustack_protocol::secrets::contains_any(&json.to_string()) {
            return serde_json::json!({ "sensitive": true });
        }
        return serde_json::json!({ "constant_value": json });
    }
    let mut references: Vec<String> = Vec::new();
    for r in gpustack_lang::expr::refs::references(expression) {
        let names = r.names();
        let shortest = match names.first() {
            Some(&"data") => 3,
            _ => 2,
        };
        for n in (shortest.min(names.len())..=names.len()).rev() {
            let text = names[..n].join(".");
            if !references.contains(&text) {
                references.push(text);
            }
        }
    }
    serde_json::json!({ "references": references })
}

pub(super) fn resource_values(
    change: &ResourceChange,
    values: serde_json::Value,
    sensitive: &serde_json::Value,
) -> serde_json::Value {
    let parts = address_parts(change);
    let mut resource = serde_json::json!({
        "address": change.address,
        "mode": change.mode,
        "type": change.type_name,
        "name": parts.name,
        "provider_name": change.provider,
        "schema_version": 0,
        "values": values,
        "sensitive_values": marks_of(&change.after, sensitive),
    });
    if let Some(index) = parts.index {
        resource["index"] = index;
    }
    resource
}

/// A resource as `planned_values` holds it: its value after the change, known parts only.
pub(super) fn planned_resource(change: &ResourceChange) -> serde_json::Value {
    let values = known_part(
        &mask(&change.after, &change.after_sensitive),
        &change.after_unknown,
    );
    resource_values(change, values, &change.after_sensitive)
}

/// A resource as `prior_state` holds it.
pub(super) fn prior_resource(change: &ResourceChange) -> serde_json::Value {
    let values = mask(&change.before, &change.before_sensitive);
    resource_values(change, values, &change.before_sensitive)
}

/// Serializes the items its function's iterator makes one at a time: a large array is
/// written as it is made, never held whole.
pub(super) struct Streamed<F>(F);

impl<F, I> serde::Serialize for Streamed<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// The plan in Terraform's documented JSON plan format (format_version 1.2: `planned_values`,
/// `prior_state`, `configuration`, `resource_changes`, `resource_drift`, `output_changes`),
/// with sensitive values masked, so that tools written for Terraform plans (OPA, conftest,
/// checkov, cost estimators) read it; gpustack's own parts are under keys of their own
/// (`gpustack_*`, `gpu_capacity`, `summary`).
///
/// It serializes as it is written: each resource's part is made, written and dropped in turn,
/// so that the JSON of a plan of many thousands of resources is never held in memory whole.
pub fn plan_json(plan: &Plan) -> PlanJson<'_> {
    PlanJson(plan)
}

/// [`plan_json`]'s document.
pub struct PlanJson<'p>(&'p Plan);

impl serde::Serialize for PlanJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let plan = self.0;
        let (add, change, destroy) = plan.counts();
        let output_values: serde_json::Map<_, _> = plan
            .output_changes
            .iter()
            .filter(|(_, o)| !o.after_unknown && !o.actions.contains(&Action::Delete))
            .map(|(name, o)| {
                (
                    name.clone(),
                    serde_json::json!({ "sensitive": o.sensitive, "value": shown_after(o) }),
                )
            })
            .collect();
        let planned = ModuleTree::of(
            plan.resource_changes
                .iter()
                .filter(|c| !c.after.is_null() && c.actions != [Action::Forget]),
            planned_resource,
        );
        // The providers the changes use, by configuration key.
        let mut providers = serde_json::Map::new();
        for c in &plan.resource_changes {
            let key = c.provider.trim_start_matches("provider.").to_owned();
            providers.entry(key.clone()).or_insert_with(|| {
                serde_json::json!({ "name": key.split('.').next().unwrap_or(&key), "full_name": key })
            });
        }
        let output_changes: serde_json::Map<_, _> = plan
            .output_changes
            .iter()
            .map(|(name, o)| {
                (
                    name.clone(),
                    serde_json::json!({
                        "actions": o.actions,
                        "after": shown_after(o),
                        "after_unknown": o.after_unknown,
                        "before_sensitive": o.sensitive,
                        "after_sensitive": o.sensitive,
                    }),
                )
            })
            .collect();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("format_version", TERRAFORM_JSON_FORMAT)?;
        map.serialize_entry("gpustack_format_version", &crate::plan::FORMAT_VERSION)?;
        map.serialize_entry("gpustack_version", &plan.gpustack_version)?;
        map.serialize_entry("mode", &plan.mode)?;
        map.serialize_entry("lineage", &plan.lineage)?;
        map.serialize_entry("serial", &plan.serial)?;
        if !plan.timestamp.is_empty() {
            map.serialize_entry("timestamp", &plan.timestamp)?;
        }
        map.serialize_entry("config_hash", &plan.config_hash)?;
        map.serialize_entry(
            "planned_values",
            &PlannedValues {
                root_module: planned,
                outputs: (!output_values.is_empty()).then_some(output_values),
            },
        )?;
        map.serialize_entry(
            "resource_changes",
            &Streamed(|| plan.resource_changes.iter().map(change_json)),
        )?;
        map.serialize_entry(
            "resource_drift",
            &Streamed(|| plan.resource_drift.iter().map(change_json)),
        )?;
        map.serialize_entry("output_changes", &output_changes)?;
        map.serialize_entry(
            "configuration",
            &serde_json::json!({
                "provider_config": providers,
                "root_module": configuration(plan),
            }),
        )?;
        map.serialize_entry("gpu_capacity", &plan.gpu_capacity)?;
        if !plan.gpu_disruption.is_empty() {
            map.serialize_entry("gpu_disruption", &plan.gpu_disruption)?;
        }
        map.serialize_entry(
            "summary",
            &serde_json::json!({
                "import": plan.resource_changes.iter().filter(|c| c.importing.is_some()).count(),
                "add": add, "change": change, "destroy": destroy,
                "forget": plan.resource_changes.iter().filter(|c| c.actions == [Action::Forget]).count(),
                "drifted": plan.resource_drift.len(),
            }),
        )?;
        map.serialize_entry("applyable", &plan.has_changes())?;
        map.serialize_entry("complete", &true)?;
        map.serialize_entry("errored", &false)?;
        map.serialize_entry("has_changes", &plan.has_changes())?;
        let prior = ModuleTree::of(
            plan.resource_changes.iter().filter(|c| !c.before.is_null()),
            prior_resource,
        );
        if !prior.is_empty() {
            map.serialize_entry(
                "prior_state",
                &PriorState {
                    format_version: "1.0",
                    values: RootModule { root_module: prior },
                },
            )?;
        }
        map.end()
    }
}

/// An output's value after the change as the JSON plan shows it: masked when sensitive.
pub(super) fn shown_after(output: &crate::plan::OutputChange) -> serde_json::Value {
    if output.sensitive {
        serde_json::Value::String(SENSITIVE.into())
    } else {
        output.after.clone()
    }
}

#[derive(serde::Serialize)]
pub(super) struct PlannedValues<'p> {
    root_module: ModuleTree<'p>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outputs: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(serde::Serialize)]
pub(super) struct PriorState<'p> {
    format_version: &'static str,
    values: RootModule<'p>,
}

#[derive(serde::Serialize)]
pub(super) struct RootModule<'p> {
    root_module: ModuleTree<'p>,
}

/// Terraform's module tree of resource values (`planned_values`, `prior_state`): the root
/// module's resources, and each module's under `child_modules`, in the order the changes
/// first name them. It holds references; each resource's JSON is made as it is written.
pub(super) struct ModuleTree<'p> {
    root: Vec<&'p ResourceChange>,
    children: indexmap::IndexMap<String, Vec<&'p ResourceChange>>,
    values: fn(&ResourceChange) -> serde_json::Value,
}

impl<'p> ModuleTree<'p> {
    fn of(
        changes: impl Iterator<Item = &'p ResourceChange>,
        values: fn(&ResourceChange) -> serde_json::Value,
    ) -> Self {
        let mut tree = Self {
            root: Vec::new(),
            children: indexmap::IndexMap::new(),
            values,
        };
        for change in changes {
            match address_parts(change).module {
                None => tree.root.push(change),
                Some(m) => tree.children.entry(m).or_default().push(change),
            }
        }
        tree
    }

    fn is_empty(&self) -> bool {
        self.root.is_empty() && self.children.is_empty()
    }
}

impl serde::Serialize for ModuleTree<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        fn resources<'a>(
            changes: &'a [&'a ResourceChange],
            values: fn(&ResourceChange) -> serde_json::Value,
        ) -> impl serde::Serialize + 'a {
            Streamed(move || changes.iter().map(move |c| values(c)))
        }
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("resources", &resources(&self.root, self.values))?;
        if !self.children.is_empty() {
            map.serialize_entry(
                "child_modules",
                &Streamed(|| {
                    self.children.iter().map(|(address, changes)| ChildModule {
                        address,
                        resources: resources(changes, self.values),
                    })
                }),
            )?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
pub(super) struct ChildModule<'a, R> {
    address: &'a str,
    resources: R,
}

pub fn drift_json(plan: &Plan) -> serde_json::Value {
    serde_json::json!({
        "format_version": crate::plan::FORMAT_VERSION,
        "drifted": !plan.resource_drift.is_empty() || !plan.gpu_drift.is_empty(),
        "drift_count": plan.resource_drift.len(),
        "resource_drift": plan.resource_drift.iter().map(change_json).collect::<Vec<_>>(),
        "gpu_capacity_drift": plan.gpu_drift,
    })
}
