//! Canonical formatting of HCL source, in the style of `terraform fmt`.
//!
//! The formatter works on lines and lexical tokens, like HashiCorp's `hclwrite`, instead of
//! re-printing a syntax tree: it only ever rewrites whitespace between tokens, so every comment
//! and every deliberate blank line stays where the author put it.
//!
//! The input is parsed with `hcl_edit` first. Besides rejecting invalid input, the parse tells
//! where every quoted string and heredoc starts and ends, so those are never re-lexed here (the
//! parser's template rules have corner cases a hand-written lexer would get subtly wrong). The
//! formatted text is parsed again and compared with the input, so a formatter bug can never
//! change what a file means.
//!
//! A *logical line* runs from one newline that sits in plain code to the next one. It spans more
//! than one physical line only when a multi-line token (a heredoc, a quoted string with a literal
//! newline, a `/* */` comment) crosses a line break. Only the first physical line of a logical
//! line is re-indented and re-spaced; the physical lines that start inside such a token are
//! copied verbatim.

use hcl_edit::Span;
use hcl_edit::expr::{Array, Expression, FuncArgs, Object, ObjectKey};
use hcl_edit::structure::{BlockLabel, Body};
use hcl_edit::visit::{Visit, visit_expr};
use hcl_edit::visit_mut::{VisitMut, visit_array_mut, visit_func_args_mut};
use std::ops::Range;

/// An input that could not be formatted because it is not valid HCL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatError {
    /// The parser's description of the problem.
    pub message: String,
    /// One-based line of the error.
    pub line: usize,
    /// One-based column (in characters) of the error.
    pub column: usize,
}

impl FormatError {
    fn from_parse(err: &hcl_edit::parser::Error, prefix: &str) -> Self {
        FormatError {
            message: format!("{prefix}{}", err.message()),
            line: err.location().line(),
            column: err.location().column(),
        }
    }
}

/// Canonical formatting of an HCL file, like `terraform fmt`.
///
/// Rewrites only whitespace: indentation (two spaces per bracket level, counted as
/// `terraform fmt` counts them), one space around `=`, alignment of the `=` of consecutive
/// single-line assignments, one space before the `{` of a block header, no trailing whitespace,
/// at most one blank line in a row and exactly one newline at the end of a non-empty file.
/// Heredoc bodies, string contents and the inside of multi-line comments are kept byte for byte.
/// CRLF line endings become LF.
///
/// # Errors
///
/// Returns a [`FormatError`] with the parser's message and location when `source` is not valid
/// HCL; invalid input is never formatted. Should the formatted text ever fail to parse back to
/// the same values (a formatter bug), the error says so instead of returning it.
pub fn format_hcl(source: &str) -> Result<String, FormatError> {
    let body =
        hcl_edit::parser::parse_body(source).map_err(|err| FormatError::from_parse(&err, ""))?;
    let normalized = normalize_line_endings(source);
    let (text, body) = if normalized.len() == source.len() {
        (source, body)
    } else {
        match hcl_edit::parser::parse_body(&normalized) {
            Ok(normalized_body) => (normalized.as_str(), normalized_body),
            // Should not happen; keeping the line endings is the safe way out.
            Err(_) => (source, body),
        }
    };

    let tokens = Scanner::new(text, template_spans(&body)).scan();
    let lines = split_logical_lines(text, &tokens);
    let formatted = render(text, &tokens, &lines);

    let formatted_body = hcl_edit::parser::parse_body(&formatted).map_err(|err| {
        FormatError::from_parse(&err, "internal formatter error, output invalid: ")
    })?;
    if without_trailing(formatted_body) != without_trailing(body) {
        return Err(FormatError {
            message: "internal formatter error: formatting would change the meaning of the file"
                .to_owned(),
            line: 1,
            column: 1,
        });
    }
    Ok(formatted)
}

/// Turns CRLF into LF. Every run of CRs before a LF goes, so that the result has no CRLF left and
/// formatting stays idempotent.
fn normalize_line_endings(source: &str) -> String {
    let mut normalized = String::with_capacity(source.len());
    for piece in source.split_inclusive('\n') {
        match piece.strip_suffix('\n') {
            Some(line) => {
                normalized.push_str(line.trim_end_matches('\r'));
                normalized.push('\n');
            }
            None => normalized.push_str(piece),
        }
    }
    normalized
}

