//! What a protocol parses out of model output: tool requests.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::Span;

/// Arguments of a request, in the order the model wrote them.
///
/// Text protocols such as VCP produce only [`serde_json::Value::String`] values; native
/// JSON protocols keep the JSON values the model sent.
pub type Args = IndexMap<String, serde_json::Value>;

/// Where a request's id came from.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ParsedToolRequest {
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
}

impl ParsedToolRequest {
    /// A complete request with a library-assigned id and no arguments.
    ///
    /// ```
    /// use tool_calling::ParsedToolRequest;
    /// let req = ParsedToolRequest::new("call_1", "calc_add").with_arg("a", 1).with_arg("b", 2);
    /// assert_eq!(req.args["a"], 1);
    /// assert!(req.complete);
    /// ```
    pub fn new(request_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ParsedToolRequest {
            request_id: request_id.into(),
            id_source: RequestIdSource::Assigned,
            tool_name: tool_name.into(),
            args: Args::new(),
            span: Span::default(),
            complete: true,
            problems: Vec::new(),
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
