//! `poolside_v1`: poolside Laguna (Laguna-XS.2): GLM-4.5's markup, with values kept
//! nearly as written.
//!
//! ```text
//! <tool_call>write_file
//! <arg_key>path</arg_key>
//! <arg_value>src/main.rs</arg_value>
//! <arg_key>content</arg_key>
//! <arg_value>    fn main() {}
//! </arg_value>
//! </tool_call>
//! ```
//!
//! The markup is `glm45`'s and is read by the same reader (`readers/glm.rs`): after
//! `<tool_call>` the name runs to the end of its line (or to the first `<arg_key>`, so
//! `<tool_call>NAME<arg_key>…` and `<tool_call>NAME</tool_call>` are calls too); each
//! argument is a `<arg_key>K</arg_key>` followed by `<arg_value>V</arg_value>`, white
//! space between the tags being layout. The one difference is the value: it loses at
//! most one line break at each end, nothing else, so code keeps its indentation and
//! its trailing line break when the model writes one more. Keys are trimmed.
//!
//! Arguments: without a schema, a value reads as `glm45`'s do (JSON, the Python words
//! `True`/`False`/`None`, else a string); with the tool's schema, a `string` parameter
//! keeps the value's text exactly as cut out.
//!
//! Several calls: one `<tool_call>` block each, one after another; the text between and
//! around the blocks is normal text. `<think>…</think>` reasoning is the crate's one
//! reasoning rule.
//!
//! Malformed: a block never closed by `</tool_call>`, an `<arg_key>` not closed, a key
//! without an `<arg_value>` after it, or a value not closed by `</arg_value>` make an
//! incomplete request; the other blocks still count.
//!
//! Implementation-defined choices: the value cut follows sglang (at most one line break
//! dropped at each end, whatever the type); vLLM keeps a `string` parameter verbatim
//! and strips other values entirely. A value ends at the first `</arg_value>` and a
//! block at the first `</tool_call>`: the format has no escape for either. As in
//! `glm45`, a key followed by a second `<arg_key>` before any value takes the next
//! value (sglang drops the first key). Normal text after the first call is kept
//! (sglang's and vLLM's one-shot readers drop it, their streaming readers keep it).
//!
//! Grammar: the prompt's layout, `<tool_call>NAME\n`, then
//! `<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n` per key in schema order, then
//! `</tool_call>`. A string value is its text with, where it begins (ends) with a line
//! break, one more line break written before (after) it, as the writer does, or that
//! extra line break anyway: whatever the reader cuts off, the text left is the value, so
//! a bound on its length is exact. A value holds no `</arg_value>` or `</tool_call>` (the
//! format has no escapes) and no reasoning tag while reasoning is hidden. Free text holds
//! no `<tool_call>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax, TextForm};
use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches};
use crate::protocol::textfmt::format::{Format, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextCalls, value_text};
use crate::protocol::textfmt::prompt::{functions, wrapped};
use crate::protocol::textfmt::readers::glm::{
    ESCAPES, Glm, KEY, KEY_END, VALUE, VALUE_END, ValueCut, read_call,
};
use crate::protocol::textfmt::readers::tagged::{TOOL_CALL as OPEN, TOOL_CALL_END as CLOSE};
use crate::tools::ToolDefinition;

/// `glm45`'s finding and scanning.
const GLM45: Glm = Glm { v47: false };

/// The rules of `poolside_v1`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        GLM45.find(text, from, reply_start, search)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        GLM45.scan(region)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_call(false, ValueCut::OneLineBreak, region, closed, calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format =
    Format { same_markup: &[TextFormat::Glm45, TextFormat::Glm47], escapes: ESCAPES, ..Format::of(&Rules) };

