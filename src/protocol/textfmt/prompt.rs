//! What the formats' prompts and results are made of: the tools as function objects,
//! results as the model reads them. Each format writes its own prompt and results
//! ([`Writing::prompt`], [`Writing::results`]) with these.

use serde_json::{Value, json};

use super::TextFormat;
use super::escape::neutralize_tokens;
use crate::ToolExecutionResult;
use crate::model::{Message, Role};
use crate::tools::ToolDefinition;

/// Every method of `tools` as an OpenAI-style function object.
pub(crate) fn functions(tools: &[ToolDefinition]) -> Vec<Value> {
    tools
        .iter()
        .flat_map(|tool| {
            tool.methods.iter().map(move |method| {
                json!({"type": "function", "function": {
                    "name": method.full_name(&tool.tool_id),
                    "description": method.description,
                    "parameters": method.parameters,
                }})
            })
        })
        .collect()
}

/// Every method of `tools`: full name, description, parameter schema.
pub(crate) fn methods(tools: &[ToolDefinition]) -> Vec<(String, &str, &Value)> {
    tools
        .iter()
        .flat_map(|tool| {
            tool.methods
                .iter()
                .map(move |m| (m.full_name(&tool.tool_id), m.description.as_str(), &m.parameters))
        })
        .collect()
}

/// The bare function objects (`{"name", "description", "parameters"}`).
pub(crate) fn bare_functions(tools: &[ToolDefinition]) -> Vec<Value> {
    methods(tools)
        .into_iter()
        .map(|(name, description, parameters)| json!({"name": name, "description": description, "parameters": parameters}))
        .collect()
}

/// The string under `key` of `value` (empty when there is none).
pub(crate) fn str_at<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Each value's JSON text, one a line.
pub(crate) fn lines(values: &[Value]) -> String {
    values.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

/// The opening of the tool prompt that Qwen's template writes and several families
/// follow: a `# Tools` heading, then the functions as JSON, one a line, in `<tools>`
/// tags; `noun` is what the prompt calls them (`function`, `tool`). The format's own
/// call instructions follow it.
pub(crate) fn tools_in_tags(tools: &[ToolDefinition], noun: &str) -> String {
    format!(
        "# Tools\n\nYou may call one or more {noun}s to assist with the user query.\n\n\
         You are provided with {noun} signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\n",
        lines(&functions(tools))
    )
}

/// A result's text as the model reads it: the output, or the error prefixed, with any
/// markup in it neutralised.
pub(crate) fn content(result: &ToolExecutionResult) -> String {
    let text = neutralize_tokens(&result.result);
    if result.is_success() { text.into_owned() } else { format!("Error: {text}") }
}

/// Each result's [`content`] between `open` and `close`, one result a line.
pub(crate) fn wrapped(results: &[ToolExecutionResult], open: &str, close: &str) -> String {
    results.iter().map(|r| format!("{open}{}{close}", content(r))).collect::<Vec<_>>().join("\n")
}

/// Each result as a JSON object, one a line: `"name"`, then its [`content`] under `ok`
/// (or `error` when it failed).
pub(crate) fn named_results(results: &[ToolExecutionResult], ok: &str, error: &str) -> String {
    results
        .iter()
        .map(|r| {
            let mut object = serde_json::Map::new();
            object.insert("name".into(), Value::String(neutralize_tokens(&r.tool_name).into_owned()));
            let key = if r.is_success() { ok } else { error };
            object.insert(key.into(), Value::String(content(r)));
            Value::Object(object).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each result wrapped by `wrap`, joined by `separator`.
pub(crate) fn each(
    results: &[ToolExecutionResult],
    wrap: impl Fn(&ToolExecutionResult) -> String,
    separator: &str,
) -> String {
    results.iter().map(wrap).collect::<Vec<_>>().join(separator)
}

/// The messages that carry `results` back in `format`'s shape: one tool message whose
/// text is the format's [`Writing::results`].
pub(crate) fn result_messages(format: TextFormat, results: &[ToolExecutionResult]) -> Vec<Message> {
    if results.is_empty() {
        return Vec::new();
    }
    let text = format.format().writing.results(results);
    vec![Message::new(Role::Tool, text).with_tool_results(results.iter().cloned())]
}

/// Each result as a JSON object, one a line: `"name"`, then the tool's text under
/// `output` (or `error` when it failed), as the Llama templates render tool output.
pub(crate) fn output_objects(results: &[ToolExecutionResult]) -> String {
    each(
        results,
        |r| {
            let (name, text) = (neutralize_tokens(&r.tool_name), neutralize_tokens(&r.result));
            if r.is_success() {
                json!({"name": name, "output": text}).to_string()
            } else {
                json!({"name": name, "error": text}).to_string()
            }
        },
        "\n",
    )
}

/// `text` with every tag named by one of `tags` (`<NAME` or `</NAME`, any case, a name
/// that begins with it counts) written with `&lt;`: for the tags of a result block that
/// [`neutralize_tokens`] does not know, so that a result can neither end its block nor
/// begin another.
pub(crate) fn plain_tags(text: &str, tags: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        out.push_str(rest.get(..at).unwrap_or_default());
        let after = rest.get(at + 1..).unwrap_or_default();
        let name = after.strip_prefix('/').unwrap_or(after);
        let is_tag =
            tags.iter().any(|tag| name.get(..tag.len()).is_some_and(|head| head.eq_ignore_ascii_case(tag)));
        out.push_str(if is_tag { "&lt;" } else { "<" });
        rest = after;
    }
    out.push_str(rest);
    out
}
