//! The streaming VCP parser.

use std::sync::Arc;

use super::fence::Fences;
use super::markers::{Candidate, floor_boundary};
use super::scanner::{Scanner, Sink};
use super::view::RequestView;
use super::visible::VisibleText;
use super::{VcpOptions, VcpTemplates};
use crate::Span;
use crate::model::TurnDelta;
use crate::protocol::Diagnostic;
use crate::protocol::reasoning::{ReasoningFilter, unclosed_diagnostic};
use crate::protocol::{EventSink, StreamEvent, StreamParser};
use crate::protocol::{floor_prefix, reply_too_long};

/// Bytes kept before the oldest offset the scanner still needs: the look-behind of a
/// marker (a backtick before it, the `<` run of a fuzzy marker).
const LOOK_BEHIND: usize = 16;
/// The window is compacted once this much of it is no longer needed (and at least
/// half of it is).
const COMPACT_AT: usize = 4096;
/// The first byte of `末`, which every value closer holds.
const CLOSER_LEAD: u8 = 0xE6;

/// A VCP parser fed chunk by chunk, as a model writes.
///
/// It reports [`StreamEvent`]s as soon as the text decides them: prose at once, except
/// for a tail that could still begin a marker or a reasoning tag (`<<<[TOO` at the end of
/// a chunk is held back until the next chunk decides it); the start of each request
/// block; each completed field; each completed request, as soon as its block has ended.
/// Reasoning is hidden until it closes (an unclosed block hides the rest), and every
/// option of [`VcpOptions`] applies.
///
/// Nothing comes late: after each push, the events so far are those a fresh parser
/// reports for all the text pushed so far given in one piece. The one exception is a
/// diagnostic about skipped text between two fields of a block, which comes with the
/// next field's closer rather than with the field head that ends the skipped text.
///
/// Whatever the chunking, the requests and diagnostics it reports equal those of the
/// one-shot [`VcpProtocol::parse`](super::VcpProtocol::parse) of the whole text
/// ([`StreamCollector`](crate::protocol::StreamCollector) assembles them). It reads every
/// byte once, keeping its place inside values, and holds only undecided text and the
/// open request block: memory is bounded by the largest request, not by the reply.
///
/// ```
/// use tool_calling::protocol::vcp::VcpProtocol;
/// use tool_calling::protocol::{StreamParser, StreamEvent};
///
/// let mut parser = VcpProtocol::default().stream_parser();
/// let mut events = Vec::new();
/// parser.push_text("Checking.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_", &mut events);
/// // The prose is out; the block has started; the END marker is not decided yet.
/// assert!(matches!(&events[0], StreamEvent::Text { text, .. } if text == "Checking.\n"));
/// assert!(matches!(events[1], StreamEvent::RequestStarted { offset: 10 }));
/// assert!(!events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(_))));
///
/// events.clear();
/// parser.push_text("REQUEST]>>>", &mut events);
/// assert!(matches!(&events[0], StreamEvent::RequestCompleted(r) if r.tool_name == "clock"));
/// parser.finish(&mut events);
/// ```
#[derive(Debug)]
pub struct VcpStreamParser {
    options: VcpOptions,
    scanner: Scanner,
    /// The cleaned text still needed (reasoning cut out), with its map to input offsets.
    src: VisibleText<'static>,
    fences: Option<Fences>,
    filter: ReasoningFilter,
    /// Input text the reasoning filter has not classified yet, from input offset `raw_base`.
    raw: String,
    raw_base: usize,
    /// Bytes passed on to the pipeline so far.
    total: usize,
    /// Text pushed but kept back (see `DeferRule`); it follows `total`.
    deferred: String,
    defer_rule: DeferRule,
    /// The cleaned text the scanner has seen (its length then).
    scanned: usize,
    /// Whether that text ended with a break (hidden reasoning).
    scanned_break: bool,
    finished: bool,
    /// Bytes pushed past [`VcpLimits::max_reply_bytes`](super::VcpLimits::max_reply_bytes),
    /// not read; `Some` once the limit is reached.
    unread: Option<usize>,
}

