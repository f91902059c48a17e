//! Finds the references an expression makes, for the dependency graph.

use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, ObjectKey, TraversalOperator};
use hcl_edit::template::{Directive, Element, Template};
use std::ops::Range;

/// A reference by its leading static names: `var.x` → `["var", "x"]`,
/// `module.m.out[0]` → `["module", "m", "out"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub names: Vec<String>,
    pub range: Option<Range<usize>>,
}

/// Every reference in `expression`, skipping names bound by `for` expressions and directives.
pub fn references(expression: &Expression) -> Vec<Ref> {
    let mut walker = Walker {
        bound: Vec::new(),
        out: Vec::new(),
    };
    walker.expr(expression);
    walker.out
}

struct Walker {
    bound: Vec<String>,
    out: Vec<Ref>,
}

impl Walker {
    fn root(&mut self, name: &str, attrs: Vec<String>, range: Option<Range<usize>>) {
        if self.bound.iter().any(|b| b == name) {
            return;
        }
        let mut names = vec![name.to_owned()];
        names.extend(attrs);
        self.out.push(Ref { names, range });
    }

    fn expr(&mut self, expression: &Expression) {
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
            Expression::Variable(v) => self.root(v.as_str(), Vec::new(), expression.span()),
            Expression::Traversal(t) => {
                if let Expression::Variable(v) = &t.expr {
                    let mut end = v.span().map(|r| r.end);
                    let mut attrs = Vec::new();
                    for op in &t.operators {
                        match op.value() {
                            TraversalOperator::GetAttr(ident) if attrs.len() < 3 => {
                                attrs.push(ident.as_str().to_owned());
                                end = op.span().map(|r| r.end).or(end);
                            }
                            _ => break,
                        }
                    }
                    let range = v.span().zip(end).map(|(s, e)| s.start..e);
                    self.root(v.as_str(), attrs, range);
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
                    self.bound.push(k.as_str().to_owned());
                }
                self.bound.push(f.intro.value_var.as_str().to_owned());
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

    fn template(&mut self, template: &Template) {
        template.iter().for_each(|e| self.element(e));
    }

    fn element(&mut self, element: &Element) {
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
                        self.bound.push(k.as_str().to_owned());
                    }
                    self.bound.push(d.for_expr.value_var.as_str().to_owned());
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
            .map(|r| r.names.join("."))
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
