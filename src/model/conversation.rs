//! The ordered message history of one conversation, and the queries a loop driver needs.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{Message, Role};
use crate::{ToolExecutionResult, ToolRequest};

/// The ordered message history of one conversation.
///
/// Append-only: messages are added with [`push`](Self::push) or
/// [`push_all`](Self::push_all) and keep their index for the life of the conversation.
/// Serialises as `{"id": ..., "messages": [...]}`; deserialising renumbers the messages
/// by position, so indices always match positions.
///
/// A [`Conversation`] is an append-only list of [`Message`]s. Each message gets its
/// position as its [`index`](Message::index) when it is pushed, so a message read out of a
/// query still says where it sits in the history. Queries never panic: ranges are
/// clamped, and asking for more messages than there are returns what there is.
///
/// ```
/// use tool_calling::model::{Conversation, Message, Role};
/// use tool_calling::{ToolRequest, ToolExecutionResult};
///
/// let mut chat = Conversation::with_id("demo");
/// chat.push(Message::system("You can add numbers."));
/// chat.push(Message::user("What is 1 + 2?"));
/// chat.push(
///     Message::assistant("Let me add them.")
///         .with_tool_requests([ToolRequest::new("call_1", "calc_add").with_arg("a", 1).with_arg("b", 2)]),
/// );
/// chat.push(Message::tool("3").with_tool_results([ToolExecutionResult::success("call_1", "calc_add", "3")]));
/// let last = chat.push(Message::assistant("1 + 2 = 3."));
///
/// assert_eq!(last, 4);
/// assert_eq!(chat.len(), 5);
/// assert_eq!(chat.by_role(Role::Assistant).count(), 2);
/// assert_eq!(chat.last_of(Role::User).map(|m| m.text()).as_deref(), Some("What is 1 + 2?"));
/// assert_eq!(chat.recent(2).first().map(|m| m.role), Some(Role::Tool));
/// assert_eq!(chat.range(3..100).len(), 2);
/// assert_eq!(chat.count_of(Role::Tool), 1);
/// assert_eq!(chat.tool_requests().next().map(|c| c.tool_name.as_str()), Some("calc_add"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredConversation")]
pub struct Conversation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    messages: Vec<Message>,
}

/// The serialised shape, renumbered on the way in.
#[derive(Deserialize)]
struct StoredConversation {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    messages: Vec<Message>,
}

impl From<StoredConversation> for Conversation {
    fn from(stored: StoredConversation) -> Self {
        let mut conversation =
            Conversation { id: stored.id, messages: Vec::with_capacity(stored.messages.len()) };
        conversation.push_all(stored.messages);
        conversation
    }
}

impl Conversation {
    /// An empty conversation without an id.
    pub fn new() -> Self {
        Conversation::default()
    }

    /// An empty conversation with the host's `id` for it.
    pub fn with_id(id: impl Into<String>) -> Self {
        Conversation { id: Some(id.into()), messages: Vec::new() }
    }

    /// The id given to [`with_id`](Self::with_id), if any.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Appends `message`, sets its [`index`](Message::index) and returns that index.
    pub fn push(&mut self, mut message: Message) -> usize {
        let index = self.messages.len();
        message.index = index;
        self.messages.push(message);
        index
    }

    /// Appends several messages in order; returns the range of indices they received
    /// (empty, starting at [`len`](Self::len), when there were none).
    pub fn push_all(&mut self, messages: impl IntoIterator<Item = Message>) -> Range<usize> {
        let start = self.messages.len();
        for message in messages {
            self.push(message);
        }
        start..self.messages.len()
    }

    /// Every message, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Iterates every message, oldest first.
    pub fn iter(&self) -> std::slice::Iter<'_, Message> {
        self.messages.iter()
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The message at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.messages.get(index)
    }

    /// The newest message.
    pub fn last(&self) -> Option<&Message> {
        self.messages.last()
    }

    /// The newest message of `role`.
    pub fn last_of(&self, role: Role) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.role == role)
    }

    /// Messages of `role`, oldest first (use `.rev()` for newest first).
    pub fn by_role(&self, role: Role) -> impl DoubleEndedIterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.role == role)
    }

    /// Messages with indices in `range`, clamped to the history: an end past the last
    /// message stops at it, and an empty or out-of-bounds range gives an empty slice.
    pub fn range(&self, range: Range<usize>) -> &[Message] {
        let len = self.messages.len();
        let start = range.start.min(len);
        let end = range.end.min(len).max(start);
        self.messages.get(start..end).unwrap_or_default()
    }

    /// The `n` newest messages, oldest first (all of them when `n >= len`).
    pub fn recent(&self, n: usize) -> &[Message] {
        let start = self.messages.len().saturating_sub(n);
        self.messages.get(start..).unwrap_or_default()
    }

    /// The `n` newest messages of `role`, oldest first (all of them when there are
    /// fewer than `n`).
    pub fn recent_of(&self, role: Role, n: usize) -> Vec<&Message> {
        let mut newest: Vec<&Message> = self.by_role(role).rev().take(n).collect();
        newest.reverse();
        newest
    }

    /// Messages of `role` by their position among messages of that role: `0..2` is the
    /// first two user messages, whatever their overall indices. Clamped like
    /// [`range`](Self::range).
    pub fn role_range(&self, role: Role, range: Range<usize>) -> impl Iterator<Item = &Message> {
        let take = range.end.saturating_sub(range.start);
        self.by_role(role).skip(range.start).take(take)
    }

    /// How many messages have `role`.
    pub fn count_of(&self, role: Role) -> usize {
        self.by_role(role).count()
    }

    /// How many messages each role has; roles with no message are absent.
    pub fn count_by_role(&self) -> BTreeMap<Role, usize> {
        let mut counts = BTreeMap::new();
        for message in &self.messages {
            *counts.entry(message.role).or_insert(0) += 1;
        }
        counts
    }

    /// Every tool request recorded in the history, in order (from assistant messages).
    pub fn tool_requests(&self) -> impl Iterator<Item = &ToolRequest> {
        self.messages.iter().flat_map(|m| m.tool_requests.iter())
    }

    /// Every tool result in the history, in order (from tool messages).
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolExecutionResult> {
        self.messages.iter().flat_map(|m| m.tool_results.iter())
    }
}

impl<'a> IntoIterator for &'a Conversation {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl Extend<Message> for Conversation {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        self.push_all(messages);
    }
}

impl FromIterator<Message> for Conversation {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        let mut conversation = Conversation::new();
        conversation.push_all(messages);
        conversation
    }
}
