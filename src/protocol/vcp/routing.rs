//! Routing: which registered method(s) a VCP request targets (see [`route`]).

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::VcpTemplates;
use crate::language::fill;
use crate::request::{Args, Invocation, ToolRequest};
use crate::tools::{CatalogMethod, CatalogTool, ToolCatalog, closest};

/// The argument key naming the method (AIO Hub style) or passed on (VCPToolBox style).
const COMMAND: &str = "command";

/// At most this many suggestions are named in an error.
const MAX_SUGGESTIONS: usize = 3;

/// Keys VCPToolBox uses to steer the host (`archery`: do not wait; `ink`, `river`,
/// `vref`: the host's own). Never passed to a method.
pub const CONTROL_KEYS: [&str; 4] = ["archery", "ink", "river", "vref"];

/// The protocol id under which a method's VCP settings are kept.
const VCP: &str = "vcp";

/// A call of `method` with `args`, control keys taken out: what the executor runs.
fn call_of(method: String, args: &Args) -> Invocation {
    let mut args = args.clone();
    args.retain(|key, _| !CONTROL_KEYS.contains(&key.as_str()));
    Invocation::new(method, args)
}

/// The VCP command alias a method declares (`protocol_config` `"vcp": {"command": …}`).
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::protocol::vcp::command_alias;
/// let write = MethodDefinition::new("write", "Write.").with_protocol_config("vcp", json!({"command": "WriteFile"}));
/// assert_eq!(command_alias(&write.protocol_config), Some("WriteFile"));
/// ```
pub fn command_alias(protocol_config: &serde_json::Map<String, Value>) -> Option<&str> {
    crate::tools::protocol_alias(protocol_config, VCP)
}

/// The settings that declare `alias` as a method's VCP command, for
/// [`MethodDefinition::with_protocol_config`](crate::tools::MethodDefinition::with_protocol_config).
pub fn command_alias_config(alias: &str) -> Value {
    serde_json::json!({ "command": alias })
}

fn alias_of(method: &CatalogMethod) -> Option<&str> {
    command_alias(&method.protocol_config)
}

/// The command a VCP request uses for `method`: its alias if it declares one, else its
/// name.
pub(crate) fn command_of<'m>(name: &'m str, protocol_config: &'m serde_json::Map<String, Value>) -> &'m str {
    command_alias(protocol_config).unwrap_or(name)
}

/// Why a request (or one call of a batch) could not be routed. Its message is written for
/// the model, so that it can correct the name and retry: [`message`](Self::message) in
/// the words of a template set, `Display` in the English one.
///
/// ```
/// use tool_calling::ToolRequest;
/// use tool_calling::protocol::vcp::{RouteError, route};
/// use tool_calling::tools::ToolCatalog;
/// let catalog = ToolCatalog::new();
/// let calls = route(&catalog, &ToolRequest::new("1", "weather"));
/// assert!(matches!(&calls[0], Err(RouteError::UnknownName { name, .. }) if name == "weather"));
/// assert_eq!(route(&catalog, &ToolRequest::new("2", " ")), [Err(RouteError::EmptyToolName)]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteError {
    /// The request has an empty (or blank) `tool_name`.
    EmptyToolName,
    /// `tool_name` matches no tool id, method name or alias.
    UnknownName {
        /// `tool_name` as written.
        name: String,
        /// The closest agent-callable full names and tool ids (closest first; may be empty).
        suggestions: Vec<String>,
    },
    /// `tool_name` is `toolId_something` for a known tool id, but `something` names none
    /// of its methods.
    UnknownMethod {
        /// `tool_name` as written.
        name: String,
        /// The tool id it starts with (the longest, when several match).
        tool: String,
        /// The closest of the tool's agent-callable full names (`toolId_methodName`, or
        /// `toolId_alias`), closest first; may be empty.
        suggestions: Vec<String>,
        /// The full names of the tool's agent-callable methods.
        available: Vec<String>,
    },
    /// `tool_name` is a tool id, but its `command` (or `commandN` in a batch) names none
    /// of its methods.
    UnknownCommand {
        /// The tool id.
        tool: String,
        /// The command as written; a non-string command as JSON text.
        command: String,
        /// The batch index N when the command came from `commandN`.
        batch_index: Option<usize>,
        /// The closest of the tool's agent-callable method names and aliases (may be empty).
        suggestions: Vec<String>,
        /// The commands of the tool's agent-callable methods (alias if declared, else name).
        available: Vec<String>,
    },
    /// `tool_name` is a tool id with several (or no) agent-callable methods, and the request
    /// says neither `command` nor `command1`, `command2`, ….
    MissingCommand {
        /// The tool id.
        tool: String,
        /// The commands of the tool's agent-callable methods (alias if declared, else name).
        available: Vec<String>,
    },
}

