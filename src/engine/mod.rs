//! The engine: the parse → execute → format cycle, the conversation loop, and the one
//! entry point a host needs (seed 004 §4.6, §5.1, §6).
//!
//! ```
//! use std::sync::Arc;
//! use tool_calling::engine::Engine;
//! use tool_calling::executor::ExecutionContext;
//! use tool_calling::registry::ToolRegistry;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let engine = Engine::new(Arc::new(ToolRegistry::new()));
//! let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>";
//! let cycle = engine.process_tool_call_cycle(reply, &ExecutionContext::default()).await;
//! assert!(cycle.has_tool_requests);
//! // No such tool here: the model is told so, with the closest names if any.
//! assert_eq!(cycle.execution_results[0].error_kind, Some(tool_calling::ErrorKind::NotFound));
//! let context = engine.format_results_for_context(&cycle.execution_results);
//! assert!(context.contains("<<<[TOOL_RESULT]>>>"));
//! # });
//! ```
//!
//! To run requests while the model is still writing its reply, feed the reply's chunks
//! to [`Engine::process_tool_call_stream`] (see [`stream`]).

pub mod stream;

use std::sync::{Arc, Mutex};

use tracing::Instrument;

use crate::config::ToolCallConfig;
use crate::conversation::{Conversation, Message};
use crate::discovery::{DiscoveredTool, DiscoveryService, MethodFilter};
use crate::executor::{ExecutionContext, Executor};
use crate::registry::ToolRegistry;
use crate::tool::BoxFuture;
use crate::{ParsedToolRequest, ToolCallCycleResult, ToolCallingProtocol, ToolExecutionResult, VcpProtocol};

pub use stream::{FinishReason, StreamChunk, StreamCycleError, StreamedCycle};

/// What the engine reports while it works.
///
/// A one-shot cycle ([`Engine::process_tool_call_cycle`]) reports `Parsed`, then
/// `Started` for every request, then `Finished` for every request in request order. A
/// streamed cycle ([`Engine::process_tool_call_stream`]) reports `RequestParsed` as each
/// request's block ends, `Started` when its call actually starts (at once, or when a
/// slot frees up), `Finished` as each result arrives (in completion order), and `Parsed`
/// with all the requests once the reply has ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EngineEvent {
    /// A reply was parsed (for a streamed reply: it has ended and all of it is parsed).
    Parsed {
        /// The requests found.
        requests: Vec<ParsedToolRequest>,
    },
    /// A streamed reply's request block ended while the reply is still arriving.
    RequestParsed {
        /// The request.
        request: ParsedToolRequest,
    },
    /// A request is about to run.
    Started {
        /// Its id.
        request_id: String,
        /// Its tool name as written.
        tool_name: String,
    },
    /// A request has its result.
    Finished {
        /// The result.
        result: ToolExecutionResult,
    },
}

/// A chat model, supplied by the user: given the conversation so far (the definitions
/// prompt first, as a system message), it returns the assistant's reply.
pub trait ChatModel: Send + Sync {
    /// The next assistant reply.
    fn complete<'a>(&'a self, messages: &'a [Message]) -> BoxFuture<'a, Result<String, ChatModelError>>;
}

/// A failure of the user's chat model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the chat model failed: {0}")]
pub struct ChatModelError(pub String);

/// Why a conversation loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model replied without requesting tools.
    Finished,
    /// `max_iterations` model turns were taken.
    MaxIterations,
    /// The model repeated the same calls as in its previous turn.
    RepeatedCalls,
    /// Tool calling is switched off: one plain turn was taken.
    ToolsDisabled,
}

/// One model turn of a conversation loop: its requests and their results (seed 004 §6,
/// point 4).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Round {
    /// The assistant's reply.
    pub reply: String,
    /// The cycle run on it.
    pub cycle: ToolCallCycleResult,
}

/// How a conversation loop ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoopOutcome {
    /// The last assistant reply.
    pub final_reply: String,
    /// Every turn, in order.
    pub rounds: Vec<Round>,
    /// Why it stopped.
    pub stop: StopReason,
}

type Listener = Arc<dyn Fn(&EngineEvent) + Send + Sync>;

/// Parses replies, runs their requests, formats the results, and drives conversations.
/// `Send + Sync`: share one engine across tasks.
#[derive(Clone)]
pub struct Engine {
    protocol: Arc<dyn ToolCallingProtocol>,
    executor: Executor,
    discovery: Arc<DiscoveryService>,
    listeners: Vec<Listener>,
    /// Failures of fire-and-forget calls, reported with the next results.
    background_failures: Arc<Mutex<Vec<ToolExecutionResult>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("protocol", &self.protocol.id())
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

/// Whether a request asks not to be waited for (`archery: true` or `no_reply`).
fn is_fire_and_forget(request: &ParsedToolRequest) -> bool {
    request
        .arg_str("archery")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim().eq_ignore_ascii_case("no_reply"))
}

