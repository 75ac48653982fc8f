//! `kimi_k3`: Kimi K3: `<|open|>call tool="…"<|sep|>` blocks in a `tools` channel.
//!
//! Kimi K3 writes XTML: channels opened by `<|open|>NAME attributes<|sep|>` and closed by
//! `<|close|>NAME<|sep|>`. Calls stand in a `tools` channel after the `response` one:
//!
//! ```text
//! <|open|>response<|sep|>Checking.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>
//! ```
//!
//! - **Arguments.** Each `argument` block has a `key` and a `type`; a `string` value is
//!   raw text, taken as written (no unescaping); any other type's value is decoded as
//!   JSON, and stays a string when it does not decode. A `type` left out means `string`.
//!   A `<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>` block (what Kimi's
//!   renderer writes for a call kept as JSON) gives its members as arguments.
//!   Attribute values are unescaped (`&quot;` → `"`, then `&amp;` → `&`).
//! - **Several calls** are several call blocks in the one `tools` channel (call blocks
//!   outside one are read too).
//! - **Normal text** is the content of the `response` channel and any text outside the
//!   markup; every marker (`response`, `tools`, `<|close|>message<|sep|>`,
//!   `<|end_of_msg|>`, …) is dropped. The `think` channel is reasoning, declared to the
//!   one reasoning rule (`Format::reasoning`, a frame): hidden up to
//!   `<|close|>think<|sep|>` with `skip_reasoning`, its text normal text without it.
//!   Kimi's prompt ends by opening `think` (thinking mode) or `response`: that is the
//!   general option `starts_in_reasoning` (the model table sets it), for which this
//!   format declares its other markers as an answer's: a reply whose first marker is
//!   `<|close|>think<|sep|>` began in reasoning (the text before it is hidden), one whose
//!   first marker is another did not.
//! - **Malformed.** A call block never closed (the reply ends, or `<|close|>tools<|sep|>`,
//!   another `<|open|>call` or `<|end_of_msg|>` comes first), one without a `tool`
//!   name, or one with an argument block never closed, is an incomplete request; the
//!   other calls count. A `tools` channel never closed is tolerated.
//!
//! Implementation-defined choices: the `index` attribute is not read; white space inside
//! markers (`<|open|> tools <|sep|>`) is tolerated except in the closing markers of a
//! call, an argument and a `json` block and in both `think` markers, which must be
//! written exactly; a
//! `string` value cannot hold `<|close|>argument<|sep|>` (the writer refuses such a value).
//!
//! Grammar: one `tools` channel holding the calls, each
//! `<|open|>call tool="NAME" index="N"<|sep|>` (`N` from 1 to the grammar's most calls),
//! then `<|open|>argument key="K" type="TYPE"<|sep|>V<|close|>argument<|sep|>` per key in
//! schema order, then `<|close|>call<|sep|>`; the channel ends with
//! `<|close|>tools<|sep|>`. A string is `type="string"` and raw text holding no `<|` (no
//! marker) and no reasoning tag while reasoning is hidden; any other value is JSON, its
//! `type` the one the writer gives it (`number` for integers too). Free text holds no
//! `<|open|>`, `<|close|>` or `<|end_of_msg|>` (every marker is dropped, and a `think`
//! channel hides what follows); the reply's one reasoning block is `<think>…</think>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax, TextForm, integer_range};
use crate::protocol::reasoning::{Markup, Section as Reasoning};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextCalls};
use crate::tools::ToolDefinition;

const OPEN: &str = "<|open|>";
const CLOSE: &str = "<|close|>";
const SEP: &str = "<|sep|>";
const END_OF_MSG: &str = "<|end_of_msg|>";
const CLOSE_THINK: &str = "<|close|>think<|sep|>";
const CLOSE_CALL: &str = "<|close|>call<|sep|>";
const CLOSE_TOOLS: &str = "<|close|>tools<|sep|>";
const CLOSE_ARGUMENT: &str = "<|close|>argument<|sep|>";
const CLOSE_JSON: &str = "<|close|>json<|sep|>";
const OPEN_CALL: &str = "<|open|>call";

const MARKERS: [&str; 3] = [OPEN, CLOSE, END_OF_MSG];
/// What ends a call region: its closing marker, or (never closed) what cannot be in it.
const CALL_ENDS: [&str; 4] = [CLOSE_CALL, CLOSE_TOOLS, OPEN_CALL, END_OF_MSG];

