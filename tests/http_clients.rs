//! The HTTP model clients against a real server on 127.0.0.1, serving the
//! recorded-shape payloads of `tests/fixtures/native/`: multi-round streamed
//! conversations through the engine for each provider, a stream that breaks mid-call, a
//! stream that ends mid-call, rate limits, server errors and timeouts.
//!
//! That a tool starts before its turn's stream has ended is shown by the server: after
//! the event that completes the first call it stops sending until that call's tool has
//! started (the tool tells it), and logs when it goes on. A client or engine that waited
//! for the end of the stream would leave the server waiting; the guard then gives up
//! after a generous delay and the log order assertion fails.

#![cfg(feature = "http")]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_calling::ToolError;
use tool_calling::engine::{Engine, EngineError, StopReason};
use tool_calling::exec::ExecutionContext;
use tool_calling::model::{
    ChatModel, ChatModelError, Conversation, FinishReason, Message, ModelRequest, TurnAccumulator,
};
use tool_calling::providers::{HttpChatModel, HttpRetry, Provider};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, BoxFuture, Instance, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};

const PROVIDERS: [Provider; 4] =
    [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Anthropic, Provider::Gemini];
const FINAL_TEXT: &str = "Paris is sunny; 2 + 40 = 42.";

// ---------------------------------------------------------------------------------------
// The server: tests/support/loopback.rs

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{Log, Part, Recorded, Reply, Server, json_reply};

// ---------------------------------------------------------------------------------------
// Payloads

fn folder(provider: Provider) -> &'static str {
    provider.protocol_id()
}

fn fixture(provider: Provider, name: &str) -> String {
    let path = format!("{}/tests/fixtures/native/{}/{name}", env!("CARGO_MANIFEST_DIR"), folder(provider));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The events of an SSE transcript, each with its terminating blank line (LF or CRLF).
fn events(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let lf = rest.find("\n\n").map(|i| i + 2);
        let crlf = rest.find("\r\n\r\n").map(|i| i + 4);
        let end = [lf, crlf].into_iter().flatten().min().unwrap_or(rest.len());
        out.push(rest[..end].to_owned());
        rest = &rest[end..];
    }
    out
}

