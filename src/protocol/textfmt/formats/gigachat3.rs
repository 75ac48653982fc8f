//! `gigachat3`: GigaChat 3 / 3.1: a JSON call object after a function-call header.
//!
//! ```text
//! Checking the weather.<|message_sep|>
//!
//! function call<|role_sep|>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}</s>
//! ```
//!
//! GigaChat 3 ends its text message with `<|message_sep|>` and opens a message of the
//! role `function call` (`<|message_sep|>`, white space, `function call<|role_sep|>`);
//! GigaChat 3.1 writes `<|function_call|>` instead. The header is followed by one JSON
//! object with `"name"` (a non-empty string) and `"arguments"` (an object); an object
//! without `"arguments"`, with arguments that are not an object (a JSON-encoded string
//! included, as vLLM does), or without a name is an incomplete request, and so is JSON
//! that does not parse or never closes. A `</s>` end-of-sequence marker after the object
//! is markup. Text before the header is normal text; text after the object is normal
//! text too.
//!
//! The model writes one call per reply; this crate reads every header of the reply, each
//! its own call (implementation-defined). A `<|message_sep|>` that does not open a
//! `function call` message stays in the normal text, as does a header with no JSON
//! object after it (that header is an incomplete request).
//!
//! **Grammar.** GigaChat 3.1's header, `<|function_call|>{"name": …, "arguments": {…}}`
//! per call (never GigaChat 3's `<|message_sep|>` header, nor a `</s>` after the object).
//! Free text holds neither `<|function_call|>` nor `<|message_sep|>`, and does not open
//! (after blanks) with `</s>`, which right after a call is read as its end marker.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, opening};
use crate::protocol::textfmt::prompt::{functions, named_results};
use crate::protocol::textfmt::readers::json::{
    Balanced, Quotes, call_json, call_json_head, call_value, name_guess, scan_balanced,
};
use crate::protocol::textfmt::readers::tagged::end_after_json;
use crate::tools::ToolDefinition;

pub(crate) const MESSAGE_SEP: &str = "<|message_sep|>";
pub(crate) const FUNCTION_CALL: &str = "<|function_call|>";
/// What follows `<|message_sep|>` (after white space) in a GigaChat 3 call.
const ROLE: &str = "function call<|role_sep|>";
const EOS: &str = "</s>";

/// Stages of a region.
const HEADER: u8 = 0;
const BEFORE_JSON: u8 = 1;
const IN_JSON: u8 = 2;
const AFTER_JSON: u8 = 3;
/// The header is followed by something other than an object.
const NO_JSON: u8 = 4;

