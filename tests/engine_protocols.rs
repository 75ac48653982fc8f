//! One engine, two protocols: VCP (requests in the text) and a small JSON protocol
//! defined here (native-style tool calls in a structured turn), through the same
//! registry and executor. On tokio's paused clock.

use std::sync::{Arc, Mutex};

use futures::stream;
use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, EngineError, StopReason};
use tool_calling::exec::{CycleEvent, ExecutionContext};
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, ContentBlock, Conversation, Message, ModelRequest, Reasoning,
    Role, ToolCall, ToolResultBlock, TurnDelta,
};
use tool_calling::protocol::Diagnostic;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::{ProtocolError, ProtocolRegistry, ToolDeclarations, TurnState};
use tool_calling::tools::ToolDefinition;
use tool_calling::tools::{BoxFuture, ToolProvider, ToolRegistry};
use tool_calling::{ErrorKind, ToolExecutionResult, ToolRequest, tool};

/// The rivers `text_label` has labelled (tests run in parallel: each checks its own).
static LABELLED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn labelled(river: &str) -> bool {
    LABELLED.lock().unwrap().iter().any(|r| r == river)
}

#[derive(Default)]
struct Text;

/// Text utilities.
#[tool(id = "text", register = false)]
impl Text {
    /// Return the message unchanged.
    #[tool_method]
    fn echo(&self, message: String) -> String {
        message
    }

    /// Label a river with ink; both names are VCP control keys.
    #[tool_method]
    fn label(&self, ink: String, river: String) -> String {
        LABELLED.lock().unwrap().push(river.clone());
        format!("{river} in {ink}")
    }

    /// Take aim; `archery` is a VCP control key too.
    #[tool_method]
    fn aim(&self, archery: String) -> String {
        format!("aimed {archery}")
    }
}

/// A native-style protocol: tools as a JSON array of `{name, parameters}`, requests from
/// the turn's tool calls (arguments must be a JSON object), one tool message per result
/// holding a result block matched to its call by id.
struct JsonCalls;

impl ToolCallingProtocol for JsonCalls {
    fn id(&self) -> &str {
        "json-calls"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let tools: Vec<Value> = tools
            .iter()
            .flat_map(|t| {
                t.methods.iter().map(|m| json!({"name": m.full_name(&t.tool_id), "parameters": m.parameters}))
            })
            .collect();
        ToolDeclarations::Native(Value::Array(tools))
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        let mut diagnostics = Vec::new();
        let requests = turn
            .tool_calls()
            .map(|call| {
                let request = ToolRequest::new(call.id.clone(), call.name.clone())
                    .with_id_source(tool_calling::RequestIdSource::Model);
                match call.arguments_json() {
                    Ok(Value::Object(args)) => args.into_iter().fold(request, |r, (k, v)| r.with_arg(k, v)),
                    _ => {
                        diagnostics.push(Diagnostic::new(
                            DiagnosticKind::InvalidPayload,
                            format!("the arguments of call `{}` are not a JSON object", call.id),
                            tool_calling::Span::default(),
                        ));
                        request.with_problem("the arguments are not a JSON object; send them as one")
                    }
                }
            })
            .collect();
        ParseOutcome::new(requests, diagnostics)
    }

    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        results
            .iter()
            .map(|r| {
                Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock::from_result(r))],
                )
                .with_tool_results([r.clone()])
            })
            .collect()
    }
}

fn engine() -> Engine {
    let registry = ToolRegistry::new();
    registry.register(Text::tool_spec()).unwrap();
    let mut engine = Engine::new(Arc::new(registry));
    engine.register_protocol(Arc::new(JsonCalls)).unwrap();
    engine
}

fn json_context() -> ExecutionContext {
    ExecutionContext::new(ToolCallConfig::default().with_protocol("json-calls"))
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::with_json(id, name, &args)
}

