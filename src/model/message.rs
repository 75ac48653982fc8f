//! Messages: who wrote them, their blocks, and the host's record of the tool requests
//! and results they carry.

use std::borrow::Cow;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::turn::joined_text;
use super::{AssistantTurn, ContentBlock, ToolCall};
use crate::{ToolExecutionResult, ToolRequest};

/// Who wrote a [`Message`].
///
/// Ordered `System < User < Assistant < Tool`, the order used by
/// [`Conversation::count_by_role`](super::Conversation::count_by_role).
///
/// ```
/// use tool_calling::model::{Message, Role};
/// assert_eq!(Message::user("Hi").role, Role::User);
/// assert_eq!(Role::Tool.to_string(), "tool");
/// assert!(Role::System < Role::Assistant);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// Instructions from the host (system prompt).
    System,
    /// The human (or the host speaking for them).
    User,
    /// The model.
    Assistant,
    /// Results of tool calls, sent back to the model. (A model client maps this role to
    /// what its provider uses: OpenAI's `tool` messages, a user message of result
    /// blocks for Anthropic and Gemini, a user message for plain text.)
    Tool,
}

impl Role {
    /// Every role, in order.
    pub const ALL: [Role; 4] = [Role::System, Role::User, Role::Assistant, Role::Tool];

    /// The snake_case name used in JSON (`"system"`, `"user"`, `"assistant"`, `"tool"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

display_by_name!(Role, as_str);

/// A role name that [`Role::from_str`] does not know.
///
/// ```
/// use tool_calling::model::{Role, UnknownRole};
/// let err = "robot".parse::<Role>().unwrap_err();
/// assert_eq!(err, UnknownRole("robot".to_owned()));
/// assert!(err.to_string().contains("unknown message role `robot`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown message role `{0}` (expected system, user, assistant or tool)")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    /// Parses a role name, ignoring ASCII case and surrounding whitespace.
    ///
    /// ```
    /// use tool_calling::model::Role;
    /// assert_eq!("Assistant".parse::<Role>(), Ok(Role::Assistant));
    /// assert!("robot".parse::<Role>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        Role::ALL
            .into_iter()
            .find(|role| role.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// One message of a conversation: its role and blocks (what the model sees), and the
/// host's record of the tool requests and results it carries.
///
/// [`content`](Self::content) is what goes to the model: text, reasoning, native tool
/// calls and results. [`tool_requests`](Self::tool_requests) and
/// [`tool_results`](Self::tool_results) are the host's record: the requests a protocol
/// read out of an assistant message (VCP requests live in its text, native ones in its
/// call blocks), and the results a tool message reports. Both records are omitted from
/// JSON when empty.
///
/// ```
/// use tool_calling::model::{ContentBlock, Message, Role, ToolCall};
/// let reply = Message::assistant("Let me add that.")
///     .with_block(ContentBlock::ToolCall(ToolCall::new("call_1", "calc_add", r#"{"a": 1}"#)));
/// assert_eq!(reply.role, Role::Assistant);
/// assert_eq!(reply.text(), "Let me add that.");
/// assert_eq!(reply.tool_calls().count(), 1);
/// assert!(!reply.has_tool_requests());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order. When read from JSON, a plain string is taken as one text
    /// block.
    #[serde(default, deserialize_with = "blocks_or_text")]
    pub content: Vec<ContentBlock>,
    /// The tool requests read out of this (assistant) message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_requests: Vec<ToolRequest>,
    /// The results this (tool) message reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolExecutionResult>,
    /// Position in the conversation, assigned by
    /// [`Conversation::push`](super::Conversation::push); `0` until then.
    #[serde(default)]
    pub index: usize,
}

impl Message {
    /// A message of `role` holding `text` (no block when `text` is empty).
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        let text = text.into();
        let content = if text.is_empty() { Vec::new() } else { vec![ContentBlock::text(text)] };
        Self::with_content(role, content)
    }

    /// A message of `role` made of `content`.
    pub fn with_content(role: Role, content: Vec<ContentBlock>) -> Self {
        Message { role, content, tool_requests: Vec::new(), tool_results: Vec::new(), index: 0 }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Message::new(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::new(Role::User, text)
    }

    /// An assistant message of text; record requests with
    /// [`with_tool_requests`](Self::with_tool_requests).
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::new(Role::Assistant, text)
    }

    /// A tool message of text; record results with
    /// [`with_tool_results`](Self::with_tool_results).
    pub fn tool(text: impl Into<String>) -> Self {
        Message::new(Role::Tool, text)
    }

    /// The assistant message holding `turn`'s blocks.
    pub fn from_turn(turn: AssistantTurn) -> Self {
        Self::with_content(Role::Assistant, turn.content)
    }

    /// Appends a block.
    #[must_use]
    pub fn with_block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Records tool requests, in order.
    #[must_use]
    pub fn with_tool_requests(mut self, requests: impl IntoIterator<Item = ToolRequest>) -> Self {
        self.tool_requests.extend(requests);
        self
    }

    /// Records tool results, in order.
    #[must_use]
    pub fn with_tool_results(mut self, results: impl IntoIterator<Item = ToolExecutionResult>) -> Self {
        self.tool_results.extend(results);
        self
    }

    /// The text blocks joined without separator.
    pub fn text(&self) -> Cow<'_, str> {
        joined_text(&self.content)
    }

    /// The native tool calls among the blocks.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// Whether a tool request was recorded on this message.
    pub fn has_tool_requests(&self) -> bool {
        !self.tool_requests.is_empty()
    }
}

/// A message's content as JSON: an array of blocks, or a plain string (one text block;
/// none when empty).
fn blocks_or_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ContentBlock>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Content {
        Text(String),
        Blocks(Vec<ContentBlock>),
    }
    Ok(match Content::deserialize(deserializer)? {
        Content::Text(text) if text.is_empty() => Vec::new(),
        Content::Text(text) => vec![ContentBlock::text(text)],
        Content::Blocks(blocks) => blocks,
    })
}
