//! Native tool calling: the JSON tool APIs of OpenAI (Chat Completions and Responses),
//! Anthropic and Gemini, as protocols of the same trait as VCP.
//!
//! A native protocol offers tools as the provider's `tools` value, reads requests from
//! the tool calls of an [`AssistantTurn`], and writes one result per call in the
//! provider's shape, matched by id. Each also knows its provider's wire format
//! ([`WireFormat`]): how a [`ModelRequest`] becomes a request body, how a response body
//! becomes a turn, and how a server-sent-events stream becomes [`TurnDelta`]s (reported
//! as they arrive, each call ended as soon as the stream shows it complete). The model
//! clients (`model::clients`, cargo feature `http`) are thin: they post the body and
//! hand the response to these.
//!
//! ```
//! use serde_json::json;
//! use tool_calling::ToolCallingProtocol;
//! use tool_calling::protocol::native::{OpenAiChat, WireFormat};
//!
//! let openai = OpenAiChat::default();
//! let body = json!({
//!     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
//!         "role": "assistant", "content": null,
//!         "tool_calls": [{"id": "call_1", "type": "function",
//!                         "function": {"name": "calc_add", "arguments": "{\"a\": 2, \"b\": 40}"}}]
//!     }}]
//! });
//! let turn = openai.parse_response(&body).unwrap();
//! let parsed = openai.parse_turn(&turn);
//! assert_eq!(parsed.requests[0].request_id, "call_1");
//! assert_eq!(parsed.requests[0].args["b"], 40);
//! ```

mod anthropic;
mod calls;
mod gemini;
mod names;
mod openai;
mod responses;
pub mod schema;
mod sse;

use serde_json::Value;

pub use anthropic::Anthropic;
pub use calls::NativeStreamParser;
pub use gemini::Gemini;
pub use names::{NameRule, resolve_wire_name, wire_name};
pub use openai::OpenAiChat;
pub use responses::OpenAiResponses;
pub use sse::{SseEvent, SseParser};

use crate::model::{AssistantTurn, FinishReason, Message, ModelRequest, RequestNote, TurnDelta};
use crate::protocol::RequestIdStyle;

/// Why a provider's payload could not be read.
///
/// ```
/// use serde_json::json;
/// use tool_calling::protocol::native::{Gemini, WireError, WireFormat};
/// let body = json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}});
/// let err = Gemini::default().parse_response(&body).unwrap_err();
/// assert!(matches!(&err, WireError::Provider { kind: Some(kind), .. } if kind == "RESOURCE_EXHAUSTED"));
/// assert_eq!(err.to_string(), "the provider reported an error (RESOURCE_EXHAUSTED): Quota exceeded");
/// let not_a_response = Gemini::default().parse_response(&json!({}));
/// assert!(matches!(not_a_response, Err(WireError::Shape { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The payload is not JSON.
    #[error("the {what} is not JSON: {reason}")]
    NotJson {
        /// What was being read (`response body`, `stream event`).
        what: &'static str,
        /// The JSON error.
        reason: String,
    },
    /// The payload is JSON of an unexpected shape.
    #[error("unexpected {what}: {reason}")]
    Shape {
        /// What was being read.
        what: &'static str,
        /// What is wrong, and where.
        reason: String,
    },
    /// The payload is longer than the limit set for it (see
    /// [`ResponseStream::max_bytes`]); nothing past the limit was read.
    #[error("the {what} is longer than the limit of {limit} bytes")]
    TooLarge {
        /// What was being read (`response stream`, `response body`).
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The provider reported an error (an error body, or an error event in a stream).
    #[error("the provider reported an error{}: {message}", kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default())]
    Provider {
        /// The provider's error type or code, if it gave one.
        kind: Option<String>,
        /// Its message.
        message: String,
    },
}

