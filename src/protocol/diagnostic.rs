//! Diagnostics: everything a parser noticed and tolerated.

use serde::{Deserialize, Serialize};

use crate::{Span, ToolRequest};

/// What kind of irregularity a [`Diagnostic`] reports.
///
/// None of these is fatal: a parser reports them and carries on. Kinds that make a
/// request incomplete are also listed in that request's `problems`.
///
/// ```
/// use tool_calling::protocol::DiagnosticKind;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let outcome = VcpProtocol::default().parse("<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」");
/// let kind = outcome.diagnostics[0].kind;
/// assert_eq!(kind, DiagnosticKind::MissingEndMarker);
/// assert_eq!(kind.to_string(), "missing_end_marker");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A value was never closed; it runs to the next marker or the end of the text.
    UnclosedValue,
    /// A block has no END marker: it ends at the next START marker or the end of text.
    MissingEndMarker,
    /// A request has no (or an empty) `tool_name`.
    MissingToolName,
    /// Text between fields that does not form a field (comments, stray words, a
    /// `key:` with no value) was skipped.
    StrayText,
    /// A key appeared more than once; the last occurrence wins. (VCP reports the first
    /// 16 repeats of a block one by one and the rest in one diagnostic over the block.)
    DuplicateKey,
    /// A block with no field at all: no request.
    EmptyBlock,
    /// A block holding a documentation value (`「始exp」`): an example, no request.
    ExampleBlock,
    /// A reasoning tag was never closed: everything after it is hidden.
    UnclosedReasoning,
    /// A START marker inside a fenced code block was ignored (`skip_fenced`).
    FencedMarker,
    /// A native protocol's payload could not be read (bad JSON, wrong shape).
    InvalidPayload,
    /// Two requests of one turn carry the same model-chosen id. Results stay matched to
    /// their requests by position; the id alone no longer tells them apart.
    DuplicateRequestId,
    /// The reply went past one of the parser's limits (its bytes, its requests, a
    /// block's fields, bytes or value length); what lies past it was not read.
    LimitExceeded,
}

impl DiagnosticKind {
    /// The snake_case name used in JSON output.
    pub fn as_str(&self) -> &'static str {
        match self {
            DiagnosticKind::UnclosedValue => "unclosed_value",
            DiagnosticKind::MissingEndMarker => "missing_end_marker",
            DiagnosticKind::MissingToolName => "missing_tool_name",
            DiagnosticKind::StrayText => "stray_text",
            DiagnosticKind::DuplicateKey => "duplicate_key",
            DiagnosticKind::EmptyBlock => "empty_block",
            DiagnosticKind::ExampleBlock => "example_block",
            DiagnosticKind::UnclosedReasoning => "unclosed_reasoning",
            DiagnosticKind::FencedMarker => "fenced_marker",
            DiagnosticKind::InvalidPayload => "invalid_payload",
            DiagnosticKind::DuplicateRequestId => "duplicate_request_id",
            DiagnosticKind::LimitExceeded => "limit_exceeded",
        }
    }
}

display_by_name!(DiagnosticKind, as_str);

/// One thing a parser noticed, with where it stands in the input.
///
/// ```
/// use tool_calling::protocol::DiagnosticKind;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let text = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」, // a note\n<<<[END_TOOL_REQUEST]>>>";
/// let outcome = VcpProtocol::default().parse(text);
/// let stray = &outcome.diagnostics[0];
/// assert_eq!(stray.kind, DiagnosticKind::StrayText);
/// assert_eq!(stray.span.slice(text), Some("// a note"));
/// assert!(stray.message.contains("// a note"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Diagnostic {
    /// What was noticed.
    pub kind: DiagnosticKind,
    /// A sentence saying what and where, for people and models.
    pub message: String,
    /// The bytes concerned. Serialised as flat `start` and `end` keys.
    #[serde(flatten)]
    pub span: Span,
}

impl Diagnostic {
    /// A diagnostic of `kind` over `span`.
    pub fn new(kind: DiagnosticKind, message: impl Into<String>, span: Span) -> Self {
        Diagnostic { kind, message: message.into(), span }
    }

    /// Logs the diagnostic (at `debug`).
    pub(crate) fn log(&self) {
        tracing::debug!(
            kind = self.kind.as_str(),
            start = self.span.start,
            end = self.span.end,
            "{}",
            self.message
        );
    }
}

/// The diagnostic for a request whose id an earlier request already carries.
pub(crate) fn duplicate_id(request: &ToolRequest) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::DuplicateRequestId,
        format!(
            "request id `{}` is used by an earlier request too; results are matched to requests by position",
            request.request_id
        ),
        request.span,
    )
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
pub(crate) fn floor_prefix(text: &str, max: usize) -> &str {
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.get(..cut).unwrap_or_default()
}

/// The diagnostic for a reply longer than `max` bytes: `read..total` was not read.
pub(crate) fn reply_too_long(read: usize, total: usize, max: usize) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::LimitExceeded,
        format!(
            "the reply is {total} bytes, more than the limit of {max}: the last {} are not read",
            total - read
        ),
        Span::new(read, total),
    )
}
