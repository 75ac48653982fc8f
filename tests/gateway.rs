//! The gateway on loopback, in front of a server that replays recorded model text: the
//! crate's own `HttpChatModel` (Chat Completions with native tools) as the client, and
//! plain HTTP for what a client library hides (headers, raw events, disconnects).
//!
//! Waits are bounded: a fault that hung the gateway fails the test at `BOUND` instead.

#![cfg(feature = "gateway")]

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tool_calling::ToolExecutionResult;
use tool_calling::gateway::{DIAGNOSTIC_HEADER, Gateway, GatewayConfig};
use tool_calling::model::{
    AssistantTurn, ChatModel, ContentBlock, FinishReason, Message, ModelRequest, Role, ToolCall, ToolChoice,
    ToolResultBlock, TurnAccumulator,
};
use tool_calling::providers::{HttpChatModel, Provider};

#[path = "../examples/support/replay_upstream.rs"]
mod replay_upstream;
use replay_upstream::Replay;

/// The longest any request here may take before the test calls it a hang.
const BOUND: Duration = Duration::from_secs(20);

/// Serves a gateway of `config` on a free loopback port; its base URL (`…/v1`).
async fn serve(config: GatewayConfig) -> String {
    let gateway = Gateway::new(config).expect("a valid configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    format!("http://{address}/v1")
}

async fn replay() -> Replay {
    replay_upstream::start(Duration::ZERO).await.expect("the replay server starts")
}

fn client(url: &str) -> HttpChatModel {
    HttpChatModel::builder(Provider::OpenAiChat)
        .base_url(url)
        .model("replay")
        .api_key("test-key")
        .build()
        .expect("a client")
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time", "description": "The time in a zone.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}},
    ])
}

fn request(scenario: &str) -> ModelRequest {
    let mut request = ModelRequest::new(vec![
        Message::system("You are terse."),
        Message::user(format!("Weather and time in Paris? replay:{scenario}")),
    ]);
    request.tools = Some(tools());
    request
}

/// The calls of a turn as `(name, arguments)`.
fn calls(turn: &AssistantTurn) -> Vec<(String, Value)> {
    turn.tool_calls().map(|c| (c.name.clone(), c.arguments_json().expect("JSON arguments"))).collect()
}

fn both_calls() -> Vec<(String, Value)> {
    vec![
        ("get_weather".to_string(), json!({"city": "Paris"})),
        ("get_time".to_string(), json!({"zone": "Europe/Paris"})),
    ]
}

/// The protocols and the recorded replies written in them.
const PROTOCOLS: [(&str, &str); 5] = [
    ("vcp", "vcp_parallel"),
    ("hermes", "hermes_parallel"),
    ("mistral", "mistral_parallel"),
    ("pythonic", "pythonic_parallel"),
    ("auto", "hermes_parallel"),
];

#[tokio::test]
async fn calls_come_back_parsed_whole_and_streamed_in_every_protocol() {
    let upstream = replay().await;
    for (protocol, scenario) in PROTOCOLS {
        let url = serve(GatewayConfig::new(&upstream.url).protocol(protocol)).await;
        let client = client(&url);
        let turn = tokio::time::timeout(BOUND, client.complete(&request(scenario))).await.expect("no hang");
        let turn = turn.unwrap_or_else(|e| panic!("{protocol}: {e}"));
        assert_eq!(calls(&turn), both_calls(), "{protocol}");
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls), "{protocol}");
        let ids: Vec<&str> = turn.tool_calls().map(|c| c.id.as_str()).collect();
        assert!(ids.iter().all(|id| id.starts_with("call_")) && ids[0] != ids[1], "{ids:?}");
        let text = turn.text();
        assert!(!text.contains("get_weather"), "{protocol}: call markup is not content: {text:?}");
        let reasoning: String = turn.reasoning().map(|r| r.text.as_str()).collect();
        match scenario {
            "hermes_parallel" => assert!(reasoning.contains("call both tools"), "{protocol}: {reasoning:?}"),
            "vcp_parallel" => assert_eq!(reasoning, "Two lookups, both at once.", "{protocol}"),
            "pythonic_parallel" => assert_eq!(reasoning, "Both tools, in one list.", "{protocol}"),
            _ => assert_eq!(reasoning, ""),
        }

        // Streamed: the same calls, each as soon as it was read.
        let mut accumulator = TurnAccumulator::new();
        let streamed_request = request(scenario);
        let mut deltas = client.stream(&streamed_request);
        while let Some(delta) = tokio::time::timeout(BOUND, deltas.next()).await.expect("no hang") {
            accumulator.push(&delta.unwrap_or_else(|e| panic!("{protocol}: {e}")));
        }
        let streamed = accumulator.finish();
        assert_eq!(calls(&streamed), both_calls(), "{protocol} streamed");
        assert_eq!(streamed.finish_reason, Some(FinishReason::ToolCalls));
    }
    // Every request went upstream as text: the tools as the protocol's prompt, no
    // `tools` field, streamed with usage.
    for body in upstream.requests() {
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "{body}");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        let system = body["messages"][0]["content"].as_str().expect("a system message");
        assert!(system.starts_with("You are terse.\n\n") && system.contains("get_time"), "{system}");
    }
}

