//! Finding START and END markers (spec §1, §3).
//!
//! Exact markers are found with a SIMD substring search; fuzzy ones by searching `<[`
//! and reading the bracket runs around it. A candidate is rejected when it is a
//! mention (a backtick right before it), when hidden reasoning splits it, and — for
//! START with `skip_fenced` — when it stands in a code fence.

use memchr::memmem;

use super::fence::Fences;
use super::source::Source;

pub(crate) const START: &str = "<<<[TOOL_REQUEST]>>>";
pub(crate) const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// START or END.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerKind {
    Start,
    End,
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

/// Searches one cleaned text for markers.
pub(crate) struct MarkerFinder<'s> {
    src: &'s Source<'s>,
    fuzzy: bool,
    fences: Option<Fences>,
    exact_start: memmem::Finder<'static>,
    any_exact: memmem::Finder<'static>,
    any_fuzzy: memmem::Finder<'static>,
}

/// `text` without `prefix`, compared ignoring ASCII case.
pub(crate) fn strip_prefix_ignore_ascii_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.as_bytes().get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix.as_bytes()) { text.get(prefix.len()..) } else { None }
}

impl<'s> MarkerFinder<'s> {
    pub(crate) fn new(src: &'s Source<'s>, fuzzy: bool, skip_fenced: bool) -> Self {
        MarkerFinder {
            src,
            fuzzy,
            fences: skip_fenced.then(|| Fences::find(src.text())),
            exact_start: memmem::Finder::new(START.as_bytes()),
            any_exact: memmem::Finder::new(b"<<<["),
            any_fuzzy: memmem::Finder::new(b"<["),
        }
    }

    fn is_mention(&self, start: usize) -> bool {
        start > 0 && self.src.text().as_bytes().get(start - 1) == Some(&b'`') && !self.src.is_break(start)
    }

    fn fenced(&self, kind: MarkerKind, start: usize) -> bool {
        kind == MarkerKind::Start && self.fences.as_ref().is_some_and(|f| f.contains(start))
    }

    /// The next START marker at or after `from` (END markers outside blocks are prose).
    /// Fenced STARTs are returned with `fenced` set, so the caller can report them.
    pub(crate) fn next_start(&self, from: usize) -> Option<Marker> {
        if self.fuzzy {
            return self.next_fuzzy(from, false);
        }
        let bytes = self.src.text().as_bytes();
        let mut at = from;
        while let Some(i) = bytes.get(at..).and_then(|b| self.exact_start.find(b)) {
            let start = at + i;
            let end = start + START.len();
            at = start + 1;
            if self.is_mention(start) || self.src.crosses_break(start, end) {
                continue;
            }
            return Some(Marker {
                kind: MarkerKind::Start,
                start,
                end,
                fenced: self.fenced(MarkerKind::Start, start),
            });
        }
        None
    }

    /// The next START or END marker at or after `from` that ends a block's field list.
    /// Fenced STARTs are skipped: inside a block they are content.
    pub(crate) fn next_boundary(&self, from: usize) -> Option<Marker> {
        if self.fuzzy {
            return self.next_fuzzy(from, true);
        }
        let text = self.src.text();
        let bytes = text.as_bytes();
        let mut at = from;
        while let Some(i) = bytes.get(at..).and_then(|b| self.any_exact.find(b)) {
            let start = at + i;
            at = start + 1;
            let rest = text.get(start..).unwrap_or("");
            let (kind, len) = if rest.starts_with(START) {
                (MarkerKind::Start, START.len())
            } else if rest.starts_with(END) {
                (MarkerKind::End, END.len())
            } else {
                continue;
            };
            let end = start + len;
            if self.is_mention(start) || self.src.crosses_break(start, end) || self.fenced(kind, start) {
                continue;
            }
            return Some(Marker { kind, start, end, fenced: false });
        }
        None
    }

    /// Fuzzy markers: `<{2,4}\[(END_)?TOOL_REQUEST\]>{2,4}`, any case, starting at the
    /// first `<` of its run.
    fn next_fuzzy(&self, from: usize, want_end: bool) -> Option<Marker> {
        let text = self.src.text();
        let bytes = text.as_bytes();
        let mut at = from;
        while let Some(i) = bytes.get(at..).and_then(|b| self.any_fuzzy.find(b)) {
            let bracket = at + i + 1;
            at = bracket;
            // The run of `<` before `[`, not reaching across hidden text.
            let mut run_start = bracket;
            while run_start > 0 && bytes.get(run_start - 1) == Some(&b'<') && !self.src.is_break(run_start) {
                run_start -= 1;
            }
            let lts = bracket - run_start;
            if !(2..=4).contains(&lts) || run_start < from {
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
                continue;
            };
            if kind == MarkerKind::End && !want_end {
                continue;
            }
            let gts_at = text.len() - rest.len();
            let mut gts = 0;
            while gts < 4 && bytes.get(gts_at + gts) == Some(&b'>') && !self.src.is_break(gts_at + gts) {
                gts += 1;
            }
            if gts < 2 {
                continue;
            }
            let end = gts_at + gts;
            if self.is_mention(run_start) || self.src.crosses_break(run_start, end) {
                continue;
            }
            let fenced = self.fenced(kind, run_start);
            if fenced && want_end {
                continue;
            }
            return Some(Marker { kind, start: run_start, end, fenced });
        }
        None
    }
}
