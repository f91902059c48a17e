//! Type constraint expressions: `string`, `list(object({ name = string, replicas = optional(number, 2) }))`.

use crate::expr::literal::literal_value;
use gpustack_protocol::{ObjectAttr, Type};
use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, ObjectKey};
use std::ops::Range;

type TypeError = (Option<Range<usize>>, String);

pub fn parse_type(expression: &Expression) -> Result<Type, TypeError> {
    parse(expression, false)
}

fn parse(expression: &Expression, in_object: bool) -> Result<Type, TypeError> {
    let here = || expression.span();
    match expression {
        Expression::Variable(v) => match v.as_str() {
            "string" => Ok(Type::String),
            "number" => Ok(Type::Number),
            "bool" => Ok(Type::Bool),
            "any" => Ok(Type::Any),
            "list" | "set" | "map" | "tuple" | "object" => Err((
                here(),
                format!(
                    "The {} type constructor needs an argument, such as {}(string).",
                    v.as_str(),
                    v.as_str()
                ),
            )),
            other => Err((
                here(),
                format!(
                    "\"{other}\" is not a type. Types are string, number, bool, any, list(T), set(T), map(T), tuple([...]) and object({{...}})."
                ),
            )),
        },
        Expression::String(s)
            if ["string", "number", "bool", "list", "map"].contains(&s.as_str()) =>
        {
            Err((
                here(),
                format!("Write the type without quotes: {}.", s.as_str()),
            ))
        }
        Expression::FuncCall(call) => {
            let name = call.name.name.as_str();
            let args: Vec<&Expression> = call.args.iter().collect();
            let one = |what: &str| -> Result<&Expression, TypeError> {
                match args.as_slice() {
                    [only] => Ok(*only),
                    _ => Err((here(), format!("{what}(...) takes exactly one argument."))),
                }
            };
            match name {
                "list" => Ok(Type::list(parse(one("list")?, false)?)),
                "set" => Ok(Type::set(parse(one("set")?, false)?)),
                "map" => Ok(Type::map(parse(one("map")?, false)?)),
                "tuple" => match one("tuple")? {
                    Expression::Array(items) => Ok(Type::Tuple(
                        items
                            .iter()
                            .map(|e| parse(e, false))
                            .collect::<Result<_, _>>()?,
                    )),
                    other => Err((
                        other.span(),
                        "tuple(...) takes a list of types: tuple([string, number]).".into(),
                    )),
                },
                "object" => match one("object")? {
                    Expression::Object(object) => {
                        let mut attrs = indexmap::IndexMap::new();
                        for (key, value) in object.iter() {
                            let name = match key {
                                ObjectKey::Ident(i) => i.as_str().to_owned(),
                                ObjectKey::Expression(Expression::String(s)) => {
                                    s.as_str().to_owned()
                                }
                                other => {
                                    return Err((
                                        other.span(),
                                        "Object type attribute names must be identifiers.".into(),
                                    ));
                                }
                            };
                            let expr = value.expr();
                            let attr = match expr {
                                Expression::FuncCall(c) if c.name.name.as_str() == "optional" => {
                                    parse_optional(c, expr)?
                                }
                                _ => ObjectAttr::required(parse(expr, true)?),
                            };
                            attrs.insert(name, attr);
                        }
                        Ok(Type::Object(attrs))
                    }
                    other => Err((
                        other.span(),
                        "object(...) takes a map of attribute types: object({ name = string })."
                            .into(),
                    )),
                },
                "optional" if !in_object => Err((
                    here(),
                    "optional(...) is only allowed for an attribute of an object type.".into(),
                )),
                other => Err((
                    here(),
                    format!(
                        "\"{other}\" is not a type constructor. Constructors are list, set, map, tuple and object."
                    ),
                )),
            }
        }
        _ => Err((
            here(),
            "A type is required here, such as string or list(number).".into(),
        )),
    }
}

fn parse_optional(
    call: &hcl_edit::expr::FuncCall,
    whole: &Expression,
) -> Result<ObjectAttr, TypeError> {
    let args: Vec<&Expression> = call.args.iter().collect();
    match args.as_slice() {
        [ty] => Ok(ObjectAttr::optional(parse(ty, true)?)),
        [ty, default] => {
            let ty = parse(ty, true)?;
            let value = literal_value(default).ok_or_else(|| {
                (
                    default.span(),
                    "The default of optional(...) must be a literal value.".to_owned(),
                )
            })?;
            let value = ty.convert(&value).map_err(|e| {
                (
                    default.span(),
                    format!("The default does not fit the type {ty}: {e}."),
                )
            })?;
            Ok(ObjectAttr {
                ty,
                optional: true,
                default: Some(value),
            })
        }
        _ => Err((
            whole.span(),
            "optional(...) takes a type and an optional default value.".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(src: &str) -> Result<Type, TypeError> {
        parse_type(&hcl_edit::parser::parse_expr(src).unwrap())
    }

    #[test]
    fn parses_nested_types() {
        let t = ty("list(object({ name = string, replicas = optional(number, 2) }))").unwrap();
        assert_eq!(
            t.to_string(),
            "list(object({name = string, replicas = optional(number)}))"
        );
        assert_eq!(
            ty("map(list(bool))").unwrap(),
            Type::map(Type::list(Type::Bool))
        );
        assert_eq!(
            ty("tuple([string, number])").unwrap(),
            Type::Tuple(vec![Type::String, Type::Number])
        );
    }

    #[test]
    fn rejects_non_types() {
        assert!(ty("strin").unwrap_err().1.contains("not a type"));
        assert!(ty("\"string\"").unwrap_err().1.contains("without quotes"));
        assert!(ty("optional(string)").is_err());
        assert!(ty("list(string, number)").is_err());
        assert!(ty("object({ a = optional(number, \"x\") })").is_err());
    }
}
