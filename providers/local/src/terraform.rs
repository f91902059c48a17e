//! Terraform's built-in `terraform` provider: `terraform_data`, a value kept in the state with
//! the lifecycle of a resource, so that stacks written for Terraform (and their
//! `replace_triggered_by` through it) work unchanged; and `data "terraform_remote_state"`, the
//! outputs of a stack that stays in Terraform (see [`crate::remote_state`]).
//!
//! It follows Terraform's `internal/builtin/providers/terraform/resource_data.go`: `output`
//! mirrors `input` after apply, a change of `triggers_replace` replaces the instance (new `id`),
//! a change of `input` alone updates it in place. One difference, so that the plan shows what
//! apply will store: where `input` is wholly known at plan, the planned `output` is that value
//! rather than unknown.

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PathStep, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadDataSourceRequest,
    ReadDataSourceResponse, ReadResourcesRequest, ReadResourcesResponse, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use indexmap::IndexMap;
use std::sync::Arc;

pub use crate::remote_state::{RemoteState, StateReader};

#[derive(Clone, Default)]
pub(crate) struct Terraform {
    /// Reads the states of remote backends for `terraform_remote_state`.
    reader: Option<Arc<dyn StateReader>>,
}

/// The built-in `terraform` provider, for a registry: `terraform_remote_state` reads only
/// local states.
pub fn provider() -> Arc<dyn ProviderFactory> {
    provider_with(None)
}

/// The built-in `terraform` provider, reading the states of remote backends through `reader`.
pub fn provider_with(reader: Option<Arc<dyn StateReader>>) -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Terraform { reader }))
}

const TYPE: &str = "terraform_data";

#[async_trait::async_trait]
impl Family for Terraform {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "terraform",
            &[TYPE],
            &[crate::remote_state::TYPE],
        )
    }

    fn schema(&self) -> ProviderSchema {
        let data = Schema::new(
            "A value with a resource's lifecycle: stored in the state, replaced when triggers_replace changes.",
        )
        .attr(
            "input",
            Attribute::optional(Type::Any)
                .describe("A value to store; output holds it after apply."),
        )
        .attr(
            "triggers_replace",
            Attribute::optional(Type::Any)
                .describe("A value whose change replaces the instance."),
        )
        .attr(
            "output",
            Attribute::computed(Type::Any).describe("The input, as of the last apply."),
        )
        .attr(
            "id",
            Attribute::computed(Type::String)
                .describe("A random UUID, new with every replacement."),
        );
        ProviderSchema {
            name: "terraform".into(),
            config: provider_config("Terraform's built-in provider; needs no configuration."),
            resources: [(TYPE.to_owned(), data)].into(),
            data_sources: [(
                crate::remote_state::TYPE.to_owned(),
                crate::remote_state::schema(),
            )]
            .into(),
        }
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == crate::remote_state::TYPE {
            crate::remote_state::check(check);
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(self.clone()))
    }
}

