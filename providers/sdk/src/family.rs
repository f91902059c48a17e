//! A provider family as its crate writes it: its schema, its configuration checks, the
//! identity of its objects and how to connect one `provider` block. [`Factory`] turns it into
//! the protocol's [`ProviderFactory`], so that no provider writes the protocol's scaffolding.

use crate::check::Checker;
/// What a [`Factory`] is, named here for the functions
/// [`cloud_entry_points`](crate::cloud_entry_points) writes.
pub use gpustack_protocol::ProviderFactory;
use gpustack_protocol::{
    ConfigureRequest, Diagnostic, GetSchemaRequest, GetSchemaResponse, Provider, ProviderSchema,
    ProviderTypes, ResourceMode, Schema, ValidateResourceConfigRequest,
    ValidateResourceConfigResponse, Value,
};
use std::sync::Arc;

#[async_trait::async_trait]
pub trait Family: Send + Sync + 'static {
    /// The provider's schema; the same on every call.
    fn schema(&self) -> ProviderSchema;

    /// As [`ProviderFactory::get_provider_types`]: a family of many types, or of large
    /// ones, answers its names without building their schemas.
    fn types(&self) -> ProviderTypes {
        ProviderTypes::of(&self.schema())
    }

    /// As [`ProviderFactory::get_config_schema`].
    fn config(&self) -> Schema {
        self.schema().config
    }

    /// As [`ProviderFactory::get_type_schema`].
    fn type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        self.schema().into_type(mode, type_name)
    }

    /// Checks of a resource's configuration beyond what its schema says, reported on `check`.
    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        let _ = (type_name, check);
    }

    /// As [`ProviderFactory::identity`].
    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        let _ = (type_name, state);
        None
    }

    /// As [`ProviderFactory::terraform_takeover`].
    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<gpustack_protocol::TerraformTakeover, &'static str>> {
        let _ = (type_name, attributes);
        None
    }

    /// As [`ProviderFactory::import_id_of_identity`].
    fn import_id_of_identity(
        &self,
        type_name: &str,
        identity: &Value,
    ) -> Option<Result<String, gpustack_protocol::ImportIdError>> {
        let _ = (type_name, identity);
        None
    }

    /// As [`ProviderFactory::review`].
    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        let _ = change;
        None
    }

    /// The provider serving one `provider` block with this configuration. Makes no request
    /// that changes anything.
    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>>;
}

/// A family's [`Family::types`] written out by name, for a family whose schemas are worth
/// building only when a stack uses them (a test checks the names against the schema).
pub fn named_types(name: &str, resources: &[&str], data_sources: &[&str]) -> ProviderTypes {
    let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
    ProviderTypes {
        name: name.to_owned(),
        resources: owned(resources),
        data_sources: owned(data_sources),
    }
}

/// The schema of one of a family's resource types.
pub fn resource_schema(family: &impl Family, type_name: &str) -> Schema {
    family
        .type_schema(ResourceMode::Managed, type_name)
        .unwrap_or_else(|| Schema::new(""))
}

/// A [`Family`] as a [`ProviderFactory`].
pub struct Factory<F>(pub F);

#[async_trait::async_trait]
impl<F: Family> ProviderFactory for Factory<F> {
    fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
        GetSchemaResponse {
            schema: self.0.schema(),
            diagnostics: vec![],
        }
    }

    fn get_provider_types(&self) -> ProviderTypes {
        self.0.types()
    }

    fn get_config_schema(&self) -> Schema {
        self.0.config()
    }

    fn get_type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
        self.0.type_schema(mode, type_name)
    }

    fn validate_resource_config(
        &self,
        request: ValidateResourceConfigRequest<'_>,
    ) -> ValidateResourceConfigResponse {
        let mut check = Checker::new(request.config);
        self.0.check(request.type_name, &mut check);
        ValidateResourceConfigResponse {
            diagnostics: check.diagnostics,
        }
    }

    fn identity(&self, type_name: &str, state: &Value) -> Option<String> {
        self.0.identity(type_name, state)
    }

    fn terraform_takeover(
        &self,
        type_name: &str,
        attributes: &serde_json::Value,
    ) -> Option<Result<gpustack_protocol::TerraformTakeover, &'static str>> {
        self.0.terraform_takeover(type_name, attributes)
    }

    fn import_id_of_identity(
        &self,
        type_name: &str,
        identity: &Value,
    ) -> Option<Result<String, gpustack_protocol::ImportIdError>> {
        self.0.import_id_of_identity(type_name, identity)
    }

    fn review(
        &self,
        change: &gpustack_protocol::ForeignChange<'_>,
    ) -> Option<gpustack_protocol::Reviewed> {
        self.0.review(change)
    }

    async fn configure(
        &self,
        request: ConfigureRequest,
    ) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        self.0.connect(&request.config).await
    }
}
