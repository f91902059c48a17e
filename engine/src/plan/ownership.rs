//! What the stack owns: `import` blocks (objects taken in), `moved` blocks (state addresses
//! renamed), `removed` blocks (objects let go), and the rule that one object has at most one
//! address — two instances, or a create and a delete, that name the same object are refused
//! before anything is done.
//!
//! **Invariant:** gpustack never creates and then deletes one object, and never changes or
//! deletes an object the stack did not create or import.

use gpustack_lang::address::{Address, Key, Step};
use gpustack_lang::config::{Expr, Stack};
use gpustack_lang::diag::{Diag, Diags};
use gpustack_lang::source::Span;
use gpustack_state::State;
use hcl_edit::expr::{Expression, TraversalOperator};
use std::collections::HashMap;

use super::{Action, Move, ResourceChange};

/// The static part of an address expression: its names, with the index expressions that key
/// them (evaluated later, for `import` targets with `each`).
pub(crate) struct Target<'e> {
    pub(crate) steps: Vec<(String, Option<&'e Expression>)>,
}

impl<'e> Target<'e> {
    /// Reads `module.a["x"].t.n[0]` as written; `None` (with an error) for anything else.
    pub(crate) fn of(expr: &'e Expr, what: &str, diags: &mut Diags) -> Option<Self> {
        let fail = |diags: &mut Diags| {
            diags.push(Diag::error(
                Some(expr.span()),
                "Invalid address",
                format!("{what} must be a resource address, such as helm_release.operator, module.pool[\"t4\"].aks_nodepool.gpu or kubernetes_manifest.node[\"a\"]."),
            ));
            None
        };
        let (root, operators) = match &expr.expr {
            Expression::Variable(v) => (v.as_str().to_owned(), &[][..]),
            Expression::Traversal(t) => match &t.expr {
                Expression::Variable(v) => (v.as_str().to_owned(), t.operators.as_slice()),
                _ => return fail(diags),
            },
            _ => return fail(diags),
        };
        let mut steps: Vec<(String, Option<&Expression>)> = vec![(root, None)];
        for op in operators {
            match op.value() {
                TraversalOperator::GetAttr(name) => steps.push((name.as_str().to_owned(), None)),
                TraversalOperator::Index(index) => match steps.last_mut() {
                    Some(last) if last.1.is_none() => last.1 = Some(index),
                    _ => return fail(diags),
                },
                _ => return fail(diags),
            }
        }
        Some(Target { steps })
    }