fn attr(state: &Value, name: &str) -> Value {
    state
        .as_object()
        .and_then(|o| o.get(name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// What `output` will hold: the input, as sensitive as the input is.
fn output_of(input: Value, request_paths: &[gpustack_protocol::Path]) -> Value {
    let secret = request_paths
        .iter()
        .any(|p| matches!(p.first(), Some(PathStep::Key(k)) if k == "input"));
    if secret && !input.is_null() {
        Value::sensitive(input)
    } else {
        input
    }
}

#[async_trait::async_trait]
impl Provider for Terraform {
    /// Nothing lives outside the state: what was stored is what there is.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        ReadResourcesResponse {
            states: request.states.into_iter().map(Some).collect(),
            diagnostics: vec![],
            gpu_facts: vec![],
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let input = attr(&request.config, "input");
        let triggers = attr(&request.config, "triggers_replace");
        let planned_output = if input.is_null() || input.is_wholly_known() {
            output_of(input.clone(), &request.sensitive_paths)
        } else {
            Value::Unknown
        };
        let mut requires_replace = Vec::new();
        let (id, output) = match &request.prior_state {
            None => (Value::Unknown, planned_output),
            Some(prior) if attr(prior, "triggers_replace") != triggers => {
                requires_replace.push("triggers_replace".to_owned());
                (Value::Unknown, planned_output)
            }
            Some(prior) if attr(prior, "input") != input => (attr(prior, "id"), planned_output),
            Some(prior) => (attr(prior, "id"), attr(prior, "output")),
        };
        PlanResourceChangeResponse {
            planned_state: Value::Object(IndexMap::from([
                ("input".to_owned(), input),
                ("triggers_replace".to_owned(), triggers),
                ("output".to_owned(), output),
                ("id".to_owned(), id),
            ])),
            requires_replace,
            ..PlanResourceChangeResponse::default()
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        let Some(planned) = request.planned_state else {
            return ApplyResourceChangeResponse::default();
        };
        let input = attr(&planned, "input");
        let id = match attr(&planned, "id") {
            Value::String(id) => Value::String(id),
            _ => Value::String(uuid::Uuid::new_v4().to_string()),
        };
        ApplyResourceChangeResponse {
            new_state: Some(Value::Object(IndexMap::from([
                ("input".to_owned(), input.clone()),
                (
                    "triggers_replace".to_owned(),
                    attr(&planned, "triggers_replace"),
                ),
                (
                    "output".to_owned(),
                    output_of(input, &request.sensitive_paths),
                ),
                ("id".to_owned(), id),
            ]))),
            diagnostics: vec![],
        }
    }

    /// As Terraform: the id is taken as given and the values start empty.
    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        ImportResourceResponse {
            state: Some(Value::Object(IndexMap::from([
                ("input".to_owned(), Value::Null),
                ("triggers_replace".to_owned(), Value::Null),
                ("output".to_owned(), Value::Null),
                ("id".to_owned(), Value::String(request.id)),
            ]))),
            diagnostics: vec![],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        if request.type_name == crate::remote_state::TYPE {
            let (state, diagnostics) =
                crate::remote_state::read(self.reader.as_ref(), &request.config).await;
            return ReadDataSourceResponse { state, diagnostics };
        }
        ReadDataSourceResponse {
            state: request.config,
            diagnostics: vec![Diagnostic::error(
                "Unknown data source",
                format!(
                    "The terraform provider has no data source \"{}\".",
                    request.type_name
                ),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(prior: Option<Value>, config: Value) -> PlanResourceChangeResponse {
        futures::executor::block_on(Terraform::default().plan_resource_change(
            PlanResourceChangeRequest {
                type_name: TYPE.into(),
                prior_state: prior,
                config,
                for_apply: false,
                preview: true,
                sensitive_paths: vec![],
                owner: String::new(),
                seed: Some([0; 32]),
                plan_time: String::new(),
            },
        ))
    }

    fn object(pairs: &[(&str, Value)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    fn applied(planned: Value) -> Value {
        futures::executor::block_on(Terraform::default().apply_resource_change(
            ApplyResourceChangeRequest {
                type_name: TYPE.into(),
                prior_state: None,
                planned_state: Some(planned),
                sensitive_paths: vec![],
                owner: String::new(),
                collateral: None,
                stop: Default::default(),
                replaced_by: None,
            },
        ))
        .new_state
        .unwrap_or(Value::Null)
    }

    #[test]
    fn create_stores_the_input_as_output_with_a_new_id() {
        let response = plan(None, object(&[("input", Value::string("a"))]));
        assert_eq!(attr(&response.planned_state, "id"), Value::Unknown);
        assert_eq!(attr(&response.planned_state, "output"), Value::string("a"));
        let state = applied(response.planned_state);
        assert_eq!(attr(&state, "output"), Value::string("a"));
        assert!(matches!(attr(&state, "id"), Value::String(id) if id.len() == 36));
    }

    #[test]
    fn input_changes_update_in_place_and_triggers_replace() {
        let prior = object(&[
            ("input", Value::string("a")),
            ("triggers_replace", Value::string("v1")),
            ("output", Value::string("a")),
            ("id", Value::string("0000")),
        ]);
        let same = plan(
            Some(prior.clone()),
            object(&[
                ("input", Value::string("a")),
                ("triggers_replace", Value::string("v1")),
            ]),
        );
        assert_eq!(same.planned_state, prior);
        let input = plan(
            Some(prior.clone()),
            object(&[
                ("input", Value::string("b")),
                ("triggers_replace", Value::string("v1")),
            ]),
        );
        assert!(input.requires_replace.is_empty());
        assert_eq!(attr(&input.planned_state, "id"), Value::string("0000"));
        assert_eq!(attr(&input.planned_state, "output"), Value::string("b"));
        let trigger = plan(
            Some(prior),
            object(&[
                ("input", Value::string("a")),
                ("triggers_replace", Value::string("v2")),
            ]),
        );
        assert_eq!(
            trigger.requires_replace,
            vec!["triggers_replace".to_owned()]
        );
        assert_eq!(attr(&trigger.planned_state, "id"), Value::Unknown);
    }

    #[test]
    fn an_input_not_known_at_plan_leaves_output_unknown() {
        let response = plan(
            None,
            object(&[(
                "input",
                Value::List(vec![Value::string("a"), Value::Unknown]),
            )]),
        );
        assert_eq!(attr(&response.planned_state, "output"), Value::Unknown);
    }
}
