//! The README and docs/ back their claims with test names; every name they give must be a test
//! that exists, so that a renamed or deleted test cannot leave a claim unbacked.

use gpustack_tests::repo_root;
use std::path::Path;

/// `fast::a::b` with `{x,y}` alternatives expanded; `*` stays a wildcard.
fn expand(name: &str) -> Vec<String> {
    match (name.find('{'), name.find('}')) {
        (Some(open), Some(close)) if open < close => name[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &name[..open], &name[close + 1..])))
            .collect(),
        _ => vec![name.to_owned()],
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    for (i, piece) in pieces.iter().enumerate() {
        if i + 1 == pieces.len() {
            return rest.ends_with(piece);
        }
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The test functions of `tests/tests/it/<tier>/<module>.rs`.
fn tests_of(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut names = Vec::new();
    let mut test_next = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
            test_next = true;
        } else if test_next && let Some(rest) = line.strip_prefix("fn ") {
            names.push(rest.split('(').next().unwrap_or_default().to_owned());
            test_next = false;
        } else if test_next && line.starts_with("async fn ") {
            let rest = line.trim_start_matches("async fn ");
            names.push(rest.split('(').next().unwrap_or_default().to_owned());
            test_next = false;
        }
    }
    names
}

/// README.md, ARCHITECTURE.md and every Markdown file under docs/.
fn documents(root: &Path) -> Vec<std::path::PathBuf> {
    let mut documents = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                documents.push(path);
            }
        }
    }
    documents
}

/// Relative links (`[text](path)`, anchors dropped) resolve from the linking document's
/// directory, as a Markdown viewer resolves them.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = repo_root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for document in documents(&root) {
        let text = std::fs::read_to_string(&document).unwrap();
        let dir = document.parent().unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            if !dir.join(target).exists() {
                broken.push(format!("{}: {target}", document.display()));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} relative links found in the docs"
    );
    assert!(
        broken.is_empty(),
        "links to files that do not exist:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_test_the_docs_name_exists() {
    let root = repo_root();
    let documents = documents(&root);
    let mut missing = Vec::new();
    let mut checked = 0;
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        for quoted in text.split('`').skip(1).step_by(2) {
            if !(quoted.starts_with("fast::") || quoted.starts_with("world::")) {
                continue;
            }
            for name in expand(quoted) {
                let parts: Vec<&str> = name.split("::").filter(|p| !p.is_empty()).collect();
                let [tier, module, test] = parts[..] else {
                    // A module alone (`fast::git_modules`): the file must exist.
                    if parts.len() == 2 {
                        let file =
                            root.join(format!("tests/tests/it/{}/{}.rs", parts[0], parts[1]));
                        if !file.exists() {
                            missing.push(format!("{}: {name}", document.display()));
                        }
                        checked += 1;
                    }
                    continue;
                };
                let file = root.join(format!("tests/tests/it/{tier}/{module}.rs"));
                checked += 1;
                if !tests_of(&file).iter().any(|t| matches(test, t)) {
                    missing.push(format!("{}: {name}", document.display()));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} test names found in the docs");
    assert!(
        missing.is_empty(),
        "the docs name tests that do not exist:\n{}",
        missing.join("\n")
    );
}