impl VcpStreamParser {
    /// A streaming parser with `options`.
    pub fn new(options: VcpOptions) -> Self {
        Self::with_templates(options, Arc::clone(VcpTemplates::english()))
    }

    /// A streaming parser whose notes to the model use `templates`.
    pub(crate) fn with_templates(options: VcpOptions, templates: Arc<VcpTemplates>) -> Self {
        VcpStreamParser {
            options,
            scanner: Scanner::new(&options, templates),
            src: VisibleText::growing(),
            fences: options.skip_fenced.then(Fences::default),
            filter: ReasoningFilter::new(options.starts_in_reasoning, None),
            raw: String::new(),
            raw_base: 0,
            total: 0,
            deferred: String::new(),
            defer_rule: DeferRule::NONE,
            scanned: 0,
            scanned_break: false,
            finished: false,
            unread: None,
        }
    }

    /// The parser options.
    pub fn options(&self) -> &VcpOptions {
        &self.options
    }

    /// Bytes pushed so far.
    pub fn offset(&self) -> usize {
        self.total + self.deferred.len()
    }

    /// Bytes of text the parser holds: undecided text and the open request block, plus
    /// a little slack. Bounded by the largest request block, not by the reply.
    pub fn buffered_len(&self) -> usize {
        self.src.text().len() + self.raw.len() + self.deferred.len()
    }

    /// Passes newly decided input text on to the cleaned text.
    fn filter(&mut self, last: bool) {
        let VcpStreamParser { src, filter, raw, raw_base, .. } = self;
        let base = *raw_base;
        filter.advance(raw, base, last, &mut |piece| src.push_piece(piece, raw, base));
        let decided = filter.decided().saturating_sub(base);
        if decided > 0 && (decided >= raw.len() || decided >= COMPACT_AT && decided * 2 >= raw.len()) {
            let cut = floor_boundary(raw, decided);
            raw.drain(..cut);
            *raw_base += cut;
        }
    }

    fn scan(&mut self, last: bool, events: &mut dyn EventSink) {
        if let Some(fences) = &mut self.fences {
            fences.feed(self.src.text().as_bytes());
            if last {
                fences.end(self.src.text().len());
            }
        }
        self.scanner.run(&self.src, self.fences.as_ref(), last, &mut Events { events });
    }

    /// Drops cleaned text the scanner no longer needs.
    fn compact(&mut self) {
        if self.src.text().len() < 2 * COMPACT_AT {
            return;
        }
        let needed = self.scanner.needed_from();
        let cut = floor_boundary(self.src.text(), needed.saturating_sub(LOOK_BEHIND));
        if cut >= COMPACT_AT && cut * 2 >= self.src.text().len() {
            self.src.drop_front(cut);
            if let Some(fences) = &mut self.fences {
                fences.rebase(cut);
            }
            self.scanner.rebase(cut);
            self.scanned -= cut;
        }
    }
}

impl StreamParser for VcpStreamParser {
    /// Reads [`TurnDelta::Text`]; VCP lives in the text, so other deltas (reasoning a
    /// provider reports apart, native tool calls) are not read.
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink) {
        if let TurnDelta::Text(text) = delta {
            self.push_text(text, events);
        }
    }

    #[inline]
    fn push_text(&mut self, chunk: &str, events: &mut dyn EventSink) {
        let room = self.options.limits.max_reply_bytes.saturating_sub(self.offset());
        if chunk.len() > room || self.unread.is_some() {
            self.push_past_limit(chunk, room, events);
        } else if self.reads_as_prose(chunk) {
            self.push_prose(chunk, events);
        } else if !self.defer_chunk(chunk) {
            self.run_with_deferred(chunk, events);
        }
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        if self.finished {
            return;
        }
        if !self.deferred.is_empty() {
            let text = std::mem::take(&mut self.deferred);
            self.run_pipeline(&text, events);
        }
        self.finished = true;
        self.defer_rule = DeferRule::NONE;
        if !self.options.keep_reasoning {
            self.filter(true);
            if let Some((start, end)) = self.filter.unclosed() {
                events.event(StreamEvent::Diagnostic(unclosed_diagnostic(start, end)));
            }
        }
        self.scan(true, events);
        if let Some(unread) = self.unread {
            events.event(StreamEvent::Diagnostic(reply_too_long(
                self.offset(),
                self.offset() + unread,
                self.options.limits.max_reply_bytes,
            )));
        }
        self.src = VisibleText::growing();
        self.raw = String::new();
    }
}

