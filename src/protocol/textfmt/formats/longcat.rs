//! `longcat`: LongCat-Flash: JSON in `<longcat_tool_call>` tags.
//!
//! ```text
//! <longcat_tool_call>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}
//! </longcat_tool_call>
//! ```
//!
//! The Hermes layout under LongCat's own tag names: one JSON object per block, with
//! `"name"` and `"arguments"` (`"parameters"` is taken too; an object without either has
//! `{}`; arguments given as a JSON-encoded string are decoded). The line breaks inside the
//! tags are optional. Several calls are several blocks, usually one per line; text before,
//! between and after them is normal text.
//!
//! A block whose content is not a call object (bad JSON, no name, arguments that are not
//! an object) is an incomplete request; the other blocks still count. The closing tag is
//! looked for outside JSON strings, so a value may contain `</longcat_tool_call>`. A block
//! that never closes is an incomplete request even when its JSON is whole
//! (implementation-defined: vLLM's regex also accepts an unclosed last block).
//!
//! **Grammar.** Hermes' under LongCat's tags: `<longcat_tool_call>`, a line break, `{"name":
//! …, "arguments": {…}}`, a line break, `</longcat_tool_call>` per call; free text holds no
//! `<longcat_tool_call>`.

use crate::protocol::textfmt::format::{Escape, Format, Marker};
use crate::protocol::textfmt::readers::tagged::{Tagged, TaggedWriting};

pub(crate) const OPEN: &str = "<longcat_tool_call>";
pub(crate) const CLOSE: &str = "</longcat_tool_call>";
const RESULT_OPEN: &str = "<longcat_tool_response>";
const RESULT_CLOSE: &str = "</longcat_tool_response>";

/// The reading of `longcat`: Hermes' under its tag names.
pub(crate) const READING: Tagged = Tagged { open: OPEN, close: CLOSE };

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`WRITING`] is what it writes.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<longcat_tool_call>")],
    escapes: &[Escape::Tag("longcat_tool")],
    ..Format::new(&READING, &WRITING)
};

/// What `longcat` writes: Hermes' call objects in its tags.
const WRITING: TaggedWriting =
    TaggedWriting { open: OPEN, close: CLOSE, results: (RESULT_OPEN, RESULT_CLOSE), avoid: &[] };