/// The index of the event after which the first call (`get_weather`) is complete.
fn first_call_complete(provider: Provider, events: &[String]) -> usize {
    let position = |from: usize, needle: &str| {
        events.iter().skip(from).position(|e| e.contains(needle)).map(|i| i + from)
    };
    let found = match provider {
        // Call 0 ends when call 1 begins.
        Provider::OpenAiChat => position(0, r#""index":1,"id""#),
        Provider::OpenAiResponses => events
            .iter()
            .position(|e| e.contains("response.output_item.done") && e.contains(r#""type":"function_call""#)),
        Provider::Anthropic => {
            position(0, r#""type":"tool_use""#).and_then(|start| position(start, "content_block_stop"))
        }
        Provider::Gemini => position(0, "functionCall"),
        other => panic!("{other}"),
    };
    found.unwrap_or_else(|| panic!("{provider}: no event completes the first call"))
}

/// The two-call turn, paused after its first call is complete until that tool has
/// started.
fn two_calls_gated(provider: Provider) -> Reply {
    let events = events(&fixture(provider, "two_calls_reasoning.sse"));
    let gate = first_call_complete(provider, &events);
    assert!(gate + 1 < events.len(), "{provider}: the gate must come before the end of the stream");
    let mut parts: Vec<Part> = events.iter().take(gate + 1).cloned().map(Part::Bytes).collect();
    parts.push(Part::WaitForTool);
    parts.extend(events.iter().skip(gate + 1).cloned().map(Part::Bytes));
    Reply::Sse(parts)
}

/// A text-only turn, streamed the provider's way.
fn final_text_stream(provider: Provider) -> Reply {
    let text = FINAL_TEXT;
    let body = match provider {
        Provider::OpenAiChat => format!(
            "data: {{\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n\
             data: {{\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n\
             data: {{\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: [DONE]\n\n"
        ),
        Provider::OpenAiResponses => format!(
            "event: response.created\ndata: {{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{{\"id\":\"resp_2\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}}}\n\n\
             event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{{\"id\":\"msg_2\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}}}\n\n\
             event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_2\",\"output_index\":0,\"content_index\":0,\"delta\":\"{text}\"}}\n\n\
             event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"sequence_number\":3,\"output_index\":0,\"item\":{{\"id\":\"msg_2\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":\"{text}\",\"annotations\":[]}}]}}}}\n\n\
             event: response.completed\ndata: {{\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{{\"id\":\"resp_2\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{{\"id\":\"msg_2\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{{\"type\":\"output_text\",\"text\":\"{text}\",\"annotations\":[]}}]}}]}}}}\n\n"
        ),
        Provider::Anthropic => format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":900,\"output_tokens\":1}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: ping\ndata: {{\"type\": \"ping\"}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":12}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        ),
        Provider::Gemini => format!(
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"{text}\"}}],\"role\": \"model\"}},\"finishReason\": \"STOP\",\"index\": 0}}],\"usageMetadata\": {{\"promptTokenCount\": 180,\"candidatesTokenCount\": 12,\"totalTokenCount\": 192}},\"modelVersion\": \"m\",\"responseId\": \"r2\"}}\r\n\r\n"
        ),
        other => panic!("no stream for {other}"),
    };
    Reply::Sse(vec![Part::Bytes(body)])
}

// ---------------------------------------------------------------------------------------
// The tools: `get_weather` and `calc_add`, as the fixtures call them

fn handler(
    f: impl Fn(ArgMap) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
) -> impl Fn(Instance, ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync + 'static {
    let f = Arc::new(f);
    move |_instance, args| {
        let f = f.clone();
        Box::pin(async move { f(args) })
    }
}

fn registry(log: &Log, started: &Arc<Notify>) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    let (weather_log, started) = (log.clone(), started.clone());
    let weather = MethodSpec::new(
        MethodDefinition::new("weather", "The current weather in a city.").with_parameters(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]
        })),
        handler(move |args| {
            weather_log.push("tool started: get_weather");
            started.notify_one();
            Ok(ToolOutput::Text(format!("Sunny, 21 °C in {}", args["city"].as_str().unwrap_or("?"))))
        }),
    );
    registry.register(ToolSpec::stateless("get", "Weather").with_method(weather)).unwrap();
    let add_log = log.clone();
    let add = MethodSpec::new(
        MethodDefinition::new("add", "Add two numbers.").with_parameters(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        })),
        handler(move |args| {
            add_log.push("tool started: calc_add");
            let sum = args["a"].as_f64().unwrap_or_default() + args["b"].as_f64().unwrap_or_default();
            Ok(ToolOutput::Json(json!(sum)))
        }),
    );
    registry.register(ToolSpec::stateless("calc", "Calculator").with_method(add)).unwrap();
    Arc::new(registry)
}

// ---------------------------------------------------------------------------------------
// What the provider must receive

/// The endpoint each provider's streamed requests go to.
fn stream_path(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAiChat => "/v1/chat/completions",
        Provider::OpenAiResponses => "/v1/responses",
        Provider::Anthropic => "/v1/messages",
        Provider::Gemini => "/v1beta/models/test-model:streamGenerateContent?alt=sse",
        other => panic!("{other}"),
    }
}

fn assert_authenticated(provider: Provider, request: &Recorded) {
    let header = |name: &str| request.headers.get(name).map(String::as_str);
    match provider {
        Provider::OpenAiChat | Provider::OpenAiResponses => {
            assert_eq!(header("authorization"), Some("Bearer test-key"))
        }
        Provider::Anthropic => {
            assert_eq!(header("x-api-key"), Some("test-key"));
            assert_eq!(header("anthropic-version"), Some("2023-06-01"));
        }
        Provider::Gemini => assert_eq!(header("x-goog-api-key"), Some("test-key")),
        other => panic!("{other}"),
    }
    assert_eq!(header("content-type"), Some("application/json"), "{provider}");
}

