//! Reasoning written into a reply's text (`<think>` … `</think>`): the one rule every
//! text protocol hides it by (VCP, every open-model format, and `auto`).
//!
//! **The rule.**
//! - **Tags.** A tag is `<\s*/?\s*think(ing)?\b[^>]*>` read with ASCII `\s` and `\b`:
//!   `<think>`, `<thinking>`, with attributes (`<thinking mode="x">`) and spaces
//!   (`< / think >`). `<thinker>` and `<think_x>` are no tags (`_` is a word character);
//!   `<think-x>` is one.
//! - **Case.** Any ASCII case: `<THINK>`, `</Thinking>`.
//! - **Nesting.** Opening and closing tags pair by depth only, so `</thinking>` may close
//!   `<think>`, and `<think><think>a</think>b` is still open after `b`. A tag ending in
//!   `/>` (`<think/>`) hides only itself.
//! - **Unclosed.** An opening tag never closed hides everything after it: a call in
//!   unfinished reasoning must not run. The protocols report it as an
//!   [`UnclosedReasoning`](crate::protocol::DiagnosticKind::UnclosedReasoning) diagnostic at the
//!   outermost open tag.
//! - **Unpaired closing tag.** A closing tag with nothing open hides only itself.
//! - **What hiding means.** Hidden text (the tags and all between them) is cut out before
//!   anything else is read, wherever it stands: no call is read in it, and it is not
//!   normal text. Where it stood, a *break* remains, which no marker, token or key ever
//!   spans (VCP reads a break as white space between a key and its value and as nothing
//!   inside a value; the open-model formats end a call that a break interrupts, as if
//!   the reply had ended there, so it is reported incomplete and never run). Hidden text
//!   does not count as the start of the reply: a bare JSON call right after `</think>`
//!   still opens the reply.
//! - **Streaming.** The text is classified in one forward pass, a chunk at a time: a `<`
//!   whose tag is not decided yet (its head is cut across chunks, as in `<thi` + `nk>`,
//!   or its `>` has not arrived) is held back, and everything before it is decided at
//!   once. A head that rules out a tag (`<tool_call>`, `<<<[`, `<|`) is decided at the
//!   first byte that rules it out. Streamed and one-shot reading therefore hide the same
//!   text, and the pass is linear in the input (each byte is looked at a bounded number
//!   of times; a complete head with no `>` anywhere after it ends the search for tags).
//!
//! Each protocol has an option to read reasoning like any other text (VCP's
//! `keep_reasoning`, the formats' `skip_reasoning` off).
//!
//! **A format's own markup.** A format that writes reasoning with markup of its own
//! (`<seed:think>`, `<|START_THINKING|>`, harmony's `analysis` messages, …) declares it,
//! and this filter reads it by the same rule, in the same pass: a pair of tags nests with
//! `<think>` by depth; a frame of the format's structure (a channel, a message) ends at
//! its own closing token or where the next frame begins, and does not nest. Before
//! `auto` decides, every format's markup is reasoning.
//!
//! **A reply that starts inside reasoning.** When the prompt opened reasoning
//! (`starts_in_reasoning`), the reply is undecided from its start until its first
//! reasoning markup: a closing tag (or the end of a frame) says it began in reasoning and
//! hides everything before it; an opening tag, or markup only an answer writes (Kimi
//! K3's other channel markers), says it did not. Call markup decides nothing. A reply
//! that ends undecided is reasoning never closed: all of it hidden, with the diagnostic
//! at an empty span at 0. The [reasoning chapter](crate::guide::reasoning) says which model families
//! set it, and why.
//!
//! ```
//! use tool_calling::protocol::reasoning;
//! let reply = "a<THINK>x<thinking>y</think>z</Thinking>b</think>c<think>rest";
//! assert_eq!(reasoning::cut(reply), "abc");
//! let spans = reasoning::hidden_spans(reply);
//! assert_eq!(spans[0].slice(reply), Some("<THINK>x<thinking>y</think>z</Thinking>"));
//! assert_eq!(spans[1].slice(reply), Some("</think>"), "an unpaired closing tag hides itself");
//! assert_eq!(spans[2].slice(reply), Some("<think>rest"), "an unclosed tag hides the rest");
//! ```

use memchr::{memchr, memchr2};

use crate::Span;
use crate::protocol::Diagnostic;
use crate::protocol::DiagnosticKind;

/// What one tag does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    Open,
    Close,
    SelfClosing,
}

fn ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

fn ascii_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The next `<` at or after `from` in `bytes` that may begin a tag: one whose head
/// `\s*/?\s*` is followed by `think` in any case, or (unless `last`) by the end of
/// `bytes` after a proper prefix of `thin`, so that more text decides it. Every other `<`
/// is no tag (markup, comparisons, HTML), so the search runs from `think` to `think`
/// (rare in prose, where `<` is not) and looks back from each one: a `<` that stands
/// before a `think` is found at that `think`, and the heads of two candidates never
/// overlap, so they are found in order. Looking back never passes `from`, and each
/// `think` is looked at once: linear.
fn next_candidate(bytes: &[u8], from: usize, last: bool) -> Option<usize> {
    let mut at = from + 1;
    while let Some(t) = next_think(bytes, at) {
        at = t + 1;
        if let Some(lt) = lt_before(bytes, t, from) {
            return Some(lt);
        }
    }
    if last {
        return None;
    }
    // A head cut by the end of the text: `<`, white space, `/`, and up to `thin`.
    let letters = bytes.iter().rev().take(5).take_while(|b| b.is_ascii_alphabetic()).count();
    let t = bytes.len() - letters;
    let prefix = b"thin".get(..letters)?;
    if !bytes.get(t..)?.eq_ignore_ascii_case(prefix) {
        return None;
    }
    lt_before(bytes, t, from)
}

/// Texts at least this long are searched for `think` with [`think_searcher`]; shorter
/// ones (a streamed delta) from `k` to `k`, which costs less to start.
const LONG_SEARCH: usize = 64;

