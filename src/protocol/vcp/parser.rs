//! The VCP parser (spec §1–3), one-shot and incremental.
//!
//! Reasoning is cut out first (unless kept); then START markers are found with a
//! substring search, and each block's fields are read with small nom parsers (key,
//! separator, value opener) and substring searches for value closers.
//!
//! The block reader is a [`Scanner`]: a state machine that stops wherever the text so
//! far does not decide what comes next (a marker cut short at the end, a value whose
//! closer has not arrived, a fuzzy `>` run that may grow) and resumes when more text
//! arrives, keeping its search positions. The one-shot parser runs it once over the whole
//! text; the streaming parser runs it after every chunk. Both therefore read every
//! input the same way, and the cost stays linear in the input either way.

use memchr::memmem;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, one_of};
use nom::combinator::value;
use nom::sequence::preceded;
use nom::{IResult, Parser};

use super::fence::Fences;
use super::markers::{
    Candidate, Marker, MarkerFinder, MarkerKind, Search, could_become, floor_boundary,
    strip_prefix_ignore_ascii_case,
};
use super::reasoning;
use super::visible::Source;
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

/// One field of a block. Offsets are into the cleaned text.
#[derive(Debug)]
struct Field {
    key: (usize, usize),
    start: usize,
    end: usize,
    value: String,
    kind: ValueKind,
    closed: bool,
}

/// A field head: its key and where its value begins.
struct Head {
    key: (usize, usize),
    kind: ValueKind,
    opener_end: usize,
}

/// What reading a field head gave.
enum HeadRead {
    Field(Head),
    /// No field here: scanning resumes at this offset.
    Resume(usize),
    /// The text so far does not decide; the key is read up to `key_end`.
    NeedMore {
        key_end: usize,
    },
}

/// An undecided field head is tried again with every new byte while the text after its
/// key is at most this long, and after that text has doubled beyond: retries stay
/// linear, and a head of ordinary length is decided by the byte that decides it.
const SHORT_HEAD_REST: usize = 64;

/// What a value-closer search gave.
enum Close {
    /// The closer's range.
    At(usize, usize),
    /// Not decided: search again from this offset when more text has arrived.
    Wait(usize),
    /// There is none: the value is unclosed.
    Absent,
}

/// A closer candidate.
enum Bracket {
    Match(usize, usize),
    No,
    Undecided,
}

/// The longest value opener, `「始ESCAPE」`.
const LONGEST_OPENER: usize = "「始ESCAPE」".len();

/// Where a block's field list ends.
#[derive(Debug, Clone, Copy)]
enum Boundary {
    /// Decided: this marker, or (`None`) the end of the text.
    Known(Option<Marker>),
    /// No boundary starts before `from`; the search began at `origin`.
    Pending { origin: usize, from: usize },
}

/// Where the block scanner stands.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Looking for the next field head at `cur`.
    Between,
    /// Inside a value, looking for its closer from `scan`.
    Value { key: (usize, usize), field_start: usize, value_from: usize, kind: ValueKind, scan: usize },
    /// After a closed value: an optional `,`.
    AfterValue,
}

/// An open request block.
#[derive(Debug)]
struct Block {
    start: Marker,
    cur: usize,
    boundary: Boundary,
    fields: Vec<Field>,
    stray_from: Option<usize>,
    phase: Phase,
    /// Do not try a head again before the text is this long (keeps retries linear).
    retry_at: usize,
    /// The head at `cur` is known to be key characters up to here (when above `cur`):
    /// a retry reads on from there.
    key_to: usize,
}

