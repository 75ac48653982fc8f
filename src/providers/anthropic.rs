//! Anthropic Messages (`POST /v1/messages`).
//!
//! The request, the response and the stream's events are typed below, as the API
//! reference describes them, reduced to the fields this crate writes or reads. Thinking
//! blocks go back as they came: the thinking with its signature, a redacted block's
//! data.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed::{Flow, Step, TypedDecoder};
use super::{
    SseEvent, WireError, arguments_object, body_value, declared_tools, lenient, missing, parse_body,
    parse_event, parse_event_any, system_text, to_value,
};
use crate::ContentPart;
use crate::model::{
    AssistantTurn, ContentBlock, FinishReason, Message, ModelRequest, Reasoning, RequestNote, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::native::{NameRule, wire_name};

/// The `max_tokens` a request carries when it says none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1_024;
/// The budget sent for thinking "on" without an amount.
const DEFAULT_THINKING_BUDGET: u32 = 2_048;

// ---------------------------------------------------------------------------------------
// The request

/// A request body: what this crate sends Anthropic (its `None` fields are left out:
/// [`body_value`]), and what the gateway reads from a client (owned: a request is read
/// once). Read, the fields not typed here (`top_k`, `service_tier`, `container`, …) are
/// skipped, and so is `thinking`, which this crate only writes.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct MessagesRequest<'a> {
    #[serde(default)]
    pub(crate) model: Cow<'a, str>,
    /// Always written (the API requires one); a client may leave it out.
    #[serde(default)]
    pub(crate) max_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) temperature: Option<f64>,
    #[serde(skip_deserializing)]
    pub(crate) thinking: Option<ThinkingParam>,
    #[serde(default)]
    pub(crate) system: Option<Content<'a, ResultBlock<'a>>>,
    pub(crate) messages: Vec<MessageParam<'a>>,
    /// The declarations: the protocol's, as they are; a client's, read as `ToolParam`s
    /// by the gateway.
    #[serde(default)]
    pub(crate) tools: Option<Cow<'a, Value>>,
    #[serde(default)]
    pub(crate) tool_choice: Option<ToolChoiceParam<'a>>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    /// This and the next two: what a client may send and this crate does not.
    #[serde(default)]
    pub(crate) top_p: Option<f64>,
    #[serde(default)]
    pub(crate) stop_sequences: Option<Vec<Cow<'a, str>>>,
    #[serde(default)]
    pub(crate) metadata: Option<Metadata<'a>>,
}

/// `metadata`: of its fields, the end user's id.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Metadata<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_id: Option<Cow<'a, str>>,
}

/// `{"type": "enabled", "budget_tokens": …}`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "enabled")]
pub(crate) struct ThinkingParam {
    budget_tokens: u32,
}

/// A string, or blocks `B`: a message's content, `system`, a tool result's content.
/// This crate writes blocks; a client may send either.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content<'a, B> {
    Text(Cow<'a, str>),
    Blocks(Vec<B>),
}

/// A declared tool: a client tool (`type` `custom` or none, with an `input_schema`), or
/// one of Anthropic's own (`web_search_…`, `bash_…`), which has a `type` and no
/// `input_schema`.
#[cfg(feature = "gateway")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ToolParam<'a> {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<Cow<'a, str>>,
    pub(crate) name: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<Value>,
}

/// `{"type": "auto" | "any" | "none" | "tool", "name"?, "disable_parallel_tool_use"?}`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ToolChoiceParam<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: ToolChoiceType,
    /// The tool, for `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolChoiceType {
    Auto,
    None,
    Any,
    Tool,
}

/// A message of the request: user and assistant alternate.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct MessageParam<'a> {
    pub(crate) role: MessageRole,
    pub(crate) content: Content<'a, BlockParam<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MessageRole {
    User,
    Assistant,
}

/// A content block of the request, by `type`. Read, a thinking block's fields may be
/// left out, and a block of another type (`image`, `document`, …) is `Other`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockParam<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Thinking {
        #[serde(default)]
        thinking: Cow<'a, str>,
        #[serde(default)]
        signature: Cow<'a, str>,
    },
    RedactedThinking {
        #[serde(default)]
        data: Cow<'a, str>,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        /// The arguments, an object (`{}` when left out).
        #[serde(default = "empty_object")]
        input: Value,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        /// Always written, as blocks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Content<'a, ResultBlock<'a>>>,
        /// Always written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    /// Never written.
    #[serde(other)]
    Other,
}

