//! The dependency graph of a stack, built by a named, ordered list of passes.
//!
//! Nodes are declarations (variables, locals, outputs, resources, data sources, provider
//! configurations) of every module instance; an edge `a → b` means b needs a first, and carries
//! the source location that created it. **Invariant:** every pass is linear in the size of the
//! configuration plus the edges it adds (hash lookups, no pairwise scans).

mod cycles;
pub mod dot;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use gpustack_lang::config::{Expr, Module, ResourceMode, Stack, provider_key};
use gpustack_lang::diag::{Diags, suggest};
use gpustack_lang::expr::refs::references;
use gpustack_lang::source::{SourceMap, Span};
use gpustack_protocol::Registry;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Body, Structure};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    Variable,
    Local,
    Output,
    Resource(ResourceMode),
    Provider,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub module: usize,
    pub kind: NodeKind,
    /// The name within its module: `x`, `aks_nodepool.t4`, `kubernetes_nodes.gpu`, `azure.west`.
    pub key: String,
    pub span: Span,
    /// True for a provider nobody configured: its configuration is empty.
    pub implied: bool,
}

impl Node {
    /// The address users see: `var.x`, `module.ts.kubernetes_manifest.config`, `provider.azure.west`.
    pub fn address(&self, stack: &Stack) -> String {
        let prefix = stack.modules[self.module].prefix();
        match self.kind {
            NodeKind::Variable => format!("{prefix}var.{}", self.key),
            NodeKind::Local => format!("{prefix}local.{}", self.key),
            NodeKind::Output => format!("{prefix}output.{}", self.key),
            NodeKind::Resource(ResourceMode::Managed) => format!("{prefix}{}", self.key),
            NodeKind::Resource(ResourceMode::Data) => format!("{prefix}data.{}", self.key),
            NodeKind::Provider => format!("{prefix}provider.{}", self.key),
        }
    }
}

/// Why one node depends on another, and where the stack says so.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub span: Option<Span>,
}

pub struct Graph {
    pub graph: DiGraph<Node, Edge>,
    /// By module and kind, then key: a lookup by `&str` builds no key.
    index: HashMap<(usize, NodeKind), HashMap<String, NodeIndex>>,
    /// The provider node each resource and data source uses.
    pub provider_of: HashMap<NodeIndex, NodeIndex>,
    /// Nodes that are part of a dependency cycle; they are not evaluated.
    pub in_cycle: Vec<bool>,
}

impl Graph {
    pub fn node(&self, module: usize, kind: NodeKind, key: &str) -> Option<NodeIndex> {
        self.index.get(&(module, kind))?.get(key).copied()
    }

    /// EvalContext order: every node after all of its dependencies, members of cycles left out,
    /// and otherwise as close to declaration order as the dependencies allow: a node becomes
    /// ready once its last dependency is done, and ready nodes go first come, first served.
    /// Nodes are numbered in declaration order, the order the loader allocated their
    /// configuration in, so a walk in this order reads memory mostly in sequence. (A
    /// depth-first order walks a stack of wide layers a column at a time, each step to a
    /// resource a layer's width away in memory.)
    pub fn order(&self) -> Vec<NodeIndex> {
        let graph = &self.graph;
        let counted = |n: NodeIndex| !self.in_cycle[n.index()];
        let mut waiting = vec![0usize; graph.node_count()];
        for edge in graph.edge_references() {
            if counted(edge.source()) {
                waiting[edge.target().index()] += 1;
            }
        }
        let mut ready: VecDeque<NodeIndex> = graph
            .node_indices()
            .filter(|&n| counted(n) && waiting[n.index()] == 0)
            .collect();
        let mut order = Vec::with_capacity(graph.node_count());
        while let Some(node) = ready.pop_front() {
            order.push(node);
            for next in graph.neighbors(node) {
                if counted(next) {
                    waiting[next.index()] -= 1;
                    if waiting[next.index()] == 0 {
                        ready.push_back(next);
                    }
                }
            }
        }
        order
    }
}

