//! The one-shot VCP parser (spec §1–3).
//!
//! The reply is read in one forward pass. Reasoning is cut out first (unless kept);
//! then START markers are found with a substring search, and each block's fields are
//! read with small nom parsers (key, separator, value opener) and substring searches
//! for value closers. Every search starts where the previous one stopped, so the cost
//! is linear in the input.

use memchr::memmem;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, one_of};
use nom::combinator::value;
use nom::sequence::preceded;
use nom::{IResult, Parser};

use super::markers::{Marker, MarkerFinder, MarkerKind, strip_prefix_ignore_ascii_case};
use super::reasoning;
use super::source::Source;
use super::{RequestIdStyle, VcpOptions};
use crate::request::{Args, RequestIdSource};
use crate::{Diagnostic, DiagnosticKind, ParseOutcome, ParsedToolRequest, Span};

/// The three kinds of value (spec §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// `「始」…「末」`
    Plain,
    /// `「始ESCAPE」…「末ESCAPE」`: markers inside are content.
    Escaped,
    /// `「始exp」…「末exp」`: documentation; its block is an example.
    Doc,
}

/// One field of a block.
#[derive(Debug)]
struct Field<'t> {
    key: &'t str,
    start: usize,
    end: usize,
    value: String,
    kind: ValueKind,
    closed: bool,
}

/// The UTF-8 bytes of `末`, the character every value closer has.
const CLOSER_CHAR: &[u8] = "末".as_bytes();
/// Its first byte, which `memchr` looks for.
const CLOSER_LEAD: u8 = match CLOSER_CHAR.first() {
    Some(&b) => b,
    None => 0,
};

/// Characters that can never be part of a key.
fn is_key_char(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, ':' | '：' | ',' | '「' | '」'))
}

fn key(input: &str) -> IResult<&str, &str> {
    take_while1(is_key_char).parse(input)
}

/// Spaces or tabs, then `:` or `：`.
fn separator(input: &str) -> IResult<&str, &str> {
    preceded(take_while(|c| c == ' ' || c == '\t'), alt((tag(":"), tag("：")))).parse(input)
}

fn ascii_no_case<'i>(word: &'static str) -> impl Fn(&'i str) -> IResult<&'i str, &'i str> {
    move |input: &'i str| match strip_prefix_ignore_ascii_case(input, word) {
        Some(rest) => Ok((rest, input.get(..word.len()).unwrap_or(""))),
        None => Err(nom::Err::Error(nom::error::Error::new(input, nom::error::ErrorKind::Tag))),
    }
}

/// `[「{]始ESCAPE[」}]`, ESCAPE in any case.
fn escaped_opener(input: &str) -> IResult<&str, ()> {
    value((), (one_of("「{"), char('始'), ascii_no_case("ESCAPE"), one_of("」}"))).parse(input)
}

/// A value opener: escaped, documentation, or plain (with fuzzy bracket variants).
fn opener(fuzzy: bool) -> impl Fn(&str) -> IResult<&str, ValueKind> {
    move |input: &str| {
        // The three forms differ right after `「始`, so the order is only for speed.
        let exact = alt((
            value(ValueKind::Plain, tag("「始」")),
            value(ValueKind::Escaped, escaped_opener),
            value(ValueKind::Doc, tag("「始exp」")),
        ))
        .parse(input);
        match exact {
            Err(nom::Err::Error(_)) if fuzzy => {
                value(ValueKind::Plain, (one_of("「{"), char('始'), one_of("」}"))).parse(input)
            }
            other => other,
        }
    }
}

/// Where a field's head was found: its key and the range of its value opener.
struct Head<'t> {
    key: &'t str,
    kind: ValueKind,
    opener_end: usize,
}

struct BlockParser<'s, 't> {
    src: &'s Source<'t>,
    finder: MarkerFinder<'s>,
    fuzzy: bool,
    doc_close: memmem::Finder<'static>,
    /// Reused between blocks.
    fields: Vec<Field<'s>>,
    /// Diagnostics in cleaned-text offsets.
    diagnostics: Vec<(DiagnosticKind, String, usize, usize)>,
    requests: Vec<ParsedToolRequest>,
}

