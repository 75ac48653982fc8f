//! The conversation loop: ask the model, run its requests, feed the results back, until
//! it answers without requests.

use futures::StreamExt;
use tracing::Instrument;

use super::{Engine, EngineError, StreamChunk, StreamCycleError, ToolCallCycleResult};
use crate::ParsedToolRequest;
use crate::exec::ExecutionContext;
use crate::model::{
    AssistantTurn, ChatModel, Conversation, Message, ModelRequest, RequestNote, TurnAccumulator,
};
use crate::protocol::ToolCallingProtocol;

/// Why a conversation loop stopped.
///
/// ```
/// use std::sync::Arc;
/// use futures::future::BoxFuture;
/// use tool_calling::config::ToolCallConfig;
/// use tool_calling::engine::{Engine, StopReason};
/// use tool_calling::exec::ExecutionContext;
/// use tool_calling::model::{AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest};
/// use tool_calling::tools::ToolRegistry;
///
/// struct Hello;
/// impl ChatModel for Hello {
///     fn complete<'a>(&'a self, _: &'a ModelRequest) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
///         Box::pin(async { Ok(AssistantTurn::from_text("Hello!")) })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() {
///     let engine = Engine::new(Arc::new(ToolRegistry::new()));
///     let mut conversation = Conversation::new();
///     conversation.push(Message::user("Hi"));
///     // With tool calling switched off, the loop takes one plain turn.
///     let ctx = ExecutionContext::new(ToolCallConfig::default().with_enabled(false));
///     let outcome = engine.run_conversation(&Hello, &mut conversation, &ctx).await.unwrap();
///     assert_eq!(outcome.stop, StopReason::ToolsDisabled);
///     assert!(outcome.rounds.is_empty());
/// }
/// ```
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

/// One model turn of a conversation loop: the turn, and the cycle run on it.
///
/// ```
/// use std::sync::Arc;
/// use futures::future::BoxFuture;
/// use tool_calling::engine::{Engine, StopReason};
/// use tool_calling::model::{AssistantTurn, ChatModel, ChatModelError, Conversation, ModelRequest};
/// use tool_calling::{ErrorKind, tools::ToolRegistry};
///
/// /// Asks for the same (unregistered) tool on every turn.
/// struct Stubborn;
/// impl ChatModel for Stubborn {
///     fn complete<'a>(&'a self, _: &'a ModelRequest) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
///         let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」\n<<<[END_TOOL_REQUEST]>>>";
///         Box::pin(async move { Ok(AssistantTurn::from_text(reply)) })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() {
///     let engine = Engine::new(Arc::new(ToolRegistry::new()));
///     let outcome =
///         engine.run_conversation(&Stubborn, &mut Conversation::new(), &Default::default()).await.unwrap();
///     // The loop breaker stops the second identical turn; each turn is one round.
///     assert_eq!(outcome.stop, StopReason::RepeatedCalls);
///     assert_eq!(outcome.rounds.len(), 2);
///     let round = &outcome.rounds[0];
///     assert!(round.turn.text().contains("weather"));
///     assert_eq!(round.cycle.execution_results[0].error_kind, Some(ErrorKind::NotFound));
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Round {
    /// The assistant's turn.
    pub turn: AssistantTurn,
    /// The cycle run on it.
    pub cycle: ToolCallCycleResult,
    /// What the model client changed in the request for this turn (options the model
    /// does not support, combinations the provider refuses).
    pub request_notes: Vec<RequestNote>,
}

