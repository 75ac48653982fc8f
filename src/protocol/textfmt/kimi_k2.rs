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

use super::deepseek::arguments;
use super::driver::{Format, RawCall, Region, Scan, ScanState, SectionTokens, inside};

/// The rules of `kimi_k2`.
pub(crate) struct KimiK2;

pub(crate) const SECTION: &str = "<|tool_calls_section_begin|>";
const SECTION_END: &str = "<|tool_calls_section_end|>";
const CALL: &str = "<|tool_call_begin|>";
const ARGUMENTS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";

impl Format for KimiK2 {
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
