//! A turn as it streams in: deltas, and the accumulator that builds the turn from them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{AssistantTurn, ContentBlock, FinishReason, Reasoning, ToolCall};

/// One piece of an assistant turn as a streaming model delivers it.
///
/// Text and reasoning arrive in fragments; a native tool call arrives as a start (id and
/// name), argument fragments, and an end. `index` numbers the turn's tool calls from 0
/// in the order they started.
///
/// Serialised with a `type` tag and the variant's contents under `value`:
/// `{"type": "text", "value": "…"}`, `{"type": "tool_call_end", "value": {"index": 0}}`.
///
/// ```
/// use tool_calling::model::{AssistantTurn, FinishReason, ToolCall, TurnDelta};
/// let turn = AssistantTurn::from_text("Adding.")
///     .with_tool_call(ToolCall::new("c1", "calc_add", r#"{"a": 1}"#))
///     .with_finish_reason(FinishReason::ToolCalls);
/// let deltas = turn.into_deltas();
/// assert_eq!(deltas[0], TurnDelta::Text("Adding.".into()));
/// assert!(matches!(&deltas[1], TurnDelta::ToolCallStart { index: 0, name, .. } if name == "calc_add"));
/// assert_eq!(deltas.last(), Some(&TurnDelta::Finish(FinishReason::ToolCalls)));
/// let json = serde_json::to_value(TurnDelta::ToolCallEnd { index: 0 }).unwrap();
/// assert_eq!(json, serde_json::json!({"type": "tool_call_end", "value": {"index": 0}}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnDelta {
    /// More text.
    Text(String),
    /// More reasoning.
    Reasoning(String),
    /// The signature of the reasoning block just written (sent back as is).
    ReasoningSignature(String),
    /// A whole reasoning block, added as it is: a redacted one (only the provider's
    /// opaque payload), or a signature that stands apart from any reasoning text.
    ReasoningBlock(Reasoning),
    /// A native tool call begins.
    ToolCallStart {
        /// The call's number in this turn.
        index: usize,
        /// The provider's id for the call.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// More of a call's arguments (JSON text).
    ToolCallArguments {
        /// The call's number in this turn.
        index: usize,
        /// The next piece of the arguments' JSON text.
        fragment: String,
    },
    /// An opaque signature the provider attached to a call.
    ToolCallSignature {
        /// The call's number in this turn.
        index: usize,
        /// The signature.
        signature: String,
    },
    /// The reply ended before the call was complete (a stream cut off mid-call); its
    /// end follows.
    ToolCallIncomplete {
        /// The call's number in this turn.
        index: usize,
    },
    /// A call has ended: nothing more of it follows (later deltas for it are ignored).
    ToolCallEnd {
        /// The call's number in this turn.
        index: usize,
    },
    /// The turn ended, for this reason.
    Finish(FinishReason),
}

/// Builds an [`AssistantTurn`] from [`TurnDelta`]s.
///
/// Adjacent text joins into one block, as does adjacent reasoning; a tool call's
/// argument fragments join in its block. Deltas that name a call that never started
/// (a stream that lost its start) open a call with an empty id and name, so that the
/// arguments are kept and the call is reported, not dropped. A call's end is final:
/// deltas for it after its end are ignored.
///
/// ```
/// use tool_calling::model::{TurnAccumulator, TurnDelta};
/// let mut accumulator = TurnAccumulator::new();
/// for delta in [
///     TurnDelta::Text("Let me ".into()),
///     TurnDelta::Text("add.".into()),
///     TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "calc_add".into() },
///     TurnDelta::ToolCallArguments { index: 0, fragment: "{\"a\":".into() },
///     TurnDelta::ToolCallArguments { index: 0, fragment: " 2}".into() },
///     TurnDelta::ToolCallEnd { index: 0 },
/// ] {
///     accumulator.push(&delta);
/// }
/// let turn = accumulator.finish();
/// assert_eq!(turn.text(), "Let me add.");
/// assert_eq!(turn.tool_calls().next().unwrap().arguments, "{\"a\": 2}");
/// ```
#[derive(Debug, Clone, Default)]
pub struct TurnAccumulator {
    turn: AssistantTurn,
    /// Block position of each call, by call index (a map: indexes come from the
    /// provider and need not be small).
    calls: HashMap<usize, usize>,
    /// Call indexes that have ended.
    ended: std::collections::HashSet<usize>,
}

