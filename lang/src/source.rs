//! Source files of a stack and the mapping from byte offsets to lines and columns.

use gpustack_protocol::{Pos, SourceRange};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A source file, as the ranges of one syntax tree refer to it. A large file is parsed a run
/// of blocks at a time, and each tree's ranges count from the start of its run: `base` is
/// where that run starts in the file. Invariant: a `Span` holds the file's own offsets and a
/// `FileId` of base 0; `Span::new` is where a tree's range becomes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    index: u32,
    base: u32,
}

impl FileId {
    /// The file, for a tree parsed from its text from byte `offset` on; `None` past 4 GiB.
    pub fn parsed_from(self, offset: usize) -> Option<Self> {
        Some(Self {
            index: self.index,
            base: self.base.checked_add(u32::try_from(offset).ok()?)?,
        })
    }
}

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// The span of `range`, counted from where `file`'s syntax tree was parsed from.
    pub fn new(file: FileId, range: Range<usize>) -> Self {
        let base = file.base as usize;
        Self {
            file: FileId {
                index: file.index,
                base: 0,
            },
            start: base + range.start,
            end: base + range.end,
        }
    }
}

pub struct SourceFile {
    pub path: PathBuf,
    /// How diagnostics name the file: relative to the directory the command was run on.
    pub display_name: String,
    /// The text syntax trees are parsed from, which spans index: the file's own text, or for
    /// a file in Terraform's JSON syntax the HCL it was translated into.
    pub text: String,
    line_starts: Vec<usize>,
    /// For a translated file, the file as written and where each byte of `text` came from.
    original: Option<Box<Original>>,
    /// Byte ranges of the shown text that hold secrets: no excerpt shows their lines, and a
    /// diagnostic near them quotes no token (see [`SourceMap::is_sensitive`]).
    sensitive: Vec<Range<usize>>,
}

/// A file as written, where its syntax text is a translation of it.
struct Original {
    text: String,
    line_starts: Vec<usize>,
    /// For each byte of the syntax text (and one past its end), the offset in `text` it was
    /// made from.
    map: Vec<u32>,
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

fn pos_in(text: &str, line_starts: &[usize], byte: usize) -> Pos {
    let byte = byte.min(text.len());
    let line_index = line_starts
        .partition_point(|&start| start <= byte)
        .saturating_sub(1);
    let line_start = line_starts.get(line_index).copied().unwrap_or(0);
    let column = text
        .get(line_start..byte)
        .map_or(byte - line_start, |prefix| prefix.chars().count());
    Pos {
        line: line_index + 1,
        column: column + 1,
        byte,
    }
}

fn offset_in(text: &str, line_starts: &[usize], line: usize, column: usize) -> usize {
    let Some(&line_start) = line_starts.get(line.saturating_sub(1)) else {
        return text.len();
    };
    let rest = text.get(line_start..).unwrap_or("");
    rest.char_indices()
        .nth(column.saturating_sub(1))
        .map_or(text.len(), |(i, _)| line_start + i)
}

impl SourceFile {
    fn new(path: PathBuf, display_name: String, text: String) -> Self {
        Self {
            path,
            display_name,
            line_starts: line_starts(&text),
            sensitive: passphrase_lines(&text),
            text,
            original: None,
        }
    }

    /// Whether an excerpt of the shown text's lines `first..=last` (1-based) would show a
    /// secret.
    pub fn hides_lines(&self, first: usize, last: usize) -> bool {
        self.sensitive.iter().any(|range| {
            let from = self.shown_pos(range.start).line;
            let to = self
                .shown_pos(range.end.saturating_sub(1).max(range.start))
                .line;
            from <= last && to >= first
        })
    }

    /// The file as its author wrote it: what diagnostics quote and a plan's snapshot keeps.
    pub fn shown_text(&self) -> &str {
        self.original.as_ref().map_or(&self.text, |o| &o.text)
    }

    /// 1-based line and column of a byte offset of [`SourceFile::shown_text`].
    pub fn shown_pos(&self, byte: usize) -> Pos {
        match &self.original {
            Some(o) => pos_in(&o.text, &o.line_starts, byte),
            None => self.pos(byte),
        }
    }

    /// The byte offset of a 1-based line and column of [`SourceFile::shown_text`].
    pub fn shown_offset(&self, line: usize, column: usize) -> usize {
        match &self.original {
            Some(o) => offset_in(&o.text, &o.line_starts, line, column),
            None => self.offset(line, column),
        }
    }

