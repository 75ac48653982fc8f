//! The Anthropic Messages front: `POST /v1/messages`.
//!
//! The request is read into the same [`TurnRequest`] the Chat Completions front makes
//! (`tool_use` blocks become the assistant's calls, `tool_result` blocks tool messages,
//! `stop_sequences` `stop`, `metadata.user_id` `user`); the reply comes back as a
//! `message` of `thinking`, `text` and `tool_use` blocks, or as Anthropic's stream of
//! named events. Fields of Anthropic's own (`top_k`, `thinking`, `service_tier`, …) are
//! not Chat Completions fields and are dropped.

use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::reply::{Call, Finish, Piece};
use super::request::{Function, TurnRequest};
use super::upstream::{End, Item};
use super::{Front, GatewayError, Reply, json_body, sse};
use crate::ContentPart;
use crate::model::{ContentBlock, Message, Role, ToolCall, ToolChoice, ToolResultBlock};

/// A Messages request, as far as the gateway reads it; other fields are Anthropic's and
/// are dropped.
#[derive(Debug, Deserialize)]
struct MessagesRequest {
    #[serde(default)]
    model: String,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    system: Option<TextContent>,
    messages: Vec<AnthropicMessage>,
    #[serde(default)]
    tools: Vec<AnthropicTool>,
    #[serde(default)]
    tool_choice: Option<AnthropicToolChoice>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

/// `metadata`: the end user's id goes upstream as `user`.
#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    user_id: Option<String>,
}

/// Text given as a string or as blocks, of which the text ones are read (`system`, a
/// `tool_result`'s `content`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TextContent {
    Text(String),
    Blocks(Vec<TextBlockIn>),
}

/// A block of [`TextContent`]: its text, if it is a text block.
#[derive(Debug, Deserialize)]
struct TextBlockIn {
    #[serde(default)]
    text: Option<String>,
}

impl TextContent {
    /// The text, text blocks joined with `separator`.
    fn text(&self, separator: &str) -> String {
        match self {
            TextContent::Text(text) => text.clone(),
            TextContent::Blocks(blocks) => {
                blocks.iter().filter_map(|b| b.text.as_deref()).collect::<Vec<_>>().join(separator)
            }
        }
    }
}

/// A message of `messages`: Anthropic has no system or tool role.
#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum AnthropicMessage {
    User { content: MessageContent },
    Assistant { content: MessageContent },
}

/// A message's content: a string, or blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum MessageContent {
    Text(String),
    Blocks(Vec<BlockIn>),
}

impl MessageContent {
    /// The blocks (a string is one text block).
    fn into_blocks(self) -> Vec<BlockIn> {
        match self {
            MessageContent::Text(text) => vec![BlockIn::Text { text }],
            MessageContent::Blocks(blocks) => blocks,
        }
    }
}

/// A content block of a message; those the gateway does not carry (`thinking`,
/// `redacted_thinking`, `image`, `document`, …) are read as `Other` and dropped.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockIn {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default = "empty_object")]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<TextContent>,
        #[serde(default)]
        is_error: Option<bool>,
    },
    #[serde(other)]
    Other,
}

/// `{}`.
fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// A tool of `tools`: a client tool (`type` `custom` or none), or one of Anthropic's
/// own (`web_search_…`, `bash_…`), which has a `type` and no `input_schema`.
#[derive(Debug, Deserialize)]
struct AnthropicTool {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
}

/// `tool_choice`: `{"type": "auto" | "any" | "none" | "tool", "name"?, "disable_parallel_tool_use"?}`.
#[derive(Debug, Deserialize)]
struct AnthropicToolChoice {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    disable_parallel_tool_use: Option<bool>,
}

impl AnthropicToolChoice {
    /// The choice, and `parallel_tool_calls` (`false` when parallel use is disabled).
    fn read(self) -> Result<(ToolChoice, Option<bool>), GatewayError> {
        let param = || "tool_choice".to_string();
        let choice = match self.kind.as_str() {
            "auto" => ToolChoice::Auto,
            "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "tool" => match self.name {
                Some(name) if !name.is_empty() => ToolChoice::Tool(name),
                _ => return Err(GatewayError::bad("a `tool` choice names no tool", param())),
            },
            other => {
                let message = format!("`{other}` is not a tool choice (auto, any, none or tool)");
                return Err(GatewayError::bad(message, param()));
            }
        };
        let parallel = (self.disable_parallel_tool_use == Some(true)).then_some(false);
        Ok((choice, parallel))
    }
}