/// Section kinds.
const DROP: u8 = 1;
const TOOLS: u8 = 3;

/// Reasoning: the `think` channel. Any other marker is an answer's: a reply that the
/// option says starts in reasoning (thinking mode opens `think` in the prompt) and
/// whose first marker is another (the prompt opened `response`) did not.
static REASONING: Markup =
    Markup::new(&[Reasoning::frame("<|open|>think<|sep|>", &[CLOSE_THINK], &[])], &[OPEN, CLOSE, END_OF_MSG]);

/// The rules of `kimi_k3`.
pub(crate) struct Rules;

/// The word after a marker token ending at `from` (after blanks), and where it ends;
/// `None` while the text may still extend it.
fn word_after(text: &str, from: usize) -> Option<(&str, usize)> {
    let start = after_blanks(text.as_bytes(), from);
    let rest = text.get(start..)?;
    let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-').count();
    if len == rest.len() {
        return None;
    }
    Some((rest.get(..len)?, start + len))
}

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        let (at, token) = match search.tokens(text, from, &MARKERS) {
            (Found::Call(at), i) => (at, MARKERS.get(i).copied().unwrap_or(END_OF_MSG)),
            (other, _) => return other,
        };
        if token == END_OF_MSG {
            return Found::Section { at, len: token.len(), kind: DROP };
        }
        let Some((word, word_end)) = word_after(text, at + token.len()) else {
            return Found::Hold(at);
        };
        if token == OPEN && word == "call" {
            return Found::Call(at);
        }
        // (Only `<|sep|>` is searched for from here: the searches must not go back.)
        let sep = match search.tokens(text, word_end, &[SEP]) {
            (Found::Call(sep), _) => sep,
            _ => return Found::Hold(at),
        };
        let attrs = text.get(word_end..sep).unwrap_or_default();
        if attrs.contains(OPEN) || attrs.contains(CLOSE) {
            // A marker cut short by another: its token alone is dropped.
            return Found::Section { at, len: token.len(), kind: DROP };
        }
        let len = sep + SEP.len() - at;
        // Every other marker (`think`'s too, when reasoning is read as text) is dropped.
        let kind = if token == OPEN && word == "tools" { TOOLS } else { DROP };
        Found::Section { at, len, kind }
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, _search: &mut Searches) -> InSection {
        match kind {
            TOOLS => {
                let at = after_blanks(text.as_bytes(), from);
                let rest = text.get(at..).unwrap_or_default();
                if MARKERS.iter().any(|m| m.len() > rest.len() && m.starts_with(rest)) {
                    return InSection::Hold(at);
                }
                let token = if rest.starts_with(OPEN) {
                    OPEN
                } else if rest.starts_with(CLOSE) {
                    CLOSE
                } else {
                    // Text, or some other marker: prose (and its markup) resume here.
                    return InSection::Leave(at);
                };
                let Some((word, word_end)) = word_after(text, at + token.len()) else {
                    return InSection::Hold(at);
                };
                match (token == OPEN, word) {
                    (true, "call") => InSection::Call(at),
                    (false, "tools") => {
                        let sep = after_blanks(text.as_bytes(), word_end);
                        let tail = text.get(sep..).unwrap_or_default();
                        if tail.starts_with(SEP) {
                            InSection::End { at, len: sep + SEP.len() - at }
                        } else if SEP.starts_with(tail) {
                            InSection::Hold(at)
                        } else {
                            InSection::Leave(at)
                        }
                    }
                    _ => InSection::Leave(at),
                }
            }
            _ => InSection::Leave(from),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        match region.earliest(OPEN.len(), &CALL_ENDS) {
            Some((at, 0)) => {
                region.state.stage = 1;
                Scan::Closed(at + CLOSE_CALL.len())
            }
            Some((at, _)) => Scan::Closed(at),
            None => Scan::Open,
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let complete = closed && state.stage == 1;
        let end = if complete { region.len().saturating_sub(CLOSE_CALL.len()) } else { region.len() };
        let block = region.get(OPEN.len()..end).unwrap_or_default();
        let mut call = RawCall { span, ..RawCall::default() };
        let Some(sep) = block.find(SEP) else {
            call.problems.push(format!("the call's opening marker has no {SEP}"));
            calls.push(call);
            return;
        };
        let head = block.get(..sep).unwrap_or_default().trim_start();
        let head = head.strip_prefix("call").unwrap_or(head);
        call.name = attribute(head, "tool").unwrap_or_default();
        if call.name.is_empty() {
            call.problems.push("the call block has no tool=\"NAME\" attribute".to_string());
        }
        if !complete {
            call.problems.push(format!("the call block never closed: end it with {CLOSE_CALL}"));
        }
        read_arguments(block.get(sep + SEP.len()..).unwrap_or_default(), &mut call);
        calls.push(call);
    }
}

/// Reads the argument blocks of a call's body into `call`.
fn read_arguments(body: &str, call: &mut RawCall) {
    let mut pos = 0;
    while let Some(found) = body.get(pos..).and_then(|rest| rest.find(OPEN)) {
        let at = pos + found + OPEN.len();
        let Some((word, word_end)) = word_after(body, at) else { return };
        let Some(sep) = body.get(word_end..).and_then(|rest| rest.find(SEP)).map(|s| word_end + s) else {
            call.problems.push(format!("an {word} block's opening marker has no {SEP}"));
            return;
        };
        let attrs = body.get(word_end..sep).unwrap_or_default();
        let value_start = sep + SEP.len();
        let close = match word {
            "argument" => CLOSE_ARGUMENT,
            "json" => CLOSE_JSON,
            _ => {
                pos = value_start;
                continue;
            }
        };
        let Some(value_end) =
            body.get(value_start..).and_then(|rest| rest.find(close)).map(|e| value_start + e)
        else {
            call.problems.push(format!("an {word} block never closed: end it with {close}"));
            return;
        };
        let value = body.get(value_start..value_end).unwrap_or_default();
        pos = value_end + close.len();
        if word == "json" {
            match serde_json::from_str::<Value>(value.trim()) {
                Ok(Value::Object(members)) => call.args.extend(members),
                _ => call.problems.push("a json block does not hold one JSON object".to_string()),
            }
            continue;
        }
        let Some(key) = attribute(attrs, "key") else {
            call.problems.push("an argument block has no key=\"…\" attribute".to_string());
            continue;
        };
        let kind = attribute(attrs, "type").unwrap_or_else(|| "string".to_string());
        let parsed = if kind == "string" {
            Value::String(value.to_string())
        } else {
            serde_json::from_str(value.trim()).unwrap_or_else(|_| Value::String(value.to_string()))
        };
        call.text_arg(key, value, parsed);
    }
}

/// The unescaped value of attribute `name` (`name="…"`) in a marker's attribute text.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(eq) = rest.find("=\"") {
        let key = rest.get(..eq).unwrap_or_default().trim_end();
        let key_start = key.rfind(|c: char| c.is_whitespace() || c == '"').map_or(0, |i| i + 1);
        let value_start = eq + 2;
        let value_len = rest.get(value_start..)?.find('"')?;
        let value = rest.get(value_start..value_start + value_len)?;
        if key.get(key_start..) == Some(name) {
            return Some(value.replace("&quot;", "\"").replace("&amp;", "&"));
        }
        rest = rest.get(value_start + value_len + 1..)?;
    }
    None
}

