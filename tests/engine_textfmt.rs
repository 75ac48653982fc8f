//! The engine running full rounds with open-model text formats: the family's tool
//! prompt goes out, the reply's calls run (text arguments typed by the tool's schema),
//! results come back in the family's shape, streamed or not; `auto` answers in the
//! format it read.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_calling::ToolError;
use tool_calling::engine::{Engine, StopReason};
use tool_calling::exec::{CycleEvent, ExecutionContext};
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest, Role,
};
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatProtocol};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, Instance, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};

/// Replies in order; records every request's messages (tool prompt included).
struct Scripted {
    replies: Mutex<Vec<String>>,
    seen: Mutex<Vec<Vec<Message>>>,
}

impl Scripted {
    fn new(replies: &[&str]) -> Self {
        Scripted {
            replies: Mutex::new(replies.iter().rev().map(|r| r.to_string()).collect()),
            seen: Mutex::default(),
        }
    }
}

impl ChatModel for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        self.seen.lock().unwrap().push(request.messages_with_prompt());
        let reply = self.replies.lock().unwrap().pop();
        Box::pin(async move {
            reply.map(AssistantTurn::from_text).ok_or_else(|| ChatModelError::other("script exhausted"))
        })
    }
}

/// `notes_write(title: string, count: integer)`: echoes what it got, with the JSON types.
fn registry() -> Arc<ToolRegistry> {
    let write = MethodSpec::new(
        MethodDefinition::new("write", "Write a note.").with_parameters(json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["title", "count"]
        })),
        |_: Instance,
         args: ArgMap|
         -> tool_calling::tools::BoxFuture<'static, Result<ToolOutput, ToolError>> {
            Box::pin(
                async move { Ok(ToolOutput::Json(json!({"title": args["title"], "count": args["count"]}))) },
            )
        },
    );
    let registry = ToolRegistry::new();
    registry.register(ToolSpec::stateless("notes", "Notes").with_method(write)).unwrap();
    Arc::new(registry)
}

/// Runs a two-round conversation; returns the outcome and what the model was sent.
async fn converse(
    engine: &Engine,
    replies: &[&str],
) -> (tool_calling::engine::LoopOutcome, Vec<Vec<Message>>) {
    let model = Scripted::new(replies);
    let mut conversation = Conversation::new();
    conversation.push(Message::user("Write a note titled 3, twice."));
    let outcome =
        engine.run_conversation(&model, &mut conversation, &ExecutionContext::default()).await.unwrap();
    let seen = model.seen.lock().unwrap().clone();
    (outcome, seen)
}

fn last_tool_text(messages: &[Message]) -> String {
    messages.iter().rev().find(|m| m.role == Role::Tool).map(|m| m.text().into_owned()).unwrap_or_default()
}

/// The tool's output as the round recorded it.
fn output(outcome: &tool_calling::engine::LoopOutcome) -> Value {
    let result = &outcome.rounds[0].cycle.execution_results[0];
    assert!(result.is_success(), "{result:?}");
    serde_json::from_str(&result.result).unwrap()
}

#[tokio::test]
async fn glm47_round_with_schema_typed_text_arguments() {
    let engine = Engine::new(registry()).with_protocol(Arc::new(TextFormatProtocol::new(TextFormat::Glm47)));
    let reply = "<tool_call>notes_write<arg_key>title</arg_key><arg_value>3</arg_value><arg_key>count</arg_key><arg_value>2</arg_value></tool_call>";
    let (outcome, seen) = converse(&engine, &[reply, "Done."]).await;
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.final_text(), "Done.");
    // `title` is a string parameter: "3" stays text; `count` is an integer.
    assert_eq!(output(&outcome), json!({"title": "3", "count": 2}));
    let prompt = seen[0][0].text();
    assert!(
        prompt.contains("<tools>") && prompt.contains("notes_write") && prompt.contains("<arg_key>"),
        "{prompt}"
    );
    let back = last_tool_text(&seen[1]);
    assert!(back.starts_with("<|observation|>\n<tool_response>\n") && back.contains("\"count\":2"), "{back}");
}

#[tokio::test]
async fn hermes_round_streamed() {
    let engine = Engine::new(registry()).with_protocol(Arc::new(TextFormatProtocol::new(TextFormat::Hermes)));
    let reply = "Writing.\n<tool_call>\n{\"name\": \"notes_write\", \"arguments\": {\"title\": \"groceries\", \"count\": 1}}\n</tool_call>";
    let model = Scripted::new(&[reply, "Done."]);
    let mut conversation = Conversation::new();
    conversation.push(Message::user("Write it."));
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let ctx =
        ExecutionContext::default().on_event(move |e: &CycleEvent| sink.lock().unwrap().push(e.clone()));
    let outcome = engine.run_conversation_streamed(&model, &mut conversation, &ctx).await.unwrap();
    assert_eq!(output(&outcome), json!({"title": "groceries", "count": 1}));
    let events = events.lock().unwrap();
    let started = events.iter().filter(|e| matches!(e, CycleEvent::RequestParsed { .. })).count();
    assert_eq!(started, 1);
    let prose: String = events
        .iter()
        .filter_map(|e| match e {
            CycleEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prose, "Writing.\nDone.");
    let seen = model.seen.lock().unwrap();
    assert!(seen[0][0].text().contains("<tool_call>\n{\"name\": <function-name>"));
    let back = last_tool_text(&seen[1]);
    assert!(back.starts_with("<tool_response>\n{") && back.ends_with("\n</tool_response>"), "{back}");
}

#[tokio::test]
async fn minimax_round_with_an_error_result() {
    let engine =
        Engine::new(registry()).with_protocol(Arc::new(TextFormatProtocol::new(TextFormat::MinimaxM2)));
    // `count` is not an integer: validation refuses the call, and the error goes back.
    let reply = "<minimax:tool_call><invoke name=\"notes_write\"><parameter name=\"title\">x</parameter><parameter name=\"count\">many</parameter></invoke></minimax:tool_call>";
    let (outcome, seen) = converse(&engine, &[reply, "Sorry."]).await;
    let result = &outcome.rounds[0].cycle.execution_results[0];
    assert!(!result.is_success());
    assert!(result.result.contains("count"), "{}", result.result);
    let back = last_tool_text(&seen[1]);
    assert!(back.starts_with("<response>Error: ") && back.contains("count"), "{back}");
}

#[tokio::test]
async fn auto_answers_in_the_format_it_read() {
    let engine = Engine::new(registry()).with_protocol(Arc::new(AutoProtocol::new()));
    let reply = "<|tool_calls_section_begin|><|tool_call_begin|>functions.notes_write:0<|tool_call_argument_begin|>{\"title\": \"t\", \"count\": 4}<|tool_call_end|><|tool_calls_section_end|>";
    let (outcome, seen) = converse(&engine, &[reply, "Done."]).await;
    assert_eq!(output(&outcome), json!({"title": "t", "count": 4}));
    let back = last_tool_text(&seen[1]);
    assert!(back.starts_with("## Return of functions.notes_write:0\n"), "{back}");
    // The prompt is VCP's by default.
    assert!(seen[0][0].text().contains("<<<[TOOL_REQUEST]>>>"));
}
