//! OpenAI Responses (`POST /v1/responses`).
//!
//! Requests are stateless (`store: false`): the next request carries the turn back as
//! input items, reasoning included (`include: ["reasoning.encrypted_content"]`), as the
//! API requires for calls made after reasoning. A reasoning item is kept as its
//! [`Reasoning::signature`]: a small JSON object of its id, its encrypted content and
//! whatever other fields it came with, all sent back unchanged; a call's item id
//! (`fc_…`) is kept as its [`ToolCall::signature`].
//!
//! The request, the response and its output items, and the stream's `response.*` events
//! are typed below, reduced to the fields this crate writes or reads. The gateway's
//! Responses front reads a client's request and writes its replies with the same types:
//! what a provider sends is read leniently (see [`lenient`]), what a client sends
//! strictly, so that a malformed request is refused with the field at fault. A field
//! only the gateway writes is not read (`skip_deserializing`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::openai_chat::{
    ChatText, ChatTextPart, FunctionName, ToolChoiceParam, ToolFields, result_text, tool_fields,
};
use super::typed::{Flow, Step, TypedDecoder};
use super::{
    SseEvent, WireError, body_value, lenient, missing, parse_body, parse_event, parse_event_any,
    provider_error, to_value,
};
use crate::model::{
    AssistantTurn, ContentBlock, FinishReason, Message, ModelRequest, Reasoning, Role, Thinking, ToolCall,
    TurnDelta,
};

// ---------------------------------------------------------------------------------------
// The request

/// A request body: what this crate sends a provider (its `None` fields are left out:
/// [`body_value`]), and what the gateway reads from a client (owned: a request is read
/// once). `store`, `include` and `reasoning` are fields this crate sets; read, they stay
/// among [`extra`](Self::extra), with every field not named here.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ResponsesRequest<'a> {
    #[serde(default)]
    pub(crate) model: Cow<'a, str>,
    /// The system message (this crate sends its own as an input message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<Input<'a>>,
    /// Stateless: the next request carries the turn back.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) store: Option<bool>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) include: Option<[&'static str; 1]>,
    #[serde(flatten)]
    pub(crate) tools: ToolFields<'a, FunctionName<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<Cow<'a, str>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning: Option<ReasoningParam>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<bool>,
    /// The API's stored state, which this crate never uses (read, for the gateway to
    /// refuse it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) previous_response_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) conversation: Option<Value>,
    /// Every other field, as it is (`text`, `metadata`, `truncation`, …).
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ReasoningParam {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    /// Summaries are what the API shows of the reasoning.
    summary: &'static str,
}

/// `input`: a string (one user message), or a list of items (what this crate sends).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Input<'a> {
    Text(Cow<'a, str>),
    Items(Vec<InputItem<'a>>),
}

/// Read as its JSON type says, without the buffering of an untagged enum, so that an
/// error in an item names the item and its field (`input[2].content`).
impl<'de> Deserialize<'de> for Input<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InputVisitor<'a>(PhantomData<Input<'a>>);
        impl<'de, 'a> Visitor<'de> for InputVisitor<'a> {
            type Value = Input<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of input items")
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Input::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Input::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Input::Items(items))
            }
        }
        d.deserialize_any(InputVisitor(PhantomData))
    }
}

/// An input item: a message (`type` `message`, or none: `{"role", "content"}`), a
/// `reasoning`, `function_call` or `function_call_output` item, or, read from a client,
/// another kind (`item_reference`, a hosted tool's call, …) for the gateway to refuse.
/// One shape for every kind, each kind with its own fields: this crate writes each
/// kind's (see `input` below), the gateway checks that a client's item has them.
/// A reasoning item's `id`, `summary` and `encrypted_content`, and a call's item `id`,
/// are written, not read (the gateway drops reasoning and needs no item id): read, they
/// stay among [`extra`](Self::extra), with every field not named here.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct InputItem<'a> {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<Cow<'a, str>>,
    /// A reasoning item's id (`rs_…`), a call's item id (`fc_…`).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<Cow<'a, str>>,
    /// A message's text, or its parts (`input_text`, `output_text`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<ChatText<'a>>,
    /// A reasoning item's `summary_text` parts.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<Vec<ChatTextPart<'a>>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) encrypted_content: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<Cow<'a, str>>,
    /// A call's arguments, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Cow<'a, str>>,
    /// A call's result: text, or parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<ChatText<'a>>,
    /// Read: the item's other fields. Written: a reasoning item's other fields, as they
    /// came.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl<'a> InputItem<'a> {
    /// An empty item of type `kind`.
    fn of(kind: &'static str) -> Self {
        InputItem { kind: Some(Cow::Borrowed(kind)), ..InputItem::default() }
    }

    /// A plain message (no `type`).
    fn message(role: &'static str, text: Cow<'a, str>) -> Self {
        InputItem {
            role: Some(Cow::Borrowed(role)),
            content: Some(ChatText::Text(text)),
            ..InputItem::default()
        }
    }
}

