//! Each format's calls as a grammar (see [`grammar`](crate::grammar)): the markup its
//! prompt teaches, written the way [`write_call`] writes a call, with arguments from each
//! method's schema.
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
//!   (text values, in `qwen3_coder.rs`, `glm.rs`, `minimax.rs`, `pythonic.rs`).

use serde_json::Value;

use super::{TextFormat, TextFormatOptions};
use crate::grammar::{
    Builder, CharSet, Constraint, Expr, Grammar, GrammarError, JsonCall, Pattern, Section, Syntax,
    ValueStyle, Values, methods,
};
use crate::tools::ToolDefinition;

const LLAMA_TAG: &str = super::llama3::TAG;
const DS_CALLS_BEGIN: &str = super::deepseek::CALLS_BEGIN;
const DS_CALLS_END: &str = super::deepseek::CALLS_END;
const DS_CALL_BEGIN: &str = super::deepseek::CALL_BEGIN;
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";
const MISTRAL_OPEN: &str = "[TOOL_CALLS][";
const KIMI_SECTION: &str = super::kimi_k2::SECTION;
const KIMI_SECTION_END: &str = "<|tool_calls_section_end|>";
const KIMI_CALL: &str = "<|tool_call_begin|>";
const KIMI_ARGUMENTS: &str = "<|tool_call_argument_begin|>";
const KIMI_CALL_END: &str = "<|tool_call_end|>";

/// How JSON strings are written in every JSON-bodied format: `<` escaped, so that no
/// string opens a reasoning tag or closes the call's markup.
fn json_style() -> ValueStyle {
    ValueStyle::json("<")
}

/// A JSON string's text, as [`write_call`] writes it.
pub(crate) fn json_text(value: &Value) -> String {
    let text = value.to_string();
    if text.contains('<') { text.replace('<', "\\u003c") } else { text }
}

/// Each method's call in a JSON-bodied format: `head(name)` (the markup up to the
/// arguments, after `open`, or after the section's opening), the arguments as JSON, then
/// `tail`. `index`: an expression written between `head(name)` and `index_head`, for the
/// call ids that number calls (the structural tag writes `0`). The structural tag's
/// calls are `tag_open`, the call, then `tag_close`.
struct JsonMarkup<'a> {
    head: &'a dyn Fn(&str) -> String,
    index: Option<(Expr, &'a str)>,
    tail: &'a str,
    tag_open: &'a str,
    tag_close: &'a str,
}

fn json_calls(
    b: &mut Builder,
    methods: &[(String, &Value)],
    markup: &JsonMarkup<'_>,
) -> Result<(Expr, Vec<JsonCall>), GrammarError> {
    let mut calls = Vec::new();
    let mut json_calls = Vec::new();
    for (name, schema) in methods {
        let args = Values::new(b, json_style(), name, schema).json(schema)?;
        let head = (markup.head)(name);
        let (middle, tag_middle) = match &markup.index {
            Some((index, after)) => (Expr::seq([index.clone(), Expr::lit(*after)]), format!("0{after}")),
            None => (Expr::lit(""), String::new()),
        };
        calls.push(b.rule(name, Expr::seq([Expr::lit(head.clone()), middle, args, Expr::lit(markup.tail)])));
        json_calls.push(JsonCall {
            name: name.clone(),
            arguments: (*schema).clone(),
            begin: format!("{}{head}{tag_middle}", markup.tag_open),
            end: format!("{}{}", markup.tail, markup.tag_close),
        });
    }
    Ok((b.rule("call", Expr::alt(calls)), json_calls))
}

