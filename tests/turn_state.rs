//! What a protocol learns about a turn travels with the turn: one `auto` protocol serves
//! several conversations at once, each written in another format, with the same
//! (sequential) request ids, and each gets its results in its own format.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tool_calling::ToolError;
use tool_calling::engine::{Engine, StopReason};
use tool_calling::exec::ExecutionContext;
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest, Role,
};
use tool_calling::protocol::RequestIdStyle;
use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat, TextFormatOptions};
use tool_calling::protocol::vcp::VcpOptions;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{
    ArgMap, BoxFuture as ToolFuture, Instance, MethodSpec, ToolOutput, ToolRegistry, ToolSpec,
};

/// A model that answers its first request with `call` after `delay` (paused clock), and
/// every later one with a final answer; it records the last message of each request.
struct Scripted {
    call: &'static str,
    delay: Duration,
    last_messages: Mutex<Vec<Message>>,
}

impl Scripted {
    fn new(call: &'static str, delay_ms: u64) -> Self {
        Scripted { call, delay: Duration::from_millis(delay_ms), last_messages: Mutex::default() }
    }

    /// The text of the tool message the model was sent after its call.
    fn results_it_read(&self) -> String {
        let seen = self.last_messages.lock().unwrap();
        let message = seen.get(1).expect("the model was asked a second time, with the results");
        assert_eq!(message.role, Role::Tool);
        message.text().into_owned()
    }
}

impl ChatModel for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        let mut seen = self.last_messages.lock().unwrap();
        let first = seen.is_empty();
        seen.extend(request.messages.last().cloned());
        let reply = if first { self.call } else { "Done." };
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(AssistantTurn::from_text(reply))
        })
    }
}

/// `t_echo(message)`, which takes 50 ms (paused clock), so that the conversations'
/// calls overlap.
fn registry() -> Arc<ToolRegistry> {
    let echo = MethodSpec::new(
        MethodDefinition::new("echo", "Echo a message.").with_parameters(json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"]
        })),
        |_: Instance, args: ArgMap| -> ToolFuture<'static, Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(ToolOutput::Text(format!("echo: {}", args["message"].as_str().unwrap_or_default())))
            })
        },
    );
    let registry = ToolRegistry::new();
    registry.register(ToolSpec::stateless("t", "Test tools").with_method(echo)).unwrap();
    Arc::new(registry)
}

const HERMES: &str =
    "Echoing.\n<tool_call>\n{\"name\": \"t_echo\", \"arguments\": {\"message\": \"hermes\"}}\n</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS][{\"name\": \"t_echo\", \"arguments\": {\"message\": \"mistral\"}}]";
const VCP: &str =
    "<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_echo「末」,\nmessage:「始」vcp「末」\n<<<[END_TOOL_REQUEST]>>>";

#[tokio::test(start_paused = true)]
async fn one_auto_protocol_answers_concurrent_conversations_each_in_its_own_format() {
    // Sequential ids: every conversation's first call is `req_1`.
    let auto = AutoProtocol::new()
        .with_vcp(VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential)))
        .with_options(TextFormatOptions::default().request_ids(RequestIdStyle::Sequential));
    let engine = Engine::new(registry()).with_protocol(Arc::new(auto));
    // The calls arrive in the order Hermes, Mistral, VCP, and all run at once; the
    // results are written in the reverse order (the VCP call finishes first).
    let hermes = Scripted::new(HERMES, 0);
    let mistral = Scripted::new(MISTRAL, 10);
    let vcp = Scripted::new(VCP, 20);
    let run = |model: &'static Scripted| {
        let engine = engine.clone();
        async move {
            let mut conversation = Conversation::new();
            conversation.push(Message::user("Echo something."));
            engine.run_conversation(model, &mut conversation, &ExecutionContext::default()).await.unwrap()
        }
    };
    let (hermes, mistral, vcp): (&'static Scripted, &'static Scripted, &'static Scripted) =
        (Box::leak(Box::new(hermes)), Box::leak(Box::new(mistral)), Box::leak(Box::new(vcp)));
    let (a, b, c) = tokio::join!(run(hermes), run(mistral), run(vcp));
    for outcome in [&a, &b, &c] {
        assert_eq!(outcome.stop, StopReason::Finished);
        assert_eq!(outcome.rounds[0].cycle.parsed_requests[0].request_id, "req_1");
    }

    let read = hermes.results_it_read();
    assert!(read.starts_with("<tool_response>") && read.contains("echo: hermes"), "Hermes read: {read}");
    let read = mistral.results_it_read();
    assert!(read.starts_with("[TOOL_RESULTS]") && read.contains("echo: mistral"), "Mistral read: {read}");
    let read = vcp.results_it_read();
    assert!(read.starts_with("<<<[TOOL_RESULT]>>>") && read.contains("echo: vcp"), "VCP read: {read}");
}

#[test]
fn the_turn_state_not_the_request_id_decides_the_format_of_the_results() {
    use tool_calling::ToolExecutionResult;
    use tool_calling::protocol::ToolCallingProtocol;

    let auto = AutoProtocol::new()
        .with_options(TextFormatOptions::default().request_ids(RequestIdStyle::Sequential));
    let hermes = auto.parse(HERMES);
    let mistral = auto.parse(MISTRAL);
    assert_eq!(hermes.requests[0].request_id, mistral.requests[0].request_id, "the same id in both");
    assert_eq!(hermes.state.dialect, Some(Detected::Format(TextFormat::Hermes)));
    assert_eq!(mistral.state.dialect, Some(Detected::Format(TextFormat::Mistral)));
    let result = [ToolExecutionResult::success("req_1", "t_echo", "ok")];
    // Written after the Mistral turn was read, for the Hermes turn: Hermes.
    let for_hermes = auto.result_messages(&result, &hermes.state)[0].text().into_owned();
    assert!(for_hermes.starts_with("<tool_response>"), "{for_hermes}");
    let for_mistral = auto.result_messages(&result, &mistral.state)[0].text().into_owned();
    assert!(for_mistral.starts_with("[TOOL_RESULTS]"), "{for_mistral}");
}
