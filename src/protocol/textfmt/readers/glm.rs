//! GLM's calls, read and written for `glm45` (GLM-4.5, GLM-4.6) and `glm47` (GLM-4.7,
//! GLM-5): a name, then key/value pairs in tags.
//!
//! ```text
//! <tool_call>get_weather
//! <arg_key>city</arg_key>
//! <arg_value>Paris</arg_value>
//! </tool_call>
//! ```
//!
//! `glm45` takes the name up to the first line break (or, tolerated, up to the first
//! `<arg_key>` when there is none); `glm47` takes the first run of characters up to
//! whitespace or `<`, so `<tool_call>NAME</tool_call>` is a call with `{}`. Keys and
//! values are trimmed; values are typed as the module docs say (a JSON array or object
//! written as the value becomes that value). A block never closed by `</tool_call>` is
//! an incomplete request.
//!
//! `poolside_v1` (poolside Laguna) writes the same markup and is read by [`read_call`]
//! with one difference, how a value is cut out of its tags ([`ValueCut`]).

use super::tagged::{TOOL_CALL as OPEN, TOOL_CALL_END as CLOSE};
use super::values::infer;
use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches, inside};
use crate::protocol::textfmt::format::{Escape, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues, value_text};
use crate::protocol::textfmt::prompt::{content, each, tools_in_tags};
use crate::tools::ToolDefinition;
use serde_json::{Map, Value};

/// As [`infer`]; an array or object written with its quotes backslash-escaped (`[{\"a\":
/// 1}]`, a serving stack's double escaping) is read unescaped once.
fn infer_escaped(value: &str) -> serde_json::Value {
    let inferred = infer(value);
    let escaped = value.starts_with(['[', '{']) && value.contains("\\\"");
    if !(inferred.is_string() && escaped) {
        return inferred;
    }
    let quoted = format!("\"{value}\"");
    match serde_json::from_str::<String>(&quoted).map(|unescaped| infer(&unescaped)) {
        Ok(value @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => value,
        _ => inferred,
    }
}

/// The rules of `glm45` and `glm47`.
pub(crate) struct Glm {
    pub(crate) v47: bool,
}

/// How a value's text is cut out of its `<arg_value>` tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueCut {
    /// White space at both ends is dropped (GLM).
    Trim,
    /// At most one line break at each end is dropped, nothing else (poolside).
    OneLineBreak,
}

impl ValueCut {
    /// The value `text` stands for.
    fn apply(self, text: &str) -> &str {
        match self {
            ValueCut::Trim => text.trim(),
            ValueCut::OneLineBreak => {
                let text = text.strip_prefix('\n').unwrap_or(text);
                text.strip_suffix('\n').unwrap_or(text)
            }
        }
    }
}

impl Reading for Glm {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, OPEN)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(OPEN.len(), CLOSE)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_call(self.v47, ValueCut::Trim, region, closed, calls);
    }
}

/// The call of a `<tool_call>` region: the name by `glm47`'s rule when `v47` (else
/// `glm45`'s), values cut out of their tags by `cut`.
pub(crate) fn read_call(v47: bool, cut: ValueCut, region: &str, closed: bool, calls: &mut Vec<RawCall>) {
    let body = inside(region, OPEN.len(), CLOSE, closed);
    let name_end = if v47 {
        let trimmed = body.len() - body.trim_start().len();
        trimmed
            + body
                .get(trimmed..)
                .unwrap_or_default()
                .find(|c: char| c.is_whitespace() || c == '<')
                .unwrap_or(body.len() - trimmed)
    } else {
        // The name runs to the end of its line (a blank before it is skipped).
        let lead = body.len() - body.trim_start().len();
        let name_part = body.get(lead..).unwrap_or_default();
        lead + match (name_part.find('\n'), name_part.find(KEY)) {
            (Some(line), Some(key)) => line.min(key),
            (Some(line), None) => line,
            (None, Some(key)) => key,
            (None, None) => name_part.len(),
        }
    };
    // A literal `\n` (an escaped line break some servers leave in) is not the name.
    let name = body.get(..name_end).unwrap_or_default().trim().trim_end_matches("\\n").trim().to_string();
    let mut call = RawCall { span: 0..region.len(), name, ..RawCall::default() };
    let mut rest = body.get(name_end..).unwrap_or_default();
    while let Some(at) = rest.find(KEY) {
        let after = rest.get(at + KEY.len()..).unwrap_or_default();
        let Some(key_end) = after.find(KEY_END) else {
            call.problems.push("an <arg_key> is not closed with </arg_key>".into());
            break;
        };
        let key = after.get(..key_end).unwrap_or_default().trim().to_string();
        let after = after.get(key_end + KEY_END.len()..).unwrap_or_default();
        let Some(value_at) = after.find(VALUE) else {
            call.problems.push(format!("the argument `{key}` has no <arg_value>"));
            break;
        };
        let value_text = after.get(value_at + VALUE.len()..).unwrap_or_default();
        let (value, next) = match value_text.find(VALUE_END) {
            Some(end) => (value_text.get(..end).unwrap_or_default(), value_text.get(end + VALUE_END.len()..)),
            None => {
                call.problems.push(format!("the value of `{key}` is not closed with </arg_value>"));
                (value_text, None)
            }
        };
        let value = cut.apply(value);
        call.text_arg(key, value, infer_escaped(value));
        let Some(next) = next else { break };
        rest = next;
    }
    calls.push(call);
}

