//! `providers` as Terraform's: the providers the configuration and the state require, their
//! schemas in Terraform's JSON form, and `lock`/`mirror`, which have nothing to do for
//! providers built into the binary.

use super::report;
use gpustack_engine::{EvalOptions, ModuleProviders, ProviderRequirement};
use gpustack_protocol::{Attribute, BlockNesting, ProviderSchema, Schema, Type};
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

/// The source address as Terraform prints it: a two-part address is the public registry's.
pub fn qualified(source: &str) -> String {
    if source.split('/').count() == 2 {
        format!("registry.terraform.io/{source}")
    } else {
        source.to_owned()
    }
}

/// `providers`: the tree of the configuration's requirements, then the state's.
pub fn tree(dir: &Path, variables: &gpustack_engine::VariableArgs, color: bool) -> ExitCode {
    let Some(modules) = requirements(dir, variables, color) else {
        return ExitCode::from(1);
    };
    println!("\nProviders required by configuration:");
    print!("{}", render_tree(&modules));
    let in_state = match super::state::providers_in_state(dir) {
        Ok(names) => names,
        Err(code) => return code,
    };
    if !in_state.is_empty() {
        println!("\nProviders required by state:\n");
        for source in in_state {
            println!("    provider[{}]", qualified(&source));
        }
    }
    let unserved: Vec<&ProviderRequirement> = modules
        .iter()
        .flat_map(|m| &m.providers)
        .filter(|p| !p.served)
        .collect();
    println!(
        "\ngpustack's providers are built into the binary: no plugin is installed, and a version constraint is shown, not checked."
    );
    if !unserved.is_empty() {
        let names: BTreeSet<String> = unserved.iter().map(|p| qualified(&p.source)).collect();
        println!(
            "Not served by this build: {}.",
            names.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    ExitCode::SUCCESS
}

fn requirements(
    dir: &Path,
    variables: &gpustack_engine::VariableArgs,
    color: bool,
) -> Option<Vec<ModuleProviders>> {
    let loaded = gpustack_engine::load(
        crate::registry(),
        dir,
        variables,
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    report::diagnostics(&loaded.sources, &loaded.diagnostics, color);
    (!loaded.has_errors()).then(|| loaded.provider_requirements())
}

/// Terraform's tree: `.` for the root, `├──`/`└──` before each provider and child module.
fn render_tree(modules: &[ModuleProviders]) -> String {
    let mut out = String::from(".\n");
    render_module(modules, &[], "", &mut out);
    out
}

fn render_module(modules: &[ModuleProviders], calls: &[String], indent: &str, out: &mut String) {
    let Some(module) = modules.iter().find(|m| m.calls == calls) else {
        return;
    };
    let children: Vec<&ModuleProviders> = modules
        .iter()
        .filter(|m| m.calls.len() == calls.len() + 1 && m.calls.starts_with(calls))
        .collect();
    let count = module.providers.len() + children.len();
    let mut index = 0;
    let branch = |index: usize| {
        if index + 1 == count {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        }
    };
    for provider in &module.providers {
        let (head, _) = branch(index);
        index += 1;
        let version = provider
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{indent}{head}provider[{}]{version}\n",
            qualified(&provider.source)
        ));
    }
    for child in children {
        let (head, rest) = branch(index);
        index += 1;
        let name = child.calls.last().cloned().unwrap_or_default();
        out.push_str(&format!("{indent}{head}module.{name}\n"));
        render_module(modules, &child.calls, &format!("{indent}{rest}"), out);
    }
}

/// `providers schema -json`: the schemas of the providers the configuration requires, in
/// Terraform's format (`format_version` 1.0).
pub fn schema_json(dir: &Path, variables: &gpustack_engine::VariableArgs, color: bool) -> ExitCode {
    let Some(modules) = requirements(dir, variables, color) else {
        return ExitCode::from(1);
    };
    let registry = crate::registry();
    let sources: BTreeSet<&str> = modules
        .iter()
        .flat_map(|m| &m.providers)
        .filter(|p| p.served)
        .map(|p| p.source.as_str())
        .collect();
    let mut schemas = Map::new();
    for source in sources {
        let Some(factory) = local_name(source).and_then(|name| registry.provider(name)) else {
            continue;
        };
        let schema = factory
            .get_schema(gpustack_protocol::GetSchemaRequest::default())
            .schema;
        schemas.insert(qualified(source), provider_json(&schema));
    }
    println!(
        "{}",
        json!({ "format_version": "1.0", "provider_schemas": schemas })
    );
    ExitCode::SUCCESS
}

/// The local name a served source address has in this build.
fn local_name(source: &str) -> Option<&str> {
    gpustack_protocol::terraform::SERVED_PROVIDERS
        .iter()
        .find(|(s, _)| source.ends_with(s))
        .map(|(_, name)| *name)
        .or_else(|| {
            source
                .strip_prefix(gpustack_engine::GPUSTACK_BUILTIN)
                .and_then(|rest| rest.strip_prefix('/'))
        })
}

fn provider_json(schema: &ProviderSchema) -> Json {
    let types = |types: &mut dyn Iterator<Item = (&String, &Schema)>| -> Map<String, Json> {
        types
            .map(|(name, s)| {
                (
                    name.clone(),
                    json!({ "version": 0, "block": block_json(s) }),
                )
            })
            .collect()
    };
    json!({
        "provider": { "version": 0, "block": block_json(&schema.config) },
        "resource_schemas": types(&mut schema.resources.iter()),
        "data_source_schemas": types(&mut schema.data_sources.iter()),
    })
}

fn block_json(schema: &Schema) -> Json {
    let mut block = Map::new();
    if !schema.attributes.is_empty() {
        block.insert(
            "attributes".into(),
            schema
                .attributes
                .iter()
                .map(|(name, a)| (name.clone(), attribute_json(a)))
                .collect::<Map<_, _>>()
                .into(),
        );
    }
    if !schema.blocks.is_empty() {
        let nested: Map<String, Json> = schema
            .blocks
            .iter()
            .map(|(name, nested)| {
                let mut b = Map::new();
                b.insert(
                    "nesting_mode".into(),
                    match nested.nesting {
                        BlockNesting::Single => "single",
                        BlockNesting::List => "list",
                    }
                    .into(),
                );
                b.insert("block".into(), block_json(&nested.block));
                if nested.min_items > 0 {
                    b.insert("min_items".into(), nested.min_items.into());
                }
                if let Some(max) = nested
                    .max_items
                    .filter(|_| nested.nesting != BlockNesting::Single)
                {
                    b.insert("max_items".into(), max.into());
                }
                (name.clone(), Json::Object(b))
            })
            .collect();
        block.insert("block_types".into(), nested.into());
    }
    if !schema.description.is_empty() {
        block.insert("description".into(), schema.description.clone().into());
    }
    block.insert("description_kind".into(), "plain".into());
    Json::Object(block)
}

fn attribute_json(a: &Attribute) -> Json {
    let mut out = Map::new();
    out.insert("type".into(), cty_type(&a.ty));
    if !a.description.is_empty() {
        out.insert("description".into(), a.description.clone().into());
    }
    out.insert("description_kind".into(), "plain".into());
    for (flag, set) in [
        ("required", a.required),
        ("optional", a.optional),
        ("computed", a.computed),
        ("sensitive", a.sensitive),
        ("write_only", a.write_only),
    ] {
        if set {
            out.insert(flag.into(), true.into());
        }
    }
    Json::Object(out)
}

/// A type in cty's JSON form, as Terraform writes it in schemas.
fn cty_type(ty: &Type) -> Json {
    match ty {
        Type::Any => json!("dynamic"),
        Type::String => json!("string"),
        Type::Number => json!("number"),
        Type::Bool => json!("bool"),
        Type::List(t) => json!(["list", cty_type(t)]),
        Type::Set(t) => json!(["set", cty_type(t)]),
        Type::Map(t) => json!(["map", cty_type(t)]),
        Type::Tuple(items) => json!(["tuple", items.iter().map(cty_type).collect::<Vec<_>>()]),
        Type::Object(attrs) => {
            let types: Map<String, Json> = attrs
                .iter()
                .map(|(k, a)| (k.clone(), cty_type(&a.ty)))
                .collect();
            let optional: Vec<&String> = attrs
                .iter()
                .filter(|(_, a)| a.optional)
                .map(|(k, _)| k)
                .collect();
            if optional.is_empty() {
                json!(["object", types])
            } else {
                json!(["object", types, optional])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(calls: &[&str], sources: &[&str]) -> ModuleProviders {
        ModuleProviders {
            calls: calls.iter().map(|c| (*c).to_owned()).collect(),
            providers: sources
                .iter()
                .map(|s| ProviderRequirement {
                    source: (*s).to_owned(),
                    version: (*s == "hashicorp/helm").then(|| "~> 2.0".to_owned()),
                    served: true,
                })
                .collect(),
        }
    }

    #[test]
    fn the_tree_is_terraforms() {
        let modules = [
            module(&[], &["hashicorp/helm", "hashicorp/kubernetes"]),
            module(&["gpu"], &["hashicorp/kubernetes"]),
            module(&["gpu", "mig"], &["gpustack.dev/builtin/gpu"]),
            module(&["net"], &[]),
        ];
        assert_eq!(
            render_tree(&modules),
            ".\n\
             ├── provider[registry.terraform.io/hashicorp/helm] ~> 2.0\n\
             ├── provider[registry.terraform.io/hashicorp/kubernetes]\n\
             ├── module.gpu\n\
             │   ├── provider[registry.terraform.io/hashicorp/kubernetes]\n\
             │   └── module.mig\n\
             │       └── provider[gpustack.dev/builtin/gpu]\n\
             └── module.net\n"
        );
    }

    #[test]
    fn types_are_ctys() {
        assert_eq!(
            cty_type(&Type::list(Type::map(Type::String))),
            json!(["list", ["map", "string"]])
        );
        assert_eq!(cty_type(&Type::Any), json!("dynamic"));
    }
}
