//! hashicorp/archive: `archive_file`, data source and resource: a zip or tar.gz of a file, a
//! directory (with doublestar `excludes`), a string or several, with the provider's hashes.
//!
//! The data source writes the archive when the plan is made, as Terraform reads it. The
//! resource's archive is built in memory at plan, so that the plan shows its hashes, and
//! written by apply; a plan whose sources changed since replaces it (the provider would
//! rewrite it silently on refresh), and one whose file is gone makes it again. Entries are
//! the provider's (files only, in walk order, fixed times, Deflate); the compressed bytes are
//! this implementation's, so hashes differ from the Go provider's for the same files.

use crate::state_only::{applied, attr, flag, plan_made, text, with};
use base64::Engine;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    PlanResourceChangeRequest, PlanResourceChangeResponse, Provider, ProviderFactory,
    ProviderSchema, ReadDataSourceRequest, ReadDataSourceResponse, ReadResourcesRequest,
    ReadResourcesResponse, ResourceMode, Schema, Type, Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config, strings};
use gpustack_provider_sdk::family::{Factory, Family};
use sha2::Digest;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(crate) struct Archive;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Archive))
}

const OUTPUTS: [&str; 8] = [
    "output_size",
    "output_md5",
    "output_sha",
    "output_sha256",
    "output_base64sha256",
    "output_sha512",
    "output_base64sha512",
    "id",
];

fn schema(resource: bool) -> Schema {
    let argument = |a: Attribute| if resource { a.force_new() } else { a };
    let source = Schema::new("A file of the archive from a string.")
        .attr("content", argument(Attribute::required(Type::String)))
        .attr("filename", argument(Attribute::required(Type::String)));
    let mut schema = Schema::new(if resource {
        "An archive of content, a file or a directory, written by apply."
    } else {
        "An archive of content, a file or a directory, written when the plan is made."
    })
    .attr(
        "type",
        argument(Attribute::required(Type::String)).describe("zip or tar.gz."),
    )
    .attr(
        "source_content",
        argument(Attribute::optional(Type::String)),
    )
    .attr(
        "source_content_filename",
        argument(Attribute::optional(Type::String)),
    )
    .attr("source_file", argument(Attribute::optional(Type::String)))
    .attr("source_dir", argument(Attribute::optional(Type::String)))
    .attr(
        "excludes",
        argument(Attribute::optional(Type::set(Type::String)))
            .describe("Doublestar globs of source_dir's paths to leave out."),
    )
    .attr(
        "exclude_symlink_directories",
        Attribute::optional(Type::Bool),
    )
    .attr("output_path", argument(Attribute::required(Type::String)))
    .attr(
        "output_file_mode",
        argument(Attribute::optional(Type::String))
            .describe("The mode of the archive's files, e.g. \"0666\"."),
    )
    .attr("output_size", Attribute::computed(Type::Number));
    for name in &OUTPUTS[1..] {
        schema = schema.attr(name, Attribute::computed(Type::String));
    }
    schema.block("source", BlockNesting::List, source)
}

fn schemas() -> ProviderSchema {
    ProviderSchema {
        name: "archive".into(),
        config: provider_config("hashicorp/archive: archives of local files."),
        resources: [("archive_file".to_owned(), schema(true))].into(),
        data_sources: [("archive_file".to_owned(), schema(false))].into(),
    }
}

