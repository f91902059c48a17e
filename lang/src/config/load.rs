//! Reading a stack directory and its modules into [`Stack`].

use super::*;
use crate::address::is_identifier;
use crate::diag::{Diags, suggest};
use crate::expr::literal::literal_str;
use crate::expr::types::parse_type;
use crate::source::{SourceMap, normalize};
use hcl_edit::expr::{Expression, ObjectKey, Traversal, TraversalOperator};
use hcl_edit::structure::{Attribute, Block, Structure};
use hcl_edit::visit_mut::{VisitMut, visit_body_mut, visit_traversal_mut};
use std::path::Path;

/// The names of stack files, for messages.
pub const STACK_FILES: &str = "*.tf, *.hcl, *.tf.json or *.hcl.json";

/// Deeper module nesting than this is almost certainly a mistake, and bounds the work.
const MAX_MODULE_DEPTH: usize = 32;
/// The largest stack or variables file read: far above any written by hand or generated for
/// 10,000 resources, far below what would exhaust memory.
const MAX_SOURCE_BYTES: u64 = 256 << 20;
/// The most modules a stack loads, every call and instance counted: calls that each call
/// the next module twice would otherwise multiply past any memory within the depth limit.
const MAX_MODULES: usize = 10_000;

/// Reads and parses one file; a syntax error becomes a diagnostic at its location.
/// Where stack files are read from: the disk, or the configuration snapshot inside a saved
/// plan (so that applying a plan never depends on the files on disk having stayed the same).
#[derive(Debug, Clone, Default)]
pub enum Files {
    #[default]
    Disk,
    Snapshot {
        /// The stack directory as it was given at plan time; keys are relative to it.
        root: PathBuf,
        files: std::sync::Arc<std::collections::BTreeMap<String, String>>,
    },
}

impl Files {
    fn key(root: &Path, path: &Path) -> String {
        crate::source::relative_to(path, root)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// Whether files are read from the disk (not from a plan's snapshot, checked when the
    /// plan was made).
    pub fn is_disk(&self) -> bool {
        matches!(self, Files::Disk)
    }

    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self {
            Files::Disk => gpustack_fs::read_bounded(path, MAX_SOURCE_BYTES).map_err(|e| match e {
                gpustack_fs::ReadError::Io(e) => e,
                gpustack_fs::ReadError::NotFound => std::io::ErrorKind::NotFound.into(),
                other => std::io::Error::other(other.to_string()),
            }),
            Files::Snapshot { root, files } => files
                .get(&Self::key(root, path))
                .map(|t| t.clone().into_bytes())
                .ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "not in the plan's configuration snapshot",
                    )
                }),
        }
    }

    fn stack_files(&self, dir: &Path) -> std::io::Result<Listing> {
        match self {
            Files::Disk => stack_files(dir),
            Files::Snapshot { root, files } => {
                let prefix = Self::key(root, dir);
                let prefix = if prefix.is_empty() || prefix == "." {
                    String::new()
                } else {
                    format!("{prefix}/")
                };
                let found: Vec<PathBuf> = files
                    .keys()
                    .filter_map(|k| k.strip_prefix(&prefix))
                    .filter(|rest| !rest.contains('/') && stack_file_syntax(rest).is_some())
                    .map(|rest| dir.join(rest))
                    .collect();
                if found.is_empty() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "not in the plan's configuration snapshot",
                    ));
                }
                Ok(Listing {
                    files: found,
                    ..Listing::default()
                })
            }
        }
    }
}

/// The syntax a stack file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// HCL's native syntax: `*.tf` and `*.hcl`.
    Native,
    /// Terraform's JSON configuration syntax: `*.tf.json` and `*.hcl.json`.
    Json,
}

/// Whether a file of this name is a stack file, and in which syntax. As Terraform does, names
/// of hidden files (`.terraform.lock.hcl` among them), editor backups (`x.tf~`) and autosaves
/// (`#x.tf#`) are not, and neither are Terraform's test and mock files (`*.tftest.hcl`,
/// `*.tfmock.hcl`), which only `terraform test` reads.
pub fn stack_file_syntax(name: &str) -> Option<Syntax> {
    if name.starts_with('.')
        || name.ends_with('~')
        || (name.starts_with('#') && name.ends_with('#'))
    {
        return None;
    }
    let test_file = [".tftest", ".tfmock"]
        .iter()
        .any(|kind| name.contains(&format!("{kind}.")));
    if test_file {
        return None;
    }
    if name.ends_with(".tf.json") || name.ends_with(".hcl.json") {
        Some(Syntax::Json)
    } else if name.ends_with(".tf") || name.ends_with(".hcl") {
        Some(Syntax::Native)
    } else {
        None
    }
}

/// Terraform's override files: `override.tf`, `NAME_override.tf` and their JSON forms.
fn is_override_file(name: &str) -> bool {
    let stem = name
        .strip_suffix(".tf.json")
        .or_else(|| name.strip_suffix(".tf"));
    stem.is_some_and(|stem| stem == "override" || stem.ends_with("_override"))
}

/// A stack directory's files, and what of Terraform's it holds that is not read.
#[derive(Debug, Default)]
struct Listing {
    files: Vec<PathBuf>,
    /// `.terraform.lock.hcl`: the providers `terraform init` chose; gpustack's are built in.
    lock_file: Option<PathBuf>,
    /// `.terraform/`: the providers and modules `terraform init` installed.
    terraform_dir: Option<PathBuf>,
    /// `*.hcl` files beside Terraform's that are another tool's (see [`another_tools_file`]).
    other_tools: Vec<PathBuf>,
}

impl Listing {
    /// The notes that say what of Terraform's is not read here.
    fn report(&self, sources: &SourceMap, diags: &mut Diags) {
        if let Some(lock) = &self.lock_file {
            diags.push(crate::diag::Diag::warning(
                None,
                "Terraform's dependency lock file is ignored",
                format!(
                    "{} pins the providers terraform init installed; gpustack's providers are built in, so it is not read.",
                    sources.display_name(lock)
                ),
            ));
        }
        for file in &self.other_tools {
            diags.push(crate::diag::Diag::warning(
                None,
                "Another tool's file is not read",
                format!(
                    "{} sits beside Terraform's files but is not configuration (a -backend-config file, Terragrunt's, Packer's or a Terraform Stacks file), and Terraform does not read it either.",
                    sources.display_name(file)
                ),
            ));
        }
        if let Some(dir) = &self.terraform_dir {
            diags.push(crate::diag::Diag::warning(
                None,
                "Terraform's working directory is ignored",
                format!(
                    "{}/ holds what terraform init installed (providers, modules, the backend's settings); gpustack reads none of it: gpustack init installs git module sources.",
                    sources.display_name(dir)
                ),
            ));
        }
    }
}

/// Reads and parses one file; a syntax error becomes a diagnostic at its location.
pub fn parse_file(
    sources: &mut SourceMap,
    path: &Path,
    diags: &mut Diags,
) -> Option<(FileId, Body)> {
    parse_file_from(&Files::Disk, sources, path, diags)
}

/// A JSON variables file read into `sources`: each member's name, value and where it was
/// written; a file that is not a JSON object is a diagnostic.
#[allow(clippy::type_complexity)]
pub fn parse_json_variables(
    sources: &mut SourceMap,
    path: &Path,
    diags: &mut Diags,
) -> Option<(
    FileId,
    Vec<(String, gpustack_protocol::Value, std::ops::Range<usize>)>,
)> {
    let text = read_text(&Files::Disk, sources, path, diags)?;
    let parsed = super::json::variables(&text);
    let id = sources.add(path, text);
    match parsed {
        Ok(values) => Some((id, values)),
        Err((at, summary, detail)) => {
            diags.error(Span::new(id, at), summary, detail);
            None
        }
    }
}

fn parse_file_from(
    files: &Files,
    sources: &mut SourceMap,
    path: &Path,
    diags: &mut Diags,
) -> Option<(FileId, Body)> {
    let id = read_source(files, sources, path, diags)?;
    let body = parse_source(sources, id, diags)?;
    Some((id, body))
}

/// Reads one file into `sources`; a file that cannot be read, or is not UTF-8, is a
/// diagnostic.
fn read_source(
    files: &Files,
    sources: &mut SourceMap,
    path: &Path,
    diags: &mut Diags,
) -> Option<FileId> {
    let text = read_text(files, sources, path, diags)?;
    Some(sources.add(path, text))
}

/// Reads one file's text; a file that cannot be read, or is not UTF-8, is a diagnostic (and
/// a file that is not UTF-8 joins `sources`, to be pointed into).
pub(super) fn read_text(
    files: &Files,
    sources: &mut SourceMap,
    path: &Path,
    diags: &mut Diags,
) -> Option<String> {
    let text = match files.read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => {
                let valid = err.utf8_error().valid_up_to();
                let text = String::from_utf8_lossy(err.as_bytes()).into_owned();
                let id = sources.add(path, text);
                diags.error(
                    Span::new(id, valid..valid),
                    "Invalid UTF-8",
                    "Stack files must be UTF-8 encoded text.",
                );
                return None;
            }
        },
        Err(err) => {
            diags.error(
                None,
                "Cannot read file",
                format!("{}: {err}", path.display()),
            );
            return None;
        }
    };
    Some(text)
}

/// Parses a whole file; a syntax error becomes a diagnostic at its location.
pub fn parse_source(sources: &SourceMap, id: FileId, diags: &mut Diags) -> Option<Body> {
    let file = sources.file(id);
    match hcl_edit::parser::parse_body(&file.text) {
        Ok(mut body) => {
            crate::expr::whitespace::mark_flush_heredocs(&mut body, &file.text);
            Some(body)
        }
        Err(err) => {
            let loc = err.location();
            let offset = file.offset(loc.line(), loc.column());
            // At the end of the file, the mistake is the block that was never closed: point
            // at where it opened, as Terraform does.
            let at_end = file
                .text
                .get(offset..)
                .is_none_or(|rest| rest.trim().is_empty());
            if at_end && let Some(open) = unclosed_brace(&file.text) {
                diags.error(
                    Span::new(id, open..open + 1),
                    "Unclosed configuration block",
                    "There is no closing brace for this block before the end of the file. This may be caused by incorrect brace nesting elsewhere in this file.",
                );
                return None;
            }
            let end = file
                .text
                .get(offset..)
                .and_then(|rest| rest.chars().next())
                .map_or(offset, |c| offset + c.len_utf8());
            diags.error(
                Span::new(id, offset..end),
                "Syntax error",
                capitalize(err.message()),
            );
            None
        }
    }
}

/// The offset of the innermost `{` still open at the end of an HCL text.
fn unclosed_brace(text: &str) -> Option<usize> {
    scan_braces(text, |_| {})
        .iter()
        .rev()
        .find(|(_, interpolation)| !interpolation)
        .map(|(at, _)| *at)
}