#[tokio::test(start_paused = true)]
async fn one_round_with_vcp_and_one_with_a_json_protocol_share_registry_and_executor() {
    let engine = engine();

    // VCP: the request is in the text; the result goes back as one text message.
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_echo「末」,\nmessage:「始」hi「末」\n<<<[END_TOOL_REQUEST]>>>";
    let vcp = engine.run_turn(reply, &ExecutionContext::default()).await.unwrap();
    assert_eq!(vcp.execution_results[0].result, "hi");
    assert_eq!(vcp.result_messages.len(), 1);
    assert!(vcp.result_messages[0].text().starts_with("<<<[TOOL_RESULT]>>>"));

    // JSON: the requests are the turn's calls; one result message per call, by id.
    let turn = AssistantTurn::new()
        .with_reasoning("Two echoes.", Some("sig".into()))
        .with_text("Echoing twice.")
        .with_tool_call(call("call_a", "text_echo", json!({"message": "one"})))
        .with_tool_call(call("call_b", "text_echo", json!({"message": "two"})));
    let native = engine.run_turn(&turn, &json_context()).await.unwrap();
    let results: Vec<(&str, &str)> =
        native.execution_results.iter().map(|r| (r.request_id.as_str(), r.result.as_str())).collect();
    assert_eq!(results, [("call_a", "one"), ("call_b", "two")]);
    let answered: Vec<(&str, bool)> = native
        .result_messages
        .iter()
        .map(|m| match &m.content[..] {
            [ContentBlock::ToolResult(block)] => (block.call_id.as_str(), block.is_error),
            other => panic!("not one result block: {other:?}"),
        })
        .collect();
    assert_eq!(answered, [("call_a", false), ("call_b", false)]);

    // The same text under the JSON protocol holds no request: protocols read their own.
    let none = engine.run_turn(reply, &json_context()).await.unwrap();
    assert!(!none.has_tool_requests);
}

#[tokio::test(start_paused = true)]
async fn vcp_control_keys_are_ordinary_arguments_under_any_other_protocol() {
    let engine = engine();
    let turn = AssistantTurn::new()
        .with_tool_call(call("c1", "text_label", json!({"ink": "blue", "river": "Thames"})))
        .with_tool_call(call("c2", "text_aim", json!({"archery": "true"})));
    let cycle = engine.run_turn(&turn, &json_context()).await.unwrap();
    let results: Vec<&str> = cycle.execution_results.iter().map(|r| r.result.as_str()).collect();
    assert_eq!(results, ["Thames in blue", "aimed true"], "{:?}", cycle.execution_results);
    assert!(cycle.parsed_requests.iter().all(|r| !r.fire_and_forget));

    // Under VCP the same names steer the host: they never reach the tool, so `label`
    // misses its required arguments, and `archery: true` asks not to be waited for.
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_label「末」,\nink:「始」blue「末」,\nriver:「始」Danube「末」\n<<<[END_TOOL_REQUEST]>>>";
    let vcp = engine.run_turn(reply, &ExecutionContext::default()).await.unwrap();
    assert_eq!(vcp.execution_results[0].error_kind, Some(ErrorKind::Validation));
    assert!(vcp.execution_results[0].result.contains("parameter `ink` (required)"));
    assert_eq!(vcp.parsed_requests[0].arg_str("river"), Some("Danube"), "the host still sees them");
    assert!(!labelled("Danube"), "the tool did not run");
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_echo「末」,\nmessage:「始」m「末」,\narchery:「始」no_reply「末」\n<<<[END_TOOL_REQUEST]>>>";
    let vcp = engine.run_turn(reply, &ExecutionContext::default()).await.unwrap();
    assert!(vcp.parsed_requests[0].fire_and_forget);
    assert!(vcp.execution_results[0].result.starts_with("started in the background"));
}

#[tokio::test(start_paused = true)]
async fn arguments_that_are_not_a_json_object_are_answered_and_never_run() {
    let engine = engine();
    let turn = AssistantTurn::new()
        .with_tool_call(ToolCall::new("c1", "text_label", "{\"ink\": \"blue\", \"river\""))
        .with_tool_call(call("c2", "text_label", json!(["blue", "Rhine"])));
    let cycle = engine.run_turn(&turn, &json_context()).await.unwrap();
    assert_eq!(cycle.execution_results.len(), 2);
    for result in &cycle.execution_results {
        assert_eq!(result.error_kind, Some(ErrorKind::Validation));
        assert!(result.result.contains("not a JSON object"), "{}", result.result);
    }
    assert_eq!(cycle.diagnostics.len(), 2);
    assert!(!labelled("Rhine"));
}

