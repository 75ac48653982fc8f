// The README is the crate's documentation, and its examples are doctests. They use every
// feature, so they are compiled with every feature on (`cargo test --all-features`, and
// docs.rs); with fewer, the crate documents itself in one paragraph instead.
#![cfg_attr(all(feature = "http", feature = "rest", feature = "mcp"), doc = include_str!("../README.md"))]
#![cfg_attr(
    not(all(feature = "http", feature = "rest", feature = "mcp")),
    doc = "Tool calling for LLM agents through text protocols. The full guide (the README) is \
           the crate documentation when every cargo feature is on: `cargo doc --all-features`."
)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::string_slice,
        clippy::panic
    )
)]

// The data that flows between the layers: what a protocol reads out of a reply
// (requests), what running them gives (results), and where things stand in the text.
pub mod config;
#[cfg(any(feature = "http", feature = "rest"))]
mod http;
mod language;
mod python;
pub mod request;
pub mod result;
mod span;

// The layers, in the order data flows through them.
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod engine;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod exec;
pub mod model;
pub mod protocol;
pub mod providers;
pub mod tools;

pub use language::Language;
pub use protocol::vcp::{RequestIdStyle, VcpOptions, VcpProtocol, VcpStreamParser};
pub use protocol::{Diagnostic, DiagnosticKind, ParseOutcome, ToolCallingProtocol};
pub use request::{Args, Invocation, ParsedToolRequest, RequestIdSource};
pub use result::{ContentPart, ErrorKind, ExecutionStatus, ToolError, ToolExecutionResult};
pub use span::Span;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use tool_calling_macros::{tool, tool_fn};
pub use tools::{MethodDefinition, MethodExample, ParameterInfo, ToolDefinition};

/// The names most programs use, in one import.
///
/// ```
/// use tool_calling::prelude::*;
///
/// let outcome: ParseOutcome = VcpProtocol::default().parse("no requests here");
/// assert!(outcome.requests.is_empty());
/// ```
///
/// Without the `runtime` feature it holds the protocol and model types only.
pub mod prelude {
    pub use crate::config::ToolCallConfig;
    pub use crate::model::{
        AssistantTurn, ChatModel, ChatModelError, Conversation, Message, ModelRequest, Role,
    };
    pub use crate::protocol::vcp::{ParseView, RequestView, VcpOptions, VcpProtocol};
    pub use crate::protocol::{
        Diagnostic, DiagnosticKind, ParseOutcome, ToolCallingProtocol, ToolDeclarations,
    };
    pub use crate::{Args, ErrorKind, ParsedToolRequest, Span, ToolError, ToolExecutionResult};

    #[cfg(feature = "runtime")]
    pub use crate::engine::{Engine, EngineError};
    #[cfg(feature = "runtime")]
    pub use crate::exec::{CycleEvent, ExecutionContext};
    #[cfg(feature = "runtime")]
    pub use crate::tools::ToolRegistry;
    #[cfg(feature = "runtime")]
    pub use crate::{tool, tool_fn};

    #[cfg(feature = "http")]
    pub use crate::providers::{HttpChatModel, Provider};
}

/// Support for the code the `#[tool]` and `#[tool_fn]` macros generate: ordinary generic
/// functions, so that the macros only parse attributes and write calls. Not public API:
/// may change at any time.
#[doc(hidden)]
#[cfg(feature = "runtime")]
pub mod __private;
