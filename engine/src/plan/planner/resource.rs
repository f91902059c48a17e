//! A resource or data source node of the plan walk: its instances evaluated, imported where
//! an `import` block (or `gpustack import`) says so, planned by their provider, and turned into
//! changes with their reasons.

use super::*;

pub(super) struct PlannedInstance {
    key: InstanceKey,
    address: String,
    prior: Option<Value>,
    planned: Value,
    requires_replace: Vec<String>,
    gpu_facts: Vec<gpustack_protocol::GpuFact>,
    /// What the change needs made first, and makes.
    order: gpustack_protocol::Order,
    /// The object comes into the state with this change.
    importing: Option<crate::plan::Importing>,
}

/// One managed instance to plan.
pub(super) struct ManagedInstance<'h> {
    handle: &'h Configured,
    type_name: String,
    key: InstanceKey,
    address: String,
    prior: Option<Value>,
    config: Value,
    /// The id of an `import` block for it.
    import: Option<String>,
    /// The state records it, and the refresh found its object gone.
    vanished: bool,
    schema_paths: &'h [gpustack_protocol::Path],
    schema: &'h gpustack_protocol::Schema,
    owner: String,
    preview: bool,
    seed: Option<[u8; 32]>,
    forced: bool,
}

/// A state with every attribute of its schema, unset ones null: a provider that leaves an
/// empty attribute out (an app version a chart does not have) does not plan a change.
pub(super) fn conform(value: Value, schema: &gpustack_protocol::Schema) -> Value {
    match value {
        Value::Object(mut map) => {
            for name in schema.attributes.keys().chain(schema.blocks.keys()) {
                map.entry(name.clone()).or_insert(Value::Null);
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// Plans one managed instance: imports it first when an `import` block says so; refuses a
/// create whose object exists and is not this stack's, and adopts (imports) one that is.
pub(super) async fn plan_managed(m: ManagedInstance<'_>) -> (PlannedInstance, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut prior = m.prior.map(|p| conform(p, m.schema));
    let mut importing = None;
    if let Some(id) = &m.import {
        match import_object(m.handle, &m.type_name, id, m.schema_paths).await {
            Ok(state) => {
                prior = Some(conform(state, m.schema));
                importing = Some(crate::plan::Importing {
                    id: id.clone(),
                    adopted: false,
                });
            }
            Err(mut d) => {
                diagnostics.append(&mut d);
                return (failed_instance(m.key, m.address), diagnostics);
            }
        }
    }
    let request = |prior: Option<Value>, secrets: &Secrets| PlanResourceChangeRequest {
        type_name: m.type_name.clone(),
        prior_state: prior.map(|p| p.unmark_deep().0),
        config: m.config.clone().unmark_deep().0,
        for_apply: false,
        preview: m.preview,
        sensitive_paths: secrets.paths.clone(),
        owner: m.owner.clone(),
        seed: m.seed,
        plan_time: gpustack_lang::expr::functions::plan_timestamp(),
    };
    for attempt in 0..2 {
        let secrets = Secrets::of(prior.as_ref(), &m.config, m.schema_paths);
        let response = m
            .handle
            .instance
            .plan_resource_change(request(prior.clone(), &secrets))
            .await;
        match response.existing.filter(|_| prior.is_none()) {
            Some(existing) if existing.owned && attempt == 0 => {
                // Ours, from a run that died before recording it: adopt it and plan again.
                match import_object(m.handle, &m.type_name, &existing.import_id, m.schema_paths)
                    .await
                {
                    Ok(state) => {
                        prior = Some(conform(state, m.schema));
                        importing = Some(crate::plan::Importing {
                            id: existing.import_id,
                            adopted: true,
                        });
                        continue;
                    }
                    Err(mut d) => {
                        diagnostics.append(&mut d);
                        return (failed_instance(m.key, m.address), diagnostics);
                    }
                }
            }
            Some(existing) if !existing.owned => {
                let since = if m.vanished {
                    " The object this stack recorded is gone (deleted outside gpustack)."
                } else {
                    ""
                };
                diagnostics.push(Diagnostic::error(
                    "Object already exists",
                    format!(
                        "{address} would create {what}, which already exists and was not made by this stack: gpustack never changes or deletes an object it does not manage.{since} To manage it here, import it:\n\n  import {{\n    to = {address}\n    id = {id}\n  }}\n\nor run: gpustack import '{address}' {id}",
                        address = m.address,
                        what = existing.describe,
                        id = serde_json::Value::String(existing.import_id.clone()),
                    ),
                ));
                return (failed_instance(m.key, m.address), diagnostics);
            }
            _ => {}
        }
        diagnostics.extend(response.diagnostics);
        let mut planned_state = response.planned_state;
        if m.forced {
            // As Terraform does: the object that replaces this one is planned as a create, so
            // what its provider computes (ids, random values) is made anew, not kept.
            let create = m
                .handle
                .instance
                .plan_resource_change(request(None, &secrets))
                .await;
            if create.diagnostics.iter().any(Diagnostic::is_error) {
                // Said, not silent: the new object is shown with the old one's computed values.
                diagnostics.push(Diagnostic::warning(
                    "Replacement planned from the old object",
                    format!(
                        "{}: its provider could not plan the new object as a create ({}), so the plan shows the values the old object has; apply makes the new object as its provider makes it.",
                        m.address,
                        create
                            .diagnostics
                            .iter()
                            .filter(|d| d.is_error())
                            .map(|d| d.summary.as_str())
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                ));
            } else {
                planned_state = create.planned_state;
            }
        }
        let write_only: Vec<String> = m
            .schema
            .attributes
            .iter()
            .filter(|(_, a)| a.write_only)
            .map(|(name, _)| name.clone())
            .collect();
        let planned = secrets.mark(crate::plan::without_write_only(
            conform(planned_state, m.schema),
            &write_only,
        ));
        return (
            PlannedInstance {
                key: m.key,
                address: m.address,
                prior: prior.map(|p| secrets.mark(p.unmark_deep().0)),
                planned,
                requires_replace: response.requires_replace,
                gpu_facts: response.gpu_facts,
                order: response.order,
                importing,
            },
            diagnostics,
        );
    }
    (failed_instance(m.key, m.address), diagnostics)
}

pub(super) fn failed_instance(key: InstanceKey, address: String) -> PlannedInstance {
    PlannedInstance {
        key,
        address,
        prior: None,
        planned: Value::Unknown,
        requires_replace: vec![],
        gpu_facts: vec![],
        order: Default::default(),
        importing: None,
    }
}

/// An object read through its provider's import, with its schema's secrets marked.
pub(super) async fn import_object(
    handle: &Configured,
    type_name: &str,
    id: &str,
    schema_paths: &[gpustack_protocol::Path],
) -> Result<Value, Vec<Diagnostic>> {
    let response = handle
        .instance
        .import_resource(gpustack_protocol::ImportResourceRequest {
            type_name: type_name.to_owned(),
            id: id.to_owned(),
        })
        .await;
    match response.state {
        Some(state) if !response.diagnostics.iter().any(Diagnostic::is_error) => {
            Ok(mark_schema(state, schema_paths))
        }
        _ => {
            let mut d = response.diagnostics;
            if d.is_empty() {
                d.push(Diagnostic::error(
                    "Cannot import",
                    format!("{type_name} {id} was not found."),
                ));
            }
            Err(d)
        }
    }
}

impl Planner<'_, '_> {
    pub(super) fn start_resource(
        &mut self,
        node: NodeIndex,
        module: usize,
        r: &Resource,
    ) -> Option<BoxFuture<'static, Outcome>> {
        let prefix = self.eval.stack.modules[module].prefix();
        let config_address = format!("{prefix}{}", r.local_address());
        self.configured.insert(config_address.clone());
        let excluded = self.allowed.as_ref().is_some_and(|a| !a.contains(&node));
        if excluded || self.options.mode != PlanMode::Normal {
            // Outside the plan's scope: its value is what the state knows.
            let value = self.prior_value(&config_address, r);
            store(self.eval, module, r, value);
            return None;
        }
        // A type no provider serves is an error here as in validate, never a resource the
        // plan passes over.
        let Some(schema) = crate::evaluate::schema_of(self.eval.registry, r).cloned() else {
            self.eval.type_not_served(r);
            self.failed.insert(node);
            return None;
        };
        let Some(handle) = self
            .graph
            .provider_of
            .get(&node)
            .and_then(|p| self.providers.get(p))
            .cloned()
        else {
            self.failed.insert(node);
            return None;
        };
        let errors_before = self.eval.diags.error_count();
        let schema_paths = sensitive_attributes(Some(&schema));
        let mark = self.eval.flows.borrow().mark();
        if r.mode == ResourceMode::Managed {
            self.evaluate_imports(&config_address);
        }
        let Some(instances) = expand(self.eval, module, r, &config_address) else {
            self.failed.insert(node);
            return None;
        };
        let context = format!("a {} block", r.type_name);
        let mut requests = Vec::with_capacity(instances.len());
        for instance in instances {
            let site = Site {
                module,
                r,
                schema: &schema,
                schema_paths: &schema_paths,
                context: &context,
                mark,
            };
            if let Some(request) = self.instance_request(&site, instance) {
                requests.push(request);
            }
        }
        if self.eval.diags.error_count() > errors_before {
            self.failed.insert(node);
            return None;
        }
        let type_name = r.type_name.clone();
        let mode = r.mode;
        let owner = self.owner.clone();
        let preview = !self.options.unreviewed;
        Some(Box::pin(async move {
            // Each instance's future borrows the resource's schema from this one.
            let (schema, schema_paths) = (&schema, &schema_paths);
            let calls = requests.into_iter().map(|request| {
                plan_instance(InstanceCall {
                    handle: handle.clone(),
                    type_name: type_name.clone(),
                    mode,
                    owner: owner.clone(),
                    preview,
                    schema,
                    schema_paths,
                    request,
                })
            });
            let mut instances = Vec::new();
            let mut diagnostics = Vec::new();
            for (instance, diags) in futures::future::join_all(calls).await {
                instances.push(instance);
                diagnostics.extend(diags);
            }
            Outcome::Resource {
                instances,
                diagnostics,
            }
        }))
    }

    /// The `import` blocks into one resource, evaluated: each instance address with its id.
    pub(super) fn evaluate_imports(&mut self, config_address: &str) {
        let Some(blocks) = self.import_blocks.get(config_address).cloned() else {
            return;
        };
        for import in blocks {
            for (address, id) in self.evaluate_import(import) {
                self.imports.insert(address, (id, import.span));
            }
        }
    }

    /// One `import` block's instances: (address, id) for each of its for_each elements.
    pub(super) fn evaluate_import(
        &mut self,
        import: &gpustack_lang::config::Import,
    ) -> Vec<(String, String)> {
        use gpustack_lang::address::{Address, Key, Step};
        let mut out = Vec::new();
        {
            let repetitions: Vec<Option<crate::evaluate::Repetition>> = match &import.for_each {
                None => vec![None],
                Some(for_each) => {
                    let value = self.eval.eval(0, for_each, None);
                    let pairs: Vec<(Value, Value)> = match value.unmark_deep().0 {
                        Value::Object(map) => map
                            .into_iter()
                            .map(|(k, v)| (Value::String(k), v))
                            .collect(),
                        Value::List(items) => items
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| (Value::number(i as f64), v))
                            .collect(),
                        _ => {
                            self.eval.diags.push(Diag::error(
                                Some(for_each.span()),
                                "Invalid for_each argument",
                                "An import block's for_each must be a map or a list known at plan time.",
                            ));
                            return out;
                        }
                    };
                    pairs
                        .into_iter()
                        .map(|(k, v)| {
                            Some(crate::evaluate::Repetition {
                                count_index: None,
                                each: Some((k, v)),
                                ..Default::default()
                            })
                        })
                        .collect()
                }
            };
            let Some(target) =
                crate::plan::ownership::Target::of(&import.to, "to", self.eval.diags)
            else {
                return out;
            };
            for repetition in repetitions {
                let mut steps = Vec::new();
                let mut ok = true;
                for (name, index) in &target.steps {
                    let key = match index {
                        None => None,
                        Some(expr) => {
                            let expr = gpustack_lang::config::Expr {
                                expr: (*expr).clone(),
                                file: import.to.file,
                            };
                            match self.eval.eval(0, &expr, repetition.clone()).unmark_deep().0 {
                                Value::String(s) => Some(Key::Name(s)),
                                Value::Number(n) if n.to_i64().is_some_and(|i| i >= 0) => {
                                    Some(Key::Index(
                                        n.to_i64()
                                            .and_then(|i| usize::try_from(i).ok())
                                            .unwrap_or(0),
                                    ))
                                }
                                _ => {
                                    ok = false;
                                    None
                                }
                            }
                        }
                    };
                    steps.push(Step {
                        name: name.clone(),
                        key,
                    });
                }
                let id = match &import.id {
                    gpustack_lang::config::ImportBy::Id(id) => {
                        self.eval.eval(0, id, repetition.clone()).unmark_deep().0
                    }
                    gpustack_lang::config::ImportBy::Identity(identity) => {
                        let identity = self
                            .eval
                            .eval(0, identity, repetition.clone())
                            .unmark_deep()
                            .0;
                        // `[module.M.]TYPE.NAME[KEY]`: the type is the step before the last.
                        let type_name = steps
                            .iter()
                            .rev()
                            .nth(1)
                            .map(|s| s.name.as_str())
                            .unwrap_or_default();
                        let registry = self.eval.registry;
                        match registry
                            .owner_of(type_name)
                            .and_then(|p| registry.provider(p))
                            .map(|p| p.import_id_of_identity(type_name, &identity))
                        {
                            Some(Some(Ok(id))) => Value::String(id),
                            Some(Some(Err(why))) => {
                                self.eval.diags.push(Diag::error(
                                    Some(import.span),
                                    "Invalid import identity",
                                    why.to_string(),
                                ));
                                continue;
                            }
                            _ => {
                                self.eval.diags.push(Diag::error(
                                    Some(import.span),
                                    "Import by identity not supported",
                                    format!("The provider of {type_name} takes no resource identity; import it by id."),
                                ));
                                continue;
                            }
                        }
                    }
                };
                match (ok, id) {
                    (true, Value::String(id)) => out.push((Address(steps).to_string(), id)),
                    _ => self.eval.diags.push(Diag::error(
                        Some(import.span),
                        "Invalid import",
                        "An import block's id and the keys of its to address must be strings (or numbers, for keys) known at plan time.",
                    )),
                }
            }
        }
        out
    }

    /// `--generate-config-out`: each import block whose resource is not declared, imported
    /// through its provider and written as a resource block.
    pub(super) async fn generate(&mut self) -> Vec<crate::plan::generate::Generated> {
        let mut out = Vec::new();
        let missing = std::mem::take(&mut self.missing);
        for import in missing {
            let instances = self.evaluate_import(import);
            for (address, id) in instances {
                let Ok(parsed) = gpustack_lang::address::Address::parse(&address) else {
                    continue;
                };
                let [ty, name] = parsed.0.as_slice() else {
                    self.eval.diags.push(Diag::error(
                        Some(import.to.span()),
                        "Cannot generate configuration",
                        "--generate-config-out writes resources of the root module only.",
                    ));
                    continue;
                };
                let registry = self.eval.registry;
                let provider = registry.owner_of(&ty.name).map(str::to_owned);
                let handle = provider.as_deref().and_then(|p| {
                    self.graph
                        .node(0, NodeKind::Provider, p)
                        .and_then(|n| self.providers.get(&n))
                        .cloned()
                });
                let (Some(handle), Some(schema)) = (handle, registry.resource_schema(&ty.name))
                else {
                    self.eval.diags.push(Diag::error(
                        Some(import.to.span()),
                        "Cannot generate configuration",
                        format!("{address}: declare its provider block ({}) in the root module, so that the object can be read.", provider.unwrap_or_default()),
                    ));
                    continue;
                };
                let paths = sensitive_attributes(Some(schema));
                match import_object(&handle, &ty.name, &id, &paths).await {
                    Ok(state) => out.push(crate::plan::generate::Generated {
                        address,
                        text: crate::plan::generate::resource_block(
                            &ty.name, &name.name, &id, schema, &state,
                        ),
                    }),
                    Err(d) => {
                        report(self.eval.diags, Some(import.span), &d);
                    }
                }
            }
        }
        out
    }

    pub(super) fn change_for(
        &mut self,
        module: usize,
        r: &Resource,
        instance: &PlannedInstance,
        provider: &str,
        dependencies: &[String],
        span: Span,
    ) -> ResourceChange {
        let tainted = self.is_tainted(&instance.address);
        let forced = tainted || self.options.replace.iter().any(|a| a == &instance.address);
        let trigger = match &instance.prior {
            Some(_) if !forced && instance.requires_replace.is_empty() => {
                self.replace_trigger(module, r, instance)
            }
            _ => None,
        };
        let (actions, reason) = match &instance.prior {
            None => (vec![Action::Create], None),
            Some(_) if !instance.requires_replace.is_empty() || forced || trigger.is_some() => {
                let reason = if tainted {
                    "replace_because_tainted".to_owned()
                } else if forced {
                    "replace_by_request".to_owned()
                } else if let Some(by) = &trigger {
                    format!("replace_by_triggers: {by}")
                } else {
                    format!(
                        "replace_because_cannot_update: {}",
                        instance.requires_replace.join(", ")
                    )
                };
                let order = if r.lifecycle().create_before_destroy {
                    vec![Action::Create, Action::Delete]
                } else {
                    vec![Action::Delete, Action::Create]
                };
                (order, Some(reason))
            }
            // Values decide, not marks: a secret that did not change is no change.
            Some(prior) if *prior == instance.planned => (vec![Action::NoOp], None),
            Some(_) => (vec![Action::Update], None),
        };
        if actions.contains(&Action::Delete) && r.lifecycle().skip_destroy {
            self.eval.diags.push(Diag::error(
                span,
                "Instance cannot be replaced",
                format!("{} has lifecycle {{ destroy = false }}, and the plan replaces it ({}): gpustack does not forget an object and make another in its place, which would take the old one's name. Change the configuration so that it is updated in place, or set destroy = true.", instance.address, reason.clone().unwrap_or_default()),
            ));
        }
        if actions.contains(&Action::Delete) && self.eval.prevent_destroy(module, r) {
            self.eval.diags.push(Diag::error(
                span,
                "Instance cannot be destroyed",
                format!("{} has lifecycle.prevent_destroy set, but the plan would destroy it ({}). Change the configuration so that it is updated in place, or remove prevent_destroy.", instance.address, reason.clone().unwrap_or_default()),
            ));
        }
        let mut change = Sides::of(instance.prior.as_ref(), Some(&instance.planned), self.salt)
            .change(&instance.address, &r.type_name, provider, actions, reason);
        change.replace_paths = instance.requires_replace.clone();
        change.dependencies = dependencies.to_vec();
        change.importing = instance.importing.clone();
        change.previous_address = self.previous.get(&instance.address).cloned();
        change.runs = super::runs::planned_runs(
            self.eval,
            module,
            r,
            &change.actions,
            &instance.key,
            instance.prior.as_ref(),
            &instance.planned,
        );
        change
    }

    /// The first `replace_triggered_by` entry of `r` whose target is planned to change, as
    /// written; None when none is. A whole instance triggers with any change; an attribute
    /// when its value changes or will only be known after apply.
    pub(super) fn replace_trigger(
        &mut self,
        module: usize,
        r: &Resource,
        instance: &PlannedInstance,
    ) -> Option<String> {
        let prefix = self.eval.stack.modules[module].prefix();
        for expr in &r.lifecycle().replace_triggered_by {
            let Some(target) = gpustack_lang::config::load::trigger_target(&expr.expr) else {
                continue;
            };
            let resource = format!("{prefix}{}", target.resource);
            let address = match target.key {
                None => None,
                Some(key) => {
                    let repetition = match &instance.key {
                        InstanceKey::Single => None,
                        InstanceKey::Index(i) => Some(crate::evaluate::Repetition {
                            count_index: Some(Value::number(*i)),
                            ..Default::default()
                        }),
                        InstanceKey::Key(k) => Some(crate::evaluate::Repetition {
                            each: Some((Value::String(k.clone()), Value::Unknown)),
                            ..Default::default()
                        }),
                    };
                    let key_expr = gpustack_lang::config::Expr {
                        expr: key.clone(),
                        file: expr.file,
                    };
                    match self.eval.eval(module, &key_expr, repetition) {
                        Value::Number(n) if n.to_i64().is_some_and(|i| i >= 0) => {
                            Some(format!("{resource}[{}]", n))
                        }
                        Value::String(k) => Some(format!("{resource}[{}]", Value::String(k))),
                        _ => continue,
                    }
                }
            };
            let changed = self.changes.iter().any(|c| {
                let named = match &address {
                    Some(a) => c.address == *a,
                    None => {
                        c.address == resource
                            || c.address
                                .strip_prefix(resource.as_str())
                                .is_some_and(|rest| rest.starts_with('['))
                    }
                };
                named
                    && if target.attribute.is_empty() {
                        !c.actions.iter().all(|a| *a == Action::NoOp)
                    } else {
                        attribute_changes(c, &target.attribute)
                    }
            });
            if changed {
                let text = self.eval.sources.snippet(expr.span()).trim();
                return Some(if text.is_empty() {
                    resource
                } else {
                    text.to_owned()
                });
            }
        }
        None
    }

    /// What the state knows of a resource (refreshed where it was), shaped like its
    /// configuration; unknown when it does not exist yet.
    pub(super) fn prior_value(&self, config_address: &str, r: &Resource) -> Value {
        let Some(state) = self.state else {
            return Value::Unknown;
        };
        let instances = self
            .state_by_config
            .get(config_address)
            .into_iter()
            .flatten();
        recorded(
            instances.map(|&i| &state.resources[i]),
            config_address,
            r,
            |s| {
                self.refreshed
                    .get(&s.address)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| state_value(s))
            },
        )
    }

    /// The state address that already manages the object this configuration names, when it
    /// is not `address` itself.
    fn is_tainted(&self, address: &str) -> bool {
        self.state_index
            .get(address)
            .zip(self.state)
            .is_some_and(|(&i, state)| state.resources[i].tainted)
    }

    pub(super) fn known_elsewhere(
        &self,
        type_name: &str,
        config: &Value,
        address: &str,
    ) -> Option<String> {
        let registry = self.eval.registry;
        let provider = registry.provider(registry.owner_of(type_name)?)?;
        let identity = provider.identity(type_name, &config.clone().unmark_deep().0)?;
        self.known
            .get(&identity)
            .filter(|other| other.as_str() != address)
            .filter(|other| {
                // Still configured there: two instances of one object, reported after the walk.
                !self.configured_instance(other)
            })
            .cloned()
    }

    /// True when an instance address is also one the configuration plans (a resource block
    /// seen so far).
    pub(super) fn configured_instance(&self, address: &str) -> bool {
        self.configured.contains(&strip_instance_key(address))
    }
}

impl Planner<'_, '_> {
    // Long by design: what every planned instance of a resource settles, in the order later
    // steps read it (diagnostics, postconditions, flows, references, data records, changes).
    /// A resource's instances planned: located diagnostics, postconditions, the value its
    /// references see, the data sources' answers for the snapshot, and one change each.
    pub(super) fn finish_resource(
        &mut self,
        node: NodeIndex,
        instances: Vec<PlannedInstance>,
        diagnostics: Vec<Diagnostic>,
    ) {
        let n = self.graph.graph[node].clone();
        let span = Some(n.span);
        let module = &self.eval.stack.modules[n.module];
        let resource = match n.kind {
            NodeKind::Resource(ResourceMode::Data) => &module.data[&n.key],
            _ => &module.resources[&n.key],
        };
        // A check's data source that could not be read is unknown to its assertions,
        // which then wait rather than fail on a null.
        let unread = resource.check.is_some() && diagnostics.iter().any(Diagnostic::is_error);
        let diagnostics = crate::instances::as_check_warnings(resource, diagnostics);
        let locator = crate::evaluate::locate::Locator {
            stack: self.eval.stack,
            sources: self.eval.sources,
        };
        let at = |attribute: &str| {
            let path = crate::evaluate::locate::path_of_text(attribute);
            locator
                .path(n.module, &resource.body, &path)
                .map(|l| l.span)
        };
        if crate::instances::report_at(self.eval.diags, span, &diagnostics, at) {
            self.failed.insert(node);
            return;
        }
        let mut instances = instances;
        if unread {
            for instance in &mut instances {
                instance.planned = Value::Unknown;
            }
        }
        let provider = self
            .graph
            .provider_of
            .get(&node)
            .map(|p| self.graph.graph[*p].address(self.eval.stack))
            .unwrap_or_default();
        let dependencies = resource_dependencies(self.graph, node, self.eval.stack);
        let mark = self.eval.flows.borrow().mark();
        for instance in &instances {
            let kept = self.repetitions.remove(&instance.address);
            self.eval.postconditions(
                n.module,
                resource,
                &instance.address,
                kept,
                &instance.planned,
            );
        }
        // A provider's answer may hold secrets its configuration did not (a Secret's
        // data): what the configuration read went into them.
        let secret = instances.iter().any(|i| i.planned.contains_sensitive());
        self.eval
            .flows
            .borrow_mut()
            .settle(mark, n.module, decl_of(resource.mode), &n.key, secret);
        // Only what something may read is assembled: one copy fewer of every planned
        // instance of a resource nothing references. Check blocks and import blocks
        // are evaluated outside the graph, so their module's resources always are.
        let module = &self.eval.stack.modules[n.module];
        let read = !module.checks.is_empty()
            || !module.imports.is_empty()
            || self
                .graph
                .graph
                .neighbors_directed(node, Direction::Outgoing)
                .next()
                .is_some();
        let value = if read {
            assemble(
                resource,
                instances.iter().map(|i| (&i.key, i.planned.clone())),
            )
        } else {
            Value::Unknown
        };
        if resource.mode == ResourceMode::Data {
            for instance in instances.iter().filter(|i| i.planned.is_wholly_known()) {
                let encoded = encode(&instance.planned, self.salt);
                self.data.insert(
                    instance.address.clone(),
                    DataRecord {
                        value: encoded.json,
                        sensitive: encoded.sensitive,
                    },
                );
            }
        }
        if resource.mode == ResourceMode::Managed {
            for instance in &instances {
                let change = self.change_for(
                    n.module,
                    resource,
                    instance,
                    &provider,
                    &dependencies,
                    n.span,
                );
                if !instance.gpu_facts.is_empty() {
                    self.gpu_sources.insert(
                        instance.address.clone(),
                        (n.module, resource.local_address()),
                    );
                }
                self.gpu_facts.extend(
                    instance
                        .gpu_facts
                        .iter()
                        .map(|f| (instance.address.clone(), f.clone())),
                );
                for key in &instance.order.makes {
                    self.makers
                        .entry(key.clone())
                        .or_default()
                        .push((node, instance.address.clone()));
                }
                if !change.is_no_op() {
                    self.changing.insert(node);
                }
                self.needs.extend(
                    instance
                        .order
                        .needs
                        .iter()
                        .map(|need| (node, instance.address.clone(), n.span, need.clone())),
                );
                self.changes.push(change);
            }
        }
        store(self.eval, n.module, resource, value);
    }
}

/// What the instances of one resource block are evaluated with.
struct Site<'s> {
    module: usize,
    r: &'s Resource,
    schema: &'s gpustack_protocol::Schema,
    schema_paths: &'s [gpustack_protocol::Path],
    context: &'s str,
    mark: usize,
}

/// One instance ready for its provider: its configuration, live state and import.
pub(super) struct Request {
    key: InstanceKey,
    address: String,
    prior: Option<Value>,
    config: Value,
    import: Option<String>,
    vanished: bool,
    seed: Option<[u8; 32]>,
    /// Tainted, or named by `-replace`: its new object is planned as a create.
    forced: bool,
}

impl Planner<'_, '_> {
    /// One instance's configuration evaluated, its live state taken from the refresh and its
    /// import found; None (with an error) when it would create an object this stack already
    /// manages at another address.
    fn instance_request(&mut self, site: &Site<'_>, instance: Instance) -> Option<Request> {
        let Instance {
            key,
            address,
            repetition,
        } = instance;
        let r = site.r;
        self.spans.insert(address.clone(), r.span);
        if let Some(kept) = self
            .eval
            .preconditions(site.module, r, &address, &repetition)
        {
            self.repetitions.insert(address.clone(), kept);
        }
        let mut config =
            self.eval
                .decode(site.module, &r.body, site.schema, repetition, site.context);
        self.eval.provider_checks(r, &config);
        if config.contains_sensitive() || crate::sensitive::sets_any(&config, site.schema_paths) {
            self.eval.flows.borrow_mut().taint_since(site.mark);
        }
        // Digests (a state read without refresh) give way to the configuration's values.
        // Taken, not copied: drift was noted when the live state arrived.
        let refreshed = self.refreshed.remove(&address).inspect(|_| {
            self.taken.insert(address.clone());
        });
        // In the state, but its object is gone.
        let vanished = matches!(refreshed, Some(None));
        let prior = refreshed
            .flatten()
            .map(|p| crate::sensitive::rehydrate(p, &config, self.salt));
        if let Some(prior) = &prior {
            keep_ignored(&mut config, prior, r.lifecycle());
        }
        // An `import` block for an instance the state does not have yet.
        let import = match &prior {
            None => self
                .imports
                .get(&address)
                .map(|(id, _)| id.clone())
                .or_else(|| {
                    self.options
                        .imports
                        .iter()
                        .find(|(to, _)| *to == address)
                        .map(|(_, id)| id.clone())
                }),
            Some(_) => None,
        };
        if prior.is_none()
            && import.is_none()
            && r.mode == ResourceMode::Managed
            && let Some(other) = self.known_elsewhere(&r.type_name, &config, &address)
        {
            self.eval.diags.push(Diag::error(
                Some(r.span),
                "Create and destroy of one object",
                format!("{address} would create the object that {other} already manages in this stack: the apply would take it over and then delete it under its old address. If the resource was renamed or moved, say so:\n\n  moved {{\n    from = {other}\n    to   = {address}\n  }}"),
            ));
            return None;
        }
        let keyed = self.state.is_some_and(|s| s.digest_key.is_some());
        let seed = (keyed || !self.options.speculative)
            .then(|| self.salt.seed(self.state.map_or(0, |s| s.serial), &address));
        let forced = prior.is_some()
            && (self.is_tainted(&address) || self.options.replace.iter().any(|a| a == &address));
        Some(Request {
            key,
            address,
            prior,
            config,
            import,
            vanished,
            seed,
            forced,
        })
    }
}

/// One instance's call to its provider, with what it borrows from its resource.
struct InstanceCall<'s> {
    handle: Configured,
    type_name: String,
    mode: ResourceMode,
    owner: String,
    preview: bool,
    schema: &'s gpustack_protocol::Schema,
    schema_paths: &'s [gpustack_protocol::Path],
    request: Request,
}