/// Options shared by the native protocols.
///
/// ```
/// use serde_json::json;
/// use tool_calling::ToolCallingProtocol;
/// use tool_calling::protocol::RequestIdStyle;
/// use tool_calling::protocol::native::{Gemini, NativeOptions, WireFormat};
/// let options = NativeOptions::default().request_ids(RequestIdStyle::Sequential).strict(true);
/// assert!(options.strict);
/// let gemini = Gemini::new(options);
/// let body = json!({"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
///     {"functionCall": {"name": "calc_add", "args": {"a": 2}}}
/// ]}}]});
/// let parsed = gemini.parse_turn(&gemini.parse_response(&body).unwrap());
/// assert_eq!(parsed.requests[0].request_id, "req_1", "the call had no id: one was assigned");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeOptions {
    /// How requests are named when the provider gave a call no id.
    pub request_ids: RequestIdStyle,
    /// Ask for strict schema adherence where the provider offers it (OpenAI `strict`):
    /// schemas are rewritten as strict mode requires (see [`schema::openai_strict`]).
    pub strict: bool,
    /// How deeply a call's arguments may nest (objects and arrays), 64 by default.
    /// Deeper arguments make the request incomplete, so it never runs, with a problem
    /// the model reads and an [`InvalidPayload`](crate::DiagnosticKind::InvalidPayload)
    /// diagnostic. (A JSON text nested past 128 levels is not read at all.)
    pub max_argument_depth: usize,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions { request_ids: RequestIdStyle::default(), strict: false, max_argument_depth: 64 }
    }
}

impl NativeOptions {
    /// Sets [`max_argument_depth`](Self::max_argument_depth).
    ///
    /// ```
    /// use tool_calling::protocol::native::NativeOptions;
    /// assert_eq!(NativeOptions::default().max_argument_depth, 64);
    /// assert_eq!(NativeOptions::default().max_argument_depth(8).max_argument_depth, 8);
    /// ```
    #[must_use]
    pub fn max_argument_depth(mut self, depth: usize) -> Self {
        self.max_argument_depth = depth;
        self
    }

    /// Sets [`request_ids`](Self::request_ids).
    #[must_use]
    pub fn request_ids(mut self, style: RequestIdStyle) -> Self {
        self.request_ids = style;
        self
    }

    /// Sets [`strict`](Self::strict).
    #[must_use]
    pub fn strict(mut self, on: bool) -> Self {
        self.strict = on;
        self
    }
}

/// A provider's wire format: request bodies, response bodies, and streamed events.
///
/// The model clients speak HTTP and hand everything else to this trait, so a host with
/// its own HTTP stack can use it directly.
///
/// ```
/// use serde_json::json;
/// use tool_calling::model::{Message, ModelRequest};
/// use tool_calling::protocol::native::{Anthropic, WireFormat};
/// let anthropic = Anthropic::default();
/// let request = ModelRequest::new(vec![Message::user("hi")]);
/// let body = anthropic.request_body(&request, "claude-sonnet-4-5", false);
/// assert_eq!(body["messages"][0]["role"], "user");
/// assert_eq!(body["max_tokens"], 4096, "the API requires one");
/// // Post `body` with any HTTP client, then read the answer:
/// let reply = json!({"type": "message", "stop_reason": "end_turn",
///                     "content": [{"type": "text", "text": "Hello!"}]});
/// assert_eq!(anthropic.parse_response(&reply).unwrap().text(), "Hello!");
/// ```
pub trait WireFormat: Send + Sync {
    /// The request body for `request` to `model` (`stream` asks for server-sent events).
    fn request_body(&self, request: &ModelRequest, model: &str, stream: bool) -> Value;

    /// The turn a complete response body holds.
    fn parse_response(&self, body: &Value) -> Result<AssistantTurn, WireError>;

    /// A decoder for the provider's server-sent events.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;

    /// The provider's messages (or input items) for `messages`, as its requests carry
    /// them: what a cycle's result messages look like on the wire.
    fn wire_messages(&self, messages: &[Message]) -> Value;

    /// Changes `request` where the provider would refuse it (an option combination it
    /// does not accept), noting each change. Run after the model's capabilities have
    /// been applied ([`ModelCapabilities::effective_options`]), before
    /// [`request_body`](Self::request_body). The default changes nothing.
    ///
    /// [`ModelCapabilities::effective_options`]: crate::model::ModelCapabilities::effective_options
    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        let _ = (request, notes);
    }
}

