//! Where a path into a resource's configuration is written, followed as far as the source
//! shows it: attributes and nested blocks, object constructors, list items, the arguments of
//! `yamlencode`/`jsonencode`/`merge`-like calls, the module's locals, a module variable's
//! argument in the calling module, and YAML written in a heredoc, in a literal block scalar
//! inside such YAML, or in a file read with `file()`.

use gpustack_lang::config::{BodyRef, Module, Stack};
use gpustack_lang::source::{FileId, SourceMap, Span};
use gpustack_protocol::PathStep;
use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, ObjectKey, TraversalOperator};
use hcl_edit::template::Element;
use std::path::PathBuf;

/// Where a path was found: the closest source span, and where the path ends inside a file
/// that is not part of the stack's source (a `file()` argument), as `values.yaml:7:5`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Location {
    pub span: Span,
    pub in_file: Option<String>,
    /// How many steps of the path the source was followed through.
    pub steps: usize,
}

impl Location {
    pub(crate) fn at(span: Span) -> Self {
        Self {
            span,
            in_file: None,
            steps: 0,
        }
    }

    fn after_step(self) -> Self {
        Self {
            steps: self.steps + 1,
            ..self
        }
    }
}

/// The location followed furthest; with `later_wins`, a tie goes to the later one (merged
/// documents, where the last one that sets a value wins).
fn furthest(found: impl Iterator<Item = Option<Location>>, later_wins: bool) -> Option<Location> {
    found
        .flatten()
        .fold(None, |best: Option<Location>, l| match best {
            Some(b) if l.steps > b.steps || (later_wins && l.steps == b.steps) => Some(l),
            Some(b) => Some(b),
            None => Some(l),
        })
}

pub(crate) use gpustack_protocol::path_of_text;

/// A source path is followed through at most this many expressions (locals and module
/// variables can refer to each other in long chains).
const MAX_DEPTH: usize = 24;

pub(crate) struct Locator<'a> {
    pub stack: &'a Stack,
    pub sources: &'a SourceMap,
}

