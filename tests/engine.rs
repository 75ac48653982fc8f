//! The engine end to end, on tokio's paused clock: a scripted model replays a
//! multi-round conversation through the public API.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, StopReason};
use tool_calling::exec::{
    CycleEvent, ExecutionContext, Executor, ExecutorMessages, PolicyDecision, PreparedCall, ResolvedRequest,
};
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, FinishReason, Message, ModelRequest, Role,
    ToolCall,
};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::native::NativeProtocol;
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::{RouteError, VcpLimits, VcpOptions, VcpProtocol, VcpTemplates};
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{BoxFuture, ToolProvider};
use tool_calling::{ErrorKind, Language, ToolRequest, tool};

#[path = "support/engine_tools.rs"]
mod engine_tools;
use engine_tools::{Calc, Text};
#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

static WIPES: AtomicUsize = AtomicUsize::new(0);

#[derive(Default)]
struct Admin;

/// Administration.
#[tool(id = "admin", register = false)]
impl Admin {
    /// Wipe everything.
    #[tool_method]
    async fn wipe(&self) -> String {
        WIPES.fetch_add(1, Ordering::SeqCst);
        "wiped".to_string()
    }

    /// Fail on purpose.
    #[tool_method]
    async fn fail(&self) -> Result<String, String> {
        Err("disk full".to_string())
    }
}

fn engine() -> Engine {
    let registry = ToolRegistry::new();
    for spec in [Calc::tool_spec(), Text::tool_spec(), Admin::tool_spec()] {
        registry.register(spec).unwrap();
    }
    let executor = Executor::new(Arc::new(registry)).with_policy(|call: &PreparedCall| {
        if call.full_name == "admin_wipe" {
            PolicyDecision::Deny("destructive operations are not allowed".into())
        } else {
            PolicyDecision::Allow
        }
    });
    Engine::new(executor.registry().clone()).with_executor(executor)
}

/// Replays scripted replies and records what it was shown (as a plain chat API would
/// send it: the tool prompt as a leading system message).
struct ScriptedModel {
    replies: Mutex<Vec<String>>,
    seen: Mutex<Vec<Vec<Message>>>,
    grammars: Mutex<Vec<Option<String>>>,
}

impl ScriptedModel {
    fn new(replies: &[&str]) -> Self {
        ScriptedModel {
            replies: Mutex::new(replies.iter().rev().map(|r| r.to_string()).collect()),
            seen: Mutex::new(Vec::new()),
            grammars: Mutex::new(Vec::new()),
        }
    }
}

impl ChatModel for ScriptedModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        self.seen.lock().unwrap().push(request.messages_with_prompt());
        self.grammars.lock().unwrap().push(request.grammar.as_ref().map(|g| g.text().to_string()));
        let reply = self.replies.lock().unwrap().pop();
        Box::pin(async move {
            reply.map(AssistantTurn::from_text).ok_or_else(|| ChatModelError::other("script exhausted"))
        })
    }
}

fn context() -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.timeout_ms = 1_000;
    ExecutionContext::new(config).with_conversation("conv-1")
}