/// Turns a provider's server-sent events into [`TurnDelta`]s.
///
/// ```
/// use tool_calling::model::{FinishReason, TurnDelta};
/// use tool_calling::protocol::native::{Anthropic, SseParser, WireFormat};
/// let sse = "event: content_block_delta\n\
///            data: {\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"Hi\"}}\n\n\
///            event: message_delta\n\
///            data: {\"delta\": {\"stop_reason\": \"end_turn\"}}\n\n";
/// let mut events = Vec::new();
/// SseParser::new().push(sse.as_bytes(), &mut events);
/// let mut decoder = Anthropic::default().stream_decoder();
/// let mut deltas = Vec::new();
/// for event in &events {
///     decoder.event(event, &mut deltas).unwrap();
/// }
/// decoder.finish(&mut deltas);
/// assert_eq!(deltas, [TurnDelta::Text("Hi".into()), TurnDelta::Finish(FinishReason::Stop)]);
/// ```
pub trait StreamDecoder: Send {
    /// Reads one event; appends the deltas it decides. A provider's error event is an
    /// error; event types the decoder does not know are skipped.
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError>;

    /// The stream has ended: closes calls still open.
    fn finish(&mut self, deltas: &mut Vec<TurnDelta>);
}

/// A response stream read from its bytes: server-sent-event framing, then the
/// provider's decoder.
///
/// ```
/// use tool_calling::model::{TurnAccumulator, TurnDelta};
/// use tool_calling::protocol::native::{OpenAiChat, ResponseStream};
///
/// let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
///            data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
/// let mut stream = ResponseStream::new(&OpenAiChat::default());
/// let mut deltas = Vec::new();
/// stream.push(sse.as_bytes(), &mut deltas).unwrap();
/// stream.finish(&mut deltas);
/// let mut turn = TurnAccumulator::new();
/// deltas.iter().for_each(|d| turn.push(d));
/// assert_eq!(turn.finish().text(), "Hi");
/// ```
pub struct ResponseStream {
    sse: SseParser,
    decoder: Box<dyn StreamDecoder>,
    events: Vec<SseEvent>,
    /// The decoder's deltas, before they are checked.
    decoded: Vec<TurnDelta>,
    /// The provider said how the turn finished.
    finished: bool,
    /// An error was reported: nothing more is decoded.
    failed: bool,
    /// Each call seen: the position of its first delta while it is open, `None` once it
    /// has ended.
    calls: std::collections::HashMap<usize, Option<usize>>,
    /// The stream went past `max_bytes`: whatever the provider said, the turn was cut.
    cut: bool,
    /// Bytes taken in so far.
    read: usize,
    /// Bytes that may be taken in.
    max_bytes: usize,
}

/// The default of [`ResponseStream::max_bytes`]: 64 MiB.
pub const DEFAULT_MAX_STREAM_BYTES: usize = 64 << 20;

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream").field("sse", &self.sse).finish_non_exhaustive()
    }
}

