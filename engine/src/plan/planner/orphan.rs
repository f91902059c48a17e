//! What the configuration no longer declares: objects changed or deleted outside gpustack
//! (drift), orphans and `removed` blocks, destroy plans, and what a deletion takes with it.

use super::*;

pub(super) fn delete_change(
    r: &ResourceState,
    live: &Value,
    reason: &str,
    salt: &Salt,
) -> ResourceChange {
    let mut change = Sides::of(Some(live), None, salt).change(
        &r.address,
        &r.type_name,
        &r.provider,
        vec![Action::Delete],
        Some(reason.into()),
    );
    change.dependencies = r.dependencies.clone();
    change
}

/// Dropped from the state, the object left as it is.
fn forget_change(r: &ResourceState, salt: &Salt) -> ResourceChange {
    let recorded = state_value(r);
    let mut change = Sides::of(Some(&recorded), None, salt).change(
        &r.address,
        &r.type_name,
        &r.provider,
        vec![Action::Forget],
        None,
    );
    change.dependencies = r.dependencies.clone();
    change
}

impl Planner<'_, '_> {
    /// Notes an object whose live state differs from the state file: changed outside
    /// gpustack.
    pub(super) fn note_drift(&mut self, address: &str, live: Option<&Value>) {
        let (Some(state), Some(&index)) = (self.state, self.state_index.get(address)) else {
            return;
        };
        let r = &state.resources[index];
        if let Some(live) = live
            && encode(live, self.salt).json == r.attributes
        {
            return;
        }
        let recorded = state_value(r);
        let (action, reason) = if live.is_some() {
            (Action::Update, "changed_outside_gpustack")
        } else {
            (Action::Delete, "deleted_outside_gpustack")
        };
        let mut change = Sides::of(Some(&recorded), live, self.salt).change(
            &r.address,
            &r.type_name,
            &r.provider,
            vec![action],
            Some(reason.into()),
        );
        change.dependencies = r.dependencies.clone();
        self.drifted.push((index, change));
    }

    /// Objects whose live state differs from the state file, in the state's order.
    pub(super) fn drift(&mut self) -> Vec<ResourceChange> {
        let mut drifted = std::mem::take(&mut self.drifted);
        drifted.sort_by_key(|(index, _)| *index);
        drifted.into_iter().map(|(_, change)| change).collect()
    }

    /// State objects the configuration no longer has: they are deleted.
    pub(super) fn orphans(&mut self) {
        if self.options.mode != PlanMode::Normal {
            return;
        }
        let Some(state) = self.state else { return };
        let removals = self.removals();
        let planned: HashSet<&str> = self.changes.iter().map(|c| c.address.as_str()).collect();
        let mut orphans = Vec::new();
        for r in &state.resources {
            let config_address = strip_instance_key(&r.address);
            if planned.contains(r.address.as_str()) || r.mode == gpustack_state::ResourceMode::Data
            {
                continue;
            }
            if self.allowed.is_some() && !targeted(&self.options.targets, &r.address) {
                continue;
            }
            // `removed { lifecycle { destroy = false } }`, or a resource whose block said
            // `lifecycle { destroy = false }` (OpenTofu 1.12; the state keeps it) and no
            // removed block says destroy = true: out of the state, left as it is.
            let removed = gpustack_lang::address::Address::parse(&r.address)
                .ok()
                .and_then(|address| {
                    removals
                        .iter()
                        .filter(|(from, _)| address.starts_with(from))
                        .map(|(_, destroy)| *destroy)
                        .next()
                });
            if !removed.unwrap_or(!r.skip_destroy) {
                orphans.push(forget_change(r, self.salt));
                continue;
            }
            // Its configuration planned it (and took its live state).
            if self.taken.contains(&r.address) {
                continue;
            }
            let Some(live) = self.refreshed.get(&r.address) else {
                self.eval.diags.push(Diag::error(
                    None,
                    "Provider configuration not present",
                    format!("{} must be destroyed, but its provider configuration {} is no longer in the stack. Add it back to destroy the object, or forget it with gpustack state rm.", r.address, r.provider),
                ));
                continue;
            };
            let Some(live) = live else { continue };
            // What the deleted object meant for GPUs goes with it (a node leaves a sharing
            // config when its label resource is removed).
            let removed: Vec<_> = self
                .refresh_facts
                .iter()
                .filter(|(address, _)| *address == r.address)
                .filter_map(|(address, fact)| Some((address.clone(), fact.removed()?)))
                .collect();
            self.gpu_facts.extend(removed);
            let reason = if self.configured.contains(&config_address) {
                "delete_because_no_instance"
            } else {
                "delete_because_no_resource_config"
            };
            orphans.push(delete_change(r, live, reason, self.salt));
        }
        self.changes.extend(orphans);
    }

    /// The addresses of `removed` blocks, each with whether its instances are destroyed; one
    /// whose resource is still configured is an error.
    pub(super) fn removals(&mut self) -> Vec<(gpustack_lang::address::Address, bool)> {
        let mut out = Vec::new();
        let stack = self.eval.stack;
        for module in &stack.modules {
            let prefix = module.prefix();
            for removed in &module.removals {
                let Some(target) =
                    crate::plan::ownership::Target::of(&removed.from, "from", self.eval.diags)
                else {
                    continue;
                };
                let local = target.config_address();
                let full = format!("{prefix}{local}");
                if self.configured.contains(&full) {
                    self.eval.diags.push(Diag::error(
                        Some(removed.span),
                        "Removed resource is still configured",
                        format!("This removed block forgets {full}, but its resource block is still in the stack: delete the resource block too, or drop the removed block."),
                    ));
                    continue;
                }
                match target.literal() {
                    Some(local) => {
                        let mut address =
                            gpustack_lang::address::Address::parse(prefix.trim_end_matches('.'))
                                .map(|a| a.0)
                                .unwrap_or_default();
                        address.extend(local.0);
                        out.push((gpustack_lang::address::Address(address), removed.destroy));
                    }
                    None => self.eval.diags.push(Diag::error(
                        Some(removed.from.span()),
                        "Invalid address",
                        "The instance keys of a removed block must be literal strings or numbers.",
                    )),
                }
            }
        }
        out
    }

