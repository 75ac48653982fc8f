//! What the formats' unit tests share: parsing a reply, writing a call and reading it
//! back, awkward arguments.

use serde_json::{Map, Value};

use super::driver::{RawCall, Reading, ScanState};
use super::{TextFormat, TextFormatProtocol};
use crate::protocol::ParseOutcome;

/// `text` parsed in `format` in one shot.
pub(crate) fn parse(format: TextFormat, text: &str) -> ParseOutcome {
    TextFormatProtocol::new(format).parse(text)
}

/// Each request of `text` parsed in `format`: its name, its arguments, whether it is
/// complete.
pub(crate) fn calls(format: TextFormat, text: &str) -> Vec<(String, Value, bool)> {
    parse(format, text).requests.into_iter().map(|r| (r.tool_name, object(&r.args), r.complete)).collect()
}

/// Arguments as one JSON object.
pub(crate) fn object(args: &crate::request::Args) -> Value {
    Value::Object(args.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// Reads `text` in `format`: one complete request of `name` with `args`, no normal text.
pub(crate) fn round_trip(format: TextFormat, text: &str, name: &str, args: &Map<String, Value>) {
    let parsed = parse(format, text);
    assert_eq!(parsed.requests.len(), 1, "{text}: {parsed:#?}");
    let request = parsed.requests.first().cloned().unwrap_or_else(|| crate::ToolRequest::new("", ""));
    assert!(request.complete, "{text}: {request:#?}");
    assert_eq!(request.tool_name, name);
    assert_eq!(serde_json::to_value(&request.args).unwrap_or_default(), Value::Object(args.clone()));
    assert_eq!(parsed.normal_text, "", "{text}");
}

/// Writes a call of `name` with `args` (a JSON object) in `format`, and reads it back
/// with [`round_trip`]; the written text.
pub(crate) fn written_reads_back(format: TextFormat, name: &str, args: &Value) -> String {
    let args = args.as_object().cloned().unwrap_or_default();
    let text = format.format().writing.write_call(name, &args).unwrap_or_default();
    round_trip(format, &text, name, &args);
    text
}

/// Awkward arguments: markup, quotes and unicode in strings, nesting, none.
pub(crate) fn samples() -> Vec<Map<String, Value>> {
    [
        serde_json::json!({"city": "Paris </tool_calls> <|tool_call|> ]} functools[", "q": "\"x\"\n"}),
        serde_json::json!({"n": [1, {"a": null, "b": [true, 2.5]}], "s": "東京 🚀"}),
        serde_json::json!({}),
    ]
    .into_iter()
    .filter_map(|v| v.as_object().cloned())
    .collect()
}

/// The calls `rules` reads from a closed region `text`.
pub(crate) fn read_all(rules: &dyn Reading, text: &str) -> Vec<RawCall> {
    let mut calls = Vec::new();
    rules.read(text, &ScanState::default(), true, &mut calls);
    calls
}