/// How `format` writes a call of `name` with `args` (a JSON object), exactly as its
/// grammar admits it: the round trip of every grammar starts here.
pub(crate) fn write_call(
    format: TextFormat,
    name: &str,
    args: &serde_json::Map<String, Value>,
) -> Option<String> {
    let args_json = json_text(&Value::Object(args.clone()));
    let name_json = json_text(&Value::String(name.to_string()));
    match format {
        TextFormat::Hermes => {
            Some(format!("<tool_call>\n{{\"name\": {name_json}, \"arguments\": {args_json}}}\n</tool_call>"))
        }
        TextFormat::Llama3Json => {
            Some(format!("{LLAMA_TAG}{{\"name\": {name_json}, \"parameters\": {args_json}}}"))
        }
        TextFormat::DeepSeekV31 => Some(format!(
            "{DS_CALLS_BEGIN}{DS_CALL_BEGIN}{name}{DS_SEP}{args_json}{DS_CALL_END}{DS_CALLS_END}"
        )),
        TextFormat::Qwen3CoderXml => super::qwen3_coder::write_call(name, args),
        TextFormat::Glm45 | TextFormat::Glm47 => {
            super::glm::write_call(format == TextFormat::Glm47, name, args)
        }
        TextFormat::MinimaxM2 => Some(super::minimax::write_call(name, args)),
        TextFormat::Cohere => super::cohere::write_call(name, args),
        TextFormat::DeepSeekV32 => super::deepseek_v32::write_call(name, args),
        TextFormat::Step3 => super::step3::write_call(name, args),
        TextFormat::KimiK3 => super::kimi_k3::write_call(name, args),
        TextFormat::Harmony => super::harmony::write_call(name, args),
        TextFormat::SeedOss => super::seed_oss::write_call(name, args),
        TextFormat::Granite => super::granite::write_call(name, args),
        TextFormat::Xlam => super::xlam::write_call(name, args),
        TextFormat::Phi4Mini => super::phi4_mini::write_call(name, args),
        TextFormat::Hunyuan => super::hunyuan::write_call(name, args),
        TextFormat::Internlm => super::internlm::write_call(name, args),
        TextFormat::FunctionGemma => super::function_gemma::write_call(name, args),
        TextFormat::Gemma4 => super::gemma4::write_call(name, args),
        TextFormat::Jamba => super::jamba::write_call(name, args),
        TextFormat::Olmo3 => super::olmo3::write_call(name, args),
        TextFormat::Longcat => super::longcat::write_call(name, args),
        TextFormat::Ernie45 => super::ernie45::write_call(name, args),
        TextFormat::Gigachat3 => super::gigachat3::write_call(name, args),
        TextFormat::MinimaxM1 => super::minimax_m1::write_call(name, args),
        TextFormat::Inkling => super::inkling::write_call(name, args),
        TextFormat::Sarashina => super::sarashina::write_call(name, args),
        TextFormat::DeepSeekV4 => super::deepseek_v4::write_call(name, args),
        TextFormat::HunyuanV3 => super::hunyuan_v3::write_call(name, args),
        TextFormat::Lfm2 => super::lfm2::write_call(name, args),
        TextFormat::MinimaxM3 => super::minimax_m3::write_call(name, args),
        TextFormat::Apertus => super::apertus::write_call(name, args),
        TextFormat::Minicpm5 => super::minicpm5::write_call(name, args),
        TextFormat::PoolsideV1 => super::poolside_v1::write_call(name, args),
        TextFormat::Gigachat35 => super::gigachat35::write_call(name, args),
        TextFormat::DeepSeekV41 => super::deepseek_v41::write_call(name, args),
        TextFormat::Pythonic => Some(super::pythonic::write_call(name, args)),
        TextFormat::KimiK2 => Some(format!(
            "{KIMI_SECTION}{KIMI_CALL}functions.{name}:0{KIMI_ARGUMENTS}{args_json}{KIMI_CALL_END}{KIMI_SECTION_END}"
        )),
        TextFormat::Mistral => {
            Some(format!("{MISTRAL_OPEN}{{\"name\": {name_json}, \"arguments\": {args_json}}}]"))
        }
        TextFormat::DeepSeekV3 => Some(format!(
            "{DS_CALLS_BEGIN}{DS_CALL_BEGIN}function{DS_SEP}{name}\n```json\n{args_json}\n```{DS_CALL_END}{DS_CALLS_END}"
        )),
    }
}