/// A vectorized search for `nk` in every ASCII case (4 patterns), where the CPU has one
/// (Teddy, in `aho-corasick`): `think` is found at its `nk`, which prose holds far less
/// often than `k`, without stopping at every `k`. (Two bytes, not more: the search's
/// speed falls with each byte it matches, and `nk` is rare enough.)
fn think_searcher() -> Option<&'static aho_corasick::packed::Searcher> {
    static SEARCHER: std::sync::OnceLock<Option<aho_corasick::packed::Searcher>> = std::sync::OnceLock::new();
    SEARCHER.get_or_init(|| aho_corasick::packed::Searcher::new([b"nk", b"nK", b"Nk", b"NK"])).as_ref()
}

/// Where the next `think` (any ASCII case) at or after `at` in `bytes` begins.
fn next_think(bytes: &[u8], mut at: usize) -> Option<usize> {
    let searcher = think_searcher().filter(|_| bytes.len().saturating_sub(at) >= LONG_SEARCH);
    loop {
        let t = match searcher {
            // `nk` at `n`: the `t` would be at `n - 3`.
            Some(searcher) => at + searcher.find(bytes.get(at + 3..)?)?.start(),
            // `k` at `k`: the `t` would be at `k - 4`.
            None => at + memchr2(b'k', b'K', bytes.get(at + 4..)?)?,
        };
        if bytes.get(t..t + 5).is_some_and(|word| word.eq_ignore_ascii_case(b"think")) {
            return Some(t);
        }
        at = t + 1;
    }
}

/// The `<` that begins a head ending just before `t` (`<\s*/?\s*` before it), not
/// before `floor`.
fn lt_before(bytes: &[u8], t: usize, floor: usize) -> Option<usize> {
    let before = |i: usize| i.checked_sub(1).filter(|&j| j >= floor).and_then(|j| bytes.get(j).copied());
    let mut i = t;
    while before(i).is_some_and(ascii_space) {
        i -= 1;
    }
    if before(i) == Some(b'/') {
        i -= 1;
        while before(i).is_some_and(ascii_space) {
            i -= 1;
        }
    }
    (before(i) == Some(b'<')).then(|| i - 1)
}

/// Where the head `<\s*/?\s*think(ing)?\b` of a candidate tag stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// After `<` and white space.
    Lead,
    /// After `/` and white space.
    Slash,
    /// `n` letters of `think` matched (1..=4).
    Think(u8),
    /// `think` matched: `ing` or a word boundary follows.
    AfterThink,
    /// `n` letters of `ing` matched (1..=2).
    Ing(u8),
    /// `thinking` matched: a word boundary follows.
    AfterIng,
}

/// One step of the head automaton.
enum HeadStep {
    Next(Head),
    /// The head ends before this byte.
    Done,
    /// No tag.
    Fail,
}

fn head_step(state: Head, b: u8) -> HeadStep {
    const THINK: &[u8] = b"think";
    const ING: &[u8] = b"ing";
    let lower = b.to_ascii_lowercase();
    match state {
        Head::Lead if ascii_space(b) => HeadStep::Next(Head::Lead),
        Head::Lead if b == b'/' => HeadStep::Next(Head::Slash),
        Head::Slash if ascii_space(b) => HeadStep::Next(Head::Slash),
        Head::Lead | Head::Slash if lower == b't' => HeadStep::Next(Head::Think(1)),
        Head::Think(n) if THINK.get(usize::from(n)) == Some(&lower) => {
            HeadStep::Next(if n == 4 { Head::AfterThink } else { Head::Think(n + 1) })
        }
        Head::AfterThink if lower == b'i' => HeadStep::Next(Head::Ing(1)),
        Head::Ing(n) if ING.get(usize::from(n)) == Some(&lower) => {
            HeadStep::Next(if n == 2 { Head::AfterIng } else { Head::Ing(n + 1) })
        }
        Head::AfterThink | Head::AfterIng if !ascii_word(b) => HeadStep::Done,
        _ => HeadStep::Fail,
    }
}

/// Whether `text` holds the head of a `<think>` or `<thinking>` tag as this rule reads
/// one (`<`, blanks, an optional `/` and blanks, the word in any case, then anything but
/// a letter, digit or `_`), or ends inside such a head: text that the rule would cut
/// out of where it stands while reasoning is hidden. Linear: each `<` reads at most its
/// head.
pub(crate) fn holds_think_tag(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'<', bytes).any(|lt| {
        let mut state = Head::Lead;
        for &b in bytes.get(lt + 1..).unwrap_or_default() {
            match head_step(state, b) {
                HeadStep::Next(next) => state = next,
                HeadStep::Done => return true,
                HeadStep::Fail => return false,
            }
        }
        matches!(state, Head::AfterThink | Head::AfterIng)
    })
}

/// A `<` whose tag is not decided yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    lt: usize,
    closing: bool,
    /// The head automaton and the next byte it reads; `None` once the head is read
    /// and the tag's `>` is being looked for from `at`.
    head: Option<Head>,
    at: usize,
}

/// A reasoning section a format writes with markup of its own (`<seed:think>` …
/// `</seed:think>`, harmony's `analysis` messages): read by the same rule as `<think>`
/// (hidden while reasoning is hidden, a call in it never read; never closed, it hides
/// the rest; read like any other text when reasoning is).
#[derive(Debug)]
pub(crate) struct Section {
    /// The token that opens it.
    open: &'static str,
    /// The tokens that close it (hidden with it).
    close: &'static [&'static str],
    /// Tokens that end it too and stay in the text (a new frame or message begins).
    ends_before: &'static [&'static str],
    /// Tags: an opening token inside reasoning nests, and a closing token with nothing
    /// open hides itself (as `</think>` does). Otherwise (a frame of the format's
    /// structure) an opening token inside reasoning changes nothing, and a closing token
    /// with nothing open is the format's to read (it closes other frames too).
    tags: bool,
}

