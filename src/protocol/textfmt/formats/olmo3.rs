//! `olmo3`: OLMo 3: Python-style calls, one a line, in `<function_calls>` tags.
//!
//! ```text
//! <function_calls>get_weather(city="Paris", days=3)
//! add(a=1, b=2)</function_calls>
//! ```
//!
//! Each call is `NAME(key=value, …)` with keyword arguments only; values are Python
//! literals (strings in either quote with backslash escapes, numbers, `True`/`False`/
//! `None`, lists, tuples, dicts), and the JSON words `true`/`false`/`null` are read too
//! (the chat template writes values as JSON). `f()` has `{}`. Calls are separated by line
//! breaks (a comma between them is tolerated); brackets, quotes and tags inside strings
//! are content. Text outside the block, before and after it, is normal text (vLLM keeps
//! none when the block parses); the tags are not.
//!
//! A call whose text does not read as `NAME(key=literal, …)` (a positional argument, a
//! bytes literal, a number too large for JSON, a line of prose) is an incomplete request,
//! and the block's other calls still count. A call cut off by the end of the reply is
//! incomplete.
//!
//! Implementation-defined choices: each call is reported when its closing `)` arrives,
//! so a block whose `</function_calls>` never comes keeps its finished calls (vLLM would
//! read nothing); the calls are read the way the `pythonic` format reads them (the same
//! literal reader).
//!
//! Grammar: one `<function_calls>` block holding the calls, one a line, each
//! `NAME(key=value, …)` with keyword arguments in schema order separated by `, `, values
//! as the template writes them: JSON (`true`, `false`, `null`; strings in double quotes
//! with the escapes both JSON and Python read, `<` always written `\u003c`, so no string
//! holds a tag). Free text holds no `<function_calls>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, partial_suffix,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::json::{Balanced, Quotes, scan_balanced};
use crate::protocol::textfmt::readers::pythonic::{Literals, calls};
use crate::python::parse_call_list;
use crate::tools::ToolDefinition;

pub(crate) const OPEN: &str = "<function_calls>";
pub(crate) const CLOSE: &str = "</function_calls>";

/// Stages of a call region.
const NAME: u8 = 0;
const ARGS: u8 = 1;

/// The rules of `olmo3`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.section(text, from, OPEN)
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        let bytes = text.as_bytes();
        let mut at = from;
        while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace() || *b == b',') {
            at += 1;
        }
        let rest = text.get(at..).unwrap_or_default();
        if rest.is_empty() || partial_suffix(text, at, &[CLOSE]) == Some(at) {
            return InSection::Hold(at);
        }
        if rest.starts_with(CLOSE) {
            return InSection::End { at, len: CLOSE.len() };
        }
        InSection::Call(at)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        loop {
            match region.state.stage {
                NAME => match region.earliest(region.state.pos, &["(", "\n", CLOSE]) {
                    Some((at, 0)) => {
                        region.state.stage = ARGS;
                        region.state.mark = at;
                        region.state.pos = at;
                    }
                    // A line, or the rest of the block, without a call's `(`.
                    Some((at, _)) => return Scan::Closed(at),
                    None => return Scan::Open,
                },
                _ => {
                    let (text, mark) = (region.text, region.state.mark);
                    return match scan_balanced(text, mark, region.state, Quotes::Python, Some(CLOSE)) {
                        Balanced::End(end) => Scan::Closed(end),
                        Balanced::Tag(at) => Scan::Closed(at),
                        Balanced::Open => Scan::Open,
                    };
                }
            }
        }
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let name = region.split('(').next().unwrap_or_default().trim().to_string();
        let span = 0..region.len();
        if !closed {
            calls.push(RawCall::broken(span, name, "the call is never closed with `)`"));
            return;
        }
        match parse_call_list(&format!("[{region}]")) {
            Ok(list) => match <[_; 1]>::try_from(list) {
                Ok([call]) => calls.push(RawCall {
                    span,
                    name: call.name,
                    args: call.args.into_iter().collect(),
                    ..RawCall::default()
                }),
                Err(_) => calls.push(RawCall::broken(span, name, "write one call a line")),
            },
            Err(e) => calls.push(RawCall::broken(
                span,
                name,
                format!(
                    "the call is not valid Python at byte {} ({}): write NAME(key=value, …), one call a line",
                    e.at.saturating_sub(1),
                    e.message
                ),
            )),
        }
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<function_calls>")],
    escapes: &[Escape::Tag("function")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, as OLMo 3's chat template words it.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "You are provided with function signatures within <functions></functions> XML tags. You may call \
         one or more functions to assist with the user query. Output any function calls within \
         <function_calls></function_calls> XML tags. Do not make assumptions about what values to plug \
         into functions.<functions>{}</functions>\n\n\
         Write each call on a line of its own as NAME(key=value, …), values in JSON: \
         <function_calls>get_weather(city=\"Paris\", days=3)\nadd(a=1, b=2)</function_calls>",
            Value::Array(crate::protocol::textfmt::prompt::functions(tools))
        )
    }

    /// The text of the tool message that carries `results` back. OLMo 3's template writes a
    /// tool message's text as it is (in an `environment` turn): one JSON object a line,
    /// `{"name": …, "output": …}` (or `"error"`), the block's tags in the text made plain
    /// (`&lt;function_calls>`).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        let plain = |text: &str| {
            crate::protocol::textfmt::escape::neutralize_tokens(text)
                .replace("<function_calls>", "&lt;function_calls>")
                .replace("</function_calls>", "&lt;/function_calls>")
        };
        results
            .iter()
            .map(|r| {
                let name = plain(&r.tool_name);
                let text = plain(&r.result);
                let key = if r.is_success() { "output" } else { "error" };
                serde_json::json!({"name": name, key: text}).to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A call of `name` with `args`, as the template writes it: `NAME(key=JSON, …)` in
    /// `<function_calls>` tags. `None` when the name is not an identifier, or a string holds
    /// `</function_calls>` (which would end the block).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let identifier = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        };
        if !identifier(name) || !args.keys().all(|k| identifier(k) && !k.contains(['.', '-'])) {
            return None;
        }
        let args: Vec<String> = args
            .iter()
            .map(|(key, value)| format!("{key}={}", crate::protocol::textfmt::grammar::json_text(value)))
            .collect();
        let call = format!("{name}({})", args.join(", "));
        if call.contains(CLOSE) {
            return None;
        }
        Some(format!("{OPEN}{call}{CLOSE}"))
    }

    /// The calls of `olmo3` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let call = calls(b, offer.methods, Literals::json(true))?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit("\n"), close: CLOSE.into() }),
            ..offer.syntax(OPEN, call)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_call_refuses_a_name_it_cannot_write() {
        assert_eq!(Rules.write_call("not a name", &Map::new()), None);
    }
}