impl RouteError {
    /// What to tell the model, in the words of `templates`.
    ///
    /// ```
    /// use tool_calling::Language;
    /// use tool_calling::protocol::vcp::{RouteError, VcpTemplates};
    ///
    /// let error = RouteError::MissingCommand { tool: "calc".into(), available: vec!["add".into(), "sub".into()] };
    /// assert_eq!(
    ///     error.to_string(),
    ///     "Tool `calc` has several methods: add a `command` field naming one of `add` or `sub`."
    /// );
    /// let zh = VcpTemplates::for_language(Language::Zh);
    /// assert!(error.message(&zh).starts_with("工具 `calc` 有多个方法"));
    /// ```
    pub fn message(&self, t: &VcpTemplates) -> String {
        let mut sentences = Vec::with_capacity(3);
        let listing = |tool: &str, available: &[String], sentences: &mut Vec<String>| {
            sentences.push(if available.is_empty() {
                fill(&t.route_no_callable, &[("tool", tool)])
            } else {
                fill(&t.route_tool_methods, &[("tool", tool), ("available", &t.list_all(available))])
            });
        };
        let did_you_mean =
            |suggestions: &[String]| fill(&t.route_did_you_mean, &[("suggestions", &t.list(suggestions))]);
        match self {
            RouteError::EmptyToolName => sentences.push(t.route_no_tool_name.clone()),
            RouteError::UnknownName { name, suggestions } => {
                sentences.push(fill(&t.route_no_match, &[("name", name)]));
                sentences.push(if suggestions.is_empty() {
                    t.route_no_similar.clone()
                } else {
                    did_you_mean(suggestions)
                });
            }
            RouteError::UnknownMethod { name, tool, suggestions, available } => {
                sentences.push(fill(&t.route_no_match, &[("name", name)]));
                if !suggestions.is_empty() {
                    sentences.push(did_you_mean(suggestions));
                }
                listing(tool, available, &mut sentences);
            }
            RouteError::UnknownCommand { tool, command, batch_index, suggestions, available } => {
                let position = batch_index
                    .map(|n| fill(&t.route_batch_position, &[("key", &format!("{COMMAND}{n}"))]))
                    .unwrap_or_default();
                sentences.push(fill(
                    &t.route_no_such_command,
                    &[("tool", tool), ("command", command), ("position", &position)],
                ));
                if !suggestions.is_empty() {
                    sentences.push(did_you_mean(suggestions));
                }
                listing(tool, available, &mut sentences);
            }
            RouteError::MissingCommand { tool, available } => {
                if available.is_empty() {
                    listing(tool, available, &mut sentences);
                } else {
                    sentences.push(fill(
                        &t.route_name_a_command,
                        &[("tool", tool), ("available", &t.list(available))],
                    ));
                }
            }
        }
        sentences.join(&t.sentence_separator)
    }
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(VcpTemplates::english()))
    }
}

impl std::error::Error for RouteError {}

