//! The tool registry: where tools are registered, checked, and looked up.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::Value;

use super::arguments::ArgumentValidator;
use super::catalog::ToolCatalog;
use super::spec::{ArgMap, Instance, MethodSpec, ToolRegistration, ToolSpec};
use crate::ToolError;
use crate::request::Args;
use crate::tools::ToolDefinition;

/// Why a tool could not be registered.
///
/// ```
/// use tool_calling::tools::{RegistryError, ToolRegistry, ToolSpec};
///
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("clock", "Clock")).unwrap();
/// let again = registry.register(ToolSpec::stateless("clock", "Another clock")).unwrap_err();
/// assert_eq!(again, RegistryError::DuplicateTool { tool: "clock".into() });
/// assert_eq!(again.to_string(), "tool `clock` is already registered");
/// let nameless = registry.register(ToolSpec::stateless("", "Nameless")).unwrap_err();
/// assert!(matches!(nameless, RegistryError::EmptyToolId { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool with an empty id.
    #[error("a tool has an empty id (tool name `{tool_name}`)")]
    EmptyToolId {
        /// The tool's display name.
        tool_name: String,
    },
    /// A tool id used twice.
    #[error("tool `{tool}` is already registered")]
    DuplicateTool {
        /// The id.
        tool: String,
    },
    /// A method with an empty name.
    #[error("tool `{tool}` has a method with an empty name")]
    EmptyMethodName {
        /// The tool.
        tool: String,
    },
    /// A method name used twice within a tool.
    #[error("tool `{tool}` declares method `{method}` more than once")]
    DuplicateMethod {
        /// The tool.
        tool: String,
        /// The repeated name.
        method: String,
    },
    /// Two methods of different tools share a full name (`a` + `b_c` and `a_b` + `c`
    /// both make `a_b_c`).
    #[error("`{name}` of tool `{tool}` clashes with a method of tool `{other_tool}`")]
    NameClash {
        /// The clashing name.
        name: String,
        /// The tool being registered.
        tool: String,
        /// The tool already holding the name.
        other_tool: String,
    },
    /// Two methods of a tool answer to the same name in one protocol: a method declares
    /// an alias (see [`protocol_alias`](crate::tools::protocol_alias)) that is another
    /// method's name, or another method's alias in the same protocol. A request naming
    /// it could not tell the two apart.
    #[error(
        "tool `{tool}`: method `{method}` declares the {protocol} alias `{alias}`, which already names method `{other_method}`"
    )]
    DuplicateAlias {
        /// The tool.
        tool: String,
        /// The protocol whose alias it is (`vcp` for a VCP command).
        protocol: String,
        /// The alias.
        alias: String,
        /// The method declaring the alias.
        method: String,
        /// The method the alias already names (by its name or its own alias).
        other_method: String,
    },
    /// A parameter schema that is not acceptable.
    #[error("tool `{tool}`, method `{method}`, schema at `{field}`: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// The method.
        method: String,
        /// A JSON pointer into the method's schema (`""` for the root).
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// The first alias of `spec` that another of its methods already answers to: method
/// names and each protocol's aliases share one namespace within a tool (an alias equal
/// to the method's own name is no clash).
fn alias_clash(spec: &ToolSpec) -> Option<RegistryError> {
    let names: HashMap<&str, &str> =
        spec.methods.iter().map(|m| (m.definition.name.as_str(), m.definition.name.as_str())).collect();
    let mut aliases: HashMap<(&str, &str), &str> = HashMap::new();
    for method in &spec.methods {
        let name = method.definition.name.as_str();
        for (protocol, alias) in method.definition.aliases() {
            if alias == name {
                continue;
            }
            let other = names.get(alias).copied().or_else(|| aliases.insert((protocol, alias), name));
            if let Some(other_method) = other {
                return Some(RegistryError::DuplicateAlias {
                    tool: spec.tool_id.clone(),
                    protocol: protocol.to_string(),
                    alias: alias.to_string(),
                    method: name.to_string(),
                    other_method: other_method.to_string(),
                });
            }
        }
    }
    None
}

