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
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    fn new(path: PathBuf, display_name: String, text: String) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self {
            path,
            display_name,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset, clamped to the file.
    pub fn pos(&self, byte: usize) -> Pos {
        let byte = byte.min(self.text.len());
        let line_index = self
            .line_starts
            .partition_point(|&start| start <= byte)
            .saturating_sub(1);
        let line_start = self.line_starts.get(line_index).copied().unwrap_or(0);
        let column = self
            .text
            .get(line_start..byte)
            .map_or(byte - line_start, |prefix| prefix.chars().count());
        Pos {
            line: line_index + 1,
            column: column + 1,
            byte,
        }
    }

    /// The byte offset of a 1-based line and column, as parsers report them.
    pub fn offset(&self, line: usize, column: usize) -> usize {
        let Some(&line_start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = self.text.get(line_start..).unwrap_or("");
        rest.char_indices()
            .nth(column.saturating_sub(1))
            .map_or(self.text.len(), |(i, _)| line_start + i)
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

    pub fn range(&self, span: Span) -> SourceRange {
        let file = self.file(span.file);
        SourceRange {
            filename: file.display_name.clone(),
            start: file.pos(span.start),
            end: file.pos(span.end),
        }
    }

    pub fn snippet(&self, span: Span) -> &str {
        self.file(span.file)
            .text
            .get(span.start..span.end)
            .unwrap_or("")
    }
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
}
