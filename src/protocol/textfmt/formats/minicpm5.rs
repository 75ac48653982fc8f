//! `minicpm5`: MiniCPM 4 / 5: `<function name="…">` elements with `<param name="…">`
//! values, plain or in CDATA sections.
//!
//! ```text
//! Let me check.
//! <function name="get_weather"><param name="city">北京</param><param name="days">3</param></function>
//! <function name="write_file"><param name="content"><![CDATA[line one
//! <b>line two</b> & more]]></param></function>
//! ```
//!
//! Arguments: one per `<param name="KEY">`, in order. A value in a CDATA section is its
//! content exactly as written; any other value is trimmed of surrounding white space and
//! has the five XML entities decoded. Values are typed as the module docs say (JSON text
//! becomes that value, `True`/`False`/`None` become `true`/`false`/`null`, anything else
//! stays a string; the tool's schema types them when the engine resolves the call). The
//! parameters may also stand in an `<arguments>` element; a function without parameters
//! has `{}`.
//!
//! Several calls: several `<function>` elements, anywhere in the reply. Normal text:
//! everything outside them.
//!
//! Malformed: a `<function>` without a name, a `<param>` without a name, a key written
//! twice, or a `<param>` never closed make the call an incomplete request; a `<function>`
//! whose `</function>` is missing ends at the next `<function ` or at the end of the reply
//! and is incomplete. Other calls still count.
//!
//! Implementation-defined choices: `</function>` and `</param>` inside a CDATA section are
//! content (the sources' patterns would end the call there); the calls are not checked
//! against the offered tools here (the sources drop calls of unknown tools or with
//! unknown parameters as text; the engine reports an unknown tool); vLLM's mapping of
//! some tool-name aliases and of a `properties`/`arguments` parameter holding the real
//! arguments is not done; the tokenizer artefacts vLLM repairs (`Ġ`, `Ċ`,
//! `<functionname=`) are not.
//!
//! Grammar: `<function name="NAME">`, then `<param name="K">V</param>` per key in schema
//! order, then `</function>`, with nothing between the tags, as the prompt shows. A string
//! value is plain text (no `<`, no `&`, no white space at either end: the reader decodes
//! entities and trims) or a CDATA section holding any text but `]]>`; neither holds a
//! reasoning tag while reasoning is hidden. A string that reads as another value without
//! a schema (`42`) is admitted, since the tool's schema keeps it a string. Other values
//! are JSON with `<` and `&` in strings escaped (`\u003c`, `\u0026`). Free text holds no
//! `<function `.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax, TextForm};
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches, find_in};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextCalls};
use crate::protocol::textfmt::prompt::tools_in_tags;
use crate::protocol::textfmt::readers::tagged::tagged_results;
use crate::protocol::textfmt::readers::values::{decode_entities, infer};
use crate::protocol::textfmt::readers::xml_elements::{attribute, read_element};
use crate::tools::ToolDefinition;

const FUNCTION: &str = "<function ";
const FUNCTION_END: &str = "</function>";
const PARAM: &str = "<param";
const PARAM_END: &str = "</param>";
const CDATA: &str = "<![CDATA[";
const CDATA_END: &str = "]]>";
const RESULT_OPEN: &str = "<tool_response>";
const RESULT_CLOSE: &str = "</tool_response>";

/// Stages of a region's scan ([`ScanState::stage`]): inside a CDATA section, or ended
/// without `</function>`.
const IN_CDATA: u8 = 1;
const UNCLOSED: u8 = 2;

/// The rules of `minicpm5`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, FUNCTION)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let mut pos = region.state.pos.max(FUNCTION.len());
        loop {
            if region.state.stage == IN_CDATA {
                let Some((at, _)) = region.earliest(pos, &[CDATA_END]) else {
                    region.state.pos = pos;
                    return Scan::Open;
                };
                pos = at + CDATA_END.len();
                region.state.stage = 0;
            }
            match region.earliest(pos, &[CDATA, FUNCTION_END, FUNCTION]) {
                Some((at, 0)) => {
                    pos = at + CDATA.len();
                    region.state.stage = IN_CDATA;
                }
                Some((at, 1)) => return Scan::Closed(at + FUNCTION_END.len()),
                Some((at, _)) => {
                    region.state.stage = UNCLOSED;
                    return Scan::Closed(at);
                }
                None => {
                    region.state.pos = pos;
                    return Scan::Open;
                }
            }
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let cut = state.stage == UNCLOSED || !closed;
        calls.push(read_element(region, FUNCTION.len() - 1, "function", FUNCTION_END, cut, read_params));
    }
}

