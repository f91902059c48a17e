//! The crate layering ARCHITECTURE.md states, checked on the dependency graph cargo resolves:
//! the engine and what it builds on compile without any SDK, and only test builds carry the
//! `test` provider.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates that only a provider, a backend or the binary may pull in.
const SDK_PREFIXES: &[&str] = &[
    "aws-",
    "azure_",
    "google-",
    "gcp_",
    "kube",
    "k8s-openapi",
    "hyper",
    "reqwest",
    "rustls",
    "ureq",
    "tonic",
    "h2",
    "clap",
    "miette",
    "nvml",
];

/// The normal (non-dev, non-build) dependencies of a workspace package, by crate name.
fn dependencies(package: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
        ])
        .arg(package)
        .current_dir(gpustack_tests::repo_root())
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn sdk_crates(package: &str) -> Vec<String> {
    dependencies(package)
        .into_iter()
        .filter(|name| SDK_PREFIXES.iter().any(|p| name.starts_with(p)))
        .collect()
}

#[test]
fn the_engine_and_its_foundations_depend_on_no_sdk() {
    for package in [
        "gpustack-engine",
        "gpustack-lang",
        "gpustack-gpu",
        "gpustack-catalog",
        "gpustack-protocol",
        "gpustack-state",
        "gpustack-provider-sdk",
        "gpustack-provider-local",
        "gpustack-provider-test",
    ] {
        let found = sdk_crates(package);
        assert!(found.is_empty(), "{package} depends on {found:?}");
    }
}

#[test]
fn the_engine_names_no_provider_backend_or_binary_crate() {
    let engine = dependencies("gpustack-engine");
    let gpustack: BTreeSet<String> = engine
        .into_iter()
        .filter(|name| name.starts_with("gpustack"))
        .collect();
    assert_eq!(
        gpustack,
        BTreeSet::from(
            [
                "gpustack-catalog",
                "gpustack-engine",
                "gpustack-fs",
                "gpustack-gpu",
                "gpustack-lang",
                "gpustack-protocol",
                "gpustack-state"
            ]
            .map(str::to_owned)
        )
    );
}

#[test]
fn each_provider_family_compiles_only_its_own_sdk() {
    let azure = sdk_crates("gpustack-provider-azure");
    assert!(
        azure
            .iter()
            .all(|c| !c.starts_with("aws-") && !c.starts_with("google-") && !c.starts_with("kube")),
        "{azure:?}"
    );
    let gcp = sdk_crates("gpustack-provider-gcp");
    assert!(
        gcp.iter()
            .all(|c| !c.starts_with("aws-") && !c.starts_with("azure_") && !c.starts_with("kube")),
        "{gcp:?}"
    );
    let aws = sdk_crates("gpustack-provider-aws");
    assert!(
        aws.iter().all(|c| !c.starts_with("azure_")
            && !c.starts_with("google-")
            && !c.starts_with("kube")),
        "{aws:?}"
    );
    let kubernetes = sdk_crates("gpustack-provider-kubernetes");
    assert!(
        kubernetes.iter().all(|c| !c.starts_with("aws-")
            && !c.starts_with("azure_")
            && !c.starts_with("google-")),
        "{kubernetes:?}"
    );
}

/// Provider families build on the SDK, the shared cluster connection and the catalog, never on
/// one another, and only the GPU model itself depends on the GPU model.
#[test]
fn sibling_providers_do_not_depend_on_each_other() {
    const PROVIDERS: &[&str] = &[
        "gpustack-provider-kubernetes",
        "gpustack-provider-helm",
        "gpustack-provider-local",
        "gpustack-provider-aws",
        "gpustack-provider-azure",
        "gpustack-provider-gcp",
        "gpustack-provider-test",
    ];
    for package in PROVIDERS {
        let deps = dependencies(package);
        let siblings: Vec<&&str> = PROVIDERS
            .iter()
            .filter(|p| *p != package && deps.contains(**p))
            .collect();
        assert!(siblings.is_empty(), "{package} depends on {siblings:?}");
        assert!(
            !deps.contains("gpustack-gpu"),
            "{package} pulls in the whole GPU model (the catalog is gpustack-catalog)"
        );
    }
    assert!(!dependencies("gpustack-provider-sdk").contains("gpustack-gpu"));
}

