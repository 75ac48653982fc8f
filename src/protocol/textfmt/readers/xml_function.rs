//! The `<function=NAME>` call with `<parameter=KEY>` values, as Qwen3-Coder writes it
//! (`qwen3_coder_xml`, in `<tool_call>` tags) and Seed-OSS (`seed_oss`, in
//! `<seed:tool_call>` tags).
//!
//! Names and keys run to the `>`; values are raw text (quotes, `<`, `&` and line breaks
//! are content; entities are kept as written). A value on lines of its own loses the one
//! line break on each side (indentation is kept); a value on one line is trimmed.
//! Tolerated: a missing `</function>`; a missing `</parameter>` (the value ends at the
//! next `<parameter=` or `</function>`).

use super::values::{infer, unwrap_lines};
use crate::protocol::textfmt::driver::RawCall;

/// The function tag, its end, a parameter tag and its end.
pub(crate) const FUNCTION: &str = "<function=";
pub(crate) const FUNCTION_END: &str = "</function>";
pub(crate) const PARAMETER: &str = "<parameter=";
pub(crate) const PARAMETER_END: &str = "</parameter>";

/// The call of a region that holds `<function=NAME>…</function>` (in a wrapper that
/// `close` ends).
pub(crate) fn read_function(region: &str, close: &str, calls: &mut Vec<RawCall>) {
    let span = 0..region.len();
    let Some(at) = region.find(FUNCTION) else {
        calls.push(RawCall::broken(span, "", "no <function=NAME> in the call block: name the function"));
        return;
    };
    let rest = region.get(at + FUNCTION.len()..).unwrap_or_default();
    let Some(name_end) = rest.find('>') else {
        calls.push(RawCall::broken(span, "", "the <function=NAME> tag is not closed with `>`"));
        return;
    };
    let name = rest.get(..name_end).unwrap_or_default().trim().to_string();
    let body = rest.get(name_end + 1..).unwrap_or_default();
    // The body ends at `</function>`, or (when that is missing) at the wrapper's end.
    let end = body.find(FUNCTION_END).or_else(|| body.find(close)).unwrap_or(body.len());
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
