//! The Anthropic Messages front: `POST /v1/messages`.
//!
//! The request is read with the Messages types of the provider codec
//! ([`providers::anthropic`](crate::providers::anthropic)) into the same [`TurnRequest`]
//! the Chat Completions front makes (`tool_use` blocks become the assistant's calls,
//! `tool_result` blocks tool messages, `stop_sequences` `stop`, `metadata.user_id`
//! `user`); the reply is written with them too, as a `message` of `thinking`, `text` and
//! `tool_use` blocks, or as Anthropic's stream of named events. Fields of Anthropic's own
//! (`top_k`, `thinking`, `service_tier`, …) are not Chat Completions fields and are
//! dropped.

use std::borrow::Cow;

use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::reply::{Call, Finish, Piece};
use super::request::{Function, TurnRequest, result_message};
use super::upstream::{End, Item};
use super::{Front, GatewayError, Reply, json_body, sse};
use crate::model::{ContentBlock, Message, ToolCall, ToolChoice};
use crate::providers::anthropic::{
    BlockDelta, BlockDeltaEvent, BlockParam, BlockStart, BlockStop, BodyType, Content, DeltaType, Event,
    MessageBody, MessageDelta, MessageDeltaEvent, MessageRole, MessagesRequest, ResponseBlock, StopReason,
    ToolChoiceParam, ToolChoiceType, ToolParam, Usage,
};

/// The choice, and `parallel_tool_calls` (`false` when parallel use is disabled). A
/// `type` that is none of the four was refused as the request was read.
fn tool_choice(choice: ToolChoiceParam<'_>) -> Result<(ToolChoice, Option<bool>), GatewayError> {
    let parallel = (choice.disable_parallel_tool_use == Some(true)).then_some(false);
    let choice = match choice.kind {
        ToolChoiceType::Auto => ToolChoice::Auto,
        ToolChoiceType::Any => ToolChoice::Required,
        ToolChoiceType::None => ToolChoice::None,
        ToolChoiceType::Tool => match choice.name {
            Some(name) if !name.is_empty() => ToolChoice::Tool(name.into_owned()),
            _ => return Err(GatewayError::bad("a `tool` choice names no tool", "tool_choice".to_string())),
        },
    };
    Ok((choice, parallel))
}

/// The client's tools (the request's `tools`, kept as JSON), each read as a
/// [`ToolParam`]: only client tools are offered.
fn functions(tools: Option<Cow<'_, Value>>) -> Result<Vec<Function>, GatewayError> {
    let Some(tools) = tools else { return Ok(Vec::new()) };
    let tools: Vec<ToolParam<'_>> =
        serde_path_to_error::deserialize(tools.into_owned()).map_err(|error| {
            let path = error.path().to_string();
            let param = if path == "." { "tools".to_string() } else { format!("tools{path}") };
            GatewayError::bad(format!("the body is not a valid request: {}", error.inner()), param)
        })?;
    let mut functions = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        let kind = tool.kind.as_deref().unwrap_or("custom");
        if kind != "custom" && tool.input_schema.is_none() {
            let message = format!(
                "`{kind}` is one of Anthropic's own tools: \
                 the gateway offers only client tools (with an `input_schema`)"
            );
            return Err(GatewayError::bad(message, format!("tools[{i}]")));
        }
        functions.push(Function {
            name: tool.name.into_owned(),
            description: tool.description.map(Cow::into_owned).unwrap_or_default(),
            parameters: tool.input_schema.unwrap_or(Value::Null),
        });
    }
    Ok(functions)
}

/// The front-neutral request (a method of the provider's request type, written beside
/// the one front that reads a client's).
impl MessagesRequest<'_> {
    fn into_turn(self) -> Result<TurnRequest, GatewayError> {
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        if let Some(system) = &self.system {
            let text = system.text("\n\n");
            if !text.is_empty() {
                messages.push(Message::system(text));
            }
        }
        for (i, message) in self.messages.into_iter().enumerate() {
            match message.role {
                MessageRole::User => user_messages(i, message.content, &mut messages)?,
                MessageRole::Assistant => messages.push(assistant_message(i, message.content)?),
            }
        }
        let functions = functions(self.tools)?;
        let (tool_choice, parallel_tool_calls) = match self.tool_choice {
            Some(choice) => tool_choice(choice)?,
            None => (ToolChoice::Auto, None),
        };
        // The fields Chat Completions has too, under its names.
        let mut options = Map::new();
        if let Some(max_tokens) = self.max_tokens {
            options.insert("max_tokens".into(), max_tokens.into());
        }
        if let Some(temperature) = self.temperature {
            options.insert("temperature".into(), temperature.into());
        }
        if let Some(top_p) = self.top_p {
            options.insert("top_p".into(), top_p.into());
        }
        if let Some(stop) = self.stop_sequences.filter(|s| !s.is_empty()) {
            options.insert("stop".into(), stop.into());
        }
        if let Some(user) = self.metadata.and_then(|m| m.user_id) {
            options.insert("user".into(), user.into());
        }
        Ok(TurnRequest {
            model: self.model.into_owned(),
            messages,
            functions,
            tool_choice,
            parallel_tool_calls,
            stream: self.stream.unwrap_or(false),
            options,
        })
    }
}

