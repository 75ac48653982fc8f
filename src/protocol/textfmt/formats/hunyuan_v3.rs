//! `hunyuan_v3`: Tencent Hunyuan 3 (Hy3): in a `<tool_calls>` block, each call is its
//! name, `<tool_sep>`, then key/value pairs in tags.
//!
//! ```text
//! <tool_calls>
//! <tool_call>get_weather<tool_sep>
//! <arg_key>city</arg_key>
//! <arg_value>Beijing</arg_value>
//! <arg_key>days</arg_key>
//! <arg_value>3</arg_value>
//! </tool_call>
//! </tool_calls>
//! ```
//!
//! The shipping Hy3 tokenizer spells every one of these tokens with a suffix
//! (`<tool_calls:opensource>`, `<tool_sep:opensource>`, `</arg_value:opensource>`, …; its
//! reasoning tags are `<think:opensource>`, which the reasoning rule hides like
//! `<think>`); the preview spells them bare. Both spellings are read; a block uses the
//! spelling of its opening token throughout.
//!
//! Arguments: the name runs from `<tool_call>` to `<tool_sep>` (trimmed); each key is
//! the text of an `<arg_key>` (trimmed), its value the text of the `<arg_value>` that
//! follows (as written), typed as the module docs say for text values (`3` → `3`,
//! `Beijing` → `"Beijing"`, JSON arrays and objects → themselves), or by the tool's
//! schema when the engine resolves the call. A call without pairs has `{}`.
//!
//! Several calls: several `<tool_call>`s in one block, or several blocks. Text before,
//! between and after the blocks is normal text; what stands between the calls of a
//! block is markup.
//!
//! Malformed: a call without `<tool_sep>` or with an empty name, a key without its
//! `</arg_key>` or without an `<arg_value>`, a value without its `</arg_value>`, a key
//! given twice, text between the pairs, or a call not closed by `</tool_call>` (it ends
//! where the next call or the block's end begins) make an incomplete request; the other
//! calls still count. A block that never closes keeps its closed calls.
//!
//! Implementation-defined choices: calls count only inside a `<tool_calls>` block (both
//! sources look for the block first); values are not trimmed (the sources keep them as
//! written); without a schema values are inferred as for `glm45` (vLLM and sglang keep
//! every value a string when the tool has no schema); a value ends at the first
//! `</arg_value>`, and while it is open only a new `<tool_call>` or the block's end cut it
//! short, so a value may hold `</tool_call>` but not `</arg_value>`, `<tool_call>` or
//! `</tool_calls>`. The prompt, results and written calls use the bare spelling, as
//! vLLM's and sglang's parsers and tests do.
//!
//! Grammar: one `<tool_calls>` block (bare spelling) holding the calls, each
//! `\n<tool_call>NAME<tool_sep>\n`, then `<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n`
//! per key in schema order, then `</tool_call>`; the block ends with `\n</tool_calls>`.
//! A value is kept as written (white space too) and holds none of `</arg_value>`,
//! `<tool_call>`, `</tool_calls>` (the format has no escapes) and no reasoning tag while
//! reasoning is hidden; a string that reads as another value without a schema (`42`) is
//! admitted, since the tool's schema keeps it a string. Free text holds no
//! `<tool_calls>` nor `<tool_calls:opensource>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    CUT, Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, ValueTags,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, TextValues};
use crate::protocol::textfmt::prompt::{content, plain_tags, tools_in_tags};
use crate::protocol::textfmt::readers::json_list::TOOL_CALLS;
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_calls};
use crate::protocol::textfmt::readers::values::infer;
use crate::tools::ToolDefinition;

/// One spelling of the format's tokens.
struct Tokens {
    open: &'static str,
    end: &'static str,
    call: &'static str,
    call_end: &'static str,
    sep: &'static str,
    key: &'static str,
    key_end: &'static str,
    value: &'static str,
    value_end: &'static str,
}

/// The preview's spelling (section kind 1).
const BARE: Tokens = Tokens {
    open: "<tool_calls>",
    end: "</tool_calls>",
    call: "<tool_call>",
    call_end: "</tool_call>",
    sep: "<tool_sep>",
    key: "<arg_key>",
    key_end: "</arg_key>",
    value: "<arg_value>",
    value_end: "</arg_value>",
};

