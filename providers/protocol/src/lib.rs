//! The provider protocol: what the engine and every provider agree on.
//!
//! Providers depend on this crate and never on the engine. Everything that crosses the boundary
//! is one of the request/response types below, built from [`Value`], [`Type`], [`Schema`] and
//! [`Diagnostic`].

mod diagnostic;
mod schema;
mod types;
mod value;

pub use diagnostic::{Diagnostic, Pos, Severity, SourceRange};
pub use schema::{Attribute, BlockNesting, NestedBlock, ProviderSchema, Schema};
pub use types::{ConversionError, ObjectAttr, Type};
pub use value::{Number, Value, format_number};

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
/// (naming rules, value ranges, combinations of attributes).
#[derive(Debug, Clone)]
pub struct ValidateResourceConfigRequest {
    pub type_name: String,
    /// The configuration, already converted to the schema's types; may hold unknowns.
    pub config: Value,
}

/// Problems found in a resource's configuration; each names the attribute path it is about.
#[derive(Debug, Clone, Default)]
pub struct ValidateResourceConfigResponse {
    pub diagnostics: Vec<Diagnostic>,
}

/// The interface every provider implements. Calls that reach a remote API (plan, apply, read)
/// join this trait with the reconciliation engine.
pub trait Provider: Send + Sync {
    fn get_schema(&self, request: GetSchemaRequest) -> GetSchemaResponse;

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest,
    ) -> ValidateResourceConfigResponse;
}