/// Follows the braces of an HCL text, skipping strings (whose `${ }` and `%{ }` nest),
/// comments and heredocs: calls `top_level_close` with the offset of each `}` that closes a
/// top-level block, and returns the braces still open at the end (offset, whether it opened
/// a template interpolation inside a string).
fn scan_braces(text: &str, mut top_level_close: impl FnMut(usize)) -> Vec<(usize, bool)> {
    let bytes = text.as_bytes();
    let mut braces: Vec<(usize, bool)> = Vec::new();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        if in_string {
            match (b, next) {
                (b'\\', _) => i += 1,
                (b'"', _) => in_string = false,
                (b'$' | b'%', Some(b'{')) => {
                    braces.push((i + 1, true));
                    in_string = false;
                    i += 1;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, next) {
            (b'"', _) => in_string = true,
            (b'#', _) | (b'/', Some(b'/')) => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            (b'/', Some(b'*')) => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 1);
            }
            (b'<', Some(b'<')) => {
                let header_end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                let marker = text[i + 2..header_end].trim_start_matches('-').trim();
                if !marker.is_empty() && marker.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    let mut end = bytes.len();
                    let mut line_start = header_end + 1;
                    while line_start < bytes.len() {
                        let line_end = text[line_start..]
                            .find('\n')
                            .map_or(bytes.len(), |n| line_start + n);
                        if text[line_start..line_end].trim() == marker {
                            end = line_end;
                            break;
                        }
                        line_start = line_end + 1;
                    }
                    i = end;
                }
            }
            (b'{', _) => braces.push((i, false)),
            (b'}', _) => match braces.pop() {
                Some((_, true)) => in_string = true,
                Some((_, false)) if braces.is_empty() => top_level_close(i),
                _ => {}
            },
            _ => {}
        }
        i += 1;
    }
    braces
}

/// A large file is parsed in runs of whole top-level blocks of at least this many bytes, and
/// each run decoded before the next is parsed: the syntax tree, about 40 times the size of
/// its text, is then built, compacted and dropped while it is in the processor's cache,
/// instead of growing to tens of megabytes for the whole file first.
const PARSE_RUN_BYTES: usize = 32 * 1024;

/// Where a file's runs of at least `min_len` bytes end: each just after the line of a `}` that
/// closes a top-level block, when nothing but blanks follows it on that line; the last at the
/// end of the text.
fn block_runs(text: &str, min_len: usize) -> Vec<usize> {
    // A file of one run needs no scan.
    if text.len() <= min_len {
        return vec![text.len()];
    }
    let mut ends = Vec::new();
    let mut start = 0;
    scan_braces(text, |close| {
        let line_end = text[close..]
            .find('\n')
            .map_or(text.len(), |n| close + n + 1);
        if line_end - start >= min_len && text[close + 1..line_end].trim().is_empty() {
            ends.push(line_end);
            start = line_end;
        }
    });
    if start < text.len() || ends.is_empty() {
        ends.push(text.len());
    }
    ends
}

fn capitalize(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>() + ".",
        None => "The file could not be parsed.".into(),
    }
}

/// Loads the stack in `dir` and every module it calls, reporting all structural problems.
pub fn load_stack(dir: &Path, sources: &mut SourceMap, diags: &mut Diags) -> Stack {
    load_stack_from(&Files::Disk, dir, sources, diags)
}

pub fn load_stack_from(
    files: &Files,
    dir: &Path,
    sources: &mut SourceMap,
    diags: &mut Diags,
) -> Stack {
    load_stack_expanded(files, dir, sources, diags, &super::ModuleExpansions::new())
}

/// Loads a stack with its repeated module calls expanded as `expansions` says; a repeated
/// call it does not name is loaded once, as a template whose count/for_each is evaluated next.
pub fn load_stack_expanded(
    files: &Files,
    dir: &Path,
    sources: &mut SourceMap,
    diags: &mut Diags,
    expansions: &super::ModuleExpansions,
) -> Stack {
    load_tree(
        files,
        dir,
        sources,
        diags,
        expansions,
        None,
        &super::NoRootValues,
    )
}

// Long by design: loading a module tree is one sequence (list the files, read each, decode,
// then walk the module calls depth first with the cycle and count limits), and each step
// reports into the same diagnostics with the same source map.
pub(super) fn load_tree(
    files: &Files,
    dir: &Path,
    sources: &mut SourceMap,
    diags: &mut Diags,
    expansions: &super::ModuleExpansions,
    providers: Option<&gpustack_protocol::Registry>,
    root_values: &dyn super::RootValues,
) -> Stack {
    let mut stack = Stack::default();
    let dir = normalize(dir);
    let root = match files.stack_files(&dir) {
        Ok(listing) if !listing.files.is_empty() => {
            listing.report(sources, diags);
            listing.files
        }
        Ok(listing) => {
            listing.report(sources, diags);
            diags.error(
                None,
                "No stack files",
                format!("{} contains no stack files ({STACK_FILES}).", dir.display()),
            );
            return stack;
        }
        Err(err) => {
            diags.error(
                None,
                "Cannot read stack directory",
                format!("{}: {err}", dir.display()),
            );
            return stack;
        }
    };
    let module = load_module(
        files,
        providers,
        Vec::new(),
        dir.clone(),
        None,
        &root,
        sources,
        diags,
    );
    // The values of each module's const variables, in module order: what its calls'
    // sources and versions may read.
    let mut consts = vec![root_consts(&module, root_values, diags)];
    stack.modules.push(module);
    // The lock of git sources, read once the first one is met; it joins the snapshot (as a
    // source file), so that applying a saved plan finds the same commits.
    let mut lock: Option<Result<super::remote::ModuleLock, super::remote::ModuleInstallError>> =
        None;
    // Breadth-first over calls; indices stay stable because modules are only appended.
    let mut next = 0;
    while next < stack.modules.len() {
        resolve_consts(&mut stack.modules[next], &consts[next], diags);
        let calls: Vec<(String, String, Option<String>, Span)> = stack.modules[next]
            .calls
            .values()
            .map(|c| {
                (
                    c.name.clone(),
                    c.source.clone(),
                    c.version.clone(),
                    c.source_span,
                )
            })
            .collect();
        for (name, source, version, source_span) in calls {
            // The call's loader refused a source that does not parse, leaving it empty.
            let git = super::remote::GitSource::parse(&source).ok().flatten();
            let registry = git
                .is_none()
                .then(|| super::remote::RegistrySource::parse(&source))
                .flatten();
            if version.is_some() && registry.is_none() && !source.is_empty() {
                diags.error(
                    source_span,
                    "Invalid module version",
                    format!("\"{source}\" is not a registry module: only a registry module's call takes a version (a git source names its ref with ?ref=)."),
                );
                continue;
            }
            let child_dir = match &git {
                _ if source.is_empty() => continue,
                None if registry.is_some() => {
                    let lock = lock.get_or_insert_with(|| read_lock(files, &dir, sources));
                    let found = lock.as_ref().map_err(Clone::clone).and_then(|lock| {
                        super::remote::installed_registry_dir(
                            &dir,
                            &source,
                            registry.as_ref().expect("a registry source"),
                            version.as_deref(),
                            lock,
                        )
                    });
                    match found {
                        Ok(child) => normalize(&child),
                        Err(why) => {
                            diags.error(source_span, "Module not installed", why.to_string());
                            continue;
                        }
                    }
                }
                None => {
                    let child = normalize(&stack.modules[next].dir.join(&source));
                    // A local source in a fetched module stays in its repository, as in
                    // Terraform's module packages.
                    if let Some(checkout) =
                        super::remote::checkout_of(&dir, &stack.modules[next].dir)
                        && !child.starts_with(&checkout)
                    {
                        diags.error(
                            source_span,
                            "Local module path escapes its repository",
                            format!(
                                "\"{source}\" leads to {}, outside the checkout of the git module that calls it ({}): a fetched module may call only modules in its own repository.",
                                child.display(),
                                checkout.display()
                            ),
                        );
                        continue;
                    }
                    child
                }
                Some(git) => {
                    let lock = lock.get_or_insert_with(|| read_lock(files, &dir, sources));
                    match lock
                        .as_ref()
                        .map_err(Clone::clone)
                        .and_then(|lock| super::remote::installed_dir(&dir, &source, git, lock))
                    {
                        Ok(child) => normalize(&child),
                        Err(why) => {
                            diags.error(source_span, "Module not installed", why.to_string());
                            continue;
                        }
                    }
                }
            };
            if files.is_disk()
                && let Some(checkout) = super::remote::checkout_of(&dir, &child_dir)
                && let Err(why) = super::remote::stays_inside(&checkout, &child_dir)
            {
                diags.error(source_span, "Module outside its checkout", why.to_string());
                continue;
            }
            let parent = &stack.modules[next];
            if ancestors_include(&stack, next, &child_dir) {
                diags.error(
                    source_span,
                    "Recursive module call",
                    format!(
                        "Module \"{name}\" calls {} which is already on its call path.",
                        child_dir.display()
                    ),
                );
                continue;
            }
            if parent.path.len() >= MAX_MODULE_DEPTH {
                diags.error(
                    source_span,
                    "Modules nested too deeply",
                    format!(
                        "Module \"{name}\" would be nested {} levels deep; a stack nests modules at most {MAX_MODULE_DEPTH} levels deep.",
                        parent.path.len() + 1
                    ),
                );
                continue;
            }
            let child_files = match files.stack_files(&child_dir) {
                Ok(found) if !found.files.is_empty() => {
                    found.report(sources, diags);
                    found.files
                }
                _ if git.is_some() || registry.is_some() => {
                    diags.error(
                        source_span,
                        "Module not installed",
                        format!(
                            "\"{source}\" is not checked out here ({} has no stack files): run gpustack init.",
                            child_dir.display()
                        ),
                    );
                    continue;
                }
                Ok(_) => {
                    diags.error(
                        source_span,
                        "Module source not found",
                        format!(
                            "{} contains no stack files ({STACK_FILES}).",
                            child_dir.display()
                        ),
                    );
                    continue;
                }
                Err(_) => {
                    diags.error(
                        source_span,
                        "Module source not found",
                        format!(
                            "{} does not exist or is not a directory.",
                            child_dir.display()
                        ),
                    );
                    continue;
                }
            };
            let parent_path = parent.path.clone();
            let expansion = stack.modules[next]
                .calls
                .get(&name)
                .filter(|c| c.is_repeated())
                .and_then(|_| expansions.get(&(parent_path.clone(), name.clone())));
            let Some(instances) = expansion else {
                if stack.modules.len() >= MAX_MODULES {
                    diags.error(
                        source_span,
                        "Too many modules",
                        format!(
                            "A stack may hold at most {MAX_MODULES} modules, each call of a module counted once, instances included; loading stopped here."
                        ),
                    );
                    return stack;
                }
                let mut path = parent_path;
                path.push(name.clone());
                let child = load_module(
                    files,
                    providers,
                    path,
                    child_dir,
                    Some(next),
                    &child_files,
                    sources,
                    diags,
                );
                let index = stack.modules.len();
                let child_consts =
                    child_consts(&stack.modules[next], &name, &consts[next], &child, diags);
                consts.push(child_consts);
                stack.modules.push(child);
                stack.modules[next].children.insert(name, index);
                continue;
            };
            stack.modules[next]
                .instances
                .entry(name.clone())
                .or_default();
            if stack.modules.len() + instances.len() > MAX_MODULES {
                diags.error(
                    source_span,
                    "Too many modules",
                    format!(
                        "A stack may hold at most {MAX_MODULES} modules, instances of repeated module calls included; module \"{name}\" would make it {}; loading stopped here.",
                        stack.modules.len() + instances.len()
                    ),
                );
                return stack;
            }
            for instance in instances {
                let mut path = parent_path.clone();
                path.push(format!("{name}{}", instance.key));
                let mut child = load_module(
                    files,
                    providers,
                    path,
                    child_dir.clone(),
                    Some(next),
                    &child_files,
                    sources,
                    diags,
                );
                child.instance = Some(instance.clone());
                let index = stack.modules.len();
                let child_consts =
                    child_consts(&stack.modules[next], &name, &consts[next], &child, diags);
                consts.push(child_consts);
                stack.modules.push(child);
                stack.modules[next]
                    .instances
                    .entry(name.clone())
                    .or_default()
                    .push(index);
            }
        }
        next += 1;
    }
    stack
}