impl Block {
    /// Every offset `cut` bytes earlier (the window dropped its first `cut` bytes, all
    /// before the block).
    fn rebase(&mut self, cut: usize) {
        let marker = |m: &mut Marker| {
            m.start -= cut;
            m.end -= cut;
        };
        marker(&mut self.start);
        self.cur -= cut;
        match &mut self.boundary {
            Boundary::Known(Some(m)) => marker(m),
            Boundary::Known(None) => {}
            Boundary::Pending { origin, from } => {
                *origin -= cut;
                *from -= cut;
            }
        }
        for field in &mut self.fields {
            field.key = (field.key.0 - cut, field.key.1 - cut);
            field.start -= cut;
            field.end -= cut;
        }
        if let Some(from) = &mut self.stray_from {
            *from -= cut;
        }
        if let Phase::Value { key, field_start, value_from, scan, .. } = &mut self.phase {
            *key = (key.0 - cut, key.1 - cut);
            *field_start -= cut;
            *value_from -= cut;
            *scan -= cut;
        }
        self.retry_at = self.retry_at.saturating_sub(cut);
        self.key_to = self.key_to.saturating_sub(cut);
    }
}

/// Where the scanner stands.
#[derive(Debug)]
enum State {
    /// Outside blocks, looking for START from `from` (the search began at `origin`).
    Prose {
        origin: usize,
        from: usize,
    },
    Block(Block),
}

/// Receives what the scanner decides. Offsets given to [`text`](Sink::text) are into the
/// cleaned text; everything else is already in input offsets.
pub(crate) trait Sink {
    /// Prose `start..end` (cleaned offsets) is decided.
    fn text(&mut self, _src: &Source<'_>, _start: usize, _end: usize) {}
    /// A block began at input offset `offset`.
    fn started(&mut self, _offset: usize) {}
    /// Whether [`field`](Sink::field) wants to be called.
    fn wants_fields(&self) -> bool {
        false
    }
    /// A field is complete.
    fn field(&mut self, _key: &str, _value: &str, _closed: bool, _span: Span) {}
    /// A block yielded a request.
    fn request(&mut self, request: ParsedToolRequest);
    /// A block ended without a request.
    fn discarded(&mut self, _span: Span) {}
    /// A diagnostic.
    fn diagnostic(&mut self, diagnostic: Diagnostic);
}

/// The grammar's searchers.
#[derive(Debug)]
struct Grammar {
    finder: MarkerFinder,
    fuzzy: bool,
    doc_close: memmem::Finder<'static>,
}

/// Hands out ids to requests without one.
#[derive(Debug)]
struct Ids {
    style: RequestIdStyle,
    prefix: Option<String>,
    /// Requests seen so far.
    seen: usize,
}

impl Ids {
    fn assign(&mut self, request: &mut ParsedToolRequest) {
        use std::fmt::Write as _;
        self.seen += 1;
        if request.id_source != RequestIdSource::Assigned {
            return;
        }
        let style = self.style;
        let prefix = self.prefix.get_or_insert_with(|| match style {
            RequestIdStyle::Sequential => "req_".to_string(),
            RequestIdStyle::Random => format!("call_{:016x}_", uuid::Uuid::new_v4().as_u64_pair().0),
        });
        let mut id = String::with_capacity(prefix.len() + 6);
        id.push_str(prefix);
        let _ = write!(id, "{}", self.seen);
        request.request_id = id;
    }
}

/// The VCP block scanner: a state machine over the cleaned text that can stop wherever
/// the text so far does not decide, and resume when more has arrived. The one-shot
/// parser runs it once over the whole text.
#[derive(Debug)]
pub(crate) struct Scanner {
    grammar: Grammar,
    ids: Ids,
    state: State,
    /// Prose before this offset has been reported.
    prose_from: usize,
    /// A field list kept for the next block.
    spare: Vec<Field>,
}

/// Skips white space (any) from `from` up to `limit`.
fn skip_ws(text: &str, from: usize, limit: usize) -> usize {
    match text.get(from..limit) {
        Some(rest) => limit - rest.trim_start().len(),
        None => from.max(limit),
    }
}

fn diag(
    src: &Source<'_>,
    sink: &mut impl Sink,
    kind: DiagnosticKind,
    message: String,
    start: usize,
    end: usize,
) {
    let from = src.original_start(start);
    sink.diagnostic(Diagnostic::new(kind, message, Span::new(from, src.original_end(end).max(from))));
}

impl Scanner {
    pub(crate) fn new(options: &VcpOptions) -> Self {
        Scanner {
            grammar: Grammar {
                finder: MarkerFinder::new(options.fuzzy_markers, options.skip_fenced),
                fuzzy: options.fuzzy_markers,
                doc_close: memmem::Finder::new("「末exp」".as_bytes()).into_owned(),
            },
            ids: Ids { style: options.request_ids, prefix: None, seen: 0 },
            state: State::Prose { origin: 0, from: 0 },
            prose_from: 0,
            spare: Vec::new(),
        }
    }

