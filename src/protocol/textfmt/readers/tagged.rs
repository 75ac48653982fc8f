//! Tagged JSON blocks: one call object between an opening and a closing tag, as
//! `hermes` writes it (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`) and other
//! formats under tag names of their own (`longcat`, `ernie45`, `internlm`, …), with the
//! prompt, results and calls of that layout.
//!
//! The line breaks inside the tags are optional. An object without `"arguments"` has
//! `{}`; arguments given as a JSON-encoded string are decoded. A block whose content is
//! not a call object is an incomplete request (the others still count). The closing tag
//! is found outside JSON strings, so arguments may contain `</tool_call>`. A block never
//! closed is an incomplete request even when its JSON is whole.

use std::fmt::Display;

use serde_json::{Map, Value};

use super::json::{Balanced, Quotes, call_json, call_json_head, call_object, scan_balanced};
use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks, inside, scan_for,
};
use crate::protocol::textfmt::format::Writing;
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer};
use crate::protocol::textfmt::prompt::{functions, lines, wrapped};
use crate::tools::ToolDefinition;

/// The tag of a call that `hermes` and others write (`qwen3_coder_xml`, the GLM formats,
/// `granite`, …, around calls of their own).
pub(crate) const TOOL_CALL: &str = "<tool_call>";
/// Its closing tag.
pub(crate) const TOOL_CALL_END: &str = "</tool_call>";

/// Hermes' rules under a format's tag names: one call object between `open` and `close`.
pub(crate) struct Tagged {
    pub open: &'static str,
    pub close: &'static str,
}

/// Stages of a region.
pub(crate) const BEFORE_JSON: u8 = 0;
pub(crate) const IN_JSON: u8 = 1;
pub(crate) const AFTER_JSON: u8 = 2;
pub(crate) const FALLBACK: u8 = 3;

impl Reading for Tagged {
    fn markup_lead(&self) -> Option<u8> {
        self.open.as_bytes().first().copied()
    }

    fn region_end_lead(&self) -> Option<u8> {
        self.close.as_bytes().first().copied()
    }

    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, self.open)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        scan_json_block(region, self.open.len(), self.close)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_json_block(region, self.open, self.close, closed, calls);
    }
}

/// Scans a region that is an opening tag (`open_len` bytes), a JSON object, and the
/// closing tag `close`: the object is balanced outside strings, so `close` inside a
/// string does not end it. Content that is not one object ends at the first `close`.
pub(crate) fn scan_json_block(scan: &mut Region<'_>, open_len: usize, close: &'static str) -> Scan {
    scan_json(scan, &JsonRegion { open_len, close, opens: b"{", ends_with_value: false })
}

/// A region of an opening (`open_len` bytes), a JSON value, and the closing tag `close`.
pub(crate) struct JsonRegion {
    pub open_len: usize,
    pub close: &'static str,
    /// The brackets that may open the value (`{`; `[{` when a list may stand there).
    pub opens: &'static [u8],
    /// Something other than `close` after the value ends the region with the value
    /// (stage [`NO_CLOSE`]); else the region ends at the next `close`.
    pub ends_with_value: bool,
}

/// The value closed and something other than the closing tag followed: the region ends
/// with the value (`mark`).
pub(crate) const NO_CLOSE: u8 = 4;

/// Scans a region as `r` says: the value is balanced outside strings, so `close` inside a
/// string does not end it; content that is not a value ends at the first `close`.
pub(crate) fn scan_json(scan: &mut Region<'_>, r: &JsonRegion) -> Scan {
    let (region, at_end, state) = (scan.text, scan.at_end, &mut *scan.state);
    let bytes = region.as_bytes();
    loop {
        match state.stage {
            BEFORE_JSON => {
                if !json_start(bytes, state, r.open_len, r.opens) {
                    return Scan::Open;
                }
            }
            IN_JSON => {
                if let Some(scan) = in_json(region, state, r.close) {
                    return scan;
                }
            }
            AFTER_JSON => {
                if let Some(scan) = close_after_json(region, at_end, state, r.close) {
                    return scan;
                }
                if r.ends_with_value {
                    state.stage = NO_CLOSE;
                    return Scan::Closed(state.mark);
                }
                // Something after the object: the block ends at the next closing tag.
                state.stage = FALLBACK;
            }
            NO_CLOSE => return Scan::Closed(state.mark),
            _ => return scan_for(region, state, r.open_len, r.close),
        }
    }
}

/// The stage before the JSON value of a block: past the blanks after the opening
/// (`open_len` bytes), one of `opens` opens the value (stage [`IN_JSON`], `mark` on it)
/// and anything else sends the region to [`FALLBACK`]; `false` when the text ends first.
pub(crate) fn json_start(bytes: &[u8], state: &mut ScanState, open_len: usize, opens: &[u8]) -> bool {
    let at = after_blanks(bytes, state.pos.max(open_len));
    state.pos = at;
    match bytes.get(at) {
        None => return false,
        Some(byte) if opens.contains(byte) => {
            state.stage = IN_JSON;
            state.mark = at;
        }
        Some(_) => state.stage = FALLBACK,
    }
    true
}

/// The stage [`IN_JSON`], the object balanced outside strings: when it ends, the region
/// goes on to [`AFTER_JSON`] with `pos` and `mark` on its end (`None`). `close` outside any
/// string ends a damaged object and the region with it; text that ends first waits.
pub(crate) fn in_json(text: &str, state: &mut ScanState, close: &str) -> Option<Scan> {
    match scan_balanced(text, state.mark, state, Quotes::Json, Some(close)) {
        Balanced::End(end) => {
            state.stage = AFTER_JSON;
            state.pos = end;
            state.mark = end;
            None
        }
        Balanced::Tag(at) => Some(Scan::Closed(at + close.len())),
        Balanced::Open => Some(Scan::Open),
    }
}

