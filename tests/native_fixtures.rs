//! The native protocols against recorded-shape payloads (`tests/fixtures/native/`): each
//! provider's body and its server-sent-events stream give the same turn and the same
//! requests, for every chunking; bad arguments, cut streams and error events are told,
//! never run and never a panic.

use serde_json::{Value, json};
use tool_calling::model::{
    AssistantTurn, ContentBlock, FinishReason, Message, ModelRequest, RequestNote, TurnAccumulator, TurnDelta,
};
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::native::{NativeOptions, NativeProtocol, NativeStreamParser};
use tool_calling::protocol::{RequestIdStyle, StreamCollector, StreamParser, TurnState};
use tool_calling::providers::{Provider, ResponseStream, StreamDecoder, WireError, WireFormat};

/// A protocol under test, with its provider's wire format: the protocol's methods
/// through `Deref`, the wire format's through `WireFormat`.
struct Native {
    protocol: Box<dyn ToolCallingProtocol>,
    wire: Provider,
}

impl Native {
    fn new(protocol: impl ToolCallingProtocol + 'static, wire: Provider) -> Box<Native> {
        Box::new(Native { protocol: Box::new(protocol), wire })
    }
}

impl std::ops::Deref for Native {
    type Target = dyn ToolCallingProtocol;
    fn deref(&self) -> &Self::Target {
        self.protocol.as_ref()
    }
}

impl WireFormat for Native {
    fn request_body(&self, request: &ModelRequest, model: &str, stream: bool) -> Value {
        self.wire.request_body(request, model, stream)
    }
    fn parse_response(&self, body: &Value) -> Result<AssistantTurn, WireError> {
        self.wire.parse_response(body)
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        self.wire.stream_decoder()
    }
    fn wire_messages(&self, messages: &[Message]) -> Value {
        self.wire.wire_messages(messages)
    }
    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        self.wire.adjust(request, notes);
    }
}

fn options() -> NativeOptions {
    NativeOptions::default().request_ids(RequestIdStyle::Sequential)
}

/// The providers under test: the name (the fixture folder), the protocol and wire format.
fn providers() -> Vec<(&'static str, Box<Native>)> {
    vec![
        ("openai", Native::new(NativeProtocol::openai_chat().with_options(options()), Provider::OpenAiChat)),
        (
            "openai_responses",
            Native::new(
                NativeProtocol::openai_responses().with_options(options()),
                Provider::OpenAiResponses,
            ),
        ),
        ("anthropic", Native::new(NativeProtocol::anthropic().with_options(options()), Provider::Anthropic)),
        ("gemini", Native::new(NativeProtocol::gemini().with_options(options()), Provider::Gemini)),
    ]
}

fn fixture(provider: &str, name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/native/{provider}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn body(provider: &str, name: &str) -> Value {
    serde_json::from_slice(&fixture(provider, name)).unwrap()
}

/// The deltas a stream gives, fed in chunks of `size` bytes, and the first error: an
/// error event that stopped it, or the stream's end inside an event.
fn stream(format: &dyn WireFormat, bytes: &[u8], size: usize) -> (Vec<TurnDelta>, Option<WireError>) {
    let mut stream = ResponseStream::new(format);
    let mut deltas = Vec::new();
    let mut error = None;
    for chunk in bytes.chunks(size.max(1)) {
        if let Err(e) = stream.push(chunk, &mut deltas) {
            error = Some(e);
            break;
        }
    }
    let end = stream.finish(&mut deltas);
    (deltas, error.or(end.err()))
}

fn accumulate(deltas: &[TurnDelta]) -> AssistantTurn {
    let mut turn = TurnAccumulator::new();
    deltas.iter().for_each(|d| turn.push(d));
    turn.finish()
}

/// A turn reduced to what must agree between a body and its stream: text, reasoning
/// (text and signature), calls (id, name, arguments as JSON, signature), finish reason.
fn summary(turn: &AssistantTurn) -> Value {
    let blocks: Vec<Value> = turn
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => json!({"text": text}),
            ContentBlock::Reasoning(r) => {
                json!({"reasoning": r.text, "signature": r.signature, "redacted": r.redacted})
            }
            ContentBlock::ToolCall(c) => json!({
                "call": c.id, "name": c.name, "arguments": c.arguments_json().ok(), "signature": c.signature
            }),
            other => json!({"other": format!("{other:?}")}),
        })
        .collect();
    json!({"blocks": blocks, "finish": turn.finish_reason.map(|f| f.as_str())})
}

