//! Protocols by id: how an engine (or a host) picks the protocol an agent's config
//! names, and the one table of the built-in protocols ([`ProtocolRegistry::builtin`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::RequestIdStyle;
use super::ToolCallingProtocol;
use super::native::{NativeOptions, NativeProtocol};
use super::textfmt::{AutoProtocol, TextFormat, TextFormatOptions, TextFormatProtocol};
use super::vcp::{VcpOptions, VcpProtocol};

/// Why a protocol could not be registered or found.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// use tool_calling::protocol::{ProtocolError, ProtocolRegistry};
/// let mut registry = ProtocolRegistry::new();
/// registry.register(Arc::new(VcpProtocol::default())).unwrap();
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
/// assert_eq!(registry.get("hermes").unwrap().id(), "hermes");
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

    /// A registry holding every built-in protocol ([`builtin_ids`](Self::builtin_ids))
    /// with default options.
    pub fn with_defaults() -> Self {
        Self::with_builtins(&BuiltinOptions::default())
    }

    /// A registry holding every built-in protocol, built with `options`.
    ///
    /// ```
    /// use tool_calling::protocol::{BuiltinOptions, ProtocolRegistry};
    /// let registry = ProtocolRegistry::with_builtins(&BuiltinOptions::default());
    /// assert_eq!(registry.ids().len(), ProtocolRegistry::builtin_ids().len());
    /// ```
    pub fn with_builtins(options: &BuiltinOptions) -> Self {
        let mut registry = Self::new();
        for id in Self::builtin_ids() {
            if let Ok(protocol) = Self::builtin(id, options) {
                registry.protocols.insert(id.to_string(), protocol.into_protocol());
            }
        }
        registry
    }

    /// The ids of the built-in protocols: `vcp`, the native APIs (`openai`,
    /// `openai_responses`, `anthropic`, `gemini`), the open-model text formats
    /// ([`TextFormat::ALL`], `hermes` …) and `auto`, in that order.
    ///
    /// ```
    /// use tool_calling::protocol::ProtocolRegistry;
    /// let ids = ProtocolRegistry::builtin_ids();
    /// assert_eq!(ids.first(), Some(&"vcp"));
    /// assert!(ids.contains(&"openai_responses") && ids.contains(&"kimi_k2"));
    /// assert_eq!(ids.last(), Some(&"auto"));
    /// ```
    pub fn builtin_ids() -> Vec<&'static str> {
        let mut ids = vec![VCP];
        ids.extend(NativeProtocol::ids());
        ids.extend(TextFormat::ALL.map(TextFormat::id));
        ids.push(AUTO);
        ids
    }

    /// The built-in protocol `id` ([`builtin_ids`](Self::builtin_ids)), built with
    /// `options`, as its own type: a host that needs more than the trait (VCP's borrowed
    /// views, for one) gets it from here too.
    ///
    /// ```
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::model::AssistantTurn;
    /// use tool_calling::protocol::{BuiltinOptions, BuiltinProtocol, ProtocolRegistry, RequestIdStyle};
    ///
    /// let options = BuiltinOptions::default().request_ids(RequestIdStyle::Sequential);
    /// let hermes = ProtocolRegistry::builtin("hermes", &options).unwrap();
    /// assert!(matches!(hermes, BuiltinProtocol::TextFormat(_)));
    /// let reply = AssistantTurn::from_text(r#"<tool_call>{"name": "clock", "arguments": {}}</tool_call>"#);
    /// let parsed = hermes.as_protocol().parse_turn(&reply);
    /// assert_eq!(parsed.requests[0].request_id, "req_1");
    ///
    /// let gemini = ProtocolRegistry::builtin("gemini", &options).unwrap();
    /// assert!(matches!(gemini, BuiltinProtocol::Native(_)));
    ///
    /// let err = ProtocolRegistry::builtin("smoke-signals", &options).unwrap_err();
    /// assert!(err.to_string().starts_with("no protocol with id `smoke-signals` is registered (known: vcp, openai, "));
    /// ```
    pub fn builtin(id: &str, options: &BuiltinOptions) -> Result<BuiltinProtocol, ProtocolError> {
        let vcp = || VcpProtocol::new(options.vcp);
        Ok(match id {
            VCP => BuiltinProtocol::Vcp(vcp()),
            AUTO => {
                BuiltinProtocol::Auto(AutoProtocol::new().with_options(options.text_formats).with_vcp(vcp()))
            }
            other => match (NativeProtocol::from_id(other), TextFormat::from_id(other)) {
                (Some(native), _) => BuiltinProtocol::Native(native.with_options(options.native)),
                (None, Some(format)) => BuiltinProtocol::TextFormat(
                    TextFormatProtocol::new(format).with_options(options.text_formats),
                ),
                (None, None) => {
                    return Err(ProtocolError::Unknown {
                        id: id.to_string(),
                        known: Self::builtin_ids().join(", "),
                    });
                }
            },
        })
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

const VCP: &str = "vcp";
const AUTO: &str = "auto";

/// The options [`ProtocolRegistry::builtin`] builds a protocol with: one set per family
/// of protocols, each the family's own default unless set.
///
/// ```
/// use tool_calling::protocol::{BuiltinOptions, RequestIdStyle};
/// use tool_calling::protocol::vcp::VcpOptions;
/// let options = BuiltinOptions::default()
///     .vcp(VcpOptions::default().fuzzy_markers(true))
///     .request_ids(RequestIdStyle::Sequential);
/// assert!(options.vcp.fuzzy_markers);
/// assert_eq!(options.vcp.request_ids, RequestIdStyle::Sequential);
/// assert_eq!(options.native.request_ids, RequestIdStyle::Sequential);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BuiltinOptions {
    /// For `vcp` (and the VCP side of `auto`).
    pub vcp: VcpOptions,
    /// For the open-model text formats (and their side of `auto`).
    pub text_formats: TextFormatOptions,
    /// For the native APIs.
    pub native: NativeOptions,
}

