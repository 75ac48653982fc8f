//! Protocols: how tools are offered to a model, how its tool requests are read back,
//! and how results are written for it.
//!
//! A [`ToolCallingProtocol`] sits at both ends of a cycle. Going in, it turns the
//! registry's [`ToolDefinition`]s into what the model is shown ([`ToolDeclarations`]: a
//! prompt section for a text protocol, a `tools` value for a native one). Coming out, it
//! reads an [`AssistantTurn`] into [`ToolRequest`]s (a text protocol reads the
//! turn's text, a native one its tool calls), resolves each request to the
//! [`Invocation`]s the executor runs by exact method name, and writes the results as
//! [`Message`]s. Protocols know nothing of execution.
//!
//! [`vcp`] is the built-in text protocol. Parsers report what they tolerated as
//! [`Diagnostic`]s; streaming parsers ([`StreamParser`]) report [`StreamEvent`]s as
//! a turn arrives.

mod diagnostic;
mod events;
pub(crate) mod ids;
use crate::grammar::{Constraint, Grammar, GrammarError};

pub mod native;
mod outcome;
mod profile;
pub mod reasoning;
mod registry;
pub mod textfmt;
pub mod vcp;

use serde_json::Value;

pub use diagnostic::{Diagnostic, DiagnosticKind};
pub use events::{EventSink, StreamCollector, StreamEvent, StreamParser};
pub use ids::RequestIdStyle;
pub use outcome::{ParseOutcome, TurnState};
pub use profile::{
    FallbackProtocol, ModelCapabilities, ModelProfiles, ProfileError, TEXT_PROTOCOL_IDS, ThinkingStyle,
};
pub use registry::{BuiltinOptions, BuiltinProtocol, ProtocolError, ProtocolRegistry};

#[cfg(feature = "runtime")]
pub(crate) use diagnostic::duplicate_id as duplicate_id_diagnostic;
pub(crate) use diagnostic::{floor_prefix, reply_too_long};
pub(crate) use events::sort_diagnostics;
#[cfg(feature = "runtime")]
pub(crate) use events::whole_turn_events;

use crate::model::{AssistantTurn, Message, ModelRequest};
use crate::tools::ToolCatalog;
use crate::tools::ToolDefinition;
use crate::{Invocation, ToolError, ToolExecutionResult, ToolRequest};

/// What a protocol adds to a [`ModelRequest`] to offer tools.
///
/// ```
/// use tool_calling::protocol::ToolDeclarations;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::tools::ToolDefinition;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let calc = ToolDefinition::new("calc", "Calculator").with_method(MethodDefinition::new("add", "Add."));
/// let declarations = VcpProtocol::default().tool_declarations(&[calc]);
/// assert!(matches!(&declarations, ToolDeclarations::Prompt(prompt) if prompt.contains("calc")));
/// assert!(!declarations.is_empty() && declarations.as_native().is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolDeclarations {
    /// A text protocol's section of the system prompt.
    Prompt(String),
    /// A native protocol's `tools` value, in the provider's shape.
    Native(Value),
}

impl ToolDeclarations {
    /// Adds the declarations to `request`: the prompt to
    /// [`tool_prompt`](ModelRequest::tool_prompt), the `tools` value to
    /// [`tools`](ModelRequest::tools). Empty declarations (no tool offered) add nothing.
    ///
    /// ```
    /// use tool_calling::model::ModelRequest;
    /// use tool_calling::protocol::ToolDeclarations;
    /// let mut request = ModelRequest::default();
    /// ToolDeclarations::Prompt("Tools: calc_add".into()).apply(&mut request);
    /// assert_eq!(request.tool_prompt.as_deref(), Some("Tools: calc_add"));
    /// ToolDeclarations::Native(serde_json::json!([])).apply(&mut request);
    /// assert_eq!(request.tools, None);
    /// ```
    pub fn apply(&self, request: &mut ModelRequest) {
        if self.is_empty() {
            return;
        }
        match self {
            ToolDeclarations::Prompt(prompt) => request.tool_prompt = Some(prompt.clone()),
            ToolDeclarations::Native(tools) => request.tools = Some(tools.clone()),
        }
    }

