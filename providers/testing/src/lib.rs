//! The `test` provider: objects in a JSON "world" file, with programmable latency, failures and
//! drift, for the engine's own tests and benchmarks. Registered only when
//! `GPUSTACK_TEST_PROVIDER=1`.
//!
//! Configuration: `latency_ms` (every call sleeps this long), `world` (the file the objects live
//! in; none: in memory), `fail_on` (names whose create or update fails), `fail_delete` (names
//! whose delete fails), `final_plan` (per
//! object name, attributes whose value the provider's final plan at apply changes to this one:
//! a provider that answers apply differently than the reviewed plan), `short_read` (every read
//! answers one state fewer than it was asked: a provider that breaks the protocol). Tests make drift by
//! editing the world file between runs. `data "test_object"` reads an object by name.

use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    ImportResourceRequest, ImportResourceResponse, PlanResourceChangeRequest,
    PlanResourceChangeResponse, Provider, ProviderFactory, ProviderSchema, ReadResourcesRequest,
    ReadResourcesResponse, Schema, Type, Value, plan_from_schema,
};
use gpustack_provider_sdk::check::provider_config;
use gpustack_provider_sdk::family::{Factory, Family};
use indexmap::IndexMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) struct Testing;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Testing))
}

struct World {
    latency: Duration,
    /// Appends `operation name start_ms end_ms` for every create, update and delete.
    journal: Option<PathBuf>,
    path: Option<PathBuf>,
    fail_on: Vec<String>,
    fail_delete: Vec<String>,
    final_plan: IndexMap<String, Value>,
    short_read: bool,
    objects: Mutex<IndexMap<String, Value>>,
}

impl World {
    async fn call(&self) {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
    }

    /// Reads the world file fresh, so that edits between calls (drift) are seen; the objects
    /// are read in place, as a copy of all of them for each call would make thousands of
    /// calls cost time quadratic in their number.
    fn read<R>(&self, f: impl FnOnce(&IndexMap<String, Value>) -> R) -> R {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        self.reload(&mut objects);
        f(&objects)
    }

    fn object(&self, name: &str) -> Option<Value> {
        self.read(|objects| objects.get(name).cloned())
    }

    fn reload(&self, objects: &mut IndexMap<String, Value>) {
        if let Some(path) = &self.path
            && let Ok(text) = std::fs::read_to_string(path)
            && let Ok(json) = serde_json::from_str::<serde_json::Value>(&text)
            && let Value::Object(map) = Value::from_json(&json)
        {
            *objects = map;
        }
    }

