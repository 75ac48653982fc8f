//! `seed_oss`: ByteDance Seed-OSS: Qwen3-Coder's XML in `<seed:tool_call>` tags, and
//! reasoning in `<seed:think>`.
//!
//! ```text
//! <seed:think>The user wants the weather.</seed:think>Let me look.
//! <seed:tool_call>
//! <function=get_weather>
//! <parameter=city>Paris</parameter>
//! <parameter=days>3</parameter>
//! </function>
//! </seed:tool_call>
//! ```
//!
//! One block per call; several calls are several blocks. Inside a block the call is read
//! exactly as `qwen3_coder_xml` reads `<function=…>`: names and keys run to the `>`,
//! values are raw text (a value on one line is trimmed, one on lines of its own loses
//! the line break on each side), typed as the module docs say; a missing `</function>`
//! or `</parameter>` is tolerated.
//!
//! Reasoning: `<seed:think>…</seed:think>` (with its `<seed:cot_budget_reflect>` notes)
//! is read by the one reasoning rule as `<think>` tags are (`Format::reasoning`): with
//! `skip_reasoning` it is neither normal text nor a place for calls, and never closed it
//! hides the rest of the reply (with a diagnostic); without it, it is text. A
//! `</seed:think>` without its opening tag hides only itself; the text before it stays
//! normal text (unless the reply is read with `starts_in_reasoning`).
//!
//! Normal text: everything outside the blocks and the reasoning.
//!
//! Malformed: a block without `<function=NAME>` is an incomplete request; a block never
//! closed by `</seed:tool_call>` is an incomplete request (it ends at the next
//! `<seed:tool_call>` if one comes, so later blocks still count).
//!
//! Implementation-defined choices: a bare `<function=…>` outside `<seed:tool_call>` is
//! text; text before a stray `</seed:think>` is normal text (vLLM would call it
//! reasoning).
//!
//! Grammar: each call in a block of its own, as the template writes it:
//! `<seed:tool_call>\n<function=NAME>`, then `\n<parameter=K>V</parameter>` per key in
//! schema order, then `\n</function>\n</seed:tool_call>`. A value is inline and holds no
//! white space at either end (a value on one line is trimmed), none of `</parameter>`,
//! `<parameter=`, `</function>`, `<seed:tool_call>`, `</seed:tool_call>` (each ends it or
//! the call; there are no escapes, entities are kept as written), and no reasoning tag
//! while reasoning is hidden. Free text holds no `<seed:tool_call>`, `<seed:think>` or
//! `</seed:think>` (the reply's one reasoning block is `<think>…</think>`).

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::reasoning::{Markup, Section};
use crate::protocol::textfmt::driver::{
    Found, RawCall, Reading, Region, Scan, ScanState, Searches, UNCLOSED,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues, value_text};
use crate::protocol::textfmt::prompt::{content, methods};
use crate::protocol::textfmt::readers::values::unwrap_lines;
use crate::protocol::textfmt::readers::xml_function::{
    FUNCTION, FUNCTION_END, PARAMETER, PARAMETER_END, read_function,
};
use crate::tools::ToolDefinition;

const OPEN: &str = "<seed:tool_call>";
const CLOSE: &str = "</seed:tool_call>";
const THINK: &str = "<seed:think>";
const THINK_END: &str = "</seed:think>";
const RESULT_OPEN: &str = "<seed:bos>tool\n";
const RESULT_CLOSE: &str = "<seed:eos>";

/// Reasoning: `<seed:think>` tags, read as `<think>` is.
static REASONING: Markup = Markup::new(&[Section::tags(THINK, &[THINK_END])], &[]);

/// The rules of `seed_oss`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, OPEN)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until_first(OPEN.len(), &[CLOSE, OPEN])
    }

    fn read(&self, region: &str, state: &ScanState, _closed: bool, calls: &mut Vec<RawCall>) {
        read_function(region, CLOSE, calls);
        if state.stage == UNCLOSED
            && let Some(call) = calls.last_mut()
        {
            call.problems.push(format!("the call is not closed with {CLOSE}"));
        }
    }
}