impl Section {
    /// A pair of tags, read exactly as `<think>` and `</think>` are (`close` holds the
    /// one closing tag).
    pub(crate) const fn tags(open: &'static str, close: &'static [&'static str]) -> Self {
        Section { open, close, ends_before: &[], tags: true }
    }

    /// A frame of the format's structure that holds reasoning: opened by `open`,
    /// closed by any of `close`, or ended by any of `ends_before` (which stay in the
    /// text).
    pub(crate) const fn frame(
        open: &'static str,
        close: &'static [&'static str],
        ends_before: &'static [&'static str],
    ) -> Self {
        Section { open, close, ends_before, tags: false }
    }
}

/// The reasoning markup a format declares (its `Format::reasoning`): its sections, and
/// the markup that shows a reply the option says starts in reasoning did not (Kimi K3's
/// channel markers: the prompt opened `response`, not `think`). Every token begins with
/// `<`, so text without `<` holds none (the streaming fast paths rely on it).
#[derive(Debug)]
pub(crate) struct Markup {
    sections: &'static [Section],
    answer: &'static [&'static str],
    compiled: std::sync::OnceLock<Option<Tokens>>,
}

impl Markup {
    /// The markup of `sections`, and `answer` tokens.
    pub(crate) const fn new(sections: &'static [Section], answer: &'static [&'static str]) -> Self {
        Markup { sections, answer, compiled: std::sync::OnceLock::new() }
    }

    /// The tokens, ready to search (built once).
    pub(crate) fn tokens(&'static self) -> Option<&'static Tokens> {
        self.compiled.get_or_init(|| Tokens::new([self])).as_ref()
    }

    /// The tokens the rule cuts out wherever they stand while reasoning is hidden: each
    /// section's opening token, and the closing tokens of tag pairs (which hide
    /// themselves with nothing open, as `</think>` does).
    pub(crate) fn hidden_tokens(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.sections.iter().flat_map(|s| {
            let closes = if s.tags { s.close } else { &[] };
            std::iter::once(s.open).chain(closes.iter().copied())
        })
    }

    /// Every token of the markup.
    pub(crate) fn all(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.sections
            .iter()
            .flat_map(|s| {
                std::iter::once(s.open).chain(s.close.iter().copied()).chain(s.ends_before.iter().copied())
            })
            .chain(self.answer.iter().copied())
    }
}

/// What a token does. Frames are numbered within their [`Tokens`] (the bits of the
/// masks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Role {
    /// Opens a pair of tags.
    open_tag: bool,
    /// Opens this frame.
    open_frame: Option<u8>,
    /// Closes whatever is open (a tag: by depth, as `</think>` does).
    close_tag: bool,
    /// Closes these frames (when one of them is what is open).
    close_frames: u64,
    /// Ends these frames and stays in the text.
    ends_frames: u64,
    /// Shows that a reply did not start in reasoning.
    answer: bool,
}

impl Role {
    /// Whether it opens reasoning.
    fn opens(self) -> bool {
        self.open_tag || self.open_frame.is_some()
    }

    /// Whether it ends reasoning the prompt opened (which is no frame: the closing
    /// token of any section ends it).
    fn ends_any(self) -> bool {
        self.close_tag || self.close_frames != 0 || self.ends_frames != 0
    }
}

/// The tokens of one or more [`Markup`]s, with one search for all of them.
#[derive(Debug)]
pub(crate) struct Tokens {
    list: Vec<(&'static str, Role)>,
    search: aho_corasick::AhoCorasick,
    longest: usize,
}

impl Tokens {
    /// The tokens of `markups` (a token several declare plays every role they give it);
    /// `None` when they declare none.
    pub(crate) fn new<'m>(markups: impl IntoIterator<Item = &'m Markup>) -> Option<Tokens> {
        let mut list: Vec<(&'static str, Role)> = Vec::new();
        let mut add = |token: &'static str, f: &dyn Fn(&mut Role)| {
            debug_assert!(token.starts_with('<'), "{token:?}: reasoning tokens begin with `<`");
            match list.iter_mut().find(|(t, _)| *t == token) {
                Some((_, role)) => f(role),
                None => {
                    let mut role = Role::default();
                    f(&mut role);
                    list.push((token, role));
                }
            }
        };
        let mut frames = 0u8;
        for markup in markups {
            for section in markup.sections {
                if section.tags {
                    add(section.open, &|r| r.open_tag = true);
                    for close in section.close {
                        add(close, &|r| r.close_tag = true);
                    }
                    continue;
                }
                let frame = frames;
                frames = frames.saturating_add(1);
                let bit = 1u64.checked_shl(u32::from(frame)).unwrap_or(0);
                add(section.open, &|r| r.open_frame = Some(frame));
                for close in section.close {
                    add(close, &|r| r.close_frames |= bit);
                }
                for end in section.ends_before {
                    add(end, &|r| r.ends_frames |= bit);
                }
            }
            for answer in markup.answer {
                add(answer, &|r| r.answer = true);
            }
        }
        if list.is_empty() {
            return None;
        }
        let search = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(list.iter().map(|(t, _)| t))
            .ok()?;
        let longest = list.iter().map(|(t, _)| t.len()).max().unwrap_or(0);
        Some(Tokens { list, search, longest })
    }

    /// The first token at or after `from` in `bytes` (the longest one where several
    /// begin): its start, end and index.
    fn find(&self, bytes: &[u8], from: usize) -> Option<(usize, usize, usize)> {
        let input = aho_corasick::Input::new(bytes).span(from.min(bytes.len())..bytes.len());
        self.search.find(input).map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }

    /// The role of token `index`.
    fn role(&self, index: usize) -> Role {
        self.list.get(index).map(|(_, role)| *role).unwrap_or_default()
    }

