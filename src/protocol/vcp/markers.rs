//! Finding START and END markers, exact or fuzzy, and telling mentions and fenced
//! markers apart.
//!
//! Exact markers are found with a SIMD substring search; fuzzy ones by searching `<[`
//! and reading the bracket runs around it. A candidate is rejected when it is a
//! mention (a backtick right before it), when hidden reasoning splits it, and — for
//! START with `skip_fenced` — when it stands in a code fence.
//!
//! While the text is still arriving (`last == false`), a candidate that the next bytes
//! could still make or unmake (`<<<[TOOL_RE` at the end, a fuzzy `>>` run at the end, a
//! START on a line that may yet open a fence) is reported as undecided, so that nothing
//! after it is read as settled.

use memchr::memmem;

use super::fence::Fences;
use super::visible::VisibleText;

pub(crate) const START: &str = "<<<[TOOL_REQUEST]>>>";
pub(crate) const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// START or END.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerKind {
    Start,
    End,
}

/// Which markers a search is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// START markers, in prose (END markers there are prose). Fenced STARTs are returned
    /// with `fenced` set, so the caller can report them.
    Start,
    /// The START or END marker that ends a block's field list. Fenced STARTs are
    /// skipped: inside a block they are content.
    Boundary,
}

/// A marker found in the cleaned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    pub(crate) kind: MarkerKind,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// A START inside a code fence while `skip_fenced` is on: not a marker.
    pub(crate) fenced: bool,
}

/// What a search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Search {
    /// A decided marker.
    Found(Marker),
    /// No marker starts before this offset, but one may start here once more text
    /// arrives.
    Undecided(usize),
    /// No marker starts before this offset (the end of the text when it is complete).
    NotBefore(usize),
}

/// An exact marker being written at the end of the text: how many of its bytes are
/// there, and which markers they can still become. Until the next bytes unmake it or
/// complete one of its markers, nothing after its `<` is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    len: usize,
    start: bool,
    end: bool,
}

impl Candidate {
    /// Takes the next bytes of the text; `false` as soon as they decide the candidate
    /// (it can no longer become a marker, or one of its markers is complete).
    #[inline]
    pub(crate) fn take(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            self.start &= START.as_bytes().get(self.len) == Some(&byte);
            self.end &= END.as_bytes().get(self.len) == Some(&byte);
            self.len += 1;
            let complete = (self.start && self.len == START.len()) || (self.end && self.len == END.len());
            if complete || !(self.start || self.end) {
                return false;
            }
        }
        true
    }
}

/// Searches cleaned text for markers.
#[derive(Debug)]
pub(crate) struct MarkerFinder {
    fuzzy: bool,
    skip_fenced: bool,
    exact_start: memmem::Finder<'static>,
    any_exact: memmem::Finder<'static>,
    any_fuzzy: memmem::Finder<'static>,
}

/// `text` without `prefix`, compared ignoring ASCII case.
pub(crate) fn strip_prefix_ignore_ascii_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.as_bytes().get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix.as_bytes()) { text.get(prefix.len()..) } else { None }
}

/// Whether `text` is shorter than `word` and could still become it (ASCII case ignored
/// when `fold`).
pub(crate) fn could_become(text: &str, word: &str, fold: bool) -> bool {
    text.len() < word.len()
        && word.as_bytes().get(..text.len()).is_some_and(|w| {
            if fold { w.eq_ignore_ascii_case(text.as_bytes()) } else { w == text.as_bytes() }
        })
}