/// Resolves `request` to the method call(s) it targets.
///
/// It resolves a [`ToolRequest`]'s `tool_name` (and `command`,
/// `command1`, `command2`, …) against the [`ToolCatalog`], trying in order:
///
/// 1. **Exact name.** `tool_name` is a method's full name `toolId_methodName`, or
///    `toolId_alias` for its declared VCP command alias. Method names may contain `_`, so
///    this exact lookup comes first. All arguments are passed on.
/// 2. **Tool id + `command`.** `tool_name` is a tool id and `command` names one of its
///    methods (by name, else by VCP alias). `command` is consumed, not passed on.
/// 3. **Batch.** `tool_name` is a tool id, there is no `command`, and `command1`,
///    `command2`, … exist: one call per index N, in ascending order. A key `nameN` (a
///    non-empty prefix followed by the digits of one of the batch indices) goes to call
///    N as `name`; the `commandN` keys are consumed; every other key is shared by all
///    calls (a call's own `nameN` wins over a shared `name`). A call whose command names
///    no method is an error for that call only.
/// 4. **Single-method tool** (VCPToolBox plugins). `tool_name` is a tool id with exactly
///    one agent-callable method: that method, with `command` (if any) passed on as an
///    ordinary argument.
///
/// The older rule "split `tool_name` at its last `_` into tool id and method name" finds
/// nothing rule 1 has not found (a `toolId_method` it could split, rule 1 matches
/// exactly), so it is not tried.
///
/// Details the VCP dialect leaves open, decided here:
///
/// - A batch index N is a canonical decimal number ≥ 1 (`command1`, `command12`; not
///   `command0` or `command01`, which are ordinary shared keys). A key's index is its
///   whole trailing digit run: with batch indices 1 and 2, `file12` is shared, `md5` too.
/// - Rule 2 before rule 4: a single-method tool whose `command` names its method consumes
///   `command`; any other `command` is passed on to the method. Likewise, a single-method
///   tool whose `commandN` name none of its methods gets them as ordinary arguments
///   (rule 4), not as a batch of failing calls.
/// - With an exact name (rule 1), every argument is passed on, `command` included.
/// - The control keys `archery`, `ink`, `river` and `vref` steer the host, not the tool:
///   they stay in the request's arguments for the host to read, and are never passed to a
///   method. (Under any other protocol they are ordinary arguments.)
/// - A method's VCP alias is its `protocol_config` entry `"vcp": {"command": "Alias"}`
///   (the `#[tool_method(vcp_command = "Alias")]` attribute writes it). Within a tool a
///   method's own name wins over another method's alias.
///
/// As a tolerance beyond the dialect, a bare VCP command alias (`WriteFile`) is accepted
/// as `tool_name` when exactly one method in the registry declares it and `tool_name` is
/// not a tool id (a tool id always means rules 2–4).
///
/// Routing only resolves names: it does not check that the method is agent-callable (the
/// executor does, and refuses with a permission error). Only rule 4 and the suggestions in
/// errors look at agent-callability.
///
/// When nothing matches, the [`RouteError`] is written for the model to read and retry: it
/// names the closest agent-callable names (case-insensitive Levenshtein distance, at most
/// three, within `max(3, len / 3)` edits of what the model wrote), or the methods of the
/// tool it named.
///
/// Returns one entry per call: several for a batch request (`command1`, `command2`, …,
/// in ascending order of N), otherwise exactly one. Each entry is the routed call or an
/// error for the model.
///
/// ```
/// use tool_calling::protocol::vcp::route;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::ToolRequest;
/// use tool_calling::tools::MethodDefinition;
///
/// let handler = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let registry = ToolRegistry::new();
/// registry
///     .register(
///         ToolSpec::stateless("calc", "Calculator")
///             .with_method(MethodSpec::new(MethodDefinition::new("add", "Add."), handler))
///             .with_method(MethodSpec::new(MethodDefinition::new("sub", "Subtract."), handler)),
///     )
///     .unwrap();
/// let catalog = registry.catalog();
///
/// // Tool id + command: `command` is consumed.
/// let request = ToolRequest::new("1", "calc").with_arg("command", "add").with_arg("a", "2");
/// let calls = route(&catalog, &request);
/// let call = calls[0].as_ref().unwrap();
/// assert_eq!(call.method, "calc_add");
/// assert_eq!(call.args, ToolRequest::new("", "").with_arg("a", "2").args);
///
/// // A typo: the error names the closest method.
/// let calls = route(&catalog, &ToolRequest::new("2", "calc_ad"));
/// let err = calls[0].as_ref().unwrap_err();
/// assert!(err.to_string().contains("Did you mean `calc_add`"), "{err}");
/// ```
///
/// A batch request: one call per `commandN`, in ascending order of N, each with its own
/// `nameN` arguments (renamed `name`) and the shared ones:
///
/// ```
/// use tool_calling::protocol::vcp::route;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::ToolRequest;
/// use tool_calling::tools::MethodDefinition;
///
/// let handler = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let add = MethodSpec::new(MethodDefinition::new("add", "Add."), handler);
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("calc", "Calculator").with_method(add)).unwrap();
/// let request = ToolRequest::new("1", "calc")
///     .with_arg("command1", "add")
///     .with_arg("command2", "add")
///     .with_arg("a2", "5");
/// let calls = route(&registry.catalog(), &request);
/// let second = calls[1].as_ref().unwrap();
/// assert_eq!(second.method, "calc_add");
/// assert_eq!(second.args["a"], "5");
/// ```
pub fn route(catalog: &ToolCatalog, request: &ToolRequest) -> Vec<Result<Invocation, RouteError>> {
    let name = request.tool_name.as_str();
    let args = &request.args;
    if name.trim().is_empty() {
        return vec![Err(RouteError::EmptyToolName)];
    }
    // Rule 1: exact full name, or `toolId_alias`.
    if catalog.method(name).is_some() {
        return vec![Ok(call_of(name.to_string(), args))];
    }
    if let Some(full_name) = qualified_alias(catalog, name) {
        return vec![Ok(call_of(full_name, args))];
    }
    // Rules 2–4: a tool id.
    if let Some(tool) = catalog.tool(name) {
        return route_tool(tool, args);
    }
    // Rule 1 (tolerance): a bare VCP command alias, unique across the registry.
    if let Some(full_name) = unique_alias(catalog, name) {
        return vec![Ok(call_of(full_name, args))];
    }
    vec![Err(no_match(catalog, name, args))]
}

