//! The reading machine every text format shares, one-shot and streamed.
//!
//! A reply is prose with call markup in it. A format says where markup begins
//! ([`Format::find`]), what sits inside a section that groups calls
//! ([`Format::in_section`]), where a call region ends ([`Format::scan`], resumable), and
//! what calls a region holds ([`Format::read`]). The [`Core`] walks the text with those
//! answers, hides `<think>` blocks (they are prose, and a call drafted inside one is not
//! a call), and tells a [`Sink`] what it decided. The one-shot parse runs the core once
//! over the whole reply; the streaming parser runs it over a buffer as text arrives,
//! keeping only what is undecided. Both make the same decisions, so they give the same
//! requests whatever the chunking, and each byte is scanned a bounded number of times.

use std::ops::Range;

use indexmap::IndexMap;
use memchr::memmem;

use crate::request::Args;

/// What a format sees in prose, from a given position on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// A call region begins here.
    Call(usize),
    /// A section of calls opens here; its opening markup is `len` bytes long; `kind`
    /// is handed to the section's regions (in [`ScanState::kind`]).
    Section { at: usize, len: usize, kind: u8 },
    /// Undecided from here: more text may begin markup here.
    Hold(usize),
    /// No markup in the text.
    Nothing,
}

/// What a format sees inside a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InSection {
    /// A call region begins here (what came before it is markup).
    Call(usize),
    /// The section ends with markup at `at`, `len` bytes long.
    End { at: usize, len: usize },
    /// The section ends before `at`; prose resumes there.
    Leave(usize),
    /// Undecided from here.
    Hold(usize),
}

/// What a format says of a call region so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The region ends at this offset (relative to its start).
    Closed(usize),
    /// Its end has not arrived.
    Open,
    /// It is not markup after all: its first `n` bytes are prose, and reading goes on
    /// after them.
    NotACall(usize),
}

/// A format's progress through one call region, kept between pushes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScanState {
    /// How far the region has been scanned (relative to its start).
    pub pos: usize,
    /// Bracket depth, for formats that balance brackets.
    pub depth: u32,
    /// The quote of the string being scanned (0: none).
    pub quote: u8,
    /// The previous byte in a string was a backslash.
    pub escape: bool,
    /// A format's own stage within the region.
    pub stage: u8,
    /// The `kind` of the section the region is in (0: none).
    pub kind: u8,
    /// A format's own offset (relative to the region start).
    pub mark: usize,
}

/// A call read out of a region.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RawCall {
    /// Its bytes, relative to the region start.
    pub span: Range<usize>,
    /// The function name ("" when none could be read).
    pub name: String,
    /// The call's own id, for formats that write one.
    pub id: Option<String>,
    /// The arguments.
    pub args: Args,
    /// For formats that write arguments as text: each one's text, as written.
    pub text_args: IndexMap<String, String>,
    /// Why the call must not run; empty when it may.
    pub problems: Vec<String>,
}

impl RawCall {
    /// A call at `span` with problem `problem`.
    pub(crate) fn broken(span: Range<usize>, name: impl Into<String>, problem: impl Into<String>) -> Self {
        RawCall { span, name: name.into(), problems: vec![problem.into()], ..RawCall::default() }
    }
}

/// Token searches that remember what they found, so that a token absent from the rest
/// of the text is not searched for again over the same bytes at every call (which would
/// make a reply of many calls cost quadratic time). Queries must not go backwards.
#[derive(Debug, Clone, Default)]
pub(crate) struct Searches {
    /// Per token: no occurrence starts in `[.., none_before)` (from where it was last
    /// searched), and the next one found starts at `at`.
    entries: Vec<(&'static str, usize, Option<usize>)>,
}

impl Searches {
    /// Moves kept offsets `by` bytes back.
    pub(crate) fn shift(&mut self, by: usize) {
        for (_, none_before, at) in &mut self.entries {
            *none_before = none_before.saturating_sub(by);
            *at = at.and_then(|at| at.checked_sub(by));
        }
    }

