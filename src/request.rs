//! What a protocol reads out of model output (tool requests), and what it resolves each
//! request to (invocations of registered methods, by exact name).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::Span;

/// Arguments of a request, in the order the model wrote them.
///
/// Text protocols such as VCP produce only [`serde_json::Value::String`] values; native
/// JSON protocols keep the JSON values the model sent.
///
/// ```
/// use tool_calling::Args;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\nb:「始」2「末」,\na:「始」1「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let args: &Args = &VcpProtocol::default().parse(reply).requests[0].args;
/// assert_eq!(args.keys().collect::<Vec<_>>(), ["b", "a"]);
/// assert_eq!(args["a"], serde_json::Value::String("1".into()));
/// ```
pub type Args = IndexMap<String, serde_json::Value>;

/// Where a request's id came from.
///
/// ```
/// use tool_calling::RequestIdSource;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」a「末」\n<<<[END_TOOL_REQUEST]>>>\n\
///              <<<[TOOL_REQUEST]>>>\ntool_name:「始」b「末」,\nrequest_id:「始」mine「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let outcome = VcpProtocol::default().parse(reply);
/// assert_eq!(outcome.requests[0].id_source, RequestIdSource::Assigned);
/// assert_eq!(outcome.requests[1].id_source, RequestIdSource::Model);
/// assert_eq!(outcome.requests[1].request_id, "mine");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestIdSource {
    /// The model wrote the id (VCP `request_id`, a native call id).
    Model,
    /// The model gave none; the library assigned one.
    Assigned,
}

/// One tool call found in model output.
///
/// A request is returned even when it is damaged (an unclosed value, no `tool_name`):
/// then [`complete`](Self::complete) is `false` and [`problems`](Self::problems) says
/// why, in words meant for the model to read. Nothing the model wrote is dropped
/// silently.
///
/// ```
/// use tool_calling::ToolRequest;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」,\na:「始」1「末」,\nb:「始」cut off";
/// let request: &ToolRequest = &VcpProtocol::default().parse(reply).requests[0];
/// assert_eq!(request.tool_name, "calc");
/// assert_eq!(request.arg_str("a"), Some("1"));
/// assert!(!request.complete);
/// assert!(request.problems[0].contains("`b`"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolRequest {
    /// The request's id: the model's own, or one the library assigned (see
    /// [`id_source`](Self::id_source)).
    pub request_id: String,
    /// Whether the model or the library chose [`request_id`](Self::request_id).
    pub id_source: RequestIdSource,
    /// The routing target as written (`""` when the model gave none).
    pub tool_name: String,
    /// Every other field, in order of appearance.
    pub args: Args,
    /// The whole block in the input (START marker to END marker, or to where the
    /// block was cut off). Serialised as flat `start` and `end` keys.
    #[serde(flatten)]
    pub span: Span,
    /// `true` when the request has a non-empty tool name and nothing in it was cut off.
    pub complete: bool,
    /// Why the request is not complete; empty when it is.
    pub problems: Vec<String>,
    /// The model asked not to wait for this call (VCP's `archery`): an engine starts it
    /// in the background, answers at once that it started, and reports only a failure,
    /// with a later turn's results. Set by the protocol; `false` unless it says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fire_and_forget: bool,
    /// For formats that write arguments as text (the XML styles of some open-weight
    /// models): each argument's text as written. [`args`](Self::args) holds them read
    /// without a schema; the protocol types them by the tool's schema when it resolves
    /// the request. Empty for other protocols.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub text_args: IndexMap<String, String>,
}

impl ToolRequest {
    /// A complete request with a library-assigned id and no arguments.
    ///
    /// ```
    /// use tool_calling::ToolRequest;
    /// let req = ToolRequest::new("call_1", "calc_add").with_arg("a", 1).with_arg("b", 2);
    /// assert_eq!(req.args["a"], 1);
    /// assert!(req.complete);
    /// ```
    pub fn new(request_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ToolRequest {
            request_id: request_id.into(),
            id_source: RequestIdSource::Assigned,
            tool_name: tool_name.into(),
            args: Args::new(),
            span: Span::default(),
            complete: true,
            problems: Vec::new(),
            fire_and_forget: false,
            text_args: IndexMap::new(),
        }
    }

    /// Adds (or replaces) an argument, keeping insertion order.
    #[must_use]
    pub fn with_arg(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.args.insert(key.into(), value.into());
        self
    }

    /// Sets where the id came from.
    #[must_use]
    pub fn with_id_source(mut self, source: RequestIdSource) -> Self {
        self.id_source = source;
        self
    }

    /// Sets the block's span.
    #[must_use]
    pub fn with_span(mut self, span: Span) -> Self {
        self.span = span;
        self
    }

    /// Sets [`fire_and_forget`](Self::fire_and_forget).
    #[must_use]
    pub fn with_fire_and_forget(mut self, fire_and_forget: bool) -> Self {
        self.fire_and_forget = fire_and_forget;
        self
    }

    /// Marks the request incomplete for `problem` (a sentence for the model).
    #[must_use]
    pub fn with_problem(mut self, problem: impl Into<String>) -> Self {
        self.complete = false;
        self.problems.push(problem.into());
        self
    }

    /// The text of the block in `input` (the text this request was parsed from).
    pub fn raw_block<'a>(&self, input: &'a str) -> Option<&'a str> {
        self.span.slice(input)
    }

    /// A string argument, if present and a JSON string.
    pub fn arg_str(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(serde_json::Value::as_str)
    }
}

/// One call of a registered method, by its exact full name (`toolId_methodName`), with
/// the arguments the model gave it.
///
/// A protocol resolves each [`ToolRequest`] to one or more invocations
/// ([`ToolCallingProtocol::resolve`](crate::protocol::ToolCallingProtocol::resolve)): most
/// protocols name the method exactly; VCP has its own routing rules (a tool id with a
/// `command`, batches of `command1`, `command2`, …). The executor runs invocations by
/// exact name and knows nothing of how they were named.
///
/// ```
/// use tool_calling::{Invocation, ToolRequest};
/// let request = ToolRequest::new("call_1", "calc_add").with_arg("a", 1);
/// let call = Invocation::exact(&request);
/// assert_eq!(call.method, "calc_add");
/// assert_eq!(call.args["a"], 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Invocation {
    /// The method's full name, `toolId_methodName`.
    pub method: String,
    /// The arguments, in the order the model wrote them.
    pub args: Args,
}

impl Invocation {
    /// A call of `method` with `args`.
    pub fn new(method: impl Into<String>, args: Args) -> Self {
        Invocation { method: method.into(), args }
    }

    /// The call a request names exactly: its `tool_name` as the method, its arguments as
    /// they are.
    pub fn exact(request: &ToolRequest) -> Self {
        Invocation { method: request.tool_name.clone(), args: request.args.clone() }
    }
}
