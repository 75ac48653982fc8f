//! Tools as the registry holds them: metadata, methods, and the code that runs them.
//!
//! A [`ToolSpec`] describes one tool: its id, name and metadata, how to make its
//! instance, and its methods ([`MethodSpec`]), each with a JSON Schema for its
//! parameters and a [`MethodHandler`] that runs it. The `#[tool]` attribute macro
//! writes these for an `impl` block; tools known only at run time (REST, MCP, plugins)
//! build them by hand. The tool layer knows nothing of protocols: a tool takes a JSON
//! object of arguments and returns a [`ToolOutput`] or a [`ToolError`].

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ToolError;
use crate::tools::MethodDefinition;
use crate::tools::ToolDefinition;

/// A boxed future that can be sent across threads.
///
/// ```
/// use tool_calling::tools::{BoxFuture, ToolOutput};
///
/// let answer: BoxFuture<'static, ToolOutput> = Box::pin(async { ToolOutput::Text("42".into()) });
/// assert_eq!(futures::executor::block_on(answer).into_text(), "42");
/// ```
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool's instance, shared by its method calls (`Arc<YourType>` behind `dyn Any`).
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::{Instance, ToolSpec};
///
/// struct Counter {
///     start: u32,
/// }
/// let spec = ToolSpec::new("counter", "Counter", || Ok(Arc::new(Counter { start: 10 }) as Instance));
/// let instance: Instance = spec.create_instance().unwrap();
/// // A method's handler gets the instance back with a downcast.
/// assert_eq!(instance.downcast_ref::<Counter>().map(|c| c.start), Some(10));
/// ```
pub type Instance = Arc<dyn Any + Send + Sync>;

/// The arguments a method receives: a JSON object, already coerced and validated
/// against the method's schema.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::{ArgMap, BoxFuture, ToolOutput};
///
/// let greet = |args: ArgMap| -> BoxFuture<'static, ToolOutput> {
///     let name = args.get("name").and_then(|v| v.as_str()).unwrap_or("stranger").to_string();
///     Box::pin(async move { ToolOutput::Text(format!("Hello, {name}!")) })
/// };
/// let args: ArgMap = serde_json::from_value(json!({"name": "Ada"})).unwrap();
/// assert_eq!(futures::executor::block_on(greet(args)).into_text(), "Hello, Ada!");
/// ```
pub type ArgMap = Map<String, Value>;

/// What a tool method returned.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::ToolOutput;
///
/// assert_eq!(ToolOutput::from_serialize("done").unwrap(), ToolOutput::Text("done".into()));
/// let json = ToolOutput::from_serialize(&[1, 2, 3]).unwrap();
/// assert_eq!(json, ToolOutput::Json(json!([1, 2, 3])));
/// assert_eq!(json.into_text(), "[1,2,3]");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutput {
    /// Plain text, passed to the model as is.
    Text(String),
    /// A JSON value, serialised for the model.
    Json(Value),
    /// Several parts (text, JSON, images); protocols render what they can.
    Parts(Vec<crate::ContentPart>),
}

impl ToolOutput {
    /// Serialises any value: strings become [`ToolOutput::Text`], everything else
    /// [`ToolOutput::Json`].
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, ToolError> {
        match serde_json::to_value(value) {
            Ok(Value::String(s)) => Ok(ToolOutput::Text(s)),
            Ok(v) => Ok(ToolOutput::Json(v)),
            Err(e) => Err(ToolError::execution(format!("the tool's result could not be serialised: {e}"))),
        }
    }

    /// The output as text: text as is, JSON serialised compactly, parts rendered one
    /// per line (images as a note).
    pub fn into_text(self) -> String {
        match self {
            ToolOutput::Text(s) => s,
            ToolOutput::Json(v) => v.to_string(),
            ToolOutput::Parts(parts) => {
                parts.iter().map(crate::ContentPart::render_text).collect::<Vec<_>>().join("\n")
            }
        }
    }
}

