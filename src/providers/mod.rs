//! The providers' wire formats: OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages and Gemini, and (cargo feature `http`) the HTTP clients that speak them.
//!
//! A [`Provider`] is a [`WireFormat`]: it writes a [`ModelRequest`] as the provider's
//! request body, reads a response body as an [`AssistantTurn`], and decodes the
//! provider's server-sent-events stream into [`TurnDelta`]s ([`ResponseStream`]: SSE
//! framing, then the provider's decoder), reporting each call as soon as the stream
//! shows it complete. Reading a tool call's arguments as a request, offering tools and
//! returning results is the job of the native tool-calling protocols
//! ([`protocol::native`](crate::protocol::native)); a provider only moves turns and
//! messages on and off the wire.
//!
//! The HTTP clients (`HttpChatModel`, cargo feature `http`) are thin: they post the
//! body and hand the response to these. A host with its own HTTP stack uses the
//! [`WireFormat`] directly.
//!
//! ```
//! use serde_json::json;
//! use tool_calling::providers::{Provider, WireFormat};
//!
//! let body = json!({
//!     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
//!         "role": "assistant", "content": null,
//!         "tool_calls": [{"id": "call_1", "type": "function",
//!                         "function": {"name": "calc_add", "arguments": "{\"a\": 2, \"b\": 40}"}}]
//!     }}]
//! });
//! let turn = Provider::OpenAiChat.parse_response(&body).unwrap();
//! let call = turn.tool_calls().next().unwrap();
//! assert_eq!((call.id.as_str(), call.name.as_str()), ("call_1", "calc_add"));
//! assert_eq!(call.arguments_json().unwrap()["b"], 40);
//! ```

pub(crate) mod anthropic;
#[cfg(feature = "http")]
mod client;
mod constrained;
mod gemini;
mod lenient;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
mod provider;
#[cfg(feature = "http")]
mod retry;
mod sse;
mod stream;
mod typed;

use serde_json::Value;

pub use crate::protocol::native::provider::Provider;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use client::{HttpChatModel, HttpChatModelBuilder, PreparedRequest};
pub use constrained::GrammarServer;
pub use provider::ANTHROPIC_VERSION;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use retry::HttpRetry;
#[cfg(feature = "gateway")]
pub(crate) use retry::error_details;
pub use sse::{SseEvent, SseParser};
pub use stream::{DEFAULT_MAX_STREAM_BYTES, ResponseStream};

use crate::model::{AssistantTurn, Message, ModelRequest, RequestNote, TurnDelta};

/// Why a provider's payload could not be read.
///
/// ```
/// use serde_json::json;
/// use tool_calling::providers::{Provider, WireError, WireFormat};
/// let body = json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}});
/// let err = Provider::Gemini.parse_response(&body).unwrap_err();
/// assert!(matches!(&err, WireError::Provider { kind: Some(kind), .. } if kind == "RESOURCE_EXHAUSTED"));
/// assert_eq!(err.to_string(), "the provider reported an error (RESOURCE_EXHAUSTED): Quota exceeded");
/// let not_a_response = Provider::Gemini.parse_response(&json!({}));
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
    /// The stream ended inside an event (its bytes stopped before the blank line that
    /// ends an event): the part of the event that arrived was dropped (see
    /// [`ResponseStream::finish`]).
    #[error("the {what} ended inside an event: the part of it that arrived was dropped")]
    Truncated {
        /// What was being read (`response stream`).
        what: &'static str,
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

/// A provider's wire format: request bodies, response bodies, and streamed events.
///
/// The model clients speak HTTP and hand everything else to this trait, so a host with
/// its own HTTP stack can use it directly. [`Provider`] implements it for the four
/// provider APIs.
///
/// Bodies are JSON values: a host posts the body as it is, or adds what the crate does
/// not model (a `metadata` or `service_tier` field, a beta option) before posting it;
/// and hands back whatever body it received. The providers build and read them through
/// typed structures of their API's shapes.
///
/// ```
/// use serde_json::json;
/// use tool_calling::model::{Message, ModelRequest};
/// use tool_calling::providers::{Provider, WireFormat};
/// let anthropic = Provider::Anthropic;
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
    /// [`ModelCapabilities::effective_options`]: crate::protocol::ModelCapabilities::effective_options
    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        let _ = (request, notes);
    }
}

