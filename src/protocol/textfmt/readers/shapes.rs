//! What follows a marker that several formats write, for `auto`: each look reads the
//! text after the marker and names its [`Shape`]; each format that writes the marker
//! declares the shape that is its own ([`Marker::Shared`](crate::protocol::textfmt::format::Marker::Shared)).
//!
//! A look decides as soon as the text decides, and does not wait through unbounded
//! whitespace ([`MAX_UNDECIDED_BLANK`]): past it, it decides without what follows.

use super::deepseek::{CALL_BEGIN, SEP};

/// How much whitespace a decision waits through before deciding without what follows it
/// (so that a stream of blanks costs linear time).
pub(crate) const MAX_UNDECIDED_BLANK: usize = 256;

/// What follows a shared marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `<tool_call>` then a JSON object (or anything no other shape takes).
    JsonObject,
    /// `<tool_call>` then a JSON array of call objects.
    JsonArray,
    /// `<tool_call>` then `<function`.
    FunctionTag,
    /// `<tool_call>` then a name and a line break.
    NameLine,
    /// `<tool_call>` then a name and anything else.
    Name,
    /// `<tool_calls>` then a JSON array.
    CallArray,
    /// `<tool_calls>` then `<tool_call` blocks.
    CallTags,
    /// `<tool_calls>` then anything else (JSON lines).
    JsonLines,
    /// DeepSeek's first call is `function<｜tool▁sep｜>NAME`.
    TypedCall,
    /// DeepSeek's first call is `NAME<｜tool▁sep｜>`.
    NamedCall,
    /// A fence then a JSON list of call objects.
    FencedCalls,
}

/// What a look found after a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Looked {
    /// The marker begins markup of this shape.
    Shape(Shape),
    /// The marker is prose after all (a code block that holds no calls): the search
    /// goes on after it.
    Prose,
    /// More text is needed.
    Undecided,
}

/// A look: `text`, the marker found at `at`, `len` bytes long, `at_end` when no more
/// text will come.
pub(crate) type Look = fn(text: &str, at: usize, len: usize, at_end: bool) -> Looked;

/// `Some(shape)` as a decision, `None` as undecided.
fn decided(shape: Option<Shape>) -> Looked {
    shape.map_or(Looked::Undecided, Looked::Shape)
}

/// After `<tool_call>`: a JSON object (hermes), a JSON array (Granite), `<function=`
/// (Qwen3-Coder), or a name: GLM-4.5 when a line break follows the name, else GLM-4.7.
pub(crate) fn after_tool_call(text: &str, at: usize, len: usize, at_end: bool) -> Looked {
    decided(tool_call_shape(text, at + len, at_end))
}

fn tool_call_shape(text: &str, from: usize, at_end: bool) -> Option<Shape> {
    let rest = text.get(from..).unwrap_or_default().trim_start();
    let blank = text.get(from..).map_or(0, |r| r.len() - r.trim_start().len());
    if blank > MAX_UNDECIDED_BLANK {
        // A decision does not wait through unbounded whitespace (whatever follows it):
        // `<tool_call>` and blanks are hermes'.
        return Some(Shape::JsonObject);
    }
    if rest.starts_with('{') {
        return Some(Shape::JsonObject);
    }
    if let Some(list) = rest.strip_prefix('[') {
        // Granite 3.1 writes a JSON array of calls after `<tool_call>`; hermes reads
        // anything else after `[` (as a damaged call).
        let element = list.trim_start();
        return match element.bytes().next() {
            Some(b'{') => Some(Shape::JsonArray),
            None if !at_end && list.len() <= MAX_UNDECIDED_BLANK => None,
            _ => Some(Shape::JsonObject),
        };
    }
    const FUNCTION_TAG: &str = "<function";
    if rest.starts_with(FUNCTION_TAG) {
        return Some(Shape::FunctionTag);
    }
    if rest.is_empty() || (rest.starts_with('<') && FUNCTION_TAG.starts_with(rest)) {
        return at_end.then_some(Shape::JsonObject);
    }
    let name_end = rest.find(|c: char| c.is_whitespace() || c == '<');
    if name_end.unwrap_or(rest.len()) > MAX_UNDECIDED_BLANK {
        // Not a name a model writes; GLM-4.7's reading takes anything.
        return Some(Shape::Name);
    }
    match name_end.and_then(|end| rest.get(end..)) {
        // A carriage return may be the first half of a line break.
        Some("\r") if !at_end => None,
        Some(after) if after.starts_with('\n') || after.starts_with("\r\n") => Some(Shape::NameLine),
        Some(_) => Some(Shape::Name),
        None => at_end.then_some(Shape::Name),
    }
}