    /// Offsets before this one will never be looked at again (keep a few bytes of
    /// look-behind before it): the start of the open block, or where prose resumes.
    pub(crate) fn needed_from(&self) -> usize {
        match &self.state {
            // `origin` only rejects fuzzy `<` runs that begin before it; the look-behind
            // kept before `from` is longer than any run that could be a marker.
            State::Prose { from, .. } => (*from).min(self.prose_from),
            State::Block(b) => b.start.start,
        }
    }

    /// The window dropped its first `cut` bytes (at most [`needed_from`](Self::needed_from)).
    pub(crate) fn rebase(&mut self, cut: usize) {
        self.prose_from = self.prose_from.saturating_sub(cut);
        match &mut self.state {
            State::Prose { origin, from } => {
                *origin = origin.saturating_sub(cut);
                *from -= cut;
            }
            State::Block(b) => b.rebase(cut),
        }
    }

    /// Whether the scanner is in prose with everything up to `len` read and reported.
    /// New text without `<` cannot then begin a block, and
    /// [`take_prose`](Self::take_prose) reports it without searching. (Inside a block,
    /// text that cannot decide anything is kept back instead: see
    /// [`defer_budget`](Self::defer_budget).)
    pub(crate) fn prose_read_to(&self, len: usize) -> bool {
        matches!(self.state, State::Prose { from, .. } if from == len) && self.prose_from == len
    }

    /// Reports new prose up to `len` that holds no `<` (see
    /// [`prose_read_to`](Self::prose_read_to)): what [`run`](Self::run) would do, without
    /// its searches.
    pub(crate) fn take_prose(&mut self, src: &Source<'_>, len: usize, sink: &mut impl Sink) {
        if let State::Prose { from, .. } = &mut self.state {
            sink.text(src, self.prose_from, len);
            *from = len;
            self.prose_from = len;
        }
    }

    /// How many more bytes without `<` or `末` may arrive after the text is `len` bytes
    /// long (the scanner having run) before running again could report anything.
    ///
    /// Inside a block, only a value closer (which holds `末`) or a marker (which begins
    /// with `<`) leads to an event; what lies between (keys, separators, value text) is
    /// read when one arrives (so a diagnostic about skipped text between fields comes
    /// with the next closer or marker, not with the field head that ends the skipped
    /// text). Not so while a closer or marker candidate is pending (its last bytes
    /// decide it), nor in prose (which is reported as it comes).
    pub(crate) fn defer_budget(&self, len: usize) -> usize {
        let State::Block(b) = &self.state else { return 0 };
        let held_marker = matches!(b.boundary, Boundary::Pending { from, .. } if from < len);
        let held_closer = matches!(b.phase, Phase::Value { scan, .. } if scan < len);
        if held_marker || held_closer { 0 } else { usize::MAX }
    }

