//! DSML, the markup of DeepSeek V3.2 (`deepseek_v32`), V4 (`deepseek_v4`) and V4.1
//! (`deepseek_v41`), and GigaChat 3.5's GCML (`gigachat35`): one reader and writer for
//! all of them ([`Dsml`]), driven by each format's [`Markup`] (its tokens).
//!
//! ```text
//! BLOCK
//! INVOKE name="NAME">
//! PARAM name="KEY" string="true|false">VALUE PARAM_END
//! INVOKE_END
//! BLOCK_END
//! ```
//!
//! (with DeepSeek V4's tokens: `<｜DSML｜tool_calls>`, `<｜DSML｜invoke`,
//! `<｜DSML｜parameter`, `</｜DSML｜parameter>`, `</｜DSML｜invoke>`,
//! `</｜DSML｜tool_calls>`; the bars are U+FF5C).
//!
//! Reading, the same for every format that uses it:
//! - A block holds invokes; only an invoke inside a block is a call (what stands between
//!   the invokes of a block is markup). A block that never closes keeps its closed
//!   invokes. A format may have other spellings of the opening block tag
//!   ([`Dsml::leads`]) and tokens it drops wherever they stand ([`Dsml::dropped`]).
//! - An invoke's name is its `name` attribute, trimmed. Its body is parameter tags (one
//!   key each) or one JSON object (the argument object); an empty body is `{}`.
//! - `string="true"`: the value is the text between the tags, byte for byte.
//!   `string="false"`: the text is JSON and is decoded; text that is not JSON stays a
//!   string. No `string` attribute: a string if the markup says so
//!   ([`Markup::untagged_is_string`]), else the text is typed as text values are
//!   ([`infer`]).
//! - A value ends at the first closing parameter tag; while a value is open only a new
//!   invoke or the block's end cuts it short (so a value may hold the closing invoke
//!   tag). An invoke ends after its closing invoke tag, or, unclosed, where the next
//!   invoke or the block's end begins.
//! - Incomplete (reported, never run): an invoke without a name, a parameter without a
//!   name or named twice (neither is kept), a body holding text that is neither
//!   parameter tags nor one JSON object, a JSON body that does not parse, an invoke not
//!   closed by its closing tag. An invoke the reply cut off is reported by the driver
//!   (the reply ended before it was closed), not once more here.
//!
//! Writing, the same for every format that uses it (its prompt and results are its own):
//! a call is one block holding one invoke, one tag a line, as the grammar has it.
//!
//! Grammar (the same for every format that uses it): one block holding the
//! calls, each `\nINVOKE name="NAME">\n`, then `PARAM name="K" string="…">V PARAM_END\n`
//! per key in schema order, then `INVOKE_END`; the block ends with `\nBLOCK_END`, as a
//! call is written. A string is `string="true"` and its text as written (white
//! space kept), holding no closing parameter tag, no invoke tag and no block end (the
//! markup has no escapes), and no reasoning tag while reasoning is hidden; every other
//! value is `string="false"` and JSON (`<` in its strings written `\u003c`). Free text
//! holds no opening block tag, nor any token the format drops ([`Dsml::dropped`]).

use serde_json::{Map, Value};

use super::values::infer;
use crate::ToolExecutionResult;
use crate::grammar::{Builder, Expr, GrammarError, Pattern, Section, Syntax, TextForm};
use crate::protocol::textfmt::driver::{
    CUT, Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, SectionTokens, ValueTags,
};
use crate::protocol::textfmt::format::Writing;
use crate::protocol::textfmt::grammar::{Offer, TextCalls};
use crate::protocol::textfmt::prompt::{bare_functions, content, plain_tags};
use crate::tools::ToolDefinition;

