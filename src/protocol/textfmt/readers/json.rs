//! Balanced-bracket scanning (resumable, string-aware) and the JSON call objects the
//! formats share.

use serde_json::{Map, Value};

use crate::protocol::json_kind;
use crate::protocol::textfmt::driver::{RawCall, ScanState};
use crate::protocol::textfmt::grammar::json_text;
use crate::request::Args;

/// Which strings a scan knows: JSON's (`"` only) or Python's (`'` and `"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quotes {
    Json,
    Python,
}

/// What a balanced scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Balanced {
    /// The value ends just before this offset.
    End(usize),
    /// The stop tag begins here, outside any string, before the value closed.
    Tag(usize),
    /// The text ends first (`state` holds where to go on).
    Open,
}

/// Scans `text` from `state.pos` for the end of the bracketed value that opens at
/// `open` (`{`, `[` or `(`, counted together with the other kinds). Brackets inside
/// strings do not count. With a `stop` tag, the tag outside a string ends the scan
/// (a damaged value followed by its closing markup). The result depends on the text
/// only, not on how it was split between calls.
pub(crate) fn scan_balanced(
    text: &str,
    open: usize,
    state: &mut ScanState,
    quotes: Quotes,
    stop: Option<&str>,
) -> Balanced {
    let bytes = text.as_bytes();
    let mut i = state.pos.max(open);
    while i < bytes.len() {
        if state.quote != 0 {
            // Inside a string: jump to the next quote or backslash.
            if state.escape {
                state.escape = false;
                i += 1;
                continue;
            }
            let rest = bytes.get(i..).unwrap_or_default();
            match memchr::memchr2(state.quote, b'\\', rest) {
                Some(at) => {
                    i += at;
                    if bytes.get(i) == Some(&b'\\') {
                        state.escape = true;
                    } else {
                        state.quote = 0;
                    }
                    i += 1;
                }
                None => {
                    i = bytes.len();
                }
            }
            continue;
        }
        match bytes.get(i).copied().unwrap_or_default() {
            b'"' => state.quote = b'"',
            b'\'' if quotes == Quotes::Python => state.quote = b'\'',
            b'{' | b'[' | b'(' => state.depth += 1,
            b'}' | b']' | b')' => {
                state.depth = state.depth.saturating_sub(1);
                if state.depth == 0 {
                    state.pos = i + 1;
                    return Balanced::End(i + 1);
                }
            }
            b'<' if stop.is_some() => {
                let tag = stop.unwrap_or_default();
                let rest = text.get(i..).unwrap_or_default();
                if rest.starts_with(tag) {
                    state.pos = i;
                    return Balanced::Tag(i);
                }
                if tag.starts_with(rest) {
                    // Maybe the tag, cut off: decide when more text has come.
                    state.pos = i;
                    return Balanced::Open;
                }
            }
            _ => {}
        }
        i += 1;
    }
    state.pos = i;
    Balanced::Open
}

