//! `minimax_m1`: MiniMax-M1: JSON lines in `<tool_calls>` tags.
//!
//! ```text
//! I will check both.
//! <tool_calls>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}
//! {"name": "add", "arguments": {"a": 1, "b": 2}}
//! </tool_calls>
//! ```
//!
//! Inside the section each call is one JSON object with `"name"` (a non-empty string)
//! and `"arguments"` (an object, or a JSON-encoded string holding one), usually one a
//! line; blanks between them do not matter. Calls come out in order, several sections in
//! a reply one after the other. A section inside `<think>…</think>` is reasoning.
//!
//! Normal text: everything outside the sections. An object without `"name"` or
//! `"arguments"`, one that does not parse, or a line that is not an object, is an
//! incomplete request and the other lines count. A section whose `</tool_calls>` never
//! comes still gives the calls whose objects closed (as vLLM does); an object cut off by
//! the end of the reply is an incomplete request. `</tool_calls>` inside a JSON string
//! does not close the section. Implementation-defined choices: an object may span several
//! lines (it ends where its braces balance; vLLM reads line by line and misses it); text
//! after `</tool_calls>` is normal text.
//!
//! **Grammar.** One section, `<tool_calls>` and a line break, one call object `{"name": …,
//! "arguments": {…}}` a line, then a line break and `</tool_calls>`; free text holds no
//! `<tool_calls>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer};
use crate::protocol::textfmt::prompt::{content, functions};
use crate::protocol::textfmt::readers::json::{Balanced, Quotes, name_guess, scan_balanced};
use crate::protocol::textfmt::readers::json::{call_json, call_json_head};
use crate::protocol::textfmt::readers::json_list::{
    Block, TOOL_CALLS as OPEN, TOOL_CALLS_END as CLOSE, element,
};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_calls};
use crate::tools::ToolDefinition;

const BLOCK: Block = Block {
    open_len: 0,
    close: Some(CLOSE),
    tentative: false,
    single: true,
    keys: &["arguments"],
    require: true,
    what: OPEN,
};

/// Stages of a call region.
const START: u8 = 0;
const OBJECT: u8 = 1;
const LINE: u8 = 2;

/// The rules of `minimax_m1`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.section(text, from, OPEN)
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        let at = after_blanks(text.as_bytes(), from);
        let rest = text.get(at..).unwrap_or_default();
        if rest.starts_with(CLOSE) {
            InSection::End { at, len: CLOSE.len() }
        } else if rest.is_empty() || CLOSE.starts_with(rest) {
            InSection::Hold(at)
        } else {
            InSection::Call(at)
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        if region.state.stage == START {
            region.state.stage = if region.text.starts_with('{') { OBJECT } else { LINE };
        }
        if region.state.stage == OBJECT {
            return match scan_balanced(region.text, 0, region.state, Quotes::Json, Some(CLOSE)) {
                Balanced::End(end) => Scan::Closed(end),
                // The section closes inside a damaged object: the object ends there.
                Balanced::Tag(at) => Scan::Closed(at),
                Balanced::Open => Scan::Open,
            };
        }
        // Not an object: the rest of the line (or of the section) is what was written.
        match region.earliest(0, &["\n", CLOSE]) {
            Some((at, _)) => Scan::Closed(at.max(1)),
            None => Scan::Open,
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        if state.stage == LINE {
            calls.push(RawCall::broken(
                span,
                name_guess(region),
                format!(
                    "`{}` inside {OPEN} is not a JSON call object: write one {{\"name\": …, \"arguments\": {{…}}}} a line",
                    region.trim().chars().take(40).collect::<String>()
                ),
            ));
            return;
        }
        if !closed {
            calls.push(RawCall::broken(
                span,
                name_guess(region),
                "the call object is cut off before it closes",
            ));
            return;
        }
        match serde_json::from_str::<Value>(region) {
            Ok(value) => calls.push(element(value, span, true, &BLOCK)),
            Err(e) => calls.push(RawCall::broken(
                span,
                name_guess(region),
                format!("the call inside {OPEN} is not valid JSON ({e})"),
            )),
        }
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Shared { token: OPEN, look: after_tool_calls, shape: Shape::JsonLines }],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, as the MiniMax-M1 template words it: the tools as JSON
    /// lines in `<tools>`, then the call format.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut out = String::from("You are provided with these tools:\n<tools>\n");
        for function in functions(tools) {
            out.push_str(&function.to_string());
            out.push('\n');
        }
        out.push_str(
        "</tools>\n\nIf you need to call tools, please respond with <tool_calls></tool_calls> XML tags, and provide \
         tool-name and json-object of arguments, following the format below:\n<tool_calls>\n\
         {\"name\": <tool-name>, \"arguments\": <args-json-object>}\n...\n</tool_calls>",
    );
        out
    }

    /// The text of the tool message that carries `results` back, as the MiniMax-M1 template
    /// renders a tool turn: `tool name: NAME`, `tool result: TEXT`, and a blank line, per
    /// result.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
            .iter()
            .map(|r| {
                format!("tool name: {}\ntool result: {}\n\n", neutralize_tokens(&r.tool_name), content(r))
            })
            .collect()
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{OPEN}\n{}\n{CLOSE}", call_json(name, "arguments", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let (open, close) = (format!("{OPEN}\n"), format!("\n{CLOSE}"));
        let head = |name: &str| call_json_head(name, "arguments");
        let markup = JsonMarkup { head: &head, index: None, tail: "}", tag_open: &open, tag_close: &close };
        JsonSyntax {
            markup,
            open: &open,
            section: Some(Section { between: Expr::lit("\n"), close: close.clone() }),
            avoid: vec![Pattern::text(OPEN)],
            arguments: "arguments",
        }
        .build(b, offer)
    }
}