    /// Where the first tail of `bytes` (at or after `from`) begins that is a proper
    /// prefix of a token: more text may make a token of it, or a longer one.
    fn partial_tail(&self, bytes: &[u8], from: usize) -> Option<usize> {
        let first = bytes.len().saturating_sub(self.longest.saturating_sub(1)).max(from);
        let tail = bytes.get(first..)?;
        tail.iter().enumerate().filter(|(_, b)| **b == b'<').map(|(i, _)| first + i).find(|&at| {
            bytes.get(at..).is_some_and(|rest| {
                self.list.iter().any(|(t, _)| t.len() > rest.len() && t.as_bytes().starts_with(rest))
            })
        })
    }
}

/// A token found: its start, end and index.
type TokenAt = (usize, usize, usize);

/// The next reasoning token of a format, or a tail that may begin one.
#[derive(Debug, Clone, Copy)]
enum TokenHit {
    /// A token at `start..end`, playing its role.
    Found(usize, usize, Role),
    /// The text ends in what may begin a token here.
    Held(usize),
}

impl TokenHit {
    fn at(self) -> usize {
        match self {
            TokenHit::Found(at, _, _) | TokenHit::Held(at) => at,
        }
    }
}

/// What the filter decided about a stretch of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes `start..end` are visible.
    Visible(usize, usize),
    /// Hidden text (reasoning) stands here: a break in the visible text.
    Hidden,
}

/// The streaming reasoning filter. Offsets are absolute (into everything fed so far).
#[derive(Debug, Clone, Default)]
pub(crate) struct ReasoningFilter {
    depth: usize,
    /// Everything before this is classified.
    done_to: usize,
    /// Where to look for the next `<`.
    search_from: usize,
    pending: Option<Pending>,
    /// The outermost opening tag of the open reasoning region.
    outermost: Option<(usize, usize)>,
    /// A tag head without any `>` after it was found at the end: no more tags.
    exhausted: bool,
    /// The reasoning markup of a format's own, read by the same rule as the tags.
    tokens: Option<&'static Tokens>,
    /// The reply starts inside reasoning (the prompt opened it), and no tag or token
    /// has decided yet whether it really does: nothing is classified.
    undecided: bool,
    /// The frame the open reasoning is (`None`: tags).
    frame: Option<u8>,
    /// Where to look for the next reasoning token (a `<` that turned out to begin no
    /// tag may still begin a token).
    token_from: usize,
}

impl ReasoningFilter {
    /// A filter that also reads the format's own reasoning markup `tokens`; with
    /// `starts_in_reasoning`, the text begins inside reasoning the prompt opened (see
    /// the module docs).
    pub(crate) fn new(starts_in_reasoning: bool, tokens: Option<&'static Tokens>) -> Self {
        ReasoningFilter { tokens, undecided: starts_in_reasoning, ..ReasoningFilter::default() }
    }

    /// Everything before this offset is classified; the caller may drop it.
    pub(crate) fn decided(&self) -> usize {
        self.done_to
    }

    /// Whether text without `<` that arrives now is visible as it is: nothing is held
    /// back and no reasoning is open.
    pub(crate) fn passes_plain_text(&self, end: usize) -> bool {
        self.pending.is_none() && self.depth == 0 && !self.undecided && self.done_to == end
    }

    /// Text without `<` up to `end` arrived while [`passes_plain_text`] held: it is
    /// visible.
    ///
    /// [`passes_plain_text`]: Self::passes_plain_text
    pub(crate) fn pass_plain_text(&mut self, end: usize) {
        self.done_to = end;
        self.search_from = end;
        self.token_from = end;
    }

    /// Whether the text so far ends inside reasoning.
    pub(crate) fn in_reasoning(&self) -> bool {
        self.depth > 0 || self.undecided
    }

    /// The unclosed opening tag, once the text has ended inside reasoning.
    pub(crate) fn unclosed(&self) -> Option<(usize, usize)> {
        if self.depth > 0 { self.outermost } else { None }
    }

