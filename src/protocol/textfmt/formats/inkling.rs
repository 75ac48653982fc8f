//! `inkling`: Inkling: TML frames, `<|content_invoke_tool_json|>` payloads.
//!
//! A reply is a run of frames: a `<|message_model|>` header (an author or tool name,
//! metadata), a content-type token, the content and `<|end_message|>`; it may end with
//! `<|content_model_end_sampling|>`.
//!
//! ```text
//! <|message_model|><|content_text|>I'll check.<|end_message|><|message_model|>search<|content_invoke_tool_json|>{"name":"search","args":{"query":"Rust"}}<|end_message|><|content_model_end_sampling|>
//! ```
//!
//! - **Calls.** The payload after `<|content_invoke_tool_json|>` is one JSON object with
//!   `"name"` (a string) and `"args"` (an object); the header's name is not used. A
//!   payload without its header counts too.
//! - **Several calls** are several frames.
//! - **Normal text** is the content of `<|content_text|>` frames and any text outside
//!   frames, before, between and after calls; headers and framing tokens are dropped.
//!   `<|content_thinking|>` frames are reasoning, declared to the one reasoning rule
//!   (a frame): hidden up to their `<|end_message|>` or the next frame with
//!   `skip_reasoning`, read like text frames without it.
//! - **Malformed.** A payload that is not such an object (not JSON, an array, empty,
//!   no `name` or no `args`) is an incomplete request, ending at its `<|end_message|>`;
//!   the following frames still count. A complete object counts even when a stray
//!   token or text follows it, or its `<|end_message|>` never comes; an object cut off
//!   by the end of the reply is an incomplete request.
//! - **Cut off.** A call has begun once its invoke token has: from `<|content_invoke`
//!   on (the bytes both invoke tokens, and no other token, begin with), in a header or
//!   in prose. A frame cut off there or later, inside the token or its payload (by the
//!   reply's end, or by reasoning that begins inside it), is one incomplete request,
//!   never run. A header cut off before that (`<|message_model|>search`) is dropped as
//!   markup, and `<|content_invoke` followed by anything but the rest of a token
//!   (`<|content_invokes|>`) is prose.
//!
//! Implementation-defined choices: a raw-text invocation
//! (`<|content_invoke_tool_text|>…<|end_message|>`) is an incomplete request, never run
//! (smg drops it, sglang returns a call with an empty name and `{"text": …}`); what follows
//! a complete payload other than `<|end_message|>` is read as prose again; a header's
//! name does not begin a call (TML headers may name an author or a channel, as in
//! `<|message_model|>assistant<|content_text|>…`, and whether a header is a call's
//! must be decided the same on every prefix of a streamed reply, so only the invoke
//! token decides it).
//!
//! **Grammar.** One frame per call as the prompt shows it,
//! `<|message_model|>NAME<|content_invoke_tool_json|>{"name":"NAME","args":{…}}<|end_message|>`
//! (a name that is empty or holds `<|` is not offered: `write_call` writes no call of it).
//! Free text holds none of the frame tokens, so the grammar admits no text or thinking
//! frames and no end-of-sampling token: the reply's text stands outside frames, where the
//! reader reads it as normal text. The JSON Schema of one call is `{"name", "args"}`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::json_kind;
use crate::protocol::reasoning::{Markup, Section};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches,
};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text};
use crate::protocol::textfmt::readers::json::object_args;
use crate::protocol::textfmt::readers::tagged::{
    AFTER_JSON, BEFORE_JSON, IN_JSON, end_after_json, in_json, json_start,
};
use crate::tools::ToolDefinition;

const MESSAGE_MODEL: &str = "<|message_model|>";
const CONTENT_TEXT: &str = "<|content_text|>";
const CONTENT_THINKING: &str = "<|content_thinking|>";
const INVOKE_JSON: &str = "<|content_invoke_tool_json|>";
const INVOKE_TEXT: &str = "<|content_invoke_tool_text|>";
/// What both invoke tokens begin with, and no other token: from here a call has begun.
const INVOKE_START: &str = "<|content_invoke";
const END_MESSAGE: &str = "<|end_message|>";
const END_SAMPLING: &str = "<|content_model_end_sampling|>";
const MESSAGE_TOOL: &str = "<|message_tool|>";
const TOOL_ERROR: &str = "<|content_tool_error|>";

/// The tokens that are markup in prose (index order matters in [`Rules::find`]).
/// An invoke token is looked for by its beginning ([`INVOKE_START`]), so that one cut off
/// (by reasoning, or the reply's end) still begins a call.
const TOKENS: [&str; 6] =
    [MESSAGE_MODEL, CONTENT_THINKING, INVOKE_START, CONTENT_TEXT, END_MESSAGE, END_SAMPLING];
/// What ends a header.
const HEADER_ENDS: [&str; 6] =
    [CONTENT_TEXT, CONTENT_THINKING, INVOKE_START, MESSAGE_MODEL, END_MESSAGE, END_SAMPLING];
