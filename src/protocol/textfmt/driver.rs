//! The reading machine every text format shares, one-shot and streamed.
//!
//! A reply is prose with call markup in it. A format's [`Reading`] says where markup
//! begins ([`Reading::find`]), what sits inside a section that groups calls
//! ([`Reading::in_section`]), where a call region ends ([`Reading::scan`], resumable), and
//! what calls a region holds ([`Reading::read`]). The [`Core`] walks the text with those
//! answers and tells a [`Sink`] what it decided. The [`Reader`] puts the reasoning rule
//! (`protocol::reasoning`) in front of it: reasoning is cut out, and the core reads each
//! stretch of visible text between two pieces of reasoning as a whole (markup never spans
//! hidden text). The one-shot parse runs the reader once over the whole reply; the
//! streaming parser runs it over a buffer as text arrives, keeping only what is
//! undecided. Both make the same decisions, so they give the same requests whatever the
//! chunking, and each byte is scanned a bounded number of times.

use std::fmt::Display;
use std::ops::{ControlFlow, Range};

use indexmap::IndexMap;
use memchr::memmem;

use super::TextFormatOptions;
use super::format::Format;
use super::readers::json::{Balanced, Quotes, scan_balanced};
use crate::protocol::Diagnostic;
use crate::protocol::reasoning::{Change, Markup, VisibleStretches, unclosed_diagnostic};
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
    /// Adds an argument written as text: `text` as written, `value` as it reads.
    pub(crate) fn text_arg(&mut self, key: String, text: &str, value: serde_json::Value) {
        self.args.insert(key.clone(), value);
        self.text_args.insert(key, text.to_string());
    }

    /// A call at `span` with problem `problem`.
    pub(crate) fn broken(span: Range<usize>, name: impl Into<String>, problem: impl Into<String>) -> Self {
        RawCall { span, name: name.into(), problems: vec![problem.into()], ..RawCall::default() }
    }

    /// The call at `span` that reading a call object gave: its name and arguments, or
    /// the name it had and the problem, followed by `hint` (how the format writes a call).
    pub(crate) fn read(
        span: Range<usize>,
        read: Result<(String, Args), (String, String)>,
        hint: impl Display,
    ) -> Self {
        match read {
            Ok((name, args)) => RawCall { span, name, args, ..RawCall::default() },
            Err((name, problem)) => RawCall::broken(span, name, format!("{problem}: {hint}")),
        }
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

    /// A section that opens with `token` (of kind 1), else what the search for it says.
    pub(crate) fn section(&mut self, text: &str, from: usize, token: &'static str) -> Found {
        match self.token(text, from, token) {
            Found::Call(at) => Found::Section { at, len: token.len(), kind: 1 },
            other => other,
        }
    }

    /// Inside a section: the next call (at `call`) or the section's end (`end`),
    /// whichever comes first.
    pub(crate) fn call_or_end(
        &mut self,
        text: &str,
        from: usize,
        call: &'static str,
        end: &'static str,
    ) -> InSection {
        match self.tokens(text, from, &[call, end]) {
            (Found::Call(at), 0) => InSection::Call(at),
            (Found::Call(at), _) => InSection::End { at, len: end.len() },
            (Found::Hold(at), _) => InSection::Hold(at),
            _ => InSection::Hold(text.len()),
        }
    }

    /// The earliest of `marks`, each a token and what it stands for: `None`, the start of
    /// a call; `Some(kind)`, a section of that kind that the token opens.
    pub(crate) fn marked<const N: usize>(
        &mut self,
        text: &str,
        from: usize,
        marks: [(&'static str, Option<u8>); N],
    ) -> Found {
        match self.tokens(text, from, &marks.map(|(token, _)| token)) {
            (Found::Call(at), i) => match marks.get(i) {
                Some(&(token, Some(kind))) => Found::Section { at, len: token.len(), kind },
                _ => Found::Call(at),
            },
            (other, _) => other,
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
        // After a token found before the bytes a cut-off token could start in, a cut-off
        // token does not matter.
        let hold = match best {
            Some((at, _)) if at < cut_off_start(text.len(), tokens) => None,
            _ => partial_suffix(text, from, tokens),
        };
        match (best, hold) {
            (Some((at, i)), Some(h)) if h < at => (Found::Hold(h), i),
            (Some((at, i)), _) => (Found::Call(at), i),
            (None, Some(h)) => (Found::Hold(h), 0),
            (None, None) => (Found::Nothing, 0),
        }
    }
}

/// A call region being scanned ([`Reading::scan`]).
#[derive(Debug)]
pub(crate) struct Region<'r> {
    /// The region's text so far (it starts with the region's markup).
    pub text: &'r str,
    /// The format's progress through it, kept between pushes.
    pub state: &'r mut ScanState,
    /// No more text will come.
    pub at_end: bool,
    /// Token searches (remembering across regions), and where the region starts in the
    /// text they search.
    search: &'r mut Searches,
    start: usize,
}

/// The stage of a region that [`Region::until_first`] ended before its closing token.
pub(crate) const UNCLOSED: u8 = 1;

impl Region<'_> {
    /// The earliest of `tokens` in the region at or after `from` (region offsets), with
    /// its index.
    pub(crate) fn earliest(&mut self, from: usize, tokens: &[&'static str]) -> Option<(usize, usize)> {
        let (text, start) = (self.text, self.start);
        tokens
            .iter()
            .enumerate()
            .filter_map(|(i, token)| {
                self.search.next_in(text, start, start + from, token).map(|at| (at - start, i))
            })
            .min()
    }

    /// A region that ends with `close`, looked for after the opening markup
    /// (`open_len` bytes): see [`scan_for`].
    pub(crate) fn until(&mut self, open_len: usize, close: &'static str) -> Scan {
        scan_for(self.text, self.state, open_len, close)
    }

    /// A region that ends with `tokens[0]`, looked for after the opening markup
    /// (`open_len` bytes), or that one of the other `tokens` cuts off first: it ends
    /// before that one, with the stage [`UNCLOSED`].
    pub(crate) fn until_first(&mut self, open_len: usize, tokens: &[&'static str]) -> Scan {
        match self.earliest(open_len, tokens) {
            Some((at, 0)) => Scan::Closed(at + tokens.first().map_or(0, |t| t.len())),
            Some((at, _)) => {
                self.state.stage = UNCLOSED;
                Scan::Closed(at)
            }
            None => Scan::Open,
        }
    }

    /// A region that is one balanced bracket group from its first byte: closed after
    /// the group, or still open.
    pub(crate) fn balanced(&mut self, quotes: Quotes) -> Scan {
        match scan_balanced(self.text, 0, self.state, quotes, None) {
            Balanced::End(end) => Scan::Closed(end),
            _ => Scan::Open,
        }
    }
}

/// The tokens around the values of a call whose arguments are tagged values (DSML's
/// parameters, Hunyuan 3's `<arg_value>`), for [`Region::until_call_end`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ValueTags {
    /// What opens a value: the value begins after it, or, with `tag_ends_at_gt`, after
    /// the next `>` (the tag has attributes).
    pub open: &'static str,
    pub tag_ends_at_gt: bool,
    /// What closes a value.
    pub close: &'static str,
    /// What closes the call.
    pub call_end: &'static str,
    /// What opens the next call, and what ends the section: either cuts the call short.
    pub call: &'static str,
    pub end: &'static str,
}

/// Where [`Region::until_call_end`] stands ([`ScanState::stage`]): between values, inside
/// a value's opening tag, inside a value, or cut short (no closing token).
const BETWEEN_VALUES: u8 = 0;
const VALUE_TAG: u8 = 1;
const IN_VALUE: u8 = 2;
/// The stage of a region that [`Region::until_call_end`] cut short.
pub(crate) const CUT: u8 = 3;

impl Region<'_> {
    /// A call region of tagged values (the call's opening is `open_len` bytes): it ends
    /// after `call_end`, or is cut short (stage [`CUT`]) where the next call or the
    /// section's end begins. Inside a value only those two cut it; outside one,
    /// `call_end` ends it.
    pub(crate) fn until_call_end(&mut self, open_len: usize, t: &ValueTags) -> Scan {
        self.state.pos = self.state.pos.max(open_len);
        loop {
            let pos = self.state.pos;
            match self.state.stage {
                VALUE_TAG => {
                    let rest = self.text.as_bytes().get(pos..).unwrap_or_default();
                    let Some(gt) = rest.iter().position(|&b| b == b'>') else {
                        self.state.pos = self.text.len();
                        return Scan::Open;
                    };
                    self.state.stage = IN_VALUE;
                    self.state.pos = pos + gt + 1;
                }
                IN_VALUE => match self.earliest(pos, &[t.close, t.call, t.end]) {
                    Some((at, 0)) => {
                        self.state.stage = BETWEEN_VALUES;
                        self.state.pos = at + t.close.len();
                    }
                    Some((at, _)) => {
                        self.state.stage = CUT;
                        return Scan::Closed(at);
                    }
                    None => return Scan::Open,
                },
                _ => match self.earliest(pos, &[t.open, t.call_end, t.call, t.end]) {
                    Some((at, 0)) => {
                        self.state.stage = if t.tag_ends_at_gt { VALUE_TAG } else { IN_VALUE };
                        self.state.pos = at + t.open.len();
                    }
                    Some((at, 1)) => return Scan::Closed(at + t.call_end.len()),
                    Some((at, _)) => {
                        self.state.stage = CUT;
                        return Scan::Closed(at);
                    }
                    None => return Scan::Open,
                },
            }
        }
    }
}

/// The tokens of a format whose calls stand in sections: a section opens with `open`,
/// each call in it begins with `call`, and `end` closes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SectionTokens {
    pub open: &'static str,
    pub call: &'static str,
    pub end: &'static str,
}