    /// Classifies as much of `buf` (the text from absolute offset `base`, which is at
    /// most [`decided`](Self::decided)) as is decided, reporting pieces in order. With
    /// `last`, `buf` reaches the end of the text and everything is decided.
    pub(crate) fn advance(&mut self, buf: &str, base: usize, last: bool, out: &mut impl FnMut(Piece)) {
        let bytes = buf.as_bytes();
        let end = base + bytes.len();
        let at = |i: usize| bytes.get(i - base).copied();
        // What a search from an offset found (a candidate's `<`; a token's start, end
        // and index).
        let mut think_seen: Option<(usize, Option<usize>)> = None;
        let mut token_seen: Option<(usize, Option<TokenAt>)> = None;
        loop {
            if let Some(mut p) = self.pending.take() {
                // Read the head.
                let mut failed_at = None;
                while let Some(state) = p.head {
                    let Some(b) = at(p.at) else { break };
                    match head_step(state, b) {
                        HeadStep::Next(next) => {
                            if state == Head::Lead && next == Head::Slash {
                                p.closing = true;
                            }
                            p.head = Some(next);
                            p.at += 1;
                        }
                        HeadStep::Done => p.head = None,
                        HeadStep::Fail => {
                            failed_at = Some(p.at);
                            break;
                        }
                    }
                }
                if let Some(fail) = failed_at {
                    // Not a tag: the bytes read were white space, `/` and letters, so
                    // the next `<` can only be at `fail` or later.
                    self.search_from = fail;
                    continue;
                }
                if let Some(state) = p.head {
                    // The text ended inside the head.
                    if last {
                        let complete = matches!(state, Head::AfterThink | Head::AfterIng);
                        // A complete head at the very end has no `>`: no tag, and none later.
                        self.exhausted |= complete;
                        self.search_from = if complete { end } else { p.at };
                        continue;
                    }
                    self.pending = Some(p);
                    return;
                }
                // Find the tag's `>`.
                match bytes.get(p.at - base..).and_then(|b| memchr(b'>', b)) {
                    Some(i) => {
                        let gt = p.at + i;
                        let kind = if gt.checked_sub(1).and_then(at) == Some(b'/') {
                            TagKind::SelfClosing
                        } else if p.closing {
                            TagKind::Close
                        } else {
                            TagKind::Open
                        };
                        self.tag(kind, p.lt, gt + 1, out);
                        continue;
                    }
                    None if last => {
                        // No `>` anywhere after: no tag here, and none later.
                        self.exhausted = true;
                        self.search_from = end;
                        continue;
                    }
                    None => {
                        p.at = end;
                        self.pending = Some(p);
                        return;
                    }
                }
            }
            // Most `<` are no tag (markers, comparisons, HTML): only those the bytes
            // after them do not rule out are read with the head automaton. (Searches
            // are remembered within this call: the text does not change, and what the
            // search from `from` found is what any later start before it finds.)
            let from = self.search_from.max(base);
            let tfrom = self.token_from.max(base);
            let next_lt = if self.exhausted {
                None
            } else {
                match think_seen {
                    Some((seen_from, found)) if seen_from <= from && found.is_none_or(|lt| lt >= from) => {
                        found
                    }
                    _ => {
                        let found = next_candidate(bytes, from - base, last).map(|i| base + i);
                        think_seen = Some((from, found));
                        found
                    }
                }
            };
            // The format's own reasoning markup, when it has any.
            let next_token = match self.tokens {
                None => None,
                Some(tokens) => {
                    let found = match token_seen {
                        Some((seen_from, found))
                            if seen_from <= tfrom && found.is_none_or(|(s, _, _)| s >= tfrom) =>
                        {
                            found
                        }
                        _ => {
                            let found =
                                tokens.find(bytes, tfrom - base).map(|(s, e, i)| (base + s, base + e, i));
                            token_seen = Some((tfrom, found));
                            found
                        }
                    };
                    // A token cut by the end of the text, at or before the one found,
                    // waits for more text (a longer token may begin where it stands).
                    let held =
                        if last { None } else { tokens.partial_tail(bytes, tfrom - base).map(|i| base + i) };
                    match (held, found) {
                        (Some(h), Some((s, _, _))) if h <= s => Some(TokenHit::Held(h)),
                        (Some(h), None) => Some(TokenHit::Held(h)),
                        (_, Some((s, e, i))) => Some(TokenHit::Found(s, e, tokens.role(i))),
                        (None, None) => None,
                    }
                }
            };
            let token_first = match (next_token, next_lt) {
                (Some(hit), Some(lt)) => hit.at() < lt,
                (hit, _) => hit.is_some(),
            };
            if token_first {
                match next_token {
                    Some(TokenHit::Held(at)) => {
                        self.classify(at, out);
                        self.search_from = self.search_from.max(at);
                        self.token_from = at;
                        return;
                    }
                    Some(TokenHit::Found(start, stop, role)) => {
                        self.token(start, stop, role, out);
                        continue;
                    }
                    None => {}
                }
            }
            match next_lt {
                Some(lt) => {
                    self.classify(lt, out);
                    self.pending = Some(Pending { lt, closing: false, head: Some(Head::Lead), at: lt + 1 });
                }
                None => {
                    if last && self.undecided {
                        // Nothing said where the reasoning the prompt opened ends: all
                        // of the reply is in it, never closed.
                        self.undecided = false;
                        self.depth = 1;
                        self.outermost = Some((0, 0));
                        out(Piece::Hidden);
                    }
                    self.classify(end, out);
                    self.search_from = end;
                    self.token_from = end;
                    return;
                }
            }
        }
    }

    /// Classifies `done_to..to`: visible outside reasoning, hidden inside.
    fn classify(&mut self, to: usize, out: &mut impl FnMut(Piece)) {
        if to > self.done_to && !self.undecided {
            if self.depth == 0 {
                out(Piece::Visible(self.done_to, to));
            }
            self.done_to = to;
        }
    }

    fn tag(&mut self, kind: TagKind, lt: usize, end: usize, out: &mut impl FnMut(Piece)) {
        self.token_from = end;
        if self.undecided {
            match kind {
                // The reply opens reasoning of its own: the prompt did not.
                TagKind::Open => self.undecided = false,
                // The reasoning the prompt opened ends here.
                TagKind::Close => {
                    self.undecided = false;
                    out(Piece::Hidden);
                    self.done_to = end;
                    self.search_from = end;
                    return;
                }
                TagKind::SelfClosing => {
                    self.search_from = end;
                    return;
                }
            }
        }
        self.classify(lt, out);
        match kind {
            TagKind::SelfClosing | TagKind::Close if self.depth == 0 => out(Piece::Hidden),
            TagKind::SelfClosing => {}
            TagKind::Open => {
                if self.depth == 0 {
                    out(Piece::Hidden);
                    self.outermost = Some((lt, end));
                }
                self.depth += 1;
            }
            TagKind::Close => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.frame = None;
                }
            }
        }
        self.done_to = end;
        self.search_from = end;
    }

    /// One of the format's reasoning tokens at `start..end`, playing `role`.
    fn token(&mut self, start: usize, end: usize, role: Role, out: &mut impl FnMut(Piece)) {
        self.read_token(start, end, role, out);
        self.token_from = self.search_from;
    }

    fn read_token(&mut self, start: usize, end: usize, role: Role, out: &mut impl FnMut(Piece)) {
        if self.undecided {
            if role.ends_any() {
                // The reasoning the prompt opened ends here (a closing token is hidden
                // with it; a token that begins what follows is not).
                let closes = role.close_tag || role.close_frames != 0;
                self.undecided = false;
                out(Piece::Hidden);
                self.done_to = if closes { end } else { start };
                self.search_from = if closes { end } else { start + 1 };
                return;
            }
            if !(role.opens() || role.answer) {
                self.search_from = start + 1;
                return;
            }
            // Markup of a reply that did not begin in reasoning.
            self.undecided = false;
            if !role.opens() {
                self.search_from = end;
                return;
            }
        }
        let open_frame = self.frame.and_then(|f| 1u64.checked_shl(u32::from(f))).unwrap_or(0);
        if self.depth > 0 {
            self.classify(start, out);
            self.search_from = end;
            if role.close_tag {
                self.depth -= 1;
                self.done_to = end;
            } else if self.depth == 1 && role.close_frames & open_frame != 0 {
                self.depth = 0;
                self.done_to = end;
            } else if self.depth == 1 && role.ends_frames & open_frame != 0 {
                // What follows ends the frame; the token itself is read.
                self.depth = 0;
                self.search_from = start + 1;
            } else if role.open_tag {
                self.depth += 1;
                self.done_to = end;
            } else {
                // A frame is not opened again inside reasoning, nor closed by another
                // frame's token: hidden text.
                self.search_from = start + 1;
            }
            if self.depth == 0 {
                self.frame = None;
                self.outermost = None;
            }
            return;
        }
        if role.opens() || role.close_tag {
            self.classify(start, out);
            out(Piece::Hidden);
            if role.opens() {
                self.depth = 1;
                self.frame = role.open_frame;
                self.outermost = Some((start, end));
            }
            self.done_to = end;
            self.search_from = end;
            return;
        }
        // Not reasoning markup here (a frame's closing token with nothing open, which
        // the format reads, or a token that ends frames when none is open): text.
        self.search_from = start + 1;
    }
}