#[tokio::test(start_paused = true)]
async fn a_scripted_multi_round_conversation_runs_to_the_end() {
    let round1 = format!(
        "I'll do several things at once.\n{}{}{}{}",
        block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]),
        block(&[("tool_name", "text"), ("command", "repeat"), ("message", "hi"), ("times", "11")]),
        block(&[("tool_name", "text_wait"), ("ms", "5000")]),
        block(&[("tool_name", "admin_wipe")]),
    );
    let round2 = format!(
        "Fixing the count.\n{}",
        block(&[("tool_name", "text_repeat"), ("message", "hi"), ("times", "3")])
    );
    let model = ScriptedModel::new(&[&round1, &round2, "All done: 42, and hi hi hi."]);
    let engine = engine();
    let mut conversation = Conversation::with_id("conv-1");
    conversation.push(Message::user("Please compute and greet."));

    let start = Instant::now();
    let outcome = engine.run_conversation(&model, &mut conversation, &context()).await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(1_000),
        "round 1 runs in parallel, bounded by the timeout"
    );

    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.final_text(), "All done: 42, and hi hi hi.");
    assert_eq!(outcome.rounds.len(), 3);
    for round in &outcome.rounds {
        let parsed: Vec<&str> = round.cycle.parsed_requests.iter().map(|r| r.request_id.as_str()).collect();
        let answered: Vec<&str> =
            round.cycle.execution_results.iter().map(|r| r.request_id.as_str()).collect();
        assert_eq!(parsed, answered, "every parsed request gets exactly one result, in order");
    }
    let first: Vec<(Option<ErrorKind>, &str)> =
        outcome.rounds[0].cycle.execution_results.iter().map(|r| (r.error_kind, r.result.as_str())).collect();
    assert_eq!(first[0], (None, "42.0"));
    assert_eq!(first[1].0, Some(ErrorKind::Validation));
    assert!(first[1].1.contains("parameter `times` (maximum)"), "{}", first[1].1);
    assert_eq!(first[2].0, Some(ErrorKind::Timeout));
    assert_eq!(first[3].0, Some(ErrorKind::Permission));
    assert!(first[3].1.contains("destructive operations are not allowed"));
    assert_eq!(WIPES.load(Ordering::SeqCst), 0, "the denied call never ran");
    assert_eq!(outcome.rounds[1].cycle.execution_results[0].result, "hi hi hi");
    assert!(outcome.rounds[2].cycle.execution_results.is_empty());

    // What the model saw: the definitions prompt first, then the fed-back results.
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0][0].role, Role::System);
    assert!(seen[0][0].text().contains("command:「始」repeat「末」"));
    let fed_back = seen[1].last().unwrap().text();
    assert_eq!(seen[1].last().unwrap().role, Role::Tool);
    assert_eq!(fed_back.matches("<<<[TOOL_RESULT]>>>").count(), 4);
    assert!(fed_back.contains("parameter `times` (maximum)"));

    let roles: Vec<Role> = conversation.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(conversation.messages()[1].tool_requests.len(), 4);
    assert_eq!(conversation.messages()[2].tool_results.len(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_loop_breaker_stops_identical_repeated_calls() {
    let same = block(&[("tool_name", "calc_add"), ("a", "1"), ("b", "1")]);
    let model = ScriptedModel::new(&[&same, &same, &same, "never reached"]);
    let mut conversation = Conversation::new();
    let outcome = engine().run_conversation(&model, &mut conversation, &context()).await.unwrap();
    assert_eq!(outcome.stop, StopReason::RepeatedCalls);
    assert_eq!(outcome.rounds.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn max_iterations_bounds_the_loop() {
    let replies: Vec<String> =
        (0..5).map(|i| block(&[("tool_name", "calc_add"), ("a", &i.to_string()), ("b", "1")])).collect();
    let refs: Vec<&str> = replies.iter().map(String::as_str).collect();
    let model = ScriptedModel::new(&refs);
    let mut ctx = context();
    ctx.config.max_iterations = 3;
    let outcome = engine().run_conversation(&model, &mut Conversation::new(), &ctx).await.unwrap();
    assert_eq!(outcome.stop, StopReason::MaxIterations);
    assert_eq!(outcome.rounds.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn events_are_emitted_for_each_request_its_start_and_finish_and_the_end() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let engine = engine();
    let ctx = context().on_event(move |e| {
        let name = match e {
            CycleEvent::RequestParsed { request } => format!("request {}", request.tool_name),
            CycleEvent::Parsed { requests } => format!("parsed {}", requests.len()),
            CycleEvent::Started { tool_name, .. } => format!("started {tool_name}"),
            CycleEvent::Finished { result } => format!("finished {}", result.tool_name),
            CycleEvent::CycleEnded { finish_reason } => format!("ended {finish_reason}"),
            _ => return,
        };
        sink.lock().unwrap().push(name);
    });
    let reply = format!(
        "{}{}",
        block(&[("tool_name", "calc_add"), ("a", "1"), ("b", "2")]),
        block(&[("tool_name", "text_wait"), ("ms", "1")])
    );
    engine.run_turn(&reply, &ctx).await.unwrap();
    // A whole reply is read at once: both requests, then the end of the reading
    // (`parsed`), then the calls start in request order, and the cycle ends last.
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events,
        [
            "request calc_add",
            "request text_wait",
            "parsed 2",
            "started calc_add",
            "started text_wait",
            "finished calc_add",
            "finished text_wait",
            "ended tool_calls"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn fire_and_forget_calls_do_not_hold_the_cycle_and_only_failures_come_back() {
    let engine = engine();
    let reply = format!(
        "{}{}",
        block(&[("tool_name", "text_wait"), ("ms", "500"), ("archery", "no_reply")]),
        block(&[("tool_name", "admin_fail"), ("archery", "true")])
    );
    let start = Instant::now();
    let ctx = context();
    let cycle = engine.run_turn(&reply, &ctx).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO, "the cycle did not wait");
    assert_eq!(cycle.execution_results.len(), 2);
    assert!(cycle.execution_results.iter().all(|r| r.result.starts_with("started in the background")));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(context().take_background_failures().is_empty(), "another context has none of them");
    let failures = ctx.take_background_failures();
    assert_eq!(failures.len(), 1, "only the failure is reported");
    assert_eq!(failures[0].tool_name, "admin_fail");
    assert_eq!(failures[0].result, "disk full");
}

#[tokio::test(start_paused = true)]
async fn the_facade_offers_one_entry_point() {
    let engine = engine();
    let config = ToolCallConfig::default().with_toggle("admin", false);
    let declarations = engine.declarations(&ExecutionContext::new(config).with_agent("agent")).unwrap();
    let prompt = declarations.as_prompt().unwrap();
    assert!(prompt.contains("command:「始」add「末」") && !prompt.contains("wipe"));
    assert_eq!(engine.discovered_methods(None).len(), 3);
    engine.invalidate_declarations();
    let cycle = engine
        .run_turn(&block(&[("tool_name", "calc_add"), ("a", "1"), ("b", "2")]), &context())
        .await
        .unwrap();
    assert!(cycle.result_text().contains("3.0"));
    assert_eq!(cycle.result_messages.len(), 1, "VCP answers with one message");
}

#[tokio::test(start_paused = true)]
async fn a_method_declares_its_own_time_limit() {
    let start = Instant::now();
    let cycle =
        engine().run_turn(&block(&[("tool_name", "text_hurry"), ("ms", "5000")]), &context()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(cycle.execution_results[0].error_kind, Some(ErrorKind::Timeout));
    assert!(cycle.execution_results[0].result.contains("within 100 ms"));
}

#[tokio::test(start_paused = true)]
async fn the_streamed_loop_gives_the_same_conversation_under_vcp() {
    let round1 = format!("Adding.\n{}", block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]));
    let replies = [round1.as_str(), "It is 42."];
    let mut whole = Conversation::with_id("conv-1");
    whole.push(Message::user("2 + 40?"));
    let expected =
        engine().run_conversation(&ScriptedModel::new(&replies), &mut whole, &context()).await.unwrap();
    let mut streamed = Conversation::with_id("conv-1");
    streamed.push(Message::user("2 + 40?"));
    let prose = Arc::new(Mutex::new(String::new()));
    let sink = prose.clone();
    let ctx = context().on_event(move |e| {
        if let CycleEvent::Text { text } = e {
            sink.lock().unwrap().push_str(text);
        }
    });
    let outcome =
        engine().run_conversation_streamed(&ScriptedModel::new(&replies), &mut streamed, &ctx).await.unwrap();
    assert_eq!(outcome.stop, expected.stop);
    assert_eq!(outcome.final_text(), "It is 42.");
    assert_eq!(outcome.rounds[0].cycle.execution_results[0].result, "42.0");
    let texts =
        |c: &Conversation| c.messages().iter().map(|m| (m.role, m.text().into_owned())).collect::<Vec<_>>();
    assert_eq!(texts(&streamed).len(), texts(&whole).len());
    let (a, b) = (&streamed.messages()[1], &whole.messages()[1]);
    assert_eq!(a.content, b.content, "the assistant turn");
    let calls = |m: &Message| {
        m.tool_requests.iter().map(|r| (r.tool_name.clone(), r.args.clone())).collect::<Vec<_>>()
    };
    assert_eq!(calls(a), calls(b), "its requests (ids are random)");
    assert_eq!(
        *prose.lock().unwrap(),
        "Adding.\n\nIt is 42.",
        "prose (outside the block) reported as it streamed"
    );
}

/// The engine's futures are `Send`, so a server can spawn them on a multi-threaded
/// runtime (a web server's handler, `tokio::spawn`). The call is what is tested: it does not
/// compile when a future is not `Send` for every lifetime.
#[tokio::test]
async fn the_engine_futures_can_be_spawned() {
    let engine = Arc::new(engine());
    let reply = block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]);
    let cycle = {
        let engine = engine.clone();
        let reply = reply.clone();
        tokio::spawn(async move { engine.run_turn(&reply, &context()).await })
    };
    let turn = {
        let engine = engine.clone();
        let reply = reply.clone();
        tokio::spawn(async move { engine.run_turn(&AssistantTurn::from_text(reply), &context()).await })
    };
    let conversation = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut conversation = Conversation::with_id("conv-1");
            conversation.push(Message::user("2 + 40?"));
            let replies = [reply.as_str(), "It is 42."];
            engine.run_conversation(&ScriptedModel::new(&replies), &mut conversation, &context()).await
        })
    };
    assert_eq!(cycle.await.unwrap().unwrap().execution_results[0].result, "42.0");
    assert_eq!(turn.await.unwrap().unwrap().execution_results[0].result, "42.0");
    assert_eq!(conversation.await.unwrap().unwrap().final_text(), "It is 42.");
}