/// Runs one method.
///
/// Implemented for closures `Fn(Instance, ArgMap) -> BoxFuture<…>`, which is what the
/// macro writes.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::{ArgMap, BoxFuture, Instance, MethodHandler, MethodSpec, ToolOutput};
/// use tool_calling::ToolError;
/// use tool_calling::tools::MethodDefinition;
///
/// /// Returns its arguments as they came.
/// struct Echo;
/// impl MethodHandler for Echo {
///     fn call(&self, _: Instance, args: ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
///         Box::pin(async move { Ok(ToolOutput::Json(args.into())) })
///     }
/// }
///
/// let spec = MethodSpec::new(MethodDefinition::new("echo", "Echo the arguments."), Echo);
/// let args: ArgMap = serde_json::from_value(serde_json::json!({"x": 1})).unwrap();
/// let output = futures::executor::block_on(spec.handler().call(Arc::new(()), args)).unwrap();
/// assert_eq!(output.into_text(), r#"{"x":1}"#);
/// ```
pub trait MethodHandler: Send + Sync {
    /// Runs the method on `instance` with validated `args`.
    fn call(&self, instance: Instance, args: ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

impl<F> MethodHandler for F
where
    F: Fn(Instance, ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
{
    fn call(&self, instance: Instance, args: ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        self(instance, args)
    }
}

/// A hook that checks or rewrites a method's arguments before schema validation. Return
/// the (possibly changed) arguments, or an error for the model.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tool_calling::ToolError;
/// use tool_calling::tools::{ArgMap, ArgumentHook};
///
/// // Accept the old parameter name `q` for `query`; refuse empty queries.
/// let hook: ArgumentHook = Arc::new(|mut args: ArgMap| {
///     if let Some(q) = args.remove("q") {
///         args.insert("query".into(), q);
///     }
///     match args.get("query") {
///         Some(q) if q.as_str().is_some_and(|q| !q.is_empty()) => Ok(args),
///         _ => Err(ToolError::validation("`query` must not be empty")),
///     }
/// });
/// let renamed = hook(serde_json::from_value(json!({"q": "rust"})).unwrap()).unwrap();
/// assert_eq!(renamed["query"], "rust");
/// assert!(hook(ArgMap::new()).is_err());
/// ```
pub type ArgumentHook = Arc<dyn Fn(ArgMap) -> Result<ArgMap, ToolError> + Send + Sync>;

/// One method of a tool.
///
/// ```
/// use std::time::Duration;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolSpec};
///
/// let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
/// let backup = MethodSpec::new(MethodDefinition::new("backup", "Back up the data."), run)
///     .with_timeout(Duration::from_secs(60))
///     .blocking(true)
///     .agent_callable(false); // the host may call it; models are never offered it
/// assert_eq!((backup.name(), backup.timeout), ("backup", Some(Duration::from_secs(60))));
/// let tool = ToolSpec::stateless("store", "Store").with_method(backup);
/// assert!(tool.method("backup").is_some());
/// assert!(tool.definition().methods.is_empty());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct MethodSpec {
    /// Name, description, parameter schema, VCP alias and examples.
    pub definition: MethodDefinition,
    /// Whether models may call it. Methods that are not agent-callable are known to
    /// the host (and listed by discovery on request) but never offered or routed.
    pub agent_callable: bool,
    /// Runs before schema validation, if set.
    pub argument_hook: Option<ArgumentHook>,
    /// Time limit of one call, overriding the executor's default.
    pub timeout: Option<std::time::Duration>,
    /// The handler blocks its thread (a synchronous method): the executor runs it on
    /// the blocking pool, so that timeouts still bound it and other calls go on.
    pub blocking: bool,
    handler: Arc<dyn MethodHandler>,
}

impl std::fmt::Debug for MethodSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodSpec")
            .field("definition", &self.definition)
            .field("agent_callable", &self.agent_callable)
            .field("argument_hook", &self.argument_hook.is_some())
            .field("timeout", &self.timeout)
            .field("blocking", &self.blocking)
            .finish_non_exhaustive()
    }
}

impl MethodSpec {
    /// An agent-callable method run by `handler`.
    pub fn new(definition: MethodDefinition, handler: impl MethodHandler + 'static) -> Self {
        MethodSpec {
            definition,
            agent_callable: true,
            argument_hook: None,
            timeout: None,
            blocking: false,
            handler: Arc::new(handler),
        }
    }