/// The shipping tokenizer's spelling (section kind 2).
const SUFFIXED: Tokens = Tokens {
    open: "<tool_calls:opensource>",
    end: "</tool_calls:opensource>",
    call: "<tool_call:opensource>",
    call_end: "</tool_call:opensource>",
    sep: "<tool_sep:opensource>",
    key: "<arg_key:opensource>",
    key_end: "</arg_key:opensource>",
    value: "<arg_value:opensource>",
    value_end: "</arg_value:opensource>",
};

/// The spelling of a section of kind `kind`.
fn tokens(kind: u8) -> &'static Tokens {
    if kind == 2 { &SUFFIXED } else { &BARE }
}

/// The rules of `hunyuan_v3`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.marked(text, from, [(BARE.open, Some(1)), (SUFFIXED.open, Some(2))])
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        let t = tokens(kind);
        search.call_or_end(text, from, t.call, t.end)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let t = tokens(region.state.kind);
        let tags = ValueTags {
            open: t.value,
            tag_ends_at_gt: false,
            close: t.value_end,
            call_end: t.call_end,
            call: t.call,
            end: t.end,
        };
        region.until_call_end(t.call.len(), &tags)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let t = tokens(state.kind);
        let ended = closed && state.stage != CUT && region.ends_with(t.call_end);
        calls.push(read_call(t, region, ended));
    }
}