impl ResponseStream {
    /// A stream in `format`.
    pub fn new(format: &dyn WireFormat) -> Self {
        ResponseStream {
            sse: SseParser::new(),
            decoder: format.stream_decoder(),
            events: Vec::new(),
            decoded: Vec::new(),
            finished: false,
            failed: false,
            calls: std::collections::HashMap::new(),
            cut: false,
            read: 0,
            max_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }

    /// Sets how many bytes of the stream are read ([`DEFAULT_MAX_STREAM_BYTES`] by
    /// default). This bounds everything the stream holds: a line or event whose end never
    /// comes, a call's arguments that never stop. Past the limit, [`push`](Self::push)
    /// returns [`WireError::TooLarge`] once and reads nothing more; [`finish`](Self::finish)
    /// then ends the turn with [`FinishReason::Error`] (whatever the provider said before
    /// the cut) and marks the calls still open incomplete, so that none of them runs.
    ///
    /// ```
    /// use tool_calling::model::TurnDelta;
    /// use tool_calling::protocol::native::{OpenAiChat, ResponseStream, WireError};
    /// let mut stream = ResponseStream::new(&OpenAiChat::default()).max_bytes(64);
    /// let mut deltas = Vec::new();
    /// let endless = format!("data: {}", "x".repeat(100));
    /// let error = stream.push(endless.as_bytes(), &mut deltas).unwrap_err();
    /// assert_eq!(error, WireError::TooLarge { what: "response stream", limit: 64 });
    /// assert_eq!(stream.push(b"more", &mut deltas), Ok(()), "reported once, then ignored");
    /// ```
    #[must_use]
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Takes in the next bytes; appends the deltas they decide. Events without data are
    /// skipped. The first error (a provider's error event, an event that is not JSON)
    /// is returned, and the stream decodes nothing after it.
    pub fn push(&mut self, bytes: &[u8], deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.failed {
            return Ok(());
        }
        let room = self.max_bytes.saturating_sub(self.read);
        let (taken, over) = match bytes.get(..room) {
            Some(head) if head.len() < bytes.len() => (head, true),
            _ => (bytes, false),
        };
        self.read += taken.len();
        self.sse.push(taken, &mut self.events);
        let result = self.decode();
        self.check(deltas);
        if over && result.is_ok() {
            self.failed = true;
            self.cut = true;
            return Err(WireError::TooLarge { what: "response stream", limit: self.max_bytes });
        }
        result
    }

    /// The stream has ended; appends the last deltas. An event cut off before its end is
    /// dropped.
    ///
    /// Every call that started is ended. A stream that ended before the provider said
    /// how the turn finished was cut off: the turn finishes with
    /// [`FinishReason::Error`], and each call still open is marked
    /// [`ToolCallIncomplete`](TurnDelta::ToolCallIncomplete) before its end, so that it
    /// is reported, not run.
    pub fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        let _ = self.sse.finish(&mut self.events);
        let _ = self.decode();
        self.check(deltas);
        // What the decoder decides at the end: a finish reason it held back, the calls
        // it closes.
        self.decoder.finish(&mut self.decoded);
        if self.cut {
            // A finish reason held back until the end is not the turn's: it was cut.
            self.decoded.retain(|delta| !matches!(delta, TurnDelta::Finish(_)));
        }
        let provider_finished =
            self.finished || self.decoded.iter().any(|delta| matches!(delta, TurnDelta::Finish(_)));
        if !provider_finished || self.cut {
            deltas.push(TurnDelta::Finish(FinishReason::Error));
            self.cut_open_calls(deltas);
        }
        self.check(deltas);
        // A call whose end never came was cut off, whatever the provider said.
        self.cut_open_calls(deltas);
        self.finished = true;
    }

    /// Marks the calls still open incomplete and ends them, in the order they began.
    fn cut_open_calls(&mut self, deltas: &mut Vec<TurnDelta>) {
        let mut open: Vec<(usize, usize)> =
            self.calls.iter().filter_map(|(index, open)| open.map(|at| (at, *index))).collect();
        open.sort_unstable();
        for (_, index) in open {
            self.calls.insert(index, None);
            deltas.push(TurnDelta::ToolCallIncomplete { index });
            deltas.push(TurnDelta::ToolCallEnd { index });
        }
    }

    /// Passes the decoded deltas on, keeping the call lifecycle sound whatever the
    /// provider sent: nothing of a call after its end, one end per call. Notes whether
    /// the provider gave a finish reason.
    fn check(&mut self, deltas: &mut Vec<TurnDelta>) {
        for delta in self.decoded.drain(..) {
            let index = match &delta {
                TurnDelta::Finish(_) => {
                    self.finished = true;
                    None
                }
                TurnDelta::ToolCallStart { index, .. }
                | TurnDelta::ToolCallArguments { index, .. }
                | TurnDelta::ToolCallSignature { index, .. }
                | TurnDelta::ToolCallIncomplete { index }
                | TurnDelta::ToolCallEnd { index } => Some(*index),
                _ => None,
            };
            if let Some(index) = index {
                let seen = self.calls.len();
                let state = self.calls.entry(index).or_insert(Some(seen));
                if state.is_none() {
                    continue;
                }
                if matches!(delta, TurnDelta::ToolCallEnd { .. }) {
                    *state = None;
                }
            }
            deltas.push(delta);
        }
    }

    /// Decodes the events read so far into `self.decoded`, up to the first error.
    fn decode(&mut self) -> Result<(), WireError> {
        let mut result = Ok(());
        for event in self.events.drain(..) {
            // An event without data (a bare `data` line) says nothing.
            if !self.failed && !event.data.trim().is_empty() {
                result = self.decoder.event(&event, &mut self.decoded);
                self.failed = result.is_err();
            }
        }
        result
    }
}

