//! `llama3_json`: JSON call objects after `<|python_tag|>`, or a reply that is the call
//! list itself (Llama 3.1, 3.2).
//!
//! ```text
//! <|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "add", "parameters": {"a": 1}}
//! {"name": "get_weather", "parameters": {"city": "Paris"}}
//! ```
//!
//! `"arguments"` is accepted in place of `"parameters"`; an object with neither is not a
//! call. Calls are separated by `;` (or
//! by a repeated `<|python_tag|>`); `;` inside strings does not split. After
//! `<|python_tag|>`, an object that is not a call is an incomplete request. Without the
//! tag, a reply whose first non-blank character is `{` is read as calls; if its first
//! object is not a call the reply is normal text. Implementation-defined choices: a bare
//! object after prose is normal text; after the tag, an object that is not valid JSON (but
//! whose braces close) is an incomplete request and the calls after it still count; the
//! list ends at the first text that is not a call object, `;` or the tag.

use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, partial_suffix,
};
use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CharSet, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text};
use crate::protocol::textfmt::prompt::{functions, output_objects};
use crate::protocol::textfmt::readers::json::{Quotes, call_parts};
use crate::tools::ToolDefinition;

/// A Llama call: a name and `parameters` (or `arguments`), which must be present.
fn llama_call(text: &str) -> Result<(String, crate::request::Args), (String, String)> {
    match call_parts(text, &["parameters", "arguments"])? {
        (name, Some(args)) => Ok((name, args)),
        (name, None) => Err((name, "the call has no `parameters`".to_string())),
    }
}

pub(crate) const TAG: &str = "<|python_tag|>";

/// The kind of a section without the tag (one after `<|python_tag|>` is of kind 1).
const BARE: u8 = 2;

/// The rules of `llama3_json`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        if reply_start {
            let rest = text.get(from..).unwrap_or_default();
            let blank = rest.len() - rest.trim_start().len();
            match rest.as_bytes().get(blank) {
                Some(b'{') => return Found::Section { at: from + blank, len: 0, kind: BARE },
                None => return Found::Hold(from),
                Some(_) => {}
            }
        }
        search.section(text, from, TAG)
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        let bytes = text.as_bytes();
        let mut i = from;
        loop {
            match bytes.get(i) {
                None => return InSection::Hold(i),
                Some(b) if b.is_ascii_whitespace() || *b == b';' => i += 1,
                Some(b'{') => return InSection::Call(i),
                Some(b'<') => {
                    let rest = text.get(i..).unwrap_or_default();
                    if rest.starts_with(TAG) {
                        i += TAG.len();
                    } else if partial_suffix(text, i, &[TAG]) == Some(i) {
                        return InSection::Hold(i);
                    } else {
                        return InSection::Leave(i);
                    }
                }
                Some(_) => return InSection::Leave(i),
            }
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let bare = region.state.kind == BARE;
        match region.balanced(Quotes::Json) {
            // Without the tag, an object that is not a call is prose.
            Scan::Closed(end) if bare && llama_call(region.text.get(..end).unwrap_or_default()).is_err() => {
                Scan::NotACall(end)
            }
            other => other,
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        if !closed && state.kind == BARE {
            // A bare reply cut off inside its first object: normal text.
            return;
        }
        let hint = "write {\"name\": …, \"parameters\": {…}} after <|python_tag|>";
        calls.push(RawCall::read(span, llama_call(region), hint));
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format =
    Format { markers: &[Marker::Token(TAG), Marker::Opening(&["{", "\"name\""])], ..Format::of(&Rules) };

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "Given the following functions, please respond with a JSON for a function call with its proper \
             arguments that best answers the given prompt.\n\n\
             Respond in the format {{\"name\": function name, \"parameters\": dictionary of argument name and its value}}. \
             Do not use variables.\n\n{}",
            functions(tools)
                .iter()
                .map(|f| serde_json::to_string_pretty(f).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n\n")
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        output_objects(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let (name, args) =
            (json_text(&Value::String(name.to_string())), json_text(&Value::Object(args.clone())));
        Some(format!("{TAG}{{\"name\": {name}, \"parameters\": {args}}}"))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let head = |name: &str| {
            format!("{{\"name\": {}, \"parameters\": ", json_text(&Value::String(name.to_string())))
        };
        let markup = JsonMarkup { head: &head, index: None, tail: "}", tag_open: TAG, tag_close: "" };
        JsonSyntax {
            markup,
            open: TAG,
            section: None,
            // A `{` first in a reply (after blanks), or after a call (after blanks and
            // `;`), would be read as a call.
            avoid: vec![Pattern::new().then_any(CharSet::of(" \t\n\r\x0b\x0c;")).then_text("{").at_start()],
            arguments: "parameters",
        }
        .build(b, offer)
    }
}

#[cfg(test)]
mod tests {
    use super::llama_call;

    #[test]
    fn a_call_needs_parameters_or_arguments() {
        let (name, args) = llama_call(r#"{"name": "f", "parameters": {"a": 1}}"#).unwrap();
        assert_eq!((name.as_str(), args["a"].as_i64()), ("f", Some(1)));
        let (_, args) = llama_call(r#"{"name": "f", "arguments": "{\"b\": 2}"}"#).unwrap();
        assert_eq!(args["b"], 2);
        assert!(
            llama_call(r#"{"name": "f", "parameters": null}"#).unwrap().1.is_empty(),
            "null: no arguments"
        );
        assert_eq!(
            llama_call(r#"{"name": "f", "other": {}}"#).unwrap_err(),
            ("f".to_string(), "the call has no `parameters`".to_string())
        );
        assert!(llama_call(r#"{"parameters": {}}"#).is_err(), "no name");
    }
}
