//! Places the functions a start-up and a `validate` run execute side by side at the front of
//! the release binary's code (`link/startup.order`, made by `link/generate`).
//!
//! Why: the text is some 50 MB and the kernel maps it in 64 KiB per page fault. Where the
//! linker puts them by default, the 1,300 functions `validate` runs are spread over the whole
//! text, and `validate` of the reference example faulted code in 129 times (`version` 34);
//! placed together, 17 times (`version` 7), and `validate` came 0.3–0.6 ms closer to
//! `version` (docs/benchmarks/engine.md). Nothing else changes: a name the file lists that the binary
//! lacks is skipped, so an out-of-date file costs only speed.
//!
//! Only lld reads a symbol ordering file, and the names were recorded on
//! x86_64-unknown-linux-gnu. Whether this build's linker is lld (rustup's Rust links that
//! target with its own lld since 1.90; a distribution's Rust or a linker chosen by hand may
//! not) is asked of the linker itself, by linking an empty program with the option.
//! `GPUSTACK_LINK_ORDER=off` leaves the order out.

use std::env;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDER_FILE: &str = "link/startup.order";
const RECORDED_TARGET: &str = "x86_64-unknown-linux-gnu";

fn main() {
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GPUSTACK_LINK_ORDER");
    // Debug builds are for tests, where start-up time is not what is measured.
    if env::var("PROFILE").as_deref() != Ok("release")
        || env::var("GPUSTACK_LINK_ORDER").as_deref() == Ok("off")
        || env::var("TARGET").as_deref() != Ok(RECORDED_TARGET)
    {
        return;
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let order = Path::new(&manifest_dir).join(ORDER_FILE);
    // The compiler driver splits what follows -Wl at commas.
    let Some(order) = order.to_str().filter(|path| !path.contains(',')) else {
        return;
    };
    let Ok(text) = std::fs::read_to_string(order) else {
        return;
    };
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    if !linker_takes_an_ordering_file(&rustc) {
        println!(
            "cargo:warning=gpustack starts slower without its start-up order (cli/{ORDER_FILE}): this build's linker is not lld; GPUSTACK_LINK_ORDER=off leaves it out without this warning"
        );
        return;
    }
    // Symbol names carry hashes of the compiler's version: another one's binary matches few.
    let this_rustc = command_output(&rustc, &["--version"]);
    if let Some(recorded) = text.lines().find_map(|line| line.strip_prefix("# rustc: "))
        && recorded.trim() != this_rustc.trim()
    {
        println!(
            "cargo:warning=cli/{ORDER_FILE} was recorded with {recorded}, this build uses {}: run cli/link/generate, or gpustack starts slower",
            this_rustc.trim()
        );
    }
    println!("cargo:rustc-link-arg-bin=gpustack=-Wl,--symbol-ordering-file={order}");
    println!("cargo:rustc-link-arg-bin=gpustack=-Wl,--no-warn-symbol-ordering");
}

/// Links an empty program as this build links the binary (its target, linker and flags),
/// with an ordering file: only a linker that reads one succeeds.
fn linker_takes_an_ordering_file(rustc: &str) -> bool {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let empty_order = out_dir.join("empty.order");
    if std::fs::write(&empty_order, "").is_err() {
        return false;
    }
    let mut probe = Command::new(rustc);
    probe
        .args([
            "-",
            "--crate-name",
            "link_order_probe",
            "--crate-type",
            "bin",
        ])
        .args(["--target", RECORDED_TARGET, "-o"])
        .arg(out_dir.join("link-order-probe"))
        .arg(format!(
            "-Clink-arg=-Wl,--symbol-ordering-file={}",
            empty_order.display()
        ));
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        probe
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(rustflags.split('\x1f').filter(|flag| !flag.is_empty()));
    let Ok(mut child) = probe
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take()
        && stdin.write_all(b"fn main() {}\n").is_err()
    {
        return false;
    }
    child.wait().is_ok_and(|status| status.success())
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default()
}
