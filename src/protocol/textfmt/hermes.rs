//! `hermes`: a JSON object in `<tool_call>` tags (Hermes 2 Pro, Qwen 2.5, Qwen 3).
//!
//! ```text
//! <tool_call>
//! {"name": "get_weather", "arguments": {"city": "Paris"}}
//! </tool_call>
//! ```
//!
//! The line breaks inside the tags are optional. An object without `"arguments"` has
//! `{}`; arguments given as a JSON-encoded string are decoded. A block whose content is
//! not a call object is an incomplete request (the others still count). The closing tag
//! is found outside JSON strings, so arguments may contain `</tool_call>`.
//! Implementation-defined choices: a block never closed is an incomplete request even
//! when its JSON is whole.

use super::driver::{Format, Found, RawCall, Region, Scan, ScanState, Searches, after_blanks, inside};
use super::json::{Balanced, Quotes, call_object, scan_balanced};

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";

/// The rules of `hermes`.
pub(crate) struct Hermes;

/// Stages of a region.
const BEFORE_JSON: u8 = 0;
const IN_JSON: u8 = 1;
const AFTER_JSON: u8 = 2;
const FALLBACK: u8 = 3;

impl Format for Hermes {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, OPEN)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        scan_json_block(region, OPEN.len(), CLOSE)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let inner = inside(region, OPEN.len(), CLOSE, closed).trim();
        calls.push(match call_object(inner, &["arguments", "parameters"]) {
            Ok((name, args)) => RawCall { span: 0..region.len(), name, args, ..RawCall::default() },
            Err((name, problem)) => RawCall::broken(
                0..region.len(),
                name,
                format!("{problem}: write one JSON object with \"name\" and \"arguments\" inside <tool_call></tool_call>"),
            ),
        });
    }
}

/// Scans a region that is an opening tag (`open_len` bytes), a JSON object, and the
/// closing tag `close`: the object is balanced outside strings, so `close` inside a
/// string does not end it. Content that is not one object ends at the first `close`.
pub(crate) fn scan_json_block(scan: &mut Region<'_>, open_len: usize, close: &'static str) -> Scan {
    let (region, at_end, state) = (scan.text, scan.at_end, &mut *scan.state);
    let bytes = region.as_bytes();
    loop {
        match state.stage {
            BEFORE_JSON => {
                let at = after_blanks(bytes, state.pos.max(open_len));
                match bytes.get(at) {
                    None => {
                        state.pos = at;
                        return Scan::Open;
                    }
                    Some(b'{') => {
                        state.stage = IN_JSON;
                        state.mark = at;
                        state.pos = at;
                    }
                    Some(_) => {
                        state.stage = FALLBACK;
                        state.pos = at;
                    }
                }
            }
            IN_JSON => match scan_balanced(region, state.mark, state, Quotes::Json, Some(close)) {
                Balanced::End(end) => {
                    state.stage = AFTER_JSON;
                    state.pos = end;
                }
                // A closing tag outside any string ends a damaged object.
                Balanced::Tag(at) => return Scan::Closed(at + close.len()),
                Balanced::Open => return Scan::Open,
            },
            AFTER_JSON => {
                let rest = region.get(state.pos..).unwrap_or_default();
                let trimmed = rest.trim_start();
                let at = state.pos + (rest.len() - trimmed.len());
                if trimmed.starts_with(close) {
                    return Scan::Closed(at + close.len());
                }
                if trimmed.is_empty() || (close.starts_with(trimmed) && !at_end) {
                    return Scan::Open;
                }
                // Something after the object: the block ends at the next closing tag.
                state.stage = FALLBACK;
            }
            _ => {
                return super::driver::scan_for(region, state, open_len, close);
            }
        }
    }
}
