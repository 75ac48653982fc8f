//! `apertus`: Swiss AI Apertus (2509): a JSON list of single-key objects between
//! `<|tools_prefix|>` and `<|tools_suffix|>`.
//!
//! ```text
//! <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"add": {"a": 1, "b": 2}}]<|tools_suffix|>
//! ```
//!
//! Each element of the list is one call: an object whose only key is the function name
//! and whose value is the arguments object (`null` reads as `{}`; a JSON-encoded string
//! holding an object is decoded). Blanks may stand around the list; a lone object
//! without the list brackets is read as a list of one. Several calls: elements of the
//! list, and several blocks in a reply, in order.
//!
//! Normal text: everything outside the blocks, before and after. Apertus deliberates
//! between `<|inner_prefix|>` and `<|inner_suffix|>`: that text is hidden (dropped from
//! the normal text, to its end or, never closed, to the end of the reply), but calls
//! written inside it are read, since the template places tool calls inside the
//! deliberation. A lone `<|inner_suffix|>` is dropped.
//!
//! Malformed: an element that is not a one-key object with an object value is an
//! incomplete request (the others count); a list that is not JSON is one. The suffix is
//! found outside JSON strings, so arguments may hold it; a suffix before the list closes
//! ends a damaged list. A list not followed (after blanks) by `<|tools_suffix|>` gives
//! incomplete requests: each call of a list that parses, named, with a problem saying the
//! suffix is missing (the text after the list is normal text); a list cut off by the end
//! of the reply, one request.
//!
//! Implementation-defined choices: every block is read (vLLM reads the first one only,
//! sglang all); vLLM returns the calls of a list whose suffix is
//! missing, even a truncated one (partial JSON), and sglang returns none; here they are
//! incomplete. Both sources take the *first* key of an element with several; here such
//! an element is incomplete, except an OpenAI-style `{"name": …, "arguments": …}`
//! object, which is read as that call. An empty list holds no call and stays normal text.
//! `<|tools_prefix|>` not followed by a list or an object is a damaged block up to the
//! next suffix (an incomplete request).
//!
//! **Grammar.** One block, `<|tools_prefix|>[` then calls `{"NAME": {…}}` joined by `, `
//! then `]<|tools_suffix|>`. Free text holds none of `<|tools_prefix|>`, `<|inner_prefix|>`
//! and `<|inner_suffix|>`, so the grammar admits no deliberation. The JSON Schema of one call
//! is the object `{"NAME": {…}}`, one alternative per method.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CallObject, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches,
};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::json_text;
use crate::protocol::textfmt::grammar::{JsonPieces, Offer, Piece};
use crate::protocol::textfmt::prompt::{content, methods};
use crate::protocol::textfmt::readers::json::{
    Quotes, arguments_of, call_value, name_guess, split_elements, trim_range,
};
use crate::protocol::textfmt::readers::tagged::{JsonRegion, NO_CLOSE, scan_json};
use crate::request::Args;
use crate::tools::ToolDefinition;

/// The token that opens a list of calls.
pub(crate) const PREFIX: &str = "<|tools_prefix|>";
/// The token that closes it.
pub(crate) const SUFFIX: &str = "<|tools_suffix|>";
/// The tokens around the model's deliberation.
pub(crate) const INNER_PREFIX: &str = "<|inner_prefix|>";
const INNER_SUFFIX: &str = "<|inner_suffix|>";

/// Section kinds: the deliberation (hidden, calls inside read), a lone closing token.
const INNER: u8 = 1;
const LONE: u8 = 2;

const MISSING_SUFFIX: &str = "the call list is not closed with <|tools_suffix|>";

