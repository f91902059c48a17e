//! The walk that carries out a plan's creates, updates and replacements: each change
//! finalised with the values now known, checked against what was planned, and made.

use super::provision::Provisioning;
use super::*;

pub(super) struct Applier<'w, 'a, 'l, 's, 'p> {
    pub(super) eval: &'w mut EvalContext<'a>,
    pub(super) fence: Arc<Fence>,
    pub(super) stop: gpustack_protocol::StopSignal,
    pub(super) owner: Arc<str>,
    pub(super) graph: &'a Graph,
    pub(super) inputs: &'a Inputs,
    pub(super) plan: &'a Plan,
    pub(super) changes: HashMap<String, &'a ResourceChange>,
    /// The addresses of each resource block's changes.
    pub(super) by_config: HashMap<&'a str, Vec<&'a str>>,
    pub(super) providers: HashMap<NodeIndex, Handle>,
    pub(super) failed: HashSet<NodeIndex>,
    pub(super) ledger: &'l mut Ledger<'s, 'p>,
    /// Instance addresses whose change the walk carried out (or skipped after a failure).
    pub(super) handled: HashSet<String>,
    pub(super) progress: Arc<Progress>,
    /// The count/for_each bindings of instances whose postconditions run after their change.
    pub(super) repetitions: HashMap<String, Option<Repetition>>,
}

impl Steps for Applier<'_, '_, '_, '_, '_> {
    type Outcome = Outcome;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Outcome>> {
        if self
            .graph
            .graph
            .neighbors_directed(node, Direction::Incoming)
            .any(|d| self.failed.contains(&d))
        {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        }
        let n = self.graph.graph[node].clone();
        match n.kind {
            NodeKind::Variable | NodeKind::Local | NodeKind::Output => {
                // A value that no longer evaluates stops what depends on it.
                let errors = self.eval.diags.error_count();
                self.eval
                    .step_value(self.graph, node, self.inputs, EvalOptions::default());
                if self.eval.diags.error_count() > errors {
                    self.failed.insert(node);
                }
                None
            }
            NodeKind::Provider => {
                let errors = self.eval.diags.error_count();
                let config = self.eval.provider(n.module, &n.key, n.span, n.implied);
                let name = n.key.split('.').next().unwrap_or_default().to_owned();
                let factory = self.eval.registry.provider(&name).cloned();
                let owner = self.owner.clone();
                match (config, factory) {
                    (Some(config), Some(factory)) if self.eval.diags.error_count() == errors => {
                        let progress = self.progress.clone();
                        let fence = self.fence.clone();
                        let stop = self.stop.clone();
                        let serial = self.plan.serial;
                        let plan_time: Arc<str> = self.plan.timestamp.as_str().into();
                        Some(Box::pin(async move {
                            if fence.is_lost() {
                                return Outcome::Provider(Err(vec![lock_lost(
                                    "the provider's configuration",
                                )]));
                            }
                            Outcome::Provider(
                                crate::configure::configure(&factory, &config).await.map(
                                    |configured| Handle {
                                        instance: configured.instance,
                                        fence,
                                        permits: configured.permits,
                                        progress,
                                        owner,
                                        stop,
                                        serial,
                                        plan_time,
                                    },
                                ),
                            )
                        }))
                    }
                    _ => {
                        self.failed.insert(node);
                        None
                    }
                }
            }
            NodeKind::Resource(mode) => {
                let module = &self.eval.stack.modules[n.module];
                let resource = match mode {
                    ResourceMode::Managed => &module.resources[&n.key],
                    ResourceMode::Data => &module.data[&n.key],
                };
                self.start_resource(node, n.module, resource)
            }
        }
    }

    fn finish(&mut self, node: NodeIndex, outcome: Outcome) {
        let n = self.graph.graph[node].clone();
        match outcome {
            Outcome::Provider(Ok(handle)) => {
                self.providers.insert(node, handle);
            }
            Outcome::Provider(Err(diagnostics)) => {
                self.report(Some(n.span), &diagnostics);
                self.failed.insert(node);
            }
            Outcome::Resource(done) => {
                let module = &self.eval.stack.modules[n.module];
                let resource = match n.kind {
                    NodeKind::Resource(ResourceMode::Data) => &module.data[&n.key],
                    _ => &module.resources[&n.key],
                };
                let dependencies =
                    crate::plan::resource_dependencies(self.graph, node, self.eval.stack);
                let mut failed = false;
                let mut done = done;
                let write_only = crate::evaluate::schema_of(self.eval.registry, resource)
                    .map(write_only_attributes)
                    .unwrap_or_default();
                // A write-only value reached the provider; it is recorded nowhere.
                for (_, d) in &mut done {
                    if let Some(state) = d.new_state.take() {
                        d.new_state = Some(crate::plan::without_write_only(state, &write_only));
                    }
                }
                for (_, d) in &done {
                    if let Some(change) = &d.change {
                        self.handled.insert(change.address.clone());
                    }
                    let diagnostics =
                        crate::instances::as_check_warnings(resource, d.diagnostics.clone());
                    failed |= crate::instances::report_at(
                        self.eval.diags,
                        Some(n.span),
                        &diagnostics,
                        |a| super::provision::provisioner_span(resource, a),
                    );
                    if resource.mode == ResourceMode::Managed {
                        self.ledger.record(d, &dependencies);
                    }
                    // Postconditions on the object as it now is; the change stays recorded.
                    if let (Some(change), Some(new_state)) = (&d.change, &d.new_state) {
                        let kept = self.repetitions.remove(&change.address);
                        failed |= self.eval.postconditions(
                            n.module,
                            resource,
                            &change.address,
                            kept,
                            new_state,
                        );
                    }
                }
                self.ledger.flush_soon();
                if failed {
                    self.failed.insert(node);
                }
                // A check's data source that could not be read is unknown to its assertions.
                let unread = resource.check.is_some()
                    && done
                        .iter()
                        .any(|(_, d)| d.diagnostics.iter().any(Diagnostic::is_error));
                let value = assemble(
                    resource,
                    done.iter()
                        .map(|(k, d)| (k, d.new_state.clone().unwrap_or(Value::Null))),
                );
                let value = if unread { Value::Unknown } else { value };
                store(self.eval, n.module, resource, value);
            }
        }
    }
}

