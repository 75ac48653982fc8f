//! The Chat Completions front: `POST /v1/chat/completions`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::reply::{Call, Piece};
use super::request::{Function, TurnRequest, result_message};
use super::upstream::{End, Item};
use super::{
    Front, GatewayError, Mode, Reply, RequestBody, Shared, json_body, now_seconds, openai_error,
    request_bytes, serve, sse, upstream_auth,
};
use crate::model::{ContentBlock, Message, ToolCall, ToolChoice};
use crate::providers::openai_chat::{
    ChatCallPart, ChatChoice, ChatContent, ChatFinishReason, ChatFunctionChoice, ChatFunctionPart,
    ChatMessage, ChatRequest, ChatResponse, ChatTool, FunctionType, ToolChoiceParam, ToolFields,
};

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

/// A request body read as `T`, whose tool fields are `ToolFields<F>` (flattened), or why
/// it is not one. Flattened fields are read from a buffer, where an error loses its path:
/// an error that names no field is looked for in `tool_choice` and
/// `parallel_tool_calls`, each read alone, so that it names the field at fault.
pub(crate) fn read_request<T: DeserializeOwned, F: DeserializeOwned>(body: &[u8]) -> Result<T, GatewayError> {
    json_body::<T>(body).map_err(|error| match error {
        GatewayError::BadRequest { message, param: None } => {
            GatewayError::BadRequest { message, param: tool_field_at_fault::<F>(body) }
        }
        other => other,
    })
}

/// The tool field of `body` that `ToolFields<F>` cannot read, if one cannot (`tools` is
/// any JSON, read later).
fn tool_field_at_fault<F: DeserializeOwned>(body: &[u8]) -> Option<String> {
    let fields: Map<String, Value> = serde_json::from_slice(body).ok()?;
    ["tool_choice", "parallel_tool_calls"].into_iter().find_map(|key| {
        let alone = Map::from_iter([(key.to_string(), fields.get(key)?.clone())]);
        let error =
            serde_path_to_error::deserialize::<_, ToolFields<'static, F>>(Value::Object(alone)).err()?;
        Some(error.path().to_string())
    })
}

/// Why a tool choice of `type` `kind` (not a named function) is refused: a `function`
/// choice without its name, or a choice the gateway does not offer (a hosted tool,
/// `allowed_tools`, …).
pub(crate) fn typed_choice(kind: &str) -> GatewayError {
    let message = if kind == "function" {
        "a `function` choice names no function".to_string()
    } else {
        format!(
            "`{kind}` is not a tool choice the gateway offers (auto, none, required, or a named function)"
        )
    };
    GatewayError::bad(message, "tool_choice".to_string())
}

