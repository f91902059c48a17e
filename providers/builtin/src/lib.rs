//! The providers built into gpustack and the registry that finds them.
//!
//! Each module declares one provider family's schema and its configuration checks. The
//! operations that reach a remote API join each provider together with the reconciliation
//! engine; until then the schemas are the contract that `gpustack validate` checks stacks
//! against.

mod aws;
mod azure;
mod capacity;
mod catalog;
mod check;
mod cluster;
mod gcp;
mod gpu;
mod helm;
mod kubernetes;
mod local;
mod objects;
mod testing;
mod wait;

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, GetSchemaRequest,
    Provider, ProviderSchema, Schema, Value,
};
use indexmap::IndexMap;
use std::sync::Arc;

/// Carries out one change of a cloud object: create (which on failure may still report the
/// object it made, so that the state keeps it), update or delete (on failure the prior
/// object stays in the state).
pub(crate) async fn apply_change(
    request: &ApplyResourceChangeRequest,
    create: impl AsyncFnOnce(&Value) -> Result<Value, (Option<Value>, Diagnostic)>,
    update: impl AsyncFnOnce(&Value, &Value) -> Result<Value, Diagnostic>,
    delete: impl AsyncFnOnce(&Value) -> Result<(), Diagnostic>,
) -> ApplyResourceChangeResponse {
    let kept = |d| (request.prior_state.clone(), d);
    let result = match (&request.prior_state, &request.planned_state) {
        (None, Some(planned)) => create(planned).await.map(Some),
        (Some(prior), Some(planned)) => update(prior, planned).await.map(Some).map_err(kept),
        (Some(prior), None) => delete(prior).await.map(|()| None).map_err(kept),
        (None, None) => Ok(None),
    };
    ApplyResourceChangeResponse::from_result(result)
}

/// Every provider compiled into this binary, by local name.
pub struct Registry {
    providers: IndexMap<String, (Arc<dyn Provider>, ProviderSchema)>,
    /// Resource and data source type name → provider name; built once so lookups stay O(1).
    owners: IndexMap<String, String>,
}

impl Registry {
    /// The built-in providers, plus the `test` provider when `GPUSTACK_TEST_PROVIDER=1`.
    pub fn builtin() -> Self {
        Self::with_test_provider(
            std::env::var_os("GPUSTACK_TEST_PROVIDER").is_some_and(|v| v == "1"),
        )
    }

    /// The built-in providers, with or without the `test` provider (for the engine's own tests).
    pub fn with_test_provider(test: bool) -> Self {
        let providers: Vec<Arc<dyn Provider>> = vec![
            Arc::new(local::Local),
            Arc::new(kubernetes::Kubernetes),
            Arc::new(helm::Helm),
            Arc::new(gpu::Gpu),
            Arc::new(azure::Azure),
            Arc::new(aws::Aws),
            Arc::new(gcp::Gcp),
        ];
        let mut providers = providers;
        if test {
            providers.push(Arc::new(testing::Testing));
        }
        let mut registry = Registry {
            providers: IndexMap::new(),
            owners: IndexMap::new(),
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

    pub fn provider(&self, name: &str) -> Option<&Arc<dyn Provider>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_one_owner() {
        let registry = Registry::builtin();
        assert_eq!(registry.owner_of("aks_nodepool"), Some("azure"));
        assert_eq!(registry.owner_of("gpu_smoke_test"), Some("gpu"));
        assert_eq!(registry.owner_of("kubernetes_manifest"), Some("kubernetes"));
        let total: usize = registry
            .providers
            .values()
            .map(|(_, s)| s.resources.len() + s.data_sources.len())
            .sum();
        let distinct: std::collections::HashSet<_> = registry
            .resource_types()
            .chain(registry.data_source_types())
            .collect();
        // A data source may share its name with a resource (local_file); owners must agree.
        assert!(distinct.len() <= total);
        for t in distinct {
            assert!(registry.owner_of(t).is_some(), "{t} has no owner");
        }
    }
}