/// How a format's calls are found and read: where its markup is, and what it means.
/// A format hands its reading over with [`Format::reading`](super::format::Format::reading);
/// formats that read alike share one implementation (a reader of `readers/`).
pub(crate) trait Reading: Send + Sync {
    /// For a format whose calls stand in sections and nowhere else, their tokens: the
    /// default [`find`](Self::find) and [`in_section`](Self::in_section) read them.
    fn sections(&self) -> Option<SectionTokens> {
        None
    }

    /// The byte every piece of markup [`find`](Self::find) reports begins with, for a
    /// format whose markup is found by its tokens alone (whatever `reply_start` says):
    /// text without that byte then holds no markup, nor the start of any, and a stream
    /// reads it as prose at once. `None` (the default): no such promise.
    fn markup_lead(&self) -> Option<u8> {
        None
    }

    /// The byte every end of a call region begins with, for a format whose regions end
    /// only at a token (or at the end of the reply): inside a region, text without that
    /// byte decides nothing, and a stream keeps it until one arrives. `None` (the
    /// default): no such promise.
    fn region_end_lead(&self) -> Option<u8> {
        None
    }

    /// The first markup in `text[from..]`. `reply_start`: the reply before `from` is
    /// only whitespace. Token searches go through `search`.
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        let _ = reply_start;
        self.sections().map_or(Found::Nothing, |tokens| search.section(text, from, tokens.open))
    }

    /// Inside a section of kind `kind`: what comes at or after `from`.
    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        let _ = kind;
        match self.sections() {
            Some(tokens) => search.call_or_end(text, from, tokens.call, tokens.end),
            None => InSection::Leave(from),
        }
    }

    /// Scans a call region on from where its state stopped.
    fn scan(&self, region: &mut Region<'_>) -> Scan;

    /// The calls of a region that ended (`closed`), or was cut off by the end of the
    /// reply. A region that holds no call is prose.
    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>);
}