/// Outside a Tokio runtime the engine says so to the program, and runs nothing: the
/// model is not told about a runtime it cannot fix.
#[test]
fn without_a_runtime_the_program_gets_an_error_and_nothing_runs() {
    let engine = engine();
    let reply = block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]);
    let outcome = futures::executor::block_on(engine.run_turn(&reply, &context()));
    assert_eq!(outcome.unwrap_err(), tool_calling::engine::EngineError::NoRuntime);
    let mut conversation = Conversation::with_id("c");
    conversation.push(Message::user("2 + 40?"));
    let replies = [reply.as_str(), "42"];
    let model = ScriptedModel::new(&replies);
    let looped = futures::executor::block_on(engine.run_conversation(&model, &mut conversation, &context()));
    assert!(matches!(looped, Err(tool_calling::engine::EngineError::NoRuntime)));
    assert_eq!(conversation.messages().len(), 1, "the model was not even asked");
    let message = tool_calling::engine::EngineError::NoRuntime.to_string();
    assert!(message.contains("Tokio runtime") && message.contains("no tool was run"), "{message}");
}

/// One reply that earns every kind of note the engine writes itself: a name that
/// matches nothing, a policy refusal, arguments out of range, a missing argument, a
/// time limit, a block with no tool name, and a value cut off by the end of the reply.
fn troubled_reply() -> String {
    [
        block(&[("tool_name", "calc_ad"), ("a", "1"), ("b", "2")]),
        block(&[("tool_name", "admin_wipe")]),
        block(&[("tool_name", "text_repeat"), ("message", "hi"), ("times", "20")]),
        block(&[("tool_name", "text_repeat"), ("times", "2")]),
        block(&[("tool_name", "text_hurry"), ("ms", "5000")]),
        block(&[("a", "1")]),
        "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」1".to_string(),
    ]
    .concat()
}