    /// Where a range of the syntax text was written, in [`SourceFile::shown_text`].
    fn shown_range(&self, start: usize, end: usize) -> (usize, usize) {
        let Some(o) = &self.original else {
            return (start, end);
        };
        let at = |i: usize| {
            o.map
                .get(i.min(o.map.len().saturating_sub(1)))
                .map_or(0, |&b| b as usize)
        };
        let from = at(start);
        // The last byte of the range, and on to the end of what it was made from.
        let to = if end > start {
            let last = at(end - 1);
            let mut to = last + 1;
            while to < o.text.len() && !o.text.is_char_boundary(to) {
                to += 1;
            }
            to.max(from)
        } else {
            from
        };
        (from, to.min(o.text.len()))
    }

    /// 1-based line and column (in characters) of a byte offset of the syntax text, clamped
    /// to the file.
    pub fn pos(&self, byte: usize) -> Pos {
        pos_in(&self.text, &self.line_starts, byte)
    }

    /// The byte offset of a 1-based line and column of the syntax text, as parsers report them.
    pub fn offset(&self, line: usize, column: usize) -> usize {
        offset_in(&self.text, &self.line_starts, line, column)
    }
}

/// Every file read during a run, so diagnostics can quote them.
#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    base: PathBuf,
}

impl SourceMap {
    /// `base` is the directory file names are shown relative to.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        Self {
            files: Vec::new(),
            base: base.into(),
        }
    }

    /// A text that is a secret as a whole, or holds one anywhere (the encryption settings of
    /// `GPUSTACK_ENCRYPTION`): diagnostics in it show where, never what.
    pub fn add_sensitive(&mut self, path: &Path, text: String) -> FileId {
        let id = self.add(path, text);
        self.mark_file_sensitive(id);
        id
    }

    /// Marks a whole file as holding secrets.
    pub fn mark_file_sensitive(&mut self, id: FileId) {
        let file = &mut self.files[id.index as usize];
        let len = file.shown_text().len();
        file.sensitive.clear();
        file.sensitive.push(0..len.max(1));
    }

    /// Marks the lines of `span` as holding a secret (a sensitive variable's value in a
    /// variables file).
    pub fn mark_sensitive(&mut self, span: Span) {
        let file = &mut self.files[span.file.index as usize];
        let (start, end) = file.shown_range(span.start, span.end);
        file.sensitive.push(start..end.max(start + 1));
    }

    /// Whether a diagnostic at `span` is about a secret's own text (the line where its span
    /// starts, which is what a message quotes from, holds a sensitive range):
    /// [`crate::diag::Diag::to_diagnostic`] masks the tokens such a
    /// diagnostic quotes. Whether its excerpt may be shown is [`SourceFile::hides_lines`] of
    /// the lines the excerpt shows ([`EXCERPT_CONTEXT_LINES`] around the span), which the
    /// binary's renderer asks.
    pub fn is_sensitive(&self, span: Span) -> bool {
        let file = self.file(span.file);
        if file.sensitive.is_empty() {
            return false;
        }
        let line = self.range(span).start.line;
        file.hides_lines(line, line)
    }

    pub fn add(&mut self, path: &Path, text: String) -> FileId {
        let display_name = display_path(&self.base, path);
        let id = FileId {
            index: u32::try_from(self.files.len()).unwrap_or(u32::MAX),
            base: 0,
        };
        self.files
            .push(SourceFile::new(path.to_path_buf(), display_name, text));
        id
    }

    /// A file whose syntax text was translated from what its author wrote (`shown`, a file in
    /// Terraform's JSON syntax): `map` holds, for each byte of `text` and one past its end,
    /// the offset in `shown` it was made from. Spans index `text`; diagnostics show `shown`.
    pub fn add_translated(
        &mut self,
        path: &Path,
        text: String,
        shown: String,
        map: Vec<u32>,
    ) -> FileId {
        let id = self.add(path, text);
        let file = &mut self.files[id.index as usize];
        // Sensitive ranges are offsets into the text diagnostics show.
        file.sensitive = passphrase_lines(&shown);
        file.original = Some(Box::new(Original {
            line_starts: line_starts(&shown),
            text: shown,
            map,
        }));
        id
    }

    /// How diagnostics name a file that is not one of the stack's sources.
    pub fn display_name(&self, path: &Path) -> String {
        display_path(&self.base, &normalize(path))
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.index as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| {
            let id = FileId {
                index: i as u32,
                base: 0,
            };
            (id, f)
        })
    }

    /// Where a span was written: in the file as its author wrote it.
    pub fn range(&self, span: Span) -> SourceRange {
        let file = self.file(span.file);
        let (start, end) = file.shown_range(span.start, span.end);
        SourceRange {
            filename: file.display_name.clone(),
            start: file.shown_pos(start),
            end: file.shown_pos(end),
        }
    }

    pub fn snippet(&self, span: Span) -> &str {
        self.file(span.file)
            .text
            .get(span.start..span.end)
            .unwrap_or("")
    }
}