/// `{}`.
fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A block of a tool result's content (and of `system`, as a client may send it). Read,
/// a text block's text may be left out, and a block of another type is `Other`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResultBlock<'a> {
    Text {
        #[serde(default)]
        text: Cow<'a, str>,
    },
    Image {
        #[serde(default)]
        source: ImageSource<'a>,
    },
    /// Never written.
    #[serde(other)]
    Other,
}

/// `{"type": "base64", "media_type", "data"}`. Read, only the two fields are: a source
/// of another type (`url`, `file`) reads with them empty.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename = "base64")]
pub(crate) struct ImageSource<'a> {
    #[serde(default)]
    media_type: Cow<'a, str>,
    #[serde(default)]
    data: Cow<'a, str>,
}

#[cfg(feature = "gateway")]
impl<'a, B> Content<'a, B> {
    /// The blocks (a string is one block, made by `block`).
    pub(crate) fn into_blocks(self, block: impl FnOnce(Cow<'a, str>) -> B) -> Vec<B> {
        match self {
            Content::Text(text) => vec![block(text)],
            Content::Blocks(blocks) => blocks,
        }
    }
}

#[cfg(feature = "gateway")]
impl Content<'_, ResultBlock<'_>> {
    /// The text: a string as it is, text blocks joined with `separator`.
    pub(crate) fn text(&self, separator: &str) -> Cow<'_, str> {
        match self {
            Content::Text(text) => Cow::Borrowed(text),
            Content::Blocks(blocks) => Cow::Owned(
                blocks
                    .iter()
                    .filter_map(|block| match block {
                        ResultBlock::Text { text } => Some(text.as_ref()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(separator),
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The response

/// A response body (`{"type": "message", …}`, or `{"type": "error", …}`), and the
/// message a stream's `message_start` carries. Read leniently from a provider (a field of
/// the wrong type is read as absent); the gateway writes it. `stop_reason` and
/// `stop_sequence` are written even when `null`, as the API does.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct MessageBody {
    #[serde(deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient::tag", skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<BodyType>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<MessageRole>,
    #[serde(deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    #[serde(deserialize_with = "lenient::tagged_list", skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<Vec<ResponseBlock>>,
    #[serde(deserialize_with = "lenient::tag")]
    pub(crate) stop_reason: Option<StopReason>,
    #[serde(deserialize_with = "lenient::string")]
    pub(crate) stop_sequence: Option<String>,
    #[serde(deserialize_with = "lenient::present", skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BodyType {
    Message,
    Error,
    #[serde(other)]
    Other,
}

/// A content block of the response, by `type`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResponseBlock {
    Text {
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    Thinking {
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        thinking: Option<String>,
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    ToolUse {
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::json", skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
    },
    /// Server tools' blocks, citations, and block types added later (never written).
    #[serde(other)]
    Other,
}

/// `stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StopReason {
    EndTurn,
    StopSequence,
    PauseTurn,
    MaxTokens,
    ModelContextWindowExceeded,
    ToolUse,
    Refusal,
    /// Types added later (never written).
    #[serde(other)]
    Other,
}

impl StopReason {
    fn reason(self) -> Option<FinishReason> {
        match self {
            StopReason::EndTurn | StopReason::StopSequence | StopReason::PauseTurn => {
                Some(FinishReason::Stop)
            }
            StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => Some(FinishReason::Length),
            StopReason::ToolUse => Some(FinishReason::ToolCalls),
            StopReason::Refusal => Some(FinishReason::ContentFilter),
            StopReason::Other => None,
        }
    }
}

/// Token counts (a body's, `message_start`'s, `message_delta`'s). Not read by this
/// crate's decoder; read leniently all the same.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Usage {
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) input_tokens: Option<i64>,
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) output_tokens: Option<i64>,
}

/// An error body or event: `{"type": "error", "error": {"type", "message"}}` (or, from a
/// proxy, the type and message at the top). Read leniently; the gateway writes the
/// first form.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorPayload {
    #[serde(rename = "type", deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    #[serde(deserialize_with = "lenient::present", skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ApiError>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ApiError {
    #[serde(rename = "type", deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient::string", skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

impl ErrorPayload {
    fn into_error(self) -> WireError {
        let error = self.error.unwrap_or(ApiError { kind: self.kind, message: self.message });
        WireError::Provider { kind: error.kind, message: error.message.unwrap_or_default() }
    }
}

// ---------------------------------------------------------------------------------------
// The stream's events

/// The event types read; others (`message_start`, `ping`, types added later) are
/// skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EventKind {
    ContentBlockStart,
    ContentBlockDelta,
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Error,
}

/// An event as the gateway writes it: its payload, tagged with its `type` (which is
/// also the event's name, [`Event::name`]). The decoder reads each payload by the type.
#[cfg(feature = "gateway")]
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event<'a> {
    MessageStart { message: MessageBody },
    Ping,
    ContentBlockStart(BlockStart),
    ContentBlockDelta(BlockDeltaEvent<'a>),
    ContentBlockStop(BlockStop),
    MessageDelta(MessageDeltaEvent),
    MessageStop,
}

#[cfg(feature = "gateway")]
impl Event<'_> {
    /// The event's name (its `event:` line), its payload's `type`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Event::MessageStart { .. } => "message_start",
            Event::Ping => "ping",
            Event::ContentBlockStart(_) => "content_block_start",
            Event::ContentBlockDelta(_) => "content_block_delta",
            Event::ContentBlockStop(_) => "content_block_stop",
            Event::MessageDelta(_) => "message_delta",
            Event::MessageStop => "message_stop",
        }
    }
}

