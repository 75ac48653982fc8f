//! The Chat Completions front: `POST /v1/chat/completions`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::reply::{Call, Piece};
use super::request::{Function, TurnRequest};
use super::upstream::{End, Item};
use super::{
    Front, GatewayError, Mode, Reply, RequestBody, Shared, json_body, now_seconds, openai_error,
    request_bytes, serve, sse, upstream_auth,
};
use crate::ContentPart;
use crate::model::{ContentBlock, Message, Role, ToolCall, ToolChoice, ToolResultBlock};

/// A Chat Completions request, as far as the gateway reads it; every other field is
/// passed upstream as it is.
#[derive(Debug, Deserialize)]
struct ChatRequest {
    #[serde(default)]
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    tools: Vec<ChatTool>,
    #[serde(default)]
    tool_choice: Option<ChatToolChoice>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    options: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage {
    System {
        content: Content,
    },
    Developer {
        content: Content,
    },
    User {
        content: Content,
    },
    Assistant {
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        tool_calls: Vec<ChatToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: Content,
    },
}

/// A message's content: a string, or parts of which the text ones are read.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<ContentPartIn>),
}

#[derive(Debug, Deserialize)]
pub(crate) struct ContentPartIn {
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    /// The text (text parts joined).
    pub(crate) fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct ChatToolCall {
    id: String,
    function: ChatFunctionCall,
}

#[derive(Debug, Deserialize)]
struct ChatFunctionCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Debug, Deserialize)]
struct ChatTool {
    function: ChatFunction,
}

#[derive(Debug, Deserialize)]
struct ChatFunction {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ChatToolChoice {
    Mode(String),
    Named { function: NamedFunction },
}

#[derive(Debug, Deserialize)]
struct NamedFunction {
    name: String,
}

/// OpenAI's `tool_choice` forms.
pub(crate) fn tool_choice(mode: &str) -> Result<ToolChoice, GatewayError> {
    match mode {
        "auto" => Ok(ToolChoice::Auto),
        "none" => Ok(ToolChoice::None),
        "required" | "any" => Ok(ToolChoice::Required),
        other => Err(GatewayError::bad(
            format!("`{other}` is not a tool choice (auto, none, required, or a named function)"),
            "tool_choice".to_string(),
        )),
    }
}

impl ChatRequest {
    fn into_turn(self) -> Result<(TurnRequest, bool), GatewayError> {
        let mut messages = Vec::with_capacity(self.messages.len());
        for message in self.messages {
            messages.push(match message {
                ChatMessage::System { content } | ChatMessage::Developer { content } => {
                    Message::system(content.text())
                }
                ChatMessage::User { content } => Message::user(content.text()),
                ChatMessage::Assistant { content, tool_calls } => {
                    let text = content.map(|c| c.text()).unwrap_or_default();
                    tool_calls.into_iter().fold(Message::assistant(text), |message, call| {
                        let call = ToolCall::new(call.id, call.function.name, call.function.arguments);
                        message.with_block(ContentBlock::ToolCall(call))
                    })
                }
                ChatMessage::Tool { tool_call_id, content } => Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock {
                        call_id: tool_call_id,
                        name: String::new(),
                        content: vec![ContentPart::text(content.text())],
                        is_error: false,
                    })],
                ),
            });
        }
        let tool_choice = match self.tool_choice {
            None => ToolChoice::Auto,
            Some(ChatToolChoice::Mode(mode)) => tool_choice(&mode)?,
            Some(ChatToolChoice::Named { function }) => ToolChoice::Tool(function.name),
        };
        let functions = self
            .tools
            .into_iter()
            .map(|tool| Function {
                name: tool.function.name,
                description: tool.function.description.unwrap_or_default(),
                parameters: tool.function.parameters.unwrap_or(Value::Null),
            })
            .collect();
        let mut options = self.options;
        // Fields of the tools API the text protocol replaces.
        for field in ["functions", "function_call"] {
            options.remove(field);
        }
        let include_usage = self.stream_options.unwrap_or_default().include_usage;
        let turn = TurnRequest {
            model: self.model,
            messages,
            functions,
            tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            stream: self.stream,
            options,
        };
        Ok((turn, include_usage))
    }
}

/// `POST /v1/chat/completions`: with the `native` protocol, a pass-through; else the
/// translation every front shares.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: RequestBody,
) -> Response {
    if !matches!(shared.mode, Mode::Native) {
        return serve::<Frames>(State(shared), headers, body).await;
    }
    match request_bytes(body, shared.config.max_request_bytes) {
        Ok(body) => pass_through(&shared, upstream_auth(&shared, &headers), body).await,
        Err(error) => openai_error(&error),
    }
}

impl Front for Frames {
    fn read(body: &[u8]) -> Result<(TurnRequest, Self), GatewayError> {
        let (turn, include_usage) = json_body::<ChatRequest>(body)?.into_turn()?;
        let frames = Frames::new(turn.model.clone(), include_usage);
        Ok((turn, frames))
    }

