//! The engine: the parse → resolve → execute → format cycle, the conversation loop, and
//! the one entry point a host needs.
//!
//! An [`Engine`] holds the protocols it can speak ([`ProtocolRegistry`], VCP by
//! default), an [`Executor`] over a [`ToolRegistry`], and a cache of what each protocol
//! offers an agent. Each cycle uses the protocol the agent's config names
//! ([`ToolCallConfig::protocol`]), or the engine's default.
//!
//! ```
//! use std::sync::Arc;
//! use tool_calling::engine::Engine;
//! use tool_calling::exec::ExecutionContext;
//! use tool_calling::tools::ToolRegistry;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let engine = Engine::new(Arc::new(ToolRegistry::new()));
//! let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>";
//! let cycle = engine.run_turn(reply, &ExecutionContext::default()).await.unwrap();
//! assert!(cycle.has_tool_requests);
//! // No such tool here: the model is told so, with the closest names if any.
//! assert_eq!(cycle.execution_results[0].error_kind, Some(tool_calling::ErrorKind::NotFound));
//! // What goes back to the model: for VCP, one tool message of result blocks.
//! assert!(cycle.result_messages[0].text().contains("<<<[TOOL_RESULT]>>>"));
//! # });
//! ```
//!
//! Four entry points run everything, all through one cycle driver:
//!
//! | the model's turn | one cycle | a conversation |
//! | --- | --- | --- |
//! | arrives whole | [`Engine::run_turn`] | [`Engine::run_conversation`] |
//! | streams in | [`Engine::run_stream`] | [`Engine::run_conversation_streamed`] |
//!
//! Every step of a cycle is reported to the observer of its context
//! ([`ExecutionContext::on_event`](crate::exec::ExecutionContext::on_event)).
//!
//! # The cycle
//!
//! One driver runs every turn, whole or streamed: a whole turn is a stream of one piece.
//!
//! The driver feeds each piece of the turn to the protocol's
//! [`stream_parser`](crate::protocol::ToolCallingProtocol::stream_parser). As soon as a
//! request is complete ([`StreamEvent::RequestCompleted`](crate::protocol::StreamEvent::RequestCompleted)) its call starts, while the rest
//! of the turn is still arriving; the calls run concurrently with the stream. When the
//! stream ends, the driver waits for the calls still running and returns one
//! [`ToolCallCycleResult`]: the same, durations aside, whether the turn arrived whole
//! ([`Engine::run_turn`]) or in pieces ([`Engine::run_stream`]).
//!
//! The executor's rules all hold: checks, time limits, retries, cancellation through
//! [`ExecutionContext::cancel`], at most
//! [`max_concurrency`](crate::exec::ExecutorOptions::max_concurrency) calls at once in
//! parallel mode, and in serial mode (`parallel_execution: false`) one call after another
//! in request order. Every request gets exactly one result, in request order. Requests
//! the protocol marks fire-and-forget start in the background and are answered at once;
//! a failure is kept for a later turn ([`ExecutionContext::take_background_failures`]).
//!
//! The engine holds at most [`Engine::with_max_turn_bytes`] of a turn (64 MiB by default)
//! and stops reading there. A request still open when the reading stops before the
//! reply's end (that limit, a broken stream, a cancellation) is incomplete: it is
//! answered, never run.
//!
//! ```
//! use std::sync::Arc;
//! use futures::stream;
//! use tool_calling::engine::Engine;
//! use tool_calling::exec::ExecutionContext;
//! use tool_calling::model::FinishReason;
//! use tool_calling::tools::{ToolProvider, ToolRegistry};
//! use tool_calling::tool;
//!
//! #[derive(Default)]
//! struct Calc;
//!
//! /// Arithmetic.
//! #[tool(id = "calc", register = false)]
//! impl Calc {
//!     /// Add two numbers.
//!     #[tool_method]
//!     fn add(&self, a: f64, b: f64) -> f64 {
//!         a + b
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! registry.register(Calc::tool_spec()).unwrap();
//! let engine = Engine::new(Arc::new(registry));
//!
//! // The reply as the model streams it: `calc_add` starts as soon as its block has
//! // ended, before "Meanwhile…" has arrived.
//! let chunks = [
//!     "Let me add.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\n",
//!     "a:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_",
//!     "REQUEST]>>>\n",
//!     "Meanwhile, a joke.",
//! ];
//! let cycle = engine.run_stream(stream::iter(chunks), &ExecutionContext::default()).await.unwrap();
//! assert_eq!(cycle.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(cycle.turn.text(), chunks.concat());
//! assert_eq!(cycle.execution_results[0].result, "42.0");
//! assert_eq!(cycle.normal_text, "Let me add.\n\nMeanwhile, a joke.");
//!
//! // The same reply, whole: the same cycle (request ids are random by default).
//! let whole = engine.run_turn(chunks.concat(), &ExecutionContext::default()).await.unwrap();
//! assert_eq!(whole.execution_results[0].result, "42.0");
//! assert_eq!(whole.normal_text, cycle.normal_text);
//! # });
//! ```

