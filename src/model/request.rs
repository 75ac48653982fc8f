//! What is sent to a model: the messages, plus what the protocol adds to offer tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Message, RequestOptions};

/// Whether, and which, tools the model may call in its turn.
///
/// ```
/// use tool_calling::model::{Message, ModelRequest, ToolChoice};
/// let mut request = ModelRequest::new(vec![Message::user("What is 2 + 40?")]);
/// assert_eq!(request.tool_choice, ToolChoice::Auto);
/// request.tool_choice = ToolChoice::Tool("calc_add".to_owned());
/// let json = serde_json::to_value(&request.tool_choice).unwrap();
/// assert_eq!(json, serde_json::json!({"tool": "calc_add"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this one tool.
    Tool(String),
}

/// One request to a model: the conversation so far, plus what the protocol adds to offer
/// tools.
///
/// A text protocol (VCP) adds [`tool_prompt`](Self::tool_prompt), a section for the
/// system prompt; a native protocol adds [`tools`](Self::tools), the provider's `tools`
/// value, and maps [`tool_choice`](Self::tool_choice) to the provider's form. A model
/// client sends the messages and whichever of these is set.
///
/// ```
/// use tool_calling::model::{Message, ModelRequest, Role};
/// let mut request = ModelRequest::new(vec![Message::user("What is 2 + 40?")]);
/// request.tool_prompt = Some("You can call tools: …".to_string());
/// let sent = request.messages_with_prompt();
/// assert_eq!(sent[0].role, Role::System);
/// assert_eq!(sent[1].text(), "What is 2 + 40?");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Text protocols: the tool-definitions section of the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_prompt: Option<String>,
    /// Native protocols: the provider's `tools` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Which tools the model may call.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Whether the model may make several calls in one turn (`None`: the provider's
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Thinking, streaming, output length, temperature, time limit (unset: the model's
    /// defaults).
    #[serde(default)]
    pub options: RequestOptions,
    /// A grammar for the server to constrain decoding with (see
    /// [`grammar`](crate::grammar)); sent by clients that know the server's field for it
    /// (an OpenAI-compatible [`HttpChatModel`](crate::providers) given a
    /// `GrammarServer`), dropped with a note by the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grammar: Option<crate::grammar::Grammar>,
}

impl ModelRequest {
    /// A request of `messages`, offering no tools.
    pub fn new(messages: Vec<Message>) -> Self {
        ModelRequest { messages, ..Self::default() }
    }

    /// The messages as a plain chat API takes them: the tool prompt, if any, as a
    /// leading system message, then the conversation.
    pub fn messages_with_prompt(&self) -> Vec<Message> {
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        if let Some(prompt) = self.tool_prompt.as_deref().filter(|p| !p.is_empty()) {
            messages.push(Message::system(prompt));
        }
        messages.extend(self.messages.iter().cloned());
        messages
    }
}
