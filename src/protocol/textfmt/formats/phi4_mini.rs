//! `phi4_mini`: Phi-4-mini: `functools[…]` with a JSON array of calls.
//!
//! ```text
//! functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "add", "arguments": {"a": 1}}]
//! ```
//!
//! The marker `functools` is followed directly by a JSON array (no closing marker). Each
//! element is a call object with `"name"` and `"arguments"` (an object, or a
//! JSON-encoded string holding one; `"parameters"` is accepted too; absent: `{}`); they
//! come out in order, and several `functools[…]` lists in a reply one after the other.
//!
//! Normal text: everything else, before and after the list. An element that is not a
//! call is an incomplete request (the others count); a list that does not parse, or is
//! never closed, is one incomplete request. Implementation-defined choices: the list ends
//! at the `]` that balances its `[` outside JSON strings (vLLM stops at the first `]`,
//! which breaks on array values); text after the list is normal text (vLLM drops all
//! text when it finds calls); `functools` not directly followed by `[` is prose.
//!
//! **Grammar.** One list, `functools[` then call objects `{"name": …, "arguments": {…}}`
//! joined by `, ` then `]`; free text holds no `functools[`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::content;
use crate::protocol::textfmt::readers::json::call_json;
use crate::protocol::textfmt::readers::json_list::{Block, MarkedBlock, list_syntax, pretty_functions};
use crate::tools::ToolDefinition;

/// The marker with the list's opening bracket.
pub(crate) const MARKER: &str = "functools[";

/// The reading: a `functools[` list, no closing marker.
const READING: MarkedBlock = MarkedBlock {
    marker: MARKER,
    block: Block {
        open_len: MARKER.len() - 1,
        close: None,
        tentative: false,
        single: false,
        keys: &["arguments", "parameters"],
        require: false,
        what: "functools",
    },
};

/// What `phi4_mini` writes.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("functools[")],
    escapes: &[Escape::ListAfter("functools")],
    ..Format::new(&READING, &Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the Phi-4-mini template's rules for calling functions,
    /// then each tool as indented JSON.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        pretty_functions(
            "In addition to plain text responses, you can choose to call one or more of the provided functions.\n\n\
         Use the following rule to decide when to call a function:\n  \
         * if the response can be generated from your internal knowledge (e.g., as in the case of queries like \
         \"What is the capital of Poland?\"), do so\n  \
         * if you need external information that can be obtained by calling one or more of the provided \
         functions, generate a function calls\n\n\
         If you decide to call functions:\n  \
         * prefix function calls with functools marker (no closing marker required)\n  \
         * all function calls should be generated in a single JSON list formatted as \
         functools[{\"name\": [function name], \"arguments\": [function arguments as JSON]}, ...]\n  \
         * follow the provided JSON schema. Do not hallucinate arguments or values. Do not blindly copy values \
         from the provided samples\n  \
         * respect the argument type formatting. E.g., if the type is number and format is float, write value 7 \
         as 7.0\n  \
         * make sure you pick the right functions that match the user intent\n\n",
            tools,
        )
    }

    /// The text of the tool message that carries `results` back: `{"result": …}` per result,
    /// one a line, as the Phi-4-mini template wraps tool output.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
            .iter()
            .map(|r| serde_json::json!({"result": content(r)}).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("functools[{}]", call_json(name, "arguments", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        list_syntax(b, offer, (MARKER, "]"), Vec::new())
    }
}