impl Applier<'_, '_, '_, '_, '_> {
    pub(super) fn report(&mut self, span: Option<Span>, diagnostics: &[Diagnostic]) -> bool {
        report(self.eval.diags, span, diagnostics)
    }

    /// Changes of a node that will not run count as handled, so they are not retried as orphans.
    pub(super) fn mark_handled(&mut self, node: NodeIndex) {
        let address = self.graph.graph[node].address(self.eval.stack);
        for &instance in self.by_config.get(address.as_str()).into_iter().flatten() {
            self.handled.insert(instance.to_owned());
        }
    }

    pub(super) fn start_resource(
        &mut self,
        node: NodeIndex,
        module: usize,
        r: &Resource,
    ) -> Option<BoxFuture<'static, Outcome>> {
        let config_address = format!(
            "{}{}",
            self.eval.stack.modules[module].prefix(),
            r.local_address()
        );
        let has_changes = self.by_config.contains_key(config_address.as_str());
        let provider = self
            .graph
            .provider_of
            .get(&node)
            .and_then(|p| self.providers.get(p));
        // Secrets its provider drew from a seed are drawn again for what refers to them.
        let redraw = r.mode == ResourceMode::Managed
            && provider.is_some()
            && self
                .ledger
                .instances(&config_address)
                .any(|e| e.seed_serial.is_some() && !e.sensitive_paths.is_empty());
        if self.plan.mode != PlanMode::Normal
            || (!has_changes && r.mode == ResourceMode::Managed && !redraw)
        {
            let value = recorded(
                self.ledger.instances(&config_address),
                &config_address,
                r,
                crate::plan::state_value,
            );
            store(self.eval, module, r, value);
            return None;
        }
        let handle = self
            .graph
            .provider_of
            .get(&node)
            .and_then(|p| self.providers.get(p))
            .cloned();
        let schema = crate::evaluate::schema_of(self.eval.registry, r).cloned();
        let (Some(handle), Some(schema)) = (handle, schema) else {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        };
        let Some(instances) = expand(self.eval, module, r, &config_address) else {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        };
        let context = format!("a {} block", r.type_name);
        let mut work = Vec::new();
        let errors_before = self.eval.diags.error_count();
        for Instance {
            key,
            address,
            repetition,
        } in instances
        {
            // Preconditions the plan could not decide are decided now, before any change.
            if let Some(kept) = self.eval.preconditions(module, r, &address, &repetition) {
                self.repetitions.insert(address.clone(), kept);
            }
            let provisioning_repetition = repetition.clone();
            let mut config = self
                .eval
                .decode(module, &r.body, &schema, repetition, &context);
            // A configuration that no longer evaluates (a file that changed since the plan)
            // is never applied, not even as far as it goes.
            if self.eval.diags.error_count() > errors_before {
                continue;
            }
            if r.mode == ResourceMode::Data {
                let record = self.plan.snapshot.data.get(&address).cloned();
                work.push((key, Work::Read(address, config, record)));
                continue;
            }
            let change = self.changes.get(&address).copied();
            if change.is_none_or(|c| c.is_no_op())
                && let Some(entry) = self.ledger.get(&address)
                && let Some(serial) = entry.seed_serial
                && !entry.sensitive_paths.is_empty()
            {
                let seed = self.ledger.salt.seed(serial, &address);
                let redraw = Redraw {
                    state: crate::plan::state_value(entry),
                    paths: entry.sensitive_paths.clone(),
                    seed,
                    config: config.clone(),
                };
                work.push((key, Work::Redraw(Box::new(redraw))));
                continue;
            }
            let Some(change) = change else {
                // Not part of this plan (e.g. --target): it stays as recorded.
                let recorded = self.ledger.get(&address).map(crate::plan::state_value);
                work.push((key, Work::Keep(recorded)));
                continue;
            };
            if let Some(prior) = change.before_value() {
                let prior = crate::sensitive::rehydrate(prior, &config, &self.ledger.salt);
                keep_ignored(&mut config, &prior, r.lifecycle());
            }
            let provisioning = if r.provisioners().is_empty() {
                Provisioning::default()
            } else {
                match super::provision::prepare(
                    self.eval,
                    module,
                    r,
                    &change.actions,
                    &provisioning_repetition,
                ) {
                    Some(provisioning) => provisioning,
                    None => continue,
                }
            };
            work.push((
                key,
                Work::Change(Box::new(change.clone()), config, provisioning),
            ));
        }
        if self.eval.diags.error_count() > errors_before {
            self.failed.insert(node);
            self.mark_handled(node);
            return None;
        }
        if work
            .iter()
            .any(|(_, w)| matches!(w, Work::Change(c, ..) if !c.is_no_op()))
        {
            self.ledger.before_first_change();
        }
        let type_name = r.type_name.clone();
        let schema_paths = SchemaFacts {
            sensitive: sensitive_attributes(Some(&schema)),
            write_only: write_only_attributes(&schema),
        };
        let salt = self.ledger.salt.clone();
        Some(Box::pin(async move {
            let calls = work.into_iter().map(|(key, work)| {
                let (handle, type_name) = (handle.clone(), type_name.clone());
                let (schema_paths, salt) = (schema_paths.clone(), salt.clone());
                async move {
                    let done = do_work(&handle, type_name, work, &schema_paths, &salt).await;
                    (key, done)
                }
            });
            Outcome::Resource(futures::future::join_all(calls).await)
        }))
    }
}