type Pass = fn(&mut Builder<'_>);

/// The passes, in the order they run. Later passes rely on the nodes earlier ones added.
pub const PASSES: &[(&str, Pass)] = &[
    ("declarations", add_declarations),
    ("provider configurations", add_provider_edges),
    ("references", add_reference_edges),
    ("module inputs", add_module_input_edges),
    ("depends_on", add_depends_on_edges),
    ("module depends_on", add_module_depends_on_edges),
    ("import blocks", add_import_edges),
    ("cycles", cycles::find_cycles),
];

pub struct Builder<'a> {
    pub stack: &'a Stack,
    pub sources: &'a SourceMap,
    pub registry: &'a Registry,
    pub diags: &'a mut Diags,
    pub graph: Graph,
    edges: HashSet<(NodeIndex, NodeIndex)>,
    /// Where a resource's `type.name` key is written for a lookup, so that resolving a
    /// reference formats no key of its own.
    key: RefCell<String>,
}

pub fn build(stack: &Stack, sources: &SourceMap, registry: &Registry, diags: &mut Diags) -> Graph {
    let declarations: usize = stack
        .modules
        .iter()
        .map(|m| {
            m.variables.len()
                + m.locals.len()
                + m.outputs.len()
                + m.providers.len()
                + m.resources.len()
                + m.data.len()
        })
        .sum();
    let mut builder = Builder {
        stack,
        sources,
        registry,
        diags,
        graph: Graph {
            graph: DiGraph::with_capacity(declarations, 2 * declarations),
            index: HashMap::new(),
            provider_of: HashMap::with_capacity(declarations),
            in_cycle: Vec::new(),
        },
        edges: HashSet::with_capacity(2 * declarations),
        key: RefCell::new(String::new()),
    };
    for (name, pass) in PASSES {
        tracing::trace!(pass = name, "graph pass");
        pass(&mut builder);
    }
    builder.graph
}

