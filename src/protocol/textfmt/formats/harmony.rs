//! `harmony`: gpt-oss (OpenAI Harmony): `commentary to=functions.NAME` messages ending in `<|call|>`.
//!
//! A reply is a run of messages, each a header, `<|message|>`, a body and an end token
//! (`<|end|>`, `<|call|>` or `<|return|>`). The first message's `<|start|>assistant`
//! usually belongs to the prompt, so a reply often begins with `<|channel|>`:
//!
//! ```text
//! <|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>
//! ```
//!
//! - **Calls.** A message whose header names a recipient (`to=…`, after the channel or
//!   after the role: `<|start|>assistant to=functions.f<|channel|>commentary json`) is a
//!   call, whatever its channel. The name is the recipient without its `functions.`
//!   prefix (`functions.get_weather` → `get_weather`, `functions.a.b` → `a.b`); any other
//!   recipient is a built-in tool and is kept whole (`browser.search`, `python`). The
//!   body is the JSON argument object (empty: `{}`); `<|constrain|>json` or a bare
//!   content type may stand before `<|message|>` and is not required.
//! - **Several calls** are several messages, one after the other.
//! - **Normal text** is the text before the first message and the bodies of `final`
//!   messages and of `commentary` messages without a recipient (preambles), in order.
//!   `analysis` messages without a recipient (`<|channel|>analysis<|message|>`) are
//!   reasoning, declared to the one reasoning rule (a frame): hidden up to their end
//!   token or the next message with `skip_reasoning`, read like a `final` body without
//!   it. Every header and end token is hidden. A message a tool wrote (`<|start|>functions.NAME to=assistant…`, the
//!   way results go back) is never a call, and is hidden too.
//! - **Malformed.** A call whose body is not a JSON object is an incomplete request (the
//!   other calls still count). A call message that never ends — the reply stops, or a
//!   new `<|start|>`/`<|channel|>` begins first — is an incomplete request. So is a
//!   header that names its recipient (`to=…`, before any token of the header but
//!   `<|channel|>`) and is then cut off (by reasoning, or the reply's end) or broken by
//!   another token before `<|message|>`. Any other header cut off is dropped as markup.
//!
//! Implementation-defined choices: a call may end with `<|call|>`, `<|end|>` or
//! `<|return|>` (the library that parses Harmony ends a message at any of them); text
//! of `final` messages after a call is kept as normal text (as vLLM does; sglang drops
//! it); the body needs no `<|constrain|>json` (as vLLM; sglang requires it); a non-JSON
//! body is never passed on as a call (vLLM passes it through as a string).
//!
//! **Grammar.** Each call one message as the prompt shows it,
//! `<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
//! (a name holding white space or `<` is not offered). Free text holds none of Harmony's
//! tokens, so the grammar admits no analysis, final or preamble message: the reply's text
//! stands before and between call messages, where the reader reads it as normal text. The
//! structural tag's begin is each call's header; there is no JSON Schema of one call, since
//! no object holds its name.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CallObject, GrammarError, Pattern, Syntax};
use crate::protocol::reasoning::{Markup, Section};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonPieces, Offer, Piece};
use crate::tools::ToolDefinition;

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const CONSTRAIN: &str = "<|constrain|>";
const END: &str = "<|end|>";
const CALL: &str = "<|call|>";
const RETURN: &str = "<|return|>";

/// Every token that is markup wherever it stands in prose.
const TOKENS: [&str; 7] = [START, CHANNEL, MESSAGE, CONSTRAIN, END, CALL, RETURN];
/// The tokens that end a message's body (or cut it off, the last two).
const BODY_ENDS: [&str; 5] = [CALL, END, RETURN, START, CHANNEL];
/// What ends a header: `<|message|>`, or (a broken header) a token that cannot be in one.
const HEADER_ENDS: [&str; 5] = [MESSAGE, START, END, CALL, RETURN];

/// Reasoning: an `analysis` message without a recipient, up to its end token (hidden
/// with it) or the next message. (A header written otherwise than
/// `<|channel|>analysis<|message|>` is read as the header of any other message.)
static REASONING: Markup = Markup::new(
    &[Section::frame("<|channel|>analysis<|message|>", &[END, CALL, RETURN], &[START, CHANNEL])],
    &[],
);

