//! The expression language: evaluation with unknowns, references, types and functions.

pub mod eval;
pub mod functions;
pub mod limits;
pub mod literal;
pub mod refs;
pub mod types;
pub mod unify;
pub mod whitespace;