    fn error(error: &GatewayError) -> Response {
        openai_error(error)
    }

    fn frame(&mut self, item: Item) -> (String, bool) {
        Frames::frame(self, item)
    }

    fn body(&self, reply: Reply, end: &End) -> Value {
        self.completion(reply, end)
    }
}

/// Writes Chat Completions chunks and bodies for one reply.
pub(crate) struct Frames {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
    began: bool,
}

impl Frames {
    fn new(model: String, include_usage: bool) -> Self {
        Frames {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            created: now_seconds(),
            model,
            include_usage,
            began: false,
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        let chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        sse(None, &chunk)
    }

    /// The events for `item`, and whether they end the stream.
    fn frame(&mut self, item: Item) -> (String, bool) {
        let mut out = String::new();
        if !self.began {
            self.began = true;
            out.push_str(&self.chunk(json!({"role": "assistant", "content": ""}), None));
        }
        let last = match item {
            Item::Piece(Piece::Text(text)) => {
                out.push_str(&self.chunk(json!({"content": text}), None));
                false
            }
            Item::Piece(Piece::Reasoning(text)) => {
                out.push_str(&self.chunk(json!({"reasoning_content": text}), None));
                false
            }
            Item::Piece(Piece::Call(call)) => {
                out.push_str(&self.chunk(json!({"tool_calls": [call_json(&call, true)]}), None));
                false
            }
            Item::End(end) => {
                out.push_str(&self.chunk(json!({}), Some(end.finish.openai())));
                if self.include_usage {
                    let usage = json!({
                        "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model, "choices": [], "usage": end.usage,
                    });
                    out.push_str(&sse(None, &usage));
                }
                out.push_str("data: [DONE]\n\n");
                true
            }
            Item::Failed(error) => {
                out.push_str(&sse(None, &json!({"error": error.openai()})));
                true
            }
            Item::Ready { .. } => false,
        };
        (out, last)
    }

    /// The `chat.completion` body.
    fn completion(&self, reply: Reply, end: &End) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if reply.text.is_empty() && !reply.calls.is_empty() { Value::Null } else { Value::String(reply.text) },
        });
        if let Some(fields) = message.as_object_mut() {
            if !reply.reasoning.is_empty() {
                fields.insert("reasoning_content".into(), Value::String(reply.reasoning));
            }
            if !reply.calls.is_empty() {
                fields.insert("tool_calls".into(), reply.calls.iter().map(|c| call_json(c, false)).collect());
            }
        }
        json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": end.finish.openai()}],
            "usage": end.usage,
        })
    }
}

/// A call as Chat Completions writes it (with its `index` in a stream chunk).
fn call_json(call: &Call, indexed: bool) -> Value {
    let mut value = json!({
        "id": call.id, "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    });
    if indexed && let Some(fields) = value.as_object_mut() {
        fields.insert("index".into(), json!(call.index));
    }
    value
}

/// The native protocol: the request goes upstream as it came, the answer comes back as
/// it went (status, type, body), within the time limit.
async fn pass_through(shared: &Shared, auth: Option<String>, body: Bytes) -> Response {
    let mut request = shared
        .http
        .post(format!("{}/chat/completions", shared.config.upstream))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(auth) = auth {
        request = request.header(reqwest::header::AUTHORIZATION, auth);
    }
    let limit = shared.config.timeout;
    let deadline = tokio::time::Instant::now() + limit;
    let response = match tokio::time::timeout_at(deadline, request.send()).await {
        Err(_) => return openai_error(&GatewayError::Timeout { seconds: limit.as_secs_f64() }),
        Ok(Err(error)) => {
            return openai_error(&GatewayError::Unreachable { reason: crate::http::error_chain(&error) });
        }
        Ok(Ok(response)) => response,
    };
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE).cloned();
    let max = shared.config.max_reply_bytes;
    // The state: the response while it is being read (`None` once it has ended), and
    // how much of it was read.
    let chunks = futures::stream::unfold((Some(response), 0usize), move |(response, read)| async move {
        let mut response = response?;
        let error = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(None)) => return None,
            Ok(Ok(Some(bytes))) if read + bytes.len() <= max => {
                let read = read + bytes.len();
                return Some((Ok::<_, std::convert::Infallible>(bytes), (Some(response), read)));
            }
            Ok(Ok(Some(_))) => {
                GatewayError::Stream { reason: format!("the reply is longer than {max} bytes") }
            }
            Ok(Err(error)) => GatewayError::Stream { reason: crate::http::error_chain(&error) },
            Err(_) => GatewayError::Timeout { seconds: limit.as_secs_f64() },
        };
        // The stream ends with an error event (dropping the response cancels it).
        let text = sse(None, &json!({"error": error.openai()}));
        Some((Ok(Bytes::from(text)), (None, read)))
    });
    let mut out = Response::new(Body::from_stream(chunks));
    *out.status_mut() = status;
    if let Some(value) = content_type.and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
        out.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    out
}
