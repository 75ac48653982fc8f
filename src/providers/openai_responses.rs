//! OpenAI Responses (`POST /v1/responses`).
//!
//! Requests are stateless (`store: false`): the next request carries the turn back as
//! input items, reasoning included (`include: ["reasoning.encrypted_content"]`), as the
//! API requires for calls made after reasoning. A reasoning item is kept as its
//! [`Reasoning::signature`]: a small JSON object of its id, its encrypted content and
//! whatever other fields it came with, all sent back unchanged; a call's item id
//! (`fc_…`) is kept as its [`ToolCall::signature`].
//!
//! The request, the output items and the stream's `response.*` events are typed below,
//! reduced to the fields this crate writes or reads.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::openai_chat::{FunctionName, ToolFields, result_text, tool_fields};
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

/// A request body (its `None` fields are left out: [`body_value`]).
#[derive(Debug, Serialize)]
struct ResponsesRequest<'a> {
    model: &'a str,
    input: Vec<InputItem<'a>>,
    /// Stateless: the next request carries the turn back.
    store: bool,
    include: [&'static str; 1],
    #[serde(flatten)]
    tools: Option<ToolFields<'a, FunctionName<'a>>>,
    max_output_tokens: Option<u32>,
    temperature: Option<f32>,
    reasoning: Option<ReasoningParam>,
    stream: Option<bool>,
}

#[derive(Debug, Serialize)]
struct ReasoningParam {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    /// Summaries are what the API shows of the reasoning.
    summary: &'static str,
}

/// An input item: a plain message, or a typed item.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    Message { role: &'static str, content: Cow<'a, str> },
    Typed(TypedItem<'a>),
}

/// An input item with a `type`: what the previous turns' output items become.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TypedItem<'a> {
    Message {
        role: &'static str,
        content: Vec<OutputText<'a>>,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        summary: Vec<SummaryText<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// The item's other fields, as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    FunctionCall {
        /// The item id (`fc_…`).
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "output_text")]
struct OutputText<'a> {
    text: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "summary_text")]
struct SummaryText<'a> {
    text: &'a str,
}

// ---------------------------------------------------------------------------------------
// The response and its items

/// A response body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseBody {
    error: Option<Value>,
    #[serde(deserialize_with = "lenient::tagged_list")]
    output: Option<Vec<OutputItem>>,
    #[serde(deserialize_with = "lenient::tag")]
    status: Option<Status>,
    #[serde(deserialize_with = "lenient::present")]
    incomplete_details: Option<IncompleteDetails>,
}

/// How a response ended: the `response` of the stream's last event (its output, already
/// streamed, is skipped).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseStatus {
    #[serde(deserialize_with = "lenient::tag")]
    status: Option<Status>,
    #[serde(deserialize_with = "lenient::present")]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Completed,
    Incomplete,
    Failed,
    Cancelled,
    /// `in_progress`, `queued`, and statuses added later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IncompleteDetails {
    #[serde(deserialize_with = "lenient::string")]
    reason: Option<String>,
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
        Status::Other => None,
    }
}

/// An output item, by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputItem {
    Message {
        #[serde(default, deserialize_with = "lenient::tagged_list")]
        content: Option<Vec<MessagePart>>,
    },
    FunctionCall {
        /// The item id (`fc_…`).
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::arguments_string")]
        arguments: Option<String>,
    },
    Reasoning {
        #[serde(default, deserialize_with = "lenient::list")]
        summary: Vec<SummaryPart>,
        /// Everything else, kept: the id, the encrypted content, and what else came.
        #[serde(flatten)]
        kept: ReasoningState,
    },
    #[serde(other)]
    Other,
}

/// A part of an output message, by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum MessagePart {
    OutputText {
        #[serde(default, deserialize_with = "lenient::string")]
        text: Option<String>,
    },
    Refusal {
        #[serde(default, deserialize_with = "lenient::string")]
        refusal: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SummaryPart {
    #[serde(deserialize_with = "lenient::string")]
    text: Option<String>,
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

/// The events read; others (`response.created`, `response.in_progress`,
/// `response.content_part.added`, …, and types added later) are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum EventKind {
    #[serde(rename = "response.output_item.added")]
    ItemAdded,
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPartAdded,
    #[serde(rename = "response.reasoning_summary_text.delta", alias = "response.reasoning_text.delta")]
    ReasoningDelta,
    #[serde(rename = "response.output_text.delta", alias = "response.refusal.delta")]
    TextDelta,
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta,
    #[serde(rename = "response.output_item.done")]
    ItemDone,
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Completed,
    #[serde(rename = "response.failed")]
    Failed,
    #[serde(rename = "error")]
    Error,
}

/// `response.output_item.added`, `response.output_item.done`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ItemEvent {
    #[serde(deserialize_with = "lenient::int")]
    output_index: Option<i64>,
    #[serde(deserialize_with = "lenient::tagged")]
    item: Option<OutputItem>,
}