/// What a change needs of its resource type's schema: the paths of its sensitive
/// attributes, and the names of its write-only ones.
#[derive(Clone)]
pub(crate) struct SchemaFacts {
    sensitive: Vec<gpustack_protocol::Path>,
    write_only: Vec<String>,
}

fn write_only_attributes(schema: &gpustack_protocol::Schema) -> Vec<String> {
    schema
        .attributes
        .iter()
        .filter(|(_, a)| a.write_only)
        .map(|(name, _)| name.clone())
        .collect()
}

/// One instance's work: a data source read (or the plan's answer), a recorded value kept, a
/// no-op recorded, or a change carried out.
async fn do_work(
    handle: &Handle,
    type_name: String,
    work: Work,
    schema_paths: &SchemaFacts,
    salt: &Salt,
) -> Done {
    match work {
        // The answer the plan was made with; read again only when the plan
        // could not read it (it depended on changes) or holds only its digest.
        Work::Read(_, _, Some(record))
            if !record.sensitive.is_object() && record.sensitive != true =>
        {
            Done {
                tainted: false,
                change: None,
                new_state: Some(Value::from_json(&record.value)),
                touched: false,
                diagnostics: vec![],
            }
        }
        Work::Read(address, config, record) => {
            let secrets = crate::plan::Secrets::of(None, &config, &schema_paths.sensitive);
            let _permit = handle.permits.acquire().await;
            if handle.fence.is_lost() {
                return Done {
                    tainted: false,
                    change: None,
                    new_state: None,
                    touched: false,
                    diagnostics: vec![lock_lost(&format!("the read of {address}"))],
                };
            }
            let response = handle
                .instance
                .read_data_source(gpustack_protocol::ReadDataSourceRequest {
                    type_name,
                    config: config.unmark_deep().0,
                })
                .await;
            let mut state = secrets.mark(response.state);
            let mut diagnostics = response.diagnostics;
            if let Some(record) = record {
                let paths = crate::sensitive::tree_paths(&record.sensitive);
                state = state.mark_paths(&paths);
                if encode(&state, salt).json != record.value {
                    diagnostics.push(Diagnostic::error(
                        "Data source changed since the plan",
                        format!("{address} answers differently than when the plan was made (its sensitive result is checked against the plan's digest). Nothing that depends on it is changed; make a new plan."),
                    ));
                }
            }
            Done {
                tainted: false,
                change: None,
                new_state: Some(state),
                touched: false,
                diagnostics,
            }
        }
        Work::Keep(recorded) => Done {
            tainted: false,
            change: None,
            new_state: recorded,
            touched: false,
            diagnostics: vec![],
        },
        Work::Redraw(redraw) => Done {
            tainted: false,
            change: None,
            new_state: Some(redraw.run(handle, type_name, salt).await),
            touched: false,
            diagnostics: vec![],
        },
        Work::Change(change, config, _) if change.is_no_op() => {
            // Recorded secrets are digests; the configuration has their values.
            let before = change
                .before_value()
                .map(|b| crate::sensitive::rehydrate(b, &config, salt));
            // An import with nothing to change is recorded as it is.
            let touched = change.importing.is_some();
            Done {
                tainted: false,
                change: Some(*change),
                new_state: before,
                touched,
                diagnostics: vec![],
            }
        }
        Work::Change(change, config, provisioning) => {
            carry_out(
                handle,
                type_name,
                *change,
                config,
                schema_paths,
                salt,
                &provisioning,
            )
            .await
        }
    }
}