impl MessagesRequest {
    /// The front-neutral request.
    fn into_turn(self) -> Result<TurnRequest, GatewayError> {
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        if let Some(system) = &self.system {
            let text = system.text("\n\n");
            if !text.is_empty() {
                messages.push(Message::system(text));
            }
        }
        for (i, message) in self.messages.into_iter().enumerate() {
            match message {
                AnthropicMessage::User { content } => user_messages(i, content, &mut messages)?,
                AnthropicMessage::Assistant { content } => messages.push(assistant_message(i, content)?),
            }
        }
        let mut functions = Vec::with_capacity(self.tools.len());
        for (i, tool) in self.tools.into_iter().enumerate() {
            let kind = tool.kind.as_deref().unwrap_or("custom");
            if kind != "custom" && tool.input_schema.is_none() {
                let message = format!(
                    "`{kind}` is one of Anthropic's own tools: \
                     the gateway offers only client tools (with an `input_schema`)"
                );
                return Err(GatewayError::bad(message, format!("tools[{i}]")));
            }
            functions.push(Function {
                name: tool.name,
                description: tool.description.unwrap_or_default(),
                parameters: tool.input_schema.unwrap_or(Value::Null),
            });
        }
        let (tool_choice, parallel_tool_calls) = match self.tool_choice {
            Some(choice) => choice.read()?,
            None => (ToolChoice::Auto, None),
        };
        let mut options = Map::new();
        if let Some(max_tokens) = self.max_tokens {
            options.insert("max_tokens".into(), json!(max_tokens));
        }
        if let Some(temperature) = self.temperature {
            options.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = self.top_p {
            options.insert("top_p".into(), json!(top_p));
        }
        if let Some(stop) = self.stop_sequences.filter(|s| !s.is_empty()) {
            options.insert("stop".into(), json!(stop));
        }
        if let Some(user) = self.metadata.and_then(|m| m.user_id) {
            options.insert("user".into(), Value::String(user));
        }
        Ok(TurnRequest {
            model: self.model,
            messages,
            functions,
            tool_choice,
            parallel_tool_calls,
            stream: self.stream,
            options,
        })
    }
}

/// A user message: a tool message for each `tool_result` (first, as Anthropic puts
/// them), then its text (left out when the message held only results).
fn user_messages(index: usize, content: MessageContent, out: &mut Vec<Message>) -> Result<(), GatewayError> {
    let mut texts = Vec::new();
    let mut results = 0;
    for (j, block) in content.into_blocks().into_iter().enumerate() {
        match block {
            BlockIn::Text { text } => texts.push(text),
            BlockIn::ToolResult { tool_use_id, content, is_error } => {
                let text = content.map(|c| c.text("\n")).unwrap_or_default();
                out.push(Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock {
                        call_id: tool_use_id,
                        name: String::new(),
                        content: vec![ContentPart::text(text)],
                        is_error: is_error.unwrap_or(false),
                    })],
                ));
                results += 1;
            }
            BlockIn::ToolUse { .. } => {
                let param = format!("messages[{index}].content[{j}]");
                return Err(GatewayError::bad("a `tool_use` block belongs in an assistant message", param));
            }
            BlockIn::Other => {}
        }
    }
    if !texts.is_empty() || results == 0 {
        out.push(Message::user(texts.join("\n\n")));
    }
    Ok(())
}

/// An assistant message: its text, then its calls.
fn assistant_message(index: usize, content: MessageContent) -> Result<Message, GatewayError> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for (j, block) in content.into_blocks().into_iter().enumerate() {
        match block {
            BlockIn::Text { text } => texts.push(text),
            BlockIn::ToolUse { id, name, input } => {
                calls.push(ContentBlock::ToolCall(ToolCall::new(id, name, input.to_string())));
            }
            BlockIn::ToolResult { .. } => {
                let param = format!("messages[{index}].content[{j}]");
                return Err(GatewayError::bad("a `tool_result` block belongs in a user message", param));
            }
            BlockIn::Other => {}
        }
    }
    Ok(calls.into_iter().fold(Message::assistant(texts.join("\n\n")), Message::with_block))
}

