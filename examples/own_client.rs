//! Native tool calling over your own HTTP client.
//!
//! ```text
//! cargo run --example own_client
//! ```
//!
//! A program that already talks to OpenAI, Anthropic or Gemini with an HTTP client of its
//! own (reqwest, hyper, an SDK's transport) keeps it, and uses this crate for the rest:
//! the provider's wire format writes the request body with the tools and reads the
//! response body; the engine runs the calls in it; the wire format writes the messages to
//! send back, in the provider's shape. Nothing here needs the `http` feature.
//!
//! The response bodies below are what each API returns for a turn that calls a tool (as
//! your client would hand them over); no network is used.

use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::model::{Message, ModelRequest};
use tool_calling::providers::{Provider, WireFormat};

#[path = "support/logging.rs"]
mod logging;

/// Add two numbers.
#[tool_calling::tool_fn(id = "calc", method = "add")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// What each provider answers when the model calls `calc_add` with 2 and 40.
fn response_body(provider: Provider) -> Value {
    match provider {
        Provider::Anthropic => json!({
            "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Adding them."},
                {"type": "tool_use", "id": "toolu_01", "name": "calc_add", "input": {"a": 2, "b": 40}}
            ]
        }),
        Provider::Gemini => json!({
            "candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
                {"functionCall": {"name": "calc_add", "args": {"a": 2, "b": 40}}}
            ]}}]
        }),
        _ => json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_01", "type": "function",
                                "function": {"name": "calc_add", "arguments": "{\"a\": 2, \"b\": 40}"}}]
            }}]
        }),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    logging::init();
    // Every #[tool_fn] in the program; the engine knows every built-in protocol by id.
    let engine = Engine::from_inventory()?;
    for provider in [Provider::OpenAiChat, Provider::Anthropic, Provider::Gemini] {
        // The provider's native protocol, picked by id for this conversation.
        let ctx = ExecutionContext::new(ToolCallConfig::default().with_protocol(provider.protocol_id()));

        // 1. The request: the conversation, plus the tools in the provider's shape.
        let mut request = ModelRequest::new(vec![Message::user("What is 2 + 40?")]);
        engine.declarations(&ctx)?.apply(&mut request);
        let body = provider.request_body(&request, "a-model", false);
        println!("== {provider}\nrequest body (post it with your client):\n{body}\n");

        // 2. Your client posts it and hands back the response body.
        let turn = provider.parse_response(&response_body(provider))?;

        // 3. The cycle: the calls in the turn are read, checked and run.
        let cycle = engine.run_turn(turn.clone(), &ctx).await?;
        for result in &cycle.execution_results {
            println!("{} ({}) -> {}", result.tool_name, result.request_id, result.result);
        }

        // 4. What to append to the conversation, in the provider's shape: the model's
        //    turn as the provider sent it, then the results (Gemini matches results to
        //    calls by position, so the turn goes first).
        let mut history = vec![Message::from_turn(turn)];
        history.extend(cycle.result_messages);
        let messages = provider.wire_messages(&history);
        println!("messages to send back:\n{}\n", serde_json::to_string_pretty(&messages)?);
    }
    Ok(())
}