/// Checks a parameter schema; returns `(pointer, reason)` for the first problem.
fn schema_problem(root: &Value) -> Option<(String, String)> {
    let Some(object) = root.as_object() else {
        return Some((String::new(), "parameters must be a JSON Schema object".into()));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Some(("/type".into(), "parameters must be a schema of `\"type\": \"object\"`".into()));
    }
    object_problem(root, root, "")
        .or_else(|| {
            ["$defs", "definitions"].iter().find_map(|defs| {
                root.get(defs).and_then(Value::as_object).and_then(|defs_map| {
                    defs_map.iter().find_map(|(name, schema)| {
                        typed_problem(root, schema, &format!("/{defs}/{}", escape_pointer(name)))
                    })
                })
            })
        })
        .or_else(|| {
            jsonschema::validator_for(root).err().map(|e| (String::new(), format!("not a valid schema: {e}")))
        })
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// An object schema: `properties` typed, `required` keys defined.
fn object_problem(root: &Value, schema: &Value, at: &str) -> Option<(String, String)> {
    let properties = match schema.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Some((format!("{at}/properties"), "`properties` must be an object".into())),
    };
    if let Some(properties) = properties {
        for (name, property) in properties {
            if let Some(problem) =
                typed_problem(root, property, &format!("{at}/properties/{}", escape_pointer(name)))
            {
                return Some(problem);
            }
        }
    }
    match schema.get("required") {
        None => None,
        Some(Value::Array(required)) => required.iter().enumerate().find_map(|(i, key)| match key.as_str() {
            None => Some((format!("{at}/required/{i}"), "`required` entries must be strings".into())),
            Some(key) if !properties.is_some_and(|p| p.contains_key(key)) => Some((
                format!("{at}/required/{i}"),
                format!("`{key}` is required but not defined in `properties`"),
            )),
            Some(_) => None,
        }),
        Some(_) => Some((format!("{at}/required"), "`required` must be an array of names".into())),
    }
}

/// A property schema must say what it holds, and its `$ref` must be one the crate reads
/// (see [`crate::schema`]: no cycle, no reference to nothing); nested objects and arrays
/// are checked too.
fn typed_problem(root: &Value, schema: &Value, at: &str) -> Option<(String, String)> {
    if schema.as_bool() == Some(true) {
        return None;
    }
    let Some(object) = schema.as_object() else {
        return Some((at.to_string(), "a property schema must be an object".into()));
    };
    const TYPING: [&str; 7] = ["type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf"];
    if !TYPING.iter().any(|k| object.contains_key(*k)) {
        return Some((
            at.to_string(),
            "the property has no type (add `type`, `enum`, `const` or `$ref`)".into(),
        ));
    }
    if let Err(error) = crate::schema::resolve(root, schema) {
        return Some((format!("{at}/$ref"), error.to_string()));
    }
    if (object.get("type").and_then(Value::as_str) == Some("object") || object.contains_key("properties"))
        && let Some(problem) = object_problem(root, schema, at)
    {
        return Some(problem);
    }
    if let Some(items) = object.get("items")
        && let Some(problem) = typed_problem(root, items, &format!("{at}/items"))
    {
        return Some(problem);
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(variants) = object.get(combinator).and_then(Value::as_array) {
            for (i, variant) in variants.iter().enumerate() {
                if let Some(problem) = typed_problem(root, variant, &format!("{at}/{combinator}/{i}")) {
                    return Some(problem);
                }
            }
        }
    }
    None
}