fn preview(text: &str) -> String {
    const MAX: usize = 40;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_string(),
    }
}

/// `\r\n` → `\n`, then surrounding white space trimmed (spec §1); escaped values also
/// get their escaped literals restored (spec §2.2).
fn normalize_value(raw: &str, kind: ValueKind) -> String {
    let restored;
    let raw = if kind == ValueKind::Escaped && (raw.contains("_ESCAPE]>>>") || raw.contains('始')) {
        restored = restore_escaped(raw);
        restored.as_str()
    } else {
        raw
    };
    if memchr::memchr(b'\r', raw.as_bytes()).is_some() && raw.contains("\r\n") {
        raw.replace("\r\n", "\n").trim().to_string()
    } else {
        raw.trim().to_string()
    }
}

/// Restores `<<<[TOOL_REQUEST_ESCAPE]>>>`, `<<<[END_TOOL_REQUEST_ESCAPE]>>>` and escaped
/// openers (written back as `「始」`) inside an escaped value.
fn restore_escaped(raw: &str) -> String {
    const FORMS: [(&str, &str); 2] = [
        ("<<<[TOOL_REQUEST_ESCAPE]>>>", "<<<[TOOL_REQUEST]>>>"),
        ("<<<[END_TOOL_REQUEST_ESCAPE]>>>", "<<<[END_TOOL_REQUEST]>>>"),
    ];
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    'scan: while let Some((i, c)) = rest.char_indices().find(|&(_, c)| matches!(c, '<' | '「' | '{')) {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        if c == '<' {
            for (escaped, plain) in FORMS {
                if let Some(after) = at.strip_prefix(escaped) {
                    out.push_str(plain);
                    rest = after;
                    continue 'scan;
                }
            }
        } else if let Ok((after, ())) = escaped_opener(at) {
            out.push_str("「始」");
            rest = after;
            continue 'scan;
        }
        out.push(c);
        rest = at.get(c.len_utf8()..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

impl<'s, 't> BlockParser<'s, 't> {
    fn text(&self) -> &'s str {
        self.src.text()
    }

    fn diag(&mut self, kind: DiagnosticKind, message: String, start: usize, end: usize) {
        self.diagnostics.push((kind, message, start, end));
    }

    /// Skips white space (any) up to `limit`.
    fn skip_ws(&self, from: usize, limit: usize) -> usize {
        let rest = self.text().get(from..limit).unwrap_or("");
        limit - rest.trim_start().len()
    }

    /// Reads a field head at `at`, or says where to resume scanning.
    fn head(&self, at: usize, limit: usize) -> Result<Head<'s>, usize> {
        let text = self.text();
        let key_limit = self.src.next_break_after(at).map_or(limit, |b| b.min(limit));
        let key_text = text.get(at..key_limit).unwrap_or("");
        let Ok((after_key, key)) = key(key_text) else {
            let skip = text.get(at..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8);
            return Err(at + skip);
        };
        let key_end = at + key.len();
        debug_assert_eq!(key_text.len() - after_key.len(), key.len());
        // Every suffix of this key fails the same way, so resume after what was read.
        let Ok((after_sep, _)) = separator(text.get(key_end..limit).unwrap_or("")) else {
            return Err(key_end);
        };
        let sep_end = limit - after_sep.len();
        let opener_at = self.skip_ws(sep_end, limit);
        let Ok((after_opener, kind)) = opener(self.fuzzy)(text.get(opener_at..limit).unwrap_or("")) else {
            return Err(sep_end);
        };
        let opener_end = limit - after_opener.len();
        if self.src.crosses_break(opener_at, opener_end) {
            return Err(sep_end);
        }
        Ok(Head { key, kind, opener_end })
    }

    /// A bracketed closer around the `末` at `mid` (bytes of `末`: `mid..mid + 3`):
    /// returns its range if the brackets are acceptable and no break splits it.
    fn bracketed(&self, mid: usize, word: &str, from: usize, fuzzy: bool) -> Option<(usize, usize)> {
        let text = self.text();
        let before = text.get(..mid)?;
        let start = if before.ends_with('「') {
            mid - '「'.len_utf8()
        } else if fuzzy && before.ends_with('{') {
            mid - 1
        } else {
            return None;
        };
        let after_mid = text.get(mid + '末'.len_utf8()..)?;
        let after_word =
            if word.is_empty() { after_mid } else { strip_prefix_ignore_ascii_case(after_mid, word)? };
        let close_len = if after_word.starts_with('」') {
            '」'.len_utf8()
        } else if fuzzy && after_word.starts_with('}') {
            1
        } else {
            return None;
        };
        let end = text.len() - after_word.len() + close_len;
        (start >= from && !self.src.crosses_break(start, end)).then_some((start, end))
    }

    /// Offsets of `末` in `from..limit`, in order. Values are short, so a `memchr` for
    /// the first byte of `末` (then a check of the rest) beats a substring searcher's
    /// set-up on every call.
    fn closer_chars(&self, from: usize, limit: usize) -> impl Iterator<Item = usize> + 's {
        let bytes = self.text().as_bytes().get(..limit).unwrap_or_default();
        let mut at = from;
        std::iter::from_fn(move || {
            while let Some(i) = bytes.get(at..).and_then(|b| memchr::memchr(CLOSER_LEAD, b)) {
                let mid = at + i;
                at = mid + 1;
                if bytes.get(mid..mid + CLOSER_CHAR.len()) == Some(CLOSER_CHAR) {
                    at = mid + CLOSER_CHAR.len();
                    return Some(mid);
                }
            }
            None
        })
    }

    /// The first `「末」` (with fuzzy variants) in `from..limit`.
    fn plain_close(&self, from: usize, limit: usize) -> Option<(usize, usize)> {
        self.closer_chars(from, limit)
            .find_map(|mid| self.bracketed(mid, "", from, self.fuzzy).filter(|&(_, end)| end <= limit))
    }

    /// The first escaped closer (`「末ESCAPE」`, any case and bracket) at or after `from`.
    fn escaped_close(&self, from: usize) -> Option<(usize, usize)> {
        self.closer_chars(from, self.text().len()).find_map(|mid| self.bracketed(mid, "ESCAPE", from, true))
    }

    /// The first `「末exp」` in `from..limit`.
    fn doc_close(&self, from: usize, limit: usize) -> Option<(usize, usize)> {
        let bytes = self.text().as_bytes().get(..limit)?;
        let mut at = from;
        while let Some(i) = bytes.get(at..).and_then(|b| self.doc_close.find(b)) {
            let start = at + i;
            let end = start + "「末exp」".len();
            if !self.src.crosses_break(start, end) {
                return Some((start, end));
            }
            at = start + 1;
        }
        None
    }

    /// Parses the block opened by `start`; returns where scanning for the next block
    /// resumes.
    fn block(&mut self, start: Marker) -> usize {
        let text = self.text();
        let mut cur = start.end;
        let mut boundary = self.finder.next_boundary(cur);
        let mut fields = std::mem::take(&mut self.fields);
        fields.clear();
        let mut stray_from: Option<usize> = None;
        loop {
            let limit = boundary.map_or(text.len(), |m| m.start);
            cur = self.skip_ws(cur, limit);
            if cur >= limit {
                break;
            }
            let head = match self.head(cur, limit) {
                Ok(head) => head,
                Err(resume) => {
                    stray_from.get_or_insert(cur);
                    cur = resume.max(cur + 1).min(limit);
                    continue;
                }
            };
            if let Some(from) = stray_from.take() {
                self.stray(from, cur);
            }
            let field_start = cur;
            let value_from = head.opener_end;
            let (raw_end, closed, field_end) = match head.kind {
                ValueKind::Plain => match self.plain_close(value_from, limit) {
                    Some((close, end)) => (close, true, end),
                    None => (limit, false, limit),
                },
                ValueKind::Doc => match self.doc_close(value_from, limit) {
                    Some((close, end)) => (close, true, end),
                    None => (limit, false, limit),
                },
                ValueKind::Escaped => match self.escaped_close(value_from) {
                    Some((close, end)) => {
                        if boundary.is_some_and(|m| m.start < end) {
                            boundary = self.finder.next_boundary(end);
                        }
                        (close, true, end)
                    }
                    None => {
                        boundary = None;
                        (text.len(), false, text.len())
                    }
                },
            };
            let raw = text.get(value_from..raw_end).unwrap_or("");
            fields.push(Field {
                key: head.key,
                start: field_start,
                end: field_end,
                value: normalize_value(raw, head.kind),
                kind: head.kind,
                closed,
            });
            cur = field_end;
            if closed {
                let limit = boundary.map_or(text.len(), |m| m.start);
                let after = self.skip_ws(cur, limit);
                if text.get(after..limit).is_some_and(|r| r.starts_with(',')) {
                    cur = after + 1;
                }
            }
        }
        let limit = boundary.map_or(text.len(), |m| m.start);
        if let Some(from) = stray_from {
            self.stray(from, limit);
        }
        let (block_end, resume) = match boundary {
            Some(m) if m.kind == MarkerKind::End => (m.end, m.end),
            Some(m) => (m.start, m.start),
            None => (text.len(), text.len()),
        };
        if boundary.is_none_or(|m| m.kind != MarkerKind::End) {
            let why =
                if boundary.is_some() { "the next <<<[TOOL_REQUEST]>>> begins" } else { "the text ends" };
            self.diag(
                DiagnosticKind::MissingEndMarker,
                format!("request block has no <<<[END_TOOL_REQUEST]>>>; it ends where {why}"),
                start.start,
                block_end,
            );
        }
        self.finish(start, block_end, &mut fields);
        self.fields = fields;
        resume
    }

    fn stray(&mut self, from: usize, to: usize) {
        let skipped = self.text().get(from..to).unwrap_or("");
        let trimmed = skipped.trim_end();
        if trimmed.is_empty() {
            return;
        }
        let end = from + trimmed.len();
        let message = if trimmed.ends_with(':') || trimmed.ends_with('：') {
            format!("skipped `{}`: a key with no value (a value opens with 「始」)", preview(trimmed))
        } else {
            format!("skipped text between fields that is not a field: `{}`", preview(trimmed))
        };
        self.diag(DiagnosticKind::StrayText, message, from, end);
    }

    /// Turns a block's fields into a request (or into a diagnostic, for empty and
    /// example blocks).
    fn finish(&mut self, start: Marker, end: usize, fields: &mut Vec<Field<'s>>) {
        if fields.is_empty() {
            self.diag(
                DiagnosticKind::EmptyBlock,
                "request block holds no field, so it is not a request".to_string(),
                start.start,
                end,
            );
            return;
        }
        if fields.iter().any(|f| f.kind == ValueKind::Doc) {
            self.diag(
                DiagnosticKind::ExampleBlock,
                "request block holds a documentation value (「始exp」): it is an example, not a request"
                    .to_string(),
                start.start,
                end,
            );
            return;
        }
        let mut tool_name: Option<String> = None;
        let mut request_id: Option<String> = None;
        let mut args = Args::with_capacity(fields.len());
        let mut problems = Vec::new();
        for field in fields.drain(..) {
            if !field.closed {
                let closer = if field.kind == ValueKind::Escaped { "「末ESCAPE」" } else { "「末」" };
                problems.push(format!("the value of `{}` is not closed: end it with {closer}", field.key));
                self.diag(
                    DiagnosticKind::UnclosedValue,
                    format!("value of `{}` is not closed with {closer}", field.key),
                    field.start,
                    field.end,
                );
            }
            let duplicate = if field.key.eq_ignore_ascii_case("tool_name") {
                tool_name.replace(field.value).is_some()
            } else if field.key.eq_ignore_ascii_case("request_id") {
                // An empty id counts as absent: it neither sets nor erases one.
                !field.value.is_empty() && request_id.replace(field.value).is_some()
            } else {
                // The last occurrence wins, at its own position: move it to the end.
                let (index, old) =
                    args.insert_full(field.key.to_string(), serde_json::Value::String(field.value));
                if old.is_some() {
                    args.move_index(index, args.len() - 1);
                }
                old.is_some()
            };
            if duplicate {
                self.diag(
                    DiagnosticKind::DuplicateKey,
                    format!("key `{}` appears more than once; the last value is used", field.key),
                    field.start,
                    field.end,
                );
            }
        }
        let tool_name = tool_name.unwrap_or_default();
        if tool_name.is_empty() {
            problems.insert(0, "the request has no tool_name: add tool_name:「始」…「末」".to_string());
            self.diag(
                DiagnosticKind::MissingToolName,
                "request block has no tool_name".to_string(),
                start.start,
                start.end,
            );
        }
        let span = Span::new(self.src.original_start(start.start), self.src.original_end(end));
        let (request_id, id_source) = match request_id {
            Some(id) => (id, RequestIdSource::Model),
            None => (String::new(), RequestIdSource::Assigned),
        };
        self.requests.push(ParsedToolRequest {
            request_id,
            id_source,
            tool_name,
            args,
            span,
            complete: problems.is_empty(),
            problems,
        });
    }
}

