//! Each format's calls as a grammar (see [`grammar`](crate::grammar)): the markup its
//! prompt teaches, written the way its [`Writing::write_call`] writes a call, with
//! arguments from each method's schema. The formats with a grammar build its [`Syntax`]
//! in their own file ([`Writing::syntax`]); the JSON-bodied ones with [`JsonSyntax`].
//!
//! - `llama3_json`: calls after `<|python_tag|>` only (never the bare JSON reply); no
//!   free text starts with `{` (after blanks, or blanks and `;`).
//! - `deepseek_v3`: as `deepseek_v31`, each call `function<｜tool▁sep｜>NAME` then its
//!   arguments in a ```` ```json ```` fence.
//! - `deepseek_v31`: calls inside `<｜tool▁calls▁begin｜>` … `<｜tool▁calls▁end｜>`, chained
//!   with nothing between them.
//! - `kimi_k2`: calls inside `<|tool_calls_section_begin|>` … `<|tool_calls_section_end|>`,
//!   chained with nothing between them; the id is `functions.NAME:` and an index below
//!   the grammar's most calls.
//! - `mistral`: the array layout only, `[TOOL_CALLS][` then call objects joined by `, `
//!   then `]` (never the name layout).
//! - `hermes`: `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` per call.
//! - `qwen3_coder_xml`, `glm45`, `glm47`, `minimax_m2`, `pythonic`: see each format's file
//!   in `formats/` (text values; GLM's in `readers/glm.rs`).
//! - `seed_oss`, `poolside_v1`, `hunyuan_v3`, `minicpm5`, `minimax_m3`, `step3`,
//!   `kimi_k3`: see each format's file (text values, [`TextValues`] or [`TextCalls`];
//!   MiniMax-M3's nested elements its own).
//! - `deepseek_v32`, `deepseek_v4`, `deepseek_v41`, `gigachat35`: DSML's, in
//!   `readers/dsml.rs`; `function_gemma`, `gemma4`: Gemma's notation, in
//!   `readers/gemma.rs`; `olmo3`, `lfm2`: Python calls, as `pythonic`'s, in
//!   `readers/pythonic.rs`.
//! - `cohere`, `granite`, `xlam`, `phi4_mini`, `hunyuan`, `jamba`, `minimax_m1`,
//!   `internlm`, `longcat`, `ernie45`, `gigachat3`, `apertus`, `inkling`, `harmony` (JSON
//!   bodies, with [`JsonSyntax`] or its general form [`JsonPieces`]) and `sarashina`
//!   (Python literals, `readers/pythonic.rs`): see each format's module docs.

use serde_json::Value;

use super::{TextFormat, TextFormatOptions};
use crate::grammar::{
    Builder, CallObject, Constraint, Expr, Grammar, GrammarError, JsonCall, Pattern, Section, Syntax,
    TextForm, ValueStyle, Values, methods, properties, reasoning_heads,
};
use crate::tools::ToolDefinition;

/// What a format's grammar is built for: the format, the methods offered (each its full
/// name and parameter schema; at least one), the protocol's options and the constraint
/// (its bounds; the dialect and scope are the caller's).
pub(crate) struct Offer<'a> {
    pub id: &'static str,
    pub methods: &'a [(String, &'a Value)],
    pub options: &'a TextFormatOptions,
    pub constraint: &'a Constraint,
}

impl Offer<'_> {
    /// The syntax of calls `call`, the first opened by `open`, for this offer's format
    /// (reasoning hidden as its options say); the caller sets the rest.
    pub(crate) fn syntax(&self, open: impl Into<String>, call: Expr) -> Syntax {
        Syntax::new(self.id, open, call, self.options.skip_reasoning)
    }
}

/// How JSON strings are written in every JSON-bodied format: `<` escaped, so that no
/// string opens a reasoning tag or closes the call's markup.
fn json_style() -> ValueStyle {
    ValueStyle::json("<")
}

