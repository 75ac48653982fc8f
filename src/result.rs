//! What executing a request produces, and what a whole cycle produces.

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::{Diagnostic, ParsedToolRequest};

/// One part of a tool's output (seed 002, plan 2): text, JSON, or an image. Each
/// protocol renders what it can: VCP writes text and a note for binary parts; native
/// adapters map parts to their content blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A JSON value.
    Json {
        /// The value.
        value: Value,
    },
    /// An image, base64-encoded (the form provider APIs take).
    Image {
        /// `image/png`, `image/jpeg`, …
        mime_type: String,
        /// The bytes, base64-encoded.
        data_base64: String,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// A JSON part.
    pub fn json(value: Value) -> Self {
        ContentPart::Json { value }
    }

    /// An image part from base64 data.
    pub fn image(mime_type: impl Into<String>, data_base64: impl Into<String>) -> Self {
        ContentPart::Image { mime_type: mime_type.into(), data_base64: data_base64.into() }
    }

    /// The part as text for protocols that carry only text: text as is, JSON
    /// serialised, an image as a note saying what was left out.
    ///
    /// ```
    /// use tool_calling::ContentPart;
    /// assert_eq!(
    ///     ContentPart::image("image/png", "iVBORw0KGgo=").render_text(),
    ///     "[image/png image of about 8 bytes attached; this protocol carries text only, so it is not shown]"
    /// );
    /// ```
    pub fn render_text(&self) -> String {
        match self {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Json { value } => value.to_string(),
            ContentPart::Image { mime_type, data_base64 } => {
                let padding = data_base64.bytes().rev().take_while(|&b| b == b'=').count();
                let bytes = (data_base64.len() / 4 * 3).saturating_sub(padding);
                format!(
                    "[{mime_type} image of about {bytes} bytes attached; this protocol carries text only, so it is not shown]"
                )
            }
        }
    }
}

/// Whether a tool call succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The tool ran and returned a value.
    Success,
    /// The call failed; see [`ToolExecutionResult::error_kind`].
    Error,
}

impl ExecutionStatus {
    /// `"success"` or `"error"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExecutionStatus::Success => "success",
            ExecutionStatus::Error => "error",
        }
    }
}

/// Why a call failed. Every failed result carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments did not satisfy the method's schema, or the request was incomplete.
    Validation,
    /// No registered method matches the request.
    NotFound,
    /// A policy, a toggle or the user refused the call.
    Permission,
    /// The call ran out of time.
    Timeout,
    /// The cycle was cancelled before the call finished.
    Cancelled,
    /// A network failure while calling a remote tool.
    Network,
    /// The tool itself failed (returned an error or panicked).
    Execution,
}

impl ErrorKind {
    /// The snake_case name used in JSON output.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Validation => "validation",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Permission => "permission",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Network => "network",
            ErrorKind::Execution => "execution",
        }
    }

    /// Whether retrying the same call may succeed (timeouts and network failures).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ErrorKind::Timeout | ErrorKind::Network)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of running one [`ParsedToolRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolExecutionResult {
    /// The id of the request this answers.
    pub request_id: String,
    /// The tool name, as resolved (or as requested, when resolution failed).
    pub tool_name: String,
    /// Success or error.
    pub status: ExecutionStatus,
    /// The tool's output (non-string values serialised as JSON) or the error text.
    pub result: String,
    /// Why it failed; `None` on success.
    pub error_kind: Option<ErrorKind>,
    /// Wall time of the call in milliseconds.
    pub duration_ms: u64,
    /// The output's parts when the tool returned several (or non-text) parts;
    /// [`result`](Self::result) then holds their text rendering. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
}

impl ToolExecutionResult {
    /// A successful result.
    ///
    /// ```
    /// use tool_calling::{ExecutionStatus, ToolExecutionResult};
    /// let ok = ToolExecutionResult::success("call_1", "calc_add", "3").with_duration_ms(2);
    /// assert_eq!(ok.status, ExecutionStatus::Success);
    /// assert_eq!(ok.duration_ms, 2);
    /// ```
    pub fn success(
        request_id: impl Into<String>,
        tool_name: impl Into<String>,
        result: impl Into<String>,
    ) -> Self {
        ToolExecutionResult {
            request_id: request_id.into(),
            tool_name: tool_name.into(),
            status: ExecutionStatus::Success,
            result: result.into(),
            error_kind: None,
            duration_ms: 0,
            parts: Vec::new(),
        }
    }

    /// A successful result made of `parts`; its text is their rendering, one per line.
    pub fn success_parts(
        request_id: impl Into<String>,
        tool_name: impl Into<String>,
        parts: Vec<ContentPart>,
    ) -> Self {
        let text = parts.iter().map(ContentPart::render_text).collect::<Vec<_>>().join("\n");
        let mut result = Self::success(request_id, tool_name, text);
        result.parts = parts;
        result
    }

    /// A failed result of `kind` with a message written for the model.
    pub fn error(
        request_id: impl Into<String>,
        tool_name: impl Into<String>,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> Self {
        ToolExecutionResult {
            request_id: request_id.into(),
            tool_name: tool_name.into(),
            status: ExecutionStatus::Error,
            result: message.into(),
            error_kind: Some(kind),
            duration_ms: 0,
            parts: Vec::new(),
        }
    }

    /// Sets the measured duration.
    #[must_use]
    pub fn with_duration_ms(mut self, duration_ms: u64) -> Self {
        self.duration_ms = duration_ms;
        self
    }

    /// Whether the call succeeded.
    pub fn is_success(&self) -> bool {
        self.status == ExecutionStatus::Success
    }
}

/// Everything one parse → execute cycle produced.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallCycleResult {
    /// Whether the reply held any request at all.
    pub has_tool_requests: bool,
    /// The requests, in order of appearance.
    pub parsed_requests: Vec<ParsedToolRequest>,
    /// One result per parsed request, in the same order.
    pub execution_results: Vec<ToolExecutionResult>,
    /// What the parser noticed.
    pub diagnostics: Vec<Diagnostic>,
}

impl ToolCallCycleResult {
    /// A cycle result from parsed requests and their results.
    pub fn new(
        parsed_requests: Vec<ParsedToolRequest>,
        execution_results: Vec<ToolExecutionResult>,
        diagnostics: Vec<Diagnostic>,
    ) -> Self {
        ToolCallCycleResult {
            has_tool_requests: !parsed_requests.is_empty(),
            parsed_requests,
            execution_results,
            diagnostics,
        }
    }
}
