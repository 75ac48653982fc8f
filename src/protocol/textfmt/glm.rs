//! `glm45` (GLM-4.5, GLM-4.6) and `glm47` (GLM-4.7, GLM-5): a name, then key/value
//! pairs in tags.
//!
//! ```text
//! <tool_call>get_weather
//! <arg_key>city</arg_key>
//! <arg_value>Paris</arg_value>
//! </tool_call>
//! ```
//!
//! `glm45` takes the name up to the first line break (or, tolerated, up to the first
//! `<arg_key>` when there is none); `glm47` takes the first run of characters up to
//! whitespace or `<`, so `<tool_call>NAME</tool_call>` is a call with `{}`. Keys and
//! values are trimmed; values are typed as the module docs say (a JSON array or object
//! written as the value becomes that value). A block never closed by `</tool_call>` is
//! an incomplete request.

use super::driver::{Format, Found, RawCall, Region, Scan, ScanState, Searches, inside};
use super::hermes::{CLOSE, OPEN};
use super::values::infer;

/// As [`infer`]; an array or object written with its quotes backslash-escaped (`[{\"a\":
/// 1}]`, a serving stack's double escaping) is read unescaped once.
fn infer_escaped(value: &str) -> serde_json::Value {
    let inferred = infer(value);
    let escaped = value.starts_with(['[', '{']) && value.contains("\\\"");
    if !(inferred.is_string() && escaped) {
        return inferred;
    }
    let quoted = format!("\"{value}\"");
    match serde_json::from_str::<String>(&quoted).map(|unescaped| infer(&unescaped)) {
        Ok(value @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => value,
        _ => inferred,
    }
}

/// The rules of `glm45` and `glm47`.
pub(crate) struct Glm {
    pub(crate) v47: bool,
}

impl Format for Glm {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, OPEN)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(OPEN.len(), CLOSE)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        const KEY: &str = "<arg_key>";
        const KEY_END: &str = "</arg_key>";
        const VALUE: &str = "<arg_value>";
        const VALUE_END: &str = "</arg_value>";
        let body = inside(region, OPEN.len(), CLOSE, closed);
        let name_end = if self.v47 {
            let trimmed = body.len() - body.trim_start().len();
            trimmed
                + body
                    .get(trimmed..)
                    .unwrap_or_default()
                    .find(|c: char| c.is_whitespace() || c == '<')
                    .unwrap_or(body.len() - trimmed)
        } else {
            // The name runs to the end of its line (a blank before it is skipped).
            let lead = body.len() - body.trim_start().len();
            let name_part = body.get(lead..).unwrap_or_default();
            lead + match (name_part.find('\n'), name_part.find(KEY)) {
                (Some(line), Some(key)) => line.min(key),
                (Some(line), None) => line,
                (None, Some(key)) => key,
                (None, None) => name_part.len(),
            }
        };
        // A literal `\n` (an escaped line break some servers leave in) is not the name.
        let name = body.get(..name_end).unwrap_or_default().trim().trim_end_matches("\\n").trim().to_string();
        let mut call = RawCall { span: 0..region.len(), name, ..RawCall::default() };
        let mut rest = body.get(name_end..).unwrap_or_default();
        while let Some(at) = rest.find(KEY) {
            let after = rest.get(at + KEY.len()..).unwrap_or_default();
            let Some(key_end) = after.find(KEY_END) else {
                call.problems.push("an <arg_key> is not closed with </arg_key>".into());
                break;
            };
            let key = after.get(..key_end).unwrap_or_default().trim().to_string();
            let after = after.get(key_end + KEY_END.len()..).unwrap_or_default();
            let Some(value_at) = after.find(VALUE) else {
                call.problems.push(format!("the argument `{key}` has no <arg_value>"));
                break;
            };
            let value_text = after.get(value_at + VALUE.len()..).unwrap_or_default();
            let (value, next) = match value_text.find(VALUE_END) {
                Some(end) => {
                    (value_text.get(..end).unwrap_or_default(), value_text.get(end + VALUE_END.len()..))
                }
                None => {
                    call.problems.push(format!("the value of `{key}` is not closed with </arg_value>"));
                    (value_text, None)
                }
            };
            let value = value.trim();
            call.text_arg(key, value, infer_escaped(value));
            let Some(next) = next else { break };
            rest = next;
        }
        calls.push(call);
    }
}