/// The CDATA sections of `text` (from `<![CDATA[` to after `]]>`), in order; `Err` when
/// one is never closed.
fn cdata_sections(text: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut sections = Vec::new();
    let mut pos = 0;
    while let Some(start) =
        text.as_bytes().get(pos..).and_then(|rest| find_in(rest, CDATA)).map(|at| pos + at)
    {
        let after = start + CDATA.len();
        let Some(end) = text.as_bytes().get(after..).and_then(|rest| find_in(rest, CDATA_END)) else {
            return Err("a CDATA section is not closed with ]]>".into());
        };
        pos = after + end + CDATA_END.len();
        sections.push((start, pos));
    }
    Ok(sections)
}

/// The first `token` at or after `from` in `text` outside the CDATA `sections`;
/// `next` is the first section that may still matter (it only moves forward).
fn outside(
    text: &str,
    mut from: usize,
    token: &'static str,
    sections: &[(usize, usize)],
    next: &mut usize,
) -> Option<usize> {
    loop {
        let at = from + text.as_bytes().get(from..).and_then(|rest| find_in(rest, token))?;
        while sections.get(*next).is_some_and(|&(_, end)| end <= at) {
            *next += 1;
        }
        match sections.get(*next) {
            Some(&(start, end)) if start <= at => from = end,
            _ => return Some(at),
        }
    }
}

/// A value as written: CDATA sections kept as they are, the text around them decoded;
/// white space at either end trimmed unless a CDATA section stands there.
fn value_text(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    let mut first = true;
    while let Some(at) = rest.find(CDATA) {
        let before = rest.get(..at).unwrap_or_default();
        let before = if first { before.trim_start() } else { before };
        out.push_str(&decode_entities(before));
        let inner = rest.get(at + CDATA.len()..).unwrap_or_default();
        let end = inner.find(CDATA_END).unwrap_or(inner.len());
        out.push_str(inner.get(..end).unwrap_or_default());
        rest = inner.get(end + CDATA_END.len()..).unwrap_or_default();
        first = false;
    }
    let tail = if first { rest.trim() } else { rest.trim_end() };
    out.push_str(&decode_entities(tail));
    out
}