/// A second round: the client sends the assistant's calls and the tools' results back.
fn second_round(protocol_reply: &str) -> ModelRequest {
    let mut request = request(protocol_reply);
    let assistant = Message::assistant("I'll check both.")
        .with_block(ContentBlock::ToolCall(ToolCall::new("call_a", "get_weather", r#"{"city": "Paris"}"#)))
        .with_block(ContentBlock::ToolCall(ToolCall::new(
            "call_b",
            "get_time",
            r#"{"zone": "Europe/Paris"}"#,
        )));
    let result = |id: &str, name: &str, text: &str| {
        let result = ToolExecutionResult::success(id, name, text);
        Message::with_content(
            Role::Tool,
            vec![ContentBlock::ToolResult(ToolResultBlock::from_result(&result))],
        )
    };
    request.messages.push(assistant);
    // The results in the other order than the calls: matched by id.
    request.messages.push(result("call_b", "get_time", "10:00"));
    request.messages.push(result("call_a", "get_weather", "18C sunny"));
    request
}

#[tokio::test]
async fn a_second_round_carries_the_results_upstream_in_the_protocols_text() {
    let cases = [
        ("vcp", "<<<[TOOL_REQUEST]>>>", "get_weather"),
        ("hermes", "<tool_call>", "<tool_response>"),
        ("mistral", "[TOOL_CALLS]", "[TOOL_RESULTS]"),
        ("pythonic", "get_weather(city=", "10:00"),
    ];
    for (protocol, call_mark, result_mark) in cases {
        let upstream = replay().await;
        let url = serve(GatewayConfig::new(&upstream.url).protocol(protocol)).await;
        let turn =
            tokio::time::timeout(BOUND, client(&url).complete(&second_round("text"))).await.expect("no hang");
        let turn = turn.unwrap_or_else(|e| panic!("{protocol}: {e}"));
        assert_eq!(
            turn.text(),
            "Round two: the weather and the time arrived in a user message.",
            "{protocol}"
        );
        let sent = &upstream.requests()[0]["messages"];
        let messages = sent.as_array().expect("messages");
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap_or_default()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "{protocol}: {sent}");
        let assistant = messages[2]["content"].as_str().expect("text");
        assert!(
            assistant.starts_with("I'll check both.\n") && assistant.contains(call_mark),
            "{protocol}: {assistant}"
        );
        assert!(messages[2].get("tool_calls").is_none());
        let results = messages[3]["content"].as_str().expect("text");
        assert!(results.contains(result_mark), "{protocol}: {results}");
        // In the calls' order, whatever order the client sent them in.
        let (weather, time) =
            (results.find("18C sunny").expect("weather"), results.find("10:00").expect("time"));
        assert!(weather < time, "{protocol}: {results}");
    }
}

/// Posts `body` to the gateway's Chat Completions; the status, the headers, the body.
async fn post(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let http = reqwest::Client::new();
    let response = tokio::time::timeout(
        BOUND,
        http.post(format!("{url}/chat/completions"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("no hang")
    .expect("the gateway answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(BOUND, response.text()).await.expect("no hang").unwrap_or_default();
    (status, headers, text)
}

fn chat_body(scenario: &str) -> Value {
    json!({"model": "replay", "messages": [{"role": "user", "content": format!("Hi. replay:{scenario}")}],
           "tools": tools()})
}

#[tokio::test]
async fn required_tool_choice_retries_once_then_answers_with_a_diagnostic() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes")).await;
    let mut body = chat_body("text");
    body["tool_choice"] = json!("required");
    let (status, headers, text) = post(&url, &body).await;
    assert_eq!(status, 200, "{text}");
    let diagnostic = headers.get(DIAGNOSTIC_HEADER).expect("a diagnostic").to_str().unwrap_or_default();
    assert!(diagnostic.contains("even when reminded"), "{diagnostic}");
    let reply: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(reply["choices"][0]["message"]["content"], "Hello! Nothing to call here.");
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "one retry");
    let retry = requests[1]["messages"].as_array().expect("messages");
    assert_eq!(retry[retry.len() - 2]["content"], "Hello! Nothing to call here.");
    assert!(
        retry[retry.len() - 1]["content"].as_str().unwrap_or_default().contains("at least one tool call")
    );
    let system = requests[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Answer this turn with at least one tool call."), "{system}");

    // Retries off: one request, the same diagnostic without the reminder.
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes").retry_required(false)).await;
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_time"}});
    body["stream"] = json!(true);
    let (status, headers, text) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert!(headers.get(DIAGNOSTIC_HEADER).is_some());
    assert!(text.contains("Hello! Nothing to call here.".split(' ').next().unwrap_or_default()), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert_eq!(upstream.requests().len(), 1);
    let system = upstream.requests()[0]["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    assert!(system.contains("a call to `get_time`") && !system.contains("get_weather"), "{system}");

    // A reply that calls a tool is no retry.
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes")).await;
    let mut body = chat_body("hermes_parallel");
    body["tool_choice"] = json!("required");
    let (_, headers, text) = post(&url, &body).await;
    assert!(headers.get(DIAGNOSTIC_HEADER).is_none(), "{text}");
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn calls_of_tools_not_offered_or_beyond_the_first_stay_text_and_cut_calls_are_withheld() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes")).await;
    for (scenario, content) in [
        ("hermes_unknown", replay_upstream::scenario("hermes_unknown").expect("recorded").1),
        // The call cut off is no call, and its markup is shown to no one: the text
        // before it stays.
        ("hermes_cut", "One moment.\n"),
    ] {
        for stream in [false, true] {
            let mut body = chat_body(scenario);
            body["stream"] = json!(stream);
            let (_, _, text) = post(&url, &body).await;
            if stream {
                assert!(!text.contains("\"tool_calls\""), "{scenario}: {text}");
                let streamed: String = text
                    .split("\n\n")
                    .filter_map(|event| event.strip_prefix("data: "))
                    .filter_map(|data| serde_json::from_str::<Value>(data).ok())
                    .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_string))
                    .collect();
                assert_eq!(streamed, content, "{scenario}");
                continue;
            }
            let reply: Value = serde_json::from_str(&text).expect("JSON");
            let message = &reply["choices"][0]["message"];
            assert!(message.get("tool_calls").is_none(), "{scenario}: {message}");
            assert_eq!(message["content"], content, "{scenario}");
            assert_eq!(reply["choices"][0]["finish_reason"], "stop");
        }
    }
    let mut body = chat_body("hermes_parallel");
    body["parallel_tool_calls"] = json!(false);
    let (_, _, text) = post(&url, &body).await;
    let reply: Value = serde_json::from_str(&text).expect("JSON");
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["tool_calls"].as_array().map(Vec::len), Some(1));
    assert!(message["content"].as_str().unwrap_or_default().contains("get_time"), "{message}");
}

#[tokio::test]
async fn calls_whose_arguments_fail_the_schema_never_reach_the_client() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes")).await;
    // `get_weather` requires `city`; the recorded call gives `town`.
    for stream in [false, true] {
        let mut body = chat_body("hermes_invalid");
        body["stream"] = json!(stream);
        let (status, _, text) = post(&url, &body).await;
        assert_eq!(status, 200, "{text}");
        assert!(!text.contains("tool_calls\":[") && !text.contains("\"tool_calls\""), "{text}");
        assert!(!text.contains("tool_call>") && !text.contains("town"), "no markup, no arguments: {text}");
    }
    // A reply that had to call is asked again, told what was wrong, as the engine tells a
    // model whose call it could not run.
    let mut body = chat_body("hermes_invalid");
    body["tool_choice"] = json!("required");
    let before = upstream.requests().len();
    let (_, headers, text) = post(&url, &body).await;
    let requests = upstream.requests();
    assert_eq!(requests.len() - before, 2, "one retry: {text}");
    let retry = requests[requests.len() - 1]["messages"].as_array().expect("messages").clone();
    let reminder = retry[retry.len() - 1]["content"].as_str().unwrap_or_default();
    assert!(reminder.contains("`get_weather` was not made") && reminder.contains("city"), "{reminder}");
    let diagnostic = headers.get(DIAGNOSTIC_HEADER).and_then(|h| h.to_str().ok()).unwrap_or_default();
    assert!(diagnostic.contains("withheld"), "{diagnostic}");
    let reply: Value = serde_json::from_str(&text).expect("JSON");
    assert!(reply["choices"][0]["message"].get("tool_calls").is_none(), "{reply}");
}

#[tokio::test]
async fn streamed_chunks_are_chat_completion_chunks_with_usage_passed_through() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("vcp")).await;
    let mut body = chat_body("vcp_parallel");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let (status, headers, text) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-type").and_then(|v| v.to_str().ok()), Some("text/event-stream"));
    let chunks: Vec<Value> = text
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).expect("JSON chunks"))
        .collect();
    assert!(text.ends_with("data: [DONE]\n\n"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let calls: Vec<&Value> =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0)).collect();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0]["index"].as_u64(), calls[1]["index"].as_u64()), (Some(0), Some(1)));
    assert_eq!(calls[1]["function"]["name"], "get_time");
    assert_eq!(calls[1]["function"]["arguments"], r#"{"zone":"Europe/Paris"}"#);
    let reasoning: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str()).collect();
    assert_eq!(reasoning, "Two lookups, both at once.");
    let finish: Vec<&str> = chunks.iter().filter_map(|c| c["choices"][0]["finish_reason"].as_str()).collect();
    assert_eq!(finish, ["tool_calls"]);
    let usage = &chunks.last().expect("a usage chunk")["usage"];
    assert!(usage["prompt_tokens"].as_u64().is_some_and(|n| n > 0), "{usage}");
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"]));
}

