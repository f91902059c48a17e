//! The `gpustack` binary: the command line (`commands`: clap, miette diagnostics, the drift
//! webhook client, NVML for `node-check`) and the providers and state backends it is built
//! with (`providers`, `gpustack-backends`). The engine it drives knows none of them.

mod commands;
mod providers;

pub use commands::main;
pub use providers::registry;