#[tokio::test(start_paused = true)]
async fn repeated_request_ids_get_a_diagnostic_and_results_stay_with_their_calls() {
    let engine = engine();
    let turn = AssistantTurn::new()
        .with_tool_call(call("same", "text_echo", json!({"message": "first"})))
        .with_tool_call(call("same", "text_nope", json!({})))
        .with_tool_call(call("same", "text_echo", json!({"message": "third"})));
    let cycle = engine.run_turn(&turn, &json_context()).await.unwrap();
    let repeated = cycle.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::DuplicateRequestId).count();
    assert_eq!(repeated, 2);
    let results: Vec<(Option<ErrorKind>, &str)> =
        cycle.execution_results.iter().map(|r| (r.error_kind, r.result.as_str())).collect();
    assert_eq!(results[0], (None, "first"));
    assert_eq!(results[1].0, Some(ErrorKind::NotFound));
    assert_eq!(results[2], (None, "third"));

    // Streamed, the same: the diagnostics and each result with its own call.
    let deltas = turn.clone().into_deltas().into_iter().map(Ok::<_, ChatModelError>);
    let streamed = engine.run_stream(stream::iter(deltas), &json_context()).await.unwrap();
    assert_eq!(streamed.diagnostics, cycle.diagnostics);
    let streamed_results: Vec<&str> = streamed.execution_results.iter().map(|r| r.result.as_str()).collect();
    let results: Vec<&str> = cycle.execution_results.iter().map(|r| r.result.as_str()).collect();
    assert_eq!(streamed_results, results);

    // VCP too: two blocks with one `request_id`.
    let block = |message: &str| {
        format!(
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_echo「末」,\nrequest_id:「始」r「末」,\nmessage:「始」{message}「末」\n<<<[END_TOOL_REQUEST]>>>\n"
        )
    };
    let reply = format!("{}{}", block("a"), block("b"));
    let vcp = engine.run_turn(&reply, &ExecutionContext::default()).await.unwrap();
    assert_eq!(vcp.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::DuplicateRequestId).count(), 1);
    assert_eq!(vcp.execution_results.iter().map(|r| r.result.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let chunks: Vec<String> = reply.chars().map(String::from).collect();
    let streamed = engine.run_stream(stream::iter(chunks), &ExecutionContext::default()).await.unwrap();
    assert_eq!(streamed.diagnostics, vcp.diagnostics);
}

#[tokio::test(start_paused = true)]
async fn the_config_selects_the_protocol_and_an_unknown_one_is_an_error() {
    let engine = engine();
    assert_eq!(engine.protocol_for(&ToolCallConfig::default()).unwrap().id(), "vcp");
    assert_eq!(engine.protocol_for(&json_context().config).unwrap().id(), "json-calls");
    let ctx = ExecutionContext::new(ToolCallConfig::default().with_protocol("smoke-signals"));
    let err = engine.run_turn("hello", &ctx).await.unwrap_err();
    // The error lists every protocol the engine knows: the built-in ones and the one
    // registered.
    let mut known = ProtocolRegistry::builtin_ids();
    known.push("json-calls");
    known.sort_unstable();
    let known = known.join(", ");
    assert!(
        matches!(&err, EngineError::Protocol(ProtocolError::Unknown { id, known: listed }) if id == "smoke-signals" && *listed == known),
        "{err:?}"
    );
    let declarations = engine.declarations(&json_context()).unwrap();
    let names: Vec<&str> = declarations
        .as_native()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["text_echo", "text_label", "text_aim"]);
}

/// Plays a native model: first two tool calls (with signed reasoning), then an answer.
struct NativeModel {
    seen: Mutex<Vec<ModelRequest>>,
}