/// The values of the root module's const variables: given, else their defaults.
fn root_consts(
    module: &Module,
    given: &dyn super::RootValues,
    diags: &mut Diags,
) -> IndexMap<String, gpustack_protocol::Value> {
    let mut out = IndexMap::new();
    for v in module.variables.values().filter(|v| v.constant) {
        let value = match given.value(&v.name, &v.ty) {
            Some(value) => Some(value),
            None => v
                .default
                .as_ref()
                .and_then(|d| const_value(&d.expr, d.file, &IndexMap::new(), diags)),
        };
        if let Some(value) = value {
            out.insert(v.name.clone(), value);
        }
    }
    out
}

/// The values of a child module's const variables: what the call gives each (evaluated with
/// the caller's const variables), else their defaults.
fn child_consts(
    parent: &Module,
    call: &str,
    parent_consts: &IndexMap<String, gpustack_protocol::Value>,
    child: &Module,
    diags: &mut Diags,
) -> IndexMap<String, gpustack_protocol::Value> {
    let mut out = IndexMap::new();
    let call = parent.calls.get(call);
    for v in child.variables.values().filter(|v| v.constant) {
        let value = match call.and_then(|c| c.args.get(&v.name)) {
            Some((expr, _)) => const_value(&expr.expr, expr.file, parent_consts, diags),
            None => v
                .default
                .as_ref()
                .and_then(|d| const_value(&d.expr, d.file, &IndexMap::new(), diags)),
        };
        if let Some(value) = value {
            out.insert(v.name.clone(), value);
        }
    }
    out
}

/// A const expression's value: literals and const variables only.
fn const_value(
    expr: &Expression,
    file: FileId,
    consts: &IndexMap<String, gpustack_protocol::Value>,
    diags: &mut Diags,
) -> Option<gpustack_protocol::Value> {
    match crate::expr::eval::Evaluator::new(&ConstScope(consts)).eval(expr) {
        Ok(value) if value.is_wholly_known() => Some(value),
        Ok(_) => None,
        Err(e) => {
            diags.push(crate::diag::Diag::error(
                e.range.map(|r| Span::new(file, r)),
                e.summary,
                e.detail,
            ));
            None
        }
    }
}

/// What a const expression may read: the const variables of its module.
struct ConstScope<'a>(&'a IndexMap<String, gpustack_protocol::Value>);

impl crate::expr::eval::Scope for ConstScope<'_> {
    fn lookup(
        &self,
        names: &[&str],
        range: Option<std::ops::Range<usize>>,
    ) -> Result<(std::borrow::Cow<'_, gpustack_protocol::Value>, usize), crate::expr::eval::EvalError>
    {
        match names {
            ["var", name, ..] if self.0.contains_key(*name) => {
                Ok((std::borrow::Cow::Borrowed(&self.0[*name]), 2))
            }
            _ => Err(crate::expr::eval::EvalError::new(
                range,
                "Not a const value",
                format!(
                    "\"{}\" is read while the stack is loaded (a module's source or version, a const variable's value), where only literals and variables declared const = true that have a value are known.",
                    names.join(".")
                ),
            )),
        }
    }
}

/// A module's calls whose source or version read const variables, resolved with their values.
fn resolve_consts(
    module: &mut Module,
    consts: &IndexMap<String, gpustack_protocol::Value>,
    diags: &mut Diags,
) {
    for call in module.calls.values_mut() {
        if let Some(expr) = call.source_expr.take() {
            let value = const_value(&expr.expr, expr.file, consts, diags);
            match value.as_ref().and_then(gpustack_protocol::Value::as_str) {
                Some(source) => {
                    if let Some(source) = check_module_source(diags, call.source_span, source) {
                        call.source = source;
                    }
                }
                None if value.is_some() => diags.error(
                    call.source_span,
                    "Invalid module source",
                    "A module's source is a string.",
                ),
                None => {}
            }
        }
        if let Some(expr) = call.version_expr.take() {
            let span = expr.span();
            match const_value(&expr.expr, expr.file, consts, diags) {
                Some(gpustack_protocol::Value::String(version)) => call.version = Some(version),
                Some(_) => diags.error(
                    span,
                    "Invalid module version",
                    "A module's version is a string.",
                ),
                None => {}
            }
        }
    }
}

/// A string written with no interpolation (a quoted string, a heredoc, a template of literal
/// parts only): what Terraform accepts wherever it wants a static string.
pub(super) fn static_template(expression: &Expression) -> Option<String> {
    crate::expr::literal::literal_str(expression)
}

/// A module source gpustack can load: a local path, a git source or a registry address. The
/// source as it stays, or `None` with why not reported.
fn check_module_source(diags: &mut Diags, span: Span, source: &str) -> Option<String> {
    let git = super::remote::GitSource::parse(source);
    if let Err(why) = &git {
        diags.error(
            span,
            "Unsafe module source",
            format!("\"{source}\" is refused: {why}."),
        );
        return None;
    }
    if source.starts_with("./")
        || source.starts_with("../")
        || matches!(git, Ok(Some(_)))
        || super::remote::RegistrySource::parse(source).is_some()
    {
        return Some(source.to_owned());
    }
    diags.error(span, "Unsupported module source", format!("\"{source}\" is neither a local path (./ or ../), a git source (git::URL//DIR?ref=REF, github.com/OWNER/REPO//DIR?ref=REF) nor a registry module (NAMESPACE/NAME/PROVIDER or HOST/NAMESPACE/NAME/PROVIDER)."));
    None
}

fn ancestors_include(stack: &Stack, mut index: usize, dir: &Path) -> bool {
    loop {
        if stack.modules[index].dir == dir {
            return true;
        }
        match stack.modules[index].parent {
            Some(parent) => index = parent,
            None => return false,
        }
    }
}

/// The lock file of git sources, added to the sources so that the plan's snapshot holds it.
fn read_lock(
    files: &Files,
    dir: &Path,
    sources: &mut SourceMap,
) -> Result<super::remote::ModuleLock, super::remote::ModuleInstallError> {
    let path = dir.join(super::remote::LOCK_FILE);
    match files.read(&path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let lock = super::remote::ModuleLock::parse(&text, &path);
            sources.add(&path, text);
            lock
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(super::remote::ModuleLock::default())
        }
        Err(e) => Err(super::remote::ModuleInstallError::ReadLock {
            path,
            message: e.to_string(),
        }),
    }
}

fn stack_files(dir: &Path) -> std::io::Result<Listing> {
    let mut listing = Listing::default();
    for entry in std::fs::read_dir(dir)?.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // The listing knows each entry's type; only a link is followed to learn it.
        let kind = entry.file_type().ok();
        let followed = || path.metadata().ok().map(|m| m.file_type());
        let kind = match kind {
            Some(kind) if kind.is_symlink() => followed(),
            Some(kind) => Some(kind),
            None => followed(),
        };
        let is_file = kind.is_some_and(|k| k.is_file());
        match &*name {
            ".terraform.lock.hcl" if is_file => listing.lock_file = Some(path),
            ".terraform" if kind.is_some_and(|k| k.is_dir()) => listing.terraform_dir = Some(path),
            _ if stack_file_syntax(&name).is_some() && is_file => listing.files.push(path),
            _ => {}
        }
    }
    let terraform = listing.files.iter().any(|path| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".tf") || n.ends_with(".tf.json"))
    });
    if terraform {
        let (other_tools, files) = std::mem::take(&mut listing.files)
            .into_iter()
            .partition(|path| another_tools_file(path));
        listing.files = files;
        listing.other_tools = other_tools;
    }
    listing.files.sort();
    listing.other_tools.sort();
    Ok(listing)
}

/// Whether a `*.hcl` file beside Terraform's files is another tool's, which neither Terraform
/// nor gpustack reads as configuration there: Terragrunt's, Packer's, a Terraform Stacks file,
/// or a partial backend configuration kept for `init -backend-config` (top-level arguments,
/// which no configuration file has: its top level is blocks). gpustack's own `*.hcl` files
/// (a `gpustack {}` block beside a Terraform stack) are read.
fn another_tools_file(path: &Path) -> bool {
    const OTHER_TOOLS: [&str; 5] = [
        "terragrunt.hcl",
        ".pkr.hcl",
        ".tfstack.hcl",
        ".tfdeploy.hcl",
        ".tfcomponent.hcl",
    ];
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if !name.ends_with(".hcl") {
        return false;
    }
    if OTHER_TOOLS.iter().any(|suffix| name.ends_with(suffix)) {
        return true;
    }
    let Ok(text) = gpustack_fs::read_text_bounded(path, MAX_SOURCE_BYTES) else {
        return false;
    };
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("//"))
        .is_some_and(|line| {
            let name_end = line
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(line.len());
            let rest = line[name_end..].trim_start();
            name_end > 0 && rest.starts_with('=') && !rest.starts_with("==")
        })
}

#[allow(
    clippy::too_many_arguments,
    reason = "the loader's context, passed down"
)]
fn load_module(
    from: &Files,
    providers: Option<&gpustack_protocol::Registry>,
    path: Vec<String>,
    dir: PathBuf,
    parent: Option<usize>,
    files: &[PathBuf],
    sources: &mut SourceMap,
    diags: &mut Diags,
) -> Module {
    let mut module = Module {
        path,
        dir,
        parent,
        children: Default::default(),
        instances: Default::default(),
        instance: None,
        variables: Default::default(),
        locals: Default::default(),
        outputs: Default::default(),
        providers: Default::default(),
        resources: Default::default(),
        data: Default::default(),
        calls: Default::default(),
        settings: None,
        terraform: None,
        imports: Vec::new(),
        moves: Vec::new(),
        removals: Vec::new(),
        checks: Vec::new(),
        incomplete: false,
    };
    let errors_before = diags.error_count();
    for file in files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if is_override_file(&name) {
            // Terraform merges an override file into the blocks it overrides; read as one more
            // file, its blocks would be duplicates or, worse, extra objects.
            if let Some(id) = read_source(from, sources, file, diags) {
                let text = &sources.file(id).text;
                let first = text.len() - text.trim_start().len();
                let end = text[first..].find('\n').map_or(text.len(), |n| first + n);
                diags.error(
                    Span::new(id, first..end),
                    "Override files are not supported",
                    format!(
                        "Terraform merges {name} into the blocks it overrides; gpustack does not. Make the changes in the blocks themselves and remove this file."
                    ),
                );
            }
            continue;
        }
        if stack_file_syntax(&name) == Some(Syntax::Json) {
            load_json_file(from, &mut module, sources, file, providers, diags);
        } else if let Some(id) = read_source(from, sources, file, diags) {
            load_file(&mut module, sources, id, diags);
        }
    }
    module.incomplete = diags.error_count() > errors_before;
    one_of_each(&module, diags);
    module
}