/// How many lines around a diagnostic's span its excerpt shows.
pub const EXCERPT_CONTEXT_LINES: usize = 1;

/// The lines of `text` that assign a passphrase (`passphrase = ...`, `"passphrase": ...`, a
/// heredoc to its end), wherever on a line the attribute sits (a one-line block, minified
/// JSON): found without parsing, so that a file that does not parse still keeps its encryption
/// passphrases out of excerpts. Marking a few lines too many costs an excerpt; missing one
/// shows a secret, so anything that reads as a `passphrase` key is taken.
fn passphrase_lines(text: &str) -> Vec<Range<usize>> {
    const KEY: &str = "passphrase";
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let bytes = text.as_bytes();
    // Looked up, not searched for: a long line with many keys on it stays linear. Found
    // only for a text that names the key (most name none).
    let starts = std::cell::OnceCell::new();
    let starts = || starts.get_or_init(|| line_starts(text));
    let line_index = |at: usize| {
        starts()
            .partition_point(|&start| start <= at)
            .saturating_sub(1)
    };
    let line_start = |at: usize| starts()[line_index(at)];
    let line_end = |at: usize| {
        starts()
            .get(line_index(at) + 1)
            .copied()
            .unwrap_or(text.len())
    };
    let mut found: Vec<Range<usize>> = Vec::new();
    let mut search_from = 0;
    while let Some(offset) = text[search_from..].find(KEY) {
        let key_start = search_from + offset;
        let key_end = key_start + KEY.len();
        search_from = key_end;
        let stands_alone = (key_start == 0 || !is_name_byte(bytes[key_start - 1]))
            && bytes.get(key_end).is_none_or(|&b| !is_name_byte(b));
        if !stands_alone {
            continue;
        }
        // JSON allows line breaks between a key, its colon and its value.
        let after_key = text[key_end..].trim_start_matches('"').trim_start();
        let Some(value) = after_key
            .strip_prefix('=')
            .or_else(|| after_key.strip_prefix(':'))
        else {
            continue;
        };
        let value = value.trim_start();
        let value_start = text.len() - value.len();
        let mut end = line_end(value_start);
        if let Some(marker) = value.strip_prefix("<<").map(|m| {
            let first_line = m.split('\n').next().unwrap_or("");
            first_line
                .trim_start_matches('-')
                .trim()
                .trim_matches('"')
                .to_owned()
        }) && !marker.is_empty()
        {
            let mut at = end;
            while at < text.len() {
                let next_end = line_end(at);
                end = next_end;
                if text[at..next_end].trim() == marker {
                    break;
                }
                at = next_end;
            }
        }
        let start = line_start(key_start);
        match found.last_mut() {
            Some(last) if last.end >= start => last.end = last.end.max(end),
            _ => found.push(start..end),
        }
        // All up to `end` is marked: searching it again (a heredoc's body) would only cost.
        search_from = search_from.max(end);
    }
    found
}

/// `base/a/b.hcl` → `a/b.hcl`; paths outside `base` keep `..` steps so they stay meaningful.
fn display_path(base: &Path, path: &Path) -> String {
    let relative = pathdiff(path, base).unwrap_or_else(|| path.to_path_buf());
    let shown = relative.to_string_lossy().replace('\\', "/");
    if shown.is_empty() { ".".into() } else { shown }
}

/// `path` relative to `base`, lexically (`..` steps where needed).
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    pathdiff(path, base).unwrap_or_else(|| path.to_path_buf())
}

