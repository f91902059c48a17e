//! The providers of a run: found by name, and the provider that owns each type.
//!
//! **Invariant:** the registry names no provider: whoever builds it (the binary, a test)
//! chooses the providers, so that the engine compiles without any of them.

use crate::{GetSchemaRequest, ProviderFactory, ProviderSchema, Schema};
use std::sync::Arc;

/// The providers a run knows, by local name, and the owner of every resource and data source
/// type. The binary builds it from the providers it was compiled with; the engine only asks it.
#[derive(Clone)]
pub struct Registry {
    providers: crate::schema::Names<(Arc<dyn ProviderFactory>, ProviderSchema)>,
    /// Resource and data source type name → provider name; built once so lookups stay O(1).
    owners: crate::schema::Names<String>,
}

impl Registry {
    /// A registry of these providers (each answers its own schema).
    pub fn new(providers: Vec<Arc<dyn ProviderFactory>>) -> Self {
        let mut registry = Registry {
            providers: Default::default(),
            owners: Default::default(),
        };
        for provider in providers {
            let schema = provider.get_schema(GetSchemaRequest::default()).schema;
            for type_name in schema.resources.keys().chain(schema.data_sources.keys()) {
                registry
                    .owners
                    .insert(type_name.clone(), schema.name.clone());
            }
            registry
                .providers
                .insert(schema.name.clone(), (provider, schema));
        }
        registry
    }

    pub fn provider(&self, name: &str) -> Option<&Arc<dyn ProviderFactory>> {
        self.providers.get(name).map(|(p, _)| p)
    }

    pub fn schema(&self, name: &str) -> Option<&ProviderSchema> {
        self.providers.get(name).map(|(_, s)| s)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// The provider that owns a resource or data source type (`aks_nodepool` → `azure`).
    pub fn owner_of(&self, type_name: &str) -> Option<&str> {
        self.owners.get(type_name).map(String::as_str)
    }

    pub fn resource_schema(&self, type_name: &str) -> Option<&Schema> {
        let owner = self.owner_of(type_name)?;
        self.schema(owner)?.resources.get(type_name)
    }

    pub fn data_source_schema(&self, type_name: &str) -> Option<&Schema> {
        let owner = self.owner_of(type_name)?;
        self.schema(owner)?.data_sources.get(type_name)
    }

    pub fn resource_types(&self) -> impl Iterator<Item = &str> {
        self.providers
            .values()
            .flat_map(|(_, s)| s.resources.keys().map(String::as_str))
    }

    pub fn data_source_types(&self) -> impl Iterator<Item = &str> {
        self.providers
            .values()
            .flat_map(|(_, s)| s.data_sources.keys().map(String::as_str))
    }
}
