//! A stand-in for a model server that has no tools API: an OpenAI-compatible Chat
//! Completions server on 127.0.0.1 that replays recorded model text, for the gateway's
//! example, tests and load bench. It is not a model.
//!
//! - `POST /v1/chat/completions`: the reply is picked by a `replay:NAME` word in the
//!   conversation's first user message (see [`SCENARIOS`]), and streamed as
//!   `chat.completion.chunk`s of `delta.content` (or `delta.reasoning_content`), cut at
//!   pseudo-random places (1 to 12 characters, the same cuts for the same reply), with a
//!   usage chunk when `stream_options.include_usage` asks for one. Without `stream`, one
//!   `chat.completion` body. When the last message holds a result the tests send
//!   (`18C sunny`, `10:00`: a second round), the reply says which arrived, and in what
//!   kind of message.
//! - `native_calls` answers in the server's own tools API: two calls as
//!   `delta.tool_calls` fragments (for the gateway's `native` protocol).
//! - `fault_*` scenarios misbehave: an error status, a stream cut off, no answer, an
//!   error event, bytes that are not events.
//! - `GET /v1/models` lists one model, `replay`.
//!
//! Every request body is kept ([`Replay::requests`]) for the tests to look at.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use hyper::body::Bytes;
use serde_json::{Value, json};

#[path = "http_server.rs"]
mod http_server;
use http_server::{Request, Response};

/// The recorded replies, by name: `(name, reasoning sent in reasoning_content, text)`.
pub const SCENARIOS: &[(&str, &str, &str)] = &[
    ("text", "", "Hello! Nothing to call here."),
    (
        "vcp_one",
        "",
        "Let me look that up.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」get_weather「末」,\ncity:「始」Paris「末」\n<<<[END_TOOL_REQUEST]>>>",
    ),
    (
        "vcp_parallel",
        "",
        "<think>Two lookups, both at once.</think>Checking both.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」get_weather「末」,\ncity:「始」Paris「末」\n<<<[END_TOOL_REQUEST]>>>\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」get_time「末」,\nzone:「始」Europe/Paris「末」\n<<<[END_TOOL_REQUEST]>>>",
    ),
    (
        "hermes_parallel",
        "The user wants weather and time; I call both tools.",
        "I'll check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>",
    ),
    (
        "mistral_parallel",
        "",
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}]",
    ),
    (
        "pythonic_parallel",
        "",
        "<think>Both tools, in one list.</think>[get_weather(city=\"Paris\"), get_time(zone=\"Europe/Paris\")]",
    ),
    ("hermes_unknown", "", "<tool_call>\n{\"name\": \"delete_everything\", \"arguments\": {}}\n</tool_call>"),
    (
        "hermes_invalid",
        "",
        "Looking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>",
    ),
    (
        "hermes_cut",
        "",
        "One moment.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
    ),
];

/// The recorded text of `name`.
pub fn scenario(name: &str) -> Option<(&'static str, &'static str)> {
    SCENARIOS.iter().find(|(n, ..)| *n == name).map(|(_, reasoning, text)| (*reasoning, *text))
}

/// A running replay server.
#[derive(Clone)]
pub struct Replay {
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    dropped: Arc<AtomicUsize>,
}