impl Front for Frames {
    fn read(body: &[u8]) -> Result<(TurnRequest, Self), GatewayError> {
        let turn = json_body::<MessagesRequest>(body)?.into_turn()?;
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
            let start = json!({
                "type": "message_start",
                "message": {
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            });
            out.push_str(&sse(Some("message_start"), &start));
            out.push_str(&sse(Some("ping"), &json!({"type": "ping"})));
        }
        let last = match item {
            Item::Piece(Piece::Text(text)) => {
                if !text.is_empty() {
                    let index = self.open_block(Open::Text, &mut out);
                    out.push_str(&delta(index, json!({"type": "text_delta", "text": text})));
                }
                false
            }
            Item::Piece(Piece::Reasoning(text)) => {
                if !text.is_empty() {
                    let index = self.open_block(Open::Thinking, &mut out);
                    out.push_str(&delta(index, json!({"type": "thinking_delta", "thinking": text})));
                }
                false
            }
            Item::Piece(Piece::Call(call)) => {
                self.close(&mut out);
                let index = self.start(tool_use(&call, json!({})), &mut out);
                let partial = arguments_text(&call.arguments);
                out.push_str(&delta(index, json!({"type": "input_json_delta", "partial_json": partial})));
                out.push_str(&stop(index));
                false
            }
            Item::End(end) => {
                self.close(&mut out);
                let message_delta = json!({
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason(end.finish), "stop_sequence": null},
                    "usage": {
                        "input_tokens": tokens(end.usage.as_ref(), "prompt_tokens"),
                        "output_tokens": tokens(end.usage.as_ref(), "completion_tokens"),
                    },
                });
                out.push_str(&sse(Some("message_delta"), &message_delta));
                out.push_str(&sse(Some("message_stop"), &json!({"type": "message_stop"})));
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
            Open::Text => json!({"type": "text", "text": ""}),
            Open::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
        };
        let index = self.start(block, out);
        self.open = Some((kind, index));
        index
    }

    /// Starts the next block; its index.
    fn start(&mut self, block: Value, out: &mut String) -> usize {
        let index = self.next;
        self.next += 1;
        let event = json!({"type": "content_block_start", "index": index, "content_block": block});
        out.push_str(&sse(Some("content_block_start"), &event));
        index
    }

    /// Closes the open block, if any.
    fn close(&mut self, out: &mut String) {
        if let Some((_, index)) = self.open.take() {
            out.push_str(&stop(index));
        }
    }

    /// The `message` body.
    fn message(&self, reply: Reply, end: &End) -> Value {
        let mut content = Vec::with_capacity(reply.calls.len() + 2);
        if !reply.reasoning.is_empty() {
            content.push(json!({"type": "thinking", "thinking": reply.reasoning, "signature": ""}));
        }
        if !reply.text.is_empty() {
            content.push(json!({"type": "text", "text": reply.text}));
        }
        for call in &reply.calls {
            content.push(tool_use(call, arguments_json(&call.arguments)));
        }
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": content, "stop_reason": stop_reason(end.finish), "stop_sequence": null,
            "usage": {
                "input_tokens": tokens(end.usage.as_ref(), "prompt_tokens"),
                "output_tokens": tokens(end.usage.as_ref(), "completion_tokens"),
            },
        })
    }
}

/// A `content_block_delta` event.
fn delta(index: usize, delta: Value) -> String {
    sse(Some("content_block_delta"), &json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

/// A `content_block_stop` event.
fn stop(index: usize) -> String {
    sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}))
}

/// A `tool_use` block of `call` with `input`.
fn tool_use(call: &Call, input: Value) -> Value {
    json!({"type": "tool_use", "id": tool_use_id(&call.id), "name": call.name, "input": input})
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

/// The arguments as a JSON object (an empty one when they are not one).
fn arguments_json(arguments: &str) -> Value {
    match serde_json::from_str(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => empty_object(),
    }
}

/// Anthropic's `stop_reason`.
fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
        Finish::Stop | Finish::ContentFilter => "end_turn",
    }
}

/// A count of the upstream's usage object (0 when it gave none).
fn tokens(usage: Option<&Value>, field: &str) -> u64 {
    usage.and_then(|u| u.get(field)).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::extract::State;
    use axum::http::HeaderMap;

    use super::*;

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
        assert_eq!(stop_reason(Finish::Stop), "end_turn");
        assert_eq!(stop_reason(Finish::ContentFilter), "end_turn");
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
}
