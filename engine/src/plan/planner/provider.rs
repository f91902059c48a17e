//! A provider node of the plan walk: the provider configured, and every state object it
//! serves refreshed in one batched read per type.

use super::*;

impl Planner<'_, '_> {
    // Long by design: the state's objects grouped for this configuration and the future that
    // configures the provider and refreshes them, which owns what it moves out of the walk.
    pub(super) fn start_provider(
        &mut self,
        node: NodeIndex,
        config: Value,
    ) -> BoxFuture<'static, Outcome> {
        let n = &self.graph.graph[node];
        let address = n.address(self.eval.stack);
        let name = n.key.split('.').next().unwrap_or_default().to_owned();
        let factory = self.eval.registry.provider(&name).cloned();
        // The state's objects served by this configuration, grouped by type for batched reads,
        // with the paths that are sensitive in each (their values are digests).
        type Object = (
            String,
            Value,
            Vec<gpustack_protocol::Path>,
            Option<[u8; 32]>,
        );
        let mut by_type: IndexMap<String, Vec<Object>> = IndexMap::new();
        if let Some(state) = self.state {
            // The provider the configuration gives a resource now (a resource moved into a
            // module has the module's), else the one that made it.
            let serves = |r: &&ResourceState| {
                self.config_providers
                    .get(&strip_instance_key(&r.address))
                    .unwrap_or(&r.provider)
                    == &address
            };
            for r in state.resources.iter().filter(serves) {
                let mut paths = r.sensitive_paths.clone();
                paths.extend(sensitive_attributes(
                    self.eval.registry.resource_schema(&r.type_name),
                ));
                let draws = self
                    .eval
                    .registry
                    .resource_schema(&r.type_name)
                    .is_some_and(gpustack_protocol::Schema::draws_secrets);
                let seed = r
                    .seed_serial
                    .filter(|_| draws)
                    .map(|serial| self.salt.seed(serial, &r.address));
                by_type.entry(r.type_name.clone()).or_default().push((
                    r.address.clone(),
                    Value::from_json(&r.attributes),
                    paths,
                    seed,
                ));
            }
        }
        let refresh = self.options.refresh;
        let salt = self.salt.clone();
        Box::pin(async move {
            let Some(factory) = factory else {
                return Outcome::Provider {
                    handle: None,
                    refreshed: vec![],
                    refresh_facts: vec![],
                    diagnostics: vec![Diagnostic::error("Unknown provider", name)],
                };
            };
            let handle = match crate::configure::configure(&factory, &config).await {
                Ok(handle) => handle,
                Err(diagnostics) => {
                    return Outcome::Provider {
                        handle: None,
                        refreshed: vec![],
                        refresh_facts: vec![],
                        diagnostics,
                    };
                }
            };
            let mut refreshed = Vec::new();
            let mut refresh_facts = Vec::new();
            let mut diagnostics = Vec::new();
            if refresh {
                // The states move into the requests: a refresh holds one copy of each.
                let reads = by_type.into_iter().map(|(type_name, objects)| {
                    let handle = handle.clone();
                    async move {
                        let _permit = handle.permits.acquire().await;
                        let mut addresses = Vec::with_capacity(objects.len());
                        let mut states = Vec::with_capacity(objects.len());
                        let mut sensitive_paths = Vec::with_capacity(objects.len());
                        let mut seeds = Vec::with_capacity(objects.len());
                        let mut digests = Vec::with_capacity(objects.len());
                        for (address, state, paths, seed) in objects {
                            addresses.push(address);
                            // The digests a value drawn again must have.
                            digests.push(if seed.is_some() {
                                crate::sensitive::stored_digests(&state, &paths)
                            } else {
                                vec![]
                            });
                            states.push(state);
                            sensitive_paths.push(paths);
                            seeds.push(seed);
                        }
                        let response = handle
                            .instance
                            .read_resources(ReadResourcesRequest {
                                type_name: type_name.clone(),
                                states,
                                sensitive_paths: sensitive_paths.clone(),
                                seeds,
                            })
                            .await;
                        (type_name, addresses, sensitive_paths, digests, response)
                    }
                });
                for (type_name, addresses, paths, digests, response) in
                    futures::future::join_all(reads).await
                {
                    diagnostics.extend(response.diagnostics);
                    if response.states.len() != addresses.len() {
                        // The protocol asks one answer per state; those without one are not
                        // known, and the failed provider plans nothing for them.
                        diagnostics.push(Diagnostic::error(
                            "Incomplete refresh",
                            format!(
                                "The provider answered {} of the {} {type_name} states it was asked to read.",
                                response.states.len(),
                                addresses.len()
                            ),
                        ));
                    }
                    refresh_facts.extend(
                        response
                            .gpu_facts
                            .into_iter()
                            .filter_map(|(i, fact)| Some((addresses.get(i)?.clone(), fact))),
                    );
                    for (((address, paths), digests), live) in addresses
                        .into_iter()
                        .zip(paths)
                        .zip(digests)
                        .zip(response.states)
                    {
                        let live = live
                            .map(|v| crate::sensitive::keep_matching_secrets(v, &digests, &salt));
                        // What was sensitive stays so in the live object.
                        refreshed.push((address, live.map(|v| v.mark_paths(&paths))));
                    }
                }
            } else {
                for (_, objects) in by_type {
                    refreshed.extend(objects.into_iter().map(|(address, prior, paths, _)| {
                        (address, Some(prior.mark_paths(&paths)))
                    }));
                }
            }
            Outcome::Provider {
                handle: Some(handle),
                refreshed,
                refresh_facts,
                diagnostics,
            }
        })
    }
}

impl Planner<'_, '_> {
    /// A provider configured (or not) and what its refresh read.
    pub(super) fn finish_provider(
        &mut self,
        node: NodeIndex,
        handle: Option<Configured>,
        refreshed: Vec<(String, Option<Value>)>,
        refresh_facts: Vec<(String, gpustack_protocol::GpuFact)>,
        diagnostics: Vec<Diagnostic>,
    ) {
        let span = Some(self.graph.graph[node].span);
        self.refresh_facts.extend(refresh_facts);
        let failed = report(self.eval.diags, span, &diagnostics);
        match handle {
            Some(handle) if !failed => {
                self.providers.insert(node, handle);
            }
            _ => {
                self.failed.insert(node);
            }
        }
        for (address, live) in &refreshed {
            self.note_drift(address, live.as_ref());
        }
        self.refreshed.extend(refreshed);
    }
}
