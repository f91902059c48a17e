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
    }
}