    /// The next `token` at or after `from`.
    fn next(&mut self, text: &str, from: usize, token: &'static str) -> Option<usize> {
        self.next_in(text, 0, from, token)
    }

    /// The next `token` at or after `from`, in text of which `hay` is the part from
    /// `offset` on (offsets are the text's).
    fn next_in(&mut self, hay: &str, offset: usize, from: usize, token: &'static str) -> Option<usize> {
        let index = match self.entries.iter().position(|(t, _, _)| std::ptr::eq(*t, token) || *t == token) {
            Some(index) => index,
            None => {
                self.entries.push((token, 0, None));
                self.entries.len() - 1
            }
        };
        let (_, none_before, at) = self.entries.get_mut(index)?;
        if let Some(found) = at.filter(|&found| found >= from) {
            return Some(found);
        }
        let start = from.max(*none_before).max(offset);
        let found =
            hay.as_bytes().get(start - offset..).and_then(|bytes| find_in(bytes, token)).map(|i| start + i);
        *at = found;
        if found.is_none() {
            *none_before = (offset + hay.len()).saturating_sub(token.len().saturating_sub(1)).max(start);
        }
        found
    }

    /// As [`find_token`], remembering.
    pub(crate) fn token(&mut self, text: &str, from: usize, token: &'static str) -> Found {
        match self.next(text, from, token) {
            Some(at) => Found::Call(at),
            None => match partial_suffix(text, from, &[token]) {
                Some(at) => Found::Hold(at),
                None => Found::Nothing,
            },
        }
    }

    /// The earliest of several tokens, with the index of the one found; remembering.
    pub(crate) fn tokens(&mut self, text: &str, from: usize, tokens: &[&'static str]) -> (Found, usize) {
        let mut best: Option<(usize, usize)> = None;
        for (i, token) in tokens.iter().enumerate() {
            if let Some(at) = self.next(text, from, token)
                && best.is_none_or(|(b, _)| at < b)
            {
                best = Some((at, i));
            }
        }
        let hold = partial_suffix(text, from, tokens);
        match (best, hold) {
            (Some((at, i)), Some(h)) if h < at => (Found::Hold(h), i),
            (Some((at, i)), _) => (Found::Call(at), i),
            (None, Some(h)) => (Found::Hold(h), 0),
            (None, None) => (Found::Nothing, 0),
        }
    }
}

/// Token searches inside a call region that starts at `start` in the text.
#[derive(Debug)]
pub(crate) struct RegionSearch<'a> {
    search: &'a mut Searches,
    start: usize,
}

impl RegionSearch<'_> {
    /// The earliest of `tokens` in `region` at or after `from` (region offsets), with
    /// its index.
    pub(crate) fn earliest(
        &mut self,
        region: &str,
        from: usize,
        tokens: &[&'static str],
    ) -> Option<(usize, usize)> {
        let start = self.start;
        tokens
            .iter()
            .enumerate()
            .filter_map(|(i, token)| {
                self.search.next_in(region, start, start + from, token).map(|at| (at - start, i))
            })
            .min()
    }
}

/// One text format: where its markup is, and what it means.
pub(crate) trait Format: Send + Sync {
    /// The first markup in `text[from..]`. `reply_start`: the reply before `from` is
    /// only whitespace. Token searches go through `search`.
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found;

    /// Inside a section of kind `kind`: what comes at or after `from`.
    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        let _ = (text, kind, search);
        InSection::Leave(from)
    }

    /// Scans the call region `region` (which starts with the region's markup) on from
    /// `state.pos`. `at_end`: no more text will come. `search` finds tokens in the region
    /// (remembering across regions).
    fn scan(&self, region: &str, state: &mut ScanState, at_end: bool, search: &mut RegionSearch<'_>) -> Scan;

    /// The calls of a region that ended (`closed`), or was cut off by the end of the
    /// reply. A region that holds no call is prose.
    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>);
}

