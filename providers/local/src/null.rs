//! hashicorp/null: `null_resource` (replaced when its `triggers` change; what it is for is
//! its provisioners) and the deprecated `data "null_data_source"`.

use crate::state_only::{attr, keepers, object, plan_made, rng, with};
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, ResourceMode, Schema,
    Type, Value,
};
use gpustack_provider_sdk::check::provider_config;
use gpustack_provider_sdk::family::{Factory, Family};
use rand::Rng;
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(crate) struct Null;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Null))
}

fn schemas() -> ProviderSchema {
    let resource = Schema::new(
        "Nothing but a lifecycle: replaced when triggers change; runs its provisioners.",
    )
    .attr("triggers", keepers("triggers"))
    .attr("id", Attribute::computed(Type::String));
    let data = Schema::new("Deprecated: outputs its inputs (use locals).")
        .attr("inputs", Attribute::optional(Type::map(Type::String)))
        .attr("outputs", Attribute::computed(Type::map(Type::String)))
        .attr("random", Attribute::computed(Type::String))
        .attr(
            "has_computed_default",
            Attribute::optional_computed(Type::String),
        )
        .attr("id", Attribute::computed(Type::String));
    ProviderSchema {
        name: "null".into(),
        config: provider_config("hashicorp/null: resources that do nothing themselves."),
        resources: [("null_resource".to_owned(), resource)].into(),
        data_sources: [("null_data_source".to_owned(), data)].into(),
    }
}

#[async_trait::async_trait]
impl Family for Null {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "null",
            &["null_resource"],
            &["null_data_source"],
        )
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

#[async_trait::async_trait]
impl Provider for Null {
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        ReadResourcesResponse {
            states: request.states.into_iter().map(Some).collect(),
            ..ReadResourcesResponse::default()
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = schemas()
            .into_type(ResourceMode::Managed, "null_resource")
            .unwrap_or_default();
        plan_made(&schema, &request, |config| {
            // The provider's id: a random non-negative 63-bit number, in decimal.
            let id: i64 = rng(&request).random_range(0..i64::MAX);
            Ok(with(config, [("id", Value::String(id.to_string()))]))
        })
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        crate::state_only::apply_planned(&request)
    }

    /// As the provider: the id is taken as given.
    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        ImportResourceResponse {
            state: Some(object([
                ("triggers", Value::Null),
                ("id", Value::String(request.id)),
            ])),
            diagnostics: vec![],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        let inputs = attr(&request.config, "inputs");
        let default = match attr(&request.config, "has_computed_default") {
            Value::Null => Value::string("default"),
            given => given,
        };
        // Read when the plan is made, and recorded in it.
        let random = uuid::Uuid::new_v4().as_u64_pair().0;
        ReadDataSourceResponse {
            state: with(
                &request.config,
                [
                    ("outputs", inputs),
                    ("random", Value::String(random.to_string())),
                    ("has_computed_default", default),
                    ("id", Value::string("static")),
                ],
            ),
            diagnostics: vec![],
        }
    }
}