/// `content_block_start`: the block it opens is a content block as a response body has
/// them (a `tool_use` block's input is `{}` from the API; a proxy may send the whole
/// input here).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BlockStart {
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<i64>,
    #[serde(deserialize_with = "lenient::tagged", skip_serializing_if = "Option::is_none")]
    pub(crate) content_block: Option<ResponseBlock>,
}

/// `content_block_delta`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BlockDeltaEvent<'a> {
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::object")]
    pub(crate) delta: BlockDelta<'a>,
}

/// A block's next piece: its type, and the field that type has (`text_delta`: text;
/// `thinking_delta`: thinking; `signature_delta`: signature; `input_json_delta`:
/// partial_json). One structure for all, so that the hot path reads the event once.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BlockDelta<'a> {
    #[serde(rename = "type", deserialize_with = "lenient::tag", skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<DeltaType>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) thinking: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) signature: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) partial_json: Option<Cow<'a, str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DeltaType {
    TextDelta,
    ThinkingDelta,
    SignatureDelta,
    InputJsonDelta,
    /// `citations_delta`, and types added later (never written).
    #[serde(other)]
    Other,
}

/// `content_block_stop`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BlockStop {
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<i64>,
}

/// `message_delta`: how the message ended, and the usage.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct MessageDeltaEvent {
    #[serde(deserialize_with = "lenient::object")]
    pub(crate) delta: MessageDelta,
    #[serde(deserialize_with = "lenient::present", skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
}

/// `stop_reason` and `stop_sequence` are written even when `null`, as the API does.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct MessageDelta {
    #[serde(deserialize_with = "lenient::tag")]
    pub(crate) stop_reason: Option<StopReason>,
    #[serde(deserialize_with = "lenient::string")]
    pub(crate) stop_sequence: Option<String>,
}

// ---------------------------------------------------------------------------------------
// The codec

/// The `budget_tokens` a thinking option stands for (`None`: no thinking block).
fn thinking_budget(thinking: Option<Thinking>) -> Option<u32> {
    match thinking? {
        Thinking::Off => None,
        Thinking::On => Some(DEFAULT_THINKING_BUDGET),
        Thinking::Budget(budget) => Some(budget),
        Thinking::Effort(effort) => Some(effort.budget()),
    }
}

fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> ToolChoiceParam<'_> {
    let (kind, name) = match choice {
        ToolChoice::Auto => (ToolChoiceType::Auto, None),
        ToolChoice::None => {
            return ToolChoiceParam {
                kind: ToolChoiceType::None,
                name: None,
                disable_parallel_tool_use: None,
            };
        }
        ToolChoice::Required => (ToolChoiceType::Any, None),
        ToolChoice::Tool(name) => (ToolChoiceType::Tool, Some(wire_name(name, NameRule::Strict))),
        #[allow(unreachable_patterns)]
        _ => (ToolChoiceType::Auto, None),
    };
    ToolChoiceParam { kind, name, disable_parallel_tool_use: (parallel == Some(false)).then_some(true) }
}

/// A result's content as `tool_result` content blocks: text, JSON as text, images.
fn result_content(block: &ToolResultBlock) -> Vec<ResultBlock<'_>> {
    block
        .content
        .iter()
        .map(|part| match part {
            ContentPart::Image { mime_type, data_base64 } => {
                let source =
                    ImageSource { media_type: Cow::Borrowed(mime_type), data: Cow::Borrowed(data_base64) };
                ResultBlock::Image { source }
            }
            other => ResultBlock::Text { text: Cow::Owned(other.render_text()) },
        })
        .collect()
}

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let tools = declared_tools(request);
    let body = MessagesRequest {
        model: Cow::Borrowed(model),
        max_tokens: Some(request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        // As an `f32` is written: JSON numbers are read as `f64`s.
        temperature: request.options.temperature.map(f64::from),
        thinking: thinking_budget(request.options.thinking)
            .map(|budget_tokens| ThinkingParam { budget_tokens }),
        system: system_text(request).map(|system| Content::Text(Cow::Owned(system))),
        messages: messages(&request.messages),
        tools: tools.map(Cow::Borrowed),
        tool_choice: tools.map(|_| tool_choice(&request.tool_choice, request.parallel_tool_calls)),
        stream: stream.then_some(true),
        ..MessagesRequest::default()
    };
    body_value(&body)
}

/// Anthropic's rules with thinking: a budget of at least 1,024 tokens, below
/// `max_tokens`; no temperature (it must stay 1); tool choice `auto` or `none` only.
pub(crate) fn adjust(request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
    let Some(budget) = thinking_budget(request.options.thinking) else { return };
    if let Some(Thinking::Budget(asked)) = request.options.thinking
        && asked < MIN_THINKING_BUDGET
    {
        notes.push(RequestNote::new(
            "thinking",
            format!("a budget of {asked} is below Anthropic's minimum: {MIN_THINKING_BUDGET} sent"),
        ));
        request.options.thinking = Some(Thinking::Budget(MIN_THINKING_BUDGET));
    }
    let budget = budget.max(MIN_THINKING_BUDGET);
    let max_tokens = request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens <= budget {
        let raised = budget + DEFAULT_MAX_TOKENS;
        notes.push(RequestNote::new(
            "max_tokens",
            format!("{max_tokens} leaves no room after a thinking budget of {budget}: {raised} sent"),
        ));
        request.options.max_tokens = Some(raised);
    }
    if request.options.temperature.take().is_some() {
        notes.push(RequestNote::new("temperature", "Anthropic needs temperature 1 with thinking: not sent"));
    }
    if matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
        notes.push(RequestNote::new(
            "tool_choice",
            "Anthropic allows only `auto` or `none` with thinking: `auto` sent",
        ));
        request.tool_choice = ToolChoice::Auto;
    }
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    let response: MessageBody = parse_body(body)?;
    if response.kind == Some(BodyType::Error) {
        return Err(parse_body::<ErrorPayload>(body)?.into_error());
    }
    let content = response.content.ok_or_else(|| missing("`content` array"))?;
    let mut turn = AssistantTurn::new();
    for block in content {
        match block {
            ResponseBlock::Text { text } => turn.push_text(&text.unwrap_or_default()),
            ResponseBlock::Thinking { thinking, signature } => {
                turn.content
                    .push(ContentBlock::Reasoning(Reasoning::new(thinking.unwrap_or_default(), signature)));
            }
            ResponseBlock::RedactedThinking { data } => {
                turn.content.push(ContentBlock::Reasoning(Reasoning::redacted(data.unwrap_or_default())));
            }
            ResponseBlock::ToolUse { id, name, input } => {
                let input = match input {
                    None => String::new(),
                    // A string is taken as the JSON text it should have been.
                    Some(Value::String(text)) => text,
                    Some(other) => other.to_string(),
                };
                turn.content.push(ContentBlock::ToolCall(ToolCall::new(
                    id.unwrap_or_default(),
                    name.unwrap_or_default(),
                    input,
                )));
            }
            ResponseBlock::Other => {}
        }
    }
    turn.finish_reason = response.stop_reason.and_then(StopReason::reason);
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    to_value(&self::messages(messages))
}

