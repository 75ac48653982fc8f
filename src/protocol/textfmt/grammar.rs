//! Each format's calls as a grammar (see [`grammar`](crate::grammar)): the markup its
//! prompt teaches, written the way [`write_call`] writes a call, with arguments from each
//! method's schema.

use serde_json::Value;

use super::{TextFormat, TextFormatOptions};
use crate::grammar::{
    Builder, Dialect, Expr, Grammar, GrammarError, JsonCall, Scope, Syntax, ValueStyle, Values, methods,
};
use crate::tools::ToolDefinition;

/// How JSON strings are written in every JSON-bodied format: `<` escaped, so that no
/// string opens a reasoning tag or closes the call's markup.
fn json_style() -> ValueStyle {
    ValueStyle { string_escapes: "<".into(), text: None, open: String::new(), close: String::new() }
}

/// A JSON string's text, as [`write_call`] writes it.
pub(crate) fn json_text(value: &Value) -> String {
    let text = value.to_string();
    if text.contains('<') { text.replace('<', "\\u003c") } else { text }
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
        _ => None,
    }
}

pub(crate) fn grammar(
    format: TextFormat,
    options: &TextFormatOptions,
    tools: &[ToolDefinition],
    dialect: Dialect,
    scope: Scope,
) -> Result<Grammar, GrammarError> {
    let unsupported = || GrammarError::Unsupported { protocol: format.id().to_string(), dialect, scope };
    let mut b = Builder::default();
    let methods = methods(tools);
    if methods.is_empty() {
        return Err(GrammarError::NoMethods);
    }
    let syntax = match format {
        TextFormat::Hermes => {
            let mut calls = Vec::new();
            let mut json_calls = Vec::new();
            for (name, schema) in &methods {
                let args = Values::new(&mut b, json_style(), name, schema).json(schema)?;
                let begin =
                    format!("\n{{\"name\": {}, \"arguments\": ", json_text(&Value::String(name.clone())));
                let end = "}\n</tool_call>";
                calls.push(b.rule(name, Expr::seq([Expr::lit(begin.clone()), args, Expr::lit(end)])));
                json_calls.push(JsonCall {
                    name: name.clone(),
                    arguments: (*schema).clone(),
                    begin: format!("<tool_call>{begin}"),
                    end: end.to_string(),
                });
            }
            Syntax {
                protocol: format.id().to_string(),
                open: "<tool_call>".into(),
                call: b.rule("call", Expr::alt(calls)),
                section: None,
                avoid: Vec::new(),
                reasoning: options.skip_reasoning,
                json: Some(("name", "arguments", json_calls)),
            }
        }
        _ => return Err(unsupported()),
    };
    syntax.grammar(b, dialect, scope)
}