    /// Every object of the state, deleted; forgotten where its block (or, with no block,
    /// the state) says `lifecycle { destroy = false }`. A block whose `prevent_destroy`
    /// holds refuses the plan, as in Terraform.
    pub(super) fn destroy_changes(&mut self) -> Vec<ResourceChange> {
        let Some(state) = self.state else {
            return Vec::new();
        };
        let stack = self.eval.stack;
        let blocks: HashMap<String, (usize, &Resource)> = stack.resources_by_address().collect();
        let mut protected: HashMap<String, bool> = HashMap::new();
        let mut changes = Vec::new();
        for r in state
            .resources
            .iter()
            .filter(|r| r.mode == gpustack_state::ResourceMode::Managed)
        {
            if self.allowed.is_some() && !targeted(&self.options.targets, &r.address) {
                continue;
            }
            let config_address = strip_instance_key(&r.address);
            let block = blocks.get(&config_address).copied();
            if block.map_or(r.skip_destroy, |(_, b)| b.lifecycle().skip_destroy) {
                changes.push(forget_change(r, self.salt));
                continue;
            }
            if let Some((module, b)) = block {
                let protect = match protected.get(&config_address) {
                    Some(&protect) => protect,
                    None => {
                        let protect = self.eval.prevent_destroy(module, b);
                        protected.insert(config_address.clone(), protect);
                        protect
                    }
                };
                if protect {
                    self.eval.diags.push(Diag::error(
                        Some(b.span),
                        "Instance cannot be destroyed",
                        format!("{} has lifecycle.prevent_destroy set, but the plan destroys everything. Remove prevent_destroy to destroy it, or target the other resources.", r.address),
                    ));
                    continue;
                }
            }
            let mut change = match self.refreshed.get(&r.address) {
                Some(Some(live)) => delete_change(r, live, "delete_because_destroy", self.salt),
                Some(None) => continue,
                None => delete_change(r, &state_value(r), "delete_because_destroy", self.salt),
            };
            // Destroyed through the provider the configuration gives it now.
            if let Some(provider) = self.config_providers.get(&strip_instance_key(&r.address)) {
                change.provider = provider.clone();
            }
            if let Some((module, b)) = block.filter(|(_, b)| !b.provisioners().is_empty()) {
                let suffix = r.address.strip_prefix(&config_address).unwrap_or_default();
                let key = crate::instances::InstanceKey::of_suffix(suffix);
                let prior = change.before_value();
                change.runs = super::runs::planned_runs(
                    self.eval,
                    module,
                    b,
                    &change.actions,
                    &key,
                    prior.as_ref(),
                    &Value::Null,
                );
            }
            changes.push(change);
        }
        changes
    }

    /// Asks the provider of every planned deletion (a replacement's too) what it takes with
    /// it, all at once: the answer goes into the change, and a deletion that would take what
    /// the stack did not say it may is an error at its resource block.
    pub(super) async fn collateral(&mut self, changes: &mut [ResourceChange]) {
        let handles: HashMap<String, Configured> = self
            .providers
            .iter()
            .map(|(node, handle)| {
                (
                    self.graph.graph[*node].address(self.eval.stack),
                    handle.clone(),
                )
            })
            .collect();
        let owner = self.owner.clone();
        let managed: Arc<[String]> = self.known.keys().cloned().collect();
        let asks = changes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.actions.contains(&Action::Delete))
            .filter_map(|(i, c)| {
                let handle = handles.get(&c.provider)?.clone();
                let prior = c.before_value()?.unmark_deep().0;
                let replaced_by = c
                    .actions
                    .contains(&Action::Create)
                    .then(|| c.after_value())
                    .flatten()
                    .map(|after| {
                        let made_first = c.actions.first() == Some(&Action::Create);
                        (after.unmark_deep().0, made_first)
                    });
                let request = gpustack_protocol::PlanDeleteRequest {
                    type_name: c.type_name.clone(),
                    prior_state: prior,
                    replaced_by,
                    owner: owner.clone(),
                    managed: managed.clone(),
                };
                Some(async move {
                    let _permit = handle.permits.acquire().await;
                    (i, handle.instance.plan_delete(request).await)
                })
            });
        for (i, response) in futures::future::join_all(asks).await {
            let change = &mut changes[i];
            let span = self
                .spans
                .get(&change.address)
                .copied()
                .or_else(|| resource_span(self.eval.stack, &change.config_address));
            let diagnostics: Vec<Diagnostic> = response
                .diagnostics
                .into_iter()
                .map(|mut d| {
                    d.detail = format!("{}: {}", change.address, d.detail);
                    d
                })
                .collect();
            report(self.eval.diags, span, &diagnostics);
            change.collateral = response.collateral.filter(|c| !c.is_empty());
            let address = change.address.clone();
            self.gpu_facts
                .extend(response.gpu_facts.into_iter().map(|f| (address.clone(), f)));
        }
    }
}