/// A stack's state and its encryption are configured once: in a `gpustack` block or a
/// `terraform` block, never both.
fn one_of_each(module: &Module, diags: &mut Diags) {
    let (Some(settings), Some(terraform)) = (&module.settings, &module.terraform) else {
        return;
    };
    if let (Some(_), Some(backend)) = (&settings.backend, &terraform.backend) {
        diags.error(
            backend.kind_span,
            "Two backends",
            "This stack configures its backend in a gpustack block already: keep one of the two backend blocks.",
        );
    }
    if let (Some(_), Some(encryption)) = (&settings.encryption, &terraform.encryption) {
        diags.error(
            encryption.span,
            "Two encryption blocks",
            "This stack configures its encryption in a gpustack block already: keep one of the two encryption blocks.",
        );
    }
}

/// Decodes one file into `module`, a run of blocks at a time (`block_runs`). If a run does
/// not parse, what the file's runs added is taken back and the whole file is parsed, so that
/// its syntax error is reported as for any file, and nothing else from it.
pub(super) fn load_file(module: &mut Module, sources: &SourceMap, id: FileId, diags: &mut Diags) {
    let text = &sources.file(id).text;
    let runs = block_runs(text, PARSE_RUN_BYTES);
    if runs.len() > 1 {
        let mark = ModuleMark::of(module);
        let reported = diags.0.len();
        let mut start = 0;
        let mut parsed = true;
        for end in runs {
            let (Some(file), Ok(mut body)) = (
                id.parsed_from(start),
                hcl_edit::parser::parse_body(&text[start..end]),
            ) else {
                parsed = false;
                break;
            };
            crate::expr::whitespace::mark_flush_heredocs(&mut body, &text[start..end]);
            Decoder { file, diags }.top_level(module, body);
            start = end;
        }
        if parsed {
            return;
        }
        mark.restore(module);
        diags.0.truncate(reported);
    }
    if let Some(body) = parse_source(sources, id, diags) {
        Decoder { file: id, diags }.top_level(module, body);
    }
}

/// How much of a module's declarations there was at one point: decoding only appends, so
/// truncating back to it takes back what was decoded since.
struct ModuleMark {
    variables: usize,
    locals: usize,
    outputs: usize,
    providers: usize,
    resources: usize,
    data: usize,
    calls: usize,
    settings: bool,
    terraform: bool,
    imports: usize,
    moves: usize,
    removals: usize,
    checks: usize,
}

impl ModuleMark {
    fn of(module: &Module) -> Self {
        // Every field named, so that a declaration kind added to `Module` must be added here.
        let Module {
            path: _,
            dir: _,
            parent: _,
            children: _,
            instances: _,
            instance: _,
            variables,
            locals,
            outputs,
            providers,
            resources,
            data,
            calls,
            settings,
            terraform,
            imports,
            moves,
            removals,
            checks,
            incomplete: _,
        } = module;
        Self {
            variables: variables.len(),
            locals: locals.len(),
            outputs: outputs.len(),
            providers: providers.len(),
            resources: resources.len(),
            data: data.len(),
            calls: calls.len(),
            settings: settings.is_some(),
            terraform: terraform.is_some(),
            imports: imports.len(),
            moves: moves.len(),
            removals: removals.len(),
            checks: checks.len(),
        }
    }

    fn restore(self, module: &mut Module) {
        module.variables.truncate(self.variables);
        module.locals.truncate(self.locals);
        module.outputs.truncate(self.outputs);
        module.providers.truncate(self.providers);
        module.resources.truncate(self.resources);
        module.data.truncate(self.data);
        module.calls.truncate(self.calls);
        if !self.settings {
            module.settings = None;
        }
        if !self.terraform {
            module.terraform = None;
        }
        module.imports.truncate(self.imports);
        module.moves.truncate(self.moves);
        module.removals.truncate(self.removals);
        module.checks.truncate(self.checks);
    }
}

const TOP_LEVEL_BLOCKS: &[&str] = &[
    "variable",
    "locals",
    "output",
    "provider",
    "resource",
    "data",
    "module",
    "terraform",
    "gpustack",
    "import",
    "moved",
    "removed",
    "check",
];

pub(super) struct Decoder<'a> {
    pub(super) file: FileId,
    pub(super) diags: &'a mut Diags,
}