    /// The exact marker candidate the scanner holds back at the end of the text, if
    /// any: everything before it is read, and nothing after it is decided until the
    /// next bytes unmake or complete it.
    pub(crate) fn held_marker(&self, src: &Source<'_>) -> Option<Candidate> {
        let (held, in_block) = match &self.state {
            State::Prose { from, .. } => (*from, false),
            State::Block(b) => match (b.boundary, b.phase) {
                (Boundary::Pending { from, .. }, Phase::Value { kind: ValueKind::Plain, scan, .. })
                    if scan >= from =>
                {
                    (from, true)
                }
                (Boundary::Pending { from, .. }, Phase::Between | Phase::AfterValue) if b.cur >= from => {
                    (from, true)
                }
                _ => return None,
            },
        };
        // Outside a block only START matters (END there is prose).
        self.grammar.finder.candidate(src, held, in_block)
    }

    /// Reads as far as `src` decides. With `last`, `src` holds the whole text and
    /// everything is decided.
    pub(crate) fn run(
        &mut self,
        src: &Source<'_>,
        fences: Option<&Fences>,
        last: bool,
        sink: &mut impl Sink,
    ) {
        loop {
            match &mut self.state {
                State::Prose { origin, from } => {
                    match self.grammar.finder.next_start(src, fences, *origin, *from, last) {
                        Search::Found(m) if m.fenced => {
                            diag(
                                src,
                                sink,
                                DiagnosticKind::FencedMarker,
                                "<<<[TOOL_REQUEST]>>> inside a code fence is ignored (skip_fenced is on)"
                                    .to_string(),
                                m.start,
                                m.end,
                            );
                            *origin = m.end;
                            *from = m.end;
                        }
                        Search::Found(m) => {
                            if m.start > self.prose_from {
                                sink.text(src, self.prose_from, m.start);
                            }
                            sink.started(src.original_start(m.start));
                            let mut fields = std::mem::take(&mut self.spare);
                            fields.clear();
                            self.state = State::Block(Block {
                                start: m,
                                cur: m.end,
                                boundary: Boundary::Pending { origin: m.end, from: m.end },
                                fields,
                                stray_from: None,
                                phase: Phase::Between,
                                retry_at: 0,
                                key_to: 0,
                            });
                        }
                        Search::Undecided(to) | Search::NotBefore(to) => {
                            *from = to;
                            if to > self.prose_from {
                                sink.text(src, self.prose_from, to);
                                self.prose_from = to;
                            }
                            return;
                        }
                    }
                }
                State::Block(block) => {
                    let Some(resume) = self.grammar.step(&mut self.ids, block, src, fences, last, sink)
                    else {
                        return;
                    };
                    if let State::Block(block) =
                        std::mem::replace(&mut self.state, State::Prose { origin: resume, from: resume })
                    {
                        self.spare = block.fields;
                    }
                    self.prose_from = resume;
                }
            }
        }
    }
}

impl Grammar {
    /// Advances an open block as far as the text decides; returns where prose resumes
    /// once the block has ended.
    fn step(
        &self,
        ids: &mut Ids,
        b: &mut Block,
        src: &Source<'_>,
        fences: Option<&Fences>,
        last: bool,
        sink: &mut impl Sink,
    ) -> Option<usize> {
        let text = src.text();
        let len = text.len();
        loop {
            let in_escaped = matches!(b.phase, Phase::Value { kind: ValueKind::Escaped, .. });
            if let (false, Boundary::Pending { origin, from }) = (in_escaped, b.boundary) {
                b.boundary = match self.finder.next_boundary(src, fences, origin, from, last) {
                    Search::Found(m) => Boundary::Known(Some(m)),
                    Search::NotBefore(_) if last => Boundary::Known(None),
                    Search::Undecided(to) | Search::NotBefore(to) => Boundary::Pending { origin, from: to },
                };
            }
            let (limit, settled) = match b.boundary {
                Boundary::Known(Some(m)) => (m.start, true),
                Boundary::Known(None) => (len, true),
                Boundary::Pending { from, .. } => (from, false),
            };
            match b.phase {
                Phase::Between => {
                    b.cur = skip_ws(text, b.cur, limit);
                    if b.cur >= limit {
                        if settled {
                            return Some(self.end_block(ids, b, src, sink));
                        }
                        return None;
                    }
                    if !settled && len < b.retry_at {
                        return None;
                    }
                    match self.head(src, b.cur, b.key_to, limit, settled) {
                        HeadRead::NeedMore { key_end } => {
                            b.key_to = key_end;
                            let rest = len - key_end.min(len);
                            b.retry_at = if rest <= SHORT_HEAD_REST { len + 1 } else { len + rest };
                            return None;
                        }
                        HeadRead::Resume(resume) => {
                            b.stray_from.get_or_insert(b.cur);
                            b.cur = resume.max(b.cur + 1).min(limit);
                        }
                        HeadRead::Field(head) => {
                            if let Some(from) = b.stray_from.take() {
                                stray(src, sink, from, b.cur);
                            }
                            b.phase = Phase::Value {
                                key: head.key,
                                field_start: b.cur,
                                value_from: head.opener_end,
                                kind: head.kind,
                                scan: head.opener_end,
                            };
                        }
                    }
                    b.retry_at = 0;
                    b.key_to = 0;
                }
                Phase::Value { key, field_start, value_from, kind, scan } => {
                    let close = match kind {
                        ValueKind::Plain => self.plain_close(src, value_from, scan, limit, settled),
                        ValueKind::Doc => self.doc_close(src, scan, limit, settled),
                        ValueKind::Escaped => self.escaped_close(src, value_from, scan, last),
                    };
                    let (raw_end, closed, field_end) = match close {
                        Close::At(close, end) => (close, true, end),
                        Close::Wait(next) => {
                            b.phase = Phase::Value { key, field_start, value_from, kind, scan: next };
                            return None;
                        }
                        Close::Absent if kind == ValueKind::Escaped => {
                            b.boundary = Boundary::Known(None);
                            (len, false, len)
                        }
                        Close::Absent => (limit, false, limit),
                    };
                    if kind == ValueKind::Escaped && closed {
                        // Markers inside the value were content: look again after it.
                        match b.boundary {
                            Boundary::Known(Some(m)) if m.start < field_end => {
                                b.boundary = Boundary::Pending { origin: field_end, from: field_end };
                            }
                            Boundary::Pending { from, .. } => {
                                b.boundary =
                                    Boundary::Pending { origin: field_end, from: from.max(field_end) };
                            }
                            _ => {}
                        }
                    }
                    let value = normalize_value(text.get(value_from..raw_end).unwrap_or(""), kind);
                    let field = Field { key, start: field_start, end: field_end, value, kind, closed };
                    if sink.wants_fields() {
                        let span = Span::new(src.original_start(field.start), src.original_end(field.end));
                        let key = text.get(key.0..key.1).unwrap_or("");
                        sink.field(key, &field.value, closed, span);
                    }
                    b.fields.push(field);
                    b.cur = field_end;
                    b.phase = if closed { Phase::AfterValue } else { Phase::Between };
                }
                Phase::AfterValue => {
                    let after = skip_ws(text, b.cur, limit);
                    if after >= limit && !settled {
                        b.cur = after;
                        return None;
                    }
                    let comma = text.get(after..limit).is_some_and(|r| r.starts_with(','));
                    b.cur = if comma { after + 1 } else { after };
                    b.phase = Phase::Between;
                }
            }
        }
    }