/// A tool of a request's `tools`: a function (`name`, `description`, `parameters` and
/// `strict`, flat), or one of OpenAI's hosted tools (another `type`). How the gateway
/// reads a client's tools and repeats them in its responses; this crate's own
/// declarations are the native protocol's, sent as they are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ResponsesTool<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default)]
    pub(crate) name: Option<Cow<'a, str>>,
    /// `null` when the tool has none.
    #[serde(default)]
    pub(crate) description: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
    #[serde(default)]
    pub(crate) strict: Option<bool>,
}

// ---------------------------------------------------------------------------------------
// The response and its items

/// A response: a provider's body, of which `error`, `output`, `status` and
/// `incomplete_details` are read (leniently), and the `response` object the gateway
/// writes, whole or in the stream's events, with the fields of the request it repeats.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseBody<'a> {
    #[serde(skip_deserializing)]
    pub(crate) id: Cow<'a, str>,
    /// `response`.
    #[serde(skip_deserializing)]
    pub(crate) object: Cow<'a, str>,
    #[serde(skip_deserializing)]
    pub(crate) created_at: u64,
    #[serde(deserialize_with = "lenient::tag")]
    pub(crate) status: Option<Status>,
    /// `null` in a response the gateway writes (it answers an error as an error).
    pub(crate) error: Option<Value>,
    /// Why a response is `incomplete` (`null` otherwise).
    #[serde(deserialize_with = "lenient::present")]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    #[serde(skip_deserializing)]
    pub(crate) model: Cow<'a, str>,
    #[serde(deserialize_with = "lenient::tagged_list")]
    pub(crate) output: Option<Vec<OutputItem>>,
    /// `null` until the response is over.
    #[serde(skip_deserializing)]
    pub(crate) usage: Option<Usage>,
    #[serde(skip_deserializing)]
    pub(crate) parallel_tool_calls: Option<bool>,
    #[serde(skip_deserializing)]
    pub(crate) tool_choice: Option<ToolChoiceParam<'a, FunctionName<'a>>>,
    #[serde(skip_deserializing)]
    pub(crate) tools: Cow<'a, [ResponsesTool<'a>]>,
    #[serde(skip_deserializing)]
    pub(crate) temperature: Option<f64>,
    #[serde(skip_deserializing)]
    pub(crate) top_p: Option<f64>,
    #[serde(skip_deserializing)]
    pub(crate) max_output_tokens: Option<u64>,
    #[serde(skip_deserializing)]
    pub(crate) user: Option<Cow<'a, str>>,
}

/// A response's token counts, as the gateway writes them (a provider's are not read).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    pub(crate) input_tokens: u64,
    pub(crate) input_tokens_details: InputTokensDetails,
    pub(crate) output_tokens: u64,
    pub(crate) output_tokens_details: OutputTokensDetails,
    pub(crate) total_tokens: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct InputTokensDetails {
    pub(crate) cached_tokens: u64,
    pub(crate) cache_write_tokens: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct OutputTokensDetails {
    pub(crate) reasoning_tokens: u64,
}

/// How a response ended: the `response` of the stream's last event (its output, already
/// streamed, is skipped).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseStatus {
    #[serde(deserialize_with = "lenient::tag")]
    status: Option<Status>,
    #[serde(deserialize_with = "lenient::present")]
    incomplete_details: Option<IncompleteDetails>,
}

/// A response's or an item's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Completed,
    Incomplete,
    Failed,
    Cancelled,
    InProgress,
    /// `queued`, and statuses added later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct IncompleteDetails {
    #[serde(deserialize_with = "lenient::string")]
    pub(crate) reason: Option<String>,
}