/// A message's blocks (a string is one text block).
fn blocks<'a>(content: Content<'a, BlockParam<'a>>) -> Vec<BlockParam<'a>> {
    content.into_blocks(|text| BlockParam::Text { text })
}

/// A user message: a tool message for each `tool_result` (first, as Anthropic puts
/// them), then its text (left out when the message held only results). Blocks the
/// gateway does not carry (`image`, `document`, thinking) are dropped.
fn user_messages(
    index: usize,
    content: Content<'_, BlockParam<'_>>,
    out: &mut Vec<Message>,
) -> Result<(), GatewayError> {
    let mut texts = Vec::new();
    let mut results = 0;
    for (j, block) in blocks(content).into_iter().enumerate() {
        match block {
            BlockParam::Text { text } => texts.push(text),
            BlockParam::ToolResult { tool_use_id, content, is_error } => {
                let text = content.as_ref().map(|c| c.text("\n").into_owned()).unwrap_or_default();
                out.push(result_message(tool_use_id.into_owned(), text, is_error.unwrap_or(false)));
                results += 1;
            }
            BlockParam::ToolUse { .. } => {
                let param = format!("messages[{index}].content[{j}]");
                return Err(GatewayError::bad("a `tool_use` block belongs in an assistant message", param));
            }
            BlockParam::Thinking { .. } | BlockParam::RedactedThinking { .. } | BlockParam::Other => {}
        }
    }
    if !texts.is_empty() || results == 0 {
        out.push(Message::user(texts.join("\n\n")));
    }
    Ok(())
}

/// An assistant message: its text, then its calls (its thinking is dropped).
fn assistant_message(index: usize, content: Content<'_, BlockParam<'_>>) -> Result<Message, GatewayError> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for (j, block) in blocks(content).into_iter().enumerate() {
        match block {
            BlockParam::Text { text } => texts.push(text),
            BlockParam::ToolUse { id, name, input } => {
                let call = ToolCall::new(id.into_owned(), name.into_owned(), input.to_string());
                calls.push(ContentBlock::ToolCall(call));
            }
            BlockParam::ToolResult { .. } => {
                let param = format!("messages[{index}].content[{j}]");
                return Err(GatewayError::bad("a `tool_result` block belongs in a user message", param));
            }
            BlockParam::Thinking { .. } | BlockParam::RedactedThinking { .. } | BlockParam::Other => {}
        }
    }
    Ok(calls.into_iter().fold(Message::assistant(texts.join("\n\n")), Message::with_block))
}

impl Front for Frames {
    fn read(body: &[u8]) -> Result<(TurnRequest, Self), GatewayError> {
        let turn = json_body::<MessagesRequest<'static>>(body)?.into_turn()?;
        let frames = Frames::new(turn.model.clone());
        Ok((turn, frames))
    }

    fn error(error: &GatewayError) -> Response {
        anthropic_error(error)
    }

    fn frame(&mut self, item: Item) -> (String, bool) {
        Frames::frame(self, item)
    }

    fn body(&self, reply: Reply, end: &End) -> Value {
        self.message(reply, end)
    }
}

/// An error as Anthropic's API answers it.
fn anthropic_error(error: &GatewayError) -> Response {
    (error.http_status(), axum::Json(error.anthropic())).into_response()
}

/// The kind of a content block left open in a stream (a `tool_use` block opens and
/// closes with its call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

/// Writes Messages events and bodies for one reply.
pub(crate) struct Frames {
    id: String,
    model: String,
    /// Whether `message_start` was sent.
    began: bool,
    /// The block open in the stream, and its index.
    open: Option<(Open, usize)>,
    /// The index of the next block.
    next: usize,
}

impl Frames {
    /// The writer of a reply to a request for `model`, with a new `msg_…` id.
    fn new(model: String) -> Self {
        Frames {
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            model,
            began: false,
            open: None,
            next: 0,
        }
    }

    /// The events for `item`, and whether they end the stream.
    fn frame(&mut self, item: Item) -> (String, bool) {
        let mut out = String::new();
        if !self.began {
            self.began = true;
            let message =
                self.envelope(Vec::new(), None, Usage { input_tokens: Some(0), output_tokens: Some(0) });
            push(&mut out, &Event::MessageStart { message });
            push(&mut out, &Event::Ping);
        }
        let last = match item {
            Item::Piece(Piece::Text(text)) => {
                if !text.is_empty() {
                    let index = self.open_block(Open::Text, &mut out);
                    let delta = BlockDelta {
                        kind: Some(DeltaType::TextDelta),
                        text: Some(Cow::Owned(text)),
                        ..BlockDelta::default()
                    };
                    push(&mut out, &block_delta(index, delta));
                }
                false
            }
            Item::Piece(Piece::Reasoning(text)) => {
                if !text.is_empty() {
                    let index = self.open_block(Open::Thinking, &mut out);
                    let delta = BlockDelta {
                        kind: Some(DeltaType::ThinkingDelta),
                        thinking: Some(Cow::Owned(text)),
                        ..BlockDelta::default()
                    };
                    push(&mut out, &block_delta(index, delta));
                }
                false
            }
            Item::Piece(Piece::Call(call)) => {
                self.close(&mut out);
                let index = self.start(tool_use(&call, empty_object()), &mut out);
                let delta = BlockDelta {
                    kind: Some(DeltaType::InputJsonDelta),
                    partial_json: Some(Cow::Borrowed(arguments_text(&call.arguments))),
                    ..BlockDelta::default()
                };
                push(&mut out, &block_delta(index, delta));
                push(&mut out, &block_stop(index));
                false
            }
            Item::End(end) => {
                self.close(&mut out);
                let delta = MessageDelta { stop_reason: Some(stop_reason(end.finish)), stop_sequence: None };
                let message_delta = MessageDeltaEvent { delta, usage: Some(usage(end.usage.as_ref())) };
                push(&mut out, &Event::MessageDelta(message_delta));
                push(&mut out, &Event::MessageStop);
                true
            }
            Item::Failed(error) => {
                out.push_str(&sse(Some("error"), &error.anthropic()));
                true
            }
            Item::Ready { .. } => false,
        };
        (out, last)
    }