/// How a conversation loop ended.
///
/// ```
/// use std::sync::Arc;
/// use futures::future::BoxFuture;
/// use tool_calling::engine::{Engine, StopReason};
/// use tool_calling::model::{AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest};
/// use tool_calling::tools::ToolRegistry;
///
/// struct Hello;
/// impl ChatModel for Hello {
///     fn complete<'a>(&'a self, _: &'a ModelRequest) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
///         Box::pin(async { Ok(AssistantTurn::from_text("Hello! No tools needed.")) })
///     }
/// }
///
/// #[tokio::main]
/// async fn main() {
///     let engine = Engine::new(Arc::new(ToolRegistry::new()));
///     let mut conversation = Conversation::new();
///     conversation.push(Message::user("Hi"));
///     let outcome = engine.run_conversation(&Hello, &mut conversation, &Default::default()).await.unwrap();
///     assert_eq!(outcome.stop, StopReason::Finished);
///     assert_eq!(outcome.final_text(), "Hello! No tools needed.");
///     assert_eq!(outcome.rounds.len(), 1);
///     assert_eq!(conversation.len(), 2, "the user's message and the assistant's turn");
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoopOutcome {
    /// The last assistant turn.
    pub final_turn: AssistantTurn,
    /// Every turn, in order.
    pub rounds: Vec<Round>,
    /// Why it stopped.
    pub stop: StopReason,
}

impl LoopOutcome {
    /// The text of the last assistant turn.
    pub fn final_text(&self) -> std::borrow::Cow<'_, str> {
        self.final_turn.text()
    }
}

/// The calls of a turn, for the loop breaker: tool names and arguments, ids ignored.
fn call_signature(requests: &[ParsedToolRequest]) -> Vec<(String, String)> {
    requests
        .iter()
        .map(|r| (r.tool_name.clone(), serde_json::to_string(&r.args).unwrap_or_default()))
        .collect()
}

/// The bookkeeping of a conversation loop between model turns.
struct LoopState {
    rounds: Vec<Round>,
    previous: Option<Vec<(String, String)>>,
    turn_number: u32,
    /// The client's notes on the request of the turn being taken.
    notes: Vec<RequestNote>,
}

