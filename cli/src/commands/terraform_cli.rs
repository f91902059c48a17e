//! The command line as a Terraform user types it, read into gpustack's own before clap parses
//! it: `-chdir=DIR` before the command, `TF_CLI_ARGS` and `TF_CLI_ARGS_<command>` inserted
//! after the command words exactly where Terraform inserts them, and Go's single-dash long
//! flags (`-out=tfplan`, `-auto-approve`) spelt with two dashes. gpustack's own `--` spellings
//! pass through unchanged.

use std::ffi::OsString;
use std::path::PathBuf;

/// The command line ready for clap, and the directory to run in.
#[derive(Debug, PartialEq)]
pub struct Invocation {
    pub args: Vec<OsString>,
    /// `-chdir=DIR`: everything the command reads and writes is relative to it.
    pub chdir: Option<PathBuf>,
}

/// Why a command line could not be read.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum InvocationError {
    #[error("{variable} is not a valid command line: {reason}")]
    EnvironmentArgs { variable: String, reason: String },
    #[error("-chdir needs a directory: -chdir=DIR")]
    Chdir,
}

/// Commands with commands of their own, whose second word is part of the command name
/// (`TF_CLI_ARGS_workspace_select`).
const NESTED: &[&str] = &["state", "workspace", "providers"];

/// Reads `argv` (the program name first) with `env` for the environment.
pub fn read(
    argv: Vec<OsString>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Invocation, InvocationError> {
    let mut args = argv.into_iter();
    let program = args.next().unwrap_or_else(|| OsString::from("gpustack"));
    let mut rest: Vec<OsString> = args.collect();
    // Global options, before the command.
    let mut chdir = None;
    let mut globals = Vec::new();
    while let Some(first) = rest.first().and_then(|a| a.to_str()).map(str::to_owned) {
        if let Some(dir) = first
            .strip_prefix("-chdir=")
            .or_else(|| first.strip_prefix("--chdir="))
        {
            if dir.is_empty() {
                return Err(InvocationError::Chdir);
            }
            chdir = Some(PathBuf::from(dir));
            rest.remove(0);
        } else if first == "-chdir" || first == "--chdir" {
            rest.remove(0);
            if rest.is_empty() {
                return Err(InvocationError::Chdir);
            }
            chdir = Some(PathBuf::from(rest.remove(0)));
        } else if first.starts_with('-') {
            globals.push(rest.remove(0));
        } else {
            break;
        }
    }
    // `terraform -version` (or `-v`, `--version`) alone is `terraform version`.
    let mut words = Vec::new();
    if rest.is_empty()
        && let Some(at) = globals
            .iter()
            .position(|g| ["-version", "--version", "-v"].contains(&g.to_str().unwrap_or_default()))
    {
        globals.remove(at);
        words.push(OsString::from("version"));
    }
    // The command's words: `plan`, `workspace select`.
    if let Some(command) = rest.first().and_then(|a| a.to_str()).map(str::to_owned) {
        words.push(rest.remove(0));
        if NESTED.contains(&command.as_str())
            && let Some(sub) = rest.first().and_then(|a| a.to_str())
            && !sub.starts_with('-')
        {
            words.push(rest.remove(0));
        }
    }
    let name: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    // Terraform inserts the command's own variable after the command, then the general one
    // after the command again: the command's comes first.
    let mut inserted = Vec::new();
    if !name.is_empty() {
        let specific = format!("TF_CLI_ARGS_{}", name.join("_"));
        for variable in [specific.as_str(), "TF_CLI_ARGS"] {
            if let Some(text) = env(variable).filter(|t| !t.trim().is_empty()) {
                let split =
                    shlex::split(&text).ok_or_else(|| InvocationError::EnvironmentArgs {
                        variable: variable.to_owned(),
                        reason: "a quote is not closed".to_owned(),
                    })?;
                inserted.extend(split.into_iter().map(OsString::from));
            }
        }
    }
    let mut out = vec![program];
    out.extend(globals.into_iter().map(double_dash));
    out.extend(words);
    let mut ended = false;
    for arg in inserted.into_iter().chain(rest) {
        if ended {
            out.push(arg);
            continue;
        }
        if arg == "--" {
            ended = true;
            out.push(arg);
            continue;
        }
        out.push(double_dash(arg));
    }
    Ok(Invocation { args: out, chdir })
}

/// `-name` and `-name=value` (Go's flag syntax) as `--name`; a short flag (`-h`), a value
/// (`-1`) and anything spelt with two dashes stay as they are.
fn double_dash(arg: OsString) -> OsString {
    let Some(text) = arg.to_str() else {
        return arg;
    };
    let Some(flag) = text.strip_prefix('-') else {
        return arg;
    };
    if flag.starts_with('-') {
        return arg;
    }
    let name = flag.split('=').next().unwrap_or_default();
    let long = name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if long {
        OsString::from(format!("-{text}"))
    } else {
        arg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_with(args: &[&str], env: &[(&str, &str)]) -> (Vec<String>, Option<PathBuf>) {
        let argv = std::iter::once("gpustack")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let invocation = read(argv, &lookup).unwrap();
        (
            invocation
                .args
                .into_iter()
                .skip(1)
                .map(|a| a.into_string().unwrap())
                .collect(),
            invocation.chdir,
        )
    }

    #[test]
    fn go_flags_are_read_as_gpustacks() {
        let (args, chdir) = read_with(
            &[
                "-chdir=infra",
                "plan",
                "-out=tfplan",
                "-input=false",
                "-var",
                "n=-1",
                "--json",
            ],
            &[],
        );
        assert_eq!(chdir, Some(PathBuf::from("infra")));
        assert_eq!(
            args,
            [
                "plan",
                "--out=tfplan",
                "--input=false",
                "--var",
                "n=-1",
                "--json"
            ]
        );
        let (args, _) = read_with(&["apply", "-auto-approve", "tfplan", "-h"], &[]);
        assert_eq!(args, ["apply", "--auto-approve", "tfplan", "-h"]);
        let (args, _) = read_with(&["console", "--", "-x"], &[]);
        assert_eq!(args, ["console", "--", "-x"]);
        for version in ["-version", "-v", "--version"] {
            assert_eq!(read_with(&[version], &[]).0, ["version"]);
        }
    }

    #[test]
    fn environment_arguments_go_where_terraform_puts_them() {
        let env = [
            ("TF_CLI_ARGS", "-no-color"),
            ("TF_CLI_ARGS_plan", "-refresh=false -var 'name=a b'"),
            ("TF_CLI_ARGS_workspace_select", "-or-create"),
        ];
        let (args, _) = read_with(&["plan", "-out=p"], &env);
        assert_eq!(
            args,
            [
                "plan",
                "--refresh=false",
                "--var",
                "name=a b",
                "--no-color",
                "--out=p"
            ]
        );
        let (args, _) = read_with(&["workspace", "select", "prod"], &env);
        assert_eq!(
            args,
            ["workspace", "select", "--or-create", "--no-color", "prod"]
        );
        let argv = vec![OsString::from("gpustack"), OsString::from("plan")];
        let broken = |name: &str| (name == "TF_CLI_ARGS").then(|| "-var 'x=1".to_owned());
        assert!(matches!(
            read(argv, &broken),
            Err(InvocationError::EnvironmentArgs { .. })
        ));
    }
}
