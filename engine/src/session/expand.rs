//! Repeated module calls (`count` and `for_each` on `module`) expanded into their instances.

use super::inputs::{InputSource, read_inputs};
use crate::evaluate::{self, Inputs};
use crate::graph;
use gpustack_lang::config;
use gpustack_lang::diag::Diags;
use gpustack_lang::source::SourceMap;
use gpustack_protocol::Registry;
use std::path::Path;

/// The instances of repeated module calls (count/for_each on `module`): each round evaluates
/// the counts and for_eachs of the stack loaded so far and loads it again with that many
/// instances, one level of nesting per round. Returns them with what could not be expanded.
///
/// Iterative by necessity, not by accident: a nested call's `count` or `for_each` may read
/// the inputs its parent instance was given (`each.value` one level up), which exist only
/// once that level is expanded and evaluated; a stack without repeated calls is loaded once.
/// The first round starts from `loaded`, the stack as loaded with no expansions (with the
/// sources and diagnostics of that load); the later rounds reload from `files` (the disk, or
/// a plan's snapshot).
pub(super) fn expand_modules(
    loaded: (config::Stack, SourceMap, Diags),
    files: &config::Files,
    dir: &Path,
    registry: &Registry,
    source: &InputSource<'_>,
    early: &Inputs,
) -> (config::ModuleExpansions, Diags) {
    let mut expansions = config::ModuleExpansions::new();
    let mut failures = Diags::default();
    let (mut stack, mut scratch_sources, mut scratch) = loaded;
    for _ in 0..32 {
        let inputs = read_inputs(dir, source, &mut scratch_sources, &mut scratch);
        let graph = graph::build(&stack, &scratch_sources, registry, &mut scratch);
        let found = evaluate::module_expansions(
            &stack,
            &graph,
            registry,
            &scratch_sources,
            &inputs,
            &expansions,
            &mut failures,
        );
        if found.is_empty() {
            break;
        }
        expansions.extend(found);
        scratch_sources = SourceMap::new(dir);
        scratch = Diags::default();
        stack = config::load_stack_with(
            files,
            dir,
            &mut scratch_sources,
            &mut scratch,
            &expansions,
            Some(registry),
            early,
        );
    }
    (expansions, failures)
}
