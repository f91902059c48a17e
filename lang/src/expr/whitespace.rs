//! HCL's static whitespace rules of templates, applied to the literals before evaluation as
//! HCL's parser applies them to its tokens:
//!
//! 1. A `~` strip marker trims the whitespace of the one literal token next to it. A heredoc's
//!    literal is one token per line, so `%{ for x in xs ~}` removes the rest of its own line
//!    (the newline) and keeps the next line's indentation.
//! 2. Then a `<<-` heredoc drops the smallest indentation of the lines that begin with a
//!    literal (counted in grapheme clusters after step 1; a line that begins with an
//!    interpolation or directive, or with a literal that step 1 emptied, counts as none;
//!    blank lines do not count) from every such line, directive bodies included.
//!
//! hcl-edit, which parses the text, dedents a `<<-` heredoc's top-level literals itself (by
//! the indentation of those alone, before any marker) and records how much: that is undone
//! first, so that the rules above see the heredoc's own lines.

use hcl_edit::structure::Body;
use hcl_edit::template::{Directive, Element, HeredocTemplate, Strip, Template};
use hcl_edit::visit_mut::VisitMut;
use std::borrow::Cow;
use unicode_segmentation::UnicodeSegmentation as _;

/// Marks every `<<-` heredoc of `body` (parsed from `text`) that hcl-edit did not dedent as
/// dedented by 0, so that its indentation rule still applies: hcl-edit dedents nothing when
/// an interpolation or directive begins a line, yet HCL's rule, applied after the strip
/// markers, may still find an indentation (`%{~ if c }` at the start of a line takes the
/// newline before it, so that line no longer begins one).
pub fn mark_flush_heredocs(body: &mut Body, text: &str) {
    struct Marks<'a>(&'a str);
    impl VisitMut for Marks<'_> {
        fn visit_heredoc_template_mut(&mut self, node: &mut HeredocTemplate) {
            use hcl_edit::Span as _;
            if node.indent().is_none()
                && node
                    .span()
                    .and_then(|r| self.0.get(r.start..))
                    .is_some_and(|t| t.starts_with("<<-"))
            {
                node.set_indent(0);
            }
            hcl_edit::visit_mut::visit_heredoc_template_mut(self, node);
        }
    }
    if text.contains("<<-") {
        Marks(text).visit_body_mut(body);
    }
}

/// How a template's literals were written, which decides what one literal token is.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// A quoted string: a literal is one token, escaped newlines and all.
    Quoted,
    /// A heredoc or a template file: one token per line. `Some(n)` for a `<<-` heredoc that
    /// hcl-edit dedented by `n`: its indentation rule applies.
    Lines(Option<usize>),
}

/// `template` as HCL evaluates it: literals trimmed by the rules above and no strip markers
/// left. Borrowed when no rule applies, as for most templates.
pub fn prepared(template: &Template, layout: Layout) -> Cow<'_, Template> {
    let dedented = match layout {
        Layout::Lines(dedented) => dedented,
        Layout::Quoted => None,
    };
    let quoted = matches!(layout, Layout::Quoted);
    if dedented.is_none() && !needs_work(template, quoted, false) {
        return Cow::Borrowed(template);
    }
    let mut template = template.clone();
    let mut t = Tokens {
        per_line: matches!(layout, Layout::Lines(_)),
        quoted,
        line_start: true,
        ..Tokens::default()
    };
    t.read(&template, dedented, false);
    strip(&t.tokens, &mut t.segments);
    if dedented.is_some() {
        flush(&t.tokens, &mut t.segments);
    }
    let mut literals = t.literals.into_iter();
    write_back(&mut template, &t.segments, &mut literals);
    Cow::Owned(template)
}