/// The rules of `apertus`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.marked(text, from, [(PREFIX, None), (INNER_PREFIX, Some(INNER)), (INNER_SUFFIX, Some(LONE))])
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        if kind != INNER {
            return InSection::Leave(from);
        }
        search.call_or_end(text, from, PREFIX, INNER_SUFFIX)
    }

    /// Hermes' block scan, with a list or an object after the prefix, and a region that
    /// ends with its value when something other than the suffix follows it.
    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let json = JsonRegion { open_len: PREFIX.len(), close: SUFFIX, opens: b"[{", ends_with_value: true };
        scan_json(region, &json)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        // The list closed and something other than the suffix followed: its calls are
        // incomplete.
        let complete = closed && state.stage != NO_CLOSE;
        let end = if complete { region.len().saturating_sub(SUFFIX.len()) } else { region.len() };
        let body_range = trim_range(region, PREFIX.len().min(end)..end);
        let body = region.get(body_range.clone()).unwrap_or_default();
        let offset = body_range.start;
        let whole = 0..region.len();
        let list = body.starts_with('[') && body.ends_with(']');
        let elements = if body.starts_with('{') && body.ends_with('}') {
            std::iter::once(0..body.len()).collect()
        } else if list {
            split_elements(body, Quotes::Json)
        } else {
            let problem = if !closed {
                "the call list is cut off: write <|tools_prefix|>[{\"NAME\": {…}}]<|tools_suffix|>"
            } else {
                "the block does not hold a JSON list of calls: write <|tools_prefix|>[{\"NAME\": {…}}]<|tools_suffix|>"
            };
            calls.push(RawCall::broken(whole, first_key(body), problem));
            return;
        };
        if list && serde_json::from_str::<Value>(body).is_err() && elements.len() < 2 {
            // Not JSON, and no element to tell apart from the others.
            calls.push(RawCall::broken(whole, first_key(body), "the call list is not valid JSON"));
            return;
        }
        for range in elements {
            let text = body.get(range.clone()).unwrap_or_default();
            let span = offset + range.start..offset + range.end;
            let hint = "write each call as {\"NAME\": {ARGUMENTS}}";
            let mut call = RawCall::read(span, element(text), hint);
            if !complete {
                call.problems.push(MISSING_SUFFIX.into());
            }
            calls.push(call);
        }
    }
}

/// One element of the list: `{"NAME": {ARGUMENTS}}` (or an OpenAI-style call object).
fn element(text: &str) -> Result<(String, Args), (String, String)> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| (first_key(text), format!("the call is not valid JSON ({e})")))?;
    let Value::Object(mut object) = value else {
        return Err((String::new(), "the call is not a JSON object".into()));
    };
    if object.len() != 1 {
        if object.contains_key("name") {
            return call_value(Value::Object(object), &["arguments", "parameters"]);
        }
        return Err((
            String::new(),
            format!("the call object has {} keys, not one (the function name)", object.len()),
        ));
    }
    let Some(name) = object.keys().next().cloned() else {
        return Err((String::new(), "the call object is empty".into()));
    };
    if name.is_empty() {
        return Err((name, "the function name is empty".into()));
    }
    match arguments_of(&mut object, &[name.as_str()]) {
        Ok(args) => Ok((name, args.unwrap_or_default())),
        Err(problem) => Err((name, problem)),
    }
}

/// The first key of a damaged list or object, for messages.
fn first_key(text: &str) -> String {
    let guess = name_guess(text);
    if !guess.is_empty() {
        return guess;
    }
    let Some(at) = text.find('"') else { return String::new() };
    let rest = text.get(at + 1..).unwrap_or_default();
    rest.split('"').next().filter(|n| n.len() <= 256).unwrap_or_default().to_string()
}

/// A parameter schema as the Apertus template writes it: a TypeScript-like type.
fn ts_type(schema: &Value, depth: u32) -> String {
    if depth > 8 {
        return "any".into();
    }
    let nullable = schema.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    let or_null = |t: String| if nullable { format!("{t} | null") } else { t };
    let kind = schema.get("type");
    if let Some(Value::Array(kinds)) = kind {
        let names: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
        return if names.is_empty() { "any".into() } else { names.join(" | ") };
    }
    if let Some(options) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        let objects = options.iter().any(|o| o.get("type").and_then(Value::as_str) == Some("object"));
        if objects && options.len() > 1 {
            return "any".into();
        }
        return options.iter().map(|o| ts_type(o, depth + 1)).collect::<Vec<_>>().join(" | ");
    }
    match kind.and_then(Value::as_str) {
        Some("array") => {
            let Some(items) = schema.get("items").filter(|i| i.is_object()) else {
                return or_null("any[]".into());
            };
            let inner = match items.get("type").and_then(Value::as_str) {
                Some("string") => "string".to_string(),
                Some("number" | "integer") => "number".to_string(),
                Some("boolean") => "boolean".to_string(),
                _ => ts_type(items, depth + 1),
            };
            let inner =
                if inner.len() > 50 || inner == "object | object" { "any".to_string() } else { inner };
            or_null(format!("{inner}[]"))
        }
        Some("string") => match schema.get("enum").and_then(Value::as_array) {
            Some(options) if !options.is_empty() => options
                .iter()
                .map(|o| o.as_str().map_or_else(|| o.to_string(), |s| format!("\"{s}\"")))
                .collect::<Vec<_>>()
                .join(" | "),
            _ => or_null("string".into()),
        },
        Some("number" | "integer") => "number".into(),
        Some("boolean") => "boolean".into(),
        Some("object") => match schema.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                let required = required(schema);
                let members: Vec<String> = properties
                    .iter()
                    .map(|(name, spec)| {
                        let optional = if required.contains(&name.as_str()) { "" } else { "?" };
                        format!("{name}{optional}: {}", ts_type(spec, depth + 1))
                    })
                    .collect();
                format!("{{\n{}}}", members.join(", "))
            }
            _ => "object".into(),
        },
        _ => "any".into(),
    }
}