impl Decoder<'_> {
    pub(super) fn span(&self, range: Option<std::ops::Range<usize>>) -> Span {
        span_of(self.file, range)
    }

    fn expr(&self, expression: &Expression) -> Expr {
        Expr {
            expr: expression.clone(),
            file: self.file,
        }
    }

    pub(super) fn header_span(&self, block: &Block) -> Span {
        let start = block.ident.span().map_or(0, |r| r.start);
        let end = block
            .labels
            .last()
            .and_then(|l| l.span())
            .or_else(|| block.ident.span())
            .map_or(start, |r| r.end);
        Span::new(self.file, start..end)
    }

    fn top_level(&mut self, module: &mut Module, body: Body) {
        let resources = body.get_blocks("resource").count();
        module.resources.reserve(resources);
        for structure in body {
            match structure {
                Structure::Attribute(attr) => self.diags.error(
                    self.span(attr.key.span()),
                    "Unexpected argument",
                    format!("An argument \"{}\" is not expected at the top level; declare a variable or a local value instead.", attr.key.as_str()),
                ),
                Structure::Block(block) => self.block(module, block),
            }
        }
    }

    fn block(&mut self, module: &mut Module, block: Block) {
        let kind = block.ident.as_str().to_owned();
        match kind.as_str() {
            "variable" => self.variable(module, &block),
            "locals" => self.locals(module, &block),
            "output" => self.output(module, &block),
            "provider" => self.provider(module, block),
            "resource" => self.resource(module, block, ResourceMode::Managed),
            "data" => self.resource(module, block, ResourceMode::Data),
            "module" => self.module_call(module, &block),
            "gpustack" => self.settings(module, &block),
            "import" => self.import(module, &block),
            "moved" => self.moved(module, &block),
            "removed" => self.removed(module, &block),
            "check" => self.check(module, &block),
            "terraform" => self.terraform(module, &block),
            // Terraform 1.14's actions run provider-defined operations; no provider gpustack
            // serves defines one.
            "action" => self.diags.error(
                self.span(block.ident.span()),
                "Actions are not supported",
                "action blocks (Terraform 1.14) invoke operations a provider defines; none of the providers gpustack serves defines an action.",
            ),
            "list" => self.diags.error(
                self.span(block.ident.span()),
                "List blocks are not supported",
                "list blocks belong in *.tfquery.hcl files, for terraform query (Terraform 1.14), which gpustack does not have.",
            ),
            // Terraform 1.10's ephemeral resources (random_password, tls_private_key, ...):
            // opened for one run and never recorded; not served yet.
            "ephemeral" => self.diags.error(
                self.span(block.ident.span()),
                "Ephemeral resources are not served yet",
                "ephemeral blocks (Terraform 1.10) open a value for one run without recording it; gpustack does not serve them yet. Declare it as a resource: a secret it holds stays a digest in plans and the state, never its value.",
            ),
            other => self.diags.error(
                self.span(block.ident.span()),
                "Unsupported block type",
                format!(
                    "Blocks of type \"{other}\" are not expected here.{}",
                    suggest(other, TOP_LEVEL_BLOCKS.iter().copied())
                ),
            ),
        }
    }

    /// Checks the block has exactly the labels named; returns them when it does.
    pub(super) fn labels(&mut self, block: &Block, names: &[&str]) -> Option<Vec<String>> {
        let kind = block.ident.as_str();
        if block.labels.len() != names.len() {
            let (summary, detail) = if block.labels.len() < names.len() {
                (
                    format!("Missing name for {kind}"),
                    format!(
                        "A {kind} block needs {} label(s): {}.",
                        names.len(),
                        names.join(", ")
                    ),
                )
            } else {
                (
                    format!("Extraneous label for {kind}"),
                    format!(
                        "A {kind} block takes {} label(s): {}.",
                        names.len(),
                        names.join(", ")
                    ),
                )
            };
            let span = block
                .labels
                .get(names.len())
                .and_then(|l| l.span())
                .or_else(|| block.ident.span());
            self.diags.error(self.span(span), summary, detail);
            return None;
        }
        let mut out = Vec::with_capacity(names.len());
        for (label, what) in block.labels.iter().zip(names) {
            let text = label.as_str();
            if !is_identifier(text) {
                self.diags.error(
                    self.span(label.span()),
                    format!("Invalid {what}"),
                    format!("\"{text}\" is not a valid {what}: it must start with a letter or underscore and contain only letters, digits, underscores and dashes."),
                );
                return None;
            }
            out.push(text.to_owned());
        }
        Some(out)
    }

    /// Reports every argument and nested block not in the allowed lists.
    pub(super) fn only(&mut self, body: &Body, context: &str, attrs: &[&str], blocks: &[&str]) {
        let mut seen: IndexMap<&str, Span> = IndexMap::new();
        for structure in body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let key = attr.key.as_str();
                    let span = self.span(attr.key.span());
                    if !attrs.contains(&key) {
                        let hint = if blocks.contains(&key) {
                            format!(" \"{key}\" is a block: write {key} {{ ... }}.")
                        } else {
                            suggest(key, attrs.iter().copied())
                        };
                        self.diags.error(
                            span,
                            "Unsupported argument",
                            format!(
                                "An argument named \"{key}\" is not expected in {context}.{hint}"
                            ),
                        );
                    } else if seen.insert(key, span).is_some() {
                        self.diags.error(
                            span,
                            "Duplicate argument",
                            format!("The argument \"{key}\" was already set in {context}."),
                        );
                    }
                }
                Structure::Block(block) => {
                    let kind = block.ident.as_str();
                    if !blocks.contains(&kind) {
                        let hint = if attrs.contains(&kind) {
                            format!(" \"{kind}\" is an argument: write {kind} = ....")
                        } else {
                            suggest(kind, blocks.iter().copied())
                        };
                        self.diags.error(
                            self.span(block.ident.span()),
                            "Unsupported block type",
                            format!(
                                "Blocks of type \"{kind}\" are not expected in {context}.{hint}"
                            ),
                        );
                    }
                }
            }
        }
    }

    pub(super) fn literal_bool(&mut self, attr: Option<&Attribute>) -> Option<bool> {
        let attr = attr?;
        match attr.value.as_bool() {
            Some(b) => Some(b),
            None => {
                self.diags.error(
                    self.span(attr.value.span()),
                    "Invalid value",
                    format!(
                        "\"{}\" must be the literal true or false.",
                        attr.key.as_str()
                    ),
                );
                None
            }
        }
    }

    pub(super) fn literal_string(&mut self, attr: Option<&Attribute>) -> Option<String> {
        let attr = attr?;
        match literal_str(&attr.value) {
            Some(s) => Some(s),
            None => {
                self.diags.error(
                    self.span(attr.value.span()),
                    "Invalid value",
                    format!(
                        "\"{}\" must be a literal string, without references.",
                        attr.key.as_str()
                    ),
                );
                None
            }
        }
    }

    fn variable(&mut self, module: &mut Module, block: &Block) {
        let Some(labels) = self.labels(block, &["variable name"]) else {
            return;
        };
        let name = labels[0].clone();
        let span = self.header_span(block);
        if [
            "source",
            "version",
            "providers",
            "count",
            "for_each",
            "depends_on",
            "lifecycle",
        ]
        .contains(&name.as_str())
        {
            self.diags.error(
                self.span(block.labels[0].span()),
                "Invalid variable name",
                format!("\"{name}\" is reserved for module meta-arguments."),
            );
            return;
        }
        let body = &block.body;
        self.only(
            body,
            "a variable block",
            &[
                "type",
                "default",
                "description",
                "sensitive",
                "nullable",
                "deprecated",
                "ephemeral",
                "const",
            ],
            &["validation"],
        );
        let ty = match body.get_attribute("type") {
            Some(attr) => match parse_type(&attr.value) {
                Ok(ty) => ty,
                Err((range, message)) => {
                    self.diags.error(
                        self.span(range.or(attr.value.span())),
                        "Invalid type specification",
                        message,
                    );
                    Type::Any
                }
            },
            None => Type::Any,
        };
        let mut validations = Vec::new();
        for v in body.get_blocks("validation") {
            self.only(
                &v.body,
                "a validation block",
                &["condition", "error_message"],
                &[],
            );
            let condition = v.body.get_attribute("condition");
            let message = v.body.get_attribute("error_message");
            match (condition, message) {
                (Some(c), Some(m)) => validations.push(Validation {
                    condition: self.expr(&c.value),
                    error_message: self.expr(&m.value),
                }),
                _ => self.diags.error(
                    self.span(v.ident.span()),
                    "Incomplete validation",
                    "A validation block needs both condition and error_message.",
                ),
            }
        }
        let variable = Variable {
            name: name.clone(),
            span,
            ty,
            typed: body.get_attribute("type").is_some(),
            default: body.get_attribute("default").map(|a| self.expr(&a.value)),
            description: self.literal_string(body.get_attribute("description")),
            sensitive: self
                .literal_bool(body.get_attribute("sensitive"))
                .unwrap_or(false),
            nullable: self
                .literal_bool(body.get_attribute("nullable"))
                .unwrap_or(true),
            validations,
            deprecated: self.literal_string(body.get_attribute("deprecated")),
            ephemeral: self
                .literal_bool(body.get_attribute("ephemeral"))
                .unwrap_or(false),
            constant: self
                .literal_bool(body.get_attribute("const"))
                .unwrap_or(false),
        };
        if variable.constant && variable.ephemeral {
            self.diags.error(
                span,
                "Invalid variable",
                format!(
                    "Variable \"{name}\" cannot be both const and ephemeral: a const value is part of the configuration."
                ),
            );
        }
        if module.variables.contains_key(&name) {
            self.duplicate(span, "variable", &name);
            return;
        }
        module.variables.insert(name, variable);
    }

    fn duplicate(&mut self, span: Span, what: &str, name: &str) {
        self.diags.error(span, format!("Duplicate {what} declaration"), format!("A {what} named \"{name}\" was already declared in this module; names must be unique."));
    }

    fn locals(&mut self, module: &mut Module, block: &Block) {
        if !block.labels.is_empty() {
            self.diags.error(
                self.span(block.labels[0].span()),
                "Extraneous label for locals",
                "A locals block takes no labels.",
            );
        }
        for structure in block.body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let name = attr.key.as_str().to_owned();
                    let span = self.span(attr.key.span());
                    if module.locals.contains_key(&name) {
                        self.duplicate(span, "local value", &name);
                        continue;
                    }
                    module.locals.insert(
                        name.clone(),
                        Local {
                            name,
                            span,
                            expr: self.expr(&attr.value),
                        },
                    );
                }
                Structure::Block(b) => self.diags.error(
                    self.span(b.ident.span()),
                    "Unexpected block",
                    "A locals block holds only name = value arguments.",
                ),
            }
        }
    }

    /// An argument every block of a kind must have; reported at the block when missing.
    fn required(&mut self, body: &Body, name: &str, span: Span, context: &str) -> Option<Expr> {
        match body.get_attribute(name) {
            Some(attr) => Some(self.expr(&attr.value)),
            None => {
                self.diags.error(
                    span,
                    "Missing required argument",
                    format!("{context} needs a {name} argument."),
                );
                None
            }
        }
    }

    fn no_labels(&mut self, block: &Block) -> bool {
        if let Some(label) = block.labels.first() {
            self.diags.error(
                self.span(label.span()),
                "Extraneous label",
                format!("A {} block takes no labels.", block.ident.as_str()),
            );
            return false;
        }
        true
    }

    fn import(&mut self, module: &mut Module, block: &Block) {
        let span = self.header_span(block);
        if !self.no_labels(block) {
            return;
        }
        let body = &block.body;
        self.only(
            body,
            "an import block",
            &["to", "id", "identity", "for_each", "provider"],
            &[],
        );
        if !module.path.is_empty() {
            self.diags.error(
                span,
                "Import in a module",
                "import blocks belong in the root module; address the module's resource from there (to = module.NAME.TYPE.NAME).",
            );
            return;
        }
        let to = self.required(body, "to", span, "An import block");
        let id = match (body.get_attribute("id"), body.get_attribute("identity")) {
            (Some(id), None) => Some(super::ImportBy::Id(self.expr(&id.value))),
            (None, Some(identity)) => Some(super::ImportBy::Identity(self.expr(&identity.value))),
            (Some(_), Some(identity)) => {
                self.diags.error(
                    self.span(identity.key.span()),
                    "Conflicting import arguments",
                    "An import block names its object by id or by identity, not both.",
                );
                None
            }
            (None, None) => {
                self.diags.error(
                    span,
                    "Missing required argument",
                    "An import block needs an id argument (or, as in Terraform 1.12, an identity object).",
                );
                None
            }
        };
        if let (Some(to), Some(id)) = (to, id) {
            let for_each = body.get_attribute("for_each").map(|a| self.expr(&a.value));
            module.imports.push(Import {
                span,
                to,
                id,
                for_each,
            });
        }
    }

    fn moved(&mut self, module: &mut Module, block: &Block) {
        let span = self.header_span(block);
        if !self.no_labels(block) {
            return;
        }
        let body = &block.body;
        self.only(body, "a moved block", &["from", "to"], &[]);
        let from = self.required(body, "from", span, "A moved block");
        let to = self.required(body, "to", span, "A moved block");
        if let (Some(from), Some(to)) = (from, to) {
            module.moves.push(Moved { span, from, to });
        }
    }

    fn removed(&mut self, module: &mut Module, block: &Block) {
        let span = self.header_span(block);
        if !self.no_labels(block) {
            return;
        }
        let body = &block.body;
        self.only(body, "a removed block", &["from"], &["lifecycle"]);
        let Some(from) = self.required(body, "from", span, "A removed block") else {
            return;
        };
        let mut destroy = true;
        let mut saw_lifecycle = false;
        for lifecycle in body.get_blocks("lifecycle") {
            saw_lifecycle = true;
            self.only(&lifecycle.body, "a lifecycle block", &["destroy"], &[]);
            if let Some(value) = self.literal_bool(lifecycle.body.get_attribute("destroy")) {
                destroy = value;
            }
        }
        if !saw_lifecycle {
            self.diags.error(
                span,
                "Missing lifecycle block",
                "A removed block says whether to destroy the object: add lifecycle { destroy = false } to forget it and leave it as it is.",
            );
            return;
        }
        module.removals.push(Removed {
            span,
            from,
            destroy,
        });
    }

    fn output(&mut self, module: &mut Module, block: &Block) {
        let Some(labels) = self.labels(block, &["output name"]) else {
            return;
        };
        let name = labels[0].clone();
        let span = self.header_span(block);
        let body = &block.body;
        self.only(
            body,
            "an output block",
            &[
                "value",
                "description",
                "sensitive",
                "depends_on",
                "deprecated",
                "ephemeral",
                "type",
            ],
            &["precondition"],
        );
        let ty = body
            .get_attribute("type")
            .and_then(|attr| match parse_type(&attr.value) {
                Ok(ty) => Some(ty),
                Err((range, message)) => {
                    self.diags.error(
                        self.span(range.or(attr.value.span())),
                        "Invalid type specification",
                        message,
                    );
                    None
                }
            });
        let Some(value) = body.get_attribute("value") else {
            self.diags.error(
                span,
                "Missing required argument",
                format!("Output \"{name}\" needs a value argument."),
            );
            return;
        };
        let output = Output {
            name: name.clone(),
            span,
            value: self.expr(&value.value),
            description: self.literal_string(body.get_attribute("description")),
            sensitive: self
                .literal_bool(body.get_attribute("sensitive"))
                .unwrap_or(false),
            deprecated: self.literal_string(body.get_attribute("deprecated")),
            ephemeral: self
                .literal_bool(body.get_attribute("ephemeral"))
                .unwrap_or(false),
            ty,
            depends_on: self.depends_on(body),
            preconditions: body
                .get_blocks("precondition")
                .filter_map(|b| self.condition(b, "a precondition block"))
                .collect(),
        };
        if module.outputs.contains_key(&name) {
            self.duplicate(span, "output", &name);
            return;
        }
        module.outputs.insert(name, output);
    }

    fn provider(&mut self, module: &mut Module, mut block: Block) {
        let Some(labels) = self.labels(&block, &["provider name"]) else {
            return;
        };
        let name = labels[0].clone();
        let span = self.header_span(&block);
        let alias = self.literal_string(block.body.get_attribute("alias"));
        if let Some(alias) = &alias
            && !is_identifier(alias)
        {
            let alias_span = block
                .body
                .get_attribute("alias")
                .and_then(|a| a.value.span());
            self.diags.error(
                self.span(alias_span),
                "Invalid provider alias",
                format!("\"{alias}\" is not a valid identifier."),
            );
        }
        block.body.remove_attribute("alias");
        let key = provider_key(&name, alias.as_deref());
        if module.providers.contains_key(&key) {
            let what = if alias.is_some() {
                "provider alias"
            } else {
                "provider configuration"
            };
            self.diags.error(span, format!("Duplicate {what}"), format!("provider \"{key}\" was already configured in this module; give the second one a different alias."));
            return;
        }
        module.providers.insert(
            key,
            ProviderBlock {
                name,
                alias,
                body: BodyRef {
                    body: block.body,
                    file: self.file,
                    span,
                },
            },
        );
    }

    fn resource(&mut self, module: &mut Module, mut block: Block, mode: ResourceMode) {
        let what = if mode == ResourceMode::Managed {
            "resource"
        } else {
            "data source"
        };
        let Some(labels) = self.labels(&block, &[&format!("{what} type"), &format!("{what} name")])
        else {
            return;
        };
        let span = self.header_span(&block);
        let type_span = self.span(block.labels[0].span());
        let body = &block.body;
        let count = body.get_attribute("count").map(|a| self.expr(&a.value));
        let for_each = body.get_attribute("for_each").map(|a| self.expr(&a.value));
        if let (Some(_), Some(f)) = (&count, &for_each) {
            self.diags.error(
                f.span(),
                "Invalid combination of \"count\" and \"for_each\"",
                "A block may use count or for_each, not both.",
            );
        }
        let depends_on = self.depends_on(body);
        let provider = body
            .get_attribute("provider")
            .and_then(|a| self.provider_ref(&a.value));
        let mut lifecycle = None;
        let lifecycle_blocks: Vec<&Block> = body.get_blocks("lifecycle").collect();
        if mode == ResourceMode::Data && !lifecycle_blocks.is_empty() {
            self.diags.error(
                self.span(lifecycle_blocks[0].ident.span()),
                "Unsupported block type",
                "Data sources have no lifecycle: they are read, never created or destroyed.",
            );
        } else if lifecycle_blocks.len() > 1 {
            self.diags.error(
                self.span(lifecycle_blocks[1].ident.span()),
                "Duplicate lifecycle block",
                "A resource takes at most one lifecycle block.",
            );
        }
        if let Some(lc) = lifecycle_blocks
            .first()
            .filter(|_| mode == ResourceMode::Managed)
        {
            let decoded = self.lifecycle(lc);
            if let Some(enabled) = &decoded.enabled
                && (count.is_some() || for_each.is_some())
            {
                self.diags.error(
                    enabled.span(),
                    "Invalid combination of arguments",
                    "enabled cannot be used together with count or for_each: it turns one instance on or off.",
                );
            }
            lifecycle = Some(Box::new(decoded));
        }
        let provisioners = self.provisioners(&block.body, mode);
        // Meta-arguments are the engine's; what remains is checked against the provider schema.
        for meta in ["count", "for_each", "depends_on", "provider"] {
            block.body.remove_attribute(meta);
        }
        block.body.remove_blocks("lifecycle");
        block.body.remove_blocks("provisioner");
        block.body.remove_blocks("connection");
        compact(&mut block.body);
        let resource = Resource {
            mode,
            type_name: labels[0].clone(),
            name: labels[1].clone(),
            span,
            type_span,
            body: BodyRef {
                body: block.body,
                file: self.file,
                span,
            },
            count: count.map(Box::new),
            for_each: for_each.map(Box::new),
            depends_on,
            provider,
            lifecycle_block: lifecycle,
            check: None,
            provisioner_blocks: (!provisioners.is_empty()).then(|| Box::new(provisioners)),
        };
        let key = format!("{}.{}", resource.type_name, resource.name);
        let map = if mode == ResourceMode::Managed {
            &mut module.resources
        } else {
            &mut module.data
        };
        if map.contains_key(&key) {
            self.diags.error(
                span,
                format!("Duplicate {what} \"{}\" configuration", resource.type_name),
                format!("A {} {what} named \"{}\" was already declared in this module; names must be unique per type.", resource.type_name, resource.name),
            );
            return;
        }
        map.insert(key, resource);
    }

    /// A resource's `provisioner` blocks: `local-exec` served, `remote-exec` and `file` (and
    /// every `connection`) refused by name, a destroy-time one held to Terraform's rule on
    /// what it may reference.
    fn provisioners(&mut self, body: &Body, mode: ResourceMode) -> Vec<Provisioner> {
        for connection in body.get_blocks("connection") {
            self.diags.error(
                self.span(connection.ident.span()),
                "Connections are not supported",
                "A connection block reaches the object over SSH or WinRM for remote-exec and file provisioners; gpustack manages Kubernetes objects and cloud node pools, which have no such connection. Run the command with local-exec, or as a Kubernetes Job.",
            );
        }
        let mut out = Vec::new();
        for block in body.get_blocks("provisioner") {
            let span = self.header_span(block);
            if mode == ResourceMode::Data {
                self.diags.error(
                    span,
                    "Unsupported block type",
                    "Data sources have no provisioners: they are read, never created or destroyed.",
                );
                continue;
            }
            let Some(labels) = self.labels(block, &["provisioner type"]) else {
                continue;
            };
            match labels[0].as_str() {
                "local-exec" => {}
                kind @ ("remote-exec" | "file") => {
                    self.diags.error(
                        self.span(block.labels[0].span()),
                        "Provisioner not supported",
                        format!("The {kind} provisioner runs on the object through a connection (SSH or WinRM); gpustack manages Kubernetes objects and cloud node pools, which have none. Use local-exec, which runs where gpustack runs, or a Kubernetes Job."),
                    );
                    continue;
                }
                other => {
                    self.diags.error(
                        self.span(block.labels[0].span()),
                        "Invalid provisioner type",
                        format!(
                            "\"{other}\" is not a provisioner: the one gpustack runs is local-exec.{}",
                            suggest(other, ["local-exec"])
                        ),
                    );
                    continue;
                }
            }
            self.only(
                &block.body,
                "a local-exec provisioner",
                &[
                    "command",
                    "interpreter",
                    "working_dir",
                    "environment",
                    "quiet",
                    "when",
                    "on_failure",
                ],
                &["connection"],
            );
            for connection in block.body.get_blocks("connection") {
                self.diags.error(
                    self.span(connection.ident.span()),
                    "Connections are not supported",
                    "local-exec runs where gpustack runs and takes no connection.",
                );
            }
            if block.body.get_attribute("command").is_none() {
                self.diags.error(
                    span,
                    "Missing required argument",
                    "A local-exec provisioner needs a command.",
                );
            }
            let keyword = |name: &str, allowed: [&str; 2], this: &mut Self| -> Option<bool> {
                let attr = block.body.get_attribute(name)?;
                let word = match &attr.value {
                    Expression::Variable(v) => Some(v.as_str().to_owned()),
                    other => crate::expr::literal::literal_str(other),
                };
                match word.as_deref() {
                    Some(w) if w == allowed[0] => Some(false),
                    Some(w) if w == allowed[1] => Some(true),
                    _ => {
                        this.diags.error(
                            this.span(attr.value.span()),
                            "Invalid value",
                            format!("{name} must be {} or {}.", allowed[0], allowed[1]),
                        );
                        None
                    }
                }
            };
            let when_destroy = keyword("when", ["create", "destroy"], self).unwrap_or(false);
            let continue_on_failure =
                keyword("on_failure", ["fail", "continue"], self).unwrap_or(false);
            let mut provisioner_body = block.body.clone();
            provisioner_body.remove_attribute("when");
            provisioner_body.remove_attribute("on_failure");
            provisioner_body.remove_blocks("connection");
            if when_destroy {
                self.destroy_time_references(&provisioner_body);
            }
            out.push(Provisioner {
                kind: labels[0].clone(),
                span,
                when_destroy,
                continue_on_failure,
                body: BodyRef {
                    body: provisioner_body,
                    file: self.file,
                    span,
                },
            });
        }
        out
    }

    /// Terraform's rule: a destroy-time provisioner refers only to its own object (`self`),
    /// its instance key (`count.index`, `each`) and `path`/`terraform`, since what else it
    /// read might be gone before it runs.
    fn destroy_time_references(&mut self, body: &Body) {
        for structure in body.iter() {
            let Structure::Attribute(attr) = structure else {
                continue;
            };
            for reference in crate::expr::refs::references(&attr.value) {
                let names = reference.names();
                let allowed = match names.first().copied().unwrap_or_default() {
                    "self" | "count" | "path" | "terraform" => true,
                    // Only the key: the value may be gone from the configuration.
                    "each" => names.get(1) == Some(&"key"),
                    _ => false,
                };
                if !allowed {
                    let range = reference.range.clone().or_else(|| attr.value.span());
                    self.diags.error(
                        self.span(range),
                        "Invalid reference from destroy provisioner",
                        format!("A destroy-time provisioner may refer only to its own object (self), count.index and each.key, not to \"{}\": what else it read may be destroyed before it runs.", names.join(".")),
                    );
                }
            }
        }
    }

    fn lifecycle(&mut self, block: &Block) -> Lifecycle {
        for trigger in block.body.get_blocks("action_trigger") {
            self.diags.error(
                self.span(trigger.ident.span()),
                "Actions are not supported",
                "lifecycle { action_trigger } (Terraform 1.14) invokes actions a provider defines; none of the providers gpustack serves defines an action.",
            );
        }
        self.only(
            &block.body,
            "a lifecycle block",
            &[
                "prevent_destroy",
                "destroy",
                "create_before_destroy",
                "ignore_changes",
                "replace_triggered_by",
                "enabled",
            ],
            &["precondition", "postcondition", "action_trigger"],
        );
        let mut lifecycle = Lifecycle {
            prevent_destroy: block
                .body
                .get_attribute("prevent_destroy")
                .map(|a| self.expr(&a.value)),
            skip_destroy: !self
                .literal_bool(block.body.get_attribute("destroy"))
                .unwrap_or(true),
            create_before_destroy: self
                .literal_bool(block.body.get_attribute("create_before_destroy"))
                .unwrap_or(false),
            ..Lifecycle::default()
        };
        if let Some(attr) = block.body.get_attribute("ignore_changes") {
            match &attr.value {
                Expression::Variable(v) if v.as_str() == "all" => {
                    lifecycle.ignore_all_changes = true
                }
                Expression::Array(items) => {
                    for item in items.iter() {
                        match static_path(item) {
                            Some(path) => lifecycle
                                .ignore_changes
                                .push((path, self.span(item.span()))),
                            None => self.diags.error(
                                self.span(item.span()),
                                "Invalid ignore_changes entry",
                                "Each entry must be an attribute path with literal keys, such as node_count or tags[\"team\"].",
                            ),
                        }
                    }
                }
                other => self.diags.error(
                    self.span(other.span()),
                    "Invalid ignore_changes",
                    "ignore_changes must be a list of attribute names, or all.",
                ),
            }
        }
        lifecycle.enabled = block
            .body
            .get_attribute("enabled")
            .map(|a| self.expr(&a.value));
        lifecycle.preconditions = block
            .body
            .get_blocks("precondition")
            .filter_map(|b| self.condition(b, "a precondition block"))
            .collect();
        lifecycle.postconditions = block
            .body
            .get_blocks("postcondition")
            .filter_map(|b| self.condition(b, "a postcondition block"))
            .collect();
        if let Some(attr) = block.body.get_attribute("replace_triggered_by") {
            match &attr.value {
                Expression::Array(items) => {
                    for item in items.iter() {
                        if trigger_target(item).is_some() {
                            lifecycle.replace_triggered_by.push(self.expr(item));
                        } else {
                            self.diags.error(
                                self.span(item.span()),
                                "Invalid replace_triggered_by expression",
                                "Each entry must be a reference to a managed resource of this module or one of its attributes, such as terraform_data.version or aks_nodepool.t4.vm_size.",
                            );
                        }
                    }
                }
                other => self.diags.error(
                    self.span(other.span()),
                    "Invalid replace_triggered_by",
                    "replace_triggered_by must be a list of resource references.",
                ),
            }
        }
        lifecycle
    }

    /// `condition` and `error_message`, both required.
    fn condition(&mut self, block: &Block, context: &str) -> Option<Condition> {
        self.only(&block.body, context, &["condition", "error_message"], &[]);
        let condition = block.body.get_attribute("condition");
        let message = block.body.get_attribute("error_message");
        match (condition, message) {
            (Some(condition), Some(message)) => Some(Condition {
                condition: self.expr(&condition.value),
                error_message: self.expr(&message.value),
            }),
            _ => {
                self.diags.error(
                    self.span(block.ident.span()),
                    "Missing required argument",
                    format!("{context} needs both condition and error_message."),
                );
                None
            }
        }
    }

    fn check(&mut self, module: &mut Module, block: &Block) {
        let Some(labels) = self.labels(block, &["check name"]) else {
            return;
        };
        let span = self.header_span(block);
        self.only(&block.body, "a check block", &[], &["assert", "data"]);
        // Its data sources join the module's, marked as the check's own.
        for data in block.body.get_blocks("data") {
            let before: Vec<String> = module.data.keys().cloned().collect();
            self.resource(module, data.clone(), ResourceMode::Data);
            for (key, resource) in module.data.iter_mut() {
                if !before.contains(key) {
                    resource.check = Some(labels[0].as_str().into());
                }
            }
        }
        let asserts: Vec<Condition> = block
            .body
            .get_blocks("assert")
            .filter_map(|b| self.condition(b, "an assert block"))
            .collect();
        if asserts.is_empty() {
            self.diags.error(
                span,
                "Missing required block",
                "A check block holds at least one assert block.",
            );
        }
        if module.checks.iter().any(|c| c.name == labels[0]) {
            self.duplicate(span, "check", &labels[0]);
            return;
        }
        module.checks.push(Check {
            name: labels[0].clone(),
            span,
            asserts,
        });
    }

    /// `depends_on`, as OpenTofu reads it: each entry a static reference to a whole object (a
    /// resource or one of its instances, a data source, a module call, one of its instances or
    /// outputs, a variable or a local value); a quoted reference, the form of Terraform 0.11, is
    /// read with a warning.
    fn depends_on(&mut self, body: &Body) -> Vec<Reference> {
        let Some(attr) = body.get_attribute("depends_on") else {
            return Vec::new();
        };
        let Expression::Array(items) = &attr.value else {
            self.diags.error(self.span(attr.value.span()), "Invalid depends_on", "depends_on must be a list of references, such as [aks_nodepool.gpu, module.operator].");
            return Vec::new();
        };
        let mut refs = Vec::new();
        for item in items.iter() {
            let span = self.span(item.span());
            match depends_on_entry(item) {
                Ok(Dependency { parts, quoted }) => {
                    if quoted {
                        self.diags.push(crate::diag::Diag::warning(
                            span,
                            "Quoted references are deprecated",
                            "In this context, references are expected literally rather than in quotes. Terraform 0.11 and earlier required quotes; remove the quotes surrounding this reference.",
                        ));
                    }
                    if let Some(parts) = parts {
                        refs.push(Reference { parts, span });
                    }
                }
                Err((range, detail)) => self.diags.error(
                    range.map_or(span, |r| self.span(Some(r))),
                    "Invalid depends_on reference",
                    detail,
                ),
            }
        }
        refs
    }

    fn provider_ref(&mut self, expression: &Expression) -> Option<ProviderRef> {
        let span = self.span(expression.span());
        match static_parts(expression).as_deref() {
            Some([name]) => Some(ProviderRef {
                name: name.clone(),
                alias: None,
                span,
            }),
            Some([name, alias]) => Some(ProviderRef {
                name: name.clone(),
                alias: Some(alias.clone()),
                span,
            }),
            _ => {
                self.diags.error(
                    span,
                    "Invalid provider reference",
                    "Expected a provider name, optionally with an alias: azure or azure.west.",
                );
                None
            }
        }
    }

    fn module_call(&mut self, module: &mut Module, block: &Block) {
        let Some(labels) = self.labels(block, &["module name"]) else {
            return;
        };
        let name = labels[0].clone();
        let span = self.header_span(block);
        let body = &block.body;
        let mut call = ModuleCall {
            name: name.clone(),
            span,
            source: String::new(),
            source_span: span,
            source_expr: None,
            version: None,
            version_expr: None,
            args: IndexMap::new(),
            providers: IndexMap::new(),
            depends_on: self.depends_on(body),
            count: body.get_attribute("count").map(|a| self.expr(&a.value)),
            for_each: body.get_attribute("for_each").map(|a| self.expr(&a.value)),
        };
        if let (Some(_), Some(for_each)) = (&call.count, &call.for_each) {
            self.diags.error(
                for_each.span(),
                "Invalid combination of \"count\" and \"for_each\"",
                "A module call may set count or for_each, not both.",
            );
        }
        for structure in body.iter() {
            match structure {
                Structure::Block(b) => self.diags.error(
                    self.span(b.ident.span()),
                    "Unsupported block type",
                    "A module block takes only arguments: its input variables and meta-arguments.",
                ),
                Structure::Attribute(attr) => {
                    let key = attr.key.as_str();
                    let key_span = self.span(attr.key.span());
                    match key {
                        "source" => {
                            call.source_span = self.span(attr.value.span());
                            match static_template(&attr.value) {
                                Some(source) => {
                                    if let Some(source) =
                                        check_module_source(self.diags, call.source_span, &source)
                                    {
                                        call.source = source;
                                    }
                                }
                                // Reads const variables: resolved once their values are known.
                                None => call.source_expr = Some(self.expr(&attr.value)),
                            }
                        }
                        "depends_on" => {}
                        "version" => match static_template(&attr.value) {
                            Some(version) => call.version = Some(version),
                            None => call.version_expr = Some(self.expr(&attr.value)),
                        },
                        "count" | "for_each" => {}
                        "providers" => self.module_providers(&mut call, &attr.value),
                        _ => {
                            if call
                                .args
                                .insert(key.to_owned(), (self.expr(&attr.value), key_span))
                                .is_some()
                            {
                                self.diags.error(key_span, "Duplicate argument", format!("The argument \"{key}\" was already set in module \"{name}\"."));
                            }
                        }
                    }
                }
            }
        }
        if body.get_attribute("source").is_none() {
            self.diags.error(span, "Missing required argument", format!("Module \"{name}\" needs a source argument, such as source = \"../../modules/gpu-operator\"."));
        }
        if module.calls.contains_key(&name) {
            self.duplicate(span, "module call", &name);
            return;
        }
        module.calls.insert(name, call);
    }

    fn module_providers(&mut self, call: &mut ModuleCall, value: &Expression) {
        let Expression::Object(object) = value else {
            self.diags.error(
                self.span(value.span()),
                "Invalid providers",
                "providers must be a map such as { azure = azure.west }.",
            );
            return;
        };
        for (key, item) in object.iter() {
            let child = match key {
                ObjectKey::Ident(ident) => Some(ident.as_str().to_owned()),
                ObjectKey::Expression(expr) => static_parts(expr)
                    .filter(|p| p.len() <= 2)
                    .map(|p| p.join(".")),
            };
            let Some(child) = child else {
                self.diags.error(
                    self.span(key.span()),
                    "Invalid providers key",
                    "Keys name the provider inside the module: azure or azure.alias.",
                );
                continue;
            };
            if let Some(parent) = self.provider_ref(item.expr()) {
                call.providers.insert(child, parent);
            }
        }
    }

    fn settings(&mut self, module: &mut Module, block: &Block) {
        let span = self.header_span(block);
        if !block.labels.is_empty() {
            self.diags.error(
                self.span(block.labels[0].span()),
                "Extraneous label for gpustack",
                "The gpustack block takes no labels.",
            );
        }
        if module.settings.is_some() {
            self.diags.error(
                span,
                "Duplicate gpustack block",
                "A stack has at most one gpustack settings block.",
            );
            return;
        }
        self.only(
            &block.body,
            "the gpustack block",
            &["required_version"],
            &["backend", "encryption"],
        );
        let required_version = block.body.get_attribute("required_version").and_then(|a| {
            let span = self.span(a.value.span());
            self.literal_string(Some(a)).map(|v| (v, span))
        });
        let backends: Vec<&Block> = block.body.get_blocks("backend").collect();
        if backends.len() > 1 {
            self.diags.error(
                self.span(backends[1].ident.span()),
                "Duplicate backend",
                "A stack stores its state in one backend.",
            );
        }
        let backend = backends.first().and_then(|b| {
            let labels = self.labels(b, &["backend type"])?;
            Some(BackendBlock {
                kind: labels[0].clone(),
                kind_span: self.span(b.labels[0].span()),
                body: BodyRef {
                    body: b.body.clone(),
                    file: self.file,
                    span: self.header_span(b),
                },
            })
        });
        let encryptions: Vec<&Block> = block.body.get_blocks("encryption").collect();
        if let Some(extra) = encryptions.get(1) {
            self.diags.error(
                self.span(extra.ident.span()),
                "Duplicate encryption block",
                "A stack has one encryption block.",
            );
        }
        let encryption = encryptions.first().map(|b| {
            if let Some(label) = b.labels.first() {
                self.diags.error(
                    self.span(label.span()),
                    "Extraneous label for encryption",
                    "The encryption block takes no labels.",
                );
            }
            BodyRef {
                body: b.body.clone(),
                file: self.file,
                span: self.header_span(b),
            }
        });
        module.settings = Some(GpustackBlock {
            span,
            backend,
            encryption,
            required_version,
        });
    }
}

