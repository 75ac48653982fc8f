//! The VCP block scanner, and the one-shot parser that runs it over a whole text.
//!
//! Reasoning is cut out first (unless kept); then START markers are found with a
//! substring search, and each block's fields are read (see `fields`); a block that has
//! ended becomes a request (see `block`).
//!
//! The block reader is a [`Scanner`]: a state machine that stops wherever the text so
//! far does not decide what comes next (a marker cut short at the end, a value whose
//! closer has not arrived, a fuzzy `>` run that may grow) and resumes when more text
//! arrives, keeping its search positions. The one-shot parser runs it once over the whole
//! text; the streaming parser runs it after every chunk. Both therefore read every
//! input the same way, and the cost stays linear in the input either way.
//!
//! Every reader is hand-written, with no parser library: `memchr` searches find where a
//! marker, a reasoning tag or a value closer can begin, and byte comparisons read it
//! (field heads in `fields`). The grammar is a handful of fixed tokens, and each reader
//! must say where to resume when the text so far does not decide. Read with `nom`
//! combinators instead, the field heads alone cost 14% more instructions over a whole
//! parse of request-dense replies; `docs/architecture.md` ("How the VCP parser reads
//! text") has the measurements and the commands.

use std::borrow::Cow;

use memchr::memmem;

use super::block::{BlockLimits, diag, finish_block, stray};
use super::fence::Fences;
use super::fields::{
    Close, Field, HeadRead, SHORT_HEAD_REST, ValueKind, bracket_close, doc_close, normalize, read_head,
    skip_ws,
};
use super::markers::{Candidate, Marker, MarkerFinder, MarkerKind, Search, Wanted};
use super::view::{ParseView, RequestView};
use super::visible::VisibleText;
use super::{VcpLimits, VcpOptions, VcpTemplates};
use crate::Span;
use crate::protocol::Diagnostic;
use crate::protocol::DiagnosticKind;
use crate::protocol::ParseOutcome;
use crate::protocol::ids::IdAssigner;
use crate::protocol::reasoning::{self, unclosed_diagnostic};
use crate::protocol::{floor_prefix, reply_too_long};
use std::sync::Arc;

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
    /// Fields past [`VcpLimits::max_fields`], read but not kept.
    dropped_fields: usize,
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
            field.value = (field.value.0 - cut, field.value.1 - cut);
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
    /// The reply holds more requests than [`VcpLimits::max_requests`]: the rest is text.
    Done,
}