/// Byte ranges of the outermost quoted strings and heredocs, in source order.
fn template_spans(body: &Body) -> Vec<Range<usize>> {
    struct Collector(Vec<Range<usize>>);

    impl Visit for Collector {
        fn visit_expr(&mut self, expr: &Expression) {
            match expr {
                Expression::String(_)
                | Expression::StringTemplate(_)
                | Expression::HeredocTemplate(_) => self.0.extend(expr.span()),
                _ => visit_expr(self, expr),
            }
        }

        fn visit_block_label(&mut self, label: &BlockLabel) {
            if let BlockLabel::String(string) = label {
                self.0.extend(string.span());
            }
        }
    }

    let mut collector = Collector(Vec::new());
    collector.visit_body(body);
    let mut spans = collector.0;
    spans.sort_by_key(|span| span.start);
    spans
}

/// Drops the whitespace and comments `hcl_edit` keeps before closing brackets: the only layout
/// that takes part when it compares values.
fn without_trailing(mut body: Body) -> Body {
    struct ForgetTrailing;

    impl VisitMut for ForgetTrailing {
        fn visit_array_mut(&mut self, node: &mut Array) {
            node.set_trailing("");
            visit_array_mut(self, node);
        }

        fn visit_object_mut(&mut self, node: &mut Object) {
            // Object keys are immutable in place, so the object is rebuilt to reach into them.
            let mut rebuilt = Object::new();
            for (mut key, mut value) in std::mem::take(node) {
                if let ObjectKey::Expression(expr) = &mut key {
                    self.visit_expr_mut(expr);
                }
                self.visit_object_value_mut(&mut value);
                rebuilt.insert(key, value);
            }
            *node = rebuilt;
        }

        fn visit_func_args_mut(&mut self, node: &mut FuncArgs) {
            node.set_trailing("");
            visit_func_args_mut(self, node);
        }
    }

    ForgetTrailing.visit_body_mut(&mut body);
    body
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    /// A line break in plain code (never one inside a string, heredoc or comment).
    Newline,
    /// `# ...` or `// ...` up to (excluding) the line break, or a whole `/* ... */`.
    Comment,
    /// A quoted string or a heredoc, including everything nested inside it.
    Template,
    /// `{`, `[` or `(`.
    Open,
    /// `}`, `]` or `)`.
    Close,
    /// A single `=` (never part of `==`, `!=`, `<=`, `>=` or `=>`).
    Equals,
    /// Identifiers, keywords and numbers.
    Word,
    /// Any other operator or punctuation.
    Punct,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: TokenKind,
    start: usize,
    end: usize,
}

/// Splits the source into tokens; each string or heredoc known from the parse is one token.
struct Scanner<'a> {
    source: &'a str,
    bytes: &'a [u8],
    pos: usize,
    templates: std::iter::Peekable<std::vec::IntoIter<Range<usize>>>,
    tokens: Vec<Token>,
}

impl<'a> Scanner<'a> {
    fn new(source: &'a str, templates: Vec<Range<usize>>) -> Self {
        Scanner {
            source,
            bytes: source.as_bytes(),
            pos: 0,
            templates: templates.into_iter().peekable(),
            tokens: Vec::new(),
        }
    }

    fn scan(mut self) -> Vec<Token> {
        while self.pos < self.bytes.len() {
            self.step();
        }
        self.tokens
    }

    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(offset).copied()
    }

    /// Consumes the bytes up to `end` as one token of `kind`.
    fn take_until(&mut self, kind: TokenKind, end: usize) {
        let start = self.pos;
        self.pos = end.max(start + 1).min(self.bytes.len());
        self.tokens.push(Token {
            kind,
            start,
            end: self.pos,
        });
    }

    fn take(&mut self, kind: TokenKind, len: usize) {
        self.take_until(kind, self.pos + len);
    }

    fn find_from(&self, from: usize, needle: &[u8]) -> Option<usize> {
        let haystack = self.bytes.get(from..)?;
        haystack
            .windows(needle.len())
            .position(|window| window == needle)
            .map(|index| from + index)
    }

    /// The end of the string or heredoc starting at the current position, if there is one.
    fn template_end(&mut self) -> Option<usize> {
        while self
            .templates
            .next_if(|span| span.start < self.pos)
            .is_some()
        {}
        let span = self.templates.next_if(|span| span.start == self.pos)?;
        // Never split a character, whatever the span says.
        (span.end > span.start && self.source.get(span.clone()).is_some()).then_some(span.end)
    }

    fn step(&mut self) {
        if let Some(end) = self.template_end() {
            self.take_until(TokenKind::Template, end);
            return;
        }
        let Some(byte) = self.byte_at(self.pos) else {
            return;
        };
        let next = self.byte_at(self.pos + 1);
        match byte {
            b' ' | b'\t' | b'\r' => self.pos += 1,
            b'\n' => self.take(TokenKind::Newline, 1),
            b'#' => self.line_comment(),
            b'/' if next == Some(b'/') => self.line_comment(),
            b'/' if next == Some(b'*') => {
                let end = self
                    .find_from(self.pos + 2, b"*/")
                    .map_or(self.bytes.len(), |close| close + 2);
                self.take_until(TokenKind::Comment, end);
            }
            b'{' | b'[' | b'(' => self.take(TokenKind::Open, 1),
            b'}' | b']' | b')' => self.take(TokenKind::Close, 1),
            b'=' if matches!(next, Some(b'=' | b'>')) => self.take(TokenKind::Punct, 2),
            b'=' => self.take(TokenKind::Equals, 1),
            b'!' | b'<' | b'>' if next == Some(b'=') => self.take(TokenKind::Punct, 2),
            _ if is_word_byte(byte) => {
                let mut end = self.pos;
                while self.byte_at(end).is_some_and(is_word_byte) {
                    end += 1;
                }
                self.take_until(TokenKind::Word, end);
            }
            _ => self.take(TokenKind::Punct, 1),
        }
    }

    fn line_comment(&mut self) {
        let end = self.find_from(self.pos, b"\n").unwrap_or(self.bytes.len());
        self.take_until(TokenKind::Comment, end);
    }
}

