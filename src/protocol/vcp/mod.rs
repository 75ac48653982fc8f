//! VCP, the plain-text tool protocol (`<<<[TOOL_REQUEST]>>>` blocks of
//! `key:「始」value「末」` fields).
//!
//! The dialect is described in full in the guide's [VCP chapter](crate::guide::vcp).
//! The parser is tolerant: unclosed values, missing END markers, truncated replies, stray
//! prose between fields, full-width colons, CRLF and reasoning blocks are all read, and
//! every irregularity is reported as a [`Diagnostic`](crate::protocol::Diagnostic) with byte
//! offsets. It never panics, and its cost is linear in the input. It is hand-written over
//! `memchr` searches, with no parser library (the [architecture chapter](crate::guide::architecture) says why).
//!
//! One parser underneath, one entry per shape of the answer:
//!
//! | the reply is | you want | entry |
//! | --- | --- | --- |
//! | whole | owned requests, diagnostics and normal text | [`VcpProtocol::parse`] → [`crate::protocol::ParseOutcome`] |
//! | whole | every request at once, borrowing from the text | [`VcpProtocol::parse_view`] → [`ParseView`] |
//! | whole | one request at a time, borrowing, and to stop early | [`VcpProtocol::view_events`] → [`ViewEvent`]s |
//! | arriving in chunks | events as soon as the text decides them | [`VcpProtocol::stream_parser`] → [`VcpStreamParser`] |
//!
//! Through the protocol trait the same parser reads a turn
//! ([`parse_turn`](crate::protocol::ToolCallingProtocol::parse_turn)) or a stream of
//! its deltas.
//!
//! ```
//! use tool_calling::protocol::vcp::VcpProtocol;
//!
//! let reply = "Let me look.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」directory-tree「末」,\n\
//!              path:「始」src「末」\n<<<[END_TOOL_REQUEST]>>>";
//! let outcome = VcpProtocol::default().parse(reply);
//! let request = &outcome.requests[0];
//! assert_eq!(request.tool_name, "directory-tree");
//! assert_eq!(request.arg_str("path"), Some("src"));
//! assert!(request.complete);
//! assert_eq!(request.span.start, 13);
//! ```

mod block;
mod fence;
mod fields;
mod format;
mod grammar;
mod incremental;
mod limits;
mod markers;
mod prompt;
mod routing;
mod scanner;
mod view;
mod visible;

pub(crate) use format::format_results;
pub use format::{FormatError, neutralize_markers};
pub use incremental::VcpStreamParser;
pub use limits::VcpLimits;
pub use prompt::{Language, VcpTemplates};
pub use routing::{CONTROL_KEYS, RouteError, command_alias, command_alias_config, route};
pub use view::{FieldView, ParseView, RequestView, ViewEvent, ViewEvents};

use serde_json::Value;
use std::sync::Arc;

use crate::Span;
pub use crate::protocol::RequestIdStyle;

use crate::model::{AssistantTurn, Message};
use crate::protocol::ParseOutcome;
use crate::protocol::ToolCallingProtocol;
use crate::protocol::{StreamParser, ToolDeclarations, TurnState};
use crate::tools::ToolCatalog;
use crate::tools::ToolDefinition;
use crate::{Invocation, ToolError, ToolExecutionResult, ToolRequest};