/// The messages of the request. Messages alternate user / assistant: consecutive ones of
/// one side are merged; results come first in a user message.
fn messages(messages: &[Message]) -> Vec<MessageParam<'_>> {
    let mut out: Vec<(MessageRole, Vec<BlockParam<'_>>)> = Vec::new();
    for message in messages {
        let (role, mut blocks) = match message.role {
            Role::System => continue,
            Role::User => (MessageRole::User, vec![BlockParam::Text { text: message.text() }]),
            Role::Assistant => (MessageRole::Assistant, assistant_blocks(message)),
            Role::Tool => {
                let results: Vec<BlockParam<'_>> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolResult(result) => Some(BlockParam::ToolResult {
                            tool_use_id: Cow::Borrowed(&result.call_id),
                            content: Some(Content::Blocks(result_content(result))),
                            is_error: Some(result.is_error),
                        }),
                        _ => None,
                    })
                    .collect();
                if results.is_empty() {
                    (MessageRole::User, vec![BlockParam::Text { text: message.text() }])
                } else {
                    (MessageRole::User, results)
                }
            }
        };
        blocks.retain(|b| !matches!(b, BlockParam::Text { text } if text.is_empty()));
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, content)) if *last == role => content.append(&mut blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, mut blocks)| {
            blocks.sort_by_key(|b| !matches!(b, BlockParam::ToolResult { .. }));
            MessageParam { role, content: Content::Blocks(blocks) }
        })
        .collect()
}

/// An assistant message's blocks as Anthropic takes them back: reasoning unchanged.
fn assistant_blocks(message: &Message) -> Vec<BlockParam<'_>> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(BlockParam::Text { text: Cow::Borrowed(text) }),
            ContentBlock::Reasoning(r) if r.redacted => Some(BlockParam::RedactedThinking {
                data: Cow::Borrowed(r.signature.as_deref().unwrap_or_default()),
            }),
            ContentBlock::Reasoning(r) => Some(BlockParam::Thinking {
                thinking: Cow::Borrowed(&r.text),
                signature: Cow::Borrowed(r.signature.as_deref().unwrap_or_default()),
            }),
            ContentBlock::ToolCall(call) => Some(BlockParam::ToolUse {
                id: Cow::Borrowed(&call.id),
                name: Cow::Borrowed(&call.name),
                input: arguments_object(call),
            }),
            ContentBlock::ToolResult(_) => None,
        })
        .collect()
}

/// Decodes Messages stream events.
#[derive(Debug, Default)]
pub(crate) struct EventDecoder {
    /// Content block index → our call number, for the tool_use blocks still open.
    calls: HashMap<i64, usize>,
    /// Calls started so far.
    started: usize,
}