/// The stage [`AFTER_JSON`]: past white space, `close` ends the region after it; nothing
/// yet, or the start of `close` while more text may come, waits. `None`: something else
/// follows the object (at `pos`, moved past the white space).
pub(crate) fn close_after_json(text: &str, at_end: bool, state: &mut ScanState, close: &str) -> Option<Scan> {
    let rest = text.get(state.pos..).unwrap_or_default();
    let trimmed = rest.trim_start();
    let at = state.pos + (rest.len() - trimmed.len());
    if trimmed.starts_with(close) {
        return Some(Scan::Closed(at + close.len()));
    }
    state.pos = at;
    if trimmed.is_empty() || (close.starts_with(trimmed) && !at_end) {
        return Some(Scan::Open);
    }
    None
}

/// The stage after a JSON value that the token `end` may follow, not must: past blanks,
/// `end` ends the region after it, and the start of it waits while more text may come;
/// anything else (or nothing more) ends the region with the value (`mark`).
pub(crate) fn end_after_json(text: &str, at_end: bool, state: &mut ScanState, end: &str) -> Scan {
    let at = after_blanks(text.as_bytes(), state.pos);
    state.pos = at;
    let rest = text.get(at..).unwrap_or_default();
    if rest.starts_with(end) {
        return Scan::Closed(at + end.len());
    }
    if !at_end && end.starts_with(rest) {
        return Scan::Open;
    }
    Scan::Closed(state.mark)
}

/// The call of a block that [`scan_json_block`] scanned: one JSON object with `"name"`
/// and `"arguments"` (or `"parameters"`) between `open` and `close`.
pub(crate) fn read_json_block(region: &str, open: &str, close: &str, closed: bool, calls: &mut Vec<RawCall>) {
    let keys = ["arguments", "parameters"];
    read_call_object(
        region,
        open.len(),
        close,
        closed,
        &keys,
        calls,
        format_args!("write one JSON object with \"name\" and \"arguments\" inside {open}{close}"),
    );
}

/// The call object between the opening (`open_len` bytes) and `close` of a region, its
/// arguments under one of `keys`; `hint` follows the problem of one that is not a call.
pub(crate) fn read_call_object(
    region: &str,
    open_len: usize,
    close: &str,
    closed: bool,
    keys: &[&str],
    calls: &mut Vec<RawCall>,
    hint: impl Display,
) {
    let inner = inside(region, open_len, close, closed).trim();
    calls.push(RawCall::read(0..region.len(), call_object(inner, keys), hint));
}

/// The tool-definition prompt of a format that writes Hermes' call objects in tags of
/// its own (`open`, `close`).
pub(crate) fn tagged_prompt(tools: &[ToolDefinition], open: &str, close: &str) -> String {
    format!(
        "## Tools\n\nYou can call the functions below to help with the user's request. Their \
         signatures are listed inside <tools></tools> tags:\n<tools>\n{}\n</tools>\n\n\
         To call a function, write a JSON object with its name and arguments inside \
         {open}{close} tags, one block per call:\n{open}\n\
         {{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n{close}",
        lines(&functions(tools))
    )
}

/// Each result between `open` and `close` on lines of their own, one block a line.
pub(crate) fn tagged_results(results: &[ToolExecutionResult], open: &str, close: &str) -> String {
    wrapped(results, &format!("{open}\n"), &format!("\n{close}"))
}

/// A call of `name` with `args` as Hermes writes it, in the tags `open` and `close`.
pub(crate) fn tagged_call(name: &str, args: &Map<String, Value>, open: &str, close: &str) -> String {
    format!("{open}\n{}\n{close}", call_json(name, "arguments", args))
}

/// The syntax of calls as [`tagged_call`] writes them between `open` and `close`; free
/// text holds neither `open` nor any of `avoid`.
pub(crate) fn tagged_syntax(
    b: &mut Builder,
    offer: &Offer<'_>,
    (open, close): (&str, &str),
    avoid: Vec<Pattern>,
) -> Result<Syntax, GrammarError> {
    let head = |name: &str| format!("\n{}", call_json_head(name, "arguments"));
    let tail = format!("}}\n{close}");
    let markup = JsonMarkup { head: &head, index: None, tail: &tail, tag_open: open, tag_close: "" };
    JsonSyntax { markup, open, section: None, avoid, arguments: "arguments" }.build(b, offer)
}

/// What a format writes that puts Hermes' call objects in tags of its own (`longcat`,
/// `ernie45`): the prompt of [`tagged_prompt`], results between the `results` tags,
/// calls as [`tagged_call`] writes them, and their grammar, whose free text also holds
/// none of `avoid`.
pub(crate) struct TaggedWriting {
    pub open: &'static str,
    pub close: &'static str,
    pub results: (&'static str, &'static str),
    pub avoid: &'static [&'static str],
}

impl Writing for TaggedWriting {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        tagged_prompt(tools, self.open, self.close)
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tagged_results(results, self.results.0, self.results.1)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(tagged_call(name, args, self.open, self.close))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let avoid = self.avoid.iter().map(|text| Pattern::text(text)).collect();
        tagged_syntax(b, offer, (self.open, self.close), avoid)
    }
}