mod agent_loop;
mod cycle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use agent_loop::{LoopOutcome, Round, StopReason};
pub use cycle::{StreamCycleError, ToolCallCycleResult, TurnStreamItem};

use crate::config::ToolCallConfig;
use crate::exec::{ExecutionContext, Executor};
use crate::model::ChatModelError;
use crate::protocol::{ProtocolError, ProtocolRegistry, ToolCallingProtocol, ToolDeclarations};
use crate::tools::{DiscoveredTool, DiscoveryService, MethodFilter, RegistryError, ToolRegistry};

/// Why the engine could not run a cycle or a conversation.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::config::ToolCallConfig;
/// use tool_calling::engine::{Engine, EngineError};
/// use tool_calling::exec::ExecutionContext;
/// use tool_calling::tools::ToolRegistry;
///
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// // Outside a Tokio runtime nothing runs.
/// let ctx = ExecutionContext::default();
/// let cycle = futures::executor::block_on(engine.run_turn("Hi.", &ctx));
/// assert_eq!(cycle.unwrap_err(), EngineError::NoRuntime);
/// // A config naming a protocol the engine does not speak.
/// let ctx = ExecutionContext::new(ToolCallConfig::default().with_protocol("smoke-signals"));
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let err = runtime.block_on(engine.run_turn("Hi.", &ctx)).unwrap_err();
/// assert!(matches!(err, EngineError::Protocol(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The protocol the config names is not one the engine knows.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The chat model failed.
    #[error(transparent)]
    Model(#[from] ChatModelError),
    /// The engine was called outside a Tokio runtime: tools run as Tokio tasks, under
    /// Tokio timers. Nothing was run.
    #[error(
        "the engine needs a Tokio runtime: call it from within one (`#[tokio::main]`, or \
         `Runtime::block_on`), with timers enabled; no tool was run"
    )]
    NoRuntime,
    /// The protocol could not write a grammar for the tools offered.
    #[error(transparent)]
    Grammar(#[from] crate::grammar::GrammarError),
}

/// [`EngineError::NoRuntime`] unless the caller is inside a Tokio runtime.
pub(crate) fn require_runtime() -> Result<(), EngineError> {
    tokio::runtime::Handle::try_current().map(drop).map_err(|_| EngineError::NoRuntime)
}

/// Declarations cached by protocol id, agent id and config hash, each with the registry
/// generation it was made from.
type DeclarationMap = HashMap<(String, Option<String>, u64), (u64, Arc<ToolDeclarations>)>;

/// Grammars cached like declarations, also by what was asked for.
type GrammarMap =
    HashMap<(String, Option<String>, u64, crate::grammar::Constraint), (u64, Arc<crate::grammar::Grammar>)>;