impl VcpStreamParser {
    /// Reads what of `chunk` fits in the `room` left under the reply limit (cut at a
    /// character boundary, as the one-shot parser cuts the whole reply) and counts the
    /// rest as unread; after the first cut, nothing more is read.
    #[cold]
    fn push_past_limit(&mut self, chunk: &str, room: usize, events: &mut dyn EventSink) {
        let read = if self.unread.is_some() { "" } else { floor_prefix(chunk, room) };
        *self.unread.get_or_insert(0) += chunk.len() - read.len();
        if !read.is_empty() && !self.defer_chunk(read) {
            self.run_with_deferred(read, events);
        }
    }

    /// Whether `chunk` is prose as it stands, decided at once: it holds no `<` (which
    /// every marker and reasoning tag begins with), and everything before it is decided
    /// prose (nothing kept back, no reasoning open, the scanner in prose with all of it
    /// read, no fences to track). The common push of a model writing prose.
    #[inline(always)]
    fn reads_as_prose(&self, chunk: &str) -> bool {
        !chunk.is_empty()
            && self.deferred.is_empty()
            && self.fences.is_none()
            && !self.finished
            && self.scanned == self.src.text().len()
            && self.scanner.prose_read_to(self.scanned)
            && (self.options.keep_reasoning || self.filter.passes_plain_text(self.total))
            && !has(chunk.as_bytes(), b'<')
    }

    /// Reads a chunk of prose that [`reads_as_prose`](Self::reads_as_prose): what the
    /// pipeline does with it, without its searches. The chunk is one stretch of visible
    /// text at the end of the input, so it is reported as it is.
    fn push_prose(&mut self, chunk: &str, events: &mut dyn EventSink) {
        let start = self.total;
        self.total += chunk.len();
        if !self.options.keep_reasoning {
            self.filter.pass_plain_text(self.total);
            self.raw.clear();
            self.raw_base = self.total;
        }
        self.src.push_visible(chunk, start);
        let len = self.src.text().len();
        self.scanner.read_prose_to(len);
        self.scanned = len;
        self.scanned_break = false;
        self.defer_rule = DeferRule::NONE;
        events.text(chunk, Span::new(start, self.total));
        self.compact();
    }

    /// Keeps `chunk` back for later, without running the pipeline, when it cannot decide
    /// anything (see [`DeferRule`]); returns whether it did. Kept small so that it inlines
    /// into `push_text`, which is called once per token.
    #[inline(always)]
    fn defer_chunk(&mut self, chunk: &str) -> bool {
        match chunk.as_bytes() {
            // One ASCII character, the common chunk of a byte-by-byte stream: its only
            // possible trigger is itself (`<`), and it ends the chunk. Pushed without a
            // `memcpy` call.
            &[byte] => {
                let keep = self.can_defer(&[byte], || (byte == b'<').then_some(true));
                if keep {
                    self.deferred.push(char::from(byte));
                }
                keep
            }
            bytes => {
                let keep =
                    self.can_defer(bytes, || first_trigger(bytes).map(|at| ends_with_char_at(chunk, at)));
                if keep {
                    self.deferred.push_str(chunk);
                }
                keep
            }
        }
    }