/// Bytes that can continue an identifier or number. Any byte of a multi-byte UTF-8 character
/// counts, which keeps every token boundary on a character boundary.
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' || byte >= 0x80
}

#[derive(Debug, Clone)]
struct LogicalLine {
    /// Offset of the line break ending the first physical line (or the end of the source).
    first_line_end: usize,
    /// Offset of the code newline ending the logical line (or the end of the source).
    end: usize,
    /// Indices into the token list, newline tokens excluded.
    tokens: Range<usize>,
}

fn split_logical_lines(source: &str, tokens: &[Token]) -> Vec<LogicalLine> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut first_token = 0;
    for (index, token) in tokens.iter().enumerate() {
        if token.kind == TokenKind::Newline {
            lines.push(logical_line(source, start, token.start, first_token..index));
            start = token.end;
            first_token = index + 1;
        }
    }
    lines.push(logical_line(
        source,
        start,
        source.len(),
        first_token..tokens.len(),
    ));
    lines
}

fn logical_line(source: &str, start: usize, end: usize, tokens: Range<usize>) -> LogicalLine {
    let first_line_end = source
        .get(start..end)
        .and_then(|text| text.find('\n'))
        .map_or(end, |offset| start + offset);
    LogicalLine {
        first_line_end,
        end,
        tokens,
    }
}

/// Indentation as `terraform fmt` (`hclwrite`) computes it: a line whose brackets open more than
/// they close indents the lines after it by one level, however many brackets it opened
/// (`merge({` indents once); a line whose brackets close more than they open is itself dedented
/// by every level its closers fully close.
#[derive(Debug, Default)]
struct Indenter {
    /// For each open indentation level, the number of brackets still open on it.
    levels: Vec<usize>,
}

impl Indenter {
    /// Returns the indentation of a line whose brackets open `net` more than they close.
    fn line(&mut self, net: isize) -> usize {
        let indent = self.levels.len();
        if net > 0 {
            self.levels.push(net.unsigned_abs());
            return indent;
        }
        let mut closed = net.unsigned_abs();
        while closed > 0 {
            let Some(open) = self.levels.last_mut() else {
                break;
            };
            if closed >= *open {
                closed -= *open;
                self.levels.pop();
            } else {
                *open -= closed;
                closed = 0;
            }
        }
        self.levels.len()
    }
}

/// How one logical line is rewritten.
#[derive(Debug, Clone, Copy)]
struct LinePlan {
    indent: usize,
    /// Token index of the `=` that separates an attribute or object item key from its value.
    key_equals: Option<usize>,
    /// Whether that `=` is aligned with the ones on neighbouring lines.
    aligned: bool,
    /// Token index of the `{` that opens a block body on a block header line.
    header_brace: Option<usize>,
}

/// The first physical line of a logical line, split before the key's `=` (if any) so the `=`
/// can be moved to its aligned column.
#[derive(Debug)]
struct FirstLine {
    head: String,
    /// Starts with the key's `=`; empty when the line has none.
    tail: String,
    /// Spaces between `head` and `tail`.
    padding: usize,
}