#[test]
fn only_test_builds_carry_the_test_provider() {
    assert!(!dependencies("gpustack").contains("gpustack-provider-test"));
    assert!(dependencies("gpustack-tests").contains("gpustack-provider-test"));
}

#[test]
fn providers_and_backends_never_depend_on_the_engine_or_the_binary() {
    for package in [
        "gpustack-provider-sdk",
        "gpustack-cluster",
        "gpustack-catalog",
        "gpustack-provider-kubernetes",
        "gpustack-provider-helm",
        "gpustack-provider-local",
        "gpustack-provider-aws",
        "gpustack-provider-azure",
        "gpustack-provider-gcp",
        "gpustack-provider-test",
        "gpustack-backends",
        "gpustack-connect",
    ] {
        let deps = dependencies(package);
        assert!(
            !deps.contains("gpustack-engine") && !deps.contains("gpustack"),
            "{package} depends on the engine or the binary"
        );
    }
}

#[test]
fn the_binary_links_one_tls_implementation() {
    let deps = dependencies("gpustack");
    let others: Vec<&String> = deps
        .iter()
        // openssl-probe only looks for certificate files; it links no OpenSSL.
        .filter(|c| {
            c.starts_with("aws-lc") || *c == "openssl" || *c == "openssl-sys" || *c == "native-tls"
        })
        .collect();
    assert!(others.is_empty(), "besides rustls with ring: {others:?}");
    assert!(deps.contains("ring"));
}

/// The engine reaches the network only through a provider or a state backend: no socket in
/// its sources (and no HTTP client in its dependencies, above).
/// The language is what a stack's files say: it builds on the protocol's value and diagnostic
/// types alone (and the bounded reads of `gpustack-fs`), never on the engine, the state, the
/// GPU model, a provider or a backend.
#[test]
fn the_language_crate_knows_no_plan_provider_or_state() {
    let gpustack: BTreeSet<String> = dependencies("gpustack-lang")
        .into_iter()
        .filter(|name| name.starts_with("gpustack"))
        .collect();
    assert_eq!(
        gpustack,
        BTreeSet::from(["gpustack-fs", "gpustack-lang", "gpustack-protocol"].map(str::to_owned))
    );
}

#[test]
fn the_engine_opens_no_socket() {
    let mut pending = vec![
        gpustack_tests::repo_root().join("engine/src"),
        gpustack_tests::repo_root().join("lang/src"),
    ];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for needle in ["std::net", "TcpStream", "UdpSocket", "tokio::net"] {
                    assert!(!text.contains(needle), "{} uses {needle}", path.display());
                }
            }
        }
    }
}

/// The binary allocates through mimalloc (it reports itself at start-up when asked), built
/// without transparent huge pages, as README's benchmark section says.
#[test]
fn the_binary_allocates_with_mimalloc_without_huge_pages() {
    let output = Command::new(gpustack_tests::gpustack_bin())
        .arg("version")
        .env("MIMALLOC_VERBOSE", "1")
        .output()
        .expect("run gpustack version");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("mimalloc: process init"),
        "gpustack does not allocate with mimalloc: {stderr}"
    );
    let tree = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal,features",
            "--prefix",
            "none",
            "-p",
            "gpustack",
            "-i",
            "mimalloc",
        ])
        .current_dir(gpustack_tests::repo_root())
        .output()
        .expect("run cargo tree");
    assert!(tree.status.success());
    let tree = String::from_utf8_lossy(&tree.stdout);
    assert!(
        tree.lines().any(|l| l == "mimalloc feature \"no_thp\""),
        "mimalloc is built with transparent huge pages: {tree}"
    );
}
