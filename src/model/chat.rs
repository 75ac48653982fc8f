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

/// A failure of a chat model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the chat model failed: {0}")]
pub struct ChatModelError(pub String);