pub(super) enum Work {
    /// A data source: its address, configuration and the answer the plan recorded.
    Read(String, Value, Option<crate::plan::DataRecord>),
    Keep(Option<Value>),
    /// A recorded object whose secrets its provider drew from a seed, drawn again.
    Redraw(Box<Redraw>),
    /// A change, its configuration, and the provisioners it runs.
    Change(Box<ResourceChange>, Value, Provisioning),
}

/// An object the change leaves as it is, whose secrets the state keeps as digests and its
/// provider drew from the seed of the plan that made it: what refers to them (a change of
/// another object, a data source) needs their values.
pub(super) struct Redraw {
    state: Value,
    paths: Vec<gpustack_protocol::Path>,
    seed: [u8; 32],
    /// Its configuration: the secrets it was given, whose digests the state holds.
    config: Value,
}

impl Redraw {
    /// The recorded object with the secrets its provider drew again where their digests are
    /// the state's; as recorded where the provider draws nothing or answers otherwise.
    async fn run(self, handle: &Handle, type_name: String, salt: &Salt) -> Value {
        // The secrets it was given are the configuration's; the provider draws the others.
        let state = crate::sensitive::rehydrate(self.state, &self.config, salt);
        let (recorded, _) = state.clone().unmark_deep();
        let digests = crate::sensitive::stored_digests(&recorded, &self.paths);
        let _permit = handle.permits.acquire().await;
        let response = handle
            .instance
            .read_resources(gpustack_protocol::ReadResourcesRequest {
                type_name,
                states: vec![recorded],
                sensitive_paths: vec![self.paths.clone()],
                seeds: vec![Some(self.seed)],
            })
            .await;
        match response.states.into_iter().next().flatten() {
            Some(live) if response.diagnostics.iter().all(|d| !d.is_error()) => {
                crate::sensitive::keep_matching_secrets(live, &digests, salt)
                    .mark_paths(&self.paths)
            }
            _ => state,
        }
    }
}