pub(crate) fn grammar(
    format: TextFormat,
    options: &TextFormatOptions,
    tools: &[ToolDefinition],
    constraint: &Constraint,
) -> Result<Grammar, GrammarError> {
    let (dialect, scope) = (constraint.dialect, constraint.scope);
    let mut b = Builder::new(constraint);
    let methods = methods(tools);
    if methods.is_empty() {
        return Err(GrammarError::NoMethods);
    }
    let syntax = match format {
        TextFormat::Hermes => {
            let head = |name: &str| {
                format!("\n{{\"name\": {}, \"arguments\": ", json_text(&Value::String(name.to_string())))
            };
            let markup = JsonMarkup {
                head: &head,
                index: None,
                tail: "}\n</tool_call>",
                tag_open: "<tool_call>",
                tag_close: "",
            };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: "<tool_call>".into(),
                call,
                section: None,
                avoid: Vec::new(),
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
        TextFormat::Llama3Json => {
            let head = |name: &str| {
                format!("{{\"name\": {}, \"parameters\": ", json_text(&Value::String(name.to_string())))
            };
            let markup =
                JsonMarkup { head: &head, index: None, tail: "}", tag_open: LLAMA_TAG, tag_close: "" };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: LLAMA_TAG.into(),
                call,
                section: None,
                // A `{` first in a reply (after blanks), or after a call (after blanks
                // and `;`), would be read as a call.
                avoid: vec![
                    Pattern::new().then_any(CharSet::of(" \t\n\r\x0b\x0c;")).then_text("{").at_start(),
                ],
                reasoning: options.skip_reasoning,
                json: Some(("name", "parameters", json_calls)),
            }
        }
        TextFormat::DeepSeekV31 => {
            let head = |name: &str| format!("{DS_CALL_BEGIN}{name}{DS_SEP}");
            let markup = JsonMarkup {
                head: &head,
                index: None,
                tail: DS_CALL_END,
                tag_open: DS_CALLS_BEGIN,
                tag_close: DS_CALLS_END,
            };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: DS_CALLS_BEGIN.into(),
                call,
                section: Some(Section { between: Expr::lit(""), close: DS_CALLS_END.into() }),
                // The parser reads a call outside a section too.
                avoid: vec![Pattern::text(DS_CALL_BEGIN)],
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
        TextFormat::Qwen3CoderXml => super::qwen3_coder::syntax(format.id(), options, &mut b, &methods)?,
        TextFormat::Glm45 | TextFormat::Glm47 => {
            super::glm::syntax(format.id(), format == TextFormat::Glm47, options, &mut b, &methods)?
        }
        TextFormat::MinimaxM2 => super::minimax::syntax(format.id(), options, &mut b, &methods)?,
        TextFormat::Cohere
        | TextFormat::DeepSeekV32
        | TextFormat::Step3
        | TextFormat::KimiK3
        | TextFormat::Harmony
        | TextFormat::SeedOss
        | TextFormat::Granite
        | TextFormat::Xlam
        | TextFormat::Phi4Mini
        | TextFormat::Hunyuan
        | TextFormat::Internlm
        | TextFormat::FunctionGemma
        | TextFormat::Gemma4
        | TextFormat::Jamba
        | TextFormat::Olmo3
        | TextFormat::Longcat
        | TextFormat::Ernie45
        | TextFormat::Gigachat3
        | TextFormat::MinimaxM1
        | TextFormat::Inkling
        | TextFormat::Sarashina
        | TextFormat::DeepSeekV4
        | TextFormat::HunyuanV3
        | TextFormat::Lfm2
        | TextFormat::MinimaxM3
        | TextFormat::Apertus
        | TextFormat::Minicpm5
        | TextFormat::PoolsideV1
        | TextFormat::Gigachat35
        | TextFormat::DeepSeekV41 => {
            return Err(GrammarError::Unsupported { protocol: format.id().to_string(), dialect, scope });
        }
        TextFormat::Pythonic => super::pythonic::syntax(format.id(), options, &mut b, &methods)?,
        TextFormat::KimiK2 => {
            let head = |name: &str| format!("{KIMI_CALL}functions.{name}:");
            // The index counts the reply's calls from 0: no more digits than that takes.
            let index = b.terminal(
                "INDEX",
                crate::grammar::integer_range(Some(0), Some(i128::from(constraint.max_calls.max(1) - 1))),
            );
            let markup = JsonMarkup {
                head: &head,
                index: Some((index, KIMI_ARGUMENTS)),
                tail: KIMI_CALL_END,
                tag_open: KIMI_SECTION,
                tag_close: KIMI_SECTION_END,
            };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: KIMI_SECTION.into(),
                call,
                section: Some(Section { between: Expr::lit(""), close: KIMI_SECTION_END.into() }),
                avoid: Vec::new(),
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
        TextFormat::Mistral => {
            let head = |name: &str| {
                format!("{{\"name\": {}, \"arguments\": ", json_text(&Value::String(name.into())))
            };
            let markup =
                JsonMarkup { head: &head, index: None, tail: "}", tag_open: MISTRAL_OPEN, tag_close: "]" };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: MISTRAL_OPEN.into(),
                call,
                section: Some(Section { between: Expr::lit(", "), close: "]".into() }),
                // The token alone opens a call too.
                avoid: vec![Pattern::text(super::mistral::TOKEN)],
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
        TextFormat::DeepSeekV3 => {
            let head = |name: &str| format!("{DS_CALL_BEGIN}function{DS_SEP}{name}\n```json\n");
            let tail = format!("\n```{DS_CALL_END}");
            let markup = JsonMarkup {
                head: &head,
                index: None,
                tail: &tail,
                tag_open: DS_CALLS_BEGIN,
                tag_close: DS_CALLS_END,
            };
            let (call, json_calls) = json_calls(&mut b, &methods, &markup)?;
            Syntax {
                protocol: format.id().to_string(),
                open: DS_CALLS_BEGIN.into(),
                call,
                section: Some(Section { between: Expr::lit(""), close: DS_CALLS_END.into() }),
                // The parser reads a call outside a section too.
                avoid: vec![Pattern::text(DS_CALL_BEGIN)],
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
    };
    syntax.grammar(b, constraint)
}