/// The tokens of one DSML-style format: a block of invokes, each with parameter tags
/// carrying a `string` attribute.
pub(crate) struct Markup {
    pub block: &'static str,
    pub block_end: &'static str,
    pub invoke: &'static str,
    pub invoke_end: &'static str,
    pub param: &'static str,
    pub param_end: &'static str,
    /// A parameter without a `string` attribute is a string (else its text is typed as
    /// text values are).
    pub untagged_is_string: bool,
}

impl Markup {
    /// The section tokens: the block opens a section, invokes are its calls.
    pub(crate) fn sections(&self) -> SectionTokens {
        SectionTokens { open: self.block, call: self.invoke, end: self.block_end }
    }
}

/// A DSML format, read and written: its tokens, what else its reading finds, and what it
/// writes besides calls (each format's own prompt and results).
pub(crate) struct Dsml {
    /// The format's tokens.
    pub markup: &'static Markup,
    /// Other spellings of the opening block tag, markup as a whole (V4.1's blank line
    /// before it).
    pub leads: &'static [&'static str],
    /// Tokens that are markup wherever they stand and are dropped from the text; free
    /// text in the grammar holds none of them (GigaChat's end markers).
    pub dropped: &'static [&'static str],
    /// The tool-definition prompt, written with the format's tokens.
    pub prompt: fn(&Markup, &[ToolDefinition]) -> String,
    /// The text of the tool message that carries results back.
    pub results: fn(&[ToolExecutionResult]) -> String,
}

/// Section kinds: a block of invokes, a dropped token.
const BLOCK: u8 = 1;
const DROPPED: u8 = 2;

impl Reading for Dsml {
    fn sections(&self) -> Option<SectionTokens> {
        Some(self.markup.sections())
    }

    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        if self.leads.is_empty() && self.dropped.is_empty() {
            return search.section(text, from, self.markup.block);
        }
        // The earliest start wins: a lead starts before the block tag it ends with.
        let tokens: Vec<&'static str> =
            self.leads.iter().chain([&self.markup.block]).chain(self.dropped).copied().collect();
        match search.tokens(text, from, &tokens) {
            (Found::Call(at), i) => Found::Section {
                at,
                len: tokens.get(i).map_or(0, |token| token.len()),
                kind: if i <= self.leads.len() { BLOCK } else { DROPPED },
            },
            (other, _) => other,
        }
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        if kind == DROPPED {
            return InSection::Leave(from);
        }
        search.call_or_end(text, from, self.markup.invoke, self.markup.block_end)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        scan(self.markup, region)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read(self.markup, region, state, closed, calls);
    }
}

/// Every DSML format writes calls and their grammar alike (see the module docs); its
/// prompt and results are its own.
impl Writing for Dsml {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        (self.prompt)(self.markup, tools)
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        (self.results)(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        write(self.markup, name, args)
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let avoid = self.dropped.iter().map(|token| Pattern::text(token)).collect();
        syntax(self.markup, avoid, b, offer)
    }
}

/// Scans an invoke region of `m`: it ends after its closing invoke tag, or is cut short
/// where the next invoke or the block's end begins (inside a value, only those two cut
/// it; outside one, the closing invoke tag ends it).
fn scan(m: &Markup, region: &mut Region<'_>) -> Scan {
    let tags = ValueTags {
        open: m.param,
        tag_ends_at_gt: true,
        close: m.param_end,
        call_end: m.invoke_end,
        call: m.invoke,
        end: m.block_end,
    };
    region.until_call_end(m.invoke.len(), &tags)
}

/// The call of an invoke region of `m` that ended (`closed`) or that the reply cut off.
fn read(m: &Markup, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
    let ended = closed && state.stage != CUT && region.ends_with(m.invoke_end);
    let mut call = read_invoke(m, region, ended);
    if closed && !ended {
        call.problems.push(format!("the invoke is not closed with {}", m.invoke_end));
    }
    calls.push(call);
}