fn render(source: &str, tokens: &[Token], lines: &[LogicalLine]) -> String {
    let plans = plan_lines(source, tokens, lines);
    let mut first_lines: Vec<Option<FirstLine>> = lines
        .iter()
        .zip(&plans)
        .map(|(line, plan)| {
            let line_tokens = tokens.get(line.tokens.clone()).unwrap_or_default();
            (!line_tokens.is_empty()).then(|| render_first_line(source, line, line_tokens, plan))
        })
        .collect();
    align_assignments(&plans, &mut first_lines);

    let mut output = String::with_capacity(source.len() + source.len() / 8);
    let mut blank_pending = false;
    for (line, first_line) in lines.iter().zip(&first_lines) {
        let Some(first_line) = first_line else {
            // Blank lines before the first content are dropped, runs of them collapse to one,
            // and the ones at the end never get flushed.
            blank_pending = !output.is_empty();
            continue;
        };
        if blank_pending {
            output.push('\n');
            blank_pending = false;
        }
        output.push_str(&first_line.head);
        if !first_line.tail.is_empty() {
            push_spaces(&mut output, first_line.padding);
            output.push_str(&first_line.tail);
        }
        output.push('\n');
        render_continuation_lines(source, line, &mut output);
    }
    output
}

fn plan_lines(source: &str, tokens: &[Token], lines: &[LogicalLine]) -> Vec<LinePlan> {
    let mut indenter = Indenter::default();
    lines
        .iter()
        .map(|line| {
            let line_tokens = tokens.get(line.tokens.clone()).unwrap_or_default();
            let indent = indenter.line(net_brackets(line_tokens));
            let key_equals = key_equals(line_tokens, line.first_line_end);
            LinePlan {
                indent,
                key_equals,
                aligned: key_equals.is_some_and(|index| is_single_line_value(line_tokens, index)),
                header_brace: header_brace(source, line_tokens, line.first_line_end),
            }
        })
        .collect()
}

/// The first `=` outside any bracket opened on the line, when it is on the first physical line
/// and has a key before it.
fn key_equals(tokens: &[Token], first_line_end: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate() {
        match token.kind {
            TokenKind::Open => depth += 1,
            TokenKind::Close => depth = depth.checked_sub(1)?,
            TokenKind::Equals if depth == 0 => {
                return (index > 0 && token.start < first_line_end).then_some(index);
            }
            _ => {}
        }
    }
    None
}

/// Whether the value after the `=` at `equals` closes every bracket it opens on this line. As in
/// `terraform fmt`, an assignment whose value continues on the next lines (`tags = {`) is not
/// aligned with its neighbours and ends their group.
fn is_single_line_value(tokens: &[Token], equals: usize) -> bool {
    net_brackets(tokens.get(equals..).unwrap_or_default()) == 0
}

/// Opening minus closing brackets.
fn net_brackets(tokens: &[Token]) -> isize {
    tokens
        .iter()
        .map(|token| match token.kind {
            TokenKind::Open => 1,
            TokenKind::Close => -1,
            _ => 0,
        })
        .sum()
}

/// On `IDENT (IDENT | "label")* {`, the index of that `{`.
fn header_brace(source: &str, tokens: &[Token], first_line_end: usize) -> Option<usize> {
    if tokens.first()?.kind != TokenKind::Word {
        return None;
    }
    for (index, token) in tokens.iter().enumerate().skip(1) {
        if token.end > first_line_end {
            return None;
        }
        match token.kind {
            TokenKind::Word => {}
            TokenKind::Template if source.as_bytes().get(token.start) == Some(&b'"') => {}
            TokenKind::Open if source.as_bytes().get(token.start) == Some(&b'{') => {
                return Some(index);
            }
            _ => return None,
        }
    }
    None
}

/// Pads the `=` of each run of consecutive single-line assignments to a common column.
fn align_assignments(plans: &[LinePlan], first_lines: &mut [Option<FirstLine>]) {
    let mut group: Vec<&mut FirstLine> = Vec::new();
    for (plan, first_line) in plans.iter().zip(first_lines.iter_mut()) {
        match first_line {
            Some(first_line) if plan.aligned => group.push(first_line),
            _ => pad_group(&mut group),
        }
    }
    pad_group(&mut group);
}

fn pad_group(group: &mut Vec<&mut FirstLine>) {
    let widest = group
        .iter()
        .map(|line| line.head.chars().count())
        .max()
        .unwrap_or(0);
    for line in group.drain(..) {
        line.padding = widest - line.head.chars().count() + 1;
    }
}