    /// The address without any instance key: `module.a.t.n` (module keys dropped too), for
    /// finding the configuration it names.
    pub(crate) fn config_address(&self) -> String {
        self.steps
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The address with literal keys only (`moved`, `removed`): `None` when a key is not a
    /// literal string or number.
    pub(crate) fn literal(&self) -> Option<Address> {
        let steps = self
            .steps
            .iter()
            .map(|(name, index)| {
                let key = match index {
                    None => None,
                    Some(e) => Some(literal_key(e)?),
                };
                Some(Step {
                    name: name.clone(),
                    key,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Address(steps))
    }
}

fn literal_key(expr: &Expression) -> Option<Key> {
    match expr {
        Expression::String(s) => Some(Key::Name(s.value().clone())),
        Expression::Number(n) => n.value().as_u64().map(|n| Key::Index(n as usize)),
        Expression::StringTemplate(t) => {
            let mut text = String::new();
            for element in t.iter() {
                match element {
                    hcl_edit::template::Element::Literal(l) => text.push_str(l.value()),
                    _ => return None,
                }
            }
            Some(Key::Name(text))
        }
        _ => None,
    }
}

/// Applies the stack's `moved` blocks to a copy of the state: each object under `from` (an
/// instance, a resource with its instances, a module with everything in it) gets the address
/// under `to`. Returns the moved state, the moves in the order they apply, and errors for a
/// `to` that is already taken.
pub(crate) fn apply_moves(stack: &Stack, state: &State, diags: &mut Diags) -> (State, Vec<Move>) {
    let mut state = state.clone();
    let mut moves = Vec::new();
    // Each address's entry, kept as addresses change: one moved block can rename thousands.
    let mut index = state.positions();
    for module in &stack.modules {
        let prefix = module.prefix();
        for moved in &module.moves {
            let (Some(from), Some(to)) = (
                Target::of(&moved.from, "from", diags)
                    .and_then(|t| absolute(&prefix, &t, &moved.from, diags)),
                Target::of(&moved.to, "to", diags)
                    .and_then(|t| absolute(&prefix, &t, &moved.to, diags)),
            ) else {
                continue;
            };
            let renames = renames(&state, &from, &to);
            for (old, new) in &renames {
                if index.contains_key(new) {
                    diags.push(Diag::error(
                        Some(moved.span),
                        "Moved object to an address that is taken",
                        format!("This moved block moves {old} to {new}, but the state already has an object at {new}. Remove one of them from the state (gpustack state rm) or move it elsewhere."),
                    ));
                    continue;
                }
                if let Some(i) = index.remove(old) {
                    state.resources[i].address = new.clone();
                    index.insert(new.clone(), i);
                    moves.push(Move {
                        from: old.clone(),
                        to: new.clone(),
                    });
                }
            }
        }
    }
    (state, moves)
}

/// A `moved`/`removed` address, inside the module that declares it.
fn absolute(prefix: &str, target: &Target<'_>, expr: &Expr, diags: &mut Diags) -> Option<Address> {
    let Some(local) = target.literal() else {
        diags.push(Diag::error(
            Some(expr.span()),
            "Invalid address",
            "The instance keys of a moved or removed block must be literal strings or numbers.",
        ));
        return None;
    };
    if prefix.is_empty() {
        return Some(local);
    }
    let mut full = Address::parse(prefix.trim_end_matches('.')).ok()?;
    full.0.extend(local.0);
    Some(full)
}

/// The state addresses a move renames: the instance itself, or everything under a resource or
/// module address (`count` ↔ `for_each` keys by naming the instances).
fn renames(state: &State, from: &Address, to: &Address) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for r in &state.resources {
        let Ok(address) = Address::parse(&r.address) else {
            continue;
        };
        if address == *from {
            out.push((r.address.clone(), to.to_string()));
            continue;
        }
        // `from = a.b` with `to = a.b[0]` moves the instance without a key (count added), as
        // Terraform reads it: a keyed `to` makes `from` one instance, not the resource.
        let to_instance = to.0.last().is_some_and(|s| s.key.is_some());
        if from.0.last().is_some_and(|s| s.key.is_none())
            && !to_instance
            && address.starts_with(from)
        {
            // Keep what follows `from`: the instance key of its last step and the steps after.
            let mut steps = to.0.clone();
            let n = from.0.len();
            if let (Some(last), Some(matched)) = (steps.last_mut(), address.0.get(n - 1))
                && last.key.is_none()
            {
                last.key = matched.key.clone();
            }
            steps.extend(address.0[n..].iter().cloned());
            out.push((r.address.clone(), Address(steps).to_string()));
        }
    }
    out
}

/// One planned instance, as the identity check sees it.
pub(crate) struct Claim {
    pub(crate) address: String,
    pub(crate) identity: String,
    pub(crate) span: Option<Span>,
    /// Will exist after the apply (created, kept or updated), or goes away (deleted).
    pub(crate) kept: bool,
    pub(crate) creates: bool,
}

/// Refuses two addresses for one object: two instances that will both exist, and a create
/// with a delete of the same object (a rename or a move into a module without `moved`).
pub(crate) fn check_identities(claims: &[Claim], diags: &mut Diags) {
    let mut by_identity: HashMap<&str, Vec<&Claim>> = HashMap::new();
    for claim in claims {
        by_identity.entry(&claim.identity).or_default().push(claim);
    }
    let mut identities: Vec<_> = by_identity.into_iter().collect();
    identities.sort_by(|a, b| a.0.cmp(b.0));
    for (identity, claims) in identities {
        let kept: Vec<&&Claim> = claims.iter().filter(|c| c.kept).collect();
        if kept.len() > 1 {
            let names: Vec<&str> = kept.iter().map(|c| c.address.as_str()).collect();
            diags.push(Diag::error(
                kept[1].span.or(kept[0].span),
                "Two resources for one object",
                format!(
                    "{} all address {}: one object can be managed by one resource instance only.",
                    names.join(" and "),
                    describe(identity)
                ),
            ));
            continue;
        }
        let created = claims.iter().find(|c| c.creates);
        let deleted = claims.iter().find(|c| !c.kept);
        if let (Some(created), Some(deleted)) = (created, deleted)
            && created.address != deleted.address
        {
            diags.push(Diag::error(
                created.span,
                "Create and destroy of one object",
                format!(
                    "{} would create or take in the object that {}, which is to be destroyed, already manages ({}): the apply would take the object over and then delete it. If the resource was renamed or moved, say so:\n\n  moved {{\n    from = {}\n    to   = {}\n  }}",
                    created.address,
                    deleted.address,
                    describe(identity),
                    deleted.address,
                    created.address
                ),
            ));
        }
    }
}

fn describe(identity: &str) -> String {
    match identity.split_once(':') {
        Some((kind, rest)) => format!("{kind} {rest}"),
        None => identity.to_owned(),
    }
}

/// The claims of a plan's changes: what each will leave in place and what it removes.
pub(crate) fn claims(
    changes: &[ResourceChange],
    identity: impl Fn(&ResourceChange, bool) -> Option<String>,
    span: impl Fn(&str) -> Option<Span>,
) -> Vec<Claim> {
    let mut out = Vec::new();
    for c in changes {
        if c.actions.contains(&Action::Forget) || c.actions.contains(&Action::Read) {
            continue;
        }
        let deletes = c.actions == [Action::Delete];
        // An import takes an object in, as a create makes one: with a delete of that object
        // under another address, it is a rename.
        let creates = c.actions.contains(&Action::Create) || c.importing.is_some();
        if let Some(id) = identity(c, !deletes) {
            out.push(Claim {
                address: c.address.clone(),
                identity: id,
                span: span(&c.address),
                kept: !deletes,
                creates,
            });
        }
    }
    out
}