/// A JSON value's text as the JSON-bodied formats write it: `<` written `\\u003c`.
pub(crate) fn json_text(value: &Value) -> String {
    let text = value.to_string();
    if text.contains('<') { text.replace('<', "\\u003c") } else { text }
}

/// Text that opens (after blanks) with `text`: the pattern free text avoids where a
/// reader takes a reply that opens so for a call (a bare JSON list, Llama's bare object).
pub(crate) fn opening(text: &str) -> Pattern {
    Pattern::new().then_any(crate::grammar::CharSet::ascii_space()).then_text(text).at_start()
}

/// A value as the text-valued formats write it: a string as it is, anything else as its
/// JSON ([`json_text`]).
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => json_text(other),
    }
}

/// Each method's call in a JSON-bodied format: `head(name)` (the markup up to the
/// arguments, after `open`, or after the section's opening), the arguments as JSON, then
/// `tail`. `index`: an expression written between `head(name)` and `index_head`, for the
/// call ids that number calls (the structural tag writes `0`). The structural tag's
/// calls are `tag_open`, the call, then `tag_close`.
pub(crate) struct JsonMarkup<'a> {
    pub head: &'a dyn Fn(&str) -> String,
    pub index: Option<(Expr, &'a str)>,
    pub tail: &'a str,
    pub tag_open: &'a str,
    pub tag_close: &'a str,
}

impl JsonMarkup<'_> {
    /// A call of `name` in pieces.
    fn pieces(&self, name: &str) -> Vec<Piece> {
        let mut pieces = vec![Piece::Text((self.head)(name))];
        if let Some((_, after)) = &self.index {
            pieces.extend([Piece::Index, Piece::Text((*after).to_string())]);
        }
        pieces.extend([Piece::Arguments, Piece::Text(self.tail.to_string())]);
        pieces
    }
}

/// The syntax of a JSON-bodied format: its calls as `markup` writes them, the first
/// opened by `open`; in a `section` when the format groups its calls; free text kept
/// from the patterns of `avoid`. The call objects hold `"name"` and the arguments under
/// `arguments` (for the JSON dialects). [`JsonPieces`] says more.
pub(crate) struct JsonSyntax<'a> {
    pub markup: JsonMarkup<'a>,
    pub open: &'a str,
    pub section: Option<Section>,
    pub avoid: Vec<Pattern>,
    pub arguments: &'static str,
}

impl JsonSyntax<'_> {
    /// The syntax of the calls the offer holds, rules in `b`.
    pub(crate) fn build(self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let markup = &self.markup;
        let pieces = |name: &str| markup.pieces(name);
        JsonPieces {
            pieces: &pieces,
            index: markup.index.as_ref().map(|(index, _)| index.clone()),
            tag_open: markup.tag_open,
            tag_close: markup.tag_close,
            object: CallObject::Named { before: Vec::new() },
            open: self.open,
            section: self.section,
            avoid: self.avoid,
            keys: ("name", self.arguments),
        }
        .build(b, offer)
    }
}

/// A piece of a call's markup in a JSON-bodied format ([`JsonPieces`]).
pub(crate) enum Piece {
    /// This text.
    Text(String),
    /// The call's index, for the formats whose call ids number calls (the structural
    /// tag writes `0`).
    Index,
    /// The arguments object.
    Arguments,
}

/// The syntax of a JSON-bodied format in its general form ([`JsonSyntax`] is the common
/// one). Each method's call is `pieces(name)` in order: text, the arguments as JSON and,
/// where the format numbers its calls, the `index` expression (bounded by the grammar's
/// most calls). The first call is opened by `open`; calls stand in a `section` when the
/// format groups them; free text holds none of the patterns of `avoid`. For the JSON
/// dialects: the structural tag's calls are `tag_open`, the call, then `tag_close`;
/// `object` is how one call is a JSON object, whose name and arguments stand under
/// `keys` when it names them.
pub(crate) struct JsonPieces<'a> {
    pub pieces: &'a dyn Fn(&str) -> Vec<Piece>,
    pub index: Option<Expr>,
    pub tag_open: &'a str,
    pub tag_close: &'a str,
    pub object: CallObject,
    pub open: &'a str,
    pub section: Option<Section>,
    pub avoid: Vec<Pattern>,
    pub keys: (&'static str, &'static str),
}

