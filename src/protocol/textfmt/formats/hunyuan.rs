//! `hunyuan`: Hunyuan A13B: a JSON array in `<tool_calls>` tags.
//!
//! ```text
//! Let me look that up.<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "add", "arguments": {"a": 1}}]</tool_calls>
//! ```
//!
//! Blanks may stand around the array inside the tags. Each element is a call object with
//! `"name"` (a non-empty string) and `"arguments"` (an object, or a JSON-encoded string
//! holding one); they come out in order, and several blocks in a reply one after the
//! other. A block inside `<think>…</think>` is reasoning, not a call.
//!
//! Normal text: everything outside the blocks. An element without `"name"` or
//! `"arguments"`, or whose arguments are not an object, is an incomplete request (the
//! sources skip it; it is never run) and the other elements count. A block whose content
//! is not one JSON array, or does not parse, is one incomplete request; a block whose
//! `</tool_calls>` never comes gives incomplete requests only (its calls, read when the
//! array is whole, are reported but not run). `</tool_calls>` inside a JSON string does
//! not close the block. Implementation-defined choices: text after `</tool_calls>` is
//! normal text (the sources drop it); every block is read, not only the first.
//!
//! Hunyuan A13B frames its answer: `<think>…</think>` (reasoning, cut out),
//! `<answer>\n…\n</answer>`, and a plain answer starts with `助手：` ("Assistant:"), as
//! its template asks. The tags `<answer>` (with the line break after it) and `</answer>`
//! are dropped from normal text, and so is `助手：` at the start of the reply or right
//! after `<answer>`; the line break before `</answer>` stays.
//!
//! The reading of the tagged array (the `json_list` reader's `TAGGED_ARRAY`) is shared
//! with `jamba`, which writes the same outer markup without the answer framing.
//!
//! **Grammar.** One block, `<tool_calls>[` then call objects `{"name": …, "arguments":
//! {…}}` joined by `, ` then `]</tool_calls>`. Free text holds no `<tool_calls>`, no
//! `<answer>` or `</answer>`, and does not open (after blanks) with `助手：`: the grammar
//! admits none of the answer framing, which the reader drops.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, opening};
use crate::protocol::textfmt::prompt::{functions, wrapped};
use crate::protocol::textfmt::readers::json_list::{
    TAGGED_ARRAY, TOOL_CALLS, TOOL_CALLS_END, list_syntax, tagged_calls,
};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_calls};
use crate::tools::ToolDefinition;

/// Hunyuan A13B's answer framing.
const ANSWER: &str = "<answer>";
const ANSWER_END: &str = "</answer>";
/// The prefix the template asks a plain answer to start with ("Assistant:").
const ASSISTANT: &str = "助手：";

/// Section kinds: framing markup dropped as a whole, and `<answer>` (after which a line
/// break and the assistant prefix are dropped too).
const FRAME: u8 = 2;
const ANSWER_KIND: u8 = 3;

/// The rules of `hunyuan`: the tagged array, with the answer framing dropped.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        if reply_start {
            let at = after_blanks(text.as_bytes(), from);
            let rest = text.get(at..).unwrap_or_default();
            if rest.starts_with(ASSISTANT) {
                return Found::Section { at, len: ASSISTANT.len(), kind: FRAME };
            }
            if ASSISTANT.starts_with(rest) {
                return Found::Hold(at);
            }
        }
        search.marked(
            text,
            from,
            [(TOOL_CALLS, None), (ANSWER, Some(ANSWER_KIND)), (ANSWER_END, Some(FRAME))],
        )
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, _search: &mut Searches) -> InSection {
        if kind != ANSWER_KIND {
            return InSection::Leave(from);
        }
        let rest = text.get(from..).unwrap_or_default();
        let (skip, rest) = match rest.strip_prefix('\n') {
            Some(rest) => (1, rest),
            None => (0, rest),
        };
        if rest.starts_with(ASSISTANT) {
            InSection::Leave(from + skip + ASSISTANT.len())
        } else if ASSISTANT.starts_with(rest) {
            InSection::Hold(from)
        } else {
            InSection::Leave(from + skip)
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        TAGGED_ARRAY.scan(region)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        TAGGED_ARRAY.read(region, state, closed, calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: TOOL_CALLS, look: after_tool_calls, shape: Shape::CallArray },
        Marker::Token("<answer>"),
    ],
    escapes: &[Escape::Tag("answer")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the Hunyuan A13B template's instruction (it writes it in
    /// Chinese; this is its meaning), then the tools as one JSON list.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "You are an expert in composing functions. You are given a question and a set of possible functions. \
         Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n\
         If none of the functions can be used, reply to the user in natural language.\n\
         If the given question lacks the parameters required by the function, ask the user for them in natural \
         language.\n\
         If the call results already answer the question, summarise them and reply in natural language.\n\
         You should only return function calls in the tool call section. If you decide to invoke any of the \
         function(s), you MUST put it in the format of <tool_calls>[{{\"name\": \"func_name1\", \"arguments\": \
         {{\"argument1\": \"value1\", \"argument2\": \"value2\"}}}},...]</tool_calls>. You SHOULD NOT include any \
         other text in the response. Here is a list of functions in JSON format that you can invoke.\n\n{}\n",
            Value::Array(functions(tools))
        )
    }

    /// The text of the tool message that carries `results` back: each result in
    /// `<tool_response>` tags, as the Hunyuan A13B template renders tool output.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, "<tool_response>", "</tool_response>")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(tagged_calls(name, args))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // The answer framing is markup the reader drops.
        let avoid = vec![
            Pattern::text(TOOL_CALLS),
            Pattern::text(ANSWER),
            Pattern::text(ANSWER_END),
            opening(ASSISTANT),
        ];
        let (open, close) = (format!("{TOOL_CALLS}["), format!("]{TOOL_CALLS_END}"));
        list_syntax(b, offer, (&open, &close), avoid)
    }
}