impl ChatModel for NativeModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(request.clone());
        let turn = if seen.len() == 1 {
            AssistantTurn::new()
                .with_reasoning("Label it.", Some("opaque-signature".into()))
                .with_tool_call(call("call_1", "text_label", json!({"ink": "red", "river": "Nile"})))
                .with_tool_call(call("call_2", "text_echo", json!({"message": "done"})))
        } else {
            AssistantTurn::from_text("The Nile, in red.")
        };
        Box::pin(async move { Ok(turn) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_conversation_with_a_native_protocol_keeps_calls_ids_and_signatures() {
    let engine = engine();
    let model = NativeModel { seen: Mutex::new(Vec::new()) };
    let mut conversation = Conversation::new();
    conversation.push(Message::user("Label the Nile in red."));
    let outcome = engine.run_conversation(&model, &mut conversation, &json_context()).await.unwrap();
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.final_text(), "The Nile, in red.");

    let seen = model.seen.lock().unwrap();
    assert!(seen[0].tool_prompt.is_none(), "a native protocol adds no prompt");
    assert_eq!(seen[0].tools.as_ref().and_then(Value::as_array).map(Vec::len), Some(3));
    // The second request carries the turn back as it was (reasoning signed), then one
    // result message per call, matched by id.
    let second = &seen[1].messages;
    let roles: Vec<Role> = second.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool]);
    assert_eq!(
        second[1].content[0],
        ContentBlock::Reasoning(Reasoning::new("Label it.", Some("opaque-signature".into())))
    );
    let calls: Vec<&str> = second[1].tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(calls, ["call_1", "call_2"]);
    let answers: Vec<(&str, &str)> = second[2..]
        .iter()
        .map(|m| match &m.content[..] {
            [ContentBlock::ToolResult(block)] => (block.call_id.as_str(), block.name.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(answers, [("call_1", "text_label"), ("call_2", "text_echo")]);

    // The history answers its queries as for a text protocol.
    assert_eq!(conversation.tool_requests().count(), 2);
    let results: Vec<&str> = conversation.tool_results().map(|r| r.result.as_str()).collect();
    assert_eq!(results, ["Nile in red", "done"]);
    assert_eq!(conversation.count_of(Role::Tool), 2);
}

#[tokio::test(start_paused = true)]
async fn a_delta_stream_read_whole_at_the_end_gives_the_one_shot_cycle() {
    let engine = engine();
    let deltas = vec![
        TurnDelta::Reasoning("Hmm.".into()),
        TurnDelta::Text("On it.".into()),
        TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "text_echo".into() },
        TurnDelta::ToolCallArguments { index: 0, fragment: "{\"message\":".into() },
        TurnDelta::ToolCallArguments { index: 0, fragment: " \"streamed\"}".into() },
        TurnDelta::ToolCallEnd { index: 0 },
    ];
    let streamed = engine
        .run_stream(stream::iter(deltas.into_iter().map(Ok::<_, ChatModelError>)), &json_context())
        .await
        .unwrap();
    let one_shot = engine.run_turn(&streamed.turn, &json_context()).await.unwrap();
    assert_eq!(streamed.parsed_requests, one_shot.parsed_requests);
    assert_eq!(streamed.execution_results[0].result, "streamed");
    assert_eq!(streamed.turn.text(), "On it.");
    assert_eq!(streamed.turn.reasoning().next().map(|r| r.text.as_str()), Some("Hmm."));
}

#[tokio::test(start_paused = true)]
async fn a_streamed_conversation_ends_as_the_one_shot_one_and_reports_every_step() {
    let engine = engine();
    let one_shot_model = NativeModel { seen: Mutex::new(Vec::new()) };
    let mut one_shot = Conversation::new();
    one_shot.push(Message::user("Label the Nile in red."));
    let expected = engine.run_conversation(&one_shot_model, &mut one_shot, &json_context()).await.unwrap();

    let model = NativeModel { seen: Mutex::new(Vec::new()) };
    let mut conversation = Conversation::new();
    conversation.push(Message::user("Label the Nile in red."));
    let (ctx, events) = recorded(json_context());
    let outcome = engine.run_conversation_streamed(&model, &mut conversation, &ctx).await.unwrap();
    assert_eq!(outcome.stop, expected.stop);
    assert_eq!(outcome.final_turn, expected.final_turn);
    assert_eq!(conversation.messages().len(), one_shot.messages().len());
    for (streamed, whole) in conversation.messages().iter().zip(one_shot.messages()) {
        assert_eq!((streamed.role, &streamed.content), (whole.role, &whole.content));
    }
    let events = events.lock().unwrap();
    let ends = events.iter().filter(|e| matches!(e, CycleEvent::CycleEnded { .. })).count();
    assert_eq!(ends, 2, "one end per turn");
    let results = events.iter().filter(|e| matches!(e, CycleEvent::Finished { .. })).count();
    assert_eq!(results, 2, "both calls of the first turn reported as they finished");
}

/// A context whose observer records every event.
fn recorded(ctx: ExecutionContext) -> (ExecutionContext, Arc<Mutex<Vec<CycleEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    (ctx.on_event(move |e| sink.lock().unwrap().push(e.clone())), events)
}

/// A model that only streams: every turn is the stream its function makes.
struct StreamOnly(fn() -> futures::stream::BoxStream<'static, Result<TurnDelta, ChatModelError>>);

impl ChatModel for StreamOnly {
    fn complete<'a>(&'a self, _: &'a ModelRequest) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        Box::pin(async { Err(ChatModelError::other("stream only")) })
    }

    fn stream<'a>(
        &'a self,
        _: &'a ModelRequest,
    ) -> futures::stream::BoxStream<'a, Result<TurnDelta, ChatModelError>> {
        (self.0)()
    }
}

