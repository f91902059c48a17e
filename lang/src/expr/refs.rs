//! Finds the references an expression makes, for the dependency graph.

use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, ObjectKey, TraversalOperator};
use hcl_edit::template::{Directive, Element, Template};
use std::ops::Range;

/// The most names a reference keeps: its root and three attributes (`data.type.name.attr`).
const MAX_NAMES: usize = 4;

/// A reference by its leading static names: `var.x` → `["var", "x"]`,
/// `module.m.out[0]` → `["module", "m", "out"]`. The names borrow from the expression, so
/// that finding the references of a stack allocates nothing per reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref<'a> {
    parts: [&'a str; MAX_NAMES],
    len: usize,
    pub range: Option<Range<usize>>,
}

impl<'a> Ref<'a> {
    pub fn names(&self) -> &[&'a str] {
        &self.parts[..self.len]
    }
}

/// Every reference in `expression`, skipping names bound by `for` expressions and directives.
pub fn references(expression: &Expression) -> Vec<Ref<'_>> {
    let mut walker = Walker {
        bound: Vec::new(),
        out: Vec::new(),
        skip_ephemeral_as_null: false,
    };
    walker.expr(expression);
    walker.out
}

/// The references whose values reach the result: those inside `ephemeralasnull(...)` do not
/// (it answers null for an ephemeral value), which is where an ephemeral value may be read.
pub fn references_reaching_the_value(expression: &Expression) -> Vec<Ref<'_>> {
    let mut walker = Walker {
        bound: Vec::new(),
        out: Vec::new(),
        skip_ephemeral_as_null: true,
    };
    walker.expr(expression);
    walker.out
}

struct Walker<'a> {
    bound: Vec<&'a str>,
    out: Vec<Ref<'a>>,
    skip_ephemeral_as_null: bool,
}

impl<'a> Walker<'a> {
    fn root(&mut self, reference: Ref<'a>) {
        if !self.bound.contains(&reference.parts[0]) {
            self.out.push(reference);
        }
    }

    fn expr(&mut self, expression: &'a Expression) {
        match expression {
            Expression::Null(_)
            | Expression::Bool(_)
            | Expression::Number(_)
            | Expression::String(_) => {}
            Expression::Array(items) => items.iter().for_each(|e| self.expr(e)),
            Expression::Object(object) => {
                for (key, value) in object.iter() {
                    if let ObjectKey::Expression(k) = key {
                        // A parenthesis-free identifier key is a literal name, not a reference.
                        if !matches!(k, Expression::Variable(_)) {
                            self.expr(k);
                        }
                    }
                    self.expr(value.expr());
                }
            }
            Expression::StringTemplate(t) => t.iter().for_each(|e| self.element(e)),
            Expression::HeredocTemplate(h) => self.template(&h.template),
            Expression::Parenthesis(p) => self.expr(p.inner()),
            Expression::Variable(v) => self.root(Ref {
                parts: [v.as_str(), "", "", ""],
                len: 1,
                range: expression.span(),
            }),
            Expression::Traversal(t) => {
                if let Expression::Variable(v) = &t.expr {
                    let mut end = v.span().map(|r| r.end);
                    let mut parts = [v.as_str(), "", "", ""];
                    let mut len = 1;
                    for op in &t.operators {
                        match op.value() {
                            TraversalOperator::GetAttr(ident) if len < MAX_NAMES => {
                                parts[len] = ident.as_str();
                                len += 1;
                                end = op.span().map(|r| r.end).or(end);
                            }
                            _ => break,
                        }
                    }
                    let range = v.span().zip(end).map(|(s, e)| s.start..e);
                    self.root(Ref { parts, len, range });
                } else {
                    self.expr(&t.expr);
                }
                for op in &t.operators {
                    if let TraversalOperator::Index(index) = op.value() {
                        self.expr(index);
                    }
                }
            }
            Expression::Conditional(c) => {
                self.expr(&c.cond_expr);
                self.expr(&c.true_expr);
                self.expr(&c.false_expr);
            }
            Expression::FuncCall(call)
                if self.skip_ephemeral_as_null
                    && call.name.namespace.is_empty()
                    && call.name.name.as_str() == "ephemeralasnull" => {}
            Expression::FuncCall(call) => call.args.iter().for_each(|e| self.expr(e)),
            Expression::UnaryOp(op) => self.expr(&op.expr),
            Expression::BinaryOp(op) => {
                self.expr(&op.lhs_expr);
                self.expr(&op.rhs_expr);
            }
            Expression::ForExpr(f) => {
                self.expr(&f.intro.collection_expr);
                let before = self.bound.len();
                if let Some(k) = &f.intro.key_var {
                    self.bound.push(k.as_str());
                }
                self.bound.push(f.intro.value_var.as_str());
                if let Some(k) = &f.key_expr {
                    self.expr(k);
                }
                self.expr(&f.value_expr);
                if let Some(c) = &f.cond {
                    self.expr(&c.expr);
                }
                self.bound.truncate(before);
            }
        }
    }

    fn template(&mut self, template: &'a Template) {
        template.iter().for_each(|e| self.element(e));
    }

    fn element(&mut self, element: &'a Element) {
        match element {
            Element::Literal(_) => {}
            Element::Interpolation(i) => self.expr(&i.expr),
            Element::Directive(d) => match d.as_ref() {
                Directive::If(d) => {
                    self.expr(&d.if_expr.cond_expr);
                    self.template(&d.if_expr.template);
                    if let Some(e) = &d.else_expr {
                        self.template(&e.template);
                    }
                }
                Directive::For(d) => {
                    self.expr(&d.for_expr.collection_expr);
                    let before = self.bound.len();
                    if let Some(k) = &d.for_expr.key_var {
                        self.bound.push(k.as_str());
                    }
                    self.bound.push(d.for_expr.value_var.as_str());
                    self.template(&d.for_expr.template);
                    self.bound.truncate(before);
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<String> {
        references(&hcl_edit::parser::parse_expr(src).unwrap())
            .into_iter()
            .map(|r| r.names().join("."))
            .collect()
    }

    #[test]
    fn finds_references_and_skips_bound_names() {
        assert_eq!(names("var.a + local.b"), ["var.a", "local.b"]);
        assert_eq!(
            names("[for p in var.pools : p.name if p.gpu]"),
            ["var.pools"]
        );
        assert_eq!(names("module.op.ns[0].x"), ["module.op.ns"]);
        assert_eq!(
            names("\"${data.k.n.nodes} %{for x in var.l}${x}${y.z}%{endfor}\""),
            ["data.k.n.nodes", "var.l", "y.z"]
        );
        assert_eq!(
            names("{ a = aks_nodepool.t4.name, (local.k) = 1 }"),
            ["aks_nodepool.t4.name", "local.k"]
        );
        assert_eq!(
            names("aks_nodepool.t4[count.index].id"),
            ["aks_nodepool.t4", "count.index"]
        );
    }
}