#[async_trait::async_trait]
impl Family for Archive {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types("archive", &["archive_file"], &["archive_file"])
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, _: &str, check: &mut Checker<'_>) {
        let config = check.config();
        let set = |name: &str| match attr(config, name) {
            Value::List(items) => !items.is_empty(),
            other => !other.is_null(),
        };
        let sources = [
            ("source", set("source")),
            ("source_content_filename", set("source_content_filename")),
            ("source_file", set("source_file")),
            ("source_dir", set("source_dir")),
        ];
        let given: Vec<&str> = sources
            .iter()
            .filter(|(_, s)| *s)
            .map(|(n, _)| *n)
            .collect();
        let conflicts = [
            ("source_dir", "source_file"),
            ("source_dir", "source_content_filename"),
            ("source_file", "source_content_filename"),
            ("source", "source_dir"),
            ("source", "source_file"),
            ("source", "source_content_filename"),
        ];
        if given.is_empty() {
            check.error(
                "type",
                "Invalid Attribute Combination",
                "At least one of these attributes must be configured: [source,source_content_filename,source_file,source_dir]".into(),
            );
        }
        for (a, b) in conflicts {
            if given.contains(&a) && given.contains(&b) {
                check.error(
                    a,
                    "Invalid Attribute Combination",
                    format!("Attribute \"{a}\" cannot be specified when \"{b}\" is specified"),
                );
            }
        }
        if set("excludes") && !set("source_dir") {
            check.error(
                "excludes",
                "Invalid Attribute Combination",
                "excludes applies to source_dir only.".into(),
            );
        }
        check.one_of("type", &["zip", "tar.gz"]);
        if let Some(mode) = check.str("output_file_mode")
            && let Err(e) = file_mode(mode)
        {
            check.error("output_file_mode", "Invalid output_file_mode", e);
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// `output_file_mode` as Go's `strconv.ParseUint(v, 0, 32)`: `0…`/`0o…` octal, `0x…` hex,
/// else decimal.
fn file_mode(text: &str) -> Result<u32, String> {
    let parsed = if let Some(hex) = text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16)
    } else if let Some(octal) = text.strip_prefix("0o").or(text.strip_prefix("0O")) {
        u32::from_str_radix(octal, 8)
    } else if text.len() > 1 && text.starts_with('0') {
        u32::from_str_radix(&text[1..], 8)
    } else {
        text.parse()
    };
    parsed.map_err(|_| format!("error parsing output_file_mode value: {text}"))
}

/// One file of an archive: its name, bytes, and mode (None for content, which has none).
struct Entry {
    name: String,
    bytes: Vec<u8>,
    mode: Option<u32>,
}

fn mode_of(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        if meta.permissions().readonly() {
            0o444
        } else {
            0o666
        }
    }
}

/// The most bytes of files one archive reads: twice what AWS Lambda takes unzipped, the
/// largest common use; the archive is built in memory.
const MAX_ARCHIVED_BYTES: u64 = 512 << 20;

/// The bytes of a file to archive: a regular file only (a device or FIFO would never end or
/// block), within what is left of the archive's `budget`, which it takes from.
fn read_for_archive(path: &Path, budget: &mut u64) -> Result<Vec<u8>, String> {
    let bytes = gpustack_fs::read_bounded(path, *budget).map_err(|e| match e {
        gpustack_fs::ReadError::TooLarge { .. } => format!(
            "error reading file for archival: {}: the files archived are larger than {} MiB together",
            path.display(),
            MAX_ARCHIVED_BYTES >> 20
        ),
        e => format!("error reading file for archival: {}: {e}", path.display()),
    })?;
    *budget -= bytes.len() as u64;
    Ok(bytes)
}

/// The files of `root`, in the order Go's `filepath.Walk` visits them (lexical, depth first),
/// following symbolic links, leaving out what `excludes` match (a directory with its tree).
fn walk(
    root: &Path,
    prefix: &str,
    excludes: &globset::GlobSet,
    skip_linked_dirs: bool,
    budget: &mut u64,
    out: &mut Vec<Entry>,
) -> Result<(), String> {
    let mut names: Vec<_> = std::fs::read_dir(root)
        .map_err(|e| format!("error encountered during file walk: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let path = root.join(&name);
        let relative = format!("{prefix}{}", name.to_string_lossy());
        if excludes.is_match(&relative) {
            continue;
        }
        let link = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("error encountered during file walk: {e}"))?;
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("error encountered during file walk: {e}"))?;
        if meta.is_dir() {
            if link.file_type().is_symlink() && skip_linked_dirs {
                continue;
            }
            walk(
                &path,
                &format!("{relative}/"),
                excludes,
                skip_linked_dirs,
                budget,
                out,
            )?;
        } else {
            let bytes = read_for_archive(&path, budget)?;
            out.push(Entry {
                name: relative,
                bytes,
                mode: Some(mode_of(&meta)),
            });
        }
    }
    Ok(())
}

