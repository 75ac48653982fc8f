//! A real model in the loop: SmolLM2-135M-Instruct served by llama.cpp on loopback (see
//! `support/llama.rs`), driven through the protocols' grammars:
//!
//! - **the engine**, for every protocol that writes a GBNF grammar: an
//!   [`HttpChatModel`] with [`GrammarServer::LlamaCpp`] and the conversation loop. The
//!   first turn must call (scope `call`, text values bounded to 64 characters as
//!   docs/grammar.md advises for a small model): it holds one complete, valid call to a demo
//!   tool, which the engine runs; the result goes back in the protocol's layout; the next
//!   turn gets scope `reply`, and the model answers in text (or calls again, and is then
//!   given a grammar of text alone), which ends the conversation with a final answer
//!   that holds no markup.
//! - **the gateway**, in front of the same server, driven by the official `openai`
//!   Python client (`real_model/gateway_client.py`): `tool_choice: "required"` gets a
//!   tool call with valid JSON arguments, whole and streamed, in VCP and three
//!   open-model formats, for a tool whose schema uses `maxLength`, `enum` and a nested
//!   object.
//!
//! - **the `local_model` example**, run as a user runs it against the server.
//!
//! Decoding is greedy with a fixed seed, so each run gives the same replies.

#![cfg(all(feature = "http", feature = "gateway"))]

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;
#[path = "support/example_bin.rs"]
mod example_bin;
#[path = "support/llama.rs"]
mod llama;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, StopReason};
use tool_calling::exec::ExecutionContext;
use tool_calling::gateway::{Constrain, Gateway, GatewayConfig};
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::model::{Conversation, Message, RequestOptions};
use tool_calling::protocol::{BuiltinOptions, ProtocolRegistry};
use tool_calling::providers::{GrammarServer, HttpChatModel, HttpRetry, Provider};
use tool_calling::tools::ToolRegistry;

fn registry() -> Arc<ToolRegistry> {
    static REGISTRY: std::sync::OnceLock<Arc<ToolRegistry>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Arc::new(ToolRegistry::from_inventory().expect("demo tools are valid"))).clone()
}

/// Every built-in protocol that writes a GBNF grammar of one call for the demo tools.
fn protocols_with_grammars() -> Vec<&'static str> {
    let tools = ToolCallConfig::default().enabled_definitions(&registry());
    ProtocolRegistry::builtin_ids()
        .into_iter()
        .filter(|id| {
            let protocol = ProtocolRegistry::builtin(id, &BuiltinOptions::default()).expect("a built-in");
            protocol.as_protocol().grammar(&tools, &Constraint::new(Dialect::Gbnf, Scope::Call)).is_ok()
        })
        .collect()
}

/// The model behind the server, greedy, with room for a call (a small model may write
/// every digit a number admits) and a short answer.
fn model(url: &str) -> HttpChatModel {
    HttpChatModel::builder(Provider::OpenAiChat)
        .base_url(url)
        .model(llama::MODEL)
        .grammar_server(GrammarServer::LlamaCpp)
        .retry(HttpRetry::none())
        .request_timeout(Duration::from_secs(300))
        .build()
        .expect("a client")
        .with_options(RequestOptions::default().temperature(0.0).max_tokens(200))
}