impl Writing for Glm {
    /// The tool-definition prompt of the GLM formats.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "{}For each function call, output the function name and arguments within the following XML format:\n\
             <tool_call>{{function-name}}\n<arg_key>{{arg-key-1}}</arg_key>\n<arg_value>{{arg-value-1}}</arg_value>\n\
             <arg_key>{{arg-key-2}}</arg_key>\n<arg_value>{{arg-value-2}}</arg_value>\n...\n</tool_call>",
            tools_in_tags(tools, "function")
        )
    }

    /// An observation, each result in `<tool_response>` tags.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        format!(
            "<|observation|>\n{}",
            each(results, |r| format!("<tool_response>\n{}\n</tool_response>", content(r)), "\n")
        )
    }

    /// A call as [`syntax`](Self::syntax) admits it: strings as written, other values
    /// as JSON (`<` in JSON strings written `\u003c`). `None` when a value holds markup
    /// the format has no escape for (a value ends at the first `</arg_value>`, a call at
    /// the first `</tool_call>`), or white space at either end (the reader trims values).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let line = if self.v47 { "" } else { "\n" };
        let mut out = format!("{OPEN}{name}");
        for (key, value) in args {
            let text = value_text(value);
            if text.contains(VALUE_END) || text.contains(CLOSE) || text.trim() != text {
                return None;
            }
            out.push_str(&format!("{line}{KEY}{key}{KEY_END}{line}{VALUE}{text}{VALUE_END}"));
        }
        out.push_str(&format!("{line}{CLOSE}"));
        Some(out)
    }

    /// The calls as a grammar: the name, then each argument as
    /// `<arg_key>K</arg_key><arg_value>V</arg_value>` in schema order (`glm45` one tag
    /// pair a line, as its prompt shows; `glm47` without line breaks, as GLM-4.7 writes
    /// them). A value holds no white space at either end (values are trimmed), no
    /// `</arg_value>` or `</tool_call>` (each ends it or the call, and the format has no
    /// escapes), and no reasoning tag when reasoning is hidden.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let line = if self.v47 { "" } else { "\n" };
        let call = TextValues {
            avoid: Pattern::trimmed_text(&[VALUE_END, CLOSE]),
            open: VALUE,
            close: VALUE_END,
            key: &|key| format!("{line}{KEY}{key}{KEY_END}{line}"),
            call: &|name| (name.to_string(), format!("{line}{CLOSE}")),
        }
        .calls(b, offer)?;
        Ok(offer.syntax(OPEN, call))
    }
}

/// The tags of a key and of a value.
pub(crate) const KEY: &str = "<arg_key>";
pub(crate) const KEY_END: &str = "</arg_key>";
pub(crate) const VALUE: &str = "<arg_value>";
pub(crate) const VALUE_END: &str = "</arg_value>";

/// The key and value tags, for `neutralize_tokens`.
pub(crate) const ESCAPES: &[Escape] = &[Escape::Tag("arg_key"), Escape::Tag("arg_value")];