/// An attribute value as Kimi's renderer escapes it.
fn escape_attribute(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

/// Keys sorted at every depth, as Kimi's renderer writes the tool list.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter().map(|k| (k.clone(), sorted(map.get(k).unwrap_or(&Value::Null)))).collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<|open|>"), Marker::Token("<|close|>")],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the `tool-declare` system message's text (the tools as
    /// compact, key-sorted JSON), then how a call is written.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let list = sorted(&Value::Array(crate::protocol::textfmt::prompt::functions(tools)));
        format!(
            "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n{list}\n```\n\n\
         To call tools, write {OPEN}tools{SEP}, then for each call \
         {OPEN}call tool=\"NAME\" index=\"N\"{SEP} with one \
         {OPEN}argument key=\"KEY\" type=\"TYPE\"{SEP}VALUE{CLOSE_ARGUMENT} per argument \
         (a string as raw text, any other type as JSON) and {CLOSE_CALL}, then {CLOSE_TOOLS}."
        )
    }

    /// The tool messages that carry `results` back, one per result, numbered from 1 as
    /// Kimi's renderer numbers them:
    /// `<|open|>message role="tool" tool="NAME" index="N"<|sep|>…<|close|>message<|sep|><|end_of_msg|>`.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{OPEN}message role=\"tool\" tool=\"{}\" index=\"{}\"{SEP}{}{CLOSE}message{SEP}{END_OF_MSG}",
                escape_attribute(&neutralize_tokens(&r.tool_name)),
                i + 1,
                crate::protocol::textfmt::prompt::content(r)
            )
        })
        .collect()
    }

    /// A call of `name` with `args`, as the prompt teaches it. `None` when a string value
    /// holds a marker (`<|`), which a raw value cannot carry.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        if name.is_empty() || name.contains("<|") {
            return None;
        }
        let mut out =
            format!("{OPEN}tools{SEP}{OPEN}call tool=\"{}\" index=\"1\"{SEP}", escape_attribute(name));
        for (key, value) in args {
            if key.contains("<|") {
                return None;
            }
            let (kind, text) = match value {
                Value::String(s) if s.contains("<|") => return None,
                Value::String(s) => ("string", s.clone()),
                Value::Number(_) => ("number", value.to_string()),
                Value::Bool(_) => ("boolean", value.to_string()),
                Value::Null => ("null", value.to_string()),
                Value::Array(_) => ("array", crate::protocol::textfmt::grammar::json_text(value)),
                Value::Object(_) => ("object", crate::protocol::textfmt::grammar::json_text(value)),
            };
            out.push_str(&format!(
                "{OPEN}argument key=\"{}\" type=\"{kind}\"{SEP}{text}{CLOSE_ARGUMENT}",
                escape_attribute(key)
            ));
        }
        out.push_str(&format!("{CLOSE_CALL}{CLOSE_TOOLS}"));
        Some(out)
    }

    /// The calls of `kimi_k3` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let string = TextForm {
            text_name: "VALUE_TEXT",
            value_name: "STRING_VALUE",
            open: format!(" type=\"string\"{SEP}"),
            avoid: vec![Pattern::text("<|")],
            close: CLOSE_ARGUMENT.into(),
        };
        let kind_open = |kind: &str| {
            let kind = if kind == "integer" { "number" } else { kind };
            format!(" type=\"{kind}\"{SEP}")
        };
        // The call index counts calls: from 1 to the most a reply may hold.
        let index =
            b.terminal("INDEX", integer_range(Some(1), Some(i128::from(offer.constraint.max_calls.max(1)))));
        let after_index = format!("\"{SEP}");
        let call = TextCalls {
            strings: vec![string],
            open: "",
            close: CLOSE_ARGUMENT,
            kind_open: Some(&kind_open),
            escapes: "<",
            index: Some((index, &after_index)),
            key: &|key| format!("{OPEN}argument key=\"{}\"", escape_attribute(key)),
            call: &|name| {
                (format!("{OPEN}call tool=\"{}\" index=\"", escape_attribute(name)), CLOSE_CALL.to_string())
            },
        }
        .calls(b, offer)?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(""), close: CLOSE_TOOLS.into() }),
            avoid: vec![Pattern::text(OPEN), Pattern::text(CLOSE), Pattern::text(END_OF_MSG)],
            ..offer.syntax(format!("{OPEN}tools{SEP}"), call)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::written_reads_back;

    #[test]
    fn write_call_round_trips() {
        for (name, args) in [
            ("get_weather", json!({"city": "Paris", "days": 3, "metric": true, "none": null})),
            ("empty", json!({})),
            (
                "say \"hi\" & go",
                json!({"k \"q\"": "say &quot;hi&quot; <b>x</b> ☃", "n": [1, {"k": "<x>"}], "o": {"a": 1.5}}),
            ),
            ("numeric_text", json!({"s": "42", "t": "{not json"})),
        ] {
            written_reads_back(TextFormat::KimiK3, name, &args);
        }
        let marker = json!({"s": "a <|close|>argument<|sep|> b"});
        assert_eq!(Rules.write_call("f", marker.as_object().unwrap_or(&Map::new())), None);
    }

    #[test]
    fn attributes_unescape() {
        assert_eq!(attribute(r#" tool="a&amp;quot;b" index="1""#, "tool").as_deref(), Some("a&quot;b"));
        assert_eq!(attribute(r#" key="x" type="number""#, "type").as_deref(), Some("number"));
        assert_eq!(attribute(r#" key="x""#, "type"), None);
    }
}