#[tokio::test(start_paused = true)]
async fn every_note_to_the_model_follows_the_language() {
    let zh = engine().with_language(tool_calling::Language::Zh);
    let cycle = zh.run_turn(&troubled_reply(), &context()).await.unwrap();
    let texts: Vec<&str> = cycle.execution_results.iter().map(|r| r.result.as_str()).collect();
    assert_eq!(texts.len(), 7, "{texts:#?}");
    let expected = [
        "没有与 `calc_ad` 匹配的工具方法。你是想调用 `calc_add` 吗？",
        "`admin_wipe` 被安全策略拒绝：destructive operations are not allowed",
        "参数无效：参数 `times` 不符合规则 maximum：",
        "参数无效：参数 `message` 是必填的，但没有给出",
        "`text_hurry` 未能在 100 毫秒内完成",
        "未执行：请求没有 tool_name：请加上 tool_name:「始」…「末」。请修正后重新发送该请求。",
        "未执行：`a` 的值没有闭合：请用 「末」 结束它。请修正后重新发送该请求。",
    ];
    for (text, expected) in texts.iter().zip(expected) {
        assert!(text.starts_with(expected), "{text:?} should start with {expected:?}");
    }
    // Apart from what the policy and the schema validator said (their own words), no
    // English sentence of the executor or of VCP is left.
    for text in [texts[0], texts[3], texts[4], texts[5], texts[6]] {
        for english in ["not ", "the ", "did you mean", "Tool ", "Send", "within"] {
            assert!(!text.contains(english), "{text:?} holds {english:?}");
        }
    }
    let prompt = zh.declarations(&ExecutionContext::default()).unwrap();
    assert!(prompt.as_prompt().is_some_and(|p| p.contains("可调用的工具")));

    // The same reply in English (the default), for contrast.
    let en = engine().run_turn(&troubled_reply(), &context()).await.unwrap();
    let texts: Vec<&str> = en.execution_results.iter().map(|r| r.result.as_str()).collect();
    let expected = [
        "No tool method matches `calc_ad`. Did you mean `calc_add`?",
        "`admin_wipe` was refused by the security policy: destructive operations are not allowed",
        "invalid arguments: parameter `times` (maximum): ",
        "invalid arguments: parameter `message` (required): is required but was not given",
        "`text_hurry` did not finish within 100 ms",
        "Not run: the request has no tool_name: add tool_name:「始」…「末」. Send the request again with this fixed.",
        "Not run: the value of `a` is not closed: end it with 「末」. Send the request again with this fixed.",
    ];
    for (text, expected) in texts.iter().zip(expected) {
        assert!(text.starts_with(expected), "{text:?} should start with {expected:?}");
    }
}

