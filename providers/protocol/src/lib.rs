//! The provider protocol: what the engine and every provider agree on.
//!
//! Providers depend on this crate and never on the engine. Everything that crosses the boundary
//! is one of the request/response types below, built from [`Value`], [`Type`], [`Schema`] and
//! [`Diagnostic`].

mod capacity;
mod diagnostic;
pub mod limits;
pub mod number;
pub mod nvidia;
mod registry;
mod schema;
pub mod secrets;
pub mod terminal;
pub mod terraform;
mod types;
mod value;

pub use capacity::{
    CapacityChange, CeilingFact, CloudSharing, ClusterFact, ConfigMapFact, DeviceRequestFact,
    DeviceRequestKind, DraAttribute, DraDevice, DraDriverFact, DraDriverSource, GpuFact, GpuShape,
    ManagedSoftware, NodeFact, NodeLabelsFact, NodeRemoval, OperatorFact, OperatorSource, PoolFact,
    PoolShape, RolloutFact, path,
};

/// The annotation, label or tag key of a stack's mark on the objects it creates.
pub const OWNER_KEY: &str = "gpustack.dev/owner";
pub use diagnostic::{Diagnostic, Pos, Severity, SourceRange};
pub use registry::Registry;
pub use schema::{
    Attribute, BlockNesting, Names, NestedBlock, ProviderSchema, ProviderTypes, ResourceMode,
    Schema,
};
use std::sync::Arc;
pub use types::{ConversionError, ObjectAttr, Type, sort_set};
pub use value::{
    Marked, Number, Path, PathStep, SENSITIVE, Value, format_number, path_of_text, path_text,
};

/// An error and its causes in one line (`cannot write the state: 412: precondition failed`),
/// repeated messages once: SDK errors often say only "service error" at the top.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut current = error.source();
    while let Some(source) = current {
        parts.push(source.to_string());
        current = source.source();
    }
    parts.dedup();
    parts.join(": ")
}

/// Asks a provider for its schema.
#[derive(Debug, Clone, Default)]
pub struct GetSchemaRequest {}

/// A provider's schema: its configuration, resource types and data source types.
#[derive(Debug, Clone)]
pub struct GetSchemaResponse {
    pub schema: ProviderSchema,
    pub diagnostics: Vec<Diagnostic>,
}

/// Asks a provider to check a resource's configuration beyond what its schema expresses
/// (naming rules, value ranges, combinations of attributes). It borrows what it asks about:
/// the check reads the configuration and keeps nothing of it, and a copy of every resource's
/// configuration was a twentieth of a large `validate`.
#[derive(Debug, Clone, Copy)]
pub struct ValidateResourceConfigRequest<'a> {
    pub type_name: &'a str,
    /// The configuration, already converted to the schema's types; may hold unknowns.
    pub config: &'a Value,
}

/// Problems found in a resource's configuration; each names the attribute path it is about.
#[derive(Debug, Clone, Default)]
pub struct ValidateResourceConfigResponse {
    pub diagnostics: Vec<Diagnostic>,
}

/// Configuration of one `provider` block, converted to the provider's config schema.
#[derive(Debug, Clone)]
pub struct ConfigureRequest {
    pub config: Value,
}

/// Reads the live objects behind states recorded earlier; one call may carry many, so that a
/// provider can answer with one LIST instead of one GET per object.
#[derive(Debug, Clone)]
pub struct ReadResourcesRequest {
    pub type_name: String,
    pub states: Vec<Value>,
    /// Per state, the paths that are sensitive; their values are digests in `states`, and
    /// they stay sensitive in the live states whatever the answer marks.
    pub sensitive_paths: Vec<Vec<Path>>,
    /// Per state (or empty: none), the seed the plan that made the object gave its provider
    /// ([`PlanResourceChangeRequest::seed`]): a provider that drew the object's secret values
    /// from it draws them again, so that a secret the state keeps only as a digest is known
    /// to what refers to it. The engine keeps such a value only where its digest is the one
    /// in the state.
    pub seeds: Vec<Option<[u8; 32]>>,
}