impl BuiltinOptions {
    /// Sets [`vcp`](Self::vcp).
    #[must_use]
    pub fn vcp(mut self, options: VcpOptions) -> Self {
        self.vcp = options;
        self
    }

    /// Sets [`text_formats`](Self::text_formats).
    #[must_use]
    pub fn text_formats(mut self, options: TextFormatOptions) -> Self {
        self.text_formats = options;
        self
    }

    /// Sets [`native`](Self::native).
    #[must_use]
    pub fn native(mut self, options: NativeOptions) -> Self {
        self.native = options;
        self
    }

    /// Sets whether replies start inside reasoning the prompt opened, for every text
    /// protocol (VCP, the formats, `auto`): what
    /// [`ModelCapabilities::starts_in_reasoning`](crate::protocol::ModelCapabilities::starts_in_reasoning)
    /// says of a model.
    ///
    /// ```
    /// use tool_calling::protocol::ModelProfiles;
    /// use tool_calling::protocol::{BuiltinOptions, ProtocolRegistry};
    /// let model = ModelProfiles::builtin().lookup("baidu/ERNIE-4.5-21B-A3B-Thinking");
    /// assert!(model.starts_in_reasoning);
    /// let options = BuiltinOptions::default().starts_in_reasoning(model.starts_in_reasoning);
    /// let ernie = ProtocolRegistry::builtin("ernie45", &options).unwrap().into_protocol();
    /// let reply = "The user wants the time.\n</think>\n\nIt is noon.";
    /// assert_eq!(ernie.parse_turn(&tool_calling::model::AssistantTurn::from_text(reply)).normal_text, "\n\nIt is noon.");
    /// ```
    #[must_use]
    pub fn starts_in_reasoning(mut self, on: bool) -> Self {
        self.vcp = self.vcp.starts_in_reasoning(on);
        self.text_formats = self.text_formats.starts_in_reasoning(on);
        self
    }