impl Builder<'_> {
    /// File name, line and column of a span, for diagnostics that mention several places.
    fn sources_range(&self, span: &Span) -> (String, usize, usize) {
        let range = self.sources.range(*span);
        (range.filename, range.start.line, range.start.column)
    }

    fn add(
        &mut self,
        module: usize,
        kind: NodeKind,
        key: String,
        span: Span,
        implied: bool,
    ) -> NodeIndex {
        let index = self.graph.graph.add_node(Node {
            module,
            kind: kind.clone(),
            key: key.clone(),
            span,
            implied,
        });
        self.graph
            .index
            .entry((module, kind))
            .or_default()
            .insert(key, index);
        index
    }

    /// Adds an edge once; the first place that creates it is the one reported.
    /// (petgraph's `update_edge` scans the source's edges: quadratic for a provider or
    /// variable used by thousands of resources.)
    fn edge(&mut self, from: NodeIndex, to: NodeIndex, span: Option<Span>) {
        if self.edges.insert((from, to)) {
            self.graph.graph.add_edge(from, to, Edge { span });
        }
    }

    /// The nodes a reference made in `module` points at; empty when it names nothing declared
    /// (the evaluator reports that, with the reason).
    fn resolve(&self, module: usize, names: &[&str]) -> Vec<NodeIndex> {
        let m = &self.stack.modules[module];
        let get = |kind: NodeKind, key: &str| match self.graph.node(module, kind, key) {
            Some(node) => vec![node],
            None => Vec::new(),
        };
        let resource = |mode: ResourceMode, ty: &str, name: &str| {
            let mut key = self.key.borrow_mut();
            key.clear();
            let _ = write!(key, "{ty}.{name}");
            get(NodeKind::Resource(mode), &key)
        };
        match *names {
            ["var", name, ..] => get(NodeKind::Variable, name),
            ["local", name, ..] => get(NodeKind::Local, name),
            ["module", call, ref rest @ ..] => {
                // A repeated call: every output of every instance (the key comes after).
                if let Some(instances) = m.instances.get(call) {
                    return instances
                        .iter()
                        .flat_map(|&child| {
                            self.stack.modules[child]
                                .outputs
                                .keys()
                                .filter_map(move |o| self.graph.node(child, NodeKind::Output, o))
                        })
                        .collect();
                }
                let Some(&child) = m.children.get(call) else {
                    return Vec::new();
                };
                match rest.first() {
                    Some(output) => self
                        .graph
                        .node(child, NodeKind::Output, output)
                        .into_iter()
                        .collect(),
                    None => self.stack.modules[child]
                        .outputs
                        .keys()
                        .filter_map(|o| self.graph.node(child, NodeKind::Output, o))
                        .collect(),
                }
            }
            ["data", ty, name, ..] => resource(ResourceMode::Data, ty, name),
            [
                "count" | "each" | "path" | "self" | "var" | "local" | "data" | "module"
                | "terraform",
                ..,
            ] => Vec::new(),
            [ty, name, ..] => resource(ResourceMode::Managed, ty, name),
            _ => Vec::new(),
        }
    }

    fn add_refs(&mut self, module: usize, to: NodeIndex, expr: &Expr) {
        self.add_expression_refs(module, to, &expr.expr, expr.file);
    }

    fn add_expression_refs(
        &mut self,
        module: usize,
        to: NodeIndex,
        expr: &Expression,
        file: gpustack_lang::source::FileId,
    ) {
        for reference in references(expr) {
            let span = reference.range.clone().map(|r| Span::new(file, r));
            if let ["module", call, output, ..] = reference.names() {
                self.deprecated_output(module, call, output, span);
            }
            for from in self.resolve(module, reference.names()) {
                self.edge(from, to, span);
            }
        }
    }

    /// A reference to a child module's output that is `deprecated` is a warning saying so,
    /// at the reference (Terraform 1.15).
    fn deprecated_output(&mut self, module: usize, call: &str, output: &str, span: Option<Span>) {
        let config = &self.stack.modules[module];
        let child = config
            .children
            .get(call)
            .or_else(|| config.instances.get(call).and_then(|i| i.first()));
        let Some(message) = child
            .and_then(|&c| self.stack.modules[c].outputs.get(output))
            .and_then(|o| o.deprecated.clone())
        else {
            return;
        };
        self.diags.push(gpustack_lang::diag::Diag::warning(
            span,
            "Deprecated output",
            format!("module.{call}.{output} is deprecated: {message}"),
        ));
    }

    /// Every resource, data source and output inside a module and its descendants.
    fn subtree_nodes(&self, module: usize) -> Vec<NodeIndex> {
        let mut out = Vec::new();
        let mut stack = vec![module];
        while let Some(m) = stack.pop() {
            let config = &self.stack.modules[m];
            let resources = config
                .resources
                .keys()
                .map(|k| (NodeKind::Resource(ResourceMode::Managed), k));
            let data = config
                .data
                .keys()
                .map(|k| (NodeKind::Resource(ResourceMode::Data), k));
            let outputs = config.outputs.keys().map(|k| (NodeKind::Output, k));
            out.extend(
                resources
                    .chain(data)
                    .chain(outputs)
                    .filter_map(|(kind, key)| self.graph.node(m, kind, key)),
            );
            stack.extend(config.children.values());
            stack.extend(config.instances.values().flatten());
        }
        out
    }
}

fn add_declarations(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        for v in m.variables.values() {
            b.add(i, NodeKind::Variable, v.name.clone(), v.span, false);
        }
        for l in m.locals.values() {
            b.add(i, NodeKind::Local, l.name.clone(), l.span, false);
        }
        for o in m.outputs.values() {
            b.add(i, NodeKind::Output, o.name.clone(), o.span, false);
        }
        for (key, p) in &m.providers {
            if !b.registry.has_provider(&p.name) {
                b.diags.error(
                    p.body.span,
                    "Unknown provider",
                    format!(
                        "There is no provider named \"{}\". Providers are {}.{}",
                        p.name,
                        b.registry.names().collect::<Vec<_>>().join(", "),
                        suggest(&p.name, b.registry.names())
                    ),
                );
                continue;
            }
            b.add(i, NodeKind::Provider, key.clone(), p.body.span, false);
        }
        for (key, r) in m.resources.iter().chain(&m.data) {
            b.add(i, NodeKind::Resource(r.mode), key.clone(), r.span, false);
        }
    }
}