/// Re-indents and re-spaces the first physical line of a non-blank logical line.
fn render_first_line(
    source: &str,
    line: &LogicalLine,
    tokens: &[Token],
    plan: &LinePlan,
) -> FirstLine {
    let mut head = "  ".repeat(plan.indent);
    let mut tail = String::new();
    let mut ends_in_code = true;
    let mut previous: Option<&Token> = None;
    for (index, token) in tokens.iter().enumerate() {
        if token.start >= line.first_line_end {
            break;
        }
        let is_key_equals = plan.key_equals == Some(index);
        let output = if is_key_equals || !tail.is_empty() {
            &mut tail
        } else {
            &mut head
        };
        if let Some(previous) = previous {
            if is_key_equals {
                // The padding before it is added once the alignment is known.
            } else if token.kind == TokenKind::Equals
                || previous.kind == TokenKind::Equals
                || plan.header_brace == Some(index)
            {
                output.push(' ');
            } else {
                output.push_str(source.get(previous.end..token.start).unwrap_or(" "));
            }
        }
        if token.end > line.first_line_end {
            // A multi-line token: its first line is kept as is, trailing blanks included.
            output.push_str(source.get(token.start..line.first_line_end).unwrap_or(""));
            ends_in_code = false;
            break;
        }
        output.push_str(source.get(token.start..token.end).unwrap_or(""));
        previous = Some(token);
    }
    if ends_in_code {
        let last = if tail.is_empty() {
            &mut head
        } else {
            &mut tail
        };
        let trimmed = last.trim_end_matches([' ', '\t', '\r']).len();
        last.truncate(trimmed);
    }
    FirstLine {
        head,
        tail,
        padding: 1,
    }
}

/// Copies the physical lines after the first one, which start inside a multi-line token; only
/// the last one ends in code, so only its trailing blanks are removed.
fn render_continuation_lines(source: &str, line: &LogicalLine, output: &mut String) {
    if line.first_line_end >= line.end {
        return;
    }
    let rest = source.get(line.first_line_end + 1..line.end).unwrap_or("");
    output.push_str(rest.trim_end_matches([' ', '\t', '\r']));
    output.push('\n');
}