/// The finish reason a response's status means.
fn finish_reason(
    status: Option<Status>,
    details: Option<&IncompleteDetails>,
    has_calls: bool,
) -> Option<FinishReason> {
    match status? {
        Status::Completed if has_calls => Some(FinishReason::ToolCalls),
        Status::Completed => Some(FinishReason::Stop),
        Status::Incomplete => match details.and_then(|d| d.reason.as_deref()) {
            Some("content_filter") => Some(FinishReason::ContentFilter),
            _ => Some(FinishReason::Length),
        },
        Status::Failed => Some(FinishReason::Error),
        Status::Cancelled => Some(FinishReason::Cancelled),
        Status::InProgress | Status::Other => None,
    }
}

/// An output item, by `type`. An item's `status` and a message's `id` and `role` are
/// written by the gateway, not read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    Message {
        #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
        status: Option<Status>,
        /// `assistant`.
        #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
        role: Option<&'static str>,
        #[serde(default, deserialize_with = "lenient::tagged_list")]
        content: Option<Vec<MessagePart>>,
    },
    FunctionCall {
        /// The item id (`fc_…`).
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::arguments_string")]
        arguments: Option<String>,
        #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
        status: Option<Status>,
    },
    /// Its id, encrypted content and other fields (but `type` and `summary`) are what is
    /// kept of it ([`ReasoningState`]).
    Reasoning {
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::list")]
        summary: Vec<SummaryPart>,
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    #[serde(other)]
    Other,
}

/// A part of an output message, by `type`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagePart {
    OutputText {
        #[serde(default, deserialize_with = "lenient::string")]
        text: Option<String>,
        /// Written empty by the gateway (it has none); not read.
        #[serde(default, skip_deserializing)]
        annotations: Vec<Value>,
        #[serde(default, skip_deserializing)]
        logprobs: Vec<Value>,
    },
    Refusal {
        #[serde(default, deserialize_with = "lenient::string")]
        refusal: Option<String>,
    },
    #[serde(other)]
    Other,
}

impl MessagePart {
    /// An `output_text` part.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway writes parts"))]
    pub(crate) fn output_text(text: impl Into<String>) -> Self {
        MessagePart::OutputText { text: Some(text.into()), annotations: Vec::new(), logprobs: Vec::new() }
    }
}

/// A part of a reasoning item's summary. Its `type` (`summary_text`) is written, not
/// read: a part is its text.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SummaryPart {
    #[serde(rename = "type", skip_deserializing, skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(deserialize_with = "lenient::string")]
    text: Option<String>,
}

impl SummaryPart {
    /// A `summary_text` part.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway writes parts"))]
    pub(crate) fn summary_text(text: impl Into<String>) -> Self {
        SummaryPart { kind: Some("summary_text"), text: Some(text.into()) }
    }
}

/// What is kept of a reasoning item, as its [`Reasoning::signature`] (a JSON object):
/// the id, the encrypted content, and any other field but `type` and `summary` (which
/// are written again from the reasoning).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct ReasoningState {
    #[serde(deserialize_with = "lenient::string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    encrypted_content: Option<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl ReasoningState {
    /// The signature it is kept as, if there is anything to keep.
    fn signature(&self) -> Option<String> {
        (self.id.is_some() || self.encrypted_content.is_some() || !self.extra.is_empty())
            .then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// What a signature holds (nothing, if it is not one).
    fn from_signature(signature: Option<&str>) -> ReasoningState {
        let mut state: ReasoningState = signature.and_then(|s| lenient::from_str(s).ok()).unwrap_or_default();
        state.extra.remove("type");
        state.extra.remove("summary");
        state
    }
}

/// The summary text of a reasoning item, its parts joined by blank lines.
fn summary_text(summary: &[SummaryPart]) -> String {
    summary.iter().map(|part| part.text.as_deref().unwrap_or_default()).collect::<Vec<_>>().join("\n\n")
}

// ---------------------------------------------------------------------------------------
// The stream's events