/// What the core decides, in order.
pub(crate) trait Sink {
    /// Prose: `text` is the reply's `range`.
    fn prose(&mut self, text: &str, range: Range<usize>);
    /// A call region begins at `at`.
    fn region_started(&mut self, at: usize);
    /// A region ended with these calls (offsets relative to `range.start`), which the
    /// sink takes (drains); `closed` is false when the reply ended inside it. No calls:
    /// the region was prose.
    fn region(&mut self, text: &str, range: Range<usize>, calls: &mut Vec<RawCall>, closed: bool);
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Where the core is.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Prose,
    /// Inside `<think>` (its opening tag is behind).
    Reasoning,
    /// Inside a section of kind `kind`.
    Section {
        kind: u8,
    },
    /// Inside a call region.
    Call {
        start: usize,
        state: ScanState,
        in_section: Option<u8>,
    },
}

/// The reading machine. Offsets it is given and keeps are into the text it is run on;
/// [`Core::shift`] moves them when the caller drops a decided prefix.
#[derive(Debug, Clone)]
pub(crate) struct Core {
    mode: Mode,
    /// Only whitespace has been decided so far.
    reply_start: bool,
    skip_reasoning: bool,
    /// No `<think>` starts before this offset (searched already)…
    think_none_before: usize,
    /// …and the next one found starts here.
    think_at: Option<usize>,
    /// The calls of the region being read (kept to reuse its allocation).
    calls: Vec<RawCall>,
    search: Searches,
}

impl Core {
    pub(crate) fn new(skip_reasoning: bool) -> Self {
        Core {
            mode: Mode::Prose,
            reply_start: true,
            skip_reasoning,
            think_none_before: 0,
            think_at: None,
            calls: Vec::new(),
            search: Searches::default(),
        }
    }

    /// Moves kept offsets `by` bytes back (the caller dropped that much decided text).
    pub(crate) fn shift(&mut self, by: usize) {
        self.search.shift(by);
        self.think_none_before = self.think_none_before.saturating_sub(by);
        self.think_at = self.think_at.and_then(|at| at.checked_sub(by));
        match &mut self.mode {
            Mode::Call { start, .. } => *start = start.saturating_sub(by),
            Mode::Prose | Mode::Reasoning | Mode::Section { .. } => {}
        }
    }

