//! The reader of a block of JSON calls: an optional opening marker, a JSON array of
//! `{"name": …, "arguments": {…}}` objects (or one object), an optional closing markup
//! ([`Block`] says which). `granite`, `xlam`, `phi4_mini`, `hunyuan`, `jamba` and
//! `minimax_m1` read their calls with it, and share [`pretty_functions`] to write (their
//! call objects are [`call_json`]'s, in `json`).

use serde_json::{Map, Value};

use super::json::{
    Balanced, Quotes, call_json, call_json_head, call_list, call_value, name_guess, scan_balanced,
    split_elements,
};
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::json_kind;
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks, scan_for,
};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer};
use crate::protocol::textfmt::prompt::functions;
use crate::tools::ToolDefinition;

/// How a block of JSON calls is delimited and read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    /// The length of the opening marker (0: a bare array).
    pub open_len: usize,
    /// The closing markup, if the block has one.
    pub close: Option<&'static str>,
    /// Content that is not calls is prose rather than a damaged call (a bare array, a
    /// fenced block): it is read only when it holds call objects.
    pub tentative: bool,
    /// A single call object is accepted in place of the array.
    pub single: bool,
    /// The keys that carry the arguments, first the one the prompt teaches.
    pub keys: &'static [&'static str],
    /// Whether an element without arguments is not a call (else it has `{}`).
    pub require: bool,
    /// The markup, for messages.
    pub what: &'static str,
}

/// Stages of a block region.
const START: u8 = 0;
const JSON: u8 = 1;
const AFTER: u8 = 2;
const FALLBACK: u8 = 3;
const NOTHING: u8 = 4;

/// Scans a block: the opening marker, blanks, a JSON array (or object, when `single`),
/// blanks and the closing markup. Resumable; the array is balanced outside strings.
pub(crate) fn scan_block(scan: &mut Region<'_>, block: &Block) -> Scan {
    let (region, at_end) = (scan.text, scan.at_end);
    let state = &mut *scan.state;
    let bytes = region.as_bytes();
    loop {
        match state.stage {
            START => {
                let at = after_blanks(bytes, state.pos.max(block.open_len));
                state.pos = at;
                match bytes.get(at) {
                    None => return Scan::Open,
                    Some(b'[') => {
                        if block.tentative && block.open_len == 0 {
                            // A bare list of calls holds objects: `[1, 2]` or `[Note…` is
                            // prose at once, not held back until its end.
                            match bytes.get(after_blanks(bytes, at + 1)) {
                                None if !at_end => return Scan::Open,
                                Some(b'{') => {}
                                _ => return Scan::NotACall(at + 1),
                            }
                        }
                        state.stage = JSON;
                        state.mark = at;
                    }
                    Some(b'{') if block.single => {
                        state.stage = JSON;
                        state.mark = at;
                    }
                    Some(_) if block.tentative => return Scan::NotACall(block.open_len.max(1)),
                    Some(_) => match block.close {
                        Some(_) => state.stage = FALLBACK,
                        None => {
                            state.stage = NOTHING;
                            return Scan::Closed(at);
                        }
                    },
                }
            }
            JSON => {
                let stop = block.close.filter(|close| close.starts_with('<'));
                match scan_balanced(region, state.mark, state, Quotes::Json, stop) {
                    Balanced::End(end) => {
                        state.stage = AFTER;
                        state.pos = end;
                        if block.close.is_none() {
                            let json = region.get(state.mark..end).unwrap_or_default();
                            if block.tentative && !holds_calls(json, block) {
                                return Scan::NotACall(end);
                            }
                            return Scan::Closed(end);
                        }
                    }
                    // The closing markup outside any string ends a damaged array.
                    Balanced::Tag(at) => {
                        return Scan::Closed(at + block.close.map_or(0, str::len));
                    }
                    Balanced::Open => return Scan::Open,
                }
            }
            AFTER => {
                let Some(close) = block.close else { return Scan::Closed(state.pos) };
                // Blanks after the array are passed once (`pos` moves past them).
                let at = after_blanks(bytes, state.pos);
                state.pos = at;
                let rest = region.get(at..).unwrap_or_default();
                if rest.starts_with(close) {
                    let json = region.get(state.mark..json_end(region, state.mark)).unwrap_or_default();
                    if block.tentative && !holds_calls(json, block) {
                        return Scan::NotACall(at + close.len());
                    }
                    return Scan::Closed(at + close.len());
                }
                if rest.is_empty() || (close.starts_with(rest) && !at_end) {
                    return Scan::Open;
                }
                if block.tentative {
                    return Scan::NotACall(json_end(region, state.mark));
                }
                // Something after the array: the block ends at its closing markup.
                state.stage = FALLBACK;
            }
            FALLBACK => {
                return match block.close {
                    Some(close) => scan_for(region, state, block.open_len, close),
                    None => Scan::Closed(state.pos),
                };
            }
            _ => return Scan::Closed(state.pos),
        }
    }
}