impl Locator<'_> {
    /// The source of `path` in a resource body of module `module`, as deep as it can be
    /// followed; a path into a value only evaluation knows stops at the closest expression.
    pub(crate) fn path(
        &self,
        module: usize,
        body: &BodyRef,
        path: &[PathStep],
    ) -> Option<Location> {
        let mut current = &body.body;
        let mut best = None;
        let mut steps = path.iter().peekable();
        while let Some(step) = steps.next() {
            let PathStep::Key(name) = step else {
                break;
            };
            if let Some(attr) = current.get_attribute(name) {
                best = attr
                    .value
                    .span()
                    .or(attr.span())
                    .map(|r| Location::at(Span::new(body.file, r)));
                let rest: Vec<&PathStep> = steps.collect();
                return self
                    .expression(module, &attr.value, body.file, &rest, 0)
                    .or(best);
            }
            // Blocks of one name are a list: `node_config[0]` is the first of them.
            let nth = match steps.peek() {
                Some(PathStep::Index(i)) => {
                    let i = *i;
                    steps.next();
                    i
                }
                _ => 0,
            };
            match current.get_blocks(name).nth(nth) {
                Some(block) => {
                    best = block
                        .ident
                        .span()
                        .map(|r| Location::at(Span::new(body.file, r)));
                    current = &block.body;
                }
                None => break,
            }
        }
        best
    }

    // Long by design: one arm per kind of expression that can carry a configuration path
    // onwards, read whole as the evaluator's own match over expressions is.
    fn expression(
        &self,
        module: usize,
        expr: &Expression,
        file: FileId,
        path: &[&PathStep],
        depth: usize,
    ) -> Option<Location> {
        let here = expr.span().map(|r| Location::at(Span::new(file, r)));
        if depth > MAX_DEPTH {
            return here;
        }
        let deeper =
            |e: &Expression, rest: &[&PathStep]| self.expression(module, e, file, rest, depth + 1);
        match expr {
            Expression::Parenthesis(p) => deeper(p.inner(), path).or(here),
            Expression::FuncCall(call)
                if matches!(
                    call.name.name.as_str(),
                    "yamlencode"
                        | "jsonencode"
                        | "yamldecode"
                        | "jsondecode"
                        | "merge"
                        | "tomap"
                        | "toset"
                        | "tolist"
                        | "concat"
                        | "sensitive"
                        | "nonsensitive"
                ) =>
            {
                // merge(): the last argument that has the key sets it.
                let later_wins = call.name.name.as_str() == "merge";
                furthest(call.args.iter().map(|arg| deeper(arg, path)), later_wins).or(here)
            }
            Expression::FuncCall(call) if call.name.name.as_str() == "file" && !path.is_empty() => {
                let here = here?;
                let found = call
                    .args
                    .iter()
                    .next()
                    .and_then(|arg| self.file_path(module, arg))
                    .and_then(|p| Some((std::fs::read_to_string(&p).ok()?, p)))
                    .and_then(|(text, p)| {
                        let (line, column, steps) = yaml::locate(&text, path)?;
                        let shown = self.sources.display_name(&p);
                        Some((format!("{shown}:{}:{}", line + 1, column + 1), steps))
                    });
                Some(match found {
                    Some((place, steps)) => Location {
                        in_file: Some(place),
                        steps,
                        ..here
                    },
                    None => here,
                })
            }
            Expression::HeredocTemplate(heredoc) if !path.is_empty() => {
                let here = here?;
                let source = &self.sources.file(here.span.file);
                let snippet = source.text.get(here.span.start..here.span.end)?;
                // The heredoc's text starts on the line after its `<<EOT` marker and ends
                // before the line of its closing delimiter; `<<-` strips `indent` columns.
                let body_start = here.span.start + snippet.find('\n')? + 1;
                let body_end = here.span.start + snippet.rfind('\n')?;
                let indent = heredoc.indent().unwrap_or(0);
                let text: String = source
                    .text
                    .get(body_start..body_end)?
                    .lines()
                    .map(|l| {
                        let strip = l.len() - l.trim_start_matches([' ', '\t']).len();
                        format!("{}\n", &l[strip.min(indent)..])
                    })
                    .collect();
                match yaml::locate(&text, path) {
                    Some((line, column, steps)) => {
                        let first = source.pos(body_start).line;
                        let start = source.offset(first + line, indent + column + 1);
                        let end = source.text[start..]
                            .find('\n')
                            .map_or(source.text.len(), |n| start + n);
                        Some(Location {
                            steps,
                            ..Location::at(Span::new(here.span.file, start..end))
                        })
                    }
                    None => Some(here),
                }
            }
            Expression::Traversal(t) => {
                let followed = match (&t.expr, t.operators.first().map(|o| o.value())) {
                    (Expression::Variable(v), Some(TraversalOperator::GetAttr(name)))
                        if t.operators.len() == 1 =>
                    {
                        match v.as_str() {
                            "local" => self.stack.modules[module]
                                .locals
                                .get(name.as_str())
                                .and_then(|local| {
                                    self.expression(
                                        module,
                                        &local.expr.expr,
                                        local.expr.file,
                                        path,
                                        depth + 1,
                                    )
                                }),
                            "var" => self.caller(module).and_then(|(parent, call)| {
                                let (arg, _) = call.args.get(name.as_str())?;
                                self.expression(parent, &arg.expr, arg.file, path, depth + 1)
                            }),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                followed.or(here)
            }
            Expression::Conditional(c) => furthest(
                [deeper(&c.true_expr, path), deeper(&c.false_expr, path)].into_iter(),
                false,
            )
            .or(here),
            _ => {
                let Some((step, rest)) = path.split_first() else {
                    return here;
                };
                match (expr, step) {
                    (Expression::Object(object), PathStep::Key(key)) => {
                        let literal = object.iter().find(|(k, _)| match k {
                            ObjectKey::Ident(i) => i.as_str() == key,
                            ObjectKey::Expression(e) => {
                                gpustack_lang::expr::literal::literal_str(e).as_deref()
                                    == Some(key.as_str())
                            }
                        });
                        // A key computed from a variable: the only such key is the one.
                        let computed: Vec<_> = object
                            .iter()
                            .filter(|(k, _)| matches!(k, ObjectKey::Expression(e) if gpustack_lang::expr::literal::literal_str(e).is_none()))
                            .collect();
                        let found = literal.or_else(|| (computed.len() == 1).then(|| computed[0]));
                        match found {
                            Some((_, value)) => deeper(value.expr(), rest)
                                .map(Location::after_step)
                                .or(here),
                            None => here,
                        }
                    }
                    (Expression::Array(items), PathStep::Index(i)) => match items.iter().nth(*i) {
                        Some(item) => deeper(item, rest).map(Location::after_step).or(here),
                        None => here,
                    },
                    // Documents merged in order (a helm_release's list of values): the last
                    // one that has the path sets it.
                    (Expression::Array(items), PathStep::Key(_)) => {
                        furthest(items.iter().map(|item| deeper(item, path)), true)
                            .filter(|l| l.steps > 0)
                            .or(here)
                    }
                    _ => here,
                }
            }
        }
    }

    /// The module that calls `module`, and the call.
    fn caller(&self, module: usize) -> Option<(usize, &gpustack_lang::config::ModuleCall)> {
        let m: &Module = &self.stack.modules[module];
        let parent = m.parent?;
        let name = match &m.instance {
            Some(instance) => instance.call.as_str(),
            None => m.path.last()?.as_str(),
        };
        Some((parent, self.stack.modules[parent].calls.get(name)?))
    }

    /// The file a `file()` argument names, when it is a literal or built from `path.module`,
    /// `path.root` and literals.
    fn file_path(&self, module: usize, arg: &Expression) -> Option<PathBuf> {
        let dir = &self.stack.modules[module].dir;
        let text = match arg {
            Expression::String(s) => s.value().clone(),
            Expression::StringTemplate(t) => t
                .iter()
                .map(|e| match e {
                    Element::Literal(l) => Some(l.value().clone()),
                    Element::Interpolation(i) => match &i.expr {
                        Expression::Traversal(t) if t.operators.len() == 1 => {
                            let is_path =
                                matches!(&t.expr, Expression::Variable(v) if v.as_str() == "path");
                            match t.operators.first().map(|o| o.value()) {
                                Some(TraversalOperator::GetAttr(a))
                                    if is_path && a.as_str() == "module" =>
                                {
                                    Some(dir.to_string_lossy().into_owned())
                                }
                                Some(TraversalOperator::GetAttr(a))
                                    if is_path && a.as_str() == "root" =>
                                {
                                    Some(self.stack.modules[0].dir.to_string_lossy().into_owned())
                                }
                                _ => None,
                            }
                        }
                        _ => None,
                    },
                    Element::Directive(_) => None,
                })
                .collect::<Option<String>>()?,
            _ => return None,
        };
        let path = PathBuf::from(text);
        Some(if path.is_absolute() {
            path
        } else {
            dir.join(path)
        })
    }
}

/// Paths into YAML text (JSON is YAML too).
pub(crate) mod yaml {
    use gpustack_protocol::PathStep;
    use granit_parser::{Event, Parser, ScalarStyle, Span};

    struct Node {
        /// 0-based line and column.
        at: (usize, usize),
        kind: Kind,
    }

    enum Kind {
        /// Keys that are not scalars are `None`.
        Map(Vec<(Option<String>, (usize, usize), Node)>),
        Seq(Vec<Node>),
        /// A literal block scalar (`|`), at its first line that is not blank.
        Literal(String),
        Other,
    }

    fn position(span: &Span) -> (usize, usize) {
        (span.start.line().saturating_sub(1), span.start.col())
    }

    fn node<'a>(
        events: &mut impl Iterator<Item = (Event<'a>, Span)>,
        first: (Event<'a>, Span),
    ) -> Option<Node> {
        let at = position(&first.1);
        let kind = match first.0 {
            Event::MappingStart(..) => {
                let mut entries = Vec::new();
                loop {
                    let key = next(events)?;
                    if matches!(key.0, Event::MappingEnd) {
                        break;
                    }
                    let key_at = position(&key.1);
                    let name = match &key.0 {
                        Event::Scalar(text, ..) => Some(text.to_string()),
                        _ => None,
                    };
                    let key = node(events, key)?;
                    let name = name.filter(|_| matches!(key.kind, Kind::Other));
                    let first = next(events)?;
                    let value = node(events, first)?;
                    entries.push((name, key_at, value));
                }
                Kind::Map(entries)
            }
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                loop {
                    let item = next(events)?;
                    if matches!(item.0, Event::SequenceEnd) {
                        break;
                    }
                    items.push(node(events, item)?);
                }
                Kind::Seq(items)
            }
            Event::Scalar(text, ScalarStyle::Literal, ..) => Kind::Literal(text.into_owned()),
            _ => Kind::Other,
        };
        Some(Node { at, kind })
    }

    /// The next event that is a node or a collection's end.
    fn next<'a>(events: &mut impl Iterator<Item = (Event<'a>, Span)>) -> Option<(Event<'a>, Span)> {
        events.find(|(e, _)| {
            matches!(
                e,
                Event::MappingStart(..)
                    | Event::MappingEnd
                    | Event::SequenceStart(..)
                    | Event::SequenceEnd
                    | Event::Scalar(..)
                    | Event::Alias(..)
                    | Event::UnresolvedAlias(..)
            )
        })
    }

    /// The 0-based line and column of the deepest part of `path` in the first document of
    /// `text` (a mapping key, a list item, or a place inside a literal block scalar that is
    /// itself YAML), and how many of the path's steps lead there. `None` when the text is not
    /// YAML or its root lacks the path's first step.
    pub(crate) fn locate(text: &str, path: &[&PathStep]) -> Option<(usize, usize, usize)> {
        let mut events = Parser::new_from_str(text).map_while(Result::ok);
        let first = next(&mut events)?;
        let root = node(&mut events, first)?;
        let mut current = &root;
        let mut best = None;
        for (i, step) in path.iter().enumerate() {
            let found = match (&current.kind, step) {
                (Kind::Map(entries), PathStep::Key(key)) => entries
                    .iter()
                    .find(|(name, ..)| name.as_deref() == Some(key.as_str()))
                    .map(|(_, at, value)| (*at, value)),
                (Kind::Seq(items), PathStep::Index(n)) => items.get(*n).map(|item| (item.at, item)),
                (Kind::Literal(inner), _) => {
                    // The scalar starts at its first line that is not blank, at its indentation.
                    let (line, column, steps) = locate(inner, &path[i..])?;
                    let blank = inner.len() - inner.trim_start_matches('\n').len();
                    return Some((
                        current.at.0 - blank.min(current.at.0) + line,
                        current.at.1 + column,
                        i + steps,
                    ));
                }
                _ => None,
            };
            let Some((at, value)) = found else {
                break;
            };
            best = Some((at.0, at.1, i + 1));
            current = value;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::yaml::locate;
    use super::{Locator, path_of_text};
    use gpustack_lang::config::load::{Files, load_stack_from};
    use gpustack_lang::diag::Diags;
    use gpustack_lang::source::SourceMap;
    use gpustack_protocol::PathStep;
    use std::path::Path;

    /// Where `attribute_path` of `resource` in module `module` (`""`: the root) is found, as
    /// `file:line:column`.
    fn found(files: &[(&str, &str)], module: &str, resource: &str, attribute_path: &str) -> String {
        let root = Path::new("/stack");
        let files = Files::Snapshot {
            root: root.to_path_buf(),
            files: std::sync::Arc::new(
                files
                    .iter()
                    .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
                    .collect(),
            ),
        };
        let mut sources = SourceMap::new(root);
        let mut diags = Diags::default();
        let stack = load_stack_from(&files, root, &mut sources, &mut diags);
        assert!(!diags.has_errors(), "{:?}", diags.0);
        let index = stack
            .modules
            .iter()
            .position(|m| m.path.join(".") == module)
            .expect("the module");
        let body = &stack.modules[index].resources[resource].body;
        let locator = Locator {
            stack: &stack,
            sources: &sources,
        };
        let location = locator
            .path(index, body, &path_of_text(attribute_path))
            .expect("a location");
        let range = sources.range(location.span);
        format!(
            "{}:{}:{}",
            range.filename, range.start.line, range.start.column
        )
    }

    #[test]
    fn a_heredoc_without_indentation_is_located_at_its_yaml_line() {
        let main = "resource \"kubernetes_manifest\" \"cm\" {\n  manifest = {\n    data = {\n      any = <<EOT\nversion: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 1\nEOT\n    }\n  }\n}\n";
        let at = found(
            &[("main.hcl", main)],
            "",
            "kubernetes_manifest.cm",
            "manifest.data.any.sharing.timeSlicing.resources[0].replicas",
        );
        assert_eq!(at, "main.hcl:10:9");
    }

    #[test]
    fn a_module_input_is_located_at_the_callers_argument() {
        let main = "module \"m\" {\n  source   = \"./m\"\n  replicas = 1\n}\n";
        let child = "variable \"replicas\" {}\n\nresource \"kubernetes_manifest\" \"cm\" {\n  manifest = {\n    data = { r = var.replicas }\n  }\n}\n";
        let at = found(
            &[("main.hcl", main), ("m/main.hcl", child)],
            "m",
            "kubernetes_manifest.cm",
            "manifest.data.r",
        );
        assert_eq!(at, "main.hcl:3:14");
    }

    #[test]
    fn merge_is_located_at_the_last_argument_that_sets_the_key() {
        let main = "resource \"kubernetes_manifest\" \"cm\" {\n  manifest = merge(\n    { data = { r = 1, s = 1 } },\n    { data = { r = 2 } },\n    { other = 3 },\n  )\n}\n";
        let at = |path| found(&[("main.hcl", main)], "", "kubernetes_manifest.cm", path);
        assert_eq!(at("manifest.data.r"), "main.hcl:4:20");
        // Only the first sets `s`: the second's `data` goes one step less deep.
        assert_eq!(at("manifest.data.s"), "main.hcl:3:27");
    }

    #[test]
    fn a_list_of_yaml_documents_is_located_in_the_last_one_that_sets_the_path() {
        let main = "resource \"helm_release\" \"op\" {\n  values = [\n    yamlencode({ a = { b = 1 } }),\n    <<-EOT\n      a:\n        b: 2\n    EOT\n    ,\n    yamlencode({ c = 3 }),\n  ]\n}\n";
        let at = found(&[("main.hcl", main)], "", "helm_release.op", "values.a.b");
        assert_eq!(at, "main.hcl:6:9");
    }

    fn path(steps: &[&str]) -> Vec<PathStep> {
        steps
            .iter()
            .map(|s| match s.parse::<usize>() {
                Ok(i) => PathStep::Index(i),
                Err(_) => PathStep::Key((*s).to_owned()),
            })
            .collect()
    }

    fn at(text: &str, steps: &[&str]) -> Option<(usize, usize)> {
        let path = path(steps);
        locate(text, &path.iter().collect::<Vec<_>>()).map(|(line, column, _)| (line, column))
    }

    const CONFIG: &str = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n";

    #[test]
    fn a_key_is_found_at_its_line_and_column() {
        let replicas = ["sharing", "timeSlicing", "resources", "0", "replicas"];
        assert_eq!(at(CONFIG, &replicas), Some((5, 6)));
        assert_eq!(
            at(CONFIG, &["sharing", "timeSlicing", "resources", "0"]),
            Some((4, 6))
        );
    }

    #[test]
    fn a_missing_step_stops_at_the_closest_part() {
        assert_eq!(at(CONFIG, &["sharing", "mps", "resources"]), Some((1, 0)));
        assert_eq!(at(CONFIG, &["other"]), None);
        assert_eq!(at("{ not: yaml", &["not"]), None);
    }

    #[test]
    fn yaml_inside_a_literal_block_scalar_is_followed() {
        let manifest = "apiVersion: v1\nkind: ConfigMap\ndata:\n  any: |\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n          - name: nvidia.com/gpu\n            replicas: 1\n";
        let steps = [
            "data",
            "any",
            "sharing",
            "timeSlicing",
            "resources",
            "0",
            "replicas",
        ];
        assert_eq!(at(manifest, &steps), Some((9, 12)));
    }

    #[test]
    fn json_is_yaml() {
        let json = "{\n  \"sharing\": {\n    \"mps\": {\"resources\": [{\"replicas\": 1}]}\n  }\n}";
        assert_eq!(
            at(json, &["sharing", "mps", "resources", "0", "replicas"]),
            Some((2, 27))
        );
    }
}