    fn update(&self, change: impl FnOnce(&mut IndexMap<String, Value>)) -> Result<(), String> {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        self.reload(&mut objects);
        change(&mut objects);
        if let Some(path) = &self.path {
            let json = Value::Object(objects.clone()).to_json();
            let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec_pretty(&json).unwrap_or_default())
                .map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, path).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

fn schema() -> ProviderSchema {
    let config = provider_config("Objects in a JSON file, for tests.")
        .attr("latency_ms", Attribute::optional(Type::Number))
        .attr("world", Attribute::optional(Type::String))
        .attr("fail_on", Attribute::optional(Type::list(Type::String)))
        .attr("fail_delete", Attribute::optional(Type::list(Type::String)))
        .attr("journal", Attribute::optional(Type::String))
        .attr("short_read", Attribute::optional(Type::Bool))
        .attr(
            "final_plan",
            Attribute::optional(Type::map(Type::map(Type::String))),
        );
    let object = Schema::new("An object in the test world.")
        .attr("name", Attribute::required(Type::String).force_new())
        .attr("value", Attribute::optional(Type::String))
        .attr("secret", Attribute::optional(Type::String).sensitive())
        .attr("tags", Attribute::optional(Type::map(Type::String)))
        .attr("id", Attribute::computed(Type::String));
    // Nested blocks, for the language's block features (dynamic blocks, ignore_changes paths).
    let group = Schema::new("A group of members in the test world.")
        .attr("name", Attribute::required(Type::String).force_new())
        .attr("id", Attribute::computed(Type::String))
        .block(
            "member",
            BlockNesting::List,
            Schema::new("A member of the group.")
                .attr("name", Attribute::required(Type::String))
                .attr("weight", Attribute::optional(Type::Number)),
        )
        .block(
            "settings",
            BlockNesting::Single,
            Schema::new("The group's settings.").attr("mode", Attribute::optional(Type::String)),
        );
    let data = Schema::new("An object of the test world, read by name.")
        .attr("name", Attribute::required(Type::String))
        .attr("value", Attribute::computed(Type::String))
        .attr("secret", Attribute::computed(Type::String).sensitive());
    ProviderSchema {
        name: "test".into(),
        config,
        resources: [
            ("test_object".to_owned(), object),
            ("test_group".to_owned(), group),
        ]
        .into(),
        data_sources: [("test_object".to_owned(), data)].into(),
    }
}

fn name_of(state: &Value) -> Option<&str> {
    state.as_object()?.get("name")?.as_str()
}

/// Where a world object keeps the mark of the stack that created it (not an attribute).
const OWNER_FIELD: &str = "_owner";

/// A world object as the provider answers it: without its owner mark.
fn visible(object: &Value) -> Value {
    match object {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != OWNER_FIELD)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[async_trait::async_trait]
impl Family for Testing {
    fn schema(&self) -> ProviderSchema {
        schema()
    }

    fn identity(&self, _: &str, state: &Value) -> Option<String> {
        name_of(state).map(|n| format!("test:{n}"))
    }

    /// `identity = { name = ... }`: a test object is imported by its name.
    fn import_id_of_identity(
        &self,
        _: &str,
        identity: &Value,
    ) -> Option<Result<String, gpustack_protocol::ImportIdError>> {
        Some(
            identity
                .as_object()
                .and_then(|o| o.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| gpustack_protocol::ImportIdError::Incomplete {
                    type_name: "test_object".to_owned(),
                    expected: "is { name = \"...\" }",
                }),
        )
    }

    async fn connect(&self, config: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        let config = config.as_object().cloned().unwrap_or_default();
        let latency = config
            .get("latency_ms")
            .and_then(Value::as_number)
            .unwrap_or(0.0)
            .max(0.0);
        let names = |key: &str| -> Vec<String> {
            config
                .get(key)
                .and_then(Value::as_list)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let fail_on = names("fail_on");
        let fail_delete = names("fail_delete");
        let world = World {
            latency: Duration::from_secs_f64(latency / 1000.0),
            path: config
                .get("world")
                .and_then(Value::as_str)
                .map(PathBuf::from),
            journal: config
                .get("journal")
                .and_then(Value::as_str)
                .map(PathBuf::from),
            fail_on,
            fail_delete,
            final_plan: config
                .get("final_plan")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            short_read: config
                .get("short_read")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            objects: Mutex::new(IndexMap::new()),
        };
        Ok(Arc::new(Configured(Arc::new(world))))
    }
}

struct Configured(Arc<World>);

#[async_trait::async_trait]
impl Provider for Configured {
    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        self.0.call().await;
        let schema = schema();
        let mut response = match schema.resources.get(&request.type_name) {
            Some(resource) => {
                plan_from_schema(resource, request.prior_state.as_ref(), &request.config)
            }
            None => PlanResourceChangeResponse::default(),
        };
        if request.prior_state.is_none()
            && let Some(name) = name_of(&request.config)
            && let Some(object) = self.0.object(name)
        {
            response.existing = Some(gpustack_protocol::Existing {
                import_id: name.to_owned(),
                describe: format!("test object {name}"),
                owned: object
                    .as_object()
                    .and_then(|o| o.get(OWNER_FIELD))
                    .and_then(Value::as_str)
                    .is_some_and(|o| !request.owner.is_empty() && o == request.owner),
            });
        }
        if request.for_apply
            && let Some(changes) = name_of(&request.config)
                .and_then(|n| self.0.final_plan.get(n))
                .and_then(Value::as_object)
            && let Value::Object(planned) = &mut response.planned_state
        {
            for (attribute, value) in changes {
                planned.insert(attribute.clone(), value.clone());
            }
        }
        response
    }

    async fn read_data_source(
        &self,
        request: gpustack_protocol::ReadDataSourceRequest,
    ) -> gpustack_protocol::ReadDataSourceResponse {
        self.0.call().await;
        let name = name_of(&request.config).unwrap_or_default().to_owned();
        match self.0.object(&name).as_ref().and_then(Value::as_object) {
            Some(object) => {
                let field = |k: &str| object.get(k).cloned().unwrap_or(Value::Null);
                gpustack_protocol::ReadDataSourceResponse {
                    state: Value::Object(IndexMap::from([
                        ("name".to_owned(), Value::String(name)),
                        ("value".to_owned(), field("value")),
                        ("secret".to_owned(), field("secret")),
                    ])),
                    diagnostics: vec![],
                }
            }
            None => gpustack_protocol::ReadDataSourceResponse {
                state: Value::Null,
                diagnostics: vec![Diagnostic::error(
                    "No such test object",
                    format!("The test world has no object named \"{name}\"."),
                )],
            },
        }
    }

    /// One call, one latency, however many objects: like a LIST.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        self.0.call().await;
        let mut states: Vec<_> = self.0.read(|objects| {
            request
                .states
                .iter()
                .map(|s| name_of(s).and_then(|n| objects.get(n).map(visible)))
                .collect()
        });
        if self.0.short_read {
            states.pop();
        }
        ReadResourcesResponse {
            states,
            diagnostics: vec![],
            gpu_facts: vec![],
        }
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        let started = now_ms();
        let operation = match (&request.prior_state, &request.planned_state) {
            (None, _) => "create",
            (Some(_), Some(_)) => "update",
            (Some(_), None) => "delete",
        };
        let name = request
            .planned_state
            .as_ref()
            .or(request.prior_state.as_ref())
            .and_then(name_of)
            .unwrap_or_default()
            .to_owned();
        let response = self.apply(request).await;
        if let Some(journal) = &self.0.journal {
            use std::io::Write;
            let failed = if response.diagnostics.is_empty() {
                ""
            } else {
                " failed"
            };
            let line = format!("{operation} {name} {started} {}{failed}\n", now_ms());
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(journal)
            {
                let _ = file.write_all(line.as_bytes());
            }
        }
        response
    }

    async fn import_resource(&self, request: ImportResourceRequest) -> ImportResourceResponse {
        self.0.call().await;
        match self.0.object(&request.id) {
            Some(state) => ImportResourceResponse {
                state: Some(visible(&state)),
                diagnostics: vec![],
            },
            None => ImportResourceResponse {
                state: None,
                diagnostics: vec![Diagnostic::error(
                    "Cannot import",
                    format!("No test object named \"{}\".", request.id),
                )],
            },
        }
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

impl Configured {
    async fn apply(&self, request: ApplyResourceChangeRequest) -> ApplyResourceChangeResponse {
        self.0.call().await;
        match request.planned_state {
            None => {
                let name = request
                    .prior_state
                    .as_ref()
                    .and_then(name_of)
                    .unwrap_or_default()
                    .to_owned();
                if self.0.fail_delete.contains(&name) {
                    return ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error(
                            "Injected failure",
                            format!("test_object \"{name}\" is set to fail its delete."),
                        )],
                    };
                }
                match self.0.update(|o| {
                    o.shift_remove(&name);
                }) {
                    Ok(()) => ApplyResourceChangeResponse::default(),
                    Err(e) => ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error("Cannot save the test world", e)],
                    },
                }
            }
            Some(planned) => {
                let name = name_of(&planned).unwrap_or_default().to_owned();
                if self.0.fail_on.contains(&name) {
                    return ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error(
                            "Injected failure",
                            format!("test_object \"{name}\" is set to fail."),
                        )],
                    };
                }
                let mut state = planned.as_object().cloned().unwrap_or_default();
                state.insert("id".into(), Value::String(format!("obj-{name}")));
                let state = Value::Object(state);
                let mut stored = state.clone();
                if let Value::Object(map) = &mut stored {
                    // The mark stays with the object; an update keeps the creator's.
                    let creator = self
                        .0
                        .object(&name)
                        .as_ref()
                        .and_then(Value::as_object)
                        .and_then(|o| o.get(OWNER_FIELD).cloned())
                        .unwrap_or_else(|| Value::String(request.owner.clone()));
                    map.insert(OWNER_FIELD.into(), creator);
                }
                match self.0.update(|o| {
                    o.insert(name, stored);
                }) {
                    Ok(()) => ApplyResourceChangeResponse {
                        new_state: Some(state),
                        diagnostics: vec![],
                    },
                    Err(e) => ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error("Cannot save the test world", e)],
                    },
                }
            }
        }
    }
}