    /// The prompt text of a text protocol.
    pub fn as_prompt(&self) -> Option<&str> {
        match self {
            ToolDeclarations::Prompt(prompt) => Some(prompt),
            ToolDeclarations::Native(_) => None,
        }
    }

    /// The `tools` value of a native protocol.
    pub fn as_native(&self) -> Option<&Value> {
        match self {
            ToolDeclarations::Native(tools) => Some(tools),
            ToolDeclarations::Prompt(_) => None,
        }
    }

    /// Whether nothing is offered: an empty prompt, or a `tools` value that is null or an
    /// empty array.
    pub fn is_empty(&self) -> bool {
        match self {
            ToolDeclarations::Prompt(prompt) => prompt.is_empty(),
            ToolDeclarations::Native(Value::Array(tools)) => tools.is_empty(),
            ToolDeclarations::Native(value) => value.is_null(),
        }
    }
}

/// A way for a model to call tools: how tools are offered, how requests are read, how
/// each request names the methods to run, and how results go back.
///
/// The trait is object-safe and requires `Send + Sync`, so an engine can hold
/// `Arc<dyn ToolCallingProtocol>` and share it across tasks and conversations. A protocol
/// keeps no state between turns: what it learns while reading a turn goes into the
/// turn's [`TurnState`] ([`ParseOutcome::state`]), which it is handed back when it
/// resolves the turn's requests and writes their results.
///
/// A protocol of your own needs four methods; the others have defaults (requests name
/// methods exactly; the turn is read whole once it has ended). A small JSON protocol
/// that reads native-style calls:
///
/// ```
/// use tool_calling::model::{AssistantTurn, Message, ToolCall};
/// use tool_calling::protocol::{ParseOutcome, ToolCallingProtocol, ToolDeclarations, TurnState};
/// use tool_calling::{ToolRequest, ToolExecutionResult};
/// use tool_calling::tools::ToolDefinition;
///
/// /// Reads a turn's tool calls; answers with one text message per result.
/// struct JsonCalls;
///
/// impl ToolCallingProtocol for JsonCalls {
///     fn id(&self) -> &str {
///         "json-calls"
///     }
///     fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
///         let names: Vec<String> =
///             tools.iter().flat_map(|t| t.methods.iter().map(|m| m.full_name(&t.tool_id))).collect();
///         ToolDeclarations::Native(serde_json::json!(names))
///     }
///     fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
///         let requests = turn
///             .tool_calls()
///             .map(|call| {
///                 let request = ToolRequest::new(call.id.clone(), call.name.clone());
///                 match call.arguments_json() {
///                     Ok(serde_json::Value::Object(args)) => {
///                         args.into_iter().fold(request, |r, (k, v)| r.with_arg(k, v))
///                     }
///                     _ => request.with_problem("the arguments are not a JSON object"),
///                 }
///             })
///             .collect();
///         ParseOutcome::new(requests, Vec::new()).with_normal_text(turn.text())
///     }
///     fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
///         results.iter().map(|r| Message::tool(r.result.clone()).with_tool_results([r.clone()])).collect()
///     }
/// }
///
/// let protocol: std::sync::Arc<dyn ToolCallingProtocol> = std::sync::Arc::new(JsonCalls);
/// let turn = AssistantTurn::new().with_tool_call(ToolCall::new("c1", "calc_add", r#"{"a": 2}"#));
/// let parsed = protocol.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].tool_name, "calc_add");
/// assert_eq!(parsed.requests[0].args["a"], 2);
///
/// // The default stream parser reads the turn whole once it has ended.
/// let mut parser = protocol.stream_parser();
/// let mut events = Vec::new();
/// for delta in turn.into_deltas() {
///     parser.push(&delta, &mut events);
/// }
/// assert!(events.is_empty(), "nothing is decided before the end");
/// parser.finish(&mut events);
/// let mut collector = tool_calling::protocol::StreamCollector::new();
/// collector.extend(events);
/// assert_eq!(collector.into_outcome(), parsed);
/// ```
pub trait ToolCallingProtocol: Send + Sync {
    /// The protocol's id (`"vcp"`, `"openai"`, …), used to look it up and to key caches.
    fn id(&self) -> &str;