    /// Sets the per-method time limit.
    #[must_use]
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Marks the handler as blocking its thread.
    #[must_use]
    pub fn blocking(mut self, blocking: bool) -> Self {
        self.blocking = blocking;
        self
    }

    /// Sets whether models may call the method.
    #[must_use]
    pub fn agent_callable(mut self, callable: bool) -> Self {
        self.agent_callable = callable;
        self
    }

    /// Sets the argument hook.
    #[must_use]
    pub fn with_argument_hook(
        mut self,
        hook: impl Fn(ArgMap) -> Result<ArgMap, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.argument_hook = Some(Arc::new(hook));
        self
    }

    /// The method's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The handler.
    pub fn handler(&self) -> &Arc<dyn MethodHandler> {
        &self.handler
    }
}

/// Descriptive metadata of a tool.
///
/// ```
/// use tool_calling::tools::{ToolMetadata, ToolSpec};
///
/// let metadata = ToolMetadata::default()
///     .with_category("files")
///     .with_tag("local")
///     .with_version("1.2.0")
///     .with_documentation_url("https://example.com/docs/files");
/// let spec = ToolSpec::stateless("fs", "Files").with_metadata(metadata);
/// assert_eq!(spec.metadata.category.as_deref(), Some("files"));
/// assert_eq!(spec.metadata.tags, ["local"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolMetadata {
    /// A grouping, e.g. `"files"`.
    pub category: Option<String>,
    /// Free-form tags.
    pub tags: Vec<String>,
    /// The tool's version.
    pub version: Option<String>,
    /// Where its documentation lives.
    pub documentation_url: Option<String>,
}

/// Makes a tool's instance.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::{Instance, InstanceFactory};
///
/// let factory: InstanceFactory = Arc::new(|| Ok(Arc::new(String::from("fresh state")) as Instance));
/// let first = factory().unwrap();
/// let second = factory().unwrap();
/// assert!(!Arc::ptr_eq(&first, &second), "a new instance each time");
/// assert_eq!(first.downcast_ref::<String>().map(String::as_str), Some("fresh state"));
/// ```
pub type InstanceFactory = Arc<dyn Fn() -> Result<Instance, ToolError> + Send + Sync>;

/// A tool: identity, metadata, instance factory and methods. `#[tool]` writes one for
/// an `impl` block; a tool whose methods are only known at run time (loaded from a
/// configuration, say) is built by hand:
///
/// ```
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::tools::MethodDefinition;
///
/// let now = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("12:00".into())) }) as BoxFuture<'static, _>;
/// let spec = ToolSpec::stateless("clock", "Clock")
///     .with_description("Tells the time.")
///     .with_method(MethodSpec::new(MethodDefinition::new("now", "The current time."), now));
/// assert_eq!(spec.definition().methods[0].full_name("clock"), "clock_now");
/// ToolRegistry::new().register(spec)?;
/// # Ok::<(), tool_calling::tools::RegistryError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolSpec {
    /// Stable id, the first half of full method names.
    pub tool_id: String,
    /// Display name.
    pub tool_name: String,
    /// What the tool is for.
    pub description: String,
    /// Category, tags, version, documentation.
    pub metadata: ToolMetadata,
    /// Every registered method, agent-callable or not.
    pub methods: Vec<MethodSpec>,
    /// One instance per conversation (a stateful tool) instead of one shared
    /// instance: made lazily on a conversation's first call, reused within it, isolated
    /// from other conversations, dropped when the conversation ends.
    pub stateful: bool,
    factory: InstanceFactory,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("tool_id", &self.tool_id)
            .field("tool_name", &self.tool_name)
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

impl ToolSpec {
    /// A tool whose instance `factory` makes.
    pub fn new(
        tool_id: impl Into<String>,
        tool_name: impl Into<String>,
        factory: impl Fn() -> Result<Instance, ToolError> + Send + Sync + 'static,
    ) -> Self {
        ToolSpec {
            tool_id: tool_id.into(),
            tool_name: tool_name.into(),
            description: String::new(),
            metadata: ToolMetadata::default(),
            methods: Vec::new(),
            stateful: false,
            factory: Arc::new(factory),
        }
    }

