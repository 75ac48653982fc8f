//! Model options end to end: per-model capabilities (built-in table and configuration
//! file), request options (thinking, streaming, output length, temperature) mapped to
//! each provider's body, options a model does not support dropped with a note, provider
//! rules enforced before sending, and the protocol chosen per model — checked on the
//! wire against a server on 127.0.0.1.

#![cfg(feature = "http")]

use std::sync::Arc;

use serde_json::{Value, json};
use tool_calling::ToolError;
use tool_calling::engine::{Engine, StopReason};
use tool_calling::exec::{CycleEvent, ExecutionContext};
use tool_calling::model::{
    ChatModel, Conversation, Effort, Message, ModelRequest, RequestOptions, Thinking, ToolChoice,
};
use tool_calling::protocol::ModelProfiles;
use tool_calling::providers::{HttpChatModel, Provider};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, BoxFuture, Instance, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{Part, Reply, Server, json_reply};

fn fixture(folder: &str, name: &str) -> String {
    let path = format!("{}/tests/fixtures/native/{folder}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `get_weather` and `calc_add`, as the fixtures call them.
fn registry() -> Arc<ToolRegistry> {
    fn method(name: &str, parameters: Value, f: fn(&ArgMap) -> ToolOutput) -> MethodSpec {
        MethodSpec::new(
            MethodDefinition::new(name, format!("The {name} method.")).with_parameters(parameters),
            move |_: Instance, args: ArgMap| -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
                let out = f(&args);
                Box::pin(async move { Ok(out) })
            },
        )
    }
    let registry = ToolRegistry::new();
    registry
        .register(ToolSpec::stateless("get", "Weather").with_method(method(
            "weather",
            json!({"type": "object"}),
            |_| ToolOutput::Text("Sunny".into()),
        )))
        .unwrap();
    registry
        .register(ToolSpec::stateless("calc", "Calculator").with_method(method(
            "add",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
            |args| {
                let sum = args.get("a").and_then(Value::as_f64).unwrap_or_default()
                    + args.get("b").and_then(Value::as_f64).unwrap_or_default();
                ToolOutput::Json(json!(sum))
            },
        )))
        .unwrap();
    Arc::new(registry)
}

/// One agent program: only the provider and the model name change.
async fn agent(
    server: &Server,
    provider: Provider,
    model_name: &str,
) -> (HttpChatModel, tool_calling::engine::LoopOutcome, String) {
    let model = HttpChatModel::builder(provider)
        .env(|_| None)
        .base_url(server.base_url(provider))
        .api_key("k")
        .model(model_name)
        .build()
        .unwrap();
    let engine = Engine::new(registry()).with_protocol(model.protocol());
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What's the weather in Paris, and what is 2 + 40?"));
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let ctx =
        ExecutionContext::default().on_event(move |e: &CycleEvent| sink.lock().unwrap().push(e.clone()));
    let outcome = engine
        .run_conversation_streamed(&model, &mut conversation, &ctx)
        .await
        .unwrap_or_else(|e| panic!("{model_name}: {e}"));
    let events = events.lock().unwrap();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            CycleEvent::Reasoning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let pieces = events.iter().filter(|e| matches!(e, CycleEvent::CallPiece { .. })).count();
    let finish = events.iter().rev().find_map(|e| match e {
        CycleEvent::CycleEnded { finish_reason } => Some(*finish_reason),
        _ => None,
    });
    assert!(finish.is_some(), "{model_name}: the last event says how the turn finished");
    if !model.protocol().id().eq("vcp") {
        assert!(pieces > 0, "{model_name}: tool-call pieces were reported as they arrived");
    }
    (model, outcome, reasoning)
}

fn sse(body: &str) -> Reply {
    Reply::Sse(vec![Part::Bytes(body.to_string())])
}

/// An OpenAI-compatible text stream of `text`.
fn chat_text_stream(text: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    sse(&format!(
        "{}{}data: [DONE]\n\n",
        chunk(json!({"content": text}), Value::Null),
        chunk(json!({}), json!("stop"))
    ))
}

#[tokio::test]
async fn one_program_three_models() {
    // A model served without native tools (gemma: VCP by the built-in table).
    let vcp_reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>";
    let server = Server::start(vec![chat_text_stream(vcp_reply), chat_text_stream("It is 42.")]).await;
    let (model, outcome, _) = agent(&server, Provider::OpenAiChat, "gemma-3-12b-it").await;
    assert_eq!(model.protocol().id(), "vcp");
    assert!(model.protocol_choice().contains("no native tools"), "{}", model.protocol_choice());
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.rounds[0].cycle.execution_results[0].result, "42.0");
    for request in server.requests().iter() {
        assert!(request.body.get("tools").is_none(), "no native tools on the wire");
        assert_eq!(request.body["messages"][0]["role"], "system");
        assert!(request.body["messages"][0]["content"].as_str().unwrap().contains("<<<[TOOL_REQUEST]>>>"));
        assert!(request.body.get("reasoning_effort").is_none());
        assert_eq!(request.body["stream"], true);
    }

    // Anthropic with thinking (on by default for a model that reasons).
    let server = Server::start(vec![
        sse(&fixture("anthropic", "two_calls_reasoning.sse")),
        sse(&fixture("anthropic", "two_calls_reasoning.sse")
            .replace("\"stop_reason\":\"tool_use\"", "\"stop_reason\":\"end_turn\"")),
    ])
    .await;
    let (model, outcome, reasoning) = agent(&server, Provider::Anthropic, "claude-sonnet-4-5").await;
    assert_eq!(model.protocol().id(), "anthropic");
    assert!(
        reasoning.starts_with("The user wants the current weather in Paris"),
        "thinking streamed apart: {reasoning}"
    );
    assert!(outcome.rounds.iter().all(|r| r.request_notes.is_empty()), "the defaults need no change");
    {
        let requests = server.requests();
        let body = &requests[0].body;
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert!(body["max_tokens"].as_u64().unwrap() > 2048);
        assert!(body["tools"].is_array());
        // Thinking blocks go back with the results.
        assert_eq!(requests[1].body["messages"][1]["content"][0]["type"], "thinking");
    }

    // Gemini 2.5: thinking on by default, thoughts included.
    let server = Server::start(vec![
        sse(&fixture("gemini", "two_calls_reasoning.sse")),
        sse("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Done.\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}]}\r\n\r\n"),
    ])
    .await;
    let (model, outcome, _) = agent(&server, Provider::Gemini, "gemini-2.5-flash").await;
    assert_eq!(model.protocol().id(), "gemini");
    assert_eq!(outcome.final_text(), "Done.");
    assert_eq!(
        server.requests()[0].body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true})
    );
}