impl Writing for Rules {
    /// The tool-definition prompt, worded as Laguna's chat template words its `### Tools`
    /// section: one function object per line in `<available_tools>`, then how to call.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let list: String = functions(tools).iter().map(|f| format!("{f}\n")).collect();
        format!(
            "### Tools\n\n\
         You may call functions to assist with the user query.\n\
         All available function signatures are listed below:\n\
         <available_tools>\n{list}</available_tools>\n\n\
         For each function call, return an unescaped XML-like object with function name and arguments \
         within '{OPEN}' and '{CLOSE}' tags, like here:\n\
         {OPEN}function-name\n{KEY}argument-key{KEY_END}\n{VALUE}value-of-argument-key{VALUE_END}\n{CLOSE}"
        )
    }

    /// The text of the tool message that carries `results` back: one `<tool_response>`
    /// block per result, the result on lines of its own, as the template writes a tool
    /// message.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, "<tool_response>\n", "\n</tool_response>")
    }

    /// A call of `name` with `args`, as the prompt teaches it: one tag a line, strings as
    /// written, other values as JSON (`<` written `\u003c`). A string that begins (ends)
    /// with a line break gets one more there, which the reader drops. `None` when a value
    /// holds `</arg_value>` or `</tool_call>` (the format has no escapes), or the name or a
    /// key cannot stand in its place (empty, white space at an end, a line break or `<`).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let plain = |text: &str| !text.is_empty() && text.trim() == text && !text.contains(['\n', '<']);
        if !plain(name) {
            return None;
        }
        let mut out = format!("{OPEN}{name}\n");
        for (key, value) in args {
            let text = value_text(value);
            if !plain(key) || text.contains(VALUE_END) || text.contains(CLOSE) {
                return None;
            }
            let lead = if text.starts_with('\n') { "\n" } else { "" };
            let tail = if text.ends_with('\n') { "\n" } else { "" };
            out.push_str(&format!("{KEY}{key}{KEY_END}\n{VALUE}{lead}{text}{tail}{VALUE_END}\n"));
        }
        out.push_str(CLOSE);
        Some(out)
    }

    /// The calls of `poolside_v1` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // The four forms of a string: with or without the extra line break at each end.
        // Without it, the text may not begin (end) with a line break, which the reader
        // would cut off.
        let form = |value_name: &'static str, lead: bool, tail: bool| {
            let mut avoid = vec![Pattern::text(VALUE_END), Pattern::text(CLOSE)];
            if !lead {
                avoid.push(Pattern::text("\n").at_start());
            }
            if !tail {
                avoid.push(Pattern::text("\n").at_end());
            }
            TextForm {
                text_name: "VALUE_TEXT",
                value_name,
                open: format!("{VALUE}{}", if lead { "\n" } else { "" }),
                avoid,
                close: format!("{}{VALUE_END}\n", if tail { "\n" } else { "" }),
            }
        };
        let call = TextCalls {
            strings: vec![
                form("STRING_VALUE", false, false),
                form("STRING_VALUE_LEAD", true, false),
                form("STRING_VALUE_TAIL", false, true),
                form("STRING_VALUE_BOTH", true, true),
            ],
            open: VALUE,
            close: &format!("{VALUE_END}\n"),
            kind_open: None,
            escapes: "<",
            index: None,
            key: &|key| format!("{KEY}{key}{KEY_END}\n"),
            call: &|name| (format!("{name}\n"), CLOSE.to_string()),
        }
        .calls(b, offer)?;
        Ok(offer.syntax(OPEN, call))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::parse;

    #[test]
    fn write_call_refuses_what_it_cannot_carry() {
        for bad in ["a</arg_value>b", "x</tool_call>"] {
            assert_eq!(Rules.write_call("f", json!({ "v": bad }).as_object().unwrap()), None);
        }
        for name in ["", " f", "f\ng", "f<x"] {
            assert_eq!(Rules.write_call(name, &Map::new()), None);
        }
        assert_eq!(Rules.write_call("f", json!({"a</arg_key>": 1}).as_object().unwrap()), None);
    }

    #[test]
    fn one_line_break_each_side_is_dropped_nothing_else() {
        let parsed = parse(
            TextFormat::PoolsideV1,
            "<tool_call>f\n<arg_key>v</arg_key>\n<arg_value>\n\n  x \n\n</arg_value>\n</tool_call>",
        );
        assert!(parsed.requests[0].complete);
        assert_eq!(parsed.requests[0].args["v"], "\n  x \n");
    }
}
