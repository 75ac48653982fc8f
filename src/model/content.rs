//! The blocks a message is made of: text, reasoning, native tool calls and results.

use serde::{Deserialize, Serialize};

use crate::{ContentPart, ExecutionStatus, ToolExecutionResult};

/// One block of a [`Message`](super::Message) or an
/// [`AssistantTurn`](super::AssistantTurn), in the order the model (or the host) wrote
/// them.
///
/// Serialised with a `type` tag: `{"type": "text", "text": "…"}`,
/// `{"type": "reasoning", …}`, `{"type": "tool_call", …}`, `{"type": "tool_result", …}`.
///
/// ```
/// use tool_calling::model::ContentBlock;
/// let block = ContentBlock::text("Hello");
/// assert_eq!(block.as_text(), Some("Hello"));
/// let json = serde_json::to_value(&block).unwrap();
/// assert_eq!(json, serde_json::json!({"type": "text", "text": "Hello"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text: prose, or a text protocol's requests and results.
    Text {
        /// The text.
        text: String,
    },
    /// The model's reasoning.
    Reasoning(Reasoning),
    /// A tool call the model made through a native tool API.
    ToolCall(ToolCall),
    /// The result of one native tool call, matched to it by id.
    ToolResult(ToolResultBlock),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            _ => None,
        }
    }

    /// The call of a tool-call block.
    pub(crate) fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        }
    }
}

/// Reasoning (thinking) the model wrote before or between its answers.
///
/// Providers that sign reasoning (Anthropic `thinking` blocks, Gemini thought
/// signatures) require it back, unchanged, on the next turn; the signature is kept as
/// an opaque string for that. Redacted reasoning (Anthropic `redacted_thinking`) has no
/// readable text: its encrypted payload is kept in [`signature`](Self::signature).
///
/// ```
/// use tool_calling::model::Reasoning;
/// let signed = Reasoning::new("The user wants a sum.", Some("sig-1".to_owned()));
/// assert!(!signed.redacted);
/// let hidden = Reasoning::redacted("opaque-payload");
/// assert!(hidden.redacted && hidden.text.is_empty());
/// assert_eq!(hidden.signature.as_deref(), Some("opaque-payload"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Reasoning {
    /// The readable reasoning (empty when redacted).
    pub text: String,
    /// The provider's signature (or a redacted block's payload), to be sent back as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The provider withheld the text; [`signature`](Self::signature) holds its payload.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

impl Reasoning {
    /// Readable reasoning, optionally signed.
    pub fn new(text: impl Into<String>, signature: Option<String>) -> Self {
        Reasoning { text: text.into(), signature, redacted: false }
    }

    /// Redacted reasoning: only the provider's opaque payload.
    pub fn redacted(payload: impl Into<String>) -> Self {
        Reasoning { text: String::new(), signature: Some(payload.into()), redacted: true }
    }
}

/// A tool call made through a native tool API: an id, the tool's name, and the
/// arguments as JSON text.
///
/// The arguments are kept as the text the provider sent (OpenAI sends a JSON string;
/// for providers that send an object it is that object serialised), so that a call
/// whose arguments are not valid JSON is kept as written and answered with an error
/// instead of being run with something else.
///
/// ```
/// use tool_calling::model::ToolCall;
/// let call = ToolCall::new("call_1", "calc_add", r#"{"a": 1}"#);
/// assert_eq!(call.arguments_json().unwrap()["a"], 1);
/// assert!(ToolCall::new("call_2", "calc_add", "{\"a\": ").arguments_json().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's id for the call; its result is matched to it by this id.
    pub id: String,
    /// The tool (function) name as the model wrote it.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
    /// An opaque signature the provider attached to this call (Gemini's thought
    /// signature), to be sent back with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The reply ended before this call was complete (a stream cut off mid-call): what
    /// arrived is kept, but the call must not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl ToolCall {
    /// A call with arguments given as JSON text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            signature: None,
            incomplete: false,
        }
    }

    /// A call with arguments given as a JSON value.
    pub fn with_json(id: impl Into<String>, name: impl Into<String>, arguments: &serde_json::Value) -> Self {
        Self::new(id, name, arguments.to_string())
    }

    /// Marks the call as cut off before it was complete.
    #[must_use]
    pub fn incomplete(mut self) -> Self {
        self.incomplete = true;
        self
    }

    /// Sets the provider's signature.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// The arguments parsed as JSON (empty text reads as `{}`, as providers send it for
    /// calls without arguments).
    pub fn arguments_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(serde_json::Map::new()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// The result of one native tool call, as it goes back to the model.
///
/// ```
/// use tool_calling::model::ToolResultBlock;
/// use tool_calling::{ContentPart, ToolExecutionResult};
/// let result = ToolExecutionResult::success("call_1", "calc_add", "3");
/// let block = ToolResultBlock::from_result(&result);
/// assert_eq!((block.call_id.as_str(), block.name.as_str()), ("call_1", "calc_add"));
/// assert_eq!(block.content, [ContentPart::text("3")]);
/// assert!(!block.is_error);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResultBlock {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool's name (Gemini matches results by name).
    pub name: String,
    /// The output: text, JSON or images; for a failure, the error message.
    pub content: Vec<ContentPart>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolResultBlock {
    /// The block for `result`: its parts (or its text), its id and name, and whether it
    /// failed.
    ///
    /// ```
    /// use tool_calling::model::ToolResultBlock;
    /// use tool_calling::{ContentPart, ErrorKind, ToolExecutionResult};
    /// let failed = ToolExecutionResult::error("call_1", "calc_divide", ErrorKind::Execution, "division by zero");
    /// let block = ToolResultBlock::from_result(&failed);
    /// assert!(block.is_error);
    /// assert_eq!(block.content, [ContentPart::text("division by zero")]);
    /// ```
    pub fn from_result(result: &ToolExecutionResult) -> Self {
        let content = if result.parts.is_empty() {
            vec![ContentPart::text(result.result.clone())]
        } else {
            result.parts.clone()
        };
        ToolResultBlock {
            call_id: result.request_id.clone(),
            name: result.tool_name.clone(),
            content,
            is_error: result.status == ExecutionStatus::Error,
        }
    }
}