/// Reads a streamed reply to its end; its events' data.
async fn events(url: &str, body: &Value) -> (u16, Vec<String>) {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let (status, _, text) = post(url, &body).await;
    let data = text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).map(str::to_string).collect();
    (status, data)
}

#[tokio::test]
async fn upstream_faults_end_in_openai_shaped_errors_never_a_hang() {
    let upstream = replay().await;
    let quick = GatewayConfig::new(&upstream.url).protocol("vcp").timeout(Duration::from_millis(300));
    let url = serve(quick).await;
    let error_of = |text: &str| -> Value {
        let body: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("JSON: {text}"));
        assert!(body["error"]["message"].is_string(), "{body}");
        body["error"].clone()
    };
    // Errors before anything was sent: an HTTP error.
    for (scenario, status, kind) in [
        ("fault_500", 500, "upstream_error"),
        ("fault_429", 429, "upstream_error"),
        ("fault_hang", 504, "timeout"),
        ("fault_slow", 504, "timeout"),
        ("fault_cut", 502, "upstream_stream_error"),
        ("fault_error_event", 502, "upstream_stream_error"),
        ("fault_garbage", 502, "upstream_stream_error"),
    ] {
        let (got, _, text) = post(&url, &chat_body(scenario)).await;
        assert_eq!(got, status, "{scenario}: {text}");
        assert_eq!(error_of(&text)["type"], kind, "{scenario}");
    }
    // The upstream's own message comes through.
    let (_, _, text) = post(&url, &chat_body("fault_500")).await;
    assert!(error_of(&text)["message"].as_str().unwrap_or_default().contains("asked to fail"), "{text}");
    // Streamed: a fault after the reply began is the stream's last event.
    for scenario in ["fault_slow", "fault_cut", "fault_error_event", "fault_garbage"] {
        let (status, data) = events(&url, &chat_body(scenario)).await;
        assert_eq!(status, 200, "{scenario}");
        let last: Value = serde_json::from_str(data.last().expect("events")).expect("JSON");
        assert!(last["error"]["message"].is_string(), "{scenario}: {last}");
        assert!(!data.iter().any(|d| d == "[DONE]"), "{scenario}");
        let text: String = data
            .iter()
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_string))
            .collect();
        assert_eq!(text, "Partial reply before the fault", "{scenario}: what came before the fault was sent");
    }
    // A reply longer than the limit.
    let small = serve(GatewayConfig::new(&upstream.url).max_reply_bytes(200)).await;
    let (status, _, text) = post(&small, &chat_body("vcp_parallel")).await;
    assert_eq!(status, 502, "{text}");
    assert!(error_of(&text)["message"].as_str().unwrap_or_default().contains("limit of 200 bytes"), "{text}");
    // An upstream nobody listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = closed.local_addr().expect("an address");
    drop(closed);
    let url = serve(GatewayConfig::new(format!("http://{address}/v1"))).await;
    let (status, _, text) = post(&url, &chat_body("text")).await;
    assert_eq!(status, 502, "{text}");
    assert_eq!(error_of(&text)["type"], "upstream_unreachable");
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_upstream_request() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url)).await;
    let mut body = chat_body("fault_slow");
    body["stream"] = json!(true);
    let http = reqwest::Client::new();
    let mut response = tokio::time::timeout(
        BOUND,
        http.post(format!("{url}/chat/completions"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("no hang")
    .expect("an answer");
    let first = tokio::time::timeout(BOUND, response.chunk()).await.expect("no hang").expect("a chunk");
    assert!(first.is_some());
    assert_eq!(upstream.dropped_streams(), 0, "the upstream is still sending");
    drop(response);
    let waited = tokio::time::timeout(BOUND, async {
        while upstream.dropped_streams() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the upstream request was not cancelled");
}

#[tokio::test]
async fn bad_requests_limits_models_and_health() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).max_request_bytes(4096)).await;
    let http = reqwest::Client::new();
    let send = |body: String| {
        let http = http.clone();
        let url = url.clone();
        async move {
            let response = http
                .post(format!("{url}/chat/completions"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("an answer");
            (response.status().as_u16(), response.text().await.unwrap_or_default())
        }
    };
    let (status, text) = send("{not json".to_string()).await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON")["error"]["type"], "invalid_request_error");
    let (status, text) =
        send(json!({"model": "m", "messages": [{"role": "user", "content": 7}]}).to_string()).await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_str(&text).expect("JSON");
    assert!(error["error"]["param"].as_str().unwrap_or_default().starts_with("messages[0]"), "{error}");
    let twice = json!({"model": "m", "messages": [{"role": "user", "content": "replay:text"}],
                       "tools": [tools()[0], tools()[0]]});
    let (status, text) = send(twice.to_string()).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&text).expect("JSON")["error"]["param"].clone()),
        (400, json!("tools[1]"))
    );
    let (status, text) = send(format!("{{\"pad\": \"{}\"}}", "x".repeat(8192))).await;
    assert_eq!(status, 413, "the request limit");
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON")["error"]["type"], "request_too_large");

    let get = |url: String| {
        let http = http.clone();
        async move {
            let text = http.get(url).send().await.expect("an answer").text().await.expect("a body");
            serde_json::from_str::<Value>(&text).expect("JSON")
        }
    };
    let models = get(format!("{url}/models")).await;
    assert_eq!(models["data"][0]["id"], "replay");
    let root = url.trim_end_matches("/v1");
    let health = get(format!("{root}/health")).await;
    assert_eq!(health["status"], "ok");
}