/// What the reasoning rule's classification means for a reader of the visible text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Reasoning begins: the visible stretch up to this reply offset is complete.
    StretchEnds(usize),
    /// Visible text resumes at this reply offset, after reasoning.
    StretchResumes(usize),
}

/// The reasoning rule in front of a reader (a text format's, `auto`'s detector): it
/// classifies the text as it arrives and tells the reader where each visible stretch
/// ends and the next one resumes, so that the reader reads each stretch as a whole (no
/// marker, token or key spans reasoning). With reasoning read like any other text it
/// classifies nothing and says nothing.
#[derive(Debug, Clone)]
pub(crate) struct VisibleStretches {
    /// `None` when reasoning is read like any other text.
    filter: Option<ReasoningFilter>,
    /// The end (in the reply) of the visible text classified so far.
    visible_to: usize,
    /// The text classified last is hidden.
    hidden: bool,
    /// What the filter decided in one look (kept to reuse its allocation).
    pieces: Vec<Piece>,
}

impl VisibleStretches {
    /// Stretches of the reply with reasoning hidden when `hide_reasoning`: the tags, and
    /// the format's own reasoning markup `tokens`; with `starts_in_reasoning`, the reply
    /// begins inside reasoning the prompt opened.
    pub(crate) fn new(
        hide_reasoning: bool,
        starts_in_reasoning: bool,
        tokens: Option<&'static Tokens>,
    ) -> Self {
        VisibleStretches {
            filter: hide_reasoning.then(|| ReasoningFilter::new(starts_in_reasoning, tokens)),
            visible_to: 0,
            hidden: false,
            pieces: Vec::new(),
        }
    }

    /// Whether reasoning is hidden at all.
    pub(crate) fn hides(&self) -> bool {
        self.filter.is_some()
    }

    /// Classifies `text` (the reply from offset `base` on, `base` at most
    /// [`decided`](Self::decided)) as far as it is decided, and tells `on` of every
    /// stretch that ends or resumes; stops at the first `on` that breaks.
    pub(crate) fn advance<B>(
        &mut self,
        text: &str,
        base: usize,
        at_end: bool,
        mut on: impl FnMut(Change) -> std::ops::ControlFlow<B>,
    ) -> std::ops::ControlFlow<B> {
        use std::ops::ControlFlow;
        let Some(filter) = self.filter.as_mut() else { return ControlFlow::Continue(()) };
        let from = filter.decided().max(base);
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        filter.advance(text.get(from - base..).unwrap_or_default(), from, at_end, &mut |piece| {
            pieces.push(piece);
        });
        let mut flow = ControlFlow::Continue(());
        for piece in pieces.drain(..) {
            match piece {
                Piece::Visible(start, end) => {
                    if self.hidden {
                        self.hidden = false;
                        flow = on(Change::StretchResumes(start));
                    }
                    self.visible_to = end;
                }
                Piece::Hidden if !self.hidden => {
                    flow = on(Change::StretchEnds(self.visible_to));
                    if flow.is_continue() {
                        self.hidden = true;
                    }
                }
                Piece::Hidden => {}
            }
            if flow.is_break() {
                break;
            }
        }
        self.pieces = pieces;
        flow
    }

    /// The end (in the reply) of the visible text classified so far (while reasoning is
    /// hidden).
    pub(crate) fn visible_to(&self) -> usize {
        self.visible_to
    }

    /// Whether the text classified last is hidden.
    pub(crate) fn hidden(&self) -> bool {
        self.hidden
    }

    /// Everything before this reply offset is classified.
    pub(crate) fn decided(&self) -> usize {
        self.filter.as_ref().map_or(0, ReasoningFilter::decided)
    }

    /// Whether everything up to reply offset `end` is classified visible, and text
    /// without `<` arriving there is visible as it is.
    pub(crate) fn all_visible(&self, end: usize) -> bool {
        !self.hidden
            && self
                .filter
                .as_ref()
                .is_none_or(|filter| filter.passes_plain_text(end) && self.visible_to == end)
    }

    /// Text without `<` up to reply offset `end` arrived while
    /// [`all_visible`](Self::all_visible) held: it is visible.
    pub(crate) fn pass_visible(&mut self, end: usize) {
        if let Some(filter) = &mut self.filter {
            filter.pass_plain_text(end);
            self.visible_to = end;
        }
    }