/// What ends a raw-text invocation's frame (the first one is consumed with it).
const FRAME_ENDS: [&str; 3] = [END_MESSAGE, MESSAGE_MODEL, END_SAMPLING];

/// Section kinds.
const HEADER: u8 = 1;
const TOKEN: u8 = 2;

/// Reasoning: a `<|content_thinking|>` frame, up to its `<|end_message|>` (hidden with
/// it) or the next frame.
static REASONING: Markup =
    Markup::new(&[Section::frame(CONTENT_THINKING, &[END_MESSAGE], &[MESSAGE_MODEL, END_SAMPLING])], &[]);

/// The rules of `inkling`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        match search.tokens(text, from, &TOKENS) {
            (Found::Call(at), 0) => Found::Section { at, len: MESSAGE_MODEL.len(), kind: HEADER },
            (Found::Call(at), 2) => Found::Call(at),
            (Found::Call(at), i) => {
                Found::Section { at, len: TOKENS.get(i).map_or(0, |t| t.len()), kind: TOKEN }
            }
            (other, _) => other,
        }
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        match kind {
            HEADER => match search.tokens(text, from, &HEADER_ENDS) {
                // The header and the content type are markup; text content (and
                // thinking, when reasoning is read as text) is prose.
                (Found::Call(at), 0) => InSection::Leave(at + CONTENT_TEXT.len()),
                (Found::Call(at), 1) => InSection::Leave(at + CONTENT_THINKING.len()),
                (Found::Call(at), _) => InSection::Leave(at),
                _ => InSection::Hold(from),
            },
            _ => InSection::Leave(from),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let at_end = region.at_end;
        let text = region.text;
        let bytes = text.as_bytes();
        if text.starts_with(INVOKE_TEXT) {
            return region.until(INVOKE_TEXT.len(), END_MESSAGE);
        }
        if !text.starts_with(INVOKE_JSON) {
            // The invoke token so far: a call has begun; wait for the rest of the token
            // (cut off here, it is an invocation that never ended).
            if INVOKE_JSON.starts_with(text) || INVOKE_TEXT.starts_with(text) {
                return Scan::Open;
            }
            // Not an invoke token after all: its first bytes are prose.
            return Scan::NotACall(INVOKE_START.len());
        }
        let state = &mut *region.state;
        loop {
            match state.stage {
                // Region stages as hermes' (`FALLBACK`: to the end of the message).
                BEFORE_JSON => {
                    if !json_start(bytes, state, INVOKE_JSON.len(), b"{") {
                        return Scan::Open;
                    }
                }
                IN_JSON => {
                    if let Some(scan) = in_json(text, state, END_MESSAGE) {
                        return scan;
                    }
                }
                // No end token after the object: the call ends with it.
                AFTER_JSON => return end_after_json(text, at_end, state, END_MESSAGE),
                _ => {
                    let from = state.pos;
                    return match region.earliest(from, &FRAME_ENDS) {
                        Some((at, 0)) => Scan::Closed(at + END_MESSAGE.len()),
                        Some((at, _)) => Scan::Closed(at),
                        None => Scan::Open,
                    };
                }
            }
        }
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        if let Some(payload) = region.strip_prefix(INVOKE_TEXT) {
            let payload = payload.strip_suffix(END_MESSAGE).unwrap_or(payload);
            calls.push(RawCall::broken(
                span,
                "",
                format!(
                    "a raw-text tool invocation ({:?}) is no call this crate reads: write {INVOKE_JSON}{{\"name\": …, \"args\": {{…}}}}{END_MESSAGE}",
                    payload.chars().take(60).collect::<String>()
                ),
            ));
            return;
        }
        let hint = format!("write {INVOKE_JSON}{{\"name\": \"NAME\", \"args\": {{…}}}}{END_MESSAGE}");
        if !closed {
            calls.push(RawCall::broken(span, "", format!("the tool invocation never ended: {hint}")));
            return;
        }
        let json_text = match state.stage {
            AFTER_JSON => region.get(INVOKE_JSON.len()..state.mark).unwrap_or_default(),
            _ => region.get(INVOKE_JSON.len()..).unwrap_or_default(),
        };
        let json_text = json_text.strip_suffix(END_MESSAGE).unwrap_or(json_text).trim();
        let read = payload(json_text).map(|(name, args)| (name, object_args(args)));
        calls.push(RawCall::read(span, read, hint));
    }
}

