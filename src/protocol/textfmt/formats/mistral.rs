//! `mistral`: `[TOOL_CALLS]` followed by a JSON array of calls, or by one call's name
//! and arguments (Mistral, Mixtral, Mistral Small).
//!
//! ```text
//! array layout: [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! name layout:  [TOOL_CALLS]get_weather{"city": "Paris"}
//!               [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
//! ```
//!
//! Any whitespace (or none) may follow the token; the token written twice in a row
//! counts once. Each array element is a call with
//! `"name"` and `"arguments"` (an object, or a JSON-encoded string holding one); an
//! element that is not is an incomplete request, the others count. Strings stay strings.
//! A token with nothing usable after it, an array or object never closed, or array JSON
//! that does not parse, give an incomplete request. Text after the array is normal text.

use serde_json::{Map, Value, json};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text};
use crate::protocol::textfmt::prompt::{content, each, functions};
use crate::protocol::textfmt::readers::json::{
    Balanced, Quotes, arguments, call_list, call_object, name_guess, scan_balanced, split_elements,
};
use crate::tools::ToolDefinition;

const TOKEN: &str = "[TOOL_CALLS]";
/// The token and the array it opens, as the prompt teaches calls.
const ARRAY_OPEN: &str = "[TOOL_CALLS][";
const ARGS: &str = "[ARGS]";

const START: u8 = 0;
const ARRAY: u8 = 1;
const NAME: u8 = 2;
const OBJECT: u8 = 3;
/// Nothing usable followed the token.
const NOTHING: u8 = 4;

/// The rules of `mistral`.
pub(crate) struct Rules;

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/') || b >= 0x80
}

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, TOKEN)
    }

    fn scan(&self, scan: &mut Region<'_>) -> Scan {
        let (region, at_end) = (scan.text, scan.at_end);
        let state = &mut *scan.state;
        let bytes = region.as_bytes();
        loop {
            match state.stage {
                START => {
                    let at = after_blanks(bytes, state.pos.max(TOKEN.len()));
                    state.pos = at;
                    let rest = region.get(at..).unwrap_or_default();
                    if rest.starts_with(TOKEN) {
                        // The token repeated (some models write it twice): one token.
                        state.pos = at + TOKEN.len();
                        continue;
                    }
                    let cut_token = |token: &str| rest.len() < token.len() && token.starts_with(rest);
                    if !at_end && (cut_token(ARGS) || cut_token(TOKEN)) {
                        // `[` may begin `[ARGS]`, the token again, or an array: wait.
                        return Scan::Open;
                    }
                    match bytes.get(at) {
                        None => return Scan::Open,
                        Some(b'[') if !rest.starts_with(ARGS) => {
                            state.stage = ARRAY;
                            state.mark = at;
                        }
                        Some(b'{') => {
                            state.stage = OBJECT;
                            state.mark = at;
                        }
                        Some(&b) if is_name_byte(b) => state.stage = NAME,
                        Some(_) => {
                            state.stage = NOTHING;
                            return Scan::Closed(at);
                        }
                    }
                }
                ARRAY | OBJECT => {
                    return match scan_balanced(region, state.mark, state, Quotes::Json, None) {
                        Balanced::End(end) => Scan::Closed(end),
                        _ => Scan::Open,
                    };
                }
                NAME => {
                    let mut i = state.pos;
                    while bytes.get(i).is_some_and(|&b| is_name_byte(b)) {
                        i += 1;
                    }
                    state.pos = i;
                    let rest = region.get(i..).unwrap_or_default();
                    if rest.is_empty() || (!at_end && ARGS.starts_with(rest)) {
                        return Scan::Open;
                    }
                    let after_args = rest.strip_prefix(ARGS).map_or(i, |_| i + ARGS.len());
                    let at = after_blanks(bytes, after_args);
                    match bytes.get(at) {
                        None => return Scan::Open,
                        Some(b'{') => {
                            state.stage = OBJECT;
                            state.mark = at;
                        }
                        Some(_) => {
                            state.stage = NOTHING;
                            return Scan::Closed(i);
                        }
                    }
                }
                _ => return Scan::Closed(state.pos),
            }
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let json = region.get(state.mark..).unwrap_or_default();
        match state.stage {
            ARRAY if closed => read_array(json, state.mark, calls),
            ARRAY => {
                calls.push(RawCall::broken(span, name_guess(json), "the [TOOL_CALLS] array is never closed"))
            }
            OBJECT => {
                let head = region.get(TOKEN.len()..state.mark).unwrap_or_default();
                let name = head.trim().trim_end_matches(ARGS).trim().to_string();
                match arguments(json) {
                    Ok(args) if closed => calls.push(RawCall { span, name, args, ..RawCall::default() }),
                    Ok(_) => calls.push(RawCall { span, name, ..RawCall::default() }),
                    Err(problem) => calls.push(RawCall::broken(span, name, problem)),
                }
            }
            NAME => {
                let name =
                    region.get(TOKEN.len()..).unwrap_or_default().trim().trim_end_matches(ARGS).to_string();
                calls.push(RawCall::broken(span, name, "the call has no arguments object after its name"));
            }
            _ => calls.push(RawCall::broken(
                span,
                "",
                "nothing usable follows [TOOL_CALLS]: write a JSON array of calls, or NAME{arguments}",
            )),
        }
    }
}