/// The events' types: those the gateway writes, and those the decoder reads (an output
/// item added or done, the deltas, how the response ended, an error); it skips the
/// others, and types added later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum EventKind {
    #[serde(rename = "response.created")]
    Created,
    #[serde(rename = "response.in_progress")]
    InProgress,
    #[serde(rename = "response.output_item.added")]
    ItemAdded,
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded,
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPartAdded,
    #[serde(rename = "response.reasoning_summary_text.delta", alias = "response.reasoning_text.delta")]
    ReasoningDelta,
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningDone,
    #[serde(rename = "response.reasoning_summary_part.done")]
    SummaryPartDone,
    #[serde(rename = "response.output_text.delta", alias = "response.refusal.delta")]
    TextDelta,
    #[serde(rename = "response.output_text.done")]
    TextDone,
    #[serde(rename = "response.content_part.done")]
    ContentPartDone,
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta,
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone,
    #[serde(rename = "response.output_item.done")]
    ItemDone,
    #[serde(rename = "response.completed")]
    Completed,
    #[serde(rename = "response.incomplete")]
    Incomplete,
    #[serde(rename = "response.failed")]
    Failed,
    #[serde(rename = "error")]
    Error,
}

/// An event as the gateway writes it: its type, its place in the stream, its payload.
#[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway writes events"))]
#[derive(Debug, Serialize)]
pub(crate) struct Event<T> {
    #[serde(rename = "type")]
    pub(crate) kind: EventKind,
    pub(crate) sequence_number: u64,
    #[serde(flatten)]
    pub(crate) data: T,
}

/// `response.output_item.added`, `response.output_item.done`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ItemEvent {
    #[serde(deserialize_with = "lenient::int")]
    pub(crate) output_index: Option<i64>,
    #[serde(deserialize_with = "lenient::tagged")]
    pub(crate) item: Option<OutputItem>,
}

/// The events of an item's text or arguments: the `*.delta` events, of which the
/// decoder reads the delta and the item it belongs to, and, written by the gateway, the
/// `*.done` events (the whole `text`, or a call's `name` and `arguments`) and a part's
/// `*_part.added`/`*_part.done` (the `part`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DeltaEvent<'a> {
    /// The item the event belongs to (a call's arguments: its `fc_…` id).
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) item_id: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) output_index: Option<i64>,
    /// A message's part.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) content_index: Option<i64>,
    /// A reasoning item's part.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) summary_index: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) delta: Option<Cow<'a, str>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Cow<'a, str>>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) part: Option<Part>,
    /// An `output_text` event's (the gateway has none: empty).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) logprobs: Option<Vec<Value>>,
}

/// The part a `*_part.added`/`*_part.done` event carries.
#[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway writes parts"))]
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Part {
    Message(MessagePart),
    Summary(SummaryPart),
}

/// `response.created`, `.in_progress`, `.completed`, `.incomplete`: the response. The
/// decoder reads only how it ended (`R` = [`ResponseStatus`]: its output was streamed);
/// the gateway writes it whole (`R` = [`ResponseBody`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, bound(deserialize = "R: Deserialize<'de> + Default"))]
pub(crate) struct CompletedEvent<R = ResponseStatus> {
    #[serde(deserialize_with = "lenient::object")]
    pub(crate) response: R,
}

/// `response.failed`: the response, with its error.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FailedEvent {
    #[serde(deserialize_with = "lenient::json")]
    response: Option<Value>,
}

/// `error`, as the gateway writes it (a provider's is read as it comes: any JSON).
#[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway writes events"))]
#[derive(Debug, Serialize)]
pub(crate) struct ErrorEvent<'a> {
    pub(crate) code: Cow<'a, str>,
    pub(crate) message: Cow<'a, str>,
    /// The field at fault (`null` when none is).
    pub(crate) param: Option<Cow<'a, str>>,
}

// ---------------------------------------------------------------------------------------
// The codec