/// How a call region ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionEnd {
    /// At its closing markup.
    Closed,
    /// The reply ended inside it.
    ReplyEnded,
    /// Reasoning began inside it (markup never spans hidden text).
    ReasoningBegan,
}

/// What the core decides, in order.
pub(crate) trait Sink {
    /// Prose: `text` is the reply's `range`.
    fn prose(&mut self, text: &str, range: Range<usize>);
    /// A call region begins at `at`.
    fn region_started(&mut self, at: usize);
    /// A region ended with these calls (offsets relative to `range.start`), which the
    /// sink takes (drains); `end` says how it ended. No calls: the region was prose.
    fn region(&mut self, text: &str, range: Range<usize>, calls: &mut Vec<RawCall>, end: RegionEnd);
    /// Something the reader noticed outside any call (reasoning never closed).
    fn diagnostic(&mut self, diagnostic: Diagnostic);
}

/// Reads a reply with a format: reasoning hidden by the one rule, the [`Core`] run over
/// each stretch of visible text. Offsets are those of the [`Core`] (into the text it is
/// run on), except the stretches', which are the reply's.
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    core: Core,
    stretches: VisibleStretches,
}

impl Reader {
    /// A reader of `format` with `options`: reasoning (the tags, and the format's own
    /// markup) hidden when [`skip_reasoning`](TextFormatOptions::skip_reasoning), the
    /// reply starting inside it when
    /// [`starts_in_reasoning`](TextFormatOptions::starts_in_reasoning).
    pub(crate) fn new(format: &Format, options: &TextFormatOptions) -> Self {
        let tokens = format.reasoning.and_then(Markup::tokens);
        let stretches = VisibleStretches::new(options.skip_reasoning, options.starts_in_reasoning, tokens);
        Reader { core: Core::new(), stretches }
    }

