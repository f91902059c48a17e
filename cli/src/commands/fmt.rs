//! `gpustack fmt`: canonical formatting of the files in HCL's native syntax (`*.hcl`, `*.tf`,
//! `*.tfvars`), in place or as a check; each keeps its name. Files in Terraform's JSON syntax
//! are left as they are, as `terraform fmt` leaves them.

use gpustack_lang::fmt::format_hcl;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `fmt` does with what it finds, as `terraform fmt`'s flags say.
pub struct Options {
    /// Exit 1 when a file needs formatting.
    pub check: bool,
    pub diff: bool,
    /// Descend into directories below the ones named.
    pub recursive: bool,
    /// List the files that need formatting.
    pub list: bool,
    /// Rewrite them.
    pub write: bool,
}

pub fn run(paths: Vec<PathBuf>, options: &Options) -> ExitCode {
    let Options {
        check,
        diff,
        recursive,
        list,
        write,
    } = *options;
    let roots = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths
    };
    let mut files = Vec::new();
    for root in &roots {
        if root.is_dir() {
            collect(root, recursive, &mut files);
        } else if root.is_file() {
            files.push(root.clone());
        } else {
            eprintln!("Error: {} does not exist.", root.display());
            return ExitCode::from(1);
        }
    }
    files.sort();
    let mut failed = false;
    let mut unformatted = 0;
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(err) => {
                eprintln!("Error: cannot read {}: {err}", file.display());
                failed = true;
                continue;
            }
        };
        let formatted = match format_hcl(&text) {
            Ok(formatted) => formatted,
            Err(err) => {
                eprintln!(
                    "Error: {}:{}:{}: {}",
                    file.display(),
                    err.line,
                    err.column,
                    err.message
                );
                failed = true;
                continue;
            }
        };
        if formatted == text {
            continue;
        }
        unformatted += 1;
        if list {
            println!("{}", file.display());
        }
        if diff {
            print!(
                "{}",
                similar::TextDiff::from_lines(&text, &formatted)
                    .unified_diff()
                    .header(&file.display().to_string(), &file.display().to_string())
            );
        }
        if write && let Err(err) = write_atomically(&file, &formatted) {
            eprintln!("Error: cannot write {}: {err}", file.display());
            failed = true;
        }
    }
    // Terraform's codes: 3 when -check finds a file to format, so that CI can tell it from a
    // file that cannot be read or parsed.
    if failed {
        ExitCode::from(1)
    } else if check && unformatted > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// The files of `dir`, and with `recursive` of the directories below it; directories named
/// .gpustack, .git, .terraform, target and node_modules are not stacks.
fn collect(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if recursive && !name.starts_with('.') && name != "target" && name != "node_modules" {
                collect(&path, true, out);
            }
        } else if formatted(&name) {
            out.push(path);
        }
    }
}

/// Whether `fmt` formats a file of this name: stack files in the native syntax and variable
/// files, but not what Terraform writes itself (`.terraform.lock.hcl`) or ignores.
fn formatted(name: &str) -> bool {
    use gpustack_lang::config::{Syntax, stack_file_syntax};
    stack_file_syntax(name) == Some(Syntax::Native)
        || (name.ends_with(".tfvars") && !name.starts_with('.'))
}

/// Temp file in the same directory, then rename: a crash never leaves half a file.
fn write_atomically(path: &Path, content: &str) -> std::io::Result<()> {
    // A formatted file keeps the mode it had.
    let mode = std::fs::metadata(path).map_or(super::files::SHARED, |meta| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            meta.permissions().mode() & 0o7777
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            super::files::SHARED
        }
    });
    super::files::write_replacing(path, content.as_bytes(), mode)
}