#[tokio::test]
async fn native_passes_the_request_and_the_reply_through() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("native")).await;
    let body = json!({"model": "replay", "messages": [{"role": "user", "content": "replay:text"}],
                      "tools": tools(), "tool_choice": "auto", "seed": 7});
    let (status, _, text) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert_eq!(upstream.requests(), [body], "the request went up untouched");
    let reply: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(reply["id"], "chatcmpl-replay", "the upstream's own body");
    assert_eq!(reply["choices"][0]["message"]["content"], "Hello! Nothing to call here.");
}

#[tokio::test]
async fn sampling_options_pass_through_and_tool_choice_none_offers_nothing() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("hermes")).await;
    let mut body = chat_body("hermes_parallel");
    body["temperature"] = json!(0.2);
    body["max_tokens"] = json!(99);
    body["stop"] = json!(["END"]);
    body["user"] = json!("u-1");
    body["tool_choice"] = json!("none");
    let (_, _, text) = post(&url, &body).await;
    let sent = &upstream.requests()[0];
    assert_eq!((sent["temperature"].clone(), sent["max_tokens"].clone()), (json!(0.2), json!(99)));
    assert_eq!((sent["stop"].clone(), sent["user"].clone()), (json!(["END"]), json!("u-1")));
    assert_eq!(sent["messages"][0]["role"], "user", "no tool prompt for `none`");
    let reply: Value = serde_json::from_str(&text).expect("JSON");
    assert!(reply["choices"][0]["message"].get("tool_calls").is_none(), "no tool was offered: {reply}");
}