/// A model whose stream breaks after the first delta.
const BROKEN_STREAM: StreamOnly = StreamOnly(|| {
    Box::pin(stream::iter([
        Ok(TurnDelta::Text("Hel".into())),
        Err(ChatModelError::other("connection reset")),
    ]))
});

#[tokio::test(start_paused = true)]
async fn a_broken_model_stream_ends_the_streamed_loop_with_the_models_error() {
    let mut conversation = Conversation::new();
    conversation.push(Message::user("hi"));
    let err = engine()
        .run_conversation_streamed(&BROKEN_STREAM, &mut conversation, &ExecutionContext::default())
        .await
        .unwrap_err();
    assert_eq!(err, EngineError::Model(ChatModelError::other("connection reset")));
    assert_eq!(conversation.len(), 1, "the broken turn is not added");
}

/// A native stream that breaks after a call's arguments look whole, but before its end:
/// the call is reported incomplete and answered, never run with what arrived.
#[tokio::test(start_paused = true)]
async fn a_call_cut_off_by_a_broken_stream_is_not_run() {
    let registry = ToolRegistry::new();
    registry.register(Text::tool_spec()).unwrap();
    let openai = Arc::new(tool_calling::protocol::native::NativeProtocol::openai_chat());
    let engine = Engine::new(Arc::new(registry)).with_protocol(openai);
    let deltas = vec![
        Ok(TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "text_label".into() }),
        Ok(TurnDelta::ToolCallArguments { index: 0, fragment: r#"{"ink": "red", "river": "Volga"}"#.into() }),
        Err(ChatModelError::other("connection reset")),
    ];
    let (ctx, events) = recorded(ExecutionContext::default());
    let error = engine.run_stream(stream::iter(deltas), &ctx).await.unwrap_err();
    let tool_calling::engine::StreamCycleError::Stream { partial, .. } = error else { panic!("{error:?}") };
    let result = &partial.execution_results[0];
    assert!(
        !result.is_success() && result.result.contains("before the call to `text_label` was complete"),
        "{result:?}"
    );
    assert!(!labelled("Volga"), "the cut call did not run");
    assert!(
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, CycleEvent::Finished { result } if result.request_id == "c1")),
        "the observer heard its result"
    );
}

/// An engine over the `text` tool speaking OpenAI's native protocol, holding at most
/// `max` bytes of a streamed turn.
fn native_engine(max: usize) -> Engine {
    let registry = ToolRegistry::new();
    registry.register(Text::tool_spec()).unwrap();
    Engine::new(Arc::new(registry))
        .with_protocol(Arc::new(tool_calling::protocol::native::NativeProtocol::openai_chat()))
        .with_max_turn_bytes(max)
}

