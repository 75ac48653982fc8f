//! `lfm2`: Liquid LFM2 / LFM2.5: a Python call list between `<|tool_call_start|>` and
//! `<|tool_call_end|>`.
//!
//! ```text
//! <|tool_call_start|>[get_weather(city="Paris"), add(a=1, b=2)]<|tool_call_end|>
//! The weather in Paris is sunny.
//! ```
//!
//! Between the two tokens stands a Python list of calls with keyword arguments, read
//! as the `pythonic` format reads its lists: values are Python literals (strings
//! in either quote, numbers, `True`/`False`/`None` and the JSON words
//! `true`/`false`/`null`, lists, tuples, dicts), converted to JSON; `f()` has `{}`;
//! names may be dotted (`grocery.order(…)`). Blanks around the list are allowed. Two
//! other payloads are read too, as sglang reads them: a JSON list of call objects
//! (`[{"name": …, "arguments": {…}}, …]`, `"parameters"` accepted, or one such object
//! alone) and a single call without the list brackets (`f(x=1)`).
//!
//! Several calls: elements of the list, and several blocks in a reply, in order. Normal
//! text: everything outside the blocks, before and after them (LFM2.5 often writes a
//! sentence after its calls). A lone `<|tool_call_end|>` outside a block (the model
//! sometimes echoes one) is dropped from the normal text.
//!
//! Malformed: a list that does not parse is split at its top-level commas and each
//! element read alone, so a bad call (a bytes literal, a name as value) is an incomplete
//! request while its siblings still count; a payload that is no list of calls is one
//! incomplete request. A block never closed with `<|tool_call_end|>` is one incomplete
//! request naming its first function.
//!
//! Implementation-defined choices: every block is read (vLLM reads the first one only,
//! sglang all); the block ends at the first `<|tool_call_end|>`
//! (both sources do; the writer escapes `<` in strings, so its calls never hold one);
//! an empty block (`[]`, or nothing) holds no call and stays normal text, as in vLLM;
//! the sources' repairs of broken Python (unescaped nested quotes, set literals) are
//! not made: such a call is incomplete (raw newlines and NUL characters in strings,
//! zero-padded integers and keyword-named parameters read as written); vLLM's dropping
//! of an echoed call body after the block is not done (the echo stays normal text, only
//! a lone end token goes).
//!
//! Grammar: one block holding one Python list of the calls,
//! `<|tool_call_start|>[NAME(key=value, …), …]<|tool_call_end|>`, keyword arguments in
//! schema order separated by `, `, values Python literals as `pythonic`'s grammar admits
//! them (strings in double quotes, `True`/`False`/`None`), with no raw `<` in a string
//! (the first `<|tool_call_end|>` ends the block wherever it stands). Free text holds no
//! `<|tool_call_start|>` and no `<|tool_call_end|>` (a lone one is dropped).

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, inside,
};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::{bare_functions, wrapped};
use crate::protocol::textfmt::readers::json::{Quotes, call_object, name_guess, split_elements, trim_range};
use crate::protocol::textfmt::readers::pythonic::{Literals, calls};
use crate::python::parse_call_list;
use crate::tools::ToolDefinition;

/// The token that opens a block of calls.
pub(crate) const START: &str = "<|tool_call_start|>";
/// The token that closes it.
pub(crate) const END: &str = "<|tool_call_end|>";
const RESPONSE_START: &str = "<|tool_response_start|>";
const RESPONSE_END: &str = "<|tool_response_end|>";

/// Section kind of a lone end token (dropped from normal text).
const LONE_END: u8 = 2;

/// Keys a JSON call object may carry its arguments under.
const ARG_KEYS: &[&str] = &["arguments", "parameters"];

/// The rules of `lfm2`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.marked(text, from, [(START, None), (END, Some(LONE_END))])
    }

    fn in_section(&self, _text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        InSection::Leave(from)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(START.len(), END)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let inner = inside(region, START.len(), END, closed);
        let body_range = trim_range(region, START.len()..START.len() + inner.len());
        let body = region.get(body_range.clone()).unwrap_or_default();
        let whole = 0..region.len();
        if !closed {
            calls.push(RawCall::broken(
                whole,
                first_name(body),
                "the call block is never closed with <|tool_call_end|>",
            ));
            return;
        }
        if body.is_empty() {
            return;
        }
        let offset = body_range.start;
        if looks_like_json(body) {
            read_json(body, offset, calls);
        } else if body.starts_with('[') {
            read_list(body, offset, calls);
        } else {
            // One call without the list's brackets.
            match parse_call_list(&format!("[{body}]")) {
                Ok(list) if list.len() == 1 => calls.extend(list.into_iter().map(|call| RawCall {
                    span: offset..offset + body.len(),
                    name: call.name,
                    args: call.args.into_iter().collect(),
                    ..RawCall::default()
                })),
                Ok(_) | Err(_) => calls.push(RawCall::broken(
                    offset..offset + body.len(),
                    first_name(body),
                    "the call block does not hold a Python list of calls: write \
                     <|tool_call_start|>[name(key=value, …)]<|tool_call_end|>",
                )),
            }
        }
    }
}

/// Whether the payload is JSON (an object, or a list whose first element is one).
fn looks_like_json(body: &str) -> bool {
    body.starts_with('{') || body.strip_prefix('[').is_some_and(|rest| rest.trim_start().starts_with('{'))
}