/// One entry per requested state, in order: the live state, or `None` where the object is gone.
#[derive(Debug, Clone, Default)]
pub struct ReadResourcesResponse {
    pub states: Vec<Option<Value>>,
    pub diagnostics: Vec<Diagnostic>,
    /// What the live objects say about GPUs, by the index of their state: what drift
    /// (a refresh-only plan, which plans nothing) gives the GPU model.
    pub gpu_facts: Vec<(usize, GpuFact)>,
}

impl ReadResourcesResponse {
    /// One answer per state, from one read result each: the live state, or where a read
    /// failed, the state as it was (so nothing is forgotten) and the diagnostic.
    pub fn collect(
        states: &[Value],
        results: impl IntoIterator<Item = Result<Option<Value>, Diagnostic>>,
    ) -> Self {
        let mut response = Self::default();
        for (state, result) in states.iter().zip(results) {
            match result {
                Ok(live) => response.states.push(live),
                Err(d) => {
                    response.states.push(Some(state.clone()));
                    response.diagnostics.push(d);
                }
            }
        }
        response
    }
}

#[derive(Debug, Clone)]
pub struct PlanResourceChangeRequest {
    pub type_name: String,
    /// The refreshed state, or `None` for an object that does not exist yet.
    pub prior_state: Option<Value>,
    /// The configuration, converted to the schema; unknown where it depends on unapplied changes.
    pub config: Value,
    /// True when the engine finalises the plan just before applying it: apply itself will
    /// report the real object, so a provider may skip previews (a server-side dry-run) that
    /// only make the plan more informative.
    pub for_apply: bool,
    /// False when no one reads this plan before it is applied (`apply --auto-approve`): a
    /// provider skips previews whose only use is the plan's display (a server-side dry-run),
    /// so that each change costs one request. Checks that protect objects still run.
    pub preview: bool,
    /// Paths of the configuration and the prior state that hold secrets (values come without
    /// marks): what a provider derives from them (a digest, a copy) it returns marked with
    /// [`Value::sensitive`].
    pub sensitive_paths: Vec<Path>,
    /// This stack's mark: a provider sets it on every object it creates (a label, a tag, an
    /// annotation), and a planned create that finds the object already there tells by it
    /// whether this stack made it (see [`PlanResourceChangeResponse::existing`]).
    pub owner: String,
    /// A secret only this stack can derive, the same for one instance when its plan is made
    /// and when that plan is applied, and new with every plan made from a newer state: what a
    /// provider chooses at random (a password, a pet name, an ID) it derives from this, so
    /// that the plan shows what apply makes, and a saved plan (which holds no secret value)
    /// applies exactly. None in a plan that is neither saved nor applied of a stack with no
    /// state yet (whose secret is made with its first state): such values are unknown, as
    /// Terraform shows them.
    pub seed: Option<[u8; 32]>,
    /// "Now" for the plan (RFC 3339): when it was made, also when it is applied, so that what
    /// a provider derives from the time (`time_static`) is in the plan as apply makes it.
    pub plan_time: String,
}

#[derive(Debug, Clone, Default)]
pub struct PlanResourceChangeResponse {
    /// What the object will look like: configured values, prior values of computed attributes
    /// that will not change, unknown for what only apply can tell.
    pub planned_state: Value,
    /// Attribute paths whose change forces replacement (`vm_size`).
    pub requires_replace: Vec<String>,
    /// What this resource says about GPUs whatever it changes (a pool's size and machines, a
    /// sharing config, the cluster's GPU nodes): the engine's GPU model combines them across
    /// providers into checks and capacity lines.
    pub gpu_facts: Vec<GpuFact>,
    /// For a planned create (no prior state): the object is already there. Nothing the stack
    /// did not create or import is ever changed, so the engine refuses the plan unless the
    /// object carries this stack's mark (`owned`), in which case it adopts it by importing it.
    /// Asked for again when the plan is finalised (`for_apply`): an object made since the
    /// plan, not by this stack, stops the create.
    pub existing: Option<Existing>,
    /// What the change needs made first and what it makes, so that the engine can tell from
    /// the graph's order whether apply would meet what it needs.
    pub order: Order,
    pub diagnostics: Vec<Diagnostic>,
}