/// A registered tool: its spec, one compiled validator per method, and its shared
/// instance (made on first use).
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, Instance, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// // A stateful tool whose instance is a number.
/// let spec = ToolSpec::new("notes", "Notes", || Ok(Arc::new(7_u32) as Instance))
///     .stateful(true)
///     .with_method(MethodSpec::new(MethodDefinition::new("list", "List notes."), run));
/// let registry = ToolRegistry::new();
/// registry.register(spec).unwrap();
/// let tool = registry.tool("notes").unwrap();
/// assert_eq!(tool.spec().tool_name, "Notes");
/// assert!(tool.validator(0).is_some());
/// assert_eq!(tool.instance_for(Some("thread-1")).unwrap().downcast_ref::<u32>(), Some(&7));
/// assert_eq!(tool.live_conversations(), 1);
/// assert!(tool.end_conversation("thread-1"));
/// ```
pub struct RegisteredTool {
    spec: ToolSpec,
    validators: Vec<ArgumentValidator>,
    instance: OnceLock<Result<Instance, ToolError>>,
    /// Instances of a stateful tool, by conversation id.
    per_conversation: Mutex<HashMap<String, Instance>>,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool").field("spec", &self.spec).finish_non_exhaustive()
    }
}

impl RegisteredTool {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The validator of method number `index`.
    pub fn validator(&self, index: usize) -> Option<&ArgumentValidator> {
        self.validators.get(index)
    }

    /// The shared instance, made on first use.
    pub fn instance(&self) -> Result<Instance, ToolError> {
        self.instance.get_or_init(|| self.spec.create_instance()).clone()
    }

    /// The instance serving `conversation`: for a stateful tool, that conversation's
    /// own (made on its first call); otherwise, or without a conversation id, the
    /// shared one.
    pub fn instance_for(&self, conversation: Option<&str>) -> Result<Instance, ToolError> {
        let (true, Some(id)) = (self.spec.stateful, conversation) else {
            return self.instance();
        };
        let mut map = self.per_conversation.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(instance) = map.get(id) {
            return Ok(instance.clone());
        }
        let instance = self.spec.create_instance()?;
        map.insert(id.to_string(), instance.clone());
        Ok(instance)
    }

    /// Drops `conversation`'s instance; returns whether there was one.
    pub fn end_conversation(&self, conversation: &str) -> bool {
        self.per_conversation
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(conversation)
            .is_some()
    }

    /// How many conversations hold an instance of this tool.
    pub fn live_conversations(&self) -> usize {
        self.per_conversation.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

/// A method found in the registry.
///
/// ```
/// use serde_json::json;
/// use tool_calling::Args;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let schema = json!({
///     "type": "object",
///     "properties": {"n": {"type": "integer"}, "unit": {"type": "string", "default": "s"}}
/// });
/// let wait = MethodDefinition::new("wait", "Wait a while.").with_parameters(schema);
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("timer", "Timer").with_method(MethodSpec::new(wait, run))).unwrap();
/// let method = registry.method("timer_wait").unwrap();
/// assert_eq!((method.full_name(), method.index), ("timer_wait".to_string(), 0));
/// // Defaults filled in, strings coerced by the schema.
/// let args = method.prepare_args(&Args::from([("n".to_string(), json!("3"))]), None).unwrap();
/// assert_eq!(serde_json::Value::Object(args), json!({"n": 3, "unit": "s"}));
/// ```
#[derive(Debug, Clone)]
pub struct MethodRef {
    /// The tool holding it.
    pub tool: Arc<RegisteredTool>,
    /// The method's index in the tool's spec.
    pub index: usize,
}

impl MethodRef {
    /// The method's spec.
    pub fn spec(&self) -> Option<&MethodSpec> {
        self.tool.spec.methods.get(self.index)
    }

    /// `toolId_methodName`.
    pub fn full_name(&self) -> String {
        self.spec().map(|m| m.definition.full_name(&self.tool.spec.tool_id)).unwrap_or_default()
    }

    /// The arguments the method runs with: its schema's defaults, overridden by
    /// `preset` (the host's), overridden by `model` (the model's); each value coerced by
    /// the schema (a blank optional value counts as absent, so the layer below shows
    /// through), then the argument hook, then JSON-Schema validation. The one place
    /// where a call's arguments are put together.
    pub fn prepare_args(&self, model: &Args, preset: Option<&Args>) -> Result<ArgMap, ToolError> {
        self.prepare(model, preset).map_err(|e| match e {
            Unprepared::Unregistered => ToolError::not_found("the method is no longer registered"),
            Unprepared::Arguments(errors) => ToolError::validation(errors.to_string()),
            Unprepared::Hook(error) => error,
        })
    }

