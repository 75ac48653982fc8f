//! A local stand-in for an OpenAI-compatible server, for the `agent` example when no
//! endpoint is configured: it replays one recorded conversation about the demo tools.
//! It is not a model. It answers `POST /v1/chat/completions` only:
//!
//! - first turn (no assistant message yet): prose, then a call to `calc_add`, then, after
//!   a pause, a call to `text_repeat`: as native `tool_calls` when the request offers
//!   `tools`, else as VCP blocks in the text (the request then carries the VCP prompt);
//! - later turns: a closing answer, after checking that the request carries the two
//!   results the demo tools give (`42.0` and `hello hello hello`); if not, it says so.
//!
//! Replies stream as server-sent events with pauses between them, as a real server's do,
//! so that the example shows tools starting before the reply has ended.

use std::time::Duration;

use futures::StreamExt;
use hyper::body::Bytes;
use serde_json::{Value, json};

#[path = "http_server.rs"]
mod http_server;
use http_server::{Request, Response};

/// The pause between the recorded reply's pieces.
const PAUSE: Duration = Duration::from_millis(400);

/// Starts the server on a free loopback port and returns its base URL (`…/v1`).
pub async fn start() -> std::io::Result<String> {
    let address = http_server::spawn(|request: Request| async move {
        match (request.method.as_str(), request.path.as_str(), request.json()) {
            ("POST", "/v1/chat/completions", Some(body)) => complete(body),
            ("POST", "/v1/chat/completions", None) => Response::text(400, "the body is not JSON"),
            _ => Response::text(404, "this server answers POST /v1/chat/completions only"),
        }
    })
    .await?;
    Ok(format!("http://{address}/v1"))
}

/// One piece of a reply: wait, then send.
struct Piece {
    wait: Duration,
    delta: Value,
    finish: Option<&'static str>,
}

fn piece(wait: Duration, delta: Value) -> Piece {
    Piece { wait, delta, finish: None }
}

const VCP_ADD: &str = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>\n";
const VCP_REPEAT: &str = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_repeat「末」,\nmessage:「始」hello「末」,\ntimes:「始」3「末」\n<<<[END_TOOL_REQUEST]>>>";

fn complete(request: Value) -> Response {
    let messages = request.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let answered = messages.iter().any(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let native = request.get("tools").is_some_and(|tools| !tools.is_null());
    let pieces = if !answered {
        first_turn(native)
    } else {
        let sent = serde_json::to_string(&messages).unwrap_or_default();
        let text = if sent.contains("42.0") && sent.contains("hello hello hello") {
            "2 + 40 = 42, and the greeting three times: hello hello hello."
        } else {
            "(recorded server) The results of calc_add and text_repeat did not arrive as recorded."
        };
        let mut pieces: Vec<Piece> = text
            .split_inclusive(' ')
            .map(|word| piece(Duration::from_millis(40), json!({"content": word})))
            .collect();
        pieces.push(Piece { wait: Duration::ZERO, delta: json!({}), finish: Some("stop") });
        pieces
    };
    if request.get("stream").and_then(Value::as_bool) == Some(true) { stream(pieces) } else { whole(pieces) }
}

fn first_turn(native: bool) -> Vec<Piece> {
    let intro = piece(
        PAUSE,
        json!({"role": "assistant", "content": "I'll add the numbers and repeat the greeting.\n"}),
    );
    if native {
        let call = |index: u32, id: &str, name: &str| {
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]})
        };
        let args = |index: u32, text: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": text}}]});
        vec![
            intro,
            piece(PAUSE, call(0, "call_add", "calc_add")),
            piece(Duration::from_millis(50), args(0, "{\"a\": 2, ")),
            piece(Duration::from_millis(50), args(0, "\"b\": 40}")),
            piece(PAUSE, call(1, "call_repeat", "text_repeat")),
            piece(Duration::from_millis(50), args(1, "{\"message\": \"hello\", \"times\": 3}")),
            Piece { wait: PAUSE, delta: json!({}), finish: Some("tool_calls") },
        ]
    } else {
        vec![
            intro,
            piece(PAUSE, json!({"content": VCP_ADD})),
            piece(PAUSE, json!({"content": VCP_REPEAT})),
            Piece { wait: PAUSE, delta: json!({}), finish: Some("stop") },
        ]
    }
}

fn chunk(delta: &Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-recorded", "object": "chat.completion.chunk", "model": "recorded-demo",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The pieces as server-sent events, each after its pause, then `[DONE]`.
fn stream(pieces: Vec<Piece>) -> Response {
    let events = futures::stream::iter(pieces)
        .then(|p| async move {
            tokio::time::sleep(p.wait).await;
            Ok::<_, std::io::Error>(Bytes::from(format!("data: {}\n\n", chunk(&p.delta, p.finish))))
        })
        .chain(futures::stream::once(async { Ok(Bytes::from_static(b"data: [DONE]\n\n")) }));
    Response::stream(200, "text/event-stream", events)
}

/// The pieces merged into one `chat.completion` body.
fn whole(pieces: Vec<Piece>) -> Response {
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = "stop";
    for p in pieces {
        content.push_str(p.delta.get("content").and_then(Value::as_str).unwrap_or_default());
        for fragment in p.delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let arguments = fragment["function"]["arguments"].as_str().unwrap_or_default();
            match fragment.get("id") {
                Some(id) => calls.push(json!({"id": id, "type": "function",
                    "function": {"name": fragment["function"]["name"], "arguments": arguments}})),
                None => {
                    if let Some(last) = calls.last_mut() {
                        let joined = format!(
                            "{}{arguments}",
                            last["function"]["arguments"].as_str().unwrap_or_default()
                        );
                        last["function"]["arguments"] = Value::String(joined);
                    }
                }
            }
        }
        finish = p.finish.unwrap_or(finish);
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Response::json(
        200,
        &json!({"id": "chatcmpl-recorded", "object": "chat.completion", "model": "recorded-demo",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}),
    )
}