/// The names a schema lists as required.
fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<|tools_prefix|>"),
        Marker::Token("<|inner_prefix|>"),
        Marker::Token("<|inner_suffix|>"),
    ],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the tools as the Apertus template renders them after
    /// `Tool Capabilities:` (each a commented TypeScript-like function type), and how to
    /// call them.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut rendered = Vec::new();
        for (name, description, parameters) in methods(tools) {
            let mut out = String::new();
            if !description.is_empty() {
                out.push_str(&format!("// {description}\n"));
            }
            out.push_str(&format!("type {name} = "));
            match parameters.get("properties").and_then(Value::as_object) {
                Some(properties) if !properties.is_empty() => {
                    let required = required(parameters);
                    let members: Vec<String> = properties
                        .iter()
                        .map(|(param, spec)| {
                            let mut line = String::new();
                            if let Some(text) = spec.get("description").and_then(Value::as_str) {
                                line.push_str(&format!("// {text}\n"));
                            }
                            let optional = if required.contains(&param.as_str()) { "" } else { "?" };
                            line.push_str(&format!("{param}{optional}: {}", ts_type(spec, 0)));
                            if let Some(default) = spec.get("default") {
                                line.push_str(&format!(", // default: {default}"));
                            }
                            line
                        })
                        .collect();
                    out.push_str(&format!("(_: {{\n{}\n}}) => any;", members.join(",\n")));
                }
                _ => out.push_str("() => any;"),
            }
            rendered.push(out);
        }
        format!(
            "Tool Capabilities:\n{}\n\n\
         To call tools, write a JSON list with one object per call, the function's name as its only key \
         and the arguments object as its value, between <|tools_prefix|> and <|tools_suffix|>:\n\
         <|tools_prefix|>[{{\"function_name\": {{\"param_name\": \"value\"}}}}, {{\"other_function\": {{}}}}]<|tools_suffix|>",
            rendered.join("\n")
        )
    }

    /// The text that carries `results` back: the Apertus template writes tool outputs as a
    /// list, `[output, output]`, right after the calls; each output here is a JSON string
    /// (so nothing in it can close the list).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        let outputs: Vec<String> = results.iter().map(|r| json_text(&Value::String(content(r)))).collect();
        format!("[{}]", outputs.join(", "))
    }

    /// A call of `name` with `args`, as the prompt teaches it (JSON with `<` escaped, so no
    /// token appears inside).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!(
            "{PREFIX}[{{{}: {}}}]{SUFFIX}",
            json_text(&Value::String(name.to_string())),
            json_text(&Value::Object(args.clone()))
        ))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let (open, close) = (format!("{PREFIX}["), format!("]{SUFFIX}"));
        let pieces = |name: &str| {
            vec![
                Piece::Text(format!("{{{}: ", json_text(&Value::String(name.to_string())))),
                Piece::Arguments,
                Piece::Text("}".into()),
            ]
        };
        JsonPieces {
            pieces: &pieces,
            index: None,
            tag_open: &open,
            tag_close: &close,
            object: CallObject::Keyed,
            open: &open,
            section: Some(Section { between: Expr::lit(", "), close: close.clone() }),
            avoid: [PREFIX, INNER_PREFIX, INNER_SUFFIX].iter().map(|t| Pattern::text(t)).collect(),
            keys: ("name", "arguments"),
        }
        .build(b, offer)
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::{TextFormat, TextFormatProtocol};

    #[test]
    fn deliberation_is_hidden_and_its_calls_read() {
        let text = "<|inner_prefix|>Let me look it up. <|tools_prefix|>[{\"f\": {}}]<|tools_suffix|> more \
                    thought<|inner_suffix|>The answer.";
        let parsed = TextFormatProtocol::new(TextFormat::Apertus).parse(text);
        assert_eq!(parsed.normal_text, "The answer.");
        assert_eq!(parsed.requests.len(), 1, "{parsed:#?}");
        assert!(parsed.requests.iter().all(|r| r.complete && r.tool_name == "f"));
    }
}