/// A payload's name and arguments, or (the name if any, the problem).
fn payload(text: &str) -> Result<(String, Map<String, Value>), (String, String)> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| (String::new(), format!("the tool invocation is not valid JSON ({e})")))?;
    let Value::Object(mut object) = value else {
        return Err((String::new(), format!("the tool invocation is {}, not an object", json_kind(&value))));
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => return Err((String::new(), "the tool invocation has no \"name\" string".to_string())),
    };
    match object.remove("args") {
        Some(Value::Object(args)) => Ok((name, args)),
        Some(other) => {
            Err((name, format!("the tool invocation's \"args\" is {}, not an object", json_kind(&other))))
        }
        None => Err((name, "the tool invocation has no \"args\" object".to_string())),
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<|message_model|>"),
        Marker::Token("<|content_text|>"),
        Marker::Token("<|content_invoke"),
        Marker::Token("<|content_thinking|>"),
        Marker::Token("<|end_message|>"),
        Marker::Token("<|content_model_end_sampling|>"),
    ],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the tools as JSON, and how a call frame is written.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "# Tools\n\nYou may call one or more of these tools, given as JSON schemas:\n{}\n\n\
         To call a tool, write one frame per call:\n\
         {MESSAGE_MODEL}NAME{INVOKE_JSON}{{\"name\": \"NAME\", \"args\": {{JSON arguments}}}}{END_MESSAGE}\n\
         Text for the user goes in {MESSAGE_MODEL}{CONTENT_TEXT}…{END_MESSAGE} frames.",
            crate::protocol::textfmt::prompt::lines(&crate::protocol::textfmt::prompt::functions(tools))
        )
    }

    /// The tool frames that carry `results` back, one per result:
    /// `<|message_tool|>NAME<|content_text|>…<|end_message|>` (an error's frame has
    /// `<|content_tool_error|>`).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        results
            .iter()
            .map(|r| {
                let kind = if r.is_success() { CONTENT_TEXT } else { TOOL_ERROR };
                format!(
                    "{MESSAGE_TOOL}{}{kind}{}{END_MESSAGE}",
                    neutralize_tokens(&r.tool_name),
                    crate::protocol::textfmt::prompt::content(r)
                )
            })
            .collect()
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        if name.is_empty() || name.contains("<|") {
            return None;
        }
        let name_json = json_text(&Value::String(name.to_string()));
        let args = json_text(&Value::Object(args.clone()));
        Some(format!(
            "{MESSAGE_MODEL}{name}{INVOKE_JSON}{{\"name\":{name_json},\"args\":{args}}}{END_MESSAGE}"
        ))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // A name the header cannot hold is not offered (`write_call` writes no call of it).
        let methods: Vec<(String, &Value)> = offer
            .methods
            .iter()
            .filter(|(name, _)| !name.is_empty() && !name.contains("<|"))
            .cloned()
            .collect();
        if methods.is_empty() {
            return Err(GrammarError::NoMethods);
        }
        let head = |name: &str| {
            format!("{name}{INVOKE_JSON}{{\"name\":{},\"args\":", json_text(&Value::String(name.into())))
        };
        let tail = format!("}}{END_MESSAGE}");
        let markup =
            JsonMarkup { head: &head, index: None, tail: &tail, tag_open: MESSAGE_MODEL, tag_close: "" };
        // Every other token is markup the reader reads (a frame, reasoning, a call).
        let avoid = TOKENS.iter().filter(|t| **t != MESSAGE_MODEL).map(|t| Pattern::text(t)).collect();
        JsonSyntax { markup, open: MESSAGE_MODEL, section: None, avoid, arguments: "args" }
            .build(b, &Offer { methods: &methods, ..*offer })
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::protocol::textfmt::TextFormat;

    #[test]
    fn a_call_begins_with_its_invoke_token() {
        use crate::protocol::textfmt::test_support::parse;
        for text in [
            "<|message_model|>search<|content_invoke",
            "<|message_model|><|content_invoke_tool_js",
            "Before<|content_invoke_tool_text",
            "<|message_model|>search<|content_invoke_tool_json|>{\"name\":\"search\",\"ar",
        ] {
            let reply = parse(TextFormat::Inkling, text);
            assert_eq!(reply.requests.len(), 1, "{text:?}: {reply:?}");
            assert!(reply.requests.iter().all(|r| !r.complete), "{text:?}: {reply:?}");
            assert_eq!(reply.normal_text, text.split('<').next().unwrap_or_default(), "{text:?}");
        }
        for (text, normal) in [
            ("<|message_model|>search", ""),
            ("<|message_model|>search<|content_inv", ""),
            ("<|message_model|>assistant<|content_text|>Hi", "Hi"),
            ("A <|content_invoked|> B", "A <|content_invoked|> B"),
        ] {
            let reply = parse(TextFormat::Inkling, text);
            assert!(reply.requests.is_empty(), "{text:?}: {reply:?}");
            assert_eq!(reply.normal_text, normal, "{text:?}");
        }
    }

    #[test]
    fn prompt_and_results_shape() {
        assert!(Rules.prompt(&[]).contains(INVOKE_JSON));
        let out = Rules.results(&[
            ToolExecutionResult::success("1", "calc_add", "3 <|end_message|>"),
            ToolExecutionResult::error("2", "calc_add", crate::ErrorKind::Network, "boom"),
        ]);
        assert!(out.starts_with("<|message_tool|>calc_add<|content_text|>3 "), "{out}");
        assert_eq!(out.matches(END_MESSAGE).count(), 2, "{out}");
        assert!(out.contains("<|content_tool_error|>Error: boom<|end_message|>"), "{out}");
    }
}