/// The call of one `<tool_call>` region; `ended`: it ends with its `</tool_call>`.
fn read_call(t: &Tokens, region: &str, ended: bool) -> RawCall {
    let body = region.get(t.call.len()..).unwrap_or_default();
    let body = if ended { body.strip_suffix(t.call_end).unwrap_or(body) } else { body };
    let mut call = RawCall { span: 0..region.len(), ..RawCall::default() };
    if !ended {
        call.problems.push(format!("the call is not closed with {}", t.call_end));
    }
    let Some(sep) = body.find(t.sep) else {
        let head = body.find(t.key).map_or(body, |at| body.get(..at).unwrap_or_default());
        call.name = head.trim().to_string();
        call.problems.push(format!("the call has no {} after its name", t.sep));
        return call;
    };
    call.name = body.get(..sep).unwrap_or_default().trim().to_string();
    if call.name.is_empty() {
        call.problems.push(format!("the call has no name: write {}NAME{}", t.call, t.sep));
    }
    let mut rest = body.get(sep + t.sep.len()..).unwrap_or_default();
    let mut stray = false;
    while let Some(at) = rest.find(t.key) {
        stray |= !rest.get(..at).unwrap_or_default().trim().is_empty();
        let after = rest.get(at + t.key.len()..).unwrap_or_default();
        let Some(key_end) = after.find(t.key_end) else {
            call.problems.push(format!("an {} is not closed with {}", t.key, t.key_end));
            rest = "";
            break;
        };
        let key = after.get(..key_end).unwrap_or_default().trim().to_string();
        let after = after.get(key_end + t.key_end.len()..).unwrap_or_default();
        let Some(value_text) = after.trim_start().strip_prefix(t.value) else {
            call.problems.push(format!("the argument `{key}` has no {}", t.value));
            rest = after;
            continue;
        };
        let (text, next) = match value_text.find(t.value_end) {
            Some(end) => {
                (value_text.get(..end).unwrap_or_default(), value_text.get(end + t.value_end.len()..))
            }
            None => {
                call.problems.push(format!("the value of `{key}` is not closed with {}", t.value_end));
                (value_text, None)
            }
        };
        if key.is_empty() {
            call.problems.push(format!("an argument has no name: write {}KEY{}", t.key, t.key_end));
        } else if call.args.contains_key(&key) {
            call.problems.push(format!("the argument `{key}` is given twice"));
        } else {
            call.text_arg(key, text, infer(text));
        }
        rest = next.unwrap_or_default();
    }
    if stray || !rest.trim().is_empty() {
        call.problems.push(format!("the call holds text that is not {}…{} pairs", t.key, t.value_end));
    }
    call
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: TOOL_CALLS, look: after_tool_calls, shape: Shape::CallTags },
        Marker::Token("<tool_calls:opensource>"),
    ],
    escapes: &[Escape::Tag("tool_sep")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, worded as Hunyuan 3's chat template words it (bare
    /// tokens).
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let t = &BARE;
        format!(
            "{tools}For function call returns, you should first print {open}\n\
         For each function call, you should return object like:\n\
         {call}{{function-name}}{sep}\n\
         {key}{{arg-key-1}}{key_end}\n{value}{{arg-value-1}}{value_end}\n\
         {key}{{arg-key-2}}{key_end}\n{value}{{arg-value-2}}{value_end}\n\
         ...\n{call_end}\n\
         At the end of function call returns, you should print {end}",
            tools = tools_in_tags(tools, "function"),
            open = t.open,
            end = t.end,
            call = t.call,
            call_end = t.call_end,
            sep = t.sep,
            key = t.key,
            key_end = t.key_end,
            value = t.value,
            value_end = t.value_end,
        )
    }

    /// The text of the tool message that carries `results` back: one `<tool_response>` each,
    /// in a `<tool_responses>` block, as the template renders a run of tool messages.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        let each: String = results
            .iter()
            .map(|r| {
                format!(
                    "<tool_response>\n{}\n</tool_response>\n",
                    plain_tags(&content(r), &["tool_sep", "tool_response"])
                )
            })
            .collect();
        format!("<tool_responses>\n{each}</tool_responses>")
    }

    /// A call of `name` with `args`, as the prompt teaches it (bare tokens): strings as
    /// written, other values as JSON (`<` in JSON strings written `\u003c`). `None` when a
    /// string holds `</arg_value>`, `<tool_call>` or `</tool_calls>` (the format has no
    /// escapes), when a string would read back as another value (`"42"`, `"true"`,
    /// `"[1]"`: the reading infers types from text), or when the name or a key is empty, has
    /// white space at an end, or holds markup.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let t = &BARE;
        let plain = |text: &str| !text.is_empty() && text.trim() == text && !text.contains('<');
        if !plain(name) || neutralize_tokens(name) != name {
            return None;
        }
        let mut out = format!("{}\n{}{name}{}\n", t.open, t.call, t.sep);
        for (key, value) in args {
            let text = match value {
                Value::String(s) if infer(s) == *value => s.clone(),
                Value::String(_) => return None,
                other => crate::protocol::textfmt::grammar::json_text(other),
            };
            if !plain(key) || [t.value_end, t.call, t.end].iter().any(|markup| text.contains(markup)) {
                return None;
            }
            out.push_str(&format!("{}{key}{}\n{}{text}{}\n", t.key, t.key_end, t.value, t.value_end));
        }
        out.push_str(&format!("{}\n{}", t.call_end, t.end));
        Some(out)
    }

    /// The calls of `hunyuan_v3` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let t = &BARE;
        let close = format!("{}\n", t.value_end);
        let call = TextValues {
            avoid: vec![Pattern::text(t.value_end), Pattern::text(t.call), Pattern::text(t.end)],
            open: t.value,
            close: &close,
            key: &|key| format!("{}{key}{}\n", t.key, t.key_end),
            call: &|name| (format!("\n{}{name}{}\n", t.call, t.sep), t.call_end.to_string()),
        }
        .calls(b, offer)?;
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(""), close: format!("\n{}", t.end) }),
            avoid: vec![Pattern::text(SUFFIXED.open)],
            ..offer.syntax(t.open, call)
        })
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
        for bad in [
            json!("a</arg_value>b"),
            json!("<tool_call>"),
            json!("</tool_calls>"),
            json!("42"),
            json!("true"),
        ] {
            assert_eq!(Rules.write_call("f", json!({ "v": bad }).as_object().unwrap()), None, "{bad}");
        }
        assert_eq!(Rules.write_call("", &Map::new()), None);
        assert_eq!(Rules.write_call("f<tool_sep>", &Map::new()), None);
        assert_eq!(Rules.write_call("f", json!({" a": 1}).as_object().unwrap()), None);
    }

    #[test]
    fn a_call_outside_a_block_is_text() {
        let text = "<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n</tool_call>";
        let parsed = parse(TextFormat::HunyuanV3, text);
        assert!(parsed.requests.is_empty(), "{parsed:#?}");
        assert_eq!(parsed.normal_text, text);
    }

    #[test]
    fn suffixed_tokens_are_read() {
        let text = "Checking.<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n\
                    <arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Beijing</arg_value:opensource>\n\
                    </tool_call:opensource>\n</tool_calls:opensource>";
        let parsed = parse(TextFormat::HunyuanV3, text);
        assert_eq!(parsed.requests.len(), 1, "{parsed:#?}");
        assert!(parsed.requests[0].complete);
        assert_eq!(parsed.requests[0].args["city"], "Beijing");
        assert_eq!(parsed.normal_text, "Checking.");
    }
}
