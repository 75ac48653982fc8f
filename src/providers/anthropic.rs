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

/// A request body (its `None` fields are left out: [`body_value`]).
#[derive(Debug, Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    temperature: Option<f32>,
    thinking: Option<ThinkingParam>,
    system: Option<String>,
    messages: Vec<MessageParam<'a>>,
    /// The protocol's declarations, as they are.
    tools: Option<&'a Value>,
    tool_choice: Option<ToolChoiceParam<'a>>,
    stream: Option<bool>,
}

/// `{"type": "enabled", "budget_tokens": …}`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "enabled")]
struct ThinkingParam {
    budget_tokens: u32,
}

#[derive(Debug, Serialize)]
struct ToolChoiceParam<'a> {
    #[serde(rename = "type")]
    kind: ToolChoiceType,
    /// The tool, for `tool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum ToolChoiceType {
    Auto,
    None,
    Any,
    Tool,
}

/// A message of the request: user and assistant alternate.
#[derive(Debug, Serialize)]
struct MessageParam<'a> {
    role: MessageRole,
    content: Vec<BlockParam<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum MessageRole {
    User,
    Assistant,
}

/// A content block of the request, by `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockParam<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        /// The arguments, an object.
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<ResultBlock<'a>>,
        is_error: bool,
    },
}

/// A block of a tool result's content.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultBlock<'a> {
    Text { text: String },
    Image { source: ImageSource<'a> },
}

/// `{"type": "base64", "media_type", "data"}`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "base64")]
struct ImageSource<'a> {
    media_type: &'a str,
    data: &'a str,
}

// ---------------------------------------------------------------------------------------
// The response

/// A response body (`{"type": "message", …}`, or `{"type": "error", …}`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageBody {
    #[serde(rename = "type", deserialize_with = "lenient::tag")]
    kind: Option<BodyType>,
    #[serde(deserialize_with = "lenient::tagged_list")]
    content: Option<Vec<ResponseBlock>>,
    #[serde(deserialize_with = "lenient::tag")]
    stop_reason: Option<StopReason>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum BodyType {
    Error,
    #[serde(other)]
    Other,
}

/// A content block of the response, by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseBlock {
    Text {
        #[serde(default, deserialize_with = "lenient::string")]
        text: Option<String>,
    },
    Thinking {
        #[serde(default, deserialize_with = "lenient::string")]
        thinking: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default, deserialize_with = "lenient::string")]
        data: Option<String>,
    },
    ToolUse {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::json")]
        input: Option<Value>,
    },
    /// Server tools' blocks, citations, and block types added later.
    #[serde(other)]
    Other,
}

/// `stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StopReason {
    EndTurn,
    StopSequence,
    PauseTurn,
    MaxTokens,
    ModelContextWindowExceeded,
    ToolUse,
    Refusal,
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

/// An error body or event: `{"type": "error", "error": {"type", "message"}}` (or, from a
/// proxy, the type and message at the top).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorPayload {
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    message: Option<String>,
    #[serde(deserialize_with = "lenient::present")]
    error: Option<ApiError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiError {
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    message: Option<String>,
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

/// `content_block_start`: the block it opens is a content block as a response body has
/// them (a `tool_use` block's input is `{}` from the API; a proxy may send the whole
/// input here).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockStart {
    #[serde(deserialize_with = "lenient::int")]
    index: Option<i64>,
    #[serde(deserialize_with = "lenient::tagged")]
    content_block: Option<ResponseBlock>,
}

/// `content_block_delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockDeltaEvent<'a> {
    #[serde(deserialize_with = "lenient::int")]
    index: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::object")]
    delta: BlockDelta<'a>,
}

/// A block's next piece: its type, and the field that type has (`text_delta`: text;
/// `thinking_delta`: thinking; `signature_delta`: signature; `input_json_delta`:
/// partial_json). One structure for all, so that the hot path reads the event once.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockDelta<'a> {
    #[serde(rename = "type", deserialize_with = "lenient::tag")]
    kind: Option<DeltaType>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum DeltaType {
    TextDelta,
    ThinkingDelta,
    SignatureDelta,
    InputJsonDelta,
    /// `citations_delta`, and types added later.
    #[serde(other)]
    Other,
}

/// `content_block_stop`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockStop {
    #[serde(deserialize_with = "lenient::int")]
    index: Option<i64>,
}

/// `message_delta`: how the message ended (and its usage, not read).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageDeltaEvent {
    #[serde(deserialize_with = "lenient::object")]
    delta: MessageDelta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageDelta {
    #[serde(deserialize_with = "lenient::tag")]
    stop_reason: Option<StopReason>,
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
                ResultBlock::Image { source: ImageSource { media_type: mime_type, data: data_base64 } }
            }
            other => ResultBlock::Text { text: other.render_text() },
        })
        .collect()
}

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let tools = declared_tools(request);
    let body = MessagesRequest {
        model,
        max_tokens: request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        temperature: request.options.temperature,
        thinking: thinking_budget(request.options.thinking)
            .map(|budget_tokens| ThinkingParam { budget_tokens }),
        system: system_text(request),
        messages: messages(&request.messages),
        tools,
        tool_choice: tools.map(|_| tool_choice(&request.tool_choice, request.parallel_tool_calls)),
        stream: stream.then_some(true),
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
    let mut out: Vec<MessageParam<'_>> = Vec::new();
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
                            tool_use_id: &result.call_id,
                            content: result_content(result),
                            is_error: result.is_error,
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
            Some(last) if last.role == role => last.content.append(&mut blocks),
            _ => out.push(MessageParam { role, content: blocks }),
        }
    }
    for message in &mut out {
        message.content.sort_by_key(|b| !matches!(b, BlockParam::ToolResult { .. }));
    }
    out
}

/// An assistant message's blocks as Anthropic takes them back: reasoning unchanged.
fn assistant_blocks(message: &Message) -> Vec<BlockParam<'_>> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(BlockParam::Text { text: Cow::Borrowed(text) }),
            ContentBlock::Reasoning(r) if r.redacted => {
                Some(BlockParam::RedactedThinking { data: r.signature.as_deref().unwrap_or_default() })
            }
            ContentBlock::Reasoning(r) => Some(BlockParam::Thinking {
                thinking: &r.text,
                signature: r.signature.as_deref().unwrap_or_default(),
            }),
            ContentBlock::ToolCall(call) => {
                Some(BlockParam::ToolUse { id: &call.id, name: &call.name, input: arguments_object(call) })
            }
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
}
