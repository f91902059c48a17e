//! `gpustack review`: the GPU view of a plan another tool made — a Terraform or OpenTofu JSON
//! plan (`terraform show -json PLANFILE`, format 1.x). Each GPU-relevant resource change goes
//! to the provider that knows its type, which reports its GPU facts and its own checks from
//! the values alone (`ProviderFactory::review`); the GPU model adds its checks, capacity and
//! disruption lines, as in `gpustack plan`; every finding is located in the stack's `.tf`
//! files where they are given. Nothing is connected to but the live cluster the caller read.

use crate::evaluate::locate::{Location, Locator, path_of_text};
use crate::plan::CapacityLine;
use gpustack_gpu::{Disruption, Finding, Model, Sourced};
use gpustack_lang::config::{self, Files, Stack};
use gpustack_lang::diag::Diags;
use gpustack_lang::source::SourceMap;
use gpustack_protocol::{ClusterFact, Diagnostic, ForeignChange, GpuFact, Registry, Value};
use serde::Deserialize;
use serde_json::Value as Json;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The largest JSON plan `gpustack review` reads, as the largest plan file the CLI reads: far
/// above a 10,000-resource plan.
pub const MAX_PLAN_BYTES: u64 = 1 << 30;

/// Why a file is not a plan `gpustack review` reads.
#[derive(Debug, thiserror::Error)]
pub enum ReadPlanError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: gpustack_fs::ReadError,
    },
    #[error("{} is not a JSON plan", path.display())]
    NotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} is not a JSON plan: the field {field} {message}", path.display())]
    Shape {
        path: PathBuf,
        field: String,
        message: String,
    },
    #[error(
        "{} is a binary plan file: review reads its JSON form, `terraform show -json {}`",
        path.display(),
        path.display()
    )]
    Binary { path: PathBuf },
    #[error(
        "{} is a JSON state, not a plan (it has values and no resource_changes): review a saved plan, `terraform plan -out=tfplan && terraform show -json tfplan`",
        path.display()
    )]
    State { path: PathBuf },
    #[error(
        "{} has format_version {version}; review reads Terraform's and OpenTofu's JSON plan format 1.x",
        path.display()
    )]
    Format { path: PathBuf, version: String },
}

#[derive(Deserialize)]
struct JsonPlan<'a> {
    format_version: Option<String>,
    terraform_version: Option<String>,
    #[serde(borrow, default)]
    resource_changes: Option<Vec<JsonResourceChange<'a>>>,
    #[serde(borrow, default)]
    values: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct JsonResourceChange<'a> {
    address: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(rename = "type")]
    type_name: String,
    #[serde(borrow)]
    change: JsonChange<'a>,
}

/// The values stay raw until the type is known to matter: most of a large plan's changes are
/// nothing to GPUs, and are never parsed further.
#[derive(Deserialize)]
struct JsonChange<'a> {
    actions: Vec<String>,
    #[serde(borrow, default)]
    before: Option<&'a RawValue>,
    #[serde(borrow, default)]
    after: Option<&'a RawValue>,
    #[serde(borrow, default)]
    after_unknown: Option<&'a RawValue>,
    #[serde(borrow, default)]
    before_sensitive: Option<&'a RawValue>,
    #[serde(borrow, default)]
    after_sensitive: Option<&'a RawValue>,
}

/// What `gpustack review` found in a plan.
pub struct Review {
    /// The version of Terraform or OpenTofu that made the plan.
    pub made_by: Option<String>,
    /// Resource changes in the plan, and how many of them mattered to GPUs.
    pub changes: usize,
    pub gpu_changes: Vec<ReviewedChange>,
    pub capacity: Vec<CapacityLine>,
    pub disruption: Vec<Disruption>,
    /// The sources the diagnostics point into: the stack's files, where given.
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
}

/// One GPU-relevant change: its address and Terraform's actions (`create`, `delete`, ...).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReviewedChange {
    pub address: String,
    pub actions: Vec<String>,
}

impl Review {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Whether the plan changes what some node or pool advertises.
    pub fn changes_capacity(&self) -> bool {
        self.capacity
            .iter()
            .any(|l| l.change.before != l.change.after || l.change.physical.is_some())
    }
}