    /// Whether `bytes` may be kept back under the current [`DeferRule`]. `trigger` says
    /// whether they hold a `<` or `末` and, if so, whether the first one begins their last
    /// character.
    #[inline(always)]
    fn can_defer(&mut self, bytes: &[u8], trigger: impl FnOnce() -> Option<bool>) -> bool {
        let deferred = self.deferred.len() + bytes.len();
        if deferred > self.defer_rule.budget {
            return false;
        }
        match &mut self.defer_rule.hold {
            Hold::UntilTrigger => match trigger() {
                None => true,
                // Inside a block, a `<` or `末` that ends the text decides nothing
                // before the next character arrives: the next push runs.
                Some(true) if self.defer_rule.budget == usize::MAX => {
                    self.defer_rule.budget = deferred;
                    true
                }
                Some(_) => false,
            },
            Hold::Marker(candidate) => candidate.take(bytes),
        }
    }

    /// Runs the pipeline over the kept-back text and `chunk`.
    #[inline(never)]
    fn run_with_deferred(&mut self, chunk: &str, events: &mut dyn EventSink) {
        if self.finished || chunk.is_empty() {
            return;
        }
        if chunk == "<" && self.deferred.is_empty() && self.all_decided() {
            // A lone `<` after decided prose decides nothing (it may begin a marker or a
            // tag): it waits for the next chunk.
            self.deferred.push('<');
            self.defer_rule = DeferRule { budget: 1, hold: Hold::UntilTrigger };
            return;
        }
        if self.deferred.is_empty() {
            self.run_pipeline(chunk, events);
        } else {
            let mut text = std::mem::take(&mut self.deferred);
            text.push_str(chunk);
            self.run_pipeline(&text, events);
            text.clear();
            self.deferred = text;
        }
    }

    /// Runs the pipeline over `chunk`: reasoning filter, fences, scanner.
    fn run_pipeline(&mut self, chunk: &str, events: &mut dyn EventSink) {
        self.defer_rule = DeferRule::NONE;
        let start = self.total;
        self.total += chunk.len();
        // Reasoning: text without `<` while nothing is held back is visible as it is.
        let lt = has(chunk.as_bytes(), b'<');
        let mut direct = true;
        if self.options.keep_reasoning {
            self.src.push_visible(chunk, start);
        } else if !lt && self.filter.passes_plain_text(start) {
            self.filter.pass_plain_text(self.total);
            self.raw.clear();
            self.raw_base = self.total;
            self.src.push_visible(chunk, start);
        } else {
            self.raw.push_str(chunk);
            self.filter(false);
            direct = false;
        }
        let len = self.src.text().len();
        if len == self.scanned && self.src.ends_with_break() == self.scanned_break {
            // Reasoning kept all of it back: the scanner stands where it stood.
            self.defer_rule = self.next_defer_rule(len);
            return;
        }
        // Whether the new cleaned text (this chunk, unless reasoning held text back
        // before) holds a `<`.
        let lt = if direct && self.scanned + chunk.len() == len {
            lt
        } else {
            has(self.src.text().as_bytes().get(self.scanned..).unwrap_or_default(), b'<')
        };
        if !lt && self.scanner.prose_read_to(self.scanned) {
            // The common case in prose: text that cannot begin a block is reported as it
            // is, without the searches.
            if let Some(fences) = &mut self.fences {
                fences.feed(self.src.text().as_bytes());
            }
            self.scanner.take_prose(&self.src, len, &mut Events { events });
        } else {
            self.scan(false, events);
        }
        self.scanned = len;
        self.scanned_break = self.src.ends_with_break();
        self.defer_rule = self.next_defer_rule(len);
        self.compact();
    }

    /// What may be kept back after the scanner has read the cleaned text (`len`
    /// bytes).
    fn next_defer_rule(&self, len: usize) -> DeferRule {
        match self.held_marker() {
            Some(candidate) => DeferRule { budget: usize::MAX, hold: Hold::Marker(candidate) },
            None => DeferRule { budget: self.scanner.defer_budget(len), hold: Hold::UntilTrigger },
        }
    }

