//! A DRA device selector: a CEL expression over one device, compiled once and evaluated the way
//! the scheduler evaluates it (`k8s.io/dynamic-resource-allocation/cel`): the variable `device`
//! with `driver`, `attributes[domain][name]` and `capacity[domain][name]`, Kubernetes'
//! `semver()` and `quantity()` libraries (kube-cel), `&&` and `||` absorbing an error on either
//! side as CEL does. An attribute the device lacks is a runtime error; a domain no attribute
//! has is an empty map.
//!
//! What the API server refuses when the object is created is found here without a device: a
//! syntax error, a reference to a variable other than `device`, and an ordering operator
//! (`<`, `<=`, `>`, `>=`) on a quantity or a semantic version, types that have none
//! (`compareTo`, `isGreaterThan` and `isLessThan` are theirs).

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{Expr, LiteralValue, operators};
use kube_cel::cel::objects::{Key, Map, Value};
use kube_cel::cel::{Context, IdedExpr, Program};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What a selector reads of a device: `device.driver`, and attributes and capacities by
/// domain and name. `None` where it reads them in a way that names no one key (a computed
/// domain, a whole domain's map): then every part of the device counts.
pub(crate) type References = Option<BTreeSet<Reference>>;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Reference {
    Driver,
    Attribute(String, String),
    Capacity(String, String),
}

/// One compiled selector.
pub(crate) struct Selector {
    program: Option<Program>,
    /// Why the API server refuses the expression at create, in its words where it has them.
    refused: Option<String>,
    references: References,
    /// String literals of the expression.
    literals: BTreeSet<String>,
    /// The domains it indexes (every literal where it indexes a computed one): made empty
    /// maps on devices that have no attribute there.
    domains: BTreeSet<String>,
}