/// A temperature as the `f64` the field holds, by its shortest decimal form: `0.7_f32`
/// goes as `0.7` (as an `f32` writes it), not `0.699999988079071`.
fn widen(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let prompt = request.tool_prompt.as_deref().filter(|p| !p.is_empty()).map(Message::system);
    let options = &request.options;
    let body = ResponsesRequest {
        model: Cow::Borrowed(model),
        input: Some(Input::Items(input(prompt.iter().chain(&request.messages)))),
        store: Some(false),
        include: Some(["reasoning.encrypted_content"]),
        tools: tool_fields(request, |name| name).unwrap_or_default(),
        max_output_tokens: options.max_tokens.map(u64::from),
        temperature: options.temperature.map(widen),
        reasoning: options.thinking.map(|thinking| ReasoningParam {
            effort: match thinking {
                Thinking::Effort(effort) => Some(effort.as_str()),
                _ => None,
            },
            summary: "auto",
        }),
        stream: stream.then_some(true),
        ..ResponsesRequest::default()
    };
    body_value(&body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    let response: ResponseBody<'_> = parse_body(body)?;
    if let Some(error) = &response.error {
        return Err(provider_error(error));
    }
    let output = response.output.ok_or_else(|| missing("`output` array"))?;
    let mut turn = AssistantTurn::new();
    for item in output {
        match item {
            OutputItem::Reasoning { id, summary, encrypted_content, extra } => {
                let kept = ReasoningState { id, encrypted_content, extra };
                turn.content
                    .push(ContentBlock::Reasoning(Reasoning::new(summary_text(&summary), kept.signature())));
            }
            OutputItem::Message { content, .. } => {
                for part in content.into_iter().flatten() {
                    match part {
                        MessagePart::OutputText { text, .. } => turn.push_text(&text.unwrap_or_default()),
                        MessagePart::Refusal { refusal } => turn.push_text(&refusal.unwrap_or_default()),
                        MessagePart::Other => {}
                    }
                }
            }
            OutputItem::FunctionCall { id, call_id, name, arguments, .. } => {
                let mut call = ToolCall::new(
                    call_id.unwrap_or_default(),
                    name.unwrap_or_default(),
                    arguments.unwrap_or_default(),
                );
                call.signature = id;
                turn.content.push(ContentBlock::ToolCall(call));
            }
            OutputItem::Other => {}
        }
    }
    let has_calls = turn.tool_calls().next().is_some();
    turn.finish_reason = finish_reason(response.status, response.incomplete_details.as_ref(), has_calls);
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    to_value(&input(messages))
}

/// The input items of `messages`.
fn input<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<InputItem<'a>> {
    let mut items = Vec::new();
    for message in messages {
        match message.role {
            Role::System => items.push(InputItem::message("system", message.text())),
            Role::User => items.push(InputItem::message("user", message.text())),
            Role::Assistant => {
                for block in &message.content {
                    let item = match block {
                        ContentBlock::Reasoning(reasoning) => {
                            let kept = ReasoningState::from_signature(reasoning.signature.as_deref());
                            let summary = if reasoning.text.is_empty() {
                                Vec::new()
                            } else {
                                vec![ChatTextPart::new("summary_text", reasoning.text.as_str())]
                            };
                            InputItem {
                                id: kept.id.map(Cow::Owned),
                                summary: Some(summary),
                                encrypted_content: kept.encrypted_content.map(Cow::Owned),
                                extra: kept.extra,
                                ..InputItem::of("reasoning")
                            }
                        }
                        ContentBlock::Text { text } => InputItem {
                            role: Some(Cow::Borrowed("assistant")),
                            content: Some(ChatText::Parts(vec![ChatTextPart::new(
                                "output_text",
                                text.as_str(),
                            )])),
                            ..InputItem::of("message")
                        },
                        ContentBlock::ToolCall(call) => InputItem {
                            id: call.signature.as_deref().map(Cow::Borrowed),
                            call_id: Some(Cow::Borrowed(&call.id)),
                            name: Some(Cow::Borrowed(&call.name)),
                            arguments: Some(Cow::Borrowed(&call.arguments)),
                            ..InputItem::of("function_call")
                        },
                        ContentBlock::ToolResult(_) => continue,
                    };
                    items.push(item);
                }
            }
            Role::Tool => {
                let before = items.len();
                items.extend(message.content.iter().filter_map(|block| match block {
                    ContentBlock::ToolResult(result) => Some(InputItem {
                        call_id: Some(Cow::Borrowed(&result.call_id)),
                        output: Some(ChatText::Text(Cow::Owned(result_text(result)))),
                        ..InputItem::of("function_call_output")
                    }),
                    _ => None,
                }));
                if items.len() == before {
                    items.push(InputItem::message("user", message.text()));
                }
            }
        }
    }
    items
}

/// Decodes Responses stream events (`response.*`).
#[derive(Debug, Default)]
pub(crate) struct EventDecoder {
    /// Call item id → (our call number, whether argument deltas came).
    calls: HashMap<String, (usize, bool)>,
    /// Call item ids by output index, for events that name only the index.
    by_index: HashMap<i64, String>,
    /// The call item of the last argument delta read, and its number: the next delta
    /// (one per token) is most likely of the same call, and is matched without a
    /// look in `calls`.
    last_call: Option<(String, usize)>,
    /// Summary parts of the reasoning item being written.
    summary_parts: usize,
    has_calls: bool,
}

