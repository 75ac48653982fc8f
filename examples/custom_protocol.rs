//! A tool-calling protocol of your own, plugged into the same engine and tools.
//!
//! ```text
//! cargo run --example custom_protocol
//! ```
//!
//! `TagCalls` below is written from scratch against the `ToolCallingProtocol` trait, the
//! way you would add a format the crate does not know. Its model writes each call as
//! `<tool_call>{"name": "calc_add", "arguments": {"a": 2}}</tool_call>` (the style of
//! Hermes and Qwen) and reads results in `<tool_response>` blocks. The crate already ships
//! a complete, streaming Hermes parser (`protocol::textfmt`); this example shows how little
//! a protocol needs: an id, how tools are offered, how a turn is read, how results go
//! back. Routing, checks, argument coercion, validation, time limits and the conversation
//! loop come from the engine, unchanged.
//!
//! The model here is scripted (no network): it calls two tools, then answers.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest, Role,
};
use tool_calling::protocol::{
    Diagnostic, DiagnosticKind, ParseOutcome, ToolCallingProtocol, ToolDeclarations, TurnState,
};
use tool_calling::tools::ToolDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::{Span, ToolExecutionResult, ToolRequest};

#[path = "support/logging.rs"]
mod logging;

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// Calls as `<tool_call>{json}</tool_call>` tags in the reply's text.
struct TagCalls;

impl ToolCallingProtocol for TagCalls {
    fn id(&self) -> &str {
        "tag-calls"
    }

    /// A prompt section: each method's name, description and JSON Schema, then the rule.
    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let mut prompt = String::from("You can call these tools:\n<tools>\n");
        for tool in tools {
            for method in &tool.methods {
                let entry = json!({
                    "name": method.full_name(&tool.tool_id),
                    "description": method.description,
                    "parameters": method.parameters,
                });
                prompt.push_str(&format!("{entry}\n"));
            }
        }
        prompt.push_str(
            "</tools>\nTo call one, write <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call>; \
             results come back in <tool_response> blocks.",
        );
        ToolDeclarations::Prompt(prompt)
    }

    /// Every `<tool_call>` tag becomes a request, broken ones included: a request the
    /// model got wrong is answered with what to fix, never dropped. Spans are byte offsets
    /// into the text; the text around the tags is the normal text.
    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        let text = turn.text();
        let mut requests = Vec::new();
        let mut diagnostics = Vec::new();
        let mut normal_text = String::new();
        let mut at = 0;
        while let Some(found) = text[at..].find(OPEN) {
            let start = at + found;
            normal_text.push_str(&text[at..start]);
            let body_start = start + OPEN.len();
            let id = format!("call_{}", requests.len() + 1);
            let (body, end, closed) = match text[body_start..].find(CLOSE) {
                Some(close) => {
                    (&text[body_start..body_start + close], body_start + close + CLOSE.len(), true)
                }
                None => (&text[body_start..], text.len(), false),
            };
            let span = Span::new(start, end);
            let request = match serde_json::from_str::<Value>(body.trim()) {
                Ok(Value::Object(call)) => {
                    let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                    let mut request = ToolRequest::new(id, name).with_span(span);
                    match call.get("arguments") {
                        Some(Value::Object(args)) => {
                            for (key, value) in args {
                                request = request.with_arg(key.clone(), value.clone());
                            }
                        }
                        None => {}
                        Some(_) => request = request.with_problem("`arguments` must be a JSON object"),
                    }
                    if name.is_empty() {
                        request = request.with_problem("the call has no `name`");
                    }
                    request
                }
                _ => {
                    diagnostics.push(Diagnostic::new(
                        DiagnosticKind::InvalidPayload,
                        "a <tool_call> does not hold a JSON object",
                        span,
                    ));
                    ToolRequest::new(id, "").with_span(span).with_problem(
                        "the <tool_call> does not hold a JSON object {\"name\": …, \"arguments\": {…}}",
                    )
                }
            };
            if closed {
                requests.push(request);
            } else {
                diagnostics.push(Diagnostic::new(
                    DiagnosticKind::MissingEndMarker,
                    "a <tool_call> is never closed",
                    span,
                ));
                requests.push(request.with_problem("the call is cut off: close it with </tool_call>"));
            }
            at = end;
        }
        normal_text.push_str(&text[at..]);
        ParseOutcome::new(requests, diagnostics).with_normal_text(normal_text)
    }

    /// One message with a `<tool_response>` per result, in request order.
    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        if results.is_empty() {
            return Vec::new();
        }
        let text: Vec<String> = results
            .iter()
            .map(|r| {
                let body = json!({"name": r.tool_name, "status": r.status, "content": r.result});
                format!("<tool_response>\n{body}\n</tool_response>")
            })
            .collect();
        vec![Message::tool(text.join("\n")).with_tool_results(results.iter().cloned())]
    }
}

