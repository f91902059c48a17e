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
        Expression::Number(n) => Some(Value::Number(literal_number(n))),
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

/// A number literal as HCL reads it: every digit of its source text, at 512 bits.
pub(crate) fn literal_number(
    n: &hcl_edit::Formatted<hcl_edit::Number>,
) -> gpustack_protocol::Number {
    n.as_repr()
        .and_then(|raw| {
            let text: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
            gpustack_protocol::Number::parse(&text).ok()
        })
        .unwrap_or_else(|| match n.value().as_i64() {
            Some(i) => gpustack_protocol::Number::from_i64(i)
                .with_prec(gpustack_protocol::number::PARSE_PREC),
            None => gpustack_protocol::Number::from(n.value().as_f64().unwrap_or_default()),
        })
}