fn push_spaces(output: &mut String, count: usize) {
    for _ in 0..count {
        output.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(source: &str) -> String {
        let result = format_hcl(source);
        assert!(result.is_ok(), "{result:?} formatting {source:?}");
        result.unwrap_or_default()
    }

    fn error_of(source: &str) -> FormatError {
        let result = format_hcl(source);
        assert!(result.is_err(), "{source:?} was accepted");
        result.err().unwrap_or(FormatError {
            message: String::new(),
            line: 0,
            column: 0,
        })
    }

    fn meaning(source: &str) -> Option<Body> {
        hcl_edit::parser::parse_body(source)
            .ok()
            .map(without_trailing)
    }

    fn non_blank(text: &str) -> String {
        text.chars().filter(|c| !c.is_whitespace()).collect()
    }

    /// The formatted text parses to the same values, keeps every non-blank character (comments
    /// included) in order, and is a fixed point of the formatter.
    fn assert_sound(source: &str) {
        let formatted = fmt(source);
        let source = normalize_line_endings(source);
        let meaning_before = meaning(&source);
        assert!(meaning_before.is_some(), "invalid test input:\n{source}");
        assert_eq!(
            meaning(&formatted),
            meaning_before,
            "meaning changed:\n{source}\n---\n{formatted}"
        );
        assert_eq!(
            non_blank(&formatted),
            non_blank(&source),
            "text changed:\n{source}\n---\n{formatted}"
        );
        assert_eq!(fmt(&formatted), formatted, "not idempotent for:\n{source}");
    }

    const SAMPLES: &[&str] = &[
        "",
        "a=1\n",
        "\n\n  a   =   1   \n\n\n\nbb = \"x\"\n\n\n",
        "resource \"aws_instance\" \"web\"{\n\tami = \"abc\"\n\tinstance_type=\"t2.micro\"\n\tcount =  2 # two of them\n\ttags = {\n\tName = \"web\"\n\t\tEnvironment   = \"dev\"\n\t}\n}\n",
        "# leading comment\n  // slash comment\nlocals {\n      /* block */ x = 1\n  yy = [1,2]   # trailing\n  /*\n     keep   me\n       as is   \n  */\n  z = \"a=b\" // \"=\" in a string\n}\n",
        "a = <<EOT\n  indented ${var.x}\n\tline with tab   \n   EOT\nb = <<-EOT\n      still   \n    here\n    EOT\nccc = 3\n",
        "x = \"${foo({a = \"}\", b = [1, 2]})}\"\ny = \"${ \"nested ${ \"deep }\" }\" }\"\nz = \"%{ if a }yes%{ else }no%{ endif }\"\nw = \"$${not} %%{this}\"\n",
        "a { b = 1 }\nc \"d\" {e=2}\nf{}\n",
        "list = [\n{\na = 1\n}, {\nbb = 2\n},\n]\n",
        "m = merge({\na = 1\n}, {\nb = 2\n})\n",
        "o = {\n  for k, v in var.m : k => v\n  if v != null && v >= 1 && v <= 3 && v == 2\n}\n",
        "nested = {\n  a = {\n    b = {\n      c = 1\n      dd = 2\n    }\n  }\n  e = [\n    [1, 2],\n    [3, 4]\n  ]\n}\n",
        "name = \"Grüße ✓\"\nschlüssel = 1 # ✓\n",
        "a = 1\r\nbb = 2\r\nc {\r\n  d = <<EOT\r\nline\r\nEOT\r\n}\r\n",
        "j = jsonencode(<<EOT\n{\"a\": [1, 2]}\nEOT\n)\nk = 1\n",
        "s = \"multi\nline  \n string\"\nt = 1\n",
        "obj = { a = 1, b: 2, \"c\" = 3 }\ncond = a == b ? { x = 1 } : { x = 2 }\n",
        "  block {\n    inner {\n        deep = true\n        }\n  }\n",
        "x = [\n  1,\n  2]\ny = [\n  3,\n]\n",
        "h = <<EOT\n${ {\n  a = 1\n}.a }\nEOT\n",
        "q = \"%{ if a }\"quoted\"   %{ endif }\"\nr = 1\n",
        "e = <<EOT\nEOT\nf   =   <<EOT\n  g   =   1\nEOT\n",
        "o = {\n({a=1}.a) = 2\nbb = 3\n}\n",
        "variable \"gpus\" {\n  type = map(object({\n    count = number\n    sku   = string\n  }))\n  default = {}\n}\n\nnodepool \"a100\" {\n  for_each = { for k, v in var.gpus : k => v if v.count > 0 }\n  name = \"${each.key}-pool\"\n  labels = merge(local.labels, {\n    \"gpu/sku\" = each.value.sku\n  })\n  script = <<-EOS\n    echo \"${join(\",\", [for i in range(each.value.count) : i])}\"\n  EOS\n}\n",
    ];

    #[test]
    fn samples_keep_meaning_and_are_idempotent() {
        for sample in SAMPLES {
            assert_sound(sample);
        }
    }

    #[test]
    fn every_parsable_prefix_formats_soundly() {
        for sample in SAMPLES {
            let ends = sample.char_indices().map(|(end, _)| end).skip(1);
            for end in ends.chain([sample.len()]) {
                let prefix = sample.get(..end).unwrap_or_default();
                if hcl_edit::parser::parse_body(prefix).is_ok() {
                    assert_sound(prefix);
                }
            }
        }
    }

    #[test]
    fn spaces_around_equals() {
        assert_eq!(fmt("a=\"x\"\n"), "a = \"x\"\n");
        assert_eq!(fmt("key   =   1\n"), "key = 1\n");
        assert_eq!(fmt("x = {a=1,b =2}\n"), "x = {a = 1,b = 2}\n");
    }

    #[test]
    fn comparison_and_arrow_operators_are_untouched() {
        let source = "x = {for k, v in m : k=>v if v==1||v!=2||v<=3||v>=4}\n";
        assert_eq!(fmt(source), source);
    }

    #[test]
    fn equals_inside_strings_and_comments_untouched() {
        let source = "a = \"k=v\" # x=y\nb = \"${ \"p=q\" }\" /* m=n */\n";
        assert_eq!(
            fmt(source),
            "a = \"k=v\" # x=y\nb = \"${ \"p=q\" }\" /* m=n */\n"
        );
    }

    #[test]
    fn aligns_consecutive_assignments() {
        let source = "a = 1\nlong_name = 2\nbb = 3\n";
        assert_eq!(fmt(source), "a         = 1\nlong_name = 2\nbb        = 3\n");
    }

    #[test]
    fn blank_and_comment_lines_break_alignment_groups() {
        let source = "a = 1\nbbb = 2\n\ncc = 3\nd = 4\n# note\neeeee = 5\nf = 6\n";
        assert_eq!(
            fmt(source),
            "a   = 1\nbbb = 2\n\ncc = 3\nd  = 4\n# note\neeeee = 5\nf     = 6\n"
        );
    }

    #[test]
    fn block_headers_break_alignment_groups() {
        let source = "a = 1\nblock {\n  x = 1\n}\nlonger = 2\none { line = 1 }\nc = 3\n";
        assert_eq!(
            fmt(source),
            "a = 1\nblock {\n  x = 1\n}\nlonger = 2\none { line = 1 }\nc = 3\n"
        );
    }

    #[test]
    fn multi_line_value_ends_group_and_nested_items_align_on_their_own() {
        let source = "resource \"r\" \"n\" {\nami = \"x\"\ninstance_type = \"t\"\ntags = {\nName = \"web\"\nEnvironment = \"dev\"\n}\nafter = 1\n}\n";
        assert_eq!(
            fmt(source),
            "resource \"r\" \"n\" {\n  ami           = \"x\"\n  instance_type = \"t\"\n  tags = {\n    Name        = \"web\"\n    Environment = \"dev\"\n  }\n  after = 1\n}\n"
        );
    }

    #[test]
    fn alignment_ignores_trailing_comments() {
        let source = "a = 1 # first\nlong = 2   // second\n";
        assert_eq!(fmt(source), "a    = 1 # first\nlong = 2   // second\n");
    }

    #[test]
    fn indents_nested_blocks_and_replaces_tabs() {
        let source = "outer {\n\tinner \"x\" {\n\t\t\tvalue = 1\n        }\n}\n";
        assert_eq!(
            fmt(source),
            "outer {\n  inner \"x\" {\n    value = 1\n  }\n}\n"
        );
    }

    #[test]
    fn brackets_opened_on_one_line_indent_once() {
        let source = "l = [{\nx = 1\n}]\nm = merge({\na = 1\n}, {\nb = 2\n})\n";
        // `}, {` closes as much as it opens, so like `terraform fmt` it keeps the inner indent.
        assert_eq!(
            fmt(source),
            "l = [{\n  x = 1\n}]\nm = merge({\n  a = 1\n  }, {\n  b = 2\n})\n"
        );
    }

    #[test]
    fn a_line_is_dedented_only_by_the_levels_it_closes() {
        let source = "a = merge({ for k, v in\n{\nx = 1\n} : k => v\n},\nb\n)\nc = [\n1,\n2]\n";
        assert_eq!(
            fmt(source),
            "a = merge({ for k, v in\n  {\n    x = 1\n  } : k => v\n  },\n  b\n)\nc = [\n  1,\n2]\n"
        );
    }

    #[test]
    fn list_of_objects() {
        let source = "l = [\n{\na = 1\n},\n{\nb = 2\n}\n]\n";
        assert_eq!(
            fmt(source),
            "l = [\n  {\n    a = 1\n  },\n  {\n    b = 2\n  }\n]\n"
        );
    }

    #[test]
    fn keeps_all_comment_kinds() {
        let source = "# hash\n   // slashes\nblock {\n      /* inline */ a = 1 # tail\n/*\n   multi\n     line   \n*/\n}\n";
        assert_eq!(
            fmt(source),
            "# hash\n// slashes\nblock {\n  /* inline */ a = 1 # tail\n  /*\n   multi\n     line   \n*/\n}\n"
        );
    }

    #[test]
    fn brackets_in_comments_and_strings_do_not_indent() {
        let source = "a {\nb = \"{[(\" # {\nc = 1 // (\n/* [ */\n}\nd = 2\n";
        assert_eq!(
            fmt(source),
            "a {\n  b = \"{[(\" # {\n  c = 1 // (\n  /* [ */\n}\nd = 2\n"
        );
    }

    #[test]
    fn heredoc_bodies_are_untouched() {
        let source =
            "x {\ny = <<EOT\n  body {   \n\tstays\nEOT\nz = <<-EOT\n      a = b  \n    EOT\n}\n";
        assert_eq!(
            fmt(source),
            "x {\n  y = <<EOT\n  body {   \n\tstays\nEOT\n  z = <<-EOT\n      a = b  \n    EOT\n}\n"
        );
    }

    #[test]
    fn heredoc_assignments_align_like_terraform() {
        let source = "a = 1\npolicy = <<EOF\n{}\nEOF\nbb = 2\n";
        assert_eq!(
            fmt(source),
            "a      = 1\npolicy = <<EOF\n{}\nEOF\nbb     = 2\n"
        );
    }

    #[test]
    fn heredoc_with_interpolation_and_fake_delimiter() {
        let source = "a {\nb = <<EOT\n${ \"EOT\" }\n  EOTX\n${ {\nk = 1\n}.k }\n  EOT\n}\n";
        assert_eq!(
            fmt(source),
            "a {\n  b = <<EOT\n${ \"EOT\" }\n  EOTX\n${ {\nk = 1\n}.k }\n  EOT\n}\n"
        );
    }

    #[test]
    fn interpolations_with_braces_and_directives() {
        let source = "a {\nx = \"${ merge({ a = \"}\" }, {})[\"a\"] } %{ if b }{%{ endif } $${c}\"\ny = 1\n}\n";
        assert_eq!(
            fmt(source),
            "a {\n  x = \"${ merge({ a = \"}\" }, {})[\"a\"] } %{ if b }{%{ endif } $${c}\"\n  y = 1\n}\n"
        );
    }

    #[test]
    fn block_header_gets_one_space_before_brace() {
        assert_eq!(
            fmt("resource \"a\" \"b\"{\n}\nc   {\n}\nd{ e = 1 }\n"),
            "resource \"a\" \"b\" {\n}\nc {\n}\nd { e = 1 }\n"
        );
    }

    #[test]
    fn blank_lines_collapse_and_file_ends_with_one_newline() {
        assert_eq!(fmt("\n\n\na = 1\n\n\n\nb = 2\n\n\n"), "a = 1\n\nb = 2\n");
        assert_eq!(fmt("a = 1"), "a = 1\n");
        assert_eq!(fmt("a = 1   \t"), "a = 1\n");
    }

    #[test]
    fn empty_and_blank_files() {
        assert_eq!(fmt(""), "");
        assert_eq!(fmt("\n\n  \n"), "");
    }

    #[test]
    fn unicode_content() {
        let source = "名前 = \"Grüße ✓\"\nabc = \"🚀\" # ✓ comment\nx {\nü = 1\n}\n";
        assert_eq!(
            fmt(source),
            "名前  = \"Grüße ✓\"\nabc = \"🚀\" # ✓ comment\nx {\n  ü = 1\n}\n"
        );
    }

    #[test]
    fn crlf_is_normalised() {
        let source = "a = 1\r\nbb {\r\n c = <<EOT\r\n x\r\nEOT\r\n}\r\n";
        assert_eq!(fmt(source), "a = 1\nbb {\n  c = <<EOT\n x\nEOT\n}\n");
    }

    #[test]
    fn multi_line_quoted_string_is_untouched() {
        let source = "a {\ns = \"one  \n   two\"\n}\n";
        assert_eq!(fmt(source), "a {\n  s = \"one  \n   two\"\n}\n");
    }

    #[test]
    fn invalid_input_is_an_error_with_location() {
        let err = error_of("a = 1\nb = \n");
        assert_eq!((err.line, err.column), (2, 5));
        assert!(err.message.contains("expected"), "{}", err.message);

        let err = error_of("block {\n  x = 1\n");
        assert_eq!(err.line, 2);
        assert!(!err.to_string().is_empty());
    }

    /// `hcl_edit` lets a quote end nothing inside a template directive, and lets an empty heredoc
    /// run on to a later delimiter line; the formatter follows the parser in both cases.
    #[test]
    fn parser_decides_where_strings_and_heredocs_end() {
        let source = "q = \"%{ if a }\"   x  =  1   \"%{ endif }\"\nr  =  1\n";
        assert_eq!(
            fmt(source),
            "q = \"%{ if a }\"   x  =  1   \"%{ endif }\"\nr = 1\n"
        );
        let source = "e = <<EOT\nEOT\nf   =   <<EOT\n  g   =   1\nEOT\n";
        assert_eq!(fmt(source), source);
    }

    #[test]
    fn alignment_measures_the_formatted_key() {
        let source = "o = {\n({a=1}.a) = 2\nbb = 3\n}\n";
        assert_eq!(
            fmt(source),
            "o = {\n  ({a = 1}.a) = 2\n  bb          = 3\n}\n"
        );
    }

    #[test]
    fn formatted_file_is_unchanged() {
        let source = "terraform {\n  required = true\n}\n\nvariable \"x\" {\n  type    = string\n  default = \"a\"\n}\n";
        assert_eq!(fmt(source), source);
    }

    /// Random edits of the samples (a fixed seed, so failures reproduce): every edit that still
    /// parses must format soundly.
    #[test]
    fn random_edits_of_samples_format_soundly() {
        const PIECES: &[&str] = &[
            " ", "\t", "\n", "\n\n", "\r\n", "=", "==", "=>", ",", ":", "-", "{", "}", "[", "]",
            "(", ")", "#", "//", "/*", "*/", "\"", "\\", "${", "%{", "$${", "~}", "<<EOT\n",
            "\nEOT\n", "<<-EOT\n", "a", "é", "x = 1\n", "b {\n", "\n}\n",
        ];
        let iterations = std::env::var("FMT_FUZZ_ITERATIONS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(3000);
        let mut state: u64 = std::env::var("FMT_FUZZ_SEED")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(0x2545_f491_4f6c_dd1d);
        let mut random = move |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).unwrap_or(0) % bound.max(1)
        };
        for _ in 0..iterations {
            let mut text = SAMPLES
                .get(random(SAMPLES.len()))
                .copied()
                .unwrap_or_default()
                .to_owned();
            for _ in 0..=random(4) {
                let boundaries: Vec<usize> = text
                    .char_indices()
                    .map(|(at, _)| at)
                    .chain([text.len()])
                    .collect();
                let at = boundaries
                    .get(random(boundaries.len()))
                    .copied()
                    .unwrap_or(0);
                if random(3) == 0 {
                    let to = boundaries
                        .iter()
                        .copied()
                        .find(|&end| end > at)
                        .unwrap_or(at);
                    text.replace_range(at..to, "");
                } else {
                    text.insert_str(at, PIECES.get(random(PIECES.len())).copied().unwrap_or(" "));
                }
            }
            if hcl_edit::parser::parse_body(&text).is_ok() {
                assert_sound(&text);
            }
        }
    }
}