/// Finalises an instance's plan with the values now known, checks it against the saved
/// change, then creates, updates or replaces.
pub(super) async fn carry_out(
    handle: &Handle,
    type_name: String,
    change: ResourceChange,
    config: Value,
    schema_paths: &SchemaFacts,
    salt: &Salt,
    provisioning: &Provisioning,
) -> Done {
    let prior = change
        .before_value()
        .map(|p| crate::sensitive::rehydrate(p, &config, salt));
    if let Some(diagnostic) = digest_only_secret(&change, &config) {
        return Done {
            tainted: false,
            change: Some(change),
            new_state: prior,
            touched: false,
            diagnostics: vec![diagnostic],
        };
    }
    let secrets = crate::plan::Secrets::of(prior.as_ref(), &config, &schema_paths.sensitive);
    let final_plan = FinalPlan {
        handle,
        type_name: &type_name,
        change: &change,
        prior: prior.as_ref(),
        config: &config,
        secrets: &secrets,
        salt,
        write_only: &schema_paths.write_only,
    };
    let planned = match final_plan.make().await {
        Ok(planned) => planned,
        Err(Refusal::Diagnostics(diagnostics)) => {
            return Done {
                tainted: false,
                change: Some(change),
                new_state: prior,
                touched: false,
                diagnostics,
            };
        }
        Err(Refusal::Inconsistent(why)) => return inconsistent(change, prior, why),
        Err(Refusal::MadeSince(diagnostic)) => {
            return Done {
                tainted: false,
                change: Some(change),
                new_state: None,
                touched: false,
                diagnostics: vec![diagnostic],
            };
        }
    };
    let verb = progress_verb(&change);
    handle.progress.start(&change.address, verb.0);
    let step = Step {
        handle,
        type_name: &type_name,
        paths: &secrets.paths,
        collateral: change.collateral.as_ref(),
    };
    let mut diagnostics = Vec::new();
    let new_state = if change.is_replace() {
        // In the order the plan chose; if the first step fails nothing changed.
        let create_first = change.actions.first() == Some(&Action::Create);
        let mut created: Option<Value> = None;
        for (n, create) in [create_first, !create_first].into_iter().enumerate() {
            // Destroy-time provisioners run before the old object goes; one that fails
            // keeps it.
            if !create
                && let Some(prior) = prior.as_ref().filter(|_| !provisioning.destroy.is_empty())
                && {
                    let (said, failed) = super::provision::run(
                        &provisioning.destroy,
                        prior,
                        &change.address,
                        &handle.progress,
                        &handle.stop,
                    )
                    .await;
                    diagnostics.extend(said);
                    failed
                }
            {
                // The old object stays; a new one made first is recorded.
                if n == 0 {
                    handle.progress.finish(&change.address, None);
                    return Done {
                        tainted: false,
                        change: Some(change),
                        new_state: Some(prior.clone()),
                        touched: false,
                        diagnostics,
                    };
                }
                break;
            }
            let response = if create {
                step.apply(None, Some(planned.clone()), None).await
            } else {
                let successor = match &created {
                    Some(made) => Successor {
                        state: made.clone().unmark_deep().0,
                        made: true,
                    },
                    None => Successor {
                        state: planned.clone().unmark_deep().0,
                        made: false,
                    },
                };
                step.apply(prior.clone(), None, Some(successor)).await
            };
            let failed = response.diagnostics.iter().any(Diagnostic::is_error);
            diagnostics.extend(response.diagnostics);
            if create {
                created = response.new_state;
            } else if create_first && failed {
                // The old object could not go. A provider that answers with something other
                // than the old object answers with the new one's state, carrying what
                // finishes the deletion on a later apply.
                let old = prior.clone().map(|p| p.unmark_deep().0);
                if let Some(successor) = response.new_state.filter(|s| Some(s) != old.as_ref()) {
                    created = Some(successor);
                }
            }
            if n == 0 && diagnostics.iter().any(Diagnostic::is_error) {
                handle.progress.finish(&change.address, None);
                return Done {
                    tainted: false,
                    change: Some(change),
                    new_state: prior,
                    touched: false,
                    diagnostics,
                };
            }
        }
        created
    } else {
        let response = step.apply(prior.clone(), Some(planned), None).await;
        let failed = response.diagnostics.iter().any(Diagnostic::is_error);
        diagnostics.extend(response.diagnostics);
        // A failed update never drops the object from the state, whatever the provider says.
        match response.new_state {
            None if failed => prior.clone(),
            state => state,
        }
    };
    // Create-time provisioners run once the object exists; one that fails taints it.
    let mut tainted = false;
    if change.actions.contains(&Action::Create)
        && !provisioning.create.is_empty()
        && diagnostics.iter().all(|d| !d.is_error())
        && let Some(made) = &new_state
    {
        let (said, failed) = super::provision::run(
            &provisioning.create,
            &secrets.mark(made.clone()),
            &change.address,
            &handle.progress,
            &handle.stop,
        )
        .await;
        diagnostics.extend(said);
        tainted = failed;
    }
    let ok = diagnostics.iter().all(|d| !d.is_error());
    handle
        .progress
        .finish(&change.address, ok.then_some(verb.1));
    // A failed create leaves nothing; a failed update keeps what the provider reports.
    Done {
        tainted,
        change: Some(change),
        new_state: new_state.map(|s| secrets.mark(s)),
        touched: true,
        diagnostics,
    }
}