/// The rules of `gigachat3`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.tokens(text, from, &[FUNCTION_CALL, MESSAGE_SEP]).0
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let (text, at_end, state) = (region.text, region.at_end, &mut *region.state);
        let bytes = text.as_bytes();
        loop {
            match state.stage {
                HEADER => {
                    if text.starts_with(FUNCTION_CALL) {
                        state.pos = FUNCTION_CALL.len();
                        state.stage = BEFORE_JSON;
                        continue;
                    }
                    let at = after_blanks(bytes, state.pos.max(MESSAGE_SEP.len()));
                    let rest = text.get(at..).unwrap_or_default();
                    if rest.starts_with(ROLE) {
                        state.pos = at + ROLE.len();
                        state.stage = BEFORE_JSON;
                    } else if !at_end && ROLE.starts_with(rest) {
                        state.pos = at;
                        return Scan::Open;
                    } else {
                        // The end of a message, not a call: the token is text.
                        return Scan::NotACall(MESSAGE_SEP.len());
                    }
                }
                BEFORE_JSON => {
                    let at = after_blanks(bytes, state.pos);
                    state.pos = at;
                    match bytes.get(at) {
                        None => return Scan::Open,
                        Some(b'{') => {
                            state.stage = IN_JSON;
                            state.mark = at;
                        }
                        Some(_) => {
                            state.stage = NO_JSON;
                            return Scan::Closed(at);
                        }
                    }
                }
                IN_JSON => match scan_balanced(text, state.mark, state, Quotes::Json, None) {
                    Balanced::End(end) => {
                        // From here `mark` is the object's end; `pos` goes on over blanks.
                        state.mark = end;
                        state.pos = end;
                        state.stage = AFTER_JSON;
                    }
                    _ => return Scan::Open,
                },
                // `</s>` may end the call; without it the call ends with the object.
                AFTER_JSON => return end_after_json(text, at_end, state, EOS),
                _ => return Scan::Closed(state.pos.min(text.len())),
            }
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let how = "write one JSON object with \"name\" and \"arguments\" after the function-call header";
        if state.stage == HEADER {
            // Cut off inside the header.
            calls.push(RawCall::broken(span, "", format!("the function-call header is unfinished: {how}")));
            return;
        }
        let start = header_end(region).map(|end| after_blanks(region.as_bytes(), end));
        let json = match (state.stage, start) {
            (AFTER_JSON, Some(start)) if closed => region.get(start..state.mark),
            (IN_JSON, Some(start)) => region.get(start..),
            _ => None,
        };
        let Some(json) = json else {
            calls.push(RawCall::broken(span, "", format!("no JSON object follows the header: {how}")));
            return;
        };
        if state.stage == IN_JSON {
            calls.push(RawCall::broken(
                span,
                name_guess(json),
                format!("the call's JSON never closes: {how}"),
            ));
            return;
        }
        calls.push(match serde_json::from_str::<Value>(json) {
            Ok(value) => match value.get("arguments") {
                Some(Value::Object(_)) => match call_value(value, &["arguments"]) {
                    Ok((name, args)) => RawCall { span, name, args, ..RawCall::default() },
                    Err((name, problem)) => RawCall::broken(span, name, format!("{problem}: {how}")),
                },
                other => {
                    let name = value.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                    let problem = match other {
                        None => "the call has no \"arguments\"".to_string(),
                        Some(_) => "the call's \"arguments\" is not a JSON object".to_string(),
                    };
                    RawCall::broken(span, name, format!("{problem}: {how}"))
                }
            },
            Err(e) => {
                RawCall::broken(span, name_guess(json), format!("the call is not valid JSON ({e}): {how}"))
            }
        });
    }
}

/// Where the header of a region ends (after `<|function_call|>`, or after
/// `<|message_sep|>`, blanks and `function call<|role_sep|>`).
fn header_end(region: &str) -> Option<usize> {
    if region.starts_with(FUNCTION_CALL) {
        return Some(FUNCTION_CALL.len());
    }
    let at = after_blanks(region.as_bytes(), MESSAGE_SEP.len());
    region.get(at..).is_some_and(|rest| rest.starts_with(ROLE)).then_some(at + ROLE.len())
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<|message_sep|>"), Marker::Token("<|function_call|>")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let list = serde_json::to_string_pretty(&Value::Array(functions(tools))).unwrap_or_default();
        format!(
            "You can call the following functions:\n{list}\n\n\
         To call a function, end your message and write a function call: {FUNCTION_CALL} followed by \
         one JSON object with the function's \"name\" and its \"arguments\" object:\n\
         {FUNCTION_CALL}{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n\
         Call one function at a time; its result comes back as a function result message."
        )
    }

    /// The text of the tool message that carries `results` back: the `function result`
    /// message's content, one JSON object per result (`"result"` or `"error"`), one per line.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        named_results(results, "result", "error")
    }

    /// A call of `name` with `args`, as the prompt teaches it (GigaChat 3.1's header).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{FUNCTION_CALL}{}", call_json(name, "arguments", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let head = |name: &str| call_json_head(name, "arguments");
        let markup =
            JsonMarkup { head: &head, index: None, tail: "}", tag_open: FUNCTION_CALL, tag_close: "" };
        JsonSyntax {
            markup,
            open: FUNCTION_CALL,
            section: None,
            avoid: vec![
                // GigaChat 3's header opens a call too.
                Pattern::text(MESSAGE_SEP),
                // Right after a call, `</s>` would be read as its end marker.
                opening(EOS),
            ],
            arguments: "arguments",
        }
        .build(b, offer)
    }
}