/// Parser options. The defaults are the dialect's: exact markers, fenced blocks parsed,
/// reasoning hidden, random request ids.
///
/// ```
/// use tool_calling::protocol::vcp::VcpOptions;
/// let options = VcpOptions::default().fuzzy_markers(true).skip_fenced(true);
/// assert!(options.fuzzy_markers && options.skip_fenced && !options.keep_reasoning);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct VcpOptions {
    /// Accept `<<[tool_request]>>`-style markers (2–4 brackets, any case) and
    /// `{始}`/`{末}` bracket variants (`--fuzzy`).
    pub fuzzy_markers: bool,
    /// Ignore START markers inside backtick code fences (`--skip-fenced`).
    pub skip_fenced: bool,
    /// Parse inside `<think>` blocks instead of hiding them (`--keep-think`).
    pub keep_reasoning: bool,
    /// The reply starts inside reasoning the prompt opened: its text is reasoning up to
    /// the first `</think>`; an opening tag first says it did not; a reply with no tag
    /// at all is reasoning never closed (hidden, with an
    /// [`UnclosedReasoning`](crate::protocol::DiagnosticKind::UnclosedReasoning)
    /// diagnostic). The rule is [`TextFormatOptions::starts_in_reasoning`]'s; it only
    /// matters while reasoning is hidden.
    ///
    /// [`TextFormatOptions::starts_in_reasoning`]: crate::protocol::textfmt::TextFormatOptions::starts_in_reasoning
    ///
    /// ```
    /// use tool_calling::protocol::vcp::{VcpOptions, VcpProtocol};
    /// let reply = "Plan: <<<[TOOL_REQUEST]>>>\ntool_name:「始」a「末」\n<<<[END_TOOL_REQUEST]>>></think>Done.";
    /// let vcp = VcpProtocol::new(VcpOptions::default().starts_in_reasoning(true));
    /// let parsed = vcp.parse(reply);
    /// assert!(parsed.requests.is_empty());
    /// assert_eq!(parsed.normal_text, "Done.");
    /// ```
    pub starts_in_reasoning: bool,
    /// How ids are assigned to requests without `request_id`.
    pub request_ids: RequestIdStyle,
    /// Bounds on what one reply can cost (see [`VcpLimits`] for the defaults).
    pub limits: VcpLimits,
}

impl VcpOptions {
    setters! {
        /// Sets [`fuzzy_markers`](Self::fuzzy_markers).
        pub fn fuzzy_markers(on: bool) { self.fuzzy_markers = on }

        /// Sets [`skip_fenced`](Self::skip_fenced).
        pub fn skip_fenced(on: bool) { self.skip_fenced = on }

        /// Sets [`keep_reasoning`](Self::keep_reasoning).
        pub fn keep_reasoning(on: bool) { self.keep_reasoning = on }

        /// Sets [`starts_in_reasoning`](Self::starts_in_reasoning).
        pub fn starts_in_reasoning(on: bool) { self.starts_in_reasoning = on }

        /// Sets [`request_ids`](Self::request_ids).
        pub fn request_ids(style: RequestIdStyle) { self.request_ids = style }

        /// Sets [`limits`](Self::limits).
        pub fn limits(limits: VcpLimits) { self.limits = limits }
    }
}

/// What kind of text a parser does not read requests in ([`VcpProtocol::hidden_spans`]).
///
/// ```
/// use tool_calling::protocol::vcp::{HiddenKind, VcpOptions, VcpProtocol};
/// let text = "<think>plan</think>Look:\n```\ncode\n```\n";
/// let vcp = VcpProtocol::new(VcpOptions::default().skip_fenced(true));
/// let kinds: Vec<HiddenKind> = vcp.hidden_spans(text).into_iter().map(|(_, kind)| kind).collect();
/// assert_eq!(kinds, [HiddenKind::Reasoning, HiddenKind::Fenced]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HiddenKind {
    /// A reasoning block.
    Reasoning,
    /// A fenced code block.
    Fenced,
}

/// The VCP protocol: parser options plus prompt templates.
///
/// Cheap to clone; `Send + Sync`, so one instance can serve many tasks.
///
/// ```
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::protocol::vcp::VcpOptions;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let vcp = VcpProtocol::new(VcpOptions::default().fuzzy_markers(true)).with_id("vcp-fuzzy");
/// assert_eq!(vcp.id(), "vcp-fuzzy");
/// let outcome = vcp.parse("<<[tool_request]>>\ntool_name:{始}calc_add{末}\n<<[end_tool_request]>>");
/// assert_eq!(outcome.requests[0].tool_name, "calc_add");
/// assert!(outcome.requests[0].complete);
/// ```
#[derive(Debug, Clone)]
pub struct VcpProtocol {
    id: std::borrow::Cow<'static, str>,
    options: VcpOptions,
    templates: Arc<VcpTemplates>,
}

impl Default for VcpProtocol {
    fn default() -> Self {
        Self::new(VcpOptions::default())
    }
}

impl VcpProtocol {
    /// A protocol with `options` and the English templates.
    pub fn new(options: VcpOptions) -> Self {
        VcpProtocol {
            id: std::borrow::Cow::Borrowed("vcp"),
            options,
            templates: Arc::clone(VcpTemplates::english()),
        }
    }