/// A secret the plan holds only as a digest, which ignore_changes put into the configuration:
/// its value is known to no one here, and the digest must never be sent.
fn digest_only_secret(change: &ResourceChange, config: &Value) -> Option<Diagnostic> {
    let path = config
        .sensitive_paths()
        .into_iter()
        .find(|p| config.at(p).is_some_and(crate::sensitive::is_digest))?;
    Some(Diagnostic::error(
        "Secret not in the saved plan",
        format!(
            "{}: ignore_changes keeps {}, a secret the saved plan holds only as a digest. Apply the stack directory instead of the plan file.",
            change.address,
            gpustack_protocol::path_text(&path)
        ),
    ))
}

/// Why a change is not made: the provider's errors, a final plan that is not the reviewed
/// one, or an object made since the plan by someone else.
enum Refusal {
    Diagnostics(Vec<Diagnostic>),
    Inconsistent(String),
    MadeSince(Diagnostic),
}

/// The provider's final plan of a change, with the values now known, held to the saved one.
struct FinalPlan<'c> {
    handle: &'c Handle,
    type_name: &'c str,
    change: &'c ResourceChange,
    prior: Option<&'c Value>,
    config: &'c Value,
    secrets: &'c crate::plan::Secrets,
    salt: &'c Salt,
    /// Write-only attributes: in the final plan (the provider applies them), never in the
    /// saved one, so not compared.
    write_only: &'c [String],
}