/// Section kinds: a message header after `<|start|>` or after `<|channel|>`, and a lone
/// token.
const AFTER_START: u8 = 1;
const AFTER_CHANNEL: u8 = 2;
const TOKEN: u8 = 3;

/// The rules of `harmony`.
pub(crate) struct Rules;

/// What a header says.
#[derive(Debug, PartialEq)]
struct Header {
    channel: String,
    recipient: Option<String>,
    /// The author is not the assistant: a tool's answer (`<|start|>functions.NAME
    /// to=assistant…`), which is never a call.
    from_tool: bool,
}

impl Header {
    /// Reads a header's text (between the opening token and `<|message|>`); `role_first`
    /// when it opened with `<|start|>` (role, then optionally `<|channel|>` and the rest).
    fn read(text: &str, role_first: bool) -> Header {
        let (role, channel_part) = if role_first {
            match text.find(CHANNEL) {
                Some(at) => {
                    (text.get(..at).unwrap_or_default(), text.get(at + CHANNEL.len()..).unwrap_or_default())
                }
                None => (text, ""),
            }
        } else {
            ("", text)
        };
        let channel_part = channel_part.replace(CONSTRAIN, " ");
        let channel =
            channel_part.split_whitespace().next().filter(|w| !w.starts_with("to=")).unwrap_or_default();
        let recipient = recipient_in(&channel_part).or_else(|| recipient_in(role));
        let author = role.split_whitespace().next().unwrap_or_default();
        let from_tool = (role_first && !author.is_empty() && author != "assistant")
            || recipient.as_deref() == Some("assistant");
        Header { channel: channel.to_string(), recipient, from_tool }
    }

    /// Whether the message is a call: the assistant addressing a recipient.
    fn is_call(&self) -> bool {
        self.recipient.is_some() && !self.from_tool
    }
}

/// The `to=RECIPIENT` word of a header part.
fn recipient_in(part: &str) -> Option<String> {
    part.split_whitespace()
        .find_map(|word| word.strip_prefix("to="))
        .map(|r| r.split('<').next().unwrap_or(r).trim().to_string())
}

