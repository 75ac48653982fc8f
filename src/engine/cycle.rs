//! One cycle: parse a turn, resolve and run its requests, write the results.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tracing::Instrument;

use super::{Engine, EngineError, EngineEvent};
use crate::exec::{ExecutionContext, ExecutorMessages, PlannedRequest};
use crate::model::{AssistantTurn, Message};
use crate::protocol::{Diagnostic, ParseOutcome, ToolCallingProtocol};
use crate::{Invocation, ParsedToolRequest, ToolError, ToolExecutionResult};

/// Everything one parse → execute → format cycle produced.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::engine::Engine;
/// use tool_calling::tools::ToolRegistry;
///
/// // No tool is registered: the request is still answered, with an error result.
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// let reply = "Sure.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let runtime = tokio::runtime::Runtime::new()?;
/// let cycle = runtime.block_on(engine.process_tool_call_cycle(reply, &Default::default()))?;
/// assert!(cycle.has_tool_requests);
/// assert_eq!(cycle.parsed_requests.len(), cycle.execution_results.len());
/// assert_eq!(cycle.execution_results[0].error_kind, Some(tool_calling::ErrorKind::NotFound));
/// assert_eq!(cycle.result_messages.len(), 1, "VCP answers in one message");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallCycleResult {
    /// Whether the reply held any request at all.
    pub has_tool_requests: bool,
    /// The requests, in order of appearance.
    pub parsed_requests: Vec<ParsedToolRequest>,
    /// One result per parsed request, in the same order.
    pub execution_results: Vec<ToolExecutionResult>,
    /// What the parser noticed (and the engine: repeated request ids).
    pub diagnostics: Vec<Diagnostic>,
    /// The messages that carry the results back to the model, as the protocol writes
    /// them (empty when there were no requests).
    pub result_messages: Vec<Message>,
}

impl ToolCallCycleResult {
    /// A cycle result from parsed requests, their results, the diagnostics and the
    /// messages written for the results.
    pub fn new(
        parsed_requests: Vec<ParsedToolRequest>,
        execution_results: Vec<ToolExecutionResult>,
        diagnostics: Vec<Diagnostic>,
        result_messages: Vec<Message>,
    ) -> Self {
        ToolCallCycleResult {
            has_tool_requests: !parsed_requests.is_empty(),
            parsed_requests,
            execution_results,
            diagnostics,
            result_messages,
        }
    }

    /// The text of the result messages, joined: what a text protocol feeds back.
    pub fn result_text(&self) -> String {
        self.result_messages.iter().map(|m| m.text()).collect()
    }
}

/// The immediate result of a fire-and-forget request.
pub(crate) fn started_in_background(
    request: &ParsedToolRequest,
    words: &ExecutorMessages,
) -> ToolExecutionResult {
    ToolExecutionResult::success(&request.request_id, &request.tool_name, words.started_in_background.clone())
}

impl Engine {
    /// Reads `turn` with the protocol the config selects, runs its requests, and returns
    /// everything that happened. Every parsed request gets exactly one result, in
    /// order. Requests the protocol marks fire-and-forget are started without being
    /// waited for: their result says so, and a failure is reported with a later cycle's
    /// results ([`take_background_failures`](Self::take_background_failures)).
    pub async fn process_turn(
        &self,
        turn: &AssistantTurn,
        ctx: &ExecutionContext,
    ) -> Result<ToolCallCycleResult, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let outcome = protocol.parse_turn(turn);
        Ok(self.run_cycle(&protocol, outcome, ctx).await)
    }

    /// [`process_turn`](Self::process_turn) for a turn made only of `text` (a text
    /// protocol's reply).
    pub async fn process_tool_call_cycle(
        &self,
        text: &str,
        ctx: &ExecutionContext,
    ) -> Result<ToolCallCycleResult, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let outcome = protocol.parse_text(text);
        Ok(self.run_cycle(&protocol, outcome, ctx).await)
    }

    /// Resolves, runs and answers the requests of `outcome`.
    pub(crate) async fn run_cycle(
        &self,
        protocol: &Arc<dyn ToolCallingProtocol>,
        mut outcome: ParseOutcome,
        ctx: &ExecutionContext,
    ) -> ToolCallCycleResult {
        let span = tracing::info_span!("tool_call_cycle", protocol = protocol.id());
        async {
            outcome.flag_duplicate_ids();
            tracing::debug!(
                requests = outcome.requests.len(),
                diagnostics = outcome.diagnostics.len(),
                "parsed"
            );
            self.emit(|| EngineEvent::Parsed { requests: outcome.requests.clone() });
            let catalog = self.registry().catalog();
            let mut results: Vec<Option<ToolExecutionResult>> = vec![None; outcome.requests.len()];
            let mut planned = Vec::with_capacity(outcome.requests.len());
            let mut waited = Vec::with_capacity(outcome.requests.len());
            for (i, request) in outcome.requests.iter().enumerate() {
                self.emit(|| EngineEvent::Started {
                    request_id: request.request_id.clone(),
                    tool_name: request.tool_name.clone(),
                });
                let calls = protocol.resolve(request, &catalog);
                if request.fire_and_forget && request.complete {
                    self.spawn_background(request.clone(), calls, ctx.clone());
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(started_in_background(request, &self.executor.options().messages));
                    }
                } else {
                    planned.push(PlannedRequest::new(request, calls));
                    waited.push(i);
                }
            }
            let ran = self.executor.execute(planned, ctx).instrument(tracing::info_span!("execute")).await;
            for (i, result) in waited.into_iter().zip(ran) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(result);
                }
            }
            let results: Vec<ToolExecutionResult> = results.into_iter().flatten().collect();
            for result in &results {
                tracing::debug!(request_id = %result.request_id, status = result.status.as_str(), "finished");
                self.emit(|| EngineEvent::Finished { result: result.clone() });
            }
            let messages = protocol.result_messages(&results);
            ToolCallCycleResult::new(outcome.requests, results, outcome.diagnostics, messages)
        }
        .instrument(span)
        .await
    }

    /// Starts a fire-and-forget request in the background; its failure is kept for
    /// [`take_background_failures`](Self::take_background_failures).
    pub(crate) fn spawn_background(
        &self,
        request: ParsedToolRequest,
        calls: Vec<Result<Invocation, ToolError>>,
        ctx: ExecutionContext,
    ) {
        let executor = self.executor.clone();
        let failures = self.background_failures.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let message = executor.options().messages.background_no_runtime.clone();
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
            let result = executor.execute_request(PlannedRequest::new(&request, calls), &ctx).await;
            if !result.is_success() {
                failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(result);
            }
        });
    }
}
