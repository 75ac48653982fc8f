//! `pythonic`: a Python list of calls with keyword arguments (Llama 3.2, Llama 4).
//!
//! ```text
//! [get_weather(city="Paris"), add(a=1, b=2)]
//! <|python_start|>[get_weather(city="Paris")]<|python_end|>
//! ```
//!
//! Values are Python literals (strings in either quote, numbers, `True`, `False`,
//! `None`, lists, tuples, dicts), converted to JSON. The list is found inside prose: it
//! starts at a `[` followed by a name and `(`; brackets and quotes inside strings are
//! content. A list that does not parse as calls is an incomplete request naming its
//! first function; one never closed likewise. Nesting deeper than 128 levels is refused.
//! Implementation-defined choice: text after the list is normal text.

use super::driver::{Format, Found, InSection, RawCall, Region, Scan, ScanState, Searches, partial_suffix};
use super::json::Quotes;
use crate::python::parse_call_list;

pub(crate) const START: &str = "<|python_start|>";
const END: &str = "<|python_end|>";
/// Longest function name a list may start with.
const MAX_NAME: usize = 256;

/// The rules of `pythonic`.
pub(crate) struct Pythonic;

/// Whether a call list starts at `at` (`[`, spaces, a name, spaces, `(`): `Some(true)`
/// yes, `Some(false)` no, `None` undecided (the text ends first).
pub(crate) fn list_starts(text: &str, at: usize) -> Option<bool> {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    let name_start = i;
    match bytes.get(i) {
        None => return None,
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
        Some(_) => return Some(false),
    }
    while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        i += 1;
        if i - name_start > MAX_NAME {
            return Some(false);
        }
    }
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    match bytes.get(i) {
        None => None,
        Some(b'(') => Some(true),
        Some(_) => Some(false),
    }
}

impl Format for Pythonic {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        let token = search.section(text, from, START);
        let limit = match token {
            Found::Section { at, .. } | Found::Hold(at) => at,
            _ => text.len(),
        };
        let mut search = from;
        while let Some(found) = text.as_bytes().get(search..limit).and_then(|hay| memchr::memchr(b'[', hay)) {
            let at = search + found;
            match list_starts(text, at) {
                Some(true) => return Found::Call(at),
                None => return Found::Hold(at),
                Some(false) => search = at + 1,
            }
        }
        token
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        let rest = text.get(from..).unwrap_or_default();
        let at = from + (rest.len() - rest.trim_start().len());
        let rest = text.get(at..).unwrap_or_default();
        if rest.is_empty() {
            return InSection::Hold(at);
        }
        if rest.starts_with(END) {
            return InSection::End { at, len: END.len() };
        }
        if partial_suffix(text, at, &[END]) == Some(at) {
            return InSection::Hold(at);
        }
        match list_starts(text, at) {
            Some(true) if rest.starts_with('[') => InSection::Call(at),
            None if rest.starts_with('[') => InSection::Hold(at),
            _ => InSection::Leave(at),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.balanced(Quotes::Python)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let first_name = || {
            let rest = region.get(1..).unwrap_or_default().trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
                .unwrap_or(rest.len());
            rest.get(..end).unwrap_or_default().to_string()
        };
        if !closed {
            calls.push(RawCall::broken(
                0..region.len(),
                first_name(),
                "the call list is never closed with `]`",
            ));
            return;
        }
        match parse_call_list(region) {
            Ok(list) => calls.extend(list.into_iter().map(|call| RawCall {
                span: call.span,
                name: call.name,
                args: call.args.into_iter().collect(),
                ..RawCall::default()
            })),
            Err(e) => calls.push(RawCall::broken(
                0..region.len(),
                first_name(),
                format!(
                    "the call list is not valid Python at byte {} ({}): write [name(key=value, …)]",
                    e.at, e.message
                ),
            )),
        }
    }
}