    /// Reads a field head at `at`, says where to resume scanning, or that the text so
    /// far (up to `limit`, which is final when `settled`) does not decide. The text from
    /// `at` to `known_key` (when above `at`) is known to be key characters.
    fn head(&self, src: &Source<'_>, at: usize, known_key: usize, limit: usize, settled: bool) -> HeadRead {
        let text = src.text();
        let key_limit = src.next_break_after(at).map_or(limit, |b| b.min(limit));
        let key_end = if known_key > at && known_key <= key_limit {
            let more = text.get(known_key..key_limit).unwrap_or("");
            known_key + more.find(|c| !is_key_char(c)).unwrap_or(more.len())
        } else {
            let key_text = text.get(at..key_limit).unwrap_or("");
            let Ok((_, key)) = key(key_text) else {
                let skip = text.get(at..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8);
                return HeadRead::Resume(at + skip);
            };
            at + key.len()
        };
        if key_end == limit && !settled {
            return HeadRead::NeedMore { key_end };
        }
        // Every suffix of this key fails the same way, so resume after what was read.
        let sep_text = text.get(key_end..limit).unwrap_or("");
        let Ok((after_sep, _)) = separator(sep_text) else {
            let blanks = sep_text.bytes().take_while(|&b| b == b' ' || b == b'\t').count();
            if key_end + blanks == limit && !settled {
                return HeadRead::NeedMore { key_end };
            }
            return HeadRead::Resume(key_end);
        };
        let sep_end = limit - after_sep.len();
        let opener_at = skip_ws(text, sep_end, limit);
        if opener_at == limit && !settled {
            return HeadRead::NeedMore { key_end };
        }
        match opener(self.fuzzy)(text.get(opener_at..limit).unwrap_or("")) {
            Ok((after_opener, kind)) => {
                let opener_end = limit - after_opener.len();
                if src.crosses_break(opener_at, opener_end) {
                    return HeadRead::Resume(sep_end);
                }
                HeadRead::Field(Head { key: (at, key_end), kind, opener_end })
            }
            Err(_) if !settled && limit - opener_at < LONGEST_OPENER => HeadRead::NeedMore { key_end },
            Err(_) => HeadRead::Resume(sep_end),
        }
    }