/// The call of one invoke region; `ended`: it ends with its closing invoke tag.
fn read_invoke(m: &Markup, region: &str, ended: bool) -> RawCall {
    let span = 0..region.len();
    let Some(gt) = region.find('>') else {
        return RawCall::broken(span, "", format!("the {}> tag is not closed with `>`", m.invoke));
    };
    let head = region.get(m.invoke.len()..gt).unwrap_or_default();
    let name = attribute(head, "name").unwrap_or_default().trim().to_string();
    let mut call = RawCall { span, name, ..RawCall::default() };
    if call.name.is_empty() {
        call.problems.push(format!("the invoke has no name: write {} name=\"…\">", m.invoke));
    }
    let body = region.get(gt + 1..).unwrap_or_default();
    let body = if ended { body.strip_suffix(m.invoke_end).unwrap_or(body) } else { body };
    if body.trim_start().starts_with('{') {
        match super::json::arguments(body.trim()) {
            Ok(args) => call.args = args,
            Err(problem) => call.problems.push(problem),
        }
        return call;
    }
    let mut rest = body;
    let mut stray = false;
    while let Some(at) = rest.find(m.param) {
        stray |= !rest.get(..at).unwrap_or_default().trim().is_empty();
        let after = rest.get(at + m.param.len()..).unwrap_or_default();
        let Some(tag_end) = after.find('>') else {
            call.problems.push(format!("a {}> tag is not closed with `>`", m.param));
            rest = "";
            break;
        };
        let tag = after.get(..tag_end).unwrap_or_default();
        let value_text = after.get(tag_end + 1..).unwrap_or_default();
        let (text, next) = match value_text.find(m.param_end) {
            Some(end) => {
                (value_text.get(..end).unwrap_or_default(), value_text.get(end + m.param_end.len()..))
            }
            None => (value_text, None),
        };
        let key = attribute(tag, "name").unwrap_or_default();
        if next.is_none() {
            call.problems.push(format!("the parameter `{key}` is not closed with {}", m.param_end));
        }
        if key.is_empty() {
            call.problems
                .push(format!("a parameter has no name: write {} name=\"…\" string=\"…\">", m.param));
        } else if call.args.contains_key(&key) {
            call.problems.push(format!("the parameter `{key}` is given twice"));
        } else {
            let value = match attribute(tag, "string").as_deref() {
                Some("true") => Value::String(text.to_string()),
                Some("false") => {
                    serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.to_string()))
                }
                _ if m.untagged_is_string => Value::String(text.to_string()),
                _ => infer(text.trim()),
            };
            call.text_arg(key, text, value);
        }
        rest = next.unwrap_or_default();
    }
    if stray || !rest.trim().is_empty() {
        call.problems
            .push(format!("the invoke holds text that is neither {}> tags nor one JSON object", m.param));
    }
    call
}

/// The value of attribute `name` in a tag's text: in double or single quotes, or bare
/// up to white space or `>`. `name` counts only at the start or after white space.
pub(crate) fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(found) = tag.get(from..).and_then(|rest| rest.find(name)) {
        let at = from + found;
        from = at + name.len();
        let boundary = at == 0 || tag.as_bytes().get(at - 1).is_some_and(u8::is_ascii_whitespace);
        let Some(value) = tag.get(from..).unwrap_or_default().trim_start().strip_prefix('=') else {
            continue;
        };
        if !boundary {
            continue;
        }
        let value = value.trim_start();
        return match value.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let inner = value.get(1..)?;
                Some(inner.get(..inner.find(quote)?)?.to_string())
            }
            _ => {
                let end = value.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(value.len());
                Some(value.get(..end)?.to_string())
            }
        };
    }
    None
}

/// DeepSeek V3.2's tokens (`deepseek_v32`).
pub(crate) const V32: Markup = Markup {
    block: "<｜DSML｜function_calls>",
    block_end: "</｜DSML｜function_calls>",
    invoke: "<｜DSML｜invoke",
    invoke_end: "</｜DSML｜invoke>",
    param: "<｜DSML｜parameter",
    param_end: "</｜DSML｜parameter>",
    untagged_is_string: false,
};