/// A JSON value of the plan with its unknown and sensitive marks (`after_unknown`,
/// `after_sensitive`: `true` at a marked leaf or subtree, the same shape as the value).
fn marked(value: &Json, unknown: &Json, sensitive: &Json) -> Value {
    if unknown == &Json::Bool(true) {
        return Value::Unknown;
    }
    if sensitive == &Json::Bool(true) {
        return Value::sensitive(marked(value, unknown, &Json::Null));
    }
    match value {
        Json::Object(map) => {
            let mut out: indexmap::IndexMap<String, Value> = map
                .iter()
                .map(|(k, v)| {
                    let u = unknown.get(k).unwrap_or(&Json::Null);
                    let s = sensitive.get(k).unwrap_or(&Json::Null);
                    (k.clone(), marked(v, u, s))
                })
                .collect();
            // An unknown attribute may be left out of `after` altogether.
            if let Json::Object(unknowns) = unknown {
                for (k, u) in unknowns {
                    if u == &Json::Bool(true) {
                        out.insert(k.clone(), Value::Unknown);
                    }
                }
            }
            Value::Object(out)
        }
        Json::Array(items) => {
            let len = items.len().max(unknown.as_array().map_or(0, Vec::len));
            Value::List(
                (0..len)
                    .map(|i| {
                        marked(
                            items.get(i).unwrap_or(&Json::Null),
                            unknown.get(i).unwrap_or(&Json::Null),
                            sensitive.get(i).unwrap_or(&Json::Null),
                        )
                    })
                    .collect(),
            )
        }
        other => Value::from_json(other),
    }
}

fn parse(raw: Option<&RawValue>) -> Json {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Json::Null)
}

/// Refuses a saved binary plan (a zip archive) by name rather than as malformed JSON.
/// The plan in `bytes`; a field of the wrong shape is named by its path in the document.
fn parse_plan<'a>(path: &Path, bytes: &'a [u8]) -> Result<JsonPlan<'a>, ReadPlanError> {
    let not_json = |source| ReadPlanError::NotJson {
        path: path.to_owned(),
        source,
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let plan = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let field = e.path().to_string();
        let source = e.into_inner();
        if !source.is_data() {
            return not_json(source);
        }
        ReadPlanError::Shape {
            path: path.to_owned(),
            field: if field == "." {
                "(the document)".to_owned()
            } else {
                field
            },
            message: source.to_string().replace("invalid type: ", "is "),
        }
    })?;
    deserializer.end().map_err(not_json)?;
    Ok(plan)
}

