//! `minimax_m2`: `<invoke>` elements in a `<minimax:tool_call>` wrapper (MiniMax-M2).
//!
//! ```text
//! <minimax:tool_call>
//! <invoke name="get_weather">
//! <parameter name="city">Paris</parameter>
//! </invoke>
//! </minimax:tool_call>
//! ```
//!
//! Several calls: several `<invoke>` elements, or several wrappers. A value ends at the
//! last `</parameter>` before the next parameter, so it may contain `</parameter>`. Values are raw text
//! with the five XML entities decoded and surrounding whitespace kept; without a schema
//! only `null` is not a string (JSON-looking text stays a string). An `<invoke>` without
//! a `name` is an incomplete request; one whose `</invoke>` is missing ends at the next
//! `<invoke` or at the end of the wrapper, and is incomplete.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::driver::{RawCall, Reading, Region, Scan, ScanState, SectionTokens, UNCLOSED};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues, value_text};
use crate::protocol::textfmt::prompt::{bare_functions, content, each};
use crate::protocol::textfmt::readers::values::{decode_entities, infer_minimax};
use crate::tools::ToolDefinition;

const WRAPPER: &str = "<minimax:tool_call>";
const WRAPPER_END: &str = "</minimax:tool_call>";
const INVOKE: &str = "<invoke";
const INVOKE_END: &str = "</invoke>";
const PARAMETER: &str = "<parameter";
const PARAMETER_END: &str = "</parameter>";

/// The rules of `minimax_m2`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn sections(&self) -> Option<SectionTokens> {
        Some(SectionTokens { open: WRAPPER, call: INVOKE, end: WRAPPER_END })
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until_first(INVOKE.len(), &[INVOKE_END, INVOKE, WRAPPER_END])
    }

    fn read(&self, region: &str, state: &ScanState, _closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let head_end = region.find('>').unwrap_or(region.len());
        let head = region.get(INVOKE.len()..head_end).unwrap_or_default();
        let mut call =
            RawCall { span, name: attribute(head, "name").unwrap_or_default(), ..RawCall::default() };
        if call.name.is_empty() {
            call.problems.push("the <invoke> has no name attribute: write <invoke name=\"…\">".into());
        }
        if state.stage == UNCLOSED {
            call.problems.push("the <invoke> is not closed with </invoke>".into());
        }
        let mut rest = region.get(head_end + 1..).unwrap_or_default();
        while let Some(at) = rest.find(PARAMETER) {
            let after = rest.get(at + PARAMETER.len()..).unwrap_or_default();
            let Some(tag_end) = after.find('>') else { break };
            let key = attribute(after.get(..tag_end).unwrap_or_default(), "name").unwrap_or_default();
            let value_text = after.get(tag_end + 1..).unwrap_or_default();
            // The value ends at the last `</parameter>` before the next parameter (or the
            // end of the invoke), so a value may hold `</parameter>` itself.
            let limit = [value_text.find(PARAMETER), value_text.find(INVOKE_END)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(value_text.len());
            let end = value_text.get(..limit).and_then(|scope| scope.rfind(PARAMETER_END));
            let (value, next) = match end {
                Some(end) => {
                    (value_text.get(..end).unwrap_or_default(), value_text.get(end + PARAMETER_END.len()..))
                }
                None => {
                    call.problems.push(format!("the parameter `{key}` is not closed with </parameter>"));
                    (
                        value_text.find(INVOKE_END).and_then(|e| value_text.get(..e)).unwrap_or(value_text),
                        None,
                    )
                }
            };
            let value = decode_entities(value);
            call.text_arg(key, &value, infer_minimax(&value));
            let Some(next) = next else { break };
            rest = next;
        }
        calls.push(call);
    }
}

/// The value of attribute `name` (in double or single quotes) in a tag's text.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(at) = rest.find(name) {
        let after = rest.get(at + name.len()..).unwrap_or_default().trim_start();
        let boundary = at == 0 || rest.as_bytes().get(at - 1).is_some_and(|b| b.is_ascii_whitespace());
        if let (true, Some(value)) = (boundary, after.strip_prefix('=')) {
            let value = value.trim_start();
            let quote = value.chars().next()?;
            if quote == '"' || quote == '\'' {
                let inner = value.get(1..)?;
                let end = inner.find(quote)?;
                return Some(decode_entities(inner.get(..end)?).into_owned());
            }
            let end = value.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(value.len());
            return Some(value.get(..end)?.to_string());
        }
        rest = rest.get(at + name.len()..).unwrap_or_default();
    }
    None
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token(WRAPPER)],
    escapes: &[
        Escape::Tag("minimax:"),
        Escape::Tag("invoke"),
        Escape::Tag("parameter"),
        Escape::Tag("response"),
    ],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "# Tools\nYou may call one or more tools to assist with the user query.\n\
             Here are the tools available in JSONSchema format:\n\n<tools>\n{}\n</tools>\n\n\
             When making tool calls, use XML format to invoke tools and pass parameters:\n\n\
             <minimax:tool_call>\n<invoke name=\"tool-name-1\">\n<parameter name=\"param-key-1\">param-value-1</parameter>\n\
             <parameter name=\"param-key-2\">param-value-2</parameter>\n...\n</invoke>\n</minimax:tool_call>",
            bare_functions(tools).iter().map(|f| format!("<tool>{f}</tool>")).collect::<Vec<_>>().join("\n")
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        each(results, |r| format!("<response>{}</response>", content(r)), "\n")
    }

    /// A call as the grammar admits it, in a wrapper of its own: strings with `&` and `<`
    /// written as entities, other values as JSON (entities likewise).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut out = format!("{WRAPPER}\n{INVOKE} name=\"{name}\">");
        for (key, value) in args {
            let text = value_text(value);
            let text = text.replace('&', "&amp;").replace('<', "&lt;");
            out.push_str(&format!("\n{PARAMETER} name=\"{key}\">{text}{PARAMETER_END}"));
        }
        out.push_str(&format!("\n{INVOKE_END}\n{WRAPPER_END}"));
        Some(out)
    }

    /// The calls of `minimax_m2` as a grammar: one `<minimax:tool_call>` wrapper holding
    /// the calls, each `<invoke name="NAME">` with one `<parameter name="K">V</parameter>`
    /// a line in schema order, as the prompt shows. A value holds no `<parameter`,
    /// `</parameter>`, `<invoke`, `</invoke>` or `</minimax:tool_call>` (each would end it
    /// or the call) and no reasoning tag when reasoning is hidden; its white space is kept
    /// and its XML entities are decoded (so a written call has `&` and `<` as entities).
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        use crate::grammar::{Expr, Pattern, Section};
        let call = TextValues {
            avoid: vec![
                Pattern::text(PARAMETER),
                Pattern::text(PARAMETER_END),
                Pattern::text(INVOKE),
                Pattern::text(INVOKE_END),
                Pattern::text(WRAPPER_END),
            ],
            open: "",
            close: PARAMETER_END,
            key: &|key| format!("\n{PARAMETER} name=\"{key}\">"),
            call: &|name| (format!("\n{INVOKE} name=\"{name}\">"), format!("\n{INVOKE_END}")),
        }
        .calls(b, offer)?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(""), close: format!("\n{WRAPPER_END}") }),
            ..offer.syntax(WRAPPER, call)
        })
    }
}
