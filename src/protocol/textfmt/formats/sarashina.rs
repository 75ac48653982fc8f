//! `sarashina`: SoftBank Sarashina: a Python-literal list of dicts after `<|tool_calls|>`.
//!
//! ```text
//! Let me check.<|tool_calls|>[{'name': 'get_weather', 'arguments': {'city': 'Tokyo'}}]
//! [{'name': 'search', 'arguments': {'q': 'rust'}}, {'name': 'ping', 'arguments': {}}]
//! ```
//!
//! The list is a Python literal: strings in either quote with backslash escapes,
//! numbers, `True`/`False`/`None` (and `true`/`false`/`null`), lists, tuples, dicts. Each
//! element is a dict with `'name'` and `'arguments'` (a dict, or a JSON object written as
//! a string; missing or `None` is `{}`); a single dict instead of a list is one call.
//! `<|tool_calls|>` is a special token that detokenization often removes, so a reply
//! that starts (after white space) with `[` then `{` is read as the list too; elsewhere
//! a list without the token is prose. Text before the token is normal text; the token is
//! not.
//!
//! A list that does not read as a Python literal, or is never closed, is an incomplete
//! request; an element that is not a call (no string `'name'`, arguments that are not an
//! object) is an incomplete request while the others count. A list none of whose
//! elements has a `'name'` (`[1, 2, 3]`, `[{'a': 1}]`) is prose.
//!
//! Implementation-defined choices: after the token only white space may come before the
//! list (smg looks for the next bracket anywhere); text after the list is normal text
//! (white space right after a list that followed the token is dropped with the markup);
//! an unclosed list is reported as an incomplete request rather than as text.
//!
//! **Grammar.** One list after the token, `<|tool_calls|>[{'name': 'NAME', 'arguments':
//! {…}}, …]`, dicts joined by `, `, arguments in schema order. Values are Python literals as
//! the writer writes them: strings in single quotes with the escapes the reader decodes and
//! no raw control character (nor a raw `<` while reasoning is hidden), `True`/`False`/`None`,
//! numbers as JSON writes them, lists and dicts of the same (a space after `:` and `,`
//! optional). Free text holds no `<|tool_calls|>`, and does not open (after blanks) with `[`
//! or `{`, which the reader takes for a list without the token at the start of a reply, and
//! for another list right after one. No JSON dialect: no JSON Schema describes Python
//! literals.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CharSet, Expr, GrammarError, Pattern, Section, Syntax, properties};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::json::{Quotes, split_elements};
use crate::protocol::textfmt::readers::pythonic::{Literals, PyLiterals, python_literal};
use crate::python::parse_literal;
use crate::tools::ToolDefinition;

pub(crate) const MARKER: &str = "<|tool_calls|>";