impl JsonPieces<'_> {
    /// The rule of one call of any of `methods`, rules in `b`, and each method's call for
    /// the JSON dialects.
    fn calls(
        &self,
        b: &mut Builder,
        methods: &[(String, &Value)],
    ) -> Result<(Expr, Vec<JsonCall>), GrammarError> {
        let mut calls = Vec::new();
        let mut json_calls = Vec::new();
        for (name, schema) in methods {
            let args = Values::new(b, json_style(), name, schema).json(schema)?;
            let mut body = Vec::new();
            let (mut begin, mut end) = (self.tag_open.to_string(), None::<String>);
            for piece in (self.pieces)(name) {
                let (expr, text) = match piece {
                    Piece::Text(text) => (Expr::lit(text.clone()), text),
                    Piece::Index => (self.index.clone().unwrap_or_else(|| Expr::lit("0")), "0".to_string()),
                    Piece::Arguments => {
                        body.push(args.clone());
                        end = Some(String::new());
                        continue;
                    }
                };
                body.push(expr);
                match &mut end {
                    Some(end) => end.push_str(&text),
                    None => begin.push_str(&text),
                }
            }
            calls.push(b.rule(name, Expr::seq(body)));
            json_calls.push(JsonCall {
                name: name.clone(),
                arguments: (*schema).clone(),
                begin,
                end: format!("{}{}", end.unwrap_or_default(), self.tag_close),
                object: self.object.clone(),
            });
        }
        Ok((b.rule("call", Expr::alt(calls)), json_calls))
    }

    /// The syntax of the calls the offer holds, rules in `b`.
    pub(crate) fn build(self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let (call, json_calls) = self.calls(b, offer.methods)?;
        Ok(Syntax {
            section: self.section,
            avoid: self.avoid,
            json: Some((self.keys.0, self.keys.1, json_calls)),
            ..offer.syntax(self.open, call)
        })
    }
}

/// The calls of a format whose arguments are text between tags (Qwen3-Coder's, the GLM
/// formats', MiniMax-M2's): each method a rule of its own, its arguments in schema order,
/// each the markup `key(KEY)` then its value, the whole between the two parts of
/// `call(NAME)`. A string value is text between `open` and `close` that holds none of
/// `avoid` (nor a reasoning tag while reasoning is hidden); other values are as the
/// schema types them, between the same tags.
pub(crate) struct TextValues<'a> {
    pub avoid: Vec<Pattern>,
    pub open: &'a str,
    pub close: &'a str,
    pub key: &'a dyn Fn(&str) -> String,
    pub call: &'a dyn Fn(&str) -> (String, String),
}

impl TextValues<'_> {
    /// The rule of one call of any method the offer holds, its rules in `b`.
    pub(crate) fn calls(self, b: &mut Builder, offer: &Offer<'_>) -> Result<Expr, GrammarError> {
        let string = TextForm {
            text_name: "VALUE_TEXT",
            value_name: "STRING_VALUE",
            open: self.open.into(),
            avoid: self.avoid,
            close: self.close.into(),
        };
        TextCalls {
            strings: vec![string],
            open: self.open,
            close: self.close,
            kind_open: None,
            escapes: "<",
            index: None,
            key: self.key,
            call: self.call,
        }
        .calls(b, offer)
    }
}

/// [`TextValues`] with more say: a string value may take several forms (each its own
/// opener, text and closer, as [`TextForm`]s), the opener of any other value may name
/// its JSON type (`kind_open`, as DSML's `string="false">` and Kimi K3's
/// `type="number"<|sep|>` do), JSON strings inside values escape `escapes` beyond
/// JSON's own, and `index` (an expression, then a text) may follow the head of each
/// call, for formats that number their calls. Reasoning tags join every form's `avoid`
/// while reasoning is hidden.
pub(crate) struct TextCalls<'a> {
    pub strings: Vec<TextForm>,
    pub open: &'a str,
    pub close: &'a str,
    pub kind_open: Option<&'a dyn Fn(&str) -> String>,
    pub escapes: &'a str,
    pub index: Option<(Expr, &'a str)>,
    pub key: &'a dyn Fn(&str) -> String,
    pub call: &'a dyn Fn(&str) -> (String, String),
}