/// Turns a provider's server-sent events into [`TurnDelta`]s.
///
/// ```
/// use tool_calling::model::{FinishReason, TurnDelta};
/// use tool_calling::providers::{Provider, SseParser, WireFormat};
/// let sse = "event: content_block_delta\n\
///            data: {\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"Hi\"}}\n\n\
///            event: message_delta\n\
///            data: {\"delta\": {\"stop_reason\": \"end_turn\"}}\n\n";
/// let mut events = Vec::new();
/// SseParser::new().push(sse.as_bytes(), &mut events);
/// let mut decoder = Provider::Anthropic.stream_decoder();
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

    /// The provider's token counts for the turn, as the stream gave them (the last
    /// usage object seen, in the provider's shape), if it gave any. The default (and
    /// every provider but OpenAI Chat Completions, so far) reports none.
    fn usage(&self) -> Option<&Value> {
        None
    }
}

impl WireFormat for Provider {
    fn request_body(&self, request: &ModelRequest, model: &str, stream: bool) -> Value {
        match self {
            Provider::OpenAiChat => openai_chat::request_body(request, model, stream),
            Provider::OpenAiResponses => openai_responses::request_body(request, model, stream),
            Provider::Anthropic => anthropic::request_body(request, model, stream),
            Provider::Gemini => gemini::request_body(request),
        }
    }

    fn parse_response(&self, body: &Value) -> Result<AssistantTurn, WireError> {
        match self {
            Provider::OpenAiChat => openai_chat::parse_response(body),
            Provider::OpenAiResponses => openai_responses::parse_response(body),
            Provider::Anthropic => anthropic::parse_response(body),
            Provider::Gemini => gemini::parse_response(body),
        }
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        match self {
            Provider::OpenAiChat => Box::new(openai_chat::ChunkDecoder::default()),
            Provider::OpenAiResponses => {
                Box::new(typed::TypedEvents::new(openai_responses::EventDecoder::default()))
            }
            Provider::Anthropic => Box::new(typed::TypedEvents::new(anthropic::EventDecoder::default())),
            Provider::Gemini => Box::new(gemini::ChunkDecoder::default()),
        }
    }

    fn wire_messages(&self, messages: &[Message]) -> Value {
        match self {
            Provider::OpenAiChat => openai_chat::wire_messages(messages),
            Provider::OpenAiResponses => openai_responses::wire_messages(messages),
            Provider::Anthropic => anthropic::wire_messages(messages),
            Provider::Gemini => gemini::wire_messages(messages),
        }
    }

    /// OpenAI (both APIs): no temperature with reasoning, reasoning cannot be turned off.
    /// Anthropic with thinking: a budget of at least 1,024 tokens, below `max_tokens`; no
    /// temperature; tool choice `auto` or `none` only. Gemini: nothing.
    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => openai_chat::adjust(request, notes),
            Provider::Anthropic => anthropic::adjust(request, notes),
            Provider::Gemini => {}
        }
    }
}

/// The declared tools of `request`, when there are any.
pub(crate) fn declared_tools(request: &ModelRequest) -> Option<&Value> {
    request.tools.as_ref().filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
}

/// A typed body as the JSON value a [`WireFormat`] gives.
pub(crate) fn to_value(body: &impl serde::Serialize) -> Value {
    // The bodies hold strings, numbers, booleans and JSON values, under string keys:
    // serialising them cannot fail.
    serde_json::to_value(body).unwrap_or(Value::Null)
}