/// The rules of `sarashina`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        if reply_start {
            let bytes = text.as_bytes();
            let at = after_blanks(bytes, from);
            if bytes.get(at) == Some(&b'[') {
                match bytes.get(after_blanks(bytes, at + 1)) {
                    None => return Found::Hold(at),
                    Some(b'{') => return Found::Call(at),
                    Some(_) => {}
                }
            }
        }
        search.section(text, from, MARKER)
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        let at = after_blanks(text.as_bytes(), from);
        match text.as_bytes().get(at) {
            None => InSection::Hold(at),
            Some(b'[' | b'{') => InSection::Call(at),
            Some(_) => InSection::Leave(at),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.balanced(Quotes::Python)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        if !closed {
            calls.push(RawCall::broken(span, "", "the call list is never closed"));
            return;
        }
        let (items, ranges) = match parse_literal(region) {
            Some(Value::Array(items)) => {
                let ranges = split_elements(region, Quotes::Python);
                (items, ranges)
            }
            Some(item @ Value::Object(_)) => (vec![item], vec![span.clone()]),
            Some(_) => return,
            None => {
                calls.push(RawCall::broken(
                    span,
                    "",
                    "the call list is not a Python literal: write [{'name': 'NAME', 'arguments': {…}}]",
                ));
                return;
            }
        };
        let named = |item: &Value| item.get("name").is_some_and(Value::is_string);
        if !items.iter().any(named) {
            return;
        }
        let same_count = ranges.len() == items.len();
        for (i, item) in items.into_iter().enumerate() {
            let span = if same_count { ranges.get(i).cloned().unwrap_or(span.clone()) } else { span.clone() };
            let name = item.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            if !named(&item) {
                calls.push(RawCall::broken(span, name, "an element of the list has no 'name'"));
                continue;
            }
            let args = match item.get("arguments") {
                None | Some(Value::Null) => Ok(Map::new()),
                Some(Value::Object(args)) => Ok(args.clone()),
                Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(args)) => Ok(args),
                    _ => Err("the 'arguments' string is not a JSON object"),
                },
                Some(_) => Err("'arguments' is not a dict"),
            };
            match args {
                Ok(args) => {
                    calls.push(RawCall { span, name, args: args.into_iter().collect(), ..RawCall::default() })
                }
                Err(problem) => calls.push(RawCall::broken(span, name, problem)),
            }
        }
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<|tool_calls|>"), Marker::Opening(&["[", "{", "'name'"])],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the functions as JSON, and how to call them.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "# Tools\n\nYou can call the following functions, given as JSON schemas:\n{}\n\n\
         To call functions, write {MARKER} followed by a Python list with one dict per call:\n\
         {MARKER}[{{'name': 'function_name', 'arguments': {{'key': 'value'}}}}]",
            crate::protocol::textfmt::prompt::lines(&crate::protocol::textfmt::prompt::functions(tools))
        )
    }

    /// The text of the tool message that carries `results` back: one JSON object a line,
    /// `{"name": …, "output": …}` (or `"error"`).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
            .iter()
            .map(|r| {
                let name = crate::protocol::textfmt::escape::neutralize_tokens(&r.tool_name);
                let text = crate::protocol::textfmt::escape::neutralize_tokens(&r.result);
                let key = if r.is_success() { "output" } else { "error" };
                serde_json::json!({"name": name, key: text}).to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A call of `name` with `args`, as the prompt teaches it:
    /// `<|tool_calls|>[{'name': 'NAME', 'arguments': {…}}]`.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut out = format!("{MARKER}[{{'name': ");
        python_literal(&Value::String(name.to_string()), '\'', &mut out);
        out.push_str(", 'arguments': ");
        python_literal(&Value::Object(args.clone()), '\'', &mut out);
        out.push_str("}]");
        Some(out)
    }

    /// The calls of `sarashina` as a grammar (see the module docs).
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let py = |value: &str| {
            let mut out = String::new();
            python_literal(&Value::String(value.to_string()), '\'', &mut out);
            out
        };
        let ws = || Expr::lit(" ").opt();
        let literals = Literals {
            quote: '\'',
            python_containers: true,
            ..Literals::python(offer.options.skip_reasoning)
        };
        let mut calls = Vec::new();
        for (name, schema) in offer.methods {
            let mut literals = PyLiterals::new(b, name, schema, literals);
            let mut members = Vec::new();
            for (key, property, required) in properties(schema) {
                let value = literals.literal(property)?;
                members.push((Expr::seq([Expr::lit(py(key)), Expr::lit(":"), ws(), value]), required));
            }
            let list = literals.values().member_list(members, Expr::seq([Expr::lit(","), ws()]));
            let head = format!("{{'name': {}, 'arguments': {{", py(name));
            calls.push(b.rule(name, Expr::seq([Expr::lit(head), list, Expr::lit("}}")])));
        }
        let call = b.rule("call", Expr::alt(calls));
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(", "), close: "]".into() }),
            avoid: vec![
                Pattern::text(MARKER),
                Pattern::new().then_any(CharSet::ascii_space()).then(CharSet::of("[{")).at_start(),
            ],
            ..offer.syntax(format!("{MARKER}["), call)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::{calls, written_reads_back};
    use serde_json::json;

    #[test]
    fn write_call_round_trips() {
        let cases = [
            json!({}),
            json!({"city": "Tokyo", "days": 3, "ok": true, "none": null, "x": -1.5, "big": 12345678901234_i64}),
            json!({"nested": {"a": [1, "two", {"b": false}]}, "s": "it's \"q\" [x] {y} \\ \n\t <think>"}),
            json!({"unicode": "日本語 ✓ \u{1F600}", "ctl": "\u{1}"}),
        ];
        for args in cases {
            let text = written_reads_back(TextFormat::Sarashina, "calc_add", &args);
            let bare = calls(TextFormat::Sarashina, text.strip_prefix(MARKER).unwrap());
            assert_eq!(bare, vec![("calc_add".to_string(), args, true)]);
        }
    }
}