impl Replay {
    /// How many streamed replies were dropped before their end (the reader went away).
    pub fn dropped_streams(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Starts a replay server on a free loopback port; `pause` is the wait before each
/// chunk of a streamed reply.
pub async fn start(pause: Duration) -> std::io::Result<Replay> {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let dropped = Arc::new(AtomicUsize::new(0));
    let kept = Arc::clone(&requests);
    let drops = Arc::clone(&dropped);
    let address = http_server::spawn(move |request: Request| {
        let kept = Arc::clone(&kept);
        let drops = Arc::clone(&drops);
        async move {
            match (request.method.as_str(), request.path.as_str(), request.json()) {
                ("GET", "/v1/models", _) => Response::json(
                    200,
                    &json!({"object": "list", "data": [{"id": "replay", "object": "model", "owned_by": "tool-calling"}]}),
                ),
                ("POST", "/v1/chat/completions", Some(body)) => {
                    if let Ok(mut kept) = kept.lock() {
                        kept.push(body.clone());
                    }
                    complete(&body, pause, drops)
                }
                ("POST", "/v1/chat/completions", None) => Response::text(400, "the body is not JSON"),
                _ => Response::text(404, "this server answers POST /v1/chat/completions and GET /v1/models"),
            }
        }
    })
    .await?;
    Ok(Replay { url: format!("http://{address}/v1"), requests, dropped })
}

/// The text of a message's `content` (a string, or text parts).
fn content_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect()
        }
        _ => String::new(),
    }
}

/// The scenario a conversation asks for.
fn scenario_name(messages: &[Value]) -> Option<String> {
    let first_user = messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let text = content_text(first_user);
    let at = text.find("replay:")?;
    let name: String =
        text[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    Some(name)
}

fn complete(body: &Value, pause: Duration, drops: Arc<AtomicUsize>) -> Response {
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let Some(name) = scenario_name(&messages) else {
        return error(400, "no `replay:NAME` in the first user message");
    };
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool) == Some(true);
    // A second round: the last message carries a result the tests send.
    let second_round =
        messages.last().map(content_text).is_some_and(|t| t.contains("18C sunny") || t.contains("10:00"));
    if name == "native_calls" {
        // A server with its own tools API: the calls as `delta.tool_calls` fragments.
        return Response::stream(200, "text/event-stream", paced(native_calls(), pause, End::Close, drops));
    }
    let (reasoning, text): (&str, String) = match name.as_str() {
        "fault_500" => return error(500, "the replay server was asked to fail"),
        "fault_429" => return error(429, "slow down"),
        "fault_hang" => return hang(),
        _ if second_round => ("", round_two(&messages)),
        _ => match scenario(&name) {
            Some((reasoning, text)) => (reasoning, text.to_string()),
            None if name.starts_with("fault_") => ("", "Partial reply before the fault".to_string()),
            None => return error(404, &format!("no recorded reply `{name}`")),
        },
    };
    let prompt_tokens = serde_json::to_string(&messages).map_or(0, |s| s.len() / 4);
    let usage = usage.then(|| {
        let completion_tokens = (reasoning.len() + text.len()) / 4;
        json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
               "total_tokens": prompt_tokens + completion_tokens})
    });
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if !reasoning.is_empty() {
            message["reasoning_content"] = json!(reasoning);
        }
        return Response::json(
            200,
            &json!({"id": "chatcmpl-replay", "object": "chat.completion", "created": 0, "model": "replay",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": usage}),
        );
    }
    let mut events: Vec<String> = Vec::new();
    let chunk = |delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 0,
                           "model": "replay", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    events.push(chunk(json!({"role": "assistant", "content": ""}), None));
    for piece in cuts(reasoning) {
        events.push(chunk(json!({"reasoning_content": piece}), None));
    }
    for piece in cuts(&text) {
        events.push(chunk(json!({"content": piece}), None));
    }
    let tail: Vec<String> = match name.as_str() {
        // Cut off mid-reply: no finish, no end; the connection drops.
        "fault_cut" => vec![],
        "fault_slow" => vec![],
        "fault_error_event" => vec![format!(
            "data: {}\n\n",
            json!({"error": {"message": "the model crashed", "type": "server_error"}})
        )],
        "fault_garbage" => vec!["data: this is not JSON\n\n".to_string()],
        _ => {
            let mut tail = vec![chunk(json!({}), Some("stop"))];
            if let Some(usage) = &usage {
                let chunk = json!({"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 0,
                                   "model": "replay", "choices": [], "usage": usage});
                tail.push(format!("data: {chunk}\n\n"));
            }
            tail.push("data: [DONE]\n\n".to_string());
            tail
        }
    };
    events.extend(tail);
    let end = match name.as_str() {
        "fault_cut" => End::Break,
        "fault_slow" => End::Hang,
        _ => End::Close,
    };
    Response::stream(200, "text/event-stream", paced(events, pause, end, drops))
}