    /// The opening tag of reasoning never closed, once the text has ended.
    pub(crate) fn unclosed(&self) -> Option<(usize, usize)> {
        self.filter.as_ref().and_then(ReasoningFilter::unclosed)
    }
}

/// Classifies a whole text: its pieces in order, and the unclosed opening tag if any.
pub(crate) fn pieces(text: &str) -> (Vec<Piece>, Option<(usize, usize)>) {
    pieces_of(text, ReasoningFilter::default())
}

/// As [`pieces`], with `filter`.
pub(crate) fn pieces_of(text: &str, mut filter: ReasoningFilter) -> (Vec<Piece>, Option<(usize, usize)>) {
    let mut pieces = Vec::new();
    filter.advance(text, 0, true, &mut |piece| match (pieces.last_mut(), piece) {
        // Adjacent visible pieces (the filter cuts at every `<` it looks at) are one.
        (Some(Piece::Visible(_, end)), Piece::Visible(start, to)) if *end == start => *end = to,
        _ => pieces.push(piece),
    });
    (pieces, filter.unclosed())
}

/// The spans of `text` the rule hides (tags included), in order.
///
/// ```
/// use tool_calling::protocol::reasoning::hidden_spans;
/// let text = "Plan: <think>maybe call it</think>Done.";
/// let spans = hidden_spans(text);
/// assert_eq!(spans.len(), 1);
/// assert_eq!(spans[0].slice(text), Some("<think>maybe call it</think>"));
/// assert!(hidden_spans("a <thinker> b").is_empty());
/// ```
pub fn hidden_spans(text: &str) -> Vec<Span> {
    hidden_spans_of(text, ReasoningFilter::default())
}

/// As [`hidden_spans`], with `filter`.
pub(crate) fn hidden_spans_of(text: &str, filter: ReasoningFilter) -> Vec<Span> {
    let (pieces, _) = pieces_of(text, filter);
    let mut hidden = Vec::new();
    let mut cursor = 0;
    for piece in pieces {
        if let Piece::Visible(start, end) = piece {
            if start > cursor {
                hidden.push(Span::new(cursor, start));
            }
            cursor = end;
        }
    }
    if cursor < text.len() {
        hidden.push(Span::new(cursor, text.len()));
    }
    hidden
}

/// `text` with what the rule hides cut out.
///
/// ```
/// use tool_calling::protocol::reasoning::cut;
/// assert_eq!(cut("<Thinking mode=\"x\">plan</THINK>Answer."), "Answer.");
/// assert_eq!(cut("Sure.</think> Done.<think>unfinished"), "Sure. Done.");
/// ```
pub fn cut(text: &str) -> String {
    let (pieces, _) = pieces(text);
    pieces
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Visible(start, end) => text.get(start..end),
            Piece::Hidden => None,
        })
        .collect()
}