/// The requests a stream of deltas gives, read by the protocol's incremental parser.
fn streamed_requests(protocol: &Native, deltas: &[TurnDelta]) -> ParseOutcome {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut collector = StreamCollector::new();
    for delta in deltas {
        parser.push(delta, &mut events);
        collector.extend(events.drain(..));
    }
    parser.finish(&mut events);
    collector.extend(events);
    collector.into_outcome()
}

#[test]
fn a_body_with_reasoning_and_two_parallel_calls() {
    let expected_ids = [
        ("openai", ["call_00_Qm3vX8rT1kLw5Zp9NcB2aYe7", "call_01_Hd6sJ4gU0fVn2Rq8WtK1oLx3"]),
        ("openai_responses", ["call_Wx4hT9bN2qLm7RcV5pKs8dGe", "call_Yj6fP3sD1nQa8ZuE4kMw2hBt"]),
        ("anthropic", ["toolu_01Gh5NkT8wQz3VmX1cRb7JpL", "toolu_01Pd2YfS6aLr9KeW4tHn8BqU"]),
        ("gemini", ["p4n7kx2q", "m8w3ty6v"]),
    ];
    for ((name, protocol), (_, ids)) in providers().into_iter().zip(expected_ids) {
        let turn = protocol.parse_response(&body(name, "two_calls_reasoning.json")).unwrap();
        let reasoning: String = turn.reasoning().map(|r| r.text.as_str()).collect();
        assert!(reasoning.starts_with("The user wants the current weather in Paris"), "{name}: {reasoning}");
        assert!(reasoning.contains("°C"), "{name}");
        assert_eq!(
            turn.text(),
            "I'll check the weather in Paris and add the numbers at the same time.",
            "{name}"
        );
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls), "{name}");
        let parsed = protocol.parse_turn(&turn);
        let requests: Vec<(&str, &str, Value)> = parsed
            .requests
            .iter()
            .map(|r| (r.request_id.as_str(), r.tool_name.as_str(), json!(r.args)))
            .collect();
        assert_eq!(
            requests,
            [
                (ids[0], "get_weather", json!({"city": "Paris", "unit": "celsius"})),
                (ids[1], "calc_add", json!({"a": 2, "b": 40})),
            ],
            "{name}"
        );
        assert!(parsed.requests.iter().all(|r| r.complete), "{name}");
        assert!(parsed.diagnostics.is_empty(), "{name}");
    }
}

#[test]
fn the_stream_gives_the_bodys_turn_and_requests_for_every_chunking() {
    for (name, protocol) in providers() {
        let whole = protocol.parse_response(&body(name, "two_calls_reasoning.json")).unwrap();
        let expected_requests = protocol.parse_turn(&whole);
        let sse = fixture(name, "two_calls_reasoning.sse");
        for size in [1, 2, 3, 7, 13, 64, 1000, sse.len()] {
            let (deltas, error) = stream(protocol.as_ref(), &sse, size);
            assert!(error.is_none(), "{name} in chunks of {size}: {error:?}");
            let turn = accumulate(&deltas);
            assert_eq!(summary(&turn), summary(&whole), "{name} in chunks of {size}");
            assert_eq!(
                streamed_requests(protocol.as_ref(), &deltas),
                expected_requests,
                "{name} in chunks of {size}"
            );
            assert_eq!(
                protocol.parse_turn(&turn),
                expected_requests,
                "{name}: the accumulated turn parses the same"
            );
        }
    }
}

#[test]
fn each_call_is_complete_as_soon_as_the_stream_shows_its_end() {
    // Feed the stream event by event; the first request must be reported before the
    // stream's last event (for every provider, call 1 ends before the turn does).
    for (name, protocol) in providers() {
        let sse = fixture(name, "two_calls_reasoning.sse");
        let mut stream = ResponseStream::new(protocol.as_ref());
        let mut parser = protocol.stream_parser();
        let mut deltas = Vec::new();
        let mut events = Vec::new();
        let mut first_request_at = None;
        let mut pushed = 0;
        for chunk in sse.chunks(1) {
            stream.push(chunk, &mut deltas).unwrap();
            pushed += 1;
            for delta in deltas.drain(..) {
                parser.push(&delta, &mut events);
            }
            if first_request_at.is_none()
                && events
                    .iter()
                    .any(|e| matches!(e, tool_calling::protocol::StreamEvent::RequestCompleted(_)))
            {
                first_request_at = Some(pushed);
            }
        }
        let at = first_request_at.unwrap_or_else(|| panic!("{name}: no request before the stream ended"));
        assert!(
            at < sse.len() - 20,
            "{name}: the first call was reported only at byte {at} of {}",
            sse.len()
        );
    }
}