    /// Reads `text` from `pos` on; returns where the undecided text begins (everything
    /// before it was told to `sink`). `base` is the offset of `text` in the reply.
    pub(crate) fn run(
        &mut self,
        format: &dyn Format,
        text: &str,
        base: usize,
        mut pos: usize,
        at_end: bool,
        sink: &mut dyn Sink,
    ) -> usize {
        loop {
            match self.mode {
                Mode::Prose => {
                    let found = format.find(text, pos, self.reply_start, &mut self.search);
                    let think = if self.skip_reasoning { self.find_think(text, pos) } else { Found::Nothing };
                    let earliest = earliest(found, think);
                    match earliest {
                        (Found::Nothing, _) => {
                            self.prose(text, base, pos, text.len(), sink);
                            return text.len();
                        }
                        (Found::Hold(at), _) => {
                            self.prose(text, base, pos, at, sink);
                            if at_end {
                                self.prose(text, base, at, text.len(), sink);
                                return text.len();
                            }
                            return at;
                        }
                        (Found::Call(at), true) => {
                            // `<think>` opens first: it is prose, and so is what it holds.
                            let inside = at + THINK_OPEN.len();
                            self.prose(text, base, pos, inside, sink);
                            self.mode = Mode::Reasoning;
                            pos = inside;
                        }
                        (Found::Call(at), false) => {
                            self.prose(text, base, pos, at, sink);
                            self.reply_start = false;
                            sink.region_started(base + at);
                            self.mode =
                                Mode::Call { start: at, state: ScanState::default(), in_section: None };
                            pos = at;
                        }
                        (Found::Section { at, len, kind }, _) => {
                            self.prose(text, base, pos, at, sink);
                            self.reply_start = false;
                            self.mode = Mode::Section { kind };
                            pos = at + len;
                        }
                    }
                }
                Mode::Reasoning => match find_token(text, pos, THINK_CLOSE) {
                    Found::Call(at) => {
                        let end = at + THINK_CLOSE.len();
                        self.prose(text, base, pos, end, sink);
                        self.mode = Mode::Prose;
                        pos = end;
                    }
                    Found::Hold(at) if !at_end => {
                        self.prose(text, base, pos, at, sink);
                        return at;
                    }
                    _ => {
                        self.prose(text, base, pos, text.len(), sink);
                        if at_end {
                            self.mode = Mode::Prose;
                        }
                        return text.len();
                    }
                },
                Mode::Section { kind } => match format.in_section(text, pos, kind, &mut self.search) {
                    InSection::Call(at) => {
                        sink.region_started(base + at);
                        let state = ScanState { kind, ..ScanState::default() };
                        self.mode = Mode::Call { start: at, state, in_section: Some(kind) };
                        pos = at;
                    }
                    InSection::End { at, len } => {
                        self.mode = Mode::Prose;
                        pos = at + len;
                    }
                    InSection::Leave(at) => {
                        self.mode = Mode::Prose;
                        pos = at;
                    }
                    InSection::Hold(at) => {
                        if at_end {
                            // An unclosed section: what is left is its markup.
                            self.mode = Mode::Prose;
                            return text.len();
                        }
                        return at;
                    }
                },
                Mode::Call { start, mut state, in_section } => {
                    let region = text.get(start..).unwrap_or_default();
                    let mut search = RegionSearch { search: &mut self.search, start };
                    let scan = format.scan(region, &mut state, at_end, &mut search);
                    let after = match in_section {
                        Some(kind) => Mode::Section { kind },
                        None => Mode::Prose,
                    };
                    match scan {
                        Scan::Closed(end) => {
                            let end = end.min(region.len());
                            self.region(format, text, base, start, end, &state, true, sink);
                            self.mode = after;
                            pos = start + end;
                        }
                        Scan::NotACall(n) => {
                            let n = n.clamp(1, region.len().max(1)).min(region.len());
                            let n = ceil_boundary(region, n);
                            self.calls.clear();
                            sink.region(
                                region.get(..n).unwrap_or_default(),
                                base + start..base + start + n,
                                &mut self.calls,
                                true,
                            );
                            self.reply_start = false;
                            self.mode = Mode::Prose;
                            pos = start + n;
                        }
                        Scan::Open if at_end => {
                            self.region(format, text, base, start, region.len(), &state, false, sink);
                            self.mode = Mode::Prose;
                            return text.len();
                        }
                        Scan::Open => {
                            self.mode = Mode::Call { start, state, in_section };
                            return start;
                        }
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn region(
        &mut self,
        format: &dyn Format,
        text: &str,
        base: usize,
        start: usize,
        end: usize,
        state: &ScanState,
        closed: bool,
        sink: &mut dyn Sink,
    ) {
        let region = text.get(start..start + end).unwrap_or_default();
        let mut calls = std::mem::take(&mut self.calls);
        calls.clear();
        format.read(region, state, closed, &mut calls);
        for call in &mut calls {
            call.span.end = call.span.end.min(region.len());
            call.span.start = call.span.start.min(call.span.end);
        }
        sink.region(region, base + start..base + start + end, &mut calls, closed);
        calls.clear();
        self.calls = calls;
    }

    /// The next `<think>` at or after `pos`, searching each part of the text once (a
    /// reply with no reasoning is not searched again for every call in it).
    fn find_think(&mut self, text: &str, pos: usize) -> Found {
        if let Some(at) = self.think_at.filter(|&at| at >= pos) {
            return Found::Call(at);
        }
        let from = pos.max(self.think_none_before);
        match find_token(text, from, THINK_OPEN) {
            Found::Call(at) => {
                self.think_at = Some(at);
                Found::Call(at)
            }
            other => {
                self.think_at = None;
                self.think_none_before = text.len().saturating_sub(THINK_OPEN.len() - 1).max(from);
                other
            }
        }
    }

    fn prose(&mut self, text: &str, base: usize, from: usize, to: usize, sink: &mut dyn Sink) {
        if from >= to {
            return;
        }
        let piece = text.get(from..to).unwrap_or_default();
        if self.reply_start && !is_blank(Some(piece)) {
            self.reply_start = false;
        }
        sink.prose(piece, base + from..base + to);
    }
}

/// The earlier of a format's finding and a `<think>` finding; `true` when `<think>`
/// comes first (and decides).
fn earliest(found: Found, think: Found) -> (Found, bool) {
    let at = |f: Found| match f {
        Found::Call(at) | Found::Hold(at) | Found::Section { at, .. } => Some(at),
        Found::Nothing => None,
    };
    match (at(found), at(think)) {
        (_, None) => (found, false),
        (None, Some(_)) => match think {
            Found::Hold(at) => (Found::Hold(at), false),
            other => (other, true),
        },
        (Some(f), Some(t)) if t < f => match think {
            Found::Hold(at) => (Found::Hold(at), false),
            other => (other, true),
        },
        _ => (found, false),
    }
}

/// Whether `text` is only whitespace (or absent).
fn is_blank(text: Option<&str>) -> bool {
    text.is_none_or(|t| t.bytes().all(|b| b.is_ascii_whitespace()))
}

/// The first `token` in `hay`, with a searcher built once per token and thread (building
/// one costs more than searching the short stretches between calls).
pub(crate) fn find_in(hay: &[u8], token: &'static str) -> Option<usize> {
    thread_local! {
        static FINDERS: std::cell::RefCell<Vec<(&'static str, memmem::Finder<'static>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    FINDERS.with(|finders| {
        let Ok(mut finders) = finders.try_borrow_mut() else {
            return memmem::find(hay, token.as_bytes());
        };
        let known = finders.iter().position(|(t, _)| std::ptr::eq(*t, token) || *t == token);
        let index = known.unwrap_or_else(|| {
            finders.push((token, memmem::Finder::new(token.as_bytes())));
            finders.len() - 1
        });
        finders.get(index).and_then(|(_, finder)| finder.find(hay))
    })
}

/// The first `token` in `text[from..]` (`Call` at its start), or the start of a
/// trailing piece that may begin it (`Hold`).
pub(crate) fn find_token(text: &str, from: usize, token: &'static str) -> Found {
    let hay = text.as_bytes().get(from..).unwrap_or_default();
    match find_in(hay, token) {
        Some(at) => Found::Call(from + at),
        None => match partial_suffix(text, from, &[token]) {
            Some(at) => Found::Hold(at),
            None => Found::Nothing,
        },
    }
}

/// The start of the longest tail of `text[from..]` that is a proper prefix of one of
/// `tokens`, if any.
pub(crate) fn partial_suffix(text: &str, from: usize, tokens: &[&str]) -> Option<usize> {
    let longest = tokens.iter().map(|t| t.len()).max().unwrap_or(0);
    let len = text.len();
    let first = len.saturating_sub(longest.saturating_sub(1)).max(from);
    (first..len).find(|&i| {
        text.is_char_boundary(i)
            && text
                .get(i..)
                .is_some_and(|tail| tokens.iter().any(|t| t.len() > tail.len() && t.starts_with(tail)))
    })
}

/// `at`, moved forward to a char boundary of `text`.
pub(crate) fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at.min(text.len())
}

/// A region that ends with `token`: searches for it in `region` on from `state.pos`
/// (minus a token's length, so a token split across pushes is found) and not before
/// `from`, and remembers how far it looked. Closed just after the token, or still open.
pub(crate) fn scan_for(region: &str, state: &mut ScanState, from: usize, token: &'static str) -> Scan {
    let start = state.pos.saturating_sub(token.len()).max(from);
    match region.as_bytes().get(start..).and_then(|hay| find_in(hay, token)) {
        Some(at) => Scan::Closed(start + at + token.len()),
        None => {
            state.pos = region.len().max(from);
            Scan::Open
        }
    }
}
