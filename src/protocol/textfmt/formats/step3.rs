//! `step3`: StepFun Step-3's calls: `steptml` invokes between special tokens (the bars
//! are U+FF5C, the underscores ASCII).
//!
//! ```text
//! <｜tool_calls_begin｜>
//! <｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">
//! <steptml:parameter name="city">Paris</steptml:parameter>
//! <steptml:parameter name="days">3</steptml:parameter>
//! </steptml:invoke><｜tool_call_end｜>
//! <｜tool_calls_end｜>
//! ```
//!
//! The word before `<｜tool_sep｜>` is the call's type and must be `function`.
//! Arguments: one key per parameter; a value is the raw text up to the first
//! `</steptml:parameter>` (`<`, `>`, `&&`, line breaks are content; entities are kept as
//! written), trimmed of surrounding white space, and typed as the module docs say (JSON
//! text and `True`/`False`/`None` are converted, other text stays a string). An invoke
//! with no parameters has `{}`.
//!
//! Several calls: several `<｜tool_call_begin｜>…<｜tool_call_end｜>` in one section, or
//! several sections. Text before, between and after the sections is normal text.
//!
//! Malformed: a call whose type is not `function`, with no `<steptml:invoke name=…>`, an
//! empty name, no `</steptml:invoke>`, or a parameter without a name or given twice is
//! an incomplete request; a call not closed by
//! `<｜tool_call_end｜>` is incomplete too (it ends where the next call or the section's
//! end begins, so later calls still count).
//!
//! Implementation-defined choices: calls count only inside a `<｜tool_calls_begin｜>`
//! section; values are trimmed (as smg does; vLLM keeps the white space of string-typed
//! values).
//!
//! Grammar: one `<｜tool_calls_begin｜>` section holding the calls, each
//! `\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">`, then
//! `\n<steptml:parameter name="K">V</steptml:parameter>` per key in schema order, then
//! `\n</steptml:invoke><｜tool_call_end｜>`; the section ends with
//! `\n<｜tool_calls_end｜>`. A value holds no white space at either end (values are
//! trimmed), none of `</steptml:parameter>`, `<｜tool_call_begin｜>`, `<｜tool_call_end｜>`,
//! `<｜tool_calls_end｜>` (the format has no escapes) and no reasoning tag while reasoning
//! is hidden. Free text holds no `<｜tool_calls_begin｜>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    RawCall, Reading, Region, Scan, ScanState, SectionTokens, UNCLOSED, inside,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues, value_text};
use crate::protocol::textfmt::prompt::{tools_in_tags, wrapped};
use crate::protocol::textfmt::readers::dsml::attribute;
use crate::protocol::textfmt::readers::values::infer;
use crate::tools::ToolDefinition;

const CALLS_BEGIN: &str = "<｜tool_calls_begin｜>";
const CALLS_END: &str = "<｜tool_calls_end｜>";
const CALL_BEGIN: &str = "<｜tool_call_begin｜>";
const CALL_END: &str = "<｜tool_call_end｜>";
const SEP: &str = "<｜tool_sep｜>";
const INVOKE: &str = "<steptml:invoke";
const INVOKE_END: &str = "</steptml:invoke>";
const PARAMETER: &str = "<steptml:parameter";
const PARAMETER_END: &str = "</steptml:parameter>";