fn model(provider: Provider, name: &str) -> HttpChatModel {
    HttpChatModel::builder(provider)
        .env(|_| None)
        .base_url("http://127.0.0.1:9/v1")
        .api_key("k")
        .model(name)
        .build()
        .unwrap()
}

fn request(options: RequestOptions) -> ModelRequest {
    let mut request = ModelRequest::new(vec![Message::user("hi")]);
    request.options = options;
    request
}

fn notes(prepared: &tool_calling::providers::PreparedRequest) -> Vec<&str> {
    prepared.notes.iter().map(|n| n.option.as_str()).collect()
}

#[test]
fn thinking_on_and_off_in_each_providers_body() {
    let off = RequestOptions::default().thinking(Thinking::Off);
    // OpenAI Chat, a reasoning model: effort, `max_completion_tokens`, no temperature.
    let o3 = model(Provider::OpenAiChat, "o3");
    let p = o3.prepare(&request(
        RequestOptions::default().thinking(Thinking::Effort(Effort::High)).max_tokens(500).temperature(0.2),
    ));
    assert_eq!(p.body["reasoning_effort"], "high");
    assert_eq!(p.body["max_completion_tokens"], 500);
    assert!(p.body.get("temperature").is_none());
    assert_eq!(notes(&p), ["temperature"]);
    let p = o3.prepare(&request(off));
    assert_eq!(p.body["reasoning_effort"], "minimal", "OpenAI reasoning cannot be turned off");
    assert_eq!(notes(&p), ["thinking"]);

    // Responses.
    let gpt5 = model(Provider::OpenAiResponses, "gpt-5");
    let p =
        gpt5.prepare(&request(RequestOptions::default().thinking(Thinking::Budget(10_000)).max_tokens(900)));
    assert_eq!(p.body["reasoning"], json!({"effort": "medium", "summary": "auto"}));
    assert_eq!(p.body["max_output_tokens"], 900);

    // Anthropic: off is no thinking block; on with rules enforced.
    let claude = model(Provider::Anthropic, "claude-opus-4-1");
    let p = claude.prepare(&request(off));
    assert!(p.body.get("thinking").is_none());
    let mut r =
        request(RequestOptions::default().thinking(Thinking::Budget(500)).max_tokens(800).temperature(0.3));
    r.tool_choice = ToolChoice::Required;
    r.tools = Some(json!([{"name": "calc_add", "input_schema": {"type": "object"}}]));
    let p = claude.prepare(&r);
    assert_eq!(p.body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
    assert!(p.body["max_tokens"].as_u64().unwrap() > 1024);
    assert!(p.body.get("temperature").is_none());
    assert_eq!(p.body["tool_choice"]["type"], "auto");
    assert_eq!(notes(&p), ["thinking", "max_tokens", "temperature", "tool_choice"]);

    // Gemini 2.5 (budget) and Gemini 3 (level).
    let flash = model(Provider::Gemini, "gemini-2.5-flash");
    assert_eq!(
        flash.prepare(&request(off)).body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0})
    );
    let p = flash.prepare(&request(
        RequestOptions::default().thinking(Thinking::Effort(Effort::Low)).temperature(0.5),
    ));
    assert_eq!(
        p.body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
    assert_eq!(p.body["generationConfig"]["temperature"], 0.5);
    let pro3 = model(Provider::Gemini, "gemini-3-pro-preview");
    let p = pro3.prepare(&request(off));
    assert_eq!(p.body["generationConfig"]["thinkingConfig"]["thinkingLevel"], "low");
    assert_eq!(notes(&p), ["thinking"]);
}

