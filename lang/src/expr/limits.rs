//! The limits of one evaluation and of one run, in one place for the evaluator and the
//! functions that recurse on their own (`jsondecode`).

/// How deep expressions (templates and what they render included) may nest.
pub const MAX_DEPTH: usize = 200;
/// How many expressions one evaluation may evaluate (each `for` element's and each
/// template's included): enough for a `for` over a million elements, not for a
/// recursion that doubles at every level.
pub const MAX_STEPS: u64 = 20_000_000;
/// How many bytes of values one evaluation may copy from references and build with
/// functions and templates.
pub const MAX_VALUE_BYTES: u64 = 512 << 20;
/// How many bytes of values all the evaluations of one run may copy and build together,
/// counted as [`MAX_VALUE_BYTES`] is. Each expression within its own limit can still hold
/// what it built (a local keeps its value for the whole run), so without this a few dozen
/// of them exhaust memory. Four expressions at [`MAX_VALUE_BYTES`] fit; an ordinary stack
/// builds a few megabytes; 2 GiB of values, with what the process needs besides, stays
/// within the 4 GB a small CI runner or container has.
pub const MAX_RUN_VALUE_BYTES: u64 = 2 << 30;
