//! What is registered, by name: the view a protocol resolves requests against.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

#[cfg(feature = "runtime")]
use super::ToolSpec;

/// A read-only snapshot of the registered tools by name: ids, method names,
/// agent-callability and each method's per-protocol settings, without handlers or
/// schemas.
///
/// A protocol resolves a request's target against it
/// ([`ToolCallingProtocol::resolve`](crate::protocol::ToolCallingProtocol::resolve)); the executor
/// then runs the method by exact name. [`ToolRegistry::catalog`](super::ToolRegistry::catalog)
/// hands out the current snapshot, shared and cheap to take.
///
/// ```
/// use tool_calling::tools::{MethodSpec, ToolCatalog, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::tools::MethodDefinition;
///
/// let handler = |_, _| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as tool_calling::tools::BoxFuture<'static, _>;
/// let registry = ToolRegistry::new();
/// registry
///     .register(ToolSpec::stateless("calc", "Calculator").with_method(MethodSpec::new(MethodDefinition::new("add", "Add."), handler)))
///     .unwrap();
/// let catalog = registry.catalog();
/// let (tool, method) = catalog.method("calc_add").unwrap();
/// assert_eq!((tool.tool_id.as_str(), method.name.as_str()), ("calc", "add"));
/// assert_eq!(catalog.suggest("calc_ad", 3), ["calc_add", "calc"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolCatalog {
    tools: Vec<CatalogTool>,
    by_id: HashMap<String, usize>,
    /// `toolId_methodName` → (tool, method) positions.
    by_full_name: HashMap<String, (usize, usize)>,
}

/// A tool as the catalog lists it.
///
/// ```
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let spec = ToolSpec::stateless("calc", "Calculator")
///     .with_method(MethodSpec::new(MethodDefinition::new("add", "Add."), run))
///     .with_method(MethodSpec::new(MethodDefinition::new("reset", "Reset."), run).agent_callable(false));
/// let registry = ToolRegistry::new();
/// registry.register(spec).unwrap();
/// let catalog = registry.catalog();
/// let tool = catalog.tool("calc").unwrap();
/// assert_eq!(tool.methods.len(), 2);
/// let callable: Vec<String> = tool.callable_methods().map(|m| tool.full_name(m)).collect();
/// assert_eq!(callable, ["calc_add"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogTool {
    /// The tool's id.
    pub tool_id: String,
    /// Every method, agent-callable or not, in registration order.
    pub methods: Vec<CatalogMethod>,
}

/// A method as the catalog lists it.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let write = MethodDefinition::new("write", "Write a file.")
///     .with_protocol_config("vcp", json!({"command": "WriteFile"}));
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("fs", "Files").with_method(MethodSpec::new(write, run))).unwrap();
/// let catalog = registry.catalog();
/// let (_, method) = catalog.method("fs_write").unwrap();
/// assert_eq!(method.name, "write");
/// assert!(method.agent_callable);
/// assert_eq!(method.protocol_config_of("vcp").unwrap()["command"], "WriteFile");
/// assert_eq!(method.parameters["type"], "object");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogMethod {
    /// The method's name (without the tool id).
    pub name: String,
    /// Whether models may call it.
    pub agent_callable: bool,
    /// Its per-protocol settings, by protocol id
    /// ([`MethodDefinition::protocol_config`](crate::tools::MethodDefinition::protocol_config)).
    pub protocol_config: serde_json::Map<String, Value>,
    /// The JSON Schema of its parameters.
    pub parameters: Value,
}

impl CatalogTool {
    /// The agent-callable methods.
    pub fn callable_methods(&self) -> impl Iterator<Item = &CatalogMethod> {
        self.methods.iter().filter(|m| m.agent_callable)
    }

    /// `toolId_methodName` of `method` (the tool id alone for a method named `""`).
    pub fn full_name(&self, method: &CatalogMethod) -> String {
        super::full_name(&self.tool_id, &method.name)
    }
}

impl CatalogMethod {
    /// The settings for `protocol`, if any.
    pub fn protocol_config_of(&self, protocol: &str) -> Option<&Value> {
        self.protocol_config.get(protocol)
    }
}