#[test]
fn bad_arguments_make_incomplete_requests_that_say_why() {
    for (name, protocol) in providers() {
        let turn = protocol.parse_response(&body(name, "bad_arguments.json")).unwrap();
        let parsed = protocol.parse_turn(&turn);
        assert!(!parsed.requests.is_empty(), "{name}");
        for request in &parsed.requests {
            // Gemini's call without `args` is a call without arguments: it may be complete.
            if name == "gemini" && request.complete {
                assert!(request.args.is_empty());
                continue;
            }
            assert!(!request.complete, "{name}: {request:?}");
            let problem = request.problems.join(" ");
            assert!(
                problem.contains("not valid JSON") || problem.contains("not a JSON object"),
                "{name}: {problem}"
            );
        }
        assert!(parsed.diagnostics.iter().all(|d| d.kind == DiagnosticKind::InvalidPayload), "{name}");
        assert!(!parsed.diagnostics.is_empty(), "{name}");
        // Calls the provider gave no id still get distinct ids.
        let ids: std::collections::HashSet<&str> =
            parsed.requests.iter().map(|r| r.request_id.as_str()).collect();
        assert_eq!(ids.len(), parsed.requests.len(), "{name}");
        assert!(parsed.requests.iter().all(|r| !r.request_id.is_empty()), "{name}");
    }
}

#[test]
fn a_stream_cut_mid_call_reports_that_call_incomplete() {
    for (name, protocol) in providers() {
        let sse = fixture(name, "cut_mid_call.sse");
        for size in [1, 5, sse.len()] {
            let (deltas, error) = stream(protocol.as_ref(), &sse, size);
            // Gemini's stream stops inside an event, the others after one: the event cut
            // off is reported.
            if name == "gemini" {
                assert_eq!(error, Some(WireError::Truncated { what: "response stream" }), "{name}");
            } else {
                assert!(error.is_none(), "{name}: {error:?}");
            }
            let turn = accumulate(&deltas);
            assert_ne!(turn.finish_reason, Some(FinishReason::ToolCalls), "{name}: the turn did not finish");
            let parsed = streamed_requests(protocol.as_ref(), &deltas);
            // Gemini's cut event is dropped whole: its call never arrived.
            if name == "gemini" {
                assert!(parsed.requests.is_empty(), "{name}: {parsed:?}");
                continue;
            }
            assert_eq!(parsed.requests.len(), 1, "{name}");
            assert!(!parsed.requests[0].complete, "{name}");
            assert_eq!(parsed.requests[0].tool_name, "get_weather", "{name}");
        }
    }
}

