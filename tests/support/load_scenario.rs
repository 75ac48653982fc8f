//! The load scenario shared by `tests/load.rs` and `benches/engine_load.rs`: many
//! conversations served by one engine, each with a model that streams its VCP replies in
//! small chunks and tools whose latency and failures are decided by the token they are
//! given (a hash, so every run is the same and every result can be checked).

#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, LoopOutcome, StopReason};
use tool_calling::exec::ExecutionContext;
use tool_calling::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, FinishReason, Message, ModelRequest, Role,
    TurnDelta,
};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
use tool_calling::{ErrorKind, ExecutionStatus, ToolError};

/// Turns with calls before the final answer.
pub const TOOL_TURNS: usize = 3;
/// Calls in each of those turns.
pub const CALLS_PER_TURN: usize = 3;
/// The time limit of every call; some calls are made to run past it.
pub const TIMEOUT_MS: u64 = 1_000;

/// FNV-1a: the deterministic "randomness" of the scenario.
pub fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What the tool does with `token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Answers `echo <token>` after this many ms.
    Echo(u64),
    /// Fails with a network error naming the token, after this many ms.
    Fail(u64),
    /// Runs past the time limit.
    Hang,
}

pub fn fate(token: &str) -> Fate {
    let h = hash(token);
    let latency = (h >> 8) % 400;
    match h % 13 {
        0 => Fate::Hang,
        1 | 2 => Fate::Fail(latency),
        _ => Fate::Echo(latency),
    }
}

/// Every invocation the tool saw, and how many ran at once.
#[derive(Default)]
pub struct Tally {
    pub invocations: AtomicUsize,
    pub tokens: Mutex<HashSet<String>>,
    pub duplicates: AtomicUsize,
    pub running: AtomicUsize,
    pub peak_running: AtomicUsize,
}

/// Counts a running call for as long as it lives (a call cut at its time limit is
/// dropped, and stops counting then).
struct Running(Arc<Tally>);

impl Running {
    fn start(tally: Arc<Tally>) -> Self {
        let now = tally.running.fetch_add(1, Ordering::Relaxed) + 1;
        tally.peak_running.fetch_max(now, Ordering::Relaxed);
        Running(tally)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The engine: one tool, `work_echo(token)`, living out [`fate`].
pub fn engine(tally: &Arc<Tally>) -> Engine {
    let tally = tally.clone();
    let echo = MethodDefinition::new("echo", "Echo a token.").with_parameters(json!({
        "type": "object",
        "properties": {"token": {"type": "string"}},
        "required": ["token"]
    }));
    let spec =
        ToolSpec::stateless("work", "Work").with_method(MethodSpec::new(echo, move |_, args: ArgMap| {
            let token = args.get("token").and_then(Value::as_str).unwrap_or("").to_string();
            tally.invocations.fetch_add(1, Ordering::Relaxed);
            if !tally.tokens.lock().unwrap().insert(token.clone()) {
                tally.duplicates.fetch_add(1, Ordering::Relaxed);
            }
            let tally = tally.clone();
            Box::pin(async move {
                let _running = Running::start(tally);
                match fate(&token) {
                    Fate::Echo(ms) => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok(ToolOutput::Text(format!("echo {token}")))
                    }
                    Fate::Fail(ms) => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Err(ToolError::network(format!("unreachable {token}")))
                    }
                    Fate::Hang => {
                        tokio::time::sleep(Duration::from_secs(3_600)).await;
                        Ok(ToolOutput::Text("too late".into()))
                    }
                }
            }) as BoxFuture<'static, _>
        }));
    let registry = ToolRegistry::new();
    registry.register(spec).unwrap();
    Engine::new(Arc::new(registry))
}

pub fn context(conversation: usize) -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.timeout_ms = TIMEOUT_MS;
    config.max_iterations = (TOOL_TURNS + 2) as u32;
    ExecutionContext::new(config).with_conversation(format!("c{conversation}"))
}

/// The token of call `call` in turn `turn` of conversation `conversation`.
pub fn token(conversation: usize, turn: usize, call: usize) -> String {
    format!("c{conversation}-t{turn}-k{call}")
}

/// The reply of `turn` (from 0) in `conversation`: prose and calls, or the final answer.
pub fn reply(conversation: usize, turn: usize) -> String {
    if turn >= TOOL_TURNS {
        return format!("All done for conversation {conversation}.");
    }
    let mut text = format!("Turn {turn}: working on it.\n");
    for call in 0..CALLS_PER_TURN {
        text.push_str(&format!(
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」work_echo「末」,\ntoken:「始」{}「末」\n<<<[END_TOOL_REQUEST]>>>\n",
            token(conversation, turn, call)
        ));
    }
    text.push_str("Waiting for the results.");
    text
}

/// A model that streams [`reply`] in chunks of 5 to 20 characters, a few ms apart
/// (paused clock). It knows its conversation from the first user message and the turn
/// from the assistant messages so far.
pub struct StreamingModel;

impl StreamingModel {
    fn locate(request: &ModelRequest) -> (usize, usize) {
        let conversation = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.text().strip_prefix("conversation ").and_then(|n| n.parse().ok()))
            .unwrap_or(usize::MAX);
        let turn = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        (conversation, turn)
    }
}

impl ChatModel for StreamingModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        let (conversation, turn) = Self::locate(request);
        Box::pin(async move { Ok(AssistantTurn::from_text(reply(conversation, turn))) })
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<TurnDelta, ChatModelError>> {
        let (conversation, turn) = Self::locate(request);
        let text: Vec<char> = reply(conversation, turn).chars().collect();
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let h = hash(&format!("{conversation}/{turn}/{at}"));
            let len = 5 + (h % 16) as usize;
            let end = (at + len).min(text.len());
            pieces.push(((h >> 16) % 4, text[at..end].iter().collect::<String>()));
            at = end;
        }
        let finish = if turn < TOOL_TURNS { FinishReason::ToolCalls } else { FinishReason::Stop };
        stream::iter(pieces)
            .then(|(pause, piece)| async move {
                tokio::time::sleep(Duration::from_millis(pause)).await;
                Ok(TurnDelta::Text(piece))
            })
            .chain(stream::once(async move { Ok(TurnDelta::Finish(finish)) }))
            .boxed()
    }
}

/// Runs conversation `n` to its end, streamed.
pub async fn converse(engine: &Engine, n: usize) -> (Conversation, LoopOutcome) {
    let mut conversation = Conversation::with_id(format!("c{n}"));
    conversation.push(Message::user(format!("conversation {n}")));
    let outcome = engine
        .run_conversation_streamed(&StreamingModel, &mut conversation, &context(n))
        .await
        .unwrap_or_else(|e| panic!("conversation {n}: {e}"));
    (conversation, outcome)
}

/// A current-thread runtime on tokio's paused clock: the scenario's waits cost no time.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().expect("runtime")
}

/// Serves conversations `0..conversations` at once on `engine`, each in a task of its
/// own that hands its conversation and outcome to `finish`; returns what `finish` made
/// of each, in order.
pub async fn serve_all<T: Send + 'static>(
    engine: &Arc<Engine>,
    conversations: usize,
    finish: fn(usize, Conversation, LoopOutcome) -> T,
) -> Vec<T> {
    let tasks: Vec<_> = (0..conversations)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let (conversation, outcome) = converse(&engine, n).await;
                finish(n, conversation, outcome)
            })
        })
        .collect();
    let mut done = Vec::with_capacity(conversations);
    for task in tasks {
        done.push(task.await.expect("conversation task"));
    }
    done
}

/// Checks that conversation `n` ended as it should and that every call got its own
/// result, once, in order, in the cycle and in the text fed back. Returns the number of
/// calls checked.
pub fn check(n: usize, conversation: &Conversation, outcome: &LoopOutcome) -> Result<usize, String> {
    if outcome.stop != StopReason::Finished {
        return Err(format!("c{n}: stopped with {:?}", outcome.stop));
    }
    if outcome.rounds.len() != TOOL_TURNS + 1 {
        return Err(format!("c{n}: {} rounds", outcome.rounds.len()));
    }
    let mut checked = 0;
    for (turn, round) in outcome.rounds.iter().take(TOOL_TURNS).enumerate() {
        let cycle = &round.cycle;
        if cycle.parsed_requests.len() != CALLS_PER_TURN || cycle.execution_results.len() != CALLS_PER_TURN {
            return Err(format!(
                "c{n} t{turn}: {} requests, {} results",
                cycle.parsed_requests.len(),
                cycle.execution_results.len()
            ));
        }
        let fed_back = cycle.result_text();
        let mut from = 0;
        for (call, (request, result)) in
            cycle.parsed_requests.iter().zip(&cycle.execution_results).enumerate()
        {
            let token = token(n, turn, call);
            if request.arg_str("token") != Some(token.as_str()) || result.request_id != request.request_id {
                return Err(format!("c{n} t{turn} k{call}: request {request:?} got result {result:?}"));
            }
            let expected = match fate(&token) {
                Fate::Echo(_) => (ExecutionStatus::Success, None, format!("echo {token}")),
                Fate::Fail(_) => {
                    (ExecutionStatus::Error, Some(ErrorKind::Network), format!("unreachable {token}"))
                }
                Fate::Hang => (ExecutionStatus::Error, Some(ErrorKind::Timeout), format!("{TIMEOUT_MS} ms")),
            };
            let got = (result.status, result.error_kind);
            if got != (expected.0, expected.1) || !result.result.contains(&expected.2) {
                return Err(format!("c{n} t{turn} k{call}: expected {expected:?}, got {result:?}"));
            }
            // The text fed back holds this result after the previous one.
            match fed_back.get(from..).and_then(|rest| rest.find(&result.result)) {
                Some(at) => from += at + result.result.len(),
                None => {
                    return Err(format!(
                        "c{n} t{turn} k{call}: result missing or out of order in {fed_back:?}"
                    ));
                }
            }
            checked += 1;
        }
    }
    let last = outcome.final_text();
    if last != format!("All done for conversation {n}.") {
        return Err(format!("c{n}: final text {last:?}"));
    }
    // The conversation: the user's message, then per tool turn the assistant's turn and
    // the results, then the final turn.
    if conversation.len() != 1 + 2 * TOOL_TURNS + 1 {
        return Err(format!("c{n}: {} messages", conversation.len()));
    }
    Ok(checked)
}