    /// The index of an open block of `kind`: the one open, else a new one (the block
    /// open before, of the other kind, closed first).
    fn open_block(&mut self, kind: Open, out: &mut String) -> usize {
        if let Some((open, index)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(out);
        let block = match kind {
            Open::Text => ResponseBlock::Text { text: Some(String::new()) },
            Open::Thinking => {
                ResponseBlock::Thinking { thinking: Some(String::new()), signature: Some(String::new()) }
            }
        };
        let index = self.start(block, out);
        self.open = Some((kind, index));
        index
    }

    /// Starts the next block; its index.
    fn start(&mut self, block: ResponseBlock, out: &mut String) -> usize {
        let index = self.next;
        self.next += 1;
        let start = BlockStart { index: Some(wire_index(index)), content_block: Some(block) };
        push(out, &Event::ContentBlockStart(start));
        index
    }

    /// Closes the open block, if any.
    fn close(&mut self, out: &mut String) {
        if let Some((_, index)) = self.open.take() {
            push(out, &block_stop(index));
        }
    }

    /// A `message` of `content`: the body, or (empty) what `message_start` carries.
    fn envelope(
        &self,
        content: Vec<ResponseBlock>,
        stop_reason: Option<StopReason>,
        usage: Usage,
    ) -> MessageBody {
        MessageBody {
            id: Some(self.id.clone()),
            kind: Some(BodyType::Message),
            role: Some(MessageRole::Assistant),
            model: Some(self.model.clone()),
            content: Some(content),
            stop_reason,
            stop_sequence: None,
            usage: Some(usage),
        }
    }

    /// The `message` body.
    fn message(&self, reply: Reply, end: &End) -> Value {
        let mut content = Vec::with_capacity(reply.calls.len() + 2);
        if !reply.reasoning.is_empty() {
            content.push(ResponseBlock::Thinking {
                thinking: Some(reply.reasoning),
                signature: Some(String::new()),
            });
        }
        if !reply.text.is_empty() {
            content.push(ResponseBlock::Text { text: Some(reply.text) });
        }
        for call in &reply.calls {
            content.push(tool_use(call, arguments_json(&call.arguments)));
        }
        let body = self.envelope(content, Some(stop_reason(end.finish)), usage(end.usage.as_ref()));
        crate::providers::to_value(&body)
    }
}

/// Writes `event` to `out`, named by its type.
fn push(out: &mut String, event: &Event<'_>) {
    out.push_str(&sse(Some(event.name()), event));
}

/// A `content_block_delta` event.
fn block_delta(index: usize, delta: BlockDelta<'_>) -> Event<'_> {
    Event::ContentBlockDelta(BlockDeltaEvent { index: Some(wire_index(index)), delta })
}

/// A `content_block_stop` event.
fn block_stop(index: usize) -> Event<'static> {
    Event::ContentBlockStop(BlockStop { index: Some(wire_index(index)) })
}

/// A block index as the events carry it.
fn wire_index(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// A `tool_use` block of `call` with `input`.
fn tool_use(call: &Call, input: Value) -> ResponseBlock {
    ResponseBlock::ToolUse {
        id: Some(tool_use_id(&call.id)),
        name: Some(call.name.clone()),
        input: Some(input),
    }
}

/// A call's id as Anthropic writes them: `toolu_…` (`call_x` becomes `toolu_x`).
fn tool_use_id(id: &str) -> String {
    if id.starts_with("toolu_") {
        return id.to_string();
    }
    format!("toolu_{}", id.strip_prefix("call_").unwrap_or(id))
}

/// The arguments' JSON text (`{}` for none).
fn arguments_text(arguments: &str) -> &str {
    if arguments.trim().is_empty() { "{}" } else { arguments }
}

/// `{}`.
fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// The arguments as a JSON object (an empty one when they are not one).
fn arguments_json(arguments: &str) -> Value {
    match serde_json::from_str(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => empty_object(),
    }
}

/// Anthropic's `stop_reason`.
fn stop_reason(finish: Finish) -> StopReason {
    match finish {
        Finish::ToolCalls => StopReason::ToolUse,
        Finish::Length => StopReason::MaxTokens,
        Finish::Stop | Finish::ContentFilter => StopReason::EndTurn,
    }
}

/// The upstream's usage (Chat Completions' counts) as Anthropic's (0 for a count it did
/// not give).
fn usage(usage: Option<&Value>) -> Usage {
    let tokens = |field: &str| {
        let count = usage.and_then(|u| u.get(field)).and_then(Value::as_u64).unwrap_or(0);
        Some(i64::try_from(count).unwrap_or(i64::MAX))
    };
    Usage { input_tokens: tokens("prompt_tokens"), output_tokens: tokens("completion_tokens") }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::extract::State;
    use axum::http::HeaderMap;
    use serde_json::json;

    use super::*;
    use crate::ContentPart;
    use crate::model::{Role, ToolResultBlock};

    /// The route `POST /v1/messages`.
    async fn handle(
        state: State<Arc<super::super::Shared>>,
        headers: HeaderMap,
        body: super::super::RequestBody,
    ) -> Response {
        super::super::serve::<Frames>(state, headers, body).await
    }

    fn turn(body: Value) -> Result<TurnRequest, GatewayError> {
        json_body::<MessagesRequest>(body.to_string().as_bytes()).and_then(MessagesRequest::into_turn)
    }

    fn weather_tool() -> Value {
        json!({"name": "get_weather", "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}})
    }

    fn result_of(message: &Message) -> &ToolResultBlock {
        match message.content.as_slice() {
            [ContentBlock::ToolResult(result)] => result,
            other => panic!("not one tool result: {other:?}"),
        }
    }

    #[test]
    fn a_two_round_conversation_becomes_a_turn_request() {
        let body = json!({
            "model": "claude-x", "max_tokens": 512, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
            "stop_sequences": ["END"], "metadata": {"user_id": "u-7"}, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "system": [
                {"type": "text", "text": "You are terse."},
                {"type": "text", "text": "Use tools.", "cache_control": {"type": "ephemeral"}},
            ],
            "tools": [
                weather_tool(),
                {"type": "custom", "name": "get_time", "input_schema": {"type": "object"}},
            ],
            "messages": [
                {"role": "user", "content": "Weather and time in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Two tools.", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18 °C"},
                    {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
                        "content": [
                            {"type": "text", "text": "clock"},
                            {"type": "image", "source": {}},
                            {"type": "text", "text": "broken"},
                        ]},
                    {"type": "text", "text": "Thanks."},
                ]},
                {"role": "assistant", "content": "It is 18 °C."},
                {"role": "user", "content": [
                    {"type": "text", "text": "And"},
                    {"type": "text", "text": "tomorrow?"},
                ]},
            ],
        });
        let turn = turn(body).expect("a valid request");
        assert_eq!(turn.model, "claude-x");
        assert!(turn.stream);
        let roles: Vec<Role> = turn.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        assert_eq!(turn.messages[0].text(), "You are terse.\n\nUse tools.");
        assert_eq!(turn.messages[1].text(), "Weather and time in Paris?");
        let assistant = &turn.messages[2];
        assert_eq!(assistant.text(), "Checking.", "the thinking block is dropped");
        let calls: Vec<(&str, &str, &str)> =
            assistant.tool_calls().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("toolu_a", "get_weather", r#"{"city":"Paris"}"#), ("toolu_b", "get_time", "{}")]);
        let first = result_of(&turn.messages[3]);
        assert_eq!((first.call_id.as_str(), first.is_error), ("toolu_a", false));
        assert_eq!(first.content, vec![ContentPart::text("18 °C")]);
        let second = result_of(&turn.messages[4]);
        assert_eq!((second.call_id.as_str(), second.is_error), ("toolu_b", true));
        assert_eq!(second.content, vec![ContentPart::text("clock\nbroken")]);
        assert_eq!(turn.messages[5].text(), "Thanks.", "the results come before the message's text");
        assert_eq!(turn.messages[6].text(), "It is 18 °C.");
        assert_eq!(turn.messages[7].text(), "And\n\ntomorrow?");
        let names: Vec<&str> = turn.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["get_weather", "get_time"]);
        assert_eq!(turn.functions[0].description, "The weather in a city.");
        assert_eq!(turn.functions[0].parameters["properties"]["city"]["type"], "string");
        assert_eq!(turn.functions[1].description, "");
        assert_eq!(turn.tool_choice, ToolChoice::Auto);
        assert_eq!(turn.parallel_tool_calls, None);
        let expected =
            json!({"max_tokens": 512, "temperature": 0.5, "top_p": 0.9, "stop": ["END"], "user": "u-7"});
        assert_eq!(Value::Object(turn.options), expected, "top_k and thinking are dropped");
    }

    #[test]
    fn the_turn_reads_into_the_protocols_text_for_the_upstream() {
        let body = json!({"model": "m", "max_tokens": 10, "tools": [weather_tool()], "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3 °C"},
            ]},
        ]});
        let turn = turn(body).expect("a valid request");
        assert_eq!(turn.messages.len(), 3, "a user message of results only adds no empty user message");
        let protocol = crate::protocol::vcp::VcpProtocol::default();
        let offer = turn.offer().expect("an offer");
        let sent = turn.text_conversation(&protocol, &offer, None).expect("a conversation");
        let roles: Vec<Role> = sent.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool]);
        assert!(sent[2].text().contains("Oslo"), "{}", sent[2].text());
        assert!(sent[3].text().contains("-3 °C"), "{}", sent[3].text());
    }

    #[test]
    fn tool_choice_forms() {
        let choice = |choice: Value| {
            turn(json!({"model": "m", "messages": [], "tools": [weather_tool()], "tool_choice": choice}))
                .map(|t| (t.tool_choice, t.parallel_tool_calls))
        };
        assert_eq!(choice(json!({"type": "auto"})), Ok((ToolChoice::Auto, None)));
        assert_eq!(choice(json!({"type": "any"})), Ok((ToolChoice::Required, None)));
        assert_eq!(choice(json!({"type": "none"})), Ok((ToolChoice::None, None)));
        assert_eq!(
            choice(json!({"type": "tool", "name": "get_weather"})),
            Ok((ToolChoice::Tool("get_weather".into()), None))
        );
        assert_eq!(
            choice(json!({"type": "any", "disable_parallel_tool_use": true})),
            Ok((ToolChoice::Required, Some(false)))
        );
        assert_eq!(
            choice(json!({"type": "auto", "disable_parallel_tool_use": false})),
            Ok((ToolChoice::Auto, None))
        );
        let nameless = choice(json!({"type": "tool"})).unwrap_err();
        assert!(
            matches!(&nameless, GatewayError::BadRequest { param: Some(p), .. } if p == "tool_choice"),
            "{nameless}"
        );
        let unknown = choice(json!({"type": "required"})).unwrap_err();
        assert!(unknown.to_string().contains("`required`"), "{unknown}");
    }

    #[test]
    fn server_tools_and_misplaced_blocks_are_refused() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [weather_tool(), {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]});
        let error = turn(body).unwrap_err();
        assert!(
            matches!(&error, GatewayError::BadRequest { param: Some(p), .. } if p == "tools[1]"),
            "{error}"
        );
        assert!(error.to_string().contains("only client tools"), "{error}");
        assert_eq!(error.anthropic()["error"]["type"], "invalid_request_error");

        let misplaced = json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]});
        let error = turn(misplaced).unwrap_err();
        assert!(
            matches!(&error, GatewayError::BadRequest { param: Some(p), .. } if p == "messages[0].content[1]"),
            "{error}"
        );

        let error =
            turn(json!({"model": "m", "messages": [{"role": "system", "content": "x"}]})).unwrap_err();
        assert!(
            matches!(&error, GatewayError::BadRequest { param: Some(p), .. } if p.starts_with("messages[0]"))
        );
        let error = json_body::<MessagesRequest>(b"{\"model\": \"m\"").unwrap_err();
        assert_eq!(error.status(), 400);
    }

    fn call(index: usize, id: &str, name: &str, arguments: &str) -> Call {
        Call { index, id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn a_whole_reply_is_one_message() {
        let mut reply = Reply::default();
        for piece in [
            Piece::Reasoning("Think".into()),
            Piece::Text("Let me ".into()),
            Piece::Reasoning("ing.".into()),
            Piece::Text("check.".into()),
            Piece::Call(call(0, "call_abc", "get_weather", r#"{"city": "Paris"}"#)),
            Piece::Call(call(1, "native-7", "get_time", "")),
        ] {
            reply.add(piece);
        }
        let frames = Frames::new("claude-x".into());
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 33, "total_tokens": 153});
        let body = frames.message(reply, &End { finish: Finish::ToolCalls, usage: Some(usage) });
        assert!(body["id"].as_str().is_some_and(|id| id.starts_with("msg_") && id.len() == 36), "{body}");
        let expected = json!({
            "id": body["id"], "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "Thinking.", "signature": ""},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_abc", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_native-7", "name": "get_time", "input": {}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 120, "output_tokens": 33},
        });
        assert_eq!(body, expected);

        let plain = frames.message(
            Reply { text: "Hi.".into(), ..Reply::default() },
            &End { finish: Finish::Length, usage: None },
        );
        assert_eq!(plain["content"], json!([{"type": "text", "text": "Hi."}]));
        assert_eq!(plain["stop_reason"], "max_tokens");
        assert_eq!(plain["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
        assert_eq!(crate::providers::to_value(&stop_reason(Finish::Stop)), "end_turn");
        assert_eq!(crate::providers::to_value(&stop_reason(Finish::ContentFilter)), "end_turn");
        assert_eq!(tool_use_id("toolu_x"), "toolu_x");
    }

    /// The events of `text`: each one's name and data.
    fn parse_events(text: &str) -> Vec<(String, Value)> {
        text.split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| {
                let mut lines = event.lines();
                let name = lines.next().and_then(|l| l.strip_prefix("event: ")).expect("an event line");
                let data = lines.next().and_then(|l| l.strip_prefix("data: ")).expect("a data line");
                assert!(lines.next().is_none(), "one data line: {event}");
                (name.to_string(), serde_json::from_str(data).expect("JSON data"))
            })
            .collect()
    }

    #[test]
    fn a_stream_is_anthropics_event_sequence() {
        let mut frames = Frames::new("claude-x".into());
        let items = [
            Item::Piece(Piece::Reasoning("Hmm".into())),
            Item::Piece(Piece::Reasoning(", two.".into())),
            Item::Piece(Piece::Text("Checking".into())),
            Item::Piece(Piece::Text(" both.".into())),
            Item::Piece(Piece::Call(call(0, "call_a", "get_weather", r#"{"city":"Paris"}"#))),
            Item::Piece(Piece::Call(call(1, "call_b", "get_time", "{}"))),
            Item::End(End {
                finish: Finish::ToolCalls,
                usage: Some(json!({"prompt_tokens": 9, "completion_tokens": 4})),
            }),
        ];
        let mut text = String::new();
        let count = items.len();
        for (k, item) in items.into_iter().enumerate() {
            let (out, last) = frames.frame(item);
            assert_eq!(last, k + 1 == count, "only the end ends the stream");
            text.push_str(&out);
        }
        let events = parse_events(&text);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        for (name, data) in &events {
            assert_eq!(data["type"], name.as_str(), "the data's type is the event's name");
        }
        let start = &events[0].1["message"];
        assert!(start["id"].as_str().is_some_and(|id| id.starts_with("msg_")));
        assert_eq!(start["model"], "claude-x");
        assert_eq!(start["role"], "assistant");
        assert_eq!(start["content"], json!([]));
        assert_eq!(start["stop_reason"], Value::Null);
        let indices: Vec<u64> =
            events[2..16].iter().map(|(_, data)| data["index"].as_u64().expect("an index")).collect();
        assert_eq!(indices, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
        assert_eq!(
            events[2].1["content_block"],
            json!({"type": "thinking", "thinking": "", "signature": ""})
        );
        assert_eq!(events[3].1["delta"], json!({"type": "thinking_delta", "thinking": "Hmm"}));
        assert_eq!(events[4].1["delta"], json!({"type": "thinking_delta", "thinking": ", two."}));
        assert_eq!(events[6].1["content_block"], json!({"type": "text", "text": ""}));
        assert_eq!(events[7].1["delta"], json!({"type": "text_delta", "text": "Checking"}));
        assert_eq!(events[8].1["delta"], json!({"type": "text_delta", "text": " both."}));
        assert_eq!(
            events[10].1["content_block"],
            json!({"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}})
        );
        assert_eq!(
            events[11].1["delta"],
            json!({"type": "input_json_delta", "partial_json": r#"{"city":"Paris"}"#})
        );
        assert_eq!(events[13].1["content_block"]["id"], "toolu_b");
        assert_eq!(events[14].1["delta"]["partial_json"], "{}");
        let end = &events[16].1;
        assert_eq!(end["delta"], json!({"stop_reason": "tool_use", "stop_sequence": null}));
        assert_eq!(end["usage"]["output_tokens"], 4);
        assert_eq!(end["usage"]["input_tokens"], 9);
    }

    #[test]
    fn a_failure_mid_stream_is_the_last_event() {
        let mut frames = Frames::new("m".into());
        let (first, last) = frames.frame(Item::Piece(Piece::Text("Hel".into())));
        assert!(!last);
        let (second, last) = frames.frame(Item::Failed(GatewayError::Stream { reason: "cut".into() }));
        assert!(last);
        let events = parse_events(&format!("{first}{second}"));
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["message_start", "ping", "content_block_start", "content_block_delta", "error"]);
        let error = &events[4].1;
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "api_error");
        assert!(error["error"]["message"].as_str().is_some_and(|m| m.contains("cut")), "{error}");
    }

    #[test]
    fn a_text_only_stream_ends_its_one_block() {
        let mut frames = Frames::new("m".into());
        let mut text = String::new();
        for item in [
            Item::Piece(Piece::Text("Hi".into())),
            Item::Piece(Piece::Text(String::new())),
            Item::End(End { finish: Finish::Stop, usage: None }),
        ] {
            text.push_str(&frames.frame(item).0);
        }
        let events = parse_events(&text);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(events[5].1["delta"]["stop_reason"], "end_turn");
        assert_eq!(events[5].1["usage"]["output_tokens"], 0);
    }

    /// An upstream that answers every request with `text` (in chunks of a few
    /// characters) and records the bodies it was sent; its base URL.
    async fn fake_upstream(text: &'static str) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
        use axum::routing::post;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |body: axum::Json<Value>| {
                let record = Arc::clone(&record);
                async move {
                    record.lock().expect("the lock").push(body.0);
                    let chunk = |delta: Value, finish: Value| {
                        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "up",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                        format!("data: {chunk}\n\n")
                    };
                    let reasoning = json!({"role": "assistant", "reasoning_content": "Paris, so weather."});
                    let mut out = chunk(reasoning, Value::Null);
                    let chars: Vec<char> = text.chars().collect();
                    for piece in chars.chunks(7) {
                        let piece: String = piece.iter().collect();
                        out.push_str(&chunk(json!({"content": piece}), Value::Null));
                    }
                    out.push_str(&chunk(json!({}), json!("stop")));
                    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "up",
                        "choices": [],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}});
                    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
                    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], out)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let address = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{address}/v1"), seen)
    }

    async fn body_text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("a body");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    #[tokio::test]
    async fn a_request_goes_through_the_gateway_both_ways() {
        let reply = "Checking.\n<tool_call>\n\
                     {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        let (url, seen) = fake_upstream(reply).await;
        let config = super::super::GatewayConfig::new(url).protocol("hermes");
        let gateway = super::super::Gateway::new(config).expect("a gateway");
        let request = json!({"model": "claude-x", "max_tokens": 64, "system": "Be brief.", "stop_sequences": ["STOP"],
            "tools": [weather_tool()], "messages": [{"role": "user", "content": "Weather in Paris?"}]});
        let call = |stream: bool| {
            let mut body = request.clone();
            body["stream"] = json!(stream);
            handle(
                State(Arc::clone(&gateway.shared)),
                HeaderMap::new(),
                Ok(axum::body::Bytes::from(body.to_string())),
            )
        };

        let response = call(false).await;
        assert_eq!(response.status(), 200);
        let body: Value = serde_json::from_str(&body_text(response).await).expect("JSON");
        let content = &body["content"];
        assert_eq!(
            content[0],
            json!({"type": "thinking", "thinking": "Paris, so weather.", "signature": ""})
        );
        assert_eq!(content[1]["type"], "text");
        assert_eq!(content[1]["text"].as_str().map(str::trim), Some("Checking."));
        assert_eq!(content[2]["type"], "tool_use");
        assert_eq!(content[2]["name"], "get_weather");
        assert_eq!(content[2]["input"], json!({"city": "Paris"}));
        assert!(content[2]["id"].as_str().is_some_and(|id| id.starts_with("toolu_")), "{body}");
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(body["usage"], json!({"input_tokens": 50, "output_tokens": 20}));
        let sent = seen.lock().expect("the lock")[0].clone();
        assert_eq!(sent["max_tokens"], 64);
        assert_eq!(sent["stop"], json!(["STOP"]));
        let system = sent["messages"][0]["content"].as_str().unwrap_or_default();
        assert!(system.starts_with("Be brief.") && system.contains("get_weather"), "{system}");
        assert!(sent.get("tools").is_none(), "the tools went as the protocol's prompt");

        let response = call(true).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()[axum::http::header::CONTENT_TYPE], "text/event-stream");
        let events = parse_events(&body_text(response).await);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(names.last(), Some(&"message_stop"));
        let starts: Vec<&Value> = events
            .iter()
            .filter(|(name, _)| name == "content_block_start")
            .map(|(_, data)| &data["content_block"]["type"])
            .collect();
        assert_eq!(starts, [&json!("thinking"), &json!("text"), &json!("tool_use")]);
        let arguments: String =
            events.iter().filter_map(|(_, data)| data["delta"]["partial_json"].as_str()).collect();
        assert_eq!(serde_json::from_str::<Value>(&arguments).ok(), Some(json!({"city": "Paris"})));
        let end = events.iter().find(|(name, _)| name == "message_delta").map(|(_, data)| data.clone());
        assert_eq!(end.map(|e| e["delta"]["stop_reason"].clone()), Some(json!("tool_use")));

        let bad = request.as_object().cloned().map(|mut o| {
            o.insert("tools".into(), json!([{"type": "web_search_20250305", "name": "web_search"}]));
            Value::Object(o)
        });
        let response = handle(
            State(Arc::clone(&gateway.shared)),
            HeaderMap::new(),
            Ok(axum::body::Bytes::from(bad.unwrap_or_default().to_string())),
        )
        .await;
        assert_eq!(response.status(), 400);
        let error: Value = serde_json::from_str(&body_text(response).await).expect("JSON");
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert_eq!(seen.lock().expect("the lock").len(), 2, "a bad request never goes upstream");
    }

    /// What the gateway writes, the crate's own Anthropic reader reads back: the two
    /// sides are one set of types.
    #[test]
    fn a_written_body_reads_back_as_the_same_turn() {
        use crate::model::{AssistantTurn, FinishReason};
        use crate::providers::{Provider, WireFormat};

        let frames = Frames::new("claude-x".into());
        let reply = Reply {
            text: "Let me look.".into(),
            reasoning: "think".into(),
            calls: vec![
                call(0, "call_a", "get_weather", r#"{"city": "Paris"}"#),
                call(1, "call_b", "get_time", "not JSON"),
            ],
        };
        let usage = json!({"prompt_tokens": 3, "completion_tokens": 4});
        let body = frames.message(reply, &End { finish: Finish::ToolCalls, usage: Some(usage) });
        let turn = Provider::Anthropic.parse_response(&body).expect("a turn");
        let expected = AssistantTurn::new()
            .with_reasoning("think", Some(String::new()))
            .with_text("Let me look.")
            .with_tool_call(ToolCall::new("toolu_a", "get_weather", r#"{"city":"Paris"}"#))
            .with_tool_call(ToolCall::new("toolu_b", "get_time", "{}"));
        assert_eq!(turn.content, expected.content);
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));

        let cut = frames.message(Reply::default(), &End { finish: Finish::Length, usage: None });
        let turn = Provider::Anthropic.parse_response(&cut).expect("a turn");
        assert!(turn.content.is_empty(), "{cut}");
        assert_eq!(turn.finish_reason, Some(FinishReason::Length));
    }

    #[test]
    fn written_events_read_back_as_the_same_deltas() {
        use crate::model::{FinishReason, TurnDelta};
        use crate::providers::Provider;
        use crate::providers::testing::decode;

        let mut frames = Frames::new("claude-x".into());
        let mut stream = String::new();
        for item in [
            Item::Piece(Piece::Reasoning("hm".into())),
            Item::Piece(Piece::Text("Hi".into())),
            Item::Piece(Piece::Text(", you.".into())),
            Item::Piece(Piece::Call(call(0, "call_0", "get_weather", r#"{"city":"Paris"}"#))),
            Item::Piece(Piece::Call(call(1, "call_1", "get_time", ""))),
            Item::End(End { finish: Finish::ToolCalls, usage: None }),
        ] {
            stream.push_str(&frames.frame(item).0);
        }
        // Past `message_stop` the decoder reads nothing more: an event after it that it
        // took would show.
        let late = json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "late"}});
        stream.push_str(&format!("event: content_block_delta\ndata: {late}\n\n"));
        let (deltas, error) = decode(Provider::Anthropic, &stream);
        assert_eq!(error, None);
        let start = |index: usize, name: &str| TurnDelta::ToolCallStart {
            index,
            id: format!("toolu_{index}"),
            name: name.into(),
        };
        assert_eq!(
            deltas,
            [
                TurnDelta::Reasoning("hm".into()),
                TurnDelta::Text("Hi".into()),
                TurnDelta::Text(", you.".into()),
                start(0, "get_weather"),
                TurnDelta::ToolCallArguments { index: 0, fragment: r#"{"city":"Paris"}"#.into() },
                TurnDelta::ToolCallEnd { index: 0 },
                start(1, "get_time"),
                TurnDelta::ToolCallArguments { index: 1, fragment: "{}".into() },
                TurnDelta::ToolCallEnd { index: 1 },
                TurnDelta::Finish(FinishReason::ToolCalls),
            ]
        );

        // A failure: the error event reads back as the provider's error.
        let mut frames = Frames::new("m".into());
        let mut stream = frames.frame(Item::Piece(Piece::Text("Hel".into()))).0;
        stream.push_str(&frames.frame(Item::Failed(GatewayError::Timeout { seconds: 2.0 })).0);
        let (deltas, error) = decode(Provider::Anthropic, &stream);
        assert_eq!(deltas, [TurnDelta::Text("Hel".into())]);
        assert_eq!(
            error,
            Some(crate::providers::WireError::Provider {
                kind: Some("timeout_error".into()),
                message: "the upstream did not finish within 2 s".into(),
            })
        );
    }

    /// A client's request, read with the same types the crate writes its own requests
    /// with: the fields of Anthropic's own that Chat Completions has no place for are
    /// dropped (as the module says), those it has go upstream under its names, and
    /// blocks the gateway does not carry are skipped, not refused.
    #[test]
    fn a_client_request_drops_only_what_the_upstream_has_no_place_for() {
        let body = json!({
            "model": "claude-x", "max_tokens": 100, "temperature": 0.3, "top_p": 0.95, "top_k": 5,
            "stop_sequences": [], "metadata": {"user_id": "u-1", "other": true},
            "thinking": {"type": "adaptive"}, "service_tier": "auto", "container": "c-1",
            "mcp_servers": [], "a_field_added_later": {"x": [1]},
            "system": "Be brief.",
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"},
                       "cache_control": {"type": "ephemeral"}}],
            "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
            "messages": [
                {"role": "user", "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                    {"type": "document", "source": {"type": "text", "data": "doc"}},
                    {"type": "text", "text": "Weather?", "citations": null},
                ]},
                {"role": "assistant", "content": [
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "thinking", "thinking": "no signature"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather"},
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": null,
                    "content": [{"type": "image", "source": {"type": "base64"}}, {"type": "search_result"}]}]},
            ],
        });
        let request = turn(body).expect("a valid request");
        assert!(!request.stream);
        assert_eq!(request.tool_choice, ToolChoice::Tool("get_weather".into()));
        assert_eq!(request.parallel_tool_calls, Some(false));
        assert_eq!(request.functions.len(), 1);
        let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(request.messages[1].text(), "Weather?");
        let calls: Vec<&str> = request.messages[2].tool_calls().map(|c| c.arguments.as_str()).collect();
        assert_eq!(calls, ["{}"], "a `tool_use` without `input` has none");
        let result = result_of(&request.messages[3]);
        assert_eq!((result.content.clone(), result.is_error), (vec![ContentPart::text("")], false));
        let expected = json!({"max_tokens": 100, "temperature": 0.3, "top_p": 0.95, "user": "u-1"});
        assert_eq!(Value::Object(request.options), expected, "an empty `stop_sequences` is no `stop`");

        // A type the API does not have is refused, where it is.
        let bad = json!({"model": "m", "messages": [], "tool_choice": {"type": "required"}});
        let error = turn(bad).unwrap_err();
        assert!(
            matches!(&error, GatewayError::BadRequest { param: Some(p), .. } if p.starts_with("tool_choice")),
            "{error}"
        );
        let nameless = json!({"model": "m", "messages": [], "tools": [{"input_schema": {}}]});
        let error = turn(nameless).unwrap_err();
        assert!(
            matches!(&error, GatewayError::BadRequest { param: Some(p), message } if p == "tools[0]" && message.contains("`name`")),
            "{error}"
        );
        let not_a_list = json!({"model": "m", "messages": [], "tools": {"name": "x"}});
        let error = turn(not_a_list).unwrap_err();
        assert!(matches!(&error, GatewayError::BadRequest { param: Some(p), .. } if p == "tools"), "{error}");
    }
}
