#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
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

pub mod arguments;
pub mod config;
pub mod conversation;
pub mod definition;
pub mod diagnostic;
pub mod discovery;
pub mod engine;
pub mod executor;
pub mod protocol;
pub mod registry;
pub mod request;
pub mod result;
pub mod routing;
mod span;
pub mod stream;
pub mod tool;

pub use definition::{MethodDefinition, MethodExample, ParameterInfo, ToolDefinition};
pub use diagnostic::{Diagnostic, DiagnosticKind, ParseOutcome};
pub use protocol::ToolCallingProtocol;
pub use protocol::vcp::{RequestIdStyle, VcpOptions, VcpProtocol, VcpStreamParser};
pub use request::{Args, ParsedToolRequest, RequestIdSource};
pub use result::{ContentPart, ErrorKind, ExecutionStatus, ToolCallCycleResult, ToolExecutionResult};
pub use span::Span;
pub use tool_calling_macros::{tool, tool_fn};

/// Re-exports for code the macros generate. Not public API: may change at any time.
#[doc(hidden)]
pub mod __private {
    pub use futures;
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