/// A VCP batch (one request, a call per `commandN`) is answered with one result holding
/// each call's own; VCP writes them as its JSON list of calls.
#[tokio::test(start_paused = true)]
async fn a_vcp_batch_gets_one_result_listing_each_call() {
    let reply = block(&[
        ("tool_name", "text"),
        ("command1", "repeat"),
        ("message1", "hi"),
        ("times1", "2"),
        ("command2", "repeat"),
        ("message2", "no"),
        ("times2", "99"),
    ]);
    let cycle = engine().run_turn(&reply, &context()).await.unwrap();
    let result = &cycle.execution_results[0];
    assert_eq!(cycle.execution_results.len(), 1, "one request, one result");
    assert_eq!(result.error_kind, Some(ErrorKind::Validation), "the first failure's kind");
    let calls: Vec<(&str, Option<ErrorKind>)> =
        result.calls.iter().map(|c| (c.tool_name.as_str(), c.error_kind)).collect();
    assert_eq!(calls, [("text_repeat", None), ("text_repeat", Some(ErrorKind::Validation))]);
    let refusal = &result.calls[1].result;
    assert_eq!(result.result, format!("text_repeat: hi hi\ntext_repeat (error): {refusal}"));
    let text = cycle.result_text();
    let written =
        text.split("result:「始ESCAPE」").nth(1).and_then(|r| r.split("「末ESCAPE」").next()).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(written).unwrap(),
        serde_json::json!([
            {"index": 1, "tool_name": "text_repeat", "status": "success", "result": "hi hi"},
            {"index": 2, "tool_name": "text_repeat", "status": "error", "error_kind": "validation",
             "result": refusal}
        ])
    );
}

/// The capitalised words that begin a sentence somewhere in `texts` (notes, and the
/// templates they are made from): at the start, after a full stop or a question mark,
/// or after a template's blank (`{problems} Send…`).
fn sentence_openers(texts: &[String]) -> BTreeSet<String> {
    let mut openers = BTreeSet::new();
    for text in texts {
        let starts = std::iter::once(text.as_str())
            .chain(text.split(". ").skip(1))
            .chain(text.split("? ").skip(1))
            .chain(text.split("} ").skip(1));
        for start in starts {
            let word: String = start.chars().take_while(|c| c.is_alphanumeric()).collect();
            if word.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                openers.insert(word);
            }
        }
    }
    openers
}