/// DeepSeek V4's tokens (`deepseek_v4`).
pub(crate) const V4: Markup = Markup {
    block: "<｜DSML｜tool_calls>",
    block_end: "</｜DSML｜tool_calls>",
    invoke: "<｜DSML｜invoke",
    invoke_end: "</｜DSML｜invoke>",
    param: "<｜DSML｜parameter",
    param_end: "</｜DSML｜parameter>",
    untagged_is_string: false,
};

/// DeepSeek V4.1's tokens (`deepseek_v41`).
pub(crate) const V41: Markup = Markup {
    block: "<｜DSML｜ calls>",
    block_end: "</｜DSML｜ calls>",
    invoke: "<｜DSML｜ invoke",
    invoke_end: "</｜DSML｜ invoke>",
    param: "<｜DSML｜ parameter",
    param_end: "</｜DSML｜ parameter>",
    untagged_is_string: false,
};

/// GigaChat 3.5's tokens (`gigachat35`).
pub(crate) const GCML: Markup = Markup {
    block: "<｜GCML｜tool_calls>",
    block_end: "</｜GCML｜tool_calls>",
    invoke: "<｜GCML｜invoke",
    invoke_end: "</｜GCML｜invoke>",
    param: "<｜GCML｜parameter",
    param_end: "</｜GCML｜parameter>",
    untagged_is_string: true,
};
/// DeepSeek V4's `## Tools` section with `m`'s tokens (V4.1's encoding words it the
/// same way).
pub(crate) fn tools_section(m: &Markup, tools: &[ToolDefinition]) -> String {
    let (block, example) = (m.block, example_block(m, "TOOL"));
    let schemas = bare_functions(tools).iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    format!(
        "## Tools\n\n\
         You have access to a set of tools to help answer the user's question. You can invoke tools by \
         writing a \"{block}\" block like the following:\n\n\
         {example}\n\n\
         String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, \
         booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n\
         If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside \
         <think>...</think> BEFORE any tool calls or final response.\n\n\
         Otherwise, output directly after </think> with tool calls or final response.\n\n\
         ### Available Tool Schemas\n\n{schemas}\n\n\
         You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls."
    )
}

/// The block the DeepSeek prompts show, with `m`'s tokens: two invokes of `$KIND_NAME`
/// and `$KIND_NAME2`, the first with one parameter of either kind.
pub(crate) fn example_block(m: &Markup, kind: &str) -> String {
    let Markup { block, block_end, invoke, invoke_end, param, param_end, .. } = m;
    format!(
        "{block}\n\
         {invoke} name=\"${kind}_NAME\">\n\
         {param} name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE{param_end}\n\
         ...\n\
         {invoke_end}\n\
         {invoke} name=\"${kind}_NAME2\">\n\
         ...\n\
         {invoke_end}\n\
         {block_end}"
    )
}