/// The name a damaged payload seems to call first, for messages.
fn first_name(body: &str) -> String {
    if looks_like_json(body) {
        return name_guess(body);
    }
    let rest = body.strip_prefix('[').unwrap_or(body).trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .unwrap_or(rest.len());
    rest.get(..end.min(256)).unwrap_or_default().to_string()
}

/// The calls of a Python list `body` (at `offset` in the region): all of them when it
/// parses, else each top-level element read alone.
fn read_list(body: &str, offset: usize, calls: &mut Vec<RawCall>) {
    let error = match parse_call_list(body) {
        Ok(list) => {
            calls.extend(list.into_iter().map(|call| RawCall {
                span: offset + call.span.start..offset + call.span.end,
                name: call.name,
                args: call.args.into_iter().collect(),
                ..RawCall::default()
            }));
            return;
        }
        Err(e) => e,
    };
    let whole_problem = || {
        format!(
            "the call list is not valid Python at byte {} ({}): write [name(key=value, …)]",
            error.at, error.message
        )
    };
    let elements = if body.ends_with(']') { split_elements(body, Quotes::Python) } else { Vec::new() };
    if elements.len() < 2 {
        calls.push(RawCall::broken(offset..offset + body.len(), first_name(body), whole_problem()));
        return;
    }
    for range in elements {
        let text = body.get(range.clone()).unwrap_or_default();
        let span = offset + range.start..offset + range.end;
        match parse_call_list(&format!("[{text}]")) {
            Ok(list) if list.len() == 1 => calls.extend(list.into_iter().map(|call| RawCall {
                span: span.clone(),
                name: call.name,
                args: call.args.into_iter().collect(),
                ..RawCall::default()
            })),
            Ok(_) => calls.push(RawCall::broken(
                span,
                first_name(text),
                "this element of the call list is not one call: write name(key=value, …)",
            )),
            Err(e) => calls.push(RawCall::broken(
                span,
                first_name(text),
                format!(
                    "this call is not valid Python at byte {} ({}): write name(key=value, …) \
                     with literal values",
                    e.at.saturating_sub(1),
                    e.message
                ),
            )),
        }
    }
}

/// The calls of a JSON payload `body` (at `offset`): a list of call objects, or one.
fn read_json(body: &str, offset: usize, calls: &mut Vec<RawCall>) {
    let elements = if body.starts_with('{') {
        std::iter::once(0..body.len()).collect()
    } else if body.ends_with(']') {
        split_elements(body, Quotes::Json)
    } else {
        calls.push(RawCall::broken(
            offset..offset + body.len(),
            name_guess(body),
            "the JSON call list is not closed with `]`",
        ));
        return;
    };
    for range in elements {
        let text = body.get(range.clone()).unwrap_or_default();
        let span = offset + range.start..offset + range.end;
        let hint = "write each call as {\"name\": …, \"arguments\": {…}}";
        calls.push(RawCall::read(span, call_object(text, ARG_KEYS), hint));
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format =
    Format { markers: &[Marker::Token("<|tool_call_start|>")], ..Format::of(&Rules) };

impl Writing for Rules {
    /// The tool-definition prompt: the tools as a JSON list between `<|tool_list_start|>`
    /// and `<|tool_list_end|>` (as LFM2's template writes them into the system turn), and
    /// how to call them.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let listed = bare_functions(tools).iter().map(Value::to_string).collect::<Vec<_>>().join(", ");
        format!(
            "List of tools: <|tool_list_start|>[{listed}]<|tool_list_end|>\n\n\
         To call tools, write a Python list of calls with keyword arguments between \
         <|tool_call_start|> and <|tool_call_end|>, values as Python literals:\n\
         <|tool_call_start|>[function_name(param_name=\"value\", other_param=2)]<|tool_call_end|>"
        )
    }

    /// The text of the tool message that carries `results` back: each result between
    /// `<|tool_response_start|>` and `<|tool_response_end|>`, as LFM2's template wraps a
    /// tool turn, one a line.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, RESPONSE_START, RESPONSE_END)
    }

    /// A call of `name` with `args`, as the prompt teaches it: one Python call list between
    /// the tokens (strings in double quotes, `<` escaped, so no token appears inside).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{START}{}{END}", crate::protocol::textfmt::readers::pythonic::write_list(name, args)))
    }

    /// The calls of `lfm2` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let call = calls(b, offer.methods, Literals::python(true))?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(", "), close: format!("]{END}") }),
            avoid: vec![Pattern::text(START), Pattern::text(END)],
            ..offer.syntax(format!("{START}["), call)
        })
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::{TextFormat, TextFormatProtocol};

    #[test]
    fn bad_sibling_is_incomplete_and_others_count() {
        let text = "<|tool_call_start|>[f(a=1), bad(x=b'z'), g()]<|tool_call_end|>";
        let parsed = TextFormatProtocol::new(TextFormat::Lfm2).parse(text);
        let names: Vec<(&str, bool)> =
            parsed.requests.iter().map(|r| (r.tool_name.as_str(), r.complete)).collect();
        assert_eq!(names, [("f", true), ("bad", false), ("g", true)], "{parsed:#?}");
    }

    #[test]
    fn lone_end_token_is_dropped() {
        let parsed = TextFormatProtocol::new(TextFormat::Lfm2).parse("Done.<|tool_call_end|> Bye");
        assert_eq!(parsed.normal_text, "Done. Bye");
        assert!(parsed.requests.is_empty());
    }
}