    /// [`prepare_args`](Self::prepare_args), with the failure kept apart, for the
    /// executor to word.
    pub(crate) fn prepare(&self, model: &Args, preset: Option<&Args>) -> Result<ArgMap, Unprepared> {
        let (Some(spec), Some(validator)) = (self.spec(), self.tool.validator(self.index)) else {
            return Err(Unprepared::Unregistered);
        };
        let mut args = validator.defaults();
        if let Some(preset) = preset {
            args.extend(validator.coerce(preset));
        }
        args.extend(validator.coerce(model));
        if let Some(hook) = &spec.argument_hook {
            // The hook may rename or add keys: coerce what it returns as well.
            args = validator.coerce_map(&hook(args).map_err(Unprepared::Hook)?);
        }
        validator.validate(&args).map_err(Unprepared::Arguments)?;
        Ok(args)
    }
}

/// Why a call's arguments could not be put together.
#[derive(Debug)]
pub(crate) enum Unprepared {
    /// The method left the registry.
    Unregistered,
    /// The arguments failed validation.
    Arguments(super::ArgumentErrors),
    /// The method's argument hook refused them (its error is passed on).
    Hook(ToolError),
}

#[derive(Default)]
struct Inner {
    tools: Vec<Arc<RegisteredTool>>,
    /// Full names → (tool index, method index).
    names: HashMap<String, (usize, usize)>,
    /// The same, as protocols see it; replaced (not changed) on registration, so that
    /// snapshots handed out stay valid.
    catalog: Arc<ToolCatalog>,
    generation: u64,
}

/// Every registered tool. Safe to share across threads (`Arc<ToolRegistry>`); tools can
/// be registered at any time, at link time with `#[tool]` ([`from_inventory`](Self::from_inventory))
/// or at run time ([`register`](Self::register)). Tools run through the
/// [`Executor`](crate::exec::Executor).
///
/// Every definition is checked when it is registered, not when it is first called: ids
/// and names non-empty and unique, parameters an object schema, every `required` key
/// defined, nested properties typed, and the schema compilable. A bad definition is an
/// error naming the tool, the method and the field.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, RegistryError, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::tools::MethodDefinition;
///
/// let registry = ToolRegistry::new();
/// let add = MethodDefinition::new("add", "Add two numbers.").with_parameters(json!({
///     "type": "object",
///     "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
///     "required": ["a", "b"]
/// }));
/// let handler = |_, args: ArgMap| {
///     Box::pin(async move {
///         let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
///         Ok(ToolOutput::Json(json!(sum)))
///     }) as BoxFuture<'static, _>
/// };
/// registry.register(ToolSpec::stateless("calc", "Calculator").with_method(MethodSpec::new(add, handler))).unwrap();
/// assert!(registry.method("calc_add").is_some());
///
/// // Definitions are checked when they are registered.
/// let bad = MethodDefinition::new("bad", "Bad.").with_parameters(json!({"type": "string"}));
/// let err = registry.register(ToolSpec::stateless("x", "X").with_method(MethodSpec::new(bad, handler)));
/// assert!(matches!(err, Err(RegistryError::InvalidSchema { .. })));
/// ```
#[derive(Default)]
pub struct ToolRegistry {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.tools().iter().map(|t| t.spec.tool_id.clone()).collect();
        f.debug_struct("ToolRegistry").field("tools", &ids).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding every tool registered at link time (`#[tool]` and
    /// [`ToolRegistration`]), in a stable order (by tool id).
    pub fn from_inventory() -> Result<Self, RegistryError> {
        let registry = Self::new();
        let mut specs: Vec<ToolSpec> =
            inventory::iter::<ToolRegistration>.into_iter().map(|r| (r.build)()).collect();
        specs.sort_by(|a, b| a.tool_id.cmp(&b.tool_id));
        for spec in specs {
            registry.register(spec)?;
        }
        Ok(registry)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks and registers `spec`.
    pub fn register(&self, spec: ToolSpec) -> Result<(), RegistryError> {
        let tool = spec.tool_id.clone();
        if tool.is_empty() {
            return Err(RegistryError::EmptyToolId { tool_name: spec.tool_name.clone() });
        }
        let mut own_names: HashSet<&str> = HashSet::new();
        let mut validators = Vec::with_capacity(spec.methods.len());
        for method in &spec.methods {
            let name = &method.definition.name;
            if name.is_empty() {
                return Err(RegistryError::EmptyMethodName { tool });
            }
            if !own_names.insert(name) {
                return Err(RegistryError::DuplicateMethod { tool, method: name.clone() });
            }
            if let Some((field, reason)) = schema_problem(&method.definition.parameters) {
                return Err(RegistryError::InvalidSchema { tool, method: name.clone(), field, reason });
            }
            let validator = ArgumentValidator::new(&method.definition.parameters).map_err(|reason| {
                RegistryError::InvalidSchema {
                    tool: tool.clone(),
                    method: name.clone(),
                    field: String::new(),
                    reason,
                }
            })?;
            validators.push(validator);
        }
        if let Some(clash) = alias_clash(&spec) {
            return Err(clash);
        }
        let mut inner = self.write();
        if inner.tools.iter().any(|t| t.spec.tool_id == tool) {
            return Err(RegistryError::DuplicateTool { tool });
        }
        let tool_index = inner.tools.len();
        let mut new_names = Vec::with_capacity(spec.methods.len());
        for (index, method) in spec.methods.iter().enumerate() {
            let name = method.definition.full_name(&tool);
            if let Some(&(other, _)) = inner.names.get(&name) {
                let other_tool = inner.tools.get(other).map(|t| t.spec.tool_id.clone()).unwrap_or_default();
                return Err(RegistryError::NameClash { name, tool, other_tool });
            }
            new_names.push((name, (tool_index, index)));
        }
        inner.names.extend(new_names);
        let mut catalog = ToolCatalog::clone(&inner.catalog);
        catalog.add(&spec);
        inner.catalog = Arc::new(catalog);
        inner.tools.push(Arc::new(RegisteredTool {
            spec,
            validators,
            instance: OnceLock::new(),
            per_conversation: Mutex::new(HashMap::new()),
        }));
        inner.generation += 1;
        Ok(())
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> Vec<Arc<RegisteredTool>> {
        self.read().tools.clone()
    }

    /// The tool with id `tool_id`.
    pub fn tool(&self, tool_id: &str) -> Option<Arc<RegisteredTool>> {
        self.read().tools.iter().find(|t| t.spec.tool_id == tool_id).cloned()
    }

    /// The method whose full name (`toolId_methodName`) is exactly `full_name`, callable
    /// or not.
    pub fn method(&self, full_name: &str) -> Option<MethodRef> {
        let inner = self.read();
        let &(tool, index) = inner.names.get(full_name)?;
        Some(MethodRef { tool: inner.tools.get(tool)?.clone(), index })
    }

    /// Every full name, in registration order (for suggestions).
    pub fn full_names(&self, agent_callable_only: bool) -> Vec<String> {
        self.tools()
            .iter()
            .flat_map(|t| {
                t.spec
                    .methods
                    .iter()
                    .filter(move |m| !agent_callable_only || m.agent_callable)
                    .map(move |m| m.definition.full_name(&t.spec.tool_id))
            })
            .collect()
    }

    /// Protocol-neutral definitions of every tool's agent-callable methods.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools().iter().map(|t| t.spec.definition()).filter(|d| !d.methods.is_empty()).collect()
    }

    /// Ends `conversation`: every stateful tool drops its instance for it. Returns how
    /// many instances were dropped.
    pub fn end_conversation(&self, conversation: &str) -> usize {
        self.tools().iter().filter(|t| t.end_conversation(conversation)).count()
    }

    /// A number that changes whenever a tool is registered (caches compare it).
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// The registered tools by name, as protocols resolve requests against them: a
    /// snapshot, unchanged by later registrations.
    pub fn catalog(&self) -> Arc<ToolCatalog> {
        self.read().catalog.clone()
    }
}