/// The system text of an API that takes it apart from the messages (Anthropic, Gemini):
/// the tool prompt, then the system messages, separated by blank lines (`None` when there
/// is none).
pub(crate) fn system_text(request: &ModelRequest) -> Option<String> {
    let prompt = request.tool_prompt.as_deref().filter(|p| !p.is_empty()).map(std::borrow::Cow::Borrowed);
    let system = request.messages.iter().filter(|m| m.role == crate::model::Role::System).map(Message::text);
    let parts: Vec<_> = prompt.into_iter().chain(system).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A call's arguments as the object Anthropic's `tool_use.input` and Gemini's
/// `functionCall.args` must be (`{}` for arguments that are not an object: such a call
/// was answered with an error and never ran).
pub(crate) fn arguments_object(call: &crate::model::ToolCall) -> Value {
    match call.arguments_json() {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// A typed request body as the JSON value a [`WireFormat`] gives, its fields that have no
/// value (`None`) left out: every API takes an absent field as "not set", where some
/// refuse a `null`.
pub(crate) fn body_value(body: &impl serde::Serialize) -> Value {
    let mut value = to_value(body);
    if let Value::Object(fields) = &mut value {
        fields.retain(|_, field| !field.is_null());
    }
    value
}

/// An event's payload, read as `T` (see [`lenient`]).
pub(crate) fn parse_event<'a, T: serde::Deserialize<'a> + Default>(
    event: &'a SseEvent,
) -> Result<T, WireError> {
    lenient::from_str(&event.data).map_err(|e| json_error("stream event", &e))
}

/// An event's payload as any JSON value: a payload whose fields are not read need only
/// be JSON.
pub(crate) fn parse_event_any<'a, T: serde::Deserialize<'a>>(event: &'a SseEvent) -> Result<T, WireError> {
    serde_json::from_str(&event.data).map_err(|e| json_error("stream event", &e))
}

/// A response body, read as `T` (see [`lenient`]).
pub(crate) fn parse_body<'a, T: serde::Deserialize<'a> + Default>(body: &'a Value) -> Result<T, WireError> {
    lenient::from_value(body).map_err(|e| json_error("response body", &e))
}

/// The error for a response body without what every response has (`what`: "`content`
/// array", "`choices[0]`", …).
pub(crate) fn missing(what: &str) -> WireError {
    WireError::Shape { what: "response body", reason: format!("no {what}") }
}

/// A JSON error as a [`WireError`]: text that is not JSON, or JSON the typed payload
/// cannot take (a key given twice).
fn json_error(what: &'static str, error: &serde_json::Error) -> WireError {
    match error.classify() {
        serde_json::error::Category::Data => WireError::Shape { what, reason: error.to_string() },
        serde_json::error::Category::Io
        | serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof => WireError::NotJson { what, reason: error.to_string() },
    }
}

/// An error object as the OpenAI APIs (and most compatible servers) send it,
/// `{"message", "type", "code", "status"}`, or a bare string, as a [`WireError`]. Kept as
/// a value: compatible servers put anything there, and an error without a message is
/// reported whole.
pub(crate) fn provider_error(error: &Value) -> WireError {
    let message = match error {
        Value::String(text) => text.clone(),
        other => {
            other.get("message").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_string)
        }
    };
    let kind = ["type", "code", "status"].iter().find_map(|k| {
        error
            .get(k)
            .and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string())))
    });
    WireError::Provider { kind, message }
}
/// What the providers' tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Provider, SseParser, WireError, WireFormat};
    use crate::model::TurnDelta;

    /// The deltas `provider`'s decoder gives for the events of `sse` (each `data:`
    /// line ended with a blank line), up to the first error, and the decoder's end.
    pub(crate) fn decode(provider: Provider, sse: &str) -> (Vec<TurnDelta>, Option<WireError>) {
        let mut events = Vec::new();
        let mut parser = SseParser::new();
        parser.push(sse.as_bytes(), &mut events);
        let mut decoder = provider.stream_decoder();
        let mut deltas = Vec::new();
        for event in &events {
            if let Err(error) = decoder.event(event, &mut deltas) {
                return (deltas, Some(error));
            }
        }
        decoder.finish(&mut deltas);
        (deltas, None)
    }

    /// `data:` events of `payloads`, one each.
    pub(crate) fn events(payloads: &[&str]) -> String {
        payloads.iter().map(|p| format!("data: {p}\n\n")).collect()
    }
}
