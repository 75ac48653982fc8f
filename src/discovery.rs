//! The discovery service: which methods exist, and the prompt that offers them (seed
//! 004 §4.3).
//!
//! Discovery reads the [`ToolRegistry`]; it lists agent-callable methods (or what a
//! filter selects) and asks a protocol to write the definitions prompt for the methods
//! an agent's [`ToolCallConfig`] enables. Prompts are cached by protocol id, agent id
//! and a stable hash of the config; the cache is dropped by
//! [`invalidate_cache`](DiscoveryService::invalidate_cache) and whenever a tool is
//! registered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::config::ToolCallConfig;
use crate::registry::ToolRegistry;
use crate::tool::{MethodSpec, ToolMetadata, ToolSpec};
use crate::{MethodDefinition, ToolCallingProtocol, ToolDefinition};

/// A method as discovery reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiscoveredMethod {
    /// Name, description, schema, VCP alias, examples.
    #[serde(flatten)]
    pub definition: MethodDefinition,
    /// Whether models may call it.
    pub agent_callable: bool,
}

/// A tool as discovery reports it.
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

type CacheKey = (String, Option<String>, u64);

/// Selects methods for [`DiscoveryService::discovered_methods`].
pub type MethodFilter<'a> = &'a dyn Fn(&ToolSpec, &MethodSpec) -> bool;

/// Lists tools and writes their prompts, with a cache. `Send + Sync`: share it.
#[derive(Debug)]
pub struct DiscoveryService {
    registry: Arc<ToolRegistry>,
    /// Cached prompts, each with the registry generation it was made from.
    cache: Mutex<HashMap<CacheKey, (u64, Arc<str>)>>,
}

impl DiscoveryService {
    /// Discovery over `registry`.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        DiscoveryService { registry, cache: Mutex::new(HashMap::new()) }
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

    /// The definitions of the agent-callable methods `config` enables (empty when tool
    /// calling is off).
    pub fn enabled_definitions(&self, config: &ToolCallConfig) -> Vec<ToolDefinition> {
        if !config.enabled {
            return Vec::new();
        }
        self.registry
            .tools()
            .iter()
            .filter_map(|tool| {
                let spec = tool.spec();
                let mut definition = ToolDefinition::new(spec.tool_id.clone(), spec.tool_name.clone())
                    .with_description(spec.description.clone());
                definition.methods = spec
                    .methods
                    .iter()
                    .filter(|m| {
                        m.agent_callable && config.is_method_enabled(&spec.tool_id, &m.definition.name)
                    })
                    .map(|m| m.definition.clone())
                    .collect();
                (!definition.methods.is_empty()).then_some(definition)
            })
            .collect()
    }

    /// The definitions prompt `protocol` writes for what `config` enables, cached by
    /// protocol id, `agent_id` and the config's [`prompt_hash`](ToolCallConfig::prompt_hash).
    /// Empty when tool calling is off or nothing is enabled.
    pub fn generate_prompt(
        &self,
        protocol: &dyn ToolCallingProtocol,
        config: &ToolCallConfig,
        agent_id: Option<&str>,
    ) -> Arc<str> {
        let key = (protocol.id().to_string(), agent_id.map(str::to_string), config.prompt_hash());
        let generation = self.registry.generation();
        if let Some((made_at, prompt)) = self.lock().get(&key) {
            if *made_at == generation {
                return prompt.clone();
            }
        }
        let prompt: Arc<str> = protocol.generate_tool_definitions(&self.enabled_definitions(config)).into();
        self.lock().insert(key, (generation, prompt.clone()));
        prompt
    }

    /// Drops every cached prompt (call it when tools' metadata or templates change).
    pub fn invalidate_cache(&self) {
        self.lock().clear();
    }

    /// How many prompts are cached.
    pub fn cached_prompts(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, (u64, Arc<str>)>> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
