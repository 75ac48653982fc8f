//! `deepseek_v31` (DeepSeek V3.1, V3.2-Exp): calls between DeepSeek's special tokens,
//! each `NAME<｜tool▁sep｜>` and its JSON arguments (the bars are U+FF5C, the underscores
//! U+2581).
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! Read by the DeepSeek reader (`readers/deepseek.rs`), as `deepseek_v3` is: each call
//! is reported when its `<｜tool▁call▁end｜>` arrives; a call whose argument JSON does not
//! parse is an incomplete request, the others count. Implementation-defined choices: a
//! call outside a `<｜tool▁calls▁begin｜>` section is read too; an
//! `<｜end▁of▁sentence｜>` right after the section is markup.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::methods;
use crate::protocol::textfmt::readers::deepseek::{
    CALL_BEGIN, CALL_END, CALLS_BEGIN, CallLayout, DeepSeek, SEP, results as tool_outputs,
};
use crate::protocol::textfmt::readers::shapes::{Shape, deepseek_version};
use crate::tools::ToolDefinition;

/// How a call is written.
const LAYOUT: CallLayout = CallLayout { head: |name| format!("{CALL_BEGIN}{name}{SEP}"), tail: CALL_END };

/// The rules of `deepseek_v31`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: CALLS_BEGIN, look: deepseek_version, shape: Shape::NamedCall },
        Marker::Shared { token: CALL_BEGIN, look: deepseek_version, shape: Shape::NamedCall },
    ],
    ..Format::new(&DeepSeek { v31: true }, &Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut out = String::from("## Tools\nYou have access to the following tools:\n");
        for (name, description, parameters) in methods(tools) {
            out.push_str(&format!("\n### {name}\nDescription: {description}\n\nParameters: {parameters}\n"));
        }
        out.push_str(
            "\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n\
             <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>\
             {{additional_tool_calls}}<｜tool▁calls▁end｜>\n\n\
             Where:\n- `tool_call_name` must be an exact match to one of the available tools\n\
             - `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n\
             - For multiple tool calls, chain them directly without separators or spaces",
        );
        out
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tool_outputs(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(LAYOUT.write(name, args))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        LAYOUT.syntax(b, offer)
    }
}
