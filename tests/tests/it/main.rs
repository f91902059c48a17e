//! The integration tests, in one binary so that the test world is linked once.
//!
//! `fast` needs no cluster, cloud fake or Python: the language, the engine against the `test`
//! provider, diagnostics, examples, the CLI. `world` runs in the test world (kwok clusters
//! with a real control plane, helm, moto, the AKS and GKE fakes). The fast tier is
//! `cargo test --workspace -- --skip world::`; the README's `cargo test --workspace` runs both.

#![allow(clippy::panic, clippy::unwrap_used)]

mod fast;
mod world;