/// Parses `text` with `options` (see the module docs).
pub(crate) fn parse(text: &str, options: &VcpOptions) -> ParseOutcome {
    let mut diagnostics = Vec::new();
    let src = if options.keep_reasoning {
        Source::unchanged(text)
    } else {
        let found = reasoning::find_hidden(text);
        if let Some((start, end)) = found.unclosed {
            diagnostics.push(Diagnostic::new(
                DiagnosticKind::UnclosedReasoning,
                "reasoning block is never closed: everything after it is hidden",
                Span::new(start, end),
            ));
        }
        Source::without(text, &found.hidden)
    };
    let mut parser = BlockParser {
        src: &src,
        finder: MarkerFinder::new(&src, options.fuzzy_markers, options.skip_fenced),
        fuzzy: options.fuzzy_markers,
        doc_close: memmem::Finder::new("「末exp」".as_bytes()),
        fields: Vec::new(),
        diagnostics: Vec::new(),
        requests: Vec::new(),
    };
    let mut pos = 0;
    while let Some(start) = parser.finder.next_start(pos) {
        if start.fenced {
            parser.diag(
                DiagnosticKind::FencedMarker,
                "<<<[TOOL_REQUEST]>>> inside a code fence is ignored (skip_fenced is on)".to_string(),
                start.start,
                start.end,
            );
            pos = start.end;
            continue;
        }
        pos = parser.block(start);
    }
    let BlockParser { requests: mut parsed, diagnostics: found, .. } = parser;
    diagnostics.extend(found.into_iter().map(|(kind, message, start, end)| {
        Diagnostic::new(
            kind,
            message,
            Span::new(src.original_start(start), src.original_end(end).max(src.original_start(start))),
        )
    }));
    crate::stream::sort_diagnostics(&mut diagnostics);
    assign_ids(&mut parsed, options.request_ids);
    ParseOutcome::new(parsed, diagnostics)
}

/// Gives every request without a model id one of the library's.
fn assign_ids(requests: &mut [ParsedToolRequest], style: RequestIdStyle) {
    use std::fmt::Write as _;
    let mut prefix: Option<String> = None;
    for (n, request) in requests.iter_mut().enumerate() {
        if request.id_source != RequestIdSource::Assigned {
            continue;
        }
        let prefix = prefix.get_or_insert_with(|| match style {
            RequestIdStyle::Sequential => "req_".to_string(),
            RequestIdStyle::Random => format!("call_{:016x}_", uuid::Uuid::new_v4().as_u64_pair().0),
        });
        let mut id = String::with_capacity(prefix.len() + 6);
        id.push_str(prefix);
        let _ = write!(id, "{}", n + 1);
        request.request_id = id;
    }
}
