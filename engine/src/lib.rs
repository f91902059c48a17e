//! The gpustack engine: a stack the language crate loaded, turned into a dependency graph,
//! evaluated, planned against live state and applied.
//!
//! The pipeline is load → graph → evaluate → refresh → diff → plan → apply → validate. This
//! file is the engine's API and nothing else: the operations — [`load`] (validate),
//! [`Session`] with [`plan`], [`apply`], [`import`] and [`console`] — and the types their
//! callers need; plans render through the `plan_*`/`drift_*` functions. Every module is
//! private.

mod apply;
mod configure;
mod console;
mod encryption;
mod evaluate;
mod graph;
mod import;
mod instances;
mod load;
mod output;
mod plan;
mod progress;
mod review;
mod schedule;
mod sensitive;
mod session;
mod unknowns;
mod version;

pub use apply::{ApplyReport, ChangeResult, Halt, Supplied, apply};
pub use configure::DEFAULT_MAX_CONCURRENCY;
pub use console::console;
pub use evaluate::{EvalOptions, EvalTextError};
pub use import::{ImportError, import, import_all};
pub use load::{
    GPUSTACK_BUILTIN, Loaded, ModuleProviders, ProviderRequirement, default_source, load,
};
pub use output::{
    console_value, drift_json, drift_markdown, drift_metrics, drift_text, plan_json, plan_markdown,
    plan_text, review_json, review_markdown, review_text,
};
pub use plan::{
    Action, DecodePlanError, Plan, PlanMode, PlanOptions, ResourceChange, needs_digest_key, plan,
    with_digest_key,
};
pub use review::{ReadPlanError, Review, ReviewedChange, review};
pub use session::{
    InputSource, Session, SettingsError, StackSettings, VariableArg, VariableArgs,
    auto_variable_files, root_values,
};
pub use version::VERSION;

/// The version of the JSON plan format gpustack writes (Terraform's `format_version`).
pub const PLAN_FORMAT_VERSION: &str = plan::FORMAT_VERSION;