/// The names of the tools a request offers, read the provider's way.
fn offered_tools(provider: Provider, body: &Value) -> Vec<String> {
    let names = |items: &Value, pointer: &str| -> Vec<String> {
        items
            .as_array()
            .unwrap_or_else(|| panic!("{provider}: no tools in {body}"))
            .iter()
            .map(|tool| tool.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned())
            .collect()
    };
    let mut found = match provider {
        Provider::OpenAiChat => {
            assert!(body["tools"].as_array().unwrap().iter().all(|t| t["type"] == "function"));
            names(&body["tools"], "/function/name")
        }
        Provider::OpenAiResponses => {
            assert!(
                body["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t["type"] == "function" && t["parameters"].is_object())
            );
            names(&body["tools"], "/name")
        }
        Provider::Anthropic => {
            assert!(body["tools"].as_array().unwrap().iter().all(|t| t["input_schema"]["type"] == "object"));
            names(&body["tools"], "/name")
        }
        Provider::Gemini => names(&body["tools"][0]["functionDeclarations"], "/name"),
        other => panic!("{other}"),
    };
    found.sort();
    found
}

/// The results the second request carries, as (call id, result text), read the
/// provider's way; and checks that the first turn's reasoning went back with its
/// signature.
fn returned_results(provider: Provider, body: &Value) -> Vec<(String, String)> {
    let text_of = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match provider {
        Provider::OpenAiChat => {
            let messages = body["messages"].as_array().unwrap();
            let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
            assert_eq!(assistant["tool_calls"].as_array().unwrap().len(), 2);
            assert!(assistant["reasoning_content"].as_str().unwrap().starts_with("The user wants"));
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| (m["tool_call_id"].as_str().unwrap().to_owned(), text_of(&m["content"])))
                .collect()
        }
        Provider::OpenAiResponses => {
            let input = body["input"].as_array().unwrap();
            let reasoning =
                input.iter().find(|item| item["type"] == "reasoning").expect("the reasoning item goes back");
            let final_encrypted = fixture(provider, "two_calls_reasoning.json");
            let final_encrypted: Value = serde_json::from_str(&final_encrypted).unwrap();
            let expected = final_encrypted["output"]
                .as_array()
                .unwrap()
                .iter()
                .find(|item| item["type"] == "reasoning")
                .unwrap()["encrypted_content"]
                .clone();
            assert_eq!(reasoning["encrypted_content"], expected, "the final encrypted reasoning goes back");
            assert_eq!(input.iter().filter(|item| item["type"] == "function_call").count(), 2);
            input
                .iter()
                .filter(|item| item["type"] == "function_call_output")
                .map(|item| (item["call_id"].as_str().unwrap().to_owned(), text_of(&item["output"])))
                .collect()
        }
        Provider::Anthropic => {
            let messages = body["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 3, "{body}");
            let thinking = &messages[1]["content"][0];
            assert_eq!(thinking["type"], "thinking");
            assert!(thinking["signature"].as_str().unwrap().starts_with("EqQDCkYI"));
            assert_eq!(messages[2]["role"], "user");
            messages[2]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|block| {
                    assert_eq!(block["type"], "tool_result");
                    let content = match &block["content"] {
                        Value::Array(parts) => parts.iter().map(|p| text_of(&p["text"])).collect::<String>(),
                        other => text_of(other),
                    };
                    (block["tool_use_id"].as_str().unwrap().to_owned(), content)
                })
                .collect()
        }
        Provider::Gemini => {
            let contents = body["contents"].as_array().unwrap();
            assert_eq!(contents.len(), 3, "{body}");
            let model_parts = contents[1]["parts"].as_array().unwrap();
            assert!(
                model_parts
                    .iter()
                    .any(|p| p["functionCall"].is_object() && p["thoughtSignature"].is_string()),
                "the signature of the first call goes back: {}",
                contents[1]
            );
            contents[2]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| {
                    let response = &part["functionResponse"];
                    (response["id"].as_str().unwrap().to_owned(), text_of(&response["response"]["output"]))
                })
                .collect()
        }
        other => panic!("{other}"),
    }
}