    /// Registers under `id` instead of `"vcp"`: give protocols with different templates
    /// different ids, since prompt caches are keyed by id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = std::borrow::Cow::Owned(id.into());
        self
    }

    /// Uses the built-in templates of `language`.
    #[must_use]
    pub fn with_language(mut self, language: Language) -> Self {
        self.templates = Arc::new(VcpTemplates::for_language(language));
        self
    }

    /// Uses `templates` for the definitions prompt and the notes to the model.
    #[must_use]
    pub fn with_templates(mut self, templates: VcpTemplates) -> Self {
        self.templates = Arc::new(templates);
        self
    }

    /// The parser options.
    pub fn options(&self) -> &VcpOptions {
        &self.options
    }

    /// The prompt templates.
    pub fn templates(&self) -> &VcpTemplates {
        &self.templates
    }

    /// Parses every request block in `text`, with the normal text around them: the
    /// owned form of [`parse_view`](Self::parse_view), and what
    /// [`parse_turn`](ToolCallingProtocol::parse_turn) returns for a turn of this text.
    pub fn parse(&self, text: &str) -> ParseOutcome {
        scanner::parse_owned(text, &self.options, Arc::clone(&self.templates))
    }

    /// The pull parser: the requests and diagnostics of `text` one at a time, each
    /// request borrowing from `text` like [`parse_view`](Self::parse_view)'s. It finds
    /// exactly what `parse_view` finds, but holds only one request at a time: the
    /// fastest way to read every request of a long reply, and a way to stop early.
    ///
    /// ```
    /// use tool_calling::protocol::vcp::{ViewEvent, VcpProtocol};
    /// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」\n<<<[END_TOOL_REQUEST]>>>";
    /// for event in VcpProtocol::default().view_events(reply) {
    ///     if let ViewEvent::Request(request) = event {
    ///         assert_eq!((request.tool_name.as_ref(), request.arg("a")), ("calc_add", Some("2")));
    ///     }
    /// }
    /// ```
    pub fn view_events<'a>(&self, text: &'a str) -> ViewEvents<'a> {
        ViewEvents::new(text, &self.options, Arc::clone(&self.templates))
    }

    /// Parses every request block in `text` without copying it: names, keys and values
    /// borrow from `text` ([`RequestView`]), except where the parser had to change them
    /// (`\r\n` folded, escaped markers restored, hidden reasoning cut out of a value).
    /// It finds exactly what [`parse`](Self::parse) finds, for a fraction of the
    /// allocations: use it to inspect or route requests before (or instead of) owning
    /// them.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// let reply = "Sure.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」 2 「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>";
    /// let view = VcpProtocol::default().parse_view(reply);
    /// let request = &view.requests[0];
    /// assert_eq!(request.tool_name, "calc_add");
    /// assert!(matches!(request.args[0].value, Cow::Borrowed("2")), "trimmed, not copied");
    /// assert_eq!(request.args[0].span.slice(reply), Some("a:「始」 2 「末」"));
    /// let owned = view.into_owned();
    /// assert_eq!(owned.requests[0].args["b"], "40");
    /// ```
    pub fn parse_view<'a>(&self, text: &'a str) -> ParseView<'a> {
        scanner::parse_view(text, &self.options, Arc::clone(&self.templates))
    }

    /// The parts of `text` this parser does not read requests in: reasoning
    /// (`<think>…</think>`, unless [`keep_reasoning`](VcpOptions::keep_reasoning)) and
    /// fenced code (with [`skip_fenced`](VcpOptions::skip_fenced)), as byte spans in
    /// order, for tools that show a reply with its hidden parts marked.
    ///
    /// ```
    /// use tool_calling::protocol::vcp::{HiddenKind, VcpProtocol};
    /// let text = "a<think>b</think>c";
    /// let hidden = VcpProtocol::default().hidden_spans(text);
    /// assert_eq!(hidden.len(), 1);
    /// assert_eq!((hidden[0].0.slice(text), hidden[0].1), (Some("<think>b</think>"), HiddenKind::Reasoning));
    /// ```
    pub fn hidden_spans(&self, text: &str) -> Vec<(Span, HiddenKind)> {
        let mut hidden = Vec::new();
        if !self.options.keep_reasoning {
            let filter =
                crate::protocol::reasoning::ReasoningFilter::new(self.options.starts_in_reasoning, None);
            let spans = crate::protocol::reasoning::hidden_spans_of(text, filter);
            hidden.extend(spans.into_iter().map(|span| (span, HiddenKind::Reasoning)));
        }
        if self.options.skip_fenced {
            let fences = fence::Fences::find(text);
            hidden.extend(
                fences.ranges().iter().map(|&(start, end)| (Span::new(start, end), HiddenKind::Fenced)),
            );
        }
        hidden.sort_by_key(|(span, _)| span.start);
        hidden
    }

    /// This protocol, for text that does not begin the reply (`auto` hands it the rest
    /// of a reply from its first marker on): the reply's start is behind it.
    pub(crate) fn mid_reply(&self) -> VcpProtocol {
        let mut vcp = self.clone();
        vcp.options.starts_in_reasoning = false;
        vcp
    }

    /// A streaming parser with this protocol's options: feed it the reply chunk by
    /// chunk. See [`VcpStreamParser`].
    pub fn stream_parser(&self) -> VcpStreamParser {
        VcpStreamParser::with_templates(self.options, Arc::clone(&self.templates))
    }

    /// Writes one request block that this parser reads back with the same fields.
    ///
    /// Values that hold markers or `末` are written in the escaped form
    /// (`「始ESCAPE」…「末ESCAPE」`). A value that holds an escaped closer cannot be
    /// written unambiguously and is refused, as are keys that the parser would not read
    /// back as written.
    ///
    /// ```
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// let vcp = VcpProtocol::default();
    /// let block = vcp.write_block("notes", [("text", "say <<<[END_TOOL_REQUEST]>>>")]).unwrap();
    /// let back = vcp.parse(&block);
    /// assert_eq!(back.requests[0].arg_str("text"), Some("say <<<[END_TOOL_REQUEST]>>>"));
    /// ```
    pub fn write_block<'a, I, K, V>(&self, tool_name: &str, args: I) -> Result<String, FormatError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str> + 'a,
        V: AsRef<str> + 'a,
    {
        format::write_block(tool_name, args)
    }
}

