//! The streaming VCP parser.

use super::VcpOptions;
use super::fence::Fences;
use super::markers::floor_boundary;
use super::parser::{Scanner, Sink, unclosed_reasoning};
use super::reasoning::ReasoningFilter;
use super::source::Source;
use crate::stream::{IncrementalParser, StreamEvent};
use crate::{Diagnostic, ParsedToolRequest, Span};

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
/// Whatever the chunking, the requests and diagnostics it reports equal those of the
/// one-shot [`VcpProtocol::parse`](super::VcpProtocol::parse) of the whole text
/// ([`StreamCollector`](crate::stream::StreamCollector) assembles them). It reads every
/// byte once, keeping its place inside values, and holds only undecided text and the
/// open request block: memory is bounded by the largest request, not by the reply.
///
/// ```
/// use tool_calling::VcpProtocol;
/// use tool_calling::stream::{IncrementalParser, StreamEvent};
///
/// let mut parser = VcpProtocol::default().stream_parser();
/// let mut events = Vec::new();
/// parser.push("Checking.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_", &mut events);
/// // The prose is out; the block has started; the END marker is not decided yet.
/// assert!(matches!(&events[0], StreamEvent::Text { text, .. } if text == "Checking.\n"));
/// assert!(matches!(events[1], StreamEvent::RequestStarted { offset: 10 }));
/// assert!(!events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(_))));
///
/// events.clear();
/// parser.push("REQUEST]>>>", &mut events);
/// assert!(matches!(&events[0], StreamEvent::RequestCompleted(r) if r.tool_name == "clock"));
/// parser.finish(&mut events);
/// ```
#[derive(Debug)]
pub struct VcpStreamParser {
    options: VcpOptions,
    scanner: Scanner,
    /// The cleaned text still needed (reasoning cut out), with its map to input offsets.
    src: Source<'static>,
    fences: Option<Fences>,
    filter: ReasoningFilter,
    /// Input text the reasoning filter has not classified yet, from input offset `raw_base`.
    raw: String,
    raw_base: usize,
    /// Bytes passed on to the pipeline so far.
    total: usize,
    /// Text pushed but kept back (see `Defer`); it follows `total`.
    deferred: String,
    defer: Defer,
    /// The cleaned text the scanner has seen (its length then).
    scanned: usize,
    /// Do not run the scanner before the cleaned text is this long (see
    /// `Scanner::wake_at`).
    wake: usize,
    finished: bool,
}

impl VcpStreamParser {
    /// A streaming parser with `options`.
    pub fn new(options: VcpOptions) -> Self {
        VcpStreamParser {
            options,
            scanner: Scanner::new(&options),
            src: Source::growing(),
            fences: options.skip_fenced.then(Fences::default),
            filter: ReasoningFilter::default(),
            raw: String::new(),
            raw_base: 0,
            total: 0,
            deferred: String::new(),
            defer: Defer::NONE,
            scanned: 0,
            wake: 0,
            finished: false,
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

    /// Feeds the next chunk and returns the events it decides. Same as
    /// [`IncrementalParser::push`], with a new vector.
    pub fn push_str(&mut self, chunk: &str) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        self.push(chunk, &mut events);
        events
    }

    /// Ends the text and returns the remaining events. Same as
    /// [`IncrementalParser::finish`], with a new vector.
    pub fn end(&mut self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        self.finish(&mut events);
        events
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

    fn scan(&mut self, last: bool, events: &mut Vec<StreamEvent>) {
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
            self.wake = self.wake.saturating_sub(cut);
        }
    }
}

impl IncrementalParser for VcpStreamParser {
    fn push(&mut self, chunk: &str, events: &mut Vec<StreamEvent>) {
        if !self.keep_back(chunk) {
            self.push_now(chunk, events);
        }
    }

    fn finish(&mut self, events: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        if !self.deferred.is_empty() {
            let text = std::mem::take(&mut self.deferred);
            self.feed(&text, events);
        }
        self.finished = true;
        if !self.options.keep_reasoning {
            self.filter(true);
            if let Some((start, end)) = self.filter.unclosed() {
                events.push(StreamEvent::Diagnostic(unclosed_reasoning(start, end)));
            }
        }
        self.scan(true, events);
        self.src = Source::growing();
        self.raw = String::new();
    }
}

impl VcpStreamParser {
    /// While the scanner waits inside a block (or for a byte count), text that holds
    /// none of the bytes it waits for cannot decide anything: keeps it for later. Kept
    /// small so that it inlines into `push`, which is called once per token.
    #[inline]
    fn keep_back(&mut self, chunk: &str) -> bool {
        if self.finished || chunk.is_empty() {
            return true;
        }
        let deferred = self.deferred.len() + chunk.len();
        if deferred <= self.defer.budget && (!self.defer.until_trigger || !has_trigger(chunk.as_bytes())) {
            append(&mut self.deferred, chunk);
            return true;
        }
        false
    }

