//! Deletions, last and dependents first.

use super::*;

/// Deletions as a graph: an object is deleted only after everything that depends on it.
pub(super) fn deletion_order(deletions: &[ResourceChange]) -> DiGraph<(), ()> {
    let mut graph = DiGraph::new();
    let nodes: Vec<NodeIndex> = deletions.iter().map(|_| graph.add_node(())).collect();
    let mut by_config: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in deletions.iter().enumerate() {
        by_config
            .entry(d.config_address.as_str())
            .or_default()
            .push(i);
    }
    for (i, d) in deletions.iter().enumerate() {
        for dependency in &d.dependencies {
            for &j in by_config.get(dependency.as_str()).into_iter().flatten() {
                if i != j {
                    // i depends on j: delete i first.
                    graph.update_edge(nodes[i], nodes[j], ());
                }
            }
        }
    }
    graph
}

pub(super) struct Deleter<'l, 's, 'p> {
    pub(super) handles: HashMap<String, Handle>,
    /// Destroy-time provisioners, by address: run before the object is destroyed.
    pub(super) provisioning: HashMap<String, Vec<super::provision::Pending>>,
    pub(super) ledger: &'l mut Ledger<'s, 'p>,
    pub(super) failed: HashSet<NodeIndex>,
    pub(super) nodes: Vec<ResourceChange>,
    /// Edges from each deletion to those that wait for it.
    pub(super) order: DiGraph<(), ()>,
}

impl Steps for Deleter<'_, '_, '_> {
    type Outcome = Done;

    fn start(&mut self, node: NodeIndex) -> Option<BoxFuture<'static, Done>> {
        let change = self.nodes[node.index()].clone();
        // What a failed deletion depends on stays: a namespace, a CRD or an operator release
        // is not deleted under an object that still exists.
        let blocked: Vec<String> = self
            .order
            .neighbors_directed(node, Direction::Incoming)
            .filter(|d| self.failed.contains(d))
            .map(|d| self.nodes[d.index()].address.clone())
            .collect();
        if !blocked.is_empty() {
            self.ledger.diags.push(Diag::error(
                None,
                "Kept: a dependent was not destroyed",
                format!(
                    "{} was kept, because {} (which depends on it) could not be destroyed. Destroy again once that succeeds.",
                    change.address,
                    blocked.join(", ")
                ),
            ));
            self.failed.insert(node);
            return None;
        }
        let Some(handle) = self.handles.get(&change.provider).cloned() else {
            self.ledger.diags.push(Diag::error(
                None,
                "Provider configuration not present",
                format!(
                    "{} cannot be destroyed: its provider configuration {} is not in the stack.",
                    change.address, change.provider
                ),
            ));
            self.failed.insert(node);
            return None;
        };
        let provisioners = self
            .provisioning
            .remove(&change.address)
            .unwrap_or_default();
        Some(Box::pin(async move {
            handle.progress.start(&change.address, "Destroying");
            let prior = change.before_value();
            let mut said_before = Vec::new();
            if let Some(prior) = prior.as_ref().filter(|_| !provisioners.is_empty()) {
                let (said, failed) = super::provision::run(
                    &provisioners,
                    prior,
                    &change.address,
                    &handle.progress,
                    &handle.stop,
                )
                .await;
                if failed {
                    // One that fails keeps the object, as in Terraform.
                    handle.progress.finish(&change.address, None);
                    return Done {
                        tainted: false,
                        new_state: Some(prior.clone()),
                        change: Some(change),
                        touched: false,
                        diagnostics: said,
                    };
                }
                said_before = said;
            }
            let request = ApplyResourceChangeRequest {
                type_name: change.type_name.clone(),
                prior_state: prior.clone().map(|p| p.unmark_deep().0),
                planned_state: None,
                sensitive_paths: prior
                    .as_ref()
                    .map(Value::sensitive_paths)
                    .unwrap_or_default(),
                owner: handle.owner.to_string(),
                collateral: change.collateral.clone(),
                stop: handle.stop.clone(),
                replaced_by: None,
            };
            let response = {
                let _permit = handle.permits.acquire().await;
                if handle.fence.is_lost() {
                    ApplyResourceChangeResponse {
                        new_state: prior.clone(),
                        diagnostics: vec![lock_lost("the delete")],
                    }
                } else {
                    handle.instance.apply_resource_change(request).await
                }
            };
            let ok = response.diagnostics.iter().all(|d| !d.is_error());
            handle
                .progress
                .finish(&change.address, ok.then_some("Destruction complete"));
            said_before.extend(response.diagnostics);
            Done {
                tainted: false,
                new_state: if ok { None } else { prior },
                change: Some(change),
                touched: ok,
                diagnostics: said_before,
            }
        }))
    }

    fn finish(&mut self, node: NodeIndex, done: Done) {
        for d in &done.diagnostics {
            let address = done
                .change
                .as_ref()
                .map(|c| c.address.clone())
                .unwrap_or_default();
            self.ledger.diags.push(Diag {
                severity: d.severity,
                summary: d.summary.clone(),
                detail: format!("{address}: {}", d.detail),
                span: None,
            });
        }
        if done.diagnostics.iter().any(Diagnostic::is_error) {
            self.failed.insert(node);
        }
        let dependencies = done
            .change
            .as_ref()
            .map(|c| c.dependencies.clone())
            .unwrap_or_default();
        self.ledger.record(&done, &dependencies);
        self.ledger.flush_soon();
    }
}