/// Parses replies, runs their requests, formats the results, and drives conversations.
/// `Send + Sync`: share one engine across tasks.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::tools::MethodDefinition;
///
/// // A tool registered at run time (the `#[tool]` attribute writes the same spec).
/// let shout = |_, args: ArgMap| {
///     let text = args.get("text").and_then(|v| v.as_str()).unwrap_or_default().to_uppercase();
///     Box::pin(async move { Ok(ToolOutput::Text(text)) }) as BoxFuture<'static, _>
/// };
/// let method = MethodDefinition::new("shout", "Shout a text.")
///     .with_parameters(serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}));
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("voice", "Voice").with_method(MethodSpec::new(method, shout)))?;
///
/// let engine = tool_calling::engine::Engine::new(Arc::new(registry));
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」voice_shout「末」,\ntext:「始」hi「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let runtime = tokio::runtime::Runtime::new()?;
/// let cycle = runtime.block_on(engine.run_turn(reply, &Default::default()))?;
/// assert_eq!(cycle.execution_results[0].result, "HI");
/// assert!(cycle.result_text().starts_with("<<<[TOOL_RESULT]>>>"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Engine {
    protocols: ProtocolRegistry,
    default_protocol: String,
    executor: Executor,
    discovery: DiscoveryService,
    declarations: Arc<Mutex<DeclarationMap>>,
    grammars: Arc<Mutex<GrammarMap>>,
    /// The most a turn may hold ([`Engine::with_max_turn_bytes`]).
    max_turn_bytes: usize,
}