/// Gives a resource body's vectors (its structures, every nested block's, every traversal's
/// operators) exactly their length. The parser grows them to at least four elements (a body of
/// two attributes holds four structures of 304 bytes, `a.b.c` four operators of 200), and these
/// bodies live until the command ends: at 10,000 resources, 16 MB of spare capacity that every
/// later phase's memory traffic would pass over.
fn compact(body: &mut Body) {
    struct Compact;
    impl VisitMut for Compact {
        fn visit_body_mut(&mut self, body: &mut Body) {
            let (oneline, omit_newline) =
                (body.prefer_oneline(), body.prefer_omit_trailing_newline());
            // Collecting from the body's own iterator would reuse its allocation.
            *body = Body::from_iter(std::mem::take(body));
            body.set_prefer_oneline(oneline);
            body.set_prefer_omit_trailing_newline(omit_newline);
            visit_body_mut(self, body);
        }

        fn visit_traversal_mut(&mut self, traversal: &mut Traversal) {
            traversal.operators.shrink_to_fit();
            visit_traversal_mut(self, traversal);
        }
    }
    Compact.visit_body_mut(body);
}

/// `a.b.c` as written, for references that must be static (depends_on, provider, ignore_changes).
pub fn static_parts(expression: &Expression) -> Option<Vec<String>> {
    match expression {
        Expression::Variable(v) => Some(vec![v.as_str().to_owned()]),
        Expression::Traversal(t) => {
            let mut parts = static_parts(&t.expr)?;
            for op in &t.operators {
                match op.value() {
                    TraversalOperator::GetAttr(ident) => parts.push(ident.as_str().to_owned()),
                    TraversalOperator::Index(_) | TraversalOperator::LegacyIndex(_) => {}
                    _ => return None,
                }
            }
            Some(parts)
        }
        _ => None,
    }
}