impl FinalPlan<'_> {
    async fn make(&self) -> Result<Value, Refusal> {
        let (handle, change, prior) = (self.handle, self.change, self.prior);
        let replace = change.is_replace();
        let _permit = handle.permits.acquire().await;
        if handle.fence.is_lost() {
            let what = format!("the change of {}", change.address);
            return Err(Refusal::Diagnostics(vec![lock_lost(&what)]));
        }
        let response = handle
            .instance
            .plan_resource_change(PlanResourceChangeRequest {
                type_name: self.type_name.to_owned(),
                prior_state: if replace {
                    None
                } else {
                    prior.cloned().map(|p| p.unmark_deep().0)
                },
                config: self.config.clone().unmark_deep().0,
                for_apply: true,
                preview: false,
                sensitive_paths: self.secrets.paths.clone(),
                owner: handle.owner.to_string(),
                seed: Some(self.salt.seed(handle.serial, &change.address)),
                plan_time: handle.plan_time.to_string(),
            })
            .await;
        if response.diagnostics.iter().any(Diagnostic::is_error) {
            return Err(Refusal::Diagnostics(response.diagnostics));
        }
        let final_replace = !response.requires_replace.is_empty() && prior.is_some();
        if final_replace && !replace {
            return Err(Refusal::Inconsistent(format!(
                "the saved plan updates it in place, but its provider now says {} forces a replacement",
                response.requires_replace.join(", ")
            )));
        }
        // Made since the plan, by someone else: the create would take it over (a server-side
        // apply, a Helm install, a file written over it). The plan checked; this is the
        // object as it is now.
        if prior.is_none()
            && let Some(existing) = response.existing.as_ref().filter(|e| !e.owned)
        {
            return Err(Refusal::MadeSince(Diagnostic::error(
                "Object already exists",
                format!(
                    "{} would create {}, which was made since the plan, and not by this stack: gpustack never changes or deletes an object it does not manage. Import it (id {}) or remove it, and plan again.",
                    change.address,
                    existing.describe,
                    serde_json::Value::String(existing.import_id.clone()),
                ),
            )));
        }
        let planned = self.secrets.mark(response.planned_state);
        let recorded = crate::plan::without_write_only(planned.clone(), self.write_only);
        if let Some(path) = inconsistency(change, &recorded, self.salt) {
            return Err(Refusal::Inconsistent(format!(
                "the value of {path} differs from the value the saved plan holds"
            )));
        }
        Ok(planned)
    }
}

/// One provider call of a change: a create, an update, or the delete of a replacement.
struct Step<'c> {
    handle: &'c Handle,
    type_name: &'c str,
    paths: &'c [gpustack_protocol::Path],
    collateral: Option<&'c gpustack_protocol::Collateral>,
}

impl Step<'_> {
    async fn apply(
        &self,
        prior: Option<Value>,
        planned: Option<Value>,
        replaced_by: Option<Successor>,
    ) -> ApplyResourceChangeResponse {
        let request = ApplyResourceChangeRequest {
            type_name: self.type_name.to_owned(),
            prior_state: prior.map(|p| p.unmark_deep().0),
            // The old object's deletion is held to what the plan said it takes with it.
            collateral: planned
                .is_none()
                .then(|| self.collateral.cloned())
                .flatten(),
            planned_state: planned.map(|p| p.unmark_deep().0),
            sensitive_paths: self.paths.to_vec(),
            owner: self.handle.owner.to_string(),
            stop: self.handle.stop.clone(),
            replaced_by,
        };
        let _permit = self.handle.permits.acquire().await;
        if self.handle.fence.is_lost() {
            return ApplyResourceChangeResponse {
                new_state: None,
                diagnostics: vec![lock_lost("a step of the change")],
            };
        }
        self.handle.instance.apply_resource_change(request).await
    }
}