impl TypedDecoder<EventKind> for EventDecoder {
    fn read(&mut self, kind: EventKind, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Step {
        match kind {
            EventKind::ContentBlockStart => {
                let start: BlockStart = parse_event(event)?;
                let index = start.index.unwrap_or(-1);
                match start.content_block {
                    Some(ResponseBlock::ToolUse { id, name, input }) => {
                        let number = self.started;
                        self.started += 1;
                        // A second start at an open index ends the call there first.
                        if let Some(previous) = self.calls.insert(index, number) {
                            deltas.push(TurnDelta::ToolCallEnd { index: previous });
                        }
                        deltas.push(TurnDelta::ToolCallStart {
                            index: number,
                            id: id.unwrap_or_default(),
                            name: name.unwrap_or_default(),
                        });
                        // The start carries `input: {}`; a proxy that sends the whole
                        // input here sends no deltas.
                        if let Some(input) = input.filter(|i| i.as_object().is_some_and(|o| !o.is_empty())) {
                            deltas.push(TurnDelta::ToolCallArguments {
                                index: number,
                                fragment: input.to_string(),
                            });
                        }
                    }
                    Some(ResponseBlock::RedactedThinking { data }) => {
                        let data = data.unwrap_or_default();
                        deltas.push(TurnDelta::ReasoningBlock(Reasoning::redacted(data)));
                    }
                    Some(ResponseBlock::Text { text }) => {
                        if let Some(text) = text.filter(|t| !t.is_empty()) {
                            deltas.push(TurnDelta::Text(text));
                        }
                    }
                    _ => {}
                }
            }
            EventKind::ContentBlockDelta => {
                let event: BlockDeltaEvent<'_> = parse_event(event)?;
                let delta = event.delta;
                match delta.kind {
                    Some(DeltaType::TextDelta) => {
                        deltas.push(TurnDelta::Text(delta.text.unwrap_or_default().into_owned()));
                    }
                    Some(DeltaType::ThinkingDelta) => {
                        deltas.push(TurnDelta::Reasoning(delta.thinking.unwrap_or_default().into_owned()));
                    }
                    Some(DeltaType::SignatureDelta) => {
                        let signature = delta.signature.unwrap_or_default().into_owned();
                        deltas.push(TurnDelta::ReasoningSignature(signature));
                    }
                    Some(DeltaType::InputJsonDelta) => {
                        if let Some(&number) = self.calls.get(&event.index.unwrap_or(-1))
                            && let Some(fragment) = delta.partial_json.filter(|f| !f.is_empty())
                        {
                            deltas.push(TurnDelta::ToolCallArguments {
                                index: number,
                                fragment: fragment.into_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            EventKind::ContentBlockStop => {
                let stop: BlockStop = parse_event(event)?;
                // Removed: the call takes nothing more, and a repeated stop ends nothing.
                if let Some(number) = self.calls.remove(&stop.index.unwrap_or(-1)) {
                    deltas.push(TurnDelta::ToolCallEnd { index: number });
                }
            }
            EventKind::MessageDelta => {
                let message: MessageDeltaEvent = parse_event(event)?;
                if let Some(reason) = message.delta.stop_reason.and_then(StopReason::reason) {
                    deltas.push(TurnDelta::Finish(reason));
                }
            }
            EventKind::MessageStop => {
                parse_event_any::<IgnoredAny>(event)?;
                return Ok(Flow::End);
            }
            EventKind::Error => {
                let error: ErrorPayload = parse_event(event)?;
                return Ok(Flow::Failed(error.into_error()));
            }
        }
        Ok(Flow::More)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::providers::testing::{decode, events};
    use crate::providers::{Provider, WireFormat};

    fn start(index: usize, id: &str) -> TurnDelta {
        TurnDelta::ToolCallStart { index, id: id.into(), name: "f".into() }
    }

    #[test]
    fn events_named_in_their_payload_and_what_proxies_send() {
        let sse = events(&[
            r#"{"type":"message_start","message":{"id":"msg_1","content":[]}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"sig"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"ping"}"#,
            // A proxy that sends the whole input at the start.
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}}"#,
            // A second start at an open index ends the call there first.
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"content_block_delta","index":9,"delta":{"type":"input_json_delta","partial_json":"lost"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"something_new","index":[]}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"after the end"}}"#,
        ]);
        let (deltas, error) = decode(Provider::Anthropic, &sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                TurnDelta::ReasoningBlock(Reasoning::redacted("opaque")),
                TurnDelta::Reasoning("hm".into()),
                TurnDelta::ReasoningSignature("sig".into()),
                start(0, "t1"),
                TurnDelta::ToolCallArguments { index: 0, fragment: r#"{"a":1}"#.into() },
                TurnDelta::ToolCallEnd { index: 0 },
                start(1, "t2"),
                TurnDelta::ToolCallArguments { index: 1, fragment: "{}".into() },
                TurnDelta::ToolCallEnd { index: 1 },
                TurnDelta::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn errors() {
        let sse = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let (_, error) = decode(Provider::Anthropic, sse);
        assert_eq!(
            error,
            Some(WireError::Provider { kind: Some("overloaded_error".into()), message: "Overloaded".into() })
        );
        let (_, error) = decode(Provider::Anthropic, "event: ping\ndata: {\n\n");
        assert!(
            matches!(error, Some(WireError::NotJson { .. })),
            "an event skipped must still be JSON: {error:?}"
        );
        let body = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}});
        assert_eq!(
            Provider::Anthropic.parse_response(&body),
            Err(WireError::Provider { kind: Some("rate_limit_error".into()), message: "slow".into() })
        );
        let no_content = Provider::Anthropic.parse_response(&json!({"type": "message"})).unwrap_err();
        assert_eq!(no_content.to_string(), "unexpected response body: no `content` array");
    }

    #[test]
    fn bodies() {
        let body = json!({"type": "message", "stop_reason": "max_tokens", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}},
            {"text": "no type"},
            {"type": "text", "text": "Hi", "citations": null},
            {"type": "tool_use", "id": "a", "name": "f", "input": "{\"x\": 1}"},
            {"type": "tool_use", "id": "b", "name": "f"},
        ]});
        let turn = Provider::Anthropic.parse_response(&body).unwrap();
        assert_eq!(turn.reasoning().next(), Some(&Reasoning::new("t", Some("s".into()))));
        assert_eq!(turn.text(), "Hi");
        let arguments: Vec<&str> = turn.tool_calls().map(|c| c.arguments.as_str()).collect();
        assert_eq!(arguments, ["{\"x\": 1}", ""], "a string is the JSON text; no input is none");
        assert_eq!(turn.finish_reason, Some(FinishReason::Length));
    }

    #[test]
    fn request_bodies() {
        let turn = AssistantTurn::new()
            .with_reasoning("t", Some("s".into()))
            .with_text("")
            .with_tool_call(ToolCall::new("a", "f", "[1]"));
        let results = ToolResultBlock {
            call_id: "a".into(),
            name: "f".into(),
            content: vec![ContentPart::text("out")],
            is_error: false,
        };
        let mut request = ModelRequest::new(vec![
            Message::system("Be brief."),
            Message::user("hi"),
            Message::from_turn(turn),
            Message::user("and"),
            Message::with_content(Role::Tool, vec![ContentBlock::ToolResult(results)]),
        ]);
        request.tools = Some(json!([{"name": "f", "input_schema": {"type": "object"}}]));
        request.parallel_tool_calls = Some(false);
        request.options = crate::model::RequestOptions::default().thinking(Thinking::Budget(2000));
        assert_eq!(
            Provider::Anthropic.request_body(&request, "claude", false),
            json!({
                "model": "claude",
                "max_tokens": 4096,
                "thinking": {"type": "enabled", "budget_tokens": 2000},
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "t", "signature": "s"},
                        {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "out"}],
                         "is_error": false},
                        {"type": "text", "text": "and"},
                    ]},
                ],
                "tools": [{"name": "f", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            })
        );
        request.tool_choice = ToolChoice::None;
        let body = Provider::Anthropic.request_body(&request, "claude", true);
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        assert_eq!(body["stream"], true);
    }

    /// A body this crate writes reads back, with the same types, as itself (but for
    /// `thinking`, which is only written).
    #[test]
    fn a_request_body_reads_back_as_written() {
        let turn = AssistantTurn::new()
            .with_reasoning("t", Some("s".into()))
            .with_text("Let me see.")
            .with_tool_call(ToolCall::new("a", "f", r#"{"x": 1}"#));
        let result = ToolResultBlock {
            call_id: "a".into(),
            name: "f".into(),
            content: vec![ContentPart::text("out"), ContentPart::image("image/png", "iVBOR")],
            is_error: true,
        };
        let mut request = ModelRequest::new(vec![
            Message::system("Be brief."),
            Message::user("hi"),
            Message::from_turn(turn),
            Message::with_content(Role::Tool, vec![ContentBlock::ToolResult(result)]),
        ]);
        request.tools = Some(json!([{"name": "f", "input_schema": {"type": "object"}}]));
        request.tool_choice = ToolChoice::Tool("f".into());
        request.options = crate::model::RequestOptions::default().temperature(0.7).max_tokens(99);
        let body = Provider::Anthropic.request_body(&request, "claude", true);
        assert_eq!(body["temperature"], Value::from(0.7_f32), "an `f32`, widened as it always was");
        assert_eq!(body["messages"][2]["content"][0]["content"][1]["source"]["type"], "base64");
        let read: MessagesRequest<'_> = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(serde_json::to_string(&body_value(&read)).unwrap(), serde_json::to_string(&body).unwrap());
    }
}
