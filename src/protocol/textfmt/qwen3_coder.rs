//! `qwen3_coder_xml`: XML-like parameters (Qwen3-Coder, Qwen 3.5).
//!
//! ```text
//! <tool_call>
//! <function=write_file>
//! <parameter=path>
//! src/main.rs
//! </parameter>
//! <parameter=content>
//! fn main() {}
//! </parameter>
//! </function>
//! </tool_call>
//! ```
//!
//! Names and keys run to the `>`; values are raw text (quotes, `<`, `&` and line breaks
//! are content; entities are kept as written). A value on lines of its own loses the one
//! line break on each side (indentation is kept); a value on one line is trimmed. Values
//! are typed as the module docs say. Tolerated: a missing `</function>`; a missing
//! `</parameter>` (the value ends at the next `<parameter=` or `</function>`).
//! Implementation-defined choices: a bare `<function=NAME>…</function>` without the
//! `<tool_call>` wrapper is a call; a block never closed is an incomplete request.

use super::driver::{Format, Found, RawCall, Region, Scan, ScanState, Searches};
use super::hermes::{CLOSE, OPEN};
use super::values::{infer, unwrap_lines};

const FUNCTION: &str = "<function=";
const FUNCTION_END: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";

/// The rules of `qwen3_coder_xml`.
pub(crate) struct Qwen3Coder;

impl Format for Qwen3Coder {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.tokens(text, from, &[OPEN, FUNCTION]).0
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let (open, close) =
            if region.text.starts_with(OPEN) { (OPEN, CLOSE) } else { (FUNCTION, FUNCTION_END) };
        region.until(open.len(), close)
    }

    fn read(&self, region: &str, _state: &ScanState, _closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let Some(at) = region.find(FUNCTION) else {
            calls.push(RawCall::broken(
                span,
                "",
                "no <function=NAME> in the <tool_call> block: name the function",
            ));
            return;
        };
        let rest = region.get(at + FUNCTION.len()..).unwrap_or_default();
        let Some(name_end) = rest.find('>') else {
            calls.push(RawCall::broken(span, "", "the <function=NAME> tag is not closed with `>`"));
            return;
        };
        let name = rest.get(..name_end).unwrap_or_default().trim().to_string();
        let body = rest.get(name_end + 1..).unwrap_or_default();
        // The body ends at `</function>`, or (when that is missing) at `</tool_call>`.
        let end = body.find(FUNCTION_END).or_else(|| body.find(CLOSE)).unwrap_or(body.len());
        let body = body.get(..end).unwrap_or_default();
        let mut call = RawCall { span, name, ..RawCall::default() };
        let mut rest = body;
        while let Some(at) = rest.find(PARAMETER) {
            let after = rest.get(at + PARAMETER.len()..).unwrap_or_default();
            let Some(key_end) = after.find('>') else { break };
            let key = after.get(..key_end).unwrap_or_default().trim().to_string();
            let value_text = after.get(key_end + 1..).unwrap_or_default();
            // The value ends at `</parameter>`, or else at the next parameter.
            let (value, next) = match (value_text.find(PARAMETER_END), value_text.find(PARAMETER)) {
                (Some(end), next) if next.is_none_or(|n| end < n) => {
                    (value_text.get(..end).unwrap_or_default(), value_text.get(end + PARAMETER_END.len()..))
                }
                (_, Some(next)) => (value_text.get(..next).unwrap_or_default(), value_text.get(next..)),
                (_, None) => (value_text, None),
            };
            let value = unwrap_lines(value);
            call.text_arg(key, value, infer(value));
            let Some(next) = next else { break };
            rest = next;
        }
        calls.push(call);
    }
}
