//! Backtick code fences, for `skip_fenced`.
//!
//! Lines end at `\n` (a `\r` before it is ignored). A fence opens at a line of up to 3
//! spaces and 3 or more backticks, optionally followed by an info string without
//! backticks, and closes at a line of up to 3 spaces and at least as many backticks,
//! then only spaces or tabs. An unclosed fence runs to the end. The opening and closing
//! lines belong to the fence.
//!
//! [`Fences`] reads the text as it arrives, byte by byte through a small line
//! automaton, so it never needs a line's text again: a START marker on the line being
//! written is undecided only while that line could still be a fence's opening line.

use memchr::{memchr, memchr2};

/// Where the current line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Leading spaces (this many).
    Indent(u8),
    /// The run of backticks.
    Ticks,
    /// After the backticks.
    Rest,
    /// The line can neither open nor close a fence.
    Dead,
}

/// The line automaton's state.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    phase: Phase,
    ticks: usize,
    /// A backtick after the run (no opening line then).
    rest_backtick: bool,
    /// Only spaces and tabs after the run (a closing line then).
    rest_blank: bool,
    /// A `\r` waiting for the next byte: before `\n` it is ignored.
    cr: bool,
}

impl Line {
    fn new(start: usize) -> Self {
        Line { start, phase: Phase::Indent(0), ticks: 0, rest_backtick: false, rest_blank: true, cr: false }
    }

    fn byte(&mut self, b: u8) {
        match self.phase {
            Phase::Indent(n) if b == b' ' => {
                self.phase = if n >= 3 { Phase::Dead } else { Phase::Indent(n + 1) }
            }
            Phase::Indent(_) | Phase::Ticks if b == b'`' => {
                self.phase = Phase::Ticks;
                self.ticks += 1;
            }
            Phase::Indent(_) => self.phase = Phase::Dead,
            Phase::Ticks | Phase::Rest => {
                self.phase = Phase::Rest;
                self.rest_backtick |= b == b'`';
                self.rest_blank &= b == b' ' || b == b'\t';
            }
            Phase::Dead => {}
        }
    }

    fn opening(&self) -> Option<usize> {
        (matches!(self.phase, Phase::Ticks | Phase::Rest) && self.ticks >= 3 && !self.rest_backtick)
            .then_some(self.ticks)
    }

    fn closes(&self, open_ticks: usize) -> bool {
        matches!(self.phase, Phase::Ticks | Phase::Rest) && self.ticks >= open_ticks && self.rest_blank
    }
}

/// The fenced ranges of a text, found as it arrives. Offsets are relative to the
/// text's current window (see [`rebase`](Self::rebase)).
#[derive(Debug)]
pub(crate) struct Fences {
    /// Closed fences, ascending.
    ranges: Vec<(usize, usize)>,
    /// The open fence: its start and its number of backticks.
    open: Option<(usize, usize)>,
    line: Line,
    /// Bytes read so far.
    fed: usize,
    ended: bool,
}

impl Default for Fences {
    fn default() -> Self {
        Fences { ranges: Vec::new(), open: None, line: Line::new(0), fed: 0, ended: false }
    }
}

impl Fences {
    /// Finds the fences in a whole text.
    pub(crate) fn find(text: &str) -> Self {
        let mut fences = Fences::default();
        fences.feed(text.as_bytes());
        fences.end(text.len());
        fences
    }