fn add_provider_edges(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        for (key, r) in m.resources.iter().chain(&m.data) {
            let Some(owner) = b.registry.owner_of(&r.type_name) else {
                continue;
            };
            let (name, alias, span) = match &r.provider {
                Some(p) => (p.name.as_str(), p.alias.as_deref(), p.span),
                None => (owner, None, r.span),
            };
            if name != owner && !b.registry.serves(name, &r.type_name) {
                b.diags.error(
                    span,
                    "Wrong provider for resource type",
                    format!(
                        "{} belongs to the \"{owner}\" provider, not \"{name}\".",
                        r.type_name
                    ),
                );
                continue;
            }
            let Some(node) = b.graph.node(i, NodeKind::Resource(r.mode), key) else {
                continue;
            };
            match resolve_provider(b, i, name, alias, span) {
                Some(provider) => {
                    b.edge(provider, node, Some(span));
                    b.graph.provider_of.insert(node, provider);
                }
                None => b.diags.error(
                    span,
                    "Provider configuration not present",
                    format!("{} uses provider \"{}\", which is not declared: add provider \"{name}\" {{ alias = \"{}\" }}, or pass it to this module with providers = {{ ... }}.", r.local_address(), provider_key(name, alias), alias.unwrap_or_default()),
                ),
            }
        }
    }
}

/// Finds the provider configuration a module sees under `name`/`alias`: its own block, one passed
/// by its caller in `providers = {...}`, or the caller's default configuration (aliases are
/// never inherited implicitly). At the root an unconfigured default provider is implied.
fn resolve_provider(
    b: &mut Builder<'_>,
    module: usize,
    name: &str,
    alias: Option<&str>,
    span: Span,
) -> Option<NodeIndex> {
    let key = provider_key(name, alias);
    if let Some(node) = b.graph.node(module, NodeKind::Provider, &key) {
        return Some(node);
    }
    let m: &Module = &b.stack.modules[module];
    match m.parent {
        Some(parent) => {
            let call = b.stack.modules[parent].calls.get(m.call_name()?)?;
            if let Some(passed) = call.providers.get(&key) {
                let (n, a, s) = (passed.name.clone(), passed.alias.clone(), passed.span);
                return resolve_provider(b, parent, &n, a.as_deref(), s);
            }
            if alias.is_none() {
                resolve_provider(b, parent, name, None, span)
            } else {
                None
            }
        }
        None if alias.is_none() => Some(b.add(0, NodeKind::Provider, key, span, true)),
        None => None,
    }
}

fn add_reference_edges(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        for v in m.variables.values() {
            let Some(node) = b.graph.node(i, NodeKind::Variable, &v.name) else {
                continue;
            };
            for validation in &v.validations {
                for expr in [&validation.condition, &validation.error_message] {
                    // A rule's references to its own variable are to the value being checked.
                    for reference in references(&expr.expr) {
                        let names = reference.names();
                        if names.get(1) == Some(&v.name.as_str()) && names[0] == "var" {
                            continue;
                        }
                        let span = reference.range.clone().map(|r| Span::new(expr.file, r));
                        for from in b.resolve(i, names) {
                            b.edge(from, node, span);
                        }
                    }
                }
            }
        }
        for l in m.locals.values() {
            if let Some(node) = b.graph.node(i, NodeKind::Local, &l.name) {
                b.add_refs(i, node, &l.expr);
            }
        }
        for o in m.outputs.values() {
            if let Some(node) = b.graph.node(i, NodeKind::Output, &o.name) {
                b.add_refs(i, node, &o.value);
                for c in &o.preconditions {
                    b.add_refs(i, node, &c.condition);
                    b.add_refs(i, node, &c.error_message);
                }
            }
        }
        for (key, p) in &m.providers {
            if let Some(node) = b.graph.node(i, NodeKind::Provider, key) {
                for expr in body_exprs(&p.body.body) {
                    b.add_expression_refs(i, node, expr, p.body.file);
                }
            }
        }
        for (key, r) in m.resources.iter().chain(&m.data) {
            let Some(node) = b.graph.node(i, NodeKind::Resource(r.mode), key) else {
                continue;
            };
            for expr in r.count.iter().chain(&r.for_each) {
                b.add_refs(i, node, expr);
            }
            for expr in body_exprs(&r.body.body) {
                b.add_expression_refs(i, node, expr, r.body.file);
            }
            // What triggers a replacement is planned first, so that its change is known.
            for expr in &r.lifecycle().replace_triggered_by {
                b.add_refs(i, node, expr);
            }
            // What a create-time provisioner reads besides its own object is there before it
            // runs; a destroy-time one reads only its own object.
            for p in r.provisioners().iter().filter(|p| !p.when_destroy) {
                for expr in body_exprs(&p.body.body) {
                    b.add_expression_refs(i, node, expr, p.body.file);
                }
            }
            let lifecycle = r.lifecycle();
            for expr in lifecycle.enabled.iter().chain(&lifecycle.prevent_destroy) {
                b.add_refs(i, node, expr);
            }
            for c in lifecycle
                .preconditions
                .iter()
                .chain(&lifecycle.postconditions)
            {
                b.add_refs(i, node, &c.condition);
                b.add_refs(i, node, &c.error_message);
            }
        }
    }
}