/// The largest char boundary of `text` at or below `pos`.
pub(crate) fn floor_boundary(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

impl MarkerFinder {
    pub(crate) fn new(fuzzy: bool, skip_fenced: bool) -> Self {
        MarkerFinder {
            fuzzy,
            skip_fenced,
            exact_start: memmem::Finder::new(START.as_bytes()).into_owned(),
            any_exact: memmem::Finder::new(b"<<<[").into_owned(),
            any_fuzzy: memmem::Finder::new(b"<[").into_owned(),
        }
    }

    fn is_mention(src: &VisibleText<'_>, start: usize) -> bool {
        start > 0 && src.text().as_bytes().get(start - 1) == Some(&b'`') && !src.is_break(start)
    }

    /// Whether a START at `start` is fenced; `None` while undecided.
    fn fenced(&self, fences: Option<&Fences>, kind: MarkerKind, start: usize) -> Option<bool> {
        if kind != MarkerKind::Start || !self.skip_fenced {
            return Some(false);
        }
        fences.map_or(Some(false), |f| f.contains(start))
    }

    /// Where a search that found nothing resumes: the last bytes may begin a marker.
    /// With `words`, only a `<` from which the rest of the text could still become one
    /// of them is held back; without, any `<` of the last `keep` bytes.
    fn resume(text: &str, from: usize, last: bool, keep: usize, words: &[&str]) -> Search {
        if last {
            return Search::NotBefore(text.len());
        }
        let tail = floor_boundary(text, text.len().saturating_sub(keep)).max(from);
        let bytes = text.as_bytes().get(tail..).unwrap_or_default();
        let hold = memchr::memchr_iter(b'<', bytes).map(|i| tail + i).find(|&p| {
            words.is_empty() || {
                let rest = text.get(p..).unwrap_or("");
                words.iter().any(|w| could_become(rest, w, false))
            }
        });
        Search::NotBefore(hold.unwrap_or(text.len()))
    }

    /// The exact marker candidate held back at `hold`, if only exact markers are in
    /// play: `None` when any byte may decide (fuzzy markers, fences), or when the text
    /// from `hold` can no longer become START (nor END, with `end`).
    pub(crate) fn candidate(&self, src: &VisibleText<'_>, hold: usize, end: bool) -> Option<Candidate> {
        if self.fuzzy || self.skip_fenced || src.next_break_after(hold).is_some() {
            return None;
        }
        let rest = src.text().get(hold..).filter(|rest| !rest.is_empty())?;
        let candidate = Candidate {
            len: rest.len(),
            start: could_become(rest, START, false),
            end: end && could_become(rest, END, false),
        };
        (candidate.start || candidate.end).then_some(candidate)
    }

    /// The next marker `wanted` at or after `from`. `origin` is where this search began
    /// (a fuzzy marker's `<` run may not begin before it).
    pub(crate) fn find(
        &self,
        wanted: Wanted,
        src: &VisibleText<'_>,
        fences: Option<&Fences>,
        origin: usize,
        from: usize,
        last: bool,
    ) -> Search {
        match (self.fuzzy, wanted) {
            (true, _) => self.next_fuzzy(src, fences, origin, from, wanted == Wanted::Boundary, last),
            // One search, compiled for each use: the checks of the other stay out of it.
            (false, Wanted::Start) => self.next_exact::<false>(src, fences, from, last),
            (false, Wanted::Boundary) => self.next_exact::<true>(src, fences, from, last),
        }
    }

    /// Exact markers: START, and END too when `WANT_END` (the search for a block's
    /// boundary).
    fn next_exact<const WANT_END: bool>(
        &self,
        src: &VisibleText<'_>,
        fences: Option<&Fences>,
        from: usize,
        last: bool,
    ) -> Search {
        let text = src.text();
        let bytes = text.as_bytes();
        // Every marker begins with `<`: no marker can start before the first one.
        let Some(first) = bytes.get(from..).and_then(|rest| memchr::memchr(b'<', rest)) else {
            // Nothing that could begin a marker (the common case for a short stretch of
            // new text in a block): skip the substring searcher's set-up. (The text ends
            // with no `<`, so none is held back either.)
            return Search::NotBefore(text.len());
        };
        // In prose only START matters, and its searcher finds nothing else.
        let (searcher, needle) =
            if WANT_END { (&self.any_exact, "<<<[") } else { (&self.exact_start, START) };
        let mut at = from + first;
        // The next occurrence of the needle from `at`: one comparison when it stands
        // right there (the next marker of a request-dense reply, found by the `memchr`
        // above), else the substring searcher.
        let next = |at: usize| {
            let rest = bytes.get(at..)?;
            if rest.starts_with(needle.as_bytes()) { Some(0) } else { searcher.find(rest) }
        };
        while let Some(i) = next(at) {
            let start = at + i;
            at = start + 1;
            let rest = text.get(start..).unwrap_or("");
            // (Without END, the searcher finds whole STARTs only.)
            let (kind, len) = if !WANT_END || rest.starts_with(START) {
                (MarkerKind::Start, START.len())
            } else if WANT_END && rest.starts_with(END) {
                (MarkerKind::End, END.len())
            } else {
                if !last && (could_become(rest, START, false) || WANT_END && could_become(rest, END, false)) {
                    return Search::Undecided(start);
                }
                continue;
            };
            let end = start + len;
            if Self::is_mention(src, start) || src.crosses_break(start, end) {
                continue;
            }
            match self.fenced(fences, kind, start) {
                // Inside a block a fenced START is content.
                Some(true) if WANT_END => continue,
                Some(fenced) => return Search::Found(Marker { kind, start, end, fenced }),
                None => return Search::Undecided(start),
            }
        }
        // A `<` that could still become one of the words is among the last bytes, fewer
        // than END (the longer marker) has.
        let words: &[&str] = if WANT_END { &[START, END] } else { &[START] };
        Self::resume(text, at.max(from), last, END.len() - 1, words)
    }

    /// Fuzzy markers: `<{2,4}\[(END_)?TOOL_REQUEST\]>{2,4}`, any case, starting at the
    /// first `<` of its run.
    fn next_fuzzy(
        &self,
        src: &VisibleText<'_>,
        fences: Option<&Fences>,
        origin: usize,
        from: usize,
        want_end: bool,
        last: bool,
    ) -> Search {
        const LONGEST: usize = 4 + "[END_TOOL_REQUEST]".len() + 4;
        let text = src.text();
        let bytes = text.as_bytes();
        let mut at = from;
        while let Some(i) = bytes.get(at..).and_then(|b| self.any_fuzzy.find(b)) {
            let bracket = at + i + 1;
            at = bracket;
            // The run of `<` before `[`, not reaching across hidden text.
            let mut run_start = bracket;
            while run_start > 0 && bytes.get(run_start - 1) == Some(&b'<') && !src.is_break(run_start) {
                run_start -= 1;
            }
            let lts = bracket - run_start;
            if !(2..=4).contains(&lts) || run_start < origin {
                continue;
            }
            let after_bracket = text.get(bracket + 1..).unwrap_or("");
            let (kind, rest) = if let Some(rest) =
                strip_prefix_ignore_ascii_case(after_bracket, "TOOL_REQUEST]")
            {
                (MarkerKind::Start, rest)
            } else if let Some(rest) = strip_prefix_ignore_ascii_case(after_bracket, "END_TOOL_REQUEST]") {
                (MarkerKind::End, rest)
            } else {
                if !last
                    && (could_become(after_bracket, "TOOL_REQUEST]", true)
                        || want_end && could_become(after_bracket, "END_TOOL_REQUEST]", true))
                {
                    return Search::Undecided(run_start);
                }
                continue;
            };
            if kind == MarkerKind::End && !want_end {
                continue;
            }
            let gts_at = text.len() - rest.len();
            let mut gts = 0;
            while gts < 4 {
                let p = gts_at + gts;
                if src.is_break(p) {
                    break;
                }
                match bytes.get(p) {
                    Some(b'>') => gts += 1,
                    Some(_) => break,
                    None if last => break,
                    // More `>` may follow.
                    None => return Search::Undecided(run_start),
                }
            }
            if gts < 2 {
                continue;
            }
            let end = gts_at + gts;
            if Self::is_mention(src, run_start) || src.crosses_break(run_start, end) {
                continue;
            }
            let Some(fenced) = self.fenced(fences, kind, run_start) else {
                return Search::Undecided(run_start);
            };
            if fenced && want_end {
                continue;
            }
            return Search::Found(Marker { kind, start: run_start, end, fenced });
        }
        Self::resume(text, at.max(from), last, LONGEST, &[])
    }
}