/// Parses the JSON of a stream event.
pub(crate) fn event_json(event: &SseEvent) -> Result<Value, WireError> {
    serde_json::from_str(&event.data)
        .map_err(|e| WireError::NotJson { what: "stream event", reason: e.to_string() })
}

/// A string field, or "".
pub(crate) fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Call arguments as JSON text: a string as it is (OpenAI sends a string), any other
/// value serialised (providers that send an object).
pub(crate) fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder that turns each event's data (a JSON array of deltas) into deltas.
    struct Scripted;

    impl StreamDecoder for Scripted {
        fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
            let parsed: Vec<TurnDelta> = serde_json::from_str(&event.data)
                .map_err(|e| WireError::NotJson { what: "stream event", reason: e.to_string() })?;
            deltas.extend(parsed);
            Ok(())
        }
        fn finish(&mut self, _deltas: &mut Vec<TurnDelta>) {}
    }

    fn scripted() -> ResponseStream {
        ResponseStream {
            sse: SseParser::new(),
            decoder: Box::new(Scripted),
            events: Vec::new(),
            decoded: Vec::new(),
            finished: false,
            failed: false,
            calls: std::collections::HashMap::new(),
            cut: false,
            read: 0,
            max_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }

    fn event(deltas: &[TurnDelta]) -> String {
        format!("data: {}\n\n", serde_json::to_string(deltas).unwrap())
    }

    fn start(index: usize) -> TurnDelta {
        TurnDelta::ToolCallStart { index, id: format!("c{index}"), name: "f".into() }
    }

    fn args(index: usize, fragment: &str) -> TurnDelta {
        TurnDelta::ToolCallArguments { index, fragment: fragment.into() }
    }

    #[test]
    fn nothing_of_a_call_passes_after_its_end() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        let end = TurnDelta::ToolCallEnd { index: 0 };
        let body = event(&[start(0), args(0, "{}"), end.clone(), args(0, "x"), end.clone(), start(0)])
            + &event(&[TurnDelta::Finish(FinishReason::ToolCalls)]);
        stream.push(body.as_bytes(), &mut deltas).unwrap();
        stream.finish(&mut deltas);
        assert_eq!(deltas, vec![start(0), args(0, "{}"), end, TurnDelta::Finish(FinishReason::ToolCalls)]);
    }

    #[test]
    fn a_stream_cut_mid_call_finishes_with_an_error_and_marks_the_call() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        let body = event(&[
            start(0),
            args(0, "{}"),
            TurnDelta::ToolCallEnd { index: 0 },
            start(1),
            args(1, "{\"a\""),
        ]);
        stream.push(body.as_bytes(), &mut deltas).unwrap();
        stream.finish(&mut deltas);
        assert_eq!(
            deltas.get(5..).unwrap(),
            [
                TurnDelta::Finish(FinishReason::Error),
                TurnDelta::ToolCallIncomplete { index: 1 },
                TurnDelta::ToolCallEnd { index: 1 },
            ]
        );
        // The same when the provider gave a finish reason but never ended the call.
        let mut stream = scripted();
        let mut deltas = Vec::new();
        let body = event(&[start(3), TurnDelta::Finish(FinishReason::Length)]);
        stream.push(body.as_bytes(), &mut deltas).unwrap();
        stream.finish(&mut deltas);
        assert_eq!(
            deltas.get(1..).unwrap(),
            [
                TurnDelta::Finish(FinishReason::Length),
                TurnDelta::ToolCallIncomplete { index: 3 },
                TurnDelta::ToolCallEnd { index: 3 },
            ]
        );
    }

    #[test]
    fn the_first_error_stops_decoding() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        let body = event(&[TurnDelta::Text("a".into())])
            + "data: not json\n\n"
            + &event(&[TurnDelta::Text("b".into())]);
        assert!(matches!(stream.push(body.as_bytes(), &mut deltas), Err(WireError::NotJson { .. })));
        assert!(stream.push(event(&[TurnDelta::Text("c".into())]).as_bytes(), &mut deltas).is_ok());
        assert_eq!(deltas, vec![TurnDelta::Text("a".into())]);
    }

    #[test]
    fn blank_events_are_skipped() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        assert!(stream.push(b"data\n\ndata:  \n\n", &mut deltas).is_ok());
        assert!(deltas.is_empty());
    }
}
