//! `hermes`: a JSON object in `<tool_call>` tags (Hermes 2 Pro, Qwen 2.5, Qwen 3).
//!
//! ```text
//! <tool_call>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}
//! </tool_call>
//! ```
//!
//! The line breaks inside the tags are optional. An object without `"arguments"` has
//! `{}`; arguments given as a JSON-encoded string are decoded. A block whose content is
//! not a call object is an incomplete request (the others still count). The closing tag
//! is found outside JSON strings, so arguments may contain `</tool_call>`.
//! Implementation-defined choices: a block never closed is an incomplete request even
//! when its JSON is whole. The reading is the tagged-block reader's (`readers/tagged.rs`).

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::tools_in_tags;
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::{
    TOOL_CALL, TOOL_CALL_END, Tagged, tagged_call, tagged_results, tagged_syntax,
};
use crate::tools::ToolDefinition;

/// The reading of `hermes`: one call object between `<tool_call>` and `</tool_call>`.
const READING: Tagged = Tagged { open: TOOL_CALL, close: TOOL_CALL_END };

/// The rules of `hermes`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::JsonObject }],
    escapes: &[Escape::Tag("tool_call"), Escape::Tag("tool_response")],
    ..Format::new(&READING, &Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "{}For each function call, return a json object with function name and arguments within \
             <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>",
            tools_in_tags(tools, "function")
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tagged_results(results, "<tool_response>", "</tool_response>")
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(tagged_call(name, args, TOOL_CALL, TOOL_CALL_END))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        tagged_syntax(b, offer, (TOOL_CALL, TOOL_CALL_END), Vec::new())
    }
}