#[test]
fn the_turn_limit_defaults_to_64_mib() {
    assert_eq!(tool_calling::engine::DEFAULT_MAX_TURN_BYTES, 64 << 20);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_arguments_never_end_is_cut_at_the_turn_limit_and_never_runs() {
    use futures::StreamExt;
    // A model (or a custom client) streaming one call's arguments forever.
    let start = TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "text_echo".into() };
    let opening = TurnDelta::ToolCallArguments { index: 0, fragment: "{\"message\": \"".into() };
    let endless = stream::iter([start, opening])
        .chain(stream::repeat(TurnDelta::ToolCallArguments { index: 0, fragment: "a".repeat(100) }))
        .map(Ok::<_, ChatModelError>);
    let engine = native_engine(64 << 10);
    let streamed = engine.run_stream(endless, &ExecutionContext::default()).await.unwrap();
    assert_eq!(streamed.finish_reason, tool_calling::model::FinishReason::Length);
    let call = streamed.turn.tool_calls().next().unwrap();
    assert!(call.incomplete, "the cut call is marked incomplete");
    // Read up to the limit and no further: the start (64 + 2 + 9) and the opening
    // (64 + 13) cost 152, each 100-byte fragment 164.
    assert_eq!(call.arguments.len(), 13 + 100 * (((64 << 10) - 152) / 164));
    let result = &streamed.execution_results[0];
    assert_eq!(result.error_kind, Some(ErrorKind::Validation), "{}", result.result);
    assert!(streamed.diagnostics.iter().any(|d| d.kind == DiagnosticKind::LimitExceeded));
}

#[tokio::test(start_paused = true)]
async fn a_native_turn_at_the_limit_is_whole_and_one_byte_past_it_is_cut() {
    let deltas = || {
        vec![
            TurnDelta::Text("On it.".into()),
            TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "text_echo".into() },
            TurnDelta::ToolCallArguments { index: 0, fragment: "{\"message\":".into() },
            TurnDelta::ToolCallArguments { index: 0, fragment: " \"hi\"}".into() },
            TurnDelta::ToolCallEnd { index: 0 },
        ]
    };
    // 6 bytes of text; 64 + 2 + 9 for the start, 64 + 11 and 64 + 6 for the fragments,
    // 64 for the end.
    let cost = 6 + (64 + 2 + 9) + (64 + 11) + (64 + 6) + 64;
    let run = |max: usize| async move {
        let deltas = stream::iter(deltas().into_iter().map(Ok::<_, ChatModelError>));
        native_engine(max).run_stream(deltas, &ExecutionContext::default()).await.unwrap()
    };
    let whole = run(cost).await;
    assert_eq!(whole.finish_reason, tool_calling::model::FinishReason::ToolCalls);
    assert_eq!(whole.execution_results[0].result, "hi");
    assert!(whole.diagnostics.is_empty(), "{:?}", whole.diagnostics);

    // One byte less: the end is not read, so the call is cut and never runs.
    let cut = run(cost - 1).await;
    assert_eq!(cut.finish_reason, tool_calling::model::FinishReason::Length);
    assert!(cut.turn.tool_calls().next().unwrap().incomplete);
    assert_eq!(cut.execution_results[0].error_kind, Some(ErrorKind::Validation));
    let limit = cut.diagnostics.iter().find(|d| d.kind == DiagnosticKind::LimitExceeded).unwrap();
    assert!(limit.message.contains(&format!("at most {} bytes", cost - 1)), "{}", limit.message);
}

/// A model whose every turn is endless text.
const CHATTERBOX: StreamOnly = StreamOnly(|| {
    use futures::StreamExt;
    stream::repeat(TurnDelta::Text("blah ".into())).map(Ok).boxed()
});

#[tokio::test(start_paused = true)]
async fn an_endless_streamed_turn_ends_at_the_limit_with_tools_on_or_off() {
    let engine = native_engine(1000);
    for enabled in [true, false] {
        let mut conversation = Conversation::new();
        conversation.push(Message::user("Talk."));
        let ctx = ExecutionContext::new(ToolCallConfig::default().with_enabled(enabled));
        let outcome = engine.run_conversation_streamed(&CHATTERBOX, &mut conversation, &ctx).await.unwrap();
        assert_eq!(outcome.final_text().len(), 1000, "tools on: {enabled}");
        assert_eq!(outcome.final_turn.finish_reason, Some(tool_calling::model::FinishReason::Length));
    }
}