/// The keys of a call's arguments, the one the prompt teaches first.
const KEYS: &[&str] = &["arguments", "parameters"];

/// The calls of a closed array (`json` starts at `offset` in the region).
fn read_array(json: &str, offset: usize, calls: &mut Vec<RawCall>) {
    let whole = offset..offset + json.len();
    // The usual array in one pass; anything else below, which says what is wrong.
    if let Some(list) = call_list(json, offset, KEYS, false) {
        calls.extend(list);
        return;
    }
    // Checked whole first (without building it: each element is read into its call
    // below), so that a damaged array is one broken call, not a run of guesses.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(json) {
        calls.push(RawCall::broken(
            whole,
            name_guess(json),
            format!("the [TOOL_CALLS] array is not valid JSON ({e})"),
        ));
        return;
    }
    let elements = split_elements(json, Quotes::Json);
    if elements.is_empty() {
        calls.push(RawCall::broken(whole, "", "the [TOOL_CALLS] array holds no call"));
        return;
    }
    for element in elements {
        let span = offset + element.start..offset + element.end;
        let text = json.get(element).unwrap_or_default();
        let hint = "write {\"name\": …, \"arguments\": {…}}";
        calls.push(RawCall::read(span, call_object(text, KEYS), hint));
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token(TOKEN)],
    escapes: &[
        Escape::Bracket(TOKEN),
        Escape::Bracket(ARGS),
        Escape::Bracket("[TOOL_RESULTS]"),
        Escape::Bracket("[/TOOL_RESULTS]"),
        Escape::Bracket("[CALL_ID]"),
    ],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "[AVAILABLE_TOOLS]{}[/AVAILABLE_TOOLS]\n\nTo call tools, write [TOOL_CALLS] followed by a JSON array of \
             {{\"name\": …, \"arguments\": {{…}}}} objects.",
            Value::Array(functions(tools))
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        each(
            results,
            |r| {
                format!(
                    "[TOOL_RESULTS]{}[/TOOL_RESULTS]",
                    json!({"name": neutralize_tokens(&r.tool_name), "content": content(r)})
                )
            },
            "",
        )
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let (name, args) =
            (json_text(&Value::String(name.to_string())), json_text(&Value::Object(args.clone())));
        Some(format!("{ARRAY_OPEN}{{\"name\": {name}, \"arguments\": {args}}}]"))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let head =
            |name: &str| format!("{{\"name\": {}, \"arguments\": ", json_text(&Value::String(name.into())));
        let markup = JsonMarkup { head: &head, index: None, tail: "}", tag_open: ARRAY_OPEN, tag_close: "]" };
        JsonSyntax {
            markup,
            open: ARRAY_OPEN,
            section: Some(Section { between: Expr::lit(", "), close: "]".into() }),
            // The token alone opens a call too.
            avoid: vec![Pattern::text(TOKEN)],
            arguments: "arguments",
        }
        .build(b, offer)
    }
}
