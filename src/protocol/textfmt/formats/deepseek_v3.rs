//! `deepseek_v3` (DeepSeek V3, R1): calls between DeepSeek's special tokens, each
//! `function<｜tool▁sep｜>NAME` and its arguments in a ```` ```json ```` fence (the bars
//! are U+FF5C, the underscores U+2581).
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//! ```json
//! {"city": "Paris"}
//! ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! Read by the DeepSeek reader (`readers/deepseek.rs`), as `deepseek_v31` is: each call
//! is reported when its `<｜tool▁call▁end｜>` arrives; a call whose argument JSON does not
//! parse is an incomplete request, the others count. Implementation-defined choices: the
//! type word is not checked; a call outside a `<｜tool▁calls▁begin｜>` section is read
//! too; an `<｜end▁of▁sentence｜>` right after the section is markup.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::methods;
use crate::protocol::textfmt::readers::deepseek::{
    CALL_BEGIN, CALLS_BEGIN, CallLayout, DeepSeek, SEP, results as tool_outputs,
};
use crate::protocol::textfmt::readers::shapes::{Shape, deepseek_version};
use crate::tools::ToolDefinition;

/// How a call is written.
const LAYOUT: CallLayout = CallLayout {
    head: |name| format!("{CALL_BEGIN}function{SEP}{name}\n```json\n"),
    tail: "\n```<｜tool▁call▁end｜>",
};

/// The rules of `deepseek_v3`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: CALLS_BEGIN, look: deepseek_version, shape: Shape::TypedCall },
        Marker::Shared { token: CALL_BEGIN, look: deepseek_version, shape: Shape::TypedCall },
    ],
    ..Format::new(&DeepSeek { v31: false }, &Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut out =
            String::from("## Tools\n\n### Function\n\nYou have the following functions available:\n");
        for (name, description, parameters) in methods(tools) {
            out.push_str(&format!("\n- `{name}`: {description}\n```json\n{parameters}\n```\n"));
        }
        out.push_str(
            "\nTo call functions, write:\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>FUNCTION_NAME\n\
             ```json\n{ARGUMENTS}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
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
