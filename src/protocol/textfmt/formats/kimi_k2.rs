//! `kimi_k2`: calls between Kimi K2's section tokens, each with an id.
//!
//! ```text
//! <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>
//! ```
//!
//! The id `functions.NAME:INDEX` is the request's id (Kimi's template answers by it);
//! the name is what follows `functions.` up to the last `:` (dotted names keep their
//! dots; hyphens are accepted). An id without `:INDEX`, or arguments that are not one
//! JSON object, make an incomplete request; the other calls count. Each call is reported
//! when its `<|tool_call_end|>` arrives.

use crate::protocol::textfmt::readers::json::arguments;
use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Section, Syntax};
use crate::protocol::textfmt::driver::{RawCall, Reading, Region, Scan, ScanState, SectionTokens, inside};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text};
use crate::protocol::textfmt::prompt::{content, each, functions};
use crate::tools::ToolDefinition;

/// The rules of `kimi_k2`.
pub(crate) struct Rules;

const SECTION: &str = "<|tool_calls_section_begin|>";
const SECTION_END: &str = "<|tool_calls_section_end|>";
const CALL: &str = "<|tool_call_begin|>";
const ARGUMENTS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";

impl Reading for Rules {
    fn sections(&self) -> Option<SectionTokens> {
        Some(SectionTokens { open: SECTION, call: CALL, end: SECTION_END })
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(CALL.len(), CALL_END)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let body = inside(region, CALL.len(), CALL_END, closed);
        let (id, json) = match body.find(ARGUMENTS) {
            Some(at) => (
                body.get(..at).unwrap_or_default().trim(),
                body.get(at + ARGUMENTS.len()..).unwrap_or_default(),
            ),
            None => (body.trim(), ""),
        };
        let name_part = id.strip_prefix("functions.").unwrap_or(id);
        let (name, index) = match name_part.rsplit_once(':') {
            Some((name, index)) => (name.trim(), Some(index.trim())),
            None => (name_part, None),
        };
        let mut call = RawCall {
            span: span.clone(),
            name: name.to_string(),
            id: Some(id.to_string()),
            ..RawCall::default()
        };
        if !index.is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit())) {
            call.problems.push(format!("the call id `{id}` is not `functions.NAME:INDEX`"));
        }
        if !body.contains(ARGUMENTS) {
            call.problems.push(format!("the call has no {ARGUMENTS} before its arguments"));
        }
        match arguments(json) {
            Ok(args) => call.args = args,
            Err(problem) => call.problems.push(problem),
        }
        calls.push(call);
    }
}

/// `text` with every line that would read as a Kimi K2 result header (`## Return of …`)
/// made plain, its first `#` written as `&#35;`: a result cannot start another one.
fn kimi_headers(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            let rest = line.get(indent..).unwrap_or_default();
            let header = rest.get(..12).is_some_and(|head| head.eq_ignore_ascii_case("## return of"));
            match (header, line.get(..indent)) {
                (true, Some(indent)) => format!("{indent}&#35;{}", rest.get(1..).unwrap_or_default()),
                _ => line.to_string(),
            }
        })
        .collect()
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format { markers: &[Marker::Token(SECTION)], ..Format::of(&Rules) };

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "# Tools\n\n{}\n\nTo call tools, write <|tool_calls_section_begin|>, then for each call \
             <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{{JSON arguments}}<|tool_call_end|> \
             (INDEX counts the calls of the reply from 0), then <|tool_calls_section_end|>.",
            Value::Array(functions(tools))
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        each(
            results,
            |r| format!("## Return of {}\n{}", neutralize_tokens(&r.request_id), kimi_headers(&content(r))),
            "\n\n",
        )
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let args = json_text(&Value::Object(args.clone()));
        Some(format!("{SECTION}{CALL}functions.{name}:0{ARGUMENTS}{args}{CALL_END}{SECTION_END}"))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let head = |name: &str| format!("{CALL}functions.{name}:");
        // The index counts the reply's calls from 0: no more digits than that takes.
        let last = i128::from(offer.constraint.max_calls.max(1) - 1);
        let index = b.terminal("INDEX", crate::grammar::integer_range(Some(0), Some(last)));
        let markup = JsonMarkup {
            head: &head,
            index: Some((index, ARGUMENTS)),
            tail: CALL_END,
            tag_open: SECTION,
            tag_close: SECTION_END,
        };
        JsonSyntax {
            markup,
            open: SECTION,
            section: Some(Section { between: Expr::lit(""), close: SECTION_END.into() }),
            avoid: Vec::new(),
            arguments: "arguments",
        }
        .build(b, offer)
    }
}
