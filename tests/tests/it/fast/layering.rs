//! The crate layering ARCHITECTURE.md states, checked on the dependency graph cargo resolves:
//! the engine and what it builds on compile without any SDK, and only test builds carry the
//! `test` provider. And the engine's API as ARCHITECTURE.md lists it, checked on the façade's
//! source.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates that only a provider, a backend or the binary may pull in.
const SDK_PREFIXES: &[&str] = &[
    "aws-",
    "azure_",
    "google-",
    "gcp_",
    // kube-rs's client crates (`kube`, `kube-client`, ...), not kube-cel: CEL with no client.
    "kube-client",
    "kube-core",
    "kube-runtime",
    "kube-derive",
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
        .filter(|name| name == "kube" || SDK_PREFIXES.iter().any(|p| name.starts_with(p)))
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
        "gpustack-provider-http",
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
        "gpustack-provider-http",
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

/// The engine reaches the network only through a provider or a state backend: no socket in
/// its sources (and no HTTP client in its dependencies, above).
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

/// The engine's façade stands above every module: no module takes a name from `lib.rs`
/// (`crate::Session`, `use crate::{...}`), only from the module that defines it.
#[test]
fn no_engine_module_imports_from_the_facade() {
    let mut pending = vec![gpustack_tests::repo_root().join("engine/src")];
    let mut offenders = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("engine/src/lib.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let facade = code.contains("use crate::{")
                    || code.match_indices("crate::").any(|(i, m)| {
                        code[i + m.len()..].starts_with(|c: char| c.is_ascii_uppercase())
                    });
                if facade {
                    offenders.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The engine's floors, bottom up: what evaluates (`evaluate/`, `graph/`, `instances.rs`
/// and the shared pieces beside them) never takes a name from the operations built on it
/// (`plan/`, `apply/`, `output/`, `session/`, `load.rs`, `import.rs`, `console.rs`).
#[test]
fn the_engines_evaluation_imports_nothing_from_the_operations_above_it() {
    const ABOVE: &[&str] = &[
        "plan", "apply", "output", "session", "load", "import", "console",
    ];
    let src = gpustack_tests::repo_root().join("engine/src");
    let mut below: Vec<std::path::PathBuf> = [
        "instances.rs",
        "sensitive.rs",
        "encryption.rs",
        "unknowns.rs",
        "progress.rs",
        "schedule.rs",
        "configure.rs",
        "version.rs",
    ]
    .iter()
    .map(|f| src.join(f))
    .collect();
    for dir in ["evaluate", "graph"] {
        for entry in std::fs::read_dir(src.join(dir)).unwrap() {
            below.push(entry.unwrap().path());
        }
    }
    let mut offenders = Vec::new();
    for path in below {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let up = ABOVE.iter().any(|m| {
                code.match_indices(&format!("crate::{m}"))
                    .any(|(i, found)| {
                        !code[i + found.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    })
            });
            if up {
                offenders.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
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

/// The release binary's start-up order (cli/build.rs): the file lld reads lists functions by
/// their symbol names alone, and among them the ones `validate` cannot run without, so that a
/// file regenerated empty, from another binary, or with callgrind's annotations left in fails
/// here and not as a silent slowdown.
#[test]
fn the_startup_order_lists_the_functions_validate_runs() {
    let root = gpustack_tests::repo_root();
    let order = std::fs::read_to_string(root.join("cli/link/startup.order"))
        .expect("read cli/link/startup.order");
    let symbols: Vec<&str> = order
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect();
    assert!(
        symbols.len() > 1_000,
        "only {} functions in cli/link/startup.order",
        symbols.len()
    );
    for symbol in &symbols {
        assert!(
            !symbol.contains(char::is_whitespace) && !symbol.contains('\''),
            "not a symbol name: {symbol:?}"
        );
    }
    for needed in [
        "8gpustack8commands8validate",
        "13gpustack_lang6config15load_stack_with",
        "8hcl_edit6parser10parse_body",
        "15gpustack_engine8evaluate8evaluate",
    ] {
        assert!(
            symbols.iter().any(|symbol| symbol.contains(needed)),
            "cli/link/startup.order lacks {needed}: run cli/link/generate"
        );
    }
    assert!(
        order
            .lines()
            .any(|line| line.starts_with("# rustc: rustc 1.")),
        "cli/link/startup.order does not say which compiler's names it holds"
    );
    let build_script =
        std::fs::read_to_string(root.join("cli/build.rs")).expect("read cli/build.rs");
    assert!(build_script.contains("\"link/startup.order\""));
    assert!(build_script.contains("--symbol-ordering-file="));
}

/// The names a crate root exports: `pub use` (each name a braced list or a path ends in, a
/// renamed one by its new name), `pub mod` and every other top-level `pub` item. Indented
/// lines belong to items' bodies and are skipped; `pub(crate)` and the like are not `pub `.
fn exported_names(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("pub use ") {
            let mut statement = rest.to_owned();
            while !statement.contains(';') {
                let Some(next) = lines.next() else { break };
                statement.push(' ');
                statement.push_str(next.trim());
            }
            let statement = statement.split(';').next().unwrap_or_default();
            assert!(
                !statement.contains('*'),
                "a glob re-export hides which names are the API: pub use {statement}"
            );
            for item in statement.split([',', '{', '}']) {
                let item = item.trim();
                let name = match item.split_once(" as ") {
                    Some((_, alias)) => alias.trim(),
                    None => item.rsplit("::").next().unwrap_or_default(),
                };
                // `self` would export the module the braces follow, which this reading does
                // not track: a façade names its modules with `pub mod` or `pub use path::m`.
                assert!(
                    name != "self",
                    "pub use {statement}: re-export the module by name"
                );
                if !name.is_empty() && name != "_" {
                    names.insert(name.to_owned());
                }
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        let words: Vec<&str> = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        // Qualifiers stand before the item's keyword: `pub async fn`, `pub const fn`.
        let at = words
            .iter()
            .enumerate()
            .position(|(i, w)| {
                !(matches!(*w, "async" | "unsafe" | "extern")
                    || (*w == "const" && words.get(i + 1) == Some(&"fn")))
            })
            .unwrap_or(words.len());
        let is_item = words.get(at).is_some_and(|kind| {
            matches!(
                *kind,
                "fn" | "struct" | "enum" | "trait" | "type" | "mod" | "const" | "static" | "union"
            )
        });
        if is_item && let Some(name) = words.get(at + 1) {
            names.insert((*name).to_owned());
        }
    }
    names
}

/// The text of the "**API boundary:**" paragraph of the section whose heading starts with
/// `heading`.
fn api_boundary<'a>(architecture: &'a str, heading: &str) -> &'a str {
    let section = architecture
        .split("\n### ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section {heading}"));
    let section = section.split("\n## ").next().unwrap_or_default();
    let start = section
        .find("**API boundary:**")
        .unwrap_or_else(|| panic!("the section {heading} has no API boundary"));
    let paragraph = &section[start..];
    paragraph.split("\n\n").next().unwrap_or(paragraph)
}

/// ARCHITECTURE.md's engine section lists the engine's API: every name `engine/src/lib.rs`
/// exports, so that a name added to the façade is described where the API is, and no name
/// the façade no longer has (a backquoted identifier of the paragraph names an export).
#[test]
fn the_architecture_lists_the_engines_api() {
    let root = gpustack_tests::repo_root();
    let lib = std::fs::read_to_string(root.join("engine/src/lib.rs")).unwrap();
    let exported = exported_names(&lib);
    // A reading that found nothing would pass the comparisons below.
    for name in [
        "Session",
        "plan",
        "apply",
        "load",
        "PLAN_FORMAT_VERSION",
        "VariableArgs",
    ] {
        assert!(
            exported.contains(name),
            "{name} not found among the exports of engine/src/lib.rs: {exported:?}"
        );
    }
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let paragraph = api_boundary(&architecture, "`engine/`");
    let quoted: BTreeSet<&str> = paragraph.split('`').skip(1).step_by(2).collect();
    let missing: Vec<&String> = exported
        .iter()
        .filter(|name| !quoted.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the engine's API boundary in ARCHITECTURE.md does not name {missing:?}"
    );
    let stale: Vec<&&str> = quoted
        .iter()
        .filter(|q| {
            q.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && q.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !exported.contains(**q)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "the engine's API boundary in ARCHITECTURE.md names what engine/src/lib.rs does not export: {stale:?}"
    );
}