/// Plans a managed instance, or reads a data source whose configuration is known.
async fn plan_instance(call: InstanceCall<'_>) -> (PlannedInstance, Vec<Diagnostic>) {
    let InstanceCall {
        handle,
        type_name,
        mode,
        owner,
        preview,
        schema,
        schema_paths,
        request:
            Request {
                key,
                address,
                prior,
                config,
                import,
                vanished,
                seed,
                forced,
            },
    } = call;
    let _permit = handle.permits.acquire().await;
    let secrets = Secrets::of(prior.as_ref(), &config, schema_paths);
    match mode {
        ResourceMode::Managed => {
            plan_managed(ManagedInstance {
                handle: &handle,
                type_name,
                key,
                address,
                prior,
                config,
                import,
                vanished,
                schema_paths,
                schema,
                owner,
                preview,
                seed,
                forced,
            })
            .await
        }
        ResourceMode::Data if config.is_wholly_known() => {
            let response = handle
                .instance
                .read_data_source(ReadDataSourceRequest {
                    type_name,
                    config: config.unmark_deep().0,
                })
                .await;
            (
                PlannedInstance {
                    key,
                    address,
                    prior: None,
                    planned: secrets.mark(response.state),
                    requires_replace: vec![],
                    gpu_facts: vec![],
                    order: Default::default(),
                    importing: None,
                },
                response.diagnostics,
            )
        }
        ResourceMode::Data => (
            PlannedInstance {
                key,
                address,
                prior: None,
                planned: Value::Unknown,
                requires_replace: vec![],
                gpu_facts: vec![],
                order: Default::default(),
                importing: None,
            },
            vec![],
        ),
    }
}
