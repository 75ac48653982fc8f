//! `qwen3_coder_xml`: XML-like parameters (Qwen3-Coder, Qwen 3.5).
//!
//! ```text
//! <tool_call>
//! <function=write_file>
//! <parameter=path>
//! src/main.rs
//! </parameter>
//! <parameter=content>
//! fn main() {}
//! </parameter>
//! </function>
//! </tool_call>
//! ```
//!
//! Names and keys run to the `>`; values are raw text (quotes, `<`, `&` and line breaks
//! are content; entities are kept as written). A value on lines of its own loses the one
//! line break on each side (indentation is kept); a value on one line is trimmed. Values
//! are typed as the module docs say. Tolerated: a missing `</function>`; a missing
//! `</parameter>` (the value ends at the next `<parameter=` or `</function>`).
//! Implementation-defined choices: a bare `<function=NAME>…</function>` without the
//! `<tool_call>` wrapper is a call; a block never closed is an incomplete request.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues, value_text};
use crate::protocol::textfmt::prompt::{methods, str_at};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::{TOOL_CALL as OPEN, TOOL_CALL_END as CLOSE, tagged_results};
use crate::protocol::textfmt::readers::values::unwrap_lines;
use crate::protocol::textfmt::readers::xml_function::{
    FUNCTION, FUNCTION_END, PARAMETER, PARAMETER_END, read_function,
};
use crate::tools::ToolDefinition;

/// The rules of `qwen3_coder_xml`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.tokens(text, from, &[OPEN, FUNCTION]).0
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let (open, close) =
            if region.text.starts_with(OPEN) { (OPEN, CLOSE) } else { (FUNCTION, FUNCTION_END) };
        region.until(open.len(), close)
    }

    fn read(&self, region: &str, _state: &ScanState, _closed: bool, calls: &mut Vec<RawCall>) {
        read_function(region, CLOSE, calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: OPEN, look: after_tool_call, shape: Shape::FunctionTag },
        Marker::Token(FUNCTION),
    ],
    escapes: &[Escape::Tag("function"), Escape::Tag("parameter")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut out = String::from("# Tools\n\nYou have access to the following functions:\n\n<tools>");
        for (name, description, parameters) in methods(tools) {
            out.push_str(&format!(
                "\n<function>\n<name>{name}</name>\n<description>{description}</description>\n<parameters>"
            ));
            let required: Vec<&str> = parameters
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = parameters.get("properties").and_then(Value::as_object) {
                for (name, schema) in properties {
                    let kind = match schema.get("type") {
                        Some(Value::String(t)) => t.clone(),
                        Some(other) => other.to_string(),
                        None => "any".to_string(),
                    };
                    out.push_str(&format!(
                        "\n<parameter>\n<name>{name}</name>\n<type>{kind}</type>\n<description>{}</description>{}\n</parameter>",
                        str_at(schema, "description"),
                        if required.contains(&name.as_str()) { "\n<required>true</required>" } else { "" }
                    ));
                }
            }
            out.push_str("\n</parameters>\n</function>");
        }
        out.push_str(
            "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n\
             <tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n\
             <parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n\
             </parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n\
             - Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n\
             - Required parameters MUST be specified\n\
             - You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n\
             - If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n\
             </IMPORTANT>",
        );
        out
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tagged_results(results, "<tool_response>", "</tool_response>")
    }

    /// A call as the grammar admits it: strings as written, other values as JSON (`<` in
    /// JSON strings written `\u003c`).
    /// `None` when a value holds markup the format has no escape for (a value ends at the
    /// first `</parameter>`, a call at the first `</tool_call>`), or white space at
    /// either end that the reader would drop.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut out = format!("{OPEN}\n{FUNCTION}{name}>");
        for (key, value) in args {
            let text = value_text(value);
            let markup = [PARAMETER_END, PARAMETER, FUNCTION_END, CLOSE].iter().any(|m| text.contains(m));
            // The reader drops the layout around a value (a line break each side, the
            // blanks of a one-line value): a value that would lose text is refused.
            if markup || unwrap_lines(&format!("\n{text}\n")) != text {
                return None;
            }
            out.push_str(&format!("\n{PARAMETER}{key}>\n{text}\n{PARAMETER_END}"));
        }
        out.push_str(&format!("\n{FUNCTION_END}\n{CLOSE}"));
        Some(out)
    }

    /// The calls of `qwen3_coder_xml` as a grammar: the prompt's layout, one tag a line,
    /// each value on lines of its own, parameters in schema order. A value holds no white
    /// space at either end (a value on one line is trimmed; one on lines of its own loses a
    /// line break on each side), no `</parameter>`,
    /// `<parameter=`, `</function>` or `</tool_call>` (each ends it or the call, and the
    /// format has no escapes: entities are kept as written), and no reasoning tag when
    /// reasoning is hidden.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let close = format!("\n{PARAMETER_END}");
        let call = TextValues {
            avoid: Pattern::trimmed_text(&[PARAMETER_END, PARAMETER, FUNCTION_END, CLOSE]),
            open: "\n",
            close: &close,
            key: &|key| format!("\n{PARAMETER}{key}>"),
            call: &|name| (format!("\n{FUNCTION}{name}>"), format!("\n{FUNCTION_END}\n{CLOSE}")),
        }
        .calls(b, offer)?;
        Ok(Syntax { avoid: vec![Pattern::text(FUNCTION)], ..offer.syntax(OPEN, call) })
    }
}