/// What went wrong in one protocol's conversation, or `Ok`.
async fn converse(url: &str, id: &str) -> Result<String, String> {
    let engine = Engine::new(registry());
    // The calculator alone: a short prompt and a small grammar keep each protocol's
    // conversation to seconds.
    let config = ToolCallConfig::default()
        .with_default_tool_enabled(false)
        .with_toggle("calc", true)
        .with_protocol(id)
        .with_grammar(Constraint::new(Dialect::Gbnf, Scope::Call).max_text(64))
        .with_max_iterations(4);
    let ctx = ExecutionContext::new(config);
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What is 2 plus 40? Use the calculator."));
    let outcome = engine
        .run_conversation(&model(url), &mut conversation, &ctx)
        .await
        .map_err(|e| format!("the loop failed: {e}"))?;
    let first = outcome.rounds.first().ok_or("no round")?;
    let calls = &first.cycle.parsed_requests;
    if calls.len() != 1 || !calls.iter().all(|r| r.complete) {
        return Err(format!("the first turn must hold one complete call: {:?}", first.cycle.turn.text()));
    }
    for result in &first.cycle.execution_results {
        if !result.is_success() {
            return Err(format!("the call did not run: {} ({:?})", result.result, first.cycle.turn.text()));
        }
    }
    // The turn after the result answers, or calls again; after a repeated call, and on
    // the loop's last turn, the grammar admits text alone, so the conversation ends in
    // an answer.
    let turns: Vec<String> = outcome.rounds.iter().map(|r| r.cycle.turn.text().into_owned()).collect();
    if outcome.stop != StopReason::Finished {
        return Err(format!("the conversation must end in an answer: {:?} after {turns:?}", outcome.stop));
    }
    let answer = outcome.final_text().into_owned();
    if answer.trim().is_empty() {
        return Err(format!("the answer is empty after {turns:?}"));
    }
    let protocol = engine.protocol_for(&ctx.config).map_err(|e| e.to_string())?;
    let reread = protocol.parse_turn(&tool_calling::model::AssistantTurn::from_text(&answer));
    if !reread.requests.is_empty() || reread.normal_text != answer {
        return Err(format!("the final answer holds markup: {answer:?}"));
    }
    Ok(turns.join(" → ").replace('\n', "⏎"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_with_a_grammar_calls_then_answers() {
    let url = tokio::task::spawn_blocking(llama::server).await.expect("the server");
    let ids = protocols_with_grammars();
    assert!(ids.contains(&"vcp") && ids.contains(&"hermes"), "{ids:?}");
    let mut failures = Vec::new();
    for id in &ids {
        match converse(&url, id).await {
            Ok(summary) => println!("{id}: {summary}"),
            Err(why) => {
                println!("{id}: FAILED: {why}");
                failures.push(format!("{id}: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} protocols failed:\n{}",
        failures.len(),
        ids.len(),
        failures.join("\n")
    );
}

async fn serve(config: GatewayConfig) -> String {
    let gateway = Gateway::new(config).expect("a valid configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    format!("http://{address}/v1")
}

/// The protocols the gateway checks are run with: VCP and three open-model formats of
/// different kinds (JSON in tags, XML parameters, a JSON list after a token).
const GATEWAY_PROTOCOLS: [&str; 4] = ["vcp", "hermes", "qwen3_coder_xml", "mistral"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_gets_valid_calls_through_the_gateway() {
    let url = tokio::task::spawn_blocking(llama::server).await.expect("the server");
    let python = tokio::task::spawn_blocking(llama::python).await.expect("the environment");
    let mut gateways = serde_json::Map::new();
    for protocol in GATEWAY_PROTOCOLS {
        let config = GatewayConfig::new(&url)
            .protocol(protocol)
            .constrain(Constrain::new(GrammarServer::LlamaCpp, Dialect::Gbnf).max_text(64));
        gateways.insert(protocol.to_string(), Value::String(serve(config).await));
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/real_model/gateway_client.py");
    let mut command = tokio::process::Command::new(python);
    command.arg(script).env("GATEWAYS", json!(gateways).to_string());
    let output = tokio::time::timeout(Duration::from_secs(900), command.output())
        .await
        .expect("the script ends")
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "the client script failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_example_calls_and_answers() {
    let url = tokio::task::spawn_blocking(llama::server).await.expect("the server");
    let output = tokio::process::Command::new(example_bin::example_path("local_model"))
        .env("LLAMA_URL", &url)
        .env("LLAMA_MODEL", llama::MODEL)
        .output()
        .await
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("ran calc_") && stdout.contains("(ok)"), "a call ran: {stdout}");
    assert!(stdout.contains("stopped: Finished"), "the model answered: {stdout}");
}