/// A client's request as the gateway hands it on, and whether the client asked for a
/// last chunk with the usage.
fn into_turn(request: ChatRequest<'_>) -> Result<(TurnRequest, bool), GatewayError> {
    let mut messages = Vec::with_capacity(request.messages.len());
    for message in request.messages {
        messages.push(match message {
            ChatMessage::System { content } | ChatMessage::Developer { content } => {
                Message::system(content.text())
            }
            ChatMessage::User { content } => Message::user(content.text()),
            ChatMessage::Assistant { content, tool_calls, .. } => {
                let text = content.map(|c| c.text().into_owned()).unwrap_or_default();
                tool_calls.into_iter().fold(Message::assistant(text), |message, call| {
                    let function = call.function;
                    let call = ToolCall::new(call.id, function.name, function.arguments);
                    message.with_block(ContentBlock::ToolCall(call))
                })
            }
            ChatMessage::Tool { tool_call_id, content } => {
                result_message(tool_call_id.into_owned(), content.text().into_owned(), false)
            }
        });
    }
    let tool_choice = match request.tools.tool_choice {
        None => ToolChoice::Auto,
        Some(ToolChoiceParam::Mode(mode)) => tool_choice(&mode)?,
        Some(ToolChoiceParam::Function { function, .. }) => {
            ToolChoice::Tool(function.function.name.into_owned())
        }
        Some(ToolChoiceParam::Typed { kind }) => return Err(typed_choice(&kind)),
    };
    let tools: Vec<ChatTool<'_>> = match request.tools.tools {
        None => Vec::new(),
        Some(tools) => serde_path_to_error::deserialize(tools.into_owned()).map_err(|error| {
            let param = format!("tools{}", error.path()).replace("tools.[", "tools[");
            GatewayError::bad(format!("the body is not a valid request: {}", error.inner()), param)
        })?,
    };
    let functions = tools
        .into_iter()
        .map(|tool| Function {
            name: tool.function.name.into_owned(),
            description: tool.function.description.unwrap_or_default().into_owned(),
            parameters: tool.function.parameters.map_or(Value::Null, Cow::into_owned),
        })
        .collect();
    let mut options = request.extra;
    // Fields of the tools API the text protocol replaces.
    for field in ["functions", "function_call"] {
        options.remove(field);
    }
    let include_usage = request.stream_options.unwrap_or_default().include_usage;
    let turn = TurnRequest {
        model: request.model.into_owned(),
        messages,
        functions,
        tool_choice,
        parallel_tool_calls: request.tools.parallel_tool_calls,
        stream: request.stream.unwrap_or(false),
        options,
    };
    Ok((turn, include_usage))
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
        let (turn, include_usage) =
            into_turn(read_request::<ChatRequest<'static>, ChatFunctionChoice<'static>>(body)?)?;
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

    /// The envelope of a body or a chunk, with its one choice.
    fn envelope<'s>(&'s self, object: &'static str, choice: ChatChoice<'s>) -> ChatResponse<'s> {
        ChatResponse {
            id: Some(Cow::Borrowed(&self.id)),
            object: Some(Cow::Borrowed(object)),
            created: Some(i64::try_from(self.created).unwrap_or(i64::MAX)),
            model: Some(Cow::Borrowed(&self.model)),
            choices: vec![ChatChoice { index: Some(0), ..choice }],
            ..ChatResponse::default()
        }
    }

    fn chunk(&self, delta: ChatContent<'_>, finish: Option<ChatFinishReason>) -> String {
        let choice = ChatChoice { delta: Some(delta), finish_reason: finish, ..ChatChoice::default() };
        sse(None, &self.envelope("chat.completion.chunk", choice))
    }

    /// The events for `item`, and whether they end the stream.
    fn frame(&mut self, item: Item) -> (String, bool) {
        let mut out = String::new();
        if !self.began {
            self.began = true;
            let role = ChatContent {
                role: Some("assistant"),
                content: Some(Cow::Borrowed("")),
                ..ChatContent::default()
            };
            out.push_str(&self.chunk(role, None));
        }
        let last = match item {
            Item::Piece(Piece::Text(text)) => {
                out.push_str(
                    &self.chunk(ChatContent { content: Some(text.into()), ..ChatContent::default() }, None),
                );
                false
            }
            Item::Piece(Piece::Reasoning(text)) => {
                let delta = ChatContent { reasoning_content: Some(text.into()), ..ChatContent::default() };
                out.push_str(&self.chunk(delta, None));
                false
            }
            Item::Piece(Piece::Call(call)) => {
                let delta =
                    ChatContent { tool_calls: vec![call_part(&call, true)], ..ChatContent::default() };
                out.push_str(&self.chunk(delta, None));
                false
            }
            Item::End(end) => {
                out.push_str(&self.chunk(ChatContent::default(), Some(end.finish.openai())));
                if self.include_usage {
                    let mut usage = self.envelope("chat.completion.chunk", ChatChoice::default());
                    usage.choices.clear();
                    usage.usage = Some(end.usage.unwrap_or(Value::Null));
                    out.push_str(&sse(None, &usage));
                }
                out.push_str("data: [DONE]\n\n");
                true
            }
            Item::Failed(error) => {
                out.push_str(&sse(None, &error.openai()));
                true
            }
            Item::Ready { .. } => false,
        };
        (out, last)
    }

    /// The `chat.completion` body.
    fn completion(&self, reply: Reply, end: &End) -> Value {
        let message = ChatContent {
            role: Some("assistant"),
            content: (!reply.text.is_empty() || reply.calls.is_empty()).then_some(Cow::Borrowed(&reply.text)),
            reasoning_content: (!reply.reasoning.is_empty()).then_some(Cow::Borrowed(&reply.reasoning)),
            tool_calls: reply.calls.iter().map(|call| call_part(call, false)).collect(),
            ..ChatContent::default()
        };
        let choice = ChatChoice {
            message: Some(message),
            finish_reason: Some(end.finish.openai()),
            ..ChatChoice::default()
        };
        let mut body = self.envelope("chat.completion", choice);
        body.usage = Some(end.usage.clone().unwrap_or(Value::Null));
        crate::providers::to_value(&body)
    }
}