    /// Makes the tool stateful: one instance per conversation.
    #[must_use]
    pub fn stateful(mut self, stateful: bool) -> Self {
        self.stateful = stateful;
        self
    }

    /// A stateless tool (functions only): its instance is `()`.
    pub fn stateless(tool_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        Self::new(tool_id, tool_name, || Ok(Arc::new(()) as Instance))
    }

    setters! {
        /// Sets the description.
        pub fn with_description(description: impl Into<String>) { self.description = description.into() }

        /// Sets the metadata.
        pub fn with_metadata(metadata: ToolMetadata) { self.metadata = metadata }
    }

    /// Adds a method.
    #[must_use]
    pub fn with_method(mut self, method: MethodSpec) -> Self {
        self.methods.push(method);
        self
    }

    /// Makes an instance.
    pub fn create_instance(&self) -> Result<Instance, ToolError> {
        (self.factory)()
    }

    /// The method called `name`, agent-callable or not.
    pub fn method(&self, name: &str) -> Option<&MethodSpec> {
        self.methods.iter().find(|m| m.definition.name == name)
    }

    /// The protocol-neutral definition of the agent-callable methods (what prompts are
    /// written from).
    pub fn definition(&self) -> ToolDefinition {
        let mut definition = ToolDefinition::new(self.tool_id.clone(), self.tool_name.clone())
            .with_description(self.description.clone());
        definition.methods =
            self.methods.iter().filter(|m| m.agent_callable).map(|m| m.definition.clone()).collect();
        definition
    }
}

impl ToolMetadata {
    /// Sets the category.
    #[must_use]
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Sets the version.
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the documentation URL.
    #[must_use]
    pub fn with_documentation_url(mut self, url: impl Into<String>) -> Self {
        self.documentation_url = Some(url.into());
        self
    }
}

/// A link-time registration, collected with `inventory`. The `#[tool]` macro submits
/// one per tool; [`ToolRegistry::from_inventory`](super::ToolRegistry::from_inventory)
/// collects them all.
///
/// ```
/// use tool_calling::tools::{ToolRegistration, ToolRegistry, ToolSpec};
///
/// fn clock() -> ToolSpec {
///     ToolSpec::stateless("clock", "Clock")
/// }
/// // What `#[tool]` submits to `inventory` (here kept local instead of submitted).
/// let registration = ToolRegistration::new(clock);
/// let registry = ToolRegistry::new();
/// registry.register((registration.build)()).unwrap();
/// assert!(registry.tool("clock").is_some());
/// ```
#[non_exhaustive]
pub struct ToolRegistration {
    /// Builds the tool's spec.
    pub build: fn() -> ToolSpec,
}

impl ToolRegistration {
    /// A registration that builds its spec with `build`.
    pub const fn new(build: fn() -> ToolSpec) -> Self {
        ToolRegistration { build }
    }
}

#[cfg(feature = "runtime")]
inventory::collect!(ToolRegistration);

/// A type that describes itself as a tool. The `#[tool]` attribute implements it for
/// the type of the `impl` block it stands on, so a tool can also be registered by hand:
/// `registry.register(MyTool::tool_spec())`.
///
/// ```
/// use tool_calling::tools::{ToolProvider, ToolRegistry};
///
/// #[derive(Default)]
/// struct Dice;
///
/// /// Dice.
/// #[tool_calling::tool(id = "dice", register = false)] // not registered at link time
/// impl Dice {
///     /// Roll a die (always 4: chosen by a fair roll).
///     #[tool_method]
///     fn roll(&self) -> u32 {
///         4
///     }
/// }
///
/// let registry = ToolRegistry::new();
/// registry.register(Dice::tool_spec())?;
/// assert!(registry.method("dice_roll").is_some());
/// # Ok::<(), tool_calling::tools::RegistryError>(())
/// ```
pub trait ToolProvider {
    /// The tool's spec.
    fn tool_spec() -> ToolSpec;
}
