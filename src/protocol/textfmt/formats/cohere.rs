//! `cohere`: Cohere Command R / Command A: `<|START_ACTION|>` with a JSON list of `tool_name`/`parameters` objects.
//!
//! ```text
//! <|START_THINKING|>I need the weather.<|END_THINKING|><|START_ACTION|>[
//!     {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
//! ]<|END_ACTION|>
//! ```
//!
//! An action block holds a JSON array of call objects, or one call object. Each object
//! names the function under `"tool_name"` (or `"name"`) and carries the arguments under
//! `"parameters"` (or `"arguments"`; neither: `{}`; a JSON-encoded string is decoded).
//! `"tool_call_id"` is not an argument, and is not taken as the request's id (ids the
//! model numbers from 0 in every turn would repeat). Several calls are several objects
//! of one array, or several action blocks.
//!
//! Normal text is the reply without the action blocks, without the thinking blocks
//! (`<|START_THINKING|>` … `<|END_THINKING|>`, read by the one reasoning rule as
//! `<think>` tags are: dropped whole, a block never closed hides the rest of the reply;
//! with `skip_reasoning(false)` their tokens are framing and their text is text) and
//! without the framing tokens
//! `<|START_RESPONSE|>`, `<|END_RESPONSE|>`, `<|START_TEXT|>`, `<|END_TEXT|>` (the text
//! between them stays). Unlike smg, the text is not trimmed. Citation markup
//! (`<co>` … `</co: …>`), which vLLM's filter removes, is left in the text
//! (implementation-defined).
//!
//! The block ends at the first `<|END_ACTION|>` outside a JSON string, so a value may
//! hold `<|END_ACTION|>`. A block whose content is not JSON is one incomplete request;
//! an element of the array that is not a call object is an incomplete request, and the
//! other elements still count. A block never closed is an incomplete request
//! (sglang recovers its calls, smg drops it: the spec's rule).
//!
//! **Grammar.** One action of calls as the prompt shows it: `<|START_ACTION|>[` and a
//! line break and four spaces, call objects `{"tool_call_id": "N", "tool_name": …,
//! "parameters": {…}}` joined by `,` and a line break and four spaces, then a line break and
//! `]<|END_ACTION|>`; each id a number below the grammar's most calls (bounded, not checked
//! to count up). Free text holds no `<|START_ACTION|>`, neither thinking token and none of
//! the framing tokens: the grammar admits no thinking block of Cohere's own (a reply may
//! open with a `<think>` block, which holds neither thinking token) and no response
//! framing, so a constrained reply is plain text and an action. The JSON Schema of one
//! call is that object, its id one of the numbers.

use serde_json::{Map, Value, json};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CallObject, Expr, GrammarError, Pattern, Section, Syntax, integer_range};
use crate::protocol::reasoning::{self, Markup};
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks, inside,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonPieces, Offer, Piece, json_text};
use crate::protocol::textfmt::prompt::{bare_functions, content};
use crate::protocol::textfmt::readers::json::{Quotes, call_list, call_value, name_guess, split_elements};
use crate::protocol::textfmt::readers::tagged::{BEFORE_JSON, IN_JSON, scan_json_block};
use crate::tools::ToolDefinition;

pub(crate) const START_ACTION: &str = "<|START_ACTION|>";
const END_ACTION: &str = "<|END_ACTION|>";
pub(crate) const START_THINKING: &str = "<|START_THINKING|>";
const END_THINKING: &str = "<|END_THINKING|>";
const FRAMING: [&str; 4] = ["<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>"];
const RESULT_OPEN: &str = "<|START_TOOL_RESULT|>";
const RESULT_CLOSE: &str = "<|END_TOOL_RESULT|>";

/// Section kind: a framing token (left at once).
const FRAME: u8 = 1;

/// Reasoning: the thinking block, its tokens read as `<think>` tags are.
static REASONING: Markup = Markup::new(&[reasoning::Section::tags(START_THINKING, &[END_THINKING])], &[]);