/// A call as Chat Completions writes it (with its `index` in a stream chunk).
fn call_part(call: &Call, indexed: bool) -> ChatCallPart<'_> {
    ChatCallPart {
        index: indexed.then(|| i64::try_from(call.index).unwrap_or(i64::MAX)),
        id: Some(Cow::Borrowed(&call.id)),
        kind: Some(FunctionType::Function),
        function: ChatFunctionPart {
            name: Some(Cow::Borrowed(&call.name)),
            arguments: Some(Cow::Borrowed(&call.arguments)),
        },
    }
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
        let text = sse(None, &error.openai());
        Some((Ok(Bytes::from(text)), (None, read)))
    });
    let mut out = Response::new(Body::from_stream(chunks));
    *out.status_mut() = status;
    if let Some(value) = content_type.and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
        out.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gateway::reply::Finish;
    use crate::model::{AssistantTurn, FinishReason, TurnDelta};
    use crate::providers::testing::decode;
    use crate::providers::{Provider, WireFormat};

    fn call(index: usize) -> Call {
        Call {
            index,
            id: format!("call_{index}"),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }
    }

    fn end(finish: Finish) -> End {
        End { finish, usage: Some(json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})) }
    }

    /// What the gateway writes, the crate's own Chat Completions reader reads back: the
    /// two sides are one set of types.
    #[test]
    fn a_written_body_reads_back_as_the_same_turn() {
        let frames = Frames::new("m".into(), false);
        let reply =
            Reply { text: "Let me look.".into(), reasoning: "think".into(), calls: vec![call(0), call(1)] };
        let body = frames.completion(reply, &end(Finish::ToolCalls));
        assert_eq!((body["object"].as_str(), body["model"].as_str()), (Some("chat.completion"), Some("m")));
        assert_eq!(body["usage"]["total_tokens"], 7);
        let turn = Provider::OpenAiChat.parse_response(&body).unwrap();
        let expected = AssistantTurn::new()
            .with_reasoning("think", None)
            .with_text("Let me look.")
            .with_tool_call(ToolCall::new("call_0", "get_weather", r#"{"city":"Paris"}"#))
            .with_tool_call(ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#));
        assert_eq!(turn.content, expected.content);
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));

        // A reply made of calls has `content: null`, as the API writes it.
        let only_calls = Reply { calls: vec![call(0)], ..Reply::default() };
        let body = frames.completion(only_calls, &end(Finish::ToolCalls));
        let message = &body["choices"][0]["message"];
        assert!(
            message.as_object().is_some_and(|m| m.contains_key("content")) && message["content"].is_null()
        );
    }

    #[test]
    fn written_chunks_read_back_as_the_same_deltas() {
        let mut frames = Frames::new("m".into(), true);
        let mut stream = String::new();
        for item in [
            Item::Piece(Piece::Reasoning("hm".into())),
            Item::Piece(Piece::Text("Hi".into())),
            Item::Piece(Piece::Call(call(0))),
            Item::Piece(Piece::Call(call(1))),
            Item::End(end(Finish::ToolCalls)),
        ] {
            let (text, last) = frames.frame(item);
            stream.push_str(&text);
            assert_eq!(last, stream.ends_with("data: [DONE]\n\n"));
        }
        let (deltas, error) = decode(Provider::OpenAiChat, &stream);
        assert!(error.is_none(), "{error:?}");
        let mut expected = vec![TurnDelta::Reasoning("hm".into()), TurnDelta::Text("Hi".into())];
        for index in 0..2 {
            expected.push(TurnDelta::ToolCallStart {
                index,
                id: format!("call_{index}"),
                name: "get_weather".into(),
            });
            expected.push(TurnDelta::ToolCallArguments { index, fragment: r#"{"city":"Paris"}"#.into() });
            expected.push(TurnDelta::ToolCallEnd { index });
        }
        // The usage chunk, then the end.
        assert_eq!(deltas[..expected.len()], expected[..]);
        assert!(deltas[expected.len()..].contains(&TurnDelta::Finish(FinishReason::ToolCalls)), "{deltas:?}");
        assert!(stream.contains(r#""usage":{"#), "the usage chunk: {stream}");
    }

    /// A client's request, read with the same types the crate writes its own requests
    /// with: the fields the gateway does not read stay as they came, for the upstream.
    #[test]
    fn a_client_request_keeps_the_fields_it_does_not_read() {
        let body = json!({
            "model": "m", "temperature": 0.2, "max_tokens": 9, "user": "u", "functions": [],
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "Be "}, {"type": "image_url"}, {"type": "text", "text": "brief."}]},
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "stream": true, "stream_options": {"include_usage": true}
        });
        let request: ChatRequest<'static> = serde_json::from_value(body).unwrap();
        let (turn, include_usage) = into_turn(request).unwrap();
        assert!(include_usage && turn.stream);
        assert_eq!(turn.tool_choice, ToolChoice::Tool("get_weather".into()));
        assert_eq!(turn.functions[0].parameters, json!({"type": "object"}));
        assert_eq!(turn.messages[0].text(), "Be brief.");
        assert_eq!(turn.messages[2].tool_calls().next().map(|c| c.id.as_str()), Some("c1"));
        let mut kept: Vec<&str> = turn.options.keys().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(
            kept,
            ["max_tokens", "temperature", "user"],
            "`functions` is the text protocol's to replace"
        );

        let bad =
            json!({"messages": [], "tools": [{"type": "function", "function": {"description": "no name"}}]});
        let error = into_turn(serde_json::from_value(bad).unwrap()).unwrap_err();
        assert!(error.to_string().contains("name"), "{error}");

        // A choice the gateway does not offer is refused by its type.
        let choice = json!({"messages": [], "tool_choice": {"type": "allowed_tools", "mode": "auto"}});
        let error = into_turn(serde_json::from_value(choice).unwrap()).unwrap_err();
        assert_eq!(error.status(), 400);
        assert!(error.to_string().contains("`allowed_tools` is not a tool choice"), "{error}");
        assert!(error.to_string().contains("(`tool_choice`)"), "{error}");

        // A malformed tool field, read flattened, is named.
        for (field, value) in [("tool_choice", json!(5)), ("parallel_tool_calls", json!("yes"))] {
            let mut body = json!({"messages": [{"role": "user", "content": "Hi"}]});
            body[field] = value;
            let error = <Frames as Front>::read(body.to_string().as_bytes()).err().expect("refused");
            assert_eq!(error.status(), 400);
            assert!(error.to_string().contains(&format!("(`{field}`)")), "{error}");
        }
    }
}