fn call_ids(provider: Provider) -> [&'static str; 2] {
    match provider {
        Provider::OpenAiChat => ["call_00_Qm3vX8rT1kLw5Zp9NcB2aYe7", "call_01_Hd6sJ4gU0fVn2Rq8WtK1oLx3"],
        Provider::OpenAiResponses => ["call_Wx4hT9bN2qLm7RcV5pKs8dGe", "call_Yj6fP3sD1nQa8ZuE4kMw2hBt"],
        Provider::Anthropic => ["toolu_01Gh5NkT8wQz3VmX1cRb7JpL", "toolu_01Pd2YfS6aLr9KeW4tHn8BqU"],
        Provider::Gemini => ["p4n7kx2q", "m8w3ty6v"],
        other => panic!("{other}"),
    }
}

// ---------------------------------------------------------------------------------------
// Conversations

async fn streamed_conversation(provider: Provider) {
    let server = Server::start(vec![two_calls_gated(provider), final_text_stream(provider)]).await;
    let log = server.state.log.clone();
    let model = server.client(provider).build().unwrap();
    let engine = Engine::new(registry(&log, &server.state.tool_started)).with_protocol(model.protocol());
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What's the weather in Paris, and what is 2 + 40?"));

    let outcome = engine
        .run_conversation_streamed(&model, &mut conversation, &ExecutionContext::default())
        .await
        .unwrap_or_else(|e| panic!("{provider}: {e}"));

    assert_eq!(outcome.stop, StopReason::Finished, "{provider}");
    assert_eq!(outcome.rounds.len(), 2, "{provider}");
    assert_eq!(outcome.final_text(), FINAL_TEXT, "{provider}");
    let first = &outcome.rounds[0].cycle;
    assert!(
        first.execution_results.iter().all(|r| r.is_success()),
        "{provider}: {:?}",
        first.execution_results
    );

    // The first tool started while the first stream was still open.
    let entries = log.entries();
    let started = entries.iter().position(|e| e == "tool started: get_weather");
    let resumed = entries.iter().position(|e| e == "server: rest of the stream");
    assert!(matches!((started, resumed), (Some(s), Some(r)) if s < r), "{provider}: {entries:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{provider}");
    for request in requests.iter() {
        assert_eq!(request.path, stream_path(provider), "{provider}");
        assert_authenticated(provider, request);
        if provider != Provider::Gemini {
            assert_eq!(request.body["stream"], true, "{provider}");
        }
        assert_eq!(offered_tools(provider, &request.body), ["calc_add", "get_weather"], "{provider}");
    }
    let mut results = returned_results(provider, &requests[1].body);
    results.sort();
    let [weather_id, add_id] = call_ids(provider);
    let mut expected = vec![
        (weather_id.to_owned(), "Sunny, 21 °C in Paris".to_owned()),
        (add_id.to_owned(), "42.0".to_owned()),
    ];
    expected.sort();
    assert_eq!(results, expected, "{provider}");
}

#[tokio::test]
async fn openai_chat_streamed_conversation() {
    streamed_conversation(Provider::OpenAiChat).await;
}

#[tokio::test]
async fn openai_responses_streamed_conversation() {
    streamed_conversation(Provider::OpenAiResponses).await;
}

#[tokio::test]
async fn anthropic_streamed_conversation() {
    streamed_conversation(Provider::Anthropic).await;
}

#[tokio::test]
async fn gemini_streamed_conversation() {
    streamed_conversation(Provider::Gemini).await;
}

/// The same two rounds without streaming: whole bodies, the `generateContent` endpoint
/// for Gemini, no `stream` flag.
#[tokio::test]
async fn conversations_without_streaming() {
    for provider in PROVIDERS {
        let final_body = fixture(provider, "text_only.json");
        let server = Server::start(vec![
            json_reply(200, fixture(provider, "two_calls_reasoning.json")),
            json_reply(200, final_body.clone()),
        ])
        .await;
        let log = server.state.log.clone();
        let model = server.client(provider).build().unwrap();
        let engine = Engine::new(registry(&log, &server.state.tool_started)).with_protocol(model.protocol());
        let mut conversation = Conversation::new();
        conversation.push(Message::user("What's the weather in Paris, and what is 2 + 40?"));
        let outcome =
            engine.run_conversation(&model, &mut conversation, &ExecutionContext::default()).await.unwrap();

        let expected_text =
            model.wire_format().parse_response(&serde_json::from_str(&final_body).unwrap()).unwrap();
        assert_eq!(outcome.final_text(), expected_text.text(), "{provider}");
        assert_eq!(outcome.rounds.len(), 2, "{provider}");
        let requests = server.requests();
        assert!(requests.iter().all(|r| r.body.get("stream").is_none()), "{provider}");
        if provider == Provider::Gemini {
            assert_eq!(requests[0].path, "/v1beta/models/test-model:generateContent");
        }
        let mut results = returned_results(provider, &requests[1].body);
        results.sort();
        let [weather_id, add_id] = call_ids(provider);
        let mut expected = vec![
            (weather_id.to_owned(), "Sunny, 21 °C in Paris".to_owned()),
            (add_id.to_owned(), "42.0".to_owned()),
        ];
        expected.sort();
        assert_eq!(results, expected, "{provider}");
    }
}

