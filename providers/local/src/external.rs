//! hashicorp/external: `data "external"`, a program run when the plan is made with the
//! query as a JSON object on its standard input, answering a JSON object of strings on its
//! standard output, as the provider's protocol has it. `gpustack init` names every module
//! that runs one, as it names provisioners.

use crate::state_only::{attr, no_resource, with};
use gpustack_protocol::{
    Attribute, Diagnostic, PlanResourceChangeRequest, PlanResourceChangeResponse, Provider,
    ProviderFactory, ProviderSchema, ReadDataSourceRequest, ReadDataSourceResponse, Schema, Type,
    Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

#[derive(Clone, Copy)]
pub(crate) struct External;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(External))
}

fn schemas() -> ProviderSchema {
    let data = Schema::new(
        "Runs a program when the plan is made: the query as JSON on its input, a JSON object of strings on its output.",
    )
    .attr(
        "program",
        Attribute::required(Type::list(Type::String))
            .describe("The program and its arguments (not run through a shell)."),
    )
    .attr(
        "working_dir",
        Attribute::optional(Type::String)
            .describe("Where it runs (default: the directory gpustack runs in)."),
    )
    .attr("query", Attribute::optional(Type::map(Type::String)))
    .attr("result", Attribute::computed(Type::map(Type::String)))
    .attr("id", Attribute::computed(Type::String));
    ProviderSchema {
        name: "external".into(),
        config: provider_config("hashicorp/external: programs run on this machine."),
        resources: Default::default(),
        data_sources: [("external".to_owned(), data)].into(),
    }
}

#[async_trait::async_trait]
impl Family for External {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("external", &[], &["external"])
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, type_name: &str, check: &mut Checker<'_>) {
        if type_name == "external"
            && let Some(Value::List(program)) = check.get("program")
            && program.is_empty()
        {
            check.error(
                "program",
                "Invalid Attribute Value",
                "program must name at least one element: the program to run.".into(),
            );
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// The program's standard output that is not a JSON object of strings, as the provider says.
fn unexpected(program: &str, error: &str) -> Diagnostic {
    Diagnostic::error(
        "Unexpected External Program Results",
        format!(
            "The data source received unexpected results after executing the program.\n\nProgram output must be a JSON encoded map of string keys and string values.\n\nProgram: {program}\nResult Error: {error}"
        ),
    )
}

async fn run(config: &Value) -> Result<Value, Diagnostic> {
    // Null and empty elements are dropped, as the provider drops them.
    let program: Vec<String> = match attr(config, "program") {
        Value::List(items) => items
            .iter()
            .filter_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
            .collect(),
        _ => vec![],
    };
    let Some((name, args)) = program.split_first() else {
        return Err(Diagnostic::error(
            "External Program Missing",
            "The data source was configured without a program to execute. Verify the configuration contains at least one non-empty value.",
        ));
    };
    let query: BTreeMap<String, String> = match attr(config, "query") {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        _ => BTreeMap::new(),
    };
    let input = serde_json::to_vec(&query).unwrap_or_else(|_| b"{}".to_vec());
    let mut command = tokio::process::Command::new(name);
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = attr(config, "working_dir")
        .as_str()
        .filter(|d| !d.is_empty())
    {
        command.current_dir(dir);
    }
    let mut child = command.spawn().map_err(|e| {
        Diagnostic::error(
            "External Program Lookup Failed",
            format!(
                "The data source received an unexpected error while attempting to find the program.\n\nThe program must be accessible according to the platform where gpustack is running: on the PATH, or a path relative to the directory gpustack runs in (use path.module for a program in a module).\n\nProgram: {name}\nError: {e}"
            ),
        )
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that exits without reading its input is no error.
        let _ = stdin.write_all(&input).await;
    }
    let output = child.wait_with_output().await.map_err(|e| {
        Diagnostic::error(
            "External Program Execution Failed",
            format!("The data source received an unexpected error while attempting to execute the program.\n\nProgram: {name}\nState: {e}"),
        )
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let detail = if stderr.is_empty() {
            format!(
                "The data source received an unexpected error while attempting to execute the program.\n\nThe program was executed, however it returned no additional error messaging.\n\nProgram: {name}\nState: {}",
                output.status
            )
        } else {
            format!(
                "The data source received an unexpected error while attempting to execute the program.\n\nProgram: {name}\nError Message: {stderr}\nState: {}",
                output.status
            )
        };
        return Err(Diagnostic::error(
            "External Program Execution Failed",
            detail,
        ));
    }
    let parsed: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| unexpected(name, &e.to_string()))?;
    let result = match parsed {
        serde_json::Value::Object(map) => {
            let mut result = indexmap::IndexMap::new();
            for (k, v) in map {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    // Go's decoder leaves a null member as "".
                    serde_json::Value::Null => String::new(),
                    other => {
                        let kind = match other {
                            serde_json::Value::Bool(_) => "bool",
                            serde_json::Value::Number(_) => "number",
                            serde_json::Value::Array(_) => "array",
                            _ => "object",
                        };
                        return Err(unexpected(
                            name,
                            &format!("json: cannot unmarshal {kind} into Go value of type string"),
                        ));
                    }
                };
                result.insert(k, Value::String(text));
            }
            Value::Object(result)
        }
        serde_json::Value::Null => Value::Null,
        other => {
            let kind = match other {
                serde_json::Value::Array(_) => "array",
                serde_json::Value::String(_) => "string",
                serde_json::Value::Number(_) => "number",
                _ => "bool",
            };
            return Err(unexpected(
                name,
                &format!("json: cannot unmarshal {kind} into Go value of type map[string]string"),
            ));
        }
    };
    Ok(with(
        config,
        [("result", result), ("id", Value::string("-"))],
    ))
}

#[async_trait::async_trait]
impl Provider for External {
    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        no_resource("external", request)
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        match run(&request.config).await {
            Ok(state) => ReadDataSourceResponse {
                state,
                diagnostics: vec![],
            },
            Err(diagnostic) => ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![diagnostic],
            },
        }
    }
}
