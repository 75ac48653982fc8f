//! The text the VCP grammar reads: the input with reasoning cut out, plus the map back.
//!
//! Cutting reasoning out leaves *breaks*: places where hidden text stood. A break is
//! never part of a marker, value marker or key; it reads as white space between a key,
//! its separator and its value opener, and vanishes inside a value. When the
//! input has no reasoning the text is borrowed as is and every lookup is trivial.

use std::borrow::Cow;

use crate::protocol::reasoning::Piece;

/// The cleaned text with break positions and a map back to input offsets.
#[derive(Debug)]
pub(crate) struct VisibleText<'a> {
    text: Cow<'a, str>,
    /// `(cleaned_start, original_start)` of each visible segment, ascending. Empty
    /// when nothing was cut (offsets are then the same in both texts).
    segments: Vec<(usize, usize)>,
    /// Cleaned offsets where hidden text was removed, ascending, without repeats.
    breaks: Vec<usize>,
    /// The cleaned text is known to hold no `\r`: checked once for a whole text (one
    /// SIMD search), never claimed for a growing one. Values then need no search for
    /// `\r\n` each (see [`normalize`](super::fields::normalize)).
    cr_free: bool,
}

impl<'a> VisibleText<'a> {
    /// The input as is.
    pub(crate) fn unchanged(text: &'a str) -> Self {
        VisibleText { text: Cow::Borrowed(text), segments: Vec::new(), breaks: Vec::new(), cr_free: false }
            .checked_for_cr()
    }

    /// Records whether the (whole) text holds no `\r`.
    fn checked_for_cr(mut self) -> Self {
        self.cr_free = memchr::memchr(b'\r', self.text.as_bytes()).is_none();
        self
    }

    /// The input as the reasoning filter classified it (`pieces`, in order, covering
    /// all of `text`): borrowed as is when nothing is hidden.
    pub(crate) fn from_pieces(text: &'a str, pieces: &[Piece]) -> Self {
        if !pieces.contains(&Piece::Hidden) {
            return Self::unchanged(text);
        }
        // The visible text is never longer than the input: one allocation.
        let mut src = VisibleText {
            text: Cow::Owned(String::with_capacity(text.len())),
            segments: Vec::with_capacity(pieces.len()),
            breaks: Vec::with_capacity(pieces.len()),
            cr_free: false,
        };
        for &piece in pieces {
            src.push_piece(piece, text, 0);
        }
        if src.segments.is_empty() {
            // Everything was hidden: a single empty segment keeps the map total.
            src.segments.push((0, text.len()));
        }
        src.checked_for_cr()
    }

    /// An empty text to be filled as it arrives ([`push_visible`](Self::push_visible),
    /// [`push_break`](Self::push_break)).
    pub(crate) fn growing() -> Self {
        VisibleText {
            text: Cow::Owned(String::new()),
            segments: Vec::new(),
            breaks: Vec::new(),
            cr_free: false,
        }
    }

    /// Applies what the reasoning filter decided: `raw` is the input from offset `base`.
    pub(crate) fn push_piece(&mut self, piece: Piece, raw: &str, base: usize) {
        match piece {
            Piece::Visible(start, end) => {
                self.push_visible(raw.get(start - base..end - base).unwrap_or(""), start);
            }
            Piece::Hidden => self.push_break(),
        }
    }

    /// Appends `visible`, which stands at input offset `original_start`.
    pub(crate) fn push_visible(&mut self, visible: &str, original_start: usize) {
        if visible.is_empty() {
            return;
        }
        // (False from the start for a growing text: no search then.)
        self.cr_free = self.cr_free && !visible.as_bytes().contains(&b'\r');
        let at = self.text.len();
        let continues =
            self.segments.last().is_some_and(|&(c, o)| o + (at - c) == original_start) && !self.is_break(at);
        if !continues {
            self.segments.push((at, original_start));
        }
        let text = self.text.to_mut();
        let mut chars = visible.chars();
        match (chars.next(), chars.next()) {
            // One character (a byte-by-byte stream): no `memcpy` call.
            (Some(c), None) => text.push(c),
            _ => text.push_str(visible),
        }
    }

