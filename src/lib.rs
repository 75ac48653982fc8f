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

pub mod definition;
pub mod diagnostic;
pub mod protocol;
pub mod request;
pub mod result;
mod span;

pub use definition::{MethodDefinition, MethodExample, ParameterInfo, ToolDefinition};
pub use diagnostic::{Diagnostic, DiagnosticKind, ParseOutcome};
pub use protocol::ToolCallingProtocol;
pub use protocol::vcp::{RequestIdStyle, VcpOptions, VcpProtocol};
pub use request::{Args, ParsedToolRequest, RequestIdSource};
pub use result::{ErrorKind, ExecutionStatus, ToolCallCycleResult, ToolExecutionResult};
pub use span::Span;
