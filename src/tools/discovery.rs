//! The discovery service: which methods exist, and which an agent may be offered.
//!
//! Discovery reads the [`ToolRegistry`]: it lists agent-callable methods (or what a
//! filter selects). Which definitions an agent is offered is its config's to say
//! ([`ToolCallConfig::enabled_definitions`](crate::config::ToolCallConfig::enabled_definitions)).

use std::sync::Arc;

use serde::Serialize;

use super::registry::ToolRegistry;
use super::spec::{MethodSpec, ToolMetadata, ToolSpec};
use crate::tools::MethodDefinition;

/// A method as discovery reports it.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, DiscoveryService, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let spec = ToolSpec::stateless("db", "Database")
///     .with_method(MethodSpec::new(MethodDefinition::new("query", "Run a query."), run))
///     .with_method(MethodSpec::new(MethodDefinition::new("vacuum", "Compact."), run).agent_callable(false));
/// let registry = ToolRegistry::new();
/// registry.register(spec).unwrap();
/// let discovery = DiscoveryService::new(Arc::new(registry));
/// // Every method, agent-callable or not, with a filter that keeps all.
/// let methods = &discovery.discovered_methods(Some(&|_, _| true))[0].methods;
/// assert_eq!(methods[0].definition.name, "query");
/// assert!(methods[0].agent_callable && !methods[1].agent_callable);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiscoveredMethod {
    /// Name, description, schema, per-protocol settings, examples.
    #[serde(flatten)]
    pub definition: MethodDefinition,
    /// Whether models may call it.
    pub agent_callable: bool,
}

/// A tool as discovery reports it.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{
///     ArgMap, BoxFuture, DiscoveryService, MethodSpec, ToolMetadata, ToolOutput, ToolRegistry, ToolSpec,
/// };
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("12:00".into())) }) as BoxFuture<'static, _>;
/// let spec = ToolSpec::stateless("clock", "Clock")
///     .with_description("Tells the time.")
///     .with_metadata(ToolMetadata::default().with_category("time"))
///     .with_method(MethodSpec::new(MethodDefinition::new("now", "The current time."), run));
/// let registry = ToolRegistry::new();
/// registry.register(spec).unwrap();
/// let tools = DiscoveryService::new(Arc::new(registry)).discovered_methods(None);
/// assert_eq!((tools[0].tool_id.as_str(), tools[0].tool_name.as_str()), ("clock", "Clock"));
/// assert_eq!(tools[0].metadata.category.as_deref(), Some("time"));
/// assert_eq!(tools[0].methods.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiscoveredTool {
    /// The tool id.
    pub tool_id: String,
    /// The display name.
    pub tool_name: String,
    /// What it is for.
    pub description: String,
    /// Category, tags, version, documentation.
    pub metadata: ToolMetadata,
    /// The methods selected.
    pub methods: Vec<DiscoveredMethod>,
}

/// Selects methods for [`DiscoveryService::discovered_methods`].
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{
///     ArgMap, BoxFuture, DiscoveryService, MethodFilter, MethodSpec, ToolOutput, ToolRegistry, ToolSpec,
/// };
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let spec = ToolSpec::stateless("fs", "Files")
///     .with_method(MethodSpec::new(MethodDefinition::new("read", "Read a file."), run))
///     .with_method(MethodSpec::new(MethodDefinition::new("delete", "Delete a file."), run));
/// let registry = ToolRegistry::new();
/// registry.register(spec).unwrap();
/// let read_only: MethodFilter = &|_, method| method.name() != "delete";
/// let tools = DiscoveryService::new(Arc::new(registry)).discovered_methods(Some(read_only));
/// assert_eq!(tools[0].methods.len(), 1);
/// assert_eq!(tools[0].methods[0].definition.name, "read");
/// ```
pub type MethodFilter<'a> = &'a dyn Fn(&ToolSpec, &MethodSpec) -> bool;

/// Lists tools, and the definitions an agent may be offered. `Send + Sync`: share it.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::{DiscoveryService, ToolRegistry};
/// let discovery = DiscoveryService::new(Arc::new(ToolRegistry::new()));
/// assert!(discovery.discovered_methods(None).is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct DiscoveryService {
    registry: Arc<ToolRegistry>,
}

impl DiscoveryService {
    /// Discovery over `registry`.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        DiscoveryService { registry }
    }

    /// The registry it reads.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// Tools and their methods: the agent-callable ones, or those `filter` selects.
    /// Tools left with no method are omitted.
    pub fn discovered_methods(&self, filter: Option<MethodFilter<'_>>) -> Vec<DiscoveredTool> {
        self.registry
            .tools()
            .iter()
            .filter_map(|tool| {
                let spec = tool.spec();
                let methods: Vec<DiscoveredMethod> = spec
                    .methods
                    .iter()
                    .filter(|m| filter.map_or(m.agent_callable, |f| f(spec, m)))
                    .map(|m| DiscoveredMethod {
                        definition: m.definition.clone(),
                        agent_callable: m.agent_callable,
                    })
                    .collect();
                (!methods.is_empty()).then(|| DiscoveredTool {
                    tool_id: spec.tool_id.clone(),
                    tool_name: spec.tool_name.clone(),
                    description: spec.description.clone(),
                    metadata: spec.metadata.clone(),
                    methods,
                })
            })
            .collect()
    }
}