/// The faults a note to the model must not have, as strings naming them: a sentence
/// that runs into the next with no break (one of `openers` after something that ends
/// no sentence, "…end it with 「末」 Send the request…"; in Chinese, advice 请… after
/// no stop, "…结束它请修正…"), the same advice twice ("send it again in full. Send the
/// request again…"), and two sentence ends in a row.
fn note_faults(note: &str, openers: &BTreeSet<String>) -> Vec<String> {
    let mut faults = Vec::new();
    let chars: Vec<char> = note.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let before = chars[..i].iter().rev().find(|c| !c.is_whitespace()).copied();
        let ends_sentence = |stops: &str| before.is_none_or(|b| stops.contains(b));
        let word: String = chars[i..].iter().take_while(|c| c.is_alphanumeric()).collect();
        let word_start = i == 0 || !chars[i - 1].is_alphanumeric();
        if word_start && openers.contains(&word) && !ends_sentence(".?!") {
            faults.push(format!("`{word}` begins a sentence with no break before it"));
        }
        // 请… is advice; 请求 is the noun "request".
        if c == '请' && chars.get(i + 1) != Some(&'求') && !ends_sentence("。；：，！？、") {
            faults.push("请… begins a sentence with no break before it".to_string());
        }
    }
    let lower = note.to_lowercase();
    for (advice, most) in [("again", 1), ("not run", 1), ("重新", 1), ("重写", 0), ("未执行", 1)] {
        let times = lower.matches(advice).count();
        if times > most {
            faults.push(format!("{advice:?} {times} times"));
        }
    }
    for twice in ["..", "。。", ".。", "。.", ":.", "：。"] {
        if note.contains(twice) {
            faults.push(format!("{twice:?}"));
        }
    }
    faults
}

/// Every blank of the executor's templates, filled with a plausible value.
fn filled(template: &str, words: &ExecutorMessages) -> String {
    let location = words.location.replace("{path}", "/items/0");
    let error = words.missing_parameter.replace("{parameter}", "message");
    let problem = words.reply_cut.clone();
    [
        ("{method}", "calc_add"),
        ("{name}", "calc_ad"),
        ("{suggestions}", "`calc_add` or `calc_sub`"),
        ("{reason}", "destructive operations are not allowed"),
        ("{ms}", "100"),
        ("{message}", "tool blew up"),
        ("{errors}", error.as_str()),
        ("{problems}", problem.as_str()),
        ("{parameter}", "times"),
        ("{location}", location.as_str()),
        ("{field}", "id"),
        ("{rule}", "maximum"),
        ("{detail}", "20 is greater than the maximum of 10"),
        ("{path}", "/items/0"),
        ("{bytes}", "4096"),
    ]
    .iter()
    .fold(template.to_string(), |text, (blank, value)| text.replace(blank, value))
}

/// What the open-model formats say of a damaged call: every case of the corpus cut at
/// every character boundary, parsed in its format.
fn text_format_problems() -> BTreeSet<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/textfmt");
    let mut problems = BTreeSet::new();
    for format in TextFormat::ALL {
        let protocol = TextFormatProtocol::new(format);
        for entry in std::fs::read_dir(root.join(format.id())).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "txt") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (cut, _) in text.char_indices().chain([(text.len(), ' ')]) {
                for request in protocol.parse(&text[..cut]).requests {
                    problems.extend(request.problems);
                }
            }
        }
    }
    problems
}

/// What the native protocols say of a damaged call (the reading of calls is shared by
/// every provider).
fn native_problems() -> BTreeSet<String> {
    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(80), "]".repeat(80));
    let turn = AssistantTurn::new()
        .with_tool_call(ToolCall::new("c1", "calc_add", "{\"a\": 1").incomplete())
        .with_tool_call(ToolCall::new("c2", "calc_add", "{\"a\": 1"))
        .with_tool_call(ToolCall::new("c3", "calc_add", "[1, 2]"))
        .with_tool_call(ToolCall::new("c4", "calc_add", deep))
        .with_tool_call(ToolCall::new("c5", "", "{}"))
        .with_finish_reason(FinishReason::Length);
    let outcome = NativeProtocol::openai_chat().parse_turn(&turn);
    assert_eq!(outcome.requests.len(), 5);
    outcome.requests.into_iter().flat_map(|r| r.problems).collect()
}