/// Where the balanced JSON value that opens at `mark` ends (the region's end if it
/// does not).
fn json_end(region: &str, mark: usize) -> usize {
    match scan_balanced(region, mark, &mut ScanState::default(), Quotes::Json, None) {
        Balanced::End(end) => end,
        _ => region.len(),
    }
}

/// Whether `json` is an array of call objects (or one, when `single`).
fn holds_calls(json: &str, block: &Block) -> bool {
    let is_call = |v: &Value| v.get("name").is_some_and(Value::is_string);
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Array(items)) => !items.is_empty() && items.iter().all(is_call),
        Ok(value @ Value::Object(_)) => block.single && is_call(&value),
        _ => false,
    }
}

/// The calls of a block region that ended (`closed`) or was cut off.
pub(crate) fn read_block(
    region: &str,
    state: &ScanState,
    closed: bool,
    block: &Block,
    calls: &mut Vec<RawCall>,
) {
    let span = 0..region.len();
    let what = block.what;
    let from_mark = region.get(state.mark..).unwrap_or_default();
    match state.stage {
        AFTER => {
            if block.tentative && !closed {
                return;
            }
            let json = region.get(state.mark..json_end(region, state.mark)).unwrap_or_default();
            read_json(json, state.mark, closed, block, calls);
        }
        JSON if closed => calls.push(RawCall::broken(
            span,
            name_guess(from_mark),
            format!("the JSON after {what} is damaged: its markup closes before the array does"),
        )),
        FALLBACK if closed => calls.push(RawCall::broken(
            span,
            name_guess(region),
            format!("{what} does not hold one JSON array of calls"),
        )),
        NOTHING => calls.push(RawCall::broken(
            span,
            "",
            format!("nothing usable follows {what}: write a JSON array of {{\"name\": …, \"arguments\": {{…}}}} objects"),
        )),
        _ if block.tentative => {}
        _ => calls.push(RawCall::broken(span, name_guess(from_mark), format!("the call list after {what} is never closed"))),
    }
}

/// The calls of a complete JSON array (or object) `json`, which starts at `offset` in the
/// region; `closed`: the block's closing markup came.
pub(crate) fn read_json(json: &str, offset: usize, closed: bool, block: &Block, calls: &mut Vec<RawCall>) {
    let whole = offset..offset + json.len();
    let what = block.what;
    // The usual list in one pass, each call straight into the request's types; anything
    // else below, which says what is wrong.
    if let Some(list) = call_list(json, offset, block.keys, false) {
        for mut call in list {
            if !closed {
                call.problems.push(format!("the call list after {what} is never closed"));
            }
            calls.push(call);
        }
        return;
    }
    let value = match serde_json::from_str::<Value>(json) {
        Ok(value) => value,
        Err(e) => {
            calls.push(RawCall::broken(
                whole,
                name_guess(json),
                format!("the call list after {what} is not valid JSON ({e})"),
            ));
            return;
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            calls.push(RawCall::broken(whole, "", format!("the call list after {what} holds no call")));
        }
        Value::Array(items) => {
            let ranges = split_elements(json, Quotes::Json);
            for (i, item) in items.into_iter().enumerate() {
                let span = ranges.get(i).map_or(whole.clone(), |r| offset + r.start..offset + r.end);
                calls.push(element(item, span, closed, block));
            }
        }
        value @ Value::Object(_) if block.single => calls.push(element(value, whole, closed, block)),
        other => calls.push(RawCall::broken(
            whole,
            "",
            format!("what follows {what} is {}, not an array of calls", json_kind(&other)),
        )),
    }
}