    /// Sets how every family names requests the model gave no id.
    #[must_use]
    pub fn request_ids(mut self, style: RequestIdStyle) -> Self {
        self.vcp = self.vcp.request_ids(style);
        self.text_formats = self.text_formats.request_ids(style);
        self.native = self.native.request_ids(style);
        self
    }
}

/// A built-in protocol ([`ProtocolRegistry::builtin`]), as its own type.
///
/// ```
/// use tool_calling::protocol::{BuiltinOptions, BuiltinProtocol, ProtocolRegistry};
/// let vcp = ProtocolRegistry::builtin("vcp", &BuiltinOptions::default()).unwrap();
/// let BuiltinProtocol::Vcp(protocol) = &vcp else { unreachable!() };
/// assert_eq!(protocol.parse_view("no requests").requests.len(), 0);
/// assert_eq!(vcp.id(), "vcp");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum BuiltinProtocol {
    /// `vcp`.
    Vcp(VcpProtocol),
    /// One of the open-model text formats.
    TextFormat(TextFormatProtocol),
    /// `auto`: VCP or any text format, detected.
    Auto(AutoProtocol),
    /// `openai`, `openai_responses`, `anthropic` or `gemini`: a provider's native API.
    Native(NativeProtocol),
}

impl BuiltinProtocol {
    /// The protocol's id.
    pub fn id(&self) -> &str {
        self.as_protocol().id()
    }

    /// The protocol, as the trait.
    pub fn as_protocol(&self) -> &dyn ToolCallingProtocol {
        match self {
            BuiltinProtocol::Vcp(p) => p,
            BuiltinProtocol::TextFormat(p) => p,
            BuiltinProtocol::Auto(p) => p,
            BuiltinProtocol::Native(p) => p,
        }
    }

    /// The protocol, shared (what an engine holds).
    pub fn into_protocol(self) -> Arc<dyn ToolCallingProtocol> {
        match self {
            BuiltinProtocol::Vcp(p) => Arc::new(p),
            BuiltinProtocol::TextFormat(p) => Arc::new(p),
            BuiltinProtocol::Auto(p) => Arc::new(p),
            BuiltinProtocol::Native(p) => Arc::new(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_id_builds_the_protocol_of_that_id() {
        let options = BuiltinOptions::default();
        let ids = ProtocolRegistry::builtin_ids();
        let native = NativeProtocol::ids();
        assert_eq!(ids.len(), 2 + native.len() + TextFormat::ALL.len());
        for id in &ids {
            let protocol = ProtocolRegistry::builtin(id, &options).unwrap();
            assert_eq!(protocol.id(), *id);
            assert_eq!(protocol.clone().into_protocol().id(), *id);
            assert_eq!(matches!(protocol, BuiltinProtocol::Native(_)), native.contains(id), "{id}");
        }
        let registry = ProtocolRegistry::with_defaults();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(registry.ids(), sorted);
    }

    #[test]
    fn options_reach_the_protocols() {
        let options = BuiltinOptions::default().request_ids(RequestIdStyle::Sequential);
        let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>";
        for id in ["vcp", "auto"] {
            let protocol = ProtocolRegistry::builtin(id, &options).unwrap();
            assert_eq!(
                protocol.as_protocol().parse_turn(&crate::model::AssistantTurn::from_text(reply)).requests[0]
                    .request_id,
                "req_1",
                "{id}"
            );
        }
        let mistral = ProtocolRegistry::builtin("mistral", &options).unwrap();
        let parsed = mistral.as_protocol().parse_turn(&crate::model::AssistantTurn::from_text(
            r#"[TOOL_CALLS][{"name": "clock", "arguments": {}}]"#,
        ));
        assert_eq!(parsed.requests[0].request_id, "req_1");
    }
}
