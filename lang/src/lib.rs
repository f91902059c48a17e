//! The gpustack language: what a stack's files say, before anything is planned.
//!
//! - [`source`]: every file read in a run and the positions in it; [`diag`]: located
//!   diagnostics, collected rather than returned one at a time.
//! - [`config`]: loading a stack's directory (and the modules it calls) into the
//!   configuration model, checking structure only; git module sources and their lock file.
//! - [`expr`]: expressions evaluated to values with unknowns, their references, type
//!   constraints and the function library, under one budget per evaluation.
//! - [`fmt`]: canonical formatting; [`address`]: instance addresses.
//!
//! **Architecture invariant:** this crate knows nothing of plans, providers' answers or
//! state: it depends on the protocol's value and diagnostic types only, never on the engine,
//! a provider or a backend (`fast::layering::the_language_crate_knows_no_plan_provider_or_state`).
//! Evaluation reads files and the clock only through [`expr::eval::Scope`], which its caller
//! implements.

pub mod address;
pub mod config;
pub mod diag;
pub mod expr;
pub mod fmt;
pub mod source;
