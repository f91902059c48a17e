//! The flow every cloud's GPU node pool shares — AKS agent pools, EKS node groups, GKE node
//! pools: refresh by key, a plan from the schema refined by the cloud's replace rules, the
//! pool's GPU facts, the check that a planned create does not take over a pool someone else
//! made (adopting one this stack marked), create/update/delete with the object kept on
//! failure, and import by ID. A cloud supplies only its API calls and rules ([`CloudPool`]).

use crate::resource::Resource;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic, Existing,
    GpuFact, PlanResourceChangeRequest, PlanResourceChangeResponse, PoolFact, PoolShape,
    ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value, plan_from_schema,
};
use std::collections::BTreeMap;

/// The attribute of every pool's state that records the stack mark the pool was created with
/// (its creation tag or label): a pool of the recorded name without it is another pool, made
/// since by someone else. Null for a pool imported unmarked, which is known by name alone.
pub const CREATION_TOKEN: &str = "creation_token";

/// [`CREATION_TOKEN`]'s attribute, for a cloud's pool schema.
pub fn creation_token_attribute() -> Attribute {
    Attribute::computed(Type::String).describe(
        "The stack mark the pool was created with (its gpustack.dev/creation-token tag or label): a pool of the same name without it is another one.",
    )
}

/// A pool as the cloud holds it: its state in the resource's schema, and the stack mark it
/// carries (the creation tag or label), if any.
pub struct LivePool {
    pub state: Value,
    pub mark: Option<String>,
}

impl LivePool {
    /// The pool's state, with the mark it carries.
    fn into_state(self) -> Value {
        with_token(self.state, self.mark.as_deref())
    }

    /// The live state of the pool `prior` records; `None` when this pool is another one. A
    /// state that records no mark (written before marks were recorded, or of a pool imported
    /// unmarked) is refreshed without one: a refresh that filled it in would be reported as a
    /// change made outside gpustack.
    fn of_record(self, prior: &Value) -> Option<Value> {
        match recorded_token(prior) {
            Some(token) if self.mark.as_deref() != Some(token) => None,
            Some(_) => Some(self.into_state()),
            // Written without the attribute at all (before it existed): so it stays.
            None if !has_token_attribute(prior) => Some(self.state),
            None => Some(with_token(self.state, None)),
        }
    }
}

fn has_token_attribute(state: &Value) -> bool {
    state
        .as_object()
        .is_some_and(|o| o.contains_key(CREATION_TOKEN))
}

fn recorded_token(state: &Value) -> Option<&str> {
    state
        .as_object()
        .and_then(|o| o.get(CREATION_TOKEN))
        .and_then(Value::as_str)
}

fn with_token(mut state: Value, token: Option<&str>) -> Value {
    crate::check::set(
        &mut state,
        CREATION_TOKEN,
        token.map_or(Value::Null, Value::string),
    );
    state
}

/// One cloud's node pool API and rules.
#[async_trait::async_trait]
pub trait CloudPool: Send + Sync {
    /// What identifies a pool; its `Display` is the import ID.
    type Key: std::fmt::Display + Send + Sync;
    /// What users call one, for messages: `EKS node group`.
    const KIND: &'static str;
    /// The import ID's shape, for the error a malformed one gets: `CLUSTER/NODEGROUP`.
    const ID_FORMAT: &'static str;

    fn schema(&self) -> Schema;

    /// The key of a configuration or state; `None` while a part of it is unknown.
    fn key(state: &Value) -> Option<Self::Key>;

    fn parse_id(id: &str) -> Option<Self::Key>;

    /// The configuration as the cloud compares it (empty collections as unset, ...).
    fn normalize(config: &Value) -> Value {
        config.clone()
    }

    /// What the schema cannot say about a change to a live pool: further replace reasons (a
    /// pool whose creation failed), values an update keeps or makes unknown.
    fn refine(prior: &Value, config: &Value, response: &mut PlanResourceChangeResponse) {
        let _ = (prior, config, response);
    }

    async fn get(&self, key: &Self::Key) -> Result<Option<LivePool>, Diagnostic>;

    /// What the plan's capacity lines call a pool: `nodepool`, `nodegroup`.
    const POOL_KIND: &'static str;
    /// The label the cloud gives a pool's nodes, with the pool's name as its value.
    const POOL_LABEL: &'static str;

    /// The pool's name in a state.
    fn name(state: &Value) -> Option<&str>;

    /// The labels a state gives the pool's nodes (besides [`CloudPool::POOL_LABEL`]).
    fn node_labels(state: &Value) -> BTreeMap<String, String>;

    /// The attribute [`CloudPool::node_labels`] reads.
    const NODE_LABELS_ATTRIBUTE: &'static str;

    /// The machines and GPUs a state describes; `None` while unknown, or for a pool
    /// without GPUs.
    async fn shape(&self, state: &Value) -> Option<PoolShape>;

    /// GPU software the cloud runs on the pool by itself (a device plugin), if the state
    /// turns it on.
    fn managed_gpu_software(_state: &Value) -> Option<gpustack_protocol::ManagedSoftware> {
        None
    }

    /// Creates the pool marked with `owner` (its creation tag or label; a token of its own
    /// when `owner` is empty); on failure, the pool as far as it was made.
    async fn create(
        &self,
        planned: &Value,
        owner: &str,
    ) -> Result<Value, (Option<Value>, Diagnostic)>;

    async fn update(&self, prior: &Value, planned: &Value) -> Result<Value, Diagnostic>;

    async fn delete(&self, prior: &Value) -> Result<(), Diagnostic>;
}