/// What the configuration archives, as the provider chooses among its sources.
fn entries(config: &Value) -> Result<Vec<Entry>, String> {
    if let Some(dir) = text(config, "source_dir") {
        let root = PathBuf::from(&dir);
        let meta = std::fs::metadata(&root).map_err(|_| {
            format!("error archiving directory: could not archive missing directory: {dir}")
        })?;
        if !meta.is_dir() {
            return Err(format!(
                "error archiving directory: could not archive directory that is a file: {dir}"
            ));
        }
        let mut globs = globset::GlobSetBuilder::new();
        for pattern in strings(config, "excludes").iter().filter(|p| !p.is_empty()) {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("error checking excludes matches: {e}"))?;
            globs.add(glob);
        }
        let excludes = globs
            .build()
            .map_err(|e| format!("error checking excludes matches: {e}"))?;
        let mut out = Vec::new();
        let mut budget = MAX_ARCHIVED_BYTES;
        walk(
            &root,
            "",
            &excludes,
            flag(config, "exclude_symlink_directories", false),
            &mut budget,
            &mut out,
        )
        .map_err(|e| format!("error archiving directory: {e}"))?;
        if out.is_empty() {
            return Err(
                "error archiving directory: archive has not been created as it would be empty"
                    .into(),
            );
        }
        return Ok(out);
    }
    if let Some(file) = text(config, "source_file") {
        let meta = std::fs::metadata(&file)
            .map_err(|_| format!("error archiving file: could not archive missing file: {file}"))?;
        let mut budget = MAX_ARCHIVED_BYTES;
        let bytes = read_for_archive(Path::new(&file), &mut budget)
            .map_err(|e| format!("error archiving file: {e}"))?;
        let name = Path::new(&file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(file);
        return Ok(vec![Entry {
            name,
            bytes,
            mode: Some(mode_of(&meta)),
        }]);
    }
    if let Some(name) = text(config, "source_content_filename") {
        return Ok(vec![Entry {
            name,
            bytes: text(config, "source_content")
                .unwrap_or_default()
                .into_bytes(),
            mode: None,
        }]);
    }
    let mut files = std::collections::BTreeMap::new();
    if let Value::List(sources) = attr(config, "source") {
        for s in &sources {
            files.insert(
                text(s, "filename").unwrap_or_default(),
                text(s, "content").unwrap_or_default(),
            );
        }
    }
    Ok(files
        .into_iter()
        .map(|(name, content)| Entry {
            name,
            bytes: content.into_bytes(),
            mode: None,
        })
        .collect())
}

