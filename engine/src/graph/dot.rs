//! The graph as Graphviz DOT: one cluster per module, edges in execution order
//! (dependency → dependent), instances of counted resources inside a cluster of their own.

use super::{Graph, NodeKind};
use gpustack_lang::config::Stack;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use std::collections::HashMap;
use std::fmt::Write as _;

/// How a resource expanded: its instance keys (`[0]`, `["a"]`), when count/for_each are known.
pub type Instances = HashMap<NodeIndex, Vec<String>>;

pub fn render(stack: &Stack, graph: &Graph, instances: &Instances) -> String {
    let g = &graph.graph;
    let mut out = String::from(
        "digraph gpustack {\n  compound = true;\n  rankdir = LR;\n  node [shape = box, fontname = \"Helvetica\"];\n",
    );
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    // The node an edge attaches to: the first instance of an expanded resource.
    let anchor = |n: NodeIndex| -> (String, Option<String>) {
        let address = g[n].address(stack);
        match instances.get(&n).and_then(|keys| keys.first()) {
            Some(first) => (
                quote(&format!("{address}{first}")),
                Some(cluster_id(&address)),
            ),
            None => (quote(&address), None),
        }
    };
    let mut by_module: Vec<Vec<NodeIndex>> = vec![Vec::new(); stack.modules.len()];
    for n in g.node_indices() {
        by_module[g[n].module].push(n);
    }
    for (m, nodes) in by_module.iter().enumerate() {
        let indent = if m == 0 { "  " } else { "    " };
        if m > 0 {
            let label = stack.modules[m].prefix();
            let _ = writeln!(
                out,
                "  subgraph {} {{\n    label = {};\n    style = rounded;",
                cluster_id(&label),
                quote(label.trim_end_matches('.'))
            );
        }
        for &n in nodes {
            let node = &g[n];
            let address = node.address(stack);
            let shape = match node.kind {
                NodeKind::Resource(_) => "box",
                NodeKind::Provider => "diamond",
                NodeKind::Variable | NodeKind::Local | NodeKind::Output => "note",
            };
            match instances.get(&n).filter(|keys| !keys.is_empty()) {
                Some(keys) => {
                    let _ = writeln!(
                        out,
                        "{indent}subgraph {} {{\n{indent}  label = {};\n{indent}  style = dashed;",
                        cluster_id(&address),
                        quote(&address)
                    );
                    for key in keys {
                        let _ = writeln!(
                            out,
                            "{indent}  {} [shape = {shape}];",
                            quote(&format!("{address}{key}"))
                        );
                    }
                    let _ = writeln!(out, "{indent}}}");
                }
                None => {
                    let _ = writeln!(out, "{indent}{} [shape = {shape}];", quote(&address));
                }
            }
        }
        if m > 0 {
            out.push_str("  }\n");
        }
    }
    for edge in g.edge_references() {
        let (from, tail) = anchor(edge.source());
        let (to, head) = anchor(edge.target());
        let mut attrs = Vec::new();
        if let Some(t) = tail {
            attrs.push(format!("ltail = {t}"));
        }
        if let Some(h) = head {
            attrs.push(format!("lhead = {h}"));
        }
        if attrs.is_empty() {
            let _ = writeln!(out, "  {from} -> {to};");
        } else {
            let _ = writeln!(out, "  {from} -> {to} [{}];", attrs.join(", "));
        }
    }
    out.push_str("}\n");
    out
}

fn cluster_id(address: &str) -> String {
    let id: String = address
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("\"cluster_{id}\"")
}
