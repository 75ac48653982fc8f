//! What reading one turn gives: the requests, the diagnostics, the normal text, and what
//! the protocol learnt about the turn ([`TurnState`]).

use serde::{Deserialize, Serialize};

use super::Diagnostic;
use super::textfmt::Detected;
use crate::ToolRequest;

/// What a protocol learnt about one turn while reading it, handed back to the protocol
/// when it resolves the turn's requests and writes their results.
///
/// A protocol keeps nothing between turns: everything a turn's later steps need travels
/// with the turn, in the [`ParseOutcome`] (and, while a reply streams in, in a
/// [`StreamEvent::TurnState`](super::StreamEvent::TurnState) event). For most protocols
/// there is nothing to keep. A protocol that reads several dialects (`auto`, which reads
/// VCP and every open-model format) records the one the turn was written in, so that
/// the turn's results go back in it, whichever other conversations the same protocol
/// serves meanwhile.
///
/// ```
/// use tool_calling::protocol::TurnState;
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
///
/// let auto = AutoProtocol::new();
/// let hermes = auto.parse(r#"<tool_call>{"name": "clock", "arguments": {}}</tool_call>"#);
/// assert_eq!(hermes.state, TurnState::dialect(Detected::Format(TextFormat::Hermes)));
/// let vcp = auto.parse("<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>");
/// assert_eq!(vcp.state.dialect, Some(Detected::Vcp));
/// assert_eq!(auto.parse("No call.").state, TurnState::default());
/// // It travels as the protocol's id; an id no protocol has is refused where it is read.
/// assert_eq!(serde_json::to_string(&hermes.state).unwrap(), r#"{"dialect":"hermes"}"#);
/// assert!(serde_json::from_str::<TurnState>(r#"{"dialect":"smoke-signals"}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnState {
    /// The dialect the turn is written in, for a protocol that reads several (`auto`:
    /// VCP or a text format); `None` when the protocol has one, or the turn held no
    /// markup to tell. Serialized as the protocol's id (`vcp`, `hermes`, …); an id that
    /// names no protocol fails to deserialize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Detected>,
}

impl TurnState {
    /// A turn written in `dialect`.
    pub fn dialect(dialect: Detected) -> Self {
        TurnState { dialect: Some(dialect) }
    }

    /// Whether the protocol learnt nothing about the turn.
    pub fn is_empty(&self) -> bool {
        self.dialect.is_none()
    }
}

/// The result of reading one turn: the requests found, the diagnostics, the normal text,
/// and the turn's [`TurnState`]. Every protocol's parse gives this type; VCP also offers
/// a borrowed form ([`ParseView`](super::vcp::ParseView)).
///
/// ```
/// use tool_calling::protocol::ParseOutcome;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "Two calls.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>\n\
///              <<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_sub「末」,\na:「始」cut off";
/// let outcome: ParseOutcome = VcpProtocol::default().parse(reply);
/// assert!(outcome.has_requests());
/// assert_eq!(outcome.requests.len(), 2);
/// let runnable: Vec<_> = outcome.complete_requests().map(|r| r.tool_name.as_str()).collect();
/// assert_eq!(runnable, ["calc_add"]);
/// assert_eq!(outcome.normal_text, "Two calls.\n\n");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ParseOutcome {
    /// Requests in order of appearance, complete or not.
    pub requests: Vec<ToolRequest>,
    /// Diagnostics in order of their start offset.
    pub diagnostics: Vec<Diagnostic>,
    /// Everything the model wrote that is neither call markup nor hidden reasoning: for a
    /// text protocol the prose around the calls, for a native one the turn's text.
    #[serde(default)]
    pub normal_text: String,
    /// What the protocol learnt about the turn, for resolving its requests and writing
    /// their results.
    #[serde(default, skip_serializing_if = "TurnState::is_empty")]
    pub state: TurnState,
}

impl ParseOutcome {
    /// An outcome from its requests and diagnostics, with no normal text and an empty
    /// state.
    pub fn new(requests: Vec<ToolRequest>, diagnostics: Vec<Diagnostic>) -> Self {
        ParseOutcome { requests, diagnostics, normal_text: String::new(), state: TurnState::default() }
    }

    setters! {
        /// Sets [`normal_text`](Self::normal_text).
        pub fn with_normal_text(normal_text: impl Into<String>) { self.normal_text = normal_text.into() }

        /// Sets [`state`](Self::state).
        pub fn with_state(state: TurnState) { self.state = state }
    }

    /// Whether any request (complete or not) was found.
    pub fn has_requests(&self) -> bool {
        !self.requests.is_empty()
    }

    /// The requests that are complete (the ones an engine would run).
    pub fn complete_requests(&self) -> impl Iterator<Item = &ToolRequest> {
        self.requests.iter().filter(|r| r.complete)
    }

    /// Adds a [`DuplicateRequestId`](super::DiagnosticKind::DuplicateRequestId) diagnostic
    /// for every request whose id an earlier request of the same turn already carries,
    /// and keeps the diagnostics in order. Returns how many were found.
    ///
    /// ```
    /// use tool_calling::ToolRequest;
    /// use tool_calling::protocol::DiagnosticKind;
    /// use tool_calling::protocol::ParseOutcome;
    /// let mut outcome = ParseOutcome::new(
    ///     vec![ToolRequest::new("a", "calc_add"), ToolRequest::new("a", "calc_sub")],
    ///     Vec::new(),
    /// );
    /// assert_eq!(outcome.flag_duplicate_ids(), 1);
    /// assert_eq!(outcome.diagnostics[0].kind, DiagnosticKind::DuplicateRequestId);
    /// ```
    pub fn flag_duplicate_ids(&mut self) -> usize {
        let mut seen = std::collections::HashSet::with_capacity(self.requests.len());
        let mut found = 0;
        for request in &self.requests {
            if !seen.insert(request.request_id.as_str()) {
                found += 1;
                self.diagnostics.push(super::diagnostic::duplicate_id(request));
            }
        }
        if found > 0 {
            super::sort_diagnostics(&mut self.diagnostics);
        }
        found
    }
}