#[test]
fn error_events_and_error_bodies_are_errors_not_turns() {
    for (name, protocol) in providers() {
        let (deltas, error) = stream(protocol.as_ref(), &fixture(name, "stream_error.sse"), 7);
        assert!(matches!(error, Some(WireError::Provider { .. })), "{name}: {error:?}");
        let _ = accumulate(&deltas);
        let err = protocol.parse_response(&body(name, "error_429.json")).unwrap_err();
        assert!(
            matches!(&err, WireError::Provider { message, .. } if !message.is_empty()),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn text_only_bodies_have_no_requests() {
    for (name, protocol) in providers() {
        let turn = protocol.parse_response(&body(name, "text_only.json")).unwrap();
        assert!(!turn.text().is_empty(), "{name}");
        assert_eq!(turn.finish_reason, Some(FinishReason::Stop), "{name}");
        assert!(!protocol.parse_turn(&turn).has_requests(), "{name}");
    }
}

#[test]
fn reasoning_goes_back_unchanged_for_the_providers_that_sign_it() {
    // Anthropic: thinking with its signature, and redacted thinking with its data.
    let anthropic = Provider::Anthropic;
    let turn = anthropic.parse_response(&body("anthropic", "redacted_thinking.json")).unwrap();
    let wire = anthropic.wire_messages(&[Message::from_turn(turn)]);
    let blocks = &wire[0]["content"];
    assert_eq!(blocks[0]["type"], "thinking");
    assert!(blocks[0]["signature"].as_str().unwrap().starts_with("EqMBCkYIBxgCKkA2"));
    assert_eq!(blocks[1]["type"], "redacted_thinking");
    assert!(blocks[1]["data"].as_str().unwrap().starts_with("EmwKAhgBEgy3va3p"));

    // Gemini: the thought part, and the signature on the first call's part.
    let gemini = Provider::Gemini;
    let turn = gemini.parse_response(&body("gemini", "two_calls_reasoning.json")).unwrap();
    let wire = gemini.wire_messages(&[Message::from_turn(turn)]);
    let parts = &wire[0]["parts"];
    assert_eq!(wire[0]["role"], "model");
    assert_eq!(parts[0]["thought"], true);
    assert!(parts[2]["thoughtSignature"].as_str().is_some());
    assert_eq!(parts[2]["functionCall"]["id"], "p4n7kx2q");
    assert!(parts[3].get("thoughtSignature").is_none());

    // Responses: the reasoning item (id, encrypted content) and the call items' ids.
    let responses = Provider::OpenAiResponses;
    let turn = responses.parse_response(&body("openai_responses", "two_calls_reasoning.json")).unwrap();
    let items = responses.wire_messages(&[Message::from_turn(turn)]);
    assert_eq!(items[0]["type"], "reasoning");
    assert_eq!(items[0]["id"], "rs_07d4e2b9a1c6f35801695f2a3d1b5c8190a4e9f2c7d6b1830e");
    assert!(items[0]["encrypted_content"].as_str().unwrap().starts_with("gAAAAABpX5o-"));
    assert_eq!(items[2]["type"], "function_call");
    assert_eq!(items[2]["id"], "fc_07d4e2b9a1c6f35801695f2a40a7e48190c3d9f1b6a2e5c4d8");
    assert_eq!(items[2]["call_id"], "call_Wx4hT9bN2qLm7RcV5pKs8dGe");
}

#[test]
fn anthropic_redacted_thinking_and_gemini_malformed_calls() {
    let turn = Provider::Anthropic.parse_response(&body("anthropic", "redacted_thinking.json")).unwrap();
    let redacted: Vec<bool> = turn.reasoning().map(|r| r.redacted).collect();
    assert_eq!(redacted, [false, true]);
    let turn = Provider::Gemini.parse_response(&body("gemini", "malformed_function_call.json")).unwrap();
    assert_eq!(turn.finish_reason, Some(FinishReason::Error));
    assert_eq!(turn.tool_calls().count(), 0);
}

#[test]
fn streamed_requests_equal_one_shot_for_any_grouping_of_deltas() {
    // The incremental parser over deltas, whatever their grouping, gives what the
    // one-shot parse of the accumulated turn gives.
    let protocol = NativeProtocol::openai_chat().with_options(options());
    let deltas = vec![
        TurnDelta::Text("Two calls.".into()),
        TurnDelta::ToolCallStart { index: 0, id: String::new(), name: "a".into() },
        TurnDelta::ToolCallStart { index: 1, id: "c2".into(), name: "b".into() },
        TurnDelta::ToolCallArguments { index: 1, fragment: "{\"x\":".into() },
        TurnDelta::ToolCallArguments { index: 0, fragment: "[1]".into() },
        TurnDelta::ToolCallArguments { index: 1, fragment: "1}".into() },
        TurnDelta::ToolCallEnd { index: 1 },
        // An end is final: what comes for the call after it is ignored.
        TurnDelta::ToolCallArguments { index: 1, fragment: ", \"y\": 2}".into() },
        TurnDelta::ToolCallEnd { index: 0 },
    ];
    let mut parser = NativeStreamParser::new(RequestIdStyle::Sequential);
    let mut events = Vec::new();
    for delta in &deltas {
        parser.push(delta, &mut events);
    }
    parser.finish(&mut events);
    let mut collector = StreamCollector::new();
    collector.extend(events);
    let one_shot = protocol.parse_turn(&accumulate(&deltas));
    // Call 1 ended first: it is reported after call 0, in call order, as one-shot does.
    assert_eq!(collector.into_outcome(), one_shot);
    assert_eq!(one_shot.requests[0].request_id, "req_1", "no id from the provider: one assigned");
    assert!(!one_shot.requests[0].complete, "`[1]` is not an object");
    assert_eq!(one_shot.requests[1].args["x"], 1);
    assert!(one_shot.requests[1].complete && !one_shot.requests[1].args.contains_key("y"));
}

#[test]
fn results_go_back_in_each_providers_shape() {
    use tool_calling::{ContentPart, ErrorKind, ToolExecutionResult};
    let body = |name: &str| body(name, "two_calls_reasoning.json");
    let chart = ToolExecutionResult::success_parts(
        "",
        "get_weather",
        vec![ContentPart::text("Sunny"), ContentPart::image("image/png", "iVBORw0KGgo=")],
    );
    let failure = ToolExecutionResult::error("", "calc_add", ErrorKind::Execution, "overflow");
    for (name, protocol) in providers() {
        let turn = protocol.parse_response(&body(name)).unwrap();
        let ids: Vec<String> =
            protocol.parse_turn(&turn).requests.iter().map(|r| r.request_id.clone()).collect();
        let mut results = [chart.clone(), failure.clone()];
        results[0].request_id.clone_from(&ids[0]);
        results[1].request_id.clone_from(&ids[1]);
        let mut messages = protocol.result_messages(&results, &TurnState::default());
        if name == "gemini" {
            // An id goes back only for calls that had one: the wire needs the turn too.
            messages.insert(0, Message::from_turn(turn.clone()));
        }
        let wire = protocol.wire_messages(&messages);
        let mut wire = wire.as_array().unwrap().clone();
        if name == "gemini" {
            wire.remove(0);
        }
        match name {
            "openai" => {
                // One `tool` message per call, by id; text only (an image is noted).
                assert_eq!(wire.len(), 2);
                assert_eq!(wire[0]["role"], "tool");
                assert_eq!(wire[0]["tool_call_id"], ids[0].as_str());
                assert!(wire[0]["content"].as_str().unwrap().starts_with("Sunny"));
                assert_eq!(wire[1]["tool_call_id"], ids[1].as_str());
                assert!(wire[1]["content"].as_str().unwrap().contains("overflow"));
            }
            "openai_responses" => {
                assert_eq!(wire.len(), 2);
                assert!(wire.iter().all(|item| item["type"] == "function_call_output"));
                assert_eq!(wire[0]["call_id"], ids[0].as_str());
                assert!(wire[1]["output"].as_str().unwrap().contains("overflow"));
            }
            "anthropic" => {
                // One user message of tool_result blocks; images as image blocks,
                // failures with is_error.
                assert_eq!(wire.len(), 1);
                assert_eq!(wire[0]["role"], "user");
                let blocks = wire[0]["content"].as_array().unwrap();
                assert_eq!(blocks[0]["tool_use_id"], ids[0].as_str());
                assert_eq!(blocks[0]["is_error"], false);
                assert_eq!(blocks[0]["content"][0], json!({"type": "text", "text": "Sunny"}));
                assert_eq!(
                    blocks[0]["content"][1],
                    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
                );
                assert_eq!(blocks[1]["is_error"], true);
                assert!(blocks[1]["content"][0]["text"].as_str().unwrap().contains("overflow"));
            }
            "gemini" => {
                // functionResponse parts, with the call's id (the calls had ids), the
                // failure as `error`.
                let parts = wire[0]["parts"].as_array().unwrap();
                assert_eq!(parts[0]["functionResponse"]["id"], ids[0].as_str());
                assert_eq!(parts[0]["functionResponse"]["name"], "get_weather");
                assert!(parts[0]["functionResponse"]["response"]["output"].is_string());
                assert!(
                    parts[1]["functionResponse"]["response"]["error"].as_str().unwrap().contains("overflow")
                );
            }
            other => panic!("{other}"),
        }
    }
}

/// Arguments nested to the depth limit are read; one level deeper, the request is
/// incomplete (it never runs) with a problem and a diagnostic, one-shot and streamed, for
/// every provider; a depth past serde_json's own limit is an error, not a crash.
#[test]
fn argument_depth_at_the_limit_and_one_past_it() {
    // `levels` nested objects: {"a": {"a": … 1 …}}.
    let nested = |levels: usize| format!("{}1{}", "{\"a\": ".repeat(levels), "}".repeat(levels));
    for max in [1, 8, 64] {
        let options = options().max_argument_depth(max);
        let protocols: Vec<Box<dyn ToolCallingProtocol>> = vec![
            Box::new(NativeProtocol::openai_chat().with_options(options)),
            Box::new(NativeProtocol::openai_responses().with_options(options)),
            Box::new(NativeProtocol::anthropic().with_options(options)),
            Box::new(NativeProtocol::gemini().with_options(options)),
        ];
        for protocol in &protocols {
            for (levels, allowed) in [(max, true), (max + 1, false), (10_000, false)] {
                let turn = AssistantTurn::new().with_tool_call(tool_calling::model::ToolCall::new(
                    "c1",
                    "deep",
                    nested(levels),
                ));
                let outcome = protocol.parse_turn(&turn);
                let request = &outcome.requests[0];
                assert_eq!(request.complete, allowed, "{levels} levels, limit {max}: {:?}", request.problems);
                if !allowed {
                    assert!(outcome.diagnostics.iter().any(|d| d.kind == DiagnosticKind::InvalidPayload));
                }
                // Streamed: the same request.
                let mut parser = NativeStreamParser::with_options(options);
                let mut collector = StreamCollector::new();
                let mut events = Vec::new();
                parser.push(
                    &TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "deep".into() },
                    &mut events,
                );
                parser
                    .push(&TurnDelta::ToolCallArguments { index: 0, fragment: nested(levels) }, &mut events);
                parser.push(&TurnDelta::ToolCallEnd { index: 0 }, &mut events);
                parser.finish(&mut events);
                collector.extend(events);
                assert_eq!(
                    collector.into_outcome().requests[0].complete,
                    allowed,
                    "streamed, {levels} levels"
                );
            }
        }
    }
    assert_eq!(NativeOptions::default().max_argument_depth, 64);
}

/// A stream is read up to `ResponseStream::max_bytes`: a stream of exactly that many
/// bytes reads as without a limit; one byte fewer allowed stops it with `TooLarge`, once,
/// and the turn ends as an error with every call still open incomplete, so none runs.
#[test]
fn stream_length_at_the_limit_and_one_past_it() {
    for (provider, protocol) in providers() {
        for name in ["two_calls_reasoning.sse", "cut_mid_call.sse"] {
            let bytes = fixture(provider, name);
            let read = |limit: usize, chunk: usize| {
                let mut stream = ResponseStream::new(protocol.as_ref()).max_bytes(limit);
                let mut deltas = Vec::new();
                let mut errors = Vec::new();
                for piece in bytes.chunks(chunk) {
                    if let Err(error) = stream.push(piece, &mut deltas) {
                        errors.push(error);
                    }
                }
                errors.extend(stream.finish(&mut deltas).err());
                (deltas, errors)
            };
            let (unlimited, _) = read(usize::MAX, bytes.len());
            for chunk in [1, 7, bytes.len()] {
                let (at_limit, errors) = read(bytes.len(), chunk);
                assert_eq!(at_limit, unlimited, "{provider}/{name}: at the limit, in {chunk}-byte chunks");
                assert!(errors.iter().all(|e| !matches!(e, WireError::TooLarge { .. })), "{provider}/{name}");

                let limit = bytes.len() - 1;
                let (cut, errors) = read(limit, chunk);
                assert_eq!(
                    errors.iter().filter(|e| matches!(e, WireError::TooLarge { .. })).count(),
                    1,
                    "{provider}/{name}: one past the limit, in {chunk}-byte chunks: {errors:?}"
                );
                assert_eq!(
                    errors,
                    [WireError::TooLarge { what: "response stream", limit }],
                    "{provider}/{name}: the cut is reported once"
                );
                assert_eq!(
                    cut.iter().rfind(|d| matches!(d, TurnDelta::Finish(_))),
                    Some(&TurnDelta::Finish(FinishReason::Error)),
                    "{provider}/{name}: the cut turn ends as an error"
                );
                // A request complete after the cut is one the whole stream has, whole.
                let requests = |deltas: &[TurnDelta]| {
                    let mut turn = TurnAccumulator::new();
                    for delta in deltas {
                        turn.push(delta);
                    }
                    protocol.parse_turn(&turn.finish()).requests
                };
                let whole = requests(&unlimited);
                for request in requests(&cut).iter().filter(|r| r.complete) {
                    assert!(
                        whole.iter().any(|w| w.tool_name == request.tool_name && w.args == request.args),
                        "{provider}/{name}: {request:?} was not in the whole stream"
                    );
                }
                let cut_started = cut.iter().filter(|d| matches!(d, TurnDelta::ToolCallStart { .. })).count();
                let cut_incomplete =
                    cut.iter().filter(|d| matches!(d, TurnDelta::ToolCallIncomplete { .. })).count();
                let cut_ends = cut.iter().filter(|d| matches!(d, TurnDelta::ToolCallEnd { .. })).count();
                assert_eq!(cut_ends, cut_started, "{provider}/{name}: every started call ends once");
                if name == "cut_mid_call.sse" && cut_started > 0 {
                    assert!(cut_incomplete > 0, "{provider}/{name}: the open call is incomplete");
                }
            }
        }
    }
    // A line that never ends holds no more than the limit.
    let mut stream = ResponseStream::new(&Provider::OpenAiChat).max_bytes(1 << 10);
    let mut deltas = Vec::new();
    let endless = vec![b'x'; 4096];
    let mut errors = 0;
    for _ in 0..1000 {
        errors += usize::from(stream.push(&endless, &mut deltas).is_err());
    }
    assert_eq!(errors, 1, "reported once, then nothing more is read");
}

/// The calls of a stream's requests: name, arguments, whether complete.
fn calls_of(outcome: &ParseOutcome) -> Vec<(String, Value, bool)> {
    outcome.requests.iter().map(|r| (r.tool_name.clone(), json!(r.args), r.complete)).collect()
}

/// How many requests are reported after each chunk of `size` bytes of `sse`.
fn requests_after_each_chunk(protocol: &Native, sse: &[u8], size: usize) -> Vec<usize> {
    let mut stream = ResponseStream::new(protocol);
    let mut parser = protocol.stream_parser();
    let (mut deltas, mut events, mut counts, mut reported) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for chunk in sse.chunks(size) {
        stream.push(chunk, &mut deltas).unwrap();
        for delta in deltas.drain(..) {
            parser.push(&delta, &mut events);
        }
        reported += events
            .drain(..)
            .filter(|e| matches!(e, tool_calling::protocol::StreamEvent::RequestCompleted(_)))
            .count();
        counts.push(reported);
    }
    counts
}

#[test]
fn vertex_partial_args_give_the_calls_sent_whole() {
    let protocol = Native::new(NativeProtocol::gemini().with_options(options()), Provider::Gemini);
    let pieces = fixture("gemini", "vertex_partial_args.sse");
    let whole = fixture("gemini", "vertex_partial_args_whole.sse");
    let (whole_deltas, error) = stream(protocol.as_ref(), &whole, whole.len());
    assert!(error.is_none(), "{error:?}");
    let expected = streamed_requests(&protocol, &whole_deltas);
    let expected_turn = summary(&accumulate(&whole_deltas));
    assert_eq!(
        calls_of(&expected),
        [
            (
                "get_weather".to_owned(),
                json!({"city": "Paris", "days": 3, "options": {"unit": "celsius", "hourly": false},
                       "hours": [9, 17.5], "note": null}),
                true
            ),
            ("calc_add".to_owned(), json!({"a": 2, "b": 40}), true),
        ]
    );
    assert!(expected.diagnostics.is_empty(), "{expected:?}");
    for size in [1, 2, 7, 13, 64, 1000, pieces.len()] {
        let (deltas, error) = stream(protocol.as_ref(), &pieces, size);
        assert!(error.is_none(), "in chunks of {size}: {error:?}");
        let streamed = streamed_requests(&protocol, &deltas);
        assert_eq!(streamed, expected, "in chunks of {size}");
        let turn = accumulate(&deltas);
        assert_eq!(summary(&turn), expected_turn, "in chunks of {size}: the same turn, signature included");
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(protocol.parse_turn(&turn), expected, "the accumulated turn parses the same");
    }
    // The first call is reported when its last piece (the first `functionCall: {}`)
    // arrives, and not before: once the blank line that ends that event is read.
    let text = String::from_utf8_lossy(&pieces).into_owned();
    let last_piece = text.find(r#""functionCall": {}}"#).unwrap();
    let blank_line = last_piece + text.get(last_piece..).unwrap().find("\r\n\r\n").unwrap();
    let counts = requests_after_each_chunk(&protocol, &pieces, 1);
    let first = counts.iter().position(|&n| n == 1).unwrap();
    assert!((blank_line + 2..blank_line + 4).contains(&first), "{first}, the event ends at {blank_line}");
    assert_eq!(counts.last(), Some(&2));
}

#[test]
fn vertex_partial_args_cut_before_the_end_leave_the_call_incomplete() {
    let protocol = Native::new(NativeProtocol::gemini().with_options(options()), Provider::Gemini);
    let sse = fixture("gemini", "vertex_partial_args_cut.sse");
    for size in [1, 5, sse.len()] {
        let (deltas, error) = stream(protocol.as_ref(), &sse, size);
        // The stream stops after a whole event: nothing was dropped.
        assert!(error.is_none(), "{error:?}");
        let turn = accumulate(&deltas);
        assert_eq!(turn.finish_reason, Some(FinishReason::Error), "the turn did not finish");
        let parsed = streamed_requests(&protocol, &deltas);
        assert_eq!(parsed.requests.len(), 1, "{parsed:?}");
        let request = &parsed.requests[0];
        assert_eq!(request.tool_name, "get_weather");
        assert!(!request.complete);
        assert!(request.problems.join(" ").contains("before the call to `get_weather` was complete"));
        assert_eq!(protocol.parse_turn(&turn), parsed);
    }
}

#[test]
fn anthropic_fine_grained_pieces_are_read_at_the_blocks_end() {
    // `fine-grained-tool-streaming-2025-05-14`: `partial_json` pieces cut inside a key,
    // between a key and its colon, inside a string, a number and a literal. The call is
    // the same as the one sent whole, and reported only at its `content_block_stop`.
    let protocol = Native::new(NativeProtocol::anthropic().with_options(options()), Provider::Anthropic);
    let sse = fixture("anthropic", "fine_grained.sse");
    let whole = json!({"id": "msg_01Fg7TkP2wXq9LmV4cRn8BzD", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "stop_reason": "tool_use", "stop_sequence": null,
        "content": [
            {"type": "tool_use", "id": "toolu_01Hk3MwR7tYq2NbX5vLc9GpE", "name": "get_weather",
             "input": {"city": "Paris", "days": 14, "unit": "celsius", "hourly": false}},
            {"type": "tool_use", "id": "toolu_01Qs8DzN4pLw6RkT1hVx3JmA", "name": "calc_add",
             "input": {"a": 2, "b": 40.5}},
        ],
        "usage": {"input_tokens": 598, "output_tokens": 97}});
    let expected = protocol.parse_turn(&protocol.parse_response(&whole).unwrap());
    assert_eq!(expected.requests.len(), 2);
    assert!(expected.requests.iter().all(|r| r.complete) && expected.diagnostics.is_empty());
    for size in [1, 3, 7, 64, sse.len()] {
        let (deltas, error) = stream(protocol.as_ref(), &sse, size);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(streamed_requests(&protocol, &deltas), expected, "in chunks of {size}");
        assert_eq!(protocol.parse_turn(&accumulate(&deltas)), expected, "in chunks of {size}");
    }
    // Nothing is reported before the first block's stop; the first call is, right at it.
    let text = String::from_utf8_lossy(&sse).into_owned();
    let stop = text.find("content_block_stop").unwrap();
    let stop_end = stop + text.get(stop..).unwrap().find("\n\n").unwrap() + 2;
    let counts = requests_after_each_chunk(&protocol, &sse, 1);
    assert_eq!(counts.iter().position(|&n| n == 1), Some(stop_end - 1));

    // Arguments still not valid JSON at the block's end: the call is incomplete, with a
    // problem that says why, and never `{}`.
    let broken = text.replace(r#""partial_json":"lse}""#, r#""partial_json":"lse""#);
    assert_ne!(broken, text);
    let (deltas, error) = stream(protocol.as_ref(), broken.as_bytes(), 5);
    assert!(error.is_none(), "{error:?}");
    let parsed = streamed_requests(&protocol, &deltas);
    assert_eq!(parsed.requests.len(), 2);
    assert!(!parsed.requests[0].complete);
    assert!(parsed.requests[0].args.is_empty());
    assert!(parsed.requests[0].problems.join(" ").contains("not valid JSON"), "{parsed:?}");
    assert!(parsed.diagnostics.iter().any(|d| d.kind == DiagnosticKind::InvalidPayload));
    assert_eq!(parsed.requests[1], expected.requests[1]);
}