/// What a `replace_triggered_by` entry names: the resource `TYPE.NAME`, the expression of its
/// instance key if one is given, and the attribute path after it.
pub struct TriggerTarget<'e> {
    pub resource: String,
    pub key: Option<&'e Expression>,
    pub attribute: Vec<String>,
}

pub fn trigger_target(expression: &Expression) -> Option<TriggerTarget<'_>> {
    let Expression::Traversal(t) = expression else {
        return None;
    };
    let Expression::Variable(ty) = &t.expr else {
        return None;
    };
    if matches!(
        ty.as_str(),
        "var" | "local" | "module" | "data" | "count" | "each" | "path" | "self" | "terraform"
    ) {
        return None;
    }
    let mut operators = t.operators.iter().map(|o| o.value());
    let Some(TraversalOperator::GetAttr(name)) = operators.next() else {
        return None;
    };
    let mut target = TriggerTarget {
        resource: format!("{}.{}", ty.as_str(), name.as_str()),
        key: None,
        attribute: Vec::new(),
    };
    for (i, op) in operators.enumerate() {
        match op {
            TraversalOperator::Index(key) if i == 0 => target.key = Some(key),
            TraversalOperator::GetAttr(attr) => target.attribute.push(attr.as_str().to_owned()),
            _ => return None,
        }
    }
    Some(target)
}