    /// What the model is shown to offer `tools`: a prompt section for a text protocol,
    /// the provider's `tools` value for a native one.
    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations;

    /// Reads every tool request out of an assistant turn: a text protocol reads the
    /// turn's text, a native one its tool calls. Never fails and never panics: damaged
    /// input yields incomplete requests and diagnostics.
    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome;

    /// A parser that reads a turn while it streams in. Whatever the chunking, the
    /// requests, diagnostics, normal text and state it reports must equal what
    /// [`parse_turn`](Self::parse_turn) returns for the whole turn. The default keeps
    /// the turn as it arrives and reads it with `parse_turn` when it ends; a protocol
    /// that can decide requests earlier (so that an engine starts them while the model
    /// is still writing) returns a parser of its own.
    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(events::WholeTurn::new(self))
    }

    /// The calls `request` asks for, each a method's exact full name with its arguments,
    /// or the error the model gets for a call that names nothing runnable. `turn` is
    /// what the protocol learnt while reading the request's turn; `catalog` says what is
    /// registered.
    ///
    /// The default names the method exactly: `tool_name` as written, arguments as they
    /// are. VCP overrides it with its routing rules (tool id + `command`, batches) and
    /// takes its control keys out of the arguments.
    fn resolve(
        &self,
        request: &ToolRequest,
        turn: &TurnState,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        let _ = (turn, catalog);
        vec![Ok(Invocation::exact(request))]
    }

    /// The messages that carry `results` back to the model, one result per request in
    /// request order, written for the turn they answer (`turn`): for VCP one text
    /// message of result blocks, for a native protocol the provider's result messages
    /// matched to each call by id.
    fn result_messages(&self, results: &[ToolExecutionResult], turn: &TurnState) -> Vec<Message>;

    /// The text this protocol has the model write for a call of `name` (a method's full
    /// name) with `args`, as its parser reads it back: how a host replays an earlier call
    /// into a conversation kept as text (a gateway re-sending its client's history, a
    /// few-shot example). `None` when the protocol's calls are not text (the native
    /// protocols) or this call cannot be written (a value the format has no way to hold).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// let vcp = VcpProtocol::default();
    /// let args = json!({"city": "Paris", "days": 3});
    /// let text = vcp.write_call("get_weather", args.as_object().unwrap()).unwrap();
    /// let back = vcp.parse(&text);
    /// assert_eq!(back.requests[0].tool_name, "get_weather");
    /// assert_eq!(back.requests[0].arg_str("days"), Some("3"));
    /// ```
    fn write_call(&self, name: &str, args: &serde_json::Map<String, Value>) -> Option<String> {
        let _ = (name, args);
        None
    }

    /// A grammar for constrained decoding that admits exactly the valid calls to
    /// `tools`' methods, written in this protocol, in the dialect and scope `constraint`
    /// asks for, within its bounds (see [`grammar`](crate::grammar)). Text the grammar
    /// admits must parse, with this protocol, into complete requests whose methods exist
    /// and whose arguments pass validation.
    ///
    /// The default has none ([`GrammarError::NoGrammar`]); VCP and the open-model
    /// text formats write theirs.
    fn grammar(&self, tools: &[ToolDefinition], constraint: &Constraint) -> Result<Grammar, GrammarError> {
        let _ = (tools, constraint);
        Err(GrammarError::NoGrammar { protocol: self.id().to_string() })
    }
}

/// What kind of JSON value `value` is ("a number", "an array", …), for messages to the
/// model.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