/// The diagnostic for reasoning that is never closed (the opening tag at `start..end`;
/// an empty span at 0: the reasoning the prompt opened).
pub(crate) fn unclosed_diagnostic(start: usize, end: usize) -> Diagnostic {
    let message = if end == 0 {
        "the reply began inside reasoning (the prompt opened it) and never closed it: all of it is hidden"
    } else {
        "reasoning block is never closed: everything after it is hidden"
    };
    Diagnostic::new(DiagnosticKind::UnclosedReasoning, message, Span::new(start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        let cases = [
            ("a<think>x</think>b", "ab"),
            ("a< / THINKING >x", "ax"),
            ("a<Thinking mode=\"x\">y</THINK>b", "ab"),
            ("a<thinker>b", "a<thinker>b"),
            ("a<think_x>b", "a<think_x>b"),
            ("a<think-x>b</think>c", "ac"),
            ("a<think/>b", "ab"),
            ("a<think />b", "ab"),
            ("a</think>b", "ab"),
            ("a<think><think>x</think>y", "a"),
            ("a<think><think>x</think>y</thinking>z", "az"),
            ("a<think", "a<think"),
            ("a<think <think>b</think>c", "ac"),
        ];
        for (text, visible) in cases {
            assert_eq!(cut(text), visible, "{text:?}");
        }
    }

    #[test]
    fn a_text_the_rule_cuts_holds_a_think_tag() {
        let cut_by_the_rule = [
            "a<think>x</think>b",
            "a< / THINKING >x",
            "a<Thinking mode=\"x\">y</THINK>b",
            "a<think-x>b</think>c",
            "a<think />b",
            "a</think>b",
            "a<\u{b}think>b",
            "a<\u{c}/\u{b}think>b",
        ];
        for text in cut_by_the_rule {
            assert_ne!(cut(text), text, "{text:?}");
            assert!(holds_think_tag(text), "{text:?}");
        }
        for text in
            ["a<thinker>b", "a<think_x>b", "a<thinkTime>b", "a<th>b", "a<tool_call>b", "a < b", "<", ""]
        {
            assert_eq!(cut(text), text, "{text:?}");
            assert!(!holds_think_tag(text), "{text:?}");
        }
        // A head at the end is no tag yet; in a written call more text follows it.
        assert!(holds_think_tag("a<think"));
    }

    #[test]
    fn near_misses_are_ruled_out_early_and_the_rest_waits() {
        assert_eq!(
            cut("a<tool_call>b<<<[TOOL_REQUEST]>>>c<|x|>d<th>e"),
            "a<tool_call>b<<<[TOOL_REQUEST]>>>c<|x|>d<th>e"
        );
        assert_eq!(cut("a<<<think>b</think>c"), "a<<c", "in a run of `<` the last one opens");
        assert_eq!(cut("a< / tHiNkInG x>b"), "ab", "an unpaired closing tag hides itself");
        // Streamed: a head cut after `<th` is held back until it is decided.
        let mut filter = ReasoningFilter::default();
        let mut pieces = Vec::new();
        filter.advance("ab<th", 0, false, &mut |p| pieces.push(p));
        assert_eq!((pieces.as_slice(), filter.decided()), ([Piece::Visible(0, 2)].as_slice(), 2));
        filter.advance("<think>x", 2, true, &mut |p| pieces.push(p));
        assert_eq!(pieces, [Piece::Visible(0, 2), Piece::Hidden]);
    }

    #[test]
    fn unclosed_reports_the_outermost_tag() {
        let (pieces, unclosed) = pieces("x<think>a<think>b</think>");
        assert_eq!(unclosed, Some((1, 8)));
        // Visible up to the tag; hidden from there to the end.
        assert_eq!(pieces, vec![Piece::Visible(0, 1), Piece::Hidden]);
    }

    #[test]
    fn runs_of_angle_brackets() {
        for n in [0, 1, 15, 16, 17, 33, 100] {
            let run = "<".repeat(n);
            assert_eq!(cut(&format!("a{run}<think>b</think>c")), format!("a{run}c"));
            assert_eq!(cut(&format!("a{run}< / Think>b")), format!("a{run}b"));
        }
    }

    #[test]
    fn candidates_are_found_from_their_think() {
        let bytes = b"<b>x</b> <thinker <//think < /\tTHINK a<thin";
        let found: Vec<usize> = {
            let mut from = 0;
            std::iter::from_fn(|| {
                let lt = next_candidate(bytes, from, false)?;
                from = lt + 1;
                Some(lt)
            })
            .collect()
        };
        assert_eq!(found, [9, 27, 38]);
        assert_eq!(next_candidate(bytes, 0, true), Some(9));
        assert_eq!(next_candidate(bytes, 39, false), None, "the search never looks back past `from`");
        assert_eq!(next_candidate(b"x< /", 0, false), Some(1));
        assert_eq!(next_candidate(b"x< /", 0, true), None);
        assert_eq!(next_candidate(b"x<thinx", 0, false), None);
    }

    #[test]
    fn both_searches_find_every_think() {
        // Texts built from fragments, long enough for the vectorized search and, near
        // their ends, short enough for the `k` search; every start is compared with a
        // plain scan.
        let fragments = [
            "think", "THINK", "tHiNk", "hink", "HINK", "thin", "k", "K", "nk", "Nk", "t", "<", " ", "xx",
            "我", "tthink",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut long = 0;
        for _ in 0..300 {
            let mut text = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for j in 0..(seed % 60) {
                let pick = (seed >> (j % 50)) as usize ^ j as usize;
                text.extend_from_slice(fragments[pick % fragments.len()].as_bytes());
            }
            long += usize::from(text.len() > LONG_SEARCH + 5);
            for at in 0..=text.len() + 1 {
                let plain = (at..text.len())
                    .find(|&t| text.get(t..t + 5).is_some_and(|word| word.eq_ignore_ascii_case(b"think")));
                assert_eq!(next_think(&text, at), plain, "{:?} from {at}", String::from_utf8_lossy(&text));
            }
        }
        assert!(long > 100, "the vectorized search ran on {long} texts");
    }

    #[test]
    fn stretches_end_and_resume_around_reasoning() {
        use std::ops::ControlFlow;
        let text = "ab<think>x</think>cd<think>y";
        let mut stretches = VisibleStretches::new(true, false, None);
        let mut changes = Vec::new();
        // Streamed in two pieces: the second resumes where the first was decided.
        let cut = 5;
        let flow = stretches.advance::<()>(&text[..cut], 0, false, |c| {
            changes.push(c);
            ControlFlow::Continue(())
        });
        assert!(flow.is_continue());
        assert_eq!((changes.as_slice(), stretches.visible_to(), stretches.decided()), (&[][..], 2, 2));
        let from = stretches.decided();
        let _ = stretches.advance::<()>(&text[from..], from, true, |c| {
            changes.push(c);
            ControlFlow::Continue(())
        });
        assert_eq!(changes, [Change::StretchEnds(2), Change::StretchResumes(18), Change::StretchEnds(20)]);
        assert!(stretches.hidden());
        assert_eq!(stretches.unclosed(), Some((20, 27)));
        // A reader that stops at the first end of a stretch leaves the rest unread.
        let mut stretches = VisibleStretches::new(true, false, None);
        let flow = stretches.advance(text, 0, true, |c| match c {
            Change::StretchEnds(at) => ControlFlow::Break(at),
            Change::StretchResumes(_) => ControlFlow::Continue(()),
        });
        assert_eq!((flow, stretches.hidden()), (ControlFlow::Break(2), false));
        // Text without `<` that arrives after all-visible text is visible as it is;
        // a held-back head or hidden text is not.
        let mut stretches = VisibleStretches::new(true, false, None);
        let _ = stretches.advance::<()>("ab", 0, false, |_| ControlFlow::Continue(()));
        assert!(stretches.all_visible(2));
        assert!(!stretches.all_visible(3), "nothing is classified past 2");
        stretches.pass_visible(5);
        assert!(stretches.all_visible(5) && !stretches.all_visible(2));
        let _ = stretches.advance::<()>("<th", 5, false, |_| ControlFlow::Continue(()));
        assert!(!stretches.all_visible(5) && !stretches.all_visible(8), "a head is held back");
        let _ = stretches.advance::<()>("<think>x", 5, false, |_| ControlFlow::Continue(()));
        assert!(!stretches.all_visible(13), "inside reasoning");
        // Reasoning read as text: nothing is classified or said.
        let mut plain = VisibleStretches::new(false, false, None);
        assert!(!plain.hides());
        let flow = plain.advance::<()>(text, 0, true, |_| panic!("no change without hiding"));
        assert!(flow.is_continue() && plain.all_visible(text.len()));
    }

    #[test]
    fn many_candidates_without_closing_bracket_is_linear() {
        let text = "<think ".repeat(100_000);
        let (pieces, _) = pieces(&text);
        assert_eq!(pieces, vec![Piece::Visible(0, text.len())]);
    }
}