/// Every note the executor writes, alone and with every problem a protocol can put in
/// it, and every note of VCP's routing, in English and Chinese: none has a sentence
/// running into the next, nor the same advice twice.
#[tokio::test(start_paused = true)]
async fn every_note_to_the_model_has_its_sentence_breaks_and_no_advice_twice() {
    let foreign = text_format_problems();
    assert!(foreign.len() > 20, "{foreign:#?}");
    let native = native_problems();
    for language in [Language::En, Language::Zh] {
        let words = ExecutorMessages::for_language(language);
        let vcp = VcpTemplates::for_language(language);
        let mut notes: Vec<String> = [
            &words.not_run_incomplete,
            &words.cancelled_before_start,
            &words.cancelled_while_running,
            &words.nothing_to_run,
            &words.no_longer_registered,
            &words.unknown_method,
            &words.unknown_method_suggest,
            &words.not_callable,
            &words.switched_off,
            &words.refused_by_policy,
            &words.not_approved,
            &words.no_runtime,
            &words.timed_out,
            &words.panicked,
            &words.stopped,
            &words.started_in_background,
            &words.background_no_runtime,
            &words.stream_ended,
            &words.reply_cut,
            &words.invalid_arguments,
            &words.missing_parameter,
            &words.missing_field,
            &words.invalid_parameter,
            &words.invalid_whole,
            &words.result_cut,
        ]
        .into_iter()
        .map(|template| filled(template, &words))
        .collect();
        let templates = [&words.not_run_incomplete, &words.invalid_arguments, &words.unknown_method_suggest]
            .map(|t| t.to_string());

        // VCP's routing notes, each case.
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for error in [
            RouteError::EmptyToolName,
            RouteError::UnknownName { name: "calc_ad".into(), suggestions: names(&["calc_add"]) },
            RouteError::UnknownName { name: "zzz".into(), suggestions: vec![] },
            RouteError::UnknownMethod {
                name: "calc_ad".into(),
                tool: "calc".into(),
                suggestions: names(&["add"]),
                available: names(&["add", "sub"]),
            },
            RouteError::UnknownCommand {
                tool: "calc".into(),
                command: "ad".into(),
                batch_index: Some(2),
                suggestions: names(&["add"]),
                available: names(&["add", "sub"]),
            },
            RouteError::UnknownCommand {
                tool: "calc".into(),
                command: "zzz".into(),
                batch_index: None,
                suggestions: vec![],
                available: vec![],
            },
            RouteError::MissingCommand { tool: "calc".into(), available: names(&["add", "sub"]) },
            RouteError::MissingCommand { tool: "calc".into(), available: vec![] },
        ] {
            notes.push(error.message(&vcp));
        }

        // What the engine writes for a troubled VCP reply in this language, and for the
        // VCP limits (too many fields, a value too long).
        let engine = engine().with_language(language);
        let troubled = [
            troubled_reply(),
            block(&[("tool_name", "text_repeat"), ("times", "20")]),
            block(&[("tool_name", "calc_add"), ("a", "1"), ("b", "2"), ("c", "3")]),
            block(&[("tool_name", "calc_add"), ("a", "a long value")]),
        ]
        .concat();
        let cycle = engine.run_turn(troubled.as_str(), &context()).await.unwrap();
        notes.extend(cycle.execution_results.iter().map(|r| r.result.clone()));
        let limits = VcpLimits::default().max_fields(3).max_value_bytes(8);
        let limited = engine.with_protocol(Arc::new(
            VcpProtocol::new(VcpOptions::default().limits(limits)).with_language(language),
        ));
        let cycle = limited.run_turn(troubled.as_str(), &context()).await.unwrap();
        notes.extend(cycle.execution_results.iter().map(|r| r.result.clone()));

        // Every problem of the other protocols (in English: they have no language
        // setting) and the engine's own, in this language's note, alone and two at once.
        let mut problems: Vec<String> = foreign.iter().chain(&native).cloned().collect();
        problems.push(words.reply_cut.clone());
        problems
            .push(filled(&vcp.unclosed_value.replace("{key}", "a").replace("{closer}", "「末」"), &words));
        let mut requests: Vec<ToolRequest> = problems
            .iter()
            .enumerate()
            .map(|(i, problem)| ToolRequest::new(format!("p{i}"), "calc_add").with_problem(problem.as_str()))
            .collect();
        requests
            .push(ToolRequest::new("two", "calc_add").with_problem(&problems[0]).with_problem(&problems[1]));
        let planned = requests.iter().map(ResolvedRequest::exact).collect();
        let results = limited.executor().execute(planned, &context()).await;
        assert_eq!(results.len(), requests.len());
        notes.extend(results.into_iter().map(|r| r.result));

        let openers = sentence_openers(&[&notes[..], &templates[..]].concat());
        if language == Language::En {
            assert!(["Not", "Send", "No", "Did", "Tool"].iter().all(|w| openers.contains(*w)), "{openers:?}");
        }
        let mut faulty = Vec::new();
        for note in &notes {
            let faults = note_faults(note, &openers);
            if !faults.is_empty() {
                faulty.push(format!("{note:?}: {}", faults.join(", ")));
            }
        }
        assert!(
            faulty.is_empty(),
            "{language:?}: {} notes of {} are faulty:\n{}",
            faulty.len(),
            notes.len(),
            faulty.join("\n")
        );
    }
    // The checker finds both faults where they were.
    let openers = BTreeSet::from(["Send".to_string()]);
    for faulty in [
        "Not run: the value of `a` is not closed: end it with 「末」 Send the request again with this fixed.",
        "Not run: it is incomplete and was not run; send it again in full Send the request again with this fixed.",
        "Not run: it was cut; send it again in full. Send the request again with this fixed.",
        "未执行：`a` 的值没有闭合：请用 「末」 结束它请修正后重新发送该请求。",
        "未执行：回复被截断；请完整地重写该请求。请修正后重新发送该请求。",
    ] {
        assert!(!note_faults(faulty, &openers).is_empty(), "{faulty}");
    }
}