// ---------------------------------------------------------------------------------------
// Streams that go wrong

/// The connection drops after the first call's arguments began: the stream ends with
/// a transport error, the conversation with the model's error.
#[tokio::test]
async fn a_stream_that_breaks_mid_call_is_a_transport_error() {
    for provider in PROVIDERS {
        let cut = fixture(provider, "cut_mid_call.sse");
        let server = Server::start(vec![Reply::Sse(vec![Part::Bytes(cut), Part::Break])]).await;
        let log = server.state.log.clone();
        let model = server.client(provider).build().unwrap();
        let engine = Engine::new(registry(&log, &server.state.tool_started)).with_protocol(model.protocol());
        let mut conversation = Conversation::new();
        conversation.push(Message::user("weather?"));
        let error = engine
            .run_conversation_streamed(&model, &mut conversation, &ExecutionContext::default())
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                EngineError::Model(ChatModelError::Transport { stage: "reading the stream", .. })
            ),
            "{provider}: {error:?}"
        );
        assert!(log.entries().is_empty(), "{provider}: the cut call must not run");
        assert_eq!(conversation.len(), 1, "{provider}: the broken turn is not recorded");
        assert_eq!(server.requests().len(), 1, "{provider}: a stream that began is not retried");
    }
}

/// The response ends cleanly but mid-call: the call is reported incomplete, and its
/// result is an error that says so; nothing runs.
#[tokio::test]
async fn a_stream_that_ends_mid_call_gives_an_error_result() {
    for provider in PROVIDERS {
        let server =
            Server::start(vec![Reply::Sse(vec![Part::Bytes(fixture(provider, "cut_mid_call.sse"))])]).await;
        let log = server.state.log.clone();
        let model = server.client(provider).build().unwrap();
        let engine = Engine::new(registry(&log, &server.state.tool_started)).with_protocol(model.protocol());
        let request = ModelRequest::new(vec![Message::user("weather?")]);
        let streamed = engine.run_stream(model.stream(&request), &ExecutionContext::default()).await.unwrap();
        assert_eq!(
            streamed.turn.finish_reason,
            Some(FinishReason::Error),
            "{provider}: the turn was cut off"
        );
        let results = &streamed.execution_results;
        if provider == Provider::Gemini {
            // Gemini sends each call whole in one event; the cut event is dropped, so
            // no call arrived.
            assert!(results.is_empty(), "{provider}: {results:?}");
            continue;
        }
        assert_eq!(results.len(), 1, "{provider}: {results:?}");
        assert!(!results[0].is_success(), "{provider}");
        let said = results[0].result.to_lowercase();
        assert!(said.contains("finish reason: error") && said.contains("was complete"), "{provider}: {said}");
        assert!(log.entries().is_empty(), "{provider}");
    }
}

/// An error event inside a stream is the provider's error.
#[tokio::test]
async fn an_error_event_ends_the_stream_with_the_providers_error() {
    for provider in PROVIDERS {
        let server =
            Server::start(vec![Reply::Sse(vec![Part::Bytes(fixture(provider, "stream_error.sse"))])]).await;
        let model = server.client(provider).build().unwrap();
        let request = ModelRequest::new(vec![Message::user("hi")]);
        let items: Vec<_> = model.stream(&request).collect().await;
        let last = items.last().unwrap();
        assert!(matches!(last, Err(ChatModelError::Provider { .. })), "{provider}: {last:?}");
        assert_eq!(items.iter().filter(|item| item.is_err()).count(), 1, "{provider}");
    }
}