/// The archive's bytes.
fn build(config: &Value) -> Result<Vec<u8>, String> {
    let kind = text(config, "type").unwrap_or_default();
    let forced_mode = text(config, "output_file_mode")
        .map(|m| file_mode(&m))
        .transpose()?;
    let entries = entries(config)?;
    match kind.as_str() {
        "zip" => {
            use zip::write::SimpleFileOptions;
            let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            // The provider's times: files dated 2049-01-01 (Go's zero time in DOS form),
            // content undated.
            let file_time = zip::DateTime::from_date_and_time(2049, 1, 1, 0, 0, 0)
                .map_err(|e| e.to_string())?;
            for entry in entries {
                let mut options = SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated);
                options = match entry.mode {
                    // The provider applies output_file_mode to files only, in a zip.
                    Some(mode) => options
                        .last_modified_time(file_time)
                        .unix_permissions(forced_mode.unwrap_or(mode)),
                    None => options.last_modified_time(zip::DateTime::default()),
                };
                writer
                    .start_file(entry.name, options)
                    .map_err(|e| format!("error creating file inside archive: {e}"))?;
                writer
                    .write_all(&entry.bytes)
                    .map_err(|e| format!("error creating file inside archive: {e}"))?;
            }
            writer
                .finish()
                .map(std::io::Cursor::into_inner)
                .map_err(|e| e.to_string())
        }
        "tar.gz" => {
            let gz = flate2::GzBuilder::new()
                .mtime(0)
                .operating_system(255)
                .write(Vec::new(), flate2::Compression::default());
            let mut tar = tar::Builder::new(gz);
            for entry in entries {
                let mut header = tar::Header::new_ustar();
                header.set_size(entry.bytes.len() as u64);
                header.set_mode(forced_mode.or(entry.mode).unwrap_or(0));
                header.set_mtime(0);
                header.set_uid(0);
                header.set_gid(0);
                header.set_entry_type(tar::EntryType::Regular);
                tar.append_data(&mut header, &entry.name, &entry.bytes[..])
                    .map_err(|e| {
                        format!(
                            "could not write header for file '{}', got error '{e}'",
                            entry.name
                        )
                    })?;
            }
            tar.into_inner()
                .and_then(flate2::write::GzEncoder::finish)
                .map_err(|e| e.to_string())
        }
        other => Err(format!("archive type not supported: {other}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The provider's outputs of an archive's bytes; `id` is the SHA-1.
fn outputs(bytes: &[u8]) -> Vec<(&'static str, Value)> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let sha1 = <sha1::Sha1 as sha1::Digest>::digest(bytes);
    let sha256 = sha2::Sha256::digest(bytes);
    let sha512 = sha2::Sha512::digest(bytes);
    vec![
        ("output_size", Value::number(bytes.len() as i64)),
        (
            "output_md5",
            Value::String(hex(&<md5::Md5 as md5::Digest>::digest(bytes))),
        ),
        ("output_sha", Value::String(hex(&sha1))),
        ("output_sha256", Value::String(hex(&sha256))),
        ("output_base64sha256", Value::String(b64(&sha256))),
        ("output_sha512", Value::String(hex(&sha512))),
        ("output_base64sha512", Value::String(b64(&sha512))),
        ("id", Value::String(hex(&sha1))),
    ]
}

/// Writes the archive at `output_path`, its directory made first.
fn write(config: &Value, bytes: &[u8]) -> Result<(), String> {
    let output = text(config, "output_path").unwrap_or_default();
    let path = Path::new(&output);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("error creating output path: {e}"))?;
    }
    let tmp = path.with_extension("gpustack-tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("error creating archive: {e}"))
}

#[async_trait::async_trait]
impl Provider for Archive {
    /// The archive file as it is: gone (made again by the next plan) or its hashes now.
    async fn read_resources(&self, request: ReadResourcesRequest) -> ReadResourcesResponse {
        let states = request
            .states
            .into_iter()
            .map(|state| {
                let output = text(&state, "output_path")?;
                let bytes = std::fs::read(output).ok()?;
                Some(with(&state, outputs(&bytes)))
            })
            .collect();
        ReadResourcesResponse {
            states,
            ..ReadResourcesResponse::default()
        }
    }

    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = schemas()
            .into_type(ResourceMode::Managed, "archive_file")
            .unwrap_or_default();
        let make = |config: &Value| -> Result<Value, String> {
            if !config.is_wholly_known() {
                return Ok(crate::state_only::unknown_computed(&schema, config));
            }
            Ok(with(config, outputs(&build(config)?)))
        };
        let mut response = plan_made(&schema, &request, make);
        // Sources changed since: a new archive replaces the old.
        if let Some(prior) = &request.prior_state
            && response.requires_replace.is_empty()
            && request.config.is_wholly_known()
            && let Ok(bytes) = build(&request.config)
            && text(prior, "output_sha") != Some(hex(&<sha1::Sha1 as sha1::Digest>::digest(&bytes)))
        {
            response.planned_state = with(&request.config, outputs(&bytes));
            response.requires_replace = vec!["output_sha".into()];
        }
        response
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        // Destroying leaves the file, as the provider does.
        let Some(planned) = &request.planned_state else {
            return ApplyResourceChangeResponse::default();
        };
        if request.prior_state.is_none()
            || attr(planned, "output_sha")
                != attr(
                    request.prior_state.as_ref().unwrap_or(&Value::Null),
                    "output_sha",
                )
        {
            let written = build(planned).and_then(|bytes| {
                write(planned, &bytes)?;
                Ok(bytes)
            });
            match written {
                Ok(bytes)
                    if attr(planned, "output_sha")
                        == Value::String(hex(&<sha1::Sha1 as sha1::Digest>::digest(&bytes))) => {}
                Ok(_) => {
                    return ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error(
                            "Archive changed since the plan",
                            "The sources of the archive changed between the plan and the apply: the archive written is not the one planned. Plan again.",
                        )],
                    };
                }
                Err(e) => {
                    return ApplyResourceChangeResponse {
                        new_state: request.prior_state,
                        diagnostics: vec![Diagnostic::error("Archive creation error", e)],
                    };
                }
            }
        }
        ApplyResourceChangeResponse {
            new_state: applied(&request),
            diagnostics: vec![],
        }
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        let made = build(&request.config).and_then(|bytes| {
            write(&request.config, &bytes)?;
            Ok(bytes)
        });
        match made {
            Ok(bytes) => ReadDataSourceResponse {
                state: with(&request.config, outputs(&bytes)),
                diagnostics: vec![],
            },
            Err(e) => ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![Diagnostic::error("Archive creation error", e)],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_only::object;

    #[test]
    fn modes_parse_as_go_parses_them() {
        assert_eq!(file_mode("0666").unwrap(), 0o666);
        assert_eq!(file_mode("0o644").unwrap(), 0o644);
        assert_eq!(file_mode("666").unwrap(), 666);
        assert!(file_mode("rw").is_err());
    }

    /// A directory's files in walk order, an excluded tree and file left out, no directory
    /// entries; the same sources make the same bytes.
    #[test]
    fn a_directory_archives_its_files_in_walk_order_without_what_is_excluded() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        for (path, content) in [
            ("b.txt", "b"),
            ("a/x.txt", "x"),
            ("a/y.log", "y"),
            ("skip/z.txt", "z"),
            ("c/d/e.txt", "e"),
        ] {
            let p = src.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        let config = object([
            ("type", Value::string("zip")),
            ("source_dir", Value::String(src.display().to_string())),
            (
                "excludes",
                Value::List(vec![Value::string("skip"), Value::string("**/*.log")]),
            ),
            (
                "output_path",
                Value::String(dir.path().join("out/a.zip").display().to_string()),
            ),
        ]);
        let bytes = build(&config).unwrap();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
        let names: Vec<String> = (0..zip.len())
            .map(|i| zip.by_index(i).unwrap().name().unwrap().to_string())
            .collect();
        assert_eq!(names, ["a/x.txt", "b.txt", "c/d/e.txt"]);
        assert_eq!(build(&config).unwrap(), bytes, "deterministic");
        let tar = build(&with(&config, [("type", Value::string("tar.gz"))])).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tar[..]));
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a/x.txt", "b.txt", "c/d/e.txt"]);
        let empty = with(
            &config,
            [("excludes", Value::List(vec![Value::string("*")]))],
        );
        assert!(
            build(&empty)
                .unwrap_err()
                .contains("archive has not been created as it would be empty")
        );
    }
}