/// Every expression of a body, nested blocks included.
pub fn body_exprs(body: &Body) -> Vec<&Expression> {
    let mut out = Vec::new();
    let mut pending = vec![body];
    while let Some(body) = pending.pop() {
        for structure in body.iter() {
            match structure {
                Structure::Attribute(a) => out.push(&a.value),
                Structure::Block(block) => pending.push(&block.body),
            }
        }
    }
    out
}

fn add_module_input_edges(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        for (call_name, call) in &m.calls {
            for (nth, child) in m.called(call_name).into_iter().enumerate() {
                // Instances of one call share its mistakes: each is reported once.
                let first = nth == 0;
                let child_module = &b.stack.modules[child];
                for (arg, (expr, key_span)) in &call.args {
                    match b.graph.node(child, NodeKind::Variable, arg) {
                        Some(node) => b.add_refs(i, node, expr),
                        None if !first => {}
                        None => b.diags.error(
                            *key_span,
                            "Unsupported argument",
                            format!(
                                "Module \"{call_name}\" has no input variable named \"{arg}\".{}",
                                suggest(arg, child_module.variables.keys().map(String::as_str))
                            ),
                        ),
                    }
                }
                for v in child_module.variables.values().filter(|_| first) {
                    if v.default.is_none() && !call.args.contains_key(&v.name) {
                        b.diags.error(call.span, "Missing required argument", format!("Module \"{call_name}\" needs a value for its input variable \"{}\", which has no default.", v.name));
                    }
                }
                for (child_key, passed) in call.providers.iter().filter(|_| first) {
                    let provider_name = child_key.split('.').next().unwrap_or_default();
                    if !b.registry.has_provider(provider_name) {
                        b.diags.error(
                            passed.span,
                            "Unknown provider",
                            format!("There is no provider named \"{provider_name}\"."),
                        );
                    } else if b.graph.node(i, NodeKind::Provider, &passed.key()).is_none()
                        && passed.alias.is_some()
                        && m.parent.is_none()
                    {
                        b.diags.error(
                            passed.span,
                            "Provider configuration not present",
                            format!(
                                "provider \"{}\" is not declared in this module.",
                                passed.key()
                            ),
                        );
                    }
                }
            }
        }
    }
}

fn add_depends_on_edges(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        let resources = m
            .resources
            .iter()
            .chain(&m.data)
            .map(|(k, r)| (NodeKind::Resource(r.mode), k.as_str(), &r.depends_on));
        let outputs = m
            .outputs
            .iter()
            .map(|(k, o)| (NodeKind::Output, k.as_str(), &o.depends_on));
        let dependents: Vec<_> = resources.chain(outputs).collect();
        for (kind, key, depends_on) in dependents {
            let Some(node) = b.graph.node(i, kind, key) else {
                continue;
            };
            for reference in depends_on.iter() {
                let targets = depends_on_targets(b, i, reference);
                for target in targets {
                    b.edge(target, node, Some(reference.span));
                }
            }
        }
    }
}