impl Engine {
    /// Drives a conversation: asks the model (with what the protocol offers: a prompt
    /// section for VCP, a `tools` value for a native protocol), runs the cycle on its
    /// turn, appends the turn and the protocol's result messages to `conversation`, and
    /// repeats until a turn has no requests, `max_iterations` turns were taken, or the
    /// model repeats its previous turn's calls exactly (the loop breaker).
    ///
    /// Failures of earlier fire-and-forget calls are reported with the next turn's
    /// results.
    pub async fn run_conversation(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
    ) -> Result<LoopOutcome, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let mut state = LoopState { rounds: Vec::new(), previous: None, turn_number: 0, notes: Vec::new() };
        loop {
            let request = self.next_request(protocol.as_ref(), conversation, ctx, &mut state);
            state.notes = model.request_notes(&request);
            let span = tracing::info_span!("model_turn", turn = state.turn_number);
            let turn = model.complete(&request).instrument(span).await?;
            let cycle = if ctx.config.enabled {
                Some(self.run_cycle(&protocol, protocol.parse_turn(&turn), ctx).await)
            } else {
                None
            };
            if let Some(outcome) =
                self.close_turn(protocol.as_ref(), conversation, ctx, &mut state, turn, cycle)
            {
                return Ok(outcome);
            }
        }
    }

    /// [`run_conversation`](Self::run_conversation) over the model's streamed turns
    /// ([`ChatModel::stream`]): each turn is read as it arrives and its requests start
    /// as soon as they are complete ([`process_delta_stream`](Self::process_delta_stream)),
    /// and `on_chunk` hears every step of every turn. A turn whose stream fails ends the
    /// loop with the model's error (calls already started were waited for); that turn
    /// is not added to `conversation`.
    pub async fn run_conversation_streamed<F: FnMut(StreamChunk)>(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
        mut on_chunk: F,
    ) -> Result<LoopOutcome, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let mut state = LoopState { rounds: Vec::new(), previous: None, turn_number: 0, notes: Vec::new() };
        loop {
            let request = self.next_request(protocol.as_ref(), conversation, ctx, &mut state);
            state.notes = model.request_notes(&request);
            let span = tracing::info_span!("model_turn", turn = state.turn_number);
            let deltas = model.stream(&request);
            let (turn, cycle) = if ctx.config.enabled {
                match self.process_delta_stream(deltas, ctx, &mut on_chunk).instrument(span).await {
                    Ok(streamed) => (streamed.turn, Some(streamed.cycle)),
                    Err(StreamCycleError::Engine(error)) => return Err(error),
                    Err(StreamCycleError::Stream { error, .. }) => return Err(EngineError::Model(error)),
                }
            } else {
                let mut turn = TurnAccumulator::new();
                let mut deltas = deltas;
                let mut budget = super::streamed::TurnBudget::new(self.max_turn_bytes);
                while let Some(delta) = deltas.next().instrument(span.clone()).await {
                    let delta = delta?;
                    if !budget.take(super::streamed::delta_cost(&delta)) {
                        turn.push(&crate::model::TurnDelta::Finish(crate::model::FinishReason::Length));
                        break;
                    }
                    turn.push(&delta);
                }
                (turn.finish(), None)
            };
            if let Some(outcome) =
                self.close_turn(protocol.as_ref(), conversation, ctx, &mut state, turn, cycle)
            {
                return Ok(outcome);
            }
        }
    }

    /// The request for the next turn: the conversation so far, and the protocol's
    /// declarations when tool calling is on.
    fn next_request(
        &self,
        protocol: &dyn ToolCallingProtocol,
        conversation: &Conversation,
        ctx: &ExecutionContext,
        state: &mut LoopState,
    ) -> ModelRequest {
        state.turn_number += 1;
        let mut request = ModelRequest::new(conversation.messages().to_vec());
        if ctx.config.enabled {
            self.declarations_for(protocol, &ctx.config, ctx.agent_id.as_deref()).apply(&mut request);
        }
        request
    }

    /// Records a turn and its cycle (`None` when tool calling is off) in the conversation
    /// and the rounds; returns the outcome when the loop stops here.
    fn close_turn(
        &self,
        protocol: &dyn ToolCallingProtocol,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
        state: &mut LoopState,
        turn: AssistantTurn,
        cycle: Option<ToolCallCycleResult>,
    ) -> Option<LoopOutcome> {
        let rounds = &mut state.rounds;
        let Some(cycle) = cycle else {
            conversation.push(Message::from_turn(turn.clone()));
            return Some(LoopOutcome {
                final_turn: turn,
                rounds: std::mem::take(rounds),
                stop: StopReason::ToolsDisabled,
            });
        };
        conversation.push(Message::from_turn(turn.clone()).with_tool_requests(cycle.parsed_requests.clone()));
        let signature = call_signature(&cycle.parsed_requests);
        if !cycle.has_tool_requests {
            rounds.push(Round { turn: turn.clone(), cycle, request_notes: std::mem::take(&mut state.notes) });
            return Some(LoopOutcome {
                final_turn: turn,
                rounds: std::mem::take(rounds),
                stop: StopReason::Finished,
            });
        }
        let background = self.take_background_failures();
        let messages = if background.is_empty() {
            cycle.result_messages.clone()
        } else {
            let mut results = background;
            results.extend(cycle.execution_results.iter().cloned());
            protocol.result_messages(&results)
        };
        conversation.extend(messages);
        rounds.push(Round { turn: turn.clone(), cycle, request_notes: std::mem::take(&mut state.notes) });
        let stop = if state.previous.as_ref() == Some(&signature) {
            Some(StopReason::RepeatedCalls)
        } else if state.turn_number >= ctx.config.max_iterations.max(1) {
            Some(StopReason::MaxIterations)
        } else {
            None
        };
        state.previous = Some(signature);
        stop.map(|stop| LoopOutcome { final_turn: turn, rounds: std::mem::take(&mut state.rounds), stop })
    }
}
