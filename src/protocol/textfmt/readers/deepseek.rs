//! DeepSeek's call tokens, read and written for `deepseek_v3` (DeepSeek V3, R1) and
//! `deepseek_v31` (DeepSeek V3.1): calls between DeepSeek's special tokens (the bars are
//! U+FF5C, the underscores U+2581), each version's prompt, and the results both write.
//!
//! ```text
//! V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//!       ```json
//!       {"city": "Paris"}
//!       ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! Each call is reported when its `<｜tool▁call▁end｜>` arrives. A call whose argument
//! JSON does not parse is an incomplete request; the others count. Implementation-defined
//! choices: the V3 type word is not checked; a call outside a `<｜tool▁calls▁begin｜>`
//! section is read too; an `<｜end▁of▁sentence｜>` right after the section is markup.

use serde_json::{Map, Value};

use super::json::arguments;
use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, inside,
};
use crate::protocol::textfmt::format::Writing;
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text};
use crate::protocol::textfmt::prompt::{content, each, methods};
use crate::tools::ToolDefinition;

pub(crate) const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
pub(crate) const CALLS_END: &str = "<｜tool▁calls▁end｜>";
pub(crate) const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
pub(crate) const CALL_END: &str = "<｜tool▁call▁end｜>";
pub(crate) const SEP: &str = "<｜tool▁sep｜>";
const END_OF_SENTENCE: &str = "<｜end▁of▁sentence｜>";

/// The rules of `deepseek_v3` (`v31: false`) and `deepseek_v31`.
pub(crate) struct DeepSeek {
    pub(crate) v31: bool,
}

impl Reading for DeepSeek {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.marked(text, from, [(CALLS_BEGIN, Some(1)), (CALL_BEGIN, None)])
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, search: &mut Searches) -> InSection {
        match search.call_or_end(text, from, CALL_BEGIN, CALLS_END) {
            InSection::End { at, len } => {
                // An end-of-sentence token right after the section is its markup too.
                let rest = text.get(at + len..).unwrap_or_default();
                if rest.starts_with(END_OF_SENTENCE) {
                    InSection::End { at, len: len + END_OF_SENTENCE.len() }
                } else if END_OF_SENTENCE.starts_with(rest) {
                    // Nothing (or part of the token) after it yet: wait. At the end of the
                    // reply, what waits is the section's markup.
                    InSection::Hold(at)
                } else {
                    InSection::End { at, len }
                }
            }
            other => other,
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(CALL_BEGIN.len(), CALL_END)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let body = inside(region, CALL_BEGIN.len(), CALL_END, closed);
        let Some(sep) = body.find(SEP) else {
            calls.push(RawCall::broken(
                span,
                "",
                format!("the call has no {SEP} between its name and arguments"),
            ));
            return;
        };
        let head = body.get(..sep).unwrap_or_default();
        let tail = body.get(sep + SEP.len()..).unwrap_or_default();
        let (name, json) = if self.v31 {
            (head.trim().to_string(), tail.trim())
        } else {
            // `function<｜tool▁sep｜>NAME\n```json\n{…}\n```` (the type word is not checked).
            let line_end = tail.find('\n').unwrap_or(tail.len());
            let name = tail.get(..line_end).unwrap_or_default().trim().to_string();
            (name, strip_fence(tail.get(line_end..).unwrap_or_default()))
        };
        calls.push(match arguments(json) {
            Ok(args) => RawCall { span, name, args, ..RawCall::default() },
            Err(problem) => RawCall::broken(span, name, problem),
        });
    }
}

/// The JSON inside a ```` ```json ```` fence (or the text, trimmed, when there is none).
fn strip_fence(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```") else { return text };
    let inner = inner.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

impl DeepSeek {
    /// How this version writes a call.
    fn layout(&self) -> &'static CallLayout {
        if self.v31 { &V31_LAYOUT } else { &V3_LAYOUT }
    }
}

/// What both versions write: each its own prompt and call layout, the same results.
impl Writing for DeepSeek {
    /// The tool-definition prompt: each method with its description and JSON parameters,
    /// then how calls are written, worded as the version's template words it.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        if self.v31 { v31_prompt(tools) } else { v3_prompt(tools) }
    }

    /// The text of the tool message that carries `results` back (V3 and V3.1 alike).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        format!(
            "<｜tool▁outputs▁begin｜>{}<｜tool▁outputs▁end｜>",
            each(results, |r| format!("<｜tool▁output▁begin｜>{}<｜tool▁output▁end｜>", content(r)), "")
        )
    }

    /// A section of one call, in the version's layout.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(self.layout().write(name, args))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        self.layout().syntax(b, offer)
    }
}

/// V3's prompt: each method's JSON parameters in a fence, as its calls carry them.
fn v3_prompt(tools: &[ToolDefinition]) -> String {
    let mut out = String::from("## Tools\n\n### Function\n\nYou have the following functions available:\n");
    for (name, description, parameters) in methods(tools) {
        out.push_str(&format!("\n- `{name}`: {description}\n```json\n{parameters}\n```\n"));
    }
    out.push_str(
        "\nTo call functions, write:\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>FUNCTION_NAME\n\
         ```json\n{ARGUMENTS}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    );
    out
}

/// V3.1's prompt.
fn v31_prompt(tools: &[ToolDefinition]) -> String {
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

/// How a DeepSeek version writes one call: `head(NAME)`, the JSON arguments, then `tail`,
/// in a `<｜tool▁calls▁begin｜>` section.
struct CallLayout {
    head: fn(&str) -> String,
    tail: &'static str,
}

/// V3's call: the type word, the name on its line, the arguments in a JSON fence.
const V3_LAYOUT: CallLayout = CallLayout {
    head: |name| format!("{CALL_BEGIN}function{SEP}{name}\n```json\n"),
    tail: "\n```<｜tool▁call▁end｜>",
};

/// V3.1's call: the name, the separator, the arguments.
const V31_LAYOUT: CallLayout = CallLayout { head: |name| format!("{CALL_BEGIN}{name}{SEP}"), tail: CALL_END };

impl CallLayout {
    /// A section of one call of `name` with `args`.
    fn write(&self, name: &str, args: &Map<String, Value>) -> String {
        let args = json_text(&Value::Object(args.clone()));
        format!("{CALLS_BEGIN}{}{args}{}{CALLS_END}", (self.head)(name), self.tail)
    }

    /// The calls the offer holds as a grammar: calls chained in one section, as
    /// [`write`](Self::write) writes them.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let markup = JsonMarkup {
            head: &self.head,
            index: None,
            tail: self.tail,
            tag_open: CALLS_BEGIN,
            tag_close: CALLS_END,
        };
        JsonSyntax {
            markup,
            open: CALLS_BEGIN,
            section: Some(Section { between: Expr::lit(""), close: CALLS_END.into() }),
            // The parser reads a call outside a section too.
            avoid: vec![Pattern::text(CALL_BEGIN)],
            arguments: "arguments",
        }
        .build(b, offer)
    }
}
