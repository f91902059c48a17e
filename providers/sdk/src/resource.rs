//! A configured provider as a set of resource types: each type is one value implementing
//! [`Resource`] (each data source one implementing [`DataSource`]), and [`Resources`] routes
//! the protocol's calls to them by type name. No provider matches on type-name strings, and
//! a type it does not serve is answered once, here.

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Diagnostic, ImportResourceRequest,
    ImportResourceResponse, PlanDeleteRequest, PlanDeleteResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ReadDataSourceRequest, ReadDataSourceResponse,
    ReadResourcesRequest, ReadResourcesResponse, Value,
};
use indexmap::IndexMap;

/// The operations of one resource type.
#[async_trait::async_trait]
pub trait Resource: Send + Sync {
    /// The live objects behind `request.states`, one answer each (batched where the API can).
    async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse;

    async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse;

    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse;

    /// What deleting the object takes with it besides itself; by default nothing.
    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        let _ = request;
        PlanDeleteResponse::default()
    }

    /// The state of the object an import ID names; an error when the ID is malformed or
    /// names nothing.
    async fn import(&self, id: &str) -> Result<Value, Vec<Diagnostic>> {
        let _ = id;
        Err(vec![Diagnostic::error(
            "Import not supported",
            "This resource type cannot be imported.",
        )])
    }
}

/// A data source type.
#[async_trait::async_trait]
pub trait DataSource: Send + Sync {
    async fn read(&self, config: Value) -> ReadDataSourceResponse;
}

/// The resource and data source types of one configured provider, by type name.
#[derive(Default)]
pub struct Resources {
    resources: IndexMap<&'static str, Box<dyn Resource>>,
    data_sources: IndexMap<&'static str, Box<dyn DataSource>>,
}

impl Resources {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn resource(mut self, type_name: &'static str, resource: impl Resource + 'static) -> Self {
        self.resources.insert(type_name, Box::new(resource));
        self
    }

    pub fn data_source(
        mut self,
        type_name: &'static str,
        data_source: impl DataSource + 'static,
    ) -> Self {
        self.data_sources.insert(type_name, Box::new(data_source));
        self
    }

    fn resource_of(&self, type_name: &str) -> Option<&dyn Resource> {
        self.resources.get(type_name).map(Box::as_ref)
    }
}

fn unknown(what: &str, type_name: &str) -> Diagnostic {
    Diagnostic::error(
        format!("Unknown {what} type"),
        format!("This provider has no {what} type \"{type_name}\"."),
    )
}

#[async_trait::async_trait]
impl Provider for Resources {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        match self.resource_of(&request.type_name) {
            Some(resource) => resource.read(request).await,
            None => ReadResourcesResponse {
                diagnostics: vec![unknown("resource", &request.type_name)],
                states: request.states.into_iter().map(Some).collect(),
                gpu_facts: Vec::new(),
            },
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        match self.resource_of(&request.type_name) {
            Some(resource) => resource.plan(request).await,
            None => PlanResourceChangeResponse {
                diagnostics: vec![unknown("resource", &request.type_name)],
                ..Default::default()
            },
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        match self.resource_of(&request.type_name) {
            Some(resource) => resource.apply(request).await,
            None => ApplyResourceChangeResponse {
                diagnostics: vec![unknown("resource", &request.type_name)],
                new_state: request.prior_state,
            },
        }
    }

    async fn plan_delete(&self, request: PlanDeleteRequest) -> PlanDeleteResponse {
        match self.resource_of(&request.type_name) {
            Some(resource) => resource.plan_delete(request).await,
            None => PlanDeleteResponse {
                collateral: None,
                diagnostics: vec![unknown("resource", &request.type_name)],
                gpu_facts: Vec::new(),
            },
        }
    }

    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        let result = match self.resource_of(&request.type_name) {
            Some(resource) => resource.import(&request.id).await,
            None => Err(vec![unknown("resource", &request.type_name)]),
        };
        match result {
            Ok(state) => ImportResourceResponse {
                state: Some(state),
                diagnostics: vec![],
            },
            Err(diagnostics) => ImportResourceResponse {
                state: None,
                diagnostics,
            },
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        match self.data_sources.get(request.type_name.as_str()) {
            Some(data_source) => data_source.read(request.config).await,
            None => ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![unknown("data source", &request.type_name)],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    struct Echo;

    #[async_trait::async_trait]
    impl Resource for Echo {
        async fn read(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
            ReadResourcesResponse {
                states: request.states.into_iter().map(|_| None).collect(),
                diagnostics: vec![],
                gpu_facts: vec![],
            }
        }

        async fn plan(&self, request: PlanResourceChangeRequest) -> PlanResourceChangeResponse {
            PlanResourceChangeResponse {
                planned_state: request.config,
                ..Default::default()
            }
        }

        async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
            ApplyResourceChangeResponse {
                new_state: request.planned_state,
                diagnostics: vec![],
            }
        }
    }

    fn read(type_name: &str) -> ReadResourcesRequest {
        ReadResourcesRequest {
            type_name: type_name.to_owned(),
            states: vec![Value::string("kept")],
            sensitive_paths: vec![vec![]],
            seeds: vec![],
        }
    }

    #[test]
    fn calls_reach_the_resource_of_their_type() {
        let resources = Resources::new().resource("echo", Echo);
        let response = block_on(resources.read_resources(read("echo")));
        assert_eq!(response.states, vec![None]);
        assert!(response.diagnostics.is_empty());
        let import = block_on(resources.import_resource(ImportResourceRequest {
            type_name: "echo".to_owned(),
            id: "x".to_owned(),
        }));
        assert_eq!(import.diagnostics[0].summary, "Import not supported");
    }

    #[test]
    fn an_unknown_type_is_an_error_that_keeps_the_states() {
        let resources = Resources::new().resource("echo", Echo);
        let response = block_on(resources.read_resources(read("other")));
        assert_eq!(response.states, vec![Some(Value::string("kept"))]);
        assert_eq!(response.diagnostics[0].summary, "Unknown resource type");
        let data = block_on(resources.read_data_source(ReadDataSourceRequest {
            type_name: "echo".to_owned(),
            config: Value::Null,
        }));
        assert_eq!(data.diagnostics[0].summary, "Unknown data source type");
    }
}