/// The immediate result of a fire-and-forget request.
fn started_in_background(request: &ParsedToolRequest) -> ToolExecutionResult {
    ToolExecutionResult::success(
        &request.request_id,
        &request.tool_name,
        "started in the background (no reply requested); only a failure will be reported",
    )
}

/// The calls of a turn, for the loop breaker: tool names and arguments, ids ignored.
fn call_signature(requests: &[ParsedToolRequest]) -> Vec<(String, String)> {
    requests
        .iter()
        .map(|r| (r.tool_name.clone(), serde_json::to_string(&r.args).unwrap_or_default()))
        .collect()
}

impl Engine {
    /// An engine over `registry` speaking VCP, with a default executor.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Engine {
            protocol: Arc::new(VcpProtocol::default()),
            discovery: Arc::new(DiscoveryService::new(registry.clone())),
            executor: Executor::new(registry),
            listeners: Vec::new(),
            background_failures: Arc::default(),
        }
    }

    /// Speaks `protocol`.
    #[must_use]
    pub fn with_protocol(mut self, protocol: Arc<dyn ToolCallingProtocol>) -> Self {
        self.protocol = protocol;
        self
    }

    /// Runs calls with `executor` (policies, confirmation, retries, limits).
    #[must_use]
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.discovery = Arc::new(DiscoveryService::new(executor.registry().clone()));
        self.executor = executor;
        self
    }

    /// Calls `listener` with every [`EngineEvent`].
    #[must_use]
    pub fn on_event(mut self, listener: impl Fn(&EngineEvent) + Send + Sync + 'static) -> Self {
        self.listeners.push(Arc::new(listener));
        self
    }

    fn emit(&self, event: EngineEvent) {
        for listener in &self.listeners {
            listener(&event);
        }
    }

    /// The protocol.
    pub fn protocol(&self) -> &Arc<dyn ToolCallingProtocol> {
        &self.protocol
    }

    /// Parses `text`, runs its requests, and returns everything that happened. Every
    /// parsed request gets exactly one result, in order. Fire-and-forget requests
    /// (`archery`) are started without being waited for: their result says so, and a
    /// failure is reported with a later cycle's results.
    pub async fn process_tool_call_cycle(&self, text: &str, ctx: &ExecutionContext) -> ToolCallCycleResult {
        let span = tracing::info_span!("tool_call_cycle", protocol = self.protocol.id());
        async {
            let outcome = self.protocol.parse_tool_requests(text);
            tracing::debug!(
                requests = outcome.requests.len(),
                diagnostics = outcome.diagnostics.len(),
                "parsed"
            );
            if !self.listeners.is_empty() {
                self.emit(EngineEvent::Parsed { requests: outcome.requests.clone() });
            }
            let mut results: Vec<Option<ToolExecutionResult>> = vec![None; outcome.requests.len()];
            let mut waited = Vec::new();
            for (i, request) in outcome.requests.iter().enumerate() {
                if !self.listeners.is_empty() {
                    self.emit(EngineEvent::Started {
                        request_id: request.request_id.clone(),
                        tool_name: request.tool_name.clone(),
                    });
                }
                if is_fire_and_forget(request) && request.complete {
                    self.spawn_background(request.clone(), ctx.clone());
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(started_in_background(request));
                    }
                } else {
                    waited.push(i);
                }
            }
            let to_run: Vec<ParsedToolRequest> =
                waited.iter().filter_map(|&i| outcome.requests.get(i).cloned()).collect();
            let ran = self.executor.execute(&to_run, ctx).instrument(tracing::info_span!("execute")).await;
            for (i, result) in waited.into_iter().zip(ran) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(result);
                }
            }
            let results: Vec<ToolExecutionResult> = results.into_iter().flatten().collect();
            for result in &results {
                tracing::debug!(request_id = %result.request_id, status = result.status.as_str(), "finished");
                if !self.listeners.is_empty() {
                    self.emit(EngineEvent::Finished { result: result.clone() });
                }
            }
            ToolCallCycleResult::new(outcome.requests, results, outcome.diagnostics)
        }
        .instrument(span)
        .await
    }

    fn spawn_background(&self, request: ParsedToolRequest, ctx: ExecutionContext) {
        let executor = self.executor.clone();
        let failures = self.background_failures.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let message = "not run: fire-and-forget calls need a Tokio runtime";
            let result = ToolExecutionResult::error(
                &request.request_id,
                &request.tool_name,
                crate::ErrorKind::Execution,
                message,
            );
            failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(result);
            return;
        };
        runtime.spawn(async move {
            let result = executor.execute_one(&request, &ctx).await;
            if !result.is_success() {
                failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(result);
            }
        });
    }

    /// Failures of fire-and-forget calls not yet reported; taking them clears them.
    pub fn take_background_failures(&self) -> Vec<ToolExecutionResult> {
        std::mem::take(
            &mut *self.background_failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The text to feed back to the model for `results`.
    pub fn format_results_for_context(&self, results: &[ToolExecutionResult]) -> String {
        self.protocol.format_tool_results(results)
    }

    /// Same as [`process_tool_call_cycle`](Self::process_tool_call_cycle) (seed 004's
    /// facade name).
    pub async fn process_cycle(&self, text: &str, ctx: &ExecutionContext) -> ToolCallCycleResult {
        self.process_tool_call_cycle(text, ctx).await
    }

    /// Same as [`format_results_for_context`](Self::format_results_for_context).
    pub fn format_cycle_results(&self, cycle: &ToolCallCycleResult) -> String {
        self.format_results_for_context(&cycle.execution_results)
    }

    /// The definitions prompt for what `config` enables (cached).
    pub fn generate_tools_prompt(&self, config: &ToolCallConfig, agent_id: Option<&str>) -> Arc<str> {
        self.discovery.generate_prompt(self.protocol.as_ref(), config, agent_id)
    }

    /// The callable methods (or those `filter` selects).
    pub fn discovered_methods(&self, filter: Option<MethodFilter<'_>>) -> Vec<DiscoveredTool> {
        self.discovery.discovered_methods(filter)
    }

    /// Drops cached prompts.
    pub fn invalidate_discovery_cache(&self) {
        self.discovery.invalidate_cache();
    }

    /// Whether `config` switches tool calling on.
    pub fn has_tool_calling_enabled(&self, config: &ToolCallConfig) -> bool {
        config.enabled
    }

    /// Drives a conversation: injects the definitions prompt (as a leading system
    /// message the model sees, not stored in `conversation`), asks the model, runs the
    /// cycle on its reply, feeds the results back as a tool message, and repeats until
    /// a reply has no requests, `max_iterations` turns were taken, or the model repeats
    /// its previous turn's calls exactly (the loop breaker).
    pub async fn run_conversation(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
    ) -> Result<LoopOutcome, ChatModelError> {
        let config = &ctx.config;
        let prompt = self.generate_tools_prompt(config, ctx.agent_id.as_deref());
        let mut rounds = Vec::new();
        let mut previous: Option<Vec<(String, String)>> = None;
        let mut turn = 0;
        loop {
            turn += 1;
            let mut messages = Vec::with_capacity(conversation.len() + 1);
            if !prompt.is_empty() {
                messages.push(Message::system(prompt.to_string()));
            }
            messages.extend(conversation.messages().iter().cloned());
            let reply = model.complete(&messages).instrument(tracing::info_span!("model_turn", turn)).await?;
            if !config.enabled {
                conversation.push(Message::assistant(reply.clone()));
                return Ok(LoopOutcome { final_reply: reply, rounds, stop: StopReason::ToolsDisabled });
            }
            let cycle = self.process_tool_call_cycle(&reply, ctx).await;
            conversation
                .push(Message::assistant(reply.clone()).with_tool_calls(cycle.parsed_requests.clone()));
            let signature = call_signature(&cycle.parsed_requests);
            let has_requests = cycle.has_tool_requests;
            let mut results = self.take_background_failures();
            results.extend(cycle.execution_results.iter().cloned());
            rounds.push(Round { reply: reply.clone(), cycle });
            if !has_requests {
                return Ok(LoopOutcome { final_reply: reply, rounds, stop: StopReason::Finished });
            }
            conversation
                .push(Message::tool(self.format_results_for_context(&results)).with_tool_results(results));
            if previous.as_ref() == Some(&signature) {
                return Ok(LoopOutcome { final_reply: reply, rounds, stop: StopReason::RepeatedCalls });
            }
            previous = Some(signature);
            if turn >= config.max_iterations.max(1) {
                return Ok(LoopOutcome { final_reply: reply, rounds, stop: StopReason::MaxIterations });
            }
        }
    }
}
