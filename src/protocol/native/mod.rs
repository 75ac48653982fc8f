//! Native tool calling: the JSON tool APIs of OpenAI (Chat Completions and Responses),
//! Anthropic and Gemini, as protocols of the same trait as VCP.
//!
//! A native protocol offers tools as the provider's `tools` value, reads requests from
//! the tool calls of an [`AssistantTurn`](crate::model::AssistantTurn), and writes one
//! result per call in the provider's shape, matched by id. Moving turns and messages on
//! and off the wire (request bodies, response bodies, server-sent events) is the
//! provider's wire format's job ([`providers`](crate::providers)).
//!
//! ```
//! use tool_calling::protocol::ToolCallingProtocol;
//! use tool_calling::model::{AssistantTurn, ToolCall};
//! use tool_calling::protocol::native::NativeProtocol;
//!
//! let openai = NativeProtocol::openai_chat();
//! let turn = AssistantTurn::new().with_tool_call(ToolCall::new("call_1", "calc_add", r#"{"a": 2, "b": 40}"#));
//! let parsed = openai.parse_turn(&turn);
//! assert_eq!(parsed.requests[0].request_id, "call_1");
//! assert_eq!(parsed.requests[0].args["b"], 40);
//! ```

mod calls;
mod names;
mod protocol;
pub(crate) mod provider;
pub mod schema;

pub use calls::NativeStreamParser;
pub use names::{NameRule, resolve_wire_name, wire_name};
pub use protocol::NativeProtocol;

use crate::protocol::RequestIdStyle;

/// Options shared by the native protocols.
///
/// ```
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::model::{AssistantTurn, ToolCall};
/// use tool_calling::protocol::RequestIdStyle;
/// use tool_calling::protocol::native::{NativeOptions, NativeProtocol};
/// let options = NativeOptions::default().request_ids(RequestIdStyle::Sequential).strict(true);
/// assert!(options.strict);
/// let gemini = NativeProtocol::gemini().with_options(options);
/// // Gemini may send a call without an id.
/// let turn = AssistantTurn::new().with_tool_call(ToolCall::new("", "calc_add", r#"{"a": 2}"#));
/// let parsed = gemini.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].request_id, "req_1", "the call had no id: one was assigned");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeOptions {
    /// How requests are named when the provider gave a call no id.
    pub request_ids: RequestIdStyle,
    /// Ask for strict schema adherence where the provider offers it (OpenAI `strict`):
    /// schemas are rewritten as strict mode requires (see [`schema::openai_strict`]).
    pub strict: bool,
    /// How deeply a call's arguments may nest (objects and arrays), 64 by default.
    /// Deeper arguments make the request incomplete, so it never runs, with a problem
    /// the model reads and an [`InvalidPayload`](crate::protocol::DiagnosticKind::InvalidPayload)
    /// diagnostic. (A JSON text nested past 128 levels is not read at all.)
    pub max_argument_depth: usize,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions { request_ids: RequestIdStyle::default(), strict: false, max_argument_depth: 64 }
    }
}

impl NativeOptions {
    setters! {
        /// Sets [`max_argument_depth`](Self::max_argument_depth).
        ///
        /// ```
        /// use tool_calling::protocol::native::NativeOptions;
        /// assert_eq!(NativeOptions::default().max_argument_depth, 64);
        /// assert_eq!(NativeOptions::default().max_argument_depth(8).max_argument_depth, 8);
        /// ```
        pub fn max_argument_depth(depth: usize) { self.max_argument_depth = depth }

        /// Sets [`request_ids`](Self::request_ids).
        pub fn request_ids(style: RequestIdStyle) { self.request_ids = style }

        /// Sets [`strict`](Self::strict).
        pub fn strict(on: bool) { self.strict = on }
    }
}