impl TextCalls<'_> {
    /// The rule of one call of any method the offer holds, its rules in `b`.
    pub(crate) fn calls(self, b: &mut Builder, offer: &Offer<'_>) -> Result<Expr, GrammarError> {
        let mut strings = self.strings;
        if offer.options.skip_reasoning {
            for form in &mut strings {
                form.avoid.extend(reasoning_heads());
            }
        }
        let style = ValueStyle {
            string_escapes: self.escapes.into(),
            text: strings,
            open: self.open.into(),
            close: self.close.into(),
            slack: None,
        };
        let mut calls = Vec::new();
        for (name, schema) in offer.methods {
            let mut values = Values::new(b, style.clone(), name, schema);
            if let Some(kind_open) = self.kind_open {
                values = values.with_kind_open(kind_open);
            }
            let mut members = Vec::new();
            for (key, property, required) in properties(schema) {
                let value = values.text(property)?;
                members.push((Expr::seq([Expr::lit((self.key)(key)), value]), required));
            }
            let list = values.member_list(members, Expr::lit(""));
            let (head, tail) = (self.call)(name);
            let index = match &self.index {
                Some((index, after)) => Expr::seq([index.clone(), Expr::lit(*after)]),
                None => Expr::lit(""),
            };
            calls.push(b.rule(name, Expr::seq([Expr::lit(head), index, list, Expr::lit(tail)])));
        }
        Ok(b.rule("call", Expr::alt(calls)))
    }
}

/// The grammar of `format` for `tools`' methods that `constraint` asks for.
pub(crate) fn grammar(
    format: TextFormat,
    options: &TextFormatOptions,
    tools: &[ToolDefinition],
    constraint: &Constraint,
) -> Result<Grammar, GrammarError> {
    let mut b = Builder::new(constraint);
    if options.starts_in_reasoning && options.skip_reasoning {
        b.opened_reasoning = Some("</think>");
    }
    // While reasoning is hidden, the reader cuts the format's own reasoning markup out
    // wherever it stands (a value too): no text of the grammar holds it.
    if let (true, Some(markup)) = (options.skip_reasoning, format.format().reasoning) {
        b.avoid_everywhere(markup.all().map(Pattern::text));
    }
    let methods = methods(tools);
    if methods.is_empty() {
        return Err(GrammarError::NoMethods);
    }
    let offer = Offer { id: format.id(), methods: &methods, options, constraint };
    let mut syntax = format.format().writing.syntax(&mut b, &offer)?;
    syntax.avoid.extend(result_opening(format));
    if let Some(markup) = format.format().reasoning {
        syntax.reasoning_markup = markup.all().map(Pattern::text).collect();
    }
    syntax.grammar(b, constraint)
}

/// The markup that opens the format's tool results as its writer writes them
/// (`<tool_response>`, `[TOOL_RESULTS]`, `<｜tool▁outputs▁begin｜>`), which a reply's free
/// text may not hold: a model that writes it is inventing a result (a small model
/// answered `<tool_response>\n42.0` after its result). `None` for a format whose results
/// open with no markup of angle or square brackets.
fn result_opening(format: TextFormat) -> Option<Pattern> {
    const CONTENT: &str = "\u{E000}";
    let written = format.format().writing.results(&[crate::ToolExecutionResult::success("1", "f", CONTENT)]);
    let before = written.split(CONTENT).next().unwrap_or_default().trim_start();
    let end = before.find(['>', ']'])?;
    let head = before.get(..=end)?;
    (head.starts_with(['<', '[']) && head.chars().count() >= 3).then(|| Pattern::text(head))
}