/// The text of the tool message that carries `results` back in DeepSeek V4 and V4.1:
/// one `<tool_result>` each, separated by a blank line, as their encodings write a run
/// of tool messages.
pub(crate) fn tool_results(results: &[ToolExecutionResult]) -> String {
    results
        .iter()
        .map(|r| format!("<tool_result>{}</tool_result>", plain_tags(&content(r), &["tool_result"])))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A call of `name` with `args` in `m`'s markup, one tag a line: strings with
/// `string="true"`, other values as JSON with `string="false"`. `None` when a string
/// holds the closing parameter tag, the invoke tag or the block's end (the markup has
/// no escapes), or a name or key is empty, holds `"` or `>`, or has white space around
/// it.
fn write(m: &Markup, name: &str, args: &Map<String, Value>) -> Option<String> {
    let plain = |text: &str| !text.trim().is_empty() && !text.contains(['"', '>']) && text.trim() == text;
    if !plain(name) {
        return None;
    }
    let mut out = format!("{}\n{} name=\"{name}\">\n", m.block, m.invoke);
    for (key, value) in args {
        let (string, text) = match value {
            Value::String(s) => ("true", s.clone()),
            other => ("false", crate::protocol::textfmt::grammar::json_text(other)),
        };
        if !plain(key) || [m.param_end, m.invoke, m.block_end].iter().any(|markup| text.contains(markup)) {
            return None;
        }
        out.push_str(&format!("{} name=\"{key}\" string=\"{string}\">{text}{}\n", m.param, m.param_end));
    }
    out.push_str(&format!("{}\n{}", m.invoke_end, m.block_end));
    Some(out)
}

/// The calls the offer holds as a grammar of a DSML format with `m`'s tokens (see the
/// module docs): free text holds no opening block tag, nor any of `avoid`.
fn syntax(
    m: &Markup,
    avoid: Vec<Pattern>,
    b: &mut Builder,
    offer: &Offer<'_>,
) -> Result<Syntax, GrammarError> {
    let string = TextForm {
        text_name: "VALUE_TEXT",
        value_name: "STRING_VALUE",
        open: " string=\"true\">".into(),
        avoid: vec![Pattern::text(m.param_end), Pattern::text(m.invoke), Pattern::text(m.block_end)],
        close: format!("{}\n", m.param_end),
    };
    let close = format!("{}\n", m.param_end);
    let kind_open = |kind: &str| {
        let string = if kind == "string" { "true" } else { "false" };
        format!(" string=\"{string}\">")
    };
    let call = TextCalls {
        strings: vec![string],
        open: " string=\"false\">",
        close: &close,
        kind_open: Some(&kind_open),
        escapes: "<",
        index: None,
        key: &|key| format!("{} name=\"{key}\"", m.param),
        call: &|name| (format!("\n{} name=\"{name}\">\n", m.invoke), m.invoke_end.to_string()),
    }
    .calls(b, offer)?;
    Ok(Syntax {
        section: Some(Section { between: Expr::lit(""), close: format!("\n{}", m.block_end) }),
        avoid,
        ..offer.syntax(m.block, call)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::{GCML, Markup, V4, V32, V41, attribute};
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::{parse, round_trip, samples};

    /// A DSML format under test: its markup, another format's markup whose block it does
    /// not read, hard values of its own for a call to carry, and what may follow a call.
    struct Case {
        format: TextFormat,
        m: &'static Markup,
        other: &'static Markup,
        extra: Value,
        after: &'static str,
    }

    /// Every format the DSML reader reads and writes.
    fn cases() -> [Case; 4] {
        [
            Case { format: TextFormat::DeepSeekV32, m: &V32, other: &V4, extra: json!({}), after: "" },
            Case { format: TextFormat::DeepSeekV4, m: &V4, other: &V32, extra: json!({}), after: "" },
            Case {
                format: TextFormat::DeepSeekV41,
                m: &V41,
                other: &V4,
                extra: json!({"v4_invoke": "<｜DSML｜invoke name=\"x\">", "v4_end": "</｜DSML｜tool_calls>"}),
                after: "",
            },
            Case {
                format: TextFormat::Gigachat35,
                m: &GCML,
                other: &V4,
                extra: json!({"city": "Москва", "eos": "ends with </s>", "sep": "<|message_sep|>"}),
                after: "</s>",
            },
        ]
    }

    /// A call of `name` with `args`, written in `format`.
    fn write(format: TextFormat, name: &str, args: &Map<String, Value>) -> Option<String> {
        format.format().writing.write_call(name, args)
    }

    /// Calls written round-trip: the shared awkward samples and hard values (markup-like
    /// text, white space, nested JSON, the DSML formats' blocks, the closing invoke tag in
    /// a string), with what may follow a call after them.
    #[test]
    fn written_calls_read_back() {
        for Case { format, m, extra, after, .. } in cases() {
            let mut args = json!({
                "city": "Paris <b>&amp;</b> \"quoted\"\n  second line ",
                "count": 3,
                "number_as_text": "42",
                "nested": {"a": [1, {"b": null}], "s": "x<y"},
                "flag": false,
                "empty": "",
                "closing_invoke": format!("a {} b", m.invoke_end),
                "blocks": "<｜DSML｜function_calls> <｜DSML｜tool_calls> <｜DSML｜ calls> <｜GCML｜tool_calls>",
            });
            if let (Some(args), Value::Object(extra)) = (args.as_object_mut(), extra) {
                args.extend(extra);
            }
            let mut all = samples();
            all.push(args.as_object().cloned().unwrap_or_default());
            for args in all {
                let text = write(format, "get_weather", &args).unwrap_or_default();
                round_trip(format, &format!("{text}{after}"), "get_weather", &args);
            }
        }
    }

    /// What the markup cannot carry is not written.
    #[test]
    fn writing_refuses_what_the_markup_cannot_carry() {
        for Case { format, m, .. } in cases() {
            let cannot =
                [format!("a{}b", m.param_end), format!("{} name=\"x\">", m.invoke), m.block_end.to_string()];
            for bad in cannot {
                assert_eq!(write(format, "f", json!({ "v": bad }).as_object().unwrap()), None, "{bad}");
            }
            for name in ["f\"", "", " f", "f>"] {
                assert_eq!(write(format, name, &Map::new()), None, "{name:?}");
            }
            assert_eq!(write(format, "f", json!({"a>b": 1}).as_object().unwrap()), None);
        }
    }

    /// An invoke without its closing tag ends where the next one begins; the next one
    /// still counts.
    #[test]
    fn unclosed_invoke_ends_at_the_next_one() {
        for Case { format, m, .. } in cases() {
            let Markup { block, block_end, invoke, invoke_end, param, param_end, .. } = m;
            let text = format!(
                "{block}\n{invoke} name=\"a\">\n{param} name=\"x\" string=\"true\">1\n\
                 {invoke} name=\"b\">\n{param} name=\"y\" string=\"false\">2{param_end}\n{invoke_end}\n{block_end}"
            );
            let parsed = parse(format, &text);
            assert_eq!(parsed.requests.len(), 2, "{parsed:#?}");
            assert!(!parsed.requests[0].complete);
            assert!(parsed.requests[1].complete);
            assert_eq!(parsed.requests[1].args["y"], 2);
        }
    }

    /// An invoke outside a block is text, and so is another format's block.
    #[test]
    fn bare_invoke_and_other_block_are_text() {
        let invoke = |m: &Markup| {
            format!(
                "{} name=\"f\">\n{} name=\"x\" string=\"true\">1{}\n{}",
                m.invoke, m.param, m.param_end, m.invoke_end
            )
        };
        for Case { format, m, other, .. } in cases() {
            for text in [invoke(m), format!("{}\n{}\n{}", other.block, invoke(other), other.block_end)] {
                let parsed = parse(format, &text);
                assert!(parsed.requests.is_empty(), "{parsed:#?}");
                assert_eq!(parsed.normal_text, text);
            }
        }
    }

    #[test]
    fn attribute_values() {
        assert_eq!(attribute(" name=\"a b\" string=\"true\"", "name").as_deref(), Some("a b"));
        assert_eq!(attribute(" name='x'", "name").as_deref(), Some("x"));
        assert_eq!(attribute(" name = bare string=true", "name").as_deref(), Some("bare"));
        assert_eq!(attribute(" name=bare>", "name").as_deref(), Some("bare"));
        assert_eq!(attribute(" rename=\"x\" name=\"y\"", "name").as_deref(), Some("y"));
        assert_eq!(attribute(" string=\"true\"", "name"), None);
        assert_eq!(attribute(" name=\"open", "name"), None);
    }
}