/// The rules of `step3`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn sections(&self) -> Option<SectionTokens> {
        Some(SectionTokens { open: CALLS_BEGIN, call: CALL_BEGIN, end: CALLS_END })
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until_first(CALL_BEGIN.len(), &[CALL_END, CALL_BEGIN, CALLS_END])
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let ended = closed && state.stage != UNCLOSED;
        let body = inside(region, CALL_BEGIN.len(), CALL_END, ended);
        let mut call = RawCall { span, ..RawCall::default() };
        if closed && !ended {
            call.problems.push(format!("the call is not closed with {CALL_END}"));
        }
        let Some(sep) = body.find(SEP) else {
            call.problems.push(format!("the call has no {SEP} after its type `function`"));
            calls.push(call);
            return;
        };
        let kind = body.get(..sep).unwrap_or_default().trim();
        if kind != "function" {
            call.problems.push(format!("the call's type is `{kind}`, not `function`"));
        }
        let invoke = body.get(sep + SEP.len()..).unwrap_or_default();
        let head = invoke.find(INVOKE).and_then(|at| {
            let after = invoke.get(at + INVOKE.len()..)?;
            let end = after.find('>')?;
            Some((after.get(..end)?, after.get(end + 1..)?))
        });
        let Some((head, rest)) = head else {
            call.problems.push("the call has no <steptml:invoke name=\"…\"> tag".into());
            calls.push(call);
            return;
        };
        call.name = attribute(head, "name").unwrap_or_default().trim().to_string();
        if call.name.is_empty() {
            call.problems.push("the <steptml:invoke> has no name: write <steptml:invoke name=\"…\">".into());
        }
        let rest = match rest.rfind(INVOKE_END) {
            Some(end) => rest.get(..end).unwrap_or_default(),
            None => {
                call.problems.push(format!("the invoke is not closed with {INVOKE_END}"));
                rest
            }
        };
        let mut rest = rest;
        while let Some(at) = rest.find(PARAMETER) {
            let after = rest.get(at + PARAMETER.len()..).unwrap_or_default();
            let Some(tag_end) = after.find('>') else {
                call.problems.push("a <steptml:parameter> tag is not closed with `>`".into());
                break;
            };
            let key = attribute(after.get(..tag_end).unwrap_or_default(), "name").unwrap_or_default();
            let value_text = after.get(tag_end + 1..).unwrap_or_default();
            let (text, next) = match value_text.find(PARAMETER_END) {
                Some(end) => {
                    (value_text.get(..end).unwrap_or_default(), value_text.get(end + PARAMETER_END.len()..))
                }
                None => {
                    call.problems.push(format!("the parameter `{key}` is not closed with {PARAMETER_END}"));
                    (value_text, None)
                }
            };
            if key.is_empty() {
                call.problems.push("a <steptml:parameter> has no name: write name=\"…\"".into());
            } else if call.args.contains_key(&key) {
                call.problems.push(format!("the parameter `{key}` is given twice"));
            }
            let text = text.trim();
            call.text_arg(key, text, infer(text));
            let Some(next) = next else { break };
            rest = next;
        }
        calls.push(call);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<｜tool_calls_begin｜>")],
    escapes: &[Escape::Tag("steptml:")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the functions as JSON, one a line, and the call format.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "{}To call tools, write them in one section, each call on a line of its own:\n\
         {CALLS_BEGIN}\n\
         {CALL_BEGIN}function{SEP}{INVOKE} name=\"function_name\">\n\
         {PARAMETER} name=\"parameter_name\">value{PARAMETER_END}\n\
         ...\n\
         {INVOKE_END}{CALL_END}\n\
         {CALLS_END}\n\
         Values are written as they are, without escaping or quotes; lists and objects are written as JSON.",
            tools_in_tags(tools, "tool")
        )
    }

    /// The text that carries `results` back: one `<tool_response>` each.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, "<tool_response>\n", "\n</tool_response>")
    }

    /// A call of `name` with `args`, as the prompt teaches it: strings as written, other
    /// values as JSON (`<` written `\u003c`). `None` when a string holds
    /// `</steptml:parameter>` or one of the format's tokens (`<｜tool_call_end｜>`, …), or
    /// white space at either end (values are trimmed), or a name or key holds `"` or `>`.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let plain = |text: &str| !text.contains(['"', '>']) && text.trim() == text && !text.is_empty();
        if !plain(name) {
            return None;
        }
        let mut out = format!("{CALLS_BEGIN}\n{CALL_BEGIN}function{SEP}{INVOKE} name=\"{name}\">");
        for (key, value) in args {
            let text = value_text(value);
            let markup = [PARAMETER_END, CALL_END, CALL_BEGIN, CALLS_END].iter().any(|m| text.contains(m));
            if markup || text.trim() != text || !plain(key) {
                return None;
            }
            out.push_str(&format!("\n{PARAMETER} name=\"{key}\">{text}{PARAMETER_END}"));
        }
        out.push_str(&format!("\n{INVOKE_END}{CALL_END}\n{CALLS_END}"));
        Some(out)
    }

    /// The calls of `step3` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let call = TextValues {
            avoid: Pattern::trimmed_text(&[PARAMETER_END, CALL_BEGIN, CALL_END, CALLS_END]),
            open: "",
            close: PARAMETER_END,
            key: &|key| format!("\n{PARAMETER} name=\"{key}\">"),
            call: &|name| {
                (
                    format!("\n{CALL_BEGIN}function{SEP}{INVOKE} name=\"{name}\">"),
                    format!("\n{INVOKE_END}{CALL_END}"),
                )
            },
        }
        .calls(b, offer)?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(""), close: format!("\n{CALLS_END}") }),
            ..offer.syntax(CALLS_BEGIN, call)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn write_call_refuses_what_it_cannot_carry() {
        for value in [format!("a{PARAMETER_END}"), CALL_END.to_string(), " padded".into()] {
            assert_eq!(Rules.write_call("f", json!({"v": value}).as_object().unwrap()), None, "{value:?}");
        }
        assert_eq!(Rules.write_call("", &Map::new()), None);
    }
}
