//! `jamba`: AI21 Jamba: a JSON array in `<tool_calls>` tags.
//!
//! ```text
//! <tool_calls>[
//!     {"name": "get_weather", "arguments": {"city": "Paris"}},
//!     {"name": "add", "arguments": {"a": 1}}
//! ]</tool_calls>
//! ```
//!
//! The same outer markup as Hunyuan A13B, read by the same rules
//! (the `json_list` reader's tagged array): blanks (the array is often
//! pretty-printed) may stand around the array; each element is a call object with
//! `"name"` and `"arguments"` (an object, or a JSON-encoded string holding one); calls
//! come out in order.
//!
//! Normal text: everything outside the blocks. An element without `"name"` or
//! `"arguments"` is an incomplete request (the others count); a block whose content is
//! not one JSON array, or that never closes, gives incomplete requests. Implementation-
//! defined choices: every `<tool_calls>` block is read (vLLM reads the first one only);
//! text after the block is normal text; a lone space before the block stays normal text
//! (vLLM reports none).
//!
//! **Grammar.** One block on one line, `<tool_calls>[` then call objects `{"name": …,
//! "arguments": {…}}` joined by `, ` then `]</tool_calls>`; free text holds no
//! `<tool_calls>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::format::{Format, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::{functions, named_results};
use crate::protocol::textfmt::readers::json_list::{
    TAGGED_ARRAY, TOOL_CALLS, TOOL_CALLS_END, list_syntax, tagged_calls,
};
use crate::tools::ToolDefinition;

/// The rules of `jamba`: Hunyuan A13B's `<tool_calls>` array, read by the `json_list`
/// reader.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format =
    Format { same_markup: &[TextFormat::Hunyuan], ..Format::new(&TAGGED_ARRAY, &Rules) };

impl Writing for Rules {
    /// The tool-definition prompt: the tools as JSON, one a line, and how to call them.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let listed = functions(tools).iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
        format!(
            "# Tools\n\nYou have access to the following functions:\n\n{listed}\n\n\
         To call functions, reply with a JSON list of calls between <tool_calls> and </tool_calls>:\n\
         <tool_calls>[{{\"name\": <function-name>, \"arguments\": <args-json-object>}}, ...]</tool_calls>"
        )
    }

    /// The text of the tool message that carries `results` back: one JSON object per line,
    /// `{"name": …, "content": …}` (Jamba's tool turn carries the output as JSON).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        named_results(results, "content", "content")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(tagged_calls(name, args))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let (open, close) = (format!("{TOOL_CALLS}["), format!("]{TOOL_CALLS_END}"));
        list_syntax(b, offer, (&open, &close), vec![Pattern::text(TOOL_CALLS)])
    }
}