/// A server that ignores `stream` and answers with a whole body still gives the turn.
#[tokio::test]
async fn a_whole_body_answer_to_a_stream_request_is_read_as_the_turn() {
    let provider = Provider::OpenAiChat;
    let body = fixture(provider, "two_calls_reasoning.json");
    let server = Server::start(vec![json_reply(200, body.clone())]).await;
    let model = server.client(provider).build().unwrap();
    let request = ModelRequest::new(vec![Message::user("hi")]);
    let mut turn = TurnAccumulator::new();
    let mut deltas = model.stream(&request);
    while let Some(delta) = deltas.next().await {
        turn.push(&delta.unwrap());
    }
    let expected = model.wire_format().parse_response(&serde_json::from_str(&body).unwrap()).unwrap();
    assert_eq!(turn.finish(), expected);
}

/// `max_response_bytes` bounds what is read of an answer, whole or streamed: at the
/// limit it reads as usual; one byte more is a `Malformed` error that says so, and a cut
/// stream ends its turn as an error.
#[tokio::test]
async fn response_length_at_the_limit_and_one_past_it() {
    for provider in PROVIDERS {
        let body = fixture(provider, "two_calls_reasoning.json");
        for (limit, allowed) in [(body.len(), true), (body.len() - 1, false)] {
            let server = Server::start(vec![json_reply(200, body.clone())]).await;
            let model = server.client(provider).max_response_bytes(limit).build().unwrap();
            let answer = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await;
            match (allowed, &answer) {
                (true, Ok(turn)) => assert_eq!(turn.tool_calls().count(), 2, "{provider}"),
                (false, Err(ChatModelError::Malformed(message))) => {
                    assert!(message.contains("longer than the limit"), "{provider}: {message}")
                }
                _ => panic!("{provider}, limit {limit} of {}: {answer:?}", body.len()),
            }
        }

        let sse = fixture(provider, "two_calls_reasoning.sse");
        for (limit, allowed) in [(sse.len(), true), (sse.len() - 1, false)] {
            let server = Server::start(vec![Reply::Sse(vec![Part::Bytes(sse.clone())])]).await;
            let model = server.client(provider).max_response_bytes(limit).build().unwrap();
            let items: Vec<_> = model.stream(&ModelRequest::new(vec![Message::user("hi")])).collect().await;
            let errors: Vec<_> = items.iter().filter_map(|item| item.as_ref().err()).collect();
            let mut turn = TurnAccumulator::new();
            for delta in items.iter().filter_map(|item| item.as_ref().ok()) {
                turn.push(delta);
            }
            let turn = turn.finish();
            if allowed {
                assert!(errors.is_empty(), "{provider}: {errors:?}");
                assert_ne!(turn.finish_reason, Some(FinishReason::Error), "{provider}");
            } else {
                assert!(
                    matches!(errors.as_slice(), [ChatModelError::Malformed(m)] if m.contains("longer than the limit")),
                    "{provider}: {errors:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Refusals, retries, timeouts

/// A 429 with the provider's error body: without retries, a typed error with the
/// provider's message and the wait it asked for.
#[tokio::test]
async fn a_rate_limit_is_a_retryable_error_with_the_requested_wait() {
    for provider in PROVIDERS {
        let refusal = Reply::Json {
            status: 429,
            headers: vec![("retry-after", "7".into())],
            body: fixture(provider, "error_429.json"),
        };
        let server = Server::start(vec![refusal]).await;
        let model = server.client(provider).retry(HttpRetry::none()).build().unwrap();
        let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
        let ChatModelError::Status { status, message, retry_after, .. } = &error else {
            panic!("{provider}: {error:?}");
        };
        assert_eq!(*status, 429);
        assert!(
            !message.is_empty() && !message.starts_with('{'),
            "{provider}: the provider's message: {message}"
        );
        assert_eq!(*retry_after, Some(Duration::from_secs(7)), "{provider}");
        assert!(error.is_retryable());
    }
}

/// Gemini says how long to wait in the body (`RetryInfo`), which is read when no
/// header says it.
#[tokio::test]
async fn gemini_retry_info_is_the_wait() {
    let server = Server::start(vec![json_reply(429, fixture(Provider::Gemini, "error_429.json"))]).await;
    let model = server.client(Provider::Gemini).retry(HttpRetry::none()).build().unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    let body: Value = serde_json::from_str(&fixture(Provider::Gemini, "error_429.json")).unwrap();
    let delay = body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|d| d["retryDelay"].as_str())
        .expect("the fixture carries a RetryInfo");
    let seconds: f64 = delay.trim_end_matches('s').parse().unwrap();
    assert_eq!(error.retry_after(), Some(Duration::from_secs_f64(seconds)));
}

/// With retries, a 429 (asking for no wait) and a 503 are retried, and the third
/// answer is the turn; the stream begins only once.
#[tokio::test]
async fn refusals_are_retried_before_the_stream_begins() {
    let provider = Provider::Anthropic;
    let server = Server::start(vec![
        Reply::Json {
            status: 429,
            headers: vec![("retry-after", "0".into())],
            body: fixture(provider, "error_429.json"),
        },
        json_reply(
            503,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        ),
        final_text_stream(provider),
    ])
    .await;
    let model = server.client(provider).build().unwrap();
    let request = ModelRequest::new(vec![Message::user("hi")]);
    let mut turn = TurnAccumulator::new();
    let mut deltas = model.stream(&request);
    while let Some(delta) = deltas.next().await {
        turn.push(&delta.unwrap());
    }
    assert_eq!(turn.finish().text(), FINAL_TEXT);
    assert_eq!(server.requests().len(), 3);
}

/// Retries end: after `max_retries` the last refusal is returned. A client error (400)
/// is never retried.
#[tokio::test]
async fn retries_are_bounded_and_client_errors_are_not_retried() {
    let provider = Provider::OpenAiChat;
    let server_error = || json_reply(500, r#"{"error":{"message":"boom","type":"server_error"}}"#.into());
    let server = Server::start(vec![server_error(), server_error(), server_error(), server_error()]).await;
    let model = server
        .client(provider)
        .retry(HttpRetry::default().max_retries(2).initial_backoff(Duration::ZERO))
        .build()
        .unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    assert!(
        matches!(&error, ChatModelError::Status { status: 500, message, .. } if message == "boom"),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 3, "one try and two retries");

    let server = Server::start(vec![json_reply(
        400,
        r#"{"error":{"message":"Invalid schema for function","type":"invalid_request_error"}}"#.into(),
    )])
    .await;
    let model = server.client(provider).build().unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    assert!(
        matches!(&error, ChatModelError::Status { status: 400, kind: Some(kind), .. } if kind == "invalid_request_error"),
        "{error:?}"
    );
    assert!(!error.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

/// A provider asking to wait longer than the policy allows gets its error back at once.
#[tokio::test]
async fn a_wait_longer_than_the_policy_allows_is_not_waited_for() {
    let server = Server::start(vec![Reply::Json {
        status: 429,
        headers: vec![("retry-after", "3600".into())],
        body: fixture(Provider::OpenAiChat, "error_429.json"),
    }])
    .await;
    let model = server.client(Provider::OpenAiChat).build().unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(server.requests().len(), 1);
}

/// A server that never answers, and a stream that goes silent, end in timeouts.
#[tokio::test]
async fn silent_servers_time_out() {
    let server = Server::start(vec![Reply::Hang]).await;
    let model = server
        .client(Provider::OpenAiChat)
        .request_timeout(Duration::from_millis(200))
        .retry(HttpRetry::none())
        .build()
        .unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    assert!(matches!(error, ChatModelError::Timeout { stage: "waiting for the response", .. }), "{error:?}");

    // One event, then silence: the stream waits for a tool that never starts.
    // (Event 0 is a comment, event 1 an empty first chunk, event 2 the first reasoning.)
    let first_event = events(&fixture(Provider::OpenAiChat, "two_calls_reasoning.sse")).remove(2);
    let server = Server::start(vec![Reply::Sse(vec![Part::Bytes(first_event), Part::WaitForTool])]).await;
    let model = server.client(Provider::OpenAiChat).idle_timeout(Duration::from_millis(200)).build().unwrap();
    let items: Vec<_> = model.stream(&ModelRequest::new(vec![Message::user("hi")])).collect().await;
    assert!(items.first().is_some_and(Result::is_ok), "what came before the silence is kept");
    assert!(
        matches!(
            items.last(),
            Some(Err(ChatModelError::Timeout { stage: "waiting for the next part of the stream", .. }))
        ),
        "{items:?}"
    );
}

/// Connection refused: a transport error, retried, then returned.
#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    // Bind and drop a listener, so the port is (almost certainly) closed.
    let port = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let model = HttpChatModel::builder(Provider::OpenAiChat)
        .env(|_| None)
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .model("m")
        .retry(HttpRetry::default().max_retries(1).initial_backoff(Duration::ZERO))
        .build()
        .unwrap();
    let error = model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap_err();
    assert!(matches!(error, ChatModelError::Transport { stage: "sending the request", .. }), "{error:?}");
}

/// A success status with a body that is not the provider's shape is a typed error.
#[tokio::test]
async fn unreadable_bodies_are_malformed_errors() {
    let server =
        Server::start(vec![json_reply(200, "<html>gateway</html>".into()), json_reply(200, "{}".into())])
            .await;
    let model = server.client(Provider::OpenAiChat).build().unwrap();
    let request = ModelRequest::new(vec![Message::user("hi")]);
    let not_json = model.complete(&request).await.unwrap_err();
    assert!(matches!(&not_json, ChatModelError::Malformed(m) if m.contains("not JSON")), "{not_json:?}");
    let wrong_shape = model.complete(&request).await.unwrap_err();
    assert!(matches!(&wrong_shape, ChatModelError::Malformed(m) if m.contains("choices")), "{wrong_shape:?}");
}

/// Extra headers go with every request.
#[tokio::test]
async fn extra_headers_are_sent() {
    let server = Server::start(vec![json_reply(200, fixture(Provider::OpenAiChat, "text_only.json"))]).await;
    let model = server.client(Provider::OpenAiChat).header("OpenAI-Organization", "org-1").build().unwrap();
    model.complete(&ModelRequest::new(vec![Message::user("hi")])).await.unwrap();
    assert_eq!(server.requests()[0].headers.get("openai-organization").map(String::as_str), Some("org-1"));
}

/// A server without native tool support: the engine speaks VCP over the same client and
/// the same tools. The tools are offered in a system message, requests come back in the
/// reply's text, results go back as text.
#[tokio::test]
async fn vcp_over_a_chat_completions_server_without_tool_support() {
    let text_reply = |text: &str| {
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ]})
        .to_string()
    };
    let request_block = "Adding.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>";
    let server =
        Server::start(vec![json_reply(200, text_reply(request_block)), json_reply(200, text_reply("42."))])
            .await;
    let log = server.state.log.clone();
    // A local server: no key.
    let model = HttpChatModel::builder(Provider::OpenAiChat)
        .env(|_| None)
        .base_url(server.base_url(Provider::OpenAiChat))
        .model("local-model")
        .build()
        .unwrap();
    let engine = Engine::new(registry(&log, &server.state.tool_started)); // VCP by default
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What is 2 + 40?"));
    let outcome =
        engine.run_conversation(&model, &mut conversation, &ExecutionContext::default()).await.unwrap();
    assert_eq!(outcome.final_text(), "42.");
    assert_eq!(log.entries(), ["tool started: calc_add"]);

    let requests = server.requests();
    assert!(!requests[0].headers.contains_key("authorization"));
    for request in requests.iter() {
        assert!(request.body.get("tools").is_none(), "no native tools: {}", request.body);
        let system = &request.body["messages"][0];
        assert_eq!(system["role"], "system");
        let prompt = system["content"].as_str().unwrap();
        assert!(prompt.contains("<<<[TOOL_REQUEST]>>>") && prompt.contains("Add two numbers."), "{prompt}");
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert!(messages[2]["content"].as_str().unwrap().contains("<<<[TOOL_REQUEST]>>>"));
    assert_eq!(messages[3]["role"], "user", "results as text: {}", messages[3]);
    assert!(messages[3]["content"].as_str().unwrap().contains("42"), "{}", messages[3]);
}