#[tokio::test]
async fn the_configuration_is_checked() {
    assert!(Gateway::new(GatewayConfig::new("http://127.0.0.1:1/v1").protocol("openai")).is_err());
    assert!(Gateway::new(GatewayConfig::new("127.0.0.1:1")).is_err());
    assert!(Gateway::new(GatewayConfig::new("http://127.0.0.1:1/v1").protocol("no_such_format")).is_err());
    for id in ["vcp", "auto", "native", "hermes", "harmony", "deepseek_v32"] {
        assert!(Gateway::new(GatewayConfig::new("http://127.0.0.1:1/v1").protocol(id)).is_ok(), "{id}");
    }
    let _ = ToolChoice::Auto;
}

#[tokio::test]
async fn native_behind_the_messages_and_responses_fronts_sends_tools_and_reads_the_calls() {
    let upstream = replay().await;
    let url = serve(GatewayConfig::new(&upstream.url).protocol("native")).await;
    let root = url.trim_end_matches("/v1");
    let http = reqwest::Client::new();
    let post_json = |path: String, body: Value| {
        let http = http.clone();
        async move {
            let response = http
                .post(path)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .expect("an answer");
            let text = response.text().await.unwrap_or_default();
            serde_json::from_str::<Value>(&text).unwrap_or_else(|_| panic!("JSON: {text}"))
        }
    };
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let message = post_json(
        format!("{root}/v1/messages"),
        json!({"model": "replay", "max_tokens": 64, "messages": [{"role": "user", "content": "replay:native_calls"}],
               "tools": [{"name": "get_weather", "input_schema": schema}, {"name": "get_time", "input_schema": schema}]}),
    )
    .await;
    let uses: Vec<(&str, &Value)> = message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["name"].as_str().unwrap_or_default(), &b["input"]))
        .collect();
    assert_eq!(
        uses,
        [("get_weather", &json!({"city": "Paris"})), ("get_time", &json!({"zone": "Europe/Paris"}))],
        "{message}"
    );
    assert_eq!(message["stop_reason"], "tool_use");
    let sent = &upstream.requests()[0];
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather", "the tools went up natively: {sent}");
    assert!(sent["messages"].to_string().find("get_weather").is_none(), "no tool prompt: {sent}");

    let response = post_json(
        format!("{url}/responses"),
        json!({"model": "replay", "input": "replay:native_calls",
               "tools": [{"type": "function", "name": "get_weather", "parameters": schema}]}),
    )
    .await;
    let calls: Vec<&Value> = response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call")
        .collect();
    assert_eq!(calls.len(), 1, "a call of a tool not offered (get_time) is not handed on: {response}");
    assert_eq!(
        (calls[0]["name"].clone(), calls[0]["arguments"].clone()),
        (json!("get_weather"), json!(r#"{"city": "Paris"}"#))
    );
}

#[tokio::test]
async fn constrain_sends_the_protocols_grammar_for_the_offered_tools() {
    use tool_calling::gateway::Constrain;
    use tool_calling::grammar::Dialect;
    use tool_calling::providers::GrammarServer;
    let upstream = replay().await;
    let config = GatewayConfig::new(&upstream.url)
        .protocol("vcp")
        .constrain(Constrain::new(GrammarServer::Vllm, Dialect::Lark));
    let url = serve(config).await;
    let mut body = chat_body("vcp_parallel");
    let (status, _, _) = post(&url, &body).await;
    assert_eq!(status, 200);
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_time"}});
    body["messages"][0]["content"] = json!("replay:vcp_one");
    post(&url, &body).await;
    let requests = upstream.requests();
    let reply = requests[0]["structured_outputs"]["grammar"].as_str().expect("a grammar for the whole reply");
    assert!(reply.contains("get_weather") && reply.contains("get_time"), "{reply}");
    let one = requests[1]["structured_outputs"]["grammar"].as_str().expect("a grammar for one call");
    assert!(one.contains("get_time") && !one.contains("get_weather"), "only the named tool: {one}");
    // A protocol without a grammar (`auto`: which format the reply is in is the
    // model's choice): the request goes unconstrained.
    let upstream = replay().await;
    let config = GatewayConfig::new(&upstream.url)
        .protocol("auto")
        .constrain(Constrain::new(GrammarServer::Vllm, Dialect::Lark));
    let url = serve(config).await;
    post(&url, &chat_body("text")).await;
    assert!(upstream.requests()[0].get("structured_outputs").is_none());
}