impl TurnAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls that started and have not ended, in the order they started.
    pub fn open_calls(&self) -> Vec<usize> {
        let mut open: Vec<(usize, usize)> = self
            .calls
            .iter()
            .filter(|(index, _)| !self.ended.contains(index))
            .map(|(index, position)| (*position, *index))
            .collect();
        open.sort_unstable();
        open.into_iter().map(|(_, index)| index).collect()
    }

    /// Takes one delta into account.
    pub fn push(&mut self, delta: &TurnDelta) {
        match delta {
            TurnDelta::Text(text) => self.turn.push_text(text),
            TurnDelta::Reasoning(text) => match self.turn.content.last_mut() {
                Some(ContentBlock::Reasoning(r)) if !r.redacted && r.signature.is_none() => {
                    r.text.push_str(text);
                }
                _ => self.turn.content.push(ContentBlock::Reasoning(Reasoning::new(text.clone(), None))),
            },
            TurnDelta::ReasoningSignature(signature) => match self.turn.content.last_mut() {
                // The block just written gets it (a signature sent in pieces joins up).
                Some(ContentBlock::Reasoning(r)) if !r.redacted => {
                    r.signature.get_or_insert_with(String::new).push_str(signature);
                }
                _ => self
                    .turn
                    .content
                    .push(ContentBlock::Reasoning(Reasoning::new(String::new(), Some(signature.clone())))),
            },
            TurnDelta::ReasoningBlock(reasoning) => {
                self.turn.content.push(ContentBlock::Reasoning(reasoning.clone()));
            }
            TurnDelta::ToolCallStart { index, .. }
            | TurnDelta::ToolCallArguments { index, .. }
            | TurnDelta::ToolCallSignature { index, .. }
            | TurnDelta::ToolCallIncomplete { index }
            | TurnDelta::ToolCallEnd { index }
                if self.ended.contains(index) => {}
            TurnDelta::ToolCallStart { index, id, name } => self.with_call(*index, |call| {
                if call.id.is_empty() {
                    call.id.clone_from(id);
                }
                if call.name.is_empty() {
                    call.name.clone_from(name);
                }
            }),
            TurnDelta::ToolCallArguments { index, fragment } => {
                self.with_call(*index, |call| call.arguments.push_str(fragment));
            }
            TurnDelta::ToolCallSignature { index, signature } => {
                self.with_call(*index, |call| call.signature = Some(signature.clone()));
            }
            TurnDelta::ToolCallIncomplete { index } => self.with_call(*index, |call| call.incomplete = true),
            TurnDelta::ToolCallEnd { index } => {
                self.with_call(*index, |_| {});
                self.ended.insert(*index);
            }
            TurnDelta::Finish(reason) => self.turn.finish_reason = Some(*reason),
        }
    }

    /// Applies `change` to the call numbered `index`, opening it if it has not started.
    fn with_call(&mut self, index: usize, change: impl FnOnce(&mut ToolCall)) {
        let content = &mut self.turn.content;
        let position = *self.calls.entry(index).or_insert_with(|| {
            content.push(ContentBlock::ToolCall(ToolCall::new("", "", "")));
            content.len() - 1
        });
        // Recorded positions always hold call blocks.
        if let Some(ContentBlock::ToolCall(call)) = self.turn.content.get_mut(position) {
            change(call);
        }
    }

    /// Takes in more text: the same as pushing a [`TurnDelta::Text`], without making one.
    pub fn push_text(&mut self, text: &str) {
        self.turn.push_text(text);
    }

    /// The call numbered `index` (as the deltas number them), if it has started.
    pub fn call(&self, index: usize) -> Option<&ToolCall> {
        let position = *self.calls.get(&index)?;
        match self.turn.content.get(position) {
            Some(ContentBlock::ToolCall(call)) => Some(call),
            _ => None,
        }
    }

    /// The turn so far.
    pub fn turn(&self) -> &AssistantTurn {
        &self.turn
    }

    /// The turn.
    pub fn finish(self) -> AssistantTurn {
        self.turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_is_final_and_a_cut_call_is_marked() {
        let mut accumulator = TurnAccumulator::new();
        for delta in [
            TurnDelta::ToolCallStart { index: 0, id: "c0".into(), name: "f".into() },
            TurnDelta::ToolCallArguments { index: 0, fragment: "{}".into() },
            TurnDelta::ToolCallEnd { index: 0 },
            TurnDelta::ToolCallArguments { index: 0, fragment: "more".into() },
            TurnDelta::ToolCallIncomplete { index: 0 },
            TurnDelta::ToolCallStart { index: 1, id: "c1".into(), name: "g".into() },
            TurnDelta::ToolCallArguments { index: 1, fragment: "{\"a\"".into() },
            TurnDelta::ToolCallIncomplete { index: 1 },
            TurnDelta::ToolCallEnd { index: 1 },
        ] {
            accumulator.push(&delta);
        }
        let turn = accumulator.finish();
        let calls: Vec<_> = turn.tool_calls().collect();
        assert_eq!((calls[0].arguments.as_str(), calls[0].incomplete), ("{}", false));
        assert_eq!((calls[1].arguments.as_str(), calls[1].incomplete), ("{\"a\"", true));

        // Deltas serialise and read back.
        let deltas = turn.clone().into_deltas();
        let json = serde_json::to_value(&deltas).unwrap();
        assert_eq!(
            json[0],
            serde_json::json!({"type": "tool_call_start", "value": {"index": 0, "id": "c0", "name": "f"}})
        );
        assert_eq!(serde_json::from_value::<Vec<TurnDelta>>(json).unwrap(), deltas);
        let text = serde_json::to_value(TurnDelta::Text("hi".into())).unwrap();
        assert_eq!(text, serde_json::json!({"type": "text", "value": "hi"}));

        // A turn's deltas give the turn back, the mark included.
        let mut again = TurnAccumulator::new();
        for delta in turn.clone().into_deltas() {
            again.push(&delta);
        }
        assert_eq!(again.finish(), turn);
    }
}
