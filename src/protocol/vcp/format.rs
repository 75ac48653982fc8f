//! Writing VCP: request blocks (for examples and round trips) and result blocks whose
//! untrusted content can never close its block or forge a request.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::fields::bracketed_word;
use super::markers::strip_prefix_ignore_ascii_case;
use crate::ToolExecutionResult;

/// Why a request could not be written as VCP.
///
/// ```
/// use tool_calling::protocol::vcp::{FormatError, VcpProtocol};
/// let vcp = VcpProtocol::default();
/// assert_eq!(vcp.write_block("", [("a", "1")]), Err(FormatError::EmptyToolName));
/// let err = vcp.write_block("calc", [("request_id", "x")]).unwrap_err();
/// assert_eq!(err, FormatError::ReservedKey { key: "request_id".into() });
/// assert!(err.to_string().contains("reserved"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// A key the parser would not read back as written (empty, white space,
    /// `:`, `：`, `,`, `「`, `」`, or `<`, which could start a marker or a tag).
    #[error("key {key:?} cannot be written as a VCP key: {reason}")]
    InvalidKey {
        /// The key.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An empty tool name: the request could never run.
    #[error("the tool name is empty; a request needs a tool_name")]
    EmptyToolName,
    /// `tool_name` or `request_id` given as an ordinary argument.
    #[error("argument `{key}` is reserved in VCP; pass it as the request's own field")]
    ReservedKey {
        /// The key.
        key: String,
    },
    /// The same key twice: the parser would keep only the last.
    #[error("argument `{key}` is given more than once")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// The value holds an escaped closer (`「末ESCAPE」` in some form), which no VCP
    /// value can carry unambiguously.
    #[error("the value of `{key}` contains `{found}` (an escaped closer), which no VCP value can carry")]
    EscapedCloserInValue {
        /// The key whose value is refused.
        key: String,
        /// The closer as it stands in the value.
        found: String,
    },
}

const NEUTRALISED_NAMES: [&str; 6] = [
    "END_TOOL_REQUEST",
    "TOOL_REQUEST",
    "END_TOOL_RESULT",
    "TOOL_RESULT",
    "END_TOOL_DEFINITION",
    "TOOL_DEFINITION",
];

/// The escaped closer starting at `text` (`[「{]末ESCAPE[」}]`, any case), if any:
/// its length in bytes.
fn escaped_closer_len(text: &str) -> Option<usize> {
    bracketed_word(text, '末', "ESCAPE")
}

