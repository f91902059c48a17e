//! `validate`: every static phase over a stack as one call.

use crate::evaluate::{self, EvalOptions, Evaluated};
use crate::graph::{self, Graph};
use crate::session::{InputSource, Session, VariableArgs};
use gpustack_lang::config::{self, Stack};
use gpustack_lang::source::SourceMap;
use gpustack_protocol::{Diagnostic, Registry};
use std::path::Path;

/// A stack loaded, graphed and evaluated, with every problem found on the way.
pub struct Loaded {
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
    stack: Stack,
    graph: Graph,
    evaluated: Evaluated,
    registry: Registry,
}

/// The providers one module requires, as `gpustack providers` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleProviders {
    /// The calls from the root that load the module: `[]`, `["gpu"]`, `["gpu", "operator"]`.
    pub calls: Vec<String>,
    /// By source address, each once.
    pub providers: Vec<ProviderRequirement>,
}

/// One provider a module requires.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProviderRequirement {
    /// Terraform's source address (`hashicorp/kubernetes`, `terraform.io/builtin/terraform`),
    /// or `gpustack.dev/builtin/NAME` for a provider that is gpustack's own.
    pub source: String,
    /// The version constraint the module's `required_providers` writes, if any.
    pub version: Option<String>,
    /// Whether this build serves it.
    pub served: bool,
}

impl Loaded {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Resource instances, after count and for_each.
    pub fn resource_count(&self) -> usize {
        self.evaluated.resources
    }

    /// Modules, the root and every instance of a repeated call included.
    pub fn module_count(&self) -> usize {
        self.stack.modules.len()
    }

    /// Every module's provider requirements: those its `required_providers` declares, and
    /// those its provider blocks and resources imply; one module per call (the instances of a
    /// repeated call require the same), ordered by the calls' path.
    pub fn provider_requirements(&self) -> Vec<ModuleProviders> {
        let mut modules: Vec<ModuleProviders> = self
            .stack
            .modules
            .iter()
            .enumerate()
            .filter_map(|(index, module)| {
                let calls = self.calls_to(index);
                let first = module.instance.as_ref().is_none_or(|_| {
                    let parent = module.parent.unwrap_or(0);
                    let call = module.call_name().unwrap_or_default();
                    self.stack.modules[parent].called(call).first() == Some(&index)
                });
                first.then(|| ModuleProviders {
                    calls,
                    providers: self.module_providers(module),
                })
            })
            .collect();
        modules.sort_by(|a, b| a.calls.cmp(&b.calls));
        modules
    }

    fn calls_to(&self, mut index: usize) -> Vec<String> {
        let mut calls = Vec::new();
        while let Some(parent) = self.stack.modules[index].parent {
            calls.push(
                self.stack.modules[index]
                    .call_name()
                    .unwrap_or_default()
                    .to_owned(),
            );
            index = parent;
        }
        calls.reverse();
        calls
    }

    fn module_providers(&self, module: &config::Module) -> Vec<ProviderRequirement> {
        let required = module
            .terraform
            .as_ref()
            .map(|t| t.required_providers.as_slice())
            .unwrap_or_default();
        let mut names: Vec<String> = required.iter().map(|r| r.name.clone()).collect();
        names.extend(
            module.providers.values().map(|p| p.name.clone()).chain(
                module
                    .resources
                    .values()
                    .chain(module.data.values())
                    .map(|r| match &r.provider {
                        Some(p) => p.name.clone(),
                        None => self
                            .registry
                            .owner_of(&r.type_name)
                            .map(str::to_owned)
                            .unwrap_or_else(|| {
                                // Terraform's rule: the type's prefix names its provider.
                                r.type_name.split('_').next().unwrap_or_default().to_owned()
                            }),
                    }),
            ),
        );
        let mut out: Vec<ProviderRequirement> = Vec::new();
        for name in names {
            let entry = required.iter().find(|r| r.name == name);
            let source = match entry {
                Some(r) => r.source.clone(),
                None => default_source(&name, &self.registry),
            };
            let served = gpustack_protocol::terraform::SERVED_PROVIDERS
                .iter()
                .any(|(s, n)| source.ends_with(s) && self.registry.has_provider(n))
                || (source == format!("{GPUSTACK_BUILTIN}/{name}")
                    && self.registry.has_provider(&name));
            if out.iter().any(|p| p.source == source) {
                continue;
            }
            out.push(ProviderRequirement {
                source,
                version: entry.and_then(|r| r.version.clone()),
                served,
            });
        }
        out.sort();
        out
    }

    /// The dependency graph in Graphviz's dot language.
    pub fn graph_dot(&self) -> String {
        graph::dot::render(&self.stack, &self.graph, &self.evaluated.instances)
    }
}

/// Runs every static phase over the stack in `dir`. All problems are collected, never only the
/// first; no phase performs network I/O.
pub fn load(
    registry: Registry,
    dir: &Path,
    variables: &VariableArgs,
    options: EvalOptions,
) -> Loaded {
    let Session {
        registry,
        sources,
        stack,
        graph,
        inputs,
        mut diags,
        ..
    } = Session::open(
        registry,
        dir,
        &config::Files::Disk,
        InputSource::Args(variables),
    );
    let evaluated = if stack.modules.is_empty() {
        Evaluated::default()
    } else {
        evaluate::evaluate(
            &stack, &graph, &registry, &sources, &inputs, options, &mut diags,
        )
    };
    let diagnostics = diags.into_sorted(&sources);
    Loaded {
        sources,
        stack,
        graph,
        evaluated,
        diagnostics,
        registry,
    }
}

/// Where the source addresses of gpustack's own providers are: built into the binary, as
/// Terraform's `terraform.io/builtin/terraform` is into Terraform.
pub const GPUSTACK_BUILTIN: &str = "gpustack.dev/builtin";

/// The source address of a provider no `required_providers` entry names: Terraform's (its
/// `hashicorp/NAME` default, the built-in `terraform`), or gpustack's own for the providers
/// that are only gpustack's.
pub fn default_source(name: &str, registry: &Registry) -> String {
    match gpustack_protocol::terraform::SERVED_PROVIDERS
        .iter()
        .find(|(_, n)| *n == name)
    {
        Some((source, _)) if source.starts_with("builtin/") => format!("terraform.io/{source}"),
        Some((source, _)) => (*source).to_owned(),
        None if registry.has_provider(name) => format!("{GPUSTACK_BUILTIN}/{name}"),
        None => format!("hashicorp/{name}"),
    }
}
