//! Tool calling for LLM agents over text protocols.
//!
//! A model calls a tool by writing a request into its reply. This crate finds the
//! requests (tolerant of what real models write, and never panicking on it), runs them
//! through your tools with every check first, and writes the results back for the
//! model's next turn. It speaks **VCP**, a plain-text block format any chat model can
//! write; the text formats open-weight models were trained on (Hermes, Mistral,
//! Llama 3, DeepSeek, Kimi K2, GLM, MiniMax, Qwen3-Coder, pythonic); and the native tool
//! calling of OpenAI, Anthropic and Gemini. Each is a [`ToolCallingProtocol`], so tools,
//! the executor and the engine work the same whichever one a model speaks, and a
//! protocol of your own plugs in the same way.
//!
//! # VCP in short
//!
//! A request is a block of `key:「始」value「末」` fields between two markers:
//! `tool_name` names the tool (or `toolId_method`), every other field is an argument.
//! Values may span lines; a value that holds a marker is written between `「始ESCAPE」`
//! and `「末ESCAPE」`. Blocks may stand anywhere in the prose of a reply:
//!
//! ```text
//! <<<[TOOL_REQUEST]>>>
//! tool_name:「始」calc_add「末」,
//! a:「始」2「末」,
//! b:「始」40「末」
//! <<<[END_TOOL_REQUEST]>>>
//! ```
//!
//! Its result goes back as a block of the same shape, with the tool's output in escaped
//! form, so that nothing a tool returns can close the block or forge a request:
//!
//! ```text
//! <<<[TOOL_RESULT]>>>
//! request_id:「始」req_1「末」,
//! tool_name:「始」calc_add「末」,
//! status:「始」success「末」,
//! duration_ms:「始」0「末」,
//! result:「始ESCAPE」42「末ESCAPE」
//! <<<[END_TOOL_RESULT]>>>
//! ```
//!
//! In code, with no cargo feature (the parser and the result writer need no runtime):
//!
//! ```
//! use tool_calling::ToolExecutionResult;
//! use tool_calling::protocol::ToolCallingProtocol;
//! use tool_calling::protocol::vcp::VcpProtocol;
//!
//! let reply = "Let me add them.
//! <<<[TOOL_REQUEST]>>>
//! tool_name:「始」calc_add「末」,
//! a:「始」2「末」,
//! b:「始」40「末」
//! <<<[END_TOOL_REQUEST]>>>";
//! let vcp = VcpProtocol::default();
//! let outcome = vcp.parse(reply);
//! let request = &outcome.requests[0];
//! assert_eq!(request.tool_name, "calc_add");
//! assert_eq!(request.arg_str("b"), Some("40"));
//! assert!(request.complete);
//!
//! // Run the tool (the engine does this for you), then write the result for the model.
//! let result = ToolExecutionResult::success(&request.request_id, "calc_add", "42");
//! let messages = vcp.result_messages(&[result], &outcome.state);
//! let fed_back = messages[0].text();
//! assert!(fed_back.starts_with("<<<[TOOL_RESULT]>>>"));
//! assert!(fed_back.contains("result:「始ESCAPE」42「末ESCAPE」"));
//! ```
//!
//! A damaged block (a value never closed, a missing end marker, prose between fields) is
//! still returned, marked incomplete, with a problem written for the model to read; it
//! is never run. Every irregularity is a [`Diagnostic`] with its kind and byte span.
//! [`protocol::vcp`] has the grammar, every tolerance rule and the options.
//!
//! # The main types
//!
//! | what | types | module |
//! | --- | --- | --- |
//! | a protocol: the prompt or tool list, parsing, results | [`ToolCallingProtocol`], [`ParseOutcome`], [`Diagnostic`] | [`protocol`] |
//! | VCP, whole, borrowed, pulled or streamed | [`VcpProtocol`] (`parse`, `parse_view`, `view_events`, `stream_parser`), [`VcpStreamParser`] | [`protocol::vcp`] |
//! | the open-weight formats | [`TextFormatProtocol`], [`AutoProtocol`] (detects the format) | [`protocol::textfmt`] |
//! | the native APIs | [`NativeProtocol`] (OpenAI Chat and Responses, Anthropic, Gemini) | [`protocol::native`] |
//! | the providers' wire formats: bodies, streamed events, messages to send back | [`Provider`] | [`providers`] |
//! | a request and its result | [`ToolRequest`], [`Invocation`], [`ToolExecutionResult`], [`ToolError`], [`ErrorKind`] | the crate root |
//! | tools | `#[`[`tool`]`]` and `#[`[`tool_fn`]`]`, [`ToolSpec`], [`ToolDefinition`], [`ToolRegistry`] | [`tools`] |
//! | what a tool's JSON Schema says: `$ref` chains, refused references | [`schema::resolve`], [`schema::SchemaError`] | [`schema`] |
//! | running calls: validation, time limits, retries, policy | [`Executor`] | [`exec`] |
//! | a cycle (parse, run, results), a streamed reply, a conversation | [`Engine`] | [`engine`] |
//! | models, messages, turns | [`ChatModel`], [`Conversation`], [`AssistantTurn`] | [`model`] |
//! | HTTP model clients | [`HttpChatModel`] | [`providers`] |
//! | REST endpoints as tools | [`RestTools`] | [`tools::rest`] |
//! | MCP servers' tools, and these tools served over MCP | [`McpServer`], [`McpToolServer`] | [`tools::mcp`], [`exec`] |
//!
//! [`prelude`] imports the names most programs use.
//!
//! # Cargo features
//!
//! | feature | default | adds |
//! | --- | --- | --- |
//! | `runtime` | yes | the tool registry, `#[tool]` and `#[tool_fn]`, argument validation (JSON Schema), the executor and the engine (tokio) |
//! | `http` | no | HTTP model clients for OpenAI-compatible, OpenAI Responses, Anthropic and Gemini APIs (implies `runtime`) |
//! | `rest` | no | REST tools: HTTP endpoints described in TOML or JSON (implies `runtime`) |
//! | `mcp` | no | the tools of MCP servers, and this crate's tools served to MCP clients, through rmcp (implies `runtime`) |
//! | `gateway` | no | the `gateway` module: an OpenAI-compatible server (Chat Completions, Responses, Anthropic Messages) giving tool calling to the model of any Chat Completions server through a text protocol (implies `http`) |
//!
//! Without any feature (`default-features = false`) the crate is the protocols and the
//! model types alone: every parser, prompt and result writer, with no tokio, JSON Schema
//! validator or HTTP stack. Items that need a feature say which one.
//!
//! The [`guide`] has a chapter a job: reading replies, VCP, tools, the engine, the native
//! APIs, the open-model formats, grammars, the gateway, the tester, limits and speed,
//! each with examples that run as doctests.
//!
//! [`AutoProtocol`]: protocol::textfmt::AutoProtocol
//! [`TextFormatProtocol`]: protocol::textfmt::TextFormatProtocol
//! [`NativeProtocol`]: protocol::native::NativeProtocol
//! [`Provider`]: providers::Provider
//! [`ToolCallingProtocol`]: protocol::ToolCallingProtocol
//! [`ParseOutcome`]: protocol::ParseOutcome
//! [`Diagnostic`]: protocol::Diagnostic
//! [`VcpProtocol`]: protocol::vcp::VcpProtocol
//! [`VcpStreamParser`]: protocol::vcp::VcpStreamParser
//! [`ToolDefinition`]: tools::ToolDefinition
//! [`ToolSpec`]: tools::ToolSpec
//! [`ChatModel`]: model::ChatModel
//! [`Conversation`]: model::Conversation
//! [`AssistantTurn`]: model::AssistantTurn
// The items behind a feature are linked when it is on, and point to the table above
// when it is off, so that the page reads the same with any feature set.
#![cfg_attr(feature = "runtime", doc = "[`tool`]: macro@crate::tool")]
#![cfg_attr(feature = "runtime", doc = "[`tool_fn`]: macro@crate::tool_fn")]
#![cfg_attr(feature = "runtime", doc = "[`ToolRegistry`]: tools::ToolRegistry")]
#![cfg_attr(feature = "runtime", doc = "[`Executor`]: exec::Executor")]
#![cfg_attr(feature = "runtime", doc = "[`exec`]: exec")]
#![cfg_attr(feature = "runtime", doc = "[`Engine`]: engine::Engine")]
#![cfg_attr(feature = "runtime", doc = "[`engine`]: engine")]
#![cfg_attr(not(feature = "runtime"), doc = "[`tool`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`tool_fn`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`ToolRegistry`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`Executor`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`exec`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`Engine`]: #cargo-features")]
#![cfg_attr(not(feature = "runtime"), doc = "[`engine`]: #cargo-features")]
#![cfg_attr(feature = "http", doc = "[`HttpChatModel`]: providers::HttpChatModel")]
#![cfg_attr(not(feature = "http"), doc = "[`HttpChatModel`]: #cargo-features")]
#![cfg_attr(feature = "rest", doc = "[`RestTools`]: tools::rest::RestTools")]
#![cfg_attr(feature = "rest", doc = "[`tools::rest`]: tools::rest")]
#![cfg_attr(not(feature = "rest"), doc = "[`RestTools`]: #cargo-features")]
#![cfg_attr(not(feature = "rest"), doc = "[`tools::rest`]: #cargo-features")]
#![cfg_attr(feature = "mcp", doc = "[`McpServer`]: tools::mcp::McpServer")]
#![cfg_attr(feature = "mcp", doc = "[`McpToolServer`]: exec::McpToolServer")]
#![cfg_attr(feature = "mcp", doc = "[`tools::mcp`]: tools::mcp")]
#![cfg_attr(not(feature = "mcp"), doc = "[`McpServer`]: #cargo-features")]
#![cfg_attr(not(feature = "mcp"), doc = "[`McpToolServer`]: #cargo-features")]
#![cfg_attr(not(feature = "mcp"), doc = "[`tools::mcp`]: #cargo-features")]
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

