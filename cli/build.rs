//! Places the functions a start-up and a `validate` run execute side by side at the front of
//! the release binary's code (`link/startup.order`, made by `link/generate`).
//!
//! Why: the text is some 50 MB and the kernel maps it in 64 KiB per page fault. Where the
//! linker puts them by default, the 1,300 functions `validate` runs are spread over the whole
//! text, and `validate` of the reference example faulted code in 129 times (`version` 34);
//! placed together, 17 times (`version` 7), and `validate` runs a fifth faster
//! (docs/benchmarks/engine.md). Nothing else changes: a name the file lists that the binary
//! lacks is skipped, so an out-of-date file costs only speed.
//!
//! Only lld reads a symbol ordering file. Rust links with its own lld on x86-64 Linux since
//! 1.90; anywhere else, or when the linker is chosen by hand, or with
//! `GPUSTACK_LINK_ORDER=off`, the binary links as it always did.

use std::env;
use std::path::Path;
use std::process::Command;

const ORDER_FILE: &str = "link/startup.order";

fn main() {
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GPUSTACK_LINK_ORDER");
    // Debug builds are for tests, where start-up time is not what is measured.
    if env::var("PROFILE").as_deref() != Ok("release")
        || env::var("GPUSTACK_LINK_ORDER").as_deref() == Ok("off")
    {
        return;
    }
    match linker() {
        Linker::RustsOwnLld => {}
        Linker::OtherTarget => return,
        Linker::Other(why) => {
            println!(
                "cargo:warning=gpustack starts slower without its start-up order ({ORDER_FILE}): {why}; GPUSTACK_LINK_ORDER=off leaves it out without this warning"
            );
            return;
        }
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let order = Path::new(&manifest_dir).join(ORDER_FILE);
    // The compiler driver splits what follows -Wl at commas.
    let Some(order) = order.to_str().filter(|path| !path.contains(',')) else {
        return;
    };
    if !Path::new(order).is_file() {
        return;
    }
    println!("cargo:rustc-link-arg-bin=gpustack=-Wl,--symbol-ordering-file={order}");
    println!("cargo:rustc-link-arg-bin=gpustack=-Wl,--no-warn-symbol-ordering");
}

/// Whether the binary is linked by the lld rustc ships and uses by default for
/// x86_64-unknown-linux-gnu from 1.90 on: no other linker accepts the ordering option.
enum Linker {
    RustsOwnLld,
    /// Another target, whose default linker reads no ordering file.
    OtherTarget,
    /// This target, linked otherwise: said, since the binary then starts slower.
    Other(&'static str),
}

fn linker() -> Linker {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return Linker::OtherTarget;
    }
    if env::var_os("RUSTC_LINKER").is_some() {
        return Linker::Other("a linker is named in Cargo's configuration");
    }
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|option| rustflags.contains(option))
    {
        return Linker::Other("RUSTFLAGS choose the linker");
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default();
    match minor_version(&version) {
        Some(minor) if minor >= 90 => Linker::RustsOwnLld,
        _ => Linker::Other("Rust before 1.90 links with the system linker"),
    }
}

/// The minor version of a `rustc --version` line such as `rustc 1.95.0 (59807616e 2026-04-14)`.
fn minor_version(version_line: &str) -> Option<u32> {
    let version = version_line.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
