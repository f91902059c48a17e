//! Cycle detection: every cycle is reported once, with each member and the place where each of
//! its edges is written.

use super::Builder;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use std::collections::{HashMap, HashSet, VecDeque};

pub(super) fn find_cycles(b: &mut Builder<'_>) {
    let graph = &b.graph.graph;
    let mut in_cycle = vec![false; graph.node_count()];
    let mut reports = Vec::new();
    for scc in petgraph::algo::kosaraju_scc(graph) {
        let self_loop = scc.len() == 1 && graph.contains_edge(scc[0], scc[0]);
        if scc.len() < 2 && !self_loop {
            continue;
        }
        for n in &scc {
            in_cycle[n.index()] = true;
        }
        let members: HashSet<NodeIndex> = scc.iter().copied().collect();
        // Start from the member declared first so that reports are stable.
        let start = scc
            .iter()
            .copied()
            .min_by_key(|n| (graph[*n].span.file, graph[*n].span.start))
            .unwrap_or(scc[0]);
        reports.push(cycle_through(b, start, &members));
    }
    b.graph.in_cycle = in_cycle;
    for (summary_span, detail) in reports {
        b.diags.error(summary_span, "Dependency cycle", detail);
    }
}

/// The shortest cycle through `start` inside one strongly connected component, as a diagnostic.
fn cycle_through(
    b: &Builder<'_>,
    start: NodeIndex,
    members: &HashSet<NodeIndex>,
) -> (Option<gpustack_lang::source::Span>, String) {
    let graph = &b.graph.graph;
    let mut previous: HashMap<NodeIndex, (NodeIndex, Option<gpustack_lang::source::Span>)> =
        HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut closing = None;
    'search: while let Some(node) = queue.pop_front() {
        for edge in graph.edges(node) {
            let next = edge.target();
            if !members.contains(&next) {
                continue;
            }
            if next == start {
                closing = Some((node, edge.weight().span));
                break 'search;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = previous.entry(next) {
                slot.insert((node, edge.weight().span));
                queue.push_back(next);
            }
        }
    }
    let Some((last, closing_span)) = closing else {
        return (
            graph[start].span.into(),
            "A cycle was found but could not be traced.".into(),
        );
    };
    // Walk back from the node that closes the cycle to the start.
    let mut steps = vec![(last, start, closing_span)];
    let mut current = last;
    while current != start {
        let Some(&(prev, span)) = previous.get(&current) else {
            break;
        };
        steps.push((prev, current, span));
        current = prev;
    }
    // `steps` runs against the edges (dependent ← dependency), which reads as "needs".
    let name = |n: NodeIndex| graph[n].address(b.stack);
    let path: Vec<String> = std::iter::once(name(start))
        .chain(steps.iter().map(|(from, _, _)| name(*from)))
        .collect();
    let mut detail = if steps.len() == 1 {
        format!("{} refers to itself.", name(start))
    } else {
        format!(
            "These declarations depend on each other, each needing the next: {}.",
            path.join(" → ")
        )
    };
    for (from, to, span) in &steps {
        let at = span.map_or_else(String::new, |s| {
            let r = b.sources_range(&s);
            format!(" at {}:{}:{}", r.0, r.1, r.2)
        });
        detail.push_str(&format!("\n  {} needs {}{at}", name(*to), name(*from)));
    }
    (closing_span.or(Some(graph[start].span)), detail)
}
