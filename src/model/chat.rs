//! The model seen from the engine: given a request, it returns a turn, whole or as a
//! stream of deltas.

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};

use super::{AssistantTurn, ModelRequest, TurnDelta};

/// A chat model: given a [`ModelRequest`], it returns the assistant's turn.
///
/// Implement [`complete`](Self::complete) for a model client; implement
/// [`stream`](Self::stream) as well when the provider streams, so that an engine can run
/// tools before the turn has ended. The default `stream` completes the turn, then
/// delivers it as deltas.
///
/// ```
/// use tool_calling::model::{AssistantTurn, ChatModel, ChatModelError, ModelRequest};
///
/// /// Answers every request with the same text.
/// struct Parrot;
/// impl ChatModel for Parrot {
///     fn complete<'a>(
///         &'a self,
///         _request: &'a ModelRequest,
///     ) -> futures::future::BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
///         Box::pin(async { Ok(AssistantTurn::from_text("Polly wants a tool.")) })
///     }
/// }
/// # futures::executor::block_on(async {
/// use futures::StreamExt;
/// let deltas: Vec<_> = Parrot.stream(&ModelRequest::default()).collect().await;
/// assert_eq!(deltas.len(), 1);
/// # });
/// ```
pub trait ChatModel: Send + Sync {
    /// What the client would change in `request` before sending it: options the model
    /// does not support (dropped), combinations the provider would refuse (adjusted). An
    /// engine records them with the turn. The default changes nothing.
    fn request_notes(&self, request: &ModelRequest) -> Vec<super::RequestNote> {
        let _ = request;
        Vec::new()
    }

    /// The assistant's next turn.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>>;

    /// The assistant's next turn as it streams in. The default completes the turn,
    /// then yields it as deltas ([`AssistantTurn::into_deltas`]).
    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<TurnDelta, ChatModelError>> {
        stream::once(self.complete(request))
            .flat_map(|turn| {
                let deltas: Vec<Result<TurnDelta, ChatModelError>> = match turn {
                    Ok(turn) => turn.into_deltas().into_iter().map(Ok).collect(),
                    Err(error) => vec![Err(error)],
                };
                stream::iter(deltas)
            })
            .boxed()
    }
}

/// A failure of a chat model: what went wrong, and whether asking again may help
/// ([`is_retryable`](Self::is_retryable), [`retry_after`](Self::retry_after)).
///
/// ```
/// use std::time::Duration;
/// use tool_calling::model::ChatModelError;
///
/// let busy = ChatModelError::Status {
///     status: 429,
///     kind: Some("rate_limit_exceeded".into()),
///     message: "Rate limit reached".into(),
///     retry_after: Some(Duration::from_secs(2)),
/// };
/// assert!(busy.is_retryable());
/// assert_eq!(busy.retry_after(), Some(Duration::from_secs(2)));
/// assert!(!ChatModelError::other("script exhausted").is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatModelError {
    /// The provider answered with an error status.
    #[error("the provider answered HTTP {status}{}: {message}", kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default())]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The provider's error type or code, if its body named one.
        kind: Option<String>,
        /// The provider's message (or the start of the body).
        message: String,
        /// How long the provider asked to wait before trying again.
        retry_after: Option<std::time::Duration>,
    },
    /// The request could not be sent, or the connection failed while the response was
    /// read.
    #[error("transport error while {stage}: {message}")]
    Transport {
        /// What the client was doing (`sending the request`, `reading the response`).
        stage: &'static str,
        /// The underlying error.
        message: String,
    },
    /// Nothing came within the configured time.
    #[error("timed out after {after:?} while {stage}")]
    Timeout {
        /// What the client was waiting for.
        stage: &'static str,
        /// The limit that was reached.
        after: std::time::Duration,
    },
    /// The provider reported an error inside a successful response (an error event in a
    /// stream, an error body with a success status).
    #[error("the provider reported an error{}: {message}", kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default())]
    Provider {
        /// The provider's error type or code, if it gave one.
        kind: Option<String>,
        /// Its message.
        message: String,
    },
    /// The response could not be read: not JSON, or not of the provider's shape.
    #[error("the response could not be read: {0}")]
    Malformed(String),
    /// The client is not configured to make this request (a missing model or key, an
    /// invalid base URL or header).
    #[error("the model client is misconfigured: {0}")]
    Config(String),
    /// Any other failure.
    #[error("the chat model failed: {0}")]
    Other(String),
}

impl ChatModelError {
    /// An [`Other`](Self::Other) error with `message`.
    pub fn other(message: impl Into<String>) -> Self {
        ChatModelError::Other(message.into())
    }

    /// Whether the same request may succeed if sent again: rate limits (429), timeouts
    /// (408), conflicts the provider marks transient (409), server errors (5xx),
    /// connection failures and timeouts, and the overload and rate-limit errors
    /// providers report inside a stream.
    pub fn is_retryable(&self) -> bool {
        match self {
            ChatModelError::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            ChatModelError::Transport { .. } | ChatModelError::Timeout { .. } => true,
            ChatModelError::Provider { kind: Some(kind), .. } => {
                matches!(
                    kind.as_str(),
                    "overloaded_error"
                        | "rate_limit_error"
                        | "api_error"
                        | "server_error"
                        | "rate_limit_exceeded"
                )
            }
            _ => false,
        }
    }

    /// How long the provider asked to wait before trying again, when it said.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ChatModelError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