/// After `<tool_calls>`: a JSON array (Hunyuan A13B, Jamba), `<tool_call>` blocks
/// (Hunyuan 3) or JSON lines (MiniMax-M1).
pub(crate) fn after_tool_calls(text: &str, at: usize, len: usize, at_end: bool) -> Looked {
    let rest = text.get(at + len..).unwrap_or_default();
    let trimmed = rest.trim_start();
    if rest.len() - trimmed.len() > MAX_UNDECIDED_BLANK {
        return Looked::Shape(Shape::JsonLines);
    }
    const INNER: &str = "<tool_call";
    decided(match trimmed.bytes().next() {
        Some(b'[') => Some(Shape::CallArray),
        Some(b'<') if trimmed.starts_with(INNER) => Some(Shape::CallTags),
        Some(b'<') if !at_end && INNER.starts_with(trimmed) => None,
        Some(_) => Some(Shape::JsonLines),
        None => at_end.then_some(Shape::JsonLines),
    })
}

/// DeepSeek V3 writes `function<｜tool▁sep｜>NAME`, V3.1 `NAME<｜tool▁sep｜>`: decided at
/// the first separator, looked for within a bounded distance of the marker at `at`
/// (beyond it, V3.1).
pub(crate) fn deepseek_version(text: &str, at: usize, _len: usize, at_end: bool) -> Looked {
    let window = |from: usize| {
        let rest = text.get(from..).unwrap_or_default();
        let mut end = rest.len().min(MAX_UNDECIDED_BLANK + CALL_BEGIN.len() + SEP.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        (rest.get(..end).unwrap_or_default(), rest.len() > end)
    };
    let (rest, longer) = window(at);
    let Some(call) = rest.find(CALL_BEGIN).map(|c| at + c + CALL_BEGIN.len()) else {
        return decided((longer || at_end).then_some(Shape::NamedCall));
    };
    let (head, longer) = window(call);
    decided(match head.find(SEP).and_then(|s| head.get(..s)) {
        Some(head) if head.trim() == "function" => Some(Shape::TypedCall),
        Some(_) => Some(Shape::NamedCall),
        None if longer => Some(Shape::NamedCall),
        None => at_end.then_some(Shape::TypedCall),
    })
}

/// After a ```` ```json ```` fence: a list of call objects (`[{"name"`, xLAM), or an
/// ordinary code block (prose).
pub(crate) fn after_fence(text: &str, at: usize, len: usize, at_end: bool) -> Looked {
    match fence_holds_calls(text, at + len, at_end) {
        Some(true) => Looked::Shape(Shape::FencedCalls),
        Some(false) => Looked::Prose,
        None => Looked::Undecided,
    }
}

/// Whether a list of call objects (`[{"name"`) follows `from`, blanks allowed before
/// each piece, at most three times [`MAX_UNDECIDED_BLANK`] bytes in all; `None`:
/// undecided.
pub(crate) fn fence_holds_calls(text: &str, from: usize, at_end: bool) -> Option<bool> {
    let rest = text.get(from..).unwrap_or_default();
    follow(rest, &["[", "{", "\"name\""], at_end, |_, read| read > 3 * MAX_UNDECIDED_BLANK)
}

/// Whether `rest` (a reply after its leading blanks) opens with `pieces`, blanks allowed
/// between them (at most [`MAX_UNDECIDED_BLANK`] bytes each): `Some(true)` yes,
/// `Some(false)` no, `None` undecided. The first piece must be there.
pub(crate) fn opens_with(rest: &str, pieces: &[&str], at_end: bool) -> Option<bool> {
    let Some((first, later)) = pieces.split_first() else { return Some(false) };
    let Some(tail) = rest.strip_prefix(first) else { return Some(false) };
    follow(tail, later, at_end, |blank, _| blank > MAX_UNDECIDED_BLANK)
}

/// Whether `pieces` follow in `rest`, blanks allowed before each, until `too_long(blank,
/// read)` (the blanks before a piece, and all that was read of `rest`) says the blanks
/// have run too long: `Some(true)` yes, `Some(false)` no, `None` undecided (the text ends
/// inside a piece, before `at_end`).
fn follow(
    rest: &str,
    pieces: &[&str],
    at_end: bool,
    too_long: impl Fn(usize, usize) -> bool,
) -> Option<bool> {
    let mut tail = rest;
    for piece in pieces {
        let trimmed = tail.trim_start();
        if too_long(tail.len() - trimmed.len(), rest.len() - trimmed.len()) {
            return Some(false);
        }
        if let Some(after) = trimmed.strip_prefix(piece) {
            tail = after;
        } else if !at_end && piece.starts_with(trimmed) {
            return None;
        } else {
            return Some(false);
        }
    }
    Some(true)
}