/// The default of [`Engine::with_max_turn_bytes`]: 64 MiB.
pub const DEFAULT_MAX_TURN_BYTES: usize = 64 << 20;

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("protocols", &self.protocols)
            .field("default_protocol", &self.default_protocol)
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `registry` speaking VCP, with a default executor.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Engine {
            protocols: ProtocolRegistry::with_defaults(),
            default_protocol: "vcp".to_string(),
            discovery: DiscoveryService::new(registry.clone()),
            executor: Executor::new(registry),
            declarations: Arc::default(),
            grammars: Arc::default(),
            max_turn_bytes: DEFAULT_MAX_TURN_BYTES,
        }
    }

    /// An engine over every tool registered with `#[tool]` or `#[tool_fn]` in the
    /// program (the link-time registry), speaking VCP: the common start.
    ///
    /// ```standalone_crate
    /// use tool_calling::prelude::*;
    ///
    /// /// Add two numbers.
    /// #[tool_fn(id = "sum", method = "add")]
    /// fn add(a: f64, b: f64) -> f64 {
    ///     a + b
    /// }
    ///
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let engine = Engine::from_inventory()?;
    ///     let prompt = engine.declarations(&ExecutionContext::default())?;
    ///     assert!(prompt.as_prompt().is_some_and(|p| p.contains("tool_name:「始」sum「末」")));
    ///     Ok(())
    /// }
    /// ```
    pub fn from_inventory() -> Result<Self, RegistryError> {
        Ok(Self::new(Arc::new(ToolRegistry::from_inventory()?)))
    }

    /// Speaks `protocol` by default: registers it (replacing a protocol of the same id)
    /// and uses it whenever the config names no protocol.
    #[must_use]
    pub fn with_protocol(mut self, protocol: Arc<dyn ToolCallingProtocol>) -> Self {
        self.default_protocol = protocol.id().to_string();
        // An empty id is refused; the default then names no protocol, and cycles say so.
        let _ = self.protocols.replace(protocol);
        self.declarations = Arc::default();
        self
    }

    /// Also knows `protocol`, for configs that name it; refuses an id already known.
    pub fn register_protocol(&mut self, protocol: Arc<dyn ToolCallingProtocol>) -> Result<(), ProtocolError> {
        self.protocols.register(protocol)
    }

    /// The most a turn may hold ([`DEFAULT_MAX_TURN_BYTES`], 64 MiB, unless set): the bytes of its text, reasoning, signatures, call ids, names and
    /// argument fragments, each native call or reasoning delta counting at least 64
    /// bytes (the cost of what it opens). A piece that would take the turn past it is
    /// not read, nor anything after it: the turn ends with
    /// [`FinishReason::Length`](crate::model::FinishReason::Length) and a
    /// `limit_exceeded` diagnostic, and a request it cut is incomplete, so it never
    /// runs and the model reads why. A text protocol's own reply limit (such as
    /// `VcpLimits::max_reply_bytes`) still applies to what its parser reads.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::stream;
    /// use tool_calling::engine::Engine;
    /// use tool_calling::model::FinishReason;
    /// use tool_calling::tools::ToolRegistry;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let engine = Engine::new(Arc::new(ToolRegistry::new())).with_max_turn_bytes(8);
    /// let endless = stream::repeat("la");
    /// let cycle = engine.run_stream(endless, &Default::default()).await.unwrap();
    /// assert_eq!(cycle.turn.text(), "lalalala");
    /// assert_eq!(cycle.finish_reason, FinishReason::Length);
    /// assert_eq!(cycle.diagnostics[0].kind.as_str(), "limit_exceeded");
    /// # });
    /// ```
    #[must_use]
    pub fn with_max_turn_bytes(mut self, max_turn_bytes: usize) -> Self {
        self.max_turn_bytes = max_turn_bytes;
        self
    }

    /// Runs calls with `executor` (policies, confirmation, retries, limits).
    #[must_use]
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.discovery = DiscoveryService::new(executor.registry().clone());
        self.executor = executor;
        self.declarations = Arc::default();
        self
    }

    /// Writes what the model reads in `language`: the VCP prompt and VCP's notes on
    /// requests it cannot run, and the executor's error results. The `vcp` protocol is
    /// replaced by a default one in that language (to keep other VCP options, register
    /// `VcpProtocol::new(options).with_language(language)` with
    /// [`with_protocol`](Self::with_protocol) afterwards); the executor keeps its other
    /// options.
    ///
    /// ```
    /// use tool_calling::prelude::*;
    /// use tool_calling::Language;
    ///
    /// let engine = Engine::new(ToolRegistry::new().into()).with_language(Language::Zh);
    /// assert!(engine.executor().options().messages.switched_off.contains("已对当前智能体关闭"));
    /// ```
    #[must_use]
    pub fn with_language(mut self, language: crate::Language) -> Self {
        let mut options = self.executor.options().clone();
        options.messages = crate::exec::ExecutorMessages::for_language(language);
        self.executor = self.executor.with_options(options);
        let vcp = crate::protocol::vcp::VcpProtocol::default().with_language(language);
        let _ = self.protocols.replace(Arc::new(vcp));
        self.declarations = Arc::default();
        self
    }

    /// The protocols the engine knows.
    pub fn protocols(&self) -> &ProtocolRegistry {
        &self.protocols
    }

    /// The id of the protocol used when a config names none.
    pub fn default_protocol(&self) -> &str {
        &self.default_protocol
    }

    /// The protocol `config` selects: the one it names, else the engine's default.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_calling::config::ToolCallConfig;
    /// use tool_calling::engine::Engine;
    /// use tool_calling::tools::ToolRegistry;
    /// let engine = Engine::new(Arc::new(ToolRegistry::new()));
    /// assert_eq!(engine.protocol_for(&ToolCallConfig::default()).unwrap().id(), "vcp");
    /// let err = engine.protocol_for(&ToolCallConfig::default().with_protocol("smoke-signals")).err().unwrap();
    /// assert!(err.to_string().contains("smoke-signals"));
    /// ```
    pub fn protocol_for(
        &self,
        config: &ToolCallConfig,
    ) -> Result<Arc<dyn ToolCallingProtocol>, ProtocolError> {
        self.protocols.get(config.protocol.as_deref().unwrap_or(&self.default_protocol))
    }

    /// The executor.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        self.executor.registry()
    }

    /// What the model is shown to offer the tools `ctx` enables, written by the protocol
    /// `ctx.config` selects, for `ctx.agent_id`: for VCP the prompt section
    /// ([`ToolDeclarations::as_prompt`]), for a native protocol the `tools` value
    /// ([`ToolDeclarations::as_native`]). Cached by protocol id, agent id and the config's
    /// [`prompt_hash`](ToolCallConfig::prompt_hash), until a tool is registered or
    /// [`invalidate_declarations`](Self::invalidate_declarations) is called.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_calling::engine::Engine;
    /// use tool_calling::exec::ExecutionContext;
    /// use tool_calling::tools::ToolRegistry;
    /// let engine = Engine::new(Arc::new(ToolRegistry::new()));
    /// let declarations = engine.declarations(&ExecutionContext::default()).unwrap();
    /// assert!(declarations.as_prompt().is_some(), "VCP by default: a prompt section");
    /// ```
    pub fn declarations(&self, ctx: &ExecutionContext) -> Result<Arc<ToolDeclarations>, EngineError> {
        let protocol = self.protocol_for(&ctx.config)?;
        Ok(self.declarations_for(protocol.as_ref(), &ctx.config, ctx.agent_id.as_deref()))
    }

    /// A grammar for constrained decoding that admits exactly the valid calls to the
    /// tools offered under `ctx` (the same tools as [`declarations`](Self::declarations)),
    /// in the config's protocol, as `constraint` asks (see [`grammar`](crate::grammar)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_calling::engine::Engine;
    /// use tool_calling::exec::ExecutionContext;
    /// use tool_calling::grammar::{Constraint, Dialect, GrammarError, Scope};
    /// use tool_calling::tools::ToolRegistry;
    /// let engine = Engine::new(Arc::new(ToolRegistry::new()));
    /// let ctx = ExecutionContext::default();
    /// // No tool is registered: no call can be written.
    /// let err = engine.grammar(&ctx, &Constraint::new(Dialect::Lark, Scope::Call)).unwrap_err();
    /// assert!(matches!(err, tool_calling::engine::EngineError::Grammar(GrammarError::NoMethods)));
    /// ```
    pub fn grammar(
        &self,
        ctx: &ExecutionContext,
        constraint: &crate::grammar::Constraint,
    ) -> Result<Arc<crate::grammar::Grammar>, EngineError> {
        let protocol = self.protocol_for(&ctx.config)?;
        Ok(self.grammar_for(protocol.as_ref(), &ctx.config, ctx.agent_id.as_deref(), constraint)?)
    }

    /// The grammar of the tools offered under `config`, cached like the declarations
    /// (building one takes milliseconds: see the grammar chapter's costs).
    pub(crate) fn grammar_for(
        &self,
        protocol: &dyn ToolCallingProtocol,
        config: &ToolCallConfig,
        agent_id: Option<&str>,
        constraint: &crate::grammar::Constraint,
    ) -> Result<Arc<crate::grammar::Grammar>, crate::grammar::GrammarError> {
        let key =
            (protocol.id().to_string(), agent_id.map(str::to_string), config.prompt_hash(), *constraint);
        let generation = self.registry().generation();
        let mut cache = self.grammars.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((made_at, grammar)) = cache.get(&key)
            && *made_at == generation
        {
            return Ok(grammar.clone());
        }
        let grammar =
            Arc::new(protocol.grammar(&config.enabled_definitions(self.discovery.registry()), constraint)?);
        cache.insert(key, (generation, grammar.clone()));
        Ok(grammar)
    }

    pub(crate) fn declarations_for(
        &self,
        protocol: &dyn ToolCallingProtocol,
        config: &ToolCallConfig,
        agent_id: Option<&str>,
    ) -> Arc<ToolDeclarations> {
        let key = (protocol.id().to_string(), agent_id.map(str::to_string), config.prompt_hash());
        let generation = self.registry().generation();
        if let Some((made_at, declarations)) = self.cache().get(&key)
            && *made_at == generation
        {
            return declarations.clone();
        }
        let declarations =
            Arc::new(protocol.tool_declarations(&config.enabled_definitions(self.discovery.registry())));
        self.cache().insert(key, (generation, declarations.clone()));
        declarations
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, DeclarationMap> {
        self.declarations.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the cached declarations and grammars (call it when tools' metadata or
    /// templates change).
    pub fn invalidate_declarations(&self) {
        self.cache().clear();
        self.grammars.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// How many declarations are cached.
    pub fn cached_declarations(&self) -> usize {
        self.cache().len()
    }

    /// The callable methods (or those `filter` selects).
    pub fn discovered_methods(&self, filter: Option<MethodFilter<'_>>) -> Vec<DiscoveredTool> {
        self.discovery.discovered_methods(filter)
    }
}
