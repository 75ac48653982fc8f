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

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::tagged::{
    Tagged, tagged_call, tagged_prompt, tagged_results, tagged_syntax,
};
use crate::tools::ToolDefinition;

pub(crate) const OPEN: &str = "<longcat_tool_call>";
pub(crate) const CLOSE: &str = "</longcat_tool_call>";
const RESULT_OPEN: &str = "<longcat_tool_response>";
const RESULT_CLOSE: &str = "</longcat_tool_response>";

/// The reading of `longcat`: Hermes' under its tag names.
pub(crate) const READING: Tagged = Tagged { open: OPEN, close: CLOSE };

/// The rules of `longcat`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) const FORMAT: Format = Format {
    markers: &[Marker::Token("<longcat_tool_call>")],
    escapes: &[Escape::Tag("longcat_tool")],
    ..Format::new(&READING, &Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        tagged_prompt(tools, OPEN, CLOSE)
    }

    /// The text of the tool message that carries `results` back.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tagged_results(results, RESULT_OPEN, RESULT_CLOSE)
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(tagged_call(name, args, OPEN, CLOSE))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        tagged_syntax(b, offer, (OPEN, CLOSE), Vec::new())
    }
}

#[cfg(test)]
mod tests {}