impl Selector {
    pub(crate) fn compile(expression: &str) -> Self {
        let program = match Program::compile(expression) {
            Ok(program) => program,
            Err(errors) => {
                let message = errors
                    .errors
                    .iter()
                    .map(|e| e.msg.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Self {
                    program: None,
                    refused: Some(format!("syntax error: {message}")),
                    references: None,
                    literals: BTreeSet::new(),
                    domains: BTreeSet::new(),
                };
            }
        };
        let mut walk = Walk::default();
        walk.visit(program.expression(), &mut Vec::new());
        let domains = if walk.dynamic {
            walk.literals.clone()
        } else {
            walk.references
                .iter()
                .filter_map(|r| match r {
                    Reference::Attribute(domain, _) | Reference::Capacity(domain, _) => {
                        Some(domain.clone())
                    }
                    Reference::Driver => None,
                })
                .collect()
        };
        Self {
            refused: walk.refused,
            references: (!walk.dynamic).then_some(walk.references),
            literals: walk.literals,
            domains,
            program: Some(program),
        }
    }

    /// Why the API server refuses the selector at create.
    pub(crate) fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    pub(crate) fn references(&self) -> &References {
        &self.references
    }

    pub(crate) fn literals(&self) -> &BTreeSet<String> {
        &self.literals
    }

    pub(crate) fn domains(&self) -> &BTreeSet<String> {
        &self.domains
    }

    /// The selector's verdict on one device: `Err` is the runtime error that leaves a claim
    /// Pending.
    pub(crate) fn matches(&self, env: &Environment, device: &Value) -> Result<bool, String> {
        let Some(program) = &self.program else {
            return Err(self.refused.clone().unwrap_or_default());
        };
        let mut scope = env.root.new_inner_scope();
        scope.add_variable_from_value("device", device.clone());
        match program.execute(&scope) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "the expression evaluated to {}, not a bool",
                other.type_of()
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The functions a selector may call, registered once, and the versions and quantities the
/// devices show, each parsed once.
pub(crate) struct Environment {
    root: Context<'static>,
    semver: Program,
    quantity: Program,
    parsed: RefCell<HashMap<(bool, String), Option<Value>>>,
}

impl Default for Environment {
    fn default() -> Self {
        #[allow(clippy::expect_used, reason = "two constant expressions that parse")]
        let program = |source: &str| Program::compile(source).expect("a constant expression");
        Self {
            root: Context::default().with_all(),
            semver: program("semver(text)"),
            quantity: program("quantity(text)"),
            parsed: RefCell::default(),
        }
    }
}

impl Environment {
    /// A semantic version as a selector sees a `version` attribute.
    pub(crate) fn version(&self, text: &str) -> Value {
        self.call(false, text)
            .unwrap_or_else(|| Value::String(Arc::new(text.to_owned())))
    }

    /// A quantity as a selector sees a capacity; `None` when it does not parse.
    pub(crate) fn quantity(&self, text: &str) -> Option<Value> {
        self.call(true, text)
    }

    fn call(&self, quantity: bool, text: &str) -> Option<Value> {
        let key = (quantity, text.to_owned());
        if let Some(value) = self.parsed.borrow().get(&key) {
            return value.clone();
        }
        let mut scope = self.root.new_inner_scope();
        scope.add_variable_from_value("text", text.to_owned());
        let program = if quantity {
            &self.quantity
        } else {
            &self.semver
        };
        let value = program.execute(&scope).ok();
        self.parsed.borrow_mut().insert(key, value.clone());
        value
    }
}

/// A CEL map with string keys.
pub(crate) fn map(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    let map: HashMap<Key, Value> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Value::Map(Map { map: Arc::new(map) })
}

#[derive(Default)]
struct Walk {
    references: BTreeSet<Reference>,
    dynamic: bool,
    refused: Option<String>,
    literals: BTreeSet<String>,
}

fn string_literal(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

/// `device.attributes[<domain>]` or `device.capacity[<domain>]`: which map, and the domain.
fn domain_access(e: &IdedExpr) -> Option<(bool, &str)> {
    let Expr::Call(call) = &e.expr else {
        return None;
    };
    if call.func_name != operators::INDEX || call.args.len() != 2 {
        return None;
    }
    let Expr::Select(select) = &call.args[0].expr else {
        return None;
    };
    if !matches!(&select.operand.expr, Expr::Ident(name) if name == "device") {
        return None;
    }
    let capacity = match select.field.as_str() {
        "attributes" => false,
        "capacity" => true,
        _ => return None,
    };
    Some((capacity, string_literal(&call.args[1])?))
}

fn reference(capacity: bool, domain: &str, name: &str) -> Reference {
    if capacity {
        Reference::Capacity(domain.to_owned(), name.to_owned())
    } else {
        Reference::Attribute(domain.to_owned(), name.to_owned())
    }
}

/// Whether an operand is of a type without ordering: a capacity (a quantity), or what
/// `quantity()` or `semver()` returns.
fn unordered(e: &IdedExpr) -> Option<&'static str> {
    match &e.expr {
        Expr::Select(select) if domain_access(&select.operand).is_some_and(|(c, _)| c) => {
            Some("Quantity")
        }
        Expr::Call(call) if call.target.is_none() && call.func_name == "quantity" => {
            Some("Quantity")
        }
        Expr::Call(call) if call.target.is_none() && call.func_name == "semver" => Some("Semver"),
        Expr::Call(call)
            if call.func_name == operators::INDEX
                && call
                    .args
                    .first()
                    .and_then(domain_access)
                    .is_some_and(|(c, _)| c) =>
        {
            Some("Quantity")
        }
        _ => None,
    }
}

impl Walk {
    fn visit(&mut self, e: &IdedExpr, bound: &mut Vec<String>) {
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => {
                self.literals.insert(s.inner().to_owned());
            }
            Expr::Ident(name) => {
                if name == "device" {
                    // The whole device, not one of its fields: every part counts.
                    self.dynamic = true;
                } else if !bound.contains(name) && self.refused.is_none() {
                    self.refused = Some(format!("undeclared reference to '{name}'"));
                }
            }
            Expr::Select(select) => {
                if let Some((capacity, domain)) = domain_access(&select.operand) {
                    self.literals.insert(domain.to_owned());
                    self.references
                        .insert(reference(capacity, domain, &select.field));
                    return;
                }
                if matches!(&select.operand.expr, Expr::Ident(n) if n == "device") {
                    match select.field.as_str() {
                        "driver" => {
                            self.references.insert(Reference::Driver);
                        }
                        "attributes" | "capacity" => self.dynamic = true,
                        other => {
                            if self.refused.is_none() {
                                self.refused = Some(format!("undefined field '{other}' of device"));
                            }
                        }
                    }
                    return;
                }
                self.visit(&select.operand, bound);
            }
            Expr::Call(call) => {
                if call.func_name == operators::INDEX
                    && let Some((capacity, domain)) = call.args.first().and_then(domain_access)
                    && let Some(name) = call.args.get(1).and_then(string_literal)
                {
                    self.literals.insert(domain.to_owned());
                    self.references.insert(reference(capacity, domain, name));
                    return;
                }
                if domain_access(e).is_some() {
                    // A whole domain's map (`device.attributes["gpu.nvidia.com"].exists(...)`).
                    self.dynamic = true;
                }
                if [
                    operators::LESS,
                    operators::LESS_EQUALS,
                    operators::GREATER,
                    operators::GREATER_EQUALS,
                ]
                .contains(&call.func_name.as_str())
                    && self.refused.is_none()
                    && let Some(ty) = call.args.iter().find_map(unordered)
                {
                    let operator = call.func_name.trim_matches('_');
                    self.refused = Some(format!(
                        "found no matching overload for '{operator}' applied to a {ty}: compare {ty} values with compareTo(), isGreaterThan() or isLessThan()"
                    ));
                }
                if let Some(target) = &call.target {
                    self.visit(target, bound);
                }
                for arg in &call.args {
                    self.visit(arg, bound);
                }
            }
            Expr::Comprehension(c) => {
                self.visit(&c.iter_range, bound);
                let added = 2 + usize::from(c.iter_var2.is_some());
                bound.push(c.iter_var.clone());
                bound.push(c.accu_var.clone());
                if let Some(second) = &c.iter_var2 {
                    bound.push(second.clone());
                }
                for part in [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                    self.visit(part, bound);
                }
                bound.truncate(bound.len() - added);
            }
            Expr::List(list) => {
                for element in &list.elements {
                    self.visit(element, bound);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(entry) = &entry.expr {
                        self.visit(&entry.key, bound);
                        self.visit(&entry.value, bound);
                    }
                }
            }
            Expr::Struct(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}