/// What a planned change needs to exist before it is applied, and what applying it makes:
/// keys the providers share (`kubernetes namespace https://10.0.0.1:6443 gpu-operator`), so
/// that a namespace made by a Helm release's `create_namespace` satisfies a ConfigMap of the
/// kubernetes provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Order {
    /// Missing now, and needed by this change.
    pub needs: Vec<Prerequisite>,
    /// Made by this change.
    pub makes: Vec<String>,
}

/// Something a change needs that its provider found missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prerequisite {
    /// The key a change that makes it names in [`Order::makes`].
    pub key: String,
    /// What users call it: `the namespace gpu-operator`.
    pub describe: String,
}

/// The key of a Kubernetes namespace of the cluster at `server`, as every provider names it.
pub fn namespace_key(server: &str, namespace: &str) -> String {
    format!("kubernetes namespace {server} {namespace}")
}

/// An object a planned create finds already there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    /// The id that imports it (`gpustack import ADDRESS ID`, `import { id = ... }`).
    pub import_id: String,
    /// What users call it: `Namespace gpu-operator`, `node pool ml-rg/ml-aks/gpupool`.
    pub describe: String,
    /// It carries this stack's mark: this stack created it (a run that died before it could
    /// record the object), so it is adopted instead of refused.
    pub owned: bool,
}

/// Creates (no prior state), updates (both) or deletes (no planned state) one object.
#[derive(Debug, Clone)]
pub struct ApplyResourceChangeRequest {
    pub type_name: String,
    pub prior_state: Option<Value>,
    pub planned_state: Option<Value>,
    /// As in [`PlanResourceChangeRequest::sensitive_paths`].
    pub sensitive_paths: Vec<Path>,
    /// As in [`PlanResourceChangeRequest::owner`]: set on what is created.
    pub owner: String,
    /// For a deletion: what the plan said it takes with it ([`PlanDeleteResponse::collateral`]).
    /// The deletion stops if it would now take more.
    pub collateral: Option<Collateral>,
    /// Set when the run is asked to stop (Ctrl-C): a change that takes many steps (a
    /// node-by-node rollout) finishes the step in progress and returns what it did.
    pub stop: StopSignal,
    /// For the deletion half of a replacement: the object that replaces this one.
    pub replaced_by: Option<Successor>,
}

/// The object a replacement puts in place of the one being deleted.
#[derive(Debug, Clone)]
pub struct Successor {
    /// Its state: as created (create-before-destroy), else as planned.
    pub state: Value,
    /// It exists already (create-before-destroy). A provider that cannot finish the deletion
    /// (a pool whose nodes could not be drained) may then answer with `new_state` set to this
    /// state, carrying what it needs to finish the deletion on a later apply: the engine
    /// records it in place of the new object's. Any other `new_state` is ignored.
    pub made: bool,
}

