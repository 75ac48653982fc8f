//! Protocols by id: how an engine (or a host) picks the protocol an agent's config
//! names.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ToolCallingProtocol;

/// Why a protocol could not be registered or found.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::VcpProtocol;
/// use tool_calling::protocol::{ProtocolError, ProtocolRegistry};
/// let mut registry = ProtocolRegistry::with_defaults();
/// let again = registry.register(Arc::new(VcpProtocol::default()));
/// assert_eq!(again, Err(ProtocolError::Duplicate("vcp".to_owned())));
/// let err = registry.get("smoke-signals").err().unwrap();
/// assert!(matches!(&err, ProtocolError::Unknown { known, .. } if known == "vcp"));
/// assert_eq!(err.to_string(), "no protocol with id `smoke-signals` is registered (known: vcp)");
/// ```
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
        registry.protocols.insert("vcp".to_string(), Arc::new(super::vcp::VcpProtocol::default()));
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