    /// Records that hidden text stands at the current end.
    pub(crate) fn push_break(&mut self) {
        let at = self.text.len();
        if self.breaks.last() != Some(&at) {
            self.breaks.push(at);
        }
    }

    /// Drops the first `cut` bytes (a char boundary); every offset shifts down by `cut`.
    pub(crate) fn drop_front(&mut self, cut: usize) {
        if cut == 0 || !self.text.is_char_boundary(cut) {
            return;
        }
        self.text.to_mut().drain(..cut);
        let first = self.segments.partition_point(|&(c, _)| c <= cut).saturating_sub(1);
        self.segments.drain(..first);
        for (c, o) in &mut self.segments {
            if *c < cut {
                *o += cut - *c;
                *c = 0;
            } else {
                *c -= cut;
            }
        }
        let first_break = self.breaks.partition_point(|&b| b < cut);
        self.breaks.drain(..first_break);
        for b in &mut self.breaks {
            *b -= cut;
        }
    }

    /// Cleaned `start..end` as a slice of `input` (the text this one was made from)
    /// when it is one piece of it, else copied (the range crosses hidden text, or no
    /// input is given: a streaming window).
    // (Always inlined: a plain `#[inline]` left it a call, at about 40 instructions a
    // piece, several pieces a request.)
    #[inline(always)]
    pub(crate) fn piece<'i>(&self, input: Option<&'i str>, start: usize, end: usize) -> Cow<'i, str> {
        // The usual piece, of a text with nothing hidden, is borrowed here (no call): the
        // cleaned text is then the input (or, past the reply length limit, the part of it
        // that is read).
        if let (Some(input), true) = (input, self.segments.is_empty()) {
            debug_assert_eq!(
                input.get(start..end),
                self.text.get(start..end),
                "an unchanged text is the input"
            );
            if let Some(piece) = input.get(start..end.max(start)) {
                return Cow::Borrowed(piece);
            }
        }
        self.mapped_piece(input, start, end)
    }

    /// [`piece`](Self::piece) past its first case.
    fn mapped_piece<'i>(&self, input: Option<&'i str>, start: usize, end: usize) -> Cow<'i, str> {
        if let (Some(input), false) = (input, self.segments.is_empty()) {
            if start >= end {
                // An empty piece where hidden text was cut out: borrow it from before the
                // hidden text, where the range that holds it ends (see `original_end`).
                let at = self.original_end(start);
                if let Some(piece) = input.get(at..at) {
                    return Cow::Borrowed(piece);
                }
            } else if !self.crosses_break(start, end) {
                let from = self.original_start(start);
                if let Some(piece) = input.get(from..from + end.saturating_sub(start)) {
                    debug_assert_eq!(
                        Some(piece),
                        self.text.get(start..end),
                        "a piece maps back to the input"
                    );
                    return Cow::Borrowed(piece);
                }
            }
        }
        Cow::Owned(self.text.get(start..end).unwrap_or("").to_owned())
    }

    /// The cleaned text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether the cleaned text is known to hold no `\r` (`false`: it may).
    pub(crate) fn cr_free(&self) -> bool {
        self.cr_free
    }

    /// Whether hidden text stands at the end of the cleaned text.
    pub(crate) fn ends_with_break(&self) -> bool {
        self.breaks.last() == Some(&self.text.len())
    }

    /// Whether hidden text stood right before cleaned offset `pos`.
    #[inline]
    pub(crate) fn is_break(&self, pos: usize) -> bool {
        !self.breaks.is_empty() && self.breaks.binary_search(&pos).is_ok()
    }

    /// Whether a break lies strictly inside `start..end` (the range is then not one
    /// piece of text).
    #[inline]
    pub(crate) fn crosses_break(&self, start: usize, end: usize) -> bool {
        if self.breaks.is_empty() {
            return false;
        }
        let i = self.breaks.partition_point(|&b| b <= start);
        self.breaks.get(i).is_some_and(|&b| b < end)
    }

    /// The first break after `pos`, or `None`.
    #[inline]
    pub(crate) fn next_break_after(&self, pos: usize) -> Option<usize> {
        let i = self.breaks.partition_point(|&b| b <= pos);
        self.breaks.get(i).copied()
    }

    /// Input offset of cleaned offset `pos`, read as the start of a range (a break
    /// maps to the first visible byte after the hidden text).
    pub(crate) fn original_start(&self, pos: usize) -> usize {
        if self.segments.is_empty() {
            return pos;
        }
        let i = self.segments.partition_point(|&(c, _)| c <= pos);
        match i.checked_sub(1).and_then(|i| self.segments.get(i)) {
            Some(&(c, o)) => o + (pos - c),
            None => self.segments.first().map_or(pos, |&(_, o)| o),
        }
    }

    /// Input offset of cleaned offset `pos`, read as the (exclusive) end of a range (a
    /// break maps to the end of the visible text before the hidden text).
    pub(crate) fn original_end(&self, pos: usize) -> usize {
        if self.segments.is_empty() {
            return pos;
        }
        let i = self.segments.partition_point(|&(c, _)| c < pos);
        match i.checked_sub(1).and_then(|i| self.segments.get(i)) {
            Some(&(c, o)) => o + (pos - c),
            None => self.segments.first().map_or(pos, |&(_, o)| o),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ab<h>cd<h>e` with both `<h>` hidden.
    const AB_CD_E: [Piece; 5] =
        [Piece::Visible(0, 2), Piece::Hidden, Piece::Visible(5, 7), Piece::Hidden, Piece::Visible(10, 11)];

    #[test]
    fn maps_offsets_around_hidden_text() {
        let text = "ab<h>cd<h>e";
        let src = VisibleText::from_pieces(text, &AB_CD_E);
        assert_eq!(src.text(), "abcde");
        assert!(src.is_break(2) && src.is_break(4) && !src.is_break(3));
        assert!(src.crosses_break(1, 3) && !src.crosses_break(2, 4));
        assert_eq!(src.original_start(2), 5);
        assert_eq!(src.original_end(2), 2);
        assert_eq!(src.original_start(4), 10);
        assert_eq!(src.original_end(5), 11);
        assert_eq!(src.next_break_after(2), Some(4));
    }

    #[test]
    fn grows_and_drops_like_cutting_at_once() {
        let text = "ab<h>cd<h>e";
        let mut src = VisibleText::growing();
        src.push_visible("a", 0);
        src.push_visible("b", 1);
        src.push_break();
        src.push_visible("cd", 5);
        src.push_break();
        src.push_break();
        src.push_visible("e", 10);
        let whole = VisibleText::from_pieces(text, &AB_CD_E);
        assert_eq!(src.text(), whole.text());
        for pos in 0..=5 {
            assert_eq!(src.original_start(pos), whole.original_start(pos), "{pos}");
            assert_eq!(src.original_end(pos), whole.original_end(pos), "{pos}");
            assert_eq!(src.is_break(pos), whole.is_break(pos), "{pos}");
        }
        src.drop_front(3);
        assert_eq!(src.text(), "de");
        assert_eq!(src.original_start(0), 6);
        assert!(src.is_break(1));
        assert_eq!(src.original_start(1), 10);
        assert_eq!(src.original_end(1), 7);
    }

    #[test]
    fn leading_and_total_hiding() {
        let src = VisibleText::from_pieces("<h>abc", &[Piece::Hidden, Piece::Visible(3, 6)]);
        assert_eq!(src.text(), "abc");
        assert!(src.is_break(0));
        assert_eq!(src.original_start(0), 3);
        let all = VisibleText::from_pieces("<h>", &[Piece::Hidden]);
        assert_eq!(all.text(), "");
        assert_eq!(all.original_start(0), 3);
    }
}