/// A [`CloudPool`] as a [`Resource`].
pub struct Pools<P>(pub std::sync::Arc<P>);

impl<P: CloudPool> Pools<P> {
    /// The answer to an update (`updating`) or a delete of the pool `prior` records, when that
    /// pool is no longer there: gone, or another pool of its name (without its mark). An
    /// update would create or change another pool; a delete leaves the other one.
    async fn not_there(
        &self,
        prior: &Value,
        updating: bool,
    ) -> Option<ApplyResourceChangeResponse> {
        let token = recorded_token(prior)?;
        let key = P::key(prior)?;
        let live = match self.0.get(&key).await {
            Ok(live) => live,
            Err(d) => {
                return Some(ApplyResourceChangeResponse {
                    new_state: Some(prior.clone()),
                    diagnostics: vec![d],
                });
            }
        };
        let another = match &live {
            Some(live) if live.mark.as_deref() == Some(token) => return None,
            Some(_) => true,
            None => false,
        };
        let not_there = crate::NotThere {
            what: format!("{} {key}", P::KIND),
            noun: "pool",
            removed: "deleted",
            replaced: "deleted and made again by someone else",
            recorded: format!("mark {token}"),
        };
        Some(not_there.answer(prior, updating, another))
    }

    /// The pool's machines and node labels, for the plan's capacity lines. `new`: the change
    /// makes a new pool (a create or a replacement).
    async fn pool_fact(
        &self,
        prior: Option<&Value>,
        planned: Option<&Value>,
        new: bool,
    ) -> Option<GpuFact> {
        let before = match prior {
            Some(p) => self.0.shape(p).await,
            None => None,
        };
        let after = match planned {
            Some(p) => self.0.shape(p).await,
            None => None,
        };
        if before.is_none() && after.is_none() {
            return None;
        }
        let labelled = planned.or(prior)?;
        let name = P::name(labelled).unwrap_or_default().to_owned();
        let mut node_labels = P::node_labels(labelled);
        node_labels.insert(P::POOL_LABEL.to_owned(), name.clone());
        Some(GpuFact::Pool(PoolFact {
            kind: P::POOL_KIND.to_owned(),
            name,
            node_labels,
            labels_attribute: gpustack_protocol::path([P::NODE_LABELS_ATTRIBUTE]),
            before,
            after,
            new,
            managed_gpu_software: P::managed_gpu_software(labelled),
        }))
    }
}

#[async_trait::async_trait]
impl<P: CloudPool> Resource for Pools<P> {
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let reads = request.states.iter().map(|state| async move {
            match P::key(state) {
                Some(key) => self
                    .0
                    .get(&key)
                    .await
                    .map(|live| live.and_then(|l| l.of_record(state))),
                None => Ok(Some(state.clone())),
            }
        });
        ReadResourcesResponse::collect(&request.states, futures::future::join_all(reads).await)
    }

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
        let config = P::normalize(&request.config);
        let prior = request.prior_state.as_ref();
        let mut response = plan_from_schema(&self.0.schema(), prior, &config);
        if let Some(prior) = prior {
            P::refine(prior, &config, &mut response);
        }
        let new = prior.is_none() || !response.requires_replace.is_empty();
        // An update keeps the pool, and with it its mark.
        if let Some(prior) = prior.filter(|_| !new) {
            response.planned_state = with_token(response.planned_state, recorded_token(prior));
        }
        // Values unknown until apply (a machine type from another resource) leave the
        // capacity out rather than guess it.
        let planned = (!response.planned_state.is_null()).then_some(&response.planned_state);
        response.gpu_facts = self
            .pool_fact(prior, planned, new)
            .await
            .into_iter()
            .collect();
        if prior.is_none()
            && let Some(key) = P::key(&config)
        {
            match self.0.get(&key).await {
                Ok(Some(live)) => {
                    response.existing = Some(Existing {
                        import_id: key.to_string(),
                        describe: format!("{} {key}", P::KIND),
                        owned: !request.owner.is_empty()
                            && live.mark.as_deref() == Some(request.owner.as_str()),
                    });
                }
                Ok(None) => {}
                Err(d) => response.diagnostics.push(d),
            }
        }
        response
    }

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        if let Some(prior) = &request.prior_state
            && let Some(response) = self.not_there(prior, request.planned_state.is_some()).await
        {
            return response;
        }
        // Only an owner is a mark known before the create: a pool created without one (a
        // token of the cloud's own) is known by name alone.
        let mark = (!request.owner.is_empty()).then_some(request.owner.as_str());
        crate::apply_change(
            &request,
            async |planned| {
                self.0
                    .create(planned, &request.owner)
                    .await
                    .map(|state| with_token(state, mark))
                    .map_err(|(state, d)| (state.map(|s| with_token(s, mark)), d))
            },
            async |prior, planned| {
                self.0
                    .update(prior, planned)
                    .await
                    .map(|state| with_token(state, recorded_token(prior)))
            },
            async |prior| self.0.delete(prior).await,
        )
        .await
    }

    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let key = P::parse_id(id).ok_or_else(|| {
            vec![Diagnostic::error(
                "Invalid import ID",
                format!("\"{id}\" is not {}.", P::ID_FORMAT),
            )]
        })?;
        match self.0.get(&key).await.map_err(|d| vec![d])? {
            Some(live) => Ok(live.into_state()),
            None => Err(vec![Diagnostic::error(
                format!("{} not found", P::KIND),
                format!("There is no {} {key}.", P::KIND),
            )]),
        }
    }
}