    /// The fenced ranges found, ascending.
    pub(crate) fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges
    }

    /// Reads `window[fed..]`: the text that arrived since the last call.
    pub(crate) fn feed(&mut self, window: &[u8]) {
        let mut i = self.fed;
        while let Some(&b) = window.get(i) {
            if self.line.cr {
                self.line.cr = false;
                if b != b'\n' {
                    self.line.byte(b'\r');
                }
            }
            match b {
                b'\n' => self.end_line(i, i + 1),
                b'\r' => self.line.cr = true,
                _ => self.line.byte(b),
            }
            i += 1;
            if self.line.cr {
                continue;
            }
            // Skip bytes that cannot change the line's fate.
            let line = &self.line;
            let rest = window.get(i..).unwrap_or_default();
            let skip = match line.phase {
                Phase::Dead => Some(memchr(b'\n', rest)),
                Phase::Rest if !line.rest_blank && line.rest_backtick => Some(memchr(b'\n', rest)),
                Phase::Rest if !line.rest_blank => Some(memchr2(b'\n', b'`', rest)),
                _ => None,
            };
            if let Some(found) = skip {
                i += found.unwrap_or(rest.len());
            }
        }
        self.fed = window.len().max(self.fed);
    }

    /// A line ended at `at` (its `\n`, or the end of the text); the next starts at `next`.
    fn end_line(&mut self, at: usize, next: usize) {
        match self.open {
            Some((start, ticks)) => {
                if self.line.closes(ticks) {
                    self.ranges.push((start, at));
                    self.open = None;
                }
            }
            None => self.open = self.line.opening().map(|ticks| (self.line.start, ticks)),
        }
        self.line = Line::new(next);
    }

    /// The text ended at `len` (all of it fed).
    pub(crate) fn end(&mut self, len: usize) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.line.cr = false;
        self.end_line(len, len);
        if let Some((start, _)) = self.open.take() {
            self.ranges.push((start, len));
        }
    }

    /// Whether byte `pos` (already fed) stands inside a fence, or `None` while that is
    /// not decided: `pos` is on the line being written, and the line may still turn out
    /// to open a fence.
    pub(crate) fn contains(&self, pos: usize) -> Option<bool> {
        let i = self.ranges.partition_point(|&(start, _)| start <= pos);
        if i.checked_sub(1).and_then(|i| self.ranges.get(i)).is_some_and(|&(_, end)| pos < end) {
            return Some(true);
        }
        if self.open.is_some_and(|(start, _)| start <= pos) {
            return Some(true);
        }
        if !self.ended && pos >= self.line.start && self.line.opening().is_some() {
            return None;
        }
        Some(false)
    }

    /// The window dropped its first `cut` bytes: shift every offset.
    pub(crate) fn rebase(&mut self, cut: usize) {
        self.ranges.retain(|&(_, end)| end > cut);
        for (start, end) in &mut self.ranges {
            *start = start.saturating_sub(cut);
            *end -= cut;
        }
        if let Some((start, _)) = &mut self.open {
            *start = start.saturating_sub(cut);
        }
        self.line.start = self.line.start.saturating_sub(cut);
        self.fed = self.fed.saturating_sub(cut);
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fences() {
        let t = "a\n```rust\nX\n```\nY\n   ````\nZ\n```\nW\n````  \nV";
        let f = Fences::find(t);
        let at = |c: char| f.contains(t.find(c).unwrap());
        assert_eq!(at('X'), Some(true));
        assert_eq!(at('Y'), Some(false));
        assert_eq!(at('Z'), Some(true));
        assert_eq!(at('W'), Some(true));
        assert_eq!(at('V'), Some(false));
    }

    #[test]
    fn not_fences() {
        for t in ["    ```\nX", "~~~\nX", "``\nX", "```a`b\nX"] {
            assert_eq!(Fences::find(t).contains(t.find('X').unwrap()), Some(false), "{t:?}");
        }
        let unclosed = "```\nX\n``` no\nY";
        assert_eq!(Fences::find(unclosed).contains(unclosed.find('Y').unwrap()), Some(true));
        let crlf = "```\r\nX\r\n```\r\nY";
        assert_eq!(Fences::find(crlf).contains(crlf.find('Y').unwrap()), Some(false));
    }

    #[test]
    fn fed_in_pieces_matches_whole() {
        let t = "x\n  ```rust\nA\n```\r\nB\n```` a`b\nC\n````\nD\r\n```\r\nE";
        let whole = Fences::find(t);
        for step in 1..=5 {
            let mut f = Fences::default();
            let mut to = 0;
            while to < t.len() {
                to = (to + step).min(t.len());
                f.feed(&t.as_bytes()[..to]);
            }
            f.end(t.len());
            for pos in 0..t.len() {
                assert_eq!(f.contains(pos), whole.contains(pos), "step {step} pos {pos}");
            }
        }
    }

    #[test]
    fn a_line_that_may_open_a_fence_is_undecided() {
        let mut f = Fences::default();
        f.feed(b"``` <<<");
        assert_eq!(f.contains(4), None);
        f.feed(b"``` <<< `");
        assert_eq!(f.contains(4), Some(false));
    }
}