/// Whether the run has been asked to stop, as Terraform's `StopProvider` tells a provider.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl StopSignal {
    pub fn new(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self(Some(flag))
    }

    pub fn is_set(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// One run of a resource's provisioner (`local-exec`): its arguments evaluated, with the
/// object as it is (`self`).
pub struct ProvisionRequest {
    /// `command`, `interpreter`, `working_dir`, `environment`, `quiet`, without marks.
    pub config: Value,
    /// The arguments hold a secret: neither the command nor its output is shown.
    pub sensitive: bool,
    /// Where each line the command prints goes (the apply's progress, prefixed with the
    /// resource's address).
    pub output: Arc<dyn Fn(&str) + Send + Sync>,
    /// Ctrl-C: a running command is stopped.
    pub stop: StopSignal,
}

/// Runs provisioners of one kind. Supplied by the binary, as Terraform's provisioners are
/// plugins beside its providers: the engine evaluates the blocks and decides when they run.
#[async_trait::async_trait]
pub trait Provisioner: Send + Sync {
    /// Errors say why the command failed (it could not start, or exited non-zero).
    async fn provision(&self, request: ProvisionRequest) -> Vec<Diagnostic>;
}

/// Asks what deleting an object takes with it besides itself: a namespace's objects, a
/// CustomResourceDefinition's custom resources. Asked for every planned deletion, a
/// replacement's included.
#[derive(Debug, Clone)]
pub struct PlanDeleteRequest {
    pub type_name: String,
    /// The refreshed state of the object to delete.
    pub prior_state: Value,
    /// For a replacement: the object planned in its place (unknown values as the plan has
    /// them), and whether it is made first (create-before-destroy).
    pub replaced_by: Option<(Value, bool)>,
    /// As in [`PlanResourceChangeRequest::owner`]: what carries it is this stack's.
    pub owner: String,
    /// The identity of every object in this stack's state, whichever its provider
    /// ([`ProviderFactory::identity`]): what else the stack manages (a Helm release whose
    /// objects are in the namespace to delete).
    pub managed: std::sync::Arc<[String]>,
}

#[derive(Debug, Clone, Default)]
pub struct PlanDeleteResponse {
    /// `None` when the deletion takes nothing else with it.
    pub collateral: Option<Collateral>,
    /// An error refuses the plan: the deletion would take what the stack did not say it may.
    pub diagnostics: Vec<Diagnostic>,
    /// What the deletion means for GPUs (a pool's nodes going, with how they are emptied),
    /// for a deletion that is not half of a replacement (whose plan said it already).
    pub gpu_facts: Vec<GpuFact>,
}

/// What a deletion takes with it that this stack does not manage, as the plan shows it and as
/// apply holds the deletion to.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Collateral {
    /// The object deleted, as users call it (`Namespace team-a`).
    pub describe: String,
    /// Each object it takes with it that this stack does not manage, as users call it
    /// (`ConfigMap team-a/notes`), sorted.
    pub objects: Vec<String>,
    /// What could not be looked into (a kind the credentials may not list), and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// The provider's own record of everything it found at plan, managed or not (object
    /// uids): what it checks the deletion against just before making it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<String>,
}

impl Collateral {
    /// Nothing to show and nothing to hold the deletion to.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.unread.is_empty() && self.seen.is_empty()
    }
}

#[derive(Debug, Clone, Default)]
pub struct ApplyResourceChangeResponse {
    /// The object after the change; `None` after a delete.
    pub new_state: Option<Value>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ApplyResourceChangeResponse {
    /// The object after a change, or the object as it stands after a failure (so that the
    /// state keeps what exists) with the error.
    pub fn from_result(result: Result<Option<Value>, (Option<Value>, Diagnostic)>) -> Self {
        match result {
            Ok(new_state) => Self {
                new_state,
                diagnostics: vec![],
            },
            Err((new_state, diagnostic)) => Self {
                new_state,
                diagnostics: vec![diagnostic],
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct ImportResourceRequest {
    pub type_name: String,
    /// The provider's identity of the object (a file name, a namespace/name, an ARM id).
    pub id: String,
}

#[derive(Debug, Clone, Default)]
pub struct ImportResourceResponse {
    pub state: Option<Value>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone)]
pub struct ReadDataSourceRequest {
    pub type_name: String,
    pub config: Value,
}

#[derive(Debug, Clone, Default)]
pub struct ReadDataSourceResponse {
    pub state: Value,
    pub diagnostics: Vec<Diagnostic>,
}

/// How an object recorded in a Terraform state is taken over: the import ID, and the identity
/// Terraform recorded for it (a Kubernetes object's uid) where it recorded one, which the
/// imported object must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerraformTakeover {
    pub id: String,
    pub uid: Option<String>,
}

/// Why an `import { identity = {...} }` names no object of its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportIdError {
    /// The identity lacks what the type's identity holds; `expected` ends the sentence
    /// (`names the object's name`).
    #[error("a {type_name}'s identity {expected}")]
    Incomplete {
        type_name: String,
        expected: &'static str,
    },
}

/// A change another tool planned (a resource change of a Terraform JSON plan): the values
/// before and after as that plan has them (`None`: created, deleted), unknown and sensitive
/// values marked.
#[derive(Debug, Clone, Copy)]
pub struct ForeignChange<'a> {
    pub type_name: &'a str,
    pub before: Option<&'a Value>,
    pub after: Option<&'a Value>,
    /// The object is deleted and made again (a replacement).
    pub replace: bool,
}

/// What a provider makes of a change another tool planned (a resource change of a Terraform
/// JSON plan, for `gpustack review`), from its values alone: its GPU facts, and what its own
/// checks find, located by `attribute` in the type's own schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reviewed {
    pub facts: Vec<GpuFact>,
    pub diagnostics: Vec<Diagnostic>,
}

