//! Any bytes as a stack: loading, graphing, evaluating and formatting must not panic, abort or
//! exhaust memory, and formatting must be idempotent.
//!
//! The input is split at NUL bytes into the stack's `main.hcl`, a template `t.tpl` beside it
//! and a local module `m/main.hcl`, so that the fuzzer reaches what one file cannot:
//! templates rendering templates, module calls and their inputs.
#![no_main]

use gpustack_engine::VariableArgs;
use gpustack_engine::EvalOptions;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn stack_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir()
            .join(format!("gpustack-fuzz-{}", std::process::id()))
            .join("stack");
        std::fs::create_dir_all(dir.join("m")).expect("create fuzz stack dir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    // Each input is a run of its own: the values earlier inputs built are gone.
    gpustack_lang::expr::eval::start_run();
    let dir = stack_dir();
    let mut parts = data.splitn(3, |b| *b == 0);
    let files = ["main.hcl", "t.tpl", "m/main.hcl"];
    for name in files {
        let part = parts.next().unwrap_or_default();
        if std::fs::write(dir.join(name), part).is_err() {
            return;
        }
    }
    // Templates name files relative to the working directory, as in Terraform.
    if std::env::set_current_dir(dir).is_err() {
        return;
    }
    // The providers whose validation needs no cluster, the kubernetes, kubectl and helm
    // ones' decoding of manifests, bodies and values included.
    let registry = gpustack_protocol::Registry::new(vec![
        gpustack_provider_local::provider(),
        gpustack_provider_local::terraform::provider(),
        gpustack_provider_test::provider(),
        gpustack_provider_kubernetes::kubernetes(),
        gpustack_provider_kubernetes::kubectl(),
        gpustack_provider_kubernetes::gpu(),
        gpustack_provider_helm::provider(),
    ]);
    let loaded = gpustack_engine::load(
        registry,
        dir,
        &VariableArgs::default(),
        EvalOptions {
            allow_missing_inputs: true,
        },
    );
    let _ = loaded.graph_dot();
    let main = data.split(|b| *b == 0).next().unwrap_or_default();
    if let Ok(text) = std::str::from_utf8(main)
        && let Ok(once) = gpustack_lang::fmt::format_hcl(text)
    {
        let twice = gpustack_lang::fmt::format_hcl(&once).expect("formatted output parses");
        assert_eq!(once, twice, "formatting is not idempotent");
    }
});
