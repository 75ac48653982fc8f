//! What can go wrong in a gateway request, and how each front writes it.

use axum::http::StatusCode;
use serde_json::Value;

use crate::providers::anthropic::{ApiError, ErrorPayload};
use crate::providers::openai_chat::{ChatError, ChatErrorObject};

/// Why the gateway could not answer a request.
///
/// Each error has the HTTP status it is answered with, and is written in the shape of
/// the front that received the request (OpenAI's `{"error": {…}}` for Chat Completions
/// and Responses, Anthropic's `{"type": "error", "error": {…}}` for Messages); in a
/// stream already under way it is the stream's last event.
///
/// ```
/// use tool_calling::gateway::GatewayError;
/// let error = GatewayError::Timeout { seconds: 30.0 };
/// assert_eq!(error.status(), 504);
/// assert_eq!(error.kind(), "timeout");
/// assert_eq!(error.to_string(), "the upstream did not finish within 30 s");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The client's request is malformed: not JSON, a field of the wrong shape, a tool
    /// named twice. `param` names the field when one is to blame.
    #[error("invalid request{}: {message}", param.as_deref().map(|p| format!(" (`{p}`)")).unwrap_or_default())]
    BadRequest {
        /// What is wrong.
        message: String,
        /// The field at fault, as a path (`messages[2].tool_call_id`).
        param: Option<String>,
    },
    /// The request body is longer than the gateway takes
    /// ([`GatewayConfig::max_request_bytes`](super::GatewayConfig::max_request_bytes)).
    #[error("the request body is longer than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The upstream could not be reached (connection refused, reset, DNS).
    #[error("the upstream could not be reached: {reason}")]
    Unreachable {
        /// What the connection attempt ran into.
        reason: String,
    },
    /// The upstream answered with an error status.
    #[error("the upstream answered {status}: {message}")]
    Upstream {
        /// Its HTTP status.
        status: u16,
        /// Its error message (the `error.message` of its body, else the body).
        message: String,
    },
    /// The upstream's stream broke: cut off, not server-sent events of Chat Completions
    /// chunks, an error event, or longer than the reply limit.
    #[error("the upstream's reply broke off: {reason}")]
    Stream {
        /// What happened.
        reason: String,
    },
    /// The upstream did not finish within the request's time limit.
    #[error("the upstream did not finish within {seconds} s")]
    Timeout {
        /// The limit, in seconds.
        seconds: f64,
    },
}

impl GatewayError {
    /// A malformed request, `param` being the field at fault.
    pub(crate) fn bad(message: impl Into<String>, param: impl Into<Option<String>>) -> Self {
        GatewayError::BadRequest { message: message.into(), param: param.into() }
    }

    /// The HTTP status the error is answered with: 400 for a bad request, 413 for one
    /// too long, 502 when the
    /// upstream failed or broke off, 504 on a timeout, the upstream's own status for an
    /// error it answered with (a 4xx the client caused, such as an unknown model).
    pub fn status(&self) -> u16 {
        match self {
            GatewayError::BadRequest { .. } => 400,
            GatewayError::TooLarge { .. } => 413,
            GatewayError::Unreachable { .. } | GatewayError::Stream { .. } => 502,
            GatewayError::Upstream { status, .. } if (400..600).contains(status) => *status,
            GatewayError::Upstream { .. } => 502,
            GatewayError::Timeout { .. } => 504,
        }
    }

    /// A short name of the error's kind, the `type` of the OpenAI-shaped error body.
    pub fn kind(&self) -> &'static str {
        match self {
            GatewayError::BadRequest { .. } => "invalid_request_error",
            GatewayError::TooLarge { .. } => "request_too_large",
            GatewayError::Unreachable { .. } => "upstream_unreachable",
            GatewayError::Upstream { .. } => "upstream_error",
            GatewayError::Stream { .. } => "upstream_stream_error",
            GatewayError::Timeout { .. } => "timeout",
        }
    }

    pub(crate) fn http_status(&self) -> StatusCode {
        StatusCode::from_u16(self.status()).unwrap_or(StatusCode::BAD_GATEWAY)
    }

    /// OpenAI's error body.
    pub(crate) fn openai(&self) -> ChatError<'_> {
        let param = match self {
            GatewayError::BadRequest { param, .. } => param.as_deref(),
            _ => None,
        };
        let error =
            ChatErrorObject { message: self.to_string(), kind: self.kind(), param, code: self.kind() };
        ChatError { error }
    }

    /// Anthropic's error body.
    pub(crate) fn anthropic(&self) -> Value {
        let kind = match self {
            GatewayError::BadRequest { .. } => "invalid_request_error",
            GatewayError::TooLarge { .. } => "request_too_large",
            GatewayError::Timeout { .. } => "timeout_error",
            GatewayError::Upstream { status: 429, .. } => "rate_limit_error",
            GatewayError::Upstream { status: 529, .. } => "overloaded_error",
            _ => "api_error",
        };
        let error = ApiError { kind: Some(kind.into()), message: Some(self.to_string()) };
        let body = ErrorPayload { kind: Some("error".into()), error: Some(error), ..ErrorPayload::default() };
        crate::providers::to_value(&body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_shapes() {
        let bad = GatewayError::bad("`messages` is missing", Some("messages".to_string()));
        assert_eq!(bad.status(), 400);
        assert_eq!(bad.to_string(), "invalid request (`messages`): `messages` is missing");
        assert_eq!(serde_json::to_value(bad.openai()).unwrap()["error"]["param"], "messages");
        assert_eq!(bad.anthropic()["error"]["type"], "invalid_request_error");
        let limited = GatewayError::Upstream { status: 429, message: "slow down".into() };
        assert_eq!(limited.status(), 429);
        assert_eq!(limited.anthropic()["error"]["type"], "rate_limit_error");
        let odd = GatewayError::Upstream { status: 302, message: "moved".into() };
        assert_eq!(odd.status(), 502, "a status that is no error is the upstream's fault");
        assert_eq!(GatewayError::Unreachable { reason: "refused".into() }.status(), 502);
        let stream = GatewayError::Stream { reason: "cut".into() };
        assert_eq!(serde_json::to_value(stream.openai()).unwrap()["error"]["type"], "upstream_stream_error");
        assert_eq!(GatewayError::Timeout { seconds: 1.5 }.anthropic()["error"]["type"], "timeout_error");
    }
}