/// The type name under which `validate_resource_config` checks a `provider` block's own
/// configuration (no resource type is named so: theirs start with the provider's name and `_`).
pub const PROVIDER_CONFIG: &str = "provider";

/// A provider as the registry holds it: what it accepts and how to connect it. The engine
/// asks the factory for schemas, configuration checks and identities without connecting, and
/// `configure` gives the [`Provider`] that serves one `provider` block.
#[async_trait::async_trait]
pub trait ProviderFactory: Send + Sync {
    /// The whole schema: every type's. A run asks [`ProviderFactory::get_provider_types`]
    /// and then only the schemas of the types its stack uses.
    fn get_schema(&self, request: GetSchemaRequest) -> GetSchemaResponse;

    /// The provider's name and the names of its types, without the schemas (which a provider
    /// builds only when asked).
    fn get_provider_types(&self) -> ProviderTypes {
        ProviderTypes::of(&self.get_schema(GetSchemaRequest::default()).schema)
    }

    /// The schema of the provider's own configuration (its `provider` block).
    fn get_config_schema(&self) -> Schema {
        self.get_schema(GetSchemaRequest::default()).schema.config
    }

    /// One type's schema; `None` when the provider has no such type.
    fn get_type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        self.get_schema(GetSchemaRequest::default())
            .schema
            .into_type(mode, type_name)
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest<'_>,
    ) -> ValidateResourceConfigResponse;

    /// The object a resource's state or planned state stands for, as one string that two
    /// resources share exactly when they address the same object (`apps/Deployment/ns/name`,
    /// `helm:ns/release`): the engine refuses two instances of one object, and a create and a
    /// delete of one object (a rename without a `moved` block). `None` when it is not known
    /// yet, or the resource owns no object of its own (labels on someone else's node).
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        let _ = (type_name, state);
        None
    }

    /// How an object Terraform recorded in its state (the instance's `attributes` there, for
    /// one of this provider's `type_name`s) is taken over by `state import-terraform`: the ID
    /// this provider's import takes, and the identity Terraform recorded. `None` when the
    /// provider does not serve the type; an error says why the instance is left to Terraform.
    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<TerraformTakeover, &'static str>> {
        let _ = (type_name, attributes);
        None
    }

    /// The import ID of the object an `import { identity = {...} }` names (Terraform 1.12's
    /// resource identities). `None` when the provider does not serve the type, or takes no
    /// identity for it; an error says which attribute is missing.
    fn import_id_of_identity(
        &self,
        type_name: &str,
        identity: &Value,
    ) -> Option<Result<String, ImportIdError>> {
        let _ = (type_name, identity);
        None
    }

    /// The GPU facts and checks of a change to one of this provider's types (or of a
    /// Terraform provider's type it knows, such as a cloud's GPU node pool) planned by
    /// another tool. Connects to nothing: what a cloud's API would
    /// tell comes from the built-in tables, and the facts say so. `None` when the type is
    /// none of this provider's concern.
    fn review(&self, change: &ForeignChange<'_>) -> Option<Reviewed> {
        let _ = change;
        None
    }

    /// Builds the client of one `provider` block. Makes no request that changes anything.
    async fn configure(
        &self,
        request: ConfigureRequest,
    ) -> Result<std::sync::Arc<dyn Provider>, Vec<Diagnostic>>;
}