/// `Display` for a type that has a name for each value: the name its method `$name`
/// gives (`as_str`, `id`).
macro_rules! display_by_name {
    ($type:ty, $name:ident) => {
        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.$name())
            }
        }
    };
}

/// Builder setters, each `#[must_use]`: `pub fn name(arg: T) { self.field = value }` is
/// a method that takes `self` and `arg`, sets `field` to `value` and returns `self`.
macro_rules! setters {
    ($($(#[$meta:meta])* $vis:vis fn $method:ident($arg:ident: $ty:ty) { self.$field:ident = $value:expr })*) => {
        $(
            $(#[$meta])*
            #[must_use]
            $vis fn $method(mut self, $arg: $ty) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}

// The data that flows between the layers: what a protocol reads out of a reply
// (requests), what running them gives (results), and where things stand in the text.
pub mod config;
#[cfg(any(feature = "http", feature = "rest"))]
mod http;
mod language;
mod python;
mod request;
mod result;
pub mod schema;
mod span;

// The layers, in the order data flows through them.
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod engine;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod exec;
#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;
pub mod grammar;
pub mod model;
pub mod protocol;
pub mod providers;
pub mod tools;

pub use language::Language;
pub use request::{Args, Invocation, RequestIdSource, ToolRequest};
pub use result::{ContentPart, ErrorKind, ExecutionStatus, ToolError, ToolExecutionResult};
pub use span::Span;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use tool_calling_macros::{tool, tool_fn};

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
    pub use crate::{Args, ErrorKind, Span, ToolError, ToolExecutionResult, ToolRequest};

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

/// The guide's chapters (rendered in the docs; their examples run as doctests with every
/// feature on, as the README's do).
#[cfg(any(doc, all(doctest, feature = "gateway", feature = "rest", feature = "mcp")))]
pub mod guide;

/// The README's examples, compiled and run as doctests. They use every feature, so they
/// are tested with every feature on (`cargo test --all-features`).
#[cfg(all(doctest, feature = "http", feature = "rest", feature = "mcp"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
