//! The [`ToolCallingProtocol`] trait and a registry of protocols by id.
//!
//! A protocol decides three things: how tools are presented to the model
//! ([`generate_tool_definitions`](ToolCallingProtocol::generate_tool_definitions)), how
//! the model's requests are read back
//! ([`parse_tool_requests`](ToolCallingProtocol::parse_tool_requests)), and how results
//! are written for the model to read
//! ([`format_tool_results`](ToolCallingProtocol::format_tool_results)). Protocols know
//! nothing of execution: they turn text into requests and results into text.

pub mod vcp;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::stream::IncrementalParser;
use crate::{ParseOutcome, ToolDefinition, ToolExecutionResult};

/// A way for a model to call tools: a prompt format, a request format, a result format.
///
/// The trait is object-safe and requires `Send + Sync`, so an engine can hold
/// `Arc<dyn ToolCallingProtocol>` and share it across tasks. Implement it to plug in a
/// protocol of your own:
///
/// ```
/// use tool_calling::{
///     ParseOutcome, ParsedToolRequest, ToolCallingProtocol, ToolDefinition, ToolExecutionResult,
/// };
///
/// /// One call per line: `CALL tool_name`.
/// struct LineProtocol;
///
/// impl ToolCallingProtocol for LineProtocol {
///     fn id(&self) -> &str {
///         "line"
///     }
///     fn generate_tool_definitions(&self, tools: &[ToolDefinition]) -> String {
///         let names: Vec<String> = tools
///             .iter()
///             .flat_map(|t| t.methods.iter().map(|m| m.full_name(&t.tool_id)))
///             .collect();
///         format!("Write `CALL name` on its own line. Tools: {}", names.join(", "))
///     }
///     fn parse_tool_requests(&self, text: &str) -> ParseOutcome {
///         let requests = text
///             .lines()
///             .filter_map(|l| l.strip_prefix("CALL "))
///             .enumerate()
///             .map(|(i, name)| ParsedToolRequest::new(format!("line_{i}"), name.trim()))
///             .collect();
///         ParseOutcome::new(requests, Vec::new())
///     }
///     fn format_tool_results(&self, results: &[ToolExecutionResult]) -> String {
///         results.iter().map(|r| format!("RESULT {} {}\n", r.tool_name, r.result)).collect()
///     }
/// }
///
/// let protocol: std::sync::Arc<dyn ToolCallingProtocol> = std::sync::Arc::new(LineProtocol);
/// let parsed = protocol.parse_tool_requests("thinking...\nCALL calc_add\n");
/// assert_eq!(parsed.requests[0].tool_name, "calc_add");
/// ```
pub trait ToolCallingProtocol: Send + Sync {
    /// The protocol's id (`"vcp"`, `"openai"`, …), used to look it up.
    fn id(&self) -> &str;

    /// The text that tells the model which tools exist and how to call them (for VCP
    /// a system-prompt section; for native protocols the JSON `tools` value).
    fn generate_tool_definitions(&self, tools: &[ToolDefinition]) -> String;

    /// Finds every tool request in a model reply. Never fails and never panics: damaged
    /// input yields incomplete requests and diagnostics.
    fn parse_tool_requests(&self, text: &str) -> ParseOutcome;

    /// Writes results for the model to read in its next turn.
    fn format_tool_results(&self, results: &[ToolExecutionResult]) -> String;

    /// A parser that reads a reply while it streams in, if the protocol has one. Its
    /// requests and diagnostics must equal what
    /// [`parse_tool_requests`](Self::parse_tool_requests) returns for the whole text.
    /// The default is `None`: an engine then buffers the stream and parses it once at
    /// the end.
    fn incremental_parser(&self) -> Option<Box<dyn IncrementalParser>> {
        None
    }
}

/// Why a protocol could not be registered or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// No protocol with this id is registered.
    #[error("no protocol with id `{id}` is registered (known: {known})")]
    Unknown {
        /// The id looked up.
        id: String,
        /// The registered ids, comma-separated.
        known: String,
    },
    /// A protocol with this id is already registered.
    #[error("a protocol with id `{0}` is already registered")]
    Duplicate(String),
    /// A protocol reported an empty id.
    #[error("a protocol's id must not be empty")]
    EmptyId,
}

/// Protocols by id.
///
/// ```
/// use tool_calling::protocol::ProtocolRegistry;
/// let registry = ProtocolRegistry::with_defaults();
/// assert_eq!(registry.get("vcp").unwrap().id(), "vcp");
/// assert!(registry.get("smoke-signals").is_err());
/// ```
#[derive(Clone, Default)]
pub struct ProtocolRegistry {
    protocols: BTreeMap<String, Arc<dyn ToolCallingProtocol>>,
}

impl std::fmt::Debug for ProtocolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtocolRegistry").field("ids", &self.ids()).finish()
    }
}

impl ProtocolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding the built-in protocols (VCP with default options).
    pub fn with_defaults() -> Self {
        let mut registry = Self::new();
        registry.protocols.insert("vcp".to_string(), Arc::new(vcp::VcpProtocol::default()));
        registry
    }

    /// Registers `protocol` under its own id; refuses a second protocol with the same id.
    pub fn register(&mut self, protocol: Arc<dyn ToolCallingProtocol>) -> Result<(), ProtocolError> {
        let id = protocol.id().to_string();
        if id.is_empty() {
            return Err(ProtocolError::EmptyId);
        }
        if self.protocols.contains_key(&id) {
            return Err(ProtocolError::Duplicate(id));
        }
        self.protocols.insert(id, protocol);
        Ok(())
    }

    /// Registers `protocol`, replacing any protocol with the same id.
    pub fn replace(&mut self, protocol: Arc<dyn ToolCallingProtocol>) -> Result<(), ProtocolError> {
        let id = protocol.id().to_string();
        if id.is_empty() {
            return Err(ProtocolError::EmptyId);
        }
        self.protocols.insert(id, protocol);
        Ok(())
    }

    /// The protocol registered as `id`.
    pub fn get(&self, id: &str) -> Result<Arc<dyn ToolCallingProtocol>, ProtocolError> {
        self.protocols
            .get(id)
            .cloned()
            .ok_or_else(|| ProtocolError::Unknown { id: id.to_string(), known: self.ids().join(", ") })
    }

    /// The registered ids, sorted.
    pub fn ids(&self) -> Vec<&str> {
        self.protocols.keys().map(String::as_str).collect()
    }
}
