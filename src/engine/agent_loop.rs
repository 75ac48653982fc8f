//! The conversation loop: ask the model, run its requests, feed the results back, until
//! it answers without requests.

use futures::StreamExt;
use tracing::Instrument;

use super::cycle::{Reading, TurnBudget, TurnStreamItem, delta_cost};
use super::{Engine, EngineError, ToolCallCycleResult};
use crate::ToolRequest;
use crate::exec::ExecutionContext;
use crate::grammar::Scope;
use crate::model::{
    AssistantTurn, ChatModel, ChatModelError, Conversation, FinishReason, Message, ModelRequest, RequestNote,
    TurnAccumulator, TurnDelta,
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
    /// The model repeated the same calls as in its previous turn (with a grammar, only
    /// when it did so after being given a turn that admits no call: see
    /// [`Engine::run_conversation`]).
    RepeatedCalls,
    /// Tool calling is switched off: one plain turn was taken.
    ToolsDisabled,
}

/// One model turn of a conversation loop: the cycle run on it (which holds the turn).
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
///     assert!(round.cycle.turn.text().contains("weather"));
///     assert_eq!(round.cycle.execution_results[0].error_kind, Some(ErrorKind::NotFound));
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Round {
    /// The cycle run on the assistant's turn; [`turn`](ToolCallCycleResult::turn) is the
    /// turn.
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
    /// The answer: the normal text of the last assistant turn, as its protocol read it
    /// (without call markup, whole or cut short, and without reasoning); with tool
    /// calling off, the turn's text.
    pub fn final_text(&self) -> std::borrow::Cow<'_, str> {
        match self.rounds.last() {
            Some(round) => std::borrow::Cow::Borrowed(round.cycle.normal_text.as_str()),
            None => self.final_turn.text(),
        }
    }
}

/// The calls of a turn, for the loop breaker: tool names and arguments, ids ignored.
fn call_signature(requests: &[ToolRequest]) -> Vec<(String, String)> {
    requests
        .iter()
        .map(|r| (r.tool_name.clone(), serde_json::to_string(&r.args).unwrap_or_default()))
        .collect()
}

/// The scope of the grammar for the next turn: after tool results, a reply (the model
/// answers, or calls again, in its own words); else the configured scope (a turn that
/// must call gets `call` or `calls`).
fn turn_scope(configured: Scope, conversation: &Conversation) -> Scope {
    let after_results = conversation
        .messages()
        .last()
        .is_some_and(|last| last.role == crate::model::Role::Tool || !last.tool_results.is_empty());
    if after_results { Scope::Reply } else { configured }
}

/// The bookkeeping of a conversation loop between model turns.
struct LoopState {
    rounds: Vec<Round>,
    previous: Option<Vec<(String, String)>>,
    turn_number: u32,
    /// The model repeated its calls: with a grammar, the next turn admits none.
    answer_now: bool,
}

impl Engine {
    /// Drives a conversation: asks the model (with what the protocol offers: a prompt
    /// section for VCP, a `tools` value for a native protocol), runs the cycle on its
    /// turn, appends the turn and the protocol's result messages to `conversation`, and
    /// repeats until a turn has no requests, `max_iterations` turns were taken, or the
    /// model repeats its previous turn's calls exactly (the loop breaker). Each turn is
    /// asked for whole ([`ChatModel::complete`]); every step is reported to the
    /// context's observer ([`ExecutionContext::on_event`]).
    ///
    /// With a grammar ([`ToolCallConfig::grammar`](crate::config::ToolCallConfig)), the
    /// first turn gets the configured scope and every turn after tool results the `reply`
    /// scope; and the loop ends with an answer where it can: the last turn
    /// `max_iterations` allows, and the turn after one that repeated its previous
    /// turn's calls, get a grammar that admits text and no call (`max_calls` 0).
    ///
    /// Failures of earlier fire-and-forget calls are reported with the next turn's
    /// results.
    pub async fn run_conversation(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
    ) -> Result<LoopOutcome, EngineError> {
        self.converse(model, conversation, ctx, false).await
    }

    /// [`run_conversation`](Self::run_conversation) over the model's streamed turns
    /// ([`ChatModel::stream`]): each turn is read as it arrives and its requests start
    /// as soon as they are complete, and the context's observer hears every step as it
    /// happens. A turn whose stream fails ends the loop with the model's error (calls
    /// already started were waited for); that turn is not added to `conversation`.
    ///
    /// A model that only implements [`complete`](ChatModel::complete) streams too: its
    /// turn comes as one piece.
    pub async fn run_conversation_streamed(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
    ) -> Result<LoopOutcome, EngineError> {
        self.converse(model, conversation, ctx, true).await
    }

