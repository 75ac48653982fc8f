//! The gateway: tool calling for a model whose server has no tools API.
//!
//! ```text
//! cargo run --features gateway --example gateway
//! ```
//!
//! It starts a stand-in for such a server (`support/replay_upstream.rs`: it replays model
//! text written in the Hermes format, `<tool_call>{…}</tool_call>`, and has never heard
//! of `tools`), puts the gateway in front of it, and talks to the gateway as any OpenAI
//! client would, with this crate's `HttpChatModel`: tools offered in the request, calls
//! read from `tool_calls`, results sent back as `tool` messages. The gateway writes the
//! tools into the prompt, reads the calls out of the text, and sends the results back up
//! as text, in the same format.
//!
//! The same gateway, in front of a real server, is one command:
//!
//! ```text
//! tool-calling gateway --upstream http://127.0.0.1:8080/v1 --protocol hermes --port 4000
//! ```

use std::time::Duration;

use serde_json::json;
use tool_calling::ToolExecutionResult;
use tool_calling::gateway::{Gateway, GatewayConfig};
use tool_calling::model::{ChatModel, ContentBlock, Message, ModelRequest, Role, ToolResultBlock};
use tool_calling::providers::{HttpChatModel, Provider};

#[path = "support/replay_upstream.rs"]
mod replay_upstream;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A server with no tools API (here: recorded text), and the gateway before it.
    let upstream = replay_upstream::start(Duration::from_millis(2)).await?;
    let gateway = Gateway::new(GatewayConfig::new(&upstream.url).protocol("hermes"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    println!("upstream (no tools API): {}", upstream.url);
    println!("gateway:                 http://{address}/v1 (protocol hermes)\n");

    // 2. Any OpenAI client, pointed at the gateway, with tools.
    let client = HttpChatModel::builder(Provider::OpenAiChat)
        .base_url(format!("http://{address}/v1"))
        .model("replay")
        .api_key("unused")
        .build()?;
    let mut request =
        ModelRequest::new(vec![Message::user("Weather and time in Paris? replay:hermes_parallel")]);
    request.tools = Some(json!([
        {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time", "description": "The time in a zone.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}},
    ]));
    let turn = client.complete(&request).await?;
    println!("The model wrote text; the client got:");
    for reasoning in turn.reasoning() {
        println!("  reasoning: {}", reasoning.text);
    }
    println!("  text:      {:?}", turn.text());
    for call in turn.tool_calls() {
        println!("  tool call: {} {} {}", call.id, call.name, call.arguments);
    }
    println!("  finish:    {:?}\n", turn.finish_reason);

    // 3. Run the tools (here: fixed answers) and send the results back.
    let results: Vec<Message> = turn
        .tool_calls()
        .map(|call| {
            let answer = if call.name == "get_weather" { "18C sunny" } else { "10:00" };
            let result = ToolExecutionResult::success(&call.id, &call.name, answer);
            Message::with_content(
                Role::Tool,
                vec![ContentBlock::ToolResult(ToolResultBlock::from_result(&result))],
            )
        })
        .collect();
    request.messages.push(Message::from_turn(turn));
    request.messages.extend(results);
    let answer = client.complete(&request).await?;
    println!("Second round, the results sent back as `tool` messages:");
    println!("  text:      {:?}", answer.text());

    // What the upstream saw: one text conversation, in its own format.
    let sent = &upstream.requests()[1]["messages"];
    println!("\nWhat the upstream received in the second round:");
    for message in sent.as_array().into_iter().flatten() {
        let text = message["content"].as_str().unwrap_or_default();
        let first_line = text.lines().next().unwrap_or_default();
        let more = if text.lines().count() > 1 { " …" } else { "" };
        println!("  {:<9} {first_line}{more}", message["role"].as_str().unwrap_or_default());
    }
    Ok(())
}