#[tokio::test]
async fn an_option_the_model_does_not_support_is_dropped_and_noted() {
    let server = Server::start(vec![json_reply(200, fixture("openai", "text_only.json"))]).await;
    let gpt4o = HttpChatModel::builder(Provider::OpenAiChat)
        .env(|_| None)
        .base_url(server.base_url(Provider::OpenAiChat))
        .api_key("k")
        .model("gpt-4o")
        .build()
        .unwrap()
        .with_options(RequestOptions::default().thinking(Thinking::On).stream(false).max_tokens(1_000_000));
    let engine = Engine::new(registry()).with_protocol(gpt4o.protocol());
    let mut conversation = Conversation::new();
    conversation.push(Message::user("hi"));
    // The streamed loop, but the call's options say whole: one plain request.
    let outcome = engine
        .run_conversation_streamed(&gpt4o, &mut conversation, &ExecutionContext::default())
        .await
        .unwrap();
    let notes: Vec<&str> = outcome.rounds[0].request_notes.iter().map(|n| n.option.as_str()).collect();
    assert_eq!(notes, ["max_tokens", "thinking"]);
    let body = &server.requests()[0].body;
    assert!(body.get("reasoning_effort").is_none(), "never sent: {body}");
    assert!(body.get("stream").is_none(), "not streamed");
    assert_eq!(body["max_tokens"], 16_384, "clamped to the model's limit");
    assert!(gpt4o.request_notes(&request(RequestOptions::default())).iter().any(|n| n.option == "thinking"));
}

