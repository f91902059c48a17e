//! `kubernetes_node_taint` (Terraform's schema): taints on a node someone else owns.
//!
//! A Node's `spec.taints` is an atomic list for server-side apply (`+listType=atomic`): whoever
//! applies it owns the whole list, so applying only this resource's taints would drop every
//! other taint, or conflict with whoever set them. Each apply therefore reads the node, puts
//! this resource's taints into the list as it is (the others' kept as they are) and applies
//! that list as a `kubernetes_patch` of the node, with the node's `resourceVersion` as the
//! precondition: a taint someone adds in between fails the apply instead of being lost.
//! Destroy applies the list without this resource's taints in the same way.

use crate::manifest::Objects;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    NestedBlock, PlanResourceChangeRequest, PlanResourceChangeResponse, ReadResourcesRequest,
    ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, attribute, set, text};
use gpustack_provider_sdk::resource::Resource;
use indexmap::IndexMap;
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value as Json, json};

pub(crate) const TYPE: &str = "kubernetes_node_taint";

/// The field manager when none is configured (Terraform's is "Terraform"): gpustack's, one per
/// resource type, as for labels, annotations and patches.
const DEFAULT_FIELD_MANAGER: &str = "gpustack-node-taint";

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

pub(crate) fn schema() -> Schema {
    let metadata =
        Schema::new("The node.").attr("name", Attribute::required(Type::String).force_new());
    let taint = Schema::new("A taint this resource puts on the node.")
        .attr("key", Attribute::required(Type::String))
        .attr("value", Attribute::required(Type::String))
        .attr(
            "effect",
            Attribute::required(Type::String)
                .describe("NoSchedule, PreferNoSchedule or NoExecute."),
        );
    let mut schema = Schema::new(
        "Taints on a node someone else owns; the node's other taints are left as they are.",
    )
    .attr(
        "field_manager",
        Attribute::optional_computed(Type::String).describe(
            "Server-side apply field manager, default \"gpustack-node-taint\" (Terraform's: \"Terraform\").",
        ),
    )
    .attr(
        "force",
        Attribute::optional(Type::Bool).describe(
            "Take over a taint of the same key and effect that is already on the node and was not put there by this resource.",
        ),
    )
    .attr(
        "id",
        Attribute::computed(Type::String).describe("NODE,KEY=VALUE:EFFECT,... as Terraform's."),
    );
    for (name, block, max_items) in [("metadata", metadata, Some(1)), ("taint", taint, None)] {
        schema.blocks.insert(
            name.to_owned(),
            NestedBlock {
                nesting: BlockNesting::List,
                min_items: 1,
                max_items,
                block,
                also_argument: false,
            },
        );
    }
    schema
}

/// Each taint's effect is one Kubernetes has, and no key is given twice (Terraform's rule).
pub(crate) fn check(check: &mut Checker<'_>) {
    let count = check
        .get("taint")
        .and_then(Value::as_list)
        .map_or(0, <[Value]>::len);
    let mut keys: Vec<&str> = Vec::new();
    for i in 0..count {
        check.one_of(&format!("taint[{i}].effect"), &EFFECTS);
        if let Some(key) = check.str(&format!("taint[{i}].key")) {
            if keys.contains(&key) {
                check.error(
                    &format!("taint[{i}].key"),
                    "Duplicate taint key",
                    format!("The taint key \"{key}\" is given twice: taint keys must be unique."),
                );
            }
            keys.push(key);
        }
    }
}

/// The configured taints as the API has them; `None` while not all known.
fn taints(state: &Value) -> Option<Vec<Json>> {
    let list = attribute(state, "taint")?;
    if !list.is_wholly_known() {
        return None;
    }
    Some(
        list.as_list()?
            .iter()
            .map(|t| {
                let field = |name| json!(text(t, name).unwrap_or_default());
                json!({ "key": field("key"), "value": field("value"), "effect": field("effect") })
            })
            .collect(),
    )
}

fn node_name(state: &Value) -> Option<&str> {
    attribute(state, "metadata")
        .and_then(Value::as_list)
        .and_then(<[Value]>::first)
        .and_then(|m| text(m, "name"))
}

fn field(taint: &Json, name: &str) -> String {
    taint[name].as_str().unwrap_or_default().to_owned()
}

/// A taint's identity on a node: its key and effect (the API server refuses two of the same).
fn same_taint(a: &Json, b: &Json) -> bool {
    field(a, "key") == field(b, "key") && field(a, "effect") == field(b, "effect")
}