/// The top-level elements of the bracketed list `text` (which starts with its opening
/// bracket and ends with its closing one), as ranges with surrounding whitespace
/// trimmed. Commas inside strings or nested brackets do not split.
pub(crate) fn split_elements(text: &str, quotes: Quotes) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0u32;
    let mut quote = 0u8;
    let mut escape = false;
    let mut start = 1;
    let end = text.len().saturating_sub(1);
    let mut i = 1;
    while i < end {
        let b = bytes.get(i).copied().unwrap_or_default();
        if quote != 0 {
            if escape {
                escape = false;
            } else if b == b'\\' {
                escape = true;
            } else if b == quote {
                quote = 0;
            }
        } else {
            match b {
                b'"' => quote = b'"',
                b'\'' if quotes == Quotes::Python => quote = b'\'',
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                b',' if depth == 0 => {
                    out.push(trim_range(text, start..i));
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    let last = trim_range(text, start..end.max(start));
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// `range` of `text` without leading and trailing whitespace.
pub(crate) fn trim_range(text: &str, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let piece = text.get(range.clone()).unwrap_or_default();
    let start = range.start + (piece.len() - piece.trim_start().len());
    let end = range.end - (piece.len() - piece.trim_end().len());
    start..end.max(start)
}

/// A JSON object's members as arguments.
pub(crate) fn object_args(map: serde_json::Map<String, Value>) -> Args {
    map.into_iter().collect()
}

/// The arguments a call object carries under `key` (and its aliases): an object as
/// is, or a JSON-encoded string holding one. `Ok(None)` when the key is absent.
pub(crate) fn arguments_of(
    object: &mut serde_json::Map<String, Value>,
    keys: &[&str],
) -> Result<Option<Args>, String> {
    let Some((key, value)) = keys.iter().find_map(|k| object.remove(*k).map(|v| (*k, v))) else {
        return Ok(None);
    };
    match value {
        Value::Object(map) => Ok(Some(object_args(map))),
        Value::Null => Ok(Some(Args::new())),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(Some(object_args(map))),
            _ => Err(format!(
                "`{key}` is a string that does not hold a JSON object: send the arguments as an object"
            )),
        },
        other => {
            Err(format!("`{key}` is {}, not an object: send the arguments as an object", json_kind(&other)))
        }
    }
}

/// A call written as a JSON object with a `"name"` and arguments under one of
/// `arg_keys` (absent: `{}`). `Err` says what is wrong, with the name when one was read.
pub(crate) fn call_object(text: &str, arg_keys: &[&str]) -> Result<(String, Args), (String, String)> {
    call_parts(text, arg_keys).map(|(name, args)| (name, args.unwrap_or_default()))
}

/// As [`call_object`], with `None` for arguments when none of `arg_keys` is there (a
/// format that requires them says so).
pub(crate) fn call_parts(text: &str, arg_keys: &[&str]) -> Result<(String, Option<Args>), (String, String)> {
    // The common case in one pass: a name and an arguments object, read straight into
    // the request's types. Anything else takes the slow path, which says what is wrong.
    // (Only for an object: serde would also read `["name", {…}]` into the struct.)
    if text.trim_start().starts_with('{')
        && let Ok(fast) = serde_json::from_str::<FastCall>(text)
        && let Some((name, args)) = fast.parts(arg_keys)
    {
        return Ok((name, Some(args)));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return Err((name_guess(text), format!("the call is not valid JSON ({e})"))),
    };
    value_parts(value, arg_keys)
}

/// The calls of `json`, a JSON array of call objects of the usual shape (a non-empty
/// `"name"` and an arguments object under one of `arg_keys`; `tool_name` for the name with
/// `tool_name`), each read straight into the request's types in the one pass that also
/// finds its span (`json` starts at `offset` in the region). `None` when the array is
/// empty, not well-formed, or holds an element of another shape: the caller's slower
/// reading then says what is wrong.
pub(crate) fn call_list(
    json: &str,
    offset: usize,
    arg_keys: &[&str],
    tool_name: bool,
) -> Option<Vec<RawCall>> {
    let bytes = json.as_bytes();
    // JSON's white space (not `after_blanks`'s, which also skips a form feed).
    let blanks = |mut at: usize| {
        while bytes.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            at += 1;
        }
        at
    };
    let mut at = blanks(0);
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut calls = Vec::new();
    loop {
        at = blanks(at + 1);
        let rest = json.get(at..)?;
        if !rest.starts_with('{') {
            return None;
        }
        let (read, call) = if tool_name {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<FastToolCall>();
            let call = stream.next()?.ok()?;
            (stream.byte_offset(), FastCall::from(call))
        } else {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<FastCall>();
            let call = stream.next()?.ok()?;
            (stream.byte_offset(), call)
        };
        let end = at + read;
        let (name, args) = call.parts(arg_keys)?;
        calls.push(RawCall { span: offset + at..offset + end, name, args, ..RawCall::default() });
        at = blanks(end);
        match bytes.get(at) {
            Some(b',') => {}
            Some(b']') if blanks(at + 1) == bytes.len() => return Some(calls),
            _ => return None,
        }
    }
}

/// A call object with `"tool_name"` for its name (Cohere's).
#[derive(serde::Deserialize)]
struct FastToolCall {
    #[serde(rename = "tool_name", alias = "name")]
    name: String,
    #[serde(default)]
    arguments: Option<Args>,
    #[serde(default)]
    parameters: Option<Args>,
}

impl From<FastToolCall> for FastCall {
    fn from(call: FastToolCall) -> Self {
        FastCall { name: call.name, arguments: call.arguments, parameters: call.parameters }
    }
}

/// A call object of the usual shape.
#[derive(serde::Deserialize)]
struct FastCall {
    name: String,
    #[serde(default)]
    arguments: Option<Args>,
    #[serde(default)]
    parameters: Option<Args>,
}

impl FastCall {
    /// The name and the arguments under the first of `arg_keys` the object has, as
    /// [`arguments_of`] takes them; `None` where that reading would say more (no name,
    /// no arguments object, a key other than these two).
    fn parts(self, arg_keys: &[&str]) -> Option<(String, Args)> {
        let FastCall { name, mut arguments, mut parameters } = self;
        if name.is_empty() {
            return None;
        }
        for key in arg_keys {
            let slot = match *key {
                "arguments" => &mut arguments,
                "parameters" => &mut parameters,
                _ => return None,
            };
            if slot.is_some() {
                return slot.take().map(|args| (name, args));
            }
        }
        None
    }
}

/// As [`call_object`], for a parsed value.
pub(crate) fn call_value(value: Value, arg_keys: &[&str]) -> Result<(String, Args), (String, String)> {
    value_parts(value, arg_keys).map(|(name, args)| (name, args.unwrap_or_default()))
}

/// As [`call_parts`], for a parsed value.
fn value_parts(value: Value, arg_keys: &[&str]) -> Result<(String, Option<Args>), (String, String)> {
    let Value::Object(mut object) = value else {
        return Err((String::new(), format!("the call is {}, not a JSON object", json_kind(&value))));
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        Some(_) => return Err((String::new(), "the call's `name` is not a non-empty string".into())),
        None => return Err((String::new(), "the call has no `name`".into())),
    };
    match arguments_of(&mut object, arg_keys) {
        Ok(args) => Ok((name, args)),
        Err(problem) => Err((name, problem)),
    }
}

/// The value of a `"name": "…"` pair in text that is not valid JSON, for messages.
pub(crate) fn name_guess(text: &str) -> String {
    let Some(at) = text.find("\"name\"") else { return String::new() };
    let rest = text.get(at + 6..).unwrap_or_default().trim_start();
    let Some(rest) = rest.strip_prefix(':') else { return String::new() };
    let rest = rest.trim_start();
    let Some(rest) = rest.strip_prefix('"') else { return String::new() };
    rest.split('"').next().filter(|n| n.len() <= 256).unwrap_or_default().to_string()
}

/// Argument JSON that must be one object (empty text: `{}`).
pub(crate) fn arguments(json: &str) -> Result<Args, String> {
    if json.trim().is_empty() {
        return Ok(Args::new());
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::Object(map)) => Ok(object_args(map)),
        Ok(other) => Err(format!(
            "the arguments are {}, not a JSON object: send them as one object",
            json_kind(&other)
        )),
        Err(e) => Err(format!("the arguments are not valid JSON ({e}): send them as one JSON object")),
    }
}

/// A call object as the JSON formats write it: `{"name": …, "<key>": …}`, strings with
/// `<` escaped.
pub(crate) fn call_json(name: &str, key: &str, args: &Map<String, Value>) -> String {
    format!("{}{}}}", call_json_head(name, key), json_text(&Value::Object(args.clone())))
}

/// A call object as [`call_json`] writes it, up to its arguments: `{"name": …, "<key>": `.
pub(crate) fn call_json_head(name: &str, key: &str) -> String {
    format!("{{\"name\": {}, \"{key}\": ", json_text(&Value::String(name.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element-by-element reading `call_list` must agree with: split, then each
    /// element read on its own through a `Value` (no fast path).
    fn slow(json: &str, keys: &[&str]) -> Option<Vec<(std::ops::Range<usize>, String, Args)>> {
        serde_json::from_str::<serde::de::IgnoredAny>(json).ok()?;
        let elements = split_elements(json, Quotes::Json);
        let mut out = Vec::new();
        for range in elements {
            let value = serde_json::from_str(json.get(range.clone())?).ok()?;
            let (name, args) = value_parts(value, keys).ok()?;
            out.push((range, name, args?));
        }
        (!out.is_empty()).then_some(out)
    }

    /// `call_list` at offset 0, as (span, name, arguments).
    fn fast(
        json: &str,
        keys: &[&str],
        tool_name: bool,
    ) -> Option<Vec<(std::ops::Range<usize>, String, Args)>> {
        Some(call_list(json, 0, keys, tool_name)?.into_iter().map(|c| (c.span, c.name, c.args)).collect())
    }

    #[test]
    fn a_call_list_reads_as_its_elements_do() {
        let keys: &[&[&str]] = &[&["arguments", "parameters"], &["parameters", "arguments"], &["arguments"]];
        for json in [
            r#"[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "parameters": {}}]"#,
            r#"[ {"name":"a","arguments":{"x":[1,{"y":"]"}]}} ,{"name":"b","arguments":{}}
]"#,
            r#"[{"name": "a", "arguments": {}, "parameters": {"p": 2}}]"#,
            r#"[{"name": "a", "parameters": {"p": 2}}]"#,
            r#"[{"name": "", "arguments": {}}]"#,
            r#"[{"name": "a", "arguments": "{}"}]"#,
            r#"[{"name": "a", "arguments": null}]"#,
            r#"[{"name": "a", "arguments": {}},]"#,
            r#"[{"name": "a", "arguments": {}} {"name": "b", "arguments": {}}]"#,
            r#"[{"name": "a", "arguments": {}}] tail"#,
            r#"[{"name": "a", "name": "b", "arguments": {}}]"#,
            r#"[["a", {}]]"#,
            r#"[]"#,
            r#"{"name": "a", "arguments": {}}"#,
        ] {
            for keys in keys {
                if let Some(fast) = fast(json, keys, false) {
                    assert_eq!(Some(fast), slow(json, keys), "{json} {keys:?}");
                }
            }
        }
        // The usual shape is read in one pass.
        let usual = r#"[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]"#;
        assert_eq!(fast(usual, &["arguments"], false).map(|l| l.len()), Some(2));
        // Spans are the region's: `json` starts at `offset`.
        let at = call_list(usual, 10, &["arguments"], false).expect("read");
        assert_eq!(at[0].span, 11..11 + usual[1..].find(", {").unwrap());
        // Cohere's names.
        let cohere = r#"[{"tool_call_id": "0", "tool_name": "a", "parameters": {"x": 1}}]"#;
        let read = fast(cohere, &["parameters", "arguments"], true).expect("read");
        assert_eq!((read[0].0.clone(), read[0].1.as_str()), (1..cohere.len() - 1, "a"));
        assert!(
            fast(r#"[{"tool_name": "a", "name": "b", "parameters": {}}]"#, &["parameters"], true).is_none()
        );
    }

    #[test]
    fn balanced_scans_resume_and_skip_strings() {
        let text = r#"{"a": "}{", "b": [1, {"c": "\"}"}]} tail"#;
        let mut state = ScanState::default();
        // Fed in pieces: the state carries on.
        for cut in 1..text.len() {
            let mut s = ScanState::default();
            let piece = &text[..cut];
            if scan_balanced(piece, 0, &mut s, Quotes::Json, None) == Balanced::Open {
                assert_eq!(
                    scan_balanced(text, 0, &mut s, Quotes::Json, None),
                    Balanced::End(text.len() - 5),
                    "cut {cut}"
                );
            }
        }
        assert_eq!(scan_balanced(text, 0, &mut state, Quotes::Json, None), Balanced::End(text.len() - 5));
        let mut state = ScanState::default();
        assert_eq!(scan_balanced("[f(x=')'), g()]", 0, &mut state, Quotes::Python, None), Balanced::End(15));
        // A stop tag outside strings ends a damaged value; inside a string it does not.
        let damaged = r#"{"a": "</x>", "b": 1 </x>"#;
        let mut state = ScanState::default();
        assert_eq!(scan_balanced(damaged, 0, &mut state, Quotes::Json, Some("</x>")), Balanced::Tag(21));
    }

    #[test]
    fn a_call_is_an_object_not_an_array() {
        let array = r#"["get_weather", {"city": "Paris"}]"#;
        assert_eq!(
            call_object(array, &["arguments"]).unwrap_err().1,
            "the call is an array, not a JSON object"
        );
        let object = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        assert_eq!(call_object(object, &["arguments"]).unwrap().0, "get_weather");
    }

    #[test]
    fn elements_split_at_top_level_commas() {
        let text = r#"[{"a": "x,y"}, {"b": [1, 2]} , 3]"#;
        let parts: Vec<&str> = split_elements(text, Quotes::Json).into_iter().map(|r| &text[r]).collect();
        assert_eq!(parts, [r#"{"a": "x,y"}"#, r#"{"b": [1, 2]}"#, "3"]);
        assert!(split_elements("[ ]", Quotes::Json).is_empty());
    }

    #[test]
    fn call_objects() {
        let (name, args) = call_object(r#"{"name": "f", "arguments": {"x": 1}}"#, &["arguments"]).unwrap();
        assert_eq!((name.as_str(), args["x"].as_i64()), ("f", Some(1)));
        let (_, args) = call_object(r#"{"name": "f", "arguments": "{\"x\": 2}"}"#, &["arguments"]).unwrap();
        assert_eq!(args["x"], 2);
        assert!(call_object(r#"{"name": "f"}"#, &["arguments"]).unwrap().1.is_empty());
        assert_eq!(call_object(r#"{"name": "f", "arguments": 3}"#, &["arguments"]).unwrap_err().0, "f");
        assert_eq!(call_object(r#"{"name": "g", "arguments": {"#, &["arguments"]).unwrap_err().0, "g");
        assert!(call_object(r#"{"arguments": {}}"#, &["arguments"]).is_err());
    }
}
