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

use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, partial_suffix,
};
use crate::protocol::textfmt::readers::json::Quotes;
use crate::protocol::textfmt::readers::pythonic::{Literals, calls, list_starts, write_list};
use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::{bare_functions, output_objects};
use crate::python::parse_call_list;
use crate::tools::ToolDefinition;

pub(crate) const START: &str = "<|python_start|>";
const END: &str = "<|python_end|>";

/// The rules of `pythonic`.
pub(crate) struct Rules;

impl Reading for Rules {
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

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token(START), Marker::CallList],
    escapes: &[Escape::CallList],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "You are an expert in composing functions. You are given a question and a set of possible functions.\n\
             Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n\
             If none of the functions can be used, point it out.\n\n\
             If you decide to invoke any of the function(s), you MUST put it in the format of \
             [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n\
             You SHOULD NOT include any other text in the response if you call a function.\n\n\
             Here is a list of functions in JSON format that you can invoke.\n{}",
            serde_json::to_string_pretty(&Value::Array(bare_functions(tools))).unwrap_or_default()
        )
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        output_objects(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(write_list(name, args))
    }

    /// The calls of `pythonic` as a grammar: one list `[name(key=value, …), …]` as the
    /// prompt shows it, keyword arguments in schema order separated by `, `. The list opens
    /// at a `[` (a `[` before a name and `(` starts one wherever it stands), so free text
    /// holds no `[`, and no `<|python_start|>`. Values are Python literals of their schema:
    /// strings in double quotes with the escapes the reader decodes (`\\ \" \' \n \r \t`,
    /// `\uXXXX` but no surrogate) and no raw control character (nor raw `<` while
    /// reasoning is hidden, so no string opens a reasoning tag), `True`/`False`, `None`,
    /// numbers as JSON writes them, lists and dicts as JSON (which the reader also takes).
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        use crate::grammar::{Expr, Pattern, Section, Syntax};
        let literals = Literals::python(offer.options.skip_reasoning);
        let call = calls(b, offer.methods, literals)?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(", "), close: "]".into() }),
            avoid: vec![Pattern::text(START)],
            ..offer.syntax("[", call)
        })
    }
}
