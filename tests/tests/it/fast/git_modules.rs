//! Module sources from git (`git::URL//DIR?ref=REF`), fetched by `gpustack init` from a local
//! repository and pinned in the lock file: loading never fetches, and a moved tag changes
//! nothing until `init --upgrade`.

use gpustack_tests::{gpustack, stderr, stdout};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=gpustack",
            "-c",
            "user.email=gpustack@example.com",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_owned()
}

fn module_version(repo: &Path, version: &str) {
    let module = repo.join("modules/pool");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(
        module.join("main.hcl"),
        format!(
            "variable \"name\" {{\n  type = string\n}}\n\nresource \"terraform_data\" \"pool\" {{\n  input = \"${{var.name}}-{version}\"\n}}\n\noutput \"label\" {{\n  value = terraform_data.pool.output\n}}\n"
        ),
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", version]);
    git(repo, &["tag", "-f", "v1"]);
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = gpustack(dir, args);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

#[test]
fn git_module_sources_are_fetched_by_init_and_pinned() {
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("gpu-modules");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    module_version(&repo, "one");
    let first = git(&repo, &["rev-parse", "v1"]);

    let stack = tempfile::tempdir().unwrap();
    let d = stack.path();
    let url = format!("file://{}", repo.display());
    std::fs::write(
        d.join("main.hcl"),
        format!(
            "module \"pool\" {{\n  source = \"git::{url}//modules/pool?ref=v1\"\n  name   = \"t4\"\n}}\n\noutput \"label\" {{\n  value = module.pool.label\n}}\n"
        ),
    )
    .unwrap();

    // Loading never fetches: until init, the module is missing, and the error says why.
    let (code, _, err) = run(d, &["validate"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Module not installed") && err.contains("gpustack init"),
        "{err}"
    );

    let (code, out, err) = run(d, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    let lock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("gpustack.modules.lock.json")).unwrap(),
    )
    .unwrap();
    let source = format!("git::{url}//modules/pool?ref=v1");
    assert_eq!(lock["modules"][&source]["commit"], first.as_str(), "{lock}");
    // A saved plan carries the module's files and the lock: it applies without either.
    let (code, out, err) = run(d, &["plan", "--out", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    let aside = repos.path().join("aside");
    std::fs::create_dir_all(&aside).unwrap();
    std::fs::rename(d.join(".gpustack/modules"), aside.join("modules")).unwrap();
    std::fs::rename(
        d.join("gpustack.modules.lock.json"),
        aside.join("lock.json"),
    )
    .unwrap();
    let (code, out, err) = run(d, &["apply", "p.plan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("t4-one"), "{out}");
    std::fs::rename(aside.join("modules"), d.join(".gpustack/modules")).unwrap();
    std::fs::rename(
        aside.join("lock.json"),
        d.join("gpustack.modules.lock.json"),
    )
    .unwrap();

    // The tag moves; the lock keeps the stack on the commit it was reviewed with.
    module_version(&repo, "two");
    std::fs::remove_dir_all(d.join(".gpustack/modules")).unwrap();
    let (code, out, err) = run(d, &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("(locked)"), "{err}");
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 0, "the locked commit plans no change:\n{out}{err}");

    let (code, out, err) = run(d, &["init", "--upgrade"]);
    assert_eq!(code, 0, "{out}{err}");
    let lock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("gpustack.modules.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        lock["modules"][&source]["commit"],
        git(&repo, &["rev-parse", "v1"]).as_str()
    );
    let (code, out, err) = run(d, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("t4-two"), "{out}");
}

#[test]
fn a_registry_module_source_asks_for_init() {
    let stack = tempfile::tempdir().unwrap();
    std::fs::write(
        stack.path().join("main.hcl"),
        "module \"vpc\" {\n  source = \"terraform-aws-modules/vpc/aws\"\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(stack.path(), &["validate"]);
    assert_eq!(code, 1);
    assert!(err.contains("Module not installed"), "{err}");
    assert!(err.contains("run gpustack init"), "{err}");
}

/// A source that git would read as an option, a transport helper or a ref that is an option
/// runs nothing: `init` refuses it with a located diagnostic, in the stack and in a module
/// `init` fetched, and git is never asked to fetch it.
#[test]
fn init_runs_no_command_from_a_module_source() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let stack = dir.path().join("stack");
    std::fs::create_dir_all(&stack).unwrap();
    let hostile = [
        format!(
            "git::--upload-pack=touch {};true//m?ref=main",
            marker.display()
        ),
        format!(
            "git::--upload-pack=touch$${{IFS}}{}//m?ref=main",
            marker.display()
        ),
        format!("git::ext::sh -c touch% {}", marker.display()),
        "git::file:///nonexistent?ref=--upload-pack=touch".to_owned(),
    ];
    let calls: String = hostile
        .iter()
        .enumerate()
        .map(|(i, source)| format!("module \"m{i}\" {{\n  source = \"{source}\"\n}}\n\n"))
        .collect();
    std::fs::write(stack.join("main.hcl"), &calls).unwrap();
    let (code, out, err) = run(&stack, &["init"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.matches("Unsafe module source").count(), 4, "{err}");
    assert!(err.contains("main.hcl:2:"), "located: {err}");
    assert!(!marker.exists(), "a command ran from a module source");

    // A third-party module that init fetches may carry such a source in a nested call.
    let repo = dir.path().join("third-party");
    std::fs::create_dir_all(repo.join("m")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("m/main.hcl"), &calls).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "nested"]);
    std::fs::write(
        stack.join("main.hcl"),
        format!(
            "module \"vendor\" {{\n  source = \"git::file://{}//m\"\n}}\n",
            repo.display()
        ),
    )
    .unwrap();
    let (code, out, err) = run(&stack, &["init"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Unsafe module source"), "{err}");
    assert!(
        !marker.exists(),
        "a command ran from a nested module source"
    );
}

/// A repository can hold a symbolic link to any absolute path; a module directory (or a file
/// in it) that resolves outside its checkout is refused at init and at load, located at the
/// module call — the lexical check of the source alone (`//../x`) does not see a link.
#[cfg(unix)]
#[test]
fn a_git_module_that_links_outside_its_checkout_is_refused() {
    let repos = tempfile::tempdir().unwrap();
    let outside = repos.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("main.hcl"),
        "output \"stolen\" {\n  value = 1\n}\n",
    )
    .unwrap();
    let repo = repos.path().join("linked");
    std::fs::create_dir_all(repo.join("modules/files")).unwrap();
    git(&repo, &["init", "-q"]);
    std::os::unix::fs::symlink(&outside, repo.join("modules/dir")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("main.hcl"),
        repo.join("modules/files/main.hcl"),
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "links"]);
    git(&repo, &["tag", "v1"]);
    let url = format!("file://{}", repo.display());
    for subdir in ["modules/dir", "modules/files"] {
        let stack = tempfile::tempdir().unwrap();
        let d = stack.path();
        std::fs::write(
            d.join("main.hcl"),
            format!("module \"m\" {{\n  source = \"git::{url}//{subdir}?ref=v1\"\n}}\n"),
        )
        .unwrap();
        let (code, out, err) = run(d, &["init"]);
        assert_eq!(code, 1, "{subdir}: {out}{err}");
        assert!(
            err.contains("resolves through a symbolic link")
                && err.contains("outside the module's checkout"),
            "{subdir}: {err}"
        );
        // A checkout made by hand (or by an older gpustack) is refused at load too.
        let lock = format!(
            "{{\"version\": 1, \"modules\": {{\"git::{url}//{subdir}?ref=v1\": {{\"url\": \"{url}\", \"reference\": \"v1\", \"commit\": \"{}\"}}}}}}",
            git(&repo, &["rev-parse", "v1"])
        );
        std::fs::write(d.join("gpustack.modules.lock.json"), lock).unwrap();
        let checkout = gpustack_lang::config::remote::GitSource::parse(&format!(
            "git::{url}//{subdir}?ref=v1"
        ))
        .unwrap()
        .unwrap()
        .checkout_dir(d, &git(&repo, &["rev-parse", "v1"]));
        copy_tree(&repo, &checkout);
        let (code, out, err) = run(d, &["validate"]);
        assert_eq!(code, 1, "{subdir}: {out}{err}");
        assert!(
            err.contains("Module outside its checkout") && err.contains("main.hcl:2"),
            "{subdir}: {err}"
        );
    }
}

/// A copy of `from` (links kept as links) at `to`, without its `.git`.
#[cfg(unix)]
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let meta = std::fs::symlink_metadata(&source).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if meta.is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::copy(&source, &target).unwrap();
        }
    }
}

/// A module that cannot be loaded is one diagnostic, where its source is: what refers to the
/// call (`depends_on`, its outputs in expressions) sees an unknown value, not an undeclared
/// name. A call of a module without resources may be depended on. A module whose file does not
/// parse is that syntax error alone.
#[test]
fn a_module_that_cannot_be_loaded_is_one_diagnostic() {
    let stack = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(stack.path().join("empty")).unwrap();
    std::fs::write(
        stack.path().join("empty/main.tf"),
        "variable \"x\" {\n  default = 1\n}\n",
    )
    .unwrap();
    std::fs::write(
        stack.path().join("main.tf"),
        r#"module "eks" {
  source = "./missing"
}

module "reg" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 20.0"
}

module "empty" {
  source = "./empty"
}

resource "terraform_data" "x" {
  input      = module.eks.cluster_name
  depends_on = [module.eks, module.reg, module.empty]
}

output "endpoint" {
  value = "${module.reg.cluster_endpoint}:${module.eks.port}"
}
"#,
    )
    .unwrap();
    let (code, _, err) = run(stack.path(), &["validate", "-no-color"]);
    assert_eq!(code, 1);
    assert!(err.contains("2 errors found"), "{err}");
    assert!(err.contains("Module source not found"), "{err}");
    assert!(err.contains("Module not installed"), "{err}");
    std::fs::write(
        stack.path().join("main.tf"),
        "module \"empty\" {\n  source = \"./empty\"\n}\n\nresource \"terraform_data\" \"x\" {\n  depends_on = [module.empty]\n}\n",
    )
    .unwrap();
    let (code, out, err) = run(stack.path(), &["validate"]);
    assert_eq!(code, 0, "{out}{err}");
    // A module whose file does not parse is its syntax error alone: its outputs, declared
    // before or after the error, are unknown to the callers.
    std::fs::write(
        stack.path().join("empty/main.tf"),
        "output \"x\" {\n  value = 1\n\noutput \"y\" {\n  value = 2\n}\n",
    )
    .unwrap();
    std::fs::write(
        stack.path().join("main.tf"),
        "module \"empty\" {\n  source = \"./empty\"\n}\n\nresource \"terraform_data\" \"x\" {\n  input      = module.empty.x\n  depends_on = [module.empty]\n}\n\noutput \"y\" {\n  value = module.empty.y\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(stack.path(), &["validate", "-no-color"]);
    assert_eq!(code, 1);
    assert!(err.contains("1 error found"), "{err}");
    assert!(err.contains("Unclosed configuration block"), "{err}");
}
