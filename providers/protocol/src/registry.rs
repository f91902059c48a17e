//! The providers of a run: found by name, and the provider that owns each type.
//!
//! **Invariant:** the registry names no provider: whoever builds it (the binary, a test)
//! chooses the providers, so that the engine compiles without any of them.
//!
//! **Invariant:** a type's schema is built when a run first asks for it, once: a run pays for
//! the types its stack uses, not for every type its providers serve
//! (`registry::tests::a_type_schema_is_built_once_and_only_when_asked`).

use crate::{ProviderFactory, ProviderTypes, Provisioner, ResourceMode, Schema};
use std::sync::{Arc, OnceLock};

/// One resource or data source type: its provider, and its schema once asked for.
#[derive(Clone)]
struct TypeEntry {
    provider: usize,
    schema: OnceLock<Schema>,
}

/// The providers a run knows, by local name, and the owner of every resource and data source
/// type. The binary builds it from the providers it was compiled with; the engine only asks it.
#[derive(Clone)]
pub struct Registry {
    /// Each provider with its types and, once asked for, its configuration's schema.
    providers: crate::schema::Names<(Arc<dyn ProviderFactory>, ProviderTypes, OnceLock<Schema>)>,
    /// Type name → its entry; built once so lookups stay O(1).
    resources: crate::schema::Names<TypeEntry>,
    data_sources: crate::schema::Names<TypeEntry>,
    /// Provisioners by kind (`local-exec`).
    provisioners: crate::schema::Names<Arc<dyn Provisioner>>,
}

impl Registry {
    /// A registry of these providers (each answers its own types).
    pub fn new(providers: Vec<Arc<dyn ProviderFactory>>) -> Self {
        let mut registry = Registry {
            providers: Default::default(),
            resources: Default::default(),
            data_sources: Default::default(),
            provisioners: Default::default(),
        };
        for provider in providers {
            let types = provider.get_provider_types();
            let (index, _) = registry.providers.insert_full(
                types.name.clone(),
                (provider, ProviderTypes::default(), OnceLock::new()),
            );
            let entry = || TypeEntry {
                provider: index,
                schema: OnceLock::new(),
            };
            for name in &types.resources {
                registry.resources.insert(name.clone(), entry());
            }
            for name in &types.data_sources {
                registry.data_sources.insert(name.clone(), entry());
            }
            registry.providers[index].1 = types;
        }
        registry
    }

    /// The registry with a provisioner of this kind (`local-exec`).
    pub fn with_provisioner(mut self, kind: &str, provisioner: Arc<dyn Provisioner>) -> Self {
        self.provisioners.insert(kind.to_owned(), provisioner);
        self
    }

    pub fn provisioner(&self, kind: &str) -> Option<&Arc<dyn Provisioner>> {
        self.provisioners.get(kind)
    }

    pub fn provider(&self, name: &str) -> Option<&Arc<dyn ProviderFactory>> {
        self.providers.get(name).map(|(p, ..)| p)
    }

    /// Whether a provider of this local name is known.
    pub fn has_provider(&self, name: &str) -> bool {
        self.providers.contains_key(name)
    }

    /// The schema of a provider's own configuration (its `provider` block).
    pub fn config_schema(&self, name: &str) -> Option<&Schema> {
        self.providers
            .get(name)
            .map(|(provider, _, config)| config.get_or_init(|| provider.get_config_schema()))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// The provider that owns a resource or data source type (`aks_nodepool` → `azure`).
    pub fn owner_of(&self, type_name: &str) -> Option<&str> {
        let entry = self
            .resources
            .get(type_name)
            .or_else(|| self.data_sources.get(type_name))?;
        self.providers
            .get_index(entry.provider)
            .map(|(name, _)| name.as_str())
    }

    /// Whether the provider `name` serves `type_name`, whether or not it owns it (`google-beta`
    /// serves `google`'s types).
    pub fn serves(&self, name: &str, type_name: &str) -> bool {
        self.providers.get(name).is_some_and(|(_, types, _)| {
            types.resources.iter().any(|t| t == type_name)
                || types.data_sources.iter().any(|t| t == type_name)
        })
    }

    pub fn resource_schema(&self, type_name: &str) -> Option<&Schema> {
        self.type_schema(ResourceMode::Managed, type_name)
    }

    pub fn data_source_schema(&self, type_name: &str) -> Option<&Schema> {
        self.type_schema(ResourceMode::Data, type_name)
    }

    fn type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<&Schema> {
        let entry = match mode {
            ResourceMode::Managed => self.resources.get(type_name)?,
            ResourceMode::Data => self.data_sources.get(type_name)?,
        };
        Some(entry.schema.get_or_init(|| {
            let (factory, ..) = &self.providers[entry.provider];
            // A provider that lists a type answers its schema; an empty one stands in
            // rather than a panic if it does not.
            factory.get_type_schema(mode, type_name).unwrap_or_default()
        }))
    }

    pub fn resource_types(&self) -> impl Iterator<Item = &str> {
        self.resources.keys().map(String::as_str)
    }

    pub fn data_source_types(&self) -> impl Iterator<Item = &str> {
        self.data_sources.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        GetSchemaRequest, GetSchemaResponse, ProviderSchema, ValidateResourceConfigRequest,
        ValidateResourceConfigResponse,
    };
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A provider of two types that counts the schemas it builds.
    #[derive(Default)]
    struct Counting {
        whole: AtomicUsize,
        one: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl ProviderFactory for Counting {
        fn get_schema(&self, _: GetSchemaRequest) -> GetSchemaResponse {
            self.whole.fetch_add(1, Ordering::SeqCst);
            GetSchemaResponse {
                schema: ProviderSchema::default(),
                diagnostics: vec![],
            }
        }

        fn get_provider_types(&self) -> ProviderTypes {
            ProviderTypes {
                name: "counting".into(),
                resources: vec!["counting_a".into(), "counting_b".into()],
                data_sources: vec!["counting_a".into()],
            }
        }

        fn get_type_schema(&self, mode: ResourceMode, type_name: &str) -> Option<Schema> {
            self.one.fetch_add(1, Ordering::SeqCst);
            Some(Schema::new(format!("{mode:?} {type_name}")))
        }

        fn validate_resource_config(
            &self,
            _: ValidateResourceConfigRequest<'_>,
        ) -> ValidateResourceConfigResponse {
            ValidateResourceConfigResponse {
                diagnostics: vec![],
            }
        }

        async fn configure(
            &self,
            _: crate::ConfigureRequest,
        ) -> Result<Arc<dyn crate::Provider>, Vec<crate::Diagnostic>> {
            Err(vec![])
        }
    }

    #[test]
    fn a_type_schema_is_built_once_and_only_when_asked() {
        let counting = Arc::new(Counting::default());
        let registry = Registry::new(vec![counting.clone()]);
        assert_eq!(counting.one.load(Ordering::SeqCst), 0);
        assert_eq!(registry.owner_of("counting_b"), Some("counting"));
        assert_eq!(
            registry.resource_schema("counting_a").unwrap().description,
            "Managed counting_a"
        );
        assert_eq!(
            registry
                .data_source_schema("counting_a")
                .unwrap()
                .description,
            "Data counting_a"
        );
        registry.resource_schema("counting_a");
        assert_eq!(counting.one.load(Ordering::SeqCst), 2);
        assert_eq!(counting.whole.load(Ordering::SeqCst), 0);
        assert!(registry.resource_schema("counting_c").is_none());
        assert!(registry.data_source_schema("counting_b").is_none());
    }
}
