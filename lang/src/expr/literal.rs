//! Expressions made only of literals, read without evaluation: what the loader and type
//! constraints need before any scope exists (backend settings, defaults of optional attributes).

use hcl_edit::expr::{Expression, ObjectKey};
use indexmap::IndexMap;

/// A string with no interpolation: `"x"` or a template made only of literals.
pub fn literal_str(expression: &Expression) -> Option<String> {
    use crate::expr::whitespace::{Layout, prepared};
    let literal = |template: &hcl_edit::template::Template| -> Option<String> {
        template
            .iter()
            .map(|e| e.as_literal().map(|l| l.value().clone()))
            .collect()
    };
    match expression {
        Expression::String(s) => Some(s.value().clone()),
        Expression::StringTemplate(t) => literal(&prepared(t, Layout::Quoted)),
        // A heredoc with no interpolation is a static string too, as Terraform reads one.
        Expression::HeredocTemplate(heredoc) => literal(&prepared(
            &heredoc.template,
            Layout::Lines(heredoc.indent()),
        )),
        Expression::Parenthesis(inner) => literal_str(inner.inner()),
        _ => None,
    }
}

/// The value of an expression made only of literals (no references, calls or operators).
pub fn literal_value(expression: &Expression) -> Option<gpustack_protocol::Value> {
    use gpustack_protocol::Value;
    match expression {
        Expression::Null(_) => Some(Value::Null),
        Expression::Bool(b) => Some(Value::Bool(*b.value())),
        Expression::Number(n) => Some(Value::Number(crate::expr::eval::literal_number(n))),
        Expression::String(_) | Expression::StringTemplate(_) => {
            literal_str(expression).map(Value::String)
        }
        Expression::Parenthesis(p) => literal_value(p.inner()),
        Expression::Array(items) => items
            .iter()
            .map(literal_value)
            .collect::<Option<Vec<_>>>()
            .map(Value::List),
        Expression::Object(object) => object
            .iter()
            .map(|(k, v)| {
                let key = match k {
                    ObjectKey::Ident(i) => Some(i.as_str().to_owned()),
                    ObjectKey::Expression(e) => literal_str(e),
                }?;
                Some((key, literal_value(v.expr())?))
            })
            .collect::<Option<IndexMap<_, _>>>()
            .map(Value::Object),
        Expression::UnaryOp(op)
            if matches!(op.operator.value(), hcl_edit::expr::UnaryOperator::Neg) =>
        {
            match literal_value(&op.expr)? {
                Value::Number(n) => Some(Value::Number(n.neg())),
                _ => None,
            }
        }
        _ => None,
    }
}