    /// Moves the core's offsets `by` bytes back (the caller dropped that much decided
    /// text).
    pub(crate) fn shift(&mut self, by: usize) {
        self.core.shift(by);
    }

    /// Whether text that arrives at reply offset `end` with no markup in it (no byte
    /// that begins the format's markup nor a reasoning tag) is prose as it stands:
    /// everything before it is decided, visible and read as prose.
    pub(crate) fn reads_as_prose(&self, end: usize) -> bool {
        matches!(self.core.mode, Mode::Prose) && self.stretches.all_visible(end)
    }

    /// Takes `text`, which [`reads_as_prose`](Self::reads_as_prose), as read prose
    /// ending at reply offset `end`: what [`run`](Self::run) would decide, without its
    /// searches. The caller reports it.
    pub(crate) fn pass_prose(&mut self, text: &str, end: usize) {
        self.pass_visible(end);
        if self.core.reply_start && !is_blank(Some(text)) {
            self.core.reply_start = false;
        }
    }

    /// Whether text that arrives at reply offset `end` inside a call region, with no
    /// byte that ends a region nor `<`, decides nothing: everything before it is
    /// classified visible, and the core is in a call region.
    pub(crate) fn waits_in_region(&self, end: usize) -> bool {
        matches!(self.core.mode, Mode::Call { .. }) && self.stretches.all_visible(end)
    }

    /// Text without `<` up to reply offset `end` arrived while everything before it was
    /// visible ([`reads_as_prose`](Self::reads_as_prose),
    /// [`waits_in_region`](Self::waits_in_region)): it is visible, and the core reads it
    /// with what comes next.
    pub(crate) fn pass_visible(&mut self, end: usize) {
        self.stretches.pass_visible(end);
    }

    /// Reads `text` (the reply from offset `base` on) from `pos` on, as [`Core::run`]
    /// does; returns where the undecided text begins.
    pub(crate) fn run(
        &mut self,
        format: &dyn Reading,
        text: &str,
        base: usize,
        mut pos: usize,
        at_end: bool,
        sink: &mut dyn Sink,
    ) -> usize {
        if !self.stretches.hides() {
            return self.core.run(format, Window { text, base, at_end }, pos, sink);
        }
        let core = &mut self.core;
        let flow = self.stretches.advance::<()>(text, base, at_end, |change| {
            match change {
                Change::StretchResumes(start) => pos = start - base,
                Change::StretchEnds(visible_to) => {
                    // Reasoning begins: the visible stretch before it is read to its end.
                    let stretch = text.get(..visible_to - base).unwrap_or_default();
                    core.cut = RegionEnd::ReasoningBegan;
                    core.run(format, Window { text: stretch, base, at_end: true }, pos, sink);
                    core.cut = RegionEnd::ReplyEnded;
                }
            }
            ControlFlow::Continue(())
        });
        debug_assert!(flow.is_continue());
        if at_end && let Some((start, end)) = self.stretches.unclosed() {
            sink.diagnostic(unclosed_diagnostic(start, end));
        }
        if self.stretches.hidden() {
            // Everything the rule decided is hidden or read.
            return self.stretches.decided().saturating_sub(base).max(pos).min(text.len());
        }
        let stretch = text.get(..self.stretches.visible_to() - base).unwrap_or_default();
        self.core.run(format, Window { text: stretch, base, at_end }, pos, sink)
    }
}

/// The text the core reads in one run.
#[derive(Debug, Clone, Copy)]
struct Window<'t> {
    /// The text (the reply from offset `base` on, up to where it is read this time).
    text: &'t str,
    base: usize,
    /// No more text will come (the reply, or the stretch of visible text, is complete).
    at_end: bool,
}