    /// The conversation loop, over whole or streamed turns.
    async fn converse(
        &self,
        model: &dyn ChatModel,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
        streamed: bool,
    ) -> Result<LoopOutcome, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let mut state = LoopState { rounds: Vec::new(), previous: None, turn_number: 0, answer_now: false };
        loop {
            let request = self.next_request(protocol.as_ref(), conversation, ctx, &mut state);
            let notes = model.request_notes(&request);
            let span = tracing::info_span!("model_turn", turn = state.turn_number);
            if !ctx.config.enabled {
                let turn = self.plain_turn(model, &request, streamed).instrument(span).await?;
                conversation.push(Message::from_turn(turn.clone()));
                return Ok(LoopOutcome {
                    final_turn: turn,
                    rounds: state.rounds,
                    stop: StopReason::ToolsDisabled,
                });
            }
            let cycle = if streamed {
                let deltas = model.stream(&request).map(TurnStreamItem::into_piece);
                match self.drive(&protocol, deltas, Reading::Streamed, ctx).instrument(span).await {
                    (_, Some(error)) => return Err(EngineError::Model(error)),
                    (cycle, None) => cycle,
                }
            } else {
                let turn = model.complete(&request).instrument(span.clone()).await?;
                let deltas = futures::stream::iter(turn.into_deltas()).map(TurnStreamItem::into_piece);
                self.drive(&protocol, deltas, Reading::Whole, ctx).instrument(span).await.0
            };
            if let Some(outcome) =
                self.close_turn(protocol.as_ref(), conversation, ctx, &mut state, cycle, notes)
            {
                return Ok(outcome);
            }
        }
    }

    /// A turn read with tool calling off: no cycle, nothing run; a streamed turn is held
    /// up to the turn limit.
    async fn plain_turn(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
        streamed: bool,
    ) -> Result<AssistantTurn, ChatModelError> {
        if !streamed {
            return model.complete(request).await;
        }
        let mut turn = TurnAccumulator::new();
        let mut deltas = model.stream(request);
        let mut budget = TurnBudget::new(self.max_turn_bytes);
        while let Some(delta) = deltas.next().await {
            let delta = delta?;
            if !budget.take(delta_cost(&delta)) {
                turn.push(&TurnDelta::Finish(FinishReason::Length));
                break;
            }
            turn.push(&delta);
        }
        Ok(turn.finish())
    }

    /// The request for the next turn: the conversation so far, and the protocol's
    /// declarations.
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
            if let Some(constraint) = ctx.config.grammar {
                let scope = turn_scope(constraint.scope, conversation);
                let mut constraint = constraint.scope(scope);
                // An answer, not one more call: after repeated calls, or on the last turn.
                let last = state.turn_number >= ctx.config.max_iterations.max(1);
                if scope == Scope::Reply && (state.answer_now || last) {
                    constraint = constraint.max_calls(0);
                }
                match self.grammar_for(protocol, &ctx.config, ctx.agent_id.as_deref(), &constraint) {
                    Ok(grammar) => {
                        for note in grammar.notes() {
                            tracing::debug!(%note, "the grammar leaves a keyword to validation");
                        }
                        request.grammar = Some(grammar.as_ref().clone());
                    }
                    Err(error) => tracing::warn!(%error, "no grammar sent with the request"),
                }
            }
        }
        request
    }

    /// Records a turn's cycle in the conversation and the rounds; returns the outcome
    /// when the loop stops here.
    fn close_turn(
        &self,
        protocol: &dyn ToolCallingProtocol,
        conversation: &mut Conversation,
        ctx: &ExecutionContext,
        state: &mut LoopState,
        cycle: ToolCallCycleResult,
        request_notes: Vec<RequestNote>,
    ) -> Option<LoopOutcome> {
        let turn = cycle.turn.clone();
        conversation.push(Message::from_turn(turn.clone()).with_tool_requests(cycle.parsed_requests.clone()));
        let signature = call_signature(&cycle.parsed_requests);
        if !cycle.has_tool_requests {
            state.rounds.push(Round { cycle, request_notes });
            return Some(LoopOutcome {
                final_turn: turn,
                rounds: std::mem::take(&mut state.rounds),
                stop: StopReason::Finished,
            });
        }
        let background = ctx.take_background_failures();
        let messages = if background.is_empty() {
            cycle.result_messages.clone()
        } else {
            let mut results = background;
            results.extend(cycle.execution_results.iter().cloned());
            protocol.result_messages(&results, &cycle.state)
        };
        conversation.extend(messages);
        state.rounds.push(Round { cycle, request_notes });
        let repeated = state.previous.as_ref() == Some(&signature);
        let answer_next = repeated && ctx.config.grammar.is_some() && !state.answer_now;
        let stop = if repeated && !answer_next {
            Some(StopReason::RepeatedCalls)
        } else if state.turn_number >= ctx.config.max_iterations.max(1) {
            Some(StopReason::MaxIterations)
        } else {
            None
        };
        state.previous = Some(signature);
        state.answer_now = answer_next;
        stop.map(|stop| LoopOutcome { final_turn: turn, rounds: std::mem::take(&mut state.rounds), stop })
    }
}