/// Reads the `<param>` elements of a function's body into `call`'s arguments.
fn read_params(body: &str, call: &mut RawCall) -> Result<(), String> {
    let sections = cdata_sections(body)?;
    let mut next = 0;
    let mut pos = 0;
    while let Some(at) = outside(body, pos, PARAM, &sections, &mut next) {
        let tag_start = at + PARAM.len();
        let tag = body.get(tag_start..).unwrap_or_default();
        if !tag.starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/') {
            // `<params>` or the like: not a parameter.
            pos = tag_start;
            continue;
        }
        let Some(tag_end) = tag.find('>') else {
            return Err("a <param> tag is not closed with `>`".into());
        };
        let Some(key) = attribute(tag.get(..tag_end).unwrap_or_default(), "name").filter(|k| !k.is_empty())
        else {
            return Err("a <param> has no name attribute: write <param name=\"…\">".into());
        };
        let value_start = tag_start + tag_end + 1;
        let Some(end) = outside(body, value_start, PARAM_END, &sections, &mut next) else {
            return Err(format!("the parameter `{key}` is not closed with {PARAM_END}"));
        };
        if call.args.contains_key(&key) {
            return Err(format!("the parameter `{key}` is given twice"));
        }
        let text = value_text(body.get(value_start..end).unwrap_or_default());
        let typed = infer(&text);
        call.text_arg(key, &text, typed);
        pos = end + PARAM_END.len();
    }
    Ok(())
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<function ")],
    escapes: &[Escape::Tag("function"), Escape::Tag("param")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the tools as JSON lines in `<tools>`, then the call syntax
    /// MiniCPM writes (the model's own template was not available; see the docs).
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "{}For each function call, write one XML element, with each argument in a <param> element:\n\
         <function name=\"function-name\"><param name=\"param-name-1\">value-1</param>\
         <param name=\"param-name-2\">value-2</param></function>\n\
         Write a value that holds several lines, `<` or `&` in a CDATA section: \
         <param name=\"text\"><![CDATA[first line\nsecond line]]></param>",
            tools_in_tags(tools, "function")
        )
    }

    /// The text of the tool message that carries `results` back: each result in
    /// `<tool_response>` tags.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        tagged_results(results, RESULT_OPEN, RESULT_CLOSE)
    }

    /// A call of `name` with `args`, as the prompt teaches it: strings as text (in a CDATA
    /// section when they hold `<`, `&`, a line break or white space at either end), other
    /// values as JSON (`<` written `\u003c`). `None` when something would not read back as
    /// written: a string that reads as another value (`"42"`, `"true"`), a string holding
    /// `]]>` that needs a CDATA section, or a name or key that is empty or holds a quote,
    /// `<`, `>` or `&`, or white space at either end.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let plain = |s: &str| !s.is_empty() && !s.contains(['"', '<', '>', '&']) && s.trim() == s;
        if !plain(name) {
            return None;
        }
        let mut out = format!("<function name=\"{name}\">");
        for (key, value) in args {
            if !plain(key) {
                return None;
            }
            let text = match value {
                Value::String(s) => {
                    if infer(s) != *value {
                        return None;
                    }
                    let needs_cdata = s.contains(['<', '&', '\n', '\r']) || s.trim() != s;
                    if needs_cdata && s.contains(CDATA_END) {
                        return None;
                    }
                    if needs_cdata { format!("{CDATA}{s}{CDATA_END}") } else { s.clone() }
                }
                other => crate::protocol::textfmt::grammar::json_text(other).replace('&', "\\u0026"),
            };
            out.push_str(&format!("<param name=\"{key}\">{text}{PARAM_END}"));
        }
        out.push_str(FUNCTION_END);
        Some(out)
    }

    /// The calls of `minicpm5` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let plain = TextForm {
            text_name: "VALUE_TEXT",
            value_name: "STRING_VALUE",
            open: String::new(),
            avoid: Pattern::trimmed_text(&["<", "&"]),
            close: PARAM_END.into(),
        };
        let cdata = TextForm {
            text_name: "CDATA_TEXT",
            value_name: "CDATA_VALUE",
            open: CDATA.into(),
            avoid: vec![Pattern::text(CDATA_END)],
            close: format!("{CDATA_END}{PARAM_END}"),
        };
        let call = TextCalls {
            strings: vec![plain, cdata],
            open: "",
            close: PARAM_END,
            kind_open: None,
            escapes: "<&",
            index: None,
            key: &|key| format!("{PARAM} name=\"{key}\">"),
            call: &|name| (format!("name=\"{name}\">"), FUNCTION_END.to_string()),
        }
        .calls(b, offer)?;
        Ok(offer.syntax(FUNCTION, call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::parse;
    use serde_json::json;

    #[test]
    fn write_call_refuses_what_it_cannot_carry() {
        for args in [json!({"v": "42"}), json!({"v": "a\n]]>"}), json!({"a\"b": 1}), json!({"": 1})] {
            assert_eq!(Rules.write_call("f", args.as_object().unwrap()), None, "{args}");
        }
        assert_eq!(Rules.write_call("f\"", &Map::new()), None);
        assert_eq!(Rules.write_call("", &Map::new()), None);
    }

    #[test]
    fn cdata_values_are_kept_as_written() {
        let parsed = parse(
            TextFormat::Minicpm5,
            "<function name=\"f\"><param name=\"t\"> <![CDATA[ a </function> &amp; ]]> </param></function>",
        );
        assert_eq!(parsed.requests.len(), 1, "{parsed:#?}");
        assert!(parsed.requests[0].complete);
        assert_eq!(parsed.requests[0].args["t"], " a </function> &amp; ");
        assert_eq!(parsed.requests[0].text_args["t"], " a </function> &amp; ");
    }
}