/// Whether the start of a header (no `<|message|>` yet) already shows a call: a
/// recipient (its first letters are enough, once they are not those of `assistant`),
/// from the assistant. Only the first bytes of a
/// header are looked at, so that a header that never ends costs linear time.
fn early_call(header: &str, role_first: bool) -> bool {
    const LOOK: usize = 256;
    let mut end = header.len().min(LOOK);
    while !header.is_char_boundary(end) {
        end -= 1;
    }
    let head = header.get(..end).unwrap_or_default();
    // Only the text before the first token (a role-first header's `<|channel|>` aside):
    // what any prefix holding that token sees too.
    let mut cut = 0;
    let cut = loop {
        match head.get(cut..).and_then(|rest| rest.find('<')) {
            Some(at) if role_first && head.get(cut + at..).is_some_and(|r| r.starts_with(CHANNEL)) => {
                cut += at + CHANNEL.len();
            }
            Some(at) => break cut + at,
            None => break head.len(),
        }
    };
    let head = head.get(..cut).unwrap_or_default();
    let Some(at) = head.find("to=") else { return false };
    let recipient = head.get(at + 3..).unwrap_or_default();
    let stop = recipient.find(|c: char| c.is_whitespace() || c == '<');
    let name = recipient.get(..stop.unwrap_or(recipient.len())).unwrap_or_default();
    // Still on its way to `to=assistant` (a tool's answer): not decided.
    if name.is_empty() || (stop.is_none() && "assistant".starts_with(name)) {
        return false;
    }
    Header::read(head.get(..at + 3 + name.len()).unwrap_or_default(), role_first).is_call()
}

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        match search.tokens(text, from, &TOKENS) {
            (Found::Call(at), 0) => Found::Section { at, len: START.len(), kind: AFTER_START },
            (Found::Call(at), 1) => Found::Section { at, len: CHANNEL.len(), kind: AFTER_CHANNEL },
            (Found::Call(at), i) => {
                Found::Section { at, len: TOKENS.get(i).map_or(0, |t| t.len()), kind: TOKEN }
            }
            (other, _) => other,
        }
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        if kind == TOKEN {
            return InSection::Leave(from);
        }
        let rest = text.get(from..).unwrap_or_default();
        // Back from a call region, which stops before the token that ends it.
        for token in [CALL, END, RETURN] {
            if rest.starts_with(token) {
                return InSection::End { at: from, len: token.len() };
            }
        }
        if rest.starts_with(START) || rest.starts_with(CHANNEL) {
            return InSection::Leave(from);
        }
        if [CALL, END, RETURN, START, CHANNEL].iter().any(|t| t.starts_with(rest)) {
            return InSection::Hold(from);
        }
        // A header that already names its recipient is a call, whatever follows (a header
        // cut off by reasoning or the reply's end, or broken by another token, is an
        // incomplete call: reported, never dropped).
        if early_call(rest, kind == AFTER_START) {
            return InSection::Call(from);
        }
        // A header: up to `<|message|>`.
        let message = match search.tokens(text, from, &HEADER_ENDS) {
            (Found::Call(at), 0) => at,
            // A broken header: dropped, reading goes on at the token.
            (Found::Call(at), _) => return InSection::Leave(at),
            _ => return InSection::Hold(from),
        };
        let header = Header::read(text.get(from..message).unwrap_or_default(), kind == AFTER_START);
        let body = message + MESSAGE.len();
        if header.is_call() {
            return InSection::Call(from);
        }
        if !header.from_tool {
            return InSection::Leave(body);
        }
        // A tool's answer echoed back: hidden up to its end token.
        match search.tokens(text, body, &BODY_ENDS) {
            (Found::Call(at), i) if i < 3 => InSection::Leave(at + BODY_ENDS.get(i).map_or(0, |t| t.len())),
            (Found::Call(at), _) => InSection::Leave(at),
            _ => InSection::Hold(from),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        // The region is a header and a body; it stops before the token that ends the
        // body. `stage` 1: ended by an end token. A header broken by another token (no
        // `<|message|>` first) ends the region there: an incomplete call.
        let message = match region.earliest(0, &HEADER_ENDS) {
            Some((at, 0)) => at,
            Some((at, _)) => return Scan::Closed(at),
            None => return Scan::Open,
        };
        let body = message + MESSAGE.len();
        match region.earliest(body, &BODY_ENDS) {
            Some((at, i)) => {
                region.state.stage = u8::from(i < 3);
                Scan::Closed(at)
            }
            None => Scan::Open,
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        let (header, body) = match region.find(MESSAGE) {
            Some(at) => {
                (region.get(..at).unwrap_or_default(), region.get(at + MESSAGE.len()..).unwrap_or_default())
            }
            None => (region, ""),
        };
        let header = Header::read(header, state.kind == AFTER_START);
        let recipient = header.recipient.unwrap_or_default();
        let name = recipient.strip_prefix("functions.").unwrap_or(&recipient).to_string();
        let mut call = RawCall { span, name, ..RawCall::default() };
        if call.name.is_empty() {
            call.problems.push(format!("the recipient `to={recipient}` names no function"));
        }
        if !closed || state.stage != 1 {
            call.problems.push(format!(
                "the call message never ended: end it with {CALL} right after its JSON arguments"
            ));
        }
        match crate::protocol::textfmt::readers::json::arguments(body.trim()) {
            Ok(args) => call.args = args,
            Err(problem) => call.problems.push(problem),
        }
        calls.push(call);
    }
}

