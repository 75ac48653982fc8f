//! A real agent: a conversation loop against any OpenAI-compatible endpoint, with the
//! demo tools, streaming the reply and starting each tool as soon as its call is
//! complete.
//!
//! ```text
//! OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen3:8b cargo run --features http --example agent
//! OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini cargo run --features http --example agent -- "What is 17 / 4?"
//! cargo run --features http --example agent            # no endpoint: a local recorded conversation
//! cargo run --features http --example agent -- --text  # offer the tools as VCP text, whatever the model
//! ```
//!
//! The endpoint comes from the environment: `OPENAI_MODEL` (required for a real
//! endpoint), `OPENAI_BASE_URL` (default `https://api.openai.com/v1`; vLLM, llama.cpp's
//! server, Ollama, DeepSeek, … all speak this API) and `OPENAI_API_KEY` (needed for
//! api.openai.com, optional elsewhere).
//!
//! The protocol is chosen from what the model supports (`HttpChatModel::protocol`, from
//! the built-in table of model families): the native `tools` API when the model has it,
//! else a text protocol in the prompt (VCP, or the format an open-weight family was
//! trained on). `--text` forces VCP, for a server that ignores `tools`.
//!
//! Without `OPENAI_MODEL`, the example says so and runs against a local server that
//! replays one recorded conversation (`support/recorded_server.rs`): not a model, but the
//! same HTTP client, streaming and engine as a real run.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tool_calling::engine::Engine;
use tool_calling::exec::{CycleEvent, ExecutionContext};
use tool_calling::model::{Conversation, Message};
use tool_calling::protocol::{FallbackProtocol, ModelProfiles};
use tool_calling::providers::{HttpChatModel, Provider};
use tool_calling::tools::ToolRegistry;

#[path = "support/logging.rs"]
mod logging;

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;
#[path = "support/recorded_server.rs"]
mod recorded_server;

const DEFAULT_QUESTION: &str = "What is 2 + 40? Also say hello three times, using the tools.";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    logging::init();
    let mut text_only = false;
    let mut question = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--text" => text_only = true,
            "-h" | "--help" => {
                println!(
                    "usage: agent [--text] [QUESTION]   (endpoint from OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)"
                );
                return Ok(());
            }
            _ => question = Some(arg),
        }
    }

    let env_model = std::env::var("OPENAI_MODEL").ok().filter(|m| !m.trim().is_empty());
    let mut builder = HttpChatModel::builder(Provider::OpenAiChat);
    let model_name = match &env_model {
        Some(model) => model.clone(),
        None => {
            let base_url = recorded_server::start().await?;
            println!("OPENAI_MODEL is not set, so there is no model to talk to.");
            println!("Running against a LOCAL RECORDED CONVERSATION at {base_url}: a replay, not a model.");
            println!("Set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL to talk to a real one.\n");
            // `env` ignores the real environment: no key is sent to the local server.
            builder = builder.base_url(base_url).env(|_| None);
            "recorded-demo".to_string()
        }
    };
    builder = builder.model(model_name.clone());
    if text_only {
        let mut capabilities = ModelProfiles::builtin().lookup(&model_name);
        capabilities.native_tools = false;
        capabilities.fallback = FallbackProtocol::VCP;
        builder = builder.capabilities(capabilities);
    }
    let model = builder.build()?;

    // The demo tools registered themselves with `#[tool]`; the protocol follows the model.
    let engine = Engine::new(Arc::new(ToolRegistry::from_inventory()?)).with_protocol(model.protocol());
    println!("model {} at {}; protocol {}", model.model(), model.base_url(), model.protocol_choice());

    let question = question.unwrap_or_else(|| DEFAULT_QUESTION.to_string());
    println!("\nuser: {question}\n");
    let mut conversation = Conversation::new();
    conversation.push(Message::user(question));

    let started = Instant::now();
    let printer = Arc::new(Mutex::new(Printer { started, mid_line: false }));
    let watch = printer.clone();
    let ctx = ExecutionContext::default()
        .on_event(move |event| watch.lock().unwrap_or_else(std::sync::PoisonError::into_inner).show(event));
    let outcome = engine.run_conversation_streamed(&model, &mut conversation, &ctx).await?;
    printer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).end_line();
    println!(
        "\n{} model turn(s), {} tool call(s), stopped: {:?}, in {:.1} s",
        outcome.rounds.len(),
        outcome.rounds.iter().map(|r| r.cycle.execution_results.len()).sum::<usize>(),
        outcome.stop,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Prints the reply as it streams, and each tool's start and result with its time.
struct Printer {
    started: Instant,
    mid_line: bool,
}

impl Printer {
    fn show(&mut self, event: &CycleEvent) {
        match event {
            CycleEvent::Text { text } => {
                print!("{text}");
                self.mid_line = !text.ends_with('\n');
                let _ = std::io::stdout().flush();
            }
            CycleEvent::RequestParsed { request } => {
                let args = serde_json::to_string(&request.args).unwrap_or_default();
                self.event(&format!("▶ {} {args} (started)", request.tool_name));
            }
            CycleEvent::Finished { result } => {
                self.event(&format!("◀ {} {:?}: {}", result.tool_name, result.status, result.result));
            }
            CycleEvent::Diagnostic { diagnostic } => {
                self.event(&format!("! {}: {}", diagnostic.kind, diagnostic.message));
            }
            CycleEvent::CycleEnded { finish_reason } => {
                self.event(&format!("end of the model's turn ({finish_reason:?})"));
            }
            _ => {}
        }
    }

    fn event(&mut self, text: &str) {
        self.end_line();
        println!("    [{:5.2} s] {text}", self.started.elapsed().as_secs_f64());
    }

    fn end_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }
}