    /// A bracketed closer around the `末` at `mid` (bytes of `末`: `mid..mid + 3`), whose
    /// opening bracket is at or after `from` and which ends by `limit`.
    #[allow(clippy::too_many_arguments)]
    fn bracketed(
        src: &Source<'_>,
        mid: usize,
        word: &str,
        from: usize,
        fuzzy: bool,
        limit: usize,
        settled: bool,
    ) -> Bracket {
        let text = src.text();
        let Some(before) = text.get(..mid) else { return Bracket::No };
        let start = if before.ends_with('「') {
            mid - '「'.len_utf8()
        } else if fuzzy && before.ends_with('{') {
            mid - 1
        } else {
            return Bracket::No;
        };
        let Some(after_mid) = text.get(mid + '末'.len_utf8()..) else { return Bracket::No };
        let after_word = if word.is_empty() {
            after_mid
        } else {
            match strip_prefix_ignore_ascii_case(after_mid, word) {
                Some(rest) => rest,
                None if !settled && could_become(after_mid, word, true) => return Bracket::Undecided,
                None => return Bracket::No,
            }
        };
        let close_len = if after_word.starts_with('」') {
            '」'.len_utf8()
        } else if fuzzy && after_word.starts_with('}') {
            1
        } else if after_word.is_empty() && !settled {
            return Bracket::Undecided;
        } else {
            return Bracket::No;
        };
        let end = text.len() - after_word.len() + close_len;
        if start < from || src.crosses_break(start, end) {
            return Bracket::No;
        }
        if end > limit {
            return if settled { Bracket::No } else { Bracket::Undecided };
        }
        Bracket::Match(start, end)
    }

    /// The first `「末」` (with fuzzy variants) of a value that began at `from`, searched
    /// from `scan` up to `limit`.
    fn plain_close(&self, src: &Source<'_>, from: usize, scan: usize, limit: usize, settled: bool) -> Close {
        for mid in closer_chars(src.text(), scan, limit) {
            match Self::bracketed(src, mid, "", from, self.fuzzy, limit, settled) {
                Bracket::Match(start, end) => return Close::At(start, end),
                Bracket::Undecided => return Close::Wait(mid),
                Bracket::No => {}
            }
        }
        if settled { Close::Absent } else { Close::Wait(limit.max(scan)) }
    }