/// Where the core is.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Prose,
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
    /// How the end of the text ends a region that is still open.
    cut: RegionEnd,
    /// The calls of the region being read (kept to reuse its allocation).
    calls: Vec<RawCall>,
    search: Searches,
}

impl Core {
    pub(crate) fn new() -> Self {
        Core {
            mode: Mode::Prose,
            reply_start: true,
            cut: RegionEnd::ReplyEnded,
            calls: Vec::new(),
            search: Searches::default(),
        }
    }

    /// Moves kept offsets `by` bytes back (the caller dropped that much decided text).
    pub(crate) fn shift(&mut self, by: usize) {
        self.search.shift(by);
        match &mut self.mode {
            Mode::Call { start, .. } => *start = start.saturating_sub(by),
            Mode::Prose | Mode::Section { .. } => {}
        }
    }

    /// Reads the window's text from `pos` on; returns where the undecided text begins
    /// (everything before it was told to `sink`).
    fn run(
        &mut self,
        format: &dyn Reading,
        window: Window<'_>,
        mut pos: usize,
        sink: &mut dyn Sink,
    ) -> usize {
        let Window { text, base, at_end } = window;
        loop {
            match self.mode {
                Mode::Prose => match format.find(text, pos, self.reply_start, &mut self.search) {
                    Found::Nothing => {
                        self.prose(text, base, pos, text.len(), sink);
                        return text.len();
                    }
                    Found::Hold(at) => {
                        self.prose(text, base, pos, at, sink);
                        if at_end {
                            self.prose(text, base, at, text.len(), sink);
                            return text.len();
                        }
                        return at;
                    }
                    Found::Call(at) => {
                        self.prose(text, base, pos, at, sink);
                        self.reply_start = false;
                        sink.region_started(base + at);
                        self.mode = Mode::Call { start: at, state: ScanState::default(), in_section: None };
                        pos = at;
                    }
                    Found::Section { at, len, kind } => {
                        self.prose(text, base, pos, at, sink);
                        self.reply_start = false;
                        self.mode = Mode::Section { kind };
                        pos = at + len;
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
                    let search = &mut self.search;
                    let scan =
                        format.scan(&mut Region { text: region, state: &mut state, at_end, search, start });
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
                                RegionEnd::Closed,
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
        format: &dyn Reading,
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
        let how = if closed { RegionEnd::Closed } else { self.cut };
        sink.region(region, base + start..base + start + end, &mut calls, how);
        calls.clear();
        self.calls = calls;
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

/// The first offset of a text of `len` bytes at which one of `tokens` could begin and be
/// cut off by the text's end (its last `longest - 1` bytes).
fn cut_off_start(len: usize, tokens: &[&str]) -> usize {
    let longest = tokens.iter().map(|t| t.len()).max().unwrap_or(0);
    len.saturating_sub(longest.saturating_sub(1))
}

/// The start of the longest tail of `text[from..]` that is a proper prefix of one of
/// `tokens`, if any.
pub(crate) fn partial_suffix(text: &str, from: usize, tokens: &[&str]) -> Option<usize> {
    let len = text.len();
    let first = cut_off_start(len, tokens).max(from);
    let bytes = text.as_bytes();
    (first..len).find(|&i| {
        // (The first byte rules out most offsets before any comparison.)
        bytes.get(i).is_some_and(|&b| tokens.iter().any(|t| t.as_bytes().first() == Some(&b)))
            && text.is_char_boundary(i)
            && text
                .get(i..)
                .is_some_and(|tail| tokens.iter().any(|t| t.len() > tail.len() && t.starts_with(tail)))
    })
}

/// The first offset at or after `from` in `bytes` that is not ASCII white space.
pub(crate) fn after_blanks(bytes: &[u8], from: usize) -> usize {
    from + bytes.get(from..).unwrap_or_default().iter().take_while(|b| b.is_ascii_whitespace()).count()
}

/// `at`, moved forward to a char boundary of `text`.
pub(crate) fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at.min(text.len())
}

/// The text of a region between its opening markup (`open_len` bytes) and its closing
/// `close`, which a region that did not close (`closed` false) lacks.
pub(crate) fn inside<'r>(region: &'r str, open_len: usize, close: &str, closed: bool) -> &'r str {
    let end = if closed { region.len().saturating_sub(close.len()) } else { region.len() };
    region.get(open_len..end).unwrap_or_default()
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
