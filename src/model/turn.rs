//! The assistant's turn: what a model returns.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{ContentBlock, Reasoning, ToolCall, TurnDelta};

/// Why a model's turn (or a streamed cycle) ended.
///
/// ```
/// use tool_calling::model::{AssistantTurn, FinishReason};
/// let turn = AssistantTurn::from_text("Too long…").with_finish_reason(FinishReason::Length);
/// assert_eq!(turn.finish_reason, Some(FinishReason::Length));
/// assert_eq!(FinishReason::ToolCalls.to_string(), "tool_calls");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// The turn was cut off by a length limit.
    Length,
    /// The turn ended to have tools run (it holds requests).
    ToolCalls,
    /// The provider withheld the rest (a content filter).
    ContentFilter,
    /// The turn (or its stream) failed; what arrived before is kept.
    Error,
    /// The host cancelled the turn; what arrived before is kept.
    Cancelled,
}

impl FinishReason {
    /// The snake_case name: `"stop"`, `"length"`, `"tool_calls"`, `"content_filter"`,
    /// `"error"` or `"cancelled"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Error => "error",
            FinishReason::Cancelled => "cancelled",
        }
    }
}

display_by_name!(FinishReason, as_str);

/// What a model returned for one turn: text, reasoning and native tool calls, in the
/// order it wrote them.
///
/// A text protocol reads the turn's [`text`](Self::text); a native protocol reads its
/// [`tool_calls`](Self::tool_calls). Byte offsets reported by a text protocol are into
/// [`text`](Self::text), the turn's text blocks joined without separator.
///
/// ```
/// use tool_calling::model::AssistantTurn;
/// let turn = AssistantTurn::from_text("Hello").with_text(", world");
/// assert_eq!(turn.text(), "Hello, world");
/// assert_eq!(turn.content.len(), 1, "adjacent text is kept in one block");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantTurn {
    /// The blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Why the turn ended, when the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

/// A turn of text only: a text protocol's reply.
///
/// ```
/// use tool_calling::model::AssistantTurn;
/// let turn: AssistantTurn = "Hello".into();
/// assert_eq!(turn, AssistantTurn::from_text("Hello"));
/// ```
impl From<&str> for AssistantTurn {
    fn from(text: &str) -> Self {
        AssistantTurn::from_text(text)
    }
}

/// A turn of text only: a text protocol's reply.
impl From<String> for AssistantTurn {
    fn from(text: String) -> Self {
        AssistantTurn::from_text(text)
    }
}

/// A turn of text only: a text protocol's reply.
impl From<&String> for AssistantTurn {
    fn from(text: &String) -> Self {
        AssistantTurn::from_text(text.as_str())
    }
}

/// A copy of the turn.
impl From<&AssistantTurn> for AssistantTurn {
    fn from(turn: &AssistantTurn) -> Self {
        turn.clone()
    }
}

impl AssistantTurn {
    /// An empty turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn of text only (what a chat model without a tool API returns).
    pub fn from_text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// Appends text (to the last block when that is text).
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.push_text(&text.into());
        self
    }

    /// Appends a reasoning block.
    #[must_use]
    pub fn with_reasoning(mut self, text: impl Into<String>, signature: Option<String>) -> Self {
        self.content.push(ContentBlock::Reasoning(Reasoning::new(text, signature)));
        self
    }

    /// Appends a native tool call.
    #[must_use]
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.content.push(ContentBlock::ToolCall(call));
        self
    }

    /// Sets the finish reason.
    #[must_use]
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish_reason = Some(reason);
        self
    }

    /// Appends text, joining it to the last block when that is text.
    pub(crate) fn push_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.content.last_mut() {
            Some(ContentBlock::Text { text: last }) => last.push_str(text),
            _ => self.content.push(ContentBlock::text(text)),
        }
    }

    /// The text blocks joined without separator (borrowed when there is at most one).
    pub fn text(&self) -> Cow<'_, str> {
        joined_text(&self.content)
    }

    /// The native tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// The reasoning blocks, in order.
    pub fn reasoning(&self) -> impl Iterator<Item = &Reasoning> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::Reasoning(reasoning) => Some(reasoning),
            _ => None,
        })
    }

    /// The turn as the deltas a stream would have delivered it in (one per block, a
    /// tool call as start, arguments and end, then the finish reason). A
    /// [`TurnAccumulator`](super::TurnAccumulator) fed these gives the turn back.
    ///
    /// ```
    /// use tool_calling::model::{AssistantTurn, ToolCall, TurnAccumulator};
    /// let turn = AssistantTurn::from_text("Adding.").with_tool_call(ToolCall::new("c1", "calc_add", "{}"));
    /// let mut accumulator = TurnAccumulator::new();
    /// for delta in turn.clone().into_deltas() {
    ///     accumulator.push(&delta);
    /// }
    /// assert_eq!(accumulator.finish(), turn);
    /// ```
    pub fn into_deltas(self) -> Vec<TurnDelta> {
        let mut deltas = Vec::with_capacity(self.content.len() + 1);
        blocks_into_deltas(self.content, 0, &mut deltas);
        if let Some(reason) = self.finish_reason {
            deltas.push(TurnDelta::Finish(reason));
        }
        deltas
    }
}

/// `content` as the deltas that stream it, appended to `deltas`, its calls numbered from
/// `first_call`; returns how many calls it holds.
pub(crate) fn blocks_into_deltas(
    content: Vec<ContentBlock>,
    first_call: usize,
    deltas: &mut Vec<TurnDelta>,
) -> usize {
    let mut calls = 0;
    for block in content {
        match block {
            ContentBlock::Text { text } => deltas.push(TurnDelta::Text(text)),
            ContentBlock::Reasoning(reasoning) if reasoning.redacted || reasoning.text.is_empty() => {
                deltas.push(TurnDelta::ReasoningBlock(reasoning));
            }
            ContentBlock::Reasoning(reasoning) => {
                deltas.push(TurnDelta::Reasoning(reasoning.text));
                if let Some(signature) = reasoning.signature {
                    deltas.push(TurnDelta::ReasoningSignature(signature));
                }
            }
            ContentBlock::ToolCall(call) => {
                let index = first_call + calls;
                calls += 1;
                deltas.push(TurnDelta::ToolCallStart { index, id: call.id, name: call.name });
                if let Some(signature) = call.signature {
                    deltas.push(TurnDelta::ToolCallSignature { index, signature });
                }
                deltas.push(TurnDelta::ToolCallArguments { index, fragment: call.arguments });
                if call.incomplete {
                    deltas.push(TurnDelta::ToolCallIncomplete { index });
                }
                deltas.push(TurnDelta::ToolCallEnd { index });
            }
            // A result has no place in an assistant turn; nothing to stream.
            ContentBlock::ToolResult(_) => {}
        }
    }
    calls
}

/// The text blocks of `content` joined without separator.
pub(crate) fn joined_text(content: &[ContentBlock]) -> Cow<'_, str> {
    let mut texts = content.iter().filter_map(ContentBlock::as_text);
    let Some(first) = texts.next() else { return Cow::Borrowed("") };
    match texts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut joined = String::with_capacity(first.len() + second.len());
            joined.push_str(first);
            joined.push_str(second);
            texts.for_each(|t| joined.push_str(t));
            Cow::Owned(joined)
        }
    }
}