impl EventDecoder {
    /// The number of the call a delta belongs to (the item its `item_id` names, else the
    /// item at its `output_index`); argument deltas are noted as seen.
    fn call_of(&mut self, delta: &DeltaEvent<'_>) -> Option<usize> {
        let id = match delta.item_id.as_deref() {
            Some(id) => id,
            None => self.by_index.get(&delta.output_index?)?.as_str(),
        };
        if let Some((last, number)) = &self.last_call
            && last == id
        {
            return Some(*number);
        }
        let (number, seen) = self.calls.get_mut(id)?;
        *seen = true;
        let number = *number;
        let mut last = self.last_call.take().map(|(last, _)| last).unwrap_or_default();
        last.clear();
        last.push_str(id);
        self.last_call = Some((last, number));
        Some(number)
    }
}

impl TypedDecoder<EventKind> for EventDecoder {
    fn read(&mut self, kind: EventKind, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Step {
        match kind {
            EventKind::ItemAdded => {
                let added: ItemEvent = parse_event(event)?;
                match added.item {
                    Some(OutputItem::FunctionCall { id, call_id, name, .. }) => {
                        let id = id.unwrap_or_default();
                        let number = self.calls.len();
                        // (An item id given again names the new call.)
                        self.last_call = None;
                        self.calls.insert(id.clone(), (number, false));
                        if let Some(index) = added.output_index {
                            self.by_index.insert(index, id.clone());
                        }
                        self.has_calls = true;
                        deltas.push(TurnDelta::ToolCallStart {
                            index: number,
                            id: call_id.unwrap_or_default(),
                            name: name.unwrap_or_default(),
                        });
                        deltas.push(TurnDelta::ToolCallSignature { index: number, signature: id });
                    }
                    Some(OutputItem::Reasoning { .. }) => self.summary_parts = 0,
                    _ => {}
                }
            }
            EventKind::SummaryPartAdded => {
                parse_event_any::<IgnoredAny>(event)?;
                if self.summary_parts > 0 {
                    deltas.push(TurnDelta::Reasoning("\n\n".into()));
                }
                self.summary_parts += 1;
            }
            EventKind::ReasoningDelta => {
                let delta: DeltaEvent<'_> = parse_event(event)?;
                if let Some(text) = delta.delta.filter(|t| !t.is_empty()) {
                    deltas.push(TurnDelta::Reasoning(text.into_owned()));
                }
            }
            EventKind::TextDelta => {
                let delta: DeltaEvent<'_> = parse_event(event)?;
                if let Some(text) = delta.delta.filter(|t| !t.is_empty()) {
                    deltas.push(TurnDelta::Text(text.into_owned()));
                }
            }
            EventKind::ArgumentsDelta => {
                let delta: DeltaEvent<'_> = parse_event(event)?;
                if let Some(number) = self.call_of(&delta) {
                    deltas.push(TurnDelta::ToolCallArguments {
                        index: number,
                        fragment: delta.delta.unwrap_or_default().into_owned(),
                    });
                }
            }
            EventKind::ItemDone => {
                let done: ItemEvent = parse_event(event)?;
                match done.item {
                    Some(OutputItem::FunctionCall { id, arguments, .. }) => {
                        if let Some(&(number, seen)) = self.calls.get(id.as_deref().unwrap_or_default()) {
                            if !seen {
                                // No argument deltas: the whole arguments are here.
                                deltas.push(TurnDelta::ToolCallArguments {
                                    index: number,
                                    fragment: arguments.unwrap_or_default(),
                                });
                            }
                            deltas.push(TurnDelta::ToolCallEnd { index: number });
                        }
                    }
                    Some(OutputItem::Reasoning { id, encrypted_content, extra, .. }) => {
                        let kept = ReasoningState { id, encrypted_content, extra };
                        if let Some(signature) = kept.signature() {
                            deltas.push(TurnDelta::ReasoningSignature(signature));
                        }
                    }
                    _ => {}
                }
            }
            EventKind::Completed | EventKind::Incomplete => {
                let completed: CompletedEvent = parse_event(event)?;
                let response = completed.response;
                if let Some(reason) =
                    finish_reason(response.status, response.incomplete_details.as_ref(), self.has_calls)
                {
                    deltas.push(TurnDelta::Finish(reason));
                }
                return Ok(Flow::End);
            }
            EventKind::Failed => {
                let failed: FailedEvent = parse_event(event)?;
                let response = failed.response.unwrap_or(Value::Null);
                let error = response.get("error").filter(|e| !e.is_null()).unwrap_or(&response);
                return Ok(Flow::Failed(provider_error(error)));
            }
            EventKind::Error => {
                let data: Value = parse_event_any(event)?;
                return Ok(Flow::Failed(provider_error(data.get("error").unwrap_or(&data))));
            }
            // Events of what is read from others: need only be JSON.
            EventKind::Created
            | EventKind::InProgress
            | EventKind::ContentPartAdded
            | EventKind::ContentPartDone
            | EventKind::ReasoningDone
            | EventKind::SummaryPartDone
            | EventKind::TextDone
            | EventKind::ArgumentsDone => {
                parse_event_any::<IgnoredAny>(event)?;
            }
        }
        Ok(Flow::More)
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ToolChoice;
    use crate::providers::testing::{decode, events};
    use crate::providers::{Provider, WireFormat};

    #[test]
    fn a_reasoning_item_goes_back_as_it_came() {
        let body = json!({"status": "completed", "output": [
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "status": "completed",
             "summary": [{"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "Hi"}, {"type": "refusal", "refusal": "!"},
                                            {"text": "no type"}]},
            {"type": "web_search_call", "id": "ws_1"},
            {"no": "type"},
            5
        ]});
        let turn = Provider::OpenAiResponses.parse_response(&body).unwrap();
        let reasoning = turn.reasoning().next().unwrap();
        assert_eq!(reasoning.text, "one\n\ntwo");
        let kept: Value = serde_json::from_str(reasoning.signature.as_deref().unwrap()).unwrap();
        assert_eq!(kept, json!({"id": "rs_1", "encrypted_content": "enc", "status": "completed"}));
        assert_eq!(turn.text(), "Hi!");
        assert_eq!(turn.finish_reason, Some(FinishReason::Stop));
        let items = Provider::OpenAiResponses.wire_messages(&[Message::from_turn(turn)]);
        assert_eq!(
            items[0],
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "one\n\ntwo"}],
                   "encrypted_content": "enc", "status": "completed"})
        );
        // A signature that is not one sends a bare reasoning item.
        let message = Message::from_turn(AssistantTurn::new().with_reasoning("r", Some("not json".into())));
        let items = Provider::OpenAiResponses.wire_messages(&[message]);
        assert_eq!(
            items[0],
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]})
        );
    }

    #[test]
    fn events_named_in_their_payload_and_calls_found_by_output_index() {
        let sse = events(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"1}"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"g"}}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"g","arguments":"{}"}}"#,
            r#"{"type":"response.something_new","whatever":[1]}"#,
            r#"{"type":"response.refusal.delta","delta":"no"}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}}"#,
            r#"{"type":"response.output_text.delta","delta":"after the end"}"#,
        ]);
        let (deltas, error) = decode(Provider::OpenAiResponses, &sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                TurnDelta::ToolCallStart { index: 0, id: "call_1".into(), name: "f".into() },
                TurnDelta::ToolCallSignature { index: 0, signature: "fc_1".into() },
                TurnDelta::ToolCallArguments { index: 0, fragment: "{\"a\":".into() },
                TurnDelta::ToolCallArguments { index: 0, fragment: "1}".into() },
                TurnDelta::ToolCallEnd { index: 0 },
                TurnDelta::ToolCallStart { index: 1, id: "call_2".into(), name: "g".into() },
                TurnDelta::ToolCallSignature { index: 1, signature: "fc_2".into() },
                // No argument deltas: the whole arguments come with the item.
                TurnDelta::ToolCallArguments { index: 1, fragment: "{}".into() },
                TurnDelta::ToolCallEnd { index: 1 },
                TurnDelta::Text("no".into()),
                TurnDelta::Finish(FinishReason::ContentFilter),
            ]
        );
    }

    #[test]
    fn reasoning_parts_and_their_signature() {
        let sse = "event: response.output_item.added\n\
                   data: {\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}}\n\n\
                   event: response.reasoning_summary_part.added\ndata: {}\n\n\
                   event: response.reasoning_summary_text.delta\ndata: {\"delta\":\"a\"}\n\n\
                   event: response.reasoning_summary_part.added\ndata: {}\n\n\
                   event: response.reasoning_text.delta\ndata: {\"delta\":\"b\"}\n\n\
                   event: response.output_item.done\n\
                   data: {\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"encrypted_content\":\"e\"}}\n\n\
                   event: response.completed\ndata: {\"response\":{\"status\":\"completed\"}}\n\n";
        let (deltas, error) = decode(Provider::OpenAiResponses, sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                TurnDelta::Reasoning("a".into()),
                TurnDelta::Reasoning("\n\n".into()),
                TurnDelta::Reasoning("b".into()),
                TurnDelta::ReasoningSignature(r#"{"id":"rs_1","encrypted_content":"e"}"#.into()),
                TurnDelta::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn errors() {
        let failed = "event: response.failed\n\
                      data: {\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
        let (_, error) = decode(Provider::OpenAiResponses, failed);
        assert_eq!(
            error,
            Some(WireError::Provider { kind: Some("server_error".into()), message: "boom".into() })
        );
        let error_event = events(&[r#"{"type":"error","code":"rate_limit","message":"slow down"}"#]);
        let (_, error) = decode(Provider::OpenAiResponses, &error_event);
        assert_eq!(
            error,
            Some(WireError::Provider { kind: Some("error".into()), message: "slow down".into() })
        );
        // An event the decoder skips must still be JSON.
        let (_, error) = decode(Provider::OpenAiResponses, "event: response.created\ndata: {\n\n");
        assert!(matches!(error, Some(WireError::NotJson { .. })), "{error:?}");
        let body = json!({"error": {"message": "bad", "type": "invalid_request_error"}, "output": []});
        assert!(matches!(Provider::OpenAiResponses.parse_response(&body), Err(WireError::Provider { .. })));
        let no_output = Provider::OpenAiResponses.parse_response(&json!({"output": {}})).unwrap_err();
        assert_eq!(no_output.to_string(), "unexpected response body: no `output` array");
    }

    /// The input items as this crate has always written them, key order included.
    #[test]
    fn input_items_keep_their_shape() {
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.signature = Some("fc_1".into());
        let turn = AssistantTurn::new()
            .with_reasoning("r", Some(r#"{"id":"rs_1","encrypted_content":"e","status":"completed"}"#.into()))
            .with_text("Hi")
            .with_tool_call(call);
        let result = crate::model::ToolResultBlock {
            call_id: "call_1".into(),
            name: "f".into(),
            content: vec![crate::ContentPart::text("ok")],
            is_error: false,
        };
        let messages = [
            Message::user("go"),
            Message::from_turn(turn),
            Message::with_content(Role::Tool, vec![ContentBlock::ToolResult(result)]),
        ];
        let items = Provider::OpenAiResponses.wire_messages(&messages);
        let items: Vec<String> = items.as_array().unwrap().iter().map(Value::to_string).collect();
        assert_eq!(
            items,
            [
                r#"{"role":"user","content":"go"}"#,
                r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"r"}],"encrypted_content":"e","status":"completed"}"#,
                r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}"#,
                r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}"#,
                r#"{"type":"function_call_output","call_id":"call_1","output":"ok"}"#,
            ]
        );
    }

    #[test]
    fn request_bodies() {
        let mut request = ModelRequest::new(vec![Message::user("hi")]);
        request.tools = Some(json!([{"type": "function", "name": "f"}]));
        request.tool_choice = ToolChoice::Required;
        request.options = crate::model::RequestOptions::default().max_tokens(64).thinking(Thinking::On);
        assert_eq!(
            Provider::OpenAiResponses.request_body(&request, "m", true),
            json!({
                "model": "m",
                "input": [{"role": "user", "content": "hi"}],
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "tools": [{"type": "function", "name": "f"}],
                "tool_choice": "required",
                "max_output_tokens": 64,
                "reasoning": {"summary": "auto"},
                "stream": true,
            })
        );
        // A temperature goes as the `f32` was written, though the field is an `f64`.
        request.options = crate::model::RequestOptions::default().temperature(0.7);
        let body = Provider::OpenAiResponses.request_body(&request, "m", false);
        assert_eq!(body["temperature"], json!(0.7));
        assert_eq!(serde_json::to_string(&body["temperature"]).unwrap(), "0.7");
    }
}