/// A JSON Schema type as the template's Python signature names it.
fn python_type(schema: &Value) -> &'static str {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => "str",
        Some("integer" | "number") => "int",
        Some("boolean") => "bool",
        Some("array") => "list",
        _ => "Any",
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<seed:tool_call>"),
        Marker::Token("<seed:think>"),
        Marker::Token("</seed:think>"),
    ],
    escapes: &[Escape::Tag("seed:")],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, the way Seed-OSS's template renders tools: each function
    /// as a Python signature with a docstring, then the call format.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut defs = Vec::new();
        for (name, description, parameters) in methods(tools) {
            let properties = parameters.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = parameters
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let signature = properties
                .map(|p| {
                    p.iter().map(|(k, s)| format!("{k}: {}", python_type(s))).collect::<Vec<_>>().join(",")
                })
                .unwrap_or_default();
            let mut def =
                format!("Function:\ndef {name}({signature}):\n    \"\"\"\n    {}", description.trim());
            if let Some(properties) = properties.filter(|p| !p.is_empty()) {
                def.push_str("\n\n    Args:");
                for (key, schema) in properties {
                    let tag = if required.contains(&key.as_str()) { "[必填]" } else { "[选填]" };
                    let description = schema.get("description").and_then(Value::as_str).unwrap_or_default();
                    def.push_str(&format!("\n    - {key} ({}) {tag}: {description}", python_type(schema)));
                }
            }
            def.push_str("\n\n    \"\"\"");
            defs.push(def);
        }
        format!(
            "You are Doubao, a helpful AI assistant. You may call one or more functions to assist with the user query.\n\n\
         {}\n\
         工具调用请遵循如下格式:\n\
         {OPEN}\n{FUNCTION}example_function_name>\n\
         {PARAMETER}example_parameter_1>value_1{PARAMETER_END}\n\
         {PARAMETER}example_parameter_2>This is the value for the second parameter\nthat can span\nmultiple lines{PARAMETER_END}\n\
         {FUNCTION_END}\n{CLOSE}",
            defs.join("\n\n")
        )
    }

    /// The text that carries `results` back: each result as a `tool` turn of its own.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results.iter().map(|r| format!("{RESULT_OPEN}{}{RESULT_CLOSE}", content(r))).collect()
    }

    /// A call of `name` with `args`, as the template writes calls: each parameter on a line,
    /// its value inline; strings as written, other values as JSON (`<` written `\u003c`).
    /// `None` when a value holds markup the format has no escape for (`</parameter>`,
    /// `<parameter=`, `</function>`, `</seed:tool_call>`, `<seed:tool_call>`), or a string
    /// that would not read back as written (white space at either end), or a name or key
    /// holds `>`.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        if name.contains('>') || name.trim() != name {
            return None;
        }
        let mut out = format!("{OPEN}\n{FUNCTION}{name}>");
        for (key, value) in args {
            let text = value_text(value);
            let markup =
                [PARAMETER_END, PARAMETER, FUNCTION_END, CLOSE, OPEN].iter().any(|m| text.contains(m));
            if markup || unwrap_lines(&text) != text || key.contains('>') || key.trim() != key {
                return None;
            }
            out.push_str(&format!("\n{PARAMETER}{key}>{text}{PARAMETER_END}"));
        }
        out.push_str(&format!("\n{FUNCTION_END}\n{CLOSE}"));
        Some(out)
    }

    /// The calls of `seed_oss` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let call = TextValues {
            avoid: Pattern::trimmed_text(&[PARAMETER_END, PARAMETER, FUNCTION_END, OPEN, CLOSE]),
            open: "",
            close: PARAMETER_END,
            key: &|key| format!("\n{PARAMETER}{key}>"),
            call: &|name| (format!("\n{FUNCTION}{name}>"), format!("\n{FUNCTION_END}\n{CLOSE}")),
        }
        .calls(b, offer)?;
        Ok(Syntax { avoid: vec![Pattern::text(THINK), Pattern::text(THINK_END)], ..offer.syntax(OPEN, call) })
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
        for value in [format!("a{PARAMETER_END}"), CLOSE.to_string(), " padded".into(), "\nx".into()] {
            assert_eq!(Rules.write_call("f", json!({"v": value}).as_object().unwrap()), None, "{value:?}");
        }
    }

    #[test]
    fn reasoning_is_hidden_and_holds_no_call() {
        let reply = "<seed:think>maybe <seed:tool_call>\n<function=a>\n</function>\n</seed:tool_call></seed:think>Sure.";
        let parsed = parse(TextFormat::SeedOss, reply);
        assert!(parsed.requests.is_empty(), "{parsed:#?}");
        assert_eq!(parsed.normal_text, "Sure.");
        let bare = parse(TextFormat::SeedOss, "Example: <function=a>\n</function>");
        assert!(bare.requests.is_empty());
        assert_eq!(bare.normal_text, "Example: <function=a>\n</function>");
        let stray = parse(
            TextFormat::SeedOss,
            "Answer first.</seed:think>\n<seed:tool_call>\n<function=a>\n</function>\n</seed:tool_call>",
        );
        assert_eq!(stray.requests.len(), 1);
        assert_eq!(stray.normal_text, "Answer first.\n");
        let unclosed = parse(TextFormat::SeedOss, "Hi.<seed:think>still thinking <seed:tool_call>");
        assert!(unclosed.requests.is_empty());
        assert_eq!(unclosed.normal_text, "Hi.");
    }
}