/// One configured `provider` block: reads, plans and applies the resources and data sources
/// of its factory's schema. Operations a provider does not offer answer an error that says so.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        ReadResourcesResponse {
            states: vec![None; request.states.len()],
            diagnostics: vec![unsupported("read")],
            gpu_facts: Vec::new(),
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse;

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        let _ = request;
        ApplyResourceChangeResponse {
            new_state: None,
            diagnostics: vec![unsupported("apply")],
        }
    }

    /// What deleting the object takes with it besides itself; by default nothing.
    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let _ = request;
        PlanDeleteResponse::default()
    }

    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        let _ = request;
        ImportResourceResponse {
            state: None,
            diagnostics: vec![unsupported("import")],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        let _ = request;
        ReadDataSourceResponse {
            state: Value::Null,
            diagnostics: vec![unsupported("read data sources")],
        }
    }
}

fn unsupported(operation: &str) -> Diagnostic {
    Diagnostic::error(
        "Operation not supported",
        format!("This provider cannot {operation}."),
    )
}

/// Plans a change from the schema: configured values win; unset computed attributes keep their
/// prior value (unknown on create); a changed force-new attribute requires replacement.
pub fn plan_from_schema(
    schema: &Schema,
    prior: Option<&Value>,
    config: &Value,
) -> PlanResourceChangeResponse {
    let empty = indexmap::IndexMap::new();
    let config = config.as_object().unwrap_or(&empty);
    let prior_object = prior.and_then(Value::as_object);
    let mut planned = indexmap::IndexMap::new();
    let mut requires_replace = Vec::new();
    for (name, attribute) in &schema.attributes {
        let configured = config.get(name).filter(|v| !v.is_null());
        let before = prior_object.and_then(|p| p.get(name));
        let after = match (configured, attribute.computed) {
            (Some(v), _) => v.clone(),
            (None, true) => before
                .cloned()
                .filter(|_| !attribute.force_new || prior.is_some())
                .unwrap_or(Value::Unknown),
            (None, false) => Value::Null,
        };
        if attribute.force_new
            && prior.is_some()
            && before.is_some_and(|b| *b != after)
            && !(after.is_unknown() && attribute.computed && configured.is_none())
        {
            requires_replace.push(name.clone());
        }
        planned.insert(name.clone(), after);
    }
    for name in schema.blocks.keys() {
        planned.insert(
            name.clone(),
            config.get(name).cloned().unwrap_or(Value::Null),
        );
    }
    // Computed-only attributes are derived from the rest: any configured change recomputes them.
    let changed = prior_object.is_some_and(|p| {
        schema.attributes.iter().any(|(name, a)| {
            a.is_configurable()
                && p.get(name).unwrap_or(&Value::Null) != planned.get(name).unwrap_or(&Value::Null)
        })
    });
    if changed || !requires_replace.is_empty() {
        for (name, attribute) in &schema.attributes {
            if attribute.computed && !attribute.is_configurable() {
                planned.insert(name.clone(), Value::Unknown);
            }
        }
    }
    // A replacement is a new object: what the configuration leaves to the API is not the old
    // object's value.
    if !requires_replace.is_empty() {
        for (name, attribute) in &schema.attributes {
            if attribute.computed && config.get(name).is_none_or(Value::is_null) {
                planned.insert(name.clone(), Value::Unknown);
            }
        }
    }
    PlanResourceChangeResponse {
        planned_state: Value::Object(planned),
        requires_replace,
        gpu_facts: Vec::new(),
        existing: None,
        diagnostics: Vec::new(),
        order: Default::default(),
    }
}