/// Terraform's id: `NODE,KEY=VALUE:EFFECT,...`.
fn terraform_id(node: &str, taints: &[Json]) -> String {
    taints.iter().fold(node.to_owned(), |id, t| {
        format!(
            "{id},{}={}:{}",
            field(t, "key"),
            field(t, "value"),
            field(t, "effect")
        )
    })
}

fn field_manager(state: &Value) -> String {
    text(state, "field_manager")
        .unwrap_or(DEFAULT_FIELD_MANAGER)
        .to_owned()
}

/// The `kubernetes_patch` state of the node that `state` stands for, patching `patch`.
fn patch_state(state: &Value, patch: Option<Json>, force: bool) -> Value {
    let metadata = Value::Object(IndexMap::from([
        (
            "name".to_owned(),
            node_name(state).map_or(Value::Unknown, Value::string),
        ),
        ("namespace".to_owned(), Value::Null),
    ]));
    Value::Object(
        [
            ("api_version", Value::string("v1")),
            ("kind", Value::string("Node")),
            ("name", Value::Null),
            ("namespace", Value::Null),
            ("metadata", Value::List(vec![metadata])),
            (
                "patch",
                patch.as_ref().map_or(Value::Unknown, Value::from_json),
            ),
            ("live", Value::Null),
            ("field_manager", Value::string(field_manager(state))),
            ("force", Value::Null),
            ("force_conflicts", Value::Bool(force)),
            ("wait", Value::Null),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    )
}

/// The patch of this resource's own taints, as a refresh compares them.
fn own_patch(state: &Value) -> Option<Json> {
    taints(state).map(|t| json!({ "spec": { "taints": t } }))
}

/// The taints of a patch state's live view (`spec.taints`).
fn live_taints(patch_state: &Value) -> Vec<Json> {
    attribute(patch_state, "live")
        .map(Value::to_json_revealed)
        .and_then(|l| l.pointer("/spec/taints").cloned())
        .and_then(|t| t.as_array().cloned())
        .unwrap_or_default()
}

/// `typed` with its taints as the node has them: each of its own (by key and effect) with the
/// live value, in its order; one no longer on the node is left out.
fn with_live_taints(mut typed: Value, live: &[Json]) -> Value {
    let Some(own) = taints(&typed) else {
        return typed;
    };
    let found = own
        .iter()
        .filter_map(|t| live.iter().find(|l| same_taint(t, l)))
        .map(|l| {
            Value::Object(
                ["key", "value", "effect"]
                    .into_iter()
                    .map(|k| (k.to_owned(), Value::string(field(l, k))))
                    .collect(),
            )
        })
        .collect();
    set(&mut typed, "taint", Value::List(found));
    typed
}

/// The node's taint list with `desired` in it: each taint of the same key and effect replaced,
/// the others appended, the ones `prior` had and `desired` no longer has removed, and every
/// other taint kept as it is. An error names a taint that is on the node, was not put there by
/// this resource, and would be taken over without `force`.
fn merged(
    live: &[Json],
    prior: &[Json],
    desired: &[Json],
    force: bool,
    node: &str,
) -> Result<Vec<Json>, Box<Diagnostic>> {
    if !force
        && let Some((d, l)) = desired.iter().find_map(|d| {
            let l = live.iter().find(|l| same_taint(d, l))?;
            (!prior.iter().any(|p| same_taint(p, d))).then_some((d, l))
        })
    {
        return Err(Box::new(Diagnostic::error(
            format!(
                "Node {node} already has the taint {}:{}",
                field(d, "key"),
                field(d, "effect")
            ),
            format!(
                "The taint {}={}:{} was not put there by this resource. Set force = true to take it over (destroy then removes it), or leave it out.",
                field(l, "key"),
                field(l, "value"),
                field(l, "effect")
            ),
        )));
    }
    let mut out: Vec<Json> = Vec::new();
    for l in live {
        if let Some(d) = desired.iter().find(|d| same_taint(d, l)) {
            // The live entry keeps the time the API server recorded when the value is the same.
            out.push(if field(d, "value") == field(l, "value") {
                l.clone()
            } else {
                d.clone()
            });
        } else if !prior.iter().any(|p| same_taint(p, l)) {
            out.push(l.clone());
        }
    }
    out.extend(
        desired
            .iter()
            .filter(|d| !live.iter().any(|l| same_taint(d, l)))
            .cloned(),
    );
    Ok(out)
}

/// How many times an apply reads the node again when the node changed between its read and
/// its apply (a kubelet's status update, another writer's taint).
const TRIES: usize = 3;

/// The apply was refused because the node changed since it was read; nothing was applied.
fn changed_since_read(response: &ApplyResourceChangeResponse) -> bool {
    response
        .diagnostics
        .iter()
        .any(|d| d.detail.contains(crate::manifest::CHANGED_SINCE_READ))
}

/// `kubernetes_node_taint`: the `kubernetes_patch` of its node's taint list, translated.
pub(crate) struct NodeTaints {
    pub(crate) inner: Objects,
}

impl NodeTaints {
    /// The node's taints and resourceVersion; `None` when the node does not exist.
    async fn node(&self, name: &str) -> Result<Option<(Vec<Json>, String)>, Vec<Diagnostic>> {
        let api: kube::Api<Node> = kube::Api::all(self.inner.connected.cluster().client.clone());
        let node = api.get_opt(name).await.map_err(|e| {
            vec![Diagnostic::error(
                "Cannot reach the Kubernetes API",
                crate::cluster::api_error(&e),
            )]
        })?;
        Ok(node.map(|n| {
            let taints = n
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect();
            (taints, n.metadata.resource_version.unwrap_or_default())
        }))
    }

    /// Applies `taints` as the node's whole list, on the node as read at `version`.
    async fn apply_list(
        &self,
        request: &ApplyResourceChangeRequest,
        state: &Value,
        taints: Vec<Json>,
        version: Option<String>,
    ) -> ApplyResourceChangeResponse {
        let mut patch = json!({ "spec": { "taints": taints } });
        if let Some(version) = version {
            patch["metadata"] = json!({ "resourceVersion": version });
        }
        let inner = ApplyResourceChangeRequest {
            type_name: "kubernetes_patch".into(),
            prior_state: request
                .prior_state
                .as_ref()
                .map(|p| patch_state(p, own_patch(p), true)),
            planned_state: Some(patch_state(state, Some(patch), true)),
            sensitive_paths: Vec::new(),
            owner: request.owner.clone(),
            collateral: None,
            stop: request.stop.clone(),
            replaced_by: None,
        };
        self.inner.apply(inner).await
    }
}

#[async_trait::async_trait]
impl Resource for NodeTaints {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        crate::manifest::patch_read(
            &self.inner,
            request,
            |s| patch_state(s, own_patch(s), false),
            |typed, patch| with_live_taints(typed, &live_taints(patch)),
        )
        .await
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let config = request.config.clone();
        let inner = PlanResourceChangeRequest {
            type_name: "kubernetes_patch".into(),
            prior_state: request
                .prior_state
                .as_ref()
                .map(|p| patch_state(p, own_patch(p), false)),
            config: patch_state(&config, own_patch(&config), false),
            ..request
        };
        let response = self.inner.plan(inner).await;
        let mut planned = config;
        let manager = Value::string(field_manager(&planned));
        set(&mut planned, "field_manager", manager);
        let id = match (node_name(&planned), taints(&planned)) {
            (Some(node), Some(taints)) => Value::string(terraform_id(node, &taints)),
            _ => Value::Unknown,
        };
        set(&mut planned, "id", id);
        crate::manifest::patch_plan(planned, response, "metadata (name)")
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        let done = |diagnostics| ApplyResourceChangeResponse {
            new_state: None,
            diagnostics,
        };
        let prior_taints = request
            .prior_state
            .as_ref()
            .and_then(taints)
            .unwrap_or_default();
        let Some(planned) = request.planned_state.clone() else {
            // Destroy: the node's list without this resource's taints.
            let Some(prior) = request.prior_state.as_ref() else {
                return done(Vec::new());
            };
            let Some(node) = node_name(prior) else {
                return done(Vec::new());
            };
            let mut tries = 0;
            return loop {
                let (live, version) = match self.node(node).await {
                    Ok(Some(found)) => found,
                    // The taints went with the node.
                    Ok(None) => return done(Vec::new()),
                    Err(diagnostics) => return done(diagnostics),
                };
                let kept: Vec<Json> = live
                    .iter()
                    .filter(|l| !prior_taints.iter().any(|p| same_taint(p, l)))
                    .cloned()
                    .collect();
                if kept.len() == live.len() {
                    return done(Vec::new());
                }
                let response = self.apply_list(&request, prior, kept, Some(version)).await;
                tries += 1;
                if tries < TRIES && changed_since_read(&response) {
                    continue;
                }
                break ApplyResourceChangeResponse {
                    new_state: None,
                    diagnostics: response.diagnostics,
                };
            };
        };
        let node = node_name(&planned).unwrap_or_default().to_owned();
        let desired = taints(&planned).unwrap_or_default();
        let force = attribute(&planned, "force").and_then(Value::as_bool) == Some(true);
        let mut tries = 0;
        let response = loop {
            let (list, version) = match self.node(&node).await {
                Ok(Some((live, version))) => {
                    match merged(&live, &prior_taints, &desired, force, &node) {
                        Ok(list) => (list, Some(version)),
                        Err(diagnostic) => return done(vec![*diagnostic]),
                    }
                }
                // The patch refuses a node that does not exist, by name.
                Ok(None) => (desired.clone(), None),
                Err(diagnostics) => return done(diagnostics),
            };
            let response = self.apply_list(&request, &planned, list, version).await;
            tries += 1;
            if tries < TRIES && changed_since_read(&response) {
                continue;
            }
            break response;
        };
        ApplyResourceChangeResponse {
            new_state: response
                .new_state
                .map(|s| with_live_taints(planned, &live_taints(&s))),
            diagnostics: response.diagnostics,
        }
    }

    /// Terraform's id, `NODE` or `NODE,KEY=VALUE:EFFECT,...`: the taints it names, each on the
    /// node with that value; with the node alone, every taint the node has (as Terraform reads
    /// one).
    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let invalid = |why: String| {
            vec![Diagnostic::error(
                "Invalid import id",
                format!("\"{id}\" is not NODE or NODE,KEY=VALUE:EFFECT,... ({why})."),
            )]
        };
        let mut parts = id.split(',');
        let node = parts.next().unwrap_or_default();
        if node.is_empty() {
            return Err(invalid("no node name".into()));
        }
        let mut named = Vec::new();
        for part in parts {
            let parsed = part.rsplit_once(':').and_then(|(kv, effect)| {
                let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
                (!key.is_empty() && EFFECTS.contains(&effect))
                    .then(|| json!({ "key": key, "value": value, "effect": effect }))
            });
            named.push(parsed.ok_or_else(|| invalid(format!("\"{part}\" is not a taint")))?);
        }
        let (live, _) = self.node(node).await?.ok_or_else(|| {
            vec![Diagnostic::error(
                "Object not found",
                format!("Node {node} does not exist."),
            )]
        })?;
        let taints = if named.is_empty() {
            live.clone()
        } else {
            named
        };
        if let Some(missing) = taints.iter().find(|t| {
            !live
                .iter()
                .any(|l| same_taint(t, l) && field(t, "value") == field(l, "value"))
        }) {
            return Err(vec![Diagnostic::error(
                "Taint not found",
                format!(
                    "Node {node} has no taint {}={}:{}.",
                    field(missing, "key"),
                    field(missing, "value"),
                    field(missing, "effect")
                ),
            )]);
        }
        let list = |t: &[Json]| {
            Value::List(
                t.iter()
                    .map(|t| {
                        Value::Object(
                            ["key", "value", "effect"]
                                .into_iter()
                                .map(|k| (k.to_owned(), Value::string(field(t, k))))
                                .collect(),
                        )
                    })
                    .collect(),
            )
        };
        Ok(Value::Object(
            [
                (
                    "metadata",
                    Value::List(vec![Value::Object(IndexMap::from([(
                        "name".to_owned(),
                        Value::string(node),
                    )]))]),
                ),
                ("taint", list(&taints)),
                ("field_manager", Value::string(DEFAULT_FIELD_MANAGER)),
                ("force", Value::Null),
                ("id", Value::string(terraform_id(node, &taints))),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Json {
        json!({ "key": key, "value": value, "effect": effect })
    }

    #[test]
    fn the_list_keeps_other_taints_and_drops_only_its_own() {
        let hand = taint("hand", "x", "NoSchedule");
        let old = taint("gpu", "a", "NoSchedule");
        let new = taint("gpu", "b", "NoSchedule");
        let gone = taint("gone", "", "NoExecute");
        let live = vec![hand.clone(), old.clone(), gone.clone()];
        let list = merged(&live, &[old, gone], std::slice::from_ref(&new), false, "n").unwrap();
        assert_eq!(list, vec![hand.clone(), new.clone()]);
        // Someone else's taint of the same key and effect is refused without force.
        let refused = merged(
            std::slice::from_ref(&hand),
            &[],
            &[taint("hand", "y", "NoSchedule")],
            false,
            "n",
        );
        assert!(refused.is_err());
        let forced = merged(&[hand], &[], &[taint("hand", "y", "NoSchedule")], true, "n");
        assert_eq!(forced.unwrap(), vec![taint("hand", "y", "NoSchedule")]);
        assert_eq!(terraform_id("n", &[new]), "n,gpu=b:NoSchedule");
    }
}
