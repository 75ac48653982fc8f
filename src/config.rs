//! `ToolCallConfig`: how an agent uses tools.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether the host runs tool calls by itself or asks first.
///
/// ```
/// use tool_calling::config::{ToolCallConfig, ToolCallMode};
///
/// assert_eq!(ToolCallConfig::default().mode, ToolCallMode::Auto);
/// // In a config file the mode is written in snake case.
/// let config: ToolCallConfig = serde_json::from_str(r#"{"mode": "manual"}"#).unwrap();
/// assert_eq!(config.mode, ToolCallMode::Manual);
/// assert_eq!(serde_json::to_string(&ToolCallMode::Auto).unwrap(), r#""auto""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolCallMode {
    /// Calls run as the model makes them.
    #[default]
    Auto,
    /// The host decides each call.
    Manual,
}

/// The tool-calling settings of one agent. Every field has a default, so a config can
/// be read from partial JSON.
///
/// ```
/// use tool_calling::config::ToolCallConfig;
/// let config: ToolCallConfig = serde_json::from_str(r#"{"tool_toggles": {"calc_divide": false}}"#).unwrap();
/// assert!(config.enabled);
/// assert!(config.is_method_enabled("calc", "add"));
/// assert!(!config.is_method_enabled("calc", "divide"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolCallConfig {
    /// The master switch.
    pub enabled: bool,
    /// Automatic or manual execution.
    pub mode: ToolCallMode,
    /// Per-method (`toolId_methodName`) or per-tool (`toolId`) switches; the method's
    /// own switch wins over its tool's.
    pub tool_toggles: BTreeMap<String, bool>,
    /// Whether tools not named in `tool_toggles` are enabled.
    pub default_tool_enabled: bool,
    /// The most model turns one conversation loop may take.
    pub max_iterations: u32,
    /// Default time limit of one call, in milliseconds.
    pub timeout_ms: u64,
    /// Ask before every call.
    pub require_confirmation: bool,
    /// Run the calls of one reply in parallel.
    pub parallel_execution: bool,
    /// The id of the protocol the agent speaks (`"vcp"`, …), looked up in the engine's
    /// protocols; `None` (the default) for the engine's default protocol.
    pub protocol: Option<String>,
    /// A grammar to send with every model request of a conversation loop, built by the
    /// protocol for the tools offered (see [`grammar`](crate::grammar)); `None` (the
    /// default) sends none. The grammar follows the turn: its scope is the one of a
    /// turn that must call (the first, or any turn that does not follow tool results),
    /// and a turn after tool results gets [`Scope::Reply`](crate::grammar::Scope::Reply),
    /// so that the model can answer in plain text.
    pub grammar: Option<crate::grammar::Constraint>,
}

impl Default for ToolCallConfig {
    fn default() -> Self {
        ToolCallConfig {
            enabled: true,
            mode: ToolCallMode::Auto,
            tool_toggles: BTreeMap::new(),
            default_tool_enabled: true,
            max_iterations: 10,
            timeout_ms: 30_000,
            require_confirmation: false,
            parallel_execution: true,
            protocol: None,
            grammar: None,
        }
    }
}

impl ToolCallConfig {
    /// The definitions of the agent-callable methods of `registry` this config enables
    /// (none when tool calling is off), from which a protocol writes what the model is
    /// shown. A tool left with no enabled method is not offered.
    ///
    /// ```
    /// use tool_calling::config::ToolCallConfig;
    /// use tool_calling::tools::ToolRegistry;
    /// assert!(ToolCallConfig::default().enabled_definitions(&ToolRegistry::new()).is_empty());
    /// ```
    #[cfg(feature = "runtime")]
    #[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
    pub fn enabled_definitions(
        &self,
        registry: &crate::tools::ToolRegistry,
    ) -> Vec<crate::tools::ToolDefinition> {
        if !self.enabled {
            return Vec::new();
        }
        registry
            .tools()
            .iter()
            .filter_map(|tool| {
                let spec = tool.spec();
                let mut definition =
                    crate::tools::ToolDefinition::new(spec.tool_id.clone(), spec.tool_name.clone())
                        .with_description(spec.description.clone());
                definition.methods = spec
                    .methods
                    .iter()
                    .filter(|m| m.agent_callable && self.is_method_enabled(&spec.tool_id, &m.definition.name))
                    .map(|m| m.definition.clone())
                    .collect();
                (!definition.methods.is_empty()).then_some(definition)
            })
            .collect()
    }

    /// Whether `toolId_methodName` is switched on: its own toggle, else its tool's,
    /// else `default_tool_enabled`.
    pub fn is_method_enabled(&self, tool_id: &str, method: &str) -> bool {
        self.tool_toggles
            .get(&crate::tools::full_name(tool_id, method))
            .or_else(|| self.tool_toggles.get(tool_id))
            .copied()
            .unwrap_or(self.default_tool_enabled)
    }

    /// Sets a toggle (`toolId_methodName` or `toolId`).
    #[must_use]
    pub fn with_toggle(mut self, key: impl Into<String>, enabled: bool) -> Self {
        self.tool_toggles.insert(key.into(), enabled);
        self
    }

    setters! {
        /// Sets `default_tool_enabled`.
        pub fn with_default_tool_enabled(enabled: bool) { self.default_tool_enabled = enabled }

        /// Sets the protocol id.
        pub fn with_protocol(protocol: impl Into<String>) { self.protocol = Some(protocol.into()) }

        /// Sets `enabled`.
        pub fn with_enabled(enabled: bool) { self.enabled = enabled }

        /// Sets `mode`.
        pub fn with_mode(mode: ToolCallMode) { self.mode = mode }

        /// Sets `max_iterations`.
        pub fn with_max_iterations(turns: u32) { self.max_iterations = turns }

        /// Sets `timeout_ms`.
        pub fn with_timeout_ms(ms: u64) { self.timeout_ms = ms }

        /// Sets `require_confirmation`.
        pub fn with_require_confirmation(on: bool) { self.require_confirmation = on }

        /// Sets `parallel_execution`.
        pub fn with_parallel_execution(on: bool) { self.parallel_execution = on }

        /// Sets the grammar sent with each model request (see [`grammar`](Self::grammar)).
        ///
        /// ```
        /// use tool_calling::config::ToolCallConfig;
        /// use tool_calling::grammar::{Constraint, Dialect, Scope};
        /// let config = ToolCallConfig::default().with_grammar(Constraint::new(Dialect::Gbnf, Scope::Call));
        /// assert_eq!(config.grammar.unwrap().scope, Scope::Call);
        /// ```
        pub fn with_grammar(constraint: crate::grammar::Constraint) { self.grammar = Some(constraint) }
    }

    /// A hash of the settings that change what a prompt holds (`enabled`, toggles,
    /// `default_tool_enabled`), the same for equal settings whatever their order.
    pub fn prompt_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.enabled.hash(&mut hasher);
        self.default_tool_enabled.hash(&mut hasher);
        self.tool_toggles.hash(&mut hasher);
        hasher.finish()
    }
}