/// What a depends_on entry points at (a module means everything inside it); an entry that
/// points at nothing is reported.
fn depends_on_targets(
    b: &mut Builder<'_>,
    module: usize,
    reference: &gpustack_lang::config::Reference,
) -> Vec<NodeIndex> {
    // A declared call may have nothing to wait for: a module of no resources, or one that
    // could not be loaded (reported once, where its source is).
    let mut declared_call = false;
    let targets = match reference.parts.as_slice() {
        [root, call, ..] if root == "module" => {
            declared_call = b.stack.modules[module].calls.contains_key(call);
            b.stack.modules[module]
                .called(call)
                .into_iter()
                .flat_map(|child| b.subtree_nodes(child))
                .collect()
        }
        parts => b.resolve(
            module,
            &parts.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
    };
    if targets.is_empty() && !declared_call {
        b.diags.error(
            reference.span,
            "Invalid depends_on reference",
            format!(
                "\"{}\" is not declared in this module.",
                reference.parts.join(".")
            ),
        );
    }
    targets
}

/// An `import` block's id and for_each are evaluated when the resource it imports into is
/// planned: what they read comes first.
fn add_import_edges(b: &mut Builder<'_>) {
    let Some(root) = b.stack.modules.first() else {
        return;
    };
    for import in &root.imports {
        let mut names: Vec<String> = Vec::new();
        if let hcl_edit::expr::Expression::Traversal(t) = &import.to.expr
            && let hcl_edit::expr::Expression::Variable(v) = &t.expr
        {
            names.push(v.as_str().to_owned());
            for op in &t.operators {
                if let hcl_edit::expr::TraversalOperator::GetAttr(n) = op.value() {
                    names.push(n.as_str().to_owned());
                }
            }
        }
        // module.a.module.b.TYPE.NAME: the module by its path, then the resource in it.
        let mut module = 0;
        let mut rest = names.as_slice();
        while let [first, call, tail @ ..] = rest
            && first == "module"
        {
            match b.stack.modules[module].children.get(call) {
                Some(&child) => module = child,
                None => break,
            }
            rest = tail;
        }
        let [ty, name] = rest else {
            continue;
        };
        let Some(target) = b.graph.node(
            module,
            NodeKind::Resource(ResourceMode::Managed),
            &format!("{ty}.{name}"),
        ) else {
            continue;
        };
        b.add_refs(0, target, import.id.expr());
        if let Some(for_each) = &import.for_each {
            b.add_refs(0, target, for_each);
        }
    }
}

fn add_module_depends_on_edges(b: &mut Builder<'_>) {
    for (i, m) in b.stack.modules.iter().enumerate() {
        for (call_name, call) in &m.calls {
            if call.depends_on.is_empty() {
                continue;
            }
            let inside: Vec<NodeIndex> = m
                .called(call_name)
                .into_iter()
                .flat_map(|child| b.subtree_nodes(child))
                .collect();
            for reference in &call.depends_on {
                let targets = depends_on_targets(b, i, reference);
                for &target in &targets {
                    for &node in &inside {
                        b.edge(target, node, Some(reference.span));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpustack_lang::config::{Files, load_stack_from};
    use std::path::Path;

    fn order_of(text: &str) -> Vec<String> {
        let files = Files::Snapshot {
            root: "stack".into(),
            files: std::sync::Arc::new([("main.hcl".to_owned(), text.to_owned())].into()),
        };
        let dir = Path::new("stack");
        let mut sources = SourceMap::new(dir);
        let mut diags = Diags::default();
        let stack = load_stack_from(&files, dir, &mut sources, &mut diags);
        let graph = build(&stack, &sources, &Registry::new(Vec::new()), &mut diags);
        graph
            .order()
            .into_iter()
            .map(|n| graph.graph[n].key.clone())
            .collect()
    }

    #[test]
    fn order_follows_declarations_where_dependencies_allow() {
        // Three layers of three, each resource reading one of the layer before: a depth-first
        // order would take a column at a time (a0, b0, c0, a1, ...).
        let mut text = String::new();
        for (layer, before) in [("a", None), ("b", Some("a")), ("c", Some("b"))] {
            for i in 0..3 {
                let value = before.map_or("1".to_owned(), |b| format!("t.{b}{i}.id"));
                text.push_str(&format!(
                    "resource \"t\" \"{layer}{i}\" {{\n  v = {value}\n}}\n"
                ));
            }
        }
        assert_eq!(
            order_of(&text),
            [
                "t.a0", "t.a1", "t.a2", "t.b0", "t.b1", "t.b2", "t.c0", "t.c1", "t.c2"
            ]
        );
    }

    #[test]
    fn order_puts_dependencies_first_and_leaves_cycles_out() {
        let text = r#"
resource "t" "first" {
  v = t.later.id
}
resource "t" "later" {
  v = 1
}
resource "t" "loop_a" {
  v = t.loop_b.id
}
resource "t" "loop_b" {
  v = t.loop_a.id
}
resource "t" "after_loop" {
  v = t.loop_a.id
}
"#;
        assert_eq!(order_of(text), ["t.later", "t.after_loop", "t.first"]);
    }
}