/// Rules 2–4 for a request whose `tool_name` is the id of `tool`.
fn route_tool(tool: &CatalogTool, args: &Args) -> Vec<Result<Invocation, RouteError>> {
    let mut callable = tool.methods.iter().filter(|m| m.agent_callable);
    let single = match (callable.next(), callable.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    };
    let call = |method: &CatalogMethod, args: &Args| call_of(tool.full_name(method), args);

    if let Some(command) = args.get(COMMAND) {
        // Rule 2.
        if let Some(method) = command.as_str().and_then(|c| find_method(tool, c)) {
            let mut args = args.clone();
            args.shift_remove(COMMAND);
            return vec![Ok(call(method, &args))];
        }
        // Rule 4: `command` is an ordinary argument of the only method.
        if let Some(method) = single {
            return vec![Ok(call(method, args))];
        }
        return vec![Err(unknown_command(tool, &value_text(command), None))];
    }

    let batch = batch_commands(args);
    // Rule 3. For a single-method tool whose `commandN` name none of its methods, the
    // `commandN` are the plugin's own arguments: rule 4 applies instead.
    let batch_names_a_method =
        batch.values().any(|command| command.as_str().and_then(|c| find_method(tool, c)).is_some());
    if !batch.is_empty() && (single.is_none() || batch_names_a_method) {
        return batch
            .iter()
            .map(|(&n, command)| match command.as_str().and_then(|c| find_method(tool, c)) {
                Some(method) => Ok(call(method, &batch_args(args, &batch, n))),
                None => Err(unknown_command(tool, &value_text(command), Some(n))),
            })
            .collect();
    }
    // Rule 4.
    if let Some(method) = single {
        return vec![Ok(call(method, args))];
    }
    vec![Err(RouteError::MissingCommand { tool: tool.tool_id.clone(), available: commands(tool) })]
}

/// The method of `tool` called `name`, else the one whose VCP alias is `name`.
fn find_method<'t>(tool: &'t CatalogTool, name: &str) -> Option<&'t CatalogMethod> {
    tool.methods
        .iter()
        .find(|m| m.name == name)
        .or_else(|| tool.methods.iter().find(|m| alias_of(m) == Some(name)))
}

/// The full name of the method `name` calls as `toolId_alias`: a tool whose id and `_`
/// begin `name`, and one of its methods whose alias is the rest.
fn qualified_alias(catalog: &ToolCatalog, name: &str) -> Option<String> {
    catalog.tools().iter().find_map(|tool| {
        let alias = name.strip_prefix(tool.tool_id.as_str())?.strip_prefix('_')?;
        let method = tool.methods.iter().find(|m| alias_of(m) == Some(alias))?;
        Some(tool.full_name(method))
    })
}

/// The full name of the one method in the registry whose VCP alias is `alias`, if
/// exactly one declares it.
fn unique_alias(catalog: &ToolCatalog, alias: &str) -> Option<String> {
    let mut found = catalog.tools().iter().flat_map(|tool| {
        tool.methods.iter().filter(|m| alias_of(m) == Some(alias)).map(move |m| tool.full_name(m))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A string value as is; any other JSON value as JSON text.
fn value_text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_string)
}

/// The batch index written as `digits`: a canonical decimal number ≥ 1 (no sign, no
/// leading zero).
fn batch_index(digits: &str) -> Option<usize> {
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `key` split into a non-empty prefix and the batch index its trailing digits spell.
fn split_index(key: &str) -> Option<(&str, usize)> {
    let prefix = key.trim_end_matches(|c: char| c.is_ascii_digit());
    if prefix.is_empty() {
        return None;
    }
    let digits = key.strip_prefix(prefix)?;
    Some((prefix, batch_index(digits)?))
}

/// The batch commands `commandN`, by N.
fn batch_commands(args: &Args) -> BTreeMap<usize, &Value> {
    args.iter()
        .filter_map(|(key, value)| match split_index(key) {
            Some((COMMAND, n)) => Some((n, value)),
            _ => None,
        })
        .collect()
}

/// Which call a key of a batch request belongs to.
enum Owner<'a> {
    /// Every call.
    Shared,
    /// Call N, under the key with its digits stripped.
    Call(usize, &'a str),
}

/// Which call `key` belongs to: call N when it ends in the digits of batch index N after a
/// non-empty prefix; otherwise every call.
fn owner_of<'a>(key: &'a str, batch: &BTreeMap<usize, &Value>) -> Owner<'a> {
    match split_index(key) {
        Some((name, n)) if batch.contains_key(&n) => Owner::Call(n, name),
        _ => Owner::Shared,
    }
}