/// A scripted model: two calls (one with a string the schema turns into a number), then
/// an answer once the results are in.
struct Scripted;

impl ChatModel for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        let reply = if request.messages.iter().any(|m| m.role == Role::Tool) {
            "2 + 40 is 42, and here is your greeting: hello hello hello."
        } else {
            "Let me work that out.\n\
             <tool_call>{\"name\": \"calc_add\", \"arguments\": {\"a\": 2, \"b\": \"40\"}}</tool_call>\n\
             <tool_call>{\"name\": \"text_repeat\", \"arguments\": {\"message\": \"hello\", \"times\": 3}}</tool_call>"
        };
        Box::pin(async move { Ok(AssistantTurn::from_text(reply)) })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    logging::init();
    // The demo tools (`cli/src/demo_tools.rs`) registered themselves with `#[tool]`.
    let registry = Arc::new(ToolRegistry::from_inventory()?);
    let protocol: Arc<dyn ToolCallingProtocol> = Arc::new(TagCalls);

    // 1. How the tools are offered: the engine asks the protocol, for the enabled tools.
    let engine = Engine::new(registry).with_protocol(protocol.clone());
    if let Some(prompt) = engine.declarations(&ExecutionContext::default())?.as_prompt() {
        let first_lines: Vec<&str> = prompt.lines().take(3).collect();
        println!(
            "The prompt ({} lines), first lines:\n{}\n…\n",
            prompt.lines().count(),
            first_lines.join("\n")
        );
    }

    // 2. Reading a reply, mistakes included: every tag is a request, answered either way.
    let reply = "<tool_call>{\"name\": \"calc_divide\", \"arguments\": {\"a\": 1, \"b\": 0}}</tool_call>\n\
                 <tool_call>{\"name\": calc_add}</tool_call>\n\
                 <tool_call>{\"name\": \"text_echo\", \"arguments\": {\"message\": \"cut";
    let cycle = engine.run_turn(reply, &ExecutionContext::default()).await?;
    println!("A damaged reply gives {} requests, each answered:", cycle.parsed_requests.len());
    for (request, result) in cycle.parsed_requests.iter().zip(&cycle.execution_results) {
        let args = serde_json::to_string(&request.args)?;
        println!(
            "  {} {:?} {args}\n    → {:?}: {}",
            request.request_id, request.tool_name, result.status, result.result
        );
    }
    for diagnostic in &cycle.diagnostics {
        println!("  diagnostic {}: {}", diagnostic.kind, diagnostic.message);
    }

    // 3. The same protocol driving the engine's conversation loop.
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What is 2 + 40? And say hello three times."));
    let outcome = engine.run_conversation(&Scripted, &mut conversation, &ExecutionContext::default()).await?;
    println!("\nThe conversation ({} rounds, stopped: {:?}):", outcome.rounds.len(), outcome.stop);
    for message in conversation.messages() {
        println!("--- {:?}\n{}", message.role, message.text());
    }
    Ok(())
}