/// How a streamed reply ends.
#[derive(Clone, Copy)]
enum End {
    Close,
    /// The connection drops.
    Break,
    /// The connection stays open, silent.
    Hang,
}

/// The events, one every `pause`, then the end.
fn paced(
    events: Vec<String>,
    pause: Duration,
    end: End,
    drops: Arc<AtomicUsize>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let guard = DropGuard { drops, ended: false };
    let tail: Vec<Result<Bytes, std::io::Error>> = match end {
        End::Close | End::Hang => vec![],
        End::Break => vec![Err(std::io::Error::other("the replay server drops the connection"))],
    };
    let body = futures::stream::iter(events.into_iter().map(|e| Ok(Bytes::from(e))).chain(tail)).then(
        move |item| async move {
            // The break comes after what was sent has gone out.
            let wait = if item.is_err() { pause.max(Duration::from_millis(20)) } else { pause };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            item
        },
    );
    let hang = futures::stream::once(async move {
        if matches!(end, End::Hang) {
            futures::future::pending::<()>().await;
        }
    })
    .filter_map(|()| async { None });
    // The guard goes with the stream: dropped before the stream's end, it counts.
    let mut guard = Some(guard);
    body.chain(hang).chain(futures::stream::poll_fn(move |_| {
        if let Some(mut guard) = guard.take() {
            guard.ended = true;
        }
        std::task::Poll::Ready(None)
    }))
}

/// Counts a streamed reply dropped before its end.
struct DropGuard {
    drops: Arc<AtomicUsize>,
    ended: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.ended {
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The text cut into pieces of 1 to 12 characters, at places that depend on the text
/// alone.
fn cuts(text: &str) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ text.len() as u64;
    let mut pieces = Vec::new();
    let mut chars = text.chars().peekable();
    while chars.peek().is_some() {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let size = 1 + (state >> 33) as usize % 12;
        pieces.push(chars.by_ref().take(size).collect());
    }
    pieces
}

/// A reply of two calls in the server's own tools API, the arguments in fragments.
fn native_calls() -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 0,
                           "model": "replay", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let start = |index: u32, id: &str, name: &str| json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]});
    let args =
        |index: u32, text: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": text}}]});
    vec![
        chunk(json!({"role": "assistant", "content": "Both at once."}), None),
        chunk(start(0, "call_w", "get_weather"), None),
        chunk(args(0, "{\"city\": "), None),
        chunk(args(0, "\"Paris\"}"), None),
        chunk(start(1, "call_t", "get_time"), None),
        chunk(args(1, "{\"zone\": \"Europe/Paris\"}"), None),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_string(),
    ]
}

/// The second round's answer: whether the results came back as text.
fn round_two(messages: &[Value]) -> String {
    let last = messages.last();
    let role = last.and_then(|m| m.get("role")).and_then(Value::as_str).unwrap_or("none");
    let text = last.map(content_text).unwrap_or_default();
    let mut seen = Vec::new();
    if text.contains("18C sunny") {
        seen.push("the weather");
    }
    if text.contains("10:00") {
        seen.push("the time");
    }
    if seen.is_empty() {
        format!("Round two: no result arrived (the last message is a {role} message).")
    } else {
        format!("Round two: {} arrived in a {role} message.", seen.join(" and "))
    }
}

fn error(status: u16, message: &str) -> Response {
    Response::json(status, &json!({"error": {"message": message, "type": "replay_error", "code": status}}))
}

/// Headers, then nothing, ever.
fn hang() -> Response {
    let silence = futures::stream::once(futures::future::pending::<Result<Bytes, std::io::Error>>());
    Response::stream(200, "text/event-stream", silence)
}
