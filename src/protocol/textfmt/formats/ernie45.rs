//! `ernie45`: ERNIE 4.5: JSON in `<tool_call>` tags, after reasoning.
//!
//! ```text
//! The user wants the weather.
//! </think>
//!
//! <tool_call>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}
//! </tool_call>
//! ```
//!
//! The Hermes layout: one JSON object per `<tool_call>` block, with `"name"` and
//! `"arguments"` (`"parameters"` is taken too; an object without either has `{}`;
//! arguments given as a JSON-encoded string are decoded). Several calls are several
//! blocks, one per line. Text before, between and after them is normal text.
//!
//! ERNIE's thinking models end their reasoning with `</think>` (the template opened it):
//! read with `starts_in_reasoning` (the model table sets it for `ernie-4.5*thinking`),
//! the text before it is reasoning and is hidden with it (without the option, the lone
//! `</think>` hides only itself). They may frame their visible answer with
//! `<response>` … `</response>`: those two tokens are framing, dropped from normal text
//! (the text between them stays). Implementation-defined: the tokens are dropped wherever
//! they stand; vLLM strips them only when they are single tokens in a stream.
//!
//! A block whose content is not a call object (bad JSON, no name, arguments that are not
//! an object) is an incomplete request; the other blocks still count (vLLM drops every
//! call of the reply when one block fails). The closing tag is looked for outside JSON
//! strings, so a value may contain `</tool_call>`. A block that never closes is an
//! incomplete request.
//!
//! **Grammar.** Hermes' layout: `<tool_call>`, a line break, `{"name": …, "arguments":
//! {…}}`, a line break, `</tool_call>` per call. Free text holds no `<tool_call>` and neither
//! framing token (`<response>`, `</response>`).

use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches,
};
use crate::protocol::textfmt::format::{Escape, Format};
use crate::protocol::textfmt::readers::tagged::{TaggedWriting, read_json_block, scan_json_block};

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";
/// The tokens that frame the visible answer of a thinking model.
const RESPONSE_OPEN: &str = "<response>";
const RESPONSE_CLOSE: &str = "</response>";
const RESULT_OPEN: &str = "<tool_response>";
const RESULT_CLOSE: &str = "</tool_response>";

/// The rules of `ernie45`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        // A framing token: a section that is only the token, left at once.
        search.marked(text, from, [(OPEN, None), (RESPONSE_OPEN, Some(1)), (RESPONSE_CLOSE, Some(1))])
    }

    fn in_section(&self, _text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        InSection::Leave(from)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        scan_json_block(region, OPEN.len(), CLOSE)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_json_block(region, OPEN, CLOSE, closed, calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`WRITING`] is what it writes.
pub(crate) static FORMAT: Format = Format {
    same_markup: &[TextFormat::Hermes],
    escapes: &[Escape::Tag("tool_call"), Escape::Tag("tool_response"), Escape::Tag("response")],
    ..Format::new(&Rules, &WRITING)
};

/// What `ernie45` writes: Hermes' call objects in its tags.
const WRITING: TaggedWriting = TaggedWriting {
    open: OPEN,
    close: CLOSE,
    results: (RESULT_OPEN, RESULT_CLOSE),
    avoid: &[RESPONSE_OPEN, RESPONSE_CLOSE],
};