    /// The first escaped closer (`「末ESCAPE」`, any case and bracket) of a value that
    /// began at `from`, searched from `scan`: markers do not end it.
    fn escaped_close(&self, src: &Source<'_>, from: usize, scan: usize, last: bool) -> Close {
        let len = src.text().len();
        for mid in closer_chars(src.text(), scan, len) {
            match Self::bracketed(src, mid, "ESCAPE", from, true, len, last) {
                Bracket::Match(start, end) => return Close::At(start, end),
                Bracket::Undecided => return Close::Wait(mid),
                Bracket::No => {}
            }
        }
        if last { Close::Absent } else { Close::Wait(len.max(scan)) }
    }

    /// The first `「末exp」` from `scan` up to `limit`.
    fn doc_close(&self, src: &Source<'_>, scan: usize, limit: usize, settled: bool) -> Close {
        let text = src.text();
        let bytes = text.as_bytes().get(..limit).unwrap_or_default();
        let mut at = scan;
        while let Some(i) = bytes.get(at..).and_then(|b| self.doc_close.find(b)) {
            let start = at + i;
            let end = start + "「末exp」".len();
            if !src.crosses_break(start, end) {
                return Close::At(start, end);
            }
            at = start + 1;
        }
        if settled {
            Close::Absent
        } else {
            let resume = floor_boundary(text, limit.saturating_sub("「末exp」".len() - 1));
            Close::Wait(resume.max(scan))
        }
    }

    /// Ends the block (its boundary is decided); returns where prose resumes.
    fn end_block(&self, ids: &mut Ids, b: &mut Block, src: &Source<'_>, sink: &mut impl Sink) -> usize {
        let len = src.text().len();
        let boundary = match b.boundary {
            Boundary::Known(m) => m,
            Boundary::Pending { .. } => None,
        };
        let limit = boundary.map_or(len, |m| m.start);
        if let Some(from) = b.stray_from.take() {
            stray(src, sink, from, limit);
        }
        let (block_end, resume) = match boundary {
            Some(m) if m.kind == MarkerKind::End => (m.end, m.end),
            Some(m) => (m.start, m.start),
            None => (len, len),
        };
        if boundary.is_none_or(|m| m.kind != MarkerKind::End) {
            let why =
                if boundary.is_some() { "the next <<<[TOOL_REQUEST]>>> begins" } else { "the text ends" };
            diag(
                src,
                sink,
                DiagnosticKind::MissingEndMarker,
                format!("request block has no <<<[END_TOOL_REQUEST]>>>; it ends where {why}"),
                b.start.start,
                block_end,
            );
        }
        finish_block(ids, src, sink, b.start, block_end, &mut b.fields);
        resume
    }
}

/// Offsets of `末` in `from..limit`, in order. Values are short, so a `memchr` for the
/// first byte of `末` (then a check of the rest) beats a substring searcher's set-up.
fn closer_chars(text: &str, from: usize, limit: usize) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes().get(..limit).unwrap_or_default();
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

fn stray(src: &Source<'_>, sink: &mut impl Sink, from: usize, to: usize) {
    let skipped = src.text().get(from..to).unwrap_or("");
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
    diag(src, sink, DiagnosticKind::StrayText, message, from, end);
}

/// Turns a block's fields into a request (or into a diagnostic, for empty and example
/// blocks).
fn finish_block(
    ids: &mut Ids,
    src: &Source<'_>,
    sink: &mut impl Sink,
    start: Marker,
    end: usize,
    fields: &mut Vec<Field>,
) {
    let text = src.text();
    let span = Span::new(src.original_start(start.start), src.original_end(end));
    if fields.is_empty() {
        diag(
            src,
            sink,
            DiagnosticKind::EmptyBlock,
            "request block holds no field, so it is not a request".to_string(),
            start.start,
            end,
        );
        sink.discarded(span);
        return;
    }
    if fields.iter().any(|f| f.kind == ValueKind::Doc) {
        diag(
            src,
            sink,
            DiagnosticKind::ExampleBlock,
            "request block holds a documentation value (「始exp」): it is an example, not a request"
                .to_string(),
            start.start,
            end,
        );
        fields.clear();
        sink.discarded(span);
        return;
    }
    let mut tool_name: Option<String> = None;
    let mut request_id: Option<String> = None;
    let mut args = Args::with_capacity(fields.len());
    let mut problems = Vec::new();
    for field in fields.drain(..) {
        let key = text.get(field.key.0..field.key.1).unwrap_or("");
        if !field.closed {
            let closer = if field.kind == ValueKind::Escaped { "「末ESCAPE」" } else { "「末」" };
            problems.push(format!("the value of `{key}` is not closed: end it with {closer}"));
            diag(
                src,
                sink,
                DiagnosticKind::UnclosedValue,
                format!("value of `{key}` is not closed with {closer}"),
                field.start,
                field.end,
            );
        }
        let duplicate = if key.eq_ignore_ascii_case("tool_name") {
            tool_name.replace(field.value).is_some()
        } else if key.eq_ignore_ascii_case("request_id") {
            // An empty id counts as absent: it neither sets nor erases one.
            !field.value.is_empty() && request_id.replace(field.value).is_some()
        } else {
            // The last occurrence wins, at its own position: move it to the end.
            let (index, old) = args.insert_full(key.to_string(), serde_json::Value::String(field.value));
            if old.is_some() {
                args.move_index(index, args.len() - 1);
            }
            old.is_some()
        };
        if duplicate {
            diag(
                src,
                sink,
                DiagnosticKind::DuplicateKey,
                format!("key `{key}` appears more than once; the last value is used"),
                field.start,
                field.end,
            );
        }
    }
    let tool_name = tool_name.unwrap_or_default();
    if tool_name.is_empty() {
        problems.insert(0, "the request has no tool_name: add tool_name:「始」…「末」".to_string());
        diag(
            src,
            sink,
            DiagnosticKind::MissingToolName,
            "request block has no tool_name".to_string(),
            start.start,
            start.end,
        );
    }
    let (request_id, id_source) = match request_id {
        Some(id) => (id, RequestIdSource::Model),
        None => (String::new(), RequestIdSource::Assigned),
    };
    let fire_and_forget = args.get("archery").and_then(serde_json::Value::as_str).is_some_and(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("no_reply")
    });
    let mut request = ParsedToolRequest {
        request_id,
        id_source,
        tool_name,
        args,
        span,
        complete: problems.is_empty(),
        problems,
        fire_and_forget,
    };
    ids.assign(&mut request);
    sink.request(request);
}