/// Whether a strip marker is anywhere in the template, or (in a quoted string) a directive's
/// body holds a backslash escape: hcl-edit leaves those undecoded.
fn needs_work(template: &Template, quoted: bool, nested: bool) -> bool {
    template.iter().any(|element| match element {
        Element::Literal(literal) => quoted && nested && literal.value().contains('\\'),
        Element::Interpolation(i) => i.strip != Strip::None,
        Element::Directive(d) => match d.as_ref() {
            Directive::If(d) => {
                d.if_expr.strip != Strip::None
                    || d.endif_expr.strip != Strip::None
                    || needs_work(&d.if_expr.template, quoted, true)
                    || d.else_expr.as_ref().is_some_and(|e| {
                        e.strip != Strip::None || needs_work(&e.template, quoted, true)
                    })
            }
            Directive::For(d) => {
                d.for_expr.strip != Strip::None
                    || d.endfor_expr.strip != Strip::None
                    || needs_work(&d.for_expr.template, quoted, true)
            }
        },
    })
}

/// A quoted string's escapes (`\n`, `\"`, `\u00e9`, ...) decoded, as HCL decodes them; an
/// unknown escape stays as written.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
            let digits: String = chars.clone().take(n).collect();
            let decoded = (digits.len() == n)
                .then(|| {
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .and_then(char::from_u32)
                })
                .flatten();
            if decoded.is_some() {
                for _ in 0..n {
                    chars.next();
                }
            }
            decoded
        };
        let decoded = match chars.peek() {
            Some('n') => Some('\n'),
            Some('r') => Some('\r'),
            Some('t') => Some('\t'),
            Some('"') => Some('"'),
            Some('\\') => Some('\\'),
            Some('u') => {
                chars.next();
                match hex(&mut chars, 4) {
                    Some(c) => {
                        out.push(c);
                        continue;
                    }
                    None => {
                        out.push_str("\\u");
                        continue;
                    }
                }
            }
            Some('U') => {
                chars.next();
                match hex(&mut chars, 8) {
                    Some(c) => {
                        out.push(c);
                        continue;
                    }
                    None => {
                        out.push_str("\\U");
                        continue;
                    }
                }
            }
            _ => None,
        };
        match decoded {
            Some(d) => {
                chars.next();
                out.push(d);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// One of HCL's template tokens: a literal token (an index into the segments) or anything
/// else (an interpolation, a directive's keyword), with the strip markers it carries.
enum Token {
    Literal(usize),
    Other { trim_before: bool, trim_after: bool },
}

#[derive(Default)]
struct Tokens {
    per_line: bool,
    /// A quoted string's directive bodies, whose escapes hcl-edit left undecoded.
    quoted: bool,
    /// Whether the next token begins a line.
    line_start: bool,
    tokens: Vec<Token>,
    /// The literal tokens' texts.
    segments: Vec<String>,
    /// Each literal element's segments, in source order.
    literals: Vec<std::ops::Range<usize>>,
}

impl Tokens {
    /// The template's tokens in source order, directive bodies inline: one per line of a
    /// literal (each keeps its newline) or one per literal, as the layout says.
    /// `dedented` only for the heredoc's top level, which alone hcl-edit dedented.
    fn read(&mut self, template: &Template, dedented: Option<usize>, nested: bool) {
        let elements: Vec<&Element> = template.iter().collect();
        for (i, element) in elements.iter().enumerate() {
            match element {
                Element::Literal(literal) => {
                    let text: &str = literal.value();
                    let text = match dedented {
                        _ if self.quoted && nested => Cow::Owned(unescape(text)),
                        Some(n) => Cow::Owned(reindent(
                            text,
                            n,
                            !self.line_start,
                            elements.get(i + 1).is_some(),
                        )),
                        None => Cow::Borrowed(text),
                    };
                    let first = self.segments.len();
                    if self.per_line {
                        for line in text.split_inclusive('\n') {
                            self.tokens.push(Token::Literal(self.segments.len()));
                            self.segments.push(line.to_owned());
                        }
                    } else {
                        self.tokens.push(Token::Literal(self.segments.len()));
                        self.segments.push(text.clone().into_owned());
                    }
                    self.literals.push(first..self.segments.len());
                    self.line_start = text.ends_with('\n');
                }
                Element::Interpolation(i) => self.other(i.strip),
                Element::Directive(d) => match d.as_ref() {
                    Directive::If(d) => {
                        self.other(d.if_expr.strip);
                        self.read(&d.if_expr.template, None, true);
                        if let Some(e) = &d.else_expr {
                            self.other(e.strip);
                            self.read(&e.template, None, true);
                        }
                        self.other(d.endif_expr.strip);
                    }
                    Directive::For(d) => {
                        self.other(d.for_expr.strip);
                        self.read(&d.for_expr.template, None, true);
                        self.other(d.endfor_expr.strip);
                    }
                },
            }
        }
    }

    fn other(&mut self, strip: Strip) {
        self.tokens.push(Token::Other {
            trim_before: strip.strip_start(),
            trim_after: strip.strip_end(),
        });
        self.line_start = false;
    }
}

/// Undoes hcl-edit's dedent of one top-level literal: it removed `n` leading characters from
/// every non-empty line but a first that continues a line (all of them whitespace, as it
/// removes no more than the smallest indentation). A last line that an interpolation or
/// directive continues was not empty (hcl-edit dedents nothing when one begins a line), so
/// when it is empty now it was `n` characters of indentation. A whitespace-only line of
/// exactly `n` characters inside the literal is empty now and stays so (the
/// `heredoc-blank-line-indent` deviation).
fn reindent(text: &str, n: usize, continues_line: bool, continued: bool) -> String {
    let pad = " ".repeat(n);
    let mut out = String::with_capacity(text.len() + n * 4);
    let last = text.split('\n').count() - 1;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let first_continues = i == 0 && continues_line;
        if !first_continues && (!line.is_empty() || (i == last && continued)) {
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    out
}

fn strip(tokens: &[Token], segments: &mut [String]) {
    for (i, token) in tokens.iter().enumerate() {
        let Token::Other {
            trim_before,
            trim_after,
        } = token
        else {
            continue;
        };
        if *trim_before
            && let Some(Token::Literal(s)) = i.checked_sub(1).and_then(|p| tokens.get(p))
        {
            let trimmed = segments[*s].trim_end().len();
            segments[*s].truncate(trimmed);
        }
        if *trim_after && let Some(Token::Literal(s)) = tokens.get(i + 1) {
            let start = segments[*s].len() - segments[*s].trim_start().len();
            segments[*s].drain(..start);
        }
    }
}

fn flush(tokens: &[Token], segments: &mut [String]) {
    let mut min = usize::MAX;
    let mut line_start = true;
    let mut adjust = Vec::new();
    for token in tokens {
        if line_start {
            line_start = false;
            let spaces = match token {
                Token::Literal(s) => {
                    let text = &segments[*s];
                    let rest = text.trim_start();
                    if rest.is_empty() && text.ends_with('\n') {
                        usize::MAX
                    } else {
                        adjust.push(*s);
                        text[..text.len() - rest.len()].graphemes(true).count()
                    }
                }
                Token::Other { .. } => 0,
            };
            min = min.min(spaces);
        }
        if let Token::Literal(s) = token
            && segments[*s].ends_with('\n')
        {
            line_start = true;
        }
    }
    if min == usize::MAX || min == 0 {
        return;
    }
    for s in adjust {
        let cut: usize = segments[s].graphemes(true).take(min).map(str::len).sum();
        segments[s].drain(..cut);
    }
}

/// Puts the trimmed segments back into the literals, in the order [`Tokens::read`] read
/// them, and clears every strip marker: their work is done.
fn write_back(
    template: &mut Template,
    segments: &[String],
    literals: &mut impl Iterator<Item = std::ops::Range<usize>>,
) {
    for element in template.iter_mut() {
        match element {
            Element::Literal(literal) => {
                if let Some(range) = literals.next() {
                    *literal.as_mut() = segments[range].concat();
                }
            }
            Element::Interpolation(i) => i.strip = Strip::None,
            Element::Directive(d) => match d.as_mut() {
                Directive::If(d) => {
                    d.if_expr.strip = Strip::None;
                    write_back(&mut d.if_expr.template, segments, literals);
                    if let Some(e) = &mut d.else_expr {
                        e.strip = Strip::None;
                        write_back(&mut e.template, segments, literals);
                    }
                    d.endif_expr.strip = Strip::None;
                }
                Directive::For(d) => {
                    d.for_expr.strip = Strip::None;
                    write_back(&mut d.for_expr.template, segments, literals);
                    d.endfor_expr.strip = Strip::None;
                }
            },
        }
    }
}
