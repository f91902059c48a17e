//! Refreshing states from the cluster: one paginated LIST per (kind, namespace), whatever the
//! number of states it answers.

use super::object_id::ObjectId;
use super::state::{desired, live_state, recorded_uid};
use crate::cluster::api_error;
use crate::connection::Connected;
use crate::types::ObjectType;
use gpustack_protocol::{Diagnostic, ReadResourcesRequest, ReadResourcesResponse, Value};
use indexmap::IndexMap;
use kube::api::ListParams;
use serde_json::Value as Json;
use std::collections::HashMap;

/// Objects per page of a refresh LIST: the API server's answer, and what this process holds of
/// it at once, stay bounded however many objects a namespace has.
const LIST_PAGE: u32 = 500;

/// What one paginated LIST of a refresh reads: API version, kind, namespace.
type ListGroup = (String, String, Option<String>);

impl Connected {
    /// One paginated LIST per (kind, namespace); every state of that group is answered from
    /// it. Each page is projected onto the states it answers as it arrives, so that what
    /// this process holds of the cluster is the states, not the namespace's objects. Each
    /// group owns its states and refreshes them in place: this process holds one copy of a
    /// state, however many objects a refresh reads.
    pub(super) async fn read(
        &self,
        ty: ObjectType,
        request: ReadResourcesRequest,
    ) -> ReadResourcesResponse {
        let mut groups: IndexMap<ListGroup, Vec<(usize, String)>> = IndexMap::new();
        let mut states: Vec<Option<Value>> = Vec::with_capacity(request.states.len());
        for (i, state) in request.states.into_iter().enumerate() {
            if let Some(id) = ObjectId::of(ty, &state) {
                groups
                    .entry((id.api_version, id.kind, id.namespace))
                    .or_default()
                    .push((i, id.name));
            }
            states.push(Some(state));
        }
        // A state belongs to one group at most: each group takes its own.
        let owned: Vec<_> = groups
            .into_iter()
            .map(|(key, members)| {
                let states: Vec<(usize, String, Value)> = members
                    .into_iter()
                    .filter_map(|(i, name)| Some((i, name, states[i].take()?)))
                    .collect();
                (key, states)
            })
            .collect();
        let lists = owned
            .into_iter()
            .map(|((api_version, kind, namespace), group)| async move {
                self.list_group(ty, &api_version, &kind, namespace, group)
                    .await
            });
        let mut diagnostics = Vec::new();
        for (answered, error) in futures::future::join_all(lists).await {
            if let Some(e) = error {
                diagnostics.push(Diagnostic::error("Cannot read from the Kubernetes API", e));
            }
            for (i, state) in answered {
                states[i] = state;
            }
        }
        let gpu_facts = self.read_facts(ty, &states, &mut diagnostics).await;
        ReadResourcesResponse {
            states,
            diagnostics,
            gpu_facts,
        }
    }

    /// The states of one (kind, namespace) group, refreshed from a paginated LIST: the live
    /// state of each whose object is listed, `None` for each whose object is gone. When a
    /// request fails, the states not yet read stay as they came, with the error.
    async fn list_group(
        &self,
        ty: ObjectType,
        api_version: &str,
        kind: &str,
        namespace: Option<String>,
        owned: Vec<(usize, String, Value)>,
    ) -> (Vec<(usize, Option<Value>)>, Option<String>) {
        let mut wanted: HashMap<String, Vec<(usize, Value)>> = HashMap::new();
        for (i, name, state) in owned {
            wanted.entry(name).or_default().push((i, state));
        }
        let mut answered = Vec::with_capacity(wanted.len());
        let unread = |mut answered: Vec<(usize, Option<Value>)>,
                      wanted: HashMap<String, Vec<(usize, Value)>>,
                      error: String| {
            let kept = wanted.into_values().flatten();
            answered.extend(kept.map(|(i, state)| (i, Some(state))));
            (answered, Some(error))
        };
        let found = match self.cluster.kind(api_version, kind).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                // The kind is gone from the cluster, and with it every object of the group.
                let gone = wanted.into_values().flatten().map(|(i, _)| (i, None));
                return (gone.collect(), None);
            }
            Err(e) => return unread(answered, wanted, api_error(&e)),
        };
        let namespace = found
            .namespaced
            .then(|| namespace.unwrap_or_else(|| "default".to_owned()));
        let api = self.cluster.api(&found, namespace.as_deref());
        let mut params = ListParams::default().limit(LIST_PAGE);
        loop {
            let page = match self.cluster.list_json(&api, &params).await {
                Ok(page) => page,
                Err(e) => return unread(answered, wanted, api_error(&e)),
            };
            let next = page.next().map(str::to_owned);
            for mut json in page.items {
                let Some((_, members)) = json
                    .pointer("/metadata/name")
                    .and_then(Json::as_str)
                    .and_then(|n| wanted.remove_entry(n))
                else {
                    continue;
                };
                // Items of a LIST carry no apiVersion and kind of their own.
                json["apiVersion"] = api_version.into();
                json["kind"] = kind.into();
                let uid = json.pointer("/metadata/uid").and_then(Json::as_str);
                if ty == ObjectType::Manifest
                    && let Some(uid) = uid
                {
                    self.mark_known(uid);
                }
                for (i, state) in members {
                    // An object of the recorded name but another uid is not the one this
                    // stack made or imported: that one is gone.
                    let replaced =
                        recorded_uid(&state).is_some_and(|recorded| Some(recorded) != uid);
                    answered.push((i, (!replaced).then(|| live_state(ty, state, &json))));
                }
            }
            match next {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        // A state the LIST did not answer is of an object that is gone.
        answered.extend(wanted.into_values().flatten().map(|(i, _)| (i, None)));
        (answered, None)
    }

    /// What the live objects say about GPUs, for drift; the cluster once, with the first.
    async fn read_facts(
        &self,
        ty: ObjectType,
        states: &[Option<Value>],
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<(usize, gpustack_protocol::GpuFact)> {
        let mut facts = Vec::new();
        for (i, state) in states.iter().enumerate() {
            let Some(state) = state else {
                continue;
            };
            let (Some(id), Some(object)) = (ObjectId::of(ty, state), self::desired(ty, state))
            else {
                continue;
            };
            let found = crate::capacity::object_facts(
                ty,
                &id.api_version,
                &id.kind,
                &id.name,
                id.namespace.as_deref(),
                &object,
                Some(&object),
            );
            if crate::capacity::needs_cluster(&found) && facts.is_empty() {
                self.push_cluster(&mut facts, i, diagnostics).await;
            }
            facts.extend(found.into_iter().map(|f| (i, f)));
        }
        facts
    }
}