/// The rules of `cohere`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        // (The thinking tokens are framing too when reasoning is read as text.)
        let tokens =
            [START_ACTION, START_THINKING, END_THINKING, FRAMING[0], FRAMING[1], FRAMING[2], FRAMING[3]];
        match search.tokens(text, from, &tokens) {
            (Found::Call(at), 0) => Found::Call(at),
            (Found::Call(at), i) => {
                let len = tokens.get(i).map_or(0, |t| t.len());
                Found::Section { at, len, kind: FRAME }
            }
            (other, _) => other,
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        if region.state.stage == BEFORE_JSON {
            // An array is balanced like an object (hermes' scan only opens on `{`).
            let bytes = region.text.as_bytes();
            let at = after_blanks(bytes, region.state.pos.max(START_ACTION.len()));
            if bytes.get(at) == Some(&b'[') {
                region.state.stage = IN_JSON;
                region.state.mark = at;
            }
            region.state.pos = at;
        }
        scan_json_block(region, START_ACTION.len(), END_ACTION)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let whole = 0..region.len();
        let raw = inside(region, START_ACTION.len(), END_ACTION, closed);
        let inner = raw.trim();
        let offset = START_ACTION.len() + (raw.len() - raw.trim_start().len());
        // The usual action in one pass; anything else below, which says what is wrong.
        if let Some(list) = call_list(inner, offset, &["parameters", "arguments"], true) {
            calls.extend(list);
            return;
        }
        match serde_json::from_str::<Value>(inner) {
            Ok(Value::Array(items)) => {
                let ranges = split_elements(inner, Quotes::Json);
                for (i, item) in items.into_iter().enumerate() {
                    let span = ranges.get(i).map_or(whole.clone(), |r| offset + r.start..offset + r.end);
                    calls.push(call(item, span));
                }
                if calls.is_empty() {
                    calls.push(RawCall::broken(
                        whole,
                        "",
                        "the action holds an empty list: write at least one call",
                    ));
                }
            }
            Ok(value) => calls.push(call(value, whole)),
            Err(e) => calls.push(RawCall::broken(
                whole,
                tool_name_guess(inner),
                format!(
                    "the action is not valid JSON ({e}): write {START_ACTION}[{{\"tool_call_id\": \"0\", \
                     \"tool_name\": …, \"parameters\": {{…}}}}]{END_ACTION}"
                ),
            )),
        }
    }
}

/// One call object of an action.
fn call(value: Value, span: std::ops::Range<usize>) -> RawCall {
    let value = match value {
        Value::Object(mut object) => {
            if let Some(name) = object.remove("tool_name") {
                object.insert("name".into(), name);
            }
            Value::Object(object)
        }
        other => other,
    };
    let hint = "each call is an object with \"tool_name\" and \"parameters\"";
    RawCall::read(span, call_value(value, &["parameters", "arguments"]), hint)
}

/// The JSON Schema of the `tool_call_id` of a reply of at most `most` calls: `"0"` on,
/// each one (past a thousand, any number of as many digits as the last).
fn call_ids(most: u32) -> Value {
    if most <= 1000 {
        return json!({"enum": (0..most).map(|i| i.to_string()).collect::<Vec<_>>()});
    }
    let digits = (most - 1).to_string().len();
    json!({"type": "string", "pattern": format!("^(0|[1-9][0-9]{{0,{}}})$", digits - 1)})
}