/// A change refused because the provider's final plan is not the reviewed one.
pub(super) fn inconsistent(change: ResourceChange, prior: Option<Value>, why: String) -> Done {
    let diagnostic = Diagnostic::error(
        "Provider produced inconsistent final plan",
        format!(
            "When finalising the saved plan for {} with the values now known, {why}. The change is not made, nor anything that depends on it; make a new plan.",
            change.address
        ),
    );
    Done {
        tainted: false,
        change: Some(change),
        new_state: prior,
        touched: false,
        diagnostics: vec![diagnostic],
    }
}

/// The first attribute path whose final value differs from what the saved change knew
/// (values the plan did not know may now be anything).
pub(super) fn inconsistency(
    change: &ResourceChange,
    planned: &Value,
    salt: &Salt,
) -> Option<String> {
    let final_value = encode(planned, salt);
    first_difference(
        &change.after,
        &change.after_unknown,
        &final_value.json,
        &final_value.unknown,
        salt,
    )
}

/// The path of the first difference [`differs`] finds, as users write it.
pub(super) fn first_difference(
    saved: &serde_json::Value,
    saved_unknown: &serde_json::Value,
    now: &serde_json::Value,
    now_unknown: &serde_json::Value,
    salt: &Salt,
) -> Option<String> {
    let mut innermost_first = Vec::new();
    differs(
        saved,
        saved_unknown,
        now,
        now_unknown,
        &mut innermost_first,
        salt,
    )
    .then(|| {
        innermost_first.reverse();
        gpustack_protocol::path_text(&innermost_first)
    })
}

/// Whether `now` differs from `saved`; where it first does (keys in sorted order) is pushed
/// onto `at` innermost step first, so that equal subtrees cost no path allocations. Marks do
/// not decide: a digest on one side equals the value it digests on the other.
pub(super) fn differs(
    saved: &serde_json::Value,
    saved_unknown: &serde_json::Value,
    now: &serde_json::Value,
    now_unknown: &serde_json::Value,
    at: &mut gpustack_protocol::Path,
    salt: &Salt,
) -> bool {
    use gpustack_protocol::PathStep;
    use serde_json::Value as J;
    // Unknown then, anything now; and what a provider will only report after apply (a
    // preview it no longer makes) may be unknown now: no value it sends differs.
    if *saved_unknown == J::Bool(true) || *now_unknown == J::Bool(true) {
        return false;
    }
    let digest_of = |j: &J| salt.digest(&Value::from_json(j));
    let is_digest = |j: &J| j.as_str().is_some_and(crate::sensitive::is_digest_text);
    match (saved, now) {
        (J::String(digest), _) if is_digest(saved) && !is_digest(now) => {
            return *digest != digest_of(now);
        }
        (_, J::String(digest)) if is_digest(now) && !is_digest(saved) => {
            return digest_of(saved) != *digest;
        }
        _ => {}
    }
    let no = J::Bool(false);
    match (saved, now) {
        (J::Object(a), J::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.into_iter().any(|k| {
                let found = differs(
                    a.get(k).unwrap_or(&J::Null),
                    saved_unknown.get(k).unwrap_or(&no),
                    b.get(k).unwrap_or(&J::Null),
                    now_unknown.get(k).unwrap_or(&no),
                    at,
                    salt,
                );
                if found {
                    at.push(PathStep::Key(k.clone()));
                }
                found
            })
        }
        (J::Array(a), J::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().any(|(i, (x, y))| {
                let found = differs(
                    x,
                    saved_unknown.get(i).unwrap_or(&no),
                    y,
                    now_unknown.get(i).unwrap_or(&no),
                    at,
                    salt,
                );
                if found {
                    at.push(PathStep::Index(i));
                }
                found
            })
        }
        (a, b) => a != b,
    }
}

pub(super) fn progress_verb(change: &ResourceChange) -> (&'static str, &'static str) {
    match change.actions.as_slice() {
        [Action::Create] => ("Creating", "Creation complete"),
        [Action::Update] => ("Modifying", "Modifications complete"),
        [Action::Delete] => ("Destroying", "Destruction complete"),
        _ => ("Replacing", "Replacement complete"),
    }
}