/// One element of a call list.
pub(crate) fn element(value: Value, span: std::ops::Range<usize>, closed: bool, block: &Block) -> RawCall {
    let has_args = value.as_object().is_some_and(|o| block.keys.iter().any(|k| o.contains_key(*k)));
    let key = block.keys.first().copied().unwrap_or("arguments");
    match call_value(value, block.keys) {
        Ok((name, _)) if block.require && !has_args => RawCall::broken(
            span,
            name,
            format!("the call has no `{key}`: write {{\"name\": …, \"{key}\": {{…}}}}"),
        ),
        Ok((name, args)) if !closed => RawCall {
            span,
            name,
            args,
            problems: vec![format!("the call list after {} is never closed", block.what)],
            ..RawCall::default()
        },
        read => RawCall::read(span, read, format_args!("write {{\"name\": …, \"{key}\": {{…}}}}")),
    }
}

/// Where a reply that is a bare array begins (blanks before it), for formats that read
/// one: `Some(found)` when that decides it.
pub(crate) fn bare_array(text: &str, from: usize, reply_start: bool) -> Option<Found> {
    if !reply_start {
        return None;
    }
    let bytes = text.as_bytes();
    let at = after_blanks(bytes, from);
    match bytes.get(at) {
        Some(b'[') => Some(Found::Call(at)),
        None => Some(Found::Hold(from)),
        Some(_) => None,
    }
}

/// The syntax of a format that writes its calls as one JSON list, `open` (ending with
/// its `[`), call objects as [`call_json`] writes them (arguments under `"arguments"`)
/// joined by `, `, then `close` (starting with its `]`); free text holds none of `avoid`
/// (nor `open`).
pub(crate) fn list_syntax(
    b: &mut Builder,
    offer: &Offer<'_>,
    (open, close): (&str, &str),
    avoid: Vec<Pattern>,
) -> Result<Syntax, GrammarError> {
    let head = |name: &str| call_json_head(name, "arguments");
    let markup = JsonMarkup { head: &head, index: None, tail: "}", tag_open: open, tag_close: close };
    JsonSyntax {
        markup,
        open,
        section: Some(Section { between: Expr::lit(", "), close: close.into() }),
        avoid,
        arguments: "arguments",
    }
    .build(b, offer)
}

/// `intro`, then each function of `tools` as indented JSON followed by a blank line.
pub(crate) fn pretty_functions(intro: &str, tools: &[ToolDefinition]) -> String {
    let mut out = String::from(intro);
    for function in functions(tools) {
        out.push_str(&serde_json::to_string_pretty(&function).unwrap_or_default());
        out.push_str("\n\n");
    }
    out
}

/// The tags of a list of calls (`hunyuan`, `jamba`, `minimax_m1`, `hunyuan_v3`).
pub(crate) const TOOL_CALLS: &str = "<tool_calls>";
/// Their closing tag.
pub(crate) const TOOL_CALLS_END: &str = "</tool_calls>";

const TAGGED_BLOCK: Block = Block {
    open_len: TOOL_CALLS.len(),
    close: Some(TOOL_CALLS_END),
    tentative: false,
    single: false,
    keys: &["arguments"],
    require: true,
    what: TOOL_CALLS,
};

/// A block found by its opening `marker` and read as [`Block`] says: the reading of the
/// tagged array and of `phi4_mini`'s `functools[` list.
pub(crate) struct MarkedBlock {
    pub marker: &'static str,
    pub block: Block,
}

/// A JSON array of calls between `<tool_calls>` and `</tool_calls>`, and nothing else:
/// the reading of `jamba`, and the calls of `hunyuan`.
pub(crate) const TAGGED_ARRAY: MarkedBlock = MarkedBlock { marker: TOOL_CALLS, block: TAGGED_BLOCK };

impl Reading for MarkedBlock {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, self.marker)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        scan_block(region, &self.block)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_block(region, state, closed, &self.block, calls);
    }
}

/// The calls as the tagged array writes them.
pub(crate) fn tagged_calls(name: &str, args: &Map<String, Value>) -> String {
    format!("{TOOL_CALLS}[{}]{TOOL_CALLS_END}", call_json(name, "arguments", args))
}
