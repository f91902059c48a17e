//! The limits of one evaluation, in one place for the evaluator and the functions that
//! recurse on their own (`jsondecode`).

/// How deep expressions (templates and what they render included) may nest.
pub const MAX_DEPTH: usize = 200;
/// How many expressions one evaluation may evaluate (each `for` element's and each
/// template's included): enough for a `for` over a million elements, not for a
/// recursion that doubles at every level.
pub const MAX_STEPS: u64 = 20_000_000;
/// How many bytes of values one evaluation may copy from references and build with
/// functions and templates.
pub const MAX_VALUE_BYTES: u64 = 512 << 20;
