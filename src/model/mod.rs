//! What talks to a model: messages, the assistant's turn, streamed deltas, the request
//! sent, the [`ChatModel`] trait, and the [`Conversation`] history.
//!
//! These types carry both worlds. A text protocol such as VCP reads an assistant turn's
//! text; a native JSON protocol reads its tool calls. Reasoning is kept, with the
//! provider's signature left opaque, because Anthropic and Gemini want it back on the
//! next turn. Results go back as whatever messages the protocol writes: one text block
//! for VCP, one result block per call for native protocols, matched by call id.
//!
//! ```
//! use tool_calling::model::{AssistantTurn, ContentBlock, Message, Role, ToolCall};
//!
//! // A turn as a native API returns it: reasoning, some text, one tool call.
//! let turn = AssistantTurn::new()
//!     .with_reasoning("The user wants a sum.", Some("sig-1".to_string()))
//!     .with_text("Adding.")
//!     .with_tool_call(ToolCall::new("call_1", "calc_add", r#"{"a": 2, "b": 40}"#));
//! assert_eq!(turn.text(), "Adding.");
//! assert_eq!(turn.tool_calls().count(), 1);
//!
//! // Stored in the history as an assistant message, blocks and ids kept.
//! let message = Message::from_turn(turn);
//! assert_eq!(message.role, Role::Assistant);
//! assert!(matches!(&message.content[2], ContentBlock::ToolCall(call) if call.id == "call_1"));
//! ```

mod chat;
mod content;
mod conversation;
mod delta;
mod message;
mod options;
mod request;
mod turn;

pub use chat::{ChatModel, ChatModelError};
pub use content::{ContentBlock, Reasoning, ToolCall, ToolResultBlock};
pub use conversation::Conversation;
pub use delta::{TurnAccumulator, TurnDelta};
pub use message::{Message, Role, UnknownRole};
pub use options::{Effort, RequestNote, RequestOptions, Thinking};
pub use request::{ModelRequest, ToolChoice};
pub(crate) use turn::blocks_into_deltas;
pub use turn::{AssistantTurn, FinishReason};