fn refuse_binary(path: &Path, bytes: &[u8]) -> Result<(), ReadPlanError> {
    if bytes.starts_with(b"PK") {
        return Err(ReadPlanError::Binary {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// An address without its instance keys (`module.a[0].x.y["k"]` → `module.a.x.y`): how a
/// resource block is found in the configuration.
fn block_address(address: &str) -> String {
    let mut out = String::with_capacity(address.len());
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    for c in address.chars() {
        if depth > 0 {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                '[' if !quoted => depth += 1,
                ']' if !quoted => depth -= 1,
                _ => {}
            }
            continue;
        }
        if c == '[' {
            depth = 1;
        } else {
            out.push(c);
        }
    }
    out
}

/// The stack's files, for locating findings: `None` when the directory holds no stack.
fn load_config(dir: &Path, sources: &mut SourceMap) -> Option<Stack> {
    let mut diags = Diags::default();
    let stack = config::load_stack_with(
        &Files::Disk,
        dir,
        sources,
        &mut diags,
        &config::ModuleExpansions::default(),
        None,
        &config::NoRootValues,
    );
    stack
        .modules
        .iter()
        .any(|module| !module.resources.is_empty())
        .then_some(stack)
}

/// Reviews the JSON plan in `path`: the facts of its GPU-relevant changes from the providers
/// of `registry`, with the live cluster's where the caller read it, through the GPU model;
/// findings located in the stack at `config`, where it is given.
pub fn review(
    registry: &Registry,
    path: &Path,
    config: Option<&Path>,
    cluster: Option<Result<ClusterFact, Box<dyn std::error::Error + Send + Sync>>>,
) -> Result<Review, ReadPlanError> {
    let bytes =
        gpustack_fs::read_bounded(path, MAX_PLAN_BYTES).map_err(|source| ReadPlanError::Read {
            path: path.to_owned(),
            source,
        })?;
    refuse_binary(path, &bytes)?;
    let plan = parse_plan(path, &bytes)?;
    let version = plan.format_version.clone().unwrap_or_default();
    if !version.starts_with("1.") {
        return Err(ReadPlanError::Format {
            path: path.to_owned(),
            version: if version.is_empty() {
                "(none)".to_owned()
            } else {
                version
            },
        });
    }
    let Some(resource_changes) = plan.resource_changes else {
        return Err(if plan.values.is_some() {
            ReadPlanError::State {
                path: path.to_owned(),
            }
        } else {
            ReadPlanError::Format {
                path: path.to_owned(),
                version,
            }
        });
    };

    let mut facts: Vec<(String, GpuFact)> = Vec::new();
    let mut provider_findings: Vec<(String, Diagnostic)> = Vec::new();
    let mut gpu_changes = Vec::new();
    // Types no provider reviews, learned from their first change, are passed over unparsed.
    let mut reviewed_type: HashMap<String, bool> = HashMap::new();
    let names: Vec<String> = registry.names().map(str::to_owned).collect();
    for change in &resource_changes {
        if change.mode.as_deref().is_some_and(|m| m != "managed") {
            continue;
        }
        if reviewed_type.get(&change.type_name) == Some(&false) {
            continue;
        }
        let actions = &change.change.actions;
        let before = parse(change.change.before);
        let after = parse(change.change.after);
        let before = (!before.is_null())
            .then(|| marked(&before, &Json::Null, &parse(change.change.before_sensitive)));
        let after = (!after.is_null()).then(|| {
            marked(
                &after,
                &parse(change.change.after_unknown),
                &parse(change.change.after_sensitive),
            )
        });
        let foreign = ForeignChange {
            type_name: &change.type_name,
            before: before.as_ref(),
            after: after.as_ref(),
            replace: actions.iter().any(|a| a == "delete") && actions.iter().any(|a| a == "create"),
        };
        let owner = registry.owner_of(&change.type_name).map(str::to_owned);
        let answer = owner
            .iter()
            .chain(names.iter())
            .filter_map(|name| registry.provider(name))
            .find_map(|provider| provider.review(&foreign));
        reviewed_type.insert(change.type_name.clone(), answer.is_some());
        let Some(answer) = answer else {
            continue;
        };
        if answer.facts.is_empty() && answer.diagnostics.is_empty() {
            continue;
        }
        gpu_changes.push(ReviewedChange {
            address: change.address.clone(),
            actions: actions.clone(),
        });
        facts.extend(
            answer
                .facts
                .into_iter()
                .map(|f| (change.address.clone(), f)),
        );
        provider_findings.extend(
            answer
                .diagnostics
                .into_iter()
                .map(|d| (change.address.clone(), d)),
        );
    }

    let mut diags = Diags::default();
    let cluster_given = cluster.is_some();
    match cluster {
        Some(Ok(cluster)) if !facts.is_empty() => {
            facts.push(("cluster".to_owned(), GpuFact::Cluster(cluster)));
        }
        Some(Err(why)) => diags.push(gpustack_lang::diag::Diag::warning(
            None,
            "The live cluster was not read",
            format!(
                "Without it, the review cannot list the live nodes and GPU pods these changes touch: {}",
                gpustack_protocol::error_chain(&*why)
            ),
        )),
        _ => {}
    }
    let sourced: Vec<Sourced<'_>> = facts
        .iter()
        .map(|(address, fact)| Sourced { address, fact })
        .collect();
    let model = Model::build(&sourced);

    let mut findings: Vec<(Finding, String)> = provider_findings
        .into_iter()
        .map(|(address, d)| {
            let attribute = d.attribute.clone().unwrap_or_default();
            let finding = Finding {
                address,
                path: path_of_text(&attribute),
                severity: d.severity,
                summary: d.summary,
                detail: d.detail,
            };
            (finding, attribute)
        })
        .collect();
    // Whether the review read the cluster is the caller's choice, said in the review's words
    // (a failed read has its own warning above).
    findings.extend(model.findings().into_iter().filter_map(|mut f| {
        if f.summary == gpustack_gpu::NODES_NOT_READ {
            if cluster_given {
                return None;
            }
            f.detail = "The review was given no kubeconfig (--kubeconfig), so it read no live nodes: the GPU capacity section has lines for the plan's pools only, and MIG geometries are not checked against the live nodes' GPUs.".into();
        }
        let attribute = gpustack_protocol::path_text(&f.path);
        Some((f, attribute))
    }));
    let mut sources = SourceMap::new(config.unwrap_or(Path::new(".")));
    // The configuration is read only when there is something to locate in it.
    let stack = config
        .filter(|_| !findings.is_empty())
        .and_then(|dir| load_config(dir, &mut sources));
    let blocks: HashMap<String, (usize, &config::Resource)> = stack
        .as_ref()
        .map(|s| s.resources_by_address().collect())
        .unwrap_or_default();
    let locate = |address: &str, path: &[gpustack_protocol::PathStep]| -> Option<Location> {
        let stack = stack.as_ref()?;
        let (module, resource) = blocks.get(&block_address(address))?;
        let locator = Locator {
            stack,
            sources: &sources,
        };
        locator
            .path(*module, &resource.body, path)
            .or(Some(Location::at(resource.span)))
    };
    if config.is_some() && stack.is_none() && !findings.is_empty() {
        diags.push(gpustack_lang::diag::Diag::warning(
            None,
            "No configuration to locate findings in",
            format!(
                "{} holds no .tf or .hcl files with resources: findings name the resource and attribute only. Give the plan's root module with --config.",
                config.unwrap_or(Path::new(".")).display()
            ),
        ));
    }
    for (finding, attribute) in &findings {
        let location = locate(&finding.address, &finding.path);
        diags.push(crate::plan::gpu::located(finding, attribute, location));
    }
    let capacity = model
        .capacity()
        .into_iter()
        .map(|(address, change)| CapacityLine { address, change })
        .collect();
    let disruption = model.disruptions();
    drop(blocks);
    let diagnostics = diags.into_sorted(&sources);
    Ok(Review {
        made_by: plan.terraform_version,
        changes: resource_changes.len(),
        gpu_changes,
        capacity,
        disruption,
        sources,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_address_drops_instance_keys_quoted_brackets_included() {
        assert_eq!(
            block_address(r#"module.a[0].google_container_node_pool.p["x[1]\"]"]"#),
            "module.a.google_container_node_pool.p"
        );
        assert_eq!(
            block_address("aws_eks_node_group.g"),
            "aws_eks_node_group.g"
        );
    }

    #[test]
    fn a_plan_field_of_the_wrong_shape_is_named_by_its_path() {
        let plan = br#"{"format_version":"1.2","resource_changes":[{"address":"a.b","type":5,"change":{"actions":[]}}]}"#;
        let err = parse_plan(Path::new("odd.json"), plan)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("odd.json is not a JSON plan: the field resource_changes[0].type is integer `5`, expected a string"),
            "{err}"
        );
        let err = parse_plan(Path::new("odd.json"), br#"{"resource_changes":{}}"#)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("the field resource_changes is map, expected a sequence"),
            "{err}"
        );
    }

    #[test]
    fn a_plan_that_is_not_json_is_refused_with_where_it_stops() {
        for text in [
            &br#"{"format_version":"1.2","resource_changes":["#[..],
            b"{} x",
        ] {
            let err = parse_plan(Path::new("broken.json"), text).err().unwrap();
            assert!(matches!(err, ReadPlanError::NotJson { .. }), "{err}");
        }
    }

    #[test]
    fn unknown_and_sensitive_marks_follow_the_values_shape() {
        let value = serde_json::json!({"a": "x", "list": [1, 2], "nested": {"s": "secret"}});
        let unknown = serde_json::json!({"list": [false, true], "id": true});
        let sensitive = serde_json::json!({"nested": {"s": true}});
        let marked = marked(&value, &unknown, &sensitive);
        let object = marked.as_object().unwrap();
        assert_eq!(object["id"], Value::Unknown);
        assert_eq!(object["list"].as_list().unwrap()[1], Value::Unknown);
        assert!(object["nested"].as_object().unwrap()["s"].contains_sensitive());
        assert_eq!(object["a"], Value::string("x"));
    }
}