    /// Runs the pipeline over the kept-back text and `chunk`.
    #[inline(never)]
    fn push_now(&mut self, chunk: &str, events: &mut Vec<StreamEvent>) {
        if self.deferred.is_empty() {
            self.feed(chunk, events);
        } else {
            let mut text = std::mem::take(&mut self.deferred);
            text.push_str(chunk);
            self.feed(&text, events);
            text.clear();
            self.deferred = text;
        }
    }

    /// Runs the pipeline over `chunk`: reasoning filter, fences, scanner.
    fn feed(&mut self, chunk: &str, events: &mut Vec<StreamEvent>) {
        self.defer = Defer::NONE;
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
        if len < self.wake {
            // A held-back exact marker: nothing decides it before its last byte.
            self.defer = Defer { budget: self.wake - len - 1, until_trigger: false };
            return;
        }
        if len == self.scanned {
            // Reasoning kept all of it back: the scanner stands where it stood.
            self.defer = Defer { budget: self.scanner.defer_budget(len), until_trigger: true };
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
            self.wake = self.scanner.wake_at(&self.src);
        }
        self.scanned = len;
        self.defer = Defer { budget: self.scanner.defer_budget(len), until_trigger: true };
        self.compact();
    }
}

/// How much pushed text may be kept back without running the pipeline, because it
/// cannot decide anything.
#[derive(Debug, Clone, Copy)]
struct Defer {
    /// At most this many bytes in all.
    budget: usize,
    /// Only while they hold no `<` and no `末`.
    until_trigger: bool,
}

impl Defer {
    const NONE: Defer = Defer { budget: 0, until_trigger: true };
}

/// Whether `bytes` holds `<` or the first byte of `末`.
fn has_trigger(bytes: &[u8]) -> bool {
    if bytes.len() < 16 {
        bytes.iter().any(|&b| b == b'<' || b == CLOSER_LEAD)
    } else {
        memchr::memchr2(b'<', CLOSER_LEAD, bytes).is_some()
    }
}

/// `buffer.push_str(chunk)`, without a `memcpy` call for the one-character chunks of a
/// byte-by-byte stream.
fn append(buffer: &mut String, chunk: &str) {
    let mut chars = chunk.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => buffer.push(c),
        _ => buffer.push_str(chunk),
    }
}

/// Whether `bytes` holds `byte`.
fn has(bytes: &[u8], byte: u8) -> bool {
    if bytes.len() < 16 { bytes.contains(&byte) } else { memchr::memchr(byte, bytes).is_some() }
}

/// Turns what the scanner decides into events.
struct Events<'e> {
    events: &'e mut Vec<StreamEvent>,
}

impl Sink for Events<'_> {
    fn text(&mut self, src: &Source<'_>, start: usize, end: usize) {
        // One event per stretch of visible text: hidden reasoning splits prose.
        let mut at = start;
        while at < end {
            let to = src.next_break_after(at).map_or(end, |b| b.min(end));
            if let Some(text) = src.text().get(at..to) {
                let span = Span::new(src.original_start(at), src.original_end(to));
                self.events.push(StreamEvent::Text { text: text.to_string(), span });
            }
            at = to;
        }
    }

    fn started(&mut self, offset: usize) {
        self.events.push(StreamEvent::RequestStarted { offset });
    }

    fn wants_fields(&self) -> bool {
        true
    }

    fn field(&mut self, key: &str, value: &str, closed: bool, span: Span) {
        self.events.push(StreamEvent::FieldCompleted {
            key: key.to_string(),
            value: value.to_string(),
            closed,
            span,
        });
    }

    fn request(&mut self, request: ParsedToolRequest) {
        self.events.push(StreamEvent::RequestCompleted(request));
    }

    fn discarded(&mut self, span: Span) {
        self.events.push(StreamEvent::BlockDiscarded { span });
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.events.push(StreamEvent::Diagnostic(diagnostic));
    }
}