    /// The exact marker candidate the scanner holds back, continued by the input the
    /// reasoning filter holds back (which, while the candidate lives, is no tag and
    /// will pass as it is).
    fn held_marker(&self) -> Option<Candidate> {
        if !self.options.keep_reasoning && self.filter.in_reasoning() {
            return None;
        }
        let mut candidate = self.scanner.held_marker(&self.src)?;
        candidate.take(self.held_by_filter().as_bytes()).then_some(candidate)
    }

    /// The input passed on that the reasoning filter has not classified yet.
    fn held_by_filter(&self) -> &str {
        if self.options.keep_reasoning {
            return "";
        }
        let from = self.filter.decided().saturating_sub(self.raw_base);
        self.raw.get(from..).unwrap_or_default()
    }

    /// Whether everything passed on is decided: the filter holds nothing back and the
    /// scanner has reported all prose it was given.
    fn all_decided(&self) -> bool {
        self.held_by_filter().is_empty()
            && self.src.text().len() == self.scanned
            && self.scanner.prose_read_to(self.scanned)
    }
}

/// How much pushed text may be kept back without running the pipeline, because it
/// cannot decide anything.
#[derive(Debug, Clone, Copy)]
struct DeferRule {
    /// At most this many bytes in all. `usize::MAX` while the scanner is inside a block
    /// with nothing pending (no marker or closer candidate held): then a `<` or `末`
    /// that ends a chunk is kept back too, and decides with the next chunk.
    budget: usize,
    hold: Hold,
}

/// Which text may be kept back, within the budget.
#[derive(Debug, Clone, Copy)]
enum Hold {
    /// Text without `<` and `末`: inside a block, only a value closer (which holds
    /// `末`) or a marker (which begins with `<`) decides anything.
    UntilTrigger,
    /// Bytes that continue the exact marker the scanner holds back without completing
    /// it.
    Marker(Candidate),
}

impl DeferRule {
    const NONE: DeferRule = DeferRule { budget: 0, hold: Hold::UntilTrigger };
}

/// Where `bytes` first holds `<` or the first byte of `末`.
#[inline]
fn first_trigger(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 16 {
        bytes.iter().position(|&b| b == b'<' || b == CLOSER_LEAD)
    } else {
        memchr::memchr2(b'<', CLOSER_LEAD, bytes)
    }
}

/// Whether the trigger byte at `at` (`<`, or the lead byte of a three-byte character)
/// begins the last character of `chunk`.
#[inline]
fn ends_with_char_at(chunk: &str, at: usize) -> bool {
    let width = if chunk.as_bytes().get(at) == Some(&b'<') { 1 } else { 3 };
    at + width == chunk.len()
}

/// Whether `bytes` holds `byte`.
fn has(bytes: &[u8], byte: u8) -> bool {
    if bytes.len() < 16 { bytes.contains(&byte) } else { memchr::memchr(byte, bytes).is_some() }
}

/// Turns what the scanner decides into events.
struct Events<'e> {
    events: &'e mut dyn EventSink,
}

impl Sink<'static> for Events<'_> {
    fn text(&mut self, src: &VisibleText<'_>, start: usize, end: usize) {
        // One event per stretch of visible text: hidden reasoning splits prose.
        let mut at = start;
        while at < end {
            let to = src.next_break_after(at).map_or(end, |b| b.min(end));
            if let Some(text) = src.text().get(at..to) {
                let span = Span::new(src.original_start(at), src.original_end(to));
                self.events.text(text, span);
            }
            at = to;
        }
    }

    fn started(&mut self, offset: usize) {
        self.events.event(StreamEvent::RequestStarted { offset });
    }

    fn wants_fields(&self) -> bool {
        true
    }

    fn field(&mut self, key: &str, value: &str, closed: bool, span: Span) {
        self.events.field(key, value, closed, span);
    }

    fn request(&mut self, request: RequestView<'static>) {
        self.events.event(StreamEvent::RequestCompleted(request.into_owned()));
    }

    fn discarded(&mut self, span: Span) {
        self.events.event(StreamEvent::BlockDiscarded { span });
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.events.event(StreamEvent::Diagnostic(diagnostic));
    }
}
