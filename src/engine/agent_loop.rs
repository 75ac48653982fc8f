//! The conversation loop: ask the model, run its requests, feed the results back, until
//! it answers without requests.

use tracing::Instrument;

use super::{Engine, EngineError, ToolCallCycleResult};
use crate::ParsedToolRequest;
use crate::exec::ExecutionContext;
use crate::model::{AssistantTurn, ChatModel, Conversation, Message, ModelRequest};

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

/// One model turn of a conversation loop: the turn, and the cycle run on it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Round {
    /// The assistant's turn.
    pub turn: AssistantTurn,
    /// The cycle run on it.
    pub cycle: ToolCallCycleResult,
}

/// How a conversation loop ended.
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
        let config = &ctx.config;
        let protocol = self.protocol_for(config)?;
        let declarations = self.declarations_for(protocol.as_ref(), config, ctx.agent_id.as_deref());
        let mut rounds = Vec::new();
        let mut previous: Option<Vec<(String, String)>> = None;
        let mut turn_number = 0;
        loop {
            turn_number += 1;
            let mut request = ModelRequest::new(conversation.messages().to_vec());
            if config.enabled {
                declarations.apply(&mut request);
            }
            let turn = model
                .complete(&request)
                .instrument(tracing::info_span!("model_turn", turn = turn_number))
                .await?;
            if !config.enabled {
                conversation.push(Message::from_turn(turn.clone()));
                return Ok(LoopOutcome { final_turn: turn, rounds, stop: StopReason::ToolsDisabled });
            }
            let cycle = self.run_cycle(&protocol, protocol.parse_turn(&turn), ctx).await;
            conversation
                .push(Message::from_turn(turn.clone()).with_tool_requests(cycle.parsed_requests.clone()));
            let signature = call_signature(&cycle.parsed_requests);
            if !cycle.has_tool_requests {
                rounds.push(Round { turn: turn.clone(), cycle });
                return Ok(LoopOutcome { final_turn: turn, rounds, stop: StopReason::Finished });
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
            rounds.push(Round { turn: turn.clone(), cycle });
            if previous.as_ref() == Some(&signature) {
                return Ok(LoopOutcome { final_turn: turn, rounds, stop: StopReason::RepeatedCalls });
            }
            previous = Some(signature);
            if turn_number >= config.max_iterations.max(1) {
                return Ok(LoopOutcome { final_turn: turn, rounds, stop: StopReason::MaxIterations });
            }
        }
    }
}