#[test]
fn the_configuration_file_overrides_the_table() {
    let dir = std::env::temp_dir().join(format!("tool-calling-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("models.toml");
    std::fs::write(
        &good,
        "[[model]]\nmatch = \"gpt-4o*\"\nnative_tools = false\nfallback = \"hermes\"\n\n[[model]]\nmatch = \"claude-*\"\ndefault_thinking = false\n",
    )
    .unwrap();
    let profiles = ModelProfiles::builtin().with_config_file(&good).unwrap();
    let gpt4o = HttpChatModel::builder(Provider::OpenAiChat)
        .env(|_| None)
        .api_key("k")
        .model("gpt-4o")
        .profiles(profiles.clone())
        .build()
        .unwrap();
    assert_eq!(gpt4o.protocol().id(), "hermes", "{}", gpt4o.protocol_choice());
    let claude = HttpChatModel::builder(Provider::Anthropic)
        .env(|_| None)
        .api_key("k")
        .model("claude-sonnet-4-5")
        .profiles(profiles)
        .build()
        .unwrap();
    assert!(
        claude.prepare(&request(RequestOptions::default())).body.get("thinking").is_none(),
        "thinking off by default now"
    );

    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"model": [{"match": "a*", "native_tools": "yes"}]}"#).unwrap();
    let error = ModelProfiles::builtin().with_config_file(&bad).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: entry 1 (`a*`): field `native_tools`: must be true or false, not \"yes\"",
            bad.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A grammar chosen in the config goes out with every request of the loop, in the
/// serving engine's own field; without a grammar server it is dropped with a note.
#[tokio::test]
async fn the_config_grammar_is_sent_in_the_servers_field() {
    use tool_calling::grammar::{Constraint, Dialect, Scope};
    use tool_calling::providers::GrammarServer;
    let vcp_reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」,\ncommand:「始」add「末」,\na:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>";
    for (server_kind, dialect, field) in [
        (GrammarServer::LlamaCpp, Dialect::Gbnf, "/grammar"),
        (GrammarServer::Vllm, Dialect::Lark, "/structured_outputs/grammar"),
        (GrammarServer::Sglang, Dialect::Gbnf, "/ebnf"),
    ] {
        let server = Server::start(vec![chat_text_stream(vcp_reply), chat_text_stream("It is 42.")]).await;
        let model = HttpChatModel::builder(Provider::OpenAiChat)
            .env(|_| None)
            .base_url(server.base_url(Provider::OpenAiChat))
            .api_key("k")
            .model("gemma-3-12b-it")
            .grammar_server(server_kind)
            .build()
            .unwrap();
        let engine = Engine::new(registry()).with_protocol(model.protocol());
        let mut ctx = ExecutionContext::default();
        ctx.config.grammar = Some(Constraint::new(dialect, Scope::Reply));
        let expected = engine.grammar(&ctx, &Constraint::new(dialect, Scope::Reply)).unwrap();
        let mut conversation = Conversation::new();
        conversation.push(Message::user("What is 2 + 40?"));
        let outcome = engine.run_conversation_streamed(&model, &mut conversation, &ctx).await.unwrap();
        assert_eq!(outcome.stop, StopReason::Finished);
        assert_eq!(outcome.rounds[0].cycle.execution_results[0].result, "42.0");
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for request in requests.iter() {
            assert_eq!(
                request.body.pointer(field).and_then(Value::as_str),
                Some(expected.text()),
                "{server_kind:?}"
            );
        }
    }
    // No grammar server: the grammar is not sent, and the note says why.
    let model =
        HttpChatModel::builder(Provider::OpenAiChat).env(|_| None).api_key("k").model("m").build().unwrap();
    let mut request = ModelRequest::new(vec![Message::user("hi")]);
    request.grammar = Some(tool_calling::grammar::Grammar::new(Dialect::Gbnf, Scope::Call, "root ::= \"x\""));
    let prepared = model.prepare(&request);
    assert!(prepared.body.get("grammar").is_none());
    assert_eq!(prepared.notes[0].option, "grammar");
    assert!(prepared.notes[0].message.contains("no grammar server"), "{}", prepared.notes[0]);
}

#[test]
fn an_unknown_model_behind_a_grammar_server_is_spoken_to_in_hermes() {
    use tool_calling::providers::GrammarServer;
    let build = |model: &str, grammar: Option<GrammarServer>| {
        let mut builder =
            HttpChatModel::builder(Provider::OpenAiChat).env(|_| None).api_key("k").model(model);
        if let Some(server) = grammar {
            builder = builder.grammar_server(server);
        }
        builder.build().unwrap()
    };
    // Unknown, behind a grammar server: a text protocol, said to be a guess.
    let local = build("smollm2", Some(GrammarServer::LlamaCpp));
    assert_eq!(local.protocol().id(), "hermes");
    assert!(local.protocol_choice().contains("a guess"), "{}", local.protocol_choice());
    // Unknown, no grammar server: native tools, also a guess.
    let remote = build("smollm2", None);
    assert_eq!(remote.protocol().id(), "openai");
    assert!(remote.protocol_choice().contains("a guess"), "{}", remote.protocol_choice());
    // Known: the table decides, grammar server or not.
    let gemma = build("gemma-3-12b-it", Some(GrammarServer::LlamaCpp));
    assert_eq!(gemma.protocol().id(), "vcp");
    assert!(!gemma.protocol_choice().contains("a guess"), "{}", gemma.protocol_choice());
}