impl ToolCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// A catalog of tools described by `definitions`, every method agent-callable: what a
    /// host that resolves requests without running them (a gateway that hands calls to
    /// its client) checks names against. A tool id or full name that comes again is
    /// left to its first holder.
    ///
    /// ```
    /// use tool_calling::tools::{MethodDefinition, ToolCatalog, ToolDefinition};
    /// let weather = ToolDefinition::new("get_weather", "get_weather")
    ///     .with_method(MethodDefinition::new("", "The weather in a city."));
    /// let catalog = ToolCatalog::from_definitions(&[weather]);
    /// let (tool, method) = catalog.method("get_weather").unwrap();
    /// assert_eq!((tool.tool_id.as_str(), method.name.as_str()), ("get_weather", ""));
    /// assert!(catalog.method("get_weather_").is_none());
    /// ```
    pub fn from_definitions(definitions: &[super::ToolDefinition]) -> Self {
        let mut catalog = ToolCatalog::new();
        for tool in definitions {
            if catalog.by_id.contains_key(&tool.tool_id) {
                continue;
            }
            catalog.push(&tool.tool_id, tool.methods.iter().map(|m| (m, true)));
        }
        catalog
    }

    /// Adds `spec`'s tool. The registry has checked it: its id is new and its full
    /// names are free.
    #[cfg(feature = "runtime")]
    pub(crate) fn add(&mut self, spec: &ToolSpec) {
        self.push(&spec.tool_id, spec.methods.iter().map(|m| (&m.definition, m.agent_callable)));
    }

    /// Adds a tool of these methods (each with whether models may call it).
    fn push<'d>(
        &mut self,
        tool_id: &str,
        methods: impl Iterator<Item = (&'d super::MethodDefinition, bool)>,
    ) {
        let tool = self.tools.len();
        self.by_id.insert(tool_id.to_string(), tool);
        let methods = methods
            .enumerate()
            .map(|(index, (definition, agent_callable))| {
                self.by_full_name.entry(definition.full_name(tool_id)).or_insert((tool, index));
                CatalogMethod {
                    name: definition.name.clone(),
                    agent_callable,
                    protocol_config: definition.protocol_config.clone(),
                    parameters: definition.parameters.clone(),
                }
            })
            .collect();
        self.tools.push(CatalogTool { tool_id: tool_id.to_string(), methods });
    }

    /// Every tool, in registration order.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// The tool with id `tool_id`.
    pub fn tool(&self, tool_id: &str) -> Option<&CatalogTool> {
        self.by_id.get(tool_id).and_then(|&i| self.tools.get(i))
    }

    /// The method whose full name (`toolId_methodName`) is exactly `full_name`, callable
    /// or not, with its tool.
    pub fn method(&self, full_name: &str) -> Option<(&CatalogTool, &CatalogMethod)> {
        let &(tool, method) = self.by_full_name.get(full_name)?;
        let tool = self.tools.get(tool)?;
        Some((tool, tool.methods.get(method)?))
    }

    /// The agent-callable full names and tool ids closest to `name`, closest first, at
    /// most `limit`: what an error tells a model that misspelled a name.
    pub fn suggest(&self, name: &str, limit: usize) -> Vec<String> {
        let candidates = self.tools.iter().flat_map(|t| {
            let callable: Vec<String> = t.callable_methods().map(|m| t.full_name(m)).collect();
            let id = (!callable.is_empty()).then(|| t.tool_id.clone());
            id.into_iter().chain(callable)
        });
        closest(name, candidates, limit)
    }
}

/// Up to `limit` distinct candidates within `max(3, len / 3)` edits of `query`
/// (case-insensitive, `len` in characters), closest first, ties in candidate order. A
/// query longer than [`MAX_SUGGESTION_QUERY`] characters gets none: no name is that long,
/// and comparing costs the product of the lengths.
///
/// ```
/// use tool_calling::tools::closest;
/// let names = ["calc_sub", "calc_add", "calc", "calc_mul", "zzz_far_away"].map(String::from);
/// assert_eq!(closest("calc_ad", names.clone(), 3), ["calc_add", "calc_sub", "calc"]);
/// assert!(closest("qqqqqqqqqqq", names, 3).is_empty());
/// ```
pub fn closest(query: &str, candidates: impl IntoIterator<Item = String>, limit: usize) -> Vec<String> {
    let length = query.chars().count();
    if length > MAX_SUGGESTION_QUERY {
        return Vec::new();
    }
    let within = (length / 3).max(3);
    let mut seen = HashSet::new();
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .filter(|c| seen.insert(c.clone()))
        .map(|c| (levenshtein(query, &c), c))
        .filter(|(distance, _)| *distance <= within)
        .collect();
    scored.sort_by_key(|(distance, _)| *distance);
    scored.into_iter().take(limit).map(|(_, c)| c).collect()
}

/// The longest name [`closest`] looks for suggestions for, in characters.
pub const MAX_SUGGESTION_QUERY: usize = 256;

/// The Levenshtein distance between `a` and `b`, ignoring case: O(n·m) time, two rows.
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = Vec::with_capacity(b.len() + 1);
    for (i, ca) in a.iter().enumerate() {
        current.clear();
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let diagonal = previous.get(j).map_or(usize::MAX, |d| d.saturating_add(cost));
            let above = previous.get(j + 1).map_or(usize::MAX, |d| d.saturating_add(1));
            let left = current.last().map_or(usize::MAX, |d| d.saturating_add(1));
            current.push(diagonal.min(above).min(left));
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::levenshtein;

    #[test]
    fn levenshtein_distances() {
        assert_eq!(levenshtein("", ""), 0);
        assert_eq!(levenshtein("abc", ""), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("calc_ad", "calc_add"), 1);
        assert_eq!(levenshtein("Calc_Add", "calc_add"), 0);
        assert_eq!(levenshtein("日本語", "日本"), 1);
    }
}