/// The arguments of batch call `n`: its own `nameN` keys renamed `name`, and every key
/// that belongs to no batch call; `commandN` keys are dropped. A call's own key wins over
/// a shared key of the same name. Order of appearance is kept.
fn batch_args(args: &Args, batch: &BTreeMap<usize, &Value>, n: usize) -> Args {
    let own: HashSet<&str> = args
        .keys()
        .filter_map(|key| match owner_of(key, batch) {
            Owner::Call(m, name) if m == n && name != COMMAND => Some(name),
            _ => None,
        })
        .collect();
    let mut out = Args::new();
    for (key, value) in args {
        match owner_of(key, batch) {
            Owner::Call(m, name) if m == n && name != COMMAND => {
                out.insert(name.to_string(), value.clone());
            }
            Owner::Call(..) => {}
            Owner::Shared => {
                if !own.contains(key.as_str()) {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    out
}

/// The commands of `tool`'s agent-callable methods (alias if declared, else name).
fn commands(tool: &CatalogTool) -> Vec<String> {
    tool.callable_methods().map(|m| command_of(&m.name, &m.protocol_config).to_string()).collect()
}

/// The error for a `command` that names no method of `tool`.
fn unknown_command(tool: &CatalogTool, command: &str, batch_index: Option<usize>) -> RouteError {
    let candidates = tool
        .callable_methods()
        .flat_map(|m| std::iter::once(m.name.clone()).chain(alias_of(m).map(str::to_string)));
    RouteError::UnknownCommand {
        tool: tool.tool_id.clone(),
        command: command.to_string(),
        batch_index,
        suggestions: closest(command, candidates, MAX_SUGGESTIONS),
        available: commands(tool),
    }
}

/// The error for a `tool_name` that matched nothing.
///
/// When it starts with a known tool id and `_` (longest such id), the tool is known and
/// the rest names none of its methods: its closest methods are suggested and all listed.
/// Otherwise the closest agent-callable names are suggested: tool ids only when the
/// request has a `command` or `commandN` (it meant a tool id), else tool ids and full
/// method names.
fn no_match(catalog: &ToolCatalog, name: &str, args: &Args) -> RouteError {
    let known = catalog
        .tools()
        .iter()
        .filter_map(|tool| {
            let rest = name.strip_prefix(tool.tool_id.as_str())?.strip_prefix('_')?;
            (!rest.is_empty()).then_some(tool)
        })
        .max_by_key(|tool| tool.tool_id.len());
    if let Some(tool) = known {
        let id = &tool.tool_id;
        let candidates = tool.callable_methods().flat_map(|m| {
            std::iter::once(tool.full_name(m)).chain(alias_of(m).map(|alias| format!("{id}_{alias}")))
        });
        return RouteError::UnknownMethod {
            name: name.to_string(),
            tool: id.clone(),
            suggestions: closest(name, candidates, MAX_SUGGESTIONS),
            available: tool.callable_methods().map(|m| tool.full_name(m)).collect(),
        };
    }
    let wants_tool_id =
        args.keys().any(|key| key == COMMAND || matches!(split_index(key), Some((COMMAND, _))));
    let mut candidates = Vec::new();
    for tool in catalog.tools() {
        let callable: Vec<String> = tool.callable_methods().map(|m| tool.full_name(m)).collect();
        if callable.is_empty() {
            continue;
        }
        candidates.push(tool.tool_id.clone());
        if !wants_tool_id {
            candidates.extend(callable);
        }
    }
    RouteError::UnknownName {
        name: name.to_string(),
        suggestions: closest(name, candidates, MAX_SUGGESTIONS),
    }
}

#[cfg(test)]
mod tests {
    use super::split_index;

    #[test]
    fn batch_keys_need_a_prefix_and_a_canonical_index() {
        assert_eq!(split_index("filePath12"), Some(("filePath", 12)));
        assert_eq!(split_index("command1"), Some(("command", 1)));
        assert_eq!(split_index("path01"), None);
        assert_eq!(split_index("path0"), None);
        assert_eq!(split_index("123"), None);
        assert_eq!(split_index("path"), None);
    }
}
