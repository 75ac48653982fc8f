//! What running a request produces: one [`ToolExecutionResult`] per request, with an
//! [`ErrorKind`] when it failed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One part of a tool's output: text, JSON, or an image. Each
/// protocol renders what it can: VCP writes text and a note for binary parts; native
/// adapters map parts to their content blocks.
///
/// ```
/// use serde_json::json;
/// use tool_calling::{ContentPart, ToolExecutionResult};
/// let parts = vec![ContentPart::text("sum:"), ContentPart::json(json!({"value": 3}))];
/// assert!(matches!(&parts[1], ContentPart::Json { value } if value["value"] == 3));
/// let result = ToolExecutionResult::success_parts("call_1", "calc_add", parts);
/// assert_eq!(result.result, "sum:\n{\"value\":3}");
/// ```
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
///
/// ```
/// use tool_calling::{ErrorKind, ExecutionStatus, ToolExecutionResult};
/// let failed = ToolExecutionResult::error("call_1", "calc_div", ErrorKind::Execution, "division by zero");
/// assert_eq!(failed.status, ExecutionStatus::Error);
/// assert_eq!(failed.status.as_str(), "error");
/// assert_eq!(ExecutionStatus::Success.as_str(), "success");
/// ```
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
///
/// ```
/// use tool_calling::{ErrorKind, ToolError};
/// let error = ToolError::validation("`a` must be a number");
/// assert_eq!(error.kind, ErrorKind::Validation);
/// assert!(!error.kind.is_retryable() && ErrorKind::Timeout.is_retryable());
/// assert_eq!(ErrorKind::NotFound.to_string(), "not_found");
/// ```
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

display_by_name!(ErrorKind, as_str);

/// The outcome of running one [`ToolRequest`](crate::ToolRequest).
///
/// ```
/// use tool_calling::{ErrorKind, ToolExecutionResult};
/// let ok = ToolExecutionResult::success("call_1", "calc_add", "3");
/// assert!(ok.is_success() && ok.error_kind.is_none());
/// let late = ToolExecutionResult::error("call_2", "web_fetch", ErrorKind::Timeout, "timed out after 30 s");
/// assert!(!late.is_success());
/// assert_eq!(late.error_kind, Some(ErrorKind::Timeout));
/// assert_eq!(late.result, "timed out after 30 s");
/// ```
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
    /// The output's parts when the tool returned parts or a JSON value (one `Json`
    /// part, so that protocols that carry JSON keep it); [`result`](Self::result) then
    /// holds their text rendering. Empty for text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
    /// For a request its protocol resolved to several calls (a VCP batch): each call's
    /// own result, in order (named by the method it ran). The request's
    /// [`status`](Self::status) is then an error when any call failed, its
    /// [`error_kind`](Self::error_kind) the first failure's, and its
    /// [`result`](Self::result) each call's text on a line of its own; a protocol may
    /// write the calls its own way. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolExecutionResult>,
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
        Self::finished(request_id.into(), tool_name.into(), result.into(), None)
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
        Self::finished(request_id.into(), tool_name.into(), message.into(), Some(kind))
    }

    /// A result of text: a success, or (with `error_kind`) a failure of that kind.
    fn finished(
        request_id: String,
        tool_name: String,
        result: String,
        error_kind: Option<ErrorKind>,
    ) -> Self {
        let status = if error_kind.is_some() { ExecutionStatus::Error } else { ExecutionStatus::Success };
        ToolExecutionResult {
            request_id,
            tool_name,
            status,
            result,
            error_kind,
            duration_ms: 0,
            parts: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// One result for a request that ran as several `calls` (each with its own method
    /// name, status and text): see [`calls`](Self::calls).
    ///
    /// ```
    /// use tool_calling::{ErrorKind, ToolExecutionResult};
    /// let batch = ToolExecutionResult::batch("req_1", "calc", vec![
    ///     ToolExecutionResult::success("req_1", "calc_add", "3"),
    ///     ToolExecutionResult::error("req_1", "calc_divide", ErrorKind::Execution, "division by zero"),
    /// ]);
    /// assert!(!batch.is_success());
    /// assert_eq!(batch.error_kind, Some(ErrorKind::Execution));
    /// assert_eq!(batch.result, "calc_add: 3\ncalc_divide (error): division by zero");
    /// assert_eq!(batch.calls.len(), 2);
    /// ```
    pub fn batch(
        request_id: impl Into<String>,
        tool_name: impl Into<String>,
        calls: Vec<ToolExecutionResult>,
    ) -> Self {
        let text = calls
            .iter()
            .map(|call| match call.status {
                ExecutionStatus::Success => format!("{}: {}", call.tool_name, call.result),
                ExecutionStatus::Error => format!("{} (error): {}", call.tool_name, call.result),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut result = match calls.iter().find_map(|call| call.error_kind) {
            None => Self::success(request_id, tool_name, text),
            Some(kind) => Self::error(request_id, tool_name, kind, text),
        };
        result.calls = calls;
        result
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

/// A failed tool call: a kind (for retries and reporting) and a message written for the
/// model to act on.
///
/// Tools return it from their methods; the executor returns it for every check that
/// refuses a call (unknown method, not agent-callable, switched off, invalid arguments,
/// denied, not confirmed, timed out, cancelled).
///
/// ```
/// use tool_calling::{ErrorKind, ToolError};
/// let error = ToolError::network("connection reset");
/// assert_eq!(error.kind, ErrorKind::Network);
/// assert!(error.kind.is_retryable());
/// assert_eq!(error.to_string(), "connection reset");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ToolError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What went wrong, for the model.
    pub message: String,
    /// How long the remote side asked to wait before trying again (an HTTP
    /// `Retry-After`); the executor's retries honour it.
    pub retry_after: Option<std::time::Duration>,
}

impl ToolError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError { kind, message: message.into(), retry_after: None }
    }

    /// The tool itself failed.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Execution, message)
    }

    /// The arguments were not acceptable.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Validation, message)
    }

    /// A remote call failed.
    pub fn network(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Network, message)
    }

    /// No registered method matches.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// A toggle, a policy or a person refused the call.
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Permission, message)
    }

    /// Asks a retry to wait `wait` first (what a server's `Retry-After` said).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_calling::ToolError;
    ///
    /// let busy = ToolError::network("HTTP 503").with_retry_after(Duration::from_secs(2));
    /// assert_eq!(busy.retry_after, Some(Duration::from_secs(2)));
    /// ```
    #[must_use]
    pub fn with_retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }
}