/// The diagnostic for reasoning that is never closed (the opening tag at `start..end`).
pub(crate) fn unclosed_reasoning(start: usize, end: usize) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::UnclosedReasoning,
        "reasoning block is never closed: everything after it is hidden",
        Span::new(start, end),
    )
}

/// Collects what the one-shot parser returns.
#[derive(Default)]
struct Collect {
    requests: Vec<ParsedToolRequest>,
    diagnostics: Vec<Diagnostic>,
}

impl Sink for Collect {
    fn request(&mut self, request: ParsedToolRequest) {
        self.requests.push(request);
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }
}

/// Parses `text` with `options` (see the module docs).
pub(crate) fn parse(text: &str, options: &VcpOptions) -> ParseOutcome {
    let mut sink = Collect::default();
    let src = if options.keep_reasoning {
        Source::unchanged(text)
    } else {
        let (pieces, unclosed) = reasoning::pieces(text);
        if let Some((start, end)) = unclosed {
            sink.diagnostics.push(unclosed_reasoning(start, end));
        }
        Source::from_pieces(text, &pieces)
    };
    let fences = options.skip_fenced.then(|| Fences::find(src.text()));
    Scanner::new(options).run(&src, fences.as_ref(), true, &mut sink);
    let Collect { requests, mut diagnostics } = sink;
    crate::protocol::sort_diagnostics(&mut diagnostics);
    ParseOutcome::new(requests, diagnostics)
}
