//! The `gpustack` binary: the command line (`commands`: clap, miette diagnostics, the drift
//! webhook client, NVML for `node-check`) and the providers and state backends it is built
//! with (`providers`, `gpustack-backends`). The engine it drives knows none of them.

mod commands;
mod local_exec;
mod providers;

pub use commands::main;
pub use providers::registry;

/// mimalloc instead of the system allocator: a stack's syntax trees, values and graph are
/// hundreds of thousands of small allocations, and glibc's malloc and free were a quarter of a
/// large `validate`. Transparent huge pages stay off (`no_thp`): with them every 2 MB the heap
/// touches is zeroed and resident, which raised the peak memory of a 10,000-resource
/// `validate` by a fifth. Set in this library so that every binary built on the command line,
/// the benchmarks included, measures the allocator the product ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