/// The `"tool_name"` (or `"name"`) of text that is not valid JSON, for messages.
fn tool_name_guess(text: &str) -> String {
    let Some(at) = text.find("\"tool_name\"") else { return name_guess(text) };
    name_guess(&format!("\"name\"{}", text.get(at + "\"tool_name\"".len()..).unwrap_or_default()))
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<|START_ACTION|>"),
        Marker::Token("<|START_THINKING|>"),
        Marker::Token("<|START_RESPONSE|>"),
        Marker::Token("<|START_TEXT|>"),
        Marker::Token("<|END_THINKING|>"),
    ],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let list = serde_json::to_string_pretty(&Value::Array(bare_functions(tools))).unwrap_or_default();
        format!(
            "## Available Tools\n\nThese are the tools you can use, and the only ones:\n\n```json\n{list}\n```\n\n\
         To use tools, first think in {START_THINKING} … {END_THINKING} about which to call. Then write \
         {START_ACTION} followed by a JSON list of the calls, each an object with \"tool_call_id\" (numbered \
         from \"0\"), \"tool_name\" and \"parameters\" fields, and close it with {END_ACTION}. Calls that do not \
         depend on each other go in the same list. The results come back in the next turn between \
         {RESULT_OPEN} and {RESULT_CLOSE}, each linked to its call by \"tool_call_id\"; never invent them.\n\n\
         {START_ACTION}[\n    {{\"tool_call_id\": \"0\", \"tool_name\": <tool-name>, \"parameters\": <params-json-object>}}\n]{END_ACTION}\n\n\
         To answer the user, write the answer between <|START_RESPONSE|> and <|END_RESPONSE|>."
        )
    }

    /// The text of the tool message that carries `results` back.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        let items: Vec<String> = results
        .iter()
        .map(|r| {
            let id = Value::String(neutralize_tokens(&r.request_id).into_owned());
            let output = json!({"0": {"content": content(r)}});
            let error = if r.is_success() { Value::Null } else { Value::Bool(true) };
            format!(
                "    {{\n        \"tool_call_id\": {id},\n        \"results\": {output},\n        \"is_error\": {error}\n    }}"
            )
        })
        .collect();
        format!("{RESULT_OPEN}[\n{}\n]{RESULT_CLOSE}", items.join(",\n"))
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let name = json_text(&Value::String(name.to_string()));
        let args = json_text(&Value::Object(args.clone()));
        Some(format!(
            "{START_ACTION}[\n    {{\"tool_call_id\": \"0\", \"tool_name\": {name}, \"parameters\": {args}}}\n]{END_ACTION}"
        ))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let (open, close) = (format!("{START_ACTION}[\n    "), format!("\n]{END_ACTION}"));
        // The id numbers the calls of the reply from "0": no more than it takes.
        let most = offer.constraint.max_calls.max(1);
        let index = b.terminal("INDEX", integer_range(Some(0), Some(i128::from(most) - 1)));
        let pieces = |name: &str| {
            vec![
                Piece::Text("{\"tool_call_id\": \"".into()),
                Piece::Index,
                Piece::Text(format!(
                    "\", \"tool_name\": {}, \"parameters\": ",
                    json_text(&Value::String(name.to_string()))
                )),
                Piece::Arguments,
                Piece::Text("}".into()),
            ]
        };
        // (The thinking tokens are framing when reasoning is read as text, and reasoning
        // markup when it is hidden: free text holds neither way.)
        let mut avoid =
            vec![Pattern::text(START_ACTION), Pattern::text(START_THINKING), Pattern::text(END_THINKING)];
        avoid.extend(FRAMING.iter().map(|t| Pattern::text(t)));
        JsonPieces {
            pieces: &pieces,
            index: Some(index),
            tag_open: &open,
            tag_close: &close,
            object: CallObject::Named { before: vec![("tool_call_id".into(), call_ids(most))] },
            open: &open,
            section: Some(Section { between: Expr::lit(",\n    "), close: close.clone() }),
            avoid,
            keys: ("tool_name", "parameters"),
        }
        .build(b, offer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::textfmt::test_support::read_all;

    #[test]
    fn array_elements_have_their_own_spans() {
        let text = "<|START_ACTION|>[{\"tool_name\": \"a\"}, 3]<|END_ACTION|>";
        let calls = read_all(&Rules, text);
        assert_eq!(calls.len(), 2);
        assert_eq!(&text[calls[0].span.clone()], "{\"tool_name\": \"a\"}");
        assert!(calls[0].problems.is_empty());
        assert_eq!(&text[calls[1].span.clone()], "3");
        assert!(!calls[1].problems.is_empty());
        assert_eq!(tool_name_guess("{\"tool_name\": \"f\", \"parameters\": {"), "f");
    }
}