/// The grammar the engine sends with the tools `engine()` offers.
fn grammar_text(engine: &Engine, ctx: &ExecutionContext, constraint: Constraint) -> Option<String> {
    Some(engine.grammar(ctx, &constraint).expect("a grammar").text().to_string())
}

#[tokio::test(start_paused = true)]
async fn the_grammar_follows_the_turn_and_asks_for_an_answer_after_repeated_calls() {
    let call = block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]);
    let model = ScriptedModel::new(&[&call, &call, "It is 42."]);
    let engine = engine();
    let must_call = Constraint::new(Dialect::Lark, Scope::Call);
    let ctx = ExecutionContext::new(ToolCallConfig::default().with_grammar(must_call).with_max_iterations(8));
    let mut conversation = Conversation::new();
    conversation.push(Message::user("What is 2 + 40?"));
    let outcome = engine.run_conversation(&model, &mut conversation, &ctx).await.unwrap();
    assert_eq!(outcome.stop, StopReason::Finished);
    assert_eq!(outcome.final_text(), "It is 42.");
    assert_eq!(outcome.rounds.len(), 3);
    let sent = model.grammars.lock().unwrap().clone();
    let reply = must_call.scope(Scope::Reply);
    assert_eq!(
        sent,
        vec![
            // The first turn must call; after the results, a reply (text or calls); after
            // the same call again, a reply of text alone.
            grammar_text(&engine, &ctx, must_call),
            grammar_text(&engine, &ctx, reply),
            grammar_text(&engine, &ctx, reply.max_calls(0)),
        ]
    );
    assert_ne!(sent[1], sent[2]);

    // Without a grammar the loop breaker stops the repeat, as before.
    let model = ScriptedModel::new(&[&call, &call, "It is 42."]);
    let ctx = ExecutionContext::new(ToolCallConfig::default().with_max_iterations(8));
    let outcome = engine.run_conversation(&model, &mut Conversation::new(), &ctx).await.unwrap();
    assert_eq!(outcome.stop, StopReason::RepeatedCalls);
    assert_eq!(model.grammars.lock().unwrap().clone(), vec![None, None]);
}

#[tokio::test(start_paused = true)]
async fn the_last_turn_the_loop_allows_is_asked_for_an_answer() {
    let call = block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]);
    let model = ScriptedModel::new(&[&call, "It is 42."]);
    let engine = engine();
    let must_call = Constraint::new(Dialect::Gbnf, Scope::Calls);
    let ctx = ExecutionContext::new(ToolCallConfig::default().with_grammar(must_call).with_max_iterations(2));
    let outcome = engine.run_conversation(&model, &mut Conversation::new(), &ctx).await.unwrap();
    assert_eq!(outcome.stop, StopReason::Finished);
    let sent = model.grammars.lock().unwrap().clone();
    let answer = must_call.scope(Scope::Reply).max_calls(0);
    assert_eq!(sent, vec![grammar_text(&engine, &ctx, must_call), grammar_text(&engine, &ctx, answer)]);
}
