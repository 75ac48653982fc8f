//! Byte ranges into the text a protocol parsed.

use serde::{Deserialize, Serialize};

/// A half-open byte range `start..end` into the input a protocol parsed.
///
/// Offsets always refer to the text exactly as it was handed to the parser (before any
/// reasoning blocks were cut out), and both ends fall on `char` boundaries.
///
/// ```
/// use tool_calling::Span;
/// let text = "hi <<<[TOOL_REQUEST]>>>";
/// let span = Span::new(3, text.len());
/// assert_eq!(span.slice(text), Some("<<<[TOOL_REQUEST]>>>"));
/// assert_eq!(span.len(), 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Span {
    /// First byte of the range.
    pub start: usize,
    /// One past the last byte of the range.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end` (exclusive).
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// Number of bytes covered.
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no bytes.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// The text this span covers in `input`, or `None` when it does not fit `input`
    /// (out of bounds or not on `char` boundaries).
    pub fn slice<'a>(&self, input: &'a str) -> Option<&'a str> {
        input.get(self.start..self.end)
    }
}
