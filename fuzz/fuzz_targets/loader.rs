//! Any bytes as a stack file: loading, graphing, evaluating and formatting must not panic, and
//! formatting must be idempotent.
#![no_main]

use gpustack_engine::VariableArgs;
use gpustack_engine::evaluate::EvalOptions;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn stack_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("gpustack-fuzz-{}", std::process::id())).join("stack");
        std::fs::create_dir_all(&dir).expect("create fuzz stack dir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = stack_dir();
    if std::fs::write(dir.join("main.hcl"), data).is_err() {
        return;
    }
    // The providers without an SDK: the engine and this target compile without any.
    let registry = gpustack_protocol::Registry::new(vec![
        gpustack_provider_local::provider(),
        gpustack_provider_local::terraform::provider(),
        gpustack_provider_test::provider(),
    ]);
    let loaded = gpustack_engine::load(registry, dir, &VariableArgs::default(), EvalOptions { allow_missing_inputs: true });
    let _ = gpustack_engine::graph::dot::render(&loaded.stack, &loaded.graph, &loaded.evaluated.instances);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(once) = gpustack_engine::fmt::format_hcl(text)
    {
        let twice = gpustack_engine::fmt::format_hcl(&once).expect("formatted output parses");
        assert_eq!(once, twice, "formatting is not idempotent");
    }
});