/// A JSON schema as the TypeScript-like type Harmony's tool namespace uses.
fn ts_type(schema: &Value, indent: &str) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array).filter(|v| !v.is_empty()) {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = schema.get(key).and_then(Value::as_array).filter(|v| !v.is_empty()) {
            return variants.iter().map(|v| ts_type(v, indent)).collect::<Vec<_>>().join(" | ");
        }
    }
    let named = |t: &str| match t {
        "integer" | "number" => "number".to_string(),
        "string" | "boolean" | "null" => t.to_string(),
        "array" => match schema.get("items") {
            Some(items) => {
                let inner = ts_type(items, indent);
                if inner.contains(' ') { format!("Array<{inner}>") } else { format!("{inner}[]") }
            }
            None => "any[]".to_string(),
        },
        "object" => match schema.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => ts_object(schema, indent),
            _ => "object".to_string(),
        },
        _ => "any".to_string(),
    };
    match schema.get("type") {
        Some(Value::String(t)) => named(t),
        Some(Value::Array(types)) => {
            types.iter().filter_map(Value::as_str).map(named).collect::<Vec<_>>().join(" | ")
        }
        _ if schema.get("properties").is_some() => ts_object(schema, indent),
        _ => "any".to_string(),
    }
}

/// An object schema's properties as a TypeScript object type.
fn ts_object(schema: &Value, indent: &str) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("{\n");
    let inner = format!("{indent}  ");
    for (key, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            for line in description.lines() {
                out.push_str(&format!("{indent}// {line}\n"));
            }
        }
        let optional = if required.contains(&key.as_str()) { "" } else { "?" };
        out.push_str(&format!("{indent}{key}{optional}: {},", ts_type(property, &inner)));
        if let Some(default) = property.get("default") {
            let shown = default.as_str().map_or_else(|| default.to_string(), str::to_string);
            out.push_str(&format!(" // default: {shown}"));
        }
        out.push('\n');
    }
    out.push_str(indent.get(2..).unwrap_or_default());
    out.push('}');
    out
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<|channel|>"),
        Marker::Token("<|start|>"),
        Marker::Token("<|message|>"),
        Marker::Token("<|constrain|>"),
        Marker::Token("<|call|>"),
        Marker::Token("<|return|>"),
    ],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the `functions` namespace of the developer message, each
    /// method a TypeScript type, then the system message's line on where calls go.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let mut out = String::from("# Tools\n\n## functions\n\nnamespace functions {\n\n");
        for (name, description, parameters) in crate::protocol::textfmt::prompt::methods(tools) {
            for line in description.lines() {
                out.push_str(&format!("// {line}\n"));
            }
            let has_properties =
                parameters.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
            if has_properties {
                out.push_str(&format!("type {name} = (_: {}) => any;\n\n", ts_object(parameters, "")));
            } else {
                out.push_str(&format!("type {name} = () => any;\n\n"));
            }
        }
        out.push_str(
        "} // namespace functions\n\n\
         # Valid channels: analysis, commentary, final. Channel must be included for every message.\n\
         Calls to these tools must go to the commentary channel: 'functions'.\n\
         A call is one message: <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{JSON arguments}<|call|>",
    );
        out
    }

    /// The tool messages that carry `results` back, one per result:
    /// `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
            .iter()
            .map(|r| {
                let name = neutralize_tokens(&r.tool_name).split_whitespace().collect::<Vec<_>>().join("_");
                format!(
                    "{START}functions.{name} to=assistant{CHANNEL}commentary{MESSAGE}{}{END}",
                    crate::protocol::textfmt::prompt::content(r)
                )
            })
            .collect()
    }

    /// A call of `name` with `args`, as the prompt teaches it. `None` when the name holds
    /// white space or markup (it would not read back as one recipient).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains("<|") {
            return None;
        }
        let args = crate::protocol::textfmt::grammar::json_text(&Value::Object(args.clone()));
        Some(format!(
            "{START}assistant{CHANNEL}commentary to=functions.{name} {CONSTRAIN}json{MESSAGE}{args}{CALL}"
        ))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // A name that would not read back as one recipient (white space, `<`) is not
        // offered.
        let methods: Vec<(String, &Value)> = offer
            .methods
            .iter()
            .filter(|(name, _)| !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == '<'))
            .cloned()
            .collect();
        if methods.is_empty() {
            return Err(GrammarError::NoMethods);
        }
        let open = format!("{START}assistant{CHANNEL}commentary to=functions.");
        let pieces = |name: &str| {
            vec![
                Piece::Text(format!("{name} {CONSTRAIN}json{MESSAGE}")),
                Piece::Arguments,
                Piece::Text(CALL.to_string()),
            ]
        };
        JsonPieces {
            pieces: &pieces,
            index: None,
            tag_open: &open,
            tag_close: "",
            // The name is in the header: no JSON object holds a call.
            object: CallObject::Markup,
            open: &open,
            section: None,
            avoid: TOKENS.iter().map(|t| Pattern::text(t)).collect(),
            keys: ("name", "arguments"),
        }
        .build(b, &Offer { methods: &methods, ..*offer })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::textfmt::{TextFormat, TextFormatProtocol};

    fn parse(text: &str) -> crate::protocol::ParseOutcome {
        TextFormatProtocol::new(TextFormat::Harmony).parse(text)
    }

    #[test]
    fn write_call_round_trips() {
        for (name, args) in [
            ("get_weather", json!({"city": "Paris", "days": 3})),
            ("empty", json!({})),
            ("nested.name", json!({"q": "a <|call|> b </x>", "list": [1, {"k": null}], "u": "Grüße ☃"})),
        ] {
            let args = args.as_object().cloned().unwrap_or_default();
            let text = Rules.write_call(name, &args).unwrap_or_default();
            let parsed = parse(&text);
            assert_eq!(parsed.requests.len(), 1, "{text}");
            let request = parsed.requests.first().cloned().unwrap_or_else(|| panic!("{text}"));
            assert!(request.complete, "{text}: {request:?}");
            assert_eq!(request.tool_name, name);
            assert_eq!(Value::Object(request.args.into_iter().collect()), Value::Object(args));
            assert_eq!(parsed.normal_text, "");
        }
        assert_eq!(Rules.write_call("two words", &Map::new()), None);
    }

    #[test]
    fn a_call_header_cut_off_is_an_incomplete_call() {
        for text in [
            "<|channel|>commentary to=functions.calc_add <|constr",
            "<|start|>assistant to=functions.calc_add<|chan",
            "<|channel|>commentary to=functions.calc_add <think>x</think><|constrain|>json<|message|>{}<|call|>",
        ] {
            let parsed = parse(text);
            assert_eq!(parsed.requests.len(), 1, "{text}: {parsed:?}");
            assert!(!parsed.requests[0].complete, "{text}");
            assert_eq!(parsed.requests[0].tool_name, "calc_add");
        }
        // A recipient begun is a call begun; not yet a recipient, or a tool's answer: none.
        assert_eq!(parse("<|channel|>commentary to=functions.calc").requests[0].tool_name, "calc");
        assert!(parse("<|channel|>commentary to=").requests.is_empty());
        assert!(parse("<|channel|>commentary to=assis").requests.is_empty());
        assert!(parse("<|start|>functions.calc_add to=assistant<|chan").requests.is_empty());
    }

    #[test]
    fn a_call_header_broken_by_a_token_is_an_incomplete_call_and_ends_there() {
        let text = "<|start|>assistant to=message|>{\"q\": 1}<|call|>After.";
        let parsed = parse(text);
        assert_eq!(parsed.requests.len(), 1, "{parsed:?}");
        assert!(!parsed.requests[0].complete);
        assert_eq!(parsed.normal_text, "After.");
    }

    #[test]
    fn a_tool_s_answer_is_never_a_call() {
        let echo =
            "<|start|>functions.calc_add to=assistant<|channel|>commentary<|message|>{\"a\": 1}<|end|>Done.";
        let parsed = parse(echo);
        assert!(parsed.requests.is_empty(), "{parsed:?}");
        assert_eq!(parsed.normal_text, "Done.");
    }

    #[test]
    fn header_forms() {
        let h = Header::read("assistant<|channel|>commentary to=functions.f <|constrain|>json", true);
        assert_eq!(
            h,
            Header { channel: "commentary".into(), recipient: Some("functions.f".into()), from_tool: false }
        );
        let h = Header::read("assistant to=functions.f<|channel|>commentary json", true);
        assert_eq!(h.recipient.as_deref(), Some("functions.f"));
        let h = Header::read("analysis", false);
        assert_eq!(h, Header { channel: "analysis".into(), recipient: None, from_tool: false });
    }
}