fn pathdiff(path: &Path, base: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let path = normalize(path);
    let base = normalize(base);
    if path.is_absolute() != base.is_absolute() {
        return None;
    }
    let mut ita = path.components().peekable();
    let mut itb = base.components().peekable();
    while let (Some(a), Some(b)) = (ita.peek(), itb.peek()) {
        if a != b {
            break;
        }
        ita.next();
        itb.next();
    }
    let mut out = PathBuf::new();
    for c in itb {
        if c != Component::CurDir {
            out.push("..");
        }
    }
    for c in ita {
        out.push(c.as_os_str());
    }
    Some(out)
}

/// Lexical normalisation: removes `.` and folds `a/..`; never touches the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_not_bytes() {
        let mut map = SourceMap::new("/stack");
        let id = map.add(Path::new("/stack/main.hcl"), "a = 1\nb = \"é\" x\n".into());
        let file = map.file(id);
        assert_eq!(
            file.pos(0),
            Pos {
                line: 1,
                column: 1,
                byte: 0
            }
        );
        let x = file.text.find('x').unwrap();
        assert_eq!(
            file.pos(x),
            Pos {
                line: 2,
                column: 9,
                byte: x
            }
        );
        assert_eq!(file.offset(2, 9), x);
        assert_eq!(map.range(Span::new(id, 0..1)).filename, "main.hcl");
    }

    #[test]
    fn display_names_are_relative() {
        assert_eq!(
            display_path(
                Path::new("/s/examples/a"),
                Path::new("/s/modules/m/main.hcl")
            ),
            "../../modules/m/main.hcl"
        );
        assert_eq!(
            display_path(Path::new("ex"), Path::new("ex/./main.hcl")),
            "main.hcl"
        );
    }

    /// The 1-based lines [`passphrase_lines`] marks in `text`.
    fn marked_lines(text: &str) -> Vec<usize> {
        let mut map = SourceMap::new("/stack");
        let id = map.add(Path::new("/stack/main.hcl"), text.into());
        let file = map.file(id);
        let lines = text.lines().count();
        (1..=lines).filter(|&l| file.hides_lines(l, l)).collect()
    }

    #[test]
    fn a_passphrase_on_a_line_of_its_own_is_marked() {
        let text = "key_provider \"pbkdf2\" \"k\" {\n  passphrase = \"s3cret\"\n}\n";
        assert_eq!(marked_lines(text), [2]);
    }

    #[test]
    fn a_passphrase_inside_a_one_line_block_is_marked() {
        let text = "encryption {\n  key_provider \"pbkdf2\" \"k\" { passphrase = \"s3cret\" }\n  oops\n}\n";
        assert_eq!(marked_lines(text), [2]);
    }

    #[test]
    fn a_passphrase_in_minified_json_is_marked() {
        let text = "{\"terraform\": {\"encryption\": {\"key_provider\": {\"pbkdf2\": {\"k\": {\"passphrase\": \"s3cret\", \"iterations\": \"${1 +}\"}}}}}}\n";
        assert_eq!(marked_lines(text), [1]);
    }

    #[test]
    fn a_json_passphrase_whose_value_is_on_a_later_line_is_marked_to_that_line() {
        let text = "{\n  \"passphrase\"\n  :\n  \"s3cret\",\n  \"other\": 1\n}\n";
        assert_eq!(marked_lines(text), [2, 3, 4]);
    }

    #[test]
    fn a_passphrase_heredoc_is_marked_to_its_end() {
        let text = "a = 1\npassphrase = <<-EOT\n  s3cret\n  EOT\nb = 2\n";
        assert_eq!(marked_lines(text), [2, 3, 4]);
    }

    #[test]
    fn words_that_only_contain_passphrase_or_do_not_assign_it_are_not_marked() {
        let text =
            "passphrase_file = \"x\"\nmy_passphrase = \"y\"\n# the passphrase comes from a vault\n";
        assert!(marked_lines(text).is_empty());
    }

    #[test]
    fn a_translated_json_file_marks_the_lines_of_the_json_its_author_wrote() {
        let shown = "{\n\"x\": 1,\n\"passphrase\": \"s3cret\"\n}\n".to_owned();
        let syntax = "passphrase = \"s3cret\"\nx = 1\n".to_owned();
        let map_len = syntax.len() + 1;
        let mut map = SourceMap::new("/stack");
        let id = map.add_translated(
            Path::new("/stack/main.tf.json"),
            syntax,
            shown,
            vec![0; map_len],
        );
        let file = map.file(id);
        assert!(file.hides_lines(3, 3));
        assert!(!file.hides_lines(1, 2));
    }
}