/// An attribute path as written in `ignore_changes`: `a.b`, `a["k"]`, `a[0].b`; keys and
/// indexes must be literals. None for anything else.
pub fn static_path(expression: &Expression) -> Option<gpustack_protocol::Path> {
    use gpustack_protocol::PathStep;
    match expression {
        Expression::Variable(v) => Some(vec![PathStep::Key(v.as_str().to_owned())]),
        Expression::Traversal(t) => {
            let mut path = static_path(&t.expr)?;
            for op in &t.operators {
                path.push(match op.value() {
                    TraversalOperator::GetAttr(ident) => PathStep::Key(ident.as_str().to_owned()),
                    TraversalOperator::LegacyIndex(i) => {
                        PathStep::Index(usize::try_from(*i.value()).ok()?)
                    }
                    TraversalOperator::Index(Expression::String(s)) => {
                        PathStep::Key(s.value().to_string())
                    }
                    TraversalOperator::Index(Expression::Number(n)) => {
                        PathStep::Index(usize::try_from(n.value().as_u64()?).ok()?)
                    }
                    _ => return None,
                });
            }
            Some(path)
        }
        _ => None,
    }
}

/// A `depends_on` entry read: the names it depends on (`None` for `count.index`, `each.key`,
/// `path.*` and `terraform.*`, which order nothing), and whether it was quoted.
struct Dependency {
    parts: Option<Vec<String>>,
    quoted: bool,
}

const STATIC_REFERENCE: &str = "A single static variable reference is required: only attribute access and indexing with constant keys. No calculations, function calls, template expressions, etc are allowed here.";
const WHOLE_OBJECT: &str = "References in depends_on must be to a whole object (resource, etc), not to an attribute of an object.";

/// Reads one `depends_on` entry with OpenTofu's rules (`addrs.ParseRef`, then no attribute
/// after the object); an error is the range to point at (within the entry, when the entry was
/// not quoted) and why.
fn depends_on_entry(
    item: &Expression,
) -> Result<Dependency, (Option<std::ops::Range<usize>>, String)> {
    let (steps, quoted) = match item {
        Expression::String(text) => {
            let parsed = hcl_edit::parser::parse_expr(text.value())
                .map_err(|_| (None, STATIC_REFERENCE.to_owned()))?;
            // The string's own ranges count from its text, not the file: point at the entry.
            let steps = reference_steps(&parsed)
                .ok_or((None, STATIC_REFERENCE.to_owned()))?
                .into_iter()
                .map(|(step, _)| (step, None))
                .collect();
            (steps, true)
        }
        other => (
            reference_steps(other).ok_or((None, STATIC_REFERENCE.to_owned()))?,
            false,
        ),
    };
    let name = |i: usize| match steps.get(i) {
        Some((Step::Attr(name), _)) => Some(name.clone()),
        _ => None,
    };
    let range_of = |i: usize| steps.get(i).and_then(|(_, r)| r.clone());
    let whole = |from: usize| {
        if from < steps.len() {
            Err((range_of(from), WHOLE_OBJECT.to_owned()))
        } else {
            Ok(())
        }
    };
    let root = name(0).unwrap_or_default();
    let parts = match root.as_str() {
        "count" | "each" | "path" | "terraform" | "var" | "local" => {
            let Some(attr) = name(1) else {
                return Err((
                    range_of(0),
                    format!(
                        "The \"{root}\" object cannot be accessed directly. Instead, access one of its attributes."
                    ),
                ));
            };
            whole(2)?;
            matches!(root.as_str(), "var" | "local").then(|| vec![root.clone(), attr])
        }
        "module" => {
            let Some(call) = name(1) else {
                return Err((
                    range_of(0),
                    "The \"module\" object cannot be accessed directly. Instead, access one of its attributes.".into(),
                ));
            };
            let mut next = 2;
            if matches!(steps.get(next), Some((Step::Index, _))) {
                next += 1;
            }
            let mut parts = vec![root.clone(), call];
            if let Some(output) = name(next) {
                parts.push(output);
                next += 1;
            } else if next < steps.len() {
                return Err((
                    range_of(next),
                    "Module instance objects do not support this operation.".into(),
                ));
            }
            whole(next)?;
            Some(parts)
        }
        "self" => {
            return Err((
                range_of(0),
                "The \"self\" object names the block it is used in; a block cannot depend on itself.".into(),
            ));
        }
        "template" | "lazy" | "arg" => {
            return Err((
                range_of(0),
                format!(
                    "The symbol name \"{root}\" is reserved for use in a future version of the language; if a provider uses it as a resource type name, write resource.{root}."
                ),
            ));
        }
        _ => {
            let (mode_data, first) = match root.as_str() {
                "data" => (true, 1),
                "resource" => (false, 1),
                _ => (false, 0),
            };
            let (Some(ty), Some(resource)) = (name(first), name(first + 1)) else {
                let what = if mode_data {
                    "data source"
                } else {
                    "resource type"
                };
                return Err((
                    range_of(first),
                    format!(
                        "A reference to a {what} must be followed by at least one attribute access, specifying the resource name."
                    ),
                ));
            };
            let mut next = first + 2;
            if matches!(steps.get(next), Some((Step::Index, _))) {
                next += 1;
            }
            whole(next)?;
            Some(if mode_data {
                vec!["data".to_owned(), ty, resource]
            } else {
                vec![ty, resource]
            })
        }
    };
    Ok(Dependency { parts, quoted })
}

/// One step of a static reference: an attribute, or an index by a constant key.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Attr(String),
    Index,
}

/// The steps of a static traversal (`hcl.AbsTraversalForExpr`), each with its range; None for
/// anything else.
fn reference_steps(expression: &Expression) -> Option<Vec<(Step, Option<std::ops::Range<usize>>)>> {
    match expression {
        Expression::Variable(v) => Some(vec![(Step::Attr(v.as_str().to_owned()), v.span())]),
        Expression::Traversal(t) => {
            let mut steps = reference_steps(&t.expr)?;
            for op in &t.operators {
                let step = match op.value() {
                    TraversalOperator::GetAttr(ident) => Step::Attr(ident.as_str().to_owned()),
                    TraversalOperator::LegacyIndex(_)
                    | TraversalOperator::Index(Expression::String(_) | Expression::Number(_)) => {
                        Step::Index
                    }
                    _ => return None,
                };
                steps.push((step, op.span()));
            }
            Some(steps)
        }
        _ => None,
    }
}

/// Reads one file in Terraform's JSON syntax into `module`: translated, then decoded as native
/// files are. A file that is not valid JSON, or not a configuration, is reported where it goes
/// wrong and adds nothing.
fn load_json_file(
    files: &Files,
    module: &mut Module,
    sources: &mut SourceMap,
    path: &Path,
    providers: Option<&gpustack_protocol::Registry>,
    diags: &mut Diags,
) {
    let Some(text) = read_text(files, sources, path, diags) else {
        return;
    };
    match super::json::translate(&text, providers) {
        Ok((hcl, map)) => {
            let id = sources.add_translated(path, hcl, text, map);
            load_file(module, sources, id, diags);
        }
        Err(errors) => {
            let id = sources.add(path, text);
            for (at, summary, detail) in errors {
                diags.error(Span::new(id, at), summary, detail);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcl_edit::visit::{Visit, visit_traversal};

    /// What README's performance section says of the loaded resources: their traversals hold
    /// no spare capacity, and a resource record stays small.
    fn load_text(text: &str) -> (Stack, Diags, SourceMap) {
        let files = Files::Snapshot {
            root: PathBuf::from("stack"),
            files: std::sync::Arc::new([("main.hcl".to_owned(), text.to_owned())].into()),
        };
        let mut sources = SourceMap::new(Path::new("stack"));
        let mut diags = Diags::default();
        let stack = load_stack_from(&files, Path::new("stack"), &mut sources, &mut diags);
        (stack, diags, sources)
    }

    #[test]
    fn loaded_resources_keep_no_spare_capacity() {
        let text = "resource \"local_file\" \"a\" {\n  content = local_file.b.id\n  nested {\n    x = var.y.z\n  }\n}\n";
        let (stack, diags, _) = load_text(text);
        assert!(!diags.has_errors());
        struct Capacities(Vec<(usize, usize)>);
        impl Visit for Capacities {
            fn visit_traversal(&mut self, traversal: &Traversal) {
                self.0
                    .push((traversal.operators.len(), traversal.operators.capacity()));
                visit_traversal(self, traversal);
            }
        }
        let mut capacities = Capacities(Vec::new());
        capacities.visit_body(&stack.root().resources["local_file.a"].body.body);
        assert_eq!(capacities.0, vec![(2, 2), (2, 2)]);
        assert!(std::mem::size_of::<Resource>() <= 384);
    }

    /// Braces in strings, interpolations, heredocs and comments do not end a run; a block
    /// followed by a comment on its closing line does not either.
    #[test]
    fn block_runs_end_only_after_top_level_blocks() {
        let blocks = [
            "locals {\n  a = \"}\"\n  b = \"${ {x = \"}\"} }\"\n}\n",
            "# } and { in a comment\nresource \"t\" \"b\" {\n  text = <<EOT\n}\n{\nEOT\n  /* } */\n}\n",
            "variable \"v\" { default = \"$${x}\" } \n",
            "output \"o\" {\n  value = 1\n} # trailing\noutput \"p\" {\n  value = 2\n}\n",
        ];
        let text = blocks.concat();
        let ends: Vec<usize> = blocks
            .iter()
            .scan(0, |at, block| {
                *at += block.len();
                Some(*at)
            })
            .collect();
        assert_eq!(block_runs(&text, 0), ends);
        assert_eq!(block_runs(&text, text.len()), vec![text.len()]);
        let mut start = 0;
        for end in block_runs(&text, 0) {
            assert!(hcl_edit::parser::parse_body(&text[start..end]).is_ok());
            start = end;
        }
    }

    /// A file parsed a run of blocks at a time reports at the file's own offsets, and a
    /// syntax error in a late run leaves only that error: nothing else from the file.
    #[test]
    fn a_file_parsed_in_runs_reports_where_the_whole_file_would() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!(
                "resource \"local_file\" \"f{i}\" {{\n  filename = \"{i}.txt\"\n}}\n\n"
            ));
        }
        assert!(block_runs(&text, PARSE_RUN_BYTES).len() > 2);
        let duplicated = text.replace("\"f1600\" {", "\"f1500\" {");
        let (stack, diags, sources) = load_text(&duplicated);
        assert_eq!(stack.root().resources.len(), 1999);
        let header = "resource \"local_file\" \"f1500\"";
        let at = duplicated.rfind(header).unwrap();
        let [diag] = diags.0.as_slice() else {
            panic!("one diagnostic expected: {:?}", diags.0)
        };
        let span = diag.span.unwrap();
        assert_eq!((span.start, span.end), (at, at + header.len()));
        assert_eq!(sources.snippet(span), header);

        let broken = duplicated.replace("\"f1800\" {\n", "\"f1800\" {\n  x = = 1\n");
        let (stack, diags, _) = load_text(&broken);
        assert!(stack.root().resources.is_empty());
        let [diag] = diags.0.as_slice() else {
            panic!("one diagnostic expected: {:?}", diags.0)
        };
        assert_eq!(diag.summary, "Syntax error");
        assert_eq!(diag.span.unwrap().start, broken.find("= 1").unwrap());
    }
}