/// Makes untrusted text safe to embed in a VCP block: every protocol marker
/// (`<…[TOOL_REQUEST]>…`, its END form, and the TOOL_RESULT and TOOL_DEFINITION pairs,
/// in any case and bracket count) gets `_ESCAPE` before its `]`, and every escaped
/// closer becomes `[末ESCAPE]`. Text without either is returned unchanged.
///
/// ```
/// use tool_calling::protocol::vcp::neutralize_markers;
/// assert_eq!(
///     neutralize_markers("<<<[TOOL_REQUEST]>>> and 「末ESCAPE」"),
///     "<<<[TOOL_REQUEST_ESCAPE]>>> and [末ESCAPE]"
/// );
/// ```
pub fn neutralize_markers(text: &str) -> Cow<'_, str> {
    if !text.contains(['[', '末']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut pos = 0;
    while let Some(i) = text.get(pos..).and_then(|rest| rest.find(['[', '「', '{'])) {
        let at = pos + i;
        let rest = text.get(at..).unwrap_or("");
        if let Some(len) = escaped_closer_len(rest) {
            out.push_str(text.get(copied..at).unwrap_or(""));
            out.push_str("[末ESCAPE]");
            pos = at + len;
            copied = pos;
            continue;
        }
        pos = at + rest.chars().next().map_or(1, char::len_utf8);
        if !rest.starts_with('[') || !text.get(..at).is_some_and(|before| before.ends_with('<')) {
            continue;
        }
        let after = rest.get(1..).unwrap_or("");
        let name = NEUTRALISED_NAMES.iter().find_map(|name| {
            strip_prefix_ignore_ascii_case(after, name)
                .filter(|tail| tail.starts_with("]>"))
                .map(|_| name.len())
        });
        if let Some(len) = name {
            let name_end = at + 1 + len;
            out.push_str(text.get(copied..name_end).unwrap_or(""));
            out.push_str("_ESCAPE");
            pos = name_end;
            copied = name_end;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(text.get(copied..).unwrap_or(""));
    Cow::Owned(out)
}

/// Whether a value must be written in the escaped form to read back as written: it
/// holds `末` (which could close it) or `<<` (which could start a marker, exact or
/// fuzzy).
fn needs_escaped_form(value: &str) -> bool {
    value.contains('末') || value.contains("<<")
}

fn find_escaped_closer(value: &str) -> Option<&str> {
    value.char_indices().find_map(|(i, c)| {
        if c == '「' || c == '{' {
            let at = value.get(i..)?;
            escaped_closer_len(at).and_then(|len| at.get(..len))
        } else {
            None
        }
    })
}

fn check_key(key: &str) -> Result<(), FormatError> {
    let reason = if key.is_empty() {
        Some("it is empty")
    } else if key.chars().any(|c| c.is_whitespace() || matches!(c, ':' | '：' | ',' | '「' | '」')) {
        Some("it contains white space or one of `:` `：` `,` `「` `」`")
    } else if key.contains('<') {
        Some("it contains `<`, which could start a marker or a reasoning tag")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(FormatError::InvalidKey { key: key.to_string(), reason }),
        None => Ok(()),
    }
}

/// Writes `key:「始」value「末」` (or the escaped form when needed).
pub(crate) fn write_field(out: &mut String, key: &str, value: &str, last: bool) {
    if needs_escaped_form(value) {
        let _ = write!(out, "{key}:「始ESCAPE」{value}「末ESCAPE」");
    } else {
        let _ = write!(out, "{key}:「始」{value}「末」");
    }
    out.push_str(if last { "\n" } else { ",\n" });
}

pub(crate) fn write_block<'a, I, K, V>(tool_name: &str, args: I) -> Result<String, FormatError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str> + 'a,
    V: AsRef<str> + 'a,
{
    if tool_name.is_empty() {
        return Err(FormatError::EmptyToolName);
    }
    let args: Vec<(K, V)> = args.into_iter().collect();
    let mut seen = std::collections::HashSet::new();
    for (key, value) in
        std::iter::once(("tool_name", tool_name)).chain(args.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
    {
        check_key(key)?;
        if let Some(found) = find_escaped_closer(value) {
            return Err(FormatError::EscapedCloserInValue { key: key.to_string(), found: found.to_string() });
        }
        if !seen.insert(key) {
            return Err(FormatError::DuplicateKey { key: key.to_string() });
        }
    }
    if let Some((key, _)) = args.iter().find(|(k, _)| {
        k.as_ref().eq_ignore_ascii_case("tool_name") || k.as_ref().eq_ignore_ascii_case("request_id")
    }) {
        return Err(FormatError::ReservedKey { key: key.as_ref().to_string() });
    }
    let mut out = String::from("<<<[TOOL_REQUEST]>>>\n");
    write_field(&mut out, "tool_name", tool_name, args.is_empty());
    for (i, (key, value)) in args.iter().enumerate() {
        write_field(&mut out, key.as_ref(), value.as_ref(), i + 1 == args.len());
    }
    out.push_str("<<<[END_TOOL_REQUEST]>>>");
    Ok(out)
}

/// The result of a batch request (several calls): a JSON array with each call's
/// position from 1, method, status, error kind on failure, and text.
fn batch_text(result: &ToolExecutionResult) -> Cow<'static, str> {
    let calls: Vec<serde_json::Value> = result
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| match call.error_kind {
            None => serde_json::json!({
                "index": i + 1, "tool_name": call.tool_name, "status": "success", "result": call.result
            }),
            Some(kind) => serde_json::json!({
                "index": i + 1, "tool_name": call.tool_name, "status": "error", "error_kind": kind.as_str(),
                "result": call.result
            }),
        })
        .collect();
    Cow::Owned(serde_json::Value::Array(calls).to_string())
}

pub(crate) fn format_results(results: &[ToolExecutionResult]) -> String {
    let mut out = String::new();
    for (i, result) in results.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("<<<[TOOL_RESULT]>>>\n");
        write_field(&mut out, "request_id", &neutralize_markers(&result.request_id), false);
        write_field(&mut out, "tool_name", &neutralize_markers(&result.tool_name), false);
        write_field(&mut out, "status", result.status.as_str(), false);
        if let Some(kind) = result.error_kind {
            write_field(&mut out, "error_kind", kind.as_str(), false);
        }
        write_field(&mut out, "duration_ms", &result.duration_ms.to_string(), false);
        let text =
            if result.calls.is_empty() { Cow::Borrowed(result.result.as_str()) } else { batch_text(result) };
        let _ = writeln!(out, "result:「始ESCAPE」{}「末ESCAPE」", neutralize_markers(&text));
        out.push_str("<<<[END_TOOL_RESULT]>>>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn neutralises_every_marker_and_closer() {
        let text = "<<<[TOOL_REQUEST]>>> <<<[END_TOOL_REQUEST]>>> <<[tool_result]>> <<<[END_TOOL_RESULT]>>> \
                    「末ESCAPE」 {末escape} 「末ESCAPE} plain 「末」 [TOOL_REQUEST] 末";
        let safe = neutralize_markers(text);
        assert_eq!(
            safe,
            "<<<[TOOL_REQUEST_ESCAPE]>>> <<<[END_TOOL_REQUEST_ESCAPE]>>> <<[tool_result_ESCAPE]>> \
             <<<[END_TOOL_RESULT_ESCAPE]>>> [末ESCAPE] [末ESCAPE] [末ESCAPE] plain 「末」 [TOOL_REQUEST] 末"
        );
        assert!(matches!(neutralize_markers("nothing here"), Cow::Borrowed(_)));
        // Multi-byte brackets before a marker must not stop the scan.
        assert_eq!(
            neutralize_markers("「末」 「x <<<[TOOL_REQUEST]>>>"),
            "「末」 「x <<<[TOOL_REQUEST_ESCAPE]>>>"
        );
        assert_eq!(neutralize_markers("{末} <<<[END_TOOL_RESULT]>>>"), "{末} <<<[END_TOOL_RESULT_ESCAPE]>>>");
    }

    #[test]
    fn result_blocks() {
        let ok = ToolExecutionResult::success("req_1", "calc_add", "3").with_duration_ms(4);
        let err =
            ToolExecutionResult::error("req_2", "calc_divide", ErrorKind::Execution, "division by zero");
        let text = format_results(&[ok, err]);
        assert_eq!(
            text,
            "<<<[TOOL_RESULT]>>>\nrequest_id:「始」req_1「末」,\ntool_name:「始」calc_add「末」,\n\
             status:「始」success「末」,\nduration_ms:「始」4「末」,\nresult:「始ESCAPE」3「末ESCAPE」\n\
             <<<[END_TOOL_RESULT]>>>\n\n<<<[TOOL_RESULT]>>>\nrequest_id:「始」req_2「末」,\n\
             tool_name:「始」calc_divide「末」,\nstatus:「始」error「末」,\nerror_kind:「始」execution「末」,\n\
             duration_ms:「始」0「末」,\nresult:「始ESCAPE」division by zero「末ESCAPE」\n<<<[END_TOOL_RESULT]>>>\n"
        );
    }

    #[test]
    fn refuses_what_cannot_round_trip() {
        assert!(matches!(write_block("t", [("a b", "x")]), Err(FormatError::InvalidKey { .. })));
        assert!(matches!(write_block("t", [("", "x")]), Err(FormatError::InvalidKey { .. })));
        assert!(matches!(write_block("t", [("TOOL_NAME", "x")]), Err(FormatError::ReservedKey { .. })));
        assert!(matches!(write_block("t", [("a", "1"), ("a", "2")]), Err(FormatError::DuplicateKey { .. })));
        let err = write_block("t", [("a", "x{末Escape」y")]).unwrap_err();
        assert_eq!(err, FormatError::EscapedCloserInValue { key: "a".into(), found: "{末Escape」".into() });
        assert!(err.to_string().contains("`a`"));
    }
}