impl ToolCallingProtocol for VcpProtocol {
    fn id(&self) -> &str {
        &self.id
    }

    /// One request block: each argument a field, a string as it is, any other value as
    /// its JSON text (which the resolver reads back by the method's schema).
    fn write_call(&self, name: &str, args: &serde_json::Map<String, Value>) -> Option<String> {
        let fields = args.iter().map(|(key, value)| {
            let text = match value {
                Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
                other => std::borrow::Cow::Owned(other.to_string()),
            };
            (key.as_str(), text)
        });
        self.write_block(name, fields).ok()
    }

    /// The definitions prompt: a preamble that teaches the request syntax, then one
    /// definition block per method (nothing when no tool is offered).
    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        if tools.is_empty() {
            return ToolDeclarations::Prompt(String::new());
        }
        ToolDeclarations::Prompt(prompt::generate(tools, &self.templates))
    }

    /// Request blocks as [`write_call`](Self::write_call) writes them (no
    /// grammar with fuzzy markers on, nor in the JSON dialects).
    fn grammar(
        &self,
        tools: &[ToolDefinition],
        constraint: &crate::grammar::Constraint,
    ) -> Result<crate::grammar::Grammar, crate::grammar::GrammarError> {
        grammar::grammar(&self.options, self.id(), tools, constraint)
    }

    /// Reads the turn's text (its text blocks joined); native tool calls in the turn are
    /// not VCP and are left alone.
    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        self.parse(&turn.text())
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(VcpProtocol::stream_parser(self))
    }

    /// VCP's routing rules (see [`route`]), with the control keys taken out of the
    /// arguments.
    fn resolve(
        &self,
        request: &ToolRequest,
        _turn: &TurnState,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        route(catalog, request)
            .into_iter()
            .map(|call| call.map_err(|e| ToolError::not_found(e.message(&self.templates))))
            .collect()
    }

    /// One tool message holding every result block, in request order. Tool output is
    /// neutralised so that it can never close its block or forge a request.
    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        if results.is_empty() {
            return Vec::new();
        }
        vec![Message::tool(format::format_results(results)).with_tool_results(results.iter().cloned())]
    }
}
