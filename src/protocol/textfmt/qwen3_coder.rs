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
        read_function(region, CLOSE, calls);
    }
}

/// The call of a region that holds `<function=NAME>…</function>` (in a wrapper that
/// `close` ends, shared with `seed_oss`).
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

/// The calls of `qwen3_coder_xml` as a grammar: the prompt's layout, one tag a line,
/// each value on lines of its own, parameters in schema order. A value holds no white
/// space at either end (a value on one line is trimmed; one on lines of its own loses a
/// line break on each side), no `</parameter>`,
/// `<parameter=`, `</function>` or `</tool_call>` (each ends it or the call, and the
/// format has no escapes: entities are kept as written), and no reasoning tag when
/// reasoning is hidden.
pub(crate) fn syntax(
    id: &str,
    options: &super::TextFormatOptions,
    b: &mut crate::grammar::Builder,
    methods: &[(String, &serde_json::Value)],
) -> Result<crate::grammar::Syntax, crate::grammar::GrammarError> {
    use crate::grammar::{
        CharSet, Expr, Pattern, Syntax, TextForm, ValueStyle, Values, properties, reasoning_heads,
    };
    let mut patterns = vec![
        Pattern::new().then(CharSet::unicode_space()).at_start(),
        Pattern::new().then(CharSet::unicode_space()).at_end(),
        Pattern::text(PARAMETER_END),
        Pattern::text(PARAMETER),
        Pattern::text(FUNCTION_END),
        Pattern::text(CLOSE),
    ];
    if options.skip_reasoning {
        patterns.extend(reasoning_heads());
    }
    let close = format!("\n{PARAMETER_END}");
    let string = TextForm {
        text_name: "VALUE_TEXT",
        value_name: "STRING_VALUE",
        open: "\n".into(),
        avoid: patterns,
        close: close.clone(),
    };
    let style =
        ValueStyle { string_escapes: "<".into(), text: vec![string], open: "\n".into(), close, slack: None };
    let mut calls = Vec::new();
    for (name, schema) in methods {
        let mut values = Values::new(b, style.clone(), name, schema);
        let mut members = Vec::new();
        for (key, property, required) in properties(schema) {
            let value = values.text(property)?;
            members.push((Expr::seq([Expr::lit(format!("\n{PARAMETER}{key}>")), value]), required));
        }
        let list = values.member_list(members, Expr::lit(""));
        let body = Expr::seq([
            Expr::lit(format!("\n{FUNCTION}{name}>")),
            list,
            Expr::lit(format!("\n{FUNCTION_END}\n{CLOSE}")),
        ]);
        calls.push(b.rule(name, body));
    }
    Ok(Syntax {
        protocol: id.to_string(),
        open: OPEN.into(),
        call: b.rule("call", Expr::alt(calls)),
        section: None,
        avoid: vec![Pattern::text(FUNCTION)],
        reasoning: options.skip_reasoning,
        json: None,
    })
}

/// A call as [`syntax`] admits it: strings as written, other values as JSON (`<` in
/// JSON strings written `\u003c`).
/// `None` when a value holds markup the format has no escape for (a value ends at the
/// first `</parameter>`, a call at the first `</tool_call>`).
pub(crate) fn write_call(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let mut out = format!("{OPEN}\n{FUNCTION}{name}>");
    for (key, value) in args {
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => super::grammar::json_text(other),
        };
        if [PARAMETER_END, PARAMETER, FUNCTION_END, CLOSE].iter().any(|markup| text.contains(markup)) {
            return None;
        }
        out.push_str(&format!("\n{PARAMETER}{key}>\n{text}\n{PARAMETER_END}"));
    }
    out.push_str(&format!("\n{FUNCTION_END}\n{CLOSE}"));
    Some(out)
}
