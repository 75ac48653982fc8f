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

use crate::model::{AssistantTurn, Message, ModelRequest, TurnDelta};
use crate::protocol::RequestIdStyle;

/// Why a provider's payload could not be read.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct NativeOptions {
    /// How requests are named when the provider gave a call no id.
    pub request_ids: RequestIdStyle,
    /// Ask for strict schema adherence where the provider offers it (OpenAI `strict`):
    /// schemas are rewritten as strict mode requires (see [`schema::openai_strict`]).
    pub strict: bool,
}

impl NativeOptions {
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
}

/// Turns a provider's server-sent events into [`TurnDelta`]s.
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
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream").field("sse", &self.sse).finish_non_exhaustive()
    }
}

impl ResponseStream {
    /// A stream in `format`.
    pub fn new(format: &dyn WireFormat) -> Self {
        ResponseStream { sse: SseParser::new(), decoder: format.stream_decoder(), events: Vec::new() }
    }

    /// Takes in the next bytes; appends the deltas they decide. Stops at the first error
    /// event the provider sent.
    pub fn push(&mut self, bytes: &[u8], deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        self.sse.push(bytes, &mut self.events);
        self.decode(deltas)
    }

    /// The stream has ended; appends the last deltas. An event cut off before its end is
    /// dropped (the calls it would have finished stay open, and are reported incomplete).
    pub fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        let _ = self.sse.finish(&mut self.events);
        self.decoder.finish(deltas);
    }

    fn decode(&mut self, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        let mut result = Ok(());
        for event in self.events.drain(..) {
            if result.is_ok() {
                result = self.decoder.event(&event, deltas);
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