/// Receives what the scanner decides. Offsets given to [`text`](Sink::text) are into the
/// cleaned text; everything else is already in input offsets.
pub(crate) trait Sink<'i> {
    /// The whole input, when requests may borrow from it (the one-shot parser); `None`
    /// makes them own their text (a streaming window goes away).
    fn input(&self) -> Option<&'i str> {
        None
    }
    /// Prose `start..end` (cleaned offsets) is decided.
    fn text(&mut self, _src: &VisibleText<'_>, _start: usize, _end: usize) {}
    /// A block began at input offset `offset`.
    fn started(&mut self, _offset: usize) {}
    /// Whether [`field`](Sink::field) wants to be called.
    fn wants_fields(&self) -> bool {
        false
    }
    /// A field is complete.
    fn field(&mut self, _key: &str, _value: &str, _closed: bool, _span: Span) {}
    /// A block yielded a request.
    fn request(&mut self, request: RequestView<'i>);
    /// A block ended without a request.
    fn discarded(&mut self, _span: Span) {}
    /// A diagnostic.
    fn diagnostic(&mut self, diagnostic: Diagnostic);
    /// Whether [`Scanner::run`] should return after the block that just ended (a pull
    /// parser hands out one request at a time; the scanner resumes where it stopped).
    fn paused(&self) -> bool {
        false
    }
}

/// Reads an open block: the marker searchers and the parser options its fields are read
/// with.
#[derive(Debug)]
struct BlockReader {
    finder: MarkerFinder,
    fuzzy: bool,
    doc_close: memmem::Finder<'static>,
    /// The words of the problems written into requests.
    templates: Arc<VcpTemplates>,
    limits: VcpLimits,
}

/// The VCP block scanner: a state machine over the cleaned text that can stop wherever
/// the text so far does not decide, and resume when more has arrived. The one-shot
/// parser runs it once over the whole text.
#[derive(Debug)]
pub(crate) struct Scanner {
    reader: BlockReader,
    ids: IdAssigner,
    state: State,
    /// Prose before this offset has been reported.
    prose_from: usize,
    /// A field list kept for the next block.
    spare: Vec<Field>,
}

impl Scanner {
    pub(crate) fn new(options: &VcpOptions, templates: Arc<VcpTemplates>) -> Self {
        Scanner {
            reader: BlockReader {
                finder: MarkerFinder::new(options.fuzzy_markers, options.skip_fenced),
                fuzzy: options.fuzzy_markers,
                doc_close: memmem::Finder::new("「末exp」".as_bytes()).into_owned(),
                templates,
                limits: options.limits,
            },
            ids: IdAssigner::new(options.request_ids),
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
            State::Done => self.prose_from,
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
            State::Done => {}
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
    pub(crate) fn take_prose<'i>(&mut self, src: &VisibleText<'_>, len: usize, sink: &mut impl Sink<'i>) {
        if let State::Prose { from, .. } = &mut self.state {
            sink.text(src, self.prose_from, len);
            *from = len;
            self.prose_from = len;
        }
    }

    /// Counts new prose up to `len` that holds no `<` as read and reported (see
    /// [`prose_read_to`](Self::prose_read_to)): [`take_prose`](Self::take_prose) for a
    /// caller that reports it itself.
    pub(crate) fn read_prose_to(&mut self, len: usize) {
        if let State::Prose { from, .. } = &mut self.state {
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
    pub(crate) fn held_marker(&self, src: &VisibleText<'_>) -> Option<Candidate> {
        let (held, in_block) = match &self.state {
            State::Prose { from, .. } => (*from, false),
            State::Done => return None,
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
        self.reader.finder.candidate(src, held, in_block)
    }

    /// Reads as far as `src` decides. With `last`, `src` holds the whole text and
    /// everything is decided.
    pub(crate) fn run<'i>(
        &mut self,
        src: &VisibleText<'_>,
        fences: Option<&Fences>,
        last: bool,
        sink: &mut impl Sink<'i>,
    ) {
        loop {
            match &mut self.state {
                State::Prose { origin, from } => {
                    match self.reader.finder.find(Wanted::Start, src, fences, *origin, *from, last) {
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
                        Search::Found(m) if self.ids.seen() >= self.reader.limits.max_requests => {
                            let limit = self.reader.limits.max_requests;
                            diag(
                                src,
                                sink,
                                DiagnosticKind::LimitExceeded,
                                format!(
                                    "the reply holds more than {limit} requests (the limit): this block \
                                     and the rest of the reply are not read for requests"
                                ),
                                m.start,
                                m.end,
                            );
                            self.state = State::Done;
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
                                dropped_fields: 0,
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
                State::Done => {
                    let len = src.text().len();
                    if len > self.prose_from {
                        sink.text(src, self.prose_from, len);
                        self.prose_from = len;
                    }
                    return;
                }
                State::Block(block) => {
                    let Some(resume) = self.reader.step(&mut self.ids, block, src, fences, last, sink) else {
                        return;
                    };
                    if let State::Block(block) =
                        std::mem::replace(&mut self.state, State::Prose { origin: resume, from: resume })
                    {
                        self.spare = block.fields;
                    }
                    self.prose_from = resume;
                    if sink.paused() {
                        return;
                    }
                }
            }
        }
    }
}

impl BlockReader {
    /// Advances an open block as far as the text decides; returns where prose resumes
    /// once the block has ended.
    fn step<'i>(
        &self,
        ids: &mut IdAssigner,
        b: &mut Block,
        src: &VisibleText<'_>,
        fences: Option<&Fences>,
        last: bool,
        sink: &mut impl Sink<'i>,
    ) -> Option<usize> {
        let text = src.text();
        let len = text.len();
        loop {
            let in_escaped = matches!(b.phase, Phase::Value { kind: ValueKind::Escaped, .. });
            if let (false, Boundary::Pending { origin, from }) = (in_escaped, b.boundary) {
                b.boundary = match self.finder.find(Wanted::Boundary, src, fences, origin, from, last) {
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
                    match read_head(src, b.cur, b.key_to, limit, settled, self.fuzzy) {
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
                        ValueKind::Plain => {
                            bracket_close(src, "", value_from, scan, limit, settled, self.fuzzy)
                        }
                        ValueKind::Doc => doc_close(&self.doc_close, src, scan, limit, settled),
                        ValueKind::Escaped => bracket_close(src, "ESCAPE", value_from, scan, len, last, true),
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
                    let field = Field {
                        key,
                        start: field_start,
                        end: field_end,
                        value: (value_from, raw_end),
                        kind,
                        closed,
                    };
                    let keep = b.fields.len() < self.limits.max_fields;
                    if keep && sink.wants_fields() {
                        let span = Span::new(src.original_start(field.start), src.original_end(field.end));
                        let key = text.get(key.0..key.1).unwrap_or("");
                        // A value past the length limit is emptied, as in the request.
                        let raw = if raw_end.saturating_sub(value_from) > self.limits.max_value_bytes {
                            ""
                        } else {
                            text.get(value_from..raw_end).unwrap_or("")
                        };
                        let value = normalize(Cow::Borrowed(raw), kind, src.cr_free());
                        sink.field(key, &value, closed, span);
                    }
                    if keep {
                        b.fields.push(field);
                    } else {
                        b.dropped_fields += 1;
                    }
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

    /// Ends the block (its boundary is decided); returns where prose resumes.
    fn end_block<'i>(
        &self,
        ids: &mut IdAssigner,
        b: &mut Block,
        src: &VisibleText<'_>,
        sink: &mut impl Sink<'i>,
    ) -> usize {
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
        let limits =
            BlockLimits { limits: self.limits, dropped_fields: std::mem::take(&mut b.dropped_fields) };
        finish_block(ids, &self.templates, &limits, src, sink, b.start, block_end, &mut b.fields);
        resume
    }
}

/// Collects what the one-shot parser returns, borrowing from the input, and the normal
/// text when asked for it. Each request is kept as `keep` makes it: as is for the view,
/// owned at once for [`parse_owned`] (so that no list of borrowed requests is built
/// only to be converted and dropped).
struct Collect<'i, R, F> {
    input: &'i str,
    requests: Vec<R>,
    keep: F,
    diagnostics: Vec<Diagnostic>,
    normal_text: Option<String>,
}

impl<'i, R, F: FnMut(RequestView<'i>) -> R> Sink<'i> for Collect<'i, R, F> {
    fn input(&self) -> Option<&'i str> {
        Some(self.input)
    }

    fn text(&mut self, src: &VisibleText<'_>, start: usize, end: usize) {
        if let (Some(normal), Some(piece)) = (self.normal_text.as_mut(), src.text().get(start..end)) {
            normal.push_str(piece);
        }
    }

    fn request(&mut self, request: RequestView<'i>) {
        self.requests.push((self.keep)(request));
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }
}

/// Runs the one-shot parser over `text`, keeping each request as `keep` makes it; with
/// `normal_text`, also gathers the prose around the blocks (reasoning cut out).
fn collect<'i, R>(
    text: &'i str,
    options: &VcpOptions,
    templates: Arc<VcpTemplates>,
    normal_text: bool,
    keep: impl FnMut(RequestView<'i>) -> R,
) -> (Vec<R>, Vec<Diagnostic>, String) {
    let normal_text = normal_text.then(String::new);
    let mut sink = Collect { input: text, requests: Vec::new(), keep, diagnostics: Vec::new(), normal_text };
    let (src, fences, first) = prepare(text, options);
    sink.diagnostics.extend(first);
    Scanner::new(options, templates).run(&src, fences.as_ref(), true, &mut sink);
    let Collect { requests, mut diagnostics, normal_text, .. } = sink;
    crate::protocol::sort_diagnostics(&mut diagnostics);
    log_parsed(text.len(), requests.len(), &diagnostics);
    (requests, diagnostics, normal_text.unwrap_or_default())
}

/// Parses `text` with `options` (see the module docs), borrowing from it.
pub(crate) fn parse_view<'i>(
    text: &'i str,
    options: &VcpOptions,
    templates: Arc<VcpTemplates>,
) -> ParseView<'i> {
    let (requests, diagnostics, _) = collect(text, options, templates, false, |request| request);
    ParseView { requests, diagnostics }
}

/// Parses `text` with `options` into owned requests, with the normal text: what
/// `parse_view(text).into_owned()` gives, each request made owned as its block ends.
pub(crate) fn parse_owned(text: &str, options: &VcpOptions, templates: Arc<VcpTemplates>) -> ParseOutcome {
    let (requests, diagnostics, normal_text) =
        collect(text, options, templates, true, RequestView::into_owned);
    ParseOutcome::new(requests, diagnostics).with_normal_text(normal_text)
}

/// The text the scanner reads (the reply up to its length limit, reasoning cut out
/// unless kept), its fences (with `skip_fenced`), and the diagnostics found on the way:
/// a reply past the length limit, reasoning that is never closed.
pub(crate) fn prepare<'i>(
    text: &'i str,
    options: &VcpOptions,
) -> (VisibleText<'i>, Option<Fences>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let max = options.limits.max_reply_bytes;
    let read = floor_prefix(text, max);
    if read.len() < text.len() {
        diagnostics.push(reply_too_long(read.len(), text.len(), max));
    }
    let src = if options.keep_reasoning {
        VisibleText::unchanged(read)
    } else {
        let filter = reasoning::ReasoningFilter::new(options.starts_in_reasoning, None);
        let (pieces, unclosed) = reasoning::pieces_of(read, filter);
        diagnostics.extend(unclosed.map(|(start, end)| unclosed_diagnostic(start, end)));
        VisibleText::from_pieces(read, &pieces)
    };
    let fences = options.skip_fenced.then(|| Fences::find(src.text()));
    (src, fences, diagnostics)
}

/// Logs a finished one-shot parse (at `debug`).
pub(crate) fn log_parsed(bytes: usize, requests: usize, diagnostics: &[Diagnostic]) {
    tracing::debug!(bytes, requests, diagnostics = diagnostics.len(), "VCP reply parsed");
    diagnostics.iter().for_each(Diagnostic::log);
}