/// The `*.delta` events.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeltaEvent<'a> {
    #[serde(borrow, deserialize_with = "lenient::text")]
    delta: Option<Cow<'a, str>>,
    /// The item the delta belongs to (a call's arguments).
    #[serde(borrow, deserialize_with = "lenient::text")]
    item_id: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::int")]
    output_index: Option<i64>,
}

/// `response.completed`, `response.incomplete`: the whole response, of which only how it
/// ended is read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CompletedEvent {
    #[serde(deserialize_with = "lenient::object")]
    response: ResponseStatus,
}

/// `response.failed`: the response, with its error.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FailedEvent {
    #[serde(deserialize_with = "lenient::json")]
    response: Option<Value>,
}

// ---------------------------------------------------------------------------------------
// The codec

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let prompt = request.tool_prompt.as_deref().filter(|p| !p.is_empty()).map(Message::system);
    let options = &request.options;
    let body = ResponsesRequest {
        model,
        input: input(prompt.iter().chain(&request.messages)),
        store: false,
        include: ["reasoning.encrypted_content"],
        tools: tool_fields(request, |name| name),
        max_output_tokens: options.max_tokens,
        temperature: options.temperature,
        reasoning: options.thinking.map(|thinking| ReasoningParam {
            effort: match thinking {
                Thinking::Effort(effort) => Some(effort.as_str()),
                _ => None,
            },
            summary: "auto",
        }),
        stream: stream.then_some(true),
    };
    body_value(&body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    let response: ResponseBody = parse_body(body)?;
    if let Some(error) = &response.error {
        return Err(provider_error(error));
    }
    let output = response.output.ok_or_else(|| missing("`output` array"))?;
    let mut turn = AssistantTurn::new();
    for item in output {
        match item {
            OutputItem::Reasoning { summary, kept } => {
                turn.content
                    .push(ContentBlock::Reasoning(Reasoning::new(summary_text(&summary), kept.signature())));
            }
            OutputItem::Message { content } => {
                for part in content.into_iter().flatten() {
                    match part {
                        MessagePart::OutputText { text } => turn.push_text(&text.unwrap_or_default()),
                        MessagePart::Refusal { refusal } => turn.push_text(&refusal.unwrap_or_default()),
                        MessagePart::Other => {}
                    }
                }
            }
            OutputItem::FunctionCall { id, call_id, name, arguments } => {
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
            Role::System => items.push(InputItem::Message { role: "system", content: message.text() }),
            Role::User => items.push(InputItem::Message { role: "user", content: message.text() }),
            Role::Assistant => {
                for block in &message.content {
                    let item = match block {
                        ContentBlock::Reasoning(reasoning) => {
                            let kept = ReasoningState::from_signature(reasoning.signature.as_deref());
                            let summary = if reasoning.text.is_empty() {
                                Vec::new()
                            } else {
                                vec![SummaryText { text: &reasoning.text }]
                            };
                            TypedItem::Reasoning {
                                id: kept.id,
                                summary,
                                encrypted_content: kept.encrypted_content,
                                extra: kept.extra,
                            }
                        }
                        ContentBlock::Text { text } => {
                            TypedItem::Message { role: "assistant", content: vec![OutputText { text }] }
                        }
                        ContentBlock::ToolCall(call) => TypedItem::FunctionCall {
                            id: call.signature.as_deref(),
                            call_id: &call.id,
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                        ContentBlock::ToolResult(_) => continue,
                    };
                    items.push(InputItem::Typed(item));
                }
            }
            Role::Tool => {
                let before = items.len();
                items.extend(message.content.iter().filter_map(|block| match block {
                    ContentBlock::ToolResult(result) => {
                        Some(InputItem::Typed(TypedItem::FunctionCallOutput {
                            call_id: &result.call_id,
                            output: result_text(result),
                        }))
                    }
                    _ => None,
                }));
                if items.len() == before {
                    items.push(InputItem::Message { role: "user", content: message.text() });
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
                    Some(OutputItem::Reasoning { kept, .. }) => {
                        if let Some(signature) = kept.signature() {
                            deltas.push(TurnDelta::ReasoningSignature(signature));
                        }
                    }
                    _ => {}
                }
            }
            EventKind::Completed => {
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
        }
        Ok(Flow::More)
    }
}

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
    }
}
